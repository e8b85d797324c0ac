"""Draft-length policies (core/engine/draft_policy.py): the rules on plain numbers, then on real
llama.cpp with the shipped demo pair: the engine drafts what the policy allows, and every
policy leaves greedy output exactly the target's own."""

import math
import random
from dataclasses import replace
from collections import Counter
from types import SimpleNamespace

import pytest

from specscope.core.cli.generate import policy_lines
from specscope.core.measure.cost.model import Calibration
from specscope.core.models.demo import demo_pair
from specscope.core.engine.draft_policy import (DROP, EXPLORE_POSITIONS, LAST, MEMORY_POSITIONS, PRIOR_RATE,
                                               TAKE, BestPredicted, FixedLength, HfHeuristic, make_policy)
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.errors import ConfigError
from specscope.core.engine.sampling import SamplerSettings

PROMPT = "def _count_words(path, encoding=\"utf-8\"):\n    \"\"\"Return a dict mapping each word\"\"\"\n"
N_MAX = 6


def calibration(k_max=9, f=0.05, slope=0.1) -> Calibration:
    """Cost figures on plain numbers: verification grows by ``slope`` per token, a draft token
    costs f (a CPU-like machine: long drafts only pay when they are accepted)."""
    c = tuple(1.0 + slope * (k - 1) for k in range(1, k_max + 1))
    return Calibration(k_max=k_max, n_past=128, t1=1e-3, c_raw=c, c=c, f=f,
                       f_batch=tuple(f * k for k in range(1, k_max + 1)), f_first=f, s=0.01,
                       o_base=0.02, o0=0.05, o1=0.01, r=0.01)


# ----------------------------------------------------------------------------- plain numbers
def test_hf_starts_at_n_max_goes_up_2_after_a_full_acceptance_and_down_1_otherwise():
    p = HfHeuristic(5)
    seen = [p.next_n()]
    for drafted, accepted in ((5, 5), (5, 2), (4, 0), (3, 3), (5, 1), (4, 0), (3, 0), (2, 0),
                              (1, 0), (0, 0), (1, 1), (3, 3)):
        p.update(drafted, accepted)
        seen.append(p.next_n())
    assert seen == [5, 5, 4, 3, 5, 4, 3, 2, 1, 1, 1, 3, 5]     # capped at n_max, floored at 1


def steps(policy, shares, cap=8) -> list[str]:
    """A round's draft steps as the engine takes them: the policy's answers until it stops."""
    out = []
    for i, share in enumerate(shares[:cap]):
        out.append(policy.step(i, share, cap))
        if out[-1] != TAKE:
            break
    return out


def test_cost_policy_drafts_on_through_confident_tokens_and_stops_before_an_unsure_one():
    """A run in which the draft's confident tokens (share 0.9) were always kept and its unsure
    ones (0.1) never: the policy drafts confident tokens up to the cap and drops an unsure one,
    wherever it comes; before any round it stops early (prior acceptance 0.7)."""
    p = BestPredicted(8, calibration())
    fresh = steps(p, [0.9] * 8)
    assert 1 < len(fresh) < 8 and fresh[-1] == LAST
    for _ in range(20):
        p.update(8, 8, [0.9] * 8)
        p.update(3, 2, [0.9, 0.9, 0.1])
    assert steps(p, [0.9] * 8) == [TAKE] * 7 + [LAST]
    assert steps(p, [0.9, 0.9, 0.1, 0.9]) == [TAKE, TAKE, DROP]
    assert steps(p, [0.1]) == [DROP]
    assert steps(p, [0.9] * 8, cap=3) == [TAKE, TAKE, LAST]


