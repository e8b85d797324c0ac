"""A sweep's rows: every run of a configuration × prompt (:class:`Cell`), and the figures of one
or more cells (:class:`Row`, pooled over prompts in the ``ALL`` row): measured, the textbook's and
the calibrated model's predictions, the spread over repetitions. The columns: docs/sweep.md."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Sequence

from specscope.core.engine.drafters import DRAFT_MODEL, MODEL_TYPES
from specscope.core.engine.drafters.registry import MODEL, alone
from specscope.core.measure.cost.model import (Calibration, calibrated_speedup, chain_round_cost,
                                               draft_sync, batch_speedup, model_speedup,
                                               textbook_from_accepted, tree_speedup)
from specscope.core.measure.bench.lossless import LosslessReport, RunResult
from specscope.core.measure.stats import DrafterStats
from specscope.core.measure.bench.settings import config_name

ALL = "ALL"
CSV_COLUMNS = ("draft", "drafter", "n_max", "prompt", "tokens", "rounds", "acceptance",
               "mean_accepted_length", "tokens_per_s", "baseline_tokens_per_s", "measured_speedup",
               "textbook_speedup", "calibrated_speedup", "textbook_error", "calibrated_error",
               "alpha_speedup", "f", "prefill_ms", "baseline_prefill_ms", "lossless", "divergence_at",
               "draft_rounds", "lookup_us", "lookup_cost", "by_drafter", "cf_rule", "cf_acceptance", "p_min",
               "speedup_min", "speedup_max", "repeats", "prompts", "prompts_drafted", "vocab",
               "translate_us", "translate_cost", "note")
VERDICT_ORDER = ("identical", "numerical", "length", "mismatch")


@dataclass
class Cell:
    """Every run of one configuration × prompt (all repetitions) and its baselines."""
    draft: str
    n: int
    prompt: str
    drafter: str = DRAFT_MODEL
    p_min: float = 0.0
    vocab: str = ""                    # draft-simple across vocabularies: translate | intersect
    spec: list[RunResult] = field(default_factory=list)
    bases: list[list[RunResult]] = field(default_factory=list)   # bases[i]: spec[i]'s repetition's
    lossless: list[LosslessReport] = field(default_factory=list)

    @property
    def baseline(self) -> list[RunResult]:
        """Every baseline run, all repetitions."""
        return [b for runs in self.bases for b in runs]

    def add(self, spec: RunResult, *baselines: RunResult) -> None:
        """One repetition's speculative run and the baselines measured with it."""
        self.spec.append(spec)
        self.bases.append(list(baselines))


