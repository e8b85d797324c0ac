"""The synthetic-acceptance curve: measured speed-up against acceptance, on this machine.

A teacher's question, "what would the speed-up be at 90 % acceptance?", has an answer that
does not need a better draft: llama.cpp's benchmark-only synthetic acceptance
(:mod:`.synth`) runs the real pair (the draft model drafts, the target verifies the whole
batch and samples every row, so every timing is real) but keeps each draft position at
random with a chosen probability. This module runs the pair at several mean accepted
lengths L (``--spec-synth-len``: geometric per-position rates a_i = αⁱ, α found by
llama.cpp's bisection), measures the speed-up against the target alone, and sets it beside
the textbook prediction (E + 1)/(n·f + 1) and the prediction calibrated on this
machine (:mod:`.cost_model`, calibrated by :mod:`.calibrate`: c(k), f, sampling, sync and Python
overheads).

The runs are arranged as :func:`.sweep.run_sweep` arranges its own (calibration at the
position of a typical round; per prompt and repetition a baseline, one run per level in an
order that rotates between repetitions, and a second baseline bracketing them in time), and
the rows are :func:`.sweep.make_row`'s, so both predictions are fed with the acceptance the
runs actually had. End-of-generation tokens are biased out of the target's sampler (every
run generates n_predict tokens; a drafted one is never kept anyway) and there is no lossless
check: the text is not valid output.

``SynthPoint.alpha_measured`` is the per-token acceptance the runs show, the maximum-likelihood
estimate for independent positions: accepted ÷ (accepted + rejections), a rejection being a
round that kept less than its whole draft.
"""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from specscope.core.engine.engine import Engine, EngineSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.engine.synth import WARNING, check_sampler, resolve_rates
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.calibrate import CalibrationStopped, get_calibration
from specscope.core.measure.cost.model import (Calibration, alpha_from_counts, calibrated_speedup,
                                               textbook_speedup)
from specscope.core.measure.cpuload import LoadMeter
from specscope.core.measure.bench.lossless import execute, run_result
from specscope.core.measure.progress import Progress, quiet, within
from specscope.core.measure.bench.rows import ALL, Cell, Row, make_row
from specscope.core.measure.bench.settings import (DRAFT_SIMPLE, Config, SweepSettings, eog_bias,
                                                   model_prompts, spec_for, typical_position)

DEFAULT_LEVELS = 6


def synth_levels(n_max: int, count: int = DEFAULT_LEVELS) -> tuple[float, ...]:
    """``count`` mean accepted lengths evenly from 1 (nothing kept) to n_max + 1 (all kept)."""
    if n_max < 1 or count < 2:
        raise ConfigError("a synthetic sweep needs a draft length >= 1 and at least 2 levels")
    return tuple(round(1.0 + i * n_max / (count - 1), 6) for i in range(count))


@dataclass(frozen=True)
class SynthPoint:
    synth_len: float          # the requested mean accepted length L (--spec-synth-len)
    alpha: float              # the per-position probability it resolves to (rates αⁱ)
    alpha_measured: float     # accepted ÷ (accepted + rejections) over the runs
    row: Row                  # the pooled row: acceptance, mean accepted length, speed-ups

    def to_dict(self) -> dict:
        return {"synth_len": self.synth_len, "alpha": self.alpha,
                "alpha_measured": self.alpha_measured, **self.row.to_dict()}


@dataclass
class SynthCurve:
    settings: SweepSettings
    n: int
    calibration: Calibration | None = None
    from_cache: bool = False
    points: list[SynthPoint] = field(default_factory=list)
    stopped: bool = False
    seconds: float = 0.0
    others_cpu: float | None = None

    def textbook(self, alpha: float) -> float:
        """The textbook speed-up at per-token acceptance α with the calibrated f."""
        return textbook_speedup(alpha, self.n, self.calibration.f)

    def calibrated(self, alpha: float) -> float:
        """The calibrated model's speed-up at per-token acceptance α."""
        return calibrated_speedup(self.calibration, self.n, alpha=alpha, sync=self.settings.sync)

    def lines(self) -> list[str]:
        """The table: one row per level."""
        head = (f"{'L':>5} {'α':>6} {'α meas':>7} {'accept':>7} {'mean len':>9} {'measured':>9} "
                f"{'calibrated':>11} {'textbook':>9}")
        out = [f"synthetic acceptance sweep, n = {self.n} ({WARNING})",
               "L: requested mean accepted length (--spec-synth-len); α: its per-position "
               "probability; α meas: accepted ÷ (accepted + rejections); predictions at the "
               "runs' own acceptance", head]
        for p in self.points:
            r = p.row
            out.append(f"{p.synth_len:5.2f} {p.alpha:6.3f} {p.alpha_measured:7.3f} "
                       f"{100 * r.acceptance:6.1f}% {r.mean_accepted_length:9.2f} "
                       f"{r.measured_speedup:8.3f}x {r.calibrated_speedup:10.3f}x "
                       f"{r.textbook_speedup:8.3f}x")
        return out

    def to_dict(self) -> dict:
        return {"n": self.n, "points": [p.to_dict() for p in self.points],
                "calibration": self.calibration.to_dict() if self.calibration else None,
                "stopped": self.stopped, "seconds": self.seconds, "others_cpu": self.others_cpu}


