"""One recorded run's what-ifs, as the window's What-if tab asks for them (app/whatif_panel.py).

With greedy sampling the target's output does not depend on the drafter, so the run's own
tokens are the continuation every other setting would have produced: an n-gram type or chain
replays against it without a model (:func:`.whatif.whatif`), draft-simple from one
teacher-forced pass of the draft model (:func:`whatif.draft.draft_whatif`, the pass made once
by :func:`trace_run` on the engine's thread). :class:`RunWhatIfs` keeps the continuation, the
trace and the calibration, and each setting's replay once made, so a slider coming back to a
setting costs nothing.

Why a run or a setting cannot be replayed is one line each: :func:`unreplayable` (the run: a
sampled or synthetic run, no tokens), :func:`own_setting_problem` (the run's own drafter: a
head, a draft across vocabularies), :func:`spec_problem` (a setting the core does not
replay), :func:`engine_draft_problem` (no draft model to trace with).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from specscope.core.engine.drafters import DRAFT_MODEL, MODEL_TYPES, NGRAM_TYPES
from specscope.core.engine.drafters.registry import TYPES
from specscope.core.engine.engine import SpecSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.model import Calibration, extended
from specscope.core.measure.progress import Progress, quiet
from specscope.core.measure.whatif.ngram import WhatIf, whatif
from specscope.core.measure.whatif.draft import (N_MAX_RANGE, P_MINS, DraftTrace, draft_whatif,
                                                 hindsight, trace_draft)

__all__ = ["RunWhatIfs", "Ceiling", "N_VALUES", "P_STEP", "GREEDY_ONLY", "unreplayable",
           "own_setting_problem", "spec_problem", "engine_draft_problem", "trace_run", "label_of",
           "replayable_types"]

N_VALUES = N_MAX_RANGE          # draft-simple's n_max offered: 1..8, the hindsight ceiling's
P_STEP = 0.05                   # p_min is offered in these steps
GREEDY_ONLY = ("What-ifs are exact for greedy runs only: at temperature {:g} the text depends on "
               "the draws, so another drafter would have produced other text.")


def unreplayable(session) -> str:
    """Why ``session``'s continuation cannot be replayed ("" when it can)."""
    s = session.settings
    if not s.sampler.greedy:
        return GREEDY_ONLY.format(s.sampler.temperature)
    if s.spec is not None and s.spec.synthetic:
        return ("A synthetic-acceptance run keeps drafts at random: its text is not the target's, "
                "so there is nothing to replay.")
    if not session.run.tokens:
        return "The run emitted no tokens: there is nothing to replay."
    return ""


def own_setting_problem(session) -> str:
    """Why the run's own drafter cannot be replayed against its tokens ("" when it can, or for a
    baseline run)."""
    spec = session.settings.spec
    if spec is None:
        return ""
    heads = [t for t in spec.types if TYPES[t].reads_target]
    if heads:
        return (f"{heads[0]} drafts with {TYPES[heads[0]].what} from the target's hidden states, "
                "which one run does not record: this run's own setting cannot be replayed.")
    modes = {e.xvocab.mode for e in session.run.events if e.xvocab}
    if modes:
        return (f"This run drafted across vocabularies ({', '.join(sorted(modes))}): a replay reads "
                "the target's tokens, so draft-simple's rounds here cannot be replayed.")
    return spec_problem(spec, cal=True)


def spec_problem(spec: SpecSettings, *, cal: bool) -> str:
    """Why ``spec`` is not replayed ("" when it is): only n-gram types and draft-simple, alone or
    chained (``cal``: a calibration is at hand, which the cost policy needs)."""
    drafts = [t for t in spec.types if t in MODEL_TYPES]
    if not drafts:
        return ""
    if drafts != [DRAFT_MODEL]:
        why = TYPES[drafts[0]].no_replay
        return (f"{drafts[0]} cannot be replayed: {why}." if why else
                f"{drafts[0]} is not replayed: only draft-simple and the n-gram types are.")
    if spec.draft_policy == "cost" and not cal:
        return "The cost policy sets each round's length from a calibration: calibrate first."
    return ""


