"""The lossless check on a real quantized model: SmolLM2-135M-Instruct Q4_1 as its own draft.

The file comes from the real-model tier's ``smollm2`` fixture (tests/realmodel.py). With the same
file as target and draft, speculation must emit the baseline's tokens up to numerics:
any divergence has to be diagnosed as numerical, never as a real mismatch."""

from __future__ import annotations

import pytest

from specscope.core.compare import baseline_logits_at, candidates, compare, dist_draw
from specscope.core.engine import Engine, EngineSettings, SpecSettings
from specscope.core.sampling import SamplerSettings

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
        assert candidates(smol_engine, sampler, row, run.tokens[:i]).pick(dist_draw(5, i)) == token, i


@pytest.mark.parametrize("sampler", [SamplerSettings(), SamplerSettings(temperature=0.8, seed=5)],
                         ids=["greedy", "temp0.8-seed5"])
def test_its_own_draft_diverges_only_through_numerics(smol_engine, sampler):
    rep = compare(smol_engine, PROMPT, SpecSettings(n_max=3), sampler, n_predict=40).lossless
    assert rep.verdict in ("identical", "near-tie"), rep.describe()
    if not rep.identical and not sampler.greedy:
        d = rep.divergence
        assert d.draw_baseline_pick == d.baseline_token and d.draw_spec_pick == d.spec_token
