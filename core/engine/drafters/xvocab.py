"""draft-simple with a draft whose vocabulary is not the target's (docs/cross-vocab.md).

llama.cpp refuses such a pair (``common_speculative_are_compatible``: "the target and draft
vocabs are not compatible"). SpecScope owns its drafting loop, so it can still draft with it,
in one of two modes (``SpecSettings.vocab``):

* ``translate`` (Hugging Face transformers' universal assisted decoding): the draft drafts in
  its own vocabulary; its text is re-tokenized with the target's tokenizer and verified as
  usual;
* ``intersect`` (vLLM's token-level intersection): the draft's logits are masked to the tokens
  whose text both vocabularies have (``core/models/vocab_map.py``), and its ids are mapped to
  the target's directly, one for one.

In both the draft reads the target's text in its own vocabulary (:class:`Reading`): the text
of the target's tokens, re-tokenized with the draft's tokenizer, the last ``LOOKBEHIND``
draft tokens again each time the text grows (appending text can change how its end
tokenizes: "de" + "f" is "def"). After verification the kept tokens join the target's text;
the next draft reads it that way (once per round: llama.cpp's tokenizer is most of the
translation's time) and brings the draft's KV cache to the new reading: rows past the common
prefix removed, the new tokens decoded (:meth:`CrossVocab._sync`). :class:`DraftModel` drafts
from the reading's last token, its cache sync left to this wrapper.

Translating the draft's text (translate): the last ``TARGET_LOOKBEHIND`` target tokens' text
and the drafted text are tokenized together with the target's tokenizer; the target tokens
that start at or after the end of the target's text are the draft. A token that straddles that
end (the target wrote "de" and the draft "f…": together "def…") is dropped with its share of
the drafted text, as transformers drops the re-encoded tokens that disagree with the target's
own ("discrepancy"), and the draft goes on with the tokens after it.

Whatever either mode proposes, the target verifies it with the run's acceptance rule, so the
output is the target's own: a bad translation costs acceptance, never a wrong token. What the
modes cannot draft, they draft less (one line in the round's note):

* a draft token that is not text (a control, unknown or end-of-generation token) ends the
  drafted text before it (translate);
* text a tokenizer does not give back unchanged (no byte fallback, missing byte tokens), or
  the target's text ending inside a UTF-8 character: no draft that round;
* a translation longer than the round's budget is cut to it; a reading that no longer fits the
  draft's context ends drafting for the run.

A pair that cannot work at all is refused before the run with one line (:func:`choose_mode`).
"""

from __future__ import annotations

import codecs
import time
from dataclasses import replace

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.engine.accept_rules import DraftDist
from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.drafters.model import DraftModel
from specscope.core.engine.events import OwnVocab
from specscope.core.errors import ConfigError
from specscope.core.models.vocab_map import (ATTR_CONTROL, ATTR_UNKNOWN, ATTR_UNUSED, spelling_gap,
                                             vocab_map)

VOCAB_MODES = ("auto", "translate", "intersect", "off")
LOOKBEHIND = 10           # draft tokens read again as the text grows (transformers' assistant_lookbehind)
TARGET_LOOKBEHIND = 10    # target tokens re-encoded with the drafted text (its target_lookbehind)


def choose_mode(spec, engine) -> str:
    """The run's vocabulary mode: "" (the draft reads the target's own tokens), "translate" or
    "intersect". ``auto`` drafts across vocabularies only where llama.cpp's gate fails
    (translate; intersect under the ratio rule, which needs the draft's distribution over the
    target's tokens); ``off`` keeps llama.cpp's refusal; a mode named by hand runs on any pair.
    One line (ConfigError, IncompatiblePairError) where a mode cannot run."""
    if not spec.uses_draft_model or engine.draft is None or engine.head is not None:
        return ""
    mode = spec.vocab
    if mode == "off" or (mode == "auto" and not engine.vocab_failed):
        if engine.vocab_failed:
            raise engine.vocab_refusal()
        return ""
    if mode == "auto":
        mode = "intersect" if spec.accept_rule == "ratio" else "translate"
    name = engine.draft.path.name
    if mode == "translate" and spec.accept_rule == "ratio":
        raise ConfigError(f"{name}: --spec-vocab translate drafts text, not a distribution over "
                          "the target's tokens, so the ratio rule has no q to test: use "
                          "--spec-vocab intersect or --accept-rule match")
    why = mode_refusal(mode, engine.target, engine.draft, engine.dft_removable)
    if why:
        raise ConfigError(why)
    return mode