def test_cost_policy_drafts_shorter_where_draft_tokens_and_verification_cost_more():
    """The same run (confident tokens kept about 9 times in 10) on a machine where a draft token
    costs 0.05 and a verified token 0.1, and on one where they cost 0.5 and 0.3: it drafts the
    whole cap on the first, stops early on the second."""
    lengths = []
    for f, slope in ((0.05, 0.1), (0.5, 0.3)):
        p = BestPredicted(8, calibration(f=f, slope=slope))
        for _ in range(10):
            p.update(8, 8, [0.9] * 8)
            p.update(8, 2, [0.9] * 8)
        lengths.append(len(steps(p, [0.9] * 8)))
    assert lengths[0] == 8 and 1 < lengths[1] < 6


def judged(p, positions: int, kept: int, share: float = 0.9) -> None:
    """Rounds of one drafted token at ``share``, ``kept`` of ``positions`` kept."""
    for k in range(positions):
        p.update(1, int(k < kept), [share])


def test_cost_policy_tries_a_confidence_it_has_not_seen_where_drafting_could_pay():
    """At about the prior rate (0.7) one token does not pay on this machine (a draft token 0.3,
    a verified one 0.6), at certain acceptance it would: once the run's rate is known (a
    confidence of 0.9 judged 8 times, 6 kept), a confidence not yet seen is drafted, to learn
    its rate; once seen rejected twice it is dropped. Where not even certain acceptance would
    pay (a draft token as dear as the target's), it is dropped unseen."""
    p = BestPredicted(8, calibration(f=0.3, slope=0.6))
    judged(p, EXPLORE_POSITIONS, 6)
    assert steps(p, [0.5]) == [LAST]
    p.update(1, 0, [0.5])
    assert steps(p, [0.5]) == [LAST]
    p.update(1, 0, [0.5])
    assert steps(p, [0.5]) == [DROP]
    assert steps(p, [0.3]) == [LAST]                       # another band: still unseen
    assert steps(BestPredicted(8, calibration(f=1.0, slope=1.0)), [0.9]) == [DROP]


def test_cost_policy_drafts_before_it_knows_the_run_where_a_draft_kept_whole_would_pay():
    """A draft that costs 0.6 of the target's token (verification 0.05 a token more) pays only
    when it is almost always kept (a model beside its own harder-quantized copy: 0.97 kept). At
    the prior rate (0.7) no draft pays, so a policy that asked at the prior drafted nothing all run and never learned the
    rate. Until the target has judged EXPLORE_POSITIONS drafted positions it asks whether a
    draft kept whole would pay, drafts, learns the rate and drafts long; where the drafts are
    mostly rejected it learns that too and stops drafting."""
    for kept_rate, drafts_after in ((1.0, True), (0.3, False)):
        at_prior = BestPredicted(8, calibration(f=0.6, slope=0.05))
        judged(at_prior, EXPLORE_POSITIONS, round(0.7 * EXPLORE_POSITIONS))
        assert at_prior.next_n() == 0                       # at about the prior: no draft pays
        p = BestPredicted(8, calibration(f=0.6, slope=0.05))
        while p.exploring:
            assert p.next_n() == 8
            assert steps(p, [0.9] * 8)[-1] in (LAST, TAKE)    # it drafts, at least one token
            drafted = len(p.whole)
            p.update(drafted, drafted if kept_rate == 1.0 else 0, [0.9] * drafted)
        assert (p.next_n() > 0) == drafts_after
        if drafts_after:
            assert len(steps(p, [0.9] * 8)) > 2


def test_cost_policy_learns_what_its_empty_rounds_cost():
    """The demo pair's calibration on a 2-core AMD EPYC at one thread: a round costs 0.21 target
    tokens of Python and a draft decode, so one that drafts nothing costs 1.6 tokens for the
    one it emits. Before any round the policy prices a token at the target alone's 0.61 and
    drops its first draft; that empty round is a round of the run too (before, update() never
    heard of it, so the policy dropped every draft for good: 0.55× the target alone where
    drafting 8 gave 0.64×). After it, drafting pays, and it drafts."""
    c = (1.0, 2.18, 2.46, 2.62, 2.87, 3.19, 3.59, 3.70, 4.09)
    cal = Calibration(k_max=9, n_past=128, t1=7e-4, c_raw=c, c=c, f=0.168, f_first=0.246,
                      f_batch=(0.2, 0.2, 0.23, 0.26, 0.26, 0.31, 0.33, 0.35, 0.39), s=0.013,
                      o_base=0.011, o0=0.21, o1=0.083, r=0.034, b=0.60, shape=0.22)
    p = BestPredicted(8, cal)
    assert steps(p, [0.95] * 8) == [DROP]
    assert p.per_token > 1.5 * cal.baseline_token
    assert len(steps(p, [0.95] * 8)) > 1


