"""The advise report's plots (drawn by core/measure/advise/svg.py): the measured speed-ups with the 95 %
ranges of a re-measurement, acceptance by draft position per category, and the break-even plot
(core/measure/cost/break_even.py) with each draft model placed at its (α, f)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from specscope.core.measure.advise.advice import Advice, Candidate, CategoryAdvice
from specscope.core.measure.cost.break_even import SPEEDUPS, curves, point_speed, summary, verdict
from specscope.core.measure.advise.svg import CHAR_W, MUTED, PALETTE, Chart, nice_ticks

WIN, OTHER, THIN = "#2ca02c", "#7f9cc4", "#c9d4e4"      # recommended, measured, no interval yet
DASHES = {1.0: None, 1.5: "6 4"}


@dataclass(frozen=True)
class Figure:
    name: str                      # part of a file name: "speedups", "acceptance-translation", ...
    title: str
    svg: str
    notes: tuple[str, ...] = ()    # lines that go under it


def figures(a: Advice) -> list[Figure]:
    """Every plot the advice has data for, in the report's order."""
    figs = [speedup_figure(a)] + [acceptance_figure(c) for c in a.categories] + [break_even_figure(a)]
    return [f for f in figs if f is not None]


def speedup_figure(a: Advice) -> Figure | None:
    """One row per measured candidate: the median of its passes' speed-ups (a bar from 1.0×) and
    the range a re-measurement lands in 95 % of the time; the recommended one green, one without a range (under MIN_PASSES
    passes: the median of what it has, its pairs' before a whole pass) pale."""
    rows = [(cat, m) for cat in a.categories for m in cat.measured if m.runs]
    if not rows:
        return None
    labels = [f"{cat.category}: {m.candidate.name}" for cat, m in rows]
    values = [(m.interval() or (statistics.median(m.pass_speedups() or m.ratios),) * 3) for _, m in rows]
    lo = min(0.5, min(v[1] for v in values) * 0.9)
    hi = max(1.5, max(v[2] for v in values) * 1.05)
    left = int(CHAR_W * max(map(len, labels))) + 16
    ch = Chart((lo, hi), (0.4, len(rows) + 0.6), width=left + 560, height=80 + 26 * len(rows),
               left=left, right=160, top=44, name="speedups", x_label="speed-up over the "
               "target alone (as bench computes it; 95 % range of a re-measurement)", title="Measured speed-ups")
    ticks = [(len(rows) - i, label) for i, label in enumerate(labels)]
    ch.axes(nice_ticks(lo, hi, 7), ticks, x_fmt="{:g}×", y_grid=False)
    for i, ((cat, m), (est, low, high)) in enumerate(zip(rows, values)):
        y, d = len(rows) - i, cat.decision()
        ch.bars([(y, est)], WIN if d.best is m else OTHER if m.interval() else THIN, base=1.0)
        if m.interval():
            ch.error_bars([(y, low, high)])
            ch.text(max(high, 1.0), y, f"{est:.2f}× ({low:.2f}–{high:.2f})", dx=8, dy=4, size=11)
        else:
            ch.text(max(est, 1.0), y, f"{est:.2f}× ({len(m.pass_speedups())} passes: no interval)",
                    dx=6, dy=4, size=11, color=MUTED)
    ch.vline(1.0, label="1.0×: the target alone")
    return Figure("speedups", "Measured speed-ups, 95 % ranges", ch.svg())


def _shown(cat: CategoryAdvice) -> list[Candidate]:
    """The category's best candidates: those measured, else the ones it would measure."""
    return [m.candidate for m in cat.measured] or cat.to_measure(3)


