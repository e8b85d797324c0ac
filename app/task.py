"""One long measurement at a time, off the UI thread (the cost tab's Measure buttons, the Compare
sweep): :class:`BackgroundTask` on a thread and models of its own, :class:`EngineTask` in the
window's loaded engine on the engine's thread.

A view gives :class:`BackgroundTask` a function ``task(request, progress, stop)`` that runs
llama.cpp (loading its own models, so the window's engine and its thread are left alone) and
returns a result; ``progress(done, total, what)`` reports (core/measure/progress.py) and
``progress.post(item)`` hands over a partial result, ``stop`` is a threading.Event the function
checks. ``start(request)`` runs it on a fresh QThread, ``request_stop()`` sets the event,
``shutdown()`` ends the thread. Signals, on the UI thread:

- ``started()``: the task holds the cores until it finishes or fails;
- ``progressed(fraction, what)``;
- ``posted(item)``: what the task handed over on the way;
- ``finished(request, result)``;
- ``failed(exception, traceback)``: the exception is None when Stop ended a calibration
  (``CalibrationStopped``).

With ``handoff`` every report waits (at most ACK_TIMEOUT_S) until the view calls
:meth:`BackgroundTask.acknowledge`, once it has drawn it: the window then paints between
measurements, never during one (it would slow the run being timed). The thread ends after every
task: a thread that ran decodes keeps llama.cpp's OpenMP team alive (libgomp keeps a team per
thread, and once a process holds more of them than there are cores every team waits at its
barriers by sleeping, which slows the window's own runs).
"""

from __future__ import annotations

import threading
import traceback

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QGroupBox, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSizePolicy,
                               QVBoxLayout, QWidget)

from specscope.core.measure.progress import share

from .worker import start_thread

__all__ = ["BackgroundTask", "EngineTask", "engine_task", "MeasureRow", "MeasureView"]

ERROR_STYLE = "color:#b42318"
ACK_TIMEOUT_S = 2.0         # with handoff, a report waits at most this long for the view to draw it


class _Report:
    """What a task reports through: ``progress(done, total, what)`` and ``progress.post(item)``."""

    def __init__(self, runner: "_Runner"):
        self._runner = runner

    def __call__(self, done: float, total: float, what: str) -> None:
        self._runner.hand(self._runner.progressed, share(done, total), str(what))

    def post(self, item) -> None:
        self._runner.hand(self._runner.posted, item)


