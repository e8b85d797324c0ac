"""Measured speed-up, the lossless check, and sweeps (CSV/JSON), on real llama.cpp."""

import csv
import io
import json
import math
import threading

import numpy as np
import pytest

from helpers import ggufgen
from specscope.core.measure.bench.lossless import (DistRow, baseline_logits_at, check_lossless, classify,
                                                   classify_sampled, compare, disagreement, dist_draw, dist_row,
                                                   first_divergence, mt19937_words, spec_logits_at)
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.errors import ConfigError, IncompatiblePairError
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.bench import sweep as sw
from specscope.core.measure.bench import report as sp
from specscope.core.measure.bench import rows as sr
from specscope.core.measure.bench import settings as ss

EOT = len(ggufgen.bpe_vocab()[0]) - 1
NO_EOG = ((EOT, -math.inf),)
GREEDY = SamplerSettings(logit_bias=NO_EOG)
PROMPT = "def fibonacci(n):\n    return"
# one thread each: quick and steady even while other processes load the CPU
ONE_THREAD = dict(target_threads=1, draft_threads=1)


@pytest.fixture(scope="module")
def det_engine(tiny_models):
    settings = EngineSettings.deterministic(n_ctx=512, **ONE_THREAD)
    with Engine(tiny_models["target"], tiny_models["draft"], settings) as e:
        yield e


# ============================================================================ pure

def test_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2
    assert first_divergence([], []) is None


def test_classify_lets_the_two_decodes_decide_not_the_logit_gap():
    """The verdict reproduces the divergence: numerical when the batched row picks the speculative
    token and the one-token row the baseline's, however wide the gap (issue 20: a 0.129 gap from
    K-quant kernels switching with the batch size is numerical), a mismatch when the batched row
    does not give the speculative token, however close the logits."""
    ids = [0, 1, 2, 3]
    base = DistRow.from_logits(ids, [0.0, 5.0, 4.871, 1.0], False)
    spec = DistRow.from_logits(ids, [0.0, 5.0, 5.004, 1.0], False)
    d = classify(base, spec, 1, 2)
    assert d["kind"] == "numerical"
    assert d["token_gap"] == pytest.approx(0.129, abs=1e-5)
    assert d["spec_token_gap"] == pytest.approx(-0.004, abs=1e-5)
    assert d["spec_top"][0][0] == 2 and d["baseline_top"][0][0] == 1
    # the batched row prefers the baseline's token too: the engine emitted the wrong token
    assert classify(base, base, 1, 2)["kind"] == "mismatch"
    # ... and a one-token row that does not give the baseline's own token is no numerics either
    assert classify(spec, spec, 1, 2)["kind"] == "mismatch"


# ============================================================================ lossless check

def test_deterministic_numerics_give_identical_output(det_engine):
    for n_max in (1, 4):
        for sync in ("reuse", "replay"):
            cmp = compare(det_engine, PROMPT, SpecSettings(n_max=n_max, sync=sync), GREEDY, n_predict=24)
            assert cmp.lossless.identical, cmp.lossless.describe()
            assert cmp.lossless.deterministic
            assert cmp.lossless.verdict == "identical"
            assert cmp.baseline.tokens == cmp.spec.tokens
            assert len(cmp.spec.tokens) == 24
            assert cmp.speedup > 0
            assert cmp.baseline.prefill_s > 0 and cmp.spec.prefill_s > 0


def test_seeded_sampling_is_identical_too(det_engine):
    sampled = SamplerSettings(temperature=0.8, seed=7, logit_bias=NO_EOG)
    cmp = compare(det_engine, PROMPT, SpecSettings(n_max=3), sampled, n_predict=24)
    assert cmp.lossless.identical, cmp.lossless.describe()


