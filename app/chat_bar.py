"""The chat bar under the generated text: reply to continue the conversation, regenerate or
edit the last turn, start a new one, and the conversation's figures.

The conversation itself is Qt-free (core/session/conversation.py ``ChatLog``); the window turns
the bar's signals into runs given the turns before (``RunRequest.history``/``turns``): the
engine keeps what the turn before left in both caches and prefills only what is new.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from .desktop import ElidedLabel

REPLY_MIN_PX = 180       # the reply box's least width


class ChatBar(QWidget):
    send = Signal(str, bool, bool)  # the message, whether it replaces the last one (an edit),
                                    # and whether its turn runs in step mode
    regenerate = Signal()
    edit = Signal()                # the window puts the last message in the box (start_edit)
    new_conversation = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 2, 0, 0)
        lay.setSpacing(2)
        row = QHBoxLayout()
        row.setSpacing(4)
        self.reply = QLineEdit()
        self.reply.setClearButtonEnabled(True)
        self.reply.returnPressed.connect(self._send)
        self.send_button = QPushButton("Send")
        self.send_button.setToolTip("Continue the conversation with this message (Enter): the "
                                    "engine keeps both caches and prefills only what is new")
        self.send_button.clicked.connect(self._send)
        self.step_button = QPushButton("Step")
        self.step_button.setToolTip("Send it in step mode: one round at a time (Step or F10 for the "
                                    "next, Run to go on)")
        self.step_button.clicked.connect(lambda: self._send(step=True))
        self.regen_button = QPushButton("Regenerate")
        self.regen_button.setToolTip("Generate the last reply again (at temperature, with the next "
                                     "seed)")
        self.regen_button.clicked.connect(self.regenerate)
        self.edit_button = QPushButton("Edit last")
        self.edit_button.setToolTip("Edit your last message here and send it: its reply is "
                                    "generated again, both caches cut back to where it changes")
        self.edit_button.clicked.connect(self.edit)
        self.new_button = QPushButton("New")
        self.new_button.setToolTip("Start a new conversation: the next Run begins it from the "
                                   "prompt box")
        self.new_button.clicked.connect(self._new)
        # on a narrow screen the buttons give way to their words and the box keeps room to type
        self.reply.setMinimumWidth(REPLY_MIN_PX)
        for w in (self.reply, self.send_button, self.step_button, self.regen_button,
                  self.edit_button, self.new_button):
            if w is not self.reply:
                w.setMinimumWidth(w.fontMetrics().horizontalAdvance(w.text()) + 16)
            row.addWidget(w, 1 if w is self.reply else 0)
        lay.addLayout(row)
        self.compact = False                    # presenter mode: no figures line (set_compact)
        self.figures = ElidedLabel()            # one line: it neither widens nor heightens the bar
        self.figures.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.figures.setStyleSheet("color:#555")
        lay.addWidget(self.figures)
        self.editing = ""              # the last message being edited ("" when not)
        self.show_state(0, False, False, "")

    def show_state(self, turns: int, free: bool, document: bool, figures: str) -> None:
        """``turns`` in the conversation shown as its last turn (0: none); ``free``: no run in
        progress; ``document``: the target has no chat template."""
        can = free and turns > 0
        self.reply.setEnabled(can)
        self.send_button.setEnabled(can)
        self.step_button.setEnabled(can)
        self.regen_button.setEnabled(can)
        self.edit_button.setEnabled(can)
        self.new_button.setEnabled(free and turns > 0)
        if self.editing and can:
            hint = "Edit your last message and press Enter: it replaces the last turn"
        elif turns == 0:
            hint = "Run a prompt first; then reply here to continue the conversation"
        elif document:
            hint = ("This target has no chat template: what you type continues the text as "
                    "one document (Enter)")
        else:
            hint = f"Reply to continue the conversation (turn {turns + 1}; Enter)"
        self.reply.setPlaceholderText(hint)
        if not can:
            self.editing = ""
        self.figures.set_full(figures)
        self.figures.setToolTip(figures)
        self.figures.setVisible(bool(figures) and not self.compact)

    def set_compact(self, on: bool) -> None:
        """Presenter mode: the figures line gives its room to the pictures (the stats bar
        has the same figures)."""
        self.compact = on
        self.figures.setVisible(bool(self.figures.full) and not on)

    def _send(self, step: bool = False) -> None:
        text = self.reply.text()
        if not text.strip() or not self.send_button.isEnabled():
            return
        editing, self.editing = bool(self.editing), ""
        self.reply.clear()
        self.send.emit(text, editing, step)

    def put_back(self, message: str, editing: bool) -> None:
        """A message whose turn did not run (refused, or its run failed): back in the box,
        unless something else was typed there since."""
        if not self.reply.text():
            self.reply.setText(message)
            self.editing = message if editing else ""

    def start_edit(self, message: str) -> None:
        self.editing = message
        self.reply.setText(message)
        self.reply.setFocus()
        self.reply.setPlaceholderText("Edit your last message and press Enter: it replaces the "
                                      "last turn")

    def _new(self) -> None:
        self.editing = ""
        self.reply.clear()
        self.new_conversation.emit()
