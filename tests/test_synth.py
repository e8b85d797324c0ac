"""Synthetic acceptance (llama.cpp's --spec-synth-len / --spec-synth-rates) on real llama.cpp
with the shipped demo pair: the rates and messages are llama.cpp's, the rule is llama-server's."""

import json
import math
from pathlib import Path

import pytest

from specscope.core.models.demo import demo_pair
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.errors import ConfigError
from specscope.core.engine.sampling import SamplerSettings, build_chain
from specscope.core.measure.stats import fold
from specscope.core.engine.synth import (MersenneUniform, SynthAcceptance, conditional_probs,
                                         mean_length, resolve_rates)

GOLDEN = Path(__file__).parent / "data" / "synth_rates_golden.json"
PROMPT = "def fibonacci(n):\n"
DETERMINISTIC = EngineSettings.deterministic(n_ctx=512)


@pytest.fixture(scope="module")
def demo():
    target, draft = demo_pair()
    with Engine(target, draft, DETERMINISTIC) as engine:
        yield engine


def run(engine, spec, sampler=SamplerSettings(), n_predict=48, prompt=PROMPT):
    r = engine.speculative(prompt, spec, sampler, n_predict)
    return r, list(r)


# ----------------------------------------------------------------------------- rates (pure)

def test_rates_and_messages_are_llama_cpps():
    """Every case of tests/data/synth_rates_golden.json, printed by llama.cpp's own
    common_speculative_synth_rates_resolve (tests/reference/synth_rates_reference.cpp)."""
    cases = json.loads(GOLDEN.read_text())["cases"]
    assert len(cases) > 20
    for c in cases:
        args = (float(c["synth_len"]), tuple(float(r) for r in c["synth_rates"]), c["n_max"])
        if "error" in c:
            with pytest.raises(ConfigError) as exc:
                resolve_rates(*args)
            assert str(exc.value) == c["error"], c
        else:
            assert resolve_rates(*args) == tuple(c["rates"]), c     # bit for bit


def test_a_length_resolves_to_geometric_rates_with_that_mean():
    rates = resolve_rates(2.5, (), 4)
    p = rates[0]
    assert rates == pytest.approx([p ** i for i in range(1, 5)], rel=1e-12)
    assert mean_length(rates) == pytest.approx(2.5, abs=1e-8)


def test_conditional_probabilities_divide_by_the_rate_before():
    assert conditional_probs((0.9, 0.45, 0.09)) == pytest.approx((0.9, 0.5, 0.2))
    assert conditional_probs((0.5, 0.0, 0.0)) == (0.5, 0.0, 0.0)     # 0 after a rate of 0
    assert conditional_probs((1.0, 1.0)) == (1.0, 1.0)


def test_the_draws_are_libstdcxx_mt19937_uniform_doubles():
    """std::mt19937 seeded with s, std::uniform_real_distribution<double>(0, 1): draws 1, 2, 3
    and 1000, printed by g++ 13's libstdc++."""
    expected = {42: (0.79654298428784598, 0.18343478789336848, 0.77969099761266125, 0.52130066986335577),
                0: (0.59284461651668263, 0.84426574425659828, 0.85794561998982988, 0.89795593677022056),
                4294967294: (0.10184899170898529, 0.94789751258733013, 0.82893340139475558,
                             0.26258688509729228)}
    for seed, values in expected.items():
        u = MersenneUniform(seed)
        draws = [u() for _ in range(1000)]
        assert (draws[0], draws[1], draws[2], draws[999]) == values


def test_spec_settings_validate_the_rates_against_the_longest_draft():
    SpecSettings(n_max=3, synth_len=4.0).validate()
    with pytest.raises(ConfigError, match=r"within \[1, 4\]"):
        SpecSettings(n_max=3, synth_len=4.5).validate()
    with pytest.raises(ConfigError, match="must contain 3 values, got 2"):
        SpecSettings(n_max=3, synth_rates=(0.5, 0.2)).validate()
    with pytest.raises(ConfigError, match="mutually exclusive"):
        SpecSettings(n_max=3, synth_len=2.0, synth_rates=(0.5, 0.2, 0.1)).validate()
    # the n-gram types count too, as llama.cpp's common_speculative_n_max
    spec = SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(2, 5, 1)}, synth_len=6.0)
    assert len(spec.synth_rates_resolved()) == 5
    assert not SpecSettings().synthetic and SpecSettings(synth_len=1.0).synthetic


# ----------------------------------------------------------------------------- the rule, real runs

def test_rates_one_accept_every_draft_token(demo):
    r, events = run(demo, SpecSettings(n_max=3, synth_rates=(1.0, 1.0, 1.0)))
    drafted = [ev for ev in events if ev.drafted]
    assert drafted and r.finish == "n_predict"
    for ev in drafted:
        assert ev.synthetic
        assert ev.n_accepted == len(ev.drafted)
        assert ev.emitted[:-1] == ev.drafted                 # then the target's bonus token
    stats = fold(events)
    assert stats.synthetic and stats.position_acceptance == (1.0, 1.0, 1.0)


