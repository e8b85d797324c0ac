"""Calibration: what a verification batch, a draft token, sampling and the engine's Python cost
on *this* machine, timed on the real pair (the cost model, :mod:`.cost_model`, prices rounds
with these figures; the cache, :mod:`.calibration_cache`, keeps them).

The textbook model takes a verification batch of n + 1 tokens to cost one target token; on a
small CPU it costs almost n + 1 of them, so SpecScope measures. The calls of real rounds are
replayed in their order at a typical position, each draft length in blocks and in a fresh random
order every repetition, and the medians kept. What is timed, why so, and how well it predicted:
docs/calibration.md.
"""

from __future__ import annotations

import random
import threading
import time
from contextlib import ExitStack
from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.drafters.model import SYNC_MODES
from specscope.core.engine.engine import Engine, SpecSettings
from specscope.core.engine.sampling import SamplerSettings, build_chain
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.cache import (CALIBRATION_VERSION, DEFAULT_N_PAST, CheckTiming,
                                               busy_then_quiet_now, calibration_key, drift_of,
                                               is_under_load,
                                               load_cached, save_cached, threads_used)
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.cost.timing import (CALIBRATION_PROMPT, DEFAULT_REPS, MIN_REPS,
                                                TIME_BUDGET_S, CalibrationStopped, _filler_tokens,
                                                _median, _timing, timed_batches, trimmed_mean)
from specscope.core.measure.cpuload import LoadMeter, LoadReading
from specscope.core.measure.progress import Progress, quiet

__all__ = ["CalibrationStopped", "DEFAULT_N_PAST", "MIN_REPS", "SYNC_MODES", "TIME_BUDGET_S",
           "calibrate", "calibrate_pair", "check_timing", "get_calibration", "policy_calibration",
           "timed_batches"]

OVERHEAD_TOKENS = 96          # tokens per overhead-calibration run
CHECK_POSITION = 16           # the drift check decodes one target token here (a short prefix: cheap)
CHECK_REPS = 7                # ... this many times (median), after CHECK_WARMUP untimed decodes
CHECK_WARMUP = 2
CHECK_BATCH = 5               # ... then CHECK_SWITCHES times a batch of this many and three
CHECK_SWITCHES = 4            # single tokens (the second and third timed)
LOAD_LOOK_S = 0.2             # how long to read the load before trusting a calibration taken beside
                              # other work (/proc/stat counts in 10 ms ticks)