@dataclass(frozen=True)
class Row:
    draft: str
    drafter: str
    n_max: int
    prompt: str
    tokens: int
    rounds: int
    acceptance: float
    mean_accepted_length: float
    tokens_per_s: float
    baseline_tokens_per_s: float
    measured_speedup: float
    textbook_speedup: float
    calibrated_speedup: float
    textbook_error: float
    calibrated_error: float
    alpha_speedup: float | None
    f: float
    prefill_ms: float
    baseline_prefill_ms: float
    lossless: str
    divergence_at: int | None
    draft_rounds: int = 0
    lookup_us: float = 0.0
    lookup_cost: float = 0.0
    drafters: tuple[DrafterStats, ...] = ()     # the chain's members, in priority order
    position_acceptance: tuple[float, ...] = ()
    # at temperature: the other acceptance rule's expected acceptance on the same drafts
    # (core/engine/accept_rules.py; Stats.cf_at summed over positions ÷ the drafts reaching them)
    cf_rule: str = ""
    cf_acceptance: float | None = None
    p_min: float = 0.0
    speedup_min: float | None = None   # the measured speed-up's spread over the repetitions
    speedup_max: float | None = None   # (None with one repetition)
    repeats: int = 1
    prompts: int = 1
    prompts_drafted: int = 0           # prompts on which the drafter proposed a token
    vocab: str = ""                    # draft-simple across vocabularies: translate | intersect
    translate_us: float = 0.0          # their translation time per round (RoundEvent.t_translate)
    translate_cost: float = 0.0        # the same in target tokens: priced in the calibrated figure

    @property
    def config(self) -> str:
        return self.name()

    def name(self, with_draft: bool = True) -> str:
        return config_name(self.draft, self.drafter, self.p_min, with_draft, self.vocab)

    @property
    def spread(self) -> tuple[float, float] | None:
        return None if self.speedup_min is None else (self.speedup_min, self.speedup_max)

    @property
    def within_noise(self) -> bool:
        return within_noise(self.measured_speedup, self.spread)

    @property
    def never_drafted(self) -> bool:
        return self.draft_rounds == 0

    @property
    def note(self) -> str:
        """What the figures cannot say: "never drafted" (the speed-up is the target alone plus
        the drafter's lookups), "drafted on 1 of 5 prompts", "within noise"."""
        if self.never_drafted:          # its figure is not a drafter's: noise or not
            return "never drafted"
        notes = [f"drafted on {self.prompts_drafted} of {self.prompts} prompts"] \
            if self.prompts_drafted < self.prompts else []
        return "; ".join(notes + ["within noise"] * self.within_noise)

    def spread_text(self, unit: str = "") -> str:
        """"0.91–1.32" (with ``unit`` after each), or "" with one repetition."""
        return "" if self.spread is None else f"{self.speedup_min:.2f}{unit}–{self.speedup_max:.2f}{unit}"

    @property
    def by_drafter(self) -> str:
        return ";".join(f"{d.name}:{d.n_draft_rounds}:{d.n_drafted}:{d.n_accept}"
                        for d in self.drafters)

    def csv_values(self) -> list:
        out = []
        for col in CSV_COLUMNS:
            v = getattr(self, col)
            if v is None or (col == "n_max" and v == 0):
                out.append("")
            elif isinstance(v, float):
                out.append(f"{v:.6g}")
            else:
                out.append(v)
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["position_acceptance"] = list(self.position_acceptance)
        d["drafters"] = [ds.to_dict() for ds in self.drafters]
        d["by_drafter"] = self.by_drafter
        d.update(note=self.note, within_noise=self.within_noise, never_drafted=self.never_drafted)
        return d


# ============================================================================ rows from cells

def _worst(verdicts: Sequence[str]) -> str:
    if not verdicts:
        return ""
    return max(verdicts, key=lambda v: VERDICT_ORDER.index(v) if v in VERDICT_ORDER else 99)


def robust_time(groups: Sequence[Sequence[RunResult]]) -> float:
    """Generation seconds of several groups of repeated runs (one group per prompt):
    Σ_groups tokens × the median over the group's runs of seconds per token. With one
    run per group it is the plain sum; with repeats, one run slowed down by a burst of
    load from elsewhere (on 2 cores llama.cpp's threads can stall 10× when one loses its
    core) does not swamp the others."""
    total = 0.0
    for runs in groups:
        runs = [r for r in runs if r.stats.n_tokens > 0]
        if not runs:
            continue
        per_token = statistics.median(r.stats.t_total / r.stats.n_tokens for r in runs)
        total += per_token * sum(r.stats.n_tokens for r in runs)
    return total


def repeat_speedups(cells: Sequence[Cell]) -> list[float]:
    """The measured speed-up of each repetition, pooled over the cells (prompts): its
    speculative runs' tokens per second ÷ those of the baselines measured with them (the runs
    that bracket them in time). A cell stopped short adds to the repetitions it reached."""
    out = []
    for i in range(max((len(c.spec) for c in cells), default=0)):
        spec = [c.spec[i] for c in cells if i < len(c.spec)]
        base = [b for c in cells if i < len(c.bases) for b in c.bases[i]]
        tps = [sum(r.stats.n_tokens for r in runs) / t
               for runs in (spec, base) if (t := sum(r.stats.t_total for r in runs)) > 0]
        if len(tps) == 2 and tps[1] > 0:
            out.append(tps[0] / tps[1])
    return out


def spread_of(values: Sequence[float]) -> tuple[float, float] | None:
    """(lowest, highest) of several repetitions' figures; None for fewer than two."""
    return (min(values), max(values)) if len(values) >= 2 else None