class _Runner(QObject):
    progressed = Signal(float, str)
    posted = Signal(object)
    finished = Signal(object, object)
    failed = Signal(object, str)

    def __init__(self, task, handoff: bool):
        super().__init__()
        self.task = task
        self.handoff = handoff
        self.stop = threading.Event()
        self.ack = threading.Event()           # the view has shown what was handed over

    def hand(self, signal, *args) -> None:
        """Emit; with handoff, then wait until the view has drawn it (or Stop)."""
        if not self.handoff:
            signal.emit(*args)
            return
        self.ack.clear()
        signal.emit(*args)
        if not self.stop.is_set():
            self.ack.wait(ACK_TIMEOUT_S)

    @Slot(object)
    def run(self, request) -> None:
        from specscope.core.measure.cost.calibrate import CalibrationStopped
        try:
            result = self.task(request, _Report(self), self.stop)
        except CalibrationStopped:
            self.failed.emit(None, "")
            return
        except Exception as exc:  # noqa: BLE001 - every failure goes to the view
            self.failed.emit(exc, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            return
        self.finished.emit(request, result)


class BackgroundTask(QObject):
    started = Signal()
    progressed = Signal(float, str)
    posted = Signal(object)                # what the task handed over on the way
    finished = Signal(object, object)      # request, result
    failed = Signal(object, str)           # exception (None: stopped), traceback
    _start_requested = Signal(object)

    def __init__(self, task, name: str, parent: QObject | None = None, *, handoff: bool = False):
        super().__init__(parent)
        self._task, self._name, self._handoff = task, name, handoff
        self._thread: QThread | None = None
        self._runner: _Runner | None = None
        self.running = False

    def start(self, request) -> None:
        if self.running:
            return
        self._runner = _Runner(self._task, self._handoff)
        self._start_requested.connect(self._runner.run, Qt.ConnectionType.QueuedConnection)
        self._runner.progressed.connect(self.progressed)
        self._runner.posted.connect(self.posted)
        self._runner.finished.connect(self._finished)
        self._runner.failed.connect(self._failed)
        self._thread = start_thread(self._runner, self._name)
        self._thread.finished.connect(self._runner.deleteLater)
        self.running = True
        self.started.emit()
        self._start_requested.emit(request)

    def acknowledge(self) -> None:
        """The view has drawn the last report: the task goes on (handoff)."""
        if self._runner is not None:
            self._runner.ack.set()

    def request_stop(self) -> None:
        if self._runner is not None:
            self._runner.stop.set()
            self._runner.ack.set()

    @property
    def stopping(self) -> bool:
        return self._runner is not None and self._runner.stop.is_set()

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop the task and end its thread; False when it did not end within the timeout."""
        self.request_stop()
        self.running = False
        if self._thread is None:
            return True
        try:
            self._start_requested.disconnect()
        except (RuntimeError, TypeError):
            pass
        self._thread.quit()
        ok = self._thread.wait(timeout_ms)
        self._thread = self._runner = None
        return ok

    def _finished(self, request, result) -> None:
        self.shutdown()
        self.finished.emit(request, result)

    def _failed(self, exc, tb: str) -> None:
        self.shutdown()
        self.failed.emit(exc, tb)


class EngineTask(QObject):
    """BackgroundTask's interface over the window's engine worker: ``task(request, engine,
    progress, stop)`` runs in the pair the window has loaded, on the engine's thread (no second
    copy of the models, which repacked quantized weights would double). ``submit(fn)`` is the
    window's: it sends a worker.MeasureRequest for its pair and settings running ``fn(engine,
    progress, stop)`` and returns it; the window routes the worker's measure_* signals to
    :meth:`on_progress`, :meth:`on_done` and :meth:`on_failed` (each task keeps its own run id)."""

    started = Signal()
    progressed = Signal(float, str)
    finished = Signal(object, object)      # request, result
    failed = Signal(object, str)           # exception (None: stopped), traceback

    def __init__(self, task, submit, parent: QObject | None = None):
        super().__init__(parent)
        self._task, self._submit = task, submit
        self._sent = None                  # the MeasureRequest in flight
        self._request = None

    @property
    def running(self) -> bool:
        return self._sent is not None

    @property
    def stopping(self) -> bool:
        return self._sent is not None and self._sent.stop.is_set()

    def start(self, request) -> None:
        if self.running:
            return
        self._request = request
        self._sent = self._submit(lambda engine, progress, stop: self._task(request, engine, progress, stop))
        self.started.emit()

    def request_stop(self) -> None:
        if self._sent is not None:
            self._sent.stop.set()

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop it; the engine's thread ends with the window."""
        self.request_stop()
        return True

    def _mine(self, run_id: int) -> bool:
        return self._sent is not None and self._sent.run_id == run_id

    @Slot(int, float, str)
    def on_progress(self, run_id: int, fraction: float, what: str) -> None:
        if self._mine(run_id):
            self.progressed.emit(fraction, what)

    @Slot(int, object)
    def on_done(self, run_id: int, result) -> None:
        if self._mine(run_id):
            self._sent = None
            self.finished.emit(self._request, result)

    @Slot(int, object, str)
    def on_failed(self, run_id: int, exc, tb: str) -> None:
        if self._mine(run_id):
            self._sent = None
            self.failed.emit(exc, tb)


def engine_task(task, submit, worker, parent: QObject) -> EngineTask:
    """An EngineTask running ``task(request, engine, progress, stop)`` through ``submit`` on
    ``worker``, the window's engine worker, whose measure_* signals it hears."""
    et = EngineTask(task, submit, parent)
    worker.measure_progressed.connect(et.on_progress)
    worker.measured.connect(et.on_done)
    worker.measure_failed.connect(et.on_failed)
    return et


