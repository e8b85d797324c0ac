"""The lossless check on a real quantized model: SmolLM2-135M-Instruct Q4_1 as its own draft.

The file comes from the real-model tier's ``smollm2`` fixture (tests/helpers/realmodel.py). With the same
file as target and draft, speculation must emit the baseline's tokens up to numerics:
any divergence has to be diagnosed as numerical, never as a real mismatch."""

from __future__ import annotations

import pytest

from specscope.core.measure.bench.lossless import baseline_logits_at, compare, dist_draw, dist_row
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings

PROMPT = "Write a short story about a robot who learns to paint."


@pytest.fixture(scope="module")
def smol_engine(smollm2):
    with Engine(smollm2, smollm2, EngineSettings(n_ctx=512)) as engine:
        yield engine


def test_the_draws_reproduce_a_sampled_baseline_on_a_real_vocabulary(smol_engine):
    sampler = SamplerSettings(temperature=0.8, seed=5)
    run = smol_engine.baseline(PROMPT, sampler, 8)
    list(run)
    for i, token in enumerate(run.tokens):
        row = baseline_logits_at(smol_engine, run.prompt_tokens, run.tokens[:i])
        assert dist_row(smol_engine, sampler, row, run.tokens[:i]).pick(dist_draw(5, i)) == token, i


@pytest.mark.parametrize("sampler", [SamplerSettings(), SamplerSettings(temperature=0.8, seed=5)],
                         ids=["greedy", "temp0.8-seed5"])
def test_its_own_draft_diverges_only_through_numerics(smol_engine, sampler):
    rep = compare(smol_engine, PROMPT, SpecSettings(n_max=3), sampler, n_predict=40).lossless
    assert rep.verdict in ("identical", "numerical"), rep.describe()
    if not rep.identical and not sampler.greedy:
        d = rep.divergence
        assert d.draw_baseline_pick == d.baseline_token and d.draw_spec_pick == d.spec_token


def test_ngram_drafting_and_the_bench_take_its_chat_template(smol_engine):
    """A real instruct model asked to copy: the bench gives the prompt in the model's own chat
    template (--chat), and n-gram drafts are copied from the quoted text and accepted."""
    from pathlib import Path

    from specscope.core.engine.drafters.ngram_map import NgramMapParams
    from specscope.core.measure.bench.settings import SweepSettings, model_prompts
    text = ("Copy this sentence exactly: The committee met on Tuesday to review the budget for "
            "the new library and the reading room.")
    s = SweepSettings(target=Path("unused"), drafts=(), prompts=(("copy", text),), chat=True,
                      system="Be exact.")
    [(name, rendered)] = model_prompts(s, smol_engine)
    assert rendered.startswith("<|im_start|>system\nBe exact.<|im_end|>\n<|im_start|>user\n" + text)
    assert rendered.endswith("<|im_start|>assistant\n")
    spec = SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(size_n=4, size_m=8)})
    base = smol_engine.baseline(rendered, SamplerSettings(), 40)
    list(base)
    run = smol_engine.speculative(rendered, spec, SamplerSettings(), 40)
    events = list(run)
    assert run.tokens == base.tokens
    accepted = sum(e.n_accepted for e in events if e.drafter == "ngram-simple")
    assert accepted >= 10, [(e.drafted, e.n_accepted) for e in events if e.drafted]


CHAT_SKY = "Explain in three sentences why the sky is blue."


@pytest.mark.parametrize("n_max", [1, 3, 8])
def test_a_chat_turn_ends_where_the_baseline_ends(smol_engine, n_max):
    """Issue 20: as its own draft, greedy, the speculative run emits the baseline's tokens
    through the end-of-turn token and nothing after it (it used to write past <|im_end|>)."""
    from specscope.core.models.chat import render_chat
    prompt = render_chat(smol_engine.target, CHAT_SKY, None)
    base = smol_engine.baseline(prompt, SamplerSettings(), 256)
    list(base)
    run = smol_engine.speculative(prompt, SpecSettings(n_max=n_max), SamplerSettings(), 256)
    events = list(run)
    assert base.finish == run.finish == "eog"
    assert run.tokens == base.tokens and smol_engine.target.is_eog(run.tokens[-1])
    assert sum(len(e.emitted) for e in events) == len(run.tokens)


@pytest.mark.parametrize("question,n_max,how", [
    ("What is the capital of France? Answer in one word.", 8, "drafted"),
    (CHAT_SKY, 8, "drafted mid-draft"),
    ("Copy this sentence exactly: The committee met on Tuesday to review the budget for the new "
     "library and the reading room.", 1, "sampled")])
def test_the_three_ways_a_round_ends_at_end_of_turn(smol_engine, question, n_max, how):
    """An end of generation drafted last and sampled too is accepted and the bonus token after it
    is dropped (llama.cpp counts it: 8/8); drafted with more drafted tokens after it, llama.cpp
    stops there and counts it as the target's own token, not a rejection; or the target samples
    it itself."""
    from specscope.core.models.chat import render_chat
    prompt = render_chat(smol_engine.target, question, None)
    run = smol_engine.speculative(prompt, SpecSettings(n_max=n_max), SamplerSettings(), 256)
    last = list(run)[-1]
    eog = smol_engine.target.is_eog
    assert last.finish == "eog" and eog(last.emitted[-1])
    assert not any(eog(t) for t in run.tokens[:-1])
    if how == "drafted":
        assert last.n_accepted == len(last.drafted) == len(last.emitted) == n_max
        assert last.own is None and len(last.discarded) == 1 and not last.eog_ends_draft
    elif how == "drafted mid-draft":
        assert last.eog_ends_draft and last.n_accepted < len(last.drafted) - 1
        assert last.own == last.emitted[-1] == last.drafted[last.n_accepted] and not last.discarded
    else:
        assert last.own == last.emitted[-1] and not last.eog_ends_draft and not last.discarded
