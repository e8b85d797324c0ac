"""What an advice holds: the settings it was asked with, each category's prompts, candidates
and measured pairs, the decision between them, and the figures a re-measurement is stated with
(core/measure/advise/advisor.py measures them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.settings import EngineSettings, SpecSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.bench.workloads import CATEGORIES, YOURS, Workload
from specscope.core.measure.cost.break_even import DraftPoint
from specscope.core.measure.cost.model import Calibration, fit_alpha
from specscope.core.measure.whatif.draft import N_MAX_RANGE, P_MINS
from specscope.core.measure.whatif.ngram import WhatIf
from specscope.core.plain import to_plain

LEVEL = 0.95              # the share of re-measurements a stated range holds
MIN_PASSES = 6            # the fewest complete passes a candidate is given a range from
BENCH_REPEATS = 3         # `specscope bench`'s default --repeats: the re-measurement the range is for
RESAMPLES = 2000          # bootstrap draws of BENCH_REPEATS passes

def bench_figure(spec: np.ndarray, base: np.ndarray, tok_spec: np.ndarray, tok_base: np.ndarray,
                 picks: np.ndarray) -> np.ndarray:
    """The speed-up `specscope bench` reports for repetitions ``picks`` of a [pass, prompt] grid of
    seconds per token (``spec``, ``base``), one figure per row of ``picks`` ([draws, repeats] pass
    indices): per prompt the median over its repetitions of seconds per token, weighted by the
    prompt's tokens (``bench.rows.robust_time``), target-alone ÷ speculative."""
    def per_token(grid, tokens):
        return np.median(grid[picks], axis=1) @ tokens / tokens.sum()
    return per_token(base, tok_base) / per_token(spec, tok_spec)


@dataclass(frozen=True)
class AdviseSettings:
    target: Path
    drafts: tuple[Path, ...] = ()
    categories: tuple[str, ...] = CATEGORIES
    budget_s: float = 300.0
    n_predict: int = 64
    top: int = 3                      # candidates measured per category
    passes: int = 12                  # at most this many passes over a category's prompts
    engine: EngineSettings = EngineSettings()
    n_values: tuple[int, ...] = N_MAX_RANGE
    p_mins: tuple[float, ...] = P_MINS
    workloads: Path | None = None     # default: the shipped suite
    prompts: Path | None = None       # the user's own prompts: the category YOURS (workloads.py)

    def validate(self) -> None:
        for path in (self.target, *self.drafts):
            if not Path(path).is_file():
                raise ConfigError(f"{path}: no such model file")
        if YOURS in self.categories and self.prompts is None:
            raise ConfigError(f"the category {YOURS!r} is a file of your own: give --prompts FILE")
        if self.budget_s <= 0 or self.n_predict < 2 or self.top < 1 or self.passes < 1:
            raise ConfigError("the budget must be positive, -n at least 2, --top and --passes at least 1")


@dataclass
class Prompt:
    workload: Workload
    text: str                        # what the target is given (chat-templated where it can be)
    tokens: list[int] = field(default_factory=list)
    cont: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Candidate:
    """One configuration pooled over a category's prompts. ``draft``: the draft file's name
    ("" for n-gram types)."""
    draft: str
    spec: SpecSettings
    name: str
    predicted: float | None
    acceptance: float
    tokens_per_round: float
    drafted_at: tuple[int, ...] = ()  # over the category's prompts: drafts reaching each position
    accepted_at: tuple[int, ...] = ()  # ... and accepted there (the greedy replays: the real runs' counts)
    silent: tuple[str, ...] = ()      # a chain's types that drafted no round on these prompts

    @property
    def position_acceptance(self) -> tuple[float, ...]:
        return tuple(a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at))

    @property
    def alpha(self) -> float:
        """The per-token acceptance α fitted to its counts (cost.model.fit_alpha)."""
        return fit_alpha(self.drafted_at, sum(self.accepted_at))

    @property
    def family(self) -> str:
        return f"{self.spec.label} ({self.draft})" if self.draft else self.spec.label

    @property
    def kind(self) -> str:
        """"n-gram", or the draft's name alone or "after n-gram types"."""
        if not self.draft:
            return "n-gram"
        return self.draft if self.spec.types == (DRAFT_MODEL,) else f"n-gram types, then {self.draft}"

    @property
    def runnable(self) -> bool:
        """llama.cpp has a flag for it (the hf and cost policies are SpecScope's)."""
        return self.spec.draft_policy == "fixed"

    def to_dict(self) -> dict:
        return {"name": self.name, "draft": self.draft, "types": list(self.spec.types),
                "n_max": self.spec.n_max if self.spec.uses_draft_model else None,
                "p_min": self.spec.p_min if self.spec.uses_draft_model else None,
                "predicted_speedup": self.predicted, "acceptance": self.acceptance,
                "tokens_per_round": self.tokens_per_round, "drafted_at": list(self.drafted_at),
                "accepted_at": list(self.accepted_at), "spec": to_plain(self.spec)}


