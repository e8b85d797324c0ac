"""The cost model: what a speculative round costs and what it buys, in plain numbers (no
llama.cpp here: the figures come from :mod:`.calibrate`, the counts from a run's statistics).

- the textbook model, a verification batch costing one target pass:
  ``(E + 1) / (n·f + 1)`` with ``E = α + α² + … + αⁿ``;
- the calibrated model: this machine's measured costs (:class:`Calibration`) priced per round
  (:func:`round_cost`, :func:`chain_round_cost`, :func:`model_speedup`) and its speed-up;
- what a run says about α and f (:func:`fit_alpha`, :func:`measure`).

What every figure means, how it is measured and how far the predictions held: docs/calibration.md.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np

from specscope.core.engine.drafters import MODEL_TYPES
from specscope.core.engine.drafters.registry import names
from specscope.core.engine.drafters.model import SYNC_MODES
from specscope.core.errors import ConfigError
from specscope.core.measure.cpuload import LoadReading
from specscope.core.measure.stats import Stats, speedup_of

ALPHAS = (0.5, 0.7, 0.9)      # the pair doctor's cost table: per-token acceptance rates ...
N_MAX = 8                     # ... and draft lengths 1..N_MAX
# the types that draft on the target's hidden states (an EAGLE-3 head, MTP blocks, a DFlash
# head): each runs every verified batch through its own context (``process``)
HEAD_TYPES = names(lambda t: t.reads_target)


# ============================================================================ the textbook model

def expected_accepted(alpha: float, n: int) -> float:
    """E = α + α² + … + αⁿ: mean accepted drafts per round at per-token acceptance α."""
    if n <= 0:
        return 0.0
    if alpha == 1.0:
        return float(n)
    return alpha * (1.0 - alpha ** n) / (1.0 - alpha)


def textbook_from_accepted(expected: float, n: int, f: float) -> float:
    """The textbook (E + 1) / (n·f + 1), a verification batch costing one target pass, for a
    mean of accepted drafts per round E (the one place the formula is written)."""
    return (expected + 1.0) / (n * f + 1.0)


def textbook_speedup(alpha: float, n: int, f: float, block: bool = False) -> float:
    """The textbook speed-up at per-token acceptance α: E = α + α² + … + αⁿ. ``block``: a
    block drafter (a DFlash head) drafts its n tokens in one decode, f per round, not n·f."""
    return textbook_from_accepted(expected_accepted(alpha, n), 1 if block else n, f)


def best_n(alpha: float, f: float, n_max: int = N_MAX, block: bool = False) -> tuple[int, float]:
    """The draft length 1..n_max with the highest textbook speed-up, and that speed-up."""
    best = max(range(1, n_max + 1), key=lambda n: (textbook_speedup(alpha, n, f, block), -n))
    return best, textbook_speedup(alpha, best, f, block)


def speedup_table(f: float, alphas: Iterable[float] = ALPHAS, n_max: int = N_MAX,
                  block: bool = False) -> dict[float, list[float]]:
    """{α: [speed-up at n = 1..n_max]}."""
    return {a: [textbook_speedup(a, n, f, block) for n in range(1, n_max + 1)] for a in alphas}


# ============================================================================ the calibrated model

@dataclass(frozen=True)
class Calibration:
    """Measured cost figures of one pair under one set of settings, in target-token units
    (docs/calibration.md says what each one is and how it is timed)."""

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
    check_t: float = 0.0               # seconds: the drift check's timings, taken with the calibration:
    check_switch: float = 0.0          # a token in a stream, and one after a batch (cache.CheckTiming)
    note: str = ""                     # why this calibration was measured now (not cached)
    reuse_rebuilds: bool = False       # measured with calibrate(legacy=True): reuse's sync row
                                       # without logits, a draft graph rebuild after it
    b: float = 0.0                     # a target-only run's token, decode and sampling, timed in
                                       # streams of single-token decodes (0: unknown, then 1 + s)
    head: bool = False                 # the draft reads the target's hidden states (an EAGLE-3
                                       # head, MTP blocks, a DFlash head): f is a decode of a draft
                                       # step on its context, f_batch(k) its process of a k-token batch
    block: dict = field(default_factory=dict)   # a DFlash head: {type: (its whole draft at
                                       # n_max = 1, 2, …)}, one block decode whatever it drafts
                                       # (f: draft-dflash's at n = 1)
    shape: float = 0.0                 # what a verification batch costs more after one of another
                                       # size (llama.cpp rebuilds the target's graph): the cost
                                       # policy pays it when it changes the draft length

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

    @property
    def stream_decode(self) -> float:
        """A single-token target decode where the one before had the same shape (the target-alone
        stream's, ``b`` less its sampling), which llama.cpp runs faster than one after another
        shape (c(1) = 1, timed in calibration blocks); 1 where ``b`` was not measured."""
        return max(0.0, self.b - self.s) if self.b > 0 else 1.0

    def skipped_round(self, after_single: bool) -> float:
        """A round the ``cost`` policy skips under reuse sync: the target's token alone, the draft
        decoding nothing. ``after_single``: after a round that verified one token, a token of the
        target-alone stream (B: llama.cpp keeps a single-token decode's graph); else a
        single-token decode after another shape (c(1); the rebuild is ``shape``, priced apart)."""
        return self.baseline_token if after_single else self.cost(1) + self.s + self.o_base

    def draft_batch(self, k: int) -> float:
        """f_batch(k), the draft's cost of a k-token batch without logits."""
        return _at(self.f_batch, k, "f_batch")

    def block_cost(self, drafter: str, n: int) -> float:
        """A DFlash head's draft of type ``drafter`` at n_max = n: one block decode."""
        return _at(self.block[drafter], n, f"{drafter}'s block")

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
        d["block"] = {t: list(v) for t, v in self.block.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        d = dict(d)
        for key in ("c_raw", "c", "f_batch"):
            d[key] = tuple(d[key])
        d["block"] = {t: tuple(v) for t, v in d.get("block", {}).items()}
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})

    def lines(self) -> list[str]:
        """The figures, for a terminal or a label."""
        ks = range(1, self.k_max + 1)
        draft = (f"a one-token draft's block f = {self.f:.3f} (the DFlash head); " if self.block
                 else f"head decode f = {self.f:.3f} (a draft step on the head's context); " if self.head
                 else f"draft token f = {self.f:.3f} (first of a round {self.f_first:.3f}); "
                 if self.has_draft else "no draft model (n-gram drafters only); ")
        return [
            f"target token t1 = {self.t1 * 1e3:.3f} ms at position {self.n_past}; {draft}"
            f"sampling s = {self.s:.3f} per row",
            "c(k)       " + " ".join(f"{k}:{self.cost(k):.2f}" for k in ks),
            "c raw      " + " ".join(f"{k}:{self.c_raw[k - 1]:.2f}" for k in ks),
        ] + ([
            "f_batch(k) " + " ".join(f"{k}:{self.draft_batch(k):.3f}" for k in ks)
            + ("  (the head's process of a k-token verified batch, every round)" if self.head else ""),
        ] if self.has_draft else []) + [
            f"{t} per draft at n_max = n (one block decode): "
            + " ".join(f"{n}:{v:.3f}" for n, v in enumerate(costs, 1)) for t, costs in self.block.items()
        ] + [
            f"target alone per token (a stream of single-token decodes, sampled) b = {self.b:.3f}",
            f"python per round: baseline {self.o_base:.3f}, speculative {self.o0:.3f} + "
            f"{self.o1:.3f}·n; rollback r = {self.r:.3f}  (target-token units; {self.reps} reps, "
            f"{self.seconds:.1f} s)",
        ]


def extended(cal: Calibration, k_max: int) -> Calibration:
    """``cal`` with c(k) (and a draft's f_batch(k)) continued in a straight line past its k_max
    up to ``k_max``, at the slope of the upper half of its calibrated batches: an estimate, to
    rank drafts longer than the calibration timed (verification on a CPU costs about a fixed
    amount per extra token once batches are large; the draft's catch-up after a long n-gram draft
    too). Unchanged when it already reaches ``k_max``."""
    if k_max <= cal.k_max:
        return cal
    more = _continued(cal.c, k_max, 1.0)
    f_batch = cal.f_batch + _continued(cal.f_batch, k_max, cal.f) if cal.f_batch else cal.f_batch
    return replace(cal, k_max=k_max, c=cal.c + more, c_raw=cal.c_raw + more, f_batch=f_batch)


def _continued(values: Sequence[float], k_max: int, slope: float) -> tuple[float, ...]:
    """``values`` (at k = 1..) continued up to ``k_max`` in a straight line at the slope of their
    upper half (``slope`` with fewer than two values)."""
    mid = len(values) // 2
    if len(values) - 1 > mid:
        slope = (values[-1] - values[mid]) / (len(values) - 1 - mid)
    return tuple(values[-1] + slope * (i + 1) for i in range(k_max - len(values)))


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


# ============================================================================ predictions

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
               *, n_draft: float | None = None, p_full: float | None = None,
               drafter: str = "") -> RoundCost:
    """The calibrated model for draft length n (docs/calibration.md).

    ``acceptance`` holds a_1..a_n (extra entries are ignored, missing ones count 0).
    ``n_draft`` is the mean number of draft decodes per round when it is not n
    (drafts stopped by p_min or the budget); the verification batch is then
    priced by linear interpolation of c between its neighbours. ``p_full`` is the
    share of fully accepted drafts when it is not a_n (the same drafts of varying
    length). ``drafter``: the type that drafts; a DFlash head's (``cal.block``) draft is one
    block decode at n_max = n, whatever it drafted, not n_draft draft steps."""
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
    draft = cal.block_cost(drafter, n) if drafter in cal.block else length * cal.f + rebuild
    return RoundCost(tokens=1.0 + expected, draft=draft, verify=verify,
                     sampling=cal.s * (1.0 + expected), sync=sync_cost,
                     overhead=cal.o0 + cal.o1 * length,
                     baseline=cal.baseline_token)


