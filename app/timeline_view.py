"""The draft/verify timeline: where each round's time went, round after
round, on one time axis.

Five lanes, top to bottom: the draft (the draft model's decodes and the n-gram lookups), the
translation between two vocabularies (a draft of another vocabulary: docs/cross-vocab.md), the
target's verification, the sync and roll-back, and Python outside llama.cpp. A round occupies
[start, start + t_round) on the axis, its phases one after another in that order (the order
they run in), so a bar's length is the phase's measured time and the gaps between lanes line
up. The wheel zooms the time axis (drag to pan; the lanes stay put); clicking a bar selects
its round (``round_clicked``), and ``highlight_round`` shades one round (a hovered token's).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from specscope.core.engine.events import RoundEvent

from . import shape_words
from .plot_base import styled_plot
from .plot_rounds import SPLIT_COLORS

LANES = ("draft", "translate", "verify", "sync", "overhead")      # top to bottom
LANE_NAMES = {"draft": "draft", "translate": "translate", "verify": "verify", "sync": "sync",
              "overhead": "Python"}
BAR_HEIGHT = 0.7
HIGHLIGHT = (255, 200, 0, 70)                          # a shaded round
SELECTED = (40, 40, 40, 45)


def batch_of(ev: RoundEvent) -> str:
    """The round's verification batch in words: its size, and what it held."""
    n = ev.batch_size
    if ev.shape is not None:
        return shape_words.batch_words(ev)
    return f"a batch of {n} token{'s' if n != 1 else ''}" + (
        f": the seed and {len(ev.drafted)} drafted" if ev.drafted else ": the seed")


def phase_spans(events: Sequence[RoundEvent], t0: float = 0.0) -> dict[str, np.ndarray]:
    """Each round's start and each phase's (start, length), in seconds from ``t0``: the phases
    run one after another inside the round (draft, translate, verify, sync, then the rest:
    Python)."""
    t_round = np.array([e.t_round for e in events], dtype=float)
    parts = {p: np.array([getattr(e, "t_" + p) for e in events], dtype=float) for p in LANES[:-1]}
    parts["overhead"] = np.maximum(0.0, t_round - sum(parts.values()))
    start = t0 + np.concatenate(([0.0], np.cumsum(t_round)[:-1])) if len(events) else np.zeros(0)
    out = {"start": start, "end": start + t_round}
    offset = start.copy()
    for p in LANES:
        out[p + "_x0"] = offset.copy()
        out[p + "_w"] = parts[p]
        offset = offset + parts[p]
    return out


