"""Copy command: the llama.cpp command line for the run the controls describe (the target, the
draft, the spec type(s), n_max, n_min, p_min, the n-gram sizes, the threads), spelled by
core/measure/command_line.py as the advisor's recommendations are. What llama.cpp has no flag
for (SpecScope's own draft-length policies, the ratio rule, a draft of another vocabulary) is
left out of the line and said under the button."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QSizePolicy, QToolButton, QVBoxLayout, QWidget

__all__ = ["COPY_TOOLS", "CopyCommand"]

COPY_TOOLS = ("llama-server", "llama-cli")


class CopyCommand(QWidget):
    """The button (llama-server; its menu: llama-cli too) and a line saying what was copied,
    for the pair and threads of ``pair_panel``, the drafter settings of ``params`` and the
    doctor's report on the pair (``pair_report()``)."""

    copied = Signal(str, str)          # tool, the command line

    def __init__(self, pair_panel, params, pair_report, parent=None):
        super().__init__(parent)
        self.pair_panel, self.params, self.pair_report = pair_panel, params, pair_report
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 0, 8, 0)
        top = QHBoxLayout()
        self.button = QToolButton()
        self.button.setText("Copy command")
        self.button.setToolTip("Copy the llama-server command line for these settings (the menu: "
                               "llama-cli): the target, the draft, the spec type(s), n_max, p_min, "
                               "the n-gram sizes and the threads")
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        menu = QMenu(self.button)
        for tool in COPY_TOOLS:
            menu.addAction(f"Copy the {tool} command", lambda t=tool: self.copy(t))
        self.button.setMenu(menu)
        self.button.clicked.connect(lambda: self.copy(COPY_TOOLS[0]))
        top.addWidget(self.button)
        top.addStretch(1)
        lay.addLayout(top)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note.setStyleSheet("color:#666; font-size:small")
        self.note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.note.setVisible(False)
        lay.addWidget(self.note)

    def command(self, tool: str = COPY_TOOLS[0]) -> tuple[str, list[str]]:
        """(the command line, what of the settings it leaves out, in words)."""
        from specscope.core.measure.command_line import command_line, left_out
        target, draft = self.pair_panel.pair()
        spec = self.params.spec_settings()
        spec = spec if spec.types else None             # no type checked: the target alone
        threads = self.pair_panel.engine_kwargs()
        missing = left_out(spec, tool)
        if spec is not None and spec.needs_draft:
            report = self.pair_report()
            if draft is None:
                missing.append("the draft model (none is chosen)")
            elif report is not None and not report.compatible:
                missing.append("a draft llama.cpp refuses (another vocabulary: SpecScope translates it)")
        if not threads["target_threads"]:
            missing.append("the threads SpecScope picks on auto (set them in the Models box to pass -t)")
        return command_line(tool, target or "TARGET.gguf", spec, draft, threads["target_threads"],
                            threads["draft_threads"]), missing

    def copy(self, tool: str = COPY_TOOLS[0]) -> str:
        line, missing = self.command(tool)
        QGuiApplication.clipboard().setText(line)
        self.note.setText(f"Copied: <tt>{escape(line)}</tt>"
                          + (f"<br>Not in it: {escape('; '.join(missing))}." if missing else ""))
        self.note.setToolTip(line)
        self.note.setVisible(True)
        self.copied.emit(tool, line)
        return line
