"""Hybrid memories (attention + recurrent layers) on a generated LFM2: checkpoints hold only
the recurrent part, as llama.cpp's speculative-simple takes them, and speculative output
still equals the baseline."""

import math

import llama_cpp.llama_cpp as ll
import numpy as np
import pytest

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.models.llama import Batch, Checkpoint, Context, ContextSettings, Model
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.stats import fold

from helpers import ggufgen

EOT = len(ggufgen.bpe_vocab()[0]) - 1
NO_EOG = ((EOT, -math.inf),)
GREEDY = SamplerSettings(logit_bias=NO_EOG)
SAMPLED = SamplerSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=1234,
                          logit_bias=NO_EOG)
PROMPT = "def fibonacci(n):\n    return"
DETERMINISTIC = EngineSettings.deterministic(n_ctx=512)


@pytest.fixture(scope="module")
def hybrid(tiny_models, tmp_path_factory):
    """A 3-block LFM2 (conv, attention, conv) and a draft made of its first two blocks
    (still hybrid): the draft agrees with the target often, not always."""
    d = tmp_path_factory.mktemp("hybrid")
    weights = ggufgen.lfm2_weights(len(ggufgen.bpe_vocab()[0]), "cac", seed=1)
    for name in ("blk.2.shortconv.out_proj.weight", "blk.2.ffn_down.weight"):
        weights[name] = weights[name] * 0.3      # a quieter last block: more drafts accepted
    first_two = {k: v for k, v in weights.items() if not k.startswith("blk.2.")}
    return {"hybrid": ggufgen.write_lfm2(d / "lfm2.gguf", weights, layers="cac"),
            "hybrid_draft": ggufgen.write_lfm2(d / "lfm2-draft.gguf", first_two, layers="ca"),
            "target": tiny_models["target"], "draft": tiny_models["draft"]}


def generate(engine, spec, sampler, n_predict=60):
    run = engine.speculative(PROMPT, spec, sampler, n_predict) if spec else \
        engine.baseline(PROMPT, sampler, n_predict)
    return run, list(run)


def test_the_generated_lfm2_has_a_hybrid_memory_that_cannot_drop_part_of_a_sequence(hybrid):
    with Engine(hybrid["hybrid"], hybrid["hybrid_draft"], DETERMINISTIC) as e:
        assert e.target.description.startswith("lfm2")
        assert e.target.is_recurrent_or_hybrid and e.draft.is_recurrent_or_hybrid
        assert not e.tgt_removable and not e.dft_removable
        assert isinstance(e.tgt_checkpoint, Checkpoint) and isinstance(e.dft_checkpoint, Checkpoint)


@pytest.mark.parametrize("sampler", [GREEDY, SAMPLED], ids=["greedy", "temp0.8"])
@pytest.mark.parametrize("target,draft", [("hybrid", "hybrid_draft"), ("hybrid", "draft"),
                                          ("target", "hybrid_draft")])
def test_speculative_output_on_hybrid_memories_equals_the_baseline(hybrid, target, draft, sampler):
    with Engine(hybrid[target], hybrid[draft], DETERMINISTIC) as e:
        base, _ = generate(e, None, sampler)
        spec, events = generate(e, SpecSettings(n_max=3), sampler)
    assert spec.tokens == base.tokens
    assert len(spec.tokens) == 60
    s = fold(events)
    assert s.n_tokens == 60
    if target == "hybrid":
        # partial acceptances restored the target's checkpoint; the next round replayed them
        checkpoints = [ev for ev in events if ev.mode == "checkpoint"]
        replays = [ev for ev in events if ev.mode == "replay"]
        assert checkpoints and len(replays) >= len(checkpoints) - 1
        assert all(ev.n_accepted < len(ev.drafted) for ev in checkpoints)
        assert s.n_drafted == sum(len(ev.drafted) for ev in events if ev.mode != "replay")
        assert all(not ev.drafted for ev in replays)
    if sampler is GREEDY and target == "hybrid" and draft == "hybrid_draft":
        assert 0 < s.n_accept < s.n_drafted    # drafts were both accepted and rejected


def test_the_lossless_check_decodes_a_checkpoint_runs_batches_again(hybrid):
    """The lossless check's speculative side decodes the run's own verification batches again,
    checkpoint and replay rounds included: every emitted token is the best of its row (a wrong
    row would call a numerical divergence an engine bug, or the reverse)."""
    from specscope.core.measure.bench.lossless import dist_row, spec_logits_at
    with Engine(hybrid["hybrid"], hybrid["hybrid_draft"], DETERMINISTIC) as e:
        run, events = generate(e, SpecSettings(n_max=3), GREEDY, n_predict=30)
        assert any(ev.mode == "checkpoint" for ev in events) and any(ev.mode == "replay" for ev in events)
        for i, token in enumerate(run.tokens):
            row = spec_logits_at(e, run.prompt_tokens, events, i)
            assert dist_row(e, GREEDY, row, run.tokens[:i]).best() == token, i