def test_forced_divergence_is_a_real_mismatch(det_engine):
    # the baseline's least likely token at the first generated position, pushed up on the spec side
    prompt_tokens = det_engine.tokenize(PROMPT)
    logits = baseline_logits_at(det_engine, prompt_tokens, [])
    logits[EOT] = np.inf
    forced = int(np.argmin(logits))
    spec_sampler = SamplerSettings(logit_bias=NO_EOG + ((forced, 1e4),))
    cmp = compare(det_engine, PROMPT, SpecSettings(n_max=3), GREEDY, n_predict=12,
                  spec_sampler=spec_sampler)
    rep = cmp.lossless
    assert not rep.identical
    d = rep.divergence
    assert d.position == 0
    assert d.spec_token == forced and d.baseline_token == cmp.baseline.tokens[0]
    assert d.baseline_token == d.top1
    assert d.top2_gap >= 0
    assert d.token_gap > 1.0
    assert d.kind == "mismatch" and rep.verdict == "mismatch"
    assert "engine bug" in rep.describe() and d.spec_top and d.spec_top[0][0] != forced
    json.dumps(rep.to_dict())


# ============================================================================ sampled runs

def test_mt19937_is_cpps():
    # the C++ standard requires the 10000th output of a default-constructed std::mt19937
    assert mt19937_words(5489, 10000)[-1] == 4123659995
    u = [dist_draw(5, i) for i in range(50)]
    assert all(0.0 <= x < 1.0 for x in u) and len(set(u)) == 50


def test_candidates_pick_by_running_probability():
    c = DistRow.from_logits([7, 3, 9], np.log([0.5, 0.3, 0.2]), True)
    assert [c.pick(u) for u in (0.0, 0.49, 0.51, 0.79, 0.81, 0.999)] == [7, 7, 3, 3, 9, 9]
    assert c.share(3) == pytest.approx((0.5, 0.8)) and c.share(4) is None
    other = DistRow.from_logits([7, 3, 9], np.log([0.45, 0.35, 0.2]), True)
    assert disagreement(c, other) == pytest.approx(0.05)   # u in (0.45, 0.5] picks 3 there, 7 here
    assert disagreement(c, c) == 0.0


def test_classify_sampled():
    base = DistRow.from_logits([7, 3, 9], np.log([0.5, 0.3, 0.2]), True)
    spec = DistRow.from_logits([7, 3, 9], np.log([0.45, 0.35, 0.2]), True)
    # u = 0.47: the single-token row picks 7, the batched one 3: numerics decided
    d = classify_sampled(base, spec, 0.47, 7, 3)
    assert d["kind"] == "numerical" and d["draw_spec_pick"] == 3 and d["disagreement"] == pytest.approx(0.05)
    # u = 0.2: both rows pick 7, so a speculative 3 is a real mismatch, however close the logits
    assert classify_sampled(base, spec, 0.2, 7, 3)["kind"] == "mismatch"
    # the draw must reproduce the baseline's own token
    assert classify_sampled(base, spec, 0.6, 7, 3)["kind"] == "mismatch"


def test_the_draws_reproduce_a_sampled_baseline(det_engine):
    """The check's rebuilt candidates and draws give exactly the tokens llama.cpp sampled."""
    for sampler in (SamplerSettings(temperature=1.5, seed=5, logit_bias=NO_EOG),
                    SamplerSettings(temperature=0.8, top_k=0, top_p=0.9, min_p=0.0, seed=11,
                                    repeat_penalty=1.3, logit_bias=NO_EOG)):
        run = det_engine.baseline(PROMPT, sampler, 12)
        list(run)
        for i, token in enumerate(run.tokens):
            row = baseline_logits_at(det_engine, run.prompt_tokens, run.tokens[:i])
            cands = dist_row(det_engine, sampler, row, run.tokens[:i])
            assert cands.pick(dist_draw(sampler.seed, i)) == token, (sampler.describe(), i)


def test_a_sampled_divergence_forced_by_the_draft_side_is_a_real_mismatch(det_engine):
    sampler = SamplerSettings(temperature=0.8, seed=5, logit_bias=NO_EOG)
    prompt_tokens = det_engine.tokenize(PROMPT)
    logits = baseline_logits_at(det_engine, prompt_tokens, [])
    logits[EOT] = np.inf
    forced = int(np.argmin(logits))
    spec_sampler = SamplerSettings(temperature=0.8, seed=5, logit_bias=NO_EOG + ((forced, 1e4),))
    rep = compare(det_engine, PROMPT, SpecSettings(n_max=3), sampler, n_predict=8,
                  spec_sampler=spec_sampler).lossless
    d = rep.divergence
    assert d.position == 0 and d.spec_token == forced
    assert d.draw == dist_draw(5, 0) and d.draw_baseline_pick == d.baseline_token
    assert d.draw_spec_pick == d.baseline_token          # the batched row picks it too
    assert d.kind == "mismatch" and "real mismatch" in rep.describe() and "draw u =" in rep.describe()
    json.dumps(rep.to_dict())