def within_noise(speedup: float, spread: tuple[float, float] | None) -> bool:
    """A speed-up whose repetitions disagree by more than the gain or loss they measure: their
    spread is wider than its distance from 1×, both on the ratio scale a speed-up lives on
    (highest ÷ lowest against speed-up or 1 ÷ speed-up: 0.5× is as far from 1× as 2×, and a
    0.05× whose repetitions ran from 0.03× to 0.83×, a run stalled by load, is noise, not a
    twentyfold loss). Unknown (one repetition): not flagged."""
    if spread is None:
        return False
    low, high = spread
    if low <= 0 or speedup <= 0:
        return True
    return math.log(high / low) > abs(math.log(speedup))


def make_row(draft: str, n: int, prompt: str, cells: Sequence[Cell], cal: Calibration | None,
             sync: str, alpha: float | None = None) -> Row:
    """One row from the runs of one or more cells (pooled when several). Without a calibration
    (``cal`` None: a recurrent or hybrid memory) the calibrated figures are NaN and the
    textbook's f is the runs' own: draft time per drafted token ÷ the baseline's per token."""
    spec = [r for c in cells for r in c.spec]
    base = [r for c in cells for r in c.baseline]
    reports = [rep for c in cells for rep in c.lossless]
    tokens = sum(r.stats.n_tokens for r in spec)
    rounds = sum(r.stats.n_rounds for r in spec)
    t_spec = robust_time([c.spec for c in cells])
    b_tokens = sum(r.stats.n_tokens for r in base)
    t_base = robust_time([c.baseline for c in cells])
    n_drafted = sum(r.stats.n_drafted for r in spec)
    n_accept = sum(r.stats.n_accept for r in spec)
    draft_rounds = sum(r.stats.n_draft_rounds for r in spec)
    drafter = cells[0].drafter if cells else DRAFT_MODEL
    members = pool_drafters(drafter.split(">"), [r.stats for r in spec])
    lookup = sum(r.stats.t_lookup for r in spec) / rounds if rounds else 0.0    # seconds per round
    translate = sum(r.stats.t_translate for r in spec) / rounds if rounds else 0.0
    accepted_at, drafted_at = _position_counts(spec)
    tps = tokens / t_spec if t_spec > 0 else 0.0
    b_tps = b_tokens / t_base if t_base > 0 else 0.0
    per_repeat = repeat_speedups(cells)
    lo_hi = spread_of(per_repeat)
    # each repetition against the baselines that bracket it, the median of them: inside the spread
    measured = statistics.median(per_repeat) if per_repeat else tps / b_tps if b_tps > 0 else 0.0
    expected = n_accept / draft_rounds if draft_rounds else 0.0          # E per round that drafted
    textbook, calibrated, f = _predictions(cal, n, sync, spec, base, members, accepted_at, lookup,
                                           translate)
    div = [rep.divergence.position for rep in reports if rep.divergence is not None]
    return Row(
        draft=draft, drafter=drafter, n_max=n, prompt=prompt, tokens=tokens, rounds=rounds,
        acceptance=n_accept / n_drafted if n_drafted else 0.0,
        mean_accepted_length=1.0 + expected,
        tokens_per_s=tps, baseline_tokens_per_s=b_tps, measured_speedup=measured,
        textbook_speedup=textbook, calibrated_speedup=calibrated,
        textbook_error=textbook / measured - 1.0 if measured > 0 else float("nan"),
        calibrated_error=calibrated / measured - 1.0 if measured > 0 else float("nan"),
        alpha_speedup=calibrated_speedup(cal, n, alpha=alpha, sync=sync)
        if alpha is not None and n > 0 and cal is not None else None,
        f=f, prefill_ms=1e3 * sum(r.prefill_s for r in spec) / len(spec) if spec else 0.0,
        baseline_prefill_ms=1e3 * sum(r.prefill_s for r in base) / len(base) if base else 0.0,
        lossless=_worst([rep.verdict for rep in reports]), divergence_at=min(div) if div else None,
        draft_rounds=draft_rounds, lookup_us=1e6 * lookup,
        lookup_cost=lookup / cal.t1 if cal is not None else 0.0,
        drafters=members,
        position_acceptance=tuple(a / d if d else 0.0 for a, d in zip(accepted_at, drafted_at)),
        p_min=cells[0].p_min if cells else 0.0,
        speedup_min=lo_hi[0] if lo_hi else None, speedup_max=lo_hi[1] if lo_hi else None,
        repeats=max(len(per_repeat), 1), prompts=len(cells),
        prompts_drafted=sum(1 for c in cells if any(r.stats.n_draft_rounds for r in c.spec)),
        vocab=cells[0].vocab if cells else "", translate_us=1e6 * translate,
        translate_cost=translate / cal.t1 if cal is not None else 0.0,
        **counterfactual(spec))