def batch_cost(cal: Calibration, k: float) -> float:
    """c(k) for a batch of ``k`` tokens, mean sizes too; past the calibrated batches, their last
    slope (a CPU's batch costs grow about linearly there)."""
    top = float(len(cal.c))
    cost = _interp(cal.c, min(k, top))
    if k > top and len(cal.c) > 1:
        cost += (k - top) * (cal.c[-1] - cal.c[-2])
    return cost


def batch_speedup(cal: Calibration, rounds: int, batch_tokens: int, n_tokens: int) -> float:
    """The calibrated speed-up of a loop whose every round is one target batch and no draft model
    (registry ``priced="batch"``: llama-lookahead's token, n-grams verified and window's guesses):
    ``batch_tokens`` over the run, sampling each token it emits, rollback and the loop's Python."""
    if not rounds:
        return 1.0
    per_round = (batch_cost(cal, batch_tokens / rounds) + cal.s * n_tokens / rounds + cal.r
                 + cal.o0)
    return n_tokens * cal.baseline_token / (rounds * per_round)


def tree_speedup(cal: Calibration, tree_rounds: int, nodes: int, steps: int, n_accept: int,
                 empty_rounds: int, model: bool = True, lookup: float = 0.0) -> float:
    """A tree's calibrated speed-up (llama-speculative's round): each tree round pays the
    draft's decode of its root, its draft steps (one batch of the branches drafting each, priced
    as f at the tree's mean width by f_batch), one verification batch of its nodes and the root,
    sampling along the kept path and llama.cpp's sequence copies (r); a round without a tree, one
    target token. The run's own totals: its trees, their nodes and steps, the tokens accepted.
    A tree drafted without a model (``model`` False, from counts) pays ``lookup`` (its Python time
    per round over t1) instead of the draft's decodes."""
    empty = cal.cost(1) + cal.s + cal.r + cal.o0
    if not tree_rounds:
        return 1.0 if not empty_rounds else empty_rounds * cal.baseline_token / (empty_rounds * empty)
    mean_nodes, mean_steps = nodes / tree_rounds, steps / tree_rounds
    verify = batch_cost(cal, mean_nodes + 1.0)
    expected = n_accept / tree_rounds
    if model:                            # the root's decode, then steps of the branches' batch
        width = nodes / steps if steps else 1.0
        drafting = cal.f + mean_steps * cal.f * _interp(cal.f_batch, width) / cal.draft_batch(1)
    else:
        drafting = lookup
    per_round = (drafting + verify + cal.s * (1.0 + expected) + cal.r + cal.o0 + cal.o1 * mean_nodes)
    tokens = tree_rounds * (1.0 + expected) + empty_rounds
    return tokens * cal.baseline_token / (tree_rounds * per_round + empty_rounds * empty)


