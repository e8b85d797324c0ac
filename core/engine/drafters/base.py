"""What a drafter is: the object that proposes a round's draft.

llama.cpp's ``common_speculative_impl`` (common/speculative.cpp) has ``begin`` (once per
generation, with the prompt), ``draft``, ``process`` (each batch the target decoded, right
after it: drafters that read the target's own state, as EAGLE-3 and MTP do, take it there,
and llama.cpp's draft model decodes the batch on its own context) and ``accept``; ``Drafter``
mirrors those four, plus ``restore`` for a round undone by a checkpoint restore. A drafter
sees the history the way llama.cpp's implementations see ``prompt_tgt``: every token in the
target's context, in order (``history[i]`` sits at position i), *without* ``id_last``, the
token sampled last and not yet evaluated, which comes separately. The history only grows
between calls within a run (a drafter may index it incrementally); a run makes its drafters
afresh.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from specscope.core.engine.events import Detail
from specscope.core.errors import ConfigError

NGRAM_MAX = 1024     # llama.cpp's bound on every n-gram size flag (common/arg.cpp)


@dataclass(slots=True)      # a value (``truncated`` makes a new one); not frozen: a round makes one,
class Proposal:             # and frozen fields cost a µs more to set
    """One drafter's answer in one round. ``tokens`` empty: it had nothing to propose."""
    drafter: str                        # llama.cpp's type name: "ngram-simple", "draft-simple" …
    tokens: tuple[int, ...] = ()
    note: str = ""                      # why, in words: which earlier n-gram matched where
    # the fields below are a model drafter's (the draft model, a head, the MTP blocks: every
    # type that drafts with a model's layers), but probs (suffix's estimates too) and dropped
    # (ngram-mod's too)
    probs: tuple[float, ...] = ()       # each token's probability: its top-10 renormalised share
    stop: str = ""                      # why drafting stopped (events.RoundEvent.draft_stop)
    dropped: int = 0                    # length of a draft shorter than n_min (none was proposed)
    rows: int = 0                       # rows decoded on the draft's cache from n_past on
    t_decode: float = 0.0               # seconds inside llama.cpp
    dists: tuple = ()                   # the draft model's q per token (accept_rules.DraftDist)
    limit: int = 0                      # the most tokens its length policy allowed
    top_ids: tuple[tuple[int, ...], ...] = ()   # the top-10 ids at each position, most
                                                # probable first (tokens[i] == top_ids[i][0])
    detail: Detail | None = None        # what its kind adds (events.NgramMatch, HeadIds, OwnVocab)

    def truncated(self, n: int) -> "Proposal":
        """The first n tokens (llama.cpp's truncation to the round's budget)."""
        if len(self.tokens) <= n:
            return self
        return replace(self, tokens=self.tokens[:n], probs=self.probs[:n],
                       dists=self.dists[:n], top_ids=self.top_ids[:n],
                       detail=self.detail and self.detail.truncated(n), stop="budget")

    def ranks(self, ids) -> tuple[int, ...]:
        """Tree headroom (a model drafter's): the rank of the target's token ``ids[i]`` among the
        draft's top-10 at each drafted position i (0: the draft's own choice; -1: not among
        them), up to and with the first rejection. Later positions were drafted after a token
        the target did not take, so they say nothing about the target's path. A drafted end of
        generation that the target sampled too ends the round without being counted accepted:
        it gets no rank either (so that the ranks of 0 are exactly the accepted tokens)."""
        out: list[int] = []
        for top, drafted, token in zip(self.top_ids, self.tokens, ids):
            if token == drafted and len(out) == len(ids) - 1:
                break
            out.append(top.index(token) if token in top else -1)
            if token != drafted:
                break
        return tuple(out)


class Drafter:
    """Base class. Subclasses set ``name`` (llama.cpp's type name) and implement ``draft``."""
    name = ""
    dropped = 0           # draft-cache rows dropped since take_dropped() (the model drafters')
    # a conversation's next turn can keep what this drafter holds from the turn before (its
    # cache's shared prefix): n-gram drafters read the history, the draft model its own cache
    resumes = True

    @classmethod
    def create(cls, name: str, spec, engine=None, policy=None, q=None, vocab: str = "") -> "Drafter":
        """This type's drafter for a run (registry.SpecType.drafter names the class): a model
        drafter from the engine's contexts and ``spec``; the n-gram drafters override it."""
        return cls(engine, spec)

    def begin(self, prompt: np.ndarray) -> None:
        """Once, before the first round, with the prompt's tokens but the last (llama.cpp's
        ``common_speculative_begin``, after the prompt was processed)."""

    def resume(self, prompt: np.ndarray, keep: int, before: "Drafter | None") -> None:
        """``begin`` for a conversation's next turn: the caches already hold ``prompt[:keep]``
        and ``before`` is this type's drafter of the turn before (None: there was none). The
        n-gram drafters begin again from the whole prompt, which holds the turns before; those
        whose llama.cpp state outlives a request take it over (ngram-cache)."""
        self.begin(prompt)

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        """Propose tokens to follow ``id_last``. ``history`` is int32, read-only, and only valid
        during the call. ``budget`` (>= 1) is the most tokens the round can verify: n-gram
        drafters may ignore it (the chain truncates, as llama.cpp does, after the drafter saw
        its full draft); the draft model stops there."""
        raise NotImplementedError

    def process(self, tokens: list[int], pos0: int) -> None:
        """The target has just decoded ``tokens`` at positions ``pos0`` on (the round's
        verification batch; llama.cpp's ``common_speculative_process``)."""

    def accept(self, n_accepted: int, mine: bool) -> None:
        """After verification: ``n_accepted`` drafted tokens were kept. ``mine`` is False when
        another drafter's draft was verified (llama.cpp's ``is_other``)."""

    def restore(self, n_past: int) -> None:
        """The round was undone (a checkpoint restore): the target is back at ``n_past``."""

    def take_dropped(self) -> int:
        """Draft-cache rows dropped since the last call (the model drafters'; 0 for the others)."""
        dropped, self.dropped = self.dropped, 0
        return dropped

    def take_translate(self) -> float:
        """Seconds spent translating between vocabularies since the last call (Python time of a
        draft model whose vocabulary is not the target's; 0 for the others)."""
        return 0.0


# --------------------------------------------------------------------------- parameters
def check_size(value: int, what: str) -> None:
    """An n-gram size flag's range (llama.cpp's NGRAM_MAX bound)."""
    if not 1 <= value <= NGRAM_MAX:
        raise ConfigError(f"{what} must be between 1 and {NGRAM_MAX} inclusive, not {value}")