def calibrate(engine, k_max: int, *, sampler=None, n_past: int = DEFAULT_N_PAST,
              reps: int = DEFAULT_REPS, time_budget_s: float = TIME_BUDGET_S,
              overhead_runs: bool = True, k_draft: int | None = None,
              progress: Progress | None = None, stop: threading.Event | None = None,
              seed: int = 0, meter: LoadMeter | None = None, legacy: bool = False,
              mtp: bool = False, clock: Callable[[], float] = time.perf_counter) -> Calibration:
    """Measure c(k) for k = 1..k_max, f, f_batch, s, b and the Python overheads (clears both
    contexts). ``mtp``: time draft-mtp's drafts on the target's own MTP blocks (the engine has
    no draft model); otherwise the -md model's type's (a draft model's, an EAGLE-3 head's, a
    DFlash head's: ``_timing``).

    ``sampler``: the target's SamplerSettings of the runs to predict (default greedy).
    ``k_draft``: only batches of k ≤ k_draft decode k − 1 draft tokens first (the draft model's
    n_max + 1; default k_max); larger ones are what n-gram drafters verify. Without a draft model
    only the target is timed. ``meter`` (default: a fresh LoadMeter) reads how busy other
    processes kept the CPUs meanwhile (``under_load``). ``legacy`` measures as version 7 did and
    ``clock`` times the decodes (tests/bench/bench_calibration.py: docs/calibration.md)."""
    if k_max < 1:
        raise ConfigError(f"k_max must be >= 1, not {k_max}")
    has_draft = engine.draft is not None or mtp
    k_draft = 0 if not has_draft else k_max if k_draft is None else max(1, min(k_draft, k_max))
    sampler = sampler or SamplerSettings()
    n_past = max(1, min(n_past, engine.tgt.n_ctx - k_max - 1))
    stop = stop or threading.Event()
    say = progress or quiet
    t_start = time.perf_counter()
    meter = meter or LoadMeter()
    timing = _timing(engine, mtp, k_max, k_draft, n_past, clock, legacy)
    if k_max > min(engine.tgt.n_batch, timing.dctx.n_batch if has_draft else engine.tgt.n_batch):
        raise ConfigError(f"a batch of {k_max} tokens exceeds the batch size")
    with ExitStack() as held:
        held.enter_context(engine.exclusive("a calibration"))
        # threads auto: the counts stay as they are while timed; a slow-down meanwhile is load
        governors = list(dict.fromkeys(c.governor for c in (engine.tgt, timing.dctx)
                                       if c is not None and c.governor))     # one, when shared
        for g in governors:
            held.enter_context(g.hold())
        timing.prefill()
        timing.greedy = build_chain(engine.target, SamplerSettings())
        held.callback(timing.greedy.close)
        done_reps = timing.repeat(reps, time_budget_s, random.Random(seed), stop, say)
        timing.draft_alone()
        sample_times = timing.sampling(sampler)
        check = _check_timing(engine)                       # (clears the target)
        if has_draft:
            timing.dctx.clear()
    cal = timing.figures(sample_times, done_reps, check)
    if overhead_runs:
        say(0.85, 1, "timing the engine's loop")
        # a head's rounds' sync holds its process of the batch (f_batch), timed apart
        process = (lambda k: cal.draft_batch(min(k, k_max)) * cal.t1) if cal.head else (lambda k: 0.0)
        o_base, o0, o1, r = _measure_overheads(engine, k_max, sampler, stop, k_draft, process,
                                               timing.kind)
        t1 = cal.t1
        cal = replace(cal, o_base=o_base / t1, o0=o0 / t1, o1=o1 / t1, r=r / t1)
    say(1, 1, "calibrated")
    reading = meter.reading()
    moved = any(g.slow_while_held for g in governors)     # auto would have changed the count
    return replace(cal, seconds=time.perf_counter() - t_start, created=time.time(),
                   version=CALIBRATION_VERSION, load=reading.to_dict(),
                   under_load=moved or is_under_load(reading, threads_used(engine)))


def _check_timing(engine) -> CheckTiming:
    """The drift check's timings (seconds) at CHECK_POSITION, the cache rolled back after each
    decode; clears the target's memory. The caller holds the engine.

    ``stream``: the median of CHECK_REPS single-token target decodes in a row (after
    CHECK_WARMUP untimed ones: the first after another shape rebuilds llama.cpp's graph).
    ``switch``: the median of the second and third single-token decodes after a batch of
    CHECK_BATCH tokens, CHECK_SWITCHES times: c(1) is timed so (a block's later rounds, after a
    block of another size). On some VMs llama.cpp stays slow for many decodes after a batch of
    another size, a state that comes and goes within the hour and moves every c(k) with it while
    a stream's decodes keep their speed (docs/calibration.md): ``stream`` alone passed a
    calibration whose c(2) was 3.2 B where a fresh one measured 1.1."""
    tgt, batch = engine.tgt, engine.batch
    tokens = _filler_tokens(engine, CHECK_POSITION + CHECK_BATCH)
    size = max(1, min(CHECK_BATCH, tgt.n_batch, tgt.n_ctx - 2, len(tokens) - 1))
    pos = max(1, min(CHECK_POSITION, tgt.n_ctx - size - 1, len(tokens) - size))
    tgt.prefill(tokens[:pos], batch, "the calibration check's prefix")

    def decode(k: int) -> float:
        batch.fill(tokens[pos:pos + k], pos, logits="all")
        t = time.perf_counter()
        tgt.decode(batch, "the calibration check")
        dt = time.perf_counter() - t
        tgt.seq_rm(pos, -1)
        return dt
    stream = [decode(1) for _ in range(CHECK_WARMUP + CHECK_REPS)][CHECK_WARMUP:]
    switch = []
    for _ in range(CHECK_SWITCHES):
        decode(size)
        switch += [decode(1) for _ in range(3)][1:]
    tgt.clear()
    return CheckTiming(_median(stream), _median(switch))


