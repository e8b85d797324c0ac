"""Five live plots of a speculative run.

``PlotsPanel`` shows, in a 2×2 grid and a column beside it:

- **Acceptance by draft position** — for each draft position k (1 = the first
  drafted token), the share of drafts reaching k whose k-th token the target
  kept, with the counts ``accepted/drafted`` written above each bar;
- **Accepted drafted tokens per round** — how many verified rounds accepted
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
read the fold; the time series keep an index into the event list and only
look at the events added since the previous call (preallocated arrays that
grow by doubling, ``setData``/``setOpts`` on items made once), following
pyqtgraph's ``scrollingPlots`` example.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pyqtgraph as pg
from pyqtgraph import exporters
from PySide6 import QtCore, QtGui, QtSvg, QtWidgets

from specscope.core.engine.events import RoundEvent
from specscope.core.measure.stats import Stats

from .drafter_style import drafter_colors

__all__ = [
    "PlotsPanel",
    "cache_static_parts",
    "styled_plot",
    "ACCEPTED_COLOR",
    "TARGET_COLOR",
    "REJECTED_COLOR",
    "SPLIT_COLORS",
    "SPLIT_PARTS",
    "TIME_SPLIT_ROUNDS",
    "SPEED_WINDOW_S",
    "SPEED_WINDOW_MIN_ROUNDS",
]

# token colours shared with the window's token view
ACCEPTED_COLOR = "#2e9d4b"   # a drafted token the target kept
TARGET_COLOR = "#3b6fd8"     # the target's own token
REJECTED_COLOR = "#d64545"   # a drafted token the target did not keep

# time split: Okabe–Ito colours (distinguishable with the common colour-vision deficiencies)
SPLIT_PARTS = ("draft", "verify", "sync", "overhead")
SPLIT_COLORS = {
    "draft": "#e69f00",      # orange
    "verify": "#0072b2",     # blue: the target's work
    "sync": "#cc79a7",       # reddish purple
    "overhead": "#9a9a9a",   # grey: outside llama.cpp
}
SPLIT_TIPS = {
    "draft": "draft: proposing tokens (the draft model's decodes, the n-gram lookups)",
    "verify": "verify: the target evaluating the seed and the draft in one batch, and sampling",
    "sync": "sync: removing rejected tokens from the caches (or restoring a checkpoint)",
    "overhead": "overhead: time outside llama.cpp calls (Python glue)",
}

DRAFTER_COLUMNS = (
    ("drafter", "llama.cpp's speculative type"),
    ("drafts", "rounds this drafter's draft was verified"),
    ("accepted / drafted", "drafted tokens the target kept, of those this drafter drafted"),
    ("acceptance", "accepted ÷ drafted"),
    ("mean accepted length", "tokens per verified draft: 1 + accepted (llama.cpp's measure)"),
)

PLOT_MIN_SIZE = QtCore.QSize(260, 140)   # the text above keeps its lines on a 768-pixel screen
TIME_SPLIT_ROUNDS = 200          # rounds shown in "Time per round"
SPEED_WINDOW_S = 2.0             # rolling window of "Generation speed"
SPEED_WINDOW_MIN_ROUNDS = 8      # … but never fewer rounds than this
_INITIAL_CAPACITY = 1024

TEXT_COLOR = "#222222"
CF_COLOR = "#6a3d9a"          # the counterfactual curve (purple: neither kept nor rejected)
CF_LABELS = {"ratio": "ratio rule, expected (counterfactual)",
             "match": "match rule, expected (counterfactual)"}
LABEL_POINT_SIZE = 8.0
AXIS_COLOR = "#555555"
LABEL_COLOR = "#333333"

# (key, title) in display order; export() accepts either
PLOTS = (
    ("acceptance", "Acceptance by draft position"),
    ("accepted_length", "Accepted drafted tokens per round"),
    ("speed", "Generation speed"),
    ("time_split", "Time per round"),
    ("tree", "Tree headroom"),
)
TREE_TICKS = [str(r) for r in range(1, 11)] + [">10"]   # the draft's 1st .. 10th choice, lower


def cache_static_parts(plot: pg.PlotItem) -> None:
    """Let Qt keep the axes, title and legend as pixmaps: a live update then repaints the data,
    not every tick label (text was most of a plot's paint: 17-24 ms for the four plots per
    update, 6-9 ms cached). pyqtgraph invalidates an axis when its range changes."""
    cache = QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache
    for name in ("left", "bottom", "top", "right"):
        plot.getAxis(name).setCacheMode(cache)
    plot.titleLabel.setCacheMode(cache)
    if plot.legend is not None:
        plot.legend.setCacheMode(cache)


def styled_plot(title: str, left: str, bottom: str, tip: str = "",
                antialias: bool = False) -> pg.PlotWidget:
    """A plot in SpecScope's style: white, titled, labelled axes, a faint y grid, no menu."""
    w = pg.PlotWidget(background="w")
    w.setAntialiasing(antialias)     # only lines need it; bars are axis-aligned rectangles
    if tip:
        w.setToolTip(tip)
    p = w.getPlotItem()
    p.setTitle(title, color=TEXT_COLOR, size="11pt")
    for name, text in (("left", left), ("bottom", bottom)):
        ax = p.getAxis(name)
        ax.setPen(pg.mkPen(AXIS_COLOR))
        ax.setTextPen(pg.mkPen(TEXT_COLOR))
        ax.enableAutoSIPrefix(False)
        p.setLabel(name, text, color=LABEL_COLOR, **{"font-size": "9pt"})
    p.showGrid(x=False, y=True, alpha=0.15)
    p.setMenuEnabled(False)
    p.hideButtons()
    return w


