"""The Advisor's table: a row per workload category with its advice (the best setup measured, or
"don't speculate" where nothing beats 1.0× beyond its interval), the measured speed-up and its
95 % range of a re-measurement, the runner-up, the hindsight ceiling of draft length where a draft model was
calibrated, and Copy buttons for the llama.cpp command lines of the advice."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QGuiApplication
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QTableWidget,
                               QTableWidgetItem, QToolButton, QWidget)

from .copy_command import COPY_TOOLS

__all__ = ["AdviceTable", "interval_text"]

COLUMNS = (("category", "the workload category (six prompts each)"),
           ("advice", "the best setup measured, or don't speculate: nothing beat 1.0× beyond its "
                      "interval (hover a row for why)"),
           ("measured (95 % range)", "speculative ÷ target-alone speed, computed as `specscope "
                                     "bench` does with each pass over the category's prompts a "
                                     "repetition; in brackets the range a bench re-measurement "
                                     "lands in 95 % of the time"),
           ("runner-up", "the next best measured (with don't speculate: the best tried)"),
           ("its measured", "the runner-up's measured speed-up and interval"),
           ("ceiling", "the hindsight ceiling of draft length, predicted: the best length of every "
                       "round, chosen knowing the text (draft models only)"),
           ("copy command", "the advice as a llama.cpp command line, to the clipboard"))
GOOD, NONE, UNJUDGED = "#dcf5e3", "#fdf1d6", "#eeeeee"


def interval_text(m) -> str:
    """"1.65× (1.39–1.81)" for a Measured with an interval, else "–"."""
    iv = m.interval() if m is not None else None
    return f"{iv[0]:.2f}× ({iv[1]:.2f}–{iv[2]:.2f})" if iv else "–"


class AdviceTable(QTableWidget):
    """``fill(advice)``; ``copied(tool, category, line)`` after a Copy button put a command on the
    clipboard; ``category_selected(name)`` when a row is chosen."""

    copied = Signal(str, str, str)
    category_selected = Signal(str)

    def __init__(self, parent=None):
        super().__init__(0, len(COLUMNS), parent)
        self.advice = None
        self.setHorizontalHeaderLabels([c for c, _ in COLUMNS])
        for j, (_, tip) in enumerate(COLUMNS):
            self.horizontalHeaderItem(j).setToolTip(tip)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        for j in (1, 3):                 # the setups' names share what is left, cut in the middle
            header.setSectionResizeMode(j, QHeaderView.ResizeMode.Stretch)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setWordWrap(False)
        self.itemSelectionChanged.connect(self._selected)

    def fill(self, advice, running: bool = False) -> None:
        """One row per category of ``advice`` (an Advice; None: empty); ``running``: the advisor
        is still at it (a category not judged yet says so)."""
        chosen = self.selected_category()
        self.advice = advice
        cats = advice.categories if advice is not None else []
        self.setRowCount(len(cats))
        for i, cat in enumerate(cats):
            d = cat.decision()
            colour = GOOD if d.best else NONE if d.judged else UNJUDGED
            ceiling = max(cat.ceilings.items(), key=lambda kv: kv[1], default=None)
            cells = (cat.category, "measuring…" if running and not d.judged else d.verdict,
                     interval_text(d.best),
                     d.runner_up.candidate.name if d.runner_up else "–", interval_text(d.runner_up),
                     f"{ceiling[1]:.2f}×" if ceiling else "–")
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{cat.category}: {d.why}" if j < 3 else text)
                if j == 1:
                    item.setBackground(QBrush(QColor(colour)))
                    font = QFont()
                    font.setBold(d.best is not None)
                    font.setItalic(not d.judged)
                    item.setFont(font)
                if j == 5 and ceiling:
                    item.setToolTip(f"{ceiling[0]}: the hindsight ceiling, predicted "
                                    "(no draft-length policy can beat it)")
                self.setItem(i, j, item)
            self.setCellWidget(i, len(COLUMNS) - 1, self._copy_buttons(cat.category))
        self.resizeRowsToContents()
        self.setMaximumHeight(self.needed_height())
        if cats:
            names = [c.category for c in cats]
            self.selectRow(names.index(chosen) if chosen in names else 0)

    def _copy_buttons(self, category: str) -> QWidget:
        box = QWidget()
        lay = QHBoxLayout(box)
        lay.setContentsMargins(2, 0, 2, 0)
        lay.setSpacing(4)
        for tool in COPY_TOOLS:
            b = QToolButton()
            b.setText(tool)
            b.setObjectName(f"copy-{tool}-{category}")
            b.setToolTip(f"Copy the {tool} command line for {category}'s advice")
            b.clicked.connect(lambda _=False, c=category, t=tool: self.copy(c, t))
            lay.addWidget(b)
        return box

    def copy_button(self, category: str, tool: str) -> QToolButton:
        return self.findChild(QToolButton, f"copy-{tool}-{category}")

    def command(self, category: str, tool: str) -> str:
        """The llama.cpp command line of ``category``'s advice (the target alone where it says
        don't speculate)."""
        from specscope.core.measure.advise.report import llama_command
        cat = next(c for c in self.advice.categories if c.category == category)
        return llama_command(self.advice, cat.decision().best, tool)

    def copy(self, category: str, tool: str) -> None:
        line = self.command(category, tool)
        QGuiApplication.clipboard().setText(line)
        self.copied.emit(tool, category, line)

    def selected_category(self) -> str | None:
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        item = self.item(rows[0].row(), 0) if rows else None
        return item.text() if item is not None else None

    def _selected(self) -> None:
        name = self.selected_category()
        if name:
            self.category_selected.emit(name)

    def needed_height(self) -> int:
        """The height that shows every row without scrolling."""
        rows = sum(self.rowHeight(i) for i in range(self.rowCount()))
        return rows + self.horizontalHeader().height() + 2 * self.frameWidth() + 2