def check_timing(engine) -> CheckTiming:
    """The drift check on its own (a cached calibration's ``check_t`` and ``check_switch`` are
    the same procedure, taken when it was measured): well under a second on the demo pair."""
    with engine.exclusive("the calibration check"), ExitStack() as held:
        if engine.tgt.governor is not None:      # threads auto: no trial of another count meanwhile
            held.enter_context(engine.tgt.governor.hold())
        return _check_timing(engine)


# ============================================================================ the engine's own time

def _measure_overheads(engine, k_max: int, sampler, stop, k_draft: int = -1,
                       process=lambda k: 0.0, kind: str | None = DRAFT_MODEL
                       ) -> tuple[float, float, float, float]:
    """Seconds per round from short engine runs of type ``kind``: Python time of a baseline
    round, o0 + o1·n of a speculative round (:func:`_fit_overheads`; without a drafting type
    (None) ngram-simple runs with a short n-gram, so that many rounds draft), and r, the
    rollback of a round that needed no sync decode (trimmed mean: a run pays every round's time,
    a median would leave out the slower), less ``process(k)``: what a head's process of a
    k-token batch adds to its round's sync."""
    prompt = CALIBRATION_PROMPT
    n_tokens = OVERHEAD_TOKENS
    # runs that end at an end-of-generation token would leave too few rounds to fit (at
    # temperature the demo pair sampled one after a round or two: o0 = o1 = r = 0)
    target = engine.target
    sampler = replace(sampler, logit_bias=tuple(sampler.logit_bias) + tuple(
        (t, float("-inf")) for t in range(target.n_vocab) if target.is_eog(t)))
    base = [ev.t_overhead for ev in engine.baseline(prompt, sampler, n_tokens, stop)]
    o_base = trimmed_mean(base[1:] or base, 0.1)
    points: list[tuple[int, float]] = []
    rollback: list[float] = []
    k_spec = k_max if k_draft < 0 else k_draft or k_max
    lengths = sorted({1, max(1, (k_spec - 1) // 2), max(1, k_spec - 1)})
    for n in lengths:
        spec = SpecSettings(n_max=n, types=(kind,)) if kind is not None else SpecSettings(
            types=("ngram-simple",), own={"ngram-simple": NgramMapParams(size_n=2, size_m=max(2, n))})
        run = engine.speculative(prompt, spec, sampler, n_tokens, stop)
        for i, ev in enumerate(run):
            # without a draft model the rounds no n-gram drafted for count too (length 0)
            if i == 0 or ev.mode not in ("spec", "plain") or (not ev.drafted and kind is not None):
                continue
            points.append((len(ev.drafted), ev.t_overhead))
            if ev.n_accepted < len(ev.drafted):        # reuse sync: seq_rm only, no decode
                rollback.append(max(0.0, ev.t_sync - process(len(ev.drafted) + 1)))
    if stop.is_set():
        raise CalibrationStopped()
    o0, o1 = _fit_overheads(points)
    return o_base, o0, o1, trimmed_mean(rollback, 0.1)


def _fit_overheads(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """(o0, o1) of o0 + o1·draft length by least squares over (draft length, seconds), the
    slowest tenth left out; neither is negative."""
    if not points:
        return 0.0, 0.0
    cut = sorted(p[1] for p in points)[int(0.9 * (len(points) - 1))]
    kept = [p for p in points if p[1] <= cut] or points
    x = np.array([[1.0, p[0]] for p in kept])
    y = np.array([p[1] for p in kept])
    if np.ptp(x[:, 1]) <= 0:
        return float(y.mean()), 0.0
    (o0, o1), *_ = np.linalg.lstsq(x, y, rcond=None)
    o0, o1 = float(o0), float(o1)
    if o1 < 0:
        return float(y.mean()), 0.0
    if o0 < 0:
        return 0.0, float(y.sum() / x[:, 1].sum())
    return o0, o1


# ============================================================================ cached or measured

def get_calibration(engine, k_max: int, *, sampler=None, n_past: int = DEFAULT_N_PAST,
                    reps: int = DEFAULT_REPS, time_budget_s: float = TIME_BUDGET_S,
                    refresh: bool = False, use_cache: bool = True, k_draft: int | None = None,
                    progress: Progress | None = None, stop: threading.Event | None = None,
                    meter: LoadMeter | None = None, mtp: bool = False) -> tuple[Calibration, bool]:
    """(calibration, from_cache): the cached figures for this pair and settings, or fresh ones.
    ``k_draft``, ``mtp``: see :func:`calibrate`.

    A cached calibration is trusted only after the drift check (:func:`check_timing`, a few
    single-token decodes, in a row and after a batch) agrees with the timings it recorded
    (:func:`cost.cache.drift_of`), and one taken beside other processes' work only while they
    still work (:func:`cost.cache.busy_then_quiet_now`); otherwise it is measured again and
    ``note`` says why. A fresh calibration is cached unless it
    was taken under load (``under_load``: it is still returned, for this run). ``meter``: see
    :func:`calibrate`."""
    key, desc = calibration_key(engine, k_max, sampler, n_past, k_draft, mtp)
    note = ""
    if use_cache and not refresh:
        cal = load_cached(key, k_max=k_max)
        if cal is not None:
            drift = drift_of(cal, check_timing(engine)) or busy_then_quiet_now(cal, _load_now)
            if drift is None:
                return cal, True
            note = drift
    cal = calibrate(engine, k_max, sampler=sampler, n_past=n_past, reps=reps, k_draft=k_draft,
                    time_budget_s=time_budget_s, progress=progress, stop=stop, meter=meter, mtp=mtp)
    cal = replace(cal, key=key, describe=desc)
    if use_cache and not cal.under_load:
        save_cached(cal)
    return replace(cal, note=note), False


def _load_now() -> LoadReading:
    """Other processes' CPU use over the next LOAD_LOOK_S."""
    meter = LoadMeter()
    time.sleep(LOAD_LOOK_S)
    return meter.reading()


def calibrate_pair(target, draft, settings, k_max: int, *, sampler=None, n_past: int | None = None,
                   progress: Progress | None = None, stop: threading.Event | None = None,
                   **options) -> tuple[Calibration, bool, dict]:
    """Load the pair with EngineSettings ``settings`` and get its calibration (cached,
    :func:`get_calibration`; ``options``: its other keywords): (calibration, from_cache, where
    each model computes). ``progress`` covers the load too."""
    say = progress or quiet
    say(0, 1, "loading the pair")
    with Engine(target, draft, settings) as engine:
        cal, cached = get_calibration(engine, k_max, sampler=sampler, n_past=n_past or DEFAULT_N_PAST,
                                      k_draft=k_max if draft is not None else None, progress=say,
                                      stop=stop, **options)
        return cal, cached, dict(engine.placement)


def policy_calibration(engine, spec, sampler=None, progress=None, stop=None) -> Calibration:
    """The calibration the ``cost`` draft policy predicts with (engine/draft_policy.py): this
    pair's, cached per settings (about ten seconds the first time; :func:`get_calibration`)."""
    cal, _ = get_calibration(engine, spec.n_max + 1, sampler=sampler, k_draft=spec.n_max + 1,
                             progress=progress, stop=stop)
    return cal
