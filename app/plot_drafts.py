"""The live plots of a run's drafts: acceptance by draft position (with the other acceptance
rule's expected share at temperature and a curve per drafter when several drafted), the accepted
drafted tokens per round, tree headroom, and the per-drafter table."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from specscope.core.engine.drafters.registry import listing
from specscope.core.measure.stats import TREE_WIDTHS, Stats

from .drafter_style import drafter_colors
from .palette import colour_word, plot_colour
from .plot_base import (LivePlot, empty_note, grow_labels, rgba, wrap_note,
                        set_text, small_legend, styled_plot, with_caption)

__all__ = ["AcceptancePlot", "HistogramPlot", "TreePlot", "DrafterTable"]

CF_COLOR = "#6a3d9a"          # the counterfactual curve (purple: neither kept nor rejected)
CF_LABELS = {"ratio": "ratio rule, expected (counterfactual)",
             "match": "match rule, expected (counterfactual)"}
TREE_TICKS = [str(r) for r in range(1, 11)] + [">10"]   # the draft's 1st .. 10th choice, lower
def tips() -> dict[str, str]:
    """The plots' tooltips, their colours named as the palette in use draws them."""
    kept, pale, red = colour_word("accepted"), colour_word("rejected_pale"), colour_word("rejected")
    return {
        "acceptance": "For each position in the draft: of the drafts that reached it, the share whose "
                      f"token the target kept ({kept}) or not ({pale}).\nThe numbers are kept / drafted.\n"
                      "At temperature, the dashed curve is the other acceptance rule's expected share on "
                      "the same drafts (a counterfactual: llama.cpp's match rule against speculative "
                      "sampling's ratio rule).",
        "accepted_length": "How many rounds accepted 0, 1, 2, … of their drafted tokens (rounds without "
                           f"a draft are not counted).\n{red.capitalize()}: the target rejected the first "
                           "drafted token.",
        "tree": "At each drafted position up to the first rejection (the positions drafted from the "
                "target's own path): the rank of the target's token among the draft's top-10.\n"
                f"1 ({kept}): the draft's own choice, i.e. accepted. 2 and up ({red}): a rejection where a "
                "draft tree holding the draft's top-k would have had the target's token.\n"
                f"Only the model drafters' rounds ({listing(lambda t: not t.ngram, last=', ')}) are "
                "counted.",
    }
DRAFTER_COLUMNS = (
    ("drafter", "llama.cpp's speculative type"),
    ("drafts", "rounds this drafter's draft was verified"),
    ("accepted / drafted", "drafted tokens the target kept, of those this drafter drafted"),
    ("acceptance", "accepted ÷ drafted"),
    ("mean accepted length", "tokens per verified draft: 1 + accepted (llama.cpp's measure)"),
)



MAX_TICKS = 12      # an axis of counts labels at most about this many (ngram-mod drafts 64 tokens)


def count_ticks(first: int, last: int) -> list[tuple[float, str]]:
    """Ticks for the integers first..last: each one while there are few, else the first and
    every multiple of a step of 2, 4, 8, … that keeps them readable."""
    step = 1
    while (last - first + 1) / step > MAX_TICKS:
        step *= 2
    ks = [first] + [k for k in range(first + 1, last + 1) if k % step == 0] if step > 1 else \
        list(range(first, last + 1))
    return [(float(k), str(k)) for k in ks]

class _DraftBars(LivePlot):
    """A bar plot of drafts with a count label per bar and a note while there is no draft."""

    def __init__(self, widget: pg.PlotWidget):
        super().__init__(widget)
        self.labels: list[pg.TextItem] = []
        self.n_bars = -1                  # the bars the x axis is set for (-1: none yet)

    def _add_note(self) -> None:
        """The note, over what the plot holds so far."""
        self.note = empty_note(self.plot)
        self.label_px = QtGui.QFontMetrics(self.note.textItem.font()).height()

    def reserve_px(self) -> float:
        return self.label_px + 4.0

    def resized(self) -> None:
        super().resized()
        wrap_note(self.note, self.view)

    NOTE_AT = (2.5, (0.4, 4.6))           # the note's x, and the x range while it shows

    def show_note(self, text: str) -> None:
        """While there is no draft: ``text`` in the middle, no ticks ("" hides it)."""
        self.note.setText(text)
        self.note.setVisible(bool(text))
        if text:
            wrap_note(self.note, self.view)
            x, (lo, hi) = self.NOTE_AT
            self.plot.setXRange(lo, hi, padding=0)
            self.plot.getAxis("bottom").setTicks([[]])
            self.note.setPos(x, 0.5)
            self.n_bars = -1                  # the axis is set again once data comes


