"""Break-even: what a draft must cost on this machine to speed this target up.

For the target's calibration (its batch costs c(k), sampling, rollback, the Python of a round
and the target-alone token B) and a per-token acceptance α, the calibrated round
(:func:`cost.model.round_cost`) is linear in the draft's cost f, so the largest f that still
reaches a speed-up S solves in closed form for each draft length n; the break-even f is the
best over n = 1..n_max. A draft that sits below the curve at its own (α, f) beats S here, one
above it cannot at any draft length.

A hypothetical draft of cost f is priced like a small model of the target's shape: one draft
token costs f, a k-token batch of it f·c(k) (the catch-up after a fully accepted draft), and its
first decode of a round costs what the others do. Price with a pair's calibration where there is
one: it also timed a speculative round's own Python (o0 + o1·n) and rollback, which a calibration
of the target alone leaves at 0, so curves from one are optimistic by that much (on the demo
target at α 0.8: break-even f 0.27 from the target alone, 0.20 from the demo pair's calibration,
whose own draft, f 0.235, predicts 0.93×).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from specscope.core.measure.cost.model import (N_MAX, Calibration, alpha_acceptance, fit_alpha,
                                               round_cost)

SPEEDUPS = (1.0, 1.5)                                   # the curves drawn
DISAGREE = 0.05           # a measurement this far past 1.0× against the placement is called out
ALPHA_GRID = tuple(round(0.30 + 0.05 * i, 2) for i in range(14)) + (0.97, 0.99)


@dataclass(frozen=True)
class BreakEven:
    """At acceptance ``alpha`` a draft reaches ``speedup`` if it costs at most ``f`` target
    tokens per draft token (drafting ``n`` per round); ``f`` is None when even a free draft
    cannot reach it (verification and the round's own costs alone are too dear)."""
    alpha: float
    speedup: float
    f: float | None
    n: int | None


@dataclass(frozen=True)
class DraftPoint:
    """A real draft placed on the curves: its measured cost and acceptance on this target."""
    name: str
    f: float
    alpha: float
    speedup: float | None = None        # predicted by the calibrated model, when known
    measured: float | None = None       # measured for real (the advisor's estimate), when known
    measured_as: str = ""               # the setting measured, when not the one placed


def with_draft(cal: Calibration, f: float) -> Calibration:
    """``cal`` (the target's) with a hypothetical draft of cost ``f`` per token (module docs)."""
    return replace(cal, f=f, f_first=0.0, f_batch=tuple(f * c for c in cal.c), k_draft=-1,
                   head=False)


def required_f(cal: Calibration, alpha: float, speedup: float, n: int,
               sync: str = "reuse") -> float | None:
    """The largest draft cost at which drafting ``n`` per round at acceptance ``alpha`` reaches
    ``speedup`` (None: not even at f = 0)."""
    acceptance = alpha_acceptance(alpha, n)
    free = round_cost(with_draft(cal, 0.0), n, acceptance, sync)
    dear = round_cost(with_draft(cal, 1.0), n, acceptance, sync)
    budget = free.tokens * free.baseline / speedup          # the round's total cost allowed
    if budget < free.total:
        return None
    slope = dear.total - free.total                         # what f = 1 adds to a round
    return (budget - free.total) / slope if slope > 0 else float("inf")


def break_even(cal: Calibration, alpha: float, speedup: float, *, n_max: int = N_MAX,
               sync: str = "reuse") -> BreakEven:
    """The best draft length's break-even cost at ``alpha`` (n up to n_max and the
    calibration's largest batch)."""
    best_f, best_n = None, None
    for n in range(1, min(n_max, cal.k_max - 1) + 1):
        f = required_f(cal, alpha, speedup, n, sync)
        if f is not None and (best_f is None or f > best_f):
            best_f, best_n = f, n
    return BreakEven(alpha, speedup, best_f, best_n)


def curves(cal: Calibration, speedups: Sequence[float] = SPEEDUPS,
           alphas: Sequence[float] = ALPHA_GRID, *, n_max: int = N_MAX,
           sync: str = "reuse") -> dict[float, list[BreakEven]]:
    """{S: the break-even cost at every α of ``alphas``}: the curves to draw."""
    return {s: [break_even(cal, a, s, n_max=n_max, sync=sync) for a in alphas] for s in speedups}


def draft_point(name: str, pair: Calibration, drafted_at: Sequence[int], n_accept: int,
                speedup: float | None = None) -> DraftPoint:
    """A draft's place: f from the pair's calibration (target-token units), α fitted to its
    runs' counts (drafts reaching each position, tokens accepted; :func:`fit_alpha`)."""
    return DraftPoint(name, pair.f, fit_alpha(list(drafted_at), n_accept), speedup)


def point_speed(point: DraftPoint) -> str:
    """", measured 0.90× (predicted 1.12×)", ", predicted 1.12×" or "": a placed draft's figures."""
    predicted = f"predicted {point.speedup:.2f}×" if point.speedup else ""
    if point.measured is None:
        return f", {predicted}" if predicted else ""
    return (f", {point.measured_as + ' ' if point.measured_as else ''}measured {point.measured:.2f}×"
            + (f" ({predicted})" if predicted else ""))


def verdict(cal: Calibration, point: DraftPoint, *, n_max: int = N_MAX, sync: str = "reuse") -> str:
    """One line: where ``point`` sits against the curves, and what it would take to win; with a
    measured speed-up, that figure, and where it lands on the other side of 1.0× than the
    placement says (by more than DISAGREE), how far the calibrated model was off (the placement
    is no better)."""
    line = break_even(cal, point.alpha, 1.0, n_max=n_max, sync=sync)
    if line.f is None:
        text = (f"{point.name}: at α {point.alpha:.2f} no draft beats the target alone here, "
                "however cheap: verifying a draft costs more than it saves")
    elif point.f <= line.f:
        text = (f"{point.name}: f {point.f:.2f} is under the break-even {line.f:.2f} at α "
                f"{point.alpha:.2f} (n = {line.n}): it can beat the target alone here")
    else:
        text = (f"{point.name}: f {point.f:.2f} is above the break-even {line.f:.2f} at α "
                f"{point.alpha:.2f}: it must cost {line.f / point.f:.0%} of what it does to break even")
    if point.measured is None:
        return text
    placed_wins = line.f is not None and point.f <= line.f
    against = point.measured < 1.0 - DISAGREE if placed_wins else point.measured > 1.0 + DISAGREE
    if not against or point.speedup is None:
        return text + f"; {point.measured_as or 'it'} measured {point.measured:.2f}×"
    return (text + f"; yet {point.measured_as or 'it'} measured {point.measured:.2f}×, where the "
            f"calibrated model predicted "
            f"{point.speedup:.2f}× ({point.speedup / point.measured - 1:+.0%}): this placement is "
            "off by as much")


def alpha_needed(cal: Calibration, f: float, speedup: float = 1.0, *, n_max: int = N_MAX,
                 sync: str = "reuse") -> float | None:
    """The least acceptance α at which a draft of cost ``f`` reaches ``speedup`` here (the
    break-even cost grows with α: bisection), None when not even α = 0.999 does."""
    def enough(alpha: float) -> bool:
        line = break_even(cal, alpha, speedup, n_max=n_max, sync=sync)
        return line.f is not None and line.f >= f
    lo, hi = 0.0, 0.999
    if not enough(hi):
        return None
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


SUMMARY_ALPHAS = (0.6, 0.7, 0.8, 0.9)


def summary(cal: Calibration, alphas: Sequence[float] = SUMMARY_ALPHAS, *, n_max: int = N_MAX) -> str:
    """"a draft must cost ≤ 0.08/0.14/… (1.0×) / ≤ -/0.02/… (1.5×) at α = 0.6/0.7/…" ("-": no
    draft reaches it there, however cheap)."""
    parts = []
    for s, line in curves(cal, SPEEDUPS, alphas, n_max=n_max).items():
        parts.append("≤ " + "/".join(f"{b.f:.2f}" if b.f is not None else "-" for b in line)
                     + f" ({s:.1f}×)")
    return ("a draft must cost " + " / ".join(parts) + " at α = "
            + "/".join(f"{a:g}" for a in alphas) + " (target-token units per draft token)")