def test_cost_policy_skips_a_round_where_no_draft_could_pay_and_prices_the_target_token_alone():
    """A skipped round is the target's token alone: after a drafted round (or the prompt) a
    single-token decode after another shape, c(1) and the rebuild; after another skipped round,
    a token of the target-alone stream (B)."""
    dear = replace(calibration(f=1.0, slope=1.0), b=0.8, shape=0.2)   # a draft token costs a target token
    p = BestPredicted(8, dear)
    assert p.next_n() == 0
    assert p.per_token == pytest.approx(dear.cost(1) + dear.s + dear.o_base + dear.shape)
    assert p.next_n() == 0
    assert p.spent[1] == pytest.approx(dear.cost(1) + dear.s + dear.o_base + dear.shape
                                       + dear.baseline_token)
    assert BestPredicted(8, calibration()).next_n() == 8      # a cheap draft: drafting may pay


def test_under_replay_sync_a_round_without_a_draft_pays_the_drafts_decode_of_the_kept_token():
    """Replay sync cannot leave the draft's cache behind: a round the policy gives no draft is
    an empty round whose kept token the draft decodes, priced as the what-if prices it; only
    reuse sync skips it for the target's token alone."""
    cal = replace(calibration(f=1.0, slope=1.0), b=0.8, shape=0.2)
    replayed = BestPredicted(8, cal, "replay")
    assert replayed.next_n() == 0
    assert replayed.spent[1] == pytest.approx(cal.cost(1) + cal.s + cal.r + cal.o0 + cal.draft_batch(1)
                                              + cal.shape)
    assert replayed.next_n() == 0
    assert replayed.spent[1] == pytest.approx(2 * (cal.cost(1) + cal.s + cal.r + cal.o0 + cal.draft_batch(1))
                                              + cal.shape)


def test_cost_policy_decides_whether_to_draft_by_a_threshold_against_skipping_the_round():
    """``next_n`` compares the price of a skipped round (its one token: the target's alone,
    nothing decoded on the draft) with a threshold worked out once per rates and batch size;
    over random states, machines and lengths it drafts exactly where some length, its first
    token at the best confidence seen and the rest at the pooled rate, makes tokens that cost
    less each, whatever a token has cost the run so far."""
    rng = random.Random(7)
    for _ in range(3000):
        p = BestPredicted(8, calibration(f=rng.uniform(0.01, 1.5), slope=rng.uniform(0.0, 1.0)))
        p.seen = EXPLORE_POSITIONS           # past the first positions: the run's rates decide
        p.best_rate, p.pooled, p.last_k = rng.random(), rng.random(), rng.randint(1, 9)
        p.per_token = rng.uniform(0.2, 6.0)
        skip = p._skipped()
        best, e, a = -math.inf, 0.0, p.best_rate
        for m in range(1, 9):
            e += a
            best = max(best, skip * (1 + e) - p.round_price(m, e, a, False) - p._reshape(m))
            a *= p.pooled
        if abs(best) > 1e-9:
            assert (p.next_n() > 0) == (best > 0)


