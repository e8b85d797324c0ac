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
   (:class:`MeasuredCandidate`), and the decision (:func:`decide`): the best candidate whose range lies
   above 1.0×, else "don't speculate".

Only what llama.cpp can run is measured and recommended: the hf and cost policies are SpecScope's
(no llama.cpp flag), so they appear in the what-ifs beside the ceiling only.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence


from specscope.core.engine.engine import Engine
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.advise.advice import (MIN_PASSES, Advice, AdviseSettings, Candidate,
                                                 CategoryAdvice, MeasuredCandidate, Pair, Prompt, pool,
                                                 pooled_speedup)
from specscope.core.measure.cost.calibrate import CalibrationStopped, get_calibration
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.bench.lossless import execute
from specscope.core.measure.stats import fold
from specscope.core.measure.bench.sweep import uncalibratable
from specscope.core.measure.whatif.ngram import WhatIf, configurations, longest_drafted, priced, whatifs
from specscope.core.measure.whatif.draft import (chain_specs, draft_specs, draft_whatif,
                                                 draft_whatifs, hindsight, trace_draft)
from specscope.core.measure.bench.workloads import YOURS, load_user_prompts, load_workloads
from specscope.core.models.chat import chat_template, render_messages

Say = Callable[[str], None]
CALIBRATE_UP_TO = 17      # batches timed at most; longer n-gram drafts are priced on c(k)'s line


PLAN_SHARE = 0.85         # the budget's share a plan spends on runs (the rest: loads, calibrations)
MIN_PROMPTS = 2           # the fewest prompts per category a plan keeps
MIN_TOKENS = 24           # the fewest tokens per run a plan keeps


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
        self.cal_s: list[float] = []      # seconds each calibration took (or had taken when stopped)
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
                cat.needs_s = self.cost(len(cat.prompts), self.s.n_predict, cat) + self.calibrations_left_s()
        self.result.stopped = self.stop.is_set() and not self.result.out_of_time
        for cat in self.result.categories:
            cat.stopped = self.result.stopped
        self.result.seconds = time.monotonic() - self.t0
        return self.result

    def calibrations_left_s(self) -> float:
        """The calibrations still to take, priced as the longest one this run took (or had taken
        when the budget stopped it: at least that long)."""
        left = sum(1 for name in self.engines if name not in self.cals)
        return left * max(self.cal_s, default=0.0)

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
        cat.measured = [MeasuredCandidate(c, prompts=n) for c in cat.to_measure(self.s.top)]
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
            t = time.monotonic()
            try:
                cal, _ = get_calibration(engine, k_max, sampler=SamplerSettings(), stop=self.stop,
                                         k_draft=max(self.s.n_values) + 1 if name else None)
            finally:
                self.cal_s.append(time.monotonic() - t)
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
            # a chain one of whose types never drafts on the category's prompts is its other
            # types' configuration under a longer name (the copied command would carry a flag
            # that does nothing): left out; draft-simple alone at each n is a candidate of its own
            cands = [c for c in cands if not c.silent]
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

    def pair(self, m: MeasuredCandidate, p: Prompt, rep: int, spec_first: bool) -> None:
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