def _label(anchor=(0.5, 1.0)) -> pg.TextItem:
    t = pg.TextItem("", color=LABEL_COLOR, anchor=anchor)
    f = t.textItem.font()
    f.setPointSizeF(LABEL_POINT_SIZE)
    t.setFont(f)
    return t


def _empty_note(plot: pg.PlotItem) -> pg.TextItem:
    t = pg.TextItem("", color="#888888", anchor=(0.5, 0.5))
    plot.addItem(t, ignoreBounds=True)
    return t


class _Series:
    """Per-round values in preallocated arrays that grow by doubling."""

    def __init__(self, names: Sequence[str], capacity: int = _INITIAL_CAPACITY):
        self.names = tuple(names)
        self.n = 0
        self._a = {k: np.zeros(capacity) for k in self.names}

    def __getitem__(self, name: str) -> np.ndarray:
        return self._a[name][:self.n]

    def reserve(self, n_more: int) -> None:
        need = self.n + n_more
        cap = len(self._a[self.names[0]])
        if need > cap:
            while cap < need:
                cap *= 2
            for k, v in self._a.items():
                grown = np.zeros(cap)
                grown[:self.n] = v[:self.n]
                self._a[k] = grown

    def append(self, columns: dict[str, np.ndarray]) -> None:
        m = len(next(iter(columns.values())))
        self.reserve(m)
        for k, v in columns.items():
            self._a[k][self.n:self.n + m] = v
        self.n += m

    def clear(self) -> None:
        self.n = 0