def test_caches_hold_exactly_the_accepted_history_after_every_hybrid_round(hybrid):
    with Engine(hybrid["hybrid"], hybrid["hybrid_draft"], DETERMINISTIC) as e:
        run = e.speculative(PROMPT, SpecSettings(n_max=4), GREEDY, 50)
        modes = []
        for event in run:
            # (a recurrent state holds one position, its last: pos_min is pos_max here)
            for ctx in (e.tgt, e.dft):
                assert ctx.pos_max() == event.n_past_after - 1, (event, ctx is e.tgt)
            modes.append(event.mode)
    # the checkpoint path ran: partial acceptances restored, and their tokens replayed
    assert modes.count("checkpoint") >= 2 and modes.count("replay") >= 2


def _decode(ctx: Context, batch: Batch, tokens, pos0: int) -> np.ndarray:
    batch.fill(tokens, pos0, logits="last")
    ctx.decode(batch, "a test batch")
    return ctx.logits(1)[0].copy()


@pytest.fixture()
def hybrid_ctx(hybrid):
    model = Model(hybrid["hybrid"])
    ctx = Context(model, ContextSettings.deterministic(n_ctx=2048))
    batch = Batch(512)
    yield ctx, batch, model.tokenize(PROMPT * 60, add_special=False)
    batch.close()
    ctx.close()
    model.close()


def test_a_partial_checkpoint_restores_the_state_and_trims_the_attention_rows(hybrid_ctx):
    ctx, batch, tokens = hybrid_ctx
    _decode(ctx, batch, tokens[:40], 0)
    ckpt = Checkpoint(ctx).save()
    assert ckpt.pos_max == 39
    expected = _decode(ctx, batch, tokens[40:43], 40)      # what follows the checkpoint
    _decode(ctx, batch, tokens[43:50], 43)                  # a detour to be undone
    ckpt.restore()
    assert ctx.pos_max() == 39
    # bit for bit what followed the save: the detour's KV rows are gone (see the next test)
    assert np.array_equal(_decode(ctx, batch, tokens[40:43], 40), expected)


def test_the_trim_is_needed_a_partial_state_leaves_the_attention_rows(hybrid_ctx):
    """Why Checkpoint.restore drops the rows after the saved position: restoring the partial
    state alone brings back the recurrent part and leaves the KV rows decoded since."""
    ctx, batch, tokens = hybrid_ctx
    _decode(ctx, batch, tokens[:40], 0)
    ckpt = Checkpoint(ctx).save()
    expected = _decode(ctx, batch, tokens[40:43], 40)
    _decode(ctx, batch, tokens[100:110], 43)                 # a detour, other tokens
    size = ll.llama_state_seq_set_data_ext(ctx.ptr, ckpt._buf, ckpt.size, 0, ckpt.flags)
    assert size == ckpt.size
    # the memory's last position is the smaller of its two parts': the recurrent one's
    assert ctx.pos_max() == 39
    # ... but attention still sees the detour's rows
    assert not np.array_equal(_decode(ctx, batch, tokens[40:43], 40), expected)


def test_a_partial_checkpoint_does_not_grow_with_the_context_a_whole_one_does(hybrid_ctx):
    ctx, batch, tokens = hybrid_ctx
    assert len(tokens) > 1100
    partial, whole = Checkpoint(ctx), Checkpoint(ctx, partial=False)
    sizes = []
    for n in (16, 256, 1024):
        ctx.clear()
        for start in range(0, n, batch.capacity):
            batch.fill(tokens[start:min(n, start + batch.capacity)], start, logits="none")
            ctx.decode(batch, "the test prompt")
        sizes.append((partial.save().size, whole.save().size))
    assert sizes[0][0] == sizes[1][0] == sizes[2][0]          # the recurrent state only
    assert sizes[0][1] < sizes[1][1] < sizes[2][1]            # + one KV row per position
    assert sizes[2][0] < sizes[0][1]


def test_a_mamba_checkpoint_is_its_whole_state(tiny_models):
    """A pure recurrent memory ignores PARTIAL_ONLY: the partial and the whole state agree."""
    with Engine(tiny_models["mamba"], tiny_models["mamba_draft"], DETERMINISTIC) as e:
        list(e.baseline(PROMPT, GREEDY, 8))
        partial, whole = Checkpoint(e.tgt).save(), Checkpoint(e.tgt, partial=False).save()
        assert partial.size == whole.size > 0
        assert bytes(partial._buf[:partial.size]) == bytes(whole._buf[:whole.size])


@pytest.mark.parametrize("sampler", [GREEDY, SAMPLED], ids=["greedy", "temp0.8"])
def test_ngram_drafting_on_a_hybrid_target_checkpoints_and_equals_the_baseline(hybrid, sampler):
    """No draft model: the chain is ngram-simple alone; its partial acceptances restore the
    target's checkpoint and replay, as with a draft model."""
    from specscope.core.engine.drafters.ngram_map import NgramMapParams
    spec = SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(size_n=1, size_m=4)})
    with Engine(hybrid["hybrid"], None, DETERMINISTIC) as e:
        base, _ = generate(e, None, sampler, n_predict=120)
        run, events = generate(e, spec, sampler, n_predict=120)
    assert run.tokens == base.tokens
    modes = {ev.mode for ev in events}
    assert "checkpoint" in modes and "replay" in modes, modes
    assert all(ev.drafter == "ngram-simple" for ev in events if ev.mode in ("spec", "checkpoint"))
    assert fold(events).n_tokens == 120
