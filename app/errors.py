"""One error path: a non-blocking banner in the window, the traceback behind
"Details", and a log file in the user's log directory.

Worker failures, load failures and unexpected exceptions (``sys.excepthook``)
all end in :meth:`MessageBanner.show_error`. A repeat of the message on
screen only bumps a counter, so a failing timer cannot flood the user.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import traceback
from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths, Qt, Signal
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel,
                               QPlainTextEdit, QPushButton, QVBoxLayout)

log = logging.getLogger("specscope.app")
LOG_FILE_NAME = "specscope.log"
_STYLES = {
    "error": ("#fdecea", "#b42318", "#7a1b12", "✘"),
    "warning": ("#fff4e0", "#c47a00", "#6b4300", "⚠"),
    "info": ("#e8f1fd", "#3b6fd8", "#1e3a8a", "ℹ"),
}


def log_dir() -> Path:
    """$SPECSCOPE_LOG_DIR, else the platform's per-user state/log directory."""
    env = os.environ.get("SPECSCOPE_LOG_DIR")
    if env:
        return Path(env)
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.StateLocation)
    if not base:
        base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
    return Path(base or Path.home() / ".specscope") / "log"


_handler: logging.Handler | None = None


def setup_logging() -> Path:
    """Send specscope.* log records (warnings and up) to the log file; return its path."""
    global _handler
    path = log_dir() / LOG_FILE_NAME
    if _handler is not None and getattr(_handler, "baseFilename", None) == str(path):
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=1_000_000, backupCount=2,
                                                       encoding="utf-8", delay=True)
    except OSError:
        return path
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger("specscope")
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    llama_log = logging.getLogger("specscope.llama")
    if llama_log.level == logging.NOTSET:
        llama_log.setLevel(logging.WARNING)      # llama.cpp's warnings and errors, not its chatter
    _handler = handler
    return path


def close_logging() -> None:
    global _handler
    if _handler is not None:
        logging.getLogger("specscope").removeHandler(_handler)
        _handler.close()
        _handler = None


def describe(exc: BaseException) -> str:
    """A sentence naming the problem: our errors' messages are written for users."""
    from specscope.core.errors import SpecScopeError
    if isinstance(exc, SpecScopeError):
        return str(exc)
    return f"Unexpected error: {type(exc).__name__}: {exc}"


def run_failure_hint(exc: BaseException) -> str:
    """What to do when a run failed with ``exc`` ("" when there is nothing to add)."""
    from specscope.core.errors import IncompatiblePairError
    if isinstance(exc, IncompatiblePairError):
        return "Choose another draft, or press Baseline to run the target alone"
    return ""


class DetailsDialog(QDialog):
    def __init__(self, title: str, message: str, details: str, log_path: Path | None, parent=None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(760, 420)
        lay = QVBoxLayout(self)
        self.label = label = QLabel(message)
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(label)
        self.text = text = QPlainTextEdit(details)
        text.setReadOnly(True)
        text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        lay.addWidget(text, 1)
        if log_path is not None:
            where = QLabel(f"Also written to {log_path}")
            where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            where.setStyleSheet("color:#555")
            lay.addWidget(where)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)

    def set_content(self, message: str, details: str) -> None:
        """A newer message replaces the one shown."""
        self.label.setText(message)
        self.text.setPlainText(details)


