"""Statistics as a pure fold over round events.

Counting follows llama.cpp's speculative-simple: ``n_drafted`` adds the length
of every draft that was verified (drafts discarded for being shorter than
n_min are not counted), ``n_accept`` adds the drafted tokens the target kept.
One deliberate difference: tokens re-verified by a replay round after a
checkpoint restore (seed 000 §7) are counted once, in the round that decided
them, not again as a "draft" of the replay round.

Mean accepted length is the mean number of tokens a verified draft yields,
1 + accepted (llama.cpp's ``1 + n_acc_tokens / n_call_accept``).

The counterfactual (runs at temperature, core/accept_rules.py): each draft's chances that the
other acceptance rule keeps position i are multiplied along the draft, so that position k gets
the chance that the other rule keeps the first k drafted tokens, the counterpart of
``accepted_at[k] / drafted_at[k]``; ``counterfactual_acceptance`` averages it over the drafts
that reached k and carry one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .events import RoundEvent


class _DraftRates:
    """Rates derived from draft counts (n_accept, n_drafted, n_draft_rounds, accepted_at,
    drafted_at), shared by a run's Stats and each drafter's DrafterStats."""

    @property
    def acceptance_rate(self) -> float:
        return self.n_accept / self.n_drafted if self.n_drafted else 0.0

    @property
    def mean_accepted_length(self) -> float:
        return 1.0 + self.n_accept / self.n_draft_rounds if self.n_draft_rounds else 1.0

    @property
    def position_acceptance(self) -> tuple[float, ...]:
        return tuple(a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at))

    def to_dict(self) -> dict:
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for key in ("drafted_at", "accepted_at", "accepted_hist"):
            d[key] = list(d[key])
        d.update(acceptance_rate=self.acceptance_rate,
                 mean_accepted_length=self.mean_accepted_length,
                 position_acceptance=list(self.position_acceptance))
        return d


@dataclass(frozen=True)
class DrafterStats(_DraftRates):
    """The draft counts of the rounds one drafter (a llama.cpp type) won."""
    name: str
    n_draft_rounds: int = 0
    n_drafted: int = 0
    n_accept: int = 0
    drafted_at: tuple[int, ...] = ()
    accepted_at: tuple[int, ...] = ()
    accepted_hist: tuple[int, ...] = ()


@dataclass(frozen=True)
class Stats(_DraftRates):
    n_rounds: int = 0
    n_tokens: int = 0                 # tokens emitted
    n_draft_rounds: int = 0           # rounds that verified a draft
    n_drafted: int = 0
    n_accept: int = 0
    drafted_at: tuple[int, ...] = ()  # per draft position: how many drafts reached it
    accepted_at: tuple[int, ...] = () # per draft position: how many were accepted there
    accepted_hist: tuple[int, ...] = ()  # rounds that accepted 0, 1, 2, ... drafted tokens
    t_draft: float = 0.0
    t_verify: float = 0.0
    t_sync: float = 0.0
    t_overhead: float = 0.0
    t_total: float = 0.0              # generation wall time (prefill excluded)
    by_drafter: tuple[DrafterStats, ...] = ()   # per llama.cpp type, in order of first draft
    t_lookup: float = 0.0             # seconds in n-gram lookups (part of t_draft)
    synthetic: bool = False           # a round used synthetic acceptance: not valid output
    cf_rule: str = ""                 # the counterfactual's rule (RoundEvent.counterfactual_rule)
    cf_at: tuple[float, ...] = ()     # per draft position: summed chance the other rule keeps
                                      # the draft up to there
    cf_drafted_at: tuple[int, ...] = ()  # per draft position: drafts reaching it with a counterfactual

    @property
    def counterfactual_acceptance(self) -> tuple[float, ...]:
        """Per draft position: the expected share the other rule would have kept (module docs)."""
        return tuple(a / d if d else 0.0 for a, d in zip(self.cf_at, self.cf_drafted_at))

    @property
    def tokens_per_s(self) -> float:
        return self.n_tokens / self.t_total if self.t_total > 0 else 0.0

    @property
    def overhead_share(self) -> float:
        return self.t_overhead / self.t_total if self.t_total > 0 else 0.0

    def drafter(self, name: str) -> DrafterStats:
        """The counts of the rounds ``name`` won (zeros when it never drafted)."""
        return next((d for d in self.by_drafter if d.name == name), DrafterStats(name))

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["by_drafter"] = {ds.name: ds.to_dict() for ds in self.by_drafter}
        d.update(cf_at=list(self.cf_at), cf_drafted_at=list(self.cf_drafted_at),
                 counterfactual_acceptance=list(self.counterfactual_acceptance))
        d.update(tokens_per_s=self.tokens_per_s, overhead_share=self.overhead_share)
        return d


class _Counts:
    """Mutable draft counts while folding (the run's and each drafter's)."""

    def __init__(self, s):
        self.n_draft_rounds, self.n_drafted, self.n_accept = s.n_draft_rounds, s.n_drafted, s.n_accept
        self.drafted_at, self.accepted_at = list(s.drafted_at), list(s.accepted_at)
        self.hist = list(s.accepted_hist)

    def add(self, ev: RoundEvent) -> None:
        self.n_draft_rounds += 1
        self.n_drafted += len(ev.drafted)
        self.n_accept += ev.n_accepted
        _add_at(self.drafted_at, len(ev.drafted))
        _add_at(self.accepted_at, ev.n_accepted)
        if len(self.hist) <= ev.n_accepted:
            self.hist.extend([0] * (ev.n_accepted + 1 - len(self.hist)))
        self.hist[ev.n_accepted] += 1

    def fields(self) -> tuple:
        self.accepted_at.extend([0] * (len(self.drafted_at) - len(self.accepted_at)))
        return (self.n_draft_rounds, self.n_drafted, self.n_accept, tuple(self.drafted_at),
                tuple(self.accepted_at), tuple(self.hist))


def _add_at(counts: list[int], n: int) -> None:
    """counts[i] += 1 for i < n, growing the list as needed."""
    if len(counts) < n:
        counts.extend([0] * (n - len(counts)))
    for i in range(n):
        counts[i] += 1


def fold(events: Iterable[RoundEvent], start: Stats = Stats()) -> Stats:
    """The statistics of ``events``; with ``start``, of the events that made ``start`` and then
    these (``fold(b, fold(a)) == fold(a + b)``), so a live view folds only what is new."""
    n_rounds, n_tokens = start.n_rounds, start.n_tokens
    total = _Counts(start)
    drafters = {d.name: _Counts(d) for d in start.by_drafter}
    t_draft, t_verify, t_sync = start.t_draft, start.t_verify, start.t_sync
    t_overhead, t_total, t_lookup = start.t_overhead, start.t_total, start.t_lookup
    synthetic = start.synthetic
    cf_rule, cf_at, cf_drafted_at = start.cf_rule, list(start.cf_at), list(start.cf_drafted_at)
    for ev in events:
        n_rounds += 1
        n_tokens += len(ev.emitted)
        if ev.drafted:
            total.add(ev)
            name = ev.drafter or "draft-simple"
            if name not in drafters:
                drafters[name] = _Counts(DrafterStats(name))
            drafters[name].add(ev)
        if ev.drafted and ev.counterfactual:
            cf_rule = ev.counterfactual_rule
            _add_at(cf_drafted_at, len(ev.counterfactual))
            cf_at.extend([0.0] * (len(cf_drafted_at) - len(cf_at)))
            for i, chance in enumerate(np.cumprod(ev.counterfactual)):
                cf_at[i] += float(chance)
        t_draft += ev.t_draft
        t_verify += ev.t_verify
        t_sync += ev.t_sync
        t_overhead += ev.t_overhead
        t_total += ev.t_round
        t_lookup += ev.t_lookup
        synthetic = synthetic or ev.synthetic
    by_drafter = tuple(DrafterStats(name, *c.fields()) for name, c in drafters.items())
    return Stats(n_rounds, n_tokens, *total.fields(), t_draft, t_verify, t_sync, t_overhead,
                 t_total, by_drafter, t_lookup, synthetic, cf_rule, tuple(cf_at),
                 tuple(cf_drafted_at))