def test_rows_that_pick_differently_at_the_draw_make_a_numerical_divergence(det_engine):
    """Real rows of the target, the batched one lowered at the baseline's token: where u
    now picks another token from it, the divergence is numerical, whatever the logit gap."""
    sampler = SamplerSettings(temperature=1.0, seed=3, logit_bias=NO_EOG)
    prompt_tokens = det_engine.tokenize(PROMPT)
    base_row = baseline_logits_at(det_engine, prompt_tokens, [])
    u = dist_draw(sampler.seed, 0)
    base = dist_row(det_engine, sampler, base_row, [])
    b_tok = base.pick(u)
    lowered = base_row.copy()
    lowered[b_tok] -= 30.0
    spec = dist_row(det_engine, sampler, lowered, [])
    s_tok = spec.pick(u)
    assert s_tok != b_tok
    d = classify_sampled(base, spec, u, b_tok, s_tok)
    assert d["kind"] == "numerical" and d["draw_baseline_pick"] == b_tok and d["draw_spec_pick"] == s_tok
    lo, hi = base.share(b_tok)
    assert d["disagreement"] >= hi - lo - 1e-9       # every draw that picked b_tok now picks another


def test_replayed_verification_logits_match_the_baseline_under_deterministic_numerics(det_engine):
    run = det_engine.speculative(PROMPT, SpecSettings(n_max=3), GREEDY, 16)
    events = list(run)
    for index in (0, 5, 11):
        spec_row = spec_logits_at(det_engine, run.prompt_tokens, events, index)
        base_row = baseline_logits_at(det_engine, run.prompt_tokens, run.tokens[:index])
        assert spec_row is not None
        assert np.max(np.abs(spec_row - base_row)) < 1e-3
        assert int(np.argmax(spec_row[:EOT])) == run.tokens[index]


def test_non_deterministic_divergences_suggest_the_deterministic_settings(tiny_models):
    """Whatever the default numerics do on this machine, a report says what it found."""
    with Engine(tiny_models["target"], tiny_models["draft"], EngineSettings(n_ctx=512, **ONE_THREAD)) as engine:
        cmp = compare(engine, PROMPT, SpecSettings(n_max=4), GREEDY, n_predict=32)
        rep = cmp.lossless
        assert not rep.deterministic
        if not rep.identical:
            assert rep.divergence.kind == "numerical", rep.describe()
            assert "--deterministic" in rep.describe()


def test_length_divergence(det_engine):
    prompt_tokens = det_engine.tokenize(PROMPT)
    base = list(range(40, 46))
    rep = check_lossless(det_engine, prompt_tokens, base, base[:4], [], sampler=GREEDY)
    assert not rep.identical and rep.divergence.kind == "length" and rep.divergence.position == 4


# ============================================================================ sweeps

def sweep_settings(tiny_models, **kw):
    base = dict(target=tiny_models["target"], drafts=(tiny_models["draft"], tiny_models["random_draft"]),
                n_values=(1, 2), prompts=(("code", PROMPT), ("words", "The cat sat on")),
                n_predict=8, sampler=GREEDY, engine=EngineSettings(n_ctx=256, **ONE_THREAD),
                use_cache=False)
    base.update(kw)
    return ss.SweepSettings(**base)


@pytest.fixture(scope="module")
def small_sweep(tiny_models):
    steps = []
    result = sw.run_sweep(sweep_settings(tiny_models), progress=lambda d, t, w: steps.append((d, t, w)))
    return result, steps