def acceptance_figure(cat: CategoryAdvice) -> Figure | None:
    """Per draft position, the share of drafts reaching it that the target accepted there."""
    shown = [c for c in _shown(cat) if c.drafted_at]
    if not shown:
        return None
    n = max(len(c.drafted_at) for c in shown)
    right = int(CHAR_W * max(len(c.name) for c in shown)) + 52
    ch = Chart((0.6, n + 0.4), (0.0, 1.0), width=360 + right, height=280, right=right,
               name=f"acceptance-{cat.category}", title=f"{cat.category}: acceptance by position",
               x_label="draft position", y_label="accepted there")
    ch.axes(range(1, n + 1), [0, 0.25, 0.5, 0.75, 1.0], y_fmt="{:.0%}")
    for i, c in enumerate(shown):
        color = PALETTE[i % len(PALETTE)]
        pts = [(k + 1, v) for k, v in enumerate(c.position_acceptance)]
        ch.line(pts, color)
        ch.points(pts, color, titles=[f"{c.name}: position {k + 1}, {c.accepted_at[k]} of "
                                      f"{c.drafted_at[k]} accepted" for k in range(len(pts))])
    ch.legend([(c.name, PALETTE[i % len(PALETTE)], None) for i, c in enumerate(shown)], corner="outside")
    return Figure(f"acceptance-{cat.category}", f"{cat.category}: acceptance by draft position", ch.svg())


def break_even_lines(a: Advice) -> list[str]:
    """Which calibration prices the break-even, what a draft must cost, and where each draft
    sits (one verdict per category); empty without a calibration."""
    pair = a.pair_calibration()
    if pair is None:
        return []
    name, cal = pair
    source = (f"{name}'s pair calibration" if cal.has_draft else
              f"the calibration of {name} alone (no draft model: optimistic, it leaves out a "
              "speculative round's own Python and rollback)")
    load = (" (taken under load, not cached: a loaded machine over-prices a round's own costs, "
            "so these curves sit lower than a quiet machine's)" if cal.under_load else "")
    return ([f"break-even on this machine, priced with {source}{load}: {summary(cal)}"]
            + [f"{category}: {verdict(cal, p)}" for category, _, p in a.draft_points()])


def break_even_figure(a: Advice) -> Figure | None:
    """x = α, y = f: the 1.0× and 1.5× curves and each draft's best setting per category at its
    (α, f); a draft under a curve beats that speed-up here."""
    pair = a.pair_calibration()
    if pair is None:
        return None
    _, cal = pair
    lines, points = curves(cal), a.draft_points()
    top = max([b.f for b in lines[1.0] if b.f is not None and b.alpha <= 0.95]
              + [p.f for _, _, p in points] + [0.05]) * 1.25
    ch = Chart((0.3, 1.0), (0.0, top), width=640, height=400, name="break-even",
               title="Break-even: what a draft may cost here", x_label="acceptance α (per token)",
               y_label="f, draft token ÷ target token")
    ch.axes(nice_ticks(0.3, 1.0, 8), nice_ticks(0.0, top, 6))
    ch.area([(b.alpha, b.f) for b in lines[1.0]], WIN, label="under the 1.0× curve: faster here")
    for s, line in lines.items():
        ch.line([(b.alpha, b.f) for b in line], "#444", width=2, dash=DASHES.get(s), class_="curve")
    drafts = list(dict.fromkeys(draft for _, draft, _ in points))
    for i, (category, draft, p) in enumerate(points):
        color = PALETTE[drafts.index(draft) % len(PALETTE)]
        speed = point_speed(p)
        ch.points([(p.alpha, p.f)], color, r=5, titles=[f"{category}: {p.name} (α {p.alpha:.2f}, "
                                                        f"f {p.f:.3f}{speed})"])
        ch.text(p.alpha, p.f, category, anchor="end" if p.alpha > 0.9 else "middle", size=10,
                dy=-9 if i % 2 == 0 else 17)
    ch.legend([(f"{s:.1f}× break-even", "#444", DASHES.get(s)) for s in SPEEDUPS]
              + [(d, PALETTE[i % len(PALETTE)], "dot") for i, d in enumerate(drafts)])
    return Figure("break-even", "Break-even: what a draft may cost here", ch.svg(),
                  tuple(break_even_lines(a)))