def _best_length(p, i, kept, rate, cap) -> int:
    """The first best final length i..cap by every length's value, as the policy defines it
    (module docs), written out in full: what the policy's quicker plan must agree with."""
    e, before = sum(p.whole), (p.whole[-1] if p.whole else 0.0)
    values = [p.per_token * (1 + e) - p.round_price(i, e, before, True) - p._reshape(i)]
    a = kept
    for m in range(i + 1, cap + 1):
        e += a
        values.append(p.per_token * (1 + e) - p.round_price(m, e, a, False) - p._reshape(m))
        a *= rate
    return i + values.index(max(values))


def test_cost_policy_steps_take_the_best_length_s_answer_though_they_stop_looking_early():
    """A draft step plans a round's final length, but only asks whether it is the token before
    (DROP), this one (LAST) or longer (TAKE), so it stops at the first longer length that beats
    both. Over random machines, rates and states its answer is the full search's, shape rebuilds
    and the learning rule included."""
    rng = random.Random(11)
    answers = Counter()
    for _ in range(4000):
        cal = replace(calibration(f=rng.uniform(0.01, 1.0), slope=rng.uniform(0.0, 0.8)),
                      shape=rng.choice((0.0, rng.uniform(0.0, 0.5))))
        p = BestPredicted(8, cal)
        p.per_token = rng.uniform(0.2, 3.0)
        p.pooled = rng.random()
        p.rates = [rng.random() for _ in p.rates]
        p.reached = [rng.choice((0, 1, 5, 50)) for _ in p.reached]
        p.seen = rng.choice((0, EXPLORE_POSITIONS + 3))
        p.last_k = rng.randint(1, 9)
        i, cap = rng.randint(0, 6), rng.randint(1, 8)
        i = min(i, cap - 1)
        p.whole = [rng.uniform(0.1, 1.0) for _ in range(i)]
        share = rng.random()
        before = p.whole[-1] if p.whole else 1.0
        band_rate = p.rates[sum(share >= b for b in (0.2, 0.4, 0.6, 0.8))]
        best = _best_length(p, i, before * band_rate, p.pooled, cap)
        unseen = p.exploring or p.reached[sum(share >= b for b in (0.2, 0.4, 0.6, 0.8))] < 2
        if best == i and unseen and _best_length(p, i, before, 1.0, cap) > i:
            best = i + 1
        expected = DROP if best == i else LAST if best == i + 1 else TAKE
        got = p.step(i, share, cap)
        answers[got] += 1
        assert got == expected
    assert min(answers[k] for k in (DROP, LAST, TAKE)) > 200      # every answer was tried


def test_cost_policy_keeps_its_length_where_changing_it_costs_a_graph_rebuild():
    """llama.cpp rebuilds the target's graph for a verification batch of a new size
    (``Calibration.shape``). On a cheap machine the policy drafts a confident run to the cap;
    where a change of size costs 3 target tokens it keeps the length it verified last (3)."""
    lengths = []
    for shape in (0.0, 3.0):
        p = BestPredicted(8, replace(calibration(), shape=shape))
        for _ in range(10):
            p.update(8, 8, [0.9] * 8)
            p.update(3, 3, [0.9] * 3)
        lengths.append(len(steps(p, [0.9] * 8)))
    assert lengths == [8, 3]


@pytest.mark.parametrize("sync", ["reuse", "replay"])
def test_cost_policy_prices_a_round_as_the_whatif_replay_does(sync):
    from specscope.core.engine.drafters import DRAFT_MODEL
    from specscope.core.measure.whatif.ngram import Replayed
    from specscope.core.measure.whatif.draft import price
    cal = calibration()
    p = BestPredicted(6, cal, sync)
    for drafted, accepted, in_vain in ((0, 0, 0), (0, 0, 1), (3, 1, 0), (3, 3, 0), (3, 3, 1),
                                       (6, 6, 0), (6, 2, 1)):
        emitted = tuple(range(accepted + 1))
        replayed = Replayed(DRAFT_MODEL if drafted else "", tuple(range(drafted)), accepted,
                              emitted, 0.0, True, 6, in_vain)
        cost = len(emitted) * cal.baseline_token / price(cal, [replayed], sync)
        assert p.round_price(drafted, accepted, float(accepted == drafted), bool(in_vain)) == \
            pytest.approx(cost, rel=1e-12)


