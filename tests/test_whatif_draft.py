"""draft-simple what-ifs from one teacher-forced pass of the draft model (core/measure/whatif/draft.py):
each replayed setting must be what the engine really does with it on the demo pair, round for
round, with real llama.cpp; the hindsight ceiling must bound every policy."""

from dataclasses import replace

import pytest

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.drafters.ngram_mod import NgramModParams
from specscope.core.measure.cost.model import Calibration, chain_round_cost, round_cost
from specscope.core.measure.whatif.ngram import Replayed
from specscope.core.measure.whatif.draft import (draft_label, draft_specs, draft_whatif, draft_whatifs,
                                                 hindsight, missed, price, replay_draft, trace_draft)
from specscope.core.models.demo import demo_pair

PROMPTS = ["def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n",
           "The history of the printing press begins"]
N = 96
N_CTX = 1024
# verification costs 1 + 0.4 per extra token, a draft token 0.1: the cost policy moves its n
COSTS = tuple(1 + 0.4 * i for i in range(10))
CAL = Calibration(k_max=10, n_past=64, t1=1e-3, c_raw=COSTS, c=COSTS, f=0.1, f_batch=(0.1,) * 10, b=1.0)
BASE = SpecSettings(types=("draft-simple",))
CASES = [replace(BASE, n_max=1), replace(BASE, n_max=4), replace(BASE, n_max=8),
         replace(BASE, n_max=6, p_min=0.5), replace(BASE, n_max=8, p_min=0.9),
         replace(BASE, n_max=5, n_min=3), replace(BASE, n_max=8, draft_policy="hf"),
         replace(BASE, n_max=8, draft_policy="cost")]
# draft-simple after n-gram types: the n-gram drafter's draft wins a round where it has one
CHAINS = [replace(BASE, types=("ngram-simple", DRAFT_MODEL), n_max=4,
                  own={"ngram-simple": NgramMapParams(3, 8)}),
          replace(BASE, types=("ngram-mod", DRAFT_MODEL), n_max=6, p_min=0.5,
                  own={"ngram-mod": NgramModParams(4, 2, 16)}),
          replace(BASE, types=("ngram-map-k", DRAFT_MODEL), n_max=8, draft_policy="hf",
                  own={"ngram-map-k": NgramMapParams(2, 8)})]
CASES += CHAINS


@pytest.fixture(scope="module")
def pair():
    """The demo pair, deterministic settings; per prompt its tokens, the greedy continuation and
    the draft's trace (tails deep enough for every case)."""
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings.deterministic(n_ctx=N_CTX)) as engine:
        traces = []
        for text in PROMPTS:
            base = engine.baseline(text, SamplerSettings(), N)
            list(base)
            traces.append(trace_draft(engine, base.prompt_tokens, base.tokens, depth=7))
        yield engine, traces


def real_rounds(engine, text, spec):
    engine.forget_learned()             # a replay's cost policy starts from the prior
    run = engine.speculative(text, spec, SamplerSettings(), N, calibration=CAL)
    events = list(run)
    return run, [(e.drafter if e.drafted else "", len(e.drafted), e.n_accepted, e.emitted)
                 for e in events]


def test_rounds_the_cost_policy_skips_are_replayed_and_priced_as_the_target_token_alone(pair):
    """A draft as dear as the target: the engine's cost policy skips every round (the draft
    decodes nothing), the replay skips the same rounds, and prices them without the draft."""
    engine, traces = pair
    dear = replace(CAL, f=1.0, f_batch=tuple(1.0 * k for k in range(1, 11)),
                   c=tuple(1.0 + k for k in range(10)), c_raw=tuple(1.0 + k for k in range(10)))
    spec = replace(BASE, n_max=8, draft_policy="cost")
    engine.forget_learned()             # a replay's cost policy starts from the prior
    run = engine.speculative(PROMPTS[0], spec, SamplerSettings(), N, calibration=dear)
    real = [(e.draft_stop, len(e.drafted)) for e in run]
    rounds = replay_draft(traces[0], spec, n_ctx=N_CTX, n_predict=N, cal=dear)
    assert [len(r.draft) for r in rounds] == [n for _, n in real] == [0] * len(real)
    assert all(r.skipped for r in rounds) and all(stop == "policy" for stop, _ in real[:-1])
    # the first after the prompt's batch is a single-token decode after another shape, every
    # later one a token of the target-alone stream (B), as the policy prices them
    tokens = sum(len(r.emitted) for r in rounds)
    dear_b = replace(dear, b=0.8, s=0.02, r=0.03, o0=0.2, o_base=0.01)
    assert price(dear_b, rounds) == pytest.approx(
        tokens * dear_b.baseline_token / (dear_b.cost(1) + dear_b.s + dear_b.o_base
                                          + (len(rounds) - 1) * dear_b.baseline_token))


