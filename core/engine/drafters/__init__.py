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

from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.drafters.registry import TYPES, SpecType, names, spec_type
from specscope.core.errors import ConfigError

# llama.cpp's priority order (common_speculative_init), and each type's groups, from the registry
SPEC_TYPES = tuple(TYPES)
NGRAM_TYPES = names(lambda t: t.ngram)            # draft from the tokens so far
DRAFT_MODEL = "draft-simple"                     # the draft model: the default type
MD_TYPES = names(lambda t: t.uses_md)            # draft with the -md model
MODEL_TYPES = names(lambda t: not t.ngram)       # draft with a model's layers
BLOCK_TYPES = names(lambda t: t.block)           # a DFlash head's block, drafted in one decode
DESCRIPTIONS = {name: t.description for name, t in TYPES.items()}


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
        # those that translate between vocabularies (asked for their time twice a round)
        self._translating = [d for d in self.drafters
                             if type(d).take_translate is not Drafter.take_translate]
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
            if TYPES[d.name].ngram:
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
            if not TYPES[d.name].ngram:
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
        return sum(d.take_translate() for d in self._translating)


__all__ = ["SPEC_TYPES", "TYPES", "NGRAM_TYPES", "DRAFT_MODEL", "BLOCK_TYPES", "MD_TYPES", "MODEL_TYPES",
           "SpecType", "spec_type", "names",
           "DESCRIPTIONS", "Chain", "Drafter", "Proposal",
           "parse_types", "type_label"]
