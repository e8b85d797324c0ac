"""The advisor: which drafter and settings make this target fastest here, per kind of work.

1. For every workload prompt of the chosen categories (core/measure/bench/workloads.py; a chat prompt in
   the target's own template where it has one) the target runs alone once, greedy: that fixes
   the continuation whatever the drafter (lossless).
2. What-ifs over the whole space: every n-gram configuration replayed against it
   (core/measure/whatif/ngram.py), draft-simple at every n_max × p_min and the hf and cost policies from one
   teacher-forced pass of each draft model (core/measure/whatif/draft.py), priced with this machine's
   calibration and pooled per category (tokens over cost: a token-weighted harmonic mean of the
   prompts' speed-ups); the hindsight ceiling of draft length beside them.
3. The best configuration of each drafter family (a draft model's draft-simple, each n-gram
   type or chain) is ranked by that prediction, and the top few per category are measured for
   real: speculative run and target alone on the same prompt, back to back in alternating order,
   pass after pass over the category's prompts, until the budget is spent.
4. Per category: the measured speed-up of each candidate, as `specscope bench` computes it over
   the passes, with the range a `bench` re-measurement lands in 95 % of the time
   (:class:`Measured`), and the decision (:func:`decide`): the best candidate whose range lies
   above 1.0×, else "don't speculate".

Only what llama.cpp can run is measured and recommended: the hf and cost policies are SpecScope's
(no llama.cpp flag), so they appear in the what-ifs beside the ceiling only.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.break_even import DraftPoint
from specscope.core.measure.cost.calibrate import CalibrationStopped, get_calibration
from specscope.core.measure.cost.model import Calibration, fit_alpha
from specscope.core.measure.bench.lossless import execute
from specscope.core.measure.stats import fold
from specscope.core.measure.bench.sweep import uncalibratable
from specscope.core.measure.whatif.ngram import WhatIf, configurations, longest_drafted, priced, whatifs
from specscope.core.measure.whatif.draft import (N_MAX_RANGE, P_MINS, chain_specs, draft_specs,
                                                 draft_whatif, draft_whatifs, hindsight, trace_draft)
from specscope.core.measure.bench.workloads import (CATEGORIES, YOURS, Workload, load_user_prompts,
                                                    load_workloads)
from specscope.core.models.chat import chat_template, render_messages
from specscope.core.plain import to_plain

Say = Callable[[str], None]
CALIBRATE_UP_TO = 17      # batches timed at most; longer n-gram drafts are priced on c(k)'s line
LEVEL = 0.95              # the share of re-measurements a stated range holds


MIN_PASSES = 6            # the fewest complete passes a candidate is given a range from
PLAN_SHARE = 0.85         # the budget's share a plan spends on runs (the rest: loads, calibrations)
MIN_PROMPTS = 2           # the fewest prompts per category a plan keeps
MIN_TOKENS = 24           # the fewest tokens per run a plan keeps
BENCH_REPEATS = 3         # `specscope bench`'s default --repeats: the re-measurement the range is for
RESAMPLES = 2000          # bootstrap draws of BENCH_REPEATS passes


def bench_figure(spec: np.ndarray, base: np.ndarray, tok_spec: np.ndarray, tok_base: np.ndarray,
                 picks: np.ndarray) -> np.ndarray:
    """The speed-up `specscope bench` reports for repetitions ``picks`` of a [pass, prompt] grid of
    seconds per token (``spec``, ``base``), one figure per row of ``picks`` ([draws, repeats] pass
    indices): per prompt the median over its repetitions of seconds per token, weighted by the
    prompt's tokens (``sweep_rows.robust_time``), target-alone ÷ speculative."""
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

    @property
    def position_acceptance(self) -> tuple[float, ...]:
        return tuple(a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at))

    @property
    def alpha(self) -> float:
        """The per-token acceptance α fitted to its counts (cost_model.fit_alpha)."""
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
class Measured:
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
    best: Measured | None            # the recommendation (None: don't speculate)
    runner_up: Measured | None
    why: str
    judged: bool = True              # False: nothing was measured twice, no advice

    @property
    def verdict(self) -> str:
        return self.best.candidate.name if self.best else "don't speculate" if self.judged else \
            "no advice (not measured)"


