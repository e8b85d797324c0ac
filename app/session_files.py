"""The window's files: sessions saved and opened (menu, drag and drop, ``specscope FILE.jsonl``),
the autosave of the last run, two sessions compared, and the text, statistics and plots saved.

The run controller (core/session/controller.py) owns the session shown; this object only moves
sessions between files and the window, through the window's public methods. Where the autosave
lives: ``$SPECSCOPE_DATA_DIR/last-session.jsonl``, else the platform's per-user application
data folder (Linux: ``~/.local/share/SpecScope/SpecScope/last-session.jsonl``).
"""

from __future__ import annotations

import csv
import json
import logging
import os
from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths, Signal
from PySide6.QtWidgets import QFileDialog

from .pair_panel import gguf_paths

log = logging.getLogger("specscope.app")

AUTOSAVE_NAME = "last-session.jsonl"
SESSION_FILTER = "SpecScope sessions (*.jsonl);;All files (*)"


SESSION_UNOPENED = "The session cannot be opened"
PAIR_BUSY = "Stop the run before choosing another model: the pair cannot change during a run."


def data_dir() -> Path:
    env = os.environ.get("SPECSCOPE_DATA_DIR")
    if env:
        return Path(env)
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base) if base else Path.home() / ".specscope"


def session_paths(mime) -> list[Path]:
    """The session files (.jsonl) a drop carries."""
    if not mime.hasUrls():
        return []
    return [Path(u.toLocalFile()) for u in mime.urls()
            if u.isLocalFile() and u.toLocalFile().lower().endswith(".jsonl")]


