"""Pieces the Compare and Advisor forms share: small widget builders, and :class:`PairRows`, the
target and its list of draft models (Add draft…, Add folder…, Remove)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QDoubleSpinBox, QFileDialog, QGridLayout, QHBoxLayout,
                               QLabel, QListWidget, QPushButton, QSpinBox)

__all__ = ["PairRows", "combo", "double_spin", "row", "spin", "with_tip"]


def with_tip(widget, tip: str):
    widget.setToolTip(tip)
    return widget


def spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(lo, hi)
    box.setValue(value)
    return with_tip(box, tip)


def double_spin(lo: float, hi: float, value: float, step: float, tip: str, decimals: int = 2) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(lo, hi)
    box.setSingleStep(step)
    box.setDecimals(decimals)
    box.setValue(value)
    return with_tip(box, tip)


def combo(items, tip: str) -> QComboBox:
    box = QComboBox()
    box.addItems(items)
    return with_tip(box, tip)


def row(*widgets) -> QHBoxLayout:
    """Widgets (a str: a label) in a row, stretched at the end."""
    line = QHBoxLayout()
    for w in widgets:
        line.addWidget(QLabel(w) if isinstance(w, str) else w)
    line.addStretch(1)
    return line


class PairRows:
    """A form's target and draft models (mixed into a QGroupBox with a ``changed`` signal):
    :meth:`_pair_rows` lays them out in the first two columns of rows 0-3 of a grid."""

    target: Path | None = None

    def _pair_rows(self, grid: QGridLayout, tip: str, folder: bool = False) -> None:
        self.target_label = QLabel("no target")
        self.target_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        grid.addWidget(QLabel("Target"), 0, 0)
        grid.addWidget(self.target_label, 0, 1)
        self.drafts = with_tip(QListWidget(), tip)
        self.drafts.setMaximumHeight(64)
        self.drafts.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        grid.addWidget(QLabel("Drafts"), 1, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.drafts, 1, 1, 2, 1)
        self.add_draft_button = QPushButton("Add draft…")
        self.remove_draft_button = QPushButton("Remove")
        self.add_draft_button.clicked.connect(self._add_draft_dialog)
        self.remove_draft_button.clicked.connect(self._remove_drafts)
        buttons = [self.add_draft_button, self.remove_draft_button]
        if folder:
            self.add_folder_button = with_tip(QPushButton("Add folder…"), "Every GGUF model in a folder "
                                              "(the target left out)")
            self.add_folder_button.clicked.connect(self._add_folder_dialog)
            buttons.insert(1, self.add_folder_button)
        grid.addLayout(row(*buttons), 3, 1)

    def set_pair(self, target_path, draft_path=None, extra_drafts=()) -> None:
        self.target = Path(target_path) if target_path else None
        self.target_label.setText(str(self.target) if self.target else "no target")
        self.target_label.setToolTip(str(self.target) if self.target else "")
        self.drafts.clear()
        for d in ([draft_path] if draft_path else []) + list(extra_drafts):
            self.add_draft(d)
        self.changed.emit()

    def add_draft(self, path) -> None:
        path = str(Path(path))
        if path not in self.draft_paths():
            self.drafts.addItem(path)
        self.changed.emit()

    def add_folder(self, folder) -> int:
        """Every ``*.gguf`` in ``folder`` but the target, as drafts; how many were added."""
        before = self.drafts.count()
        for path in sorted(Path(folder).glob("*.gguf")):
            if self.target is None or path.resolve() != self.target.resolve():
                self.add_draft(path)
        return self.drafts.count() - before

    def draft_paths(self) -> list[str]:
        return [self.drafts.item(i).text() for i in range(self.drafts.count())]

    def _add_draft_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Add draft models", "", "GGUF models (*.gguf)")
        for p in paths:
            self.add_draft(p)

    def _add_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A folder of draft models")
        if folder:
            self.add_folder(folder)

    def _remove_drafts(self) -> None:
        for item in self.drafts.selectedItems():
            self.drafts.takeItem(self.drafts.row(item))
        self.changed.emit()
