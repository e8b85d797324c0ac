"""What the engine yields: one frozen event per round.

A round (speculative-simple.cpp's loop) starts with both caches holding positions [0, n_past)
and ``seed`` (id_last) sampled but not yet evaluated. It drafts, verifies
``[seed, *drafted]`` on the target, and emits ``emitted`` = the accepted
drafted tokens followed by the target's own token (the replacement at the
first mismatch, or the bonus token after a full acceptance). Emission stops at
the first end-of-generation token, as in speculative-simple.cpp: when the
draft ends with an EOG the target sampled too, the round emits the accepted
draft and ``discarded`` holds the bonus token sampled after it.

Round modes:
  ``spec``        a draft was verified;
  ``plain``       no draft (budget exhausted, or shorter than n_min): one target token;
  ``checkpoint``  the target's memory cannot drop a partial sequence, so after a partial
                  acceptance both contexts were restored to the pre-round checkpoint; the
                  ``emitted`` tokens are decided (the restored sampler draws them again)
                  and are committed by the next round;
  ``replay``      that next round: it re-verifies ``replayed`` (not counted as drafted
                  or accepted again) and emits only the token after them;
  ``baseline``    a target-only round (one token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from specscope.core.plain import from_plain, to_plain

V1_SHAPES = ("tree", "lookahead")   # where a version-1 session kept a round's shape
# where a session before version 3 kept a round's detail: its fields' keys, by kind
V2_DETAILS = {"draft_key": "key", "draft_key_len": "key_len", "draft_source": "source",
              "draft_ids": "ids", "draft_vocab": "mode", "draft_own": "own", "draft_own_text": "text"}


@dataclass(frozen=True, slots=True)
class NgramMatch:
    """An n-gram lookup's draft (the ngram-* types): the earlier n-gram that matched the
    context's last one, and where the drafted tokens were copied from."""
    key: int = -1                    # history position of the matched n-gram (-1: none)
    key_len: int = 0                 # its length
    source: int = -1                 # history position the tokens were copied from (-1: none)

    def truncated(self, n: int) -> "NgramMatch":
        return self


@dataclass(frozen=True, slots=True)
class HeadIds:
    """draft-eagle3 with a reduced vocabulary: each drafted token's id in the head's own
    vocabulary (its d2t table maps it to the target id drafted)."""
    ids: tuple[int, ...]

    def truncated(self, n: int) -> "HeadIds":
        return HeadIds(self.ids[:n])


@dataclass(frozen=True, slots=True)
class OwnVocab:
    """A draft model with another vocabulary (drafters/xvocab.py): the mode, the tokens it
    drafted in its own vocabulary, and their text as read along the row (tokentext.shares)."""
    mode: str                        # translate | intersect
    own: tuple[int, ...] = ()
    text: tuple[str, ...] = ()

    def truncated(self, n: int) -> "OwnVocab":
        return self                  # its own tokens do not line up with the target's


Detail = NgramMatch | HeadIds | OwnVocab    # what one kind of drafter adds to its draft


@dataclass(frozen=True, slots=True)
class TreeShape:
    """A tree's round (llama-speculative's; registry types that verify trees): every branch, the root
    left out (branch 0 first, then in the order they split off), the draft's probability of each
    of their tokens, and the branch the target kept (its tokens are the event's ``drafted``)."""
    branches: tuple[tuple[int, ...], ...]
    probs: tuple[tuple[float, ...], ...]
    kept: int
    nodes: int                       # distinct drafted tokens the target verified in one batch
    steps: int                       # the draft's decodes (what llama-speculative counts as drafted)
    # the verification batch as decoded: (token, position - n_past, logits 1/0, its sequences...)
    # per row, the root first (a lossless check decodes it again: the cells fall where they fell)
    rows: tuple[tuple[int, ...], ...] = ()
    trims: ClassVar[bool] = False    # the round leaves no rows past its own to drop

    def batch_size(self, ev) -> int:
        """The tokens of its verification batch: the seed and the nodes."""
        return self.nodes + 1

    def kept_seq(self) -> int:
        """The sequence the round kept (it becomes sequence 0)."""
        return self.kept

    def deciding_row(self, emitted, depth: int) -> int:
        """The batch row whose logits gave the round's emitted token ``depth``: the seed's for
        the first, then along the kept branch."""
        if depth == 0:
            return 0
        return next(i for i, (_, d, _, *in_seqs) in enumerate(self.rows)
                    if d == depth and self.kept in in_seqs)

    def origins(self) -> tuple[tuple[int, int], ...]:
        """For each branch, (the depth where its own tokens start, the branch it split off;
        -1 for branch 0): before that depth it shares its parent's tokens (the same cells)."""
        out = [(0, -1)]
        for j, b in enumerate(self.branches[1:], 1):
            best, parent = 0, 0
            for i, a in enumerate(self.branches[:j]):
                n = 0
                while n < min(len(a), len(b)) and a[n] == b[n]:
                    n += 1
                if n > best:
                    best, parent = n, i
            out.append((best, parent))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class LookaheadShape:
    """lookahead's round (llama-lookahead): the n-grams from its pool verified beside the token
    (each the N - 1 tokens after it), the one the target followed (-1: none) and the pool's size."""
    verified: tuple[tuple[int, ...], ...]
    followed: int
    pool: int
    rows: tuple[tuple[int, ...], ...] = ()   # its batch, as TreeShape.rows (n-grams, then window)
    trims: ClassVar[bool] = True     # the window's rows past the round's are dropped after it

    def batch_size(self, ev) -> int:
        """The tokens of its batch: the seed, the n-grams and the window (all dropped but the
        emitted ones)."""
        return ev.kv_dropped_target + len(ev.emitted)

    def kept_seq(self) -> int:
        """The sequence of the n-gram followed (its first token's row's), 0 when none was."""
        return self.rows[1 + self.followed][3] if self.followed >= 0 else 0

    def deciding_row(self, emitted, depth: int) -> int:
        """The batch row whose logits gave the round's emitted token ``depth``: the seed's for
        the first, then the first n-gram still in step with the emitted tokens (the n-grams'
        rows come first, level by level: Lookahead.fill)."""
        if depth == 0:
            return 0
        g = next(g for g, ngram in enumerate(self.verified) if list(ngram[:depth]) == list(emitted[:depth]))
        return 1 + (depth - 1) * len(self.verified) + g


