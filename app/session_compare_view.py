"""Two sessions side by side: acceptance by position and accepted-length
histograms overlaid, speed-up and the rest in a table, and where the outputs first diverge.
It shows a ``core.session_compare.SessionComparison``; the window makes one from the session
shown and a second one the user opens (File → Compare with session…)."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from .plot_base import styled_plot

COLORS = ("#0072b2", "#e69f00")          # A, B
BAR_WIDTH = 0.38


class SessionCompareView(QtWidgets.QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.title = QtWidgets.QLabel("Open two sessions to compare them: File → Compare with "
                                      "session… compares the run shown with a recorded one.")
        self.title.setWordWrap(True)
        self.problem = QtWidgets.QLabel()        # a session that could not be compared (show_problem)
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color:#b42318")
        self.problem.hide()
        self.differences = QtWidgets.QLabel()
        self.differences.setWordWrap(True)
        self.divergence = QtWidgets.QLabel()
        self.divergence.setWordWrap(True)
        self.divergence.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.table = QtWidgets.QTableWidget(0, 7)
        self.table.setHorizontalHeaderLabels(["", "session", "speed-up", "tokens/s", "acceptance",
                                              "mean accepted length", "rounds"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)
        self.table.setMaximumHeight(90)
        self.position = styled_plot("Acceptance by draft position", "share kept",
                                    "draft position (1 = first drafted token)", antialias=True)
        self.lengths = styled_plot("Accepted drafted tokens per verified draft", "share of drafts",
                                   "drafted tokens accepted in the round")
        self.position.getPlotItem().setYRange(0, 1.05, padding=0)
        for p in (self.position, self.lengths):
            p.getPlotItem().addLegend(offset=(-10, 10))
        plots = QtWidgets.QHBoxLayout()
        plots.addWidget(self.position)
        plots.addWidget(self.lengths)
        lay = QtWidgets.QVBoxLayout(self)
        for w in (self.problem, self.title, self.table, self.differences, self.divergence):
            lay.addWidget(w)
        lay.addLayout(plots, 1)
        self.comparison = None

    def show_problem(self, text: str) -> None:
        """A session that could not be compared, said here (the Run workspace's banner is out
        of sight); what was compared before stays."""
        self.problem.setText(text)
        self.problem.show()

    def show_comparison(self, cmp) -> None:
        self.comparison = cmp
        self.problem.hide()
        sides = (("A", cmp.a), ("B", cmp.b))
        self.title.setText("<b>A</b> " + html.escape(cmp.a.label) + " &nbsp; vs &nbsp; <b>B</b> "
                           + html.escape(cmp.b.label))
        self.differences.setText("Settings that differ: " + ("; ".join(cmp.differences)
                                                            if cmp.differences else "none"))
        self.divergence.setText(cmp.divergence_sentence())
        self.table.setRowCount(2)
        for row, (name, side) in enumerate(sides):
            cells = (name, side.label,
                     f"{side.speedup:.2f}×" if side.speedup is not None else "– (no baseline)",
                     f"{side.tokens_per_s:.1f}", f"{side.acceptance_rate:.1%}",
                     f"{side.mean_accepted_length:.2f}", str(side.n_rounds))
            for col, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if col == 0:
                    item.setForeground(pg.mkColor(COLORS[row]))
                self.table.setItem(row, col, item)
        pos, lens = self.position.getPlotItem(), self.lengths.getPlotItem()
        for p in (pos, lens):
            p.clear()
            p.legend.clear()
        for i, (name, side) in enumerate(sides):
            color = COLORS[i]
            k = np.arange(1, len(side.position_acceptance) + 1)
            pos.plot(k, np.array(side.position_acceptance), pen=pg.mkPen(color, width=2),
                     symbol="o", symbolBrush=color, symbolPen=None, symbolSize=7,
                     name=f"{name}: {side.label}")
            n = np.arange(len(side.accepted_share)) + (i - 0.5) * BAR_WIDTH
            bars = pg.BarGraphItem(x=n, height=np.array(side.accepted_share), width=BAR_WIDTH,
                                   brush=color, pen=pg.mkPen(None))
            lens.addItem(bars)
            lens.legend.addItem(bars, f"{name}: {side.label}")
        longest = max(len(cmp.a.position_acceptance), len(cmp.b.position_acceptance))
        pos.getAxis("bottom").setTicks([[(k, str(k)) for k in range(1, longest + 1)]])
        widest = max(len(cmp.a.accepted_share), len(cmp.b.accepted_share))
        lens.getAxis("bottom").setTicks([[(k, str(k)) for k in range(widest)]])

    def shown(self) -> dict:
        """What the view shows (for tests)."""
        c = self.comparison
        return {"rows": [[self.table.item(r, col).text() for col in range(self.table.columnCount())]
                         for r in range(self.table.rowCount())],
                "differences": self.differences.text(), "divergence": self.divergence.text(),
                "curves": [list(item.yData) for item in self.position.getPlotItem().listDataItems()],
                "a": c.a if c else None, "b": c.b if c else None}