def draft_sync(types: Sequence[str], sync: str) -> str:
    """The sync a chain's model drafter is priced with: ``sync`` for a draft model; a drafter on
    the target's hidden states (``HEAD_TYPES``) runs every verification batch through its own
    context (``process``: an EAGLE-3 head's encoder and decoder, the MTP blocks, a DFlash head's
    injected features; timed as its f_batch(k)), which is replay's account: f_batch(n + 1)
    every round."""
    return "replay" if set(types) & set(HEAD_TYPES) else sync


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
    """S(n) = (1 + E)·B / C(n): the calibrated prediction (docs/calibration.md)."""
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
    won). A round drafted by a model drafter (draft-simple, a head, draft-mtp) costs what
    :func:`round_cost` says (its own per-position acceptance, mean draft length, n_max). A round
    drafted by an n-gram drafter has no draft decodes: it pays the verification of its draft,
    Σ_L P(L)·c(L + 1) over its draft lengths L, sampling, the rollback r, Python o0 + o1·L,
    and, when a model drafter is in the chain (``draft_model``), the draft cache's catch-up:
    reuse decodes the 1 + accepted kept rows, Σ_j P(j)·f_batch(1 + j), replay (and a head's
    process) the whole batch. A round without a draft costs one decode as in a stream
    (``stream_decode``) + s + r + o0. Every round also pays ``lookup``, the measured Python time of the
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
        if d.name in MODEL_TYPES:
            a = [x / rounds for x in d.accepted_at]
            rc = round_cost(cal, n_max, a, sync, n_draft=min(float(n_max), mean_len), drafter=d.name)
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
    if left > 0:            # rounds without a draft: a single-token decode, as in a stream
        add(left / n_rounds, tokens=1.0, verify=cal.stream_decode, sampling=cal.s, sync=cal.r,
            overhead=cal.o0)
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


