"""Calibration: what a verification batch and a draft token cost on *this* machine.

The textbook model prices a speculative round at ``n·f + 1`` target
passes: it assumes that verifying ``n + 1`` tokens in one batch costs as much as
one token. On a memory-bound GPU that is close to true; on a small CPU it is
not (on this project's 2-core machine verification cost
grows almost linearly with the batch). So SpecScope measures.

Measured figures (all in *target-token units*: seconds ÷ the target's median
single-token decode time ``t1``)

``c(k)``      the target's cost of one decode of a batch of k tokens with logits on
              every row (a verification batch), k = 1 .. k_max; c(1) = 1.
              ``c_raw`` are the medians as measured; ``c`` is their non-decreasing
              fit (pool-adjacent-violators over k ≥ 2, floored at 1; it only evens
              out noise: a batch of k + 1 tokens cannot really be cheaper than one
              of k) and is what the predictions use.
``f``         the draft's single-token decode (with logits) ÷ ``t1``.
``f_first``   the same for the first draft decode of a round that follows a replay
              sync decode (another shape, so llama.cpp rebuilds the draft's graph).
``f_batch(k)`` the draft's decode of a k-token batch without logits (the ``replay``
              sync decodes the k = n + 1 verification batch); f_batch(1) is the
              ``reuse`` sync's one token after a full acceptance, which the engine
              decodes with its row's logits, as a draft step (then the next draft step
              keeps llama.cpp's graph: no rebuild after a reuse sync).
``s``         sampling one row with the run's target sampler chain.
``b``         a target-only run's token: a decode in a stream of single-token decodes and
              sampling it (the baseline's B; c(1) = 1 is a single-token decode between
              other shapes, as in a speculative round whose draft was empty).
``o_base``    Python time per target-only round (the engine's loop, outside llama.cpp).
``o0, o1``    Python time per speculative round, o0 + o1·(draft length), fitted by
              least squares over the rounds of three short speculative runs
              (n = 1, about k_max/2, k_max − 1; the slowest tenth left out).
``r``         rolling both caches back after a round (the seq_rm calls), from the
              same runs' rounds that needed no sync decode.

How it is measured, robustly on a shared machine: both contexts are filled with
``n_past`` tokens (attention cost depends on the position); then the llama.cpp
calls of real rounds are replayed in their order — for a verification batch of
k tokens: k − 1 single-token draft decodes, the target's k-token decode, a draft
sync decode (alternately one row, as ``reuse`` after a full acceptance, and k
rows, as ``replay``), rolling both caches back to ``n_past`` after each round,
with the Python a real round does between its decodes (the draft's top-10,
sampling the verified rows): how long llama.cpp's worker threads wait between
two decodes changes what the next one costs (on 2 threads, leaving that work
out made every prediction ~9 % optimistic).
k = 1 rounds are single-token decodes between other shapes, as in a speculative round whose
draft was empty. The target alone is timed apart, in ``STREAM_REPS`` of the repetitions: a
stream of ``BASELINE_STREAM`` single-token decodes whose last ``BASELINE_TIMED`` give ``b``
(decode, plus sampling s). llama.cpp runs a stream of one shape faster than the same decode
between other shapes: the demo pair, one thread, in one process, 1.8 ms right after a round
with a 5-token batch, easing over ~17 decodes to about 0.9 ms (SmolLM2 about 10 % faster);
version 8, which priced B with t1, over-predicted the demo pair's speed-ups by 20-60 %
(``tests/bench/bench_calibration.py``: the baseline's measured time was 0.54-0.78 of its charge).
Every k runs a block of
``ROUNDS_PER_BLOCK`` rounds in a row whose first round is not timed: like a
real run, consecutive decodes of one shape reuse llama.cpp's compute graph
(timing each shape once between other shapes cost every decode a graph
rebuild — about 0.2 ms, 12 % of a single token of a 256-wide 6-layer model on
this 2-core machine — which inflated c(1), the unit, and so skewed c(k) low).
The draft lengths come in a fresh random order every repetition, so a burst of
load from elsewhere hits all of them alike; figures are medians over the
repetitions (at most ``reps``, at least ``MIN_REPS``, within
``time_budget_s``). Python overheads and the rollback come from short engine
runs (trimmed means over rounds).

Accuracy, measured: on the demo pair on the project's 2-core CPU (quiet machine, version 9,
``specscope bench --recalibrate -r 3``, n = 1, 2, 4, 8, two runs) the calibrated prediction
was within 9.2 % of the measured speed-up, where the textbook one was 155-230 % too high;
the synthetic sweep at one thread (n = 3, six acceptance levels) 11-17 % high. The demo
pair's sub-millisecond decodes drift by ±25 % from minute to minute on this machine. On a
busy machine llama.cpp's threads stall whenever one loses its core, and no prediction
survives that: ``specscope bench`` reports how much CPU other processes took.

On SmolLM2-135M Q4_1 as its own draft (49,152-token vocabulary) the prediction was 4-10 %
too high. One cause, measured and fixed in version 8: the engine decodes the reuse
sync's one row *with* its logits (so that the next draft step keeps llama.cpp's graph), and
with a 49k vocabulary the output row is about a sixth of a decode (CPU time, one thread: 0.98
of a draft step with it, 0.82 without), while version 7 timed that decode without logits and
charged a graph rebuild after it that the engine does not pay (+4 % of a step on SmolLM2,
+54 % on the demo pair's tiny draft). ``tests/bench/bench_calibration.py`` prints the error before
and after, and the measured and modelled time of every phase of a round.

The calibrated prediction (per round with draft length n; all in target-token units)

    tokens per round   T(n) = 1 + E,            E = Σ_{i=1..n} a_i
    cost per round     C(n) = n·f + (f_first − f)·p_sync   draft decodes (seed + n − 1); p_sync =
                                                           0 (reuse) or 1 (replay): a graph rebuild
                            + c(n + 1)                     one verification batch
                            + s·(1 + E)                    sampling the rows up to the first mismatch
                            + sync(n)                      reuse: r + f_batch(1)·a_n   (one missing row
                                                                                  after a full acceptance)
                                                           replay: r + f_batch(n + 1)  (llama.cpp's re-decode)
                            + o0 + o1·n                    Python time of the round
    baseline per token B   = b + o_base                    b: a target-only run's decode and
                                                           sampling per token (1 + s if unknown)
    speed-up           S(n) = T(n)·B / C(n)

Draftless drafters (llama.cpp's n-gram types) and chains: :func:`chain_round_cost` averages
the round over the drafter that won it. An n-gram round has no draft decodes; its draft cost
is the measured Python lookup time per round (``RoundEvent.t_lookup``, ÷ t1) instead of
n·f, and its verification is priced per draft length, Σ_L P(L)·c(L + 1) (n-gram drafts run
to 48 tokens and more, so c(k) is timed at spaced sizes past the draft model's n_max + 1 and
interpolated between them); rounds without a draft cost one target token.

``a_i`` is the *unconditional* acceptance at draft position i — the share of
drafts whose first i tokens were all accepted (``Stats.position_acceptance``)
— or ``α^i`` for an assumed per-token acceptance α (then E is
:func:`specscope.core.measure.pairing.expected_accepted`). a_n is therefore the
probability of a full acceptance. The textbook prediction, for comparison, is
the textbook ``(E + 1) / (n·f + 1)`` with the same E and f
(:func:`specscope.core.measure.pairing.textbook_speedup` for an assumed α).

Calibrations are cached per pair and settings (model files' paths, sizes and
modification times, engine settings, sampler, k_max, n_past, machine) as JSON
in the user's cache directory (``$SPECSCOPE_CACHE_DIR``, else
``$XDG_CACHE_HOME/specscope``, else ``~/.cache/specscope``).

A cache only stays true if it was measured on a quiet machine and the machine has not changed
since (a calibration cached while a compile ran beside it made every later
prediction 10-13 % too low). So every calibration records the CPU load over its own window
(:mod:`.cpuload`: other processes' CPU time from ``/proc/stat`` less this process's own, as a
share of the cores, and the load average), and one taken while other processes competed for
the cores llama.cpp's threads decode on (:func:`is_under_load`) is used for the run at hand,
flagged ``under_load``, and not cached. A cached calibration is trusted only after a drift
check (:func:`check_timing`: the target's single-token decode at position CHECK_POSITION, a
median of CHECK_REPS, about 50 ms on the demo pair) agrees with the same check taken with it
within DRIFT_TOLERANCE; otherwise it is measured again and ``note`` says why. A cache file of
another CALIBRATION_VERSION is measured again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import statistics
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, asdict as _asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from specscope.core.cache import cache_root, file_id, read_json, write_json
from specscope.core.engine.drafters.base import NgramMapParams
from specscope.core.engine.drafters.model import DRAFT_TOP_K, top_values
from specscope.core.engine.engine import Engine, SpecSettings
from specscope.core.engine.sampling import SamplerSettings, build_chain
from specscope.core.errors import ConfigError
from specscope.core.measure.cpuload import LoadMeter, LoadReading
from specscope.core.measure.pairing import textbook_from_accepted, textbook_speedup

CALIBRATION_VERSION = 9          # a cache file of another version is measured again
DEFAULT_N_PAST = 128          # calibrate at the position of a typical round
DEFAULT_REPS = 25             # timed repetitions of every decode kind (at most)
MIN_REPS = 5                  # ... and at least, whatever the time budget
TIME_BUDGET_S = 4.0           # stop repeating after this long (once MIN_REPS are in)
WARMUP_REPS = 1
DENSE_UP_TO = 9               # every batch size up to here is timed (timed_batches)
BASELINE_STREAM = 32          # a target-only stream of single-token decodes (b), in the first
BASELINE_TIMED = 16           # STREAM_REPS repetitions; its last BASELINE_TIMED are timed
STREAM_REPS = 6
ROUNDS_PER_BLOCK = 3          # simulated rounds per draft length in a row (the first is not timed)
OVERHEAD_TOKENS = 96          # tokens per overhead-calibration run
SYNC_MODES = ("reuse", "replay")
LOAD_SLACK_CORES = 0.2        # other processes may take this much of the cores llama.cpp's threads
                              # need before a calibration counts as taken under load (module docs)
CHECK_POSITION = 16           # the drift check decodes one target token here (a short prefix: cheap)
CHECK_REPS = 7                # ... this many times (median), after CHECK_WARMUP untimed decodes
CHECK_WARMUP = 2
DRIFT_TOLERANCE = 0.15        # the check's median further than this from the cached one: recalibrate

CALIBRATION_PROMPT = (
    "def read_config(path):\n"
    "    \"\"\"Read a configuration file and return a dictionary of its settings.\"\"\"\n"
    "    settings = {}\n"
    "    with open(path) as handle:\n"
    "        for line in handle:\n")

Progress = Callable[[float, str], None]   # (fraction done, what)


# ============================================================================ the figures

@dataclass(frozen=True)
class Calibration:
    """Measured cost figures of one pair under one set of settings (see the module docs)."""

    k_max: int                         # largest verification batch measured (n_max + 1)
    n_past: int                        # position the decodes were timed at
    t1: float                          # seconds: the target's single-token decode (the unit)
    c_raw: tuple[float, ...]           # c_raw[k-1]: measured median cost of a k-token batch
    c: tuple[float, ...]               # non-decreasing fit of c_raw (used by the predictions)
    f: float                           # the draft's single-token decode with logits
    f_batch: tuple[float, ...]         # f_batch[k-1]: draft decode of a k-token batch, no logits
    f_first: float = 0.0               # f for the first of a round after a sync decode (graph rebuilt)
    s: float = 0.0                     # sampling one row with the target's sampler chain
    o_base: float = 0.0                # Python time per baseline round
    o0: float = 0.0                    # Python time per speculative round: o0 + o1·draft length
    o1: float = 0.0
    r: float = 0.0                     # rolling both caches back after a round (seq_rm calls)
    reps: int = 0
    seconds: float = 0.0               # how long calibrating took
    created: float = 0.0               # time.time() when measured
    key: str = ""                      # cache key (pair and settings)
    describe: dict = field(default_factory=dict)   # what was calibrated: models, settings
    k_draft: int = -1                  # rounds of k ≤ k_draft had draft decodes timed (0: no draft
                                       # model; -1: all k, as before k_draft existed)
    version: int = 0                   # CALIBRATION_VERSION when measured (0: unknown)
    load: dict = field(default_factory=dict)   # cpuload.LoadReading over the calibration's window
    under_load: bool = False           # taken while other processes competed for llama.cpp's cores
    check_t: float = 0.0               # seconds: the drift check's timing, taken with the calibration
    note: str = ""                     # why this calibration was measured now (not cached)
    reuse_rebuilds: bool = False       # measured with calibrate(legacy=True): reuse's sync row
                                       # without logits, a draft graph rebuild after it
    b: float = 0.0                     # a target-only run's token, decode and sampling, timed in
                                       # streams of single-token decodes (0: unknown, then 1 + s)

    @property
    def has_draft(self) -> bool:
        return self.k_draft != 0

    def cost(self, k: int) -> float:
        """c(k), the fitted cost of a k-token verification batch (k ≥ 1)."""
        return _at(self.c, k, "c")

    def round_cost(self, n: int, acceptance: Sequence[float], sync: str = "reuse") -> "RoundCost":
        """:func:`round_cost` of this calibration (what the cost draft policy prices with)."""
        return round_cost(self, n, acceptance, sync)

    @property
    def baseline_token(self) -> float:
        """B, what the target alone pays per token: its decode and sampling in a stream of
        single-token decodes (``b``), and the Python of its loop."""
        return (self.b if self.b > 0 else 1.0 + self.s) + self.o_base

    def draft_batch(self, k: int) -> float:
        """f_batch(k), the draft's cost of a k-token batch without logits."""
        return _at(self.f_batch, k, "f_batch")

    @property
    def load_reading(self) -> LoadReading | None:
        return LoadReading.from_dict(self.load) if self.load else None

    def status(self, from_cache: bool) -> str:
        """One line: where these figures come from and whether to trust them (the CLI, the
        window)."""
        reading = self.load_reading
        load = reading.describe() if reading is not None else "CPU load not recorded"
        if self.under_load:
            return (f"TAKEN UNDER LOAD ({load}): not cached, used for this run only; "
                    "predictions may be off, measure again on a quieter machine")
        if from_cache:
            return (f"cached, measured {self.cached_age_s / 60:.0f} min ago ({load}); "
                    "the drift check agreed (--recalibrate to measure again)")
        return f"measured now ({load})" + (f"; {self.note}" if self.note else "")

    @property
    def cached_age_s(self) -> float:
        return max(0.0, time.time() - self.created) if self.created else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("c_raw", "c", "f_batch"):
            d[key] = list(d[key])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        d = dict(d)
        for key in ("c_raw", "c", "f_batch"):
            d[key] = tuple(d[key])
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})

    def lines(self) -> list[str]:
        """The figures, for a terminal or a label."""
        ks = range(1, self.k_max + 1)
        draft = (f"draft token f = {self.f:.3f} (first of a round {self.f_first:.3f}); "
                 if self.has_draft else "no draft model (n-gram drafters only); ")
        return [
            f"target token t1 = {self.t1 * 1e3:.3f} ms at position {self.n_past}; {draft}"
            f"sampling s = {self.s:.3f} per row",
            "c(k)       " + " ".join(f"{k}:{self.cost(k):.2f}" for k in ks),
            "c raw      " + " ".join(f"{k}:{self.c_raw[k - 1]:.2f}" for k in ks),
        ] + ([
            "f_batch(k) " + " ".join(f"{k}:{self.draft_batch(k):.3f}" for k in ks),
        ] if self.has_draft else []) + [
            f"target alone per token (a stream of single-token decodes, sampled) b = {self.b:.3f}",
            f"python per round: baseline {self.o_base:.3f}, speculative {self.o0:.3f} + "
            f"{self.o1:.3f}·n; rollback r = {self.r:.3f}  (target-token units; {self.reps} reps, "
            f"{self.seconds:.1f} s)",
        ]