class PlotsPanel(QtWidgets.QWidget):
    """Acceptance by position, accepted-length histogram, speed over time, time per round."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._plots: dict[str, pg.PlotWidget] = {}
        self._legends: dict[str, pg.LegendItem] = {}
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

        # 1. acceptance by draft position: green = kept, pale red = not kept, counts on top
        w = styled_plot(
            PLOTS[0][1], "Share kept by the target", "Draft position (1 = first drafted token)",
            "For each position in the draft: of the drafts that reached it, the share whose token "
            "the target kept (green) or not (pale red).\nThe numbers are kept / drafted.\n"
            "At temperature, the dashed curve is the other acceptance rule's expected share on the "
            "same drafts (a counterfactual: llama.cpp's match rule against speculative sampling's "
            "ratio rule).")
        p = w.getPlotItem()
        self._pos_rejected = pg.BarGraphItem(x=[], height=[], y0=[], width=0.7,
                                             brush=pg.mkBrush(_rgba(REJECTED_COLOR, 70)),
                                             pen=pg.mkPen(None))
        self._pos_accepted = pg.BarGraphItem(x=[], height=[], width=0.7,
                                             brush=pg.mkBrush(ACCEPTED_COLOR), pen=pg.mkPen(None))
        p.addItem(self._pos_rejected)
        p.addItem(self._pos_accepted)
        p.setLimits(yMin=0.0)
        p.getAxis("left").setTicks([[(v, f"{v:g}") for v in (0, 0.25, 0.5, 0.75, 1.0)]])
        p.getViewBox().setMouseEnabled(x=False, y=False)
        self._pos_labels: list[pg.TextItem] = []
        self._pos_texts: list[str] = []
        self._pos_rotated = False
        self._pos_empty = _empty_note(p)
        self._plots["acceptance"] = w
        self._drafter_curves: dict[str, pg.PlotDataItem] = {}   # when several drafters drafted
        self._pos_legend: pg.LegendItem | None = None
        # at temperature: the other acceptance rule's expected share, dashed
        self._cf_curve = p.plot([], [], pen=pg.mkPen(CF_COLOR, width=2,
                                                     style=QtCore.Qt.PenStyle.DashLine),
                                symbol="d", symbolSize=8, symbolBrush=CF_COLOR,
                                symbolPen=pg.mkPen("w"))
        self._cf_curve.setVisible(False)
        self._cf_label = ""
        grid.addWidget(w, 0, 0)

        # 2. accepted-length histogram: red for rounds that kept nothing, green otherwise
        w = styled_plot(
            PLOTS[1][1], "Rounds", "Drafted tokens accepted in the round",
            "How many rounds accepted 0, 1, 2, … of their drafted tokens (rounds without a "
            "draft are not counted).\nRed: the target rejected the first drafted token.")
        p = w.getPlotItem()
        self._hist = pg.BarGraphItem(x=[], height=[], width=0.7, brush=pg.mkBrush(ACCEPTED_COLOR),
                                     pen=pg.mkPen(None))
        p.addItem(self._hist)
        p.setLimits(yMin=0.0)
        p.getViewBox().setMouseEnabled(x=False, y=False)
        self._hist_labels: list[pg.TextItem] = []
        self._hist_texts: list[tuple[str, str]] = []   # (full, short) per bar
        self._hist_brushes: list[QtGui.QBrush] = []
        self._hist_empty = _empty_note(p)
        self._plots["accepted_length"] = w
        grid.addWidget(w, 0, 1)

        # 3. generation speed: rolling and whole-run tokens/s over generation time
        w = styled_plot(
            PLOTS[2][1], "Tokens per second", "Generation time (s, prompt excluded)",
            f"Tokens generated per second: over the last {SPEED_WINDOW_S:g} s (at least "
            f"{SPEED_WINDOW_MIN_ROUNDS} rounds), and over the whole run so far.", antialias=True)
        p = w.getPlotItem()
        legend = p.addLegend(offset=(-6, 2), labelTextColor=TEXT_COLOR, labelTextSize="8pt",
                             colCount=2)
        _legend_background(legend)
        self._legends["speed"] = legend
        self._speed_roll = p.plot([], [], pen=pg.mkPen(TARGET_COLOR, width=2),
                                  name=f"last {SPEED_WINDOW_S:g} s")
        self._speed_mean = p.plot([], [], pen=pg.mkPen("#444444", width=1.5,
                                                       style=QtCore.Qt.PenStyle.DashLine),
                                  name="whole run")
        for item in (self._speed_roll, self._speed_mean):
            item.setClipToView(True)
            item.setDownsampling(auto=True, method="peak")
        p.setLimits(yMin=0.0, xMin=0.0)
        p.enableAutoRange(axis="x")
        p.getViewBox().setMouseEnabled(x=True, y=False)
        self._plots["speed"] = w
        grid.addWidget(w, 1, 0)

        # 4. time per round, stacked draft / verify / sync / overhead (ms), latest rounds
        w = styled_plot(
            PLOTS[3][1], "Milliseconds", f"Round (latest {TIME_SPLIT_ROUNDS})",
            "Where each round's time went, stacked:\n" + "\n".join(SPLIT_TIPS[k] for k in SPLIT_PARTS))
        p = w.getPlotItem()
        legend = p.addLegend(offset=(-6, 2), labelTextColor=TEXT_COLOR, labelTextSize="8pt",
                             colCount=len(SPLIT_PARTS))
        _legend_background(legend)
        self._legends["time_split"] = legend
        self._split_bars: dict[str, pg.BarGraphItem] = {}
        for part in SPLIT_PARTS:
            bar = pg.BarGraphItem(x=[], height=[], y0=[], width=0.85,
                                  brush=pg.mkBrush(SPLIT_COLORS[part]), pen=pg.mkPen(None))
            p.addItem(bar)
            legend.addItem(bar, part)
            self._split_bars[part] = bar
        p.setLimits(yMin=0.0)
        p.enableAutoRange(axis="x")
        p.getViewBox().setMouseEnabled(x=True, y=False)
        self._plots["time_split"] = w
        grid.addWidget(w, 1, 1)

        self._build_tree(grid)

        for w in self._plots.values():
            w.setMinimumSize(PLOT_MIN_SIZE)
            policy = w.sizePolicy()      # the height the tab has (pyqtgraph asks for 480 pixels:
            policy.setVerticalPolicy(QtWidgets.QSizePolicy.Policy.Ignored)   # the page would scroll)
            w.setSizePolicy(policy)
            cache_static_parts(w.getPlotItem())

        # per drafter: drafts, accepted/drafted, mean accepted length
        self.drafter_table = QtWidgets.QTableWidget(0, len(DRAFTER_COLUMNS))
        self.drafter_table.setHorizontalHeaderLabels([c for c, _ in DRAFTER_COLUMNS])
        for i, (_, tip) in enumerate(DRAFTER_COLUMNS):
            self.drafter_table.horizontalHeaderItem(i).setToolTip(tip)
        self.drafter_table.verticalHeader().setVisible(False)
        header = self.drafter_table.horizontalHeader()      # every title whole; the name stretches
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.drafter_table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.drafter_table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.drafter_table.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.drafter_table.verticalHeader().setDefaultSectionSize(22)
        self.drafter_table.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.drafter_table.setToolTip("Each drafter's share of the run: the rounds its draft won "
                                      "(llama.cpp's first non-empty draft in priority order)")
        self.drafter_table.setVisible(False)
        grid.addWidget(self.drafter_table, 2, 0, 1, 2)
        self._table_rows: tuple = ()

        # the top of the data per plot; the y range adds room for labels or the legend
        self._tops: dict[str, float] = {"acceptance": 1.0}
        for key, w in self._plots.items():
            w.getPlotItem().getViewBox().sigResized.connect(lambda _vb, k=key: self._resized(k))

        # per-round series, filled from the events not seen yet
        self._series = _Series(("t_end", "tokens", "draft", "verify", "sync", "overhead", "index"))
        self._cum_tokens = 0.0
        self._cum_time = 0.0
        self._n_seen = 0
        self._last_event: RoundEvent | None = None
        self._last_stats: Stats | None = None
        self._roll = np.zeros(_INITIAL_CAPACITY)
        self._n_positions = self._n_hist = -1
        self._label_px = QtGui.QFontMetrics(self._pos_empty.textItem.font()).height()
        self._idle_note = "No run yet"
        self._show_empty(None, 0)
        self._show_tree(Stats().tree)
        self._refit("acceptance", force=True)
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
                _render_svg(self.plot_widget(name), path)
            return path
        else:
            raise ValueError(f"cannot export {path.name}: the file name must end in .png or .svg")
        ex.export(str(path))
        return path

    def clear(self, update_period_s: float | None = None) -> None:
        """Forget everything shown. ``update_period_s``: a run has started, and the plots will
        be updated this often (the empty plots say so)."""
        self._idle_note = ("No run yet" if update_period_s is None else
                           f"Run in progress: the plots update every {update_period_s:g} s")
        self._series.clear()
        self._cum_tokens = self._cum_time = 0.0
        self._n_seen = 0
        self._last_event = None
        self._last_stats = None
        self._n_positions = self._n_hist = -1
        self._pos_texts, self._hist_texts = [], []
        self._pos_accepted.setOpts(x=[], height=[])
        self._pos_rejected.setOpts(x=[], height=[], y0=[])
        for t in self._pos_labels + self._hist_labels:
            t.setVisible(False)
        self._hist.setOpts(x=[], height=[])
        self._speed_roll.setData([], [])
        self._speed_mean.setData([], [])
        for bar in self._split_bars.values():
            bar.setOpts(x=[], height=[], y0=[])
        self._tops = {"acceptance": 1.0}
        self._show_counterfactual(Stats())
        self._show_drafters(Stats())
        self._show_tree(Stats().tree)
        self._show_empty(None, 0)

    def update_stats(self, stats: Stats, events: Sequence[RoundEvent]) -> None:
        """Show ``stats`` (the fold of ``events``); only events new since the last call are read."""
        n = len(events)
        if n < self._n_seen or (self._n_seen and events[self._n_seen - 1] is not self._last_event):
            self.clear()  # another run's events: start over
        if stats is not self._last_stats and stats != self._last_stats:
            self._last_stats = stats
            self._show_positions(stats)
            self._show_counterfactual(stats)
            self._show_drafters(stats)
            self._show_histogram(stats)
            self._show_tree(stats.tree)
            if stats.n_draft_rounds == 0 or self._pos_empty.isVisible():
                self._show_empty(events[0] if n else None, stats.n_draft_rounds)
        if n > self._n_seen:
            self._take(events[self._n_seen:n])
            self._n_seen = n
            self._last_event = events[n - 1]
            self._show_speed()
            self._show_split()

    # ------------------------------------------------------------------ the bar plots
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
        for note, key, x in ((self._pos_empty, "acceptance", 2.5), (self._hist_empty, "accepted_length", 2.0)):
            note.setText(text)
            note.setVisible(bool(text))
            if text:
                p = self._plots[key].getPlotItem()
                lo, hi = (0.4, 4.6) if key == "acceptance" else (-0.6, 4.6)
                p.setXRange(lo, hi, padding=0)
                p.getAxis("bottom").setTicks([[]])
                note.setPos(x, 0.5)
                if key == "accepted_length":
                    self._tops[key] = 1.0
                    self._refit(key, force=True)
                    p.getAxis("left").setTicks([[]])
                self._n_positions = self._n_hist = -1  # the axes are set again once data comes
        if not text:
            self._plots["accepted_length"].getPlotItem().getAxis("left").setTicks(None)

    def _show_positions(self, stats: Stats) -> None:
        rates = np.asarray(stats.position_acceptance, dtype=float)
        x = np.arange(1, len(rates) + 1, dtype=float)
        self._pos_accepted.setOpts(x=x, height=rates)
        self._pos_rejected.setOpts(x=x, y0=rates, height=np.where(np.asarray(stats.drafted_at) > 0,
                                                                 1.0 - rates, 0.0))
        self._pos_texts = [f"{a}/{d}" for a, d in zip(stats.accepted_at, stats.drafted_at)]
        _grow_labels(self._pos_labels, len(x), self._plots["acceptance"].getPlotItem())
        if len(x) != self._n_positions:  # axis work only when a position appears
            self._n_positions = len(x)
            p = self._plots["acceptance"].getPlotItem()
            p.setXRange(0.4, max(len(x), 1) + 0.6, padding=0)
            p.getAxis("bottom").setTicks([[(float(k), str(k)) for k in range(1, len(x) + 1)]])
        self._layout_pos_labels()

    def _show_counterfactual(self, stats: Stats) -> None:
        """The dashed curve of the other rule's expected share (temperature runs only)."""
        rates = np.asarray(stats.counterfactual_acceptance, dtype=float)
        label = CF_LABELS.get(stats.cf_rule, "") if len(rates) else ""
        self._cf_curve.setData(np.arange(1, len(rates) + 1, dtype=float), rates)
        self._cf_curve.setVisible(bool(label))
        if label == self._cf_label:
            return
        p = self._plots["acceptance"].getPlotItem()
        if self._pos_legend is None:
            self._pos_legend = p.addLegend(offset=(-6, 2), labelTextColor=TEXT_COLOR,
                                           labelTextSize="8pt")
            _legend_background(self._pos_legend)
        if self._cf_label:
            self._pos_legend.removeItem(self._cf_curve)
        if label:
            self._pos_legend.addItem(self._cf_curve, label)
        self._cf_label = label
        self._pos_legend.setVisible(bool(label) or len(self._drafter_curves) > 0)
        self._refit("acceptance", force=True)

    def _show_drafters(self, stats: Stats) -> None:
        """One acceptance curve per drafter when several drafted; the per-drafter table."""
        several = len(stats.by_drafter) > 1
        p = self._plots["acceptance"].getPlotItem()
        if several and self._pos_legend is None:
            self._pos_legend = p.addLegend(offset=(-6, 2), labelTextColor=TEXT_COLOR,
                                           labelTextSize="8pt")
            _legend_background(self._pos_legend)
        shown = set()
        for d in stats.by_drafter if several else ():
            curve = self._drafter_curves.get(d.name)
            if curve is None:
                strong = drafter_colors(d.name)[2]
                curve = p.plot([], [], pen=pg.mkPen(strong, width=2), symbol="o", symbolSize=7,
                               symbolBrush=strong, symbolPen=pg.mkPen("w"), name=d.name)
                self._drafter_curves[d.name] = curve
            rates = np.asarray(d.position_acceptance, dtype=float)
            curve.setData(np.arange(1, len(rates) + 1, dtype=float), rates)
            curve.setVisible(True)
            shown.add(d.name)
        for name, curve in list(self._drafter_curves.items()):
            if name not in shown:            # another run: forget it, legend entry included
                p.removeItem(curve)
                if self._pos_legend is not None:
                    self._pos_legend.removeItem(curve)
                del self._drafter_curves[name]
        if self._pos_legend is not None:
            self._pos_legend.setVisible(several or self._cf_curve.isVisible())
        rows = tuple((d.name, d.n_draft_rounds, d.n_accept, d.n_drafted, d.mean_accepted_length)
                     for d in stats.by_drafter)
        if rows == self._table_rows:
            return
        self._table_rows = rows
        t = self.drafter_table
        t.setRowCount(len(rows))
        for r, (name, rounds, acc, drafted, mean_len) in enumerate(rows):
            cells = (name, str(rounds), f"{acc} / {drafted}",
                     f"{acc / drafted:.0%}" if drafted else "–", f"{mean_len:.2f}")
            for c, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if c == 0:
                    fg, bg, _ = drafter_colors(name)
                    item.setForeground(QtGui.QColor(fg))
                    item.setBackground(QtGui.QColor(bg))
                else:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
                t.setItem(r, c, item)
        t.setFixedHeight(t.horizontalHeader().height() + 22 * len(rows) + 4)
        t.setVisible(bool(rows))         # (after its height: showing it lays the plots out at once)

    def _layout_pos_labels(self) -> None:
        """Counts above the bars when they fit, else turned upright inside the bars' tops."""
        texts = self._pos_texts
        per_bar = self._px_per_unit("acceptance")
        fm = QtGui.QFontMetrics(self._pos_empty.textItem.font())
        widest = max((fm.horizontalAdvance(t) for t in texts), default=0)
        rotated = per_bar is not None and widest + 6 > per_bar
        turned = rotated != self._pos_rotated
        if turned:
            self._pos_rotated = rotated
            self._refit("acceptance", force=True)
        for i, label in enumerate(self._pos_labels):
            if i < len(texts):
                if turned or label.angle != (90 if rotated else 0):
                    if rotated:
                        label.setAngle(90)
                        label.setAnchor((1.0, 0.5))   # the text ends just below the top of the bar
                    else:
                        label.setAngle(0)
                        label.setAnchor((0.5, 1.0))   # centred above the bar
                    label.setPos(i + 1.0, 0.98 if rotated else 1.0)
                _set_text(label, texts[i])
                label.setVisible(True)
            else:
                label.setVisible(False)

    def _show_histogram(self, stats: Stats) -> None:
        counts = np.asarray(stats.accepted_hist, dtype=float)
        x = np.arange(len(counts), dtype=float)
        if len(self._hist_brushes) != len(counts):
            self._hist_brushes = [pg.mkBrush(REJECTED_COLOR if k == 0 else ACCEPTED_COLOR)
                                  for k in range(len(counts))]
            self._hist.setOpts(x=x, height=counts, brushes=self._hist_brushes)
        else:
            self._hist.setOpts(x=x, height=counts)
        p = self._plots["accepted_length"].getPlotItem()
        total = counts.sum()
        self._hist_texts = [(f"{int(c)} ({c / total:.0%})" if total else f"{int(c)}", f"{int(c)}")
                            for c in counts]
        _grow_labels(self._hist_labels, len(x), p)
        if len(x) != self._n_hist:
            self._n_hist = len(x)
            p.setXRange(-0.6, max(len(x) - 1, 0) + 0.6, padding=0)
            p.getAxis("bottom").setTicks([[(float(k), str(k)) for k in range(len(x))]])
        if len(counts):
            self._tops["accepted_length"] = max(float(counts.max()), 1.0)
            self._refit("accepted_length")
        self._layout_hist_labels()

    def _layout_hist_labels(self) -> None:
        """'count (share)' above each bar if it fits, else the count, else nothing."""
        per_bar = self._px_per_unit("accepted_length")
        fm = QtGui.QFontMetrics(self._hist_empty.textItem.font())
        tier = 0
        if per_bar is not None:
            for tier in (0, 1, 2):
                if tier == 2 or max((fm.horizontalAdvance(t[tier]) for t in self._hist_texts),
                                    default=0) + 6 <= per_bar:
                    break
        heights = self._hist.opts["height"]
        for i, label in enumerate(self._hist_labels):
            if i < len(self._hist_texts) and tier < 2:
                _set_text(label, self._hist_texts[i][tier])
                if label.pos().y() != heights[i] or label.pos().x() != i:
                    label.setPos(float(i), float(heights[i]))
                label.setVisible(True)
            else:
                label.setVisible(False)

    # ------------------------------------------------------------------ tree headroom
    def _build_tree(self, grid: QtWidgets.QGridLayout) -> None:
        """5. where the target's token ranked among the draft's top-10 (core/measure/stats.py: tree
        headroom), with the acceptance a width-1, 2 and 4 draft tree would reach under it."""
        w = styled_plot(
            PLOTS[4][1], "Positions", "Target's token was the draft's k-th choice",
            "At each drafted position up to the first rejection (the positions drafted from the "
            "target's own path): the rank of the target's token among the draft model's top-10.\n"
            "1 (green): the draft's own choice, i.e. accepted. 2 and up (red): a rejection where "
            "a draft tree holding the draft's top-k would have had the target's token.\n"
            "Only draft-simple's rounds are counted.")
        p = w.getPlotItem()
        self._tree_bars = pg.BarGraphItem(
            x=np.arange(1, 12, dtype=float), height=np.zeros(11), width=0.7, pen=pg.mkPen(None),
            brushes=[pg.mkBrush(ACCEPTED_COLOR)] + [pg.mkBrush(REJECTED_COLOR)] * 10)
        p.addItem(self._tree_bars)
        p.setLimits(yMin=0.0)
        p.setXRange(0.4, 11.6, padding=0)
        p.getAxis("bottom").setTicks([[(float(i + 1), t) for i, t in enumerate(TREE_TICKS)]])
        p.getViewBox().setMouseEnabled(x=False, y=False)
        self._tree_labels = _grow_labels([], 11, p)
        self._tree_texts: list[str] = []
        self._tree_empty = _empty_note(p)
        self._tree_empty.setPos(6.0, 0.5)
        self._plots["tree"] = w
        self.tree_numbers = QtWidgets.QLabel()
        self.tree_numbers.setWordWrap(True)
        self.tree_numbers.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.tree_numbers.setToolTip(
            "Acceptance (accepted ÷ drafted, as llama.cpp's accept%) a draft tree of width w would "
            "reach, expanding the draft's top-w at every level to the same depth (its extra "
            "verification cost is not counted).\nmeasured: only the positions drafted from the "
            "target's own path; estimated: the levels below a rejection the tree would have "
            "caught were never drafted, so they are taken to go as this run's rounds go from "
            "their start (as the next round does).\nw = 1 is the measured acceptance.")
        box = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(w, 1)
        lay.addWidget(self.tree_numbers)
        grid.addWidget(box, 0, 2, 2, 1)

    def _show_tree(self, tree) -> None:
        from specscope.core.measure.stats import TREE_WIDTHS
        counts = np.asarray(tree.rank_hist, dtype=float)
        self._tree_bars.setOpts(height=counts)
        measured = counts.sum()
        self._tree_empty.setText("" if measured else "No draft-model draft verified yet")
        self._tree_empty.setVisible(not measured)
        self._tree_texts = [f"{int(c)}" if c else "" for c in counts]
        self._tops["tree"] = max(float(counts.max()), 1.0)
        self._refit("tree")
        self._layout_tree_labels()
        if not measured:
            self.tree_numbers.setText("")
            return
        lines = [f"<b>w={w}</b>: " + (f"{tree.acceptance(w):.0%} (the measured acceptance)" if w == 1
                                      else f"{tree.floor(w):.0%} measured, {tree.acceptance(w):.0%} estimated")
                 for w in TREE_WIDTHS]
        self.tree_numbers.setText("Acceptance of a width-w draft tree<br>" + "<br>".join(lines))

    def _layout_tree_labels(self) -> None:
        per_bar = self._px_per_unit("tree")
        fm = QtGui.QFontMetrics(self._tree_empty.textItem.font())
        fits = per_bar is not None and max((fm.horizontalAdvance(t) for t in self._tree_texts),
                                           default=0) + 2 <= per_bar
        heights = self._tree_bars.opts["height"]
        for i, label in enumerate(self._tree_labels):
            show = fits and i < len(self._tree_texts) and bool(self._tree_texts[i])
            if show:
                _set_text(label, self._tree_texts[i])
                label.setPos(float(i + 1), float(heights[i]))
            label.setVisible(show)

    # ------------------------------------------------------------------ y ranges with headroom
    def _px_per_unit(self, key: str) -> float | None:
        """Pixels per x unit of a plot, or None before it has been laid out."""
        vb = self._plots[key].getPlotItem().getViewBox()
        (x0, x1), _ = vb.viewRange()
        width = vb.width()
        return width / (x1 - x0) if width > 1 and x1 > x0 else None

    def _reserve_px(self, key: str) -> float:
        """Pixels to keep free above the data: for the labels or the legend."""
        if key == "acceptance":
            legend = self._pos_legend.boundingRect().height() + 4.0 \
                if self._pos_legend is not None and self._pos_legend.isVisible() else 0.0
            return (10.0 if self._pos_rotated else self._label_px + 4.0) + legend
        if key in ("accepted_length", "tree"):
            return self._label_px + 4.0
        legend = self._legends[key]
        return legend.boundingRect().height() + 8.0

    def _refit(self, key: str, force: bool = False) -> None:
        """y from 0 to the data's top plus the reserved pixels, with some slack so that a growing
        top does not move the axis every tick."""
        top = self._tops.get(key)
        if top is None:
            return
        p = self._plots[key].getPlotItem()
        vb = p.getViewBox()
        height = vb.height()
        frac = min(self._reserve_px(key) / height, 0.5) if height > 1 else 0.2
        need = top / (1.0 - frac)
        current = vb.viewRange()[1][1]
        if key == "acceptance":
            if force or abs(current - need) > 1e-3:
                p.setYRange(0.0, need, padding=0)
        elif force or current < need or current > 1.5 * need:
            p.setYRange(0.0, need * 1.08, padding=0)

    def _resized(self, key: str) -> None:
        if key == "time_split":  # four legend entries in a row when there is room, else two
            legend = self._legends[key]
            cols = len(SPLIT_PARTS) if self._plots[key].getPlotItem().getViewBox().width() >= 340 else 2
            if legend.columnCount != cols:
                legend.setColumnCount(cols)
        self._refit(key, force=True)
        if key == "acceptance":
            self._layout_pos_labels()
        elif key == "accepted_length":
            self._layout_hist_labels()
        elif key == "tree":
            self._layout_tree_labels()

    # ------------------------------------------------------------------ the time series
    def _take(self, new: Sequence[RoundEvent]) -> None:
        m = len(new)
        tokens = np.fromiter((len(e.emitted) for e in new), float, m)
        t_round = np.fromiter((e.t_round for e in new), float, m)
        cols = {
            "tokens": self._cum_tokens + np.cumsum(tokens),
            "t_end": self._cum_time + np.cumsum(t_round),
            "draft": np.fromiter((e.t_draft for e in new), float, m) * 1e3,
            "verify": np.fromiter((e.t_verify for e in new), float, m) * 1e3,
            "sync": np.fromiter((e.t_sync for e in new), float, m) * 1e3,
            "overhead": np.fromiter((e.t_overhead for e in new), float, m) * 1e3,
            "index": np.fromiter((e.index for e in new), float, m),
        }
        self._cum_tokens = float(cols["tokens"][-1])
        self._cum_time = float(cols["t_end"][-1])
        start = self._series.n
        self._series.append(cols)
        # rolling speed for the new rounds: tokens over the last SPEED_WINDOW_S seconds,
        # and at least SPEED_WINDOW_MIN_ROUNDS rounds (cumulative sums with a leading 0)
        if len(self._roll) < self._series.n:
            grown = np.zeros(len(self._series["t_end"]) * 2)
            grown[:start] = self._roll[:start]
            self._roll = grown
        t_end, cum = self._series["t_end"], self._series["tokens"]
        i = np.arange(start, self._series.n)
        j = np.searchsorted(t_end, t_end[i] - SPEED_WINDOW_S, side="right") - 1  # last round before the window
        j = np.minimum(j, i - SPEED_WINDOW_MIN_ROUNDS)
        j = np.maximum(j, -1)
        t0 = np.where(j >= 0, t_end[np.maximum(j, 0)], 0.0)
        c0 = np.where(j >= 0, cum[np.maximum(j, 0)], 0.0)
        dt = t_end[i] - t0
        self._roll[i] = np.divide(cum[i] - c0, dt, out=np.zeros(len(i)), where=dt > 0)

    def _show_speed(self) -> None:
        n = self._series.n
        t_end = self._series["t_end"]
        self._speed_roll.setData(t_end, self._roll[:n])
        mean = self._cum_tokens / self._cum_time if self._cum_time > 0 else 0.0
        self._speed_mean.setData([0.0, float(t_end[-1])], [mean, mean])
        self._tops["speed"] = max(float(self._roll[:n].max()), mean, 1e-9)
        self._refit("speed")

    def _show_split(self) -> None:
        s = self._series
        lo = max(0, s.n - TIME_SPLIT_ROUNDS)
        x = s["index"][lo:]
        y0 = np.zeros(len(x))
        for part in SPLIT_PARTS:
            h = s[part][lo:]
            self._split_bars[part].setOpts(x=x, y0=y0, height=h)
            y0 = y0 + h
        self._tops["time_split"] = max(float(y0.max()) if len(y0) else 1.0, 1e-6)
        self._refit("time_split")

    # ------------------------------------------------------------------ for tests
    def shown(self) -> dict[str, dict[str, np.ndarray]]:
        """What each plot currently holds (numbers, for tests and debugging)."""
        def bars(item: pg.BarGraphItem) -> dict[str, np.ndarray]:
            o = item.opts
            return {"x": np.asarray(o["x"], dtype=float), "height": np.asarray(o["height"], dtype=float),
                    "y0": np.asarray(o["y0"] if o["y0"] is not None else np.zeros(len(o["x"])), dtype=float)}
        rx, ry = self._speed_roll.xData, self._speed_roll.yData
        return {
            "acceptance": {**bars(self._pos_accepted),
                           "labels": [t.toPlainText() for t in self._pos_labels if t.isVisible()]},
            "counterfactual": {"label": self._cf_label if self._cf_curve.isVisible() else "",
                               "y": np.asarray(self._cf_curve.yData
                                               if self._cf_curve.yData is not None else [])},
            "accepted_length": {**bars(self._hist),
                                "labels": [t.toPlainText() for t in self._hist_labels if t.isVisible()]},
            "speed": {"x": np.asarray(rx if rx is not None else []),
                      "y": np.asarray(ry if ry is not None else []),
                      "mean": float(self._speed_mean.getData()[1][0]) if self._series.n else 0.0},
            "time_split": {part: bars(self._split_bars[part]) for part in SPLIT_PARTS},
            "tree": {**bars(self._tree_bars), "numbers": self.tree_numbers.text(),
                     "labels": [t.toPlainText() for t in self._tree_labels if t.isVisible()]},
            "by_drafter": {
                "curves": {name: np.asarray(c.yData if c.yData is not None else [])
                           for name, c in self._drafter_curves.items() if c.isVisible()},
                "table": [[t.item(r, c).text() for c in range(t.columnCount())]
                          for t in (self.drafter_table,) for r in range(t.rowCount())],
            },
        }