def mode_refusal(mode: str, target, draft, removable: bool) -> str:
    """Why ``mode`` cannot draft with these vocabularies (loaded models; a vocabulary-only load
    is enough), in one line; "" when it can. ``removable``: the draft's memory can drop part of
    a sequence (an attention KV cache)."""
    # the draft re-tokenizes the target's text in both modes, the target the draft's in translate
    gaps = [spelling_gap(m) for m in ((draft, target) if mode == "translate" else (draft,))]
    if any(gaps):
        return f"--spec-vocab {mode} re-tokenizes text with it: " + next(g for g in gaps if g)
    if not removable:
        return (f"{draft.path.name}: drafting across vocabularies re-reads the end of the text "
                "each round, and this draft's memory (recurrent or hybrid) cannot drop part of a "
                "sequence")
    return ""


class Reading:
    """The draft's reading of the target's text: draft tokens ``ids`` and the byte where each
    ends in the text (-1 inside a stretch the draft's tokenizer did not give back unchanged:
    no boundary to read again from there)."""

    def __init__(self, model):
        self.model = model
        self.ids: list[int] = []
        self.ends: list[int] = []
        self.n_fixed = 0                          # the draft's BOS: never read again
        if model.add_bos:
            self.ids, self.ends, self.n_fixed = [model.bos], [0], 1

    def read(self, text: bytes) -> bool:
        """Read ``text``, which extends the text read before; False when it ends inside a UTF-8
        character (that character is left unread)."""
        k = max(self.n_fixed, len(self.ids) - LOOKBEHIND)
        while k > self.n_fixed and self.ends[k - 1] < 0:
            k -= 1
        start = self.ends[k - 1] if k else 0
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        chars = decoder.decode(text[start:])
        whole = len(text) - len(decoder.getstate()[0])
        ids = self.model.tokenize(chars, add_special=False, parse_special=True) if chars else []
        pieces = [self.model.piece(t) for t in ids]
        if b"".join(pieces) == text[start:whole]:
            ends = (start + np.cumsum([len(p) for p in pieces])).tolist()
        else:                                     # lossy: only its end is a boundary
            ends = [-1] * (len(ids) - 1) + [whole] if ids else []
        self.ids[k:], self.ends[k:] = ids, ends
        return whole == len(text)