@dataclass(frozen=True)
class Pair:
    """One prompt's speculative run and target-alone run, back to back, in pass ``rep``."""
    rep: int
    tokens: int
    spec_s: float
    base_tokens: int
    base_s: float

    @property
    def ratio(self) -> float:
        return (self.tokens / self.spec_s) / (self.base_tokens / self.base_s)


@dataclass
class MeasuredCandidate:
    """A candidate's real runs (:class:`Pair`); ``prompts``: how many its category has (a pass
    counts once it measured all of them); ``identical``: pairs whose tokens agreed."""
    candidate: Candidate
    runs: list[Pair] = field(default_factory=list)
    identical: int = 0
    prompts: int = 1
    threads_moved: int = 0   # pairs in which threads auto changed count, or the two runs' differed
    _range: tuple | None = field(default=None, repr=False, compare=False)   # interval()'s, by len(runs)

    @property
    def pairs(self) -> int:
        return len(self.runs)

    @property
    def ratios(self) -> list[float]:
        return [r.ratio for r in self.runs]

    def passes(self) -> list[list[Pair]]:
        """The complete passes over the category's prompts, each its pairs in its prompts' order."""
        by_pass: dict[int, list[Pair]] = {}
        for r in self.runs:
            by_pass.setdefault(r.rep, []).append(r)
        return [rs[:self.prompts] for _, rs in sorted(by_pass.items()) if len(rs) >= self.prompts]

    def pass_speedups(self) -> list[float]:
        """Per complete pass: its speculative tokens over time ÷ the target's."""
        return [(sum(r.tokens for r in rs) / sum(r.spec_s for r in rs))
                / (sum(r.base_tokens for r in rs) / sum(r.base_s for r in rs)) for rs in self.passes()]

    def interval(self) -> tuple[float, float, float] | None:
        """(estimate, low, high): what `specscope bench` reports over all the passes (each pass a
        repetition: per prompt the median seconds per token), and the range a `bench`
        re-measurement with its default three repetitions lands in 95 % of the time, from
        resampling the passes (BENCH_REPEATS of them, with replacement, RESAMPLES times); None
        before MIN_PASSES complete passes."""
        full = self.passes()
        if len(full) < MIN_PASSES:
            return None
        if self._range is not None and self._range[0] == len(self.runs):
            return self._range[1]
        spec = np.array([[r.spec_s / r.tokens for r in rs] for rs in full])
        base = np.array([[r.base_s / r.base_tokens for r in rs] for rs in full])
        grid = (spec, base, np.array([r.tokens for r in full[0]], float),
                np.array([r.base_tokens for r in full[0]], float))
        n = len(full)
        estimate = float(bench_figure(*grid, np.arange(n)[None, :])[0])
        draws = bench_figure(*grid, np.random.default_rng(0).integers(n, size=(RESAMPLES, BENCH_REPEATS)))
        low, high = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        self._range = len(self.runs), (estimate, float(low), float(high))
        return self._range[1]

    def to_dict(self) -> dict:
        iv = self.interval()
        return {**self.candidate.to_dict(), "pairs": self.pairs, "identical_pairs": self.identical,
                "threads_moved_pairs": self.threads_moved,
                "ratios": self.ratios, "pass_speedups": self.pass_speedups(),
                "runs": [asdict(r) for r in self.runs],
                "measured_speedup": iv[0] if iv else None,
                "interval": [iv[1], iv[2]] if iv else None}