def _at(values: Sequence[float], k: int, name: str) -> float:
    if k < 1:
        raise ConfigError(f"{name}({k}) is undefined: batches hold at least one token")
    if k > len(values):
        raise ConfigError(f"{name}({k}) was not calibrated (k_max = {len(values)}); "
                          f"recalibrate with a larger draft length")
    return values[k - 1]


def cost_fit(c_raw: Sequence[float]) -> tuple[float, ...]:
    """c from the measured c_raw: c(1) = 1, and for k ≥ 2 the non-decreasing fit of
    c_raw(2..), floored at 1 (a batch holding a token cannot cost less than that token)."""
    if not c_raw:
        return ()
    return (1.0,) + tuple(max(1.0, v) for v in monotone_fit(c_raw[1:]))


def monotone_fit(values: Sequence[float]) -> tuple[float, ...]:
    """Least-squares non-decreasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []      # [sum, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    out: list[float] = []
    for s, n in blocks:
        out.extend([s / n] * int(n))
    return tuple(out)


# ============================================================================ predictions (pure)

def alpha_acceptance(alpha: float, n: int) -> tuple[float, ...]:
    """Unconditional per-position acceptance a_i = α^i, i = 1..n."""
    return tuple(alpha ** i for i in range(1, n + 1))


def textbook_prediction(n: int, f: float, *, acceptance: Sequence[float] | None = None,
                        alpha: float | None = None) -> float:
    """The textbook speed-up from measured per-position acceptance or an assumed α."""
    if alpha is not None:
        return textbook_speedup(alpha, n, f)
    if acceptance is None:
        raise ConfigError("a prediction needs the per-position acceptance or an assumed α")
    return textbook_from_accepted(sum(acceptance[:n]), n, f)


@dataclass(frozen=True)
class RoundCost:
    """The calibrated model's account of one round (target-token units)."""
    tokens: float        # 1 + E
    draft: float         # n·f
    verify: float        # c(n + 1)
    sampling: float      # s·(1 + E)
    sync: float
    overhead: float      # o0 + o1·n
    baseline: float      # B, the cost of one target-only token

    @property
    def total(self) -> float:
        return self.draft + self.verify + self.sampling + self.sync + self.overhead

    @property
    def speedup(self) -> float:
        return self.tokens * self.baseline / self.total


