"""What-ifs from one greedy run: every n-gram drafter and chain, replayed without a model.

With greedy sampling the target's output does not depend on the drafter (that is what lossless
means), so one run fixes the continuation. A round's accepted count under any drafter is then the
common prefix of its draft and that continuation: :func:`replay` runs llama-speculative-simple's
loop (the budget, the chain's draft, accept, the history) against the continuation instead of the
target. It is the same oracle the n-gram conformance checks against llama.cpp's own chain
(tests/conformance/drafter_oracle.py). n-gram drafters need no model, so every configuration of
:func:`configurations` replays in milliseconds; their rounds are priced by the calibrated cost
model (:func:`cost.model.chain_round_cost`, the replay's own Python lookup time as the draft
cost) when a calibration of the target is at hand.

Exact for greedy runs only: at temperature the continuation depends on the draft's random draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np

from specscope.core.engine.drafters import DRAFT_MODEL, NGRAM_TYPES, Chain
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.drafters.ngram_mod import NgramModParams
from specscope.core.engine.drafters.registry import LLAMA_TYPES, TYPES
from specscope.core.engine.drafters.suffix import SuffixParams
from specscope.core.engine.drafters.build import make_chain
from specscope.core.engine.engine import SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.measure.cost.model import Calibration, chain_round_cost, extended
from specscope.core.measure.stats import Stats, fold

__all__ = ["Replayed", "WhatIf", "replay", "of_rounds", "configurations", "config_label", "whatif", "whatifs",
           "priced", "ranked", "longest_drafted", "events_of"]

# the parameters tried per type: llama.cpp's defaults first, then shorter keys and drafts
MAP_SIZES = ((12, 48), (2, 8), (3, 16), (4, 16), (6, 32))
MOD_SIZES = ((24, 48, 64), (8, 8, 32), (12, 16, 64), (16, 24, 64))
# suffix: vLLM's defaults, twice as long a draft per matched token, and a stricter estimate (on a
# CPU every rejected token costs nearly a decode: docs/suffix.md)
SUFFIX_SETTINGS = ((1.0, 0.1), (2.0, 0.1), (1.0, 0.5))
LLAMA_NGRAM = tuple(t for t in NGRAM_TYPES if t in LLAMA_TYPES)   # chained two by two


@dataclass(frozen=True)
class Replayed:
    """One replayed round: the chain's draft, how much of it the continuation kept and the
    tokens it emits (the kept drafts and the target's own token; fewer where the continuation
    ends). ``complete``: the round's own token lies inside the continuation; ``budget``: the
    most tokens the round could draft (0: the target's token alone, at the end of the run);
    ``extra``: draft-simple's rows decoded that proposed no token (the row p_min stopped at, a
    draft dropped for n_min); ``skipped``: its draft-length policy skipped the round, or a
    round after that drafted nothing, so the draft decoded nothing: the kept tokens wait for its
    next draft (core/engine/drafters/model.py)."""
    drafter: str
    draft: tuple[int, ...]
    accepted: int
    emitted: tuple[int, ...]
    t_lookup: float
    complete: bool
    budget: int
    extra: int = 0
    skipped: bool = False


def replay(chain: Chain, prompt: Sequence[int], cont: Sequence[int], *, n_ctx: int = 4096,
           n_predict: int | None = None) -> list[Replayed]:
    """llama-speculative-simple's loop with an oracle target that emits ``cont``: the chain
    drafts from the history with the round's budget, the common prefix of the draft and the
    continuation is accepted, the next continuation token is the target's own. A round whose
    budget is 0 (the last token of ``n_predict``, or the context's end) drafts nothing and emits
    the target's token, as SpecScope's engine does (llama.cpp drafts on there, unbounded).
    ``t_lookup``: the n-gram drafters' Python time in the round (the chain's own clock)."""
    n_predict = len(cont) if n_predict is None else n_predict
    hist = np.zeros(len(prompt) + len(cont) + 1, dtype=np.int32)
    hist[:len(prompt) - 1] = prompt[:-1]
    n_past, id_last, pos = len(prompt) - 1, prompt[-1], 0
    chain.begin(hist[:n_past])
    rounds = []
    lagging = False          # draft-simple's cache lacks the kept tokens of rounds it skipped
    while pos < len(cont):
        budget = max(0, min(n_ctx - n_past - 2, n_predict - pos - 1))
        proposal = chain.draft(hist[:n_past], id_last, budget) if budget > 0 else None
        t_lookup = chain.t_lookup if proposal is not None else 0.0
        draft = tuple(proposal.tokens) if proposal else ()
        extra = proposal.rows - len(draft) if proposal and proposal.drafter == DRAFT_MODEL else 0
        acc = 0
        while acc < len(draft) and pos + acc < len(cont) and draft[acc] == cont[pos + acc]:
            acc += 1
        ids = tuple(cont[pos:pos + acc + 1])
        complete = pos + acc < len(cont)
        decoded = bool(proposal and proposal.drafter == DRAFT_MODEL and proposal.rows)
        skipped = bool(proposal and proposal.drafter == DRAFT_MODEL and proposal.stop == "policy"
                       and proposal.limit == 0) or lagging and not decoded and not draft
        lagging = skipped or lagging and not decoded
        rounds.append(Replayed(proposal.drafter if draft else "", draft, acc, ids, t_lookup, complete,
                               budget, extra, skipped))
        if not complete:
            break
        chain.accept(acc)
        rounds[-1] = replace(rounds[-1], t_lookup=t_lookup + chain.t_lookup)
        hist[n_past:n_past + len(ids)] = [id_last, *ids[:-1]]
        id_last = ids[-1]
        pos += len(ids)
        n_past += len(ids)
    return rounds


def events_of(rounds: Iterable[Replayed], n_past0: int) -> list[RoundEvent]:
    """The replayed rounds as the engine's events, for :func:`.stats.fold`."""
    events, n_past = [], n_past0
    for i, r in enumerate(rounds):
        events.append(RoundEvent(index=i, n_past=n_past, seed=-1, drafted=r.draft,
                                 draft_probs=(), n_accepted=r.accepted, emitted=r.emitted,
                                 mode="spec", drafter=r.drafter, t_lookup=r.t_lookup,
                                 t_draft=r.t_lookup))
        n_past += len(r.emitted)
    return events