def test_a_drafted_end_of_generation_token_is_never_accepted(demo):
    """ngram-simple copies the prompt, which holds the EOG token (id 0) after "alpha beta
    gamma": with rates 1.0 every draft token is kept except that one, where the target's own
    token is emitted instead and the generation goes on."""
    eog = next(t for t in range(demo.target.n_vocab) if demo.target.is_eog(t))
    words = demo.target.tokenize("alpha beta gamma")
    prompt = words + [eog] + demo.target.tokenize(" one two three four") + words
    spec = SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(2, 4, 1)},
                        synth_rates=(1.0,) * 4)
    r, events = run(demo, spec, prompt=prompt, n_predict=24)
    with_eog = [ev for ev in events if eog in ev.drafted]
    assert with_eog, "the n-gram drafter should have copied the EOG token"
    for ev in (ev for ev in events if ev.drafted):
        first_eog = ev.drafted.index(eog) if eog in ev.drafted else len(ev.drafted)
        assert ev.n_accepted == first_eog
        assert ev.emitted[:first_eog] == ev.drafted[:first_eog]
    assert r.finish == "n_predict"


def test_rates_zero_accept_nothing_and_emit_the_targets_own_tokens(demo):
    """The draft model still drafts every round, none of it is kept: each round emits the
    target's own sample, so the text is the target's alone (greedy, deterministic kernels)."""
    r, events = run(demo, SpecSettings(n_max=3, synth_rates=(0.0, 0.0, 0.0)), n_predict=20)
    spec_rounds = [ev for ev in events if ev.mode == "spec"]
    assert spec_rounds and all(len(ev.drafted) == 3 for ev in spec_rounds[:-3])   # then the budget
    assert all(ev.n_accepted == 0 and len(ev.emitted) == 1 for ev in events)
    base = demo.baseline(PROMPT, SamplerSettings(), 20)
    list(base)
    assert r.tokens == base.tokens


def test_a_fixed_seed_reproduces_the_run_and_another_seed_does_not(demo):
    sampled = SamplerSettings(temperature=0.8, seed=7)
    spec = SpecSettings(n_max=3, synth_len=2.5)
    key = lambda events: [(ev.drafted, ev.n_accepted, ev.emitted) for ev in events]
    first = key(run(demo, spec, sampled, n_predict=24)[1])
    assert key(run(demo, spec, sampled, n_predict=24)[1]) == first
    other = key(run(demo, spec, SamplerSettings(temperature=0.8, seed=8), n_predict=24)[1])
    assert other != first


def test_acceptance_by_position_follows_the_conditional_probabilities(demo):
    """The rule itself over many rounds, on real llama.cpp sampling: one verification batch
    decoded on the demo target, then 20 000 rounds of ``SynthAcceptance.accept`` on its rows.

    Position i is tried N_i times (rounds that kept the i - 1 before it) and kept K_i times;
    with independent draws K_i is Binomial(N_i, p_i), so |K_i/N_i - p_i| <= 4·sqrt(p_i(1 - p_i)/N_i)
    holds with probability above 0.9999 per position. The rates are chosen so that mistaking
    the unconditional rates for the conditional ones (0.45 for 0.5, 0.09 for 0.2, ...) or
    skipping the division would be off by more than 20 σ."""
    rates = (0.9, 0.45, 0.09, 0.018)
    probs = conditional_probs(rates)                       # 0.9, 0.5, 0.2, 0.2
    tokens = demo.tokenize("the quick brown fox jumps over")
    draft = tokens[1:5]
    assert not any(demo.target.is_eog(t) for t in draft)
    demo.tgt.seq_rm(0, -1)                                 # what the last run left
    demo.batch.fill(tokens[:5], 0, logits="all")
    demo.tgt.decode(demo.batch, "a batch")
    synth = SynthAcceptance(probs, seed=11)
    tried, kept = [0] * 4, [0] * 4
    total = 0
    with build_chain(demo.target, SamplerSettings()) as smpl:
        for _ in range(20000):
            ids = synth.accept(smpl, demo.tgt, demo.target.is_eog, draft)
            n = len(ids) - 1
            total += n
            for i in range(min(n + 1, 4)):
                tried[i] += 1
                kept[i] += i < n
    demo.tgt.seq_rm(0, -1)
    for p, n, k in zip(probs, tried, kept):
        assert n > 300
        assert abs(k / n - p) <= 4 * math.sqrt(p * (1 - p) / n), (p, n, k)
    sigma = math.sqrt(sum(r * (1 - r) for r in rates) / 20000) * 2    # loose bound on the mean's σ
    assert abs(total / 20000 - sum(rates)) <= 4 * sigma


