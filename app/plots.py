"""Five live plots of a speculative run.

``PlotsPanel`` shows, in a 2×2 grid and a column beside it:

- **Acceptance by draft position** — for each draft position k (1 = the first
  drafted token), the share of drafts reaching k whose k-th token the target
  kept, with the counts ``accepted/drafted`` written above each bar;
- **Accepted per round** — how many verified rounds accepted
  0, 1, 2, … of their drafted tokens;
- **Generation speed** — tokens per second over generation time, rolling and
  whole-run;
- **Time per round** — where each of the latest rounds spent its time: draft /
  verify / sync / overhead (ms), stacked;
- **Tree headroom** — the rank of the target's token among the draft model's top-10 at each
  position drafted from the target's own path, and under it the acceptance a draft tree of
  width 1, 2 and 4 would reach (``Stats.tree``, core/measure/stats.py).

At temperature the acceptance plot adds a dashed curve: the other acceptance rule's expected
share on the same drafts (``Stats.counterfactual_acceptance``, core/engine/accept_rules.py).
When more than one drafter (llama.cpp's speculative types in a chain) drafted, the acceptance
plot adds one curve per drafter; a small table under the plots gives each drafter's drafts,
accepted/drafted and mean accepted length. Both read ``Stats.by_drafter``.

The window calls :meth:`PlotsPanel.update_stats` from a GUI timer (once a second during a run)
with the fold of all events so far and the list of all events. The bar plots
(:mod:`.plot_drafts`) read the fold; the time series (:mod:`.plot_rounds`) keep an index into
the event list and only look at the events added since the previous call. Their style and the
y range with room for labels: :mod:`.plot_base`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pyqtgraph as pg
from pyqtgraph import exporters
from PySide6 import QtCore, QtGui, QtWidgets

from specscope.core.engine.events import RoundEvent
from specscope.core.measure.stats import Stats

from .plot_base import LivePlot, cache_static_parts, render_svg
from .plot_drafts import AcceptancePlot, DrafterTable, HistogramPlot, TreePlot
from .plot_rounds import SPLIT_PARTS, RoundSeries, SpeedPlot, TimeSplitPlot

__all__ = ["PlotsPanel"]

PLOT_MIN_SIZE = QtCore.QSize(260, 140)   # the text above keeps its lines on a 768-pixel screen

# (key, title) in display order; export() accepts either
PLOTS = (
    ("acceptance", "Acceptance by draft position"),
    ("accepted_length", "Accepted per round"),
    ("speed", "Generation speed"),
    ("time_split", "Time per round"),
    ("tree", "Tree headroom"),
)


class PlotsPanel(QtWidgets.QWidget):
    """Acceptance by position, accepted-length histogram, speed over time, time per round, tree
    headroom, and the per-drafter table."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        # in a scroll area: on a short screen the plots scroll rather than squeeze the text above
        page = QtWidgets.QScrollArea()
        page.setWidgetResizable(True)
        page.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        page.setWidget(QtWidgets.QWidget())
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(page)
        grid = QtWidgets.QGridLayout(page.widget())
        grid.setContentsMargins(4, 4, 4, 4)
        grid.setSpacing(6)
        titles = dict(PLOTS)
        self.acceptance = AcceptancePlot(titles["acceptance"])
        self.histogram = HistogramPlot(titles["accepted_length"])
        self.speed = SpeedPlot(titles["speed"])
        self.time_split = TimeSplitPlot(titles["time_split"])
        self.tree = TreePlot(titles["tree"])
        self._live: dict[str, LivePlot] = {"acceptance": self.acceptance, "accepted_length": self.histogram,
                                           "speed": self.speed, "time_split": self.time_split,
                                           "tree": self.tree}
        for plot, cell in ((self.acceptance, (0, 0)), (self.histogram, (0, 1)), (self.speed, (1, 0)),
                           (self.time_split, (1, 1))):
            grid.addWidget(plot.widget, *cell)
        grid.addWidget(self.tree.box, 0, 2, 2, 1)
        self._plots: dict[str, pg.PlotWidget] = {key: plot.widget for key, plot in self._live.items()}
        for w in self._plots.values():
            w.setMinimumSize(PLOT_MIN_SIZE)
            policy = w.sizePolicy()      # the height the tab has (pyqtgraph asks for 480 pixels:
            policy.setVerticalPolicy(QtWidgets.QSizePolicy.Policy.Ignored)   # the page would scroll)
            w.setSizePolicy(policy)
            cache_static_parts(w.getPlotItem())
        self.drafter_table = DrafterTable()      # per drafter: drafts, accepted/drafted, mean length
        grid.addWidget(self.drafter_table, 2, 0, 1, 2)
        for plot in self._live.values():         # the y range adds room for labels or the legend
            plot.view.sigResized.connect(lambda _vb, p=plot: p.resized())
        self._rounds = RoundSeries()             # per-round series, filled from the events not seen yet
        self._n_seen = 0
        self._vocab_modes: dict[str, str] = {}     # drafter -> its vocabulary mode (translate, intersect)
        self._last_event: RoundEvent | None = None
        self._last_stats: Stats | None = None
        self._idle_note = "No run yet"
        self._show_empty(None, 0)
        self.tree.show(Stats().tree)
        self.acceptance.refit(force=True)
        self._held: list[pg.PlotWidget] = []     # plots whose repaint waits (hold_repaints)
        self.paints = 0                          # paint events of the plots so far
        for w in self._plots.values():
            w.viewport().installEventFilter(self)

    # ------------------------------------------------------------------ staggered repaints
    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override: counts the plots' paints
        if event.type() == QtCore.QEvent.Type.Paint:
            self.paints += 1
        return False

    def hold_repaints(self) -> None:
        """Hold the repaint of every plot but the first; :meth:`release_repaint` lets them paint
        one per call (each pyqtgraph paint is several ms: all four in one event-loop turn were the
        longest UI stall of a run)."""
        for w in [self._plots[key] for key, _ in PLOTS][1:]:
            if w not in self._held:
                w.setUpdatesEnabled(False)
                self._held.append(w)

    def release_repaint(self) -> bool:
        """Let the next held plot repaint (Qt schedules it); False when none was held."""
        if not self._held:
            return False
        self._held.pop(0).setUpdatesEnabled(True)
        return True

    @property
    def all_painted(self) -> bool:
        """No plot is waiting for its held repaint."""
        return not self._held

    # ------------------------------------------------------------------ public API
    def plot_names(self) -> list[str]:
        """The plots' titles, in display order (what :meth:`export` takes)."""
        return [title for _, title in PLOTS]

    def plot_widget(self, name: str) -> pg.PlotWidget:
        """The PlotWidget of a plot, by title or key (acceptance, accepted_length, speed, time_split)."""
        for key, title in PLOTS:
            if name in (key, title):
                return self._plots[key]
        raise KeyError(f"no plot named {name!r}; the plots are {', '.join(self.plot_names())}")

    def export(self, name: str, path: str | Path) -> Path:
        """Save one plot as PNG (``.png``) or SVG (``.svg``), chosen by the file extension."""
        path = Path(path)
        item = self.plot_widget(name).getPlotItem()
        ext = path.suffix.lower()
        if ext == ".png":
            ex = exporters.ImageExporter(item)  # at the size shown (scaling distorts the text)
            ex.params["background"] = QtGui.QColor("white")
        elif ext == ".svg":
            try:
                exporters.SVGExporter(item).export(str(path))
            except ValueError:
                # pyqtgraph 0.14's SVGExporter cannot parse the closed paths ("… Z") that
                # Qt 6's SVG generator writes (pyqtgraph issue #3485): let Qt write the SVG
                render_svg(self.plot_widget(name), path)
            return path
        else:
            raise ValueError(f"cannot export {path.name}: the file name must end in .png or .svg")
        ex.export(str(path))
        return path

    def clear(self, running_note: str | None = None) -> None:
        """Forget everything shown. ``running_note``: a run has started, and the empty plots
        say this (how often they will update)."""
        self._idle_note = running_note or "No run yet"
        self._rounds.clear()
        self._n_seen = 0
        self._last_event = None
        self._last_stats = None
        for plot in (self.acceptance, self.histogram, self.speed, self.time_split):
            plot.clear()
        self.acceptance.show_counterfactual(Stats())
        self._vocab_modes = {}
        self._show_drafters(Stats())
        self.tree.show(Stats().tree)
        self._show_empty(None, 0)

    def update_stats(self, stats: Stats, events: Sequence[RoundEvent]) -> None:
        """Show ``stats`` (the fold of ``events``); only events new since the last call are read."""
        n = len(events)
        if n < self._n_seen or (self._n_seen and events[self._n_seen - 1] is not self._last_event):
            self.clear()  # another run's events: start over
        for ev in events[self._n_seen:n]:          # a draft of another vocabulary: its mode
            if ev.xvocab:
                self._vocab_modes[ev.drafter] = ev.xvocab.mode
        if stats is not self._last_stats and stats != self._last_stats:
            self._last_stats = stats
            self.acceptance.show(stats)
            self.acceptance.show_counterfactual(stats)
            self._show_drafters(stats)
            self.histogram.show(stats)
            self.tree.show(stats.tree)
            if stats.n_draft_rounds == 0 or self.acceptance.note.isVisible():
                self._show_empty(events[0] if n else None, stats.n_draft_rounds)
        if n > self._n_seen:
            self._rounds.take(events[self._n_seen:n])
            self._n_seen = n
            self._last_event = events[n - 1]
            self.speed.show(self._rounds)
            self.time_split.show(self._rounds)

    def _show_drafters(self, stats: Stats) -> None:
        """One acceptance curve per drafter when several drafted; the per-drafter table."""
        self.acceptance.show_drafters(stats)
        self.drafter_table.show_stats(stats, self._vocab_modes)

    def _show_empty(self, first: RoundEvent | None, n_draft_rounds: int) -> None:
        """A note in the two draft plots while there is no draft to show."""
        if n_draft_rounds:
            text = ""
        elif first is None:
            text = self._idle_note
        elif first.mode == "baseline":
            text = "A target-only run drafts nothing"
        else:
            text = "No draft verified yet"
        self.acceptance.show_note(text)
        self.histogram.show_note(text)

    # ------------------------------------------------------------------ for tests
    def shown(self) -> dict[str, dict[str, np.ndarray]]:
        """What each plot currently holds (numbers, for tests and debugging)."""
        def bars(item: pg.BarGraphItem) -> dict[str, np.ndarray]:
            o = item.opts
            return {"x": np.asarray(o["x"], dtype=float), "height": np.asarray(o["height"], dtype=float),
                    "y0": np.asarray(o["y0"] if o["y0"] is not None else np.zeros(len(o["x"])), dtype=float)}
        a, roll = self.acceptance, self.speed.roll
        rx, ry = roll.xData, roll.yData
        return {
            "acceptance": {**bars(a.accepted), "labels": [t.toPlainText() for t in a.labels if t.isVisible()]},
            "counterfactual": {"label": a.cf_label if a.cf_curve.isVisible() else "",
                               "y": np.asarray(a.cf_curve.yData if a.cf_curve.yData is not None else [])},
            "accepted_length": {**bars(self.histogram.bars),
                                "labels": [t.toPlainText() for t in self.histogram.labels if t.isVisible()]},
            "speed": {"x": np.asarray(rx if rx is not None else []),
                      "y": np.asarray(ry if ry is not None else []),
                      "mean": float(self.speed.mean.getData()[1][0]) if self._rounds.n else 0.0},
            "time_split": {part: bars(self.time_split.bars[part]) for part in SPLIT_PARTS},
            "tree": {**bars(self.tree.bars), "numbers": self.tree.numbers.text(),
                     "labels": [t.toPlainText() for t in self.tree.labels if t.isVisible()]},
            "by_drafter": {
                "curves": {name: np.asarray(c.yData if c.yData is not None else [])
                           for name, c in a.drafter_curves.items() if c.isVisible()},
                "table": [[t.item(r, c).text() for c in range(t.columnCount())]
                          for t in (self.drafter_table,) for r in range(t.rowCount())],
            },
        }