def decide(measured: Sequence[Measured]) -> Decision:
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
    measured: list[Measured] = field(default_factory=list)
    needs_s: float | None = None      # not done in the budget: about this many seconds more
    left_out: int = 0                 # prompts the budget's plan left out

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
            return replace(d, why=f"the budget ran out before it was measured: about "
                                  f"{self.needs_s:.0f} s more would give it advice")
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
    return Candidate(draft, spec, name, tokens / cost if all_priced and cost else None,
                     sum(w.stats.n_accept for w in ws) / drafted if drafted else 0.0,
                     tokens / rounds if rounds else 0.0, _summed(w.stats.drafted_at for w in ws),
                     _summed(w.stats.accepted_at for w in ws))


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


class Advisor:
    """One advise run (module docs). ``say`` gets a progress line at every step; ``stop`` ends
    it between runs, as Ctrl-C (KeyboardInterrupt) does: what was measured is kept."""

    def __init__(self, s: AdviseSettings, say: Say | None = None, stop: threading.Event | None = None):
        s.validate()
        self.s, self.say_ = s, say or (lambda line: None)
        self.stop = stop or threading.Event()
        workloads = load_workloads([c for c in s.categories if c != YOURS], s.workloads) \
            if any(c != YOURS for c in s.categories) else []
        if YOURS in s.categories:
            workloads += load_user_prompts(s.prompts)
        self.result = Advice(s, [CategoryAdvice(c, [Prompt(w, "") for w in workloads if w.category == c])
                                 for c in s.categories])
        self.t0 = time.monotonic()
        self.engines: dict[str, Engine] = {}
        self.cals: dict[str, Calibration | None] = {}
        self.traced = 0                   # teacher-forced passes done (for share())
        self.t_token = self.t_prompt = 0.0    # the target's measured seconds per token, per prompt
        self.measured_pairs: set = set()      # (candidate, pass, prompt) measured

    def say(self, line: str) -> None:
        self.say_(f"[{time.monotonic() - self.t0:5.0f}s] {line}")

    @property
    def prompts(self) -> list[Prompt]:
        return [p for c in self.result.categories for p in c.prompts]

    @property
    def left_s(self) -> float:
        """The budget's seconds left."""
        return max(0.0, self.s.budget_s - (time.monotonic() - self.t0))

    def share(self) -> float:
        """How far the run is, 0 to 1: its steps done over those planned (a baseline or a
        teacher-forced pass one each, a measuring pair two: both its runs), or the budget's time
        spent, whichever is further."""
        n, s = len(self.prompts), self.s
        pairs = sum((len(c.measured) if self.result.phase == "measure" else s.top)
                    * sum(1 for p in c.prompts if p.cont or self.result.phase != "measure")
                    for c in self.result.categories) * s.passes
        done = (sum(1 for p in self.prompts if p.cont) + self.traced
                + 2 * sum(m.pairs for c in self.result.categories for m in c.measured))
        steps = done / max(1, n + len(s.drafts) * n + 2 * pairs)
        return min(1.0, max(steps, 1.0 - self.left_s / s.budget_s))

    def run(self) -> Advice:
        timer = threading.Timer(self.s.budget_s, self.out_of_time)
        timer.daemon = True
        timer.start()
        try:
            with ExitStack() as stack:
                self.open(stack)
                self.plan()
                for cat in self.result.categories:     # in turn: each finished one has advice
                    if self.stop.is_set():
                        break
                    self.category(cat)
                if not self.stop.is_set():
                    self.result.phase = "measure"
                    self.measure(schedule(self.result.categories, self.s.passes))
        except (KeyboardInterrupt, CalibrationStopped):
            self.stop.set()
        finally:
            timer.cancel()
        for cat in self.result.categories:   # not judged when the run ended: how much longer
            if cat.needs_s is None and not cat.decision().judged and self.t_token:
                cat.needs_s = self.cost(len(cat.prompts), self.s.n_predict, cat)
        self.result.stopped = self.stop.is_set() and not self.result.out_of_time
        self.result.seconds = time.monotonic() - self.t0
        return self.result

    def out_of_time(self) -> None:
        """The budget is spent: the run under way stops (a measuring pair is dropped)."""
        self.result.out_of_time = True
        self.stop.set()

    def open(self, stack: ExitStack) -> None:
        """The target alone (the baselines, the n-gram types: priced with its own calibration, as
        `bench` prices them: a pair's times its target's batches between the draft's decodes,
        which cost a CPU more), then an engine per draft model."""
        for path in (None, *self.s.drafts):
            name = Path(path).name if path else ""
            self.say(f"loading {self.s.target.name}" + (f" with {name}" if name else ""))
            self.engines[name] = stack.enter_context(Engine(self.s.target, path, self.s.engine))

    @property
    def first(self) -> Engine:
        return next(iter(self.engines.values()))

    # ------------------------------------------------------------------ the plan
    def plan(self) -> None:
        """The budget planned from the target's measured speed (its first baseline), once the
        calibrations every category prices with are taken (cached ones cost nothing): prompts
        per category and tokens per run, the most that let every category's best candidate be
        measured on MIN_PASSES passes within PLAN_SHARE of the time left; where even the
        least does not, the categories are measured in turn until the time is spent."""
        self.result.phase = "plan"
        cats = [c for c in self.result.categories if c.prompts]
        if not cats:
            return
        self.baseline(cats[0].prompts[0])
        for name in self.engines:
            if not self.stop.is_set():
                self.calibration(name, max(CALIBRATE_UP_TO, max(self.s.n_values) + 1) if not name
                                 else max(self.s.n_values) + 1)
        if self.stop.is_set() or not self.t_token:
            return
        s, left = self.s, self.left_s * PLAN_SHARE
        most = max(len(c.prompts) for c in cats)
        tokens = sorted({n for n in (s.n_predict, 48, 32, MIN_TOKENS) if n <= s.n_predict}, reverse=True)
        sizes = [(n, k) for n in tokens for k in range(most, min(most, MIN_PROMPTS) - 1, -1)]
        n, k = next(((n, k) for n, k in sizes
                     if sum(self.cost(min(k, len(c.prompts)), n) for c in cats) <= left), sizes[-1])
        for c in cats:
            c.left_out, c.prompts = max(0, len(c.prompts) - k), c.prompts[:k]
        first = cats[0].prompts[0]
        first.cont = first.cont[:n]              # greedy: the first n tokens of the longer run
        self.s = self.result.settings = replace(s, n_predict=n)
        per = [self.cost(len(c.prompts), n) for c in cats]
        fit = next((i for i in range(len(per), 0, -1) if sum(per[:i]) <= left), 0)
        self.result.plan = (
            f"planned from the target's {1 / self.t_token:.1f} tokens/s: {k} prompt"
            f"{'s' if k != 1 else ''} per category, {n} tokens per run, {min(s.passes, MIN_PASSES)} "
            f"passes of each category's best candidate: about {per[0]:.0f} s per category; "
            + ("the category fits" if len(cats) == 1 and fit else
               f"all {len(cats)} categories fit" if fit == len(cats) else
               f"{fit} of {len(cats)} categories fit, measured in turn"))
        self.say(self.result.plan)

    def cost(self, prompts: int, n: int, cat: "CategoryAdvice | None" = None) -> float:
        """Seconds a category of ``prompts`` prompts takes at ``n`` tokens per run: its
        baselines, its drafts' teacher-forced passes and its best candidate's passes (both runs
        of a pair priced as the target alone), from the target's measured speed; for ``cat``,
        only what it has still to do."""
        run = self.t_prompt + n * self.t_token
        baselines = prompts if cat is None else sum(1 for p in cat.prompts if not p.cont)
        passes = min(self.s.passes, MIN_PASSES)
        pairs = passes * prompts if cat is None else max(0, passes * prompts - (
            cat.measured[0].pairs if cat.measured else 0))
        return baselines * run + len(self.s.drafts) * prompts * self.t_prompt + 2 * pairs * run

    def category(self, cat: "CategoryAdvice") -> None:
        """One category to its advice: baselines, predictions, its best candidate measured on
        MIN_PASSES passes; skipped, with the time it would need, when that is more than is left."""
        if not cat.prompts:
            return
        need = self.cost(len(cat.prompts), self.s.n_predict, cat)
        if need > self.left_s:
            cat.needs_s = need
            self.say(f"{cat.category}: skipped, it needs about {need:.0f} s and {self.left_s:.0f} s "
                     "are left")
            return
        self.result.phase = "baselines"
        for p in cat.prompts:
            if not p.cont and not self.stop.is_set():
                self.baseline(p)
        if self.stop.is_set():
            return
        self.result.phase = "predict"
        self.predict([cat])
        self.result.phase = "measure"
        n = sum(1 for p in cat.prompts if p.cont)
        cat.measured = [Measured(c, prompts=n) for c in cat.to_measure(self.s.top)]
        self.measure((rep, c, m, i, p) for rep, c, m, i, p in schedule([cat], self.s.passes)
                     if m is cat.measured[0] and rep < MIN_PASSES)

    def baseline(self, p: Prompt) -> None:
        """The target alone once on a prompt, greedy: the continuation every what-if replays
        (and the target's speed, which plans the budget)."""
        engine = self.first
        w = p.workload
        p.text = render_messages(engine.target, list(w.messages)) \
            if w.chat and chat_template(engine.target) else w.text
        done = sum(1 for q in self.prompts if q.cont)
        self.say(f"baseline {done + 1}/{len(self.prompts)}: {w.category}, {w.name}")
        run = engine.baseline(p.text, SamplerSettings(), self.s.n_predict, self.stop)
        run_events = execute(run)
        stats = fold(run_events)
        if self.stop.is_set():
            return
        p.tokens, p.cont = list(run.prompt_tokens), list(run.tokens)
        if stats.n_tokens:
            # the first decodes build the graphs: the rest give the speed a run has
            warm = fold(run_events[2:]) if len(run_events) > 4 else stats
            self.t_token = warm.t_total / warm.n_tokens
            self.t_prompt = run.prefill.seconds

    def calibration(self, name: str, k_max: int) -> Calibration | None:
        """The engine's calibration (cached on disk; once per engine here), None where its
        memory cannot be calibrated (a recurrent or hybrid model)."""
        if name in self.cals:
            return self.cals[name]
        engine, cal = self.engines[name], None
        if not uncalibratable(engine):
            self.say(f"calibrating {name or self.s.target.name} up to {k_max} tokens "
                     "(cached, unless taken under load)")
            cal, _ = get_calibration(engine, k_max, sampler=SamplerSettings(), stop=self.stop,
                                     k_draft=max(self.s.n_values) + 1 if name else None)
            self.result.calibrations[name or self.s.target.name] = cal
        self.cals[name] = cal
        return cal

    def predict(self, categories: "Sequence[CategoryAdvice] | None" = None) -> None:
        """Every configuration's what-if per prompt, priced and pooled per category (of
        ``categories``; default all)."""
        categories = self.result.categories if categories is None else categories
        s = self.s
        done = [p for c in categories for p in c.prompts if p.cont]
        self.say(f"n-gram what-ifs: {len(configurations())} configurations × {len(done)} prompts")
        ngram = {id(p): whatifs(p.tokens, p.cont, n_ctx=s.engine.n_ctx, n_predict=s.n_predict)
                 for p in done}
        k_max = max((longest_drafted(ws) for ws in ngram.values()), default=1) + 1
        cal0 = self.calibration(next(iter(self.engines)),
                                max(min(k_max, CALIBRATE_UP_TO), max(s.n_values) + 1))
        ngram = {k: {w.name: priced(w, cal0) for w in ws} for k, ws in ngram.items()}
        drafted = {name: self.draft_whatifs(name, done) for name in self.engines if name}
        for cat in categories:
            mine = [p for p in cat.prompts if id(p) in ngram]
            cands = _pooled("", [ngram[id(p)] for p in mine])
            for name, (per_prompt, ceilings) in drafted.items():
                cands += _pooled(name, [per_prompt[id(p)] for p in mine if id(p) in per_prompt])
                if any(id(p) in ceilings for p in mine):
                    cat.ceilings[name] = pooled_speedup([(len(p.cont), ceilings[id(p)])
                                                         for p in mine if id(p) in ceilings])
            cat.candidates = sorted(cands, key=lambda c: -(c.predicted or c.tokens_per_round))

    def draft_whatifs(self, name: str, prompts: list[Prompt]):
        """({prompt: {setting: what-if} for every draft-simple setting}, {prompt: the hindsight
        ceiling}); the cost policy only where the pair is calibrated."""
        s = self.s
        cal = self.calibration(name, max(s.n_values) + 1)
        # tails as far as the lowest p_min lets a draft go, the whole depth for the cost policy
        floor = 0.0 if cal else min((p for p in s.p_mins if p > 0), default=None)
        specs = draft_specs(s.n_values, s.p_mins, policies=("hf", "cost") if cal else ("hf",))
        out, ceilings = {}, {}
        for i, p in enumerate(prompts, 1):
            if self.stop.is_set():
                break
            self.say(f"{name}: teacher-forced pass {i}/{len(prompts)} ({p.workload.name})")
            trace = trace_draft(self.engines[name], p.tokens, p.cont,
                                depth=max(s.n_values) - 1 if floor is not None else 0,
                                p_floor=floor or 0.0)
            self.traced += 1
            out[id(p)] = {w.name: w for w in draft_whatifs(
                trace, n_ctx=s.engine.n_ctx, n_predict=s.n_predict, cal=cal, specs=specs)}
            out[id(p)].update((w.name, w) for w in (      # draft-simple after an n-gram type
                draft_whatif(trace, spec, n_ctx=s.engine.n_ctx, n_predict=s.n_predict, cal=cal)
                for spec in chain_specs()))
            if cal is not None:
                ceilings[id(p)] = hindsight(trace, cal, n_max=max(s.n_values), n_ctx=s.engine.n_ctx,
                                            n_predict=s.n_predict).speedup
        return out, ceilings

    def measure(self, order) -> None:
        """The candidates' pairs in ``order`` (:func:`schedule`'s), each once, until the order
        runs out, or the budget (module docs)."""
        for rep, cat, m, i, p in order:
            if self.stop.is_set():
                return
            if (id(m), rep, i) in self.measured_pairs:
                continue
            self.measured_pairs.add((id(m), rep, i))
            self.say(f"measuring {cat.category}: {m.candidate.name} on {p.workload.name} "
                     f"(pass {rep + 1}; {len(m.pass_speedups())} passes so far)")
            self.pair(m, p, rep, spec_first=(rep + i) % 2 == 1)

    def pair(self, m: Measured, p: Prompt, rep: int, spec_first: bool) -> None:
        """One prompt's speculative run and target-alone run, back to back."""
        engine = self.engines[m.candidate.draft]
        runs = {}
        for kind in (("spec", "base") if spec_first else ("base", "spec")):
            run = engine.speculative(p.text, m.candidate.spec, SamplerSettings(), self.s.n_predict,
                                     self.stop) if kind == "spec" else \
                engine.baseline(p.text, SamplerSettings(), self.s.n_predict, self.stop)
            stats = fold(execute(run))
            if self.stop.is_set():
                return
            runs[kind] = (list(run.tokens), stats)
        (spec, a), (base, b) = runs["spec"], runs["base"]
        if a.t_total > 0 and b.t_total > 0:
            m.runs.append(Pair(rep, a.n_tokens, a.t_total, b.n_tokens, b.t_total))
            m.identical += spec == base
            # the load changed while they ran: auto moved, or ran the target on other counts
            m.threads_moved += (len(a.threads) > 1 or len(b.threads) > 1
                                or a.main_threads[:1] != b.main_threads[:1])