def test_a_recorded_synthetic_run_says_so(demo, tmp_path):
    from specscope.core.session.session import RunSettings, Session
    spec = SpecSettings(n_max=3, synth_len=3.0)
    r = demo.speculative(PROMPT, spec, SamplerSettings(), 16)
    settings = RunSettings(str(demo.target.path), str(demo.draft.path), DETERMINISTIC, spec,
                           SamplerSettings(), 16, PROMPT)
    session = Session.start(settings, "spec", PROMPT, r.prompt_tokens, demo.target)
    for ev in r:
        session.run.append([ev])
    session.run.finish = r.finish
    loaded = Session.load(session.save(tmp_path / "s.jsonl"))
    assert loaded.settings.spec.synth_len == 3.0 and loaded.settings.spec.synthetic
    assert loaded.run.stats.synthetic
    doc = loaded.document()
    assert "NOT valid output" in doc["settings"]["warning"]
    assert doc["stats"]["synthetic"] is True


def test_a_grammar_or_repetition_penalty_is_refused(demo):
    spec = SpecSettings(n_max=3, synth_len=2.0)
    with pytest.raises(ConfigError, match="grammar or a repetition penalty"):
        demo.speculative(PROMPT, spec, SamplerSettings(repeat_penalty=1.1), 8)


# ----------------------------------------------------------------------------- CLI and the sweep

def test_run_with_synthetic_acceptance_says_loudly_the_text_is_not_output(capsys):
    from specscope.core.cli.main import main
    code = main(["run", "-n", "8", "--spec-synth-len", "2.5", "--no-probe"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "NOT valid output" in err and "mean length = 2.500000" in err
    assert out.startswith("!!! synthetic acceptance") and out.count("NOT valid output") == 2
    code = main(["run", "-n", "8", "--spec-synth-rates", "1,0.5,0.25", "--json", "--no-probe"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["synthetic_rates"] == [1.0, 0.5, 0.25]
    assert "NOT valid output" in doc["settings"]["warning"] and doc["stats"]["synthetic"]


@pytest.mark.parametrize("flags, message", [
    (["--spec-synth-rates", "0.5,0.4"], "synthetic acceptance rates must contain 3 values, got 2"),
    (["--spec-synth-len", "5"], "synthetic acceptance length must be finite and within [1, 4]"),
    (["--spec-synth-rates", "0.5,0.6,0.1"], "monotonically non-increasing"),
    (["--spec-synth-len", "2", "--spec-synth-rates", "1,1,1"], "mutually exclusive"),
])
def test_bad_synthetic_flags_are_one_line(capsys, flags, message):
    from specscope.core.cli.main import main
    code = main(["run", "-n", "4", "--no-probe", *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_synthetic_value_llama_cpp_cannot_parse_is_refused(capsys):
    from specscope.core.cli.main import main
    with pytest.raises(SystemExit) as exc:
        main(["run", "--spec-synth-rates", "1,x"])
    assert exc.value.code == 2 and "invalid value" in capsys.readouterr().err


def test_the_sweep_measures_each_level_beside_both_predictions(tmp_path, monkeypatch):
    """Two levels at the extremes: L = 1 keeps nothing, L = n + 1 keeps every draft token."""
    from specscope.core.measure.bench.settings import SweepSettings
    from specscope.core.measure.bench.synth_sweep import run_synth_sweep, synth_levels
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    target, draft = demo_pair()
    s = SweepSettings(target=target, drafts=(draft,), n_values=(2,), prompts=(("p", PROMPT),),
                      n_predict=12, calibration_s=0.2, use_cache=False)
    curve = run_synth_sweep(s, (1.0, 3.0))
    assert [p.synth_len for p in curve.points] == [1.0, 3.0]
    low, high = curve.points
    assert low.row.acceptance == 0.0 and low.row.mean_accepted_length == 1.0 and low.alpha == 0.0
    assert high.row.acceptance == 1.0 and high.row.mean_accepted_length == 3.0 and high.alpha == 1.0
    for p in curve.points:
        assert p.row.measured_speedup > 0 and p.row.calibrated_speedup > 0
    assert high.row.textbook_speedup > low.row.textbook_speedup
    assert high.row.calibrated_speedup > low.row.calibrated_speedup
    assert curve.textbook(1.0) == pytest.approx(3.0 / (2 * curve.calibration.f + 1))
    assert "measured" in curve.lines()[2] and len(curve.lines()) == 5
    assert synth_levels(4) == (1.0, 1.8, 2.6, 3.4, 4.2, 5.0)


def test_a_checkpointed_round_is_replayed_with_its_synthetic_decisions(tiny_models):
    """A recurrent target cannot drop rows: after a partial acceptance both contexts are
    restored and the next round re-verifies the decided tokens; as llama-server does on
    replay, every replayed token is kept, with no new draw."""
    from helpers import ggufgen
    no_eog = ((len(ggufgen.bpe_vocab()[0]) - 1, -math.inf),)
    with Engine(tiny_models["mamba"], tiny_models["mamba_draft"], EngineSettings(n_ctx=256)) as e:
        r = e.speculative("def f(x):", SpecSettings(n_max=3, synth_len=2.5),
                          SamplerSettings(logit_bias=no_eog), 40)
        events = list(r)
    modes = [ev.mode for ev in events]
    assert "checkpoint" in modes and r.finish == "n_predict" and len(r.tokens) == 40
    for before, ev in zip(events, events[1:]):
        if before.mode == "checkpoint":
            assert ev.mode == "replay" and ev.replayed == before.emitted
