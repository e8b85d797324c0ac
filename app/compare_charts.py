"""The Compare view's pictures of a sweep: the heatmap of the measured speed-up (configurations ×
n, the best n per configuration outlined, a figure within noise uncoloured in grey italics, "none"
where the drafter never drafted) and the chart of the speed-up against n (measured, with the
repetitions' spread, calibrated and textbook predictions, a colour per configuration)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSizePolicy, QTableWidget, QTableWidgetItem

from .compare_table import measured_tip, row_color
from .plot_base import TEXT_COLOR, cache_static_parts, coloured_key, styled_plot

__all__ = ["SpeedupHeatmap", "SpeedupChart", "DRAFT_COLORS"]

DRAFT_COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")
LEGEND_CHARS = 44           # longer configuration names are cut in the chart's legend
KEY = "● measured &nbsp;┬ spread &nbsp;━ calibrated &nbsp;╌ textbook"
KEY_TIP = ("● measured, ┬ the repetitions' spread, ━ the calibrated prediction, ╌ the textbook "
           "prediction (E+1)/(n·f+1); one colour per configuration (n-gram drafters alone: flat, "
           "n is the draft model's)")


class SpeedupHeatmap(QTableWidget):
    """Configurations × n, the measured speed-up coloured around 1×."""

    def __init__(self, parent=None):
        super().__init__(0, 0, parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(24)
        self.setFixedHeight(60)
        self.setToolTip("blue: faster than the target alone; red: slower")

    def fill(self, shown, name) -> None:
        """Draw ``shown`` (a SweepResult); ``name(config)`` is a configuration as the table names it."""
        drafts, ns, grid = shown.heatmap()
        rows = {(r.config, r.n_max): r for r in shown.pooled()}
        self.clear()
        self.setRowCount(len(drafts))
        self.setColumnCount(len(ns))
        self.setHorizontalHeaderLabels([f"n={n}" if n else "no n" for n in ns])
        # the table's names, a chain's types and the draft file on lines of their own: the
        # figures keep the width beside them
        labels = [name(d).replace(">", ">\n").replace(" (", "\n(") for d in drafts]
        self.setVerticalHeaderLabels(labels)
        self._fit_height(labels)
        best = shown.best_n()
        bold = QFont()
        bold.setBold(True)
        bold.setUnderline(True)
        for i, (config, values) in enumerate(zip(drafts, grid)):
            for j, (n, value) in enumerate(zip(ns, values)):
                if value is None:
                    continue
                r = rows[(config, n)]
                item = QTableWidgetItem("none" if r.never_drafted else f"{value:.2f}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setBackground(QBrush(row_color(r)))
                unsure = r.never_drafted or r.within_noise
                item.setForeground(QBrush(QColor("#666666" if unsure else "#111111")))
                item.setToolTip(f"{name(config)}, n = {n or '–'}: {measured_tip(r)}")
                font = QFont(bold) if best.get(config, {}).get("measured") == n else QFont()
                font.setItalic(unsure)
                font.setPointSizeF(max(6.0, self.font().pointSizeF() - 1))
                item.setFont(font)
                self.setItem(i, j, item)

    def _fit_height(self, labels: list[str]) -> None:
        """Each row as tall as its name's lines; the table as tall as its rows."""
        row_h = self.verticalHeader().defaultSectionSize()
        line_h = self.fontMetrics().height()
        for i, label in enumerate(labels):
            self.setRowHeight(i, max(row_h, (label.count("\n") + 1) * line_h + 6))
        header = self.horizontalHeader().sizeHint().height()
        rows_h = sum(self.rowHeight(i) for i in range(len(labels))) or row_h
        self.setFixedHeight(header + rows_h + 2 * self.frameWidth())


class SpeedupChart:
    """The speed-up against n in a styled plot: per configuration the measured points (with
    the repetitions' spread as error bars), the calibrated prediction (solid) and the textbook
    one (dashed); n-gram-only chains are flat. ``widget`` is the plot to lay out."""

    def __init__(self):
        self.widget = styled_plot("Speed-up against the target alone", "speed-up (×)", "draft length n",
                                  antialias=True)
        self.widget.setMinimumSize(280, 160)     # the column fits a 1280x720 window
        policy = self.widget.sizePolicy()         # pyqtgraph asks for 480 pixels: in its scrolling
        policy.setVerticalPolicy(QSizePolicy.Policy.Ignored)   # column the chart took them all
        self.widget.setSizePolicy(policy)
        p = self.widget.getPlotItem()
        self.one_line = pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#999999", width=1,
                                                                        style=Qt.PenStyle.DotLine))
        p.addItem(self.one_line)
        # the names and their colours are in the key under the chart (``key_html``): in the chart
        # a legend of three configurations covered the curves of a chart 150 pixels tall
        self.legend = p.addLegend(offset=(-10, 10), labelTextColor=TEXT_COLOR, labelTextSize="8pt")
        self.legend.setVisible(False)
        self.named: list[tuple[str, str]] = []   # (configuration's name, colour), drawn order
        self.curves: list = []
        p.getAxis("bottom").setTicks([[(n, str(n)) for n in (1, 2, 4, 8)]])   # draft lengths: whole
        p.setXRange(0.6, 8.4, padding=0)
        cache_static_parts(p)

    def fill(self, shown, name) -> None:
        """Draw ``shown`` (a SweepResult); ``name(config)`` is a configuration's legend name."""
        p = self.widget.getPlotItem()
        for c in self.curves:
            p.removeItem(c)
        self.curves = []
        self.named = []
        self.legend.clear()
        pooled = shown.pooled()
        ns = sorted({r.n_max for r in pooled if r.n_max}) or [1]
        for k, draft in enumerate(shown.drafts()):
            rows = sorted((r for r in pooled if r.config == draft), key=lambda r: r.n_max)
            if rows:
                self._configuration(p, rows, ns, DRAFT_COLORS[k % len(DRAFT_COLORS)], name(draft))
        if pooled:
            p.getAxis("bottom").setTicks([[(n, str(n)) for n in ns]])
            values = [v for r in pooled for v in (math.nan if r.never_drafted else r.measured_speedup,
                                                  r.calibrated_speedup, r.textbook_speedup)
                      if math.isfinite(v)] + [1.0]
            lo, hi = min(values), max(values)
            pad = 0.08 * (hi - lo or 1.0)
            p.setYRange(max(0.0, lo - pad), hi + pad, padding=0)
            p.setXRange(min(ns) - 0.4, max(ns) + 0.4, padding=0)

    def key_html(self) -> str:
        """The chart's key: each configuration's name in its colour, then what the marks mean."""
        names = coloured_key([(c, "■", n) for n, c in self.named])
        return (names + "<br>" if names else "") + KEY

    def _configuration(self, p: pg.PlotItem, rows: list, ns: list[int], color: str, name: str) -> None:
        xs = [r.n_max for r in rows]
        if rows[0].n_max == 0:                 # an n-gram-only chain: the same at every n
            xs, rows = ns, rows * len(ns)
        short = name if len(name) <= LEGEND_CHARS else name[:LEGEND_CHARS - 1] + "…"
        self.named.append((short, color))
        # a drafter that never drafted measured the target alone: no point of its own
        drafted = [(x, r.measured_speedup) for x, r in zip(xs, rows) if not r.never_drafted]
        measured = p.plot([x for x, _ in drafted], [y for _, y in drafted], pen=pg.mkPen(color, width=1),
                          symbol="o", symbolSize=8, symbolBrush=pg.mkBrush(color),
                          symbolPen=pg.mkPen("w"), name=short if drafted else None)
        calibrated = p.plot(xs, [r.calibrated_speedup for r in rows], pen=pg.mkPen(color, width=2.5),
                            connect="finite", name=None if drafted else short)
        textbook = p.plot(xs, [r.textbook_speedup for r in rows],
                          pen=pg.mkPen(color, width=1.5, style=Qt.PenStyle.DashLine))
        self.curves += [measured, calibrated, textbook]
        spread = [(x, r) for x, r in zip(xs, rows) if r.spread is not None]
        if spread and rows[0].n_max:           # the repetitions' spread around each point
            bars = pg.ErrorBarItem(x=np.array([x for x, _ in spread], dtype=float),
                                   y=np.array([r.measured_speedup for _, r in spread]),
                                   top=np.array([r.speedup_max - r.measured_speedup for _, r in spread]),
                                   bottom=np.array([r.measured_speedup - r.speedup_min for _, r in spread]),
                                   beam=0.12, pen=pg.mkPen(color, width=1))
            p.addItem(bars)
            self.curves.append(bars)
