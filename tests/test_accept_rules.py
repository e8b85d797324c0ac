"""The two acceptance rules (core/engine/accept_rules.py): both draw the target's distribution, both
are the target's greedy output at temperature 0, and the counterfactual is carried and folded.

The distribution test (a chi-square goodness-of-fit test). On the demo pair at temperature 1
(top-k 40, top-p 0.95, min-p 0.05), ``N_RUNS`` seeded runs of 3 tokens each, half with
n_max 1 and half with n_max 2, so that acceptance and the redraw at draft positions 1 and 2
and the bonus token after a one-token draft all shape the first two tokens; their pair
(t1, t2) is compared with its exact distribution P(t1, t2) = p1(t1) · p2(t2 | t1), computed
from the target's logits with llama.cpp's own sampler chain (the whole chain applied, the
probabilities read from its final ``dist`` sampler: not accept_rules' code path). Cells
expected fewer than 5 times are pooled into one (then merged with the smallest cell if still
under 5), the usual validity condition of the chi-square approximation; the degrees of
freedom are the cells less one (no parameter is estimated). The threshold is the upper
``ALPHA`` = 0.001 quantile of the chi-square distribution (Wilson–Hilferty's approximation,
within 1% of the exact quantile at these degrees of freedom): a correct rule fails with
probability 0.1% over a random choice of seeds.

The ratio rule, which is what is tested, gets 1,500 runs; the match rule, which emits the
baseline's very tokens (test_engine.py) and so checks the harness and the exact distribution,
and the broken rule below, whose failure is far past the threshold, 600 each (CI time). The
sample sizes were set after one look: with 1,000 runs (seeds 0-999) the ratio rule's statistic
was 48.9 against a threshold of 48.4 (22 degrees of freedom, p = 0.0008); as more seeds came
in it fell back (40.0 at 1,500 runs, 33 dof; 38.2 at 2,000, 38 dof; 29.9 at 2,500, 44 dof), and
3,000 other seeds (5000-7999) gave 49.7 on 47 dof (p = 0.37): a fluctuation of the first
thousand seeds, not a bias.

The test is deterministic: every random draw comes from the run's seed (llama.cpp's dist
sampler for the match rule; numpy generators seeded from it for the ratio rule and the
draft's samples) and the contexts run on one thread, so the statistic is the same number on
every run of the same build: for these seeds it either passes or fails, never flakes. It can
fail: the ratio rule with the rejection redrawn from p instead of max(0, p - q) (a classic
mistake, which over-weights the draft's favourite tokens) fails it, as the last test shows.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from dataclasses import replace

import llama_cpp.llama_cpp as ll
import numpy as np
import pytest

from specscope.core.engine import accept_rules
from specscope.core.measure import stats
from specscope.core.models.demo import demo_pair
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings, build_chain

TEMP = SamplerSettings(temperature=1.0)   # top-k 40, top-p 0.95, min-p 0.05
PROMPT = "class "                         # the pair disagrees here: p and q overlap by ~0.23
N_RUNS = {"match": 600, "ratio": 1500}
N_BROKEN = 600
ALPHA = 0.001
Z_ALPHA = 3.090232                        # the standard normal's upper 0.001 quantile


@pytest.fixture(scope="module")
def demo():
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings.deterministic(n_ctx=256, target_threads=1,
                                                            draft_threads=1)) as engine:
        yield engine


def chain_probs(chain, logits: np.ndarray) -> dict[int, float]:
    """What llama.cpp's sampler chain draws from: the whole chain applied to the row, and the
    probabilities its final dist sampler wrote."""
    n = len(logits)
    data = (ll.llama_token_data * n)(*[ll.llama_token_data(i, float(x), 0.0)
                                       for i, x in enumerate(logits)])
    arr = ll.llama_token_data_array(data, n, -1, False)
    ll.llama_sampler_apply(chain.ptr, ctypes.byref(arr))
    left = ctypes.cast(arr.data, ctypes.POINTER(ll.llama_token_data))
    return {left[i].id: left[i].p for i in range(arr.size) if left[i].p > 0}


def row(engine, tokens: list[int]) -> np.ndarray:
    """The target's logits after ``tokens`` (one-token decodes' path)."""
    tgt, batch = engine.tgt, engine.batch
    tgt.prefill(tokens[:-1], batch, "the context")
    batch.fill(tokens[-1:], len(tokens) - 1, logits="all")
    tgt.decode(batch, "the last token")
    return tgt.logits(1)[0].copy()


def exact_pairs(engine, prompt: str, s: SamplerSettings) -> dict[tuple[int, int], float]:
    tokens = engine.tokenize(prompt)
    with build_chain(engine.target, s) as chain:
        first = chain_probs(chain, row(engine, tokens))
        return {(t1, t2): p1 * p2 for t1, p1 in first.items()
                for t2, p2 in chain_probs(chain, row(engine, tokens + [t1])).items()}


def sample_pairs(engine, rule: str, n_runs: int) -> Counter:
    pairs = Counter()
    for seed in range(n_runs):
        run = engine.speculative(PROMPT, SpecSettings(n_max=1 + seed % 2, accept_rule=rule),
                                 replace(TEMP, seed=seed), 3)
        for _ in run:
            pass
        pairs[tuple(run.tokens[:2])] += 1
    return pairs


def chi_square(observed: Counter, probs: dict, n: int) -> tuple[float, int]:
    """Pearson's statistic over the cells expected at least 5 times, the rest pooled."""
    assert set(observed) <= set(probs), f"drawn pairs the target cannot draw: {set(observed) - set(probs)}"
    cells = sorted(probs, key=probs.get, reverse=True)
    kept = [c for c in cells if n * probs[c] >= 5]
    rest = [c for c in cells if n * probs[c] < 5]
    groups = [[c] for c in kept]
    if rest:
        if n * sum(probs[c] for c in rest) < 5:
            groups[-1] += rest
        else:
            groups.append(rest)
    stat = 0.0
    for g in groups:
        e = n * sum(probs[c] for c in g)
        o = sum(observed[c] for c in g)
        stat += (o - e) ** 2 / e
    return stat, len(groups) - 1