# A value: nothing changes an event once the round made it. Not frozen: a frozen dataclass's
# __init__ sets each of its 35 fields through object.__setattr__, 3.4 µs a round (1 % of a demo
# round); unsafe_hash keeps the hash that frozen gave.
@dataclass(slots=True, unsafe_hash=True)
class RoundEvent:
    index: int                       # round number, from 0
    n_past: int                      # position of the seed token
    seed: int                        # id_last, evaluated this round at n_past
    drafted: tuple[int, ...]         # the verified draft (empty: none)
    draft_probs: tuple[float, ...]   # each drafted token's probability (Proposal.probs; empty: none)
    n_accepted: int                  # leading drafted tokens the target sampled too
    emitted: tuple[int, ...]         # tokens this round adds to the output
    mode: str                        # spec | plain | checkpoint | replay | baseline
    draft_stop: str = ""             # why drafting stopped: n_max | policy | budget | p_min | n_min | none
                                     # (a model drafter); lookup | budget (n-gram drafters)
    drafter: str = ""                # llama.cpp type that proposed ``drafted`` ("" when none)
    draft_note: str = ""             # that drafter's reason, in words (which n-gram matched where)
    t_lookup: float = 0.0            # seconds in n-gram drafters (Python; part of t_draft)
    dropped_draft: int = 0           # length of a draft discarded for being shorter than n_min
    replayed: tuple[int, ...] = ()   # replay rounds: the tokens decided by the checkpoint round
    kv_dropped_target: int = 0       # KV rows removed from the target cache this round
    kv_dropped_draft: int = 0        # KV rows removed from the draft cache this round
    t_draft: float = 0.0             # seconds drafting: llama.cpp's draft decodes, n-gram lookups
    t_verify: float = 0.0            # seconds in llama.cpp verifying (decode + sampling)
    t_sync: float = 0.0              # seconds in llama.cpp synchronising / rolling back
    t_round: float = 0.0             # wall seconds for the whole round
    finish: str = ""                 # set on the last round: eog | n_predict | context | stopped
    synthetic: bool = False          # synthetic acceptance (core/engine/synth.py): random, not valid output
    counterfactual: tuple[float, ...] = ()  # at temperature: per drafted position, the chance the
                                     # other acceptance rule keeps it (core/engine/accept_rules.py)
    counterfactual_rule: str = ""    # that rule: "ratio" in a match run, "match" in a ratio run
    draft_ranks: tuple[int, ...] = ()   # a model drafter: the rank (0-9, -1: lower) of the target's
                                     # token among the draft's top-10 at each drafted position up to
                                     # and with the first rejection (drafters.base.Proposal.ranks)
    draft_limit: int = 0             # a model drafter: the most tokens the draft-length policy allowed
                                     # this round (n_max under llama.cpp's fixed policy; draft_policy)
    discarded: tuple[int, ...] = ()  # tokens the target sampled after an end-of-generation token
                                     # this round: not output (the bonus token after an accepted
                                     # drafted EOG; speculative-simple.cpp stops at the first EOG)
    t_translate: float = 0.0         # seconds translating between the vocabularies (Python; in no
                                     # other phase)
    # what the round's drafter adds to its draft, by kind (an n-gram's match, a head's own ids,
    # another vocabulary's tokens; None: nothing)
    detail: NgramMatch | HeadIds | OwnVocab | None = None
    threads: tuple[int, ...] = ()    # the thread counts (target, draft; 0: no draft context) the
                                     # round's decodes ran with as it ended (core/models/threads.py)
    threads_note: str = ""           # threads "auto": the changes of count made during this round
    # a round of a type's own loop: the batch of several sequences it verified (a tree, a
    # lookahead window; None: a chain's round, one sequence)
    shape: TreeShape | LookaheadShape | None = None
    # a run that teaches (step mode): the target's probability p of each drafted token, and the
    # entropy (bits) of the target's distribution at each row of the verification batch
    target_p: tuple[float, ...] = ()
    entropy: tuple[float, ...] = ()

    @property
    def own(self) -> int | None:
        """The target's own token this round (the replacement at the first mismatch, or the
        bonus token), or None when the round ended on an accepted drafted end-of-generation
        token and the bonus token after it was discarded."""
        return self.emitted[-1] if len(self.emitted) > self.n_accepted else None

    @property
    def t_overhead(self) -> float:
        """Seconds outside llama.cpp calls (Python glue) in this round."""
        return max(0.0, self.t_round - self.t_draft - self.t_verify - self.t_sync - self.t_translate)

    @property
    def n_past_after(self) -> int:
        """Both caches hold [0, n_past_after) once the round is done."""
        if self.mode == "checkpoint":
            return self.n_past
        return self.n_past + len(self.replayed) + len(self.emitted)

    @property
    def eog_ends_draft(self) -> bool:
        """The first drafted token not accepted is the token the target sampled there: an
        end-of-generation token with more drafted tokens after it. llama.cpp stops the round
        there (``common_sampler_sample_and_accept_n`` keeps no drafted token after an EOG: it
        would stay in the context) and counts it as the target's own token, not as accepted
        and not as a rejection. (Synthetic acceptance rejects at random, so not there.)"""
        a = self.n_accepted
        return (not self.synthetic and a < len(self.drafted) and self.own is not None
                and self.drafted[a] == self.own)

    @property
    def ngram(self) -> NgramMatch | None:
        """The n-gram lookup's match, where the round's draft came from one."""
        return self.detail if isinstance(self.detail, NgramMatch) else None

    @property
    def head_ids(self) -> tuple[int, ...]:
        """The drafted tokens' ids in an EAGLE-3 head's reduced vocabulary (empty: none)."""
        return self.detail.ids if isinstance(self.detail, HeadIds) else ()

    @property
    def xvocab(self) -> OwnVocab | None:
        """The draft's own vocabulary, where the round drafted across vocabularies."""
        return self.detail if isinstance(self.detail, OwnVocab) else None

    @property
    def tree(self) -> TreeShape | None:
        """The round's tree, where its shape is one (llama-speculative's, a suffix tree's)."""
        return self.shape if isinstance(self.shape, TreeShape) else None

    @property
    def batch_size(self) -> int:
        """The tokens the round's verification batch held: its shape's (``shape.batch_size``),
        else the seed, the replayed and the drafted tokens."""
        if self.shape is not None:
            return self.shape.batch_size(self)
        return 1 + len(self.replayed) + len(self.drafted)

    def to_dict(self, exact: bool = False) -> dict:
        """The event as JSON values, with the derived ``t_overhead``; draft probabilities are
        rounded to 6 digits unless ``exact`` (session files keep every bit)."""
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for key in ("drafted", "draft_probs", "emitted", "replayed", "counterfactual",
                    "draft_ranks", "discarded", "threads",
                    "target_p", "entropy"):
            d[key] = list(d[key])
        if not exact:
            for key in ("draft_probs", "counterfactual", "target_p", "entropy"):
                d[key] = [round(p, 6) for p in d[key]]
        d["t_overhead"] = self.t_overhead
        for key in ("shape", "detail"):
            if d[key] is not None:
                d[key] = to_plain(d[key])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RoundEvent":
        """The event ``to_dict`` wrote (``t_overhead``, derived, is ignored), or an earlier
        session's: version 1 kept its shape under the key of its kind (``V1_SHAPES``), versions
        1 and 2 its detail as fields of their own (``V2_DETAILS``). Every field must be there
        with its type: ``plain.PlainError`` names the one that is not."""
        if not isinstance(d, dict):
            return from_plain(cls, d, "the round")
        d = {"synthetic": False, **{k: v for k, v in d.items() if k != "t_overhead"}}
        old = [d.pop(k) for k in V1_SHAPES if k in d]
        if old and "shape" not in d:
            d["shape"] = next((x for x in old if x is not None), None)
        old = {V2_DETAILS[k]: d.pop(k) for k in list(d) if k in V2_DETAILS}
        if old and "detail" not in d:
            d["detail"] = _v2_detail(old)
        return from_plain(cls, d, "the round")


def _v2_detail(old: dict) -> dict | None:
    """A round's detail from the fields a session before version 3 wrote (``V2_DETAILS``)."""
    if old.get("mode"):
        return {k: old[k] for k in ("mode", "own", "text") if k in old}
    if old.get("ids"):
        return {"ids": old["ids"]}
    if old.get("key", -1) >= 0 or old.get("source", -1) >= 0:
        return {k: old[k] for k in ("key", "key_len", "source") if k in old}
    return None


@dataclass(frozen=True, slots=True)
class Prefill:
    """The prompt, as evaluated before the first round."""
    tokens: tuple[int, ...]
    seconds: float
    reused: int = 0     # leading tokens the caches held from a conversation's turn before

    @property
    def decoded(self) -> int:
        """The prompt's tokens the target decodes this run (the last in the first round)."""
        return len(self.tokens) - self.reused