def model_speedup(cal: Calibration, n: int, per_round_acceptance: Sequence[float], sync: str,
                  mean_len: float, p_full: float, draft_rounds: int, empty_rounds: int,
                  extra_decodes: int, per_round: float = 0.0, drafter: str = "") -> float:
    """A model drafter's calibrated speed-up over all of a run's rounds: the rounds that verified
    a draft (the calibrated round fed with the run's own statistics: a_i per round that drafted,
    the mean draft length, the share of full acceptances), the rounds that verified none (one
    target token: a p_min stop at the first token, or the budget; a head's process of that
    token too), and the draft decodes that proposed no token (the row p_min stopped at, drafts
    n_min dropped), each one draft token f; for a DFlash head (``drafter`` in ``cal.block``)
    ``extra_decodes`` counts its blocks that proposed no token, each its block at n.
    ``per_round``: a measured cost every round pays besides (target-token units: drafting across
    vocabularies, its translation)."""
    empty = cal.cost(1) + cal.s + cal.r + cal.o0 + per_round + (cal.draft_batch(1) if cal.head else 0.0)
    extra = extra_decodes * (cal.block_cost(drafter, n) if drafter in cal.block else cal.f)
    if not draft_rounds:
        cost = empty_rounds * empty + extra
        return empty_rounds * cal.baseline_token / cost if cost > 0 else 1.0
    length = min(float(n), mean_len) if mean_len > 0 else float(n)
    rc = round_cost(cal, n, per_round_acceptance, sync, n_draft=length, p_full=p_full, drafter=drafter)
    cost = draft_rounds * (rc.total + per_round) + empty_rounds * empty + extra
    tokens = draft_rounds * rc.tokens + empty_rounds
    return tokens * rc.baseline / cost


# ============================================================================ what a run says

def alpha_from_counts(accepted: int, rejections: int) -> float:
    """The per-token acceptance runs show, the maximum-likelihood estimate for independent
    positions: accepted ÷ (accepted + rejections), a rejection being a round that kept less than
    its whole draft (the synthetic-acceptance sweep's measured α)."""
    return accepted / (accepted + rejections) if accepted + rejections else 0.0


def fit_alpha(drafted_at: tuple[int, ...] | list[int], n_accept: int) -> float:
    """The per-token acceptance α with Σₖ drafted_at[k]·α^(k+1) = n_accept.

    ``drafted_at[k]`` counts the drafts that reached position k (0-based); under
    the textbook model such a draft's k-th token is accepted with probability
    α^(k+1). The left side increases with α, so bisection finds it.
    """
    weights = np.asarray(drafted_at, dtype=float)
    total = float(weights.sum())
    if total <= 0 or n_accept <= 0:
        return 0.0
    if n_accept >= total:
        return 1.0
    powers = np.arange(1, len(weights) + 1)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if float(weights @ mid ** powers) < n_accept:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Measured:
    """What a speculative run (and, if any, a baseline run) says about α and f."""

    acceptance_rate: float
    alpha: float
    mean_accepted_length: float
    draft_s_per_token: float
    target_s_per_token: float
    target_from_baseline: bool
    f: float
    n_max: int
    speedup: float | None          # spec tokens/s ÷ baseline tokens/s
    spec_tokens_per_s: float
    baseline_tokens_per_s: float | None
    verify_ratio: float | None     # verify time per round ÷ target time per token (baseline only)
    mean_batch: float              # tokens per verification batch (1 + mean draft length)
    overhead_share: float
    baseline_overhead_share: float | None = None


def measure(spec: Stats, baseline: Stats | None, n_max: int) -> Measured | None:
    """α, f and the measured speed-up; None while the run has no verified draft."""
    if spec.n_drafted == 0 or spec.n_rounds == 0:
        return None
    has_base = baseline is not None and baseline.n_tokens > 0 and baseline.t_verify > 0
    if has_base:
        target_tok = baseline.t_verify / baseline.n_tokens
    else:
        target_tok = spec.t_verify / spec.n_rounds
    draft_tok = spec.t_draft / spec.n_drafted
    f = draft_tok / target_tok if target_tok > 0 else float("nan")
    speedup = speedup_of(spec.tokens_per_s, baseline.tokens_per_s) if has_base else None
    base_tps = baseline.tokens_per_s if speedup is not None else None
    verify_ratio = (spec.t_verify / spec.n_rounds) / target_tok if speedup is not None else None
    return Measured(
        acceptance_rate=spec.acceptance_rate, alpha=fit_alpha(spec.drafted_at, spec.n_accept),
        mean_accepted_length=spec.mean_accepted_length, draft_s_per_token=draft_tok,
        target_s_per_token=target_tok, target_from_baseline=has_base, f=f, n_max=n_max,
        speedup=speedup, spec_tokens_per_s=spec.tokens_per_s, baseline_tokens_per_s=base_tps,
        verify_ratio=verify_ratio,
        mean_batch=1.0 + spec.n_drafted / spec.n_draft_rounds if spec.n_draft_rounds else 1.0,
        overhead_share=spec.overhead_share,
        baseline_overhead_share=baseline.overhead_share if has_base else None)