def config_label(spec: SpecSettings) -> str:
    """A configuration's name: its chain, each n-gram type with the parameters that differ
    from llama.cpp's defaults."""
    parts = []
    for t in spec.types:
        params = TYPES[t].params_class
        default = params() if params else None
        changed = [f"{k}={v}" for k, v in vars(spec.params(t)).items()
                   if getattr(default, k) != v] if params else []
        parts.append(f"{t}({', '.join(changed)})" if changed else t)
    return ">".join(parts)


def configurations() -> list[SpecSettings]:
    """Every n-gram type alone over a few parameter sets (suffix too), and every chain of two of
    llama.cpp's at its defaults."""
    out = []
    for t in ("ngram-simple", "ngram-map-k", "ngram-map-k4v"):
        for n, m in MAP_SIZES:
            out.append(SpecSettings(types=(t,), own={t: NgramMapParams(n, m)}))
    for match, lo, hi in MOD_SIZES:
        out.append(SpecSettings(types=("ngram-mod",), own={"ngram-mod": NgramModParams(match, lo, hi)}))
    out.append(SpecSettings(types=("ngram-cache",)))
    for factor, min_p in SUFFIX_SETTINGS:
        out.append(SpecSettings(types=("suffix",), own={"suffix": SuffixParams(
            max_spec_factor=factor, min_token_prob=min_p)}))
    for i, a in enumerate(LLAMA_NGRAM):
        for b in LLAMA_NGRAM[i + 1:]:
            out.append(SpecSettings(types=(a, b)))
    return out


