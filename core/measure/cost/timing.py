"""The decodes a calibration times (core/measure/cost/calibrate.py runs them): real rounds'
llama.cpp calls replayed at a fixed position, both caches rolled back after each, for a draft
model, an EAGLE-3 head or the MTP blocks (one decode per draft token), and a DFlash head (one
decode per block)."""

from __future__ import annotations

import random
import statistics
from dataclasses import replace
from typing import Sequence

import numpy as np

from specscope.core.engine.drafters import BLOCK_TYPES, DRAFT_MODEL
from specscope.core.engine.drafters.build import make_drafter
from specscope.core.engine.drafters.model import draft_top
from specscope.core.engine.drafters.registry import TARGET, names
from specscope.core.engine.sampling import build_chain
from specscope.core.engine.settings import SpecSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.cache import CheckTiming
from specscope.core.measure.cost.model import Calibration, cost_fit, monotone_fit
from specscope.core.measure.progress import Progress
from specscope.core.models.dflash import DFlashHead

DEFAULT_REPS = 25             # timed repetitions of every decode kind (at most)
MIN_REPS = 5                  # ... and at least, whatever the time budget
TIME_BUDGET_S = 4.0           # stop repeating after this long (once MIN_REPS are in)
WARMUP_REPS = 1
DENSE_UP_TO = 9               # every batch size up to here is timed (timed_batches)
BASELINE_STREAM = 32          # a target-only stream of single-token decodes (b), in the first
BASELINE_TIMED = 16           # STREAM_REPS repetitions; its last BASELINE_TIMED are timed
STREAM_REPS = 6
ROUNDS_PER_BLOCK = 3          # simulated rounds per draft length in a row (the first is not timed)

CALIBRATION_PROMPT = (
    "def read_config(path):\n"
    "    \"\"\"Read a configuration file and return a dictionary of its settings.\"\"\"\n"
    "    settings = {}\n"
    "    with open(path) as handle:\n"
    "        for line in handle:\n")


class CalibrationStopped(Exception):
    """Stop was requested while calibrating."""


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


def _filler_tokens(engine, n: int, model=None) -> list[int]:
    """n plausible tokens (a code snippet, repeated) to fill the caches with, in the target's
    vocabulary (or ``model``'s)."""
    model = model or engine.target
    base = model.tokenize(CALIBRATION_PROMPT * 4, add_special=False)
    base = [t for t in base if not model.is_eog(t)] or [0]
    return [base[i % len(base)] for i in range(n)]


# ============================================================================ the decodes