def _position_counts(spec: Sequence[RunResult]) -> tuple[list[int], list[int]]:
    """(accepted_at, drafted_at) summed over runs: per draft position, the drafts whose token
    there was kept, and the drafts that reached it."""
    length = max((len(r.stats.accepted_at) for r in spec), default=0)

    def total(name: str) -> list[int]:
        return [sum(getattr(r.stats, name)[i] for r in spec if i < len(getattr(r.stats, name)))
                for i in range(length)]
    return total("accepted_at"), total("drafted_at")


def _predictions(cal: Calibration | None, n: int, sync: str, spec: Sequence[RunResult],
                 base: Sequence[RunResult], members: Sequence[DrafterStats],
                 accepted_at: Sequence[int], lookup: float,
                 translate: float = 0.0) -> tuple[float, float, float]:
    """(textbook, calibrated, f) for the runs ``spec`` of one configuration of draft length n:
    a model drafter's rounds priced with their own statistics (:func:`cost.model.model_speedup`),
    n-gram types averaged over every round with the lookup time as their draft cost
    (:func:`cost.model.chain_round_cost`); without a calibration f is the runs' own; a DFlash
    head's f is its block at n shared by the n tokens it drafts.
    ``translate``, the measured seconds per round of drafting across vocabularies, is added
    to every round's calibrated cost (the textbook prices the draft model's decodes only)."""
    types = [d.name for d in members]
    one_model = len(types) == 1 and types[0] in MODEL_TYPES   # a model drafter alone
    sync = draft_sync(types, sync)
    rounds = sum(r.stats.n_rounds for r in spec)
    n_drafted = sum(r.stats.n_drafted for r in spec)
    n_accept = sum(r.stats.n_accept for r in spec)
    draft_rounds = sum(r.stats.n_draft_rounds for r in spec)
    if draft_rounds:
        expected = n_accept / draft_rounds                      # E per round that drafted
        mean_len = n_drafted / draft_rounds
        per_round = [a / draft_rounds for a in accepted_at]     # unconditional a_i
        p_full = sum(r.n_full for r in spec) / draft_rounds
    else:
        expected, mean_len, per_round, p_full = 0.0, float(n), [], 0.0
    if cal is None:
        b_tokens = sum(r.stats.n_tokens for r in base)
        base_tok = sum(r.stats.t_verify for r in base) / b_tokens if b_tokens else 0.0
        draft_tok = sum(r.stats.t_draft for r in spec) / n_drafted if n_drafted else 0.0
        f = draft_tok / base_tok if one_model and base_tok > 0 else 0.0
        textbook = textbook_from_accepted(expected if one_model else n_accept / rounds,
                                          mean_len if one_model else n_drafted / rounds,
                                          f) if draft_rounds and rounds else 1.0
        return textbook, float("nan"), f
    own = alone(types)                                      # a type's own loop, its price
    if own is not None and own.priced == "batch":    # every round one batch of the target's
        textbook = textbook_from_accepted(expected, mean_len, 0.0) if draft_rounds else 1.0
        calibrated = batch_speedup(cal, rounds, sum(r.batch_tokens for r in spec),
                                       sum(r.stats.n_tokens for r in spec))
        return textbook, calibrated, 0.0
    if (own is not None and own.priced == "tree") or any(r.tree_nodes for r in spec):
        model = own is not None and own.source == MODEL   # a batch of nodes, and the draft's
        f = cal.f if model else (lookup / cal.t1 if rounds else 0.0)
        textbook = textbook_from_accepted(expected, mean_len, f) if draft_rounds else 1.0
        calibrated = tree_speedup(cal, draft_rounds, sum(r.tree_nodes for r in spec),
                                  sum(r.tree_steps for r in spec), n_accept,
                                  sum(r.empty_rounds for r in spec), model=model, lookup=f)
        return textbook, calibrated, f
    block = next((t for t in types if t in cal.block), "")      # a DFlash head's type
    f = cal.block_cost(block, n) / n if block else cal.f
    if one_model:
        textbook = textbook_from_accepted(expected, mean_len, f) if draft_rounds else 1.0
        calibrated = model_speedup(cal, n, per_round, sync, mean_len, p_full, draft_rounds,
                                   sum(r.empty_rounds for r in spec),
                                   sum(r.idle_drafts if block else r.extra_draft_decodes for r in spec),
                                   per_round=translate / cal.t1, drafter=types[0]) if rounds else 1.0
        return textbook, calibrated, f
    # n-gram types: averaged over every round, the lookup time as their draft cost
    model = next((d for d in members if d.name in MODEL_TYPES), DrafterStats(DRAFT_MODEL))
    textbook = textbook_from_accepted(n_accept / rounds, model.n_drafted / rounds, f) \
        if rounds else 1.0
    calibrated = chain_round_cost(cal, members, rounds, n_max=n, lookup=(lookup + translate) / cal.t1,
                                  sync=sync, draft_model=bool(set(types) & set(MODEL_TYPES))).speedup \
        if rounds else 1.0
    return textbook, calibrated, f