def round_cost(cal: Calibration, n: int, acceptance: Sequence[float], sync: str = "reuse",
               *, n_draft: float | None = None, p_full: float | None = None) -> RoundCost:
    """The calibrated model for draft length n (see the module docs).

    ``acceptance`` holds a_1..a_n (extra entries are ignored, missing ones count 0).
    ``n_draft`` is the mean number of draft decodes per round when it is not n
    (drafts stopped by p_min or the budget); the verification batch is then
    priced by linear interpolation of c between its neighbours. ``p_full`` is the
    share of fully accepted drafts when it is not a_n (the same drafts of varying
    length)."""
    if n < 1:
        raise ConfigError(f"a speculative round drafts at least one token, not {n}")
    if sync not in SYNC_MODES:
        raise ConfigError(f"sync mode must be one of {', '.join(SYNC_MODES)}, not {sync!r}")
    a = [float(x) for x in list(acceptance)[:n]] + [0.0] * max(0, n - len(acceptance))
    expected = sum(a)
    length = float(n if n_draft is None else n_draft)
    verify = _interp(cal.c, length + 1.0)
    if sync == "reuse":
        sync_cost = cal.r + cal.draft_batch(1) * (a[n - 1] if p_full is None else float(p_full))
    else:
        sync_cost = cal.r + _interp(cal.f_batch, length + 1.0)
    # the first draft decode of a round rebuilds the draft's graph when the round before
    # ended with a sync decode of another shape: replay's batch, always; reuse's one row is
    # decoded with its logits, a draft step's own graph (version 7 timed it without them,
    # then a rebuild after it: ``reuse_rebuilds``)
    if sync == "replay":
        p_sync = 1.0
    else:
        p_sync = (a[n - 1] if p_full is None else float(p_full)) if cal.reuse_rebuilds else 0.0
    rebuild = max(0.0, cal.f_first - cal.f) * p_sync if cal.f_first else 0.0
    return RoundCost(tokens=1.0 + expected, draft=length * cal.f + rebuild, verify=verify,
                     sampling=cal.s * (1.0 + expected), sync=sync_cost,
                     overhead=cal.o0 + cal.o1 * length,
                     baseline=cal.baseline_token)