def _render_svg(widget: pg.PlotWidget, path: Path) -> None:
    """The plot item's part of the scene, painted by Qt's own SVG generator."""
    source = widget.getPlotItem().sceneBoundingRect()
    gen = QtSvg.QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(source.size().toSize())
    target = QtCore.QRectF(0.0, 0.0, source.width(), source.height())
    gen.setViewBox(target)
    gen.setTitle(widget.getPlotItem().titleLabel.text)
    # the bar items replay QPictures, which Qt rescales for a device of another resolution
    gen.setResolution(QtGui.QPicture().logicalDpiX())
    painter = QtGui.QPainter(gen)
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        painter.fillRect(target, QtGui.QColor("white"))
        widget.scene().render(painter, target, source)
    finally:
        painter.end()


def _set_text(label: pg.TextItem, text: str) -> None:
    if getattr(label, "_shown_text", None) != text:   # setText re-lays the text out: only on change
        label.setText(text)
        label._shown_text = text


def _grow_labels(labels: list[pg.TextItem], n: int, plot: pg.PlotItem) -> list[pg.TextItem]:
    """Make sure there are n text items (made once, reused)."""
    while len(labels) < n:
        t = _label()
        plot.addItem(t, ignoreBounds=True)
        labels.append(t)
    return labels


def _legend_background(legend: pg.LegendItem) -> None:
    legend.setBrush(pg.mkBrush(255, 255, 255, 215))
    legend.setPen(pg.mkPen("#cccccc"))


def _rgba(hex_color: str, alpha: int) -> QtGui.QColor:
    c = QtGui.QColor(hex_color)
    c.setAlpha(alpha)
    return c