class MeasureRow(QWidget):
    """Measure · Stop · a progress bar · one status line, driving one task (a BackgroundTask
    or an EngineTask) for a view of the cost tab. The view validates its request and calls
    :meth:`run`; ``finished(request, result)`` hands the result back; a failure or Stop is said
    in the status line. ``use_task`` swaps the task (the window's EngineTask)."""

    finished = Signal(object, object)      # request, result
    ended = Signal()                       # after a result, a failure or Stop

    def __init__(self, task, tip: str, stopping: str = "stopping…", parent: QWidget | None = None):
        super().__init__(parent)
        self._stopping = stopping
        self.task = None
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.measure = QPushButton("Measure")
        self.measure.setToolTip(tip)
        self.stop = QPushButton("Stop")
        self.stop.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setMaximumWidth(160)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        for w in (self.measure, self.stop, self.progress):
            lay.addWidget(w)
        lay.addWidget(self.status, 1)
        self.stop.clicked.connect(self.request_stop)
        self.use_task(task)

    def use_task(self, task) -> None:
        if self.task is not None:
            self.task.shutdown()
            for signal in (self.task.progressed, self.task.finished, self.task.failed):
                signal.disconnect()
        self.task = task
        task.progressed.connect(self._progressed)
        task.finished.connect(self._finished)
        task.failed.connect(self._failed)

    @property
    def running(self) -> bool:
        return self.task.running

    def refuse(self, reason) -> None:
        """A request the view would not start: one line, in red."""
        self.status.setText(f"<span style='{ERROR_STYLE}'>⚠ {reason}</span>")

    def run(self, request) -> None:
        self.measure.setEnabled(False)
        self.stop.setEnabled(True)
        self.progress.setValue(0)
        self.status.setText("starting…")
        self.task.start(request)

    def request_stop(self) -> None:
        if self.running:
            self.task.request_stop()
            self.status.setText(self._stopping)

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        return self.task.shutdown(timeout_ms)

    def _progressed(self, fraction: float, what: str) -> None:
        self.progress.setValue(int(1000 * min(max(fraction, 0.0), 1.0)))
        self.status.setText(what)

    def _done(self) -> None:
        self.measure.setEnabled(True)
        self.stop.setEnabled(False)

    def _finished(self, request, result) -> None:
        self._done()
        self.progress.setValue(1000)
        self.finished.emit(request, result)
        self.ended.emit()

    def _failed(self, exc, _tb: str) -> None:
        self._done()
        if exc is None:
            self.status.setText("stopped: nothing measured")
        else:
            self.refuse(exc)
        self.ended.emit()


def table_label(text: str = "") -> QLabel:
    """A label for a fixed-width table of figures, selectable."""
    label = QLabel(text)
    label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class MeasureView(QGroupBox):
    """A view of the cost tab that measures one thing at a time: what a subclass lays out in
    ``body``, then its :class:`MeasureRow`. ``source()`` gives the request (SpecScopeError when
    there is none), :meth:`check` refuses one that cannot run, :meth:`_on_finished(request,
    result)` shows the result."""

    def __init__(self, title: str, task, tip: str, stopping: str = "stopping…", parent=None):
        super().__init__(title, parent)
        if task.parent() is None:
            task.setParent(self)
        self.source = None
        self.body = QVBoxLayout(self)
        self.row = MeasureRow(task, tip, stopping)
        self.measure, self.stop, self.status = self.row.measure, self.row.stop, self.row.status
        self.measure.clicked.connect(lambda: self.start())
        self.row.finished.connect(self._on_finished)

    def use_task(self, task) -> None:
        """What runs the measurement: a BackgroundTask (models of its own) or the window's
        EngineTask (its loaded pair, on the engine's thread)."""
        self.row.use_task(task)

    @property
    def task(self):
        """The task that measures (its started / finished / failed: the cores)."""
        return self.row.task

    @property
    def running(self) -> bool:
        return self.row.running

    def request(self):
        """The request the controls describe now."""
        from specscope.core.errors import ConfigError
        if self.source is None:
            raise ConfigError("open a pair first")
        return self.source()

    def check(self, request) -> None:
        """Raise SpecScopeError, in words, when ``request`` cannot run."""

    def start(self, request=None) -> bool:
        """Measure ``request`` (the controls' unless given); False, said in the status line, when
        it cannot run."""
        from specscope.core.errors import SpecScopeError
        try:
            request = request if request is not None else self.request()
            self.check(request)
        except SpecScopeError as exc:
            self.row.refuse(exc)
            return False
        self.row.run(request)
        return True

    def request_stop(self) -> None:
        self.row.request_stop()

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        return self.row.shutdown(timeout_ms)

    def _on_finished(self, request, result) -> None:
        raise NotImplementedError
