"""Pick a target and a draft; see the pair doctor's verdict and each model's facts (and, for a
target that carries MTP blocks, the offer to draft with them: draft-mtp, no draft model)."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (QComboBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QProgressBar, QPushButton,
                               QSizePolicy, QSpinBox, QTableWidget, QTableWidgetItem, QToolButton,
                               QVBoxLayout, QWidget, QHeaderView, QAbstractItemView)

from specscope.core.engine.drafters import TYPES
from specscope.core.models.library import size_text

from .drafter_style import drafter_colors

GGUF_FILTER = "GGUF models (*.gguf);;All files (*)"
FACT_ROWS = ("architecture", "parameters", "file size", "tensor type", "bits / weight", "trained context")
# EngineSettings.repack (core.llama.REPACK_MODES; not imported here: that loads llama.cpp on the UI thread)
REPACK_MODES = ("auto", "on", "off")
ZWSP = "\u200b"


def breakable(text: str) -> str:
    """Let word wrap break long paths and names after / \\ _ - (a zero-width space)."""
    for sep in "/\\_-":
        text = text.replace(sep, sep + ZWSP)
    return text


def threads_line(threads: dict) -> str:
    """'Threads: target auto (2 now), draft 1' (auto follows the machine's load, decode by decode)."""
    parts = [f"{role} " + (f"auto ({n} now)" if auto else str(n))
             for role in ("target", "draft") if role in threads
             for n, auto in [threads[role]]]
    return "Threads: " + ", ".join(parts)


def human_count(n: int | None) -> str:
    if not n:
        return "–"
    for unit, div in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n)


def human_bytes(n: int | None) -> str:
    """A file's size as the model library writes it (decimal units, as a file manager does)."""
    return size_text(n) if n else "–"


def gguf_paths(mime) -> list[Path]:
    if not mime.hasUrls():
        return []
    return [Path(u.toLocalFile()) for u in mime.urls()
            if u.isLocalFile() and u.toLocalFile().lower().endswith(".gguf")]


class ElidedLabel(QLabel):
    """A one-line label that fits any width: a text too long loses its middle (the full
    text is the tooltip), so a long file name never widens the panel."""

    def __init__(self, text: str = ""):
        super().__init__(text)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(0, super().minimumSizeHint().height())

    def elided(self) -> str:
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideMiddle,
                                             self.contentsRect().width())

    def paintEvent(self, event):  # noqa: N802
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment()), self.elided())


class PathEdit(QLineEdit):
    """A path field that takes a dropped .gguf file. A path longer than the field shows its
    end (the file name); the full path is the tooltip."""

    dropped = Signal(Path)

    def __init__(self, placeholder: str):
        super().__init__()
        self.setPlaceholderText(placeholder)
        self.setAcceptDrops(True)
        self.setClearButtonEnabled(True)
        self.setMinimumWidth(60)
        self.textChanged.connect(self.setToolTip)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self.setCursorPosition(len(text))        # the file name, not the first folders

    def focusOutEvent(self, event):  # noqa: N802
        super().focusOutEvent(event)
        self.setCursorPosition(len(self.text()))

    def dragEnterEvent(self, event):  # noqa: N802
        if gguf_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event):  # noqa: N802
        self.dragEnterEvent(event)

    def dropEvent(self, event):  # noqa: N802
        paths = gguf_paths(event.mimeData())
        if paths:
            self.setText(str(paths[0]))
            self.dropped.emit(paths[0])
            event.acceptProposedAction()


HEAD_TIPS = {t.who[1]: f"{name} drafts with {t.what} (a GGUF of llama.cpp's {t.head} "
                       "architecture, made for this target): choose it here"
             for name, t in TYPES.items() if t.head}
NGRAM_OFFER = ("Draftless n-gram drafting needs no draft model: "
               "<a href='ngram-mod'>use ngram-mod</a> (or <a href='ngram-simple'>ngram-simple</a> "
               "for text that repeats its input), under Drafter.")