def test_sweep_table_and_csv_columns(small_sweep):
    result, steps = small_sweep
    assert not result.stopped
    total = steps[-1][1]
    assert total == ss.sweep_steps(result.settings) == 2 * (1 + 2 * (2 + 2))
    assert steps[-1][0] == total
    assert all(b[0] >= a[0] for a, b in zip(steps, steps[1:]))
    # 2 drafts × 2 n × (2 prompts + ALL)
    assert len(result.rows) == 12
    assert len(result.pooled()) == 4
    reader = csv.reader(io.StringIO(result.to_csv()))
    header = next(reader)
    assert tuple(header) == sr.CSV_COLUMNS == (
        "draft", "drafter", "n_max", "prompt", "tokens", "rounds", "acceptance",
        "mean_accepted_length", "tokens_per_s", "baseline_tokens_per_s", "measured_speedup",
        "textbook_speedup", "calibrated_speedup", "textbook_error", "calibrated_error",
        "alpha_speedup", "f", "prefill_ms", "baseline_prefill_ms", "lossless", "divergence_at",
        "draft_rounds", "lookup_us", "lookup_cost", "by_drafter", "cf_rule", "cf_acceptance", "p_min",
        "speedup_min", "speedup_max", "repeats", "prompts", "prompts_drafted", "vocab",
        "translate_us", "translate_cost", "note")
    body = list(reader)
    assert len(body) == 12
    for line in body:
        row = dict(zip(header, line))
        assert row["draft"] in ("draft.gguf", "random-draft.gguf")
        assert row["drafter"] == "draft-simple" and row["by_drafter"].startswith("draft-simple:")
        assert row["prompt"] in ("code", "words", "ALL")
        assert float(row["measured_speedup"]) > 0
        assert float(row["calibrated_speedup"]) > 0 and float(row["textbook_speedup"]) > 0
        assert row["lossless"] in ("identical", "numerical", "mismatch", "length")
        assert int(row["tokens"]) == (16 if row["prompt"] == "ALL" else 8)


def test_sweep_json_heatmap_and_best_n(small_sweep, tmp_path):
    result, _ = small_sweep
    doc = json.loads(result.to_json())
    assert doc["columns"] == list(sr.CSV_COLUMNS)
    assert doc["others_cpu"] is None or 0.0 <= doc["others_cpu"] <= 1.0
    assert set(doc["calibration"]) == {"draft.gguf", "random-draft.gguf"}
    assert all(len(c["c"]) == 3 for c in doc["calibration"].values())      # k_max = n_max + 1
    assert set(doc["best_n"]) == {"draft-simple (draft.gguf)", "draft-simple (random-draft.gguf)"}
    drafts, ns, grid = result.heatmap()
    assert drafts == ["draft-simple (draft.gguf)", "draft-simple (random-draft.gguf)"] and ns == [1, 2]
    assert all(v is not None and v > 0 for line in grid for v in line)
    assert result.save(tmp_path / "s.csv").read_text().startswith("draft,drafter,n_max,prompt")
    assert json.loads(result.save(tmp_path / "s.json").read_text())["rows"]
    assert "calibrated" in sp.format_table(result)


def test_sweep_stops_between_runs(tiny_models):
    stop = threading.Event()

    def progress(done, total, what):
        if done >= 3:
            stop.set()
    result = sw.run_sweep(sweep_settings(tiny_models, n_values=(1, 2, 3)), progress=progress, stop=stop)
    assert result.stopped
    assert len(result.calibrations) == 1
    assert 0 < len(result.rows) < 2 * 3 * 3


def test_prompt_sets(tmp_path):
    shipped = ss.load_prompts()
    assert len(shipped) >= 3 and all(name and text.strip() for name, text in shipped)
    txt = tmp_path / "p.txt"
    txt.write_text("first prompt\n---\nsecond\nprompt\n---\n\n", encoding="utf-8")
    assert ss.load_prompts(txt) == [("p1", "first prompt\n"), ("p2", "second\nprompt\n")]
    js = tmp_path / "p.json"
    js.write_text(json.dumps(["a", {"name": "b", "text": "bee"}]), encoding="utf-8")
    assert ss.load_prompts(js) == [("p1", "a"), ("b", "bee")]
    for bad in ("{", json.dumps({"prompts": [{"name": "x"}]}), json.dumps([])):
        js.write_text(bad, encoding="utf-8")
        with pytest.raises(ConfigError):
            ss.load_prompts(js)
    with pytest.raises(ConfigError):
        ss.load_prompts(tmp_path / "missing.json")


def test_parse_n_values():
    assert ss.parse_n_values("1,2,4,8") == (1, 2, 4, 8)
    assert ss.parse_n_values("1-4,8,2") == (1, 2, 3, 4, 8)
    for bad in ("0", "a", "", "3-x", "100"):
        with pytest.raises(ConfigError):
            ss.parse_n_values(bad)
    with pytest.raises(ConfigError, match="the range 3-1 of draft lengths runs backwards: write 1-3"):
        ss.parse_n_values("3-1")


