"""The Cost model tab: the cost panel, what an rpc-server placement costs (the distance view)
and the measured synthetic curve, with the measurements behind them.

The calibration and the synthetic sweep run in the window's own engine, on its thread
(``EngineTask``: no second copy of the models); the distance view loads its own. Each asks the
run controller for the cores first (``require_cores``) and holds them from its ``started``
to its ``finished`` or ``failed``: a run, a Compare sweep or another measurement meanwhile
would spoil both measurements.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from .cost_panel import N_PLOT_MAX, CostPanel
from .distance_view import DistanceRequest, DistanceView, RoundShape
from .synth_view import SynthCurveView, sweep
from .task import EngineTask, engine_task
from .worker import MeasureRequest


class CostTab(QScrollArea):
    """The tab's page (it scrolls rather than squeezes: the cost model is tall): it measures the
    pair the ``controls`` (controls.RunControls) describe in the engine ``worker``, holding the
    cores through the run ``controller``; ``loaded_facts()`` are the facts of the pair the engine
    loaded last. What the banner and the stats bar should say it says through its signals."""

    measure_requested = Signal(object)      # a MeasureRequest for the engine's thread
    state = Signal(str, str)                # what the window is doing now, and what waits
    message = Signal(str, str)              # level, message: for the banner
    error = Signal(object, str, str)        # an exception, its traceback, what failed

    def __init__(self, controller, worker, controls, loaded_facts):
        super().__init__()
        self.controller, self.controls, self.loaded_facts = controller, controls, loaded_facts
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.measure_requested.connect(worker.measure)
        self.worker = worker
        self.cost_panel = CostPanel()
        self.synth_view = SynthCurveView()               # below it: the measured synthetic curve
        self.synth_view.source = self.synth_sweep_settings
        self.synth_view.use_task(self._engine_task(
            lambda settings, engine, progress, stop: sweep(settings, progress, stop, engine)))
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.cost_panel, 1)
        self.cost_panel.calibrate_requested.connect(self.calibrate)
        self.calibration_task = self._engine_task(self._calibrate_in)
        self.calibration_task.progressed.connect(self._calibration_progress)
        self.calibration_task.finished.connect(self._calibration_done)
        self.calibration_task.failed.connect(self._calibration_failed)
        self.distance_view = DistanceView()              # then what an rpc-server placement costs
        self.distance_view.source = self.distance_request
        self._hold_cores(self.distance_view.task)
        controls.pair_panel.placement_changed.connect(self.distance_view.refresh)
        lay.addWidget(self.distance_view)
        lay.addWidget(self.synth_view)
        self.setWidget(page)

    # ------------------------------------------------------------------ tasks
    def _hold_cores(self, task) -> None:
        """``task`` holds the cores from its start to its end (the controller hears first)."""
        c = self.controller
        task.started.connect(lambda: c.measure_started(task))
        task.finished.connect(lambda *_: c.measure_ended(task))
        task.failed.connect(lambda *_: c.measure_ended(task))

    def _engine_task(self, task) -> EngineTask:
        """An EngineTask: ``task(request, engine, progress, stop)`` in the window's engine, on the
        engine's thread (app/task.py)."""
        et = engine_task(task, self._submit, self.worker, self)
        self._hold_cores(et)
        return et

    def _submit(self, fn) -> MeasureRequest:
        """Send ``fn(engine, progress, stop)`` to the engine worker for the pair and settings of
        the controls (loaded first if need be); the MeasureRequest sent."""
        t, d = self.controls.pair()
        req = MeasureRequest(self.controller.next_id(), t, d, self.controls.engine(), fn)
        self.measure_requested.emit(req)
        return req

    def _engine_settings_as_loaded(self, target):
        """The controls' engine settings, as the run loaded ``target``'s pair: the thread counts
        "auto" chose and repacking as the crash probe left it (what a measurement of the pair
        in its own engine must use to time what the runs do)."""
        engine, facts = self.controls.engine(), self.loaded_facts()
        if facts.get("target", {}).get("path") != str(target):
            return engine
        threads = facts.get("threads", {})
        return replace(engine, repack="on" if facts.get("repack") else "off", **{
            f"{role}_threads": threads[role][0] for role in threads
            if getattr(engine, f"{role}_threads") == 0})

    def _last_run_position(self) -> int:
        """Where the latest speculative run's typical round sat (the prompt plus half the
        generation, rounded to 16): the position to time decodes at."""
        from specscope.core.measure.cost.calibrate import DEFAULT_N_PAST
        last = self.controller.workbench.last_spec
        if last is None or not last.prompt_tokens:
            return DEFAULT_N_PAST
        return max(16, round((len(last.prompt_tokens) + last.settings.n_predict / 2) / 16) * 16)

    # ------------------------------------------------------------------ calibration
    @staticmethod
    def _calibrate_in(request: dict, engine, progress, stop):
        from specscope.core.measure.cost.calibrate import get_calibration
        return get_calibration(engine, request["k_max"], sampler=request["sampler"],
                               n_past=request["n_past"], k_draft=request["k_max"],
                               progress=progress, stop=stop)

    def show_cached(self, target, draft) -> None:
        """Draw the newest calibration of this pair cached on this machine (bench, advise, Compare
        or the Calibrate button took it), or none: a new pair, or the window's first."""
        from specscope.core.measure.cost.cache import cached_pair
        cal = cached_pair(target, draft) if target is not None and draft is not None else None
        self.cost_panel.show_calibrated(cal, self.controls.params.sync.currentData() if cal else "reuse")
        self.cost_panel.set_calibration(Path(draft).name if cal else "", cal, True)

    def calibrate(self) -> None:
        """The cost panel's Calibrate: this pair timed on this machine in the window's own engine
        (on the engine's thread; cached), then drawn beside the textbook curve. Pressed while it
        runs, it stops it."""
        from specscope.core.errors import ConfigError
        if self.calibration_task.running:
            self.calibration_task.request_stop()
            self.cost_panel.set_calibrating("Stopping…")
            return
        t, d = self.controls.pair()
        try:
            if t is None or d is None:
                raise ConfigError("calibrating needs a target and a draft model")
            self.controller.require_cores(self.calibration_task)
        except ConfigError as exc:
            self.message.emit("warning", f"Cannot calibrate: {exc}.")
            return
        spec = self.controls.spec()
        self.cost_panel.set_calibrating("Stop calibrating (0%)")
        self.state.emit("Calibrating the pair", "Run, Step and Baseline wait until it ends")
        self.calibration_task.start(dict(
            target=t, draft=d, k_max=max(N_PLOT_MAX, spec.n_max) + 1, sync=spec.sync,
            sampler=self.controls.sampler(), n_past=self._last_run_position()))

    def _calibration_progress(self, fraction: float, _what: str) -> None:
        if not self.calibration_task.stopping:
            self.cost_panel.set_calibrating(f"Stop calibrating ({100 * fraction:.0f}%)")

    def _calibration_done(self, request: dict, result) -> None:
        cal, cached = result
        self.cost_panel.set_calibrating(None)
        if self.controls.pair() == (request["target"], request["draft"]):     # still this pair
            self.cost_panel.show_calibrated(cal, request["sync"])
            self.cost_panel.set_calibration(Path(request["draft"]).name, cal, cached)
        if not self.controller.busy:
            self.state.emit("Idle", "")

    def _calibration_failed(self, exc, tb: str) -> None:
        self.cost_panel.set_calibrating(None)
        if exc is not None:
            self.error.emit(exc, tb, "The calibration failed")
        if not self.controller.busy:
            self.state.emit("Calibration stopped" if exc is None else "Idle", "")

    def show_sweep_calibration(self, result) -> None:
        """The cost panel says where a Compare sweep's calibration stands (one taken under load
        first: that is the one to warn about)."""
        if result.calibrations:
            name, cal = max(result.calibrations.items(), key=lambda kv: (kv[1].under_load, bool(kv[1].note)))
            self.cost_panel.set_calibration(name, cal, bool(result.from_cache.get(name)))

    # ------------------------------------------------------------------ the views' requests
    def synth_sweep_settings(self):
        """What the synthetic-acceptance sweep measures: the chosen pair with draft-simple at the
        drafter box's n_max, sync and p_min, the prompt and sampler, at most 64 tokens a run
        (core/measure/bench/synth_sweep.py)."""
        from specscope.core.errors import ConfigError
        from specscope.core.measure.bench.sweep import SweepSettings
        c, prompt = self.controls, self.controls.prompt
        t, d = c.pair()
        if t is None or d is None:
            raise ConfigError("the synthetic sweep needs a target and a draft model")
        self.controller.require_cores(self.synth_view.task)
        spec = replace(c.spec(), synth_len=-1.0, synth_rates=())
        if spec.n_max < 1:
            raise ConfigError("set draft-simple's n_max to 1 or more")
        return SweepSettings(target=Path(t), drafts=(Path(d),), n_values=(spec.n_max,),
                             prompts=(("prompt", prompt.text()),),
                             n_predict=max(2, min(64, c.n_predict())),
                             sampler=c.sampler(), engine=c.engine(),
                             sync=spec.sync, p_min=spec.p_min, spec=spec,
                             chat=prompt.chat_enabled(), system=prompt.system_text())

    def distance_request(self) -> DistanceRequest:
        """What the distance view measures: the pair as the controls place it now, and the round
        to account for: the latest speculative run's (its draft length, acceptance and, when it
        ran under this placement, its rounds), else the drafter box's n_max at the cost panel's
        α (core/measure/cost/distance.py)."""
        from specscope.core.errors import ConfigError
        from specscope.core.measure.cost.model import alpha_acceptance
        t, d = self.controls.pair()
        if t is None:
            raise ConfigError("choose a target model first")
        self.controller.require_cores(self.distance_view.task)
        engine, spec = self._engine_settings_as_loaded(t), self.controls.spec()
        last = self.controller.workbench.last_spec
        stats = last.spec.stats if last is not None and last.spec is not None else None
        if stats is not None and stats.n_draft_rounds and last.settings.spec.n_max > 0:
            placed = ("rpc", "target_devices", "draft_devices", "target_gpu_layers", "draft_gpu_layers")
            same = all(getattr(last.settings.engine, a) == getattr(engine, a) for a in placed)
            n = last.settings.spec.n_max
            shape = RoundShape(
                n=n, acceptance=tuple(a / stats.n_draft_rounds for a in stats.accepted_at[:n]),
                sync=last.settings.spec.sync, n_draft=min(n, stats.n_drafted / stats.n_draft_rounds),
                source="the last run's acceptance and draft length",
                run_rounds=stats.n_rounds if same else 0, run_seconds=stats.t_total if same else 0.0)
        else:
            n = max(1, spec.n_max)
            alpha = self.cost_panel.alpha
            shape = RoundShape(n=n, acceptance=alpha_acceptance(alpha, n), sync=spec.sync,
                               source=f"α = {alpha:.2f}, no run yet")
        return DistanceRequest(target=str(t), draft=str(d) if d else None, engine=engine,
                               sampler=self.controls.sampler(), n_past=self._last_run_position(),
                               shape=shape)

    # ------------------------------------------------------------------ closing
    def shutdown(self, timeout_ms: int) -> bool:
        """Stop the measurements; the distance view's thread and the synthetic sweep's end."""
        for task in (self.calibration_task, self.synth_view):     # on the engine's thread
            task.request_stop()
        ok = True
        for view in (self.synth_view, self.distance_view):
            ok = view.shutdown(timeout_ms) and ok
        return ok