class _Timing:
    """The llama.cpp calls of real rounds, replayed and timed at position ``n_past`` (both
    caches rolled back after each round); ``times[(kind, k)]`` collects the seconds: ``t`` the
    target's k-token batch, ``d`` a draft token, ``d0`` the first of a round after a sync decode
    of another shape, ``db`` the draft's sync batch, ``b`` a token of a target-only stream. The
    caller holds the engine. ``kind``: the type whose drafts are timed (draft-simple; None: no
    draft model), ``dctx`` the context it drafts on."""

    def __init__(self, engine, k_max: int, k_draft: int, n_past: int, clock, legacy: bool):
        self.engine, self.k_max, self.k_draft, self.n_past = engine, k_max, k_draft, n_past
        self.clock, self.legacy = clock, legacy
        self.has_draft = engine.draft is not None
        self.kind, self.dctx = DRAFT_MODEL if self.has_draft else None, engine.dft
        self.head = False                    # a drafter on the target's hidden states (_HeadTiming)
        self.tokens = _filler_tokens(engine, n_past + k_max)
        # a draft in another vocabulary (drafters/xvocab.py) decodes the snippet in its own
        self.dtokens = _filler_tokens(engine, n_past + k_max, engine.draft) \
            if engine.vocab_failed else self.tokens
        self.greedy = None                   # the sampler chain a round samples its rows with
        self.times: dict[tuple[str, int], list[float]] = {("t", k): [] for k in range(1, k_max + 1)}
        self.times.update({(kind, k): [] for kind in ("db", "t0") for k in range(1, k_max + 1)})
        for key in (("d", 1), ("d0", 1), ("b", 1)):
            self.times[key] = []

    def prefill(self) -> None:
        """Fill both caches with [0, n_past); ConfigError for a memory that cannot roll back."""
        self.check_removable()
        e = self.engine
        for ctx, b in ((e.tgt, e.batch), (e.dft, e.dbatch))[:2 if self.has_draft else 1]:
            ctx.prefill(self.tokens_of(ctx)[:self.n_past], b, "the calibration prefix")

    def check_removable(self) -> None:
        e = self.engine
        if not (e.tgt_removable and e.dft_removable):
            raise ConfigError("calibration needs models whose caches can drop part of a "
                              "sequence (attention KV caches); recurrent and hybrid memories are "
                              "not supported: their rounds restore state checkpoints and replay, "
                              "which the calibrated model does not price")

    def tokens_of(self, ctx) -> list[int]:
        return self.dtokens if ctx is self.engine.dft else self.tokens

    def decode(self, ctx, b, pos: int, k: int, logits: str, what: str) -> float:
        b.fill(self.tokens_of(ctx)[pos:pos + k], pos, logits=logits)
        t = self.clock()
        ctx.decode(b, what)
        return self.clock() - t

    @staticmethod
    def draft_step_work(ctx) -> None:
        """The Python a real draft step does between two decodes (the engine's top-10 of the
        draft's logits): the time between decodes changes how long llama.cpp's worker threads
        wait, and so what the next decode costs."""
        logits = ctx.logits(1)[0]
        draft_top(logits)

    def block(self, k: int, keep: bool) -> None:
        """ROUNDS_PER_BLOCK simulated rounds with a verification batch of k tokens, the
        llama.cpp calls of a real round in their order (k = 1: baseline rounds)."""
        e, pos = self.engine, self.n_past
        rebuilt = True                       # the draft's last decode had another shape
        for r in range(ROUNDS_PER_BLOCK):
            record = keep and r > 0          # the first round of a block rebuilds graphs
            if 1 < k <= self.k_draft:        # 1. draft: seed + k - 2 more, one token each
                self.draft_steps(k, record, rebuilt)
            dt = self.decode(e.tgt, e.batch, pos, k, "all", "a calibration batch")   # 2. verify
            if record:
                self.times[("t", k)].append(dt)
            elif keep:                       # after a batch of another size: the graph rebuilt
                self.times[("t0", k)].append(dt)
            for row in range(k):             # the rows a round samples (greedy here)
                self.greedy.sample(e.tgt, row)
            e.tgt.seq_rm(pos, -1)
            if k > 1 and self.has_draft:
                rebuilt = self.sync(k, one=bool(r % 2) and k <= self.k_draft, record=record)

    def draft_steps(self, k: int, record: bool, rebuilt: bool) -> None:
        """The k - 1 draft decodes of a round that verifies k tokens, one token each."""
        e, pos = self.engine, self.n_past
        for i in range(k - 1):
            dt = self.decode(e.dft, e.dbatch, pos + i, 1, "all", "a calibration draft token")
            if record:               # the first may follow a sync decode of another shape
                self.times[("d0", 1) if i == 0 and rebuilt else ("d", 1)].append(dt)
            self.draft_step_work(e.dft)

    def sync(self, k: int, one: bool, record: bool) -> bool:
        """3. the draft's sync decode: reuse (``one`` row) or replay (k rows); past k_draft the
        draft holds no rows to reuse. Whether the next draft step rebuilds its graph."""
        e, pos = self.engine, self.n_past
        e.dft.seq_rm(pos + (k - 1 if one else 0), -1)
        sync_k = 1 if one else k
        p0 = pos + k - 1 if one else pos
        # the engine decodes one row with its logits: a draft step's graph, kept
        row_logits = "none" if self.legacy else "last"
        dt = self.decode(e.dft, e.dbatch, p0, sync_k, row_logits if sync_k == 1 else "none",
                         "a calibration draft batch")
        if record:
            self.times[("db", sync_k)].append(dt)
        e.dft.seq_rm(pos, -1)
        return sync_k > 1 or self.legacy

    def stream(self) -> None:
        """A target-only run's decodes: BASELINE_STREAM single-token decodes in a row, sampled;
        llama.cpp speeds up over the first ~16 after another shape, so only the last
        BASELINE_TIMED are timed (``b``)."""
        e = self.engine
        for r in range(BASELINE_STREAM):
            dt = self.decode(e.tgt, e.batch, self.n_past, 1, "all", "a calibration token")
            self.greedy.sample(e.tgt, 0)
            e.tgt.seq_rm(self.n_past, -1)
            if r >= BASELINE_STREAM - BASELINE_TIMED:
                self.times[("b", 1)].append(dt)

    def repeat(self, reps: int, time_budget_s: float, rng: random.Random, stop, say: Progress) -> int:
        """The repetitions: every timed batch size (and in STREAM_REPS of them the stream) in a
        fresh random order, at most ``reps``, at least MIN_REPS, within ``time_budget_s``.
        Returns the repetitions timed."""
        items = timed_batches(self.k_max, self.k_draft)
        total = WARMUP_REPS + reps
        t_timing = self.clock()
        done_reps = 0
        for rep in range(total):
            if stop.is_set():
                raise CalibrationStopped()
            if rep >= WARMUP_REPS + MIN_REPS and self.clock() - t_timing > time_budget_s:
                break
            order = items[:] + ([0] if WARMUP_REPS <= rep < WARMUP_REPS + STREAM_REPS else [])
            rng.shuffle(order)
            for k in order:
                if k == 0:
                    self.stream()
                else:
                    self.block(k, rep >= WARMUP_REPS)
            done_reps = max(0, rep + 1 - WARMUP_REPS)
            say(0.8 * min(1.0, max((rep + 1) / total, (self.clock() - t_timing) / time_budget_s)), 1,
                "timing decodes")
        return done_reps

    def draft_alone(self) -> None:
        """The draft's figures when no round timed them (k_max ≤ 2, or no draft rounds)."""
        times, e = self.times, self.engine
        if not times[("d", 1)]:              # k_max ≤ 2: no second draft decode in a round
            times[("d", 1)] = list(times[("d0", 1)])
        if self.has_draft and (self.k_draft == 1 or not times[("db", 1)] or not times[("d", 1)]):
            for _ in range(5):
                times[("d", 1)].append(self.decode(e.dft, e.dbatch, self.n_past, 1, "all",
                                                   "a calibration draft token"))
                e.dft.seq_rm(self.n_past, -1)
                times[("db", 1)].append(self.decode(e.dft, e.dbatch, self.n_past, 1, "none",
                                                    "a calibration draft batch"))
                e.dft.seq_rm(self.n_past, -1)

    def sampling(self, sampler) -> list[float]:
        """Seconds per row of sampling with the runs' sampler chain (k_max rows, five chains)."""
        e = self.engine
        self.decode(e.tgt, e.batch, self.n_past, self.k_max, "all", "a calibration batch")
        out = []
        for _ in range(5):
            with build_chain(e.target, sampler) as chain:
                for row in range(self.k_max):
                    t = self.clock()
                    chain.sample(e.tgt, row)
                    out.append(self.clock() - t)
        e.tgt.seq_rm(self.n_past, -1)
        return out

    def figures(self, sample_times: Sequence[float], reps: int,
                check: CheckTiming) -> Calibration:
        """The medians in target-token units (÷ t1)."""
        est, times, k_max, has_draft = ESTIMATOR, self.times, self.k_max, self.has_draft
        t1 = est(times[("t", 1)])
        if t1 <= 0:
            raise ConfigError("the target's decode time could not be measured")

        def per_k(kind: str) -> list[float | None]:
            return [est(times[(kind, k)]) / t1 if times[(kind, k)] else None for k in range(1, k_max + 1)]
        c_raw = _fill_between(per_k("t"))
        s = _median(sample_times) / t1
        # the graph rebuilt: each block's first batch over the same size's steady cost, pooled
        shape = [dt / t1 - c_raw[k - 1] for k in range(1, k_max + 1) for dt in times[("t0", k)]]
        return Calibration(
            k_max=k_max, n_past=self.n_past, t1=t1, c_raw=c_raw, c=cost_fit(c_raw),
            f=est(times[("d", 1)]) / t1 if has_draft else 0.0,
            f_first=est(times[("d0", 1)] or times[("d", 1)]) / t1 if has_draft else 0.0,
            f_batch=monotone_fit(_fill_between(per_k("db"), first=est(times[("db", 1)]) / t1))
            if has_draft else (0.0,) * k_max,
            s=s, reps=reps, k_draft=self.k_draft, check_t=check.stream, check_switch=check.switch,
            reuse_rebuilds=self.legacy,
            b=est(times[("b", 1)]) / t1 + s if times[("b", 1)] else 0.0, head=self.head,
            shape=max(0.0, _median(shape)) if shape else 0.0)


