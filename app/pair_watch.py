"""The pair chosen in the window's pair panel: the doctor checks it on a thread of its own (its
verdict, the models' facts, the target's chat template and MTP blocks, whether draft-simple can
draft for it),
the recent pairs, preloading it into the engine, and what the engine worker says while it
loads it (progress, the crash probe's verdicts, a failed load)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from .errors import describe
from .window_settings import demo_pair_or_none, remember_pair
from .worker import DoctorWorker, start_thread

PRELOAD_DELAY_MS = 150           # load the pair this long after it is chosen (the window shown)
PAIR_UNCHECKED = "The pair cannot be checked"     # the banner's context of a bad file's error
LOAD_FAILED = "Loading the models failed"


def _pair_of(session) -> tuple[Path | None, Path | None]:
    """The (target, draft) paths a session ran with."""
    s = session.settings
    return Path(s.target), Path(s.draft) if s.draft else None


class PairWatch(QObject):
    """The pair of ``pair_panel``, checked and loaded: it follows the run ``controller`` and the
    engine ``worker``, keeps the recent pairs in ``settings``, and preloads a compatible pair
    with the request ``preload()`` makes (None: no preloading; ``closing()``: the window is
    closing). What the other views should show it says through its signals."""

    check_requested = Signal(int, str, str)
    preload_requested = Signal(object)       # a RunRequest whose pair the engine loads now
    report_shown = Signal(object)            # a PairReport, or an exception: the check is shown
    pair_switched = Signal(object, object)   # another pair chosen (target, draft)
    template_available = Signal(object)      # the target has a chat template (None: not known yet)
    target_mtp = Signal(object, object)      # the target's path and MTP blocks (None: not read yet)
    draft_kind = Signal(object, str, str)    # the draft slot's path, architecture, llama.cpp's refusal
    state = Signal(str)                      # what the window is doing now, for the stats bar
    message = Signal(str, str, str)          # level, message, details: for the banner
    error = Signal(object, str, str, str)    # an exception, its traceback, what failed, a hint
    resolved = Signal(str)                   # what failed before (an error's context) is fine now

    def __init__(self, pair_panel, controller, worker, settings, preload=None,
                 closing=lambda: False, parent=None):
        super().__init__(parent)
        self.panel, self.controller, self.settings = pair_panel, controller, settings
        self.preload, self.closing = preload, closing
        self.report = None                   # the doctor's PairReport of the pair (None: none yet)
        self.facts: dict = {}                # the loaded pair's facts (the worker's)
        self._check_id = 0
        self._facts_of: tuple[int, int] | None = None   # (check id, column): one file's facts alone
        self._cleared = None                 # the run cleared for another pair (its pair brings it back)
        self.doctor = DoctorWorker()
        self.doctor_thread = start_thread(self.doctor, "specscope-doctor")
        self.check_requested.connect(self.doctor.check)
        self.doctor.pair_checked.connect(self._checked)
        self.doctor.check_failed.connect(self._check_failed)
        panel = pair_panel
        panel.pair_changed.connect(self.changed)
        panel.demo_requested.connect(self.use_demo_pair)
        self.preload_requested.connect(worker.preload)
        worker.load_started.connect(self._load_started)
        worker.load_progressed.connect(panel.set_progress)
        worker.engine_loaded.connect(self._engine_loaded)
        worker.failed.connect(self._load_failed)
        worker.crashed.connect(self._model_crashed)
        controller.subscribe(self._heard)

    def use_demo_pair(self) -> None:
        demo = demo_pair_or_none()
        if demo is None:
            from specscope.core.errors import ConfigError
            try:
                from specscope.core.models.demo import demo_pair
                demo_pair()
            except ConfigError as exc:
                self.error.emit(exc, "", "", "")
            return
        self.panel.set_pair(*demo)

    def changed(self) -> None:
        """Another pair: the old one's run (or recording) is not this pair's; check this one."""
        panel, c = self.panel, self.controller
        t, d = panel.pair()
        shown = c.session
        if not c.busy:
            # the run cleared for another pair comes back with its pair (a bad file picked by
            # mistake loses nothing): its text, plots and conversation
            back = self._cleared if self._cleared is not None and _pair_of(self._cleared) == (t, d) \
                else None
            c.show(back)
            if shown is not None and not shown.is_recording:
                self._cleared = shown         # (this pair's run, back when this pair is)
            elif back is not None:
                self._cleared = None
            if back is not None:
                self.message.emit("info", "Back to the pair of the run shown before: it is shown "
                                          "again", "")
            elif shown is not None:           # said, not done silently
                what = (f"the recording {Path(shown.path).name} was closed (File ▸ Open session… "
                        "opens it again)" if shown.is_recording else
                        "the run shown was cleared; choosing its pair again shows it again (it "
                        "is also kept as last-session.jsonl: File ▸ Open session… opens it)")
                self.message.emit("info", f"Another pair: {what}", "")
                self.state.emit("Idle")
        self.pair_switched.emit(t, d)
        self.report = None
        self.template_available.emit(None)
        panel.clear_facts()
        panel.set_load_state("idle")
        self._update_draft_problem()
        self._show_mtp(None)
        if not t:
            panel.set_verdict_text("Choose a target model (and a draft model for draft-simple).")
            return
        self._check_id += 1
        if not d:
            panel.set_no_draft()
            # the doctor reads the target alone (as its own draft) for its facts and chat template
            self.check_requested.emit(self._check_id, str(t), str(t))
            self._preload_later()
            return
        panel.set_checking()
        self.check_requested.emit(self._check_id, str(t), str(d))

    @Slot(int, object)
    def _checked(self, req_id: int, report) -> None:
        if self._facts_of is not None and req_id == self._facts_of[0]:   # the good file of a bad pair
            if req_id == self._check_id:                                 # (and still this pair)
                self.panel.set_model_facts(self._facts_of[1], report.target)
            return
        if req_id != self._check_id:
            return
        panel = self.panel
        self.resolved.emit(PAIR_UNCHECKED)
        self.template_available.emit(report.target.has_chat_template)
        self._show_mtp(report.target.nextn_layers)    # the target's MTP blocks, from its header
        if panel.pair()[1] is None:          # a target alone: its facts, no verdict
            panel.set_model_facts(0, report.target)
            self.report_shown.emit(report)
            return
        self.report = report
        panel.set_report(report)
        self._update_draft_problem()
        if report.compatible or report.cross_modes:
            panel.set_recent(remember_pair(self.settings, *panel.pair()))
            self._preload_later()
        self.report_shown.emit(report)

    @Slot(int, object, str)
    def _check_failed(self, req_id: int, exc, tb: str) -> None:
        if req_id != self._check_id:
            return
        self.panel.set_verdict_text(describe(exc), "#b42318")
        self.error.emit(exc, tb, PAIR_UNCHECKED,
                        "The run shown before comes back when its pair is chosen again"
                        if self._cleared is not None else "")
        self.report_shown.emit(exc)
        self._facts_of_the_other(getattr(exc, "path", None))

    def _facts_of_the_other(self, bad: str | None) -> None:
        """One file of the pair is bad: the other's facts are still shown (the doctor reads a
        file as its own draft for them)."""
        t, d = self.panel.pair()
        if t is None or d is None or bad is None or Path(bad) not in (Path(t), Path(d)):
            return
        good, column = (d, 1) if Path(bad) == Path(t) else (t, 0)
        self._check_id += 1
        self._facts_of = (self._check_id, column)
        self.check_requested.emit(self._check_id, str(good), str(good))

    def _show_mtp(self, blocks: int | None) -> None:
        """The target's MTP blocks (None: not read yet), to the pair panel and the picker."""
        self.panel.set_target_mtp(blocks)
        self.target_mtp.emit(self.panel.pair()[0], blocks)

    def _update_draft_problem(self) -> None:
        """Tell the drafter picker what the draft slot holds: a model drafter that cannot draft
        with it says so there."""
        d, r = self.panel.pair()[1], self.report
        self.draft_kind.emit(d, (r.draft.architecture or "") if r is not None and d else "",
                             r.reason if r is not None and d and not r.compatible
                             and not r.cross_modes else "")

    # ------------------------------------------------------------------ loading
    def _preload_later(self) -> None:
        if self.preload is not None and not self.controller.busy:
            QTimer.singleShot(PRELOAD_DELAY_MS, self._preload)

    def _preload(self) -> None:
        c = self.controller
        if c.busy or c.sweeping or self.closing():
            return
        req = self.preload()
        if req is not None:
            self.preload_requested.emit(req)

    @Slot(str)
    def _load_started(self, text: str) -> None:
        self.panel.set_load_state("loading", text + "…")
        self.state.emit("Loading models…")

    @Slot(dict)
    def _engine_loaded(self, facts: dict) -> None:
        self.facts = facts
        self.resolved.emit(LOAD_FAILED)
        names = " + ".join(Path(facts[r]["path"]).name for r in ("target", "draft") if r in facts)
        self.panel.set_load_state("idle", f"Loaded {names} (context {facts['n_ctx']})")
        self.panel.set_load_facts(facts)
        s = self.controller.session
        if not self.controller.busy and not (s is not None and s.is_recording):
            self.state.emit("Ready")

    def _heard(self, what: str, payload) -> None:
        """After a run, the loaded pair's thread line says the counts its contexts hold now: the
        last round's (threads "auto" moves them as the load changes). A baseline's rounds run
        no draft; a draft on auto beside a target on auto shares its governor, so its count."""
        threads = self.facts.get("threads")
        events = payload.session.run.events if what == "finished" and payload.session else ()
        if not threads or not events:
            return
        target, draft = events[-1].threads
        if not draft and all(auto for _, auto in threads.values()):
            draft = target
        now = {"target": target, "draft": draft}
        self.facts["threads"] = {role: (now[role] or n, auto) for role, (n, auto) in threads.items()}
        self.panel.set_load_facts(self.facts)

    @Slot(int, object, str)
    def _load_failed(self, run_id: int, exc, tb: str) -> None:
        """A preload failed (a run's failure is the run controller's)."""
        if self.closing() or run_id != 0:
            return
        self.panel.set_load_state("idle", "The models could not be loaded.")
        self.error.emit(exc, tb, LOAD_FAILED, "")
        if not self.controller.busy:
            self.state.emit("Idle")

    @Slot(object, bool)
    def _model_crashed(self, verdict, retrying: bool) -> None:
        """A model crashed llama.cpp in the probe's child process (this window is unharmed)."""
        name = Path(verdict.model).name
        what = verdict.signal_name or verdict.status
        message = f"{name} crashed llama.cpp ({what}) in a test process"
        if verdict.cause:
            message += f". Likely cause: {verdict.cause}"
        message += (". Retrying once with repacking off." if retrying else
                    ". The window is unaffected; choose another model or other settings.")
        details = "\n".join([verdict.describe(), "", "Last llama.cpp log lines:", *verdict.log_tail])
        self.message.emit("warning" if retrying else "error", message, details)

    def shutdown(self, timeout_ms: int) -> bool:
        self.doctor_thread.quit()
        return self.doctor_thread.wait(timeout_ms)