@pytest.mark.parametrize("spec", CASES, ids=lambda s: draft_label(s) + f" n_min={s.n_min}")
@pytest.mark.parametrize("which", range(len(PROMPTS)))
def test_a_replayed_draft_setting_is_the_engines_run_round_for_round(pair, spec, which):
    engine, traces = pair
    trace = traces[which]
    run, real = real_rounds(engine, PROMPTS[which], spec)
    assert tuple(run.tokens) == trace.cont
    replayed = [(r.drafter, len(r.draft), r.accepted, r.emitted)
                for r in replay_draft(trace, spec, n_ctx=N_CTX, n_predict=N, cal=CAL)]
    if replayed != real:
        first = next(i for i, (a, b) in enumerate(zip(replayed, real)) if a != b)
        pos = sum(len(r[3]) for r in real[:first])
        ties = [j for j in trace.near_ties() if pos <= j <= pos + 8]
        assert ties, f"round {first} differs at position {pos} with no near-tie: {replayed[first]} vs {real[first]}"
        pytest.xfail(f"a named near-tie of the draft at positions {ties}")
    assert sum(r[2] for r in real) > 0
    if spec in CHAINS and which == 0:          # the code prompt: both members win rounds
        assert {r[0] for r in real} >= {spec.types[0], DRAFT_MODEL}


def test_a_chain_with_draft_simple_is_priced_as_bench_prices_a_chain(pair):
    _, traces = pair
    spec = CHAINS[0]
    w = draft_whatif(traces[0], spec, n_ctx=N_CTX, n_predict=N, cal=CAL)
    assert w.name == "ngram-simple(size_n=3, size_m=8)>draft-simple n=4"
    members = [w.stats.drafter(t) for t in spec.types]
    assert all(m.n_draft_rounds for m in members)
    expected = chain_round_cost(CAL, members, w.stats.n_rounds, n_max=4, lookup=w.lookup_s / CAL.t1,
                                draft_model=True).speedup
    assert w.predicted == pytest.approx(expected) and w.lookup_s > 0


def test_the_ceiling_bounds_every_policy_and_pricing_follows_the_rounds(pair):
    _, traces = pair
    for trace in traces:
        ws = draft_whatifs(trace, n_ctx=N_CTX, n_predict=N, cal=CAL)
        assert len(ws) == len(draft_specs()) and len({w.name for w in ws}) == len(ws)
        ceiling = hindsight(trace, CAL, n_ctx=N_CTX, n_predict=N)
        assert all(w.predicted <= ceiling.speedup + 1e-9 for w in ws)
        best_fixed = max(w.predicted for w in ws if w.spec.draft_policy == "fixed" and w.spec.p_min == 0)
        assert ceiling.speedup > best_fixed
        # the ceiling's path walks the whole continuation: each round keeps the draft's matches,
        # up to its length, and the target's own token, and the last round ends it
        pos = 0
        for n in ceiling.lengths:
            assert pos < len(trace.cont) and 0 <= n <= 8
            kept = 0
            while kept < n and pos + kept < len(trace.cont) and trace.top[pos + kept] == trace.cont[pos + kept]:
                kept += 1
            pos = min(len(trace.cont), pos + kept + 1)
        assert pos == len(trace.cont) and any(ceiling.lengths)
        one = replay_draft(trace, replace(BASE, n_max=1), n_ctx=N_CTX, n_predict=N)
        assert price(CAL, one) == pytest.approx(next(w.predicted for w in ws if w.name == "draft-simple n=1"))


def test_the_pass_reports_its_progress_records_its_reach_and_stops_when_asked(pair):
    import threading
    from specscope.core.measure.cost.calibrate import CalibrationStopped
    engine, traces = pair
    trace = traces[0]
    assert (trace.depth, trace.p_floor) == (7, 0.0)       # no p_floor: each tail the whole depth
    assert trace.tails and {len(t) for t in trace.tails.values()} == {7}
    heard = []
    again = trace_draft(engine, trace.prompt, trace.cont, depth=7,
                        progress=lambda done, total, what: heard.append((done, total, what)))
    assert again.top == trace.top and again.tails == trace.tails
    assert heard and all(0 <= done < total for done, total, _ in heard)
    assert {what for *_, what in heard} == {"the continuation on the draft",
                                            "the draft after its rejected tokens"}
    floored = trace_draft(engine, trace.prompt, trace.cont, depth=7, p_floor=0.3)
    assert (floored.depth, floored.p_floor) == (7, 0.3) and floored.tails.keys() <= trace.tails.keys()
    assert all(trace.tails[q][:len(t)] == t and (len(t) == 7 or t[-1][1] < 0.3)
               for q, t in floored.tails.items())
    untailed = trace_draft(engine, trace.prompt, trace.cont)              # no depth: no tails
    assert (untailed.depth, untailed.p_floor, untailed.tails) == (0, 0.0, {})
    stop = threading.Event()
    stop.set()
    with pytest.raises(CalibrationStopped):
        trace_draft(engine, trace.prompt, trace.cont, depth=7, p_floor=0.3, stop=stop)