class _HeadTiming(_Timing):
    """A drafter on the target's hidden states (an EAGLE-3 head, draft-eagle3; the target's own
    MTP blocks, draft-mtp), its rounds replayed with the drafter itself (core/engine/drafters/)
    beside the target: ``d`` is one decode of a draft step on its context (the boundary's, then
    each drafted token's, with logits and pre-norm state: ``HeadDrafter.draft``'s time ÷ its
    decodes; no first-of-round kind); ``db`` its ``process`` of a k-token verification batch
    (EAGLE-3: the target's features read, the encoder over k rows, the decoder over k - 1
    pairs; MTP: k pairs of a token and the target's hidden state, once per MTP block), which
    every round pays whoever drafted: the cost model prices it as a replay sync
    (cost.model.draft_sync)."""

    def __init__(self, engine, kind: str, *args):
        super().__init__(engine, *args)
        self.head, self.has_draft, self.kind, self.most = True, True, kind, {}
        self.drafter = self.drafter_of(kind)
        self.dctx = self.drafter.ctx
        self.boundary = (-1, None)

    def drafter_of(self, kind: str):
        """A fresh drafter of ``kind`` made for the longest draft: its n_max is then the most it
        drafts (chained MTP blocks: one a step; a DFlash head: its block), kept in ``most``."""
        drafter = make_drafter(kind, SpecSettings(types=(kind,), n_max=self.k_max), self.engine)
        self.most[kind] = drafter.n_max
        return drafter

    def prefill(self) -> None:
        """The target's prefix, each chunk through the drafter (as a prompt is); the boundary kept."""
        e, d = self.engine, self.drafter
        self.check_removable()
        e.tgt.prefill(self.tokens[:self.n_past], e.batch, "the calibration prefix", after=d.process)
        self.boundary = (d.pending_pos, d.pending_row.copy())

    def draft(self, drafter, n: int):
        """``drafter``'s draft at n_past with n_max = n (p_min 0: n tokens, as far as it can)."""
        drafter.n_max = min(n, self.most[drafter.name])
        return drafter.draft(np.asarray(self.tokens[:self.n_past]), self.tokens[self.n_past], n)

    def draft_steps(self, k: int, record: bool, rebuilt: bool) -> None:
        proposal = self.draft(self.drafter, k - 1)        # k - 1 decodes, one token each
        if record and proposal.rows:
            self.times[("d", 1)].append(proposal.t_decode / proposal.rows)

    def sync(self, k: int, one: bool, record: bool) -> bool:
        d, pos = self.drafter, self.n_past
        t = self.clock()
        d.process(self.tokens[pos:pos + k], pos)
        dt = self.clock() - t
        if record:
            self.times[("db", k)].append(dt)
        self.dctx.seq_rm(pos, -1)
        d.pending_pos, d.pending_row = self.boundary[0], self.boundary[1].copy()
        return False

    def draft_alone(self) -> None:
        """A draft and a one-token process when no round timed them (k_max ≤ 1)."""
        e = self.engine
        if self.times[("d", 1)] and self.times[("db", 1)]:
            return
        for _ in range(5):
            self.draft_steps(2, True, False)
            self.decode(e.tgt, e.batch, self.n_past, 1, "all", "a calibration batch")
            e.tgt.seq_rm(self.n_past, -1)
            self.sync(1, True, True)