class CrossVocab(Drafter):
    """draft-simple across vocabularies, around :class:`DraftModel` (module docs)."""
    name = "draft-simple"
    resumes = False     # its cache holds the draft's own tokens: a turn starts afresh

    def __init__(self, engine, spec, mode: str, policy=None, q=None):
        if q is not None:       # the user's logit bias names target ids; any q keeps ratio exact
            q.settings = replace(q.settings, logit_bias=())
        self.mode, self.target, self.draft_vocab = mode, engine.target, engine.draft
        self.map = vocab_map(engine.target, engine.draft) if mode == "intersect" else None
        if self.map is not None and not self.map.n_shared:
            raise ConfigError(f"{engine.draft.path.name}: --spec-vocab intersect: no token has the "
                              f"same text in both vocabularies")
        self.inner = DraftModel(engine, spec, policy, q,
                                mask=self.map.draft_mask() if self.map is not None else None)
        self.ctx, self.batch, self.n_min = engine.dft, engine.dbatch, spec.n_min
        self.reading = Reading(engine.draft)
        self.text = bytearray()                  # the target's text: history[:n_text]
        self.n_text = 0
        self.tail: list[int] = []                # the target's last tokens, for translate
        self.cache: list[int] = []               # draft tokens in the draft's KV cache, from 0
        self.verified: tuple[list[int], int] = ([], 0)
        self.n_drafted = 0
        self.t_translate = 0.0
        self.off = ""                            # why drafting ended for the run

    # -------------------------------------------------------------- llama.cpp's four calls
    def begin(self, prompt: np.ndarray) -> None:
        """The prompt's text read, and decoded on the draft but its last token."""
        self.ctx.clear()                         # an earlier run's rows
        self._add(prompt.tolist())
        self.reading.read(bytes(self.text))
        self._sync(self.reading.ids[:-1])

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        if self.off:
            return Proposal(self.name, stop="none", detail=OwnVocab(self.mode), note=self.off)
        t = time.perf_counter()
        self._add(history[self.n_text:].tolist())
        whole = self.reading.read(bytes(self.text) + self.target.piece(id_last))
        ids = self.reading.ids
        self.t_translate += time.perf_counter() - t
        t_sync = self._sync(ids[:-1]) if whole and ids else 0.0
        if self.off or not whole or not ids:
            return Proposal(self.name, stop="none", detail=OwnVocab(self.mode), note=self.off or
                            "the target's text ends inside a character: no draft")
        room = self.ctx.n_ctx - len(ids)            # the draft's rows from id_last on
        p = self.inner.draft(np.asarray(ids[:-1], np.int32), ids[-1], min(budget, room))
        seen = [ids[-1], *p.tokens][:self.inner.rows]      # the rows it decoded and kept
        if len(seen) < self.inner.rows:                     # a dropped draft's rows: not kept
            self.ctx.seq_rm(len(ids) - 1 + len(seen), -1)
        self.dropped += self.inner.take_dropped() + self.inner.rows - len(seen)
        self.cache = ids[:-1] + seen
        self.inner.rows = 0
        t = time.perf_counter()
        out = self._translate(p, budget) if p.tokens else replace(p, detail=OwnVocab(self.mode))
        self.t_translate += time.perf_counter() - t
        self.n_drafted = len(out.tokens)
        return replace(out, t_decode=p.t_decode + t_sync)

    def process(self, tokens: list[int], pos0: int) -> None:
        self.verified = (list(tokens), pos0)

    def accept(self, n_accepted: int, mine: bool) -> None:
        """The kept tokens join the target's text; the next draft reads it (one re-tokenization
        per round: llama.cpp's tokenizer is most of the translation's time)."""
        if mine and self.n_drafted:
            self.inner.policy.update(self.n_drafted, n_accepted)
        self.n_drafted = 0
        batch, pos0 = self.verified
        t = time.perf_counter()
        self._add(batch[self.n_text - pos0:n_accepted + 1] if self.n_text >= pos0 else [])
        self.t_translate += time.perf_counter() - t

    def take_translate(self) -> float:
        t, self.t_translate = self.t_translate, 0.0
        return t

    # -------------------------------------------------------------- the reading and the cache
    def _add(self, tokens: list[int]) -> None:
        """The target's text grows by ``tokens``; its BOS has no text (the draft's own BOS, if it
        adds one, stands for it: ``Reading``)."""
        for i, token in enumerate(tokens):
            if self.n_text + i or token != self.target.bos:
                self.text += self.target.piece(token)
        self.tail = (self.tail + tokens)[-TARGET_LOOKBEHIND:]
        self.n_text += len(tokens)

    def _sync(self, tokens: list[int]) -> float:
        """The draft's cache to ``tokens``: rows past the common prefix dropped, the rest
        decoded. Seconds in llama.cpp."""
        t = time.perf_counter()
        if self.off or len(tokens) >= self.ctx.n_ctx - 2:
            self.off = self.off or (f"the draft's reading of the text ({len(tokens)} tokens) no "
                                    f"longer fits its context of {self.ctx.n_ctx}: drafting ended")
            return 0.0
        n = min(len(tokens), len(self.cache))
        differ = np.flatnonzero(np.asarray(tokens[:n]) != np.asarray(self.cache[:n]))
        common = int(differ[0]) if differ.size else n
        if len(self.cache) > common:
            self.ctx.seq_rm(common, -1)
            self.dropped += len(self.cache) - common
        for start in range(common, len(tokens), self.batch.capacity):
            chunk = tokens[start:start + self.batch.capacity]
            self.batch.fill(chunk, start, logits="none")
            self.ctx.decode(self.batch, "the reading of the target's text on the draft")
        self.cache = list(tokens)
        return time.perf_counter() - t

    # -------------------------------------------------------------- the draft in target tokens
    def _translate(self, p: Proposal, budget: int) -> Proposal:
        """The draft's tokens as target tokens, cut to the budget (module docs)."""
        if self.map is not None:
            return self._mapped(p, budget)
        own, why = list(p.tokens), ""
        for i, d in enumerate(own):
            attr = ll.llama_vocab_get_attr(self.draft_vocab.vocab, d)
            if attr & (ATTR_CONTROL | ATTR_UNKNOWN | ATTR_UNUSED) or self.draft_vocab.is_eog(d):
                own, why = own[:i], ("drafted text cut before a control token "
                                   f"({self.draft_vocab.piece(d).decode('utf-8', 'replace')!r})")
                break
        tail = b"".join(self.target.piece(t) for t in self.tail)
        while tail and 0x80 <= tail[0] < 0xC0:          # the window starts inside a character
            tail = tail[1:]
        text = b"".join(self.draft_vocab.piece(d) for d in own)
        encoded = self._encode(tail + text)
        if encoded is None:
            return self._none(p, "the drafted text is not UTF-8: no draft")
        if not encoded:
            return self._none(p, "the target's tokenizer does not give the drafted text back: no draft")
        tokens = [t for t, start in encoded if start >= len(tail)]   # after the target's text
        if any(start < len(tail) < start + len(self.target.piece(t)) for t, start in encoded):
            alone = self._encode(text)          # a token straddles the end: the text on its own
            if alone:
                tokens = [t for t, _ in alone]
        cap = min(budget, p.limit or budget)      # the draft length counts target tokens
        if len(tokens) > cap:
            tokens, why = tokens[:cap], f"translation cut to the round's budget of {cap}"
        if len(tokens) < max(1, self.n_min):
            return self._none(p, why or "the drafted text made no whole target token")
        note = f"translate: {len(p.tokens)} draft tokens -> {len(tokens)} target tokens"
        return Proposal(self.name, tuple(tokens), note=note + (f"; {why}" if why else ""),
                        stop=p.stop if not why else "budget", rows=p.rows, limit=p.limit,
                        detail=OwnVocab(self.mode, tuple(own)))

    def _encode(self, data: bytes) -> list[tuple[int, int]] | None:
        """``data`` as target tokens with the byte each starts at; an unfinished character at
        the end is left out. None when it is not UTF-8, [] when the target's tokenizer does not
        give it back unchanged."""
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        try:
            chars = decoder.decode(data)
        except UnicodeDecodeError:
            return None
        ids = self.target.tokenize(chars, add_special=False, parse_special=False) if chars else []
        pieces = [self.target.piece(t) for t in ids]
        if b"".join(pieces) != data[:len(data) - len(decoder.getstate()[0])]:
            return []
        starts = np.cumsum([0] + [len(x) for x in pieces[:-1]]).tolist() if ids else []
        return list(zip(ids, starts))

    def _mapped(self, p: Proposal, budget: int) -> Proposal:
        """intersect: the masked draft's ids mapped one for one."""
        d2t = self.map.draft_to_target
        tokens = tuple(int(t) for t in d2t[list(p.tokens)])
        dists = tuple(DraftDist(d2t[d.ids[d.probs > 0]], d.probs[d.probs > 0], int(d2t[d.greedy]))
                      for d in p.dists)
        tops = tuple(tuple(int(t) for t in d2t[list(top)]) for top in p.top_ids)
        out = replace(p, tokens=tokens, dists=dists, top_ids=tops, detail=OwnVocab(self.mode, p.tokens),
                      note=f"intersect: {len(tokens)} shared tokens")
        return out.truncated(budget)

    def _none(self, p: Proposal, why: str) -> Proposal:
        return Proposal(self.name, stop="none", note=f"{self.mode}: {why}", rows=p.rows,
                        limit=p.limit, dropped=len(p.tokens), detail=OwnVocab(self.mode, p.tokens))