@dataclass(frozen=True)
class Decision:
    best: MeasuredCandidate | None            # the recommendation (None: don't speculate)
    runner_up: MeasuredCandidate | None
    why: str
    judged: bool = True              # False: nothing was measured twice, no advice

    @property
    def verdict(self) -> str:
        return self.best.candidate.name if self.best else "don't speculate" if self.judged else \
            f"no advice (not measured on {MIN_PASSES} passes)"


def decide(measured: Sequence[MeasuredCandidate]) -> Decision:
    """The best measured candidate whose whole range lies above 1.0× (a re-measurement shows a
    gain 97.5 % of the time; highest estimate among them); if none does, "don't speculate", with
    the best tried as the runner-up. Candidates measured on fewer than MIN_PASSES passes have no
    range and cannot be recommended."""
    with_iv = sorted((m for m in measured if m.interval()), key=lambda m: -m.interval()[0])
    winners = [m for m in with_iv if m.interval()[1] > 1.0]
    if winners:
        best = winners[0]
        rest = [m for m in with_iv if m is not best]
        est, lo, _ = best.interval()
        return Decision(best, rest[0] if rest else None,
                        f"{est:.2f}x; 95% of re-measurements land above {lo:.2f}x, above 1.0x")
    if not with_iv:
        return Decision(None, None, f"no candidate was measured on {MIN_PASSES} passes: no range to judge by",
                        judged=False)
    est, lo, hi = with_iv[0].interval()
    return Decision(None, with_iv[0], f"the best measured, {with_iv[0].candidate.name} at {est:.2f}x "
                                      f"({lo:.2f}-{hi:.2f}x), does not beat 1.0x beyond its range")


@dataclass
class CategoryAdvice:
    category: str
    prompts: list[Prompt] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)   # every configuration, best first
    ceilings: dict[str, float] = field(default_factory=dict)    # per draft: the hindsight ceiling
    measured: list[MeasuredCandidate] = field(default_factory=list)
    needs_s: float | None = None      # not done in the budget: about this many seconds more
    left_out: int = 0                 # prompts the budget's plan left out
    stopped: bool = False             # the user stopped the advice (else the budget ended it)

    def to_measure(self, top: int) -> list[Candidate]:
        """The best runnable configuration of each family; of those, the best of each kind first
        (n-gram types, each draft model alone, each draft model after n-gram types: a
        calibration that misprices one kind cannot keep it from being measured), then the next
        best, ``top`` in all, in the order of their prediction."""
        best: dict[str, Candidate] = {}
        for c in self.candidates:
            if c.runnable and c.family not in best:
                best[c.family] = c
        ranked = list(best.values())
        firsts: dict[str, Candidate] = {}
        for c in ranked:
            firsts.setdefault(c.kind, c)
        chosen = (list(firsts.values()) + [c for c in ranked if c not in firsts.values()])[:top]
        return [c for c in ranked if c in chosen]

    def decision(self) -> Decision:
        d = decide(self.measured)
        if self.needs_s is not None and not d.judged:
            passes = max((len(m.passes()) for m in self.measured), default=0)
            so_far = (f"measured on {passes} of the {MIN_PASSES} passes a range needs" if passes
                      else "before it was measured")
            ended = "stopped" if self.stopped else "the budget ran out"
            return replace(d, why=f"{ended} {so_far}: about {self.needs_s:.0f} s more would give it "
                                  "advice")
        return d

    def policies(self, draft: str) -> dict[str, Candidate]:
        """Per draft model: the best fixed n (p_min 0), the best with p_min, hf and cost."""
        mine = [c for c in self.candidates if c.draft == draft and c.spec.types == (DRAFT_MODEL,)]
        kinds = {"fixed n": lambda c: c.spec.draft_policy == "fixed" and c.spec.p_min == 0,
                 "p_min": lambda c: c.spec.draft_policy == "fixed" and c.spec.p_min > 0,
                 "hf": lambda c: c.spec.draft_policy == "hf",
                 "cost": lambda c: c.spec.draft_policy == "cost"}
        return {k: next(c for c in mine if pick(c)) for k, pick in kinds.items()
                if any(pick(c) for c in mine)}