class _BlockTiming(_HeadTiming):
    """A DFlash head's rounds (core/engine/drafters/dflash.py): its draft is one decode of a
    block whatever it drafts, so each type's whole draft at n_max = n is timed (``(type, n)``,
    n = 1 .. k_draft - 1: a DFlash block holds n + 1 rows, a DSpark block from the anchor n,
    both clamped to the head's block size), each round both types'; ``db`` is the head's
    process of a k-token batch (the target's features injected into its cache). ``d`` holds
    the first block type's block at n = 1: f, the textbook's draft token."""

    def __init__(self, engine, *args):
        super().__init__(engine, BLOCK_TYPES[0], *args)
        self.drafters = [self.drafter] + [self.drafter_of(t) for t in BLOCK_TYPES[1:]]
        self.times.update({(t, n): [] for t in BLOCK_TYPES for n in range(1, self.k_max)})

    def draft_steps(self, k: int, record: bool, rebuilt: bool) -> None:
        for d in self.drafters:
            proposal = self.draft(d, k - 1)
            if record:
                self.times[(d.name, k - 1)].append(proposal.t_decode)
                if d is self.drafter and k == 2:
                    self.times[("d", 1)].append(proposal.t_decode)

    def figures(self, *args) -> Calibration:
        cal = super().figures(*args)
        block = {t: _fill_between([ESTIMATOR(self.times[(t, n)]) / cal.t1 if self.times[(t, n)] else None
                                   for n in range(1, self.k_draft)]) for t in BLOCK_TYPES}
        return replace(cal, block=block)


def _timing(engine, mtp: bool, *args) -> _Timing:
    """What calibrates this engine's drafts: the target's MTP blocks (``mtp``), its -md model's
    type (an EAGLE-3 head, a DFlash head, a draft model), or none."""
    if mtp:
        return _HeadTiming(engine, names(lambda t: t.source == TARGET)[0], *args)
    if isinstance(engine.head, DFlashHead):
        return _BlockTiming(engine, *args)
    if engine.head is not None:
        return _HeadTiming(engine, names(lambda t: t.head == "eagle3")[0], *args)
    return _Timing(engine, *args)


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