class AcceptancePlot(_DraftBars):
    """1. For each draft position: of the drafts that reached it, the share whose token the
    target kept (green) or not (pale red), the counts kept / drafted on top."""

    exact = True                          # a share: the range ends at 1 plus the labels' room

    def __init__(self, title: str):
        super().__init__(styled_plot(title, "Share kept",
                                     "Draft position", tips()["acceptance"]))
        p = self.plot
        self.rejected = pg.BarGraphItem(x=[], height=[], y0=[], width=0.7,
                                        brush=pg.mkBrush(rgba(plot_colour("rejected"), 70)), pen=pg.mkPen(None))
        self.accepted = pg.BarGraphItem(x=[], height=[], width=0.7, brush=pg.mkBrush(plot_colour("accepted")),
                                        pen=pg.mkPen(None))
        p.addItem(self.rejected)
        p.addItem(self.accepted)
        p.setLimits(yMin=0.0)
        self.share_ticks: tuple[float, ...] = ()
        self._tick_shares()
        p.getViewBox().setMouseEnabled(x=False, y=False)
        self._add_note()
        self.texts: list[str] = []
        self.rotated = False
        self.drafter_curves: dict[str, pg.PlotDataItem] = {}   # when several drafters drafted
        self.legend: pg.LegendItem | None = None
        # at temperature: the other acceptance rule's expected share, dashed
        self.cf_curve = p.plot([], [], pen=pg.mkPen(CF_COLOR, width=2, style=QtCore.Qt.PenStyle.DashLine),
                               symbol="d", symbolSize=8, symbolBrush=CF_COLOR, symbolPen=pg.mkPen("w"))
        self.cf_curve.setVisible(False)
        self.cf_label = ""
        self.top = 1.0

    def clear(self) -> None:
        self.texts = []
        self.accepted.setOpts(x=[], height=[])
        self.rejected.setOpts(x=[], height=[], y0=[])
        for t in self.labels:
            t.setVisible(False)
        self.n_bars = -1
        self.top = 1.0

    def _tick_shares(self) -> None:
        """Quarters on the y axis where they fit, else halves (a short plot, presenter mode's
        large type: 0.75 and 0.5 were drawn over each other)."""
        axis = self.plot.getAxis("left")
        line = QtGui.QFontMetrics(axis.style.get("tickFont") or axis.font()).height()
        ticks = (0, 0.25, 0.5, 0.75, 1.0) if self.view.height() <= 1 or \
            self.view.height() >= 5.5 * line else (0, 0.5, 1.0)
        if ticks != self.share_ticks:
            self.share_ticks = ticks
            axis.setTicks([[(v, f"{v:g}") for v in ticks]])

    def resized(self) -> None:
        self._tick_shares()
        super().resized()

    def reserve_px(self) -> float:
        legend = self.legend.boundingRect().height() + 4.0 \
            if self.legend is not None and self.legend.isVisible() else 0.0
        return (10.0 if self.rotated else self.label_px + 4.0) + legend

    def show(self, stats: Stats) -> None:
        rates = np.asarray(stats.position_acceptance, dtype=float)
        x = np.arange(1, len(rates) + 1, dtype=float)
        self.accepted.setOpts(x=x, height=rates)
        self.rejected.setOpts(x=x, y0=rates, height=np.where(np.asarray(stats.drafted_at) > 0, 1.0 - rates, 0.0))
        self.texts = [f"{a}/{d}" for a, d in zip(stats.accepted_at, stats.drafted_at)]
        grow_labels(self.labels, len(x), self.plot)
        if len(x) != self.n_bars:         # axis work only when a position appears
            self.n_bars = len(x)
            self.plot.setXRange(0.4, max(len(x), 1) + 0.6, padding=0)
            self.plot.getAxis("bottom").setTicks([count_ticks(1, len(x))])
        self.layout_labels()

    def _ensure_legend(self) -> pg.LegendItem:
        if self.legend is None:
            self.legend = small_legend(self.plot)
        return self.legend

    def show_counterfactual(self, stats: Stats) -> None:
        """The dashed curve of the other rule's expected share (temperature runs only)."""
        rates = np.asarray(stats.counterfactual_acceptance, dtype=float)
        label = CF_LABELS.get(stats.cf_rule, "") if len(rates) else ""
        self.cf_curve.setData(np.arange(1, len(rates) + 1, dtype=float), rates)
        self.cf_curve.setVisible(bool(label))
        if label == self.cf_label:
            return
        legend = self._ensure_legend()
        if self.cf_label:
            legend.removeItem(self.cf_curve)
        if label:
            legend.addItem(self.cf_curve, label)
        self.cf_label = label
        legend.setVisible(bool(label) or len(self.drafter_curves) > 0)
        self.refit(force=True)

    def show_drafters(self, stats: Stats) -> None:
        """One acceptance curve per drafter when several drafted."""
        several = len(stats.by_drafter) > 1
        if several:
            self._ensure_legend()
        shown = set()
        for d in stats.by_drafter if several else ():
            curve = self.drafter_curves.get(d.name)
            if curve is None:
                strong = drafter_colors(d.name)[2]
                curve = self.plot.plot([], [], pen=pg.mkPen(strong, width=2), symbol="o", symbolSize=7,
                                       symbolBrush=strong, symbolPen=pg.mkPen("w"), name=d.name)
                self.drafter_curves[d.name] = curve
            rates = np.asarray(d.position_acceptance, dtype=float)
            curve.setData(np.arange(1, len(rates) + 1, dtype=float), rates)
            curve.setVisible(True)
            shown.add(d.name)
        for name, curve in list(self.drafter_curves.items()):
            if name not in shown:            # another run: forget it, legend entry included
                self.plot.removeItem(curve)
                if self.legend is not None:
                    self.legend.removeItem(curve)
                del self.drafter_curves[name]
        if self.legend is not None:
            self.legend.setVisible(several or self.cf_curve.isVisible())

    def layout_labels(self) -> None:
        """Counts above the bars when they fit, else turned upright inside the bars' tops."""
        texts = self.texts
        per_bar = self.px_per_unit()
        fm = QtGui.QFontMetrics(self.note.textItem.font())
        widest = max((fm.horizontalAdvance(t) for t in texts), default=0)
        rotated = per_bar is not None and widest + 6 > per_bar
        turned = rotated != self.rotated
        if turned:
            self.rotated = rotated
            self.refit(force=True)
        for i, label in enumerate(self.labels):
            if i < len(texts):
                if turned or label.angle != (90 if rotated else 0):
                    if rotated:
                        label.setAngle(90)
                        label.setAnchor((1.0, 0.5))   # the text ends just below the top of the bar
                    else:
                        label.setAngle(0)
                        label.setAnchor((0.5, 1.0))   # centred above the bar
                # placed every time: a new label starts upright, at (0, 0), out of view
                label.setPos(i + 1.0, 0.98 if rotated else 1.0)
                set_text(label, texts[i])
                label.setVisible(True)
            else:
                label.setVisible(False)