def test_a_replay_pays_the_rebuild_of_each_change_of_batch_size():
    from specscope.core.engine.drafters import DRAFT_MODEL
    from specscope.core.measure.whatif.ngram import Replayed
    from specscope.core.measure.whatif.draft import price

    def rounds(lengths):
        return [Replayed(DRAFT_MODEL, tuple(range(n)), n, tuple(range(n + 1)), 0.0, True, 8, 0)
                for n in lengths]
    cal = replace(calibration(), shape=0.5)
    for lengths in ((3, 3, 3, 3), (3, 5, 3, 5)):
        cost = sum(n + 1 for n in lengths) * cal.baseline_token / price(cal, rounds(lengths))
        plain = sum(n + 1 for n in lengths) * cal.baseline_token / price(calibration(), rounds(lengths))
        changes = sum(a != b for a, b in zip(lengths, lengths[1:]))
        assert cost == pytest.approx(plain + 0.5 * changes, rel=1e-12)


def test_cost_policy_needs_a_calibration_that_covers_n_max():
    with pytest.raises(ConfigError, match="calibration"):
        make_policy(SpecSettings(n_max=4, draft_policy="cost"), None)
    with pytest.raises(ConfigError, match="recalibrate"):
        make_policy(SpecSettings(n_max=12, draft_policy="cost"), calibration(k_max=9))
    with pytest.raises(ConfigError, match="draft policy"):
        SpecSettings(draft_policy="greedy").validate()


# ----------------------------------------------------------------------------- real llama.cpp
@pytest.fixture(scope="module")
def demo():
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings.deterministic(n_ctx=512)) as engine:
        yield engine


@pytest.fixture(scope="module")
def greedy(demo):
    no_eog = tuple((t, -math.inf) for t in range(demo.target.n_vocab) if demo.target.is_eog(t))
    return SamplerSettings(logit_bias=no_eog)


@pytest.fixture(scope="module")
def baseline(demo, greedy):
    run = demo.baseline(PROMPT, greedy, 120)
    list(run)
    return run.tokens


def spec_run(demo, greedy, policy, **kw):
    run = demo.speculative(PROMPT, SpecSettings(n_max=N_MAX, draft_policy=policy, **kw), greedy,
                           120, calibration=calibration())
    return run, list(run)


@pytest.mark.parametrize("policy", ["fixed", "hf", "cost"])
@pytest.mark.parametrize("sync", ["reuse", "replay"])
def test_every_policy_is_lossless(demo, greedy, baseline, policy, sync):
    run, events = spec_run(demo, greedy, policy, sync=sync)
    assert run.tokens == baseline
    assert all(len(e.drafted) <= e.draft_limit <= N_MAX for e in events if e.drafted)


def test_rounds_the_cost_policy_skips_decode_nothing_on_the_draft(demo, greedy, baseline):
    """A draft dearer than the target: every round skips and the draft decodes nothing; the
    kept tokens wait (a conversation's next turn would decode them with its prompt)."""
    run = demo.speculative(PROMPT, SpecSettings(n_max=N_MAX, draft_policy="cost"), greedy, 120,
                           calibration=calibration(f=1.0, slope=1.0))
    drafter, seen, events = None, [], []
    for e in run:
        drafter = drafter or run._chain.drafters[0]
        seen.append(len(drafter.pending))
        events.append(e)
    assert run.tokens == baseline
    assert all(e.mode == "plain" and e.draft_stop == "policy" and e.draft_limit == 0
               for e in events[:-1]) and events[-1].draft_stop == "budget"
    assert seen == list(range(1, len(seen) + 1))      # each round's token waits
    assert drafter.cached == len(run.prompt_tokens) - 1   # the prompt, decoded before the rounds


