"""The threads behind the window: the engine worker and the pair doctor.

Both are QObjects moved to their own QThread, driven by queued signals, with a
small past-tense signal vocabulary. No GUI update happens in them: the engine
worker emits *batches* of round events (at most one batch per
``BATCH_PERIOD_S``); the window's run controller (core/session/controller.py)
takes them into the session at once, the views follow from a timer.

The engine lives on the worker thread from load to close: every llama.cpp
call, including the load with its progress callback, runs there, so the UI
thread never waits on llama.cpp. Stop is a ``threading.Event`` the window
sets directly (the engine checks it between rounds).
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QThread, Signal, Slot

from specscope.core.models.tokentext import TokenTable

if TYPE_CHECKING:       # the controller builds the requests (core/session/controller.py)
    from specscope.core.session.controller import RunRequest

BATCH_PERIOD_S = 0.05      # the worker emits at most one batch of events per 50 ms (by default)
UI_READY_TIMEOUT_S = 0.5   # the longest a run waits for the window to show its cleared panels


@dataclass(frozen=True)
class MeasureRequest:
    """A measurement in the window's own engine, on the engine's thread (the cost panel's
    calibration, the synthetic sweep): no second copy of the models. ``task(engine,
    progress(done, total, what), stop)`` returns the result (core/measure/progress.py)."""

    run_id: int                       # from the controller's run ids
    target: Path
    draft: Path | None
    engine_settings: object
    task: object
    stop: threading.Event = field(default_factory=threading.Event, compare=False)


@dataclass(frozen=True)
class RunStarted:
    run_id: int
    kind: str
    prompt_tokens: tuple[int, ...]
    prompt_text: str                  # what the target was given (with chat: the rendered template)
    vocab: TokenTable                 # the target's token pieces (plain Python, safe on any thread)
    calibration: tuple | None = None  # (Calibration, from_cache): what the cost policy predicts with


def _error_payload(exc: BaseException) -> tuple[BaseException, str]:
    return exc, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


class EngineWorker(QObject):
    """Loads the pair and runs generations on its own thread."""

    load_started = Signal(str)                  # a line: what is being loaded
    load_progressed = Signal(str, float)        # role ("target" | "draft"), fraction
    engine_loaded = Signal(dict)                # facts about both loaded models
    run_started = Signal(object)                # RunStarted
    events_ready = Signal(int, list)            # run_id, a batch of RoundEvents
    prefill_done = Signal(int, object)          # run_id, Prefill
    run_finished = Signal(int, str)             # run_id, finish ("eog", "stopped", ...)
    calibration_progressed = Signal(int, float)  # run_id, fraction: the cost policy calibrates the pair
    measure_progressed = Signal(int, float, str)    # run_id of a MeasureRequest, fraction, what
    measured = Signal(int, object)                  # run_id, the task's result
    measure_failed = Signal(int, object, str)       # run_id, exception (None: stopped), traceback
    step_paused = Signal(int)                   # run_id: one step done, waiting for the next
    failed = Signal(int, object, str)           # run_id (0: load), exception, traceback
    crashed = Signal(object, bool)              # the probe's ProbeResult; True: retrying with safe settings
    closed = Signal()

    def __init__(self):
        super().__init__()
        self.abort = threading.Event()          # set from any thread: give up a load in progress
        self._engine = None
        self._engine_key = None
        self._run = None                        # the Run of a step-mode generation
        self._gen = None                        # its live generator
        self._request: RunRequest | None = None
        self._prefill_sent = False
        self._vocab = None
        self._held = None                       # what the last run left in the caches (Run.held)
        self.rounds_done = 0                    # rounds the current run has yielded (for tests)
        # set from the UI thread (a float: its views' pace, ShownRun.wakes_changed): no core
        # spare, the window wakes for the events 4 times a second instead of 20
        self.batch_period_s = BATCH_PERIOD_S

    # ------------------------------------------------------------------ engine
    @property
    def engine(self):
        """The loaded Engine, None before a load (read it on the worker's thread, or between runs)."""
        return self._engine

    def _ensure_engine(self, target: Path, draft: Path | None, settings, need_draft: bool = True) -> None:
        """Load the pair unless it is loaded already (a run without a model drafter reuses any
        loaded draft, or loads the target alone when ``draft`` is None)."""
        from specscope.core.engine.engine import Engine
        key = (str(target), str(draft) if draft else None, settings)
        if self._engine is not None and (self._engine_key == key or (
                not need_draft and self._engine_key[0] == key[0] and self._engine_key[2] == key[2])):
            return
        self._close_engine()
        self.load_started.emit(f"Checking {Path(target).name}" + (f" and {Path(draft).name}" if draft else ""))
        settings = self._guarded(target, draft, settings)
        self.load_started.emit(f"Loading {Path(target).name}" + (f" and {Path(draft).name}" if draft else ""))
        self._engine = Engine(target, draft, settings, progress=self._progress)
        self._engine_key = key
        self._vocab = TokenTable.of(self._engine.target)   # the UI thread never calls llama.cpp
        self.engine_loaded.emit(self._facts())

    def _guarded(self, target: Path, draft: Path | None, settings):
        """The crash probe (core/models/probe.py): each model first runs in a child process. When one
        crashes it with repacking on, say so and retry once with repacking off; the settings
        that passed are the ones the engine loads with."""
        from dataclasses import replace
        from specscope.core.models.probe import SAFE, first_crash
        for attempt in (settings, replace(settings, **SAFE)):
            crash = first_crash(attempt, target, draft)
            if crash is None:
                return attempt
            retry = (attempt is settings and crash.kernels_matter
                     and crash.settings.get("repack_used") == "on")
            self.crashed.emit(crash, retry)
            if not retry:
                break
        raise crash.error()

    def _progress(self, role: str, fraction: float) -> bool:
        """llama.cpp's load progress callback: report it; False aborts the load."""
        if self.abort.is_set():
            return False
        self.load_progressed.emit(role, fraction)
        return True

    def _facts(self) -> dict:
        e = self._engine
        facts = {}
        for role, m in (("target", e.target), ("draft", e.draft)):
            if m is None:
                continue
            facts[role] = {"n_params": m.n_params, "size_bytes": m.size_bytes,
                           "description": m.description, "n_vocab": m.n_vocab,
                           "path": str(m.path)}
        facts["n_ctx"] = e.tgt.n_ctx
        facts["repack"], facts["repack_reason"] = e.repack, e.repack_reason
        # role -> (threads now, auto?): auto follows the load (core/models/threads.py)
        facts["threads"] = {role: (ctx.threads, ctx.governor is not None)
                            for role, ctx in (("target", e.tgt), ("draft", e.dft)) if ctx is not None}
        return facts

    def _close_engine(self) -> None:
        self._drop_generator()
        if self._engine is not None:
            self._engine.close()
            self._engine = None
            self._engine_key = None
            self._vocab = None

    def _drop_generator(self) -> None:
        if self._gen is not None:
            self._gen.close()             # releases the engine's lock (finally blocks run here)
            self._held = self._run.held   # what the run left in the caches (a conversation's)
        self._gen = self._run = self._request = None

    # ------------------------------------------------------------------ slots
    @Slot()
    def warm_up(self) -> None:
        """Import the engine (numpy, the llama.cpp library) here, not on the UI thread."""
        try:
            import specscope.core.engine.engine  # noqa: F401
            import specscope.core.engine.sampling  # noqa: F401
            import specscope.core.measure.stats  # noqa: F401
        except Exception as exc:  # noqa: BLE001
            self.failed.emit(0, *_error_payload(exc))

    @Slot(object)
    def preload(self, request: RunRequest) -> None:
        """Load the pair ahead of the first Run (the window calls this once it is shown)."""
        try:
            self._ensure_engine(request.target, request.draft, request.engine_settings)
        except Exception as exc:  # noqa: BLE001 - every failure goes to the window
            if not self.abort.is_set():          # (an abort is the window closing, not a failure)
                self.failed.emit(0, *_error_payload(exc))

    @Slot(object)
    def start(self, request: RunRequest) -> None:
        from specscope.core.measure.cost.calibrate import CalibrationStopped
        self._drop_generator()
        try:
            # n-gram drafters and draft-mtp (the target's own MTP blocks) need no draft model:
            # only draft-simple and the heads' types do (registry.SpecType.uses_md)
            self._ensure_engine(request.target, request.draft, request.engine_settings,
                                need_draft=request.kind == "spec" and request.spec.needs_draft)
            e = self._engine
            prompt = given = request.prompt
            if request.chat or request.history:    # a chat message, or a conversation's next turn
                from specscope.core.session.conversation import conversation_prompt, turn_tokens
                prompt = conversation_prompt(e.target, request.chat, request.system or None,
                                             request.history, prompt)
                given = turn_tokens(e, prompt) if request.history else prompt
            calibration = self._policy_calibration(request)
            # a conversation's next turn keeps what the turn before left in the caches
            resume = self._held if request.history else None
            if request.kind == "spec":
                run = e.speculative(given, request.spec, request.sampler, request.n_predict,
                                    request.stop, calibration[0] if calibration else None,
                                    resume=resume, teach=request.step)
            else:
                run = e.baseline(given, request.sampler, request.n_predict, request.stop,
                                 resume=resume)
        except CalibrationStopped:           # Stop while calibrating: a stopped run, not a failure
            self.run_finished.emit(request.run_id, "stopped")
            return
        except Exception as exc:  # noqa: BLE001
            if not self.abort.is_set():
                self.failed.emit(request.run_id, *_error_payload(exc))
            return
        self._run, self._request, self._gen = run, request, iter(run)
        self._prefill_sent = False
        self.rounds_done = 0
        self.run_started.emit(RunStarted(request.run_id, request.kind, tuple(run.prompt_tokens),
                                         prompt, self._vocab, calibration))
        request.ui_ready.wait(UI_READY_TIMEOUT_S)   # bounded: a busy or closing window is not awaited
        if request.step:
            self.step(request.run_id)
        else:
            self._loop()

    @Slot(object)
    def measure(self, request: MeasureRequest) -> None:
        """A measurement in the loaded engine (loaded first if need be): progress as
        measure_progressed, the result as measured, Stop or a failure as measure_failed."""
        from specscope.core.measure.cost.calibrate import CalibrationStopped
        from specscope.core.measure.progress import share
        self._drop_generator()
        try:
            self._ensure_engine(request.target, request.draft, request.engine_settings)
            result = request.task(self._engine, lambda done, total, what: self.measure_progressed.emit(
                request.run_id, share(done, total), str(what)), request.stop)
        except CalibrationStopped:
            self.measure_failed.emit(request.run_id, None, "")
        except Exception as exc:  # noqa: BLE001 - every failure goes to the window
            if not self.abort.is_set():
                self.measure_failed.emit(request.run_id, *_error_payload(exc))
        else:
            self.measured.emit(request.run_id, result)

    def _policy_calibration(self, request: RunRequest) -> tuple | None:
        """(Calibration, from_cache) for a run with the cost draft policy (None for any other):
        the cached one after its drift check, else measured now (seconds), its progress
        reported as calibration_progressed; Stop ends it with CalibrationStopped."""
        spec = request.spec
        if request.kind != "spec" or spec.draft_policy != "cost" or not spec.uses_draft_model:
            return None
        from specscope.core.measure.cost.calibrate import policy_calibration
        from specscope.core.measure.progress import share
        measured = []                 # calibrate() reports progress, a cached calibration none

        def progress(done: float, total: float, _what: str) -> None:
            measured.append(done)
            self.calibration_progressed.emit(request.run_id, share(done, total))

        cal = policy_calibration(self._engine, spec, request.sampler, progress, request.stop)
        return cal, not measured

    @Slot(int)
    def step(self, run_id: int) -> None:
        """One round of a step-mode run."""
        if self._gen is None or self._request.run_id != run_id:
            return
        if self._request.stop.is_set():
            self._finish("stopped")
            return
        try:
            ev = next(self._gen)
        except StopIteration:
            self._finish(self._run.finish or "stopped")
            return
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
            return
        self.rounds_done += 1
        self._send_prefill()
        self.events_ready.emit(run_id, [ev])
        if ev.finish:
            self._finish(ev.finish)
        else:
            self.step_paused.emit(run_id)

    @Slot(int)
    def resume(self, run_id: int) -> None:
        """Run a step-mode generation freely to its end."""
        if self._gen is None or self._request.run_id != run_id:
            return
        self._loop()

    @Slot()
    def cancel(self) -> None:
        """End a paused step-mode run (its stop flag is already set)."""
        if self._gen is not None:
            self._finish("stopped")

    @Slot()
    def shutdown(self) -> None:
        self._close_engine()
        self.closed.emit()

    # ------------------------------------------------------------------ the loop
    def _loop(self) -> None:
        run_id = self._request.run_id
        batch, last = [], time.perf_counter()
        try:
            for ev in self._gen:
                self.rounds_done += 1
                if not self._prefill_sent:
                    self._send_prefill()
                batch.append(ev)
                now = time.perf_counter()
                if now - last >= self.batch_period_s:
                    self.events_ready.emit(run_id, batch)
                    batch, last = [], now
        except Exception as exc:  # noqa: BLE001
            if batch:
                self.events_ready.emit(run_id, batch)
            self._fail(exc)
            return
        if batch:
            self.events_ready.emit(run_id, batch)
        self._finish(self._run.finish or "stopped")

    def _send_prefill(self) -> None:
        if not self._prefill_sent and self._run is not None and self._run.prefill is not None:
            self._prefill_sent = True
            self.prefill_done.emit(self._request.run_id, self._run.prefill)

    def _finish(self, finish: str) -> None:
        run_id = self._request.run_id
        self._drop_generator()
        self.run_finished.emit(run_id, finish)

    def _fail(self, exc: BaseException) -> None:
        run_id = self._request.run_id
        self._drop_generator()
        self.failed.emit(run_id, *_error_payload(exc))


class DoctorWorker(QObject):
    """Runs the pair doctor (vocab-only loads) off the UI thread."""

    pair_checked = Signal(int, object)          # request id, PairReport
    check_failed = Signal(int, object, str)     # request id, exception, traceback

    @Slot(int, str, str)
    def check(self, req_id: int, target: str, draft: str) -> None:
        try:
            from specscope.core.measure.doctor.pair import check_pair
            report = check_pair(target, draft)
        except Exception as exc:  # noqa: BLE001
            self.check_failed.emit(req_id, *_error_payload(exc))
            return
        self.pair_checked.emit(req_id, report)


def start_thread(obj: QObject, name: str) -> QThread:
    """Move ``obj`` to a new, started QThread."""
    thread = QThread()
    thread.setObjectName(name)
    obj.moveToThread(thread)
    thread.start()
    return thread


class _Relay(QObject):
    def __init__(self, fn, parent: QObject):
        super().__init__(parent)
        self.fn = fn

    def call(self, *args) -> None:
        self.fn(*args)


def on_ui_thread(signal, fn, parent: QObject) -> None:
    """Connect a worker's ``signal`` to ``fn``, a plain callable (the run controller's), called
    on ``parent``'s thread (the UI's). Connected to ``fn`` itself, it would run on the worker's
    thread; to a QObject's method, it runs on that object's."""
    signal.connect(_Relay(fn, parent).call)