def pool(name: str, draft: str, spec: SpecSettings, ws: Sequence[WhatIf]) -> Candidate:
    """One configuration's what-ifs over several prompts: tokens over cost (module docs)."""
    tokens = sum(w.stats.n_tokens for w in ws)
    all_priced = all(w.predicted for w in ws)
    cost = sum(w.stats.n_tokens / w.predicted for w in ws) if all_priced else 0.0
    drafted = sum(w.stats.n_drafted for w in ws)
    rounds = sum(w.stats.n_rounds for w in ws)
    won = {d.name for w in ws for d in w.stats.by_drafter if d.n_draft_rounds}
    silent = tuple(t for t in spec.types if t not in won) if len(spec.types) > 1 else ()
    return Candidate(draft, spec, name, tokens / cost if all_priced and cost else None,
                     sum(w.stats.n_accept for w in ws) / drafted if drafted else 0.0,
                     tokens / rounds if rounds else 0.0, _summed(w.stats.drafted_at for w in ws),
                     _summed(w.stats.accepted_at for w in ws), silent)


def _summed(counts: Iterable[Sequence[int]]) -> tuple[int, ...]:
    """Per-position counts added up (lists of different lengths: the missing ones count 0)."""
    out: list[int] = []
    for c in counts:
        out += [0] * (len(c) - len(out))
        for i, v in enumerate(c):
            out[i] += v
    return tuple(out)


def pooled_speedup(pairs: Sequence[tuple[int, float]]) -> float:
    """(tokens, speed-up) per prompt -> the category's: tokens over cost."""
    cost = sum(t / s for t, s in pairs if s)
    return sum(t for t, _ in pairs) / cost if cost else 0.0


@dataclass
class Advice:
    settings: AdviseSettings
    categories: list[CategoryAdvice]
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    stopped: bool = False
    seconds: float = 0.0
    phase: str = ""                   # where it was when it ended
    out_of_time: bool = False         # the budget ended the run (not a stop)
    plan: str = ""                    # how the budget was planned, in words

    def pair_calibration(self) -> tuple[str, Calibration] | None:
        """(name, calibration) that break-even prices with: a draft model's pair calibration
        where there is one (it timed a speculative round's own costs: core/measure/cost/break_even.py),
        else the target's."""
        cals = sorted(self.calibrations.items(), key=lambda kv: not (kv[1].has_draft and not kv[1].head))
        return cals[0] if cals else None

    def draft_points(self) -> list[tuple[str, str, DraftPoint]]:
        """(category, draft, point): each calibrated draft model in each category, placed at its
        (α, f): its best fixed draft length without p_min (the break-even's round: n drafted
        every round, each token accepted with α; a p_min stop drafts only the sure ones, which
        would overstate α), α fitted to its rounds over the category's prompts, f its pair
        calibration's; its predicted speed-up, or where a setting of the draft was measured (with a
        range), the best one's measured and predicted speed-ups."""
        points = []
        for name, cal in self.calibrations.items():
            if not cal.has_draft or cal.head:
                continue
            for cat in self.categories:
                c = cat.policies(name).get("fixed n")
                if c is None or not c.drafted_at:
                    continue
                ms = [m for m in cat.measured if m.candidate.draft == name and m.interval()
                      and m.candidate.spec.types == (DRAFT_MODEL,)]
                m = max(ms, key=lambda m: m.interval()[0], default=None)
                point = DraftPoint(c.name, cal.f, c.alpha, c.predicted)
                if m is not None:       # the draft's best measured setting, whichever it is
                    point = replace(point, speedup=m.candidate.predicted, measured=m.interval()[0],
                                    measured_as=m.candidate.name if m.candidate is not c else "")
                points.append((cat.category, name, point))
        return points