class HistogramPlot(_DraftBars):
    """2. How many rounds accepted 0, 1, 2, … of their drafted tokens; red: none."""

    def __init__(self, title: str):
        super().__init__(styled_plot(title, "Rounds", "Drafted tokens accepted",
                                     tips()["accepted_length"]))
        p = self.plot
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush=pg.mkBrush(plot_colour("accepted")),
                                    pen=pg.mkPen(None))
        p.addItem(self.bars)
        p.setLimits(yMin=0.0)
        p.getViewBox().setMouseEnabled(x=False, y=False)
        self._add_note()
        self.texts: list[tuple[str, str]] = []   # (full, short) per bar
        self.brushes: list[QtGui.QBrush] = []

    def clear(self) -> None:
        self.texts = []
        for t in self.labels:
            t.setVisible(False)
        self.bars.setOpts(x=[], height=[])
        self.n_bars = -1
        self.top = None

    def show(self, stats: Stats) -> None:
        counts = np.asarray(stats.accepted_hist, dtype=float)
        x = np.arange(len(counts), dtype=float)
        if len(self.brushes) != len(counts):
            self.brushes = [pg.mkBrush(plot_colour("rejected") if k == 0 else plot_colour("accepted")) for k in range(len(counts))]
            self.bars.setOpts(x=x, height=counts, brushes=self.brushes)
        else:
            self.bars.setOpts(x=x, height=counts)
        total = counts.sum()
        self.texts = [(f"{int(c)} ({c / total:.0%})" if total else f"{int(c)}", f"{int(c)}") for c in counts]
        grow_labels(self.labels, len(x), self.plot)
        if len(x) != self.n_bars:
            self.n_bars = len(x)
            self.plot.setXRange(-0.6, max(len(x) - 1, 0) + 0.6, padding=0)
            self.plot.getAxis("bottom").setTicks([count_ticks(0, len(x) - 1)])
        if len(counts):
            self.top = max(float(counts.max()), 1.0)
            self.refit()
        self.layout_labels()

    def layout_labels(self) -> None:
        """'count (share)' above each bar if it fits, else the count, else nothing."""
        per_bar = self.px_per_unit()
        fm = QtGui.QFontMetrics(self.note.textItem.font())
        tier = 0
        if per_bar is not None:
            for tier in (0, 1, 2):
                if tier == 2 or max((fm.horizontalAdvance(t[tier]) for t in self.texts), default=0) + 6 <= per_bar:
                    break
        heights = self.bars.opts["height"]
        for i, label in enumerate(self.labels):
            if i < len(self.texts) and tier < 2:
                set_text(label, self.texts[i][tier])
                if label.pos().y() != heights[i] or label.pos().x() != i:
                    label.setPos(float(i), float(heights[i]))
                label.setVisible(True)
            else:
                label.setVisible(False)

    NOTE_AT = (2.0, (-0.6, 4.6))

    def show_note(self, text: str) -> None:
        """The note, and no count axis while it shows."""
        super().show_note(text)
        if text:
            self.top = 1.0
            self.refit(force=True)
        self.plot.getAxis("left").setTicks([[]] if text else None)


