"""Statistics as a pure fold over round events.

Counting follows llama.cpp's speculative-simple: ``n_drafted`` adds the length
of every draft that was verified (drafts discarded for being shorter than
n_min are not counted), ``n_accept`` adds the drafted tokens the target kept.
One deliberate difference: tokens re-verified by a replay round after a
checkpoint restore (seed 000 §7) are counted once, in the round that decided
them, not again as a "draft" of the replay round.

Mean accepted length is the mean number of tokens a verified draft yields,
1 + accepted (llama.cpp's ``1 + n_acc_tokens / n_call_accept``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .events import RoundEvent


@dataclass(frozen=True)
class Stats:
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

    @property
    def acceptance_rate(self) -> float:
        return self.n_accept / self.n_drafted if self.n_drafted else 0.0

    @property
    def mean_accepted_length(self) -> float:
        return 1.0 + self.n_accept / self.n_draft_rounds if self.n_draft_rounds else 1.0

    @property
    def position_acceptance(self) -> tuple[float, ...]:
        return tuple(a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at))

    @property
    def tokens_per_s(self) -> float:
        return self.n_tokens / self.t_total if self.t_total > 0 else 0.0

    @property
    def overhead_share(self) -> float:
        return self.t_overhead / self.t_total if self.t_total > 0 else 0.0

    def to_dict(self) -> dict:
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for key in ("drafted_at", "accepted_at", "accepted_hist"):
            d[key] = list(d[key])
        d.update(acceptance_rate=self.acceptance_rate,
                 mean_accepted_length=self.mean_accepted_length,
                 position_acceptance=list(self.position_acceptance),
                 tokens_per_s=self.tokens_per_s,
                 overhead_share=self.overhead_share)
        return d


def _add_at(counts: list[int], n: int) -> None:
    """counts[i] += 1 for i < n, growing the list as needed."""
    if len(counts) < n:
        counts.extend([0] * (n - len(counts)))
    for i in range(n):
        counts[i] += 1


def fold(events: Iterable[RoundEvent], start: Stats = Stats()) -> Stats:
    """The statistics of ``events``; with ``start``, of the events that made ``start`` and then
    these (``fold(b, fold(a)) == fold(a + b)``), so a live view folds only what is new."""
    n_rounds, n_tokens, n_draft_rounds = start.n_rounds, start.n_tokens, start.n_draft_rounds
    n_drafted, n_accept = start.n_drafted, start.n_accept
    drafted_at, accepted_at = list(start.drafted_at), list(start.accepted_at)
    hist = list(start.accepted_hist)
    t_draft, t_verify, t_sync = start.t_draft, start.t_verify, start.t_sync
    t_overhead, t_total = start.t_overhead, start.t_total
    for ev in events:
        n_rounds += 1
        n_tokens += len(ev.emitted)
        if ev.drafted:
            n_draft_rounds += 1
            n_drafted += len(ev.drafted)
            n_accept += ev.n_accepted
            _add_at(drafted_at, len(ev.drafted))
            _add_at(accepted_at, ev.n_accepted)
            if len(hist) <= ev.n_accepted:
                hist.extend([0] * (ev.n_accepted + 1 - len(hist)))
            hist[ev.n_accepted] += 1
        t_draft += ev.t_draft
        t_verify += ev.t_verify
        t_sync += ev.t_sync
        t_overhead += ev.t_overhead
        t_total += ev.t_round
    accepted_at.extend([0] * (len(drafted_at) - len(accepted_at)))
    return Stats(n_rounds, n_tokens, n_draft_rounds, n_drafted, n_accept,
                 tuple(drafted_at), tuple(accepted_at), tuple(hist),
                 t_draft, t_verify, t_sync, t_overhead, t_total)