def _interp(values: Sequence[float], k: float) -> float:
    lo = int(k)
    if lo < 1:
        return values[0]
    if lo >= len(values):
        if k > len(values) + 1e-9:
            raise ConfigError(f"a batch of {k:g} tokens was not calibrated (k_max = {len(values)}); "
                              "recalibrate with a larger draft length")
        return values[-1]
    frac = k - lo
    return values[lo - 1] * (1.0 - frac) + values[lo] * frac


def calibrated_speedup(cal: Calibration, n: int, *, acceptance: Sequence[float] | None = None,
                       alpha: float | None = None, sync: str = "reuse",
                       n_draft: float | None = None) -> float:
    """S(n) = (1 + E)·B / C(n): the calibrated prediction (module docs)."""
    if alpha is not None:
        acceptance = alpha_acceptance(alpha, n)
    if acceptance is None:
        raise ConfigError("a prediction needs the per-position acceptance or an assumed α")
    return round_cost(cal, n, acceptance, sync, n_draft=n_draft).speedup


def chain_round_cost(cal: Calibration, drafters: Sequence, n_rounds: int, *, n_max: int,
                     lookup: float, sync: str = "reuse", draft_model: bool = False) -> RoundCost:
    """The calibrated model for a chain of drafters (or one n-gram drafter), per round averaged
    over all ``n_rounds`` rounds of the runs, in target-token units.

    ``drafters`` are the runs' per-drafter counts (``stats.DrafterStats``: the rounds each one
    won). A round drafted by ``draft-simple`` costs what :func:`round_cost` says (its own
    per-position acceptance, mean draft length, n_max). A round drafted by an n-gram drafter
    has no draft decodes: it pays the verification of its draft, Σ_L P(L)·c(L + 1) over its
    draft lengths L, sampling, the rollback r, Python o0 + o1·L, and, when the draft model is
    in the chain (``draft_model``), the draft cache's catch-up: reuse decodes the 1 + accepted
    kept rows, Σ_j P(j)·f_batch(1 + j), replay the whole batch. A round without a draft costs
    c(1) + s + r + o0. Every round also pays ``lookup``, the measured Python time of the
    n-gram drafters per round (their draft and accept calls), which replaces the draft
    model's c(k) as the draft cost of draftless drafters."""
    if n_rounds <= 0:
        raise ConfigError("a prediction needs at least one round")
    total = dict(tokens=0.0, draft=0.0, verify=0.0, sampling=0.0, sync=0.0, overhead=0.0)

    def add(weight: float, **parts: float) -> None:
        for key, value in parts.items():
            total[key] += weight * value

    left = float(n_rounds)
    for d in drafters:
        rounds = d.n_draft_rounds
        if rounds <= 0:
            continue
        left -= rounds
        w = rounds / n_rounds
        expected = d.n_accept / rounds
        mean_len = d.n_drafted / rounds
        if d.name == "draft-simple":
            a = [x / rounds for x in d.accepted_at]
            rc = round_cost(cal, n_max, a, sync, n_draft=min(float(n_max), mean_len))
            add(w, tokens=rc.tokens, draft=rc.draft, verify=rc.verify, sampling=rc.sampling,
                sync=rc.sync, overhead=rc.overhead)
            continue
        lengths = _exact_counts(d.drafted_at, rounds)       # rounds per draft length L
        verify = sum(count * cal.cost(length + 1) for length, count in lengths.items()) / rounds
        catch_up = 0.0
        if draft_model:
            if sync == "replay":
                catch_up = sum(c * cal.draft_batch(length + 1) for length, c in lengths.items()) / rounds
            else:
                catch_up = sum(c * cal.draft_batch(j + 1) for j, c in enumerate(d.accepted_hist)) / rounds
        add(w, tokens=1.0 + expected, verify=verify, sampling=cal.s * (1.0 + expected),
            sync=cal.r + catch_up, overhead=cal.o0 + cal.o1 * mean_len)
    if left > 0:                                               # rounds without a draft
        add(left / n_rounds, tokens=1.0, verify=1.0, sampling=cal.s, sync=cal.r, overhead=cal.o0)
    total["draft"] += lookup
    return RoundCost(**total, baseline=cal.baseline_token)


