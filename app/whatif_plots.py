"""The What-if tab's two plots (app/whatif_panel.py): acceptance by draft position, the setting
chosen beside the run as measured; and draft-simple's settings under the hindsight ceiling (bars
of predicted speed-up: each fixed n, the hf and cost policies, the best p_min, the ceiling as a
line, the run's measured speed-up as a dashed one, the chosen setting's bar outlined)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from .plot_base import (CALIBRATED_COLOR, MEASURED_COLOR, cache_static_parts, empty_note,
                        set_text, styled_plot)

__all__ = ["CurvesPlot", "CeilingPlot", "WHATIF_COLOR"]

WHATIF_COLOR = "#0072b2"       # the setting chosen (blue); the run as measured is red, dashed
BAR_COLOR = "#b8c7d9"


def _fixed_view(widget: pg.PlotWidget) -> pg.PlotItem:
    p = widget.getPlotItem()
    p.getViewBox().setMouseEnabled(x=False, y=False)
    p.setLimits(yMin=0.0)
    return p


class CurvesPlot:
    """Acceptance by draft position: the what-if's curve beside the measured run's."""

    def __init__(self):
        self.widget = styled_plot("Acceptance by position", "Share kept",
                                  "Draft position",
                                  "Of the drafts that reached each position, the share whose token "
                                  "the target kept: the what-if (blue) and this run as measured "
                                  "(red, dashed); the table below names both", antialias=True)
        p = _fixed_view(self.widget)
        p.setYRange(0.0, 1.05, padding=0)
        p.getAxis("left").setTicks([[(v, f"{v:g}") for v in (0, 0.25, 0.5, 0.75, 1.0)]])
        self.measured = p.plot([], [], name="this run, measured",
                               pen=pg.mkPen(MEASURED_COLOR, width=2, style=Qt.PenStyle.DashLine),
                               symbol="o", symbolSize=6, symbolBrush=MEASURED_COLOR,
                               symbolPen=pg.mkPen("w"))
        self.whatif = p.plot([], [], name="what-if", pen=pg.mkPen(WHATIF_COLOR, width=3),
                             symbol="s", symbolSize=8, symbolBrush=WHATIF_COLOR,
                             symbolPen=pg.mkPen("w"))
        self.note = empty_note(p)
        self._longest = 0                 # the longest curve the axis is set for
        self._measured = None             # the measured curve drawn
        cache_static_parts(p)

    def show(self, whatif: Sequence[float], measured: Sequence[float], note: str = "") -> None:
        """The two curves (either may be empty); ``note`` in the middle when there is no what-if.
        The axis is set again only when the longest curve changes (an axis drawn anew is most of
        a repaint)."""
        self.whatif.setData(np.arange(1, len(whatif) + 1), np.asarray(whatif, dtype=float))
        if tuple(measured) != self._measured:         # the run's own curve: set once per run
            self._measured = tuple(measured)
            self.measured.setData(np.arange(1, len(measured) + 1), np.asarray(measured, dtype=float))
        longest = max(len(whatif), len(measured), 1)
        if longest != self._longest:
            self._longest = longest
            p = self.widget.getPlotItem()
            p.setXRange(0.5, longest + 0.5, padding=0)
            every = 1 if longest <= 10 else 2 if longest <= 24 else 8
            p.getAxis("bottom").setTicks([[(k, str(k)) for k in range(every, longest + 1, every)]])
            self.note.setPos((longest + 1) / 2, 0.5)
        set_text(self.note, note)
        self.note.setVisible(bool(note))

    def data(self) -> dict:
        def ys(item):
            return list(item.yData) if item.yData is not None else []
        return {"whatif": ys(self.whatif), "measured": ys(self.measured),
                "note": self.note.textItem.toPlainText() if self.note.isVisible() else ""}


def _tick(label: str) -> str:
    """A bar's short name under it: "4" for n=4, "hf", "cost", "p_min" (a line lower: the bars
    are narrow)."""
    name = label.removeprefix("n=").split(" ")[0]
    return {"best": "p_min", "cost": "\ncost"}.get(name, name)


class CeilingPlot:
    """draft-simple's settings under the hindsight ceiling (module docs)."""

    def __init__(self):
        self.widget = styled_plot("Under the hindsight ceiling", "Speed-up (×)",
                                  "draft-simple: n · policy · p_min", "Predicted speed-up of each draft-simple setting on this run "
                                  "(calibrated). The green line is the ceiling: every round's "
                                  "best draft length (0 included: no draft), chosen knowing the "
                                  "text; no length policy can beat it. Red, dashed: this run as "
                                  "measured.")
        p = _fixed_view(self.widget)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush=pg.mkBrush(BAR_COLOR),
                                    pen=pg.mkPen(None))
        self.chosen = pg.BarGraphItem(x=[], height=[], width=0.7, brush=pg.mkBrush(WHATIF_COLOR),
                                      pen=pg.mkPen(None))
        p.addItem(self.bars)
        p.addItem(self.chosen)
        dash = Qt.PenStyle.DashLine
        self.ceiling = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen(CALIBRATED_COLOR, width=2),
                                       label="ceiling {value:.2f}×",
                                       labelOpts={"position": 0.02, "color": CALIBRATED_COLOR,
                                                  "anchors": [(0, 1), (0, 1)]})
        self.measured = pg.InfiniteLine(angle=0, movable=False,
                                        pen=pg.mkPen(MEASURED_COLOR, width=1.5, style=dash),
                                        label="measured {value:.2f}×",
                                        labelOpts={"position": 0.7, "color": MEASURED_COLOR,
                                                   "anchors": [(0.5, 1), (0.5, 1)]})
        self.one = pg.InfiniteLine(pos=1.0, angle=0, movable=False, pen=pg.mkPen("#999999", width=1))
        for line in (self.one, self.ceiling, self.measured):
            p.addItem(line, ignoreBounds=True)
        self.note = empty_note(p)
        self.labels: list[str] = []
        self.heights: list[float] = []
        self._drawn = None                # (ceiling, measured, note) drawn last
        cache_static_parts(p)

    def show(self, ceiling, chosen: int | None, measured: float | None, note: str = "") -> None:
        """A ``Ceiling`` (core/measure/whatif/run.py; None: ``note`` instead), the bar of the
        setting chosen (in blue; None: it is none of them) and the measured speed-up. Only the
        blue bar moves while the ceiling and the measured speed-up stay as they were."""
        if (ceiling, measured, note) != self._drawn:
            self._drawn = (ceiling, measured, note)
            self._draw(ceiling, measured, note)
        hit = [chosen] if chosen is not None else []
        self.chosen.setOpts(x=np.asarray(hit, dtype=float), height=[self.heights[i] for i in hit])

    def _draw(self, ceiling, measured: float | None, note: str) -> None:
        p = self.widget.getPlotItem()
        bars = ceiling.bars if ceiling is not None else ()
        self.labels = [label for label, _, _ in bars]
        self.heights = [float(v) for _, v, _ in bars]
        self.bars.setOpts(x=np.arange(len(bars), dtype=float), height=self.heights)
        p.getAxis("bottom").setTicks([[(i, _tick(label)) for i, label in enumerate(self.labels)]])
        self.ceiling.setVisible(ceiling is not None)
        self.one.setVisible(ceiling is not None)
        self.measured.setVisible(ceiling is not None and measured is not None)
        p.getAxis("left").setTicks(None if ceiling is not None else [[]])
        top = 1.2
        if ceiling is not None:
            self.ceiling.setValue(ceiling.speedup)
            top = max([top, ceiling.speedup, *self.heights])
            if measured is not None:
                self.measured.setValue(measured)
                top = max(top, measured)
        p.setXRange(-0.7, max(len(bars), 1) - 0.1, padding=0)    # room for the last tick's name
        p.setYRange(0.0, top * 1.18, padding=0)
        self.note.setText(note if ceiling is None else "")
        self.note.setVisible(ceiling is None and bool(note))
        self.note.setPos((max(len(bars), 1) - 1) / 2, top * 0.6)

    def data(self) -> dict:
        return {"labels": list(self.labels), "heights": list(self.heights),
                "ceiling": self.ceiling.value() if self.ceiling.isVisible() else None,
                "chosen": list(self.chosen.opts["height"])}