class SessionFiles(QObject):
    """Files in the main window (see the module docs): the sessions of the run ``controller``,
    the pair and settings of the ``controls`` (controls.RunControls), the folder saved last in
    ``settings``; the dialogs open over ``parent``. What the window shows because of a file it
    hears through the signals; ``text()`` and ``export_plot(name, path)`` give what is saved."""

    message = Signal(str, str)               # level, message: for the banner
    resolved = Signal(str)                   # what failed before (a message's start) is fine now
    error = Signal(object, str)              # an exception, what failed
    saved = Signal(str)                      # a file was written (its path)
    compared = Signal(object)                # two sessions side by side (a SessionComparison)
    compare_failed = Signal(str)             # why a session could not be compared

    def __init__(self, controller, controls, settings, parent):
        super().__init__(parent)
        self.controller, self.controls, self.settings, self.parent_widget = (controller, controls,
                                                                             settings, parent)
        self.text = lambda: ""                              # the generated text (the token view)
        self.export_plot = lambda name, path: None          # a plot to a file (the plots tab)
        self.can_compare = lambda: False                    # the Compare sessions view is built

    @property
    def autosave_path(self) -> Path:
        return data_dir() / AUTOSAVE_NAME

    # ------------------------------------------------------------------ sessions
    def save_session_dialog(self) -> None:
        if not self.controller.shown_events:
            self.message.emit("info", "There is no run to save yet: Run or Baseline first.")
            return
        path = self.save_path("Save the session", "specscope-session.jsonl", SESSION_FILTER)
        if path:
            self.export(lambda: self.controller.session.save(path), path)

    def autosave(self, session) -> None:
        """After a live run of ``session``: the autosave (a baseline with the speculative run
        it measures). It never interrupts: a failure is logged."""
        last = self.controller.workbench.last_spec
        keep = last if session.kind == "baseline" and last is not None \
            and last.baseline is session.baseline else session
        try:
            keep.save(self.autosave_path)
        except Exception as exc:  # noqa: BLE001 - an autosave never interrupts
            log.warning("the autosave to %s failed: %s", self.autosave_path, exc)

    def open_session_dialog(self) -> None:
        start = self.settings.value("export/dir") or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self.parent_widget, "Open a session", start, SESSION_FILTER)
        if path:
            self.open_session(Path(path))

    def open_session(self, path) -> bool:
        """Show a recorded session. A bad file: one banner line; what was shown stays."""
        from specscope.core.errors import SpecScopeError
        from specscope.core.session.session import Session
        if self.controller.busy:
            self.message.emit("info", "Stop the run before opening a session.")
            return False
        try:
            session = Session.load(path)
        except SpecScopeError as exc:
            self.message.emit("error", f"{SESSION_UNOPENED}: {exc}")
            return False
        self.resolved.emit(SESSION_UNOPENED)   # an earlier file's error is not about this one
        self.controller.show(session)          # the views show it (app/shown_run.py)
        self.controls.params.show_run_settings(session.settings)     # the controls as it ran
        self.controls.prompt.show_run_settings(session.settings)
        self.controls.pair_panel.set_load_state("idle", self.recording_line())
        return True

    def recording_line(self) -> str:
        """The pair panel's line about the recording shown: are its models present?"""
        present, session = self.controller.present, self.controller.session
        if all(present.values()):
            return "Recording: its models are present; ⟳ Re-run runs it again."
        missing = [Path(session.models[r].path).name for r, ok in present.items() if not ok]
        if len(missing) == len(present):
            return "Recording: its models are not present (no model is needed to show it)."
        return f"Recording: {' and '.join(missing)} not present."

    def compare_session_dialog(self) -> None:
        """File → Compare with session…: the run shown against a recording, or two recordings."""
        from specscope.core.errors import SpecScopeError
        from specscope.core.session.comparison import compare_sessions
        from specscope.core.session.session import Session
        if not self.can_compare():
            return
        first = self.controller.session if self.controller.has_rounds else None
        picked = []
        for which in (["second"] if first is not None else ["first", "second"]):
            path, _ = QFileDialog.getOpenFileName(self.parent_widget, f"The {which} session to compare",
                                                  str(self.autosave_path.parent), SESSION_FILTER)
            if not path:
                return
            picked.append(path)
        try:
            loaded = [Session.load(p) for p in picked]
        except SpecScopeError as exc:
            why = f"The session cannot be compared: {exc}"
            self.message.emit("error", why)
            self.compare_failed.emit(why)
            return
        a, b = ([first] if first is not None else []) + loaded
        self.compared.emit(compare_sessions(a, b))

    def accepts(self, mime) -> bool:
        """A drop of model files or of a session file."""
        return bool(gguf_paths(mime) or session_paths(mime))

    def drop(self, mime) -> bool:
        """Dropped on the window: a session file opens; two models become the pair (the larger
        the target), one the target. True when the drop was taken."""
        sessions = session_paths(mime)
        if sessions:
            self.open_session(sessions[0])
            return True
        paths = gguf_paths(mime)
        if not paths:
            return False
        if self.controller.busy:     # the pair panel is off during a run: a drop is no way round
            self.message.emit("info", PAIR_BUSY)
            return True
        panel = self.controls.pair_panel
        if len(paths) >= 2:
            a, b = sorted(paths[:2], key=lambda p: p.stat().st_size if p.exists() else 0, reverse=True)
            panel.set_pair(a, b)
        else:
            panel.set_pair(paths[0], panel.pair()[1])
        return True

    # ------------------------------------------------------------------ exports
    def save_path(self, title: str, name: str, filters: str) -> Path | None:
        """Ask where to save (the folder saved last first); None when the user cancels."""
        start = self.settings.value("export/dir") or str(Path.home())
        path, _ = QFileDialog.getSaveFileName(self.parent_widget, title, str(Path(start) / name), filters)
        if not path:
            return None
        self.settings.setValue("export/dir", str(Path(path).parent))
        return Path(path)

    def export(self, fn, path: Path) -> None:
        """``fn()`` writes ``path``: said in the status bar, or its failure in the banner."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            self.error.emit(exc, f"Saving {path.name} failed")
            return
        self.saved.emit(str(path))

    def save_text_dialog(self) -> None:
        path = self.save_path("Save the generated text", "specscope.txt", "Text (*.txt);;All files (*)")
        if path:
            self.export(lambda: self.save_text(path), path)

    def save_stats_dialog(self, fmt: str) -> None:
        flt = "JSON (*.json)" if fmt == "json" else "CSV (*.csv)"
        path = self.save_path("Save the statistics", f"specscope-stats.{fmt}", flt)
        if path:
            self.export(lambda: self.save_stats(path), path)

    def save_plot_dialog(self, name: str) -> None:
        slug = name.lower().replace(" ", "-")
        path = self.save_path(f"Save “{name}”", f"{slug}.png", "PNG image (*.png);;SVG image (*.svg)")
        if path:
            self.export(lambda: self.export_plot(name, path), path)

    def save_text(self, path: Path) -> None:
        Path(path).write_text(self.text(), encoding="utf-8")

    def save_stats(self, path: Path) -> None:
        path = Path(path)
        doc = self.controller.stats_document()
        if path.suffix.lower() == ".csv":
            with path.open("w", newline="", encoding="utf-8") as fh:
                rows = doc["rounds"]
                fields = list(rows[0].keys()) if rows else ["index"]
                w = csv.DictWriter(fh, fieldnames=fields)
                w.writeheader()
                for row in rows:
                    w.writerow({k: (" ".join(str(x) for x in v) if isinstance(v, list) else v)
                                for k, v in row.items()})
        else:
            path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