class MessageBanner(QFrame):
    """A dismissable strip above the token view: the message, Details, ✕."""

    dismissed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 6, 6)
        self.icon = QLabel()
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_button = QPushButton("Details…")
        self.close_button = QPushButton("✕")
        self.close_button.setFlat(True)
        self.close_button.setFixedWidth(28)
        self.close_button.setToolTip("Dismiss")
        lay.addWidget(self.icon)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.details_button)
        lay.addWidget(self.close_button)
        self.details_button.clicked.connect(self.show_details)
        self.close_button.clicked.connect(self.dismiss)
        self.message = ""
        self.details = ""
        self.level = ""
        self.count = 0
        self.log_path: Path | None = None
        self.dialog: DetailsDialog | None = None
        self.hide()

    def show_message(self, level: str, message: str, details: str = "") -> None:
        if self.isVisible() and message == self.message and level == self.level:
            self.count += 1
        else:
            self.count = 1
        self.level, self.message, self.details = level, message, details
        bg, border, fg, icon = _STYLES[level]
        self.setStyleSheet(f"#banner {{ background:{bg}; border:1px solid {border}; border-radius:6px; }}"
                           f" #banner QLabel {{ color:{fg}; }}")
        self.icon.setText(icon)
        self.label.setText(message + (f"  (×{self.count})" if self.count > 1 else ""))
        self.details_button.setVisible(bool(details))
        if self.dialog is not None and self.dialog.isVisible():   # it shows the newest message
            if details:
                self.dialog.set_content(message, details)
            else:
                self.dialog.close()
        self.show()

    def show_error(self, exc: BaseException, tb: str = "", context: str = "", hint: str = "") -> None:
        message = describe(exc)
        if context:
            message = f"{context}: {message}"
        if hint:
            message = f"{message}. {hint}"
        tb = tb or "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        log.error("%s\n%s", message, tb.rstrip())
        # a setting or a prompt the user can change says all there is in its line: no
        # traceback behind Details (the log keeps it)
        from specscope.core.errors import ConfigError, ContextFullError
        plain = isinstance(exc, (ConfigError, ContextFullError))
        self.show_message("error", message, "" if plain else tb)

    def show_details(self) -> None:
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.set_content(self.message, self.details)
            self.dialog.raise_()
            return
        self.dialog = DetailsDialog("SpecScope — details", self.message, self.details, self.log_path,
                                    self.window())
        self.dialog.setModal(False)
        self.dialog.show()

    def dismiss_if(self, context: str) -> None:
        """Hide the banner if it shows an error about ``context`` (its message starts with it):
        that thing succeeded since, and the error would read as if the new action failed."""
        if self.isVisible() and self.level == "error" and self.message.startswith(context):
            self.dismiss()

    def dismiss(self) -> None:
        self.hide()
        self.count = 0
        self.message = ""
        self.dismissed.emit()


def format_uncaught(etype, value, tb) -> str:
    """The traceback of an uncaught exception. One that Qt raises itself, calling a slot with
    the wrong arguments (a signal connected to a method that takes others), has no Python frame
    of its own: then the Python stack that led to the call (what emitted the signal), so the
    details never shrink to one line."""
    if tb is not None:
        return "".join(traceback.format_exception(etype, value, tb))
    stack = traceback.format_stack()[:-2]          # not this function and the hook
    return ("Traceback (most recent call last; raised by Qt calling a slot, after these "
            "Python frames):\n" + "".join(stack)
            + "".join(traceback.format_exception_only(etype, value)))


class ExceptHook(QObject):
    """Routes uncaught exceptions to the banner (and the log) instead of stderr only."""

    caught = Signal(object, str)

    def __init__(self):
        super().__init__()
        self._previous = None

    def install(self) -> None:
        self._previous = sys.excepthook
        sys.excepthook = self._hook

    def uninstall(self) -> None:
        if self._previous is not None:
            sys.excepthook = self._previous
            self._previous = None

    def _hook(self, etype, value, tb) -> None:
        text = format_uncaught(etype, value, tb)
        if issubclass(etype, KeyboardInterrupt):
            if self._previous:
                self._previous(etype, value, tb)
            return
        sys.stderr.write(text)
        self.caught.emit(value, text)


def report_uncaught(banner: MessageBanner) -> ExceptHook:
    """Route uncaught exceptions (a failing slot, a timer) to ``banner`` and the log; the
    hook is installed (``uninstall`` puts the previous one back)."""
    hook = ExceptHook()
    hook.caught.connect(banner.show_error)
    hook.install()
    return hook