def _alpha_measured(cells: Sequence[Cell]) -> float:
    runs = [r for c in cells for r in c.spec]
    return alpha_from_counts(sum(r.stats.n_accept for r in runs),
                             sum(r.stats.n_draft_rounds - r.n_full for r in runs))


def run_synth_sweep(s: SweepSettings, levels: Sequence[float] | None = None, *,
                    progress: Progress | None = None, stop: threading.Event | None = None,
                    on_point: Callable[[SynthPoint], None] | None = None,
                    engine=None) -> SynthCurve:
    """Measure the curve (module docs) for the first draft and the largest n of ``s``, in
    ``engine`` when given (the pair already loaded, left open; the window's), else in an
    engine of its own."""
    s.validate()
    if not s.drafts:
        raise ConfigError("the synthetic sweep needs a draft model (-md)")
    n = max(s.n_values)
    levels = tuple(levels) if levels else synth_levels(n)
    sampler = s.sampler or SamplerSettings()
    check_sampler(sampler)
    sampler = replace(sampler, logit_bias=tuple(sampler.logit_bias) + eog_bias(s.target))
    settings = s.engine or EngineSettings()
    s = replace(s, sampler=sampler, engine=settings, lossless=False)
    name = s.drafts[0].name
    base_spec = spec_for(s, Config(name, DRAFT_SIMPLE, n))
    specs = {}
    for level in levels:
        specs[level] = replace(base_spec, synth_len=float(level), synth_rates=())
        specs[level].validate()
    stop = stop or threading.Event()
    say = progress or quiet
    total = 1 + len(s.prompts) * s.repeats * (2 + len(levels))
    done = 0
    curve = SynthCurve(s, n)
    meter = LoadMeter()
    t0 = time.perf_counter()
    cells = {(level, p): Cell(name, n, p) for level in levels for p, _ in s.prompts}
    try:
        say(done, total, f"{name}: loading")
        with nullcontext(engine) if engine is not None else Engine(s.target, s.drafts[0], settings) as engine:
            say(done, total, f"{name}: calibrating")
            try:
                curve.calibration, curve.from_cache = get_calibration(
                    engine, n + 1, sampler=sampler, refresh=s.recalibrate, use_cache=s.use_cache,
                    time_budget_s=s.calibration_s, n_past=typical_position(engine, s), k_draft=n + 1,
                    progress=within(say, done, total, name),
                    stop=stop)
            except CalibrationStopped:
                return curve
            done += 1
            for p_name, text in model_prompts(s, engine):
                for rep in range(s.repeats):
                    runs = _one_repetition(engine, s, text, specs, levels, rep, stop,
                                           lambda what: say(done, total, f"{p_name}: {what}"))
                    if runs is None:
                        break
                    base, again, spec_runs = runs
                    for level, res in spec_runs.items():
                        cells[(level, p_name)].add(res, base, again)
                    done += 2 + len(spec_runs)
                    say(done, total, f"{p_name}: repetition {rep + 1} done")
                if stop.is_set():
                    break
    finally:
        curve.stopped = stop.is_set()
        curve.seconds = time.perf_counter() - t0
        curve.others_cpu = meter.others_share()
    if curve.calibration is not None:
        for level in levels:
            done_cells = [c for (lv, _), c in cells.items() if lv == level and c.spec]
            if not done_cells:
                continue
            rates = resolve_rates(level, (), n)
            alpha = rates[1] / rates[0] if len(rates) > 1 and rates[0] > 0 else rates[0]
            point = SynthPoint(level, alpha, _alpha_measured(done_cells),
                               make_row(name, n, ALL, done_cells, curve.calibration, s.sync))
            curve.points.append(point)
            if on_point:
                on_point(point)
    say(total if not curve.stopped else done, total, "stopped" if curve.stopped else "done")
    return curve


def _one_repetition(engine, s: SweepSettings, text: str, specs: dict, levels, rep: int,
                    stop: threading.Event, say) -> tuple | None:
    """A baseline, one run per level (rotated by ``rep``), a baseline again; None on Stop."""
    def once(spec):
        run = engine.speculative(text, spec, s.sampler, s.n_predict, stop) if spec \
            else engine.baseline(text, s.sampler, s.n_predict, stop)
        events = execute(run)
        return None if stop.is_set() else run_result("spec" if spec else "baseline", run, events,
                                                     spec.n_max if spec else 0)
    say("baseline")
    base = once(None)
    if base is None:
        return None
    k = rep % len(levels)
    spec_runs = {}
    for level in levels[k:] + levels[:k]:
        say(f"L = {level:g}")
        res = once(specs[level])
        if res is None:
            return None
        spec_runs[level] = res
    say("baseline again")
    again = once(None)
    return None if again is None else (base, again, spec_runs)