def counterfactual(spec) -> dict:
    """The other acceptance rule's expected acceptance over runs (Row.cf_rule, cf_acceptance):
    the expected kept tokens, summed over positions, ÷ the drafted tokens it was computed for."""
    kept = sum(sum(r.stats.cf_at) for r in spec)
    drafted = sum(sum(r.stats.cf_drafted_at) for r in spec)
    rule = next((r.stats.cf_rule for r in spec if r.stats.cf_rule), "")
    return {"cf_rule": rule, "cf_acceptance": kept / drafted if drafted else None} if rule else {}


def pool_drafters(types: Sequence[str], stats: Sequence) -> tuple[DrafterStats, ...]:
    """The chain's members' counts summed over runs (Stats.by_drafter), in priority order;
    a member that never won a round has zeros."""
    def add(a: tuple, b: tuple) -> tuple:
        return tuple(x + y for x, y in zip(a + (0,) * (len(b) - len(a)), b + (0,) * (len(a) - len(b))))
    out = []
    for name in types:
        total = DrafterStats(name)
        for st in stats:
            d = st.drafter(name)
            total = DrafterStats(name, total.n_draft_rounds + d.n_draft_rounds,
                                 total.n_drafted + d.n_drafted, total.n_accept + d.n_accept,
                                 add(total.drafted_at, d.drafted_at), add(total.accepted_at, d.accepted_at),
                                 add(total.accepted_hist, d.accepted_hist))
        out.append(total)
    return tuple(out)


def build_rows(cells: Sequence[Cell], calibrations: dict[str, Calibration], sync: str,
               alpha: float | None = None) -> list[Row]:
    """A row per finished cell and a pooled ``ALL`` row per configuration, in the cells' order;
    a draft without a calibration (a recurrent or hybrid memory) gets NaN predictions."""
    rows: list[Row] = []
    by_key: dict[tuple[str, str, int, float, str], list[Cell]] = {}
    for c in cells:
        by_key.setdefault((c.draft, c.drafter, c.n, c.p_min, c.vocab), []).append(c)
    for (draft, _, n, _, _), group in by_key.items():
        cal = calibrations.get(draft)
        done = [c for c in group if c.spec and c.baseline]
        rows += [make_row(draft, n, c.prompt, [c], cal, sync, alpha) for c in done]
        if done:
            rows.append(make_row(draft, n, ALL, done, cal, sync, alpha))
    return rows
