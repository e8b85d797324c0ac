"""The Advisor's pictures: the measured speed-ups of every category's candidates with the 95 %
ranges of a re-measurement (:class:`MeasuredChart`), and the break-even plot (:class:`BreakEvenPlot`): what a
draft must cost here (f, in target tokens per draft token) for 1.0× and 1.5× at each acceptance α,
with each draft model placed at its own (α, f) (Advice.draft_points, as the report's plot)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from .compare_charts import DRAFT_COLORS
from .drafter_style import drafter_colors
from .plot_base import TEXT_COLOR, cache_static_parts, coloured_key, empty_note, set_text, styled_plot

__all__ = ["MeasuredChart", "BreakEvenPlot"]

BAND = 0.6                  # a category's share of its row, split among its candidates
CURVE_STYLES = {1.0: dict(width=2.5), 1.5: dict(width=1.5, style=Qt.PenStyle.DashLine)}
CURVE_COLOR = "#333333"
WIN_FILL = (46, 157, 75, 38)     # under the 1.0× curve: a draft there beats the target alone
LABEL_LEFT_OF = 0.9              # a point's label ends at it past this α (the plot ends at 1.0)
NEAR_ZERO = 0.1                 # a curve this low against the plot's top is said in words too
ALPHA_MARGIN = 0.15              # the break-even plot starts this far before its first curve point


def _clear(plot: pg.PlotItem, items: list) -> None:
    for it in items:
        plot.removeItem(it)
    items.clear()


class MeasuredChart:
    """Per category (a row, the first on top), each measured candidate's median speed-up with its
    95 % range of a re-measurement as a bar, coloured by its drafter; the advice ringed in black. ``widget``."""

    def __init__(self):
        self.widget = styled_plot("Measured speed-up, 95 % range", "", "speed-up over the target alone (×)",
                                  antialias=True)
        self.widget.setMinimumSize(300, 200)
        self.plot = self.widget.getPlotItem()
        self.plot.showGrid(x=True, y=False, alpha=0.15)
        self.plot.addItem(pg.InfiniteLine(pos=1.0, angle=90, pen=pg.mkPen("#888888", width=1,
                                                                         style=Qt.PenStyle.DotLine)))
        self.note = empty_note(self.plot)
        self.items: list = []
        self.drafters: list[str] = []            # the drafters shown, for the key under the chart
        cache_static_parts(self.plot)

    def key_html(self) -> str:
        """The drafters' colours, as a line under the chart (a legend would hide points)."""
        from specscope.core.measure.advise.advice import MIN_PASSES
        dots = coloured_key([(drafter_colors(d.split(">")[0])[2], "◆" if ">" in d else "●", d)
                             for d in self.drafters])
        return (dots + f"&nbsp;&nbsp; ○ fewer than {MIN_PASSES} passes (no range yet); "
                "ringed: the advice") if dots else ""

    def fill(self, advice) -> None:
        _clear(self.plot, self.items)
        cats = advice.categories if advice is not None else []
        rows = len(cats)
        xs: list[float] = [1.0]
        self.drafters = []
        for i, cat in enumerate(cats):
            best = cat.decision().best
            shown = [m for m in cat.measured if m.ratios]
            for k, m in enumerate(shown):
                y = rows - 1 - i + BAND * ((k + 0.5) / len(shown) - 0.5) * -1
                iv = m.interval()
                est = iv[0] if iv else float(np.median(m.ratios))
                # a chain is named whole and drawn as a diamond in its first type's colour (it
                # was keyed as that type alone)
                types = m.candidate.spec.types
                drafter = ">".join(types)
                color = drafter_colors(types[0])[2]
                if drafter not in self.drafters:
                    self.drafters.append(drafter)
                point = pg.ScatterPlotItem([est], [y], size=11 if m is best else 8,
                                           symbol="d" if len(types) > 1 else "o",
                                           brush=pg.mkBrush(color if iv else "w"),
                                           pen=pg.mkPen("k" if m is best else color, width=2 if m is best else 1.5))
                point.setToolTip(f"{cat.category}: {m.candidate.name}, {len(m.pass_speedups())} passes"
                                 + (f", {iv[0]:.2f}× ({iv[1]:.2f}–{iv[2]:.2f})" if iv
                                    else ": too few passes for a range (the median of its pairs)"))
                self.plot.addItem(point)
                self.items.append(point)
                xs.append(est)
                if iv:
                    bars = pg.ErrorBarItem(x=np.array([est]), y=np.array([y]), left=np.array([est - iv[1]]),
                                           right=np.array([iv[2] - est]), beam=0.12, pen=pg.mkPen(color, width=1.5))
                    self.plot.addItem(bars)
                    self.items.append(bars)
                    xs += [iv[1], iv[2]]
        self.plot.getAxis("left").setTicks([[(rows - 1 - i, c.category) for i, c in enumerate(cats)]])
        set_text(self.note, "" if len(xs) > 1 else "nothing measured yet")
        lo, hi = min(xs), max(xs)
        pad = 0.08 * (hi - lo or 1.0)
        self.plot.setXRange(max(0.0, lo - pad), hi + pad, padding=0)
        self.plot.setYRange(-0.6, max(rows, 1) - 0.4, padding=0)
        self.note.setPos((lo + hi) / 2, (rows - 1) / 2)