def test_demo_pair_is_lossless_under_deterministic_numerics():
    """On the demo pair the speculative output is the target's: identical, or at worst a
    numerical divergence (F16 weights keep a little batched-vs-single drift)."""
    from specscope.core.models.demo import demo_pair
    try:
        target, draft = demo_pair()
    except ConfigError as exc:
        pytest.skip(f"the demo pair is not installed: {exc}")
    with Engine(target, draft, EngineSettings.deterministic(n_ctx=512, **ONE_THREAD)) as engine:
        eog = tuple((t, -math.inf) for t in range(engine.target.n_vocab) if engine.target.is_eog(t))
        sampler = SamplerSettings(logit_bias=eog)
        for n_max in (2, 6):
            cmp = compare(engine, "def parse_args(argv=None):\n", SpecSettings(n_max=n_max), sampler,
                          n_predict=48)
            assert cmp.lossless.verdict in ("identical", "numerical"), cmp.lossless.describe()


def test_robust_time_ignores_one_stalled_repeat():
    from specscope.core.measure.bench.lossless import RunResult
    from specscope.core.measure.stats import Stats

    def run(tokens, seconds):
        return RunResult("spec", tuple(range(tokens)), Stats(n_tokens=tokens, t_total=seconds), 0.0, "n_predict")
    assert sr.robust_time([[run(10, 1.0)], [run(20, 4.0)]]) == pytest.approx(5.0)
    # three repeats of one prompt, one stalled 10x: the median per-token time wins
    assert sr.robust_time([[run(10, 1.0), run(10, 10.0), run(10, 1.2)]]) == pytest.approx(30 * 0.12)


def test_sweep_skips_a_draft_the_gate_refuses_with_spec_vocab_off(tiny_models):
    off = SpecSettings(vocab="off")
    settings = sweep_settings(tiny_models, drafts=(tiny_models["draft"], tiny_models["foreign"]),
                              n_values=(1,), prompts=(("code", PROMPT),), spec=off)
    result = sw.run_sweep(settings)
    assert set(result.skipped) == {"foreign.gguf"} and "cannot draft" in result.skipped["foreign.gguf"]
    assert result.drafts() == ["draft-simple (draft.gguf)"]
    with pytest.raises(IncompatiblePairError):
        sw.run_sweep(sweep_settings(tiny_models, drafts=(tiny_models["foreign"],), n_values=(1,), spec=off))


def test_sweep_groups_ngram_chains_once_without_a_draft_model(tiny_models):
    s = sweep_settings(tiny_models, chains=(("ngram-simple",), ("ngram-simple", "draft-simple"),
                                            ("draft-simple",)), n_values=(1, 2, 4))
    groups = ss.groups(s)
    assert [(path, name) for path, name, _ in groups] == [
        (None, ""), (tiny_models["draft"], "draft.gguf"), (tiny_models["random_draft"], "random-draft.gguf")]
    assert [(c.drafter, c.n) for c in groups[0][2]] == [("ngram-simple", 0)]      # not × n
    assert len(groups[1][2]) == 2 * 3
    assert ss.sweep_steps(s) == (1 + 2 * 3) + 2 * (1 + 2 * (2 + 6))
    # n-gram drafts run to size M, at most the run's budget: the calibration covers that batch
    assert ss.longest_draft(s, groups[0][2][0]) == s.n_predict - 1
    assert {(c.drafter, c.n): ss.longest_draft(s, c) for c in groups[1][2] if c.n == 4} == {
        ("ngram-simple>draft-simple", 4): s.n_predict - 1, ("draft-simple", 4): 4}
    # an n-gram-only sweep needs no draft; draft-simple does
    ss.SweepSettings(**{**s.__dict__, "drafts": (), "chains": (("ngram-simple",),)}).validate()
    with pytest.raises(ConfigError, match="draft-simple needs a draft model"):
        ss.SweepSettings(**{**s.__dict__, "drafts": ()}).validate()
    with pytest.raises(ConfigError, match="priority order"):
        ss.SweepSettings(**{**s.__dict__, "chains": (("draft-simple", "ngram-simple"),)}).validate()
