"""The window's session wiring: save, open (menu, drag and drop, ``specscope FILE.jsonl``),
the autosave of the last run, and re-running a recording whose models are present.

A mixin of ``MainWindow``: the session itself (core/session/session.py) owns the run; this module
only moves it between files and the window's views. Where the autosave lives:
``$SPECSCOPE_DATA_DIR/last-session.jsonl``, else the platform's per-user application data
folder (Linux: ``~/.local/share/SpecScope/SpecScope/last-session.jsonl``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QFileDialog

log = logging.getLogger("specscope.app")

AUTOSAVE_NAME = "last-session.jsonl"
SESSION_FILTER = "SpecScope sessions (*.jsonl);;All files (*)"


def data_dir() -> Path:
    env = os.environ.get("SPECSCOPE_DATA_DIR")
    if env:
        return Path(env)
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base) if base else Path.home() / ".specscope"


def rerun_verdict(recorded, rerun) -> tuple[bool, str]:
    """Did ``rerun`` (a Run) reproduce ``recorded``: the same tokens, the same per-round
    counts (drafted, accepted, emitted, mode)? And a sentence saying so."""
    a, b = recorded.tokens, rerun.tokens
    counts = [(len(e.drafted), e.n_accepted, len(e.emitted), e.mode) for e in recorded.events]
    again = [(len(e.drafted), e.n_accepted, len(e.emitted), e.mode) for e in rerun.events]
    if a == b and counts == again:
        return True, (f"The re-run matched the recording: the same {len(a)} tokens and the same "
                      f"counts in each of its {len(counts)} rounds.")
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return False, (f"The re-run differs from the recording: the tokens part at generated "
                       f"token {at} ({len(a)} recorded, {len(b)} now).")
    r = next((i for i, (x, y) in enumerate(zip(counts, again)) if x != y), min(len(counts), len(again)))
    was = counts[r] if r < len(counts) else None
    now = again[r] if r < len(again) else None
    def words(c):
        return "no round" if c is None else f"{c[0]} drafted, {c[1]} accepted"
    return False, (f"The re-run made the same {len(a)} tokens, but its rounds differ from round "
                   f"{r} on (recorded: {words(was)}; now: {words(now)}).")


class SessionActions:
    """Session files in the main window (see the module docs)."""

    _rerun_ready = False             # the shown recording's models are present (header hashes)
    _rerun_of = None                 # the recorded session a running re-run is checked against
    rerun_result: tuple[bool, str] | None = None

    def run_settings(self, req):
        from specscope.core.session.session import RunSettings
        return RunSettings(str(req.target), str(req.draft) if req.draft else None,
                           req.engine_settings, req.spec, req.sampler, req.n_predict, req.prompt,
                           req.chat, req.system)

    @property
    def autosave_path(self) -> Path:
        return data_dir() / AUTOSAVE_NAME

    @staticmethod
    def session_paths(mime) -> list[Path]:
        if not mime.hasUrls():
            return []
        return [Path(u.toLocalFile()) for u in mime.urls()
                if u.isLocalFile() and u.toLocalFile().lower().endswith(".jsonl")]

    # ------------------------------------------------------------------ save
    def save_session_dialog(self) -> None:
        if self.session is None or not self.events:
            self.banner.show_message("info", "There is no run to save yet: Run or Baseline first.")
            return
        path = self._save_path("Save the session", "specscope-session.jsonl", SESSION_FILTER)
        if path:
            self._export(lambda: self.session.save(path), path)

    def session_finished(self, session) -> None:
        """After a live run of ``session``: the autosave (a baseline with the speculative run
        it measures), and a re-run's verdict."""
        last = self.workbench.last_spec
        keep = last if session.kind == "baseline" and last is not None \
            and last.baseline is session.baseline else session
        try:
            keep.save(self.autosave_path)
        except Exception as exc:  # noqa: BLE001 - an autosave never interrupts
            log.warning("the autosave to %s failed: %s", self.autosave_path, exc)
        recorded, self._rerun_of = self._rerun_of, None
        if recorded is not None:
            self.rerun_result = rerun_verdict(recorded.run, session.run)
            ok, sentence = self.rerun_result
            self.banner.show_message("info" if ok else "warning", sentence)

    # ------------------------------------------------------------------ open
    def open_session_dialog(self) -> None:
        start = self.settings.value("export/dir") or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "Open a session", start, SESSION_FILTER)
        if path:
            self.open_session(Path(path))

    def open_session(self, path) -> bool:
        """Show a recorded session. A bad file: one banner line; what was shown stays."""
        from specscope.core.errors import SpecScopeError
        from specscope.core.session.session import Session
        if self.mode != "idle":
            self.banner.show_message("info", "Stop the run before opening a session.")
            return False
        try:
            session = Session.load(path)
        except SpecScopeError as exc:
            self.banner.show_message("error", f"The session cannot be opened: {exc}")
            return False
        self.workbench.adopt(session)
        self.show_session(session)
        return True

    def show_session(self, session) -> None:
        """Token view, plots, stats bar, the last round explained and the cost panel, from the
        session alone (no model)."""
        from .token_view import legend_html
        self.shown_request = None
        self.session = session
        self._clear_views()
        self.params.show_run_settings(session.settings)    # the controls as the recording ran
        self.prompt.show_run_settings(session.settings)
        spec = session.settings.spec
        self.token_view.begin(session.prompt_text, session.vocab, session.prompt_tokens)
        self.legend.setText(legend_html(spec.types if spec is not None else ()))
        self.token_view.append_events(session.run.events)
        self.scrubber.show_at(len(session.run.events), len(session.run.events))
        self._stats_stale = True
        self._fold()
        self._panels_dirty = True
        self._dirty_tabs = self._panel_tabs()
        self._update_panels()
        if session.kind == "spec":
            self._show_measured()
        self.stats_bar.set_state(f"Recording: {Path(session.path).name}")
        self.pair_panel.set_load_state("idle", self.recording_line(session))
        self._update_buttons()

    def recording_line(self, session) -> str:
        """The pair panel's line about a recording: are its models present (header hashes)?"""
        present = session.models_present()
        self._rerun_ready = all(present.values())
        if self._rerun_ready:
            return "Recording: its models are present; ⟳ Re-run runs it again."
        missing = [Path(session.models[r].path).name for r, ok in present.items() if not ok]
        if len(missing) == len(present):
            return "Recording: its models are not present (no model is needed to show it)."
        return f"Recording: {' and '.join(missing)} not present."

    @property
    def can_rerun(self) -> bool:
        s = self.session
        return self.mode == "idle" and s is not None and s.is_recording and self._rerun_ready

    def rerun_clicked(self) -> None:
        """Run the shown recording again with its own settings and models."""
        if not self.can_rerun:
            return
        s = self.session
        draft = s.models.get("draft")
        req = self._request_of(s, s.kind, Path(s.models["target"].path),
                               Path(draft.path) if draft is not None else None)
        self._rerun_of = s
        self.rerun_result = None
        self._start(req)

    def remeasure_baseline(self) -> None:
        """Measure the baseline of the speculative run shown again, with that run's settings:
        it runs beside the run (the views keep it) and replaces a stale baseline."""
        s = self.session
        if self.mode != "idle" or s is None or s.kind != "spec" or self._sweep_running():
            return
        st = s.settings
        self._start(self._request_of(s, "baseline", Path(st.target),
                                     Path(st.draft) if st.draft else None))

    def _request_of(self, session, kind: str, target: Path, draft: Path | None):
        """A RunRequest of ``kind`` with ``session``'s settings (not the controls')."""
        from .worker import RunRequest
        st = session.settings
        self._run_id += 1
        return RunRequest(self._run_id, kind, target, draft, st.engine, st.prompt,
                          st.spec if kind == "spec" else None, st.sampler, st.n_predict,
                          chat=st.chat, system=st.system or "")
