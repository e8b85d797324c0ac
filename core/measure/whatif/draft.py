"""draft-simple what-ifs from the draft model alone, and the hindsight ceiling of draft length.

With greedy sampling a round's drafted tokens, up to and with the first one the target rejects,
are the draft's argmax on the continuation's own prefix. One teacher-forced pass of the draft
model over prompt + continuation (:func:`trace_draft`: batched decodes with logits on every row)
therefore gives, at each position j, the draft's argmax and its top-10 renormalised share (as
``DraftModel`` computes them). From that :func:`replay_draft` runs draft-simple's round loop
(the budget, n_max or the policy's length, p_min, n_min, the policy's update) for any setting,
without decoding again.

Only the tokens drafted *after* a rejected one leave the continuation's prefix: the draft went on
from its own wrong token. They change no accepted count, only how long the draft was; with a
p_min above 0, or the cost policy (which reads every share), that length depends on the draft's
shares there, so the trace also rolls the draft on from each rejected token (``tails``, a few
single decodes each, only as far as the smallest p_min could let it draft, or the whole depth
with ``p_floor`` 0). With p_min 0 and a policy that does not read shares the length is the cap
and no tail is needed.

``progress`` hears the decodes done of those to do, ``stop`` ends the pass (CalibrationStopped, as
the window's other measurements in its engine).

A teacher-forced row comes from a batched decode, the real run's from single ones: where the
draft's two best tokens are almost tied (``near_ties``) the two can pick different tokens.

:func:`hindsight` prices the best draft length of every round chosen in hindsight (dynamic
programming over the continuation's positions): the speed-up no draft-length policy can beat.
Rounds are priced one by one with the calibrated model (:func:`cost.model.round_cost`, the
round's own draft length and accepted count; :func:`price`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from specscope.core.engine.draft_policy import DROP, LAST, make_policy
from specscope.core.engine.drafters import DRAFT_MODEL, MODEL_TYPES, Chain
from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.drafters.build import make_drafter
from specscope.core.engine.drafters.model import draft_top
from specscope.core.engine.engine import SpecSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.calibrate import CalibrationStopped
from specscope.core.measure.cost.model import Calibration, round_cost
from specscope.core.measure.progress import Progress, quiet
from specscope.core.measure.whatif.ngram import (Replayed, WhatIf, config_label, configurations, of_rounds,
                                                 priced, replay)

__all__ = ["DraftTrace", "trace_draft", "replay_draft", "traced_chain", "TracedDraft", "chain_specs",
           "draft_label", "draft_specs", "price",
           "draft_whatif", "draft_whatifs", "Hindsight", "hindsight", "Missed", "missed",
           "N_MAX_RANGE", "P_MINS", "NEAR_TIE_LOGIT"]

N_MAX_RANGE = tuple(range(1, 9))          # draft-simple's n_max values tried
P_MINS = (0.0, 0.3, 0.5, 0.7, 0.9)        # ... and p_min values (fixed length)
CHAIN_N_VALUES = (2, 4, 8)                # draft-simple's n_max after an n-gram type
NEAR_TIE_LOGIT = 0.01     # a draft row whose best two logits are closer: batched and single
                          # decodes may pick different tokens there


@dataclass(frozen=True)
class DraftTrace:
    """The draft model's greedy view of one continuation. Row j (0 ≤ j ≤ len(cont)) is what it
    predicts for ``cont[j]`` from ``prompt + cont[:j]``: ``top[j]``, its share ``p[j]`` of the
    top-10 mass and the gap ``margin[j]`` to the runner-up's logit. ``tails[q]``: after drafting
    ``top[q]`` ≠ ``cont[q]``, the draft's next (token, share) pairs, as far as decoded: ``depth``
    tokens at most (0: no tails, so only p_min 0 and policies that do not read shares replay),
    each tail ending at the first share below ``p_floor`` (0: the whole depth)."""
    prompt: tuple[int, ...]
    cont: tuple[int, ...]
    top: tuple[int, ...]
    p: tuple[float, ...]
    margin: tuple[float, ...]
    tails: dict[int, tuple[tuple[int, float], ...]]
    depth: int = 0
    p_floor: float = 0.0

    def near_ties(self) -> list[int]:
        """Positions whose best two draft tokens are within NEAR_TIE_LOGIT."""
        return [j for j, m in enumerate(self.margin) if m < NEAR_TIE_LOGIT]


def _row(logits: np.ndarray) -> tuple[int, float, float]:
    """(argmax, its share of the top-10 mass, the gap to the second logit), as DraftModel."""
    ids, top, p = draft_top(logits)
    return int(ids[0]), p, float(top[0] - top[1])


def trace_draft(engine, prompt: Sequence[int], cont: Sequence[int], *, depth: int = 0,
                p_floor: float = 0.0, progress: Progress = quiet,
                stop: threading.Event | None = None) -> DraftTrace:
    """The teacher-forced pass of ``engine``'s draft model (module docs); with ``depth`` > 0 the
    tails after each rejected token, up to ``depth`` tokens, each ending at the first share
    below ``p_floor`` (a draft with p_min ≥ p_floor stops there; 0: the whole depth, as the cost
    policy's replay needs)."""
    ctx, batch = engine.dft, engine.dbatch
    if ctx is None or batch is None:
        raise ConfigError("a draft-simple what-if needs a draft model (-md), not an EAGLE-3 head")
    if depth > 0 and not engine.dft_removable:
        raise ConfigError("a draft whose memory cannot drop part of a sequence cannot roll "
                          "its draft on for the p_min and cost what-ifs")
    prompt, cont = tuple(int(t) for t in prompt), tuple(int(t) for t in cont)
    n0 = len(prompt) - 1

    def step(done: int, total: int, what: str) -> None:
        if stop is not None and stop.is_set():
            raise CalibrationStopped()
        progress(done, total, what)

    ctx.prefill(list(prompt[:-1]), batch, "the prompt on the draft")
    seq, rows = [prompt[-1], *cont], []
    for start in range(0, len(seq), batch.capacity):
        step(start, len(seq), "the continuation on the draft")
        chunk = seq[start:start + batch.capacity]
        batch.fill(chunk, n0 + start, logits="all")
        ctx.decode(batch, "the continuation on the draft")
        rows += [_row(r) for r in ctx.logits(len(chunk))]
    top, p, margin = (tuple(x) for x in zip(*rows))
    tails = {}
    if depth > 0:
        missed = [q for q in range(len(cont) + 1)
                  if (q == len(cont) or top[q] != cont[q]) and p[q] >= p_floor]
        for i, q in enumerate(reversed(missed)):   # each tail needs [0, n0 + 1 + q) intact: the last first
            step(i, len(missed), "the draft after its rejected tokens")
            tails[q] = _tail(ctx, batch, n0 + 1 + q, top[q], depth, p_floor)
    else:
        depth, p_floor = 0, 0.0
    return DraftTrace(prompt, cont, top, p, margin, tails, depth, p_floor)


def _tail(ctx, batch, pos: int, token: int, depth: int, p_floor: float) -> tuple:
    """The draft's greedy continuation after ``token`` at ``pos`` (the cache from ``pos`` on is
    dropped first)."""
    ctx.seq_rm(pos, -1)
    out = []
    for k in range(depth):
        batch.fill((token,), pos + k, logits="all")
        ctx.decode(batch, "a draft token after a rejected one")
        token, share, _ = _row(ctx.logits(1)[0])
        out.append((token, share))
        if share < p_floor:
            break
    return tuple(out)


def _draw(trace: DraftTrace, pos: int, cap: int, p_min: float,
          policy) -> tuple[list[int], list[float], int]:
    """(the draft of a round starting at ``pos``, its shares, the rows decoded without proposing
    a token), as DraftModel._draft: stop at the first share below p_min, where the policy stops,
    or at ``cap`` tokens."""
    draft: list[int] = []
    shares: list[float] = []
    miss = None                    # where the draft left the continuation
    cont = trace.cont
    while len(draft) < cap:
        j = pos + len(draft)
        if miss is None:
            token, share = trace.top[j], trace.p[j]
        else:
            tail = trace.tails.get(miss, ())
            k = j - miss - 1
            if (p_min > 0 or policy.reads_shares) and k >= len(tail):
                raise ConfigError(f"the trace holds no draft after position {miss} that deep: "
                                  "trace with a larger depth or a lower p_floor")
            token, share = tail[k] if k < len(tail) else (-1, 1.0)
        if share < p_min:
            return draft, shares, 1
        step = policy.step(len(draft), share, cap)
        if step == DROP:
            return draft, shares, 1
        draft.append(token)
        shares.append(share)
        if miss is None and (j >= len(cont) or token != cont[j]):
            miss = j
        if step == LAST:
            break
    return draft, shares, 0


class TracedDraft(Drafter):
    """draft-simple as a member of a replayed chain: its drafts come from the trace as
    ``DraftModel`` makes them (the round's cap: the policy's length, at least n_min, at most the
    budget; the p_min stop; a draft shorter than n_min dropped), and its policy learns only from
    rounds it drafted itself. ``Proposal.rows``: the rows it decoded, those that proposed
    nothing too (:attr:`Replayed.extra`)."""
    name = DRAFT_MODEL

    def __init__(self, trace: DraftTrace, spec: SpecSettings, cal: Calibration | None = None):
        self.trace, self.spec, self.policy = trace, spec, make_policy(spec, cal)
        self.n_drafted, self.shares = 0, []

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        pos = len(history) + 1 - len(self.trace.prompt)        # the continuation's next token
        limit = max(self.policy.next_n(), self.spec.n_min)
        if limit == 0 < budget and self.spec.n_max > 0 and self.spec.sync == "reuse":
            self.n_drafted, self.shares = 0, []        # the policy skips: the draft decodes nothing
            return Proposal(self.name, stop="policy", limit=0)
        cap = min(limit, budget)
        draft, shares, extra = _draw(self.trace, pos, cap, self.spec.p_min, self.policy) \
            if cap > 0 else ([], [], 0)
        if len(draft) < self.spec.n_min:
            draft, extra = [], extra + len(draft)
        self.n_drafted, self.shares = len(draft), shares
        return Proposal(self.name, tuple(draft), rows=len(draft) + extra)

    def accept(self, n_accepted: int, mine: bool) -> None:
        if mine and self.n_drafted:
            self.policy.update(self.n_drafted, n_accepted, self.shares)
        self.n_drafted = 0


def traced_chain(trace: DraftTrace, spec: SpecSettings, cal: Calibration | None = None) -> Chain:
    """``spec``'s chain with draft-simple drafting from ``trace`` (n-gram types before it, in
    llama.cpp's priority order)."""
    others = [t for t in spec.types if t != DRAFT_MODEL]
    if any(t in MODEL_TYPES for t in others) or DRAFT_MODEL not in spec.types:
        raise ConfigError(f"a traced chain holds draft-simple and n-gram types, not {', '.join(spec.types)}")
    return Chain([make_drafter(t, spec) for t in others] + [TracedDraft(trace, spec, cal)])


def replay_draft(trace: DraftTrace, spec: SpecSettings, *, n_ctx: int,
                 n_predict: int | None = None, cal: Calibration | None = None) -> list[Replayed]:
    """The rounds of ``spec`` (draft-simple alone or after n-gram types: n_max, n_min, p_min,
    draft_policy; ``cal`` for the cost policy) against the traced continuation, as the engine
    runs them."""
    return replay(traced_chain(trace, spec, cal), trace.prompt, trace.cont, n_ctx=n_ctx,
                  n_predict=n_predict)


def _round_price(cal: Calibration, drafted: int, accepted: int, extra: int, sync: str,
                 skipped: bool = False, after_single: bool = False) -> float:
    """One round's cost in target-token units: a drafted round as :func:`round_cost` prices it
    (its own length, its accepted positions), an empty one as the target's token and the draft's
    decode of it; each decoded row that proposed nothing costs a draft token f. The draft's cache
    must hold every kept token (``DraftModel.accept``): under reuse a row decoded without
    proposing already holds the last one, so neither an empty round nor a whole accepted draft
    then decodes it again. A skipped round (the draft decodes nothing) is priced as the cost
    policy prices it (``Calibration.skipped_round``; :func:`price` adds the rebuild of a change
    of size)."""
    if skipped:
        return cal.skipped_round(after_single)
    held = extra > 0 and sync == "reuse"
    if drafted == 0:
        cost = cal.cost(1) + cal.s + cal.r + cal.o0 + (0.0 if held else cal.draft_batch(1))
    else:
        cost = round_cost(cal, drafted, [1.0] * accepted + [0.0] * (drafted - accepted), sync,
                          p_full=0.0 if held else None).total
    return cost + extra * cal.f


def _prices(cal: Calibration, rounds: Sequence[Replayed], sync: str) -> list[float]:
    """Each round's :func:`_round_price`, a skipped one after the round before it."""
    out, single = [], False            # the prompt's batch came before the first round
    for r in rounds:
        out.append(_round_price(cal, len(r.draft), r.accepted, r.extra, sync, r.skipped, single))
        single = not r.draft
    return out


def price(cal: Calibration, rounds: Sequence[Replayed], sync: str = "reuse") -> float:
    """The calibrated speed-up over the target alone of these replayed rounds; a round whose
    verification batch has another size than the round before's also pays ``cal.shape`` (the
    target's graph rebuilt)."""
    cost = sum(_prices(cal, rounds, sync))
    cost += cal.shape * sum(len(a.draft) != len(b.draft) for a, b in zip(rounds, rounds[1:]))
    tokens = sum(len(r.emitted) for r in rounds)
    return tokens * cal.baseline_token / cost if cost > 0 else 1.0


def draft_label(spec: SpecSettings) -> str:
    """"draft-simple n=4", "draft-simple n=4 p_min=0.5", "draft-simple hf n≤8"; after n-gram
    types, theirs first: "ngram-simple>draft-simple n=4"."""
    own = f"{DRAFT_MODEL} {spec.draft_policy} n≤{spec.n_max}" if spec.draft_policy != "fixed" else \
        f"{DRAFT_MODEL} n={spec.n_max}" + (f" p_min={spec.p_min:g}" if spec.p_min > 0 else "")
    others = tuple(t for t in spec.types if t != DRAFT_MODEL)
    return f"{config_label(replace(spec, types=others))}>{own}" if others else own


def draft_specs(n_values: Sequence[int] = N_MAX_RANGE, p_mins: Sequence[float] = P_MINS, *,
                policies: Sequence[str] = ("hf", "cost"), n_min: int = 0) -> list[SpecSettings]:
    """Fixed lengths × p_min, then each adaptive policy at every n_max (p_min 0)."""
    base = SpecSettings(types=(DRAFT_MODEL,))
    out = [replace(base, n_max=n, n_min=min(n_min, n), p_min=p) for p in p_mins for n in n_values]
    return out + [replace(base, n_max=n, n_min=min(n_min, n), draft_policy=pol)
                  for pol in policies for n in n_values]


def chain_specs(n_values: Sequence[int] = CHAIN_N_VALUES) -> list[SpecSettings]:
    """draft-simple after each n-gram configuration of one type (:func:`.whatif.configurations`)
    at a few n_max, p_min 0: llama.cpp's chains of an n-gram type and the draft model."""
    return [replace(s, types=(*s.types, DRAFT_MODEL), n_max=n)
            for s in configurations() if len(s.types) == 1 for n in n_values]


def draft_whatif(trace: DraftTrace, spec: SpecSettings, *, n_ctx: int,
                 n_predict: int | None = None, cal: Calibration | None = None) -> WhatIf:
    """``spec`` replayed over the trace and priced with ``cal``: draft-simple alone round by
    round (:func:`price`), after n-gram types as `bench` prices a chain
    (:func:`.whatif.priced`, the n-gram drafters' lookup time measured in the replay)."""
    rounds = replay_draft(trace, spec, n_ctx=n_ctx, n_predict=n_predict, cal=cal)
    w = of_rounds(draft_label(spec), spec, rounds, len(trace.prompt) - 1)
    if spec.types != (DRAFT_MODEL,):
        return priced(w, cal)
    return replace(w, predicted=price(cal, rounds, spec.sync)) if cal is not None else w


def draft_whatifs(trace: DraftTrace, *, n_ctx: int, n_predict: int | None = None,
                  cal: Calibration | None = None,
                  specs: Sequence[SpecSettings] | None = None) -> list[WhatIf]:
    """Every setting of ``specs`` (default :func:`draft_specs`; the cost policy only with a
    calibration) replayed over the trace."""
    specs = draft_specs(policies=("hf", "cost") if cal is not None else ("hf",)) \
        if specs is None else specs
    return [draft_whatif(trace, s, n_ctx=n_ctx, n_predict=n_predict, cal=cal) for s in specs]


@dataclass(frozen=True)
class Hindsight:
    """The best draft length of every round, chosen knowing the continuation. ``best[j]``: the
    best length for a round starting at continuation position j (-1: skip it, the draft
    decoding nothing), ``to_end[j]``: the cheapest cost from there to the end (target-token
    units), both after a round that verified more than one token (or the prompt);
    ``best_single`` and ``to_end_single`` the same after a round that verified one."""
    speedup: float
    lengths: tuple[int, ...]       # the draft length of each round on the best path (0: none, or skipped)
    best: tuple[int, ...] = ()
    to_end: tuple[float, ...] = ()
    best_single: tuple[int, ...] = ()
    to_end_single: tuple[float, ...] = ()


SKIP = -1     # Hindsight.best: the round is skipped (reuse sync: the draft decodes nothing)


def hindsight(trace: DraftTrace, cal: Calibration, *, n_max: int = max(N_MAX_RANGE),
              n_ctx: int, n_predict: int | None = None, sync: str = "reuse") -> Hindsight:
    """The ceiling: over every way to pick each round's draft length in 0..n_max, and whether it
    stops on one more row decoded in vain (under reuse that row holds the last kept token, so it
    may cost less than the sync decode), or (under reuse, as the cost policy does) to skip the
    round, the draft decoding nothing, the cheapest way through the continuation (the tokens are
    the same whatever the lengths), by dynamic programming from its end (module docs). A skipped
    round costs less after a round that verified one token (:func:`_round_price`), so each
    position is solved after either kind of round."""
    cont, n_past0 = trace.cont, len(trace.prompt) - 1
    n_predict = len(cont) if n_predict is None else n_predict
    size = len(cont)
    run = [0] * (size + 1)                  # run[j]: the draft's matches from j on
    for j in range(size - 1, -1, -1):
        run[j] = run[j + 1] + 1 if trace.top[j] == cont[j] else 0
    # best[single][pos]: the cheapest way from pos on, after a round that verified one token or not
    best = [[0.0] * (size + 1), [0.0] * (size + 1)]
    choice = [[0] * (size + 1), [0] * (size + 1)]
    for pos in range(size - 1, -1, -1):
        budget = max(0, min(n_ctx - n_past0 - pos - 2, n_predict - pos - 1))
        cap = min(n_max, budget)
        drafted = []                        # (price, n, next position): the same after either kind
        for n in range(0, cap + 1):
            acc = min(n, run[pos])
            # short of the cap a draft may also stop on a row decoded in vain (p_min, cost)
            price_n = min(_round_price(cal, n, acc, extra, sync) for extra in ((0, 1) if n < cap else (0,)))
            drafted.append((price_n, n, min(size, pos + acc + 1)))
        for single in (0, 1):
            options = [(p + best[n == 0][nxt], n) for p, n, nxt in drafted]
            if sync == "reuse":       # (at budget 0 the engine skips only after skipped rounds:
                                      # the ceiling may skip there anyway, a bound still)
                skip = _round_price(cal, 0, 0, 0, sync, True, bool(single))
                options.append((skip + best[1][min(size, pos + 1)], SKIP))
            best[single][pos], choice[single][pos] = min(options)
    lengths, pos, single = [], 0, 0
    while pos < size:
        n = choice[single][pos]
        lengths.append(max(n, 0))
        pos, single = min(size, pos + min(max(n, 0), run[pos]) + 1), int(n <= 0)
    return Hindsight(size * cal.baseline_token / best[0][0] if best[0][0] > 0 else 1.0, tuple(lengths),
                     tuple(choice[0]), tuple(best[0]), tuple(choice[1]), tuple(best[1]))


@dataclass(frozen=True)
class Missed:
    """Where a replay loses against the hindsight-best: its rounds longer and shorter than the
    best length at their start (a skipped round counts as shorter than any length, an empty
    round as longer than a skip), and the cost each kind adds to the ceiling's (target-token
    units; a round of the best length that paid for a row it need not have decoded adds to the
    long side's cost)."""
    rounds: int
    too_long: int
    too_short: int
    cost_long: float
    cost_short: float


def missed(rounds: Sequence[Replayed], ceiling: Hindsight, cal: Calibration,
           sync: str = "reuse") -> Missed:
    """Each round's excess over the hindsight-best from where it starts (its price plus the
    cheapest way on from where it ends, less the cheapest from its start): the excesses add up
    to the replay's whole cost over the ceiling's, the rebuilds that :func:`price` adds for a
    change of size left out (the ceiling does not count them)."""
    long = short = 0
    cost_long = cost_short = 0.0
    pos, single = 0, False
    for r, price_r in zip(rounds, _prices(cal, rounds, sync)):
        best, to_end = (ceiling.best_single, ceiling.to_end_single) if single else (ceiling.best, ceiling.to_end)
        nxt = min(len(ceiling.to_end) - 1, pos + len(r.emitted))
        after = ceiling.to_end_single if not r.draft else ceiling.to_end
        excess = price_r + after[nxt] - to_end[pos]
        length = SKIP if r.skipped else len(r.draft)
        if length < best[pos]:
            short += 1
            cost_short += excess
        else:
            long += length > best[pos]
            cost_long += excess
        pos, single = nxt, not r.draft
    return Missed(len(rounds), long, short, cost_long, cost_short)