def test_a_turn_after_skipped_rounds_decodes_what_the_draft_lacks_with_its_prompt(demo, greedy):
    first = demo.speculative(PROMPT, SpecSettings(n_max=N_MAX, draft_policy="cost"), greedy, 40,
                             calibration=calibration(f=1.0, slope=1.0))
    list(first)
    assert first._chain.drafters[0].pending                  # the draft's cache lags
    prompt = [*first.prompt_tokens, *first.tokens, *demo.tokenize("\ndef main(argv):\n")]
    second = demo.speculative(prompt, SpecSettings(n_max=N_MAX), greedy, 40, resume=first.held)
    events = list(second)
    assert second.prefill.reused > 0                         # the target kept its rows
    alone = demo.baseline(prompt, greedy, 40)
    list(alone)
    assert second.tokens == alone.tokens
    assert sum(e.n_accepted for e in events) > 0              # the draft read the whole text


class SkipSome(FixedLength):
    """n_max but in rounds 2 to 5 (0 there: skipped)."""
    def __init__(self, n_max):
        super().__init__(n_max)
        self.round = -1

    def next_n(self) -> int:
        self.round += 1
        return 0 if 2 <= self.round <= 5 else self.n_max


def test_a_draft_skipped_for_some_rounds_catches_its_cache_up_in_one_batch(demo, greedy, baseline):
    run = demo.speculative(PROMPT, SpecSettings(n_max=N_MAX), greedy, 120)
    run.policy = SkipSome(N_MAX)
    events = list(run)
    assert run.tokens == baseline
    assert [e.draft_limit for e in events[2:6]] == [0] * 4 and not any(e.drafted for e in events[2:6])
    _, plain = spec_run(demo, greedy, "fixed")
    drafts = {e.n_past: e.drafted for e in plain if e.drafted}
    after = [e for e in events[6:] if e.drafted and e.n_past in drafts]
    same = [e for e in after if e.drafted == drafts[e.n_past]]
    assert after and len(same) >= 0.8 * len(after)      # the draft reads the same history
    assert sum(e.n_accepted for e in events[6:]) > 0


def test_the_fixed_policy_drafts_n_max_every_round(demo, greedy):
    _, events = spec_run(demo, greedy, "fixed")
    assert {e.draft_limit for e in events if e.mode == "spec"} == {N_MAX}
    assert all(len(e.drafted) == N_MAX or e.draft_stop == "budget" for e in events if e.mode == "spec")


def test_the_engine_follows_the_hf_rule(demo, greedy):
    _, events = spec_run(demo, greedy, "hf")
    drafts = [e for e in events if e.drafted]
    assert drafts[0].draft_limit == N_MAX
    steps = set()
    for e, nxt in zip(drafts, drafts[1:]):
        full = e.n_accepted == len(e.drafted)
        assert nxt.draft_limit == (min(N_MAX, e.draft_limit + 2) if full else max(1, e.draft_limit - 1))
        steps.add(full)
        if nxt.draft_limit < N_MAX and nxt.draft_stop != "budget":
            assert len(nxt.drafted) == nxt.draft_limit and nxt.draft_stop == "policy"
    assert steps == {True, False}                # both rules were exercised


def test_the_cost_policy_picks_n_in_bounds_and_learns_from_the_run(demo, greedy):
    demo.forget_learned()                   # from the prior: its counts are this run's alone
    run, events = spec_run(demo, greedy, "cost")
    limits = [e.draft_limit for e in events if e.drafted]
    assert all(1 <= n <= N_MAX for n in limits)
    policy = run.policy
    assert sum(policy.reached) == sum(min(len(e.drafted), e.n_accepted + 1)
                                      for e in events if e.drafted)
    assert sum(policy.kept) == sum(e.n_accepted for e in events if e.drafted)
    # it stops while drafting, short of its limit (n_max), and run's summary counts those lengths
    stopped = [e for e in events if e.draft_stop == "policy"]
    assert stopped and all(len(e.drafted) < e.draft_limit == N_MAX for e in stopped)
    session = SimpleNamespace(settings=SimpleNamespace(spec=run.spec), run=SimpleNamespace(events=events))
    counts = Counter(len(e.drafted) for e in events if e.draft_limit)
    assert policy_lines(session) == ["draft policy cost: rounds per draft length "
                                     + " ".join(f"{n}:{c}" for n, c in sorted(counts.items()))]


