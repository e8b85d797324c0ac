"""llama.cpp's speculative types as drafters, and the chain that picks one per round.

``--spec-type a,b,...`` enables several; llama.cpp tries them in a fixed priority order
(``common_speculative_init``: the n-gram types before the draft model, whatever order the
user wrote) and the first that returns a non-empty draft wins the round
(``common_speculative_draft``). After verification the winner is told how many of its tokens
were kept and the others are told too, flagged as not theirs (``common_speculative_accept``);
a round nobody drafted for tells the last winner again, with 0 — llama.cpp keeps
``impl_last`` across rounds.
"""

from __future__ import annotations

import time

import numpy as np

from specscope.core.engine.drafters.base import (Drafter, NgramCacheParams, NgramMapParams,
                                                 NgramModParams, Proposal)
from specscope.core.errors import ConfigError

# llama.cpp's priority order (common_speculative_init); draft-simple is the draft model,
# draft-eagle3 an EAGLE-3 head (both the -md model), draft-mtp the target's own MTP blocks
# draft-dflash and draft-dspark a DFlash head (the -md model, with or without a Markov head)
SPEC_TYPES = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
              "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark")
NGRAM_TYPES = SPEC_TYPES[:5]
DRAFT_MODEL = "draft-simple"
DRAFT_EAGLE3 = "draft-eagle3"
DRAFT_MTP = "draft-mtp"
DRAFT_DFLASH = "draft-dflash"
DRAFT_DSPARK = "draft-dspark"
BLOCK_TYPES = (DRAFT_DFLASH, DRAFT_DSPARK)    # a DFlash head's block, drafted in one decode
MD_TYPES = (DRAFT_MODEL, DRAFT_EAGLE3, *BLOCK_TYPES)   # the types that draft with the -md model
MODEL_TYPES = (*MD_TYPES, DRAFT_MTP)          # the types that draft with a model's layers
TYPES = SPEC_TYPES                            # the window's drafter picker: every type
SWEEP_TYPES = SPEC_TYPES                      # the Compare view's sweeps: every type

DESCRIPTIONS = {
    "ngram-simple": "copies what followed the last time the latest n tokens occurred",
    "ngram-map-k": "like ngram-simple, through a hash map of earlier n-grams; drafts as many "
                   "tokens as were accepted the last time that n-gram drafted",
    "ngram-map-k4v": "keeps up to 4 different continuations per n-gram and drafts only when "
                     "one clearly dominates",
    "ngram-mod": "a 4M-entry hash table from n-grams to their next token, drafted one token "
                 "at a time (n-min..n-max tokens or nothing)",
    "ngram-cache": "1- to 4-gram statistics of the context: each drafted token is the most "
                   "frequent follower (up to 8 tokens)",
    "draft-simple": "the draft model: greedy over its top-10 probabilities",
    "draft-eagle3": "an EAGLE-3 head: one layer that drafts from three of the target's own "
                    "hidden states, over a reduced vocabulary",
    "draft-mtp": "the target's own MTP (nextn) blocks: each drafts the token after next from "
                 "a token and the target's last hidden state before it",
    "draft-dflash": "a DFlash head: drafts a whole block at once from the target's own hidden "
                    "states, one decode of id_last and mask tokens",
    "draft-dspark": "a DFlash head with a Markov head (DSpark): the block drafted at once, each "
                    "position biased by the token drafted before it",
}


def parse_types(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``--spec-type`` value(s) to the enabled types in llama.cpp's priority order."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    if not names:
        raise ConfigError("--spec-type: give at least one speculative type "
                          f"(known: {', '.join(SPEC_TYPES)})")
    for name in names:
        if name == "none":
            raise ConfigError("--spec-type none: no speculative decoding; use `specscope "
                              "baseline` to run the target alone")
        if name not in SPEC_TYPES:
            raise ConfigError(f"unknown speculative type: {name} (known: {', '.join(SPEC_TYPES)})")
    return tuple(t for t in SPEC_TYPES if t in names)


def type_label(types: tuple[str, ...]) -> str:
    """How a chain is named in tables and plots: its types in priority order, joined by '>'."""
    return ">".join(types)


class Chain:
    """The enabled drafters, in priority order, with llama.cpp's selection and accept rules."""

    def __init__(self, drafters: list[Drafter]):
        order = {t: i for i, t in enumerate(SPEC_TYPES)}
        self.drafters = sorted(drafters, key=lambda d: order[d.name])
        self.last: Drafter | None = None      # llama.cpp's impl_last: kept across rounds
        self.t_lookup = 0.0                   # seconds in n-gram drafters in the last draft()/accept()
        self.t_sync = 0.0                     # seconds the model drafters synced in accept()/restore()

    @property
    def resumes(self) -> bool:
        """Every drafter can take a conversation's next turn from what it holds (Drafter.resumes)."""
        return all(d.resumes for d in self.drafters)

    def begin(self, prompt: np.ndarray, keep: int = 0, before: "Chain | None" = None) -> None:
        """The drafters begin a run; in a conversation's next turn (``before``: the chain of
        the turn before) they resume, the caches holding ``prompt[:keep]``."""
        if before is None:
            for d in self.drafters:
                d.begin(prompt)
            return
        olds = {d.name: d for d in before.drafters}
        for d in self.drafters:
            old = olds.get(d.name)
            d.resume(prompt, keep, old if type(old) is type(d) else None)

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal | None:
        """The winning proposal, truncated to ``budget``; when none wins, the last drafter's
        empty proposal (it says why, e.g. the draft model's p_min), or None when none ran."""
        self.t_lookup = 0.0
        clock = time.perf_counter
        proposal = None
        for d in self.drafters:
            t = clock()
            proposal = d.draft(history, id_last, budget)
            if d.name not in MODEL_TYPES:
                self.t_lookup += clock() - t
            if proposal.tokens:
                self.last = d
                return proposal.truncated(budget)
        return proposal

    def process(self, tokens: list[int], pos0: int) -> None:
        for d in self.drafters:
            d.process(tokens, pos0)

    def accept(self, n_accepted: int) -> None:
        """Tell the last winner, then the others; ``t_lookup`` is the n-gram drafters' time,
        ``t_sync`` the draft model's (it brings its cache to the kept history)."""
        self.t_lookup = self.t_sync = 0.0
        clock = time.perf_counter
        for d in ([self.last] if self.last is not None else []) + \
                [d for d in self.drafters if d is not self.last]:
            t = clock()
            d.accept(n_accepted, d is self.last)
            if d.name in MODEL_TYPES:
                self.t_sync += clock() - t
            else:
                self.t_lookup += clock() - t

    def restore(self, n_past: int) -> None:
        t = time.perf_counter()
        for d in self.drafters:
            d.restore(n_past)
        self.t_sync = time.perf_counter() - t

    def take_dropped(self) -> int:
        """KV rows the drafters dropped from the draft cache since the last call."""
        return sum(d.take_dropped() for d in self.drafters)

    def take_translate(self) -> float:
        """Seconds the drafters spent translating between vocabularies since the last call."""
        return sum(d.take_translate() for d in self.drafters)


__all__ = ["SPEC_TYPES", "TYPES", "SWEEP_TYPES", "NGRAM_TYPES", "DRAFT_MODEL", "DRAFT_EAGLE3", "DRAFT_MTP",
           "DRAFT_DFLASH", "DRAFT_DSPARK", "BLOCK_TYPES", "MD_TYPES", "MODEL_TYPES",
           "DESCRIPTIONS", "Chain", "Drafter", "Proposal",
           "NgramMapParams", "NgramModParams", "NgramCacheParams", "parse_types", "type_label"]