def threshold(dof: int) -> float:
    """The chi-square distribution's upper ALPHA quantile (Wilson–Hilferty)."""
    h = 2.0 / (9.0 * dof)
    return dof * (1.0 - h + Z_ALPHA * h ** 0.5) ** 3


@pytest.fixture(scope="module")
def exact(demo):
    probs = exact_pairs(demo, PROMPT, TEMP)
    assert abs(sum(probs.values()) - 1.0) < 1e-4
    return probs


@pytest.mark.parametrize("rule", ["match", "ratio"])
def test_both_rules_draw_the_targets_distribution(demo, exact, rule):
    stat, dof = chi_square(sample_pairs(demo, rule, N_RUNS[rule]), exact, N_RUNS[rule])
    print(f"{rule}: chi-square {stat:.1f}, {dof} degrees of freedom, threshold {threshold(dof):.1f}")
    assert dof >= 10
    assert stat < threshold(dof)


def test_a_ratio_rule_without_the_residual_fails_the_distribution_test(demo, exact, monkeypatch):
    monkeypatch.setattr(accept_rules, "residual", lambda p, q: p[1])   # redraw from p: wrong
    stat, dof = chi_square(sample_pairs(demo, "ratio", N_BROKEN), exact, N_BROKEN)
    print(f"broken ratio rule: chi-square {stat:.1f}, {dof} degrees of freedom, "
          f"threshold {threshold(dof):.1f}")
    assert stat > threshold(dof)