def test_a_round_pays_the_drafts_decode_of_the_kept_token_unless_a_row_holds_it():
    """The draft's cache must hold every kept token: a round that decoded no draft row decodes
    the target's token on the draft (DraftModel.accept), and so does replay sync after a row
    that proposed nothing; under reuse that row already holds it, also after a whole accepted
    draft."""
    def alone(extra, sync="reuse"):
        empty = Replayed("", (), 0, (7,), 0.0, True, 3, extra)
        return 1.0 / price(CAL, [empty], sync)          # cost per token; c(1) = 1, B = 1
    assert alone(0) == pytest.approx(1.0 + CAL.draft_batch(1))
    assert alone(1) == pytest.approx(1.0 + CAL.f)
    assert alone(1, "replay") == pytest.approx(1.0 + CAL.f + CAL.draft_batch(1))
    assert alone(0, "replay") == pytest.approx(1.0 + CAL.draft_batch(1))
    # a whole accepted draft stopped by p_min: the stopping row holds its last token
    whole = Replayed(DRAFT_MODEL, (1, 2), 2, (1, 2, 3), 0.0, True, 3, 1)
    assert 3.0 / price(CAL, [whole]) == pytest.approx(
        round_cost(CAL, 2, [1.0, 1.0]).total - CAL.draft_batch(1) + CAL.f)


def test_a_replays_excess_over_the_ceiling_adds_up_over_its_rounds_too_long_or_too_short(pair):
    _, traces = pair
    trace = traces[1]
    ceiling = hindsight(trace, CAL, n_ctx=N_CTX, n_predict=N)
    cost = len(trace.cont) * CAL.baseline_token
    for n in (1, 8):
        rounds = replay_draft(trace, replace(BASE, n_max=n), n_ctx=N_CTX, n_predict=N)
        m = missed(rounds, ceiling, CAL)
        assert m.cost_long + m.cost_short == pytest.approx(cost / price(CAL, rounds) - cost / ceiling.speedup)
        assert m.rounds == len(rounds) and m.too_long + m.too_short <= m.rounds
        if n == 8:      # never shorter than the best, which is at most 8
            assert (m.too_short, m.cost_short) == (0, 0.0) and m.too_long > 0
        else:           # the ceiling drafts longer where the draft keeps matching
            assert m.too_short > 0 and m.cost_short > 0
    assert len(ceiling.best) == len(trace.cont) + 1 and ceiling.to_end[0] == pytest.approx(cost / ceiling.speedup)


def test_the_ceiling_also_stops_on_a_row_decoded_in_vain_where_that_is_cheaper():
    """A draft that never matches, on a machine where a draft step (f) costs less than the sync
    decode of a kept token: stopping each round on a row in vain (p_min 0.9, every share 0.5)
    is the cheapest way through where a skipped round is dear (here the target-alone loop's
    own Python), and the ceiling must reach it. Where skipping is cheap, skipping every round
    (the cost policy's way on a draft as dear as the target: the draft decodes nothing) is
    cheaper still, and the ceiling reaches that."""
    from specscope.core.measure.whatif.draft import DraftTrace
    trace = DraftTrace(prompt=(1, 2), cont=(5, 6, 7, 8), top=(9,) * 5, p=(0.5,) * 5,
                       margin=(1.0,) * 5, tails={})
    in_vain = replay_draft(trace, replace(BASE, n_max=4, p_min=0.9), n_ctx=N_CTX)
    assert all(r.extra == 1 for r in in_vain[:-1])
    dear_skip = replace(CAL, f=0.05, o_base=1.0)         # the sync decode draft_batch(1) is 0.1
    assert hindsight(trace, dear_skip, n_ctx=N_CTX).speedup == pytest.approx(price(dear_skip, in_vain))
    cheap_skip = replace(CAL, f=0.05, b=0.7)
    dear_draft = replace(cheap_skip, f=1.0, f_batch=tuple(1.0 * k for k in range(1, 11)))
    skipped = replay_draft(trace, replace(BASE, n_max=4, draft_policy="cost"), n_ctx=N_CTX, cal=dear_draft)
    assert all(r.skipped and not r.draft for r in skipped)
    ceiling = hindsight(trace, cheap_skip, n_ctx=N_CTX)
    assert ceiling.speedup == pytest.approx(price(cheap_skip, skipped))
    assert price(cheap_skip, skipped) > price(cheap_skip, in_vain)
    assert ceiling.best[0] == ceiling.best_single[1] == -1 and ceiling.lengths == (0,) * len(skipped)