"""Quantized copies of the draft, made from the window.

The dialog offers llama.cpp's quantization types as checkboxes and a folder; Start makes one
copy per type with :class:`specscope.core.models.quantize.Quantization` (llama.cpp's own
``llama_model_quantize``, each file in a child process) on a background thread, with a
progress bar (share of the model's weights quantized, file by file) and a row per file.
Stop terminates the child and removes its partial file. When files were made, "Add to
Compare" emits :attr:`QuantizeDialog.add_to_compare` with their paths, to sweep them
against the original.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import (QCheckBox, QDialog, QFileDialog, QGridLayout, QGroupBox,
                               QHBoxLayout, QHeaderView, QLabel, QLineEdit, QProgressBar,
                               QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout)

from specscope.core.errors import SpecScopeError
from specscope.core.models.quantize import DEFAULT_TYPES, TYPES, Quantization, offered_types

STEPS = 1000          # progress bar resolution

TYPE_HINTS = {
    "F16": "half precision floats", "Q8_0": "8-bit, near-lossless", "Q6_K": "6-bit K-quant",
    "Q5_K_M": "5-bit K-quant", "Q5_0": "5-bit", "Q4_K_M": "4-bit K-quant, mixed",
    "Q4_0": "4-bit", "Q3_K_M": "3-bit K-quant", "Q2_K": "2-bit K-quant",
}


class _Bridge(QObject):
    """Carries the worker thread's news to the dialog (queued: it lives on the UI thread)."""
    progressed = Signal(int, int, float, str)
    finished = Signal(object, str)        # results, error line ("" when none)


class QuantizeDialog(QDialog):
    add_to_compare = Signal(list)         # paths (str) of the copies made
    finished_run = Signal(list)           # every result (QuantResult), when a run ends

    def __init__(self, source: str | Path, out_dir: str | Path | None = None, parent=None):
        super().__init__(parent)
        self.source = Path(source)
        self.setWindowTitle("Quantized copies of the draft")
        self._thread: threading.Thread | None = None
        self._quant: Quantization | None = None
        self._made: list[str] = []
        self._bridge = _Bridge(self)
        self._bridge.progressed.connect(self._on_progress)
        self._bridge.finished.connect(self._on_finished)

        intro = QLabel(
            f"<b>{self.source.name}</b><br>A draft quantized harder than the target is wrong a "
            "little more often but costs less per token. Make copies with llama.cpp's "
            "own quantizer, then sweep them against the original in Compare.")
        intro.setWordWrap(True)

        types_box = QGroupBox("Types")
        grid = QGridLayout(types_box)
        try:
            offered = offered_types(self.source)
        except SpecScopeError:
            offered = [t for t in TYPES if t != "F16"]
        self.checks: dict[str, QCheckBox] = {}
        for i, t in enumerate(offered):
            box = QCheckBox(t)
            box.setToolTip(TYPE_HINTS.get(t, ""))
            box.setChecked(t in DEFAULT_TYPES)
            box.toggled.connect(self._refresh_buttons)
            self.checks[t] = box
            grid.addWidget(box, i // 3, i % 3)

        self.pure = QCheckBox("One type for every matrix (--pure)")
        self.pure.setToolTip("by default llama.cpp gives the output matrix, or a token embedding "
                             "tied to it, more bits")
        grid.addWidget(self.pure, (len(offered) + 2) // 3, 0, 1, 3)

        folder_row = QHBoxLayout()
        self.folder = QLineEdit(str(out_dir or self.source.parent / "quantized"))
        self.folder.textChanged.connect(self._refresh_buttons)
        self.browse = browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        folder_row.addWidget(QLabel("Folder:"))
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(browse)

        self.progress = QProgressBar()
        self.progress.setRange(0, STEPS)
        self.progress.setValue(0)
        self.progress.setFormat("%p% (share of the weights quantized, all files)")

        self.files = QTreeWidget()
        self.files.setHeaderLabels(["Type", "File", "Status", "Size", "Bits/weight", "Time", "Tensor types"])
        self.files.setRootIsDecorated(False)
        self.files.header().setSectionResizeMode(6, QHeaderView.ResizeMode.Stretch)
        self.files.setMinimumHeight(120)

        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.start_button = QPushButton("Start")
        self.start_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop)
        self.compare_button = QPushButton("Add to Compare")
        self.compare_button.setToolTip("sweep the copies against the original draft")
        self.compare_button.clicked.connect(lambda: self.add_to_compare.emit(list(self._made)))
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        for b in (self.start_button, self.stop_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.compare_button)
        buttons.addWidget(close)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(types_box)
        layout.addLayout(folder_row)
        layout.addWidget(self.progress)
        layout.addWidget(self.files, 1)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        self.resize(820, 460)
        self._refresh_buttons()

    # ------------------------------------------------------------------ state

    @property
    def running(self) -> bool:
        return self._thread is not None

    def chosen_types(self) -> list[str]:
        return [t for t, box in self.checks.items() if box.isChecked()]

    def _refresh_buttons(self, *_):
        running = self.running
        self.start_button.setEnabled(not running and bool(self.chosen_types())
                                     and bool(self.folder.text().strip()))
        self.stop_button.setEnabled(running)
        self.compare_button.setEnabled(not running and bool(self._made))
        for box in (*self.checks.values(), self.pure):
            box.setEnabled(not running)
        self.folder.setEnabled(not running)
        self.browse.setEnabled(not running)

    def _fit_columns(self):
        for col in range(6):
            self.files.resizeColumnToContents(col)

    def _browse(self):
        folder = QFileDialog.getExistingDirectory(self, "Folder for the quantized copies",
                                                  self.folder.text())
        if folder:
            self.folder.setText(folder)

    def _show(self, text: str, error: bool = False):
        self.message.setStyleSheet("color: #b00020;" if error else "")
        self.message.setText(text)

    # ------------------------------------------------------------------ run

    @Slot()
    def start(self) -> bool:
        """Check the choice (one line when it is wrong) and start; True when started."""
        if self.running:
            return False
        try:
            self._quant = Quantization(self.source, self.chosen_types(), self.folder.text().strip(),
                                       pure=self.pure.isChecked())
        except SpecScopeError as exc:
            self._show(str(exc), error=True)
            return False
        self._made = []
        self.files.clear()
        for r in self._quant.results:
            item = QTreeWidgetItem([r.qtype, r.path.name, "waiting", "", "", "", ""])
            item.setToolTip(1, str(r.path))
            self.files.addTopLevelItem(item)
        self._fit_columns()
        self.files.setColumnWidth(2, max(self.files.columnWidth(2),
                                         self.fontMetrics().horizontalAdvance("quantizing…") + 16))
        self.progress.setValue(0)
        self._show(f"quantizing into {self._quant.out_dir} …")
        quant, bridge = self._quant, self._bridge

        def work():
            error = ""
            results = quant.results
            try:
                results = quant.run(lambda i, n, f, p: bridge.progressed.emit(i, n, f, p))
            except SpecScopeError as exc:
                error = str(exc)
            except Exception as exc:  # noqa: BLE001 - shown, never raised into Qt
                error = f"{self.source}: quantizing failed: {exc}"
            bridge.finished.emit(results, error)

        self._thread = threading.Thread(target=work, name="quantize", daemon=False)
        self._thread.start()
        self._refresh_buttons()
        return True

    @Slot()
    def stop(self):
        if self._quant is not None:
            self._quant.stop()

    @Slot(int, int, float, str)
    def _on_progress(self, i: int, n: int, frac: float, _path: str):
        if n:
            self.progress.setValue(int(STEPS * min(1.0, (i + frac) / n)))
        for row in range(self.files.topLevelItemCount()):
            item = self.files.topLevelItem(row)
            if row < i and item.text(2) == "quantizing…":
                item.setText(2, "made")
            elif row == i and item.text(2) == "waiting":
                item.setText(2, "quantizing…")

    @Slot(object, str)
    def _on_finished(self, results, error: str):
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        for row, r in enumerate(results):
            item = self.files.topLevelItem(row)
            if item is None:
                continue
            item.setText(2, {"done": "done", "stopped": "stopped", "failed": "failed",
                             "pending": "not made"}.get(r.status, r.status))
            if r.status == "done":
                item.setText(3, f"{r.size / 1e6:.2f} MB")
                item.setText(4, f"{r.bits_per_weight:.2f}")
                item.setText(5, f"{r.seconds:.1f} s")
                mix = ", ".join(f"{t} ×{k}" for t, k in sorted(r.tensor_types.items(), key=lambda kv: -kv[1]))
                item.setText(6, mix)
                item.setToolTip(6, "tensors of each type in the file" + (
                    f"; {r.fallbacks} fell back to another type (rows not a multiple of the block)"
                    if r.fallbacks else ""))
            elif r.error:
                item.setToolTip(2, r.error)
        self._fit_columns()
        self._made = [str(r.path) for r in results if r.status == "done"]
        failed = [r for r in results if r.status == "failed"]
        fell_back = [r.qtype for r in results if r.status == "done" and r.fallbacks]
        if error:
            self._show(error, error=True)
        elif failed:
            self._show("\n".join(r.error for r in failed), error=True)
        elif any(r.status == "stopped" for r in results):
            self._show("stopped: the partial file was removed"
                       + (f"; {len(self._made)} file(s) made before" if self._made else ""))
        else:
            self.progress.setValue(STEPS)
            note = (f" {', '.join(fell_back)}: llama.cpp chose other types for some tensors (see "
                    "Tensor types): rows not a multiple of the type's block, or more bits for "
                    "the output matrix (unless one type for every matrix)." if fell_back else "")
            self._show(f"{len(self._made)} file(s) made in {self._quant.out_dir}.{note}")
        self._refresh_buttons()
        self.finished_run.emit(list(results))

    def closeEvent(self, event):
        if self._quant is not None:
            self._quant.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        super().closeEvent(event)



def open_quantize_dialog(parent, draft, compare=None) -> QuantizeDialog | None:
    """Open the dialog on ``draft`` (the window's current draft); its Add to Compare adds the
    copies to ``compare`` (a CompareView) as drafts. Without a draft, says so in one line."""
    if draft is None:
        from PySide6.QtWidgets import QMessageBox
        QMessageBox.information(parent, "Quantize the draft", "Choose a draft model first: "
                                "the copies are made from it.")
        return None
    dialog = QuantizeDialog(draft, parent=parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    if compare is not None:
        dialog.add_to_compare.connect(lambda paths: [compare.add_draft(p) for p in paths])
    dialog.show()
    return dialog