@dataclass(frozen=True)
class WhatIf:
    """One configuration replayed over a run's continuation (``rounds``: its replayed rounds)."""
    name: str
    spec: SpecSettings
    stats: Stats
    lookup_s: float             # the drafters' Python time per round
    predicted: float | None     # the calibrated speed-up over the target alone (None: no calibration)
    rounds: tuple[Replayed, ...] = field(default=(), compare=False, repr=False)

    @property
    def tokens_per_round(self) -> float:
        return self.stats.n_tokens / self.stats.n_rounds if self.stats.n_rounds else 0.0

    def to_dict(self) -> dict:
        s = self.stats
        return {"name": self.name, "types": list(self.spec.types), "rounds": s.n_rounds,
                "tokens": s.n_tokens, "drafted": s.n_drafted, "accepted": s.n_accept,
                "acceptance": s.acceptance_rate, "tokens_per_round": self.tokens_per_round,
                "acceptance_by_position": list(s.position_acceptance),
                "lookup_s_per_round": self.lookup_s, "predicted_speedup": self.predicted}


def whatif(spec: SpecSettings, prompt: Sequence[int], cont: Sequence[int], *, n_ctx: int,
           n_predict: int | None = None, cal: Calibration | None = None) -> WhatIf:
    rounds = replay(make_chain(spec), prompt, cont, n_ctx=n_ctx, n_predict=n_predict)
    return priced(of_rounds(config_label(spec), spec, rounds, len(prompt) - 1), cal)


def of_rounds(name: str, spec: SpecSettings, rounds: Sequence[Replayed], n_past0: int) -> WhatIf:
    """Replayed rounds as an unpriced WhatIf: their statistics and the n-gram drafters' mean
    lookup time per round."""
    lookup = sum(r.t_lookup for r in rounds) / len(rounds) if rounds else 0.0
    return WhatIf(name, spec, fold(events_of(rounds, n_past0)), lookup, None, tuple(rounds))


def priced(w: WhatIf, cal: Calibration | None) -> WhatIf:
    """``w`` with the speed-up the calibrated cost model predicts for its rounds (unchanged
    without a calibration), c(k) continued up to its longest draft + 1 where the calibration
    stops short (:func:`cost.model.extended`); with draft-simple in the chain, a pair's (its
    rounds as the model prices them, the n-gram rounds with the draft cache's catch-up), as
    `bench` prices a chain."""
    if cal is None or not w.stats.n_rounds:
        return w
    cal = extended(cal, len(w.stats.drafted_at) + 1)
    model = DRAFT_MODEL in w.spec.types
    cost = chain_round_cost(cal, [w.stats.drafter(t) for t in w.spec.types], w.stats.n_rounds,
                            n_max=w.spec.n_max if model else 0, lookup=w.lookup_s / cal.t1,
                            sync=w.spec.sync, draft_model=model)
    return replace(w, predicted=cost.speedup)


def longest_drafted(ws: Iterable[WhatIf]) -> int:
    """The longest draft these replays made: a calibration to price them must reach it + 1."""
    return max((len(w.stats.drafted_at) for w in ws), default=0)


def ranked(ws: Iterable[WhatIf]) -> list[WhatIf]:
    """Best first: by predicted speed-up where priced, else by tokens per round."""
    return sorted(ws, key=lambda w: -(w.predicted if w.predicted is not None else w.tokens_per_round))


def whatifs(prompt: Sequence[int], cont: Sequence[int], *, n_ctx: int,
            n_predict: int | None = None, cal: Calibration | None = None,
            specs: Sequence[SpecSettings] | None = None) -> list[WhatIf]:
    """Every configuration replayed (and priced with ``cal``), best first."""
    return ranked(whatif(s, prompt, cont, n_ctx=n_ctx, n_predict=n_predict, cal=cal)
                  for s in (configurations() if specs is None else specs))