class TreePlot(_DraftBars):
    """5. Where the target's token ranked among the draft's top-10 (core/measure/stats.py: tree
    headroom), with the acceptance a width-1, 2 and 4 draft tree would reach under it
    (``numbers``; ``box`` holds both)."""

    def __init__(self, title: str):
        super().__init__(styled_plot(title, "Positions", "Target token's rank in draft",
                                     tips()["tree"]))
        p = self.plot
        self.bars = pg.BarGraphItem(
            x=np.arange(1, 12, dtype=float), height=np.zeros(11), width=0.7, pen=pg.mkPen(None),
            brushes=[pg.mkBrush(plot_colour("accepted"))] + [pg.mkBrush(plot_colour("rejected"))] * 10)
        p.addItem(self.bars)
        p.setLimits(yMin=0.0)
        p.setXRange(0.4, 11.6, padding=0)
        p.getAxis("bottom").setTicks([[(float(i + 1), t) for i, t in enumerate(TREE_TICKS)]])
        p.getViewBox().setMouseEnabled(x=False, y=False)
        grow_labels(self.labels, 11, p)
        self.texts: list[str] = []
        self._add_note()
        self.note.setPos(6.0, 0.5)
        self.numbers = QtWidgets.QLabel()
        self.numbers.setWordWrap(True)
        self.numbers.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.numbers.setToolTip(
            "Acceptance (accepted ÷ drafted, as llama.cpp's accept%) a draft tree of width w would "
            "reach, expanding the draft's top-w at every level to the same depth (its extra "
            "verification cost is not counted).\nmeasured: only the positions drafted from the "
            "target's own path; estimated: the levels below a rejection the tree would have "
            "caught were never drafted, so they are taken to go as this run's rounds go from "
            "their start (as the next round does).\nw = 1 is the measured acceptance.")
        self.box = with_caption(self.widget, self.numbers)
        self.numbers.setText("line<br>" * len(TREE_WIDTHS) + "line")  # its lines' room, kept while it is
        self.numbers.setMinimumHeight(self.numbers.sizeHint().height())  # empty: no relayout of the
        self.numbers.setText("")                                         # plots when a run starts

    def show(self, tree) -> None:
        counts = np.asarray(tree.rank_hist, dtype=float)
        self.bars.setOpts(height=counts)
        measured = counts.sum()
        self.note.setText("" if measured else "No round drafted by a draft model, head or MTP yet")
        self.note.setVisible(not measured)
        self.texts = [f"{int(c)}" if c else "" for c in counts]
        self.top = max(float(counts.max()), 1.0)
        self.refit()
        self.layout_labels()
        if not measured:
            self.numbers.setText("")
            return
        lines = [f"<b>w={w}</b>: " + (f"{tree.acceptance(w):.0%} (the measured acceptance)" if w == 1
                                      else f"{tree.floor(w):.0%} measured, {tree.acceptance(w):.0%} estimated")
                 for w in TREE_WIDTHS]
        self.numbers.setText("Acceptance of a width-w draft tree<br>" + "<br>".join(lines))

    def layout_labels(self) -> None:
        per_bar = self.px_per_unit()
        fm = QtGui.QFontMetrics(self.note.textItem.font())
        fits = per_bar is not None and max((fm.horizontalAdvance(t) for t in self.texts), default=0) + 2 <= per_bar
        heights = self.bars.opts["height"]
        for i, label in enumerate(self.labels):
            show = fits and i < len(self.texts) and bool(self.texts[i])
            if show:
                set_text(label, self.texts[i])
                label.setPos(float(i + 1), float(heights[i]))
            label.setVisible(show)