def engine_draft_problem(engine) -> str:
    """Why ``engine``'s draft cannot trace draft-simple what-ifs ("" when it can)."""
    if engine.draft is None:
        return "No draft model is loaded: draft-simple what-ifs need one."
    if engine.head is not None or engine.dbatch is None:
        return (f"{engine.draft.path.name} is a head, not a draft model: draft-simple what-ifs "
                "need a draft model.")
    if engine.vocab_refusal() is not None:
        return (f"{engine.draft.path.name} has another vocabulary than the target: a replay "
                "compares the draft's tokens with the target's, so draft-simple what-ifs need the "
                "same vocabulary.")
    return ""


def trace_run(engine, prompt, cont, progress: Progress = quiet,
              stop: threading.Event | None = None) -> DraftTrace:
    """The teacher-forced pass for every draft-simple setting offered (n_max in N_VALUES,
    p_min in steps of P_STEP; p_min 0 alone where the draft's memory cannot drop part of a
    sequence). Run it on the engine's thread."""
    why = engine_draft_problem(engine)
    if why:
        raise ConfigError(why)
    rolls = engine.dft_removable
    # rolled on the whole depth: the cost policy reads every share
    return trace_draft(engine, prompt, cont, depth=max(N_VALUES) - 1 if rolls else 0,
                       progress=progress, stop=stop)


@dataclass(frozen=True)
class Ceiling:
    """Where draft-simple's settings land under the hindsight ceiling (all priced)."""
    speedup: float                                  # the best draft length of every round, in hindsight
    bars: tuple[tuple[str, float, SpecSettings], ...]   # (label, predicted speed-up, setting)