def test_the_threshold_is_the_chi_square_quantile():
    """Wilson–Hilferty against the quantiles tabulated for 0.001 (Abramowitz & Stegun 26.8)."""
    for dof, table in ((10, 29.588), (20, 45.315), (30, 59.703), (50, 86.661), (100, 149.449)):
        assert abs(threshold(dof) - table) / table < 0.01


# ------------------------------------------------------------------ greedy, checkpoints, p
@pytest.mark.parametrize("types", [("draft-simple",), ("ngram-simple", "draft-simple")])
def test_at_temperature_0_both_rules_are_the_targets_greedy_output(demo, types):
    prompt = "def parse_args(argv):\n    parser = argparse.ArgumentParser()\n    "
    base = demo.baseline(prompt, SamplerSettings(), 40)
    list(base)
    for rule in ("match", "ratio"):
        run = demo.speculative(prompt, SpecSettings(n_max=4, types=types, accept_rule=rule),
                               SamplerSettings(), 40)
        events = list(run)
        assert run.tokens == base.tokens, rule
        assert any(ev.n_accepted for ev in events) and not any(ev.counterfactual for ev in events)


def test_the_ratio_rule_on_a_memory_that_needs_checkpoints(tiny_models):
    """Mamba: partial acceptances restore a checkpoint and replay the decided tokens."""
    with Engine(tiny_models["mamba"], tiny_models["mamba_draft"],
                EngineSettings(target_threads=1, draft_threads=1)) as engine:
        base = engine.baseline("hello", SamplerSettings(), 16)
        list(base)
        greedy = engine.speculative("hello", SpecSettings(n_max=3, accept_rule="ratio"),
                                    SamplerSettings(), 16)
        list(greedy)
        assert greedy.tokens == base.tokens
        run = engine.speculative("hello", SpecSettings(n_max=3, accept_rule="ratio"), TEMP, 16)
        events = list(run)
        assert len(run.tokens) == 16 and {"checkpoint", "replay"} <= {ev.mode for ev in events}


def test_p_is_what_the_users_chain_draws_from(demo):
    logits = row(demo, demo.tokenize(PROMPT))
    for s in (TEMP, replace(TEMP, temperature=0.5, top_k=0, top_p=0.8, min_p=0.0,
                            repeat_penalty=1.3, logit_bias=((5, 2.0),))):
        with build_chain(demo.target, s) as chain:
            chain.accept(5)                 # the penalty sees a token
            ids, p = accept_rules.TargetDistribution(demo.tgt.n_vocab, False)(chain, logits)
            want = chain_probs(chain, logits)
        assert set(ids.tolist()) == set(want)
        assert np.allclose(p, [want[int(i)] for i in ids], atol=1e-6)


# ------------------------------------------------------------------ the counterfactual
def test_runs_at_temperature_carry_the_other_rules_chance(demo):
    for rule, other in (("match", "ratio"), ("ratio", "match")):
        events = list(demo.speculative(PROMPT, SpecSettings(n_max=3, accept_rule=rule), TEMP, 32))
        drafted = [ev for ev in events if ev.drafted]
        assert drafted and all(len(ev.counterfactual) == len(ev.drafted) for ev in drafted)
        assert all(0.0 <= c <= 1.0 + 1e-9 for ev in drafted for c in ev.counterfactual)
        assert {ev.counterfactual_rule for ev in drafted} == {other}
        s = stats.fold(events)
        assert s.cf_rule == other and s.cf_drafted_at == s.drafted_at