class BreakEvenPlot:
    """x acceptance α, y the draft's cost f: the 1.0× curve (solid, the region under it shaded)
    and the 1.5× curve (dashed), each draft model a point per category, labelled. ``widget``."""

    def __init__(self):
        self.widget = styled_plot("Break-even: what a draft may cost here", "draft cost f (target tokens)",
                                  "acceptance α (per drafted token)", antialias=True)
        self.widget.setMinimumSize(300, 220)
        self.plot = self.widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        # no legend inside the plot (the categories' labels went under it): key_html, in the caption
        self.drafts: list[str] = []
        self.note = empty_note(self.plot)
        self.items: list = []
        self.curves: dict = {}                  # {speed-up: [BreakEven per α]} drawn
        cache_static_parts(self.plot)

    def fill(self, cal, points, selected: str | None = None) -> None:
        """``cal``: the calibration that prices the curves (None: none to price with); ``points``:
        (category, draft, DraftPoint) (Advice.draft_points); ``selected``: the category whose
        points are drawn larger."""
        from specscope.core.measure.cost.break_even import curves, point_speed
        _clear(self.plot, self.items)
        self.curves = curves(cal) if cal is not None else {}
        if cal is None:
            set_text(self.note, "no calibration: nothing to price the curves with")
            self.note.setPos(0.65, 0.5)
            return
        top = 0.0
        for speedup, line in self.curves.items():
            pts = [(b.alpha, b.f) for b in line if b.f is not None and math.isfinite(b.f)]
            if not pts:
                continue
            xs, ys = np.array([a for a, _ in pts]), np.array([f for _, f in pts])
            curve = pg.PlotCurveItem(xs, ys, pen=pg.mkPen(CURVE_COLOR, **CURVE_STYLES.get(speedup, {})),
                                     name=f"{speedup:g}× break-even")
            dots = pg.ScatterPlotItem(xs, ys, size=4, brush=pg.mkBrush(CURVE_COLOR), pen=None)
            self.plot.addItem(curve)
            self.plot.addItem(dots)                 # a curve of one α is a dot
            self.items += [curve, dots]
            if speedup == 1.0:
                floor = pg.PlotCurveItem(xs, np.zeros_like(ys), pen=pg.mkPen(None))
                fill = pg.FillBetweenItem(curve, floor, brush=pg.mkBrush(*WIN_FILL))
                self.plot.addItem(fill)
                self.items.append(fill)
            top = max(top, float(ys.max()))
        drafts = self.drafts = list(dict.fromkeys(draft for _, draft, _ in points))
        for category, draft, p in points:
            color = DRAFT_COLORS[drafts.index(draft) % len(DRAFT_COLORS)]
            big = category == selected
            first = not any(it.opts.get("name") == draft for it in self.items
                            if isinstance(it, pg.ScatterPlotItem))
            point = pg.ScatterPlotItem([p.alpha], [p.f], size=12 if big else 8, brush=pg.mkBrush(color),
                                       pen=pg.mkPen("k" if big else "w", width=1.5),
                                       name=draft if first else None)
            point.setToolTip(f"{draft} in {category}, {p.name}: α {p.alpha:.2f}, f {p.f:.3f}"
                             + point_speed(p))
            self.plot.addItem(point)
            self.items.append(point)
            top = max(top, p.f)
        # one label per place, above and below in turn from left to right (neighbours do not overlap)
        for k, ((alpha, f), names) in enumerate(sorted(_near(points).items())):
            label = pg.TextItem(", ".join(names), color=TEXT_COLOR if selected in names else "#666666",
                                anchor=(1.0 if alpha > LABEL_LEFT_OF else 0.0, 1.2 if k % 2 == 0 else -0.2))
            label.setPos(alpha, f)
            self.plot.addItem(label)
            self.items.append(label)
        even = [b for b in self.curves.get(1.0, []) if b.f is not None]
        set_text(self.note, "no draft beats the target alone here at any α shown" if not even else
                 f"only from α {even[0].alpha:.2f}, a draft costing under {max(b.f for b in even):.3f}\n"
                 "target tokens per token wins here"
                 if len(even) <= 2 or max(b.f for b in even) < NEAR_ZERO * (top or 1.0) else "")
        # from a little before the first α where a draft can win (or the first draft) to α 1
        alphas = [b.alpha for line in self.curves.values() for b in line if b.f is not None]
        alphas += [p.alpha for _, _, p in points]
        lo = min(alphas, default=min(b.alpha for line in self.curves.values() for b in line))
        self.plot.setXRange(max(0.0, lo - ALPHA_MARGIN), 1.0 + ALPHA_MARGIN / 6, padding=0)
        self.note.setPos((max(0.0, lo - ALPHA_MARGIN) + 1.0) / 2, (top or 1.0) / 2)
        self.plot.setYRange(0.0, (top or 1.0) * 1.2, padding=0)

    def key_html(self) -> str:
        """What the lines and dots mean (the plot's key, under it)."""
        parts = [f"{'━' if s == 1.0 else '╌'} {s:g}× break-even" for s in self.curves]
        parts += [coloured_key([(DRAFT_COLORS[i % len(DRAFT_COLORS)], "●", d)], gap=" ")
                  for i, d in enumerate(self.drafts)]
        return "Key: " + ", ".join(parts) if parts else ""

    def out_of_reach(self) -> list[float]:
        """The speed-ups no draft reaches here at any α of the curves, however cheap."""
        return [s for s, line in self.curves.items() if all(b.f is None for b in line)]


def _near(points) -> dict[tuple[float, float], list[str]]:
    """The placed drafts' categories grouped by where they sit (to two decimals): one label
    for points drawn on top of each other."""
    out: dict[tuple[float, float], list[str]] = {}
    for category, _, p in points:
        out.setdefault((round(p.alpha, 2), round(p.f, 2)), []).append(category)
    return out