def test_a_cost_run_starts_from_what_the_engines_last_run_learned_of_the_pair(demo, greedy, baseline):
    """The next run's policy starts from the last one's counts, scaled to MEMORY_POSITIONS judged
    positions (its rates, not the prior), still asks whether to draft at all of a draft kept
    whole until its own drafts had EXPLORE_POSITIONS judged, and stays lossless; a greedy run
    with another seed shares it, a run at a temperature starts from the prior, and so does
    every run after forget_learned()."""
    demo.forget_learned()
    first, _ = spec_run(demo, greedy, "cost")
    judged = first.policy.pool[0]
    assert judged > MEMORY_POSITIONS
    carried = first.policy.learned()
    assert carried.pool[0] == pytest.approx(MEMORY_POSITIONS)
    assert carried.pool[1] / carried.pool[0] == pytest.approx(first.policy.pool[1] / judged)
    assert sum(carried.reached) == pytest.approx(sum(first.policy.reached) * MEMORY_POSITIONS / judged)
    second, events = spec_run(demo, greedy, "cost")
    assert second.tokens == baseline
    assert second.policy.seen == sum(min(len(e.drafted), e.n_accepted + 1) for e in events if e.drafted)
    assert second.policy.pool[0] == pytest.approx(MEMORY_POSITIONS + second.policy.seen)
    fresh = BestPredicted(N_MAX, calibration(), learned=carried)
    assert fresh.pooled == pytest.approx((carried.pool[1] + 2 * PRIOR_RATE) / (carried.pool[0] + 2))
    assert fresh.exploring and fresh.pooled != pytest.approx(PRIOR_RATE)
    reseeded = demo.speculative(PROMPT, SpecSettings(n_max=N_MAX, draft_policy="cost"),
                                replace(greedy, seed=7), 120, calibration=calibration())
    assert reseeded.policy.pool[0] > 0          # greedy: the seed samples nothing
    other = demo.speculative(PROMPT, SpecSettings(n_max=N_MAX, draft_policy="cost"),
                             replace(greedy, temperature=0.8), 120, calibration=calibration())
    assert other.policy.pool == [0, 0]
    demo.forget_learned()
    after = demo.speculative(PROMPT, SpecSettings(n_max=N_MAX, draft_policy="cost"), greedy, 120,
                             calibration=calibration())
    assert after.policy.pool == [0, 0] and after.policy.pooled == pytest.approx(PRIOR_RATE)


# ----------------------------------------------------------------------------- the CLI
def test_run_takes_the_policy_records_it_and_prints_the_tree_headroom(capsys, tmp_path):
    from specscope.core.cli.main import main
    from specscope.core.session.session import Session
    record = tmp_path / "hf.jsonl"
    assert main(["run", "-n", "40", "--ignore-eos", "--no-probe", "--spec-draft-n-max", "5",
                 "--spec-draft-policy", "hf", "--record", str(record)]) == 0
    out = capsys.readouterr().out
    assert "a width-w draft tree would accept: w=1" in out
    assert "draft policy hf: rounds per draft length" in out
    session = Session.load(record)
    assert session.settings.spec.draft_policy == "hf"
    assert session.run.stats.tree.acceptance(1) == session.run.stats.acceptance_rate
    with pytest.raises(SystemExit) as exit_:
        main(["run", "-n", "8", "--no-probe", "--spec-draft-policy", "best"])
    assert exit_.value.code == 2
    assert "invalid choice: 'best'" in capsys.readouterr().err