class PairPanel(QGroupBox):
    pair_changed = Signal()               # the user picked another target or draft
    demo_requested = Signal()
    drafter_suggested = Signal(str)       # a link in the verdict: draft with this n-gram type
    placement_changed = Signal()          # a device, GPU layer count or rpc endpoint changed

    def __init__(self, parent=None):
        super().__init__("Models", parent)
        lay = QVBoxLayout(self)
        lay.setSpacing(6)
        lay.addLayout(self._build_paths())
        lay.addLayout(self._build_recent())
        self._build_verdict(lay)
        lay.addWidget(self._build_facts())
        lay.addWidget(self._build_progress())
        self.set_load_state("idle")
        self._build_advanced()
        lay.addWidget(self.advanced_toggle)
        lay.addWidget(self.advanced)

        self.target_browse.clicked.connect(self.browse_target)
        self.draft_browse.clicked.connect(self.browse_draft)
        for edit in (self.target_edit, self.draft_edit):
            edit.editingFinished.connect(self._edited)
            edit.dropped.connect(lambda _p: self._edited(force=True))
        self.recent.activated.connect(self._recent_chosen)
        self.demo_button.clicked.connect(self.demo_requested)
        self._last = (None, None)
        self.head_slot = None
        self.set_head_slot("")

    def _build_paths(self) -> QGridLayout:
        """The target's and the draft's path, each with its browse button."""
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        self.target_edit = PathEdit("target model (.gguf) — drop a file here")
        self.draft_edit = PathEdit("draft model (.gguf) — drop a file here")
        self.target_browse = QToolButton(text="…")
        self.draft_browse = QToolButton(text="…")
        self.target_browse.setToolTip("Choose the target model")
        self.draft_browse.setToolTip("Choose the draft model")
        self.draft_label = QLabel("Draft")
        for row, (label, edit, browse) in enumerate(((QLabel("Target"), self.target_edit, self.target_browse),
                                                     (self.draft_label, self.draft_edit, self.draft_browse))):
            grid.addWidget(label, row, 0)
            grid.addWidget(edit, row, 1)
            grid.addWidget(browse, row, 2)
        return grid

    def _build_recent(self) -> QHBoxLayout:
        """The pairs used before, and the demo pair's button."""
        recent_row = QHBoxLayout()
        self.recent = QComboBox()
        self.recent.setToolTip("Pairs you used before")
        self.recent.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.recent.setMinimumContentsLength(12)
        self.demo_button = QPushButton("Demo pair")
        self.demo_button.setToolTip("The small target/draft pair bundled with SpecScope")
        recent_row.addWidget(self.recent, 1)
        recent_row.addWidget(self.demo_button)
        return recent_row

    def _build_verdict(self, lay: QVBoxLayout) -> None:
        """The doctor's verdict on the pair, and the target's MTP blocks."""
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        # the layout's width, not the text's: a long unbreakable name must not widen the panel
        self.verdict.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                             | Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.verdict.linkActivated.connect(self.drafter_suggested)
        lay.addWidget(self.verdict)
        self.mtp_line = QLabel()                 # the target's MTP blocks, offered to draft-mtp
        self.mtp_line.setWordWrap(True)
        self.mtp_line.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.mtp_line.setTextFormat(Qt.TextFormat.RichText)
        self.mtp_line.linkActivated.connect(self.drafter_suggested)
        lay.addWidget(self.mtp_line)
        self._mtp_blocks: int | None = None
        self.set_target_mtp(None)

    def _build_facts(self) -> QTableWidget:
        """The two models' facts side by side."""
        self.facts = QTableWidget(len(FACT_ROWS), 2)
        self.facts.setHorizontalHeaderLabels(["target", "draft"])
        self.facts.setVerticalHeaderLabels(list(FACT_ROWS))
        self.facts.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.facts.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.facts.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.facts.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.facts.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.facts.setAlternatingRowColors(True)
        self.facts.verticalHeader().setDefaultSectionSize(22)
        self.facts.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.facts.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.facts.setSizeAdjustPolicy(QAbstractItemView.SizeAdjustPolicy.AdjustToContents)
        return self.facts

    def _build_progress(self) -> QWidget:
        """What is loading, each model's progress bar, and the last load's threads."""
        self.load_label = ElidedLabel()
        self.load_label.setStyleSheet("color:#555")
        self.progress = {role: QProgressBar() for role in ("target", "draft")}
        prog = QFormLayout()
        prog.setContentsMargins(0, 0, 0, 0)
        for role, bar in self.progress.items():
            bar.setRange(0, 1000)
            bar.setTextVisible(True)
            bar.setFormat(f"{role} %p%")
            bar.setMaximumHeight(16)
            prog.addRow(bar)
        self._progress_box = QWidget()
        pl = QVBoxLayout(self._progress_box)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.load_label)
        self.engine_label = QLabel()             # threads and weight repacking of the last load
        self.engine_label.setWordWrap(True)
        self.engine_label.setStyleSheet("color:#555")
        self.engine_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.engine_label.setVisible(False)
        pl.addWidget(self.engine_label)
        pl.addLayout(prog)
        return self._progress_box

    def _build_advanced(self) -> None:
        """The Advanced toggle and what it shows: threads, GPU layers, repacking, placement."""
        self.advanced_toggle = QToolButton(text="Advanced: threads, devices, RPC, repacking")
        self.advanced_toggle.setCheckable(True)
        self.advanced_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.advanced_toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.advanced_toggle.setAutoRaise(True)
        self.advanced = QWidget()
        adv = QGridLayout(self.advanced)
        adv.setContentsMargins(16, 0, 0, 0)
        adv.addWidget(QLabel(""), 0, 0)
        adv.addWidget(QLabel("target"), 0, 1)
        adv.addWidget(QLabel("draft"), 0, 2)
        self.threads = {r: QSpinBox() for r in ("target", "draft")}
        self.gpu_layers = {r: QSpinBox() for r in ("target", "draft")}
        for c, role in enumerate(("target", "draft"), start=1):
            self.threads[role].setRange(0, 256)
            self.threads[role].setSpecialValueText("auto")
            self.threads[role].setToolTip(f"CPU threads for the {role}; auto: the count that decodes "
                                          "fastest now, followed during a run as the machine's "
                                          "load changes (all cores when it is idle, fewer when "
                                          "other work takes a core), as in the command line")
            self.gpu_layers[role].setRange(0, 999)
            self.gpu_layers[role].setToolTip(f"layers of the {role} offloaded to the GPU (-ngl)")
            adv.addWidget(self.threads[role], 1, c)
            adv.addWidget(self.gpu_layers[role], 2, c)
        adv.addWidget(QLabel("threads"), 1, 0)
        adv.addWidget(QLabel("GPU layers"), 2, 0)
        self.repack = QComboBox()
        self.repack.addItems(REPACK_MODES)
        self.repack_tip = ("llama.cpp's weight repacking (--repack) for both models. auto: off where "
                           "the CPU reports AMX (its repacked quantized kernels crash, llama.cpp issue "
                           "20824), on elsewhere; off is llama.cpp's --no-repack")
        self.repack.setToolTip(self.repack_tip)
        adv.addWidget(QLabel("weight repacking"), 3, 0)
        adv.addWidget(self.repack, 3, 1, 1, 2)
        from .placement_panel import PlacementBox      # devices, rpc-server endpoints
        self.placement = PlacementBox()
        adv.addWidget(self.placement, 4, 0, 1, 3)
        for role in ("target", "draft"):                # -ngl all: -1
            self.gpu_layers[role].setRange(-1, 999)
            self.gpu_layers[role].setSpecialValueText("all")
            self.placement.devices[role].currentTextChanged.connect(
                lambda text, r=role: self._device_chosen(r, text))
            self.placement.devices[role].currentTextChanged.connect(self.placement_changed)
            self.gpu_layers[role].valueChanged.connect(self.placement_changed)
        self.placement.rpc_edit.textChanged.connect(self.placement_changed)
        self.advanced_toggle.toggled.connect(self._toggle_advanced)
        self._toggle_advanced(False)

    # ------------------------------------------------------------------ pair
    def pair(self) -> tuple[Path | None, Path | None]:
        t, d = self.target_edit.text().strip(), self.draft_edit.text().strip()
        return (Path(t) if t else None, Path(d) if d else None)

    def set_pair(self, target, draft, *, notify: bool = True) -> None:
        self.target_edit.setText(str(target) if target else "")
        self.draft_edit.setText(str(draft) if draft else "")
        self._edited(force=True, notify=notify)

    def _edited(self, force: bool = False, notify: bool = True) -> None:
        now = self.pair()
        if now != self._last or force:
            self._last = now
            if notify:
                self.pair_changed.emit()

    def browse_target(self) -> None:
        """Choose the target model in a file dialog."""
        self._browse(self.target_edit, "Choose the target model")

    def browse_draft(self) -> None:
        self._browse(self.draft_edit, f"Choose the {self.head_slot or 'draft model'}")

    def set_head_slot(self, head: str) -> None:
        """The draft slot as a head type reads it ("EAGLE-3 head", "DFlash head", "DSpark
        head": drafter_panel.head_slot), or as a draft model's ("")."""
        if head == self.head_slot:
            return
        self.head_slot = head
        what = head or "draft model"
        self.draft_label.setText("Head" if head else "Draft")
        self.draft_label.setToolTip(HEAD_TIPS.get(head, "The draft model draft-simple drafts with"))
        self.draft_edit.setPlaceholderText(f"{what} (.gguf) — drop a file here")
        self.draft_browse.setToolTip(f"Choose the {what}")
        self.facts.setHorizontalHeaderLabels(["target", "head" if head else "draft"])

    def _browse(self, edit: QLineEdit, title: str) -> None:
        start = edit.text() or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, title, start, GGUF_FILTER)
        if path:
            edit.setText(path)
            self._edited(force=True)

    def set_recent(self, pairs: list[tuple[str, str]]) -> None:
        self.recent.clear()
        self.recent.addItem("Recent pairs…")
        for t, d in pairs:
            self.recent.addItem(f"{Path(t).name}  +  {Path(d).name}", (t, d))
            self.recent.setItemData(self.recent.count() - 1, f"{t}\n{d}", Qt.ItemDataRole.ToolTipRole)
        self.recent.setEnabled(bool(pairs))

    def _recent_chosen(self, index: int) -> None:
        data = self.recent.itemData(index)
        self.recent.setCurrentIndex(0)
        if data:
            self.set_pair(Path(data[0]), Path(data[1]))

    # ------------------------------------------------------------------ verdict and facts
    def set_checking(self) -> None:
        self.verdict.setText("<span style='color:#666'>Checking the pair…</span>")

    def set_target_mtp(self, blocks: int | None) -> None:
        """The target's MTP (nextn) blocks as its header counts them (None: not read yet); a
        target with some is offered to draft-mtp, which needs no draft model."""
        self._mtp_blocks = blocks
        color = drafter_colors("draft-mtp")[0]
        self.mtp_line.setText(
            f"<span style='color:{color}'>MTP blocks: {blocks} — draft-mtp drafts with them, no "
            f"draft model needed: <a href='draft-mtp'>draft with its own MTP layers</a></span>"
            if blocks else "")
        self.mtp_line.setToolTip("The target carries MTP (multi-token prediction, nextn) blocks "
                                 "after its layers; llama.cpp's draft-mtp drafts with them"
                                 if blocks else "")
        self.mtp_line.setVisible(bool(blocks))

    def target_mtp_blocks(self) -> int | None:
        """The target's MTP blocks, as last read (None: not read yet)."""
        return self._mtp_blocks

    def set_verdict_text(self, text: str, color: str = "#666") -> None:
        self.verdict.setText(f"<span style='color:{color}'>{breakable(html.escape(text))}</span>")

    def set_no_draft(self) -> None:
        """A target without a draft model: not a dead end."""
        self.verdict.setText("<span style='color:#555'>No draft model chosen: draft-simple needs one."
                             f"</span><br><span style='color:#555'>{NGRAM_OFFER}</span>")
        self.verdict.setToolTip("")

    def set_report(self, report) -> None:
        cross = report.cross
        if report.compatible:       # green where it may pay; amber where it fits but may not
            color = "#15803d" if report.cost.may_pay else "#a15c00"
            head = (f"<b style='color:{color}'>✔ {breakable(html.escape(report.verdict))}</b>")
        elif report.cross_modes:     # llama.cpp's verdict, then what SpecScope drafts with
            llama, _, ours = report.verdict.partition(". SpecScope")
            head = (f"<b style='color:#b42318'>✘ {breakable(html.escape(llama))}</b><br>"
                    f"<b style='color:#15803d'>✔ SpecScope{html.escape(ours)}</b> "
                    f"<span style='color:#555'>(Drafter ▸ draft-simple ▸ vocab; auto: {cross.mode})"
                    "</span>")
        else:
            head = f"<b style='color:#b42318'>✘ {breakable(html.escape(report.verdict))}</b>"
        items = []
        for r in report.rules:
            if not r.passed:
                items.append(f"<li style='color:#b42318'>{breakable(html.escape(r.message))}</li>")
        if report.cost.warning:
            items.append(f"<li style='color:#a15c00'>{breakable(html.escape(report.cost.warning))}</li>")
        for note in report.notes:
            if "may" in note or "differ" in note or "checkpoint" in note:
                items.append(f"<li style='color:#555'>{breakable(html.escape(note))}</li>")
        passed = sum(r.passed for r in report.rules)
        what, model = ("head rules", "head") if report.draft.head else ("vocabulary rules", "draft")
        detail = f"<br><span style='color:#555'>{passed}/{len(report.rules)} {what} pass"
        detail += f"; f ≈ {report.cost.f:.3f} ({model} size ÷ target size)</span>" if report.cost.f < 100 else "</span>"
        if cross is not None:
            cost = "; ".join(f"{m} ≈ {cross.per_round_s[m] * 1e6:.0f} µs" for m in cross.modes)
            detail += (f"<br><span style='color:#555'>Shared tokens: {cross.target_share:.1%} of the "
                       f"target's, {cross.draft_share:.1%} of the draft's"
                       + (f"; re-tokenization per round: {cost}" if cost else "") + "</span>")
            items += [f"<li style='color:#555'>{breakable(html.escape(s))}</li>" for s in cross.specials[:3]]
        offer = ("" if report.compatible or report.cross_modes else
                 f"<br><span style='color:#555'>No draft fits? {NGRAM_OFFER}</span>")
        self.verdict.setText(head + detail + (f"<ul style='margin:2px 0 0 -20px'>{''.join(items)}</ul>"
                                              if items else "") + offer)
        self.verdict.setToolTip("\n".join([r.message for r in report.rules] + list(report.notes)
                                          + list(cross.specials if cross else ())))
        for col, m in enumerate((report.target, report.draft)):
            self.set_model_facts(col, m)

    def set_model_facts(self, col: int, m) -> None:
        """One column of the facts table (0 target, 1 draft) from the doctor's ModelSummary."""
        dominant = max(m.tensor_types.items(), key=lambda kv: kv[1].get("n_params", 0))[0] \
            if m.tensor_types else (m.file_type or "–")
        vals = (m.architecture or "–", human_count(m.n_params), human_bytes(m.file_size),
                f"{m.file_type or dominant}" + (f" ({dominant})" if m.file_type and dominant != m.file_type else ""),
                f"{m.bits_per_weight:.2f}" if m.bits_per_weight else "–",
                f"{m.context_length:,}" if m.context_length else "–")
        for row, v in enumerate(vals):
            item = QTableWidgetItem(v)
            item.setToolTip(m.path if row == 0 else v)
            self.facts.setItem(row, col, item)

    def clear_facts(self) -> None:
        for col in range(2):
            for row in range(len(FACT_ROWS)):
                self.facts.setItem(row, col, QTableWidgetItem("–"))

    def set_load_facts(self, facts: dict) -> None:
        """Facts from the loaded models, for what the doctor could not say, and whether
        llama.cpp repacked the weights (and why)."""
        lines = [threads_line(facts["threads"])] if facts.get("threads") else []
        if facts.get("repack_reason"):
            why = f"Weight {facts['repack_reason']}"
            lines.append(why)
            self.repack.setToolTip(f"{self.repack_tip}.\nLast load: {why}")
        self.engine_label.setText("\n".join(lines))
        self.engine_label.setVisible(bool(lines))
        for col, role in enumerate(("target", "draft")):
            f = facts.get(role)
            if not f:
                continue
            item = self.facts.item(1, col)
            if item is None or item.text() == "–":
                self.facts.setItem(1, col, QTableWidgetItem(human_count(f["n_params"])))
            item = self.facts.item(2, col)
            if item is None or item.text() == "–":
                self.facts.setItem(2, col, QTableWidgetItem(human_bytes(f["size_bytes"])))

    # ------------------------------------------------------------------ loading
    def set_load_state(self, state: str, text: str = "") -> None:
        """idle | loading | loaded"""
        loading = state == "loading"
        if loading:
            self.engine_label.setVisible(False)
        for bar in self.progress.values():
            bar.setVisible(loading)
            if loading:
                bar.setValue(0)
        self.load_label.setText(text)
        self.load_label.setVisible(bool(text))

    def loading(self) -> bool:
        """The load progress bars are showing."""
        return not self.progress["target"].isHidden()

    def end_loading(self, text: str | None = None) -> None:
        """Hide the progress bars (if shown), keeping the load line or showing ``text``."""
        if self.loading():
            self.set_load_state("idle", self.load_label.text() if text is None else text)

    def set_progress(self, role: str, fraction: float) -> None:
        bar = self.progress.get(role)
        if bar is not None:
            bar.setVisible(True)
            bar.setValue(int(fraction * 1000))

    # ------------------------------------------------------------------ advanced
    def _toggle_advanced(self, on: bool) -> None:
        self.advanced.setVisible(on)
        if on and self.placement.table.text().endswith("not asked yet"):
            self.placement.refresh()
        self.advanced_toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)

    def _device_chosen(self, role: str, text: str) -> None:
        """A device named for a model whose layers all stay on the CPU: offload them all."""
        from .placement_panel import DEFAULT, LOCAL
        if text not in (DEFAULT, LOCAL) and self.gpu_layers[role].value() == 0:
            self.gpu_layers[role].setValue(-1)

    def engine_kwargs(self) -> dict:
        """As saved: 0 threads means auto."""
        return dict(target_threads=self.threads["target"].value(),
                    draft_threads=self.threads["draft"].value(),
                    target_gpu_layers=self.gpu_layers["target"].value(),
                    draft_gpu_layers=self.gpu_layers["draft"].value(),
                    repack=self.repack.currentText(), **self.placement.engine_kwargs())

    def set_engine_kwargs(self, kw: dict) -> None:
        self.threads["target"].setValue(int(kw.get("target_threads", 0)))
        self.threads["draft"].setValue(int(kw.get("draft_threads", 0)))
        self.gpu_layers["target"].setValue(int(kw.get("target_gpu_layers", 0)))
        self.gpu_layers["draft"].setValue(int(kw.get("draft_gpu_layers", 0)))
        repack = kw.get("repack", "auto")
        self.repack.setCurrentText(repack if repack in REPACK_MODES else "auto")
        self.placement.set_engine_kwargs(kw)