class TimelineView(QtWidgets.QWidget):
    """The Gantt-style timeline of a run's rounds (module docs)."""

    round_clicked = QtCore.Signal(int)     # the round index of the bar clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.plot = styled_plot("Where each round's time went",
                                "", "time since the first round (ms)",
                                tip="Wheel: zoom the time axis; drag: pan; click a bar: select "
                                    "its round's tokens in the text")
        p = self.plot.getPlotItem()
        p.setMouseEnabled(x=True, y=False)
        p.showGrid(x=True, y=False, alpha=0.15)
        p.setYRange(-0.6, len(LANES) - 0.4, padding=0)
        left = p.getAxis("left")
        left.setTicks([[(len(LANES) - 1 - i, LANE_NAMES[lane]) for i, lane in enumerate(LANES)]])
        self.bars = {}
        for i, lane in enumerate(LANES):
            bar = pg.BarGraphItem(x0=[], width=[], y=[], height=BAR_HEIGHT,
                                  brush=SPLIT_COLORS[lane], pen=pg.mkPen(None))
            p.addItem(bar)
            self.bars[lane] = bar
        self.shade = pg.LinearRegionItem(values=(0, 0), movable=False,
                                         brush=pg.mkBrush(*HIGHLIGHT), pen=pg.mkPen(None))
        self.selected_shade = pg.LinearRegionItem(values=(0, 0), movable=False,
                                                  brush=pg.mkBrush(*SELECTED), pen=pg.mkPen(None))
        for item in (self.shade, self.selected_shade):
            item.setZValue(-10)
            item.hide()
            p.addItem(item)
        self.summary = QtWidgets.QLabel()
        self.summary.setWordWrap(True)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.summary)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.plot.scene().sigMouseMoved.connect(self._hovered)
        self._events: list[RoundEvent] = []
        self.spans: dict[str, np.ndarray] = phase_spans([])
        self.highlighted: int | None = None
        self.selected: int | None = None

    # ------------------------------------------------------------------ data
    def clear(self) -> None:
        self._events = []
        self.spans = phase_spans([])
        self.highlighted = self.selected = None
        self.shade.hide()
        self.selected_shade.hide()
        self._draw(autorange=True)

    def update_events(self, events: Sequence[RoundEvent]) -> None:
        """Show ``events`` (all of the run's so far; a new run after ``clear``)."""
        if len(events) == len(self._events):
            return
        self._events = list(events)
        self.spans = phase_spans(self._events)
        self._draw(autorange=True)

    def _draw(self, autorange: bool) -> None:
        ms = 1e3
        for i, lane in enumerate(LANES):
            y = np.full(len(self._events), len(LANES) - 1 - i, dtype=float)
            self.bars[lane].setOpts(x0=self.spans[lane + "_x0"] * ms,
                                    width=self.spans[lane + "_w"] * ms, y=y, height=BAR_HEIGHT)
        if autorange and len(self._events):
            self.plot.getPlotItem().setXRange(0, float(self.spans["end"][-1]) * ms, padding=0.01)
        n = len(self._events)
        if not n:
            self.summary.setText("No rounds yet: run, step or open a session.")
            return
        totals = {lane: float(self.spans[lane + "_w"].sum()) for lane in LANES}
        whole = float(self.spans["end"][-1] - self.spans["start"][0]) or 1.0
        parts = ", ".join(f"{LANE_NAMES[lane]} {1e3 * t:.1f} ms ({100 * t / whole:.0f}%)"
                          for lane, t in totals.items() if t or lane != "translate")
        wide = [e for e in self._events if e.shape is not None]
        batches = (f" Tree and lookahead rounds verify one wide batch each (mean "
                   f"{np.mean([e.batch_size for e in wide]):.1f} tokens)." if wide else "")
        self.summary.setText(f"{n} rounds in {1e3 * whole:.1f} ms: {parts}.{batches} "
                             "Hover a round for its batch; click a bar to select its round's "
                             "tokens; hover a token to find its round here.")

    # ------------------------------------------------------------------ rounds
    def round_at(self, t_ms: float) -> int | None:
        """The round whose span holds time ``t_ms`` (ms on the axis), or None."""
        if not len(self._events):
            return None
        t = t_ms / 1e3
        i = int(np.searchsorted(self.spans["start"], t, side="right")) - 1
        if 0 <= i < len(self._events) and t < self.spans["end"][i]:
            return i
        return None

    def _region(self, shade: pg.LinearRegionItem, index: int | None) -> None:
        if index is None or not 0 <= index < len(self._events):
            shade.hide()
            return
        shade.setRegion((self.spans["start"][index] * 1e3, self.spans["end"][index] * 1e3))
        shade.show()

    def highlight_round(self, index: int | None) -> None:
        """Shade round ``index`` (the hovered token's round), None to clear; round indices are
        the events' positions in the run (RoundEvent.index)."""
        self.highlighted = index
        self._region(self.shade, index)

    def select_round(self, index: int | None) -> None:
        self.selected = index
        self._region(self.selected_shade, index)

    def _hovered(self, pos) -> None:
        """Hovering a round: its phases' times and its verification batch."""
        vb = self.plot.getPlotItem().getViewBox()
        index = self.round_at(vb.mapSceneToView(pos).x()) if vb.sceneBoundingRect().contains(pos) else None
        if index is None:
            self.plot.setToolTip("")
            return
        ev = self._events[index]
        times = ", ".join(f"{LANE_NAMES[lane]} {1e3 * self.spans[lane + '_w'][index]:.2f} ms"
                          for lane in LANES if self.spans[lane + "_w"][index] or lane != "translate")
        self.plot.setToolTip(f"Round {ev.index + 1}: {times}. Verified {batch_of(ev)}; "
                             f"{ev.n_accepted} accepted, {len(ev.emitted)} emitted.")

    def _clicked(self, event) -> None:
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        point = vb.mapSceneToView(event.scenePos())
        index = self.round_at(point.x())
        if index is not None:
            self.select_round(index)
            self.round_clicked.emit(index)