def test_the_counterfactual_folds_as_a_product_along_the_draft():
    def ev(cf, n_accepted=0):
        return RoundEvent(index=0, n_past=1, seed=1, drafted=(1,) * len(cf), draft_probs=(),
                          n_accepted=n_accepted, emitted=(1,), mode="spec",
                          counterfactual=cf, counterfactual_rule="ratio")
    s = stats.fold([ev((0.5, 0.5, 0.2)), ev((1.0, 0.8)),
                    RoundEvent(index=2, n_past=1, seed=1, drafted=(1,), draft_probs=(),
                               n_accepted=1, emitted=(1, 2), mode="spec")])
    assert s.cf_drafted_at == (2, 2, 1) and s.drafted_at == (3, 2, 1)
    assert np.allclose(s.counterfactual_acceptance, (0.75, (0.25 + 0.8) / 2, 0.05))
    assert stats.fold([ev((0.4,))], stats.fold([ev((0.6,))])).cf_at == (1.0,)
    assert RoundEvent.from_dict(ev((0.5, 0.25)).to_dict(exact=True)).counterfactual == (0.5, 0.25)


def test_draft_distribution_follows_the_samplers_order():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    s = SamplerSettings(temperature=1.0, top_k=3, top_p=0.75, min_p=0.0)
    ids, q = accept_rules.draft_distribution(logits, s)
    assert ids.tolist() == [0, 1] and np.allclose(q, [0.625, 0.375])
    ids, q = accept_rules.draft_distribution(logits, replace(s, top_p=1.0, min_p=0.5))
    assert ids.tolist() == [0, 1]
    ids, q = accept_rules.draft_distribution(logits, replace(s, temperature=0.0))
    assert ids.tolist() == [0] and q.tolist() == [1.0]


def test_the_cli_takes_the_rule_and_prints_the_counterfactual(capsys):
    from specscope.core.cli.main import main
    flags = ["run", "-p", PROMPT, "-n", "16", "-t", "1", "-td", "1", "--no-probe"]
    assert main(flags + ["--temp", "0.8", "--accept-rule", "ratio"]) == 0
    out = capsys.readouterr().out
    assert "counterfactual: llama.cpp's (--accept-rule match) expected acceptance" in out
    assert main(flags + ["--temp", "0.8"]) == 0
    assert "counterfactual: speculative sampling's (--accept-rule ratio)" in capsys.readouterr().out
    assert main(flags + ["--accept-rule", "match"]) == 0          # greedy: no counterfactual
    assert "counterfactual" not in capsys.readouterr().out


@pytest.mark.parametrize("rule", ["match", "ratio"])
def test_a_sweep_at_temperature_reports_the_other_rules_acceptance(quiet_machine, rule):
    """specscope bench / the Compare view: each row carries the other rule's expected acceptance
    on the same drafts (Σ of Stats.cf_at ÷ Σ of cf_drafted_at over the row's runs), and the
    table shows it; at temperature 0 there is none and no column."""
    from pathlib import Path

    from specscope.core.measure.bench.sweep import run_sweep
    from specscope.core.measure.bench.report import format_table
    from specscope.core.measure.bench.settings import SweepSettings
    target, draft = demo_pair()

    def sweep(temp):
        s = SweepSettings(target=Path(target), drafts=(Path(draft),), n_values=(3,),
                          prompts=(("p", "def fibonacci(n):\n    "),), n_predict=24,
                          sampler=SamplerSettings(temperature=temp), spec=SpecSettings(accept_rule=rule),
                          engine=EngineSettings(target_threads=1, draft_threads=1),
                          lossless=rule == "match", ignore_eos=True, calibration_s=0.3)
        return run_sweep(s)
    result = sweep(0.8)
    row = result.pooled()[0]
    other = "ratio" if rule == "match" else "match"
    spec = [r for c in result.cells for r in c.spec]
    kept = sum(sum(r.stats.cf_at) for r in spec)
    drafted = sum(sum(r.stats.cf_drafted_at) for r in spec)
    assert row.cf_rule == other and drafted > 0 and row.cf_acceptance == pytest.approx(kept / drafted)
    assert 0.0 < row.cf_acceptance < 1.0
    assert "other rule, expected" in format_table(result) and f"{other} {100 * row.cf_acceptance:.1f}%" \
        in format_table(result)
    greedy = sweep(0.0)
    assert greedy.pooled()[0].cf_acceptance is None and "other rule" not in format_table(greedy)
