"""Sweeps: drafters (llama.cpp's speculative types and chains of them) × draft models × draft
lengths × prompts, measured against the target alone and predicted (``specscope bench``, the
Compare view).

:func:`run_sweep` opens one engine per group of configurations (:func:`bench.settings.groups`),
calibrates it, then per prompt and repetition runs a baseline, every configuration in a rotating
order and a baseline again (the two bracket the speculative runs in time), each speculative run
checked for losslessness. The settings are in :mod:`.sweep_settings`, the rows in
:mod:`.sweep_rows`, the result and its tables in :mod:`.sweep_report`; why the sweep runs so, and
every column: docs/sweep.md.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from specscope.core.engine.drafters import DRAFT_MODEL, MODEL_TYPES
from specscope.core.engine.drafters.registry import TYPES
from specscope.core.engine.engine import Engine, EngineSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.engine.drafters.xvocab import choose_mode
from specscope.core.errors import ConfigError, IncompatiblePairError
from specscope.core.measure.cost.calibrate import CalibrationStopped, get_calibration
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.cpuload import LoadMeter
from specscope.core.measure.bench.lossless import check_lossless, execute, run_result
from specscope.core.measure.progress import Progress, quiet, within
from specscope.core.measure.bench.report import SweepResult
from specscope.core.measure.bench.rows import Cell, Row, build_rows
from specscope.core.measure.bench.settings import (MTP_TYPES, Config, SweepSettings, config_name, eog_bias,
                                                   groups, longest_draft, model_prompts, spec_for,
                                                   sweep_steps, typical_position, vocab_modes)

DEFAULT_REPEATS = 3          # `specscope bench` and the Compare view: a spread needs several


def run_sweep(s: SweepSettings, *, progress: Progress | None = None,
              stop: threading.Event | None = None, on_cell: Callable[[Cell], None] | None = None,
              on_calibrated: Callable[[str, Calibration, bool], None] | None = None,
              on_rows: Callable[[list[Row]], None] | None = None) -> SweepResult:
    """Run the sweep (see the module docs). Stop (``stop.set()``) ends it after the
    current run; the result then holds what was finished, with ``stopped`` set.

    Callbacks run on the calling thread: ``on_calibrated(draft, calibration, from_cache)``
    (draft "" for the n-gram-only group), ``on_cell(cell)`` after every speculative run,
    ``on_rows(rows)`` with the table so far."""
    sweep = _Sweep(prepared(s), progress, stop, on_cell, on_calibrated, on_rows)
    try:
        for draft_path, name, configs in groups(sweep.s):
            if sweep.stop.is_set() or not sweep.group(draft_path, name, configs):
                break
    finally:
        sweep.finish()
    return sweep.end()


def prepared(s: SweepSettings) -> SweepSettings:
    """The settings as the sweep runs them (validated): the sampler (with ``ignore_eos`` a
    logit bias against the target's end-of-generation tokens) and engine settings filled in."""
    s.validate()
    sampler = s.sampler or SamplerSettings()
    if s.ignore_eos:
        sampler = replace(sampler, logit_bias=tuple(sampler.logit_bias) + eog_bias(s.target))
    s = replace(s, sampler=sampler, engine=s.engine or EngineSettings())
    for config in (c for _, _, configs in groups(s) for c in configs):
        spec_for(s, config).validate()
    return s


class _Sweep:
    """A sweep while it runs: its settings, the result so far, and the steps done."""

    def __init__(self, s: SweepSettings, progress, stop, on_cell, on_calibrated, on_rows):
        self.s = s
        self.stop = stop or threading.Event()
        self.say = progress or quiet
        self.on_cell, self.on_calibrated, self.on_rows = on_cell, on_calibrated, on_rows
        self.total = sweep_steps(s)
        self.done = 0
        self.result = SweepResult(s)
        self.n_model_groups = sum(1 for path, _, _ in groups(s) if path is not None)
        self.meter = LoadMeter()
        self.t0 = time.perf_counter()

    def tell(self, what: str) -> None:
        self.say(self.done, self.total, what)

    def rows(self) -> list[Row]:
        return build_rows(self.result.cells, self.result.calibrations, self.s.sync, self.s.alpha)

    def group(self, draft_path: Path | None, name: str, configs: list[Config]) -> bool:
        """One engine's configurations, every prompt and repetition; False when Stop ended its
        calibration. A draft the target refuses runs in the vocabulary modes (:meth:`across_vocab`),
        or is skipped (--spec-vocab off, no mode can run) while other drafts remain."""
        s, what = self.s, name or "n-gram drafters"
        self.tell(f"{what}: loading")
        engine = None
        try:
            engine = Engine(s.target, draft_path, s.engine)
            configs = self.across_vocab(engine, name, configs)
        except IncompatiblePairError as exc:
            if engine is not None:
                engine.close()
            if self.n_model_groups == 1:
                raise
            self.result.skipped[name] = str(exc)      # the other drafts still run
            self.done += 1 + len(s.prompts) * s.repeats * (2 + len(configs))
            return True
        with engine:
            try:
                cal = self.calibrate(engine, name, configs)
            except CalibrationStopped:
                return False
            cells = {(c, p): Cell(name, c.n, p, c.drafter, c.p_min, c.vocab)
                     for c in configs for p, _ in s.prompts}
            self.result.cells.extend(cells.values())
            for p_name, text in model_prompts(s, engine):
                for rep in range(s.repeats):
                    k = rep % len(configs)
                    if self.stop.is_set() or not self.repetition(
                            engine, what, p_name, text, configs[k:] + configs[:k], cells, cal):
                        break
        return True

    def across_vocab(self, engine, name: str, configs: list[Config]) -> list[Config]:
        """The draft's configurations once per vocabulary mode it drafts in (:func:`vocab_modes`:
        both with a draft llama.cpp refuses), a mode this pair cannot run said in
        ``result.skipped``; llama.cpp's refusal (IncompatiblePairError) when no mode is left
        for a draft it refuses."""
        if engine.draft is None or engine.head is not None:
            return configs
        modes, why = [], {}
        for mode in vocab_modes(self.s.spec, bool(engine.vocab_failed)):
            try:
                choose_mode(replace(spec_for(self.s, configs[0]), vocab=mode), engine)
                modes.append(mode)
            except ConfigError as exc:
                why[config_name(name, DRAFT_MODEL, vocab=mode)] = str(exc)
        if not modes and engine.vocab_failed:
            raise IncompatiblePairError("; ".join([str(engine.vocab_refusal()), *why.values()]),
                                        engine.vocab_failed)
        if not modes and why:                   # a mode named by hand that this draft cannot run
            raise ConfigError(next(iter(why.values())))
        self.result.skipped.update(why)
        if not modes:
            return configs
        out = [replace(c, vocab=mode) for mode in modes for c in configs]
        self.total += (len(out) - len(configs)) * len(self.s.prompts) * self.s.repeats
        return out

    def calibrate(self, engine, name: str, configs: list[Config]) -> Calibration | None:
        """The group's calibration (cached or measured; None for a memory that cannot be
        calibrated, said in ``result.uncalibrated``), its model drafter's drafts timed as it
        drafts: the -md model's type, or draft-mtp's MTP blocks."""
        s, what = self.s, name or "n-gram drafters"
        self.tell(f"{what}: calibrating")
        why = uncalibratable(engine)
        if why:
            self.result.uncalibrated[name] = why
            cal = None
        else:
            k_draft = max((c.n for c in configs if set(c.types) & set(MODEL_TYPES)), default=0) + 1
            mtp = any(set(MTP_TYPES) & set(c.types) for c in configs)
            cal, cached = get_calibration(
                engine, max(longest_draft(s, c) for c in configs) + 1, sampler=s.sampler,
                refresh=s.recalibrate, use_cache=s.use_cache, time_budget_s=s.calibration_s,
                n_past=typical_position(engine, s),
                k_draft=k_draft if engine.draft is not None or mtp else None, mtp=mtp,
                progress=within(self.say, self.done, self.total, what), stop=self.stop)
            self.result.calibrations[name] = cal
            self.result.from_cache[name] = cached
            if self.on_calibrated:
                self.on_calibrated(name, cal, cached)
        self.done += 1
        self.tell(f"{what}: calibrated")
        return cal

    def baseline(self, engine, text: str):
        """One timed target-only run, or None when Stop was pressed during it."""
        run = engine.baseline(text, self.s.sampler, self.s.n_predict, self.stop)
        events = execute(run)
        return None if self.stop.is_set() else run_result("baseline", run, events)

    def repetition(self, engine, what: str, p_name: str, text: str, order: list[Config],
                   cells: dict, cal: Calibration | None) -> bool:
        """A baseline, every configuration in ``order``, a baseline again; False on Stop."""
        self.tell(f"{what}: {p_name} baseline")
        base = self.baseline(engine, text)
        if base is None:
            return False
        self.done += 1
        touched: list[Cell] = []
        for config in order:
            if self.stop.is_set():
                break
            cell = self.speculative(engine, config, p_name, text, cells[(config, p_name)], base, cal)
            if cell is None:
                break
            touched.append(cell)
        if self.stop.is_set():
            return False
        # a second baseline after the speculative runs brackets them in time
        self.tell(f"{what}: {p_name} baseline again")
        again = self.baseline(engine, text)
        if again is None:
            return False
        for cell in touched:
            cell.bases[-1].append(again)
        self.done += 1
        return True

    def speculative(self, engine, config: Config, p_name: str, text: str, cell: Cell, base,
                    cal: Calibration | None) -> Cell | None:
        """One configuration's run on one prompt, checked against the baseline; None when Stop
        cut it short."""
        s = self.s
        label = config.name + (f" n={config.n}" if config.n else "")
        self.tell(f"{label}: {p_name}")
        run = engine.speculative(text, spec_for(s, config), s.sampler, s.n_predict, self.stop,
                                 calibration=cal)   # the cost draft policy's
        events = execute(run)
        if self.stop.is_set() and run.finish == "stopped":
            return None
        res = run_result("spec", run, events, config.n)
        cell.add(res, base)
        # at temperature a type may draw with its program's own generator, not the target
        # sampler's: the same distribution, other tokens (registry.SpecType.own_rng)
        if s.lossless and (s.sampler.greedy or not any(TYPES[t].own_rng for t in config.types)):
            report = check_lossless(engine, run.prompt_tokens, base.tokens, res.tokens, events,
                                    sampler=s.sampler)
            cell.lossless.append(report)
            if not report.identical:
                self.result.lossless_notes.append(f"{label} {p_name}: {report.describe()}")
        self.done += 1
        if self.on_cell:
            self.on_cell(cell)
        if self.on_rows:
            self.on_rows(self.rows())
        return cell

    def finish(self) -> None:
        """What was finished, whether Stop ended it, the rows, the time and the load."""
        r = self.result
        r.cells = [c for c in r.cells if c.spec]
        r.stopped = self.stop.is_set()
        r.rows = self.rows()
        r.seconds = time.perf_counter() - self.t0
        r.others_cpu = self.meter.others_share()

    def end(self) -> SweepResult:
        r = self.result
        if self.n_model_groups and len(r.skipped) == self.n_model_groups and not r.rows:
            raise IncompatiblePairError("no draft can draft for this target: "
                                        + "; ".join(r.skipped.values()))
        self.say(self.total if not r.stopped else self.done, self.total,
                 "stopped" if r.stopped else "done")
        return r


def uncalibratable(engine) -> str:
    """Why the calibration cannot time this pair ("" when it can): it rolls the caches back
    with partial sequence removal, which recurrent and hybrid memories do not offer (their
    rounds restore state checkpoints and replay, which the calibrated model does not price)."""
    roles = [name for name, ok in (("target", engine.tgt_removable),
                                   ("draft", engine.dft is None or engine.dft_removable)) if not ok]
    if not roles:
        return ""
    return (f"not calibrated: the {' and '.join(roles)} keep{'s' if len(roles) == 1 else ''} a "
            "recurrent or hybrid memory, which cannot drop part of a sequence; its rounds restore "
            "state checkpoints and replay, which the calibrated model does not price. Measured "
            "and textbook figures only (the textbook's f from the runs)")
