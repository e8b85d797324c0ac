"""The pair doctor's answer for a draft llama.cpp refuses: what SpecScope can still draft with it.

llama.cpp's gate refuses a draft whose vocabulary is not the target's; draft-simple can still
draft with it across vocabularies (``core/engine/drafters/xvocab.py``, docs/cross-vocab.md).
For such a pair :func:`cross_vocab` says, on vocabulary-only loads:

- how far the vocabularies overlap (the tokens whose text both have, ``vocab_map``'s rule);
- which special tokens differ (BOS, EOS, EOT, and control tokens only one side has);
- which modes can run (translate; intersect, which ``--spec-vocab auto`` picks under the ratio
  rule), or why a mode is refused, in the engine's words (``xvocab.mode_refusal``);
- what each mode adds per round: the re-tokenization, timed with llama.cpp's tokenizers on a
  sample text read round by round as the engine reads it (:func:`retokenize_cost`).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import llama_cpp.llama_cpp as ll

from specscope.core.engine.drafters.xvocab import TARGET_LOOKBEHIND, Reading, mode_refusal
from specscope.core.models.vocab_gate import escape_token_text
from specscope.core.models.vocab_map import control_keys, vocab_map

# what a round reads and drafts, in bytes (English and code: about 4 bytes a token)
SAMPLE = ("Speculative decoding lets a small draft model propose the next few tokens, and the "
          "target model checks them all in one batch. When the draft is right, several tokens "
          "cost one target pass.\n\ndef fibonacci(n: int) -> list[int]:\n    \"\"\"The first n "
          "Fibonacci numbers.\"\"\"\n    out = [0, 1]\n    while len(out) < n:\n        "
          "out.append(out[-1] + out[-2])\n    return out[:n]\n\nThe quick brown fox jumps over "
          "the lazy dog; naïve café résumé — 3.14159, 2.71828, and 1,000,000 tokens later.\n")
KEPT_PER_ROUND = 16       # the text a round keeps (about 4 tokens)
DRAFTED_PER_ROUND = 24    # the text a round drafts (about 6 tokens)
MODES = ("translate", "intersect")


@dataclass(frozen=True)
class CrossVocabReport:
    """What SpecScope can do with a draft whose vocabulary is not the target's."""

    n_shared: int              # tokens whose text both vocabularies have
    target_share: float        # of the target's tokens
    draft_share: float         # of the draft's tokens
    specials: tuple[str, ...]  # one line per difference in BOS, EOS, EOT and control tokens
    refusals: dict[str, str]   # mode -> why it cannot run ("" it can)
    per_round_s: dict[str, float]  # mode -> re-tokenization seconds per round, measured
    elapsed_s: float

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes SpecScope can draft with, translate first."""
        return tuple(m for m in MODES if not self.refusals[m])

    @property
    def mode(self) -> str:
        """What ``--spec-vocab auto`` drafts with under the match rule ("" none)."""
        return self.modes[0] if self.modes else ""

    @property
    def refusal(self) -> str:
        """One line: why no mode can run ("" when one can)."""
        return "" if self.modes else self.refusals["translate"]

    def summary(self) -> str:
        """'translate / intersect', or 'intersect only', or ''."""
        return " / ".join(self.modes)


def _token(model, t: int) -> str:
    return "none" if t < 0 else f"{escape_token_text(model.token_text(t))} ({t})"


def special_differences(target, draft) -> list[str]:
    """BOS, EOS and EOT that differ in text or use, and the control tokens only one side has."""
    differ: dict[str, list[str]] = {}          # "target …, draft …" -> the names it is true of
    for name, get in (("BOS", ll.llama_vocab_bos), ("EOS", ll.llama_vocab_eos),
                      ("EOT", ll.llama_vocab_eot)):
        a, b = int(get(target.vocab)), int(get(draft.vocab))
        ta = target.token_text(a) if a >= 0 else None
        tb = draft.token_text(b) if b >= 0 else None
        if (ta, a) != (tb, b):
            same = "; the same text, another id" if ta == tb else ""
            differ.setdefault(f"target {_token(target, a)}, draft {_token(draft, b)}{same}", []).append(name)
    out = [f"{', '.join(names)}: {what}" for what, names in differ.items()]
    if target.add_bos != draft.add_bos:
        out.append(f"adds BOS: target {'yes' if target.add_bos else 'no'}, draft "
                   f"{'yes' if draft.add_bos else 'no'}"
                   + (" (the draft's own BOS stands for the target's)" if draft.add_bos else ""))
    t_ctl, d_ctl = control_keys(target), control_keys(draft)
    for side, mine, other in (("target", t_ctl, d_ctl), ("draft", d_ctl, t_ctl)):
        only = sorted(k[1:] for k in mine - other)
        if only:
            shown = ", ".join(escape_token_text(k) for k in only[:4])
            out.append(f"control tokens only the {side} has: {len(only):,} ({shown}"
                       f"{', …' if len(only) > 4 else ''})")
    return out


def retokenize_cost(target, draft, text: str = SAMPLE, modes=MODES) -> dict[str, float]:
    """Seconds per round each mode spends in llama.cpp's tokenizers, on ``text`` read as a run
    reads it: each round the text grows by ``KEPT_PER_ROUND`` bytes and the draft reads it
    (both modes: :class:`Reading`, its lookbehind read again); translate also tokenizes the
    drafted text (``DRAFTED_PER_ROUND`` bytes) with the target's last tokens' text (about
    ``TARGET_LOOKBEHIND`` tokens) with the target's tokenizer, and reads both sides' pieces."""
    data = text.encode()
    reading, t_read, t_translate = Reading(draft), [], []
    behind = 4 * TARGET_LOOKBEHIND
    for end in range(KEPT_PER_ROUND, len(data) - DRAFTED_PER_ROUND, KEPT_PER_ROUND):
        t0 = time.perf_counter()
        reading.read(data[:end])
        t_read.append(time.perf_counter() - t0)
        if "translate" in modes:
            chunk = data[max(0, end - behind):end + DRAFTED_PER_ROUND].decode("utf-8", "ignore")
            t0 = time.perf_counter()
            for t in target.tokenize(chunk, add_special=False, parse_special=False):
                target.piece(t)
            t_translate.append(time.perf_counter() - t0)
    read = statistics.median(t_read)
    return {m: read + (statistics.median(t_translate) if m == "translate" else 0.0) for m in modes}


def cross_vocab(target, draft, removable: bool, keys=None) -> CrossVocabReport:
    """The report for two vocabulary-only loads (``llama.Model``); ``removable``: the draft's
    memory can drop part of a sequence; ``keys``: as ``vocab_map`` takes them. The map is the
    engine's, cached per pair of files: the doctor builds it once for the run."""
    t0 = time.perf_counter()
    m = vocab_map(target, draft, keys)
    refusals = {mode: mode_refusal(mode, target, draft, removable) for mode in MODES}
    if not refusals["intersect"] and not m.n_shared:
        refusals["intersect"] = "no token has the same text in both vocabularies"
    runnable = [mode for mode in MODES if not refusals[mode]]
    cost = retokenize_cost(target, draft, modes=runnable) if runnable else {}
    return CrossVocabReport(m.n_shared, m.target_share, m.draft_share,
                            tuple(special_differences(target, draft)),
                            refusals, cost, time.perf_counter() - t0)