def _exact_counts(at_least: Sequence[int], rounds: int) -> dict[int, int]:
    """{L: rounds whose draft had exactly L tokens} from per-position counts (how many drafts
    reached position i): at_least[L-1] − at_least[L]."""
    counts = {}
    for i, n in enumerate(at_least):
        exact = n - (at_least[i + 1] if i + 1 < len(at_least) else 0)
        if exact:
            counts[i + 1] = exact
    return counts


# ============================================================================ measuring

def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def trimmed_mean(xs: Sequence[float], trim: float = 0.2) -> float:
    """Mean of the values left after dropping the lowest and highest ``trim`` share."""
    if not xs:
        return 0.0
    ys = sorted(xs)
    k = int(len(ys) * trim)
    ys = ys[k:len(ys) - k] or ys
    return sum(ys) / len(ys)


ESTIMATOR = _median        # how repeated decode timings are summarised


def _filler_tokens(engine, n: int) -> list[int]:
    """n plausible tokens (a code snippet, repeated) to fill the caches with."""
    base = engine.target.tokenize(CALIBRATION_PROMPT * 4, add_special=False)
    base = [t for t in base if not engine.target.is_eog(t)] or [0]
    return [base[i % len(base)] for i in range(n)]


def calibrate(engine, k_max: int, *, sampler=None, n_past: int = DEFAULT_N_PAST,
              reps: int = DEFAULT_REPS, time_budget_s: float = TIME_BUDGET_S,
              overhead_runs: bool = True, k_draft: int | None = None,
              progress: Progress | None = None, stop: threading.Event | None = None,
              seed: int = 0, meter: LoadMeter | None = None, legacy: bool = False,
              clock: Callable[[], float] = time.perf_counter) -> Calibration:
    """Measure c(k) for k = 1..k_max, f, f_batch, s and the Python overheads.

    Clears both contexts. ``sampler`` is the target's SamplerSettings of the runs to predict
    (sampling cost; default greedy). ``k_draft``: the rounds of a k-token verification batch
    decode k − 1 draft tokens first only for k ≤ k_draft (the draft model's n_max + 1; default
    k_max): larger batches are what n-gram drafters verify, with no draft decodes before them.
    Without a draft model (``engine.draft`` None: an n-gram-only configuration) only the
    target is timed; f and f_batch are 0.

    ``meter`` (default: a fresh :class:`~.cpuload.LoadMeter`, started here) reads how busy other
    processes kept the CPUs over the calibration's window; the figures record it, and
    ``under_load`` says whether it was more than the cores llama.cpp's threads left free
    (:func:`is_under_load`).

    ``legacy`` measures as version 7 did (tests/bench/bench_calibration.py's "before"): the reuse
    sync's one-row decode without logits (the engine decodes it with them, so that the next
    draft step keeps its graph) and so a draft graph rebuild after it. ``clock`` times the
    decodes and the sampling (tests/bench/bench_calibration.py --cpu-clock: ``time.thread_time``, with
    one thread per context the CPU time a decode takes, which a busy machine inflates far less
    than wall time); the Python overheads are always wall time from the engine's rounds."""
    if k_max < 1:
        raise ConfigError(f"k_max must be >= 1, not {k_max}")
    has_draft = engine.draft is not None
    k_draft = 0 if not has_draft else k_max if k_draft is None else max(1, min(k_draft, k_max))
    sampler = sampler or SamplerSettings()
    n_ctx = engine.tgt.n_ctx
    n_past = max(1, min(n_past, n_ctx - k_max - 1))
    if k_max > min(engine.tgt.n_batch, engine.dft.n_batch if has_draft else engine.tgt.n_batch):
        raise ConfigError(f"a batch of {k_max} tokens exceeds the batch size")
    stop = stop or threading.Event()
    say = progress or (lambda frac, what: None)
    t_start = time.perf_counter()
    meter = meter or LoadMeter()
    tgt, dft, batch, dbatch = engine.tgt, engine.dft, engine.batch, engine.dbatch
    tokens = _filler_tokens(engine, n_past + k_max)

    closers: list = []
    with ExitStack() as held:
        held.enter_context(engine.exclusive("a calibration"))
        held.callback(lambda: [close() for close in closers])
        # fill both caches with [0, n_past)
        for ctx, b in ((tgt, batch), (dft, dbatch))[:2 if has_draft else 1]:
            ctx.prefill(tokens[:n_past], b, "the calibration prefix")
        removable = engine.tgt_removable and engine.dft_removable
        if not removable:
            raise ConfigError("calibration needs models whose caches can drop part of a "
                              "sequence (attention KV caches); recurrent and hybrid memories are "
                              "not supported: their rounds restore state checkpoints and replay, "
                              "which the calibrated model does not price")

        def time_decode(ctx, b, seq, pos, logits, what) -> float:
            b.fill(seq, pos, logits=logits)
            t = clock()
            ctx.decode(b, what)
            return clock() - t

        def draft_step_work(ctx) -> None:
            """The Python a real draft step does between two decodes (the engine's top-10
            of the draft's logits): the time between decodes changes how long llama.cpp's
            worker threads wait, and so what the next decode costs."""
            logits = ctx.logits(1)[0]
            top, best = top_values(logits, DRAFT_TOP_K)
            float(1.0 / np.exp(top - logits[best]).sum())

        def block(k: int, keep: bool) -> None:
            """ROUNDS_PER_BLOCK simulated rounds with a verification batch of k tokens,
            the llama.cpp calls of a real round in their order (k = 1: baseline rounds)."""
            rebuilt = True                       # the draft's last decode had another shape
            for r in range(ROUNDS_PER_BLOCK):
                record = keep and r > 0          # the first round of a block rebuilds graphs
                pos = n_past
                if 1 < k <= k_draft:             # 1. draft: seed + k - 2 more, one token each
                    for i in range(k - 1):
                        dt = time_decode(dft, dbatch, tokens[pos + i:pos + i + 1], pos + i, "all",
                                         "a calibration draft token")
                        if record:                  # the first may follow a sync decode of another shape
                            times[("d0", 1) if i == 0 and rebuilt else ("d", 1)].append(dt)
                        draft_step_work(dft)
                dt = time_decode(tgt, batch, tokens[pos:pos + k], pos, "all",   # 2. verify
                                 "a calibration batch")
                if record:
                    times[("t", k)].append(dt)
                for row in range(k):             # the rows a round samples (greedy here)
                    greedy.sample(tgt, row)
                tgt.seq_rm(pos, -1)
                if k > 1 and has_draft:          # 3. sync: reuse (one row) or replay (k rows);
                    one = r % 2 and k <= k_draft     # past k_draft the draft holds no rows to reuse
                    dft.seq_rm(pos + (k - 1 if one else 0), -1)
                    sync_k = 1 if one else k
                    p0 = pos + k - 1 if one else pos
                    # the engine decodes one row with its logits: a draft step's graph, kept
                    row_logits = "none" if legacy else "last"
                    dt = time_decode(dft, dbatch, tokens[p0:p0 + sync_k], p0,
                                     row_logits if sync_k == 1 else "none", "a calibration draft batch")
                    rebuilt = sync_k > 1 or legacy
                    if record:
                        times[("db", sync_k)].append(dt)
                    dft.seq_rm(pos, -1)

        def stream() -> None:
            """A target-only run's decodes: BASELINE_STREAM single-token decodes in a row,
            sampled; llama.cpp speeds up over the first ~16 after another shape, so only the
            last BASELINE_TIMED are timed (``b``)."""
            for r in range(BASELINE_STREAM):
                dt = time_decode(tgt, batch, tokens[n_past:n_past + 1], n_past, "all",
                                 "a calibration token")
                greedy.sample(tgt, 0)
                tgt.seq_rm(n_past, -1)
                if r >= BASELINE_STREAM - BASELINE_TIMED:
                    times[("b", 1)].append(dt)

        greedy = build_chain(engine.target, SamplerSettings())
        closers.append(greedy.close)
        items = timed_batches(k_max, k_draft)
        times: dict[tuple[str, int], list[float]] = {("t", k): [] for k in range(1, k_max + 1)}
        times.update({("db", k): [] for k in range(1, k_max + 1)})
        times[("d", 1)] = []
        times[("d0", 1)] = []
        times[("b", 1)] = []
        rng = random.Random(seed)
        total = WARMUP_REPS + reps
        t_timing = clock()
        done_reps = 0
        for rep in range(total):
            if stop.is_set():
                raise CalibrationStopped()
            if rep >= WARMUP_REPS + MIN_REPS and clock() - t_timing > time_budget_s:
                break
            order = items[:] + ([0] if WARMUP_REPS <= rep < WARMUP_REPS + STREAM_REPS else [])
            rng.shuffle(order)
            for k in order:
                if k == 0:
                    stream()
                else:
                    block(k, rep >= WARMUP_REPS)
            done_reps = max(0, rep + 1 - WARMUP_REPS)
            say(0.8 * min(1.0, max((rep + 1) / total, (clock() - t_timing) / time_budget_s)),
                "timing decodes")
        if not times[("d", 1)]:                 # k_max ≤ 2: no second draft decode in a round
            times[("d", 1)] = list(times[("d0", 1)])
        if has_draft and (k_draft == 1 or not times[("db", 1)] or not times[("d", 1)]):
            # no draft rounds: time the draft on its own
            for _ in range(5):
                times[("d", 1)].append(time_decode(dft, dbatch, tokens[n_past:n_past + 1], n_past, "all",
                                                   "a calibration draft token"))
                dft.seq_rm(n_past, -1)
                times[("db", 1)].append(time_decode(dft, dbatch, tokens[n_past:n_past + 1], n_past, "none",
                                                    "a calibration draft batch"))
                dft.seq_rm(n_past, -1)

        # sampling cost per row with the runs' sampler chain
        batch.fill(tokens[n_past:n_past + k_max], n_past, logits="all")
        tgt.decode(batch, "a calibration batch")
        sample_times = []
        for _ in range(5):
            chain = build_chain(engine.target, sampler)
            try:
                for row in range(k_max):
                    t = clock()
                    chain.sample(tgt, row)
                    sample_times.append(clock() - t)
            finally:
                chain.close()
        tgt.seq_rm(n_past, -1)
        check_t = _check_timing(engine, _filler_tokens(engine, CHECK_POSITION + 1))   # clears the target
        if has_draft:
            dft.clear()

    est = ESTIMATOR
    t1 = est(times[("t", 1)])
    if t1 <= 0:
        raise ConfigError("the target's decode time could not be measured")
    c_raw = _fill_between([est(times[("t", k)]) / t1 if times[("t", k)] else None
                           for k in range(1, k_max + 1)])
    cal = Calibration(
        k_max=k_max, n_past=n_past, t1=t1, c_raw=c_raw, c=cost_fit(c_raw),
        f=est(times[("d", 1)]) / t1 if has_draft else 0.0,
        f_first=est(times[("d0", 1)] or times[("d", 1)]) / t1 if has_draft else 0.0,
        f_batch=monotone_fit(_fill_between([est(times[("db", k)]) / t1 if times[("db", k)] else None
                                            for k in range(1, k_max + 1)], first=est(times[("db", 1)]) / t1))
        if has_draft else (0.0,) * k_max,
        s=_median(sample_times) / t1, reps=done_reps, k_draft=k_draft, check_t=check_t,
        reuse_rebuilds=legacy,
        b=est(times[("b", 1)]) / t1 + _median(sample_times) / t1 if times[("b", 1)] else 0.0)
    if overhead_runs:
        say(0.85, "timing the engine's loop")
        o_base, o0, o1, r = _measure_overheads(engine, k_max, sampler, stop,
                                               k_draft)
        cal = _replace(cal, o_base=o_base / t1, o0=o0 / t1, o1=o1 / t1, r=r / t1)
    say(1.0, "calibrated")
    reading = meter.reading()
    return _replace(cal, seconds=time.perf_counter() - t_start, created=time.time(),
                    version=CALIBRATION_VERSION, load=reading.to_dict(),
                    under_load=is_under_load(reading, threads_used(engine)))


