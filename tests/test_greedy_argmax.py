"""The greedy chain's argmax (core/models/sampler_chain.py ``SamplerChain.argmax``): a chain that is
llama.cpp's greedy sampler alone samples with numpy's argmax of the row, which must be the
token llama.cpp's own ``llama_sampler_sample`` picks on every row: the first largest logit in
id order, ties and rows with a NaN included (a NaN goes to llama.cpp)."""

from __future__ import annotations

import numpy as np
import pytest

from specscope.core.engine.engine import Engine, EngineSettings
from specscope.core.engine.sampling import SamplerSettings, build_chain
from specscope.core.models.demo import demo_pair
from specscope.core.models.quick import quick


@pytest.fixture(scope="module")
def engine():
    with Engine(*demo_pair(), EngineSettings(n_ctx=256, target_threads=1, draft_threads=1)) as e:
        yield e


def llama_cpp_greedy(chain, ctx, row: int) -> int:
    return quick.llama_sampler_sample(chain.ptr, ctx.ptr, row)


def test_only_a_greedy_chain_alone_takes_the_argmax_path(engine):
    m = engine.tgt.model
    assert build_chain(m, SamplerSettings()).argmax
    for s in (SamplerSettings(temperature=0.8), SamplerSettings(repeat_penalty=1.1),
              SamplerSettings(logit_bias=((5, 2.0),)), SamplerSettings(grammar='root ::= "a"')):
        assert not build_chain(m, s).argmax, s
    assert build_chain(m, SamplerSettings()).clone().argmax


def test_argmax_picks_llama_cpp_s_greedy_token_on_real_rows_ties_and_nans(engine):
    ctx, batch = engine.tgt, engine.batch
    tokens = engine.target.tokenize("def parse_args(argv):\n    return", add_special=True)[:8]
    batch.fill(tokens, 0, logits="all")
    ctx.decode(batch, "a test batch")
    chain = build_chain(ctx.model, SamplerSettings())
    rows = [ctx.row(i) for i in range(len(tokens))]
    for i, row in enumerate(rows):
        assert np.shares_memory(row, ctx.logits(len(tokens))[i])
        assert chain.sample(ctx, i) == llama_cpp_greedy(chain, ctx, i) == int(np.argmax(row))
    # llama.cpp's buffer, edited in place: a tie for the largest logit, then NaNs before and at it
    top, n = int(np.argmax(rows[0])), rows[0].size
    early, late = (top - 3) % n, (top + 7) % n
    rows[0][early] = rows[0][late] = rows[0][top]
    assert chain.sample(ctx, 0) == llama_cpp_greedy(chain, ctx, 0) == min(top, early, late)
    rows[1][2] = np.nan                      # argmax stops at a NaN, llama.cpp's comparison skips it
    assert int(np.argmax(rows[1])) == 2
    assert chain.sample(ctx, 1) == llama_cpp_greedy(chain, ctx, 1) != 2
    rows[2][0] = np.nan                      # llama.cpp starts from entry 0 and never leaves a NaN
    assert chain.sample(ctx, 2) == llama_cpp_greedy(chain, ctx, 2)
