"""File ▸ Model library: the GGUF files the user already has (core/models/library.py), to pick
a target and a draft from, and what among them can draft for the target (the pair doctor's
ranking, ``specscope models --for``). Scans and rankings run off the UI thread."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QFileDialog, QHBoxLayout, QHeaderView,
                               QLabel, QLineEdit, QPlainTextEdit, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout)

from specscope.core.models.library import params_text, size_text

from .session_files import PAIR_BUSY

COLUMNS = ("Name", "Store", "Architecture", "Params", "Quant", "Size", "Context", "Chat",
           "Drafts with")
FOLDERS_KEY = "library/folders"


class LibraryDialog(QDialog):
    scanned = Signal(object)            # a Library (from the scanning thread)
    ranked = Signal(object)             # the ranking's lines, or an exception
    use = Signal(str, str)              # role ("target" | "draft"), path

    def __init__(self, settings: QSettings, target: Path | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Model library — SpecScope")
        self.resize(1000, 560)
        self.settings, self.target = settings, target
        self.library = None
        self._busy = False                 # a run is going: the pair cannot change (set_busy)
        self._problems = ""                # the scan's problems, kept beside a ranking
        lay = QVBoxLayout(self)
        self.where = QLabel("Looking for models…")
        self.where.setWordWrap(True)
        self.where.setStyleSheet("color:#555")
        lay.addWidget(self.where)
        top = QHBoxLayout()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by name, store, architecture or quantization")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter)
        top.addWidget(self.filter, 1)
        add = QPushButton("Add folder…")
        add.setToolTip("Also look in a folder of your own (and its subfolders); remembered")
        add.clicked.connect(self._add_folder)
        top.addWidget(add)
        lay.addLayout(top)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.doubleClicked.connect(lambda _: self._use("target"))
        lay.addWidget(self.table, 3)
        buttons = QHBoxLayout()
        self.as_target = QPushButton("Use as target")
        self.as_target.clicked.connect(lambda: self._use("target"))
        self.as_draft = QPushButton("Use as draft")
        self.as_draft.clicked.connect(lambda: self._use("draft"))
        self.rank = QPushButton("What can draft for the target?")
        self.rank.setToolTip("Rank the models found as drafts for the target, as the pair doctor "
                             "ranks a folder (no weights loaded)")
        self.rank.clicked.connect(self._rank)
        for b in (self.as_target, self.as_draft, self.rank):
            buttons.addWidget(b)
        buttons.addStretch(1)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        buttons.addWidget(close)
        lay.addLayout(buttons)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self._selection_changed()
        self.ranking = QPlainTextEdit()
        self.ranking.setReadOnly(True)
        self.ranking.setPlaceholderText("The problems found, and what can draft for the target, "
                                        "appear here")
        lay.addWidget(self.ranking, 2)
        self.scanned.connect(self._show)
        self.ranked.connect(self._show_ranking)
        self.rescan()

    # ------------------------------------------------------------------ scanning
    def folders(self) -> list[str]:
        value = self.settings.value(FOLDERS_KEY, [])
        return [value] if isinstance(value, str) else list(value or [])

    def rescan(self) -> None:
        self.where.setText("Looking for models…")
        folders = self.folders()
        threading.Thread(target=self._scan, args=(folders,), daemon=True,
                         name="specscope-library").start()

    def _scan(self, folders) -> None:
        from specscope.core.models.library import scan_library
        self.scanned.emit(scan_library(folders))

    def _show(self, lib) -> None:
        self.library = lib
        stores = sorted({s for s, _ in lib.searched})
        self.where.setText(
            (f"{len(lib.models)} GGUF model{'s' if len(lib.models) != 1 else ''} in "
             + ", ".join(stores) if lib.searched else
             "No model store found (LM Studio, Ollama, Hugging Face, llama.cpp, Jan, GPT4All): "
             "add a folder of your GGUF files, or go on with the bundled demo pair (Demo pair, "
             "beside the models)")
            + ". Double-click a model to use it as the target; drop a .gguf file on the "
              "window to open it.")
        self.table.setRowCount(len(lib.models))
        for row, m in enumerate(lib.models):
            cells = (m.name, m.store, m.architecture, params_text(m.params), m.quantization,
                     size_text(m.size), str(m.context_length or "?"), "yes" if m.chat_template else "",
                     m.drafts_with)
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(m.path)
                if col in (3, 5, 6):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self._problems = (f"Problems ({len(lib.problems)}):\n" + "\n".join(f"  {p}" for p in lib.problems)
                          if lib.problems else "")
        if self._problems:
            self.ranking.setPlainText(self._problems)
        self._filter(self.filter.text())

    def _filter(self, text: str) -> None:
        text = text.lower().strip()
        for row in range(self.table.rowCount()):
            words = " ".join(self.table.item(row, c).text() for c in (0, 1, 2, 4)).lower()
            self.table.setRowHidden(row, bool(text) and text not in words)

    def _add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A folder with GGUF models")
        if folder:
            self.settings.setValue(FOLDERS_KEY, sorted(set(self.folders()) | {folder}))
            self.rescan()

    # ------------------------------------------------------------------ choosing
    def _selection_changed(self) -> None:
        """Use as target / draft: only with a model selected."""
        chosen = bool(self.table.selectionModel().selectedRows())
        for b in (self.as_target, self.as_draft):
            b.setEnabled(chosen and not self._busy)
            b.setToolTip(PAIR_BUSY if self._busy else "")

    def set_busy(self, busy: bool) -> None:
        """A run started or ended in the window: the pair cannot change while it goes."""
        self._busy = busy
        self._selection_changed()

    def selected(self):
        rows = self.table.selectionModel().selectedRows() if self.library else []
        return self.library.models[rows[0].row()] if rows else None

    def _use(self, role: str) -> None:
        m = self.selected()
        if m is None or self._busy:
            return
        if role == "target":
            self.target = Path(m.path)
        self.use.emit(role, m.path)

    def _rank(self) -> None:
        if self.target is None or self.library is None:
            self.ranking.setPlainText("Choose a target first (select it and press Use as target).")
            return
        self.ranking.setPlainText(f"Ranking the models found as drafts for {self.target.name}…")
        self.rank.setEnabled(False)
        threading.Thread(target=self._rank_in_thread, args=(self.target, self.library),
                         daemon=True, name="specscope-library-rank").start()

    def _rank_in_thread(self, target, lib) -> None:
        from specscope.core.measure.doctor.draft_choice import rank_for
        try:
            self.ranked.emit(rank_for(target, lib)["lines"])
        except Exception as exc:  # noqa: BLE001 - a bad target: its one line
            self.ranked.emit(exc)

    def _show_ranking(self, result) -> None:
        self.rank.setEnabled(True)
        text = str(result) if isinstance(result, Exception) else "\n".join(result)
        self.ranking.setPlainText(text + (f"\n\n{self._problems}" if self._problems else ""))