def threads_used(engine) -> int:
    """The most threads a decode of this engine runs on (0 in the settings: all cores)."""
    cores = os.cpu_count() or 1
    s = engine.settings
    counts = [s.target_threads or cores] + ([s.draft_threads or cores] if engine.draft is not None else [])
    return max(counts)


def is_under_load(reading: LoadReading, threads: int) -> bool:
    """Whether other processes competed for the cores a decode's ``threads`` run on: their CPU
    use, in cores, exceeded the cores those threads leave free by more than
    ``LOAD_SLACK_CORES``. llama.cpp's threads meet at a barrier after almost every operation,
    so one that loses its core stalls the rest (core/measure/threads.py); other work on the cores they
    do not use is absorbed by the scheduler. The slack, a fifth of a core, is what a quiet
    desktop's background may take (a few per cent of a core) with room to spare, and on the
    project's 2-core machine with both cores decoding it is bench's ``BUSY_SHARE`` (10 % of
    the CPU), where its figures start to be called noisy. Unknown readings (no /proc/stat) do
    not count as load."""
    busy = reading.others_cores
    if busy is None:
        return False
    return busy > max(0, reading.cores - threads) + LOAD_SLACK_CORES


def _check_timing(engine, tokens: Sequence[int]) -> float:
    """The drift check's timing (seconds): the median of CHECK_REPS single-token target
    decodes at CHECK_POSITION (after CHECK_WARMUP untimed ones: the first after another shape
    rebuilds llama.cpp's graph), the cache rolled back after each. Clears the target's memory.
    The caller holds the engine."""
    tgt, batch = engine.tgt, engine.batch
    pos = max(1, min(CHECK_POSITION, tgt.n_ctx - 2))
    tgt.prefill(tokens[:pos], batch, "the calibration check's prefix")
    times = []
    for i in range(CHECK_WARMUP + CHECK_REPS):
        batch.fill(tokens[pos:pos + 1], pos, logits="all")
        t = time.perf_counter()
        tgt.decode(batch, "the calibration check")
        dt = time.perf_counter() - t
        tgt.seq_rm(pos, -1)
        if i >= CHECK_WARMUP:
            times.append(dt)
    tgt.clear()
    return _median(times)