class DrafterTable(QtWidgets.QTableWidget):
    """Per drafter: the rounds its draft won, accepted / drafted, acceptance, mean accepted
    length (shown when a run has drafters' counts)."""

    def __init__(self):
        super().__init__(0, len(DRAFTER_COLUMNS))
        self.setHorizontalHeaderLabels([c for c, _ in DRAFTER_COLUMNS])
        for i, (_, tip) in enumerate(DRAFTER_COLUMNS):
            self.horizontalHeaderItem(i).setToolTip(tip)
        self.verticalHeader().setVisible(False)
        header = self.horizontalHeader()      # every title whole; the name stretches
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.verticalHeader().setDefaultSectionSize(22)
        self.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setToolTip("Each drafter's share of the run: the rounds its draft won "
                        "(llama.cpp's first non-empty draft in priority order)")
        policy = self.sizePolicy()            # hidden, it keeps its room: a run that starts (its
        policy.setRetainSizeWhenHidden(True)  # rows not yet known) does not lay the plots out twice
        self.setSizePolicy(policy)
        self.setFixedHeight(0)                # (no room before its first rows)
        self.setVisible(False)
        self._rows: tuple = ()

    def show_stats(self, stats: Stats, modes: dict | None = None) -> None:
        """``modes``: a drafter's vocabulary mode (RoundEvent.xvocab), named beside it."""
        modes = modes or {}
        rows = tuple((f"{d.name} ({modes[d.name]})" if modes.get(d.name) else d.name,
                      d.n_draft_rounds, d.n_accept, d.n_drafted, d.mean_accepted_length)
                     for d in stats.by_drafter)
        if rows == self._rows:
            return
        self._rows = rows
        self.setRowCount(len(rows))
        for r, (name, rounds, acc, drafted, mean_len) in enumerate(rows):
            cells = (name, str(rounds), f"{acc} / {drafted}",
                     f"{acc / drafted:.0%}" if drafted else "–", f"{mean_len:.2f}")
            for c, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if c == 0:
                    fg, bg, _ = drafter_colors(name.split(" (")[0])
                    item.setForeground(QtGui.QColor(fg))
                    item.setBackground(QtGui.QColor(bg))
                else:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
                self.setItem(r, c, item)
        if rows:                            # (its height first: showing it lays the plots out at once)
            self.setFixedHeight(self.horizontalHeader().height() + 22 * len(rows) + 4)
        self.setVisible(bool(rows))