@dataclass
class RunWhatIfs:
    """One run's continuation and what replays it: the draft's trace and the calibration once
    they are at hand; each setting replayed once (module docs)."""
    prompt: tuple[int, ...]
    cont: tuple[int, ...]
    n_ctx: int
    n_predict: int
    sync: str = "reuse"
    trace: DraftTrace | None = None
    cal: Calibration | None = None
    # the target alone's: prices the n-gram types, as bench does (a pair's calibration times the
    # target's batches between the draft's decodes, which cost a CPU more)
    alone: Calibration | None = None
    _done: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, session) -> "RunWhatIfs":
        """The what-ifs of a finished run; ConfigError saying why it cannot be replayed."""
        why = unreplayable(session)
        if why:
            raise ConfigError(why)
        s = session.settings
        return cls(tuple(session.prompt_tokens), tuple(session.run.tokens), s.engine.n_ctx,
                   s.n_predict, s.spec.sync if s.spec is not None else "reuse")

    def use(self, *, trace: DraftTrace | None = None, cal: Calibration | None = None,
            alone: Calibration | None = None) -> None:
        """Take the draft's trace, a calibration of the run's pair, or one of its target alone
        (the replays made so far are dropped: their prices change)."""
        if trace is not None:
            if trace.cont != self.cont:
                raise ConfigError("the draft's trace is of another continuation than this run's")
            self.trace = trace
        if cal is not None:
            self.cal = cal
        if alone is not None:
            self.alone = alone
        self._done.clear()

    @property
    def ngram_cal(self) -> Calibration | None:
        """What the n-gram types are priced with: the target alone's calibration where one is at
        hand, else the run's."""
        return self.alone or self.cal

    @property
    def draft_cal(self) -> Calibration | None:
        """The calibration draft-simple is priced with: one that timed the draft, its c(k)
        continued up to the longest draft offered (None: none at hand)."""
        if self.cal is None or not self.cal.has_draft:
            return None
        return extended(self.cal, max(N_VALUES) + 1)

    @property
    def max_p_min(self) -> float:
        """The largest p_min the trace replays (0: p_min 0 alone)."""
        return 0.95 if self.trace is not None and self.trace.depth > 0 else 0.0

    def problem(self, spec: SpecSettings) -> str:
        """Why ``spec`` cannot be replayed now ("" when it can)."""
        why = spec_problem(spec, cal=self.draft_cal is not None)
        if why or not spec.uses_draft_model:
            return why
        if self.trace is None:
            return "draft-simple what-ifs wait for the draft's pass over the run."
        if spec.p_min > 0 and spec.p_min + 1e-9 < self.trace.p_floor:
            return f"p_min below {self.trace.p_floor:g} is not traced."
        if spec.p_min > self.max_p_min + 1e-9:
            return ("p_min needs the draft rolled on after a rejected token, which this draft's "
                    "memory cannot do: p_min 0 only.")
        if spec.draft_policy == "cost" and self.trace.depth == 0:
            return ("The cost policy reads the draft's confidence after a rejected token too, "
                    "which this draft's memory cannot roll on to.")
        if spec.n_max > self.trace.depth + 1 and spec.p_min > 0:
            return f"n_max above {self.trace.depth + 1} with a p_min is not traced."
        return ""

    def evaluate(self, spec: SpecSettings) -> WhatIf:
        """``spec`` replayed over the run (priced where a calibration is at hand); ConfigError
        saying why when it cannot be."""
        done = self._done.get(spec)
        if done is not None:
            return done
        why = self.problem(spec)
        if why:
            raise ConfigError(why)
        if spec.uses_draft_model:           # draft_cal reaches every n_max offered
            w = draft_whatif(self.trace, spec, n_ctx=self.n_ctx, n_predict=self.n_predict,
                             cal=self.draft_cal)
        else:
            w = whatif(spec, self.prompt, self.cont, n_ctx=self.n_ctx, n_predict=self.n_predict,
                       cal=self.ngram_cal)
        self._done[spec] = w
        return w

    def ceiling(self, n_max: int = max(N_VALUES)) -> Ceiling | None:
        """draft-simple's fixed lengths 1..n_max, the hf and cost policies up to n_max and the best
        p_min, each priced, under the hindsight ceiling; None without a trace or a calibration."""
        cal = self.draft_cal
        if self.trace is None or cal is None:
            return None
        base = SpecSettings(types=(DRAFT_MODEL,), sync=self.sync)
        specs = [replace(base, n_max=n) for n in range(1, n_max + 1)]
        specs += [replace(base, n_max=n_max, draft_policy=p) for p in ("hf", "cost")]
        bars = [(label_of(s), self.evaluate(s).predicted, s) for s in specs]
        tried = [replace(base, n_max=n, p_min=p) for p in P_MINS if 0 < p <= self.max_p_min
                 for n in range(1, n_max + 1)]
        if tried:
            best = max(tried, key=lambda s: self.evaluate(s).predicted)
            bars.append((f"best p_min ({best.p_min:g}, n={best.n_max})", self.evaluate(best).predicted, best))
        top = hindsight(self.trace, extended(cal, n_max + 1), n_max=n_max, n_ctx=self.n_ctx, n_predict=self.n_predict,
                        sync=self.sync)
        return Ceiling(top.speedup, tuple(bars))


def label_of(spec: SpecSettings) -> str:
    """A draft-simple setting's short name on the ceiling's bars: "n=4", "hf n≤8"."""
    if spec.draft_policy != "fixed":
        return f"{spec.draft_policy} n≤{spec.n_max}"
    return f"n={spec.n_max}" + (f" p≥{spec.p_min:g}" if spec.p_min > 0 else "")


def replayable_types() -> tuple[str, ...]:
    """The drafters a what-if picks from: the n-gram types, and draft-simple."""
    return (*NGRAM_TYPES, DRAFT_MODEL)