def schedule(categories: Sequence[CategoryAdvice], passes: int):
    """(pass, category, candidate, prompt index, prompt) in the order they are measured: every
    category's best candidate over its prompts, pass after pass until it has an interval
    (MIN_PASSES), then the second best the same way, and so on; then the further passes, each
    over every candidate. So a short budget still judges every category's best, and a
    category's passes lie apart in time (the others' between them), as separate `bench` runs do."""
    ranks = max((len(c.measured) for c in categories), default=0)
    first = min(passes, MIN_PASSES)
    order = [(rep, rank) for rank in range(ranks) for rep in range(first)] + \
            [(rep, rank) for rep in range(first, passes) for rank in range(ranks)]
    for rep, rank in order:
        for cat in categories:
            if rank < len(cat.measured):
                for i, p in enumerate(q for q in cat.prompts if q.cont):
                    yield rep, cat, cat.measured[rank], i, p


def _pooled(draft: str, per_prompt: list[dict[str, WhatIf]]) -> list[Candidate]:
    """Each configuration of ``per_prompt`` (one {name: what-if} per prompt) pooled."""
    if not per_prompt:
        return []
    return [pool(f"{name} ({draft})" if draft else name, draft, w.spec, [d[name] for d in per_prompt])
            for name, w in per_prompt[0].items()]


def advise(s: AdviseSettings, say: Say | None = None, stop: threading.Event | None = None) -> Advice:
    return Advisor(s, say, stop).run()