def check_timing(engine) -> float:
    """The drift check on its own (a cached calibration's ``check_t`` is the same procedure,
    taken when it was measured): well under a second on the demo pair."""
    tokens = _filler_tokens(engine, CHECK_POSITION + 1)
    with engine.exclusive("the calibration check"):
        return _check_timing(engine, tokens)


def timed_batches(k_max: int, k_draft: int) -> list[int]:
    """The verification batch sizes timed: every k up to max(k_draft, DENSE_UP_TO), then every
    step of about a quarter up to k_max (n-gram drafts run to 48 or 64 tokens: timing every
    size would take minutes); c(k) between two timed sizes is interpolated linearly."""
    dense = max(k_draft, DENSE_UP_TO)
    ks = list(range(1, min(k_max, dense) + 1))
    k = dense
    while k < k_max:
        k = min(k_max, max(k + 1, int(round(k * 1.25))))
        ks.append(k)
    return ks


def _fill_between(values: Sequence[float | None], first: float | None = None) -> tuple[float, ...]:
    """Values with the gaps (None) filled by linear interpolation between the timed neighbours
    (a leading gap takes ``first``, or the first timed value)."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if not known:
        return tuple(first or 0.0 for _ in values)
    out = []
    for i, v in enumerate(values):
        if v is not None:
            out.append(float(v))
            continue
        before = [(j, w) for j, w in known if j < i]
        after = [(j, w) for j, w in known if j > i]
        if not before:
            out.append(float(first if first is not None else after[0][1]))
        elif not after:
            out.append(float(before[-1][1]))
        else:
            (j0, w0), (j1, w1) = before[-1], after[0]
            out.append(w0 + (w1 - w0) * (i - j0) / (j1 - j0))
    return tuple(out)


class CalibrationStopped(Exception):
    """Stop was requested while calibrating."""


def _replace(cal: Calibration, **kw) -> Calibration:
    return replace(cal, **kw)


def _measure_overheads(engine, k_max: int, sampler, stop, k_draft: int = -1
                       ) -> tuple[float, float, float, float]:
    """Seconds per round from short engine runs: Python time of a baseline round,
    o0 + o1·n of a speculative round (least squares over the rounds, the slowest
    tenth left out; the Python per drafted token is the draft loop's, sampling is
    timed with the verification; without a draft model, ngram-simple runs with a short
    n-gram, so that many rounds draft), and r, the rollback (seq_rm on both caches)
    of a round that needed no sync decode (trimmed mean: a run pays every round's
    time, so a median would leave out the occasional slower one)."""
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
        spec = SpecSettings(n_max=n) if engine.draft is not None else SpecSettings(
            types=("ngram-simple",), ngram_simple=NgramMapParams(size_n=2, size_m=max(2, n)))
        run = engine.speculative(prompt, spec, sampler, n_tokens, stop)
        for i, ev in enumerate(run):
            # without a draft model the rounds no n-gram drafted for count too (length 0)
            if i == 0 or ev.mode not in ("spec", "plain") or (not ev.drafted and engine.draft is not None):
                continue
            points.append((len(ev.drafted), ev.t_overhead))
            if ev.n_accepted < len(ev.drafted):        # reuse sync: seq_rm only, no decode
                rollback.append(ev.t_sync)
    if stop.is_set():
        raise CalibrationStopped()
    o0 = o1 = 0.0
    if points:
        cut = sorted(p[1] for p in points)[int(0.9 * (len(points) - 1))]
        kept = [p for p in points if p[1] <= cut] or points
        x = np.array([[1.0, p[0]] for p in kept])
        y = np.array([p[1] for p in kept])
        if np.ptp(x[:, 1]) > 0:
            (o0, o1), *_ = np.linalg.lstsq(x, y, rcond=None)
            o0, o1 = float(o0), float(o1)
            if o1 < 0:
                o0, o1 = float(y.mean()), 0.0
            elif o0 < 0:
                o0, o1 = 0.0, float(y.sum() / x[:, 1].sum())
        else:
            o0 = float(y.mean())
    return o_base, o0, o1, trimmed_mean(rollback, 0.1)


# ============================================================================ cache

def cache_dir() -> Path:
    return cache_root() / "calibration"


def calibration_key(engine, k_max: int, sampler=None, n_past: int = DEFAULT_N_PAST,
                    k_draft: int | None = None) -> tuple[str, dict]:
    """(key, description) identifying a pair, its settings and this machine."""
    desc = {
        "version": CALIBRATION_VERSION,
        "target": file_id(engine.target.path),
        "draft": file_id(engine.draft.path) if engine.draft is not None else None,
        "engine": _asdict(engine.settings),      # with the placement (--rpc, --device, -ngl)
        "placement": getattr(engine, "placement", None),
        "sampler": sampler.describe() if sampler is not None else "greedy",
        "k_max": k_max, "n_past": n_past, "k_draft": k_draft,
        "machine": {"node": platform.node(), "cpus": os.cpu_count(), "system": platform.system()},
    }
    blob = json.dumps(desc, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:20], json.loads(blob)   # as the cache reads it back


def load_cached(key: str, *, k_max: int | None = None) -> Calibration | None:
    doc = read_json(cache_dir() / f"{key}.json")
    try:
        cal = Calibration.from_dict(doc)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if cal.version != CALIBRATION_VERSION or (k_max is not None and cal.k_max < k_max):
        return None          # an older format: measured again
    return cal


def save_cached(cal: Calibration) -> Path | None:
    return write_json(cache_dir() / f"{cal.key}.json", cal.to_dict())


def get_calibration(engine, k_max: int, *, sampler=None, n_past: int = DEFAULT_N_PAST,
                    reps: int = DEFAULT_REPS, time_budget_s: float = TIME_BUDGET_S,
                    refresh: bool = False, use_cache: bool = True, k_draft: int | None = None,
                    progress: Progress | None = None, stop: threading.Event | None = None,
                    meter: LoadMeter | None = None) -> tuple[Calibration, bool]:
    """(calibration, from_cache): the cached figures for this pair and settings, or fresh ones.
    ``k_draft``: see :func:`calibrate`.

    A cached calibration is trusted only after the drift check (:func:`check_timing`, a few
    single-token decodes) agrees with the timing it recorded within ``DRIFT_TOLERANCE``;
    otherwise it is measured again and ``note`` says why. A fresh calibration is cached unless it
    was taken under load (``under_load``: it is still returned, for this run). ``meter``: see
    :func:`calibrate`."""
    key, desc = calibration_key(engine, k_max, sampler, n_past, k_draft)
    note = ""
    if use_cache and not refresh:
        cal = load_cached(key, k_max=k_max)
        if cal is not None:
            drift = drift_of(cal, check_timing(engine))
            if drift is None:
                return cal, True
            note = drift
    cal = calibrate(engine, k_max, sampler=sampler, n_past=n_past, reps=reps, k_draft=k_draft,
                    time_budget_s=time_budget_s, progress=progress, stop=stop, meter=meter)
    cal = _replace(cal, key=key, describe=desc)
    if use_cache and not cal.under_load:
        save_cached(cal)
    return _replace(cal, note=note), False


def calibrate_pair(target, draft, settings, k_max: int, *, sampler=None, n_past: int | None = None,
                   progress: Progress | None = None, stop: threading.Event | None = None,
                   **options) -> tuple[Calibration, bool, dict]:
    """Load the pair with EngineSettings ``settings`` and get its calibration (cached,
    :func:`get_calibration`; ``options``: its other keywords): (calibration, from_cache, where
    each model computes). ``progress(fraction, what)`` covers the load too."""
    say = progress or (lambda frac, what: None)
    say(0.0, "loading the pair")
    with Engine(target, draft, settings) as engine:
        cal, cached = get_calibration(engine, k_max, sampler=sampler, n_past=n_past or DEFAULT_N_PAST,
                                      k_draft=k_max if draft is not None else None, progress=say,
                                      stop=stop, **options)
        return cal, cached, dict(engine.placement)


def drift_of(cal: Calibration, now_s: float) -> str | None:
    """None when the drift check's timing now (seconds) agrees with the one ``cal`` recorded
    within DRIFT_TOLERANCE; else the reason to measure again, in one line.

    The tolerance: the check is taken with the calibration, so a calibration taken under load
    (one cached during a compile made predictions 10-13 % too low) has a check slowed
    like its decodes, and contention slows them by far more than 15 % (core/measure/threads.py: on 2
    cores a busy core made SmolLM2's 2-thread decodes 4-7× slower); a quiet check later differs
    from it by as much. 15 % must also stay above the check's own noise: on the project's
    2-core machine shared with five other jobs (others using 75-85 % of the CPU, one thread)
    the check deviated from its median by 6-20 % (median of 10-20 checks; SmolLM2 7 %, 90th
    percentile 11 %), so there it fires often, as it should on such a machine; on a quiet one
    its spread should be a few per cent: ``tests/bench/bench_calibration.py --check`` prints it (not
    measured on a quiet machine yet)."""
    if cal.check_t <= 0 or now_s <= 0:
        return "the cached calibration has no drift-check timing: measured again"
    drift = now_s / cal.check_t - 1.0
    if abs(drift) <= DRIFT_TOLERANCE:
        return None
    return (f"recalibrated: a target token now takes {now_s * 1e3:.2f} ms, the cached calibration's "
            f"check {cal.check_t * 1e3:.2f} ms ({100 * drift:+.0f}%, beyond ±{100 * DRIFT_TOLERANCE:.0f}%)")


def policy_calibration(engine, spec, sampler=None, progress=None, stop=None) -> Calibration:
    """The calibration the ``cost`` draft policy predicts with (engine/draft_policy.py): this
    pair's, cached per settings (about ten seconds the first time; :func:`get_calibration`)."""
    cal, _ = get_calibration(engine, spec.n_max + 1, sampler=sampler, k_draft=spec.n_max + 1,
                             progress=progress, stop=stop)
    return cal
