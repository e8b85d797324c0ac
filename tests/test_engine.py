"""The speculative engine on real llama.cpp with tiny generated GGUF models."""

import math

import numpy as np
import pytest

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.errors import (ConfigError, ContextFullError, IncompatiblePairError,
                                   ModelFileError)
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.stats import fold
from specscope.core.models.candidates import top_k

from helpers import ggufgen

EOT = len(ggufgen.bpe_vocab()[0]) - 1
NO_EOG = ((EOT, -math.inf),)            # like --ignore-eos: random weights emit EOS early
GREEDY = SamplerSettings(logit_bias=NO_EOG)
SAMPLED = SamplerSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=1234,
                          logit_bias=NO_EOG)
PROMPT = "def fibonacci(n):\n    return"
DETERMINISTIC = EngineSettings.deterministic(n_ctx=512)


def generate(engine, spec=None, sampler=GREEDY, n_predict=64, prompt=PROMPT):
    run = engine.speculative(prompt, spec, sampler, n_predict) if spec else \
        engine.baseline(prompt, sampler, n_predict)
    events = list(run)
    return run, events


@pytest.fixture(scope="module")
def pair(tiny_models):
    with Engine(tiny_models["target"], tiny_models["draft"], DETERMINISTIC) as engine:
        yield engine


@pytest.mark.parametrize("sampler", [GREEDY, SAMPLED], ids=["greedy", "temp0.8"])
@pytest.mark.parametrize("sync", ["reuse", "replay"])
@pytest.mark.parametrize("n_max", [1, 3, 8])
def test_speculative_output_equals_baseline(pair, n_max, sync, sampler):
    base, _ = generate(pair, None, sampler, n_predict=80)
    spec, events = generate(pair, SpecSettings(n_max=n_max, sync=sync), sampler, n_predict=80)
    assert spec.tokens == base.tokens
    assert len(spec.tokens) == 80
    stats = fold(events)
    # the comparison is only meaningful if drafts were both accepted and rejected
    assert 0 < stats.n_accept < stats.n_drafted


@pytest.mark.parametrize("sync", ["reuse", "replay"])
def test_caches_hold_exactly_the_accepted_history_after_every_round(pair, sync):
    run = pair.speculative(PROMPT, SpecSettings(n_max=4, sync=sync), GREEDY, 60)
    events = []
    for event in run:
        for ctx in (pair.tgt, pair.dft):
            assert ctx.pos_min() == 0
            assert ctx.pos_max() == event.n_past_after - 1, (event, ctx is pair.tgt)
        assert event.n_past_after == len(run.prompt_tokens) - 1 + len(run.tokens)
        assert event.kv_dropped_target == len(event.drafted) - event.n_accepted
        events.append(event)
    # the rollback ran: rounds with a rejection dropped rows from both caches
    rejected = [ev for ev in events if ev.n_accepted < len(ev.drafted)]
    assert len(rejected) >= 3 and all(ev.kv_dropped_target > 0 for ev in rejected)
    assert sum(ev.kv_dropped_draft for ev in rejected) > 0


def test_a_draft_that_agrees_with_the_target_is_always_accepted(tiny_models):
    with Engine(tiny_models["agree_target"], tiny_models["agree_draft"], DETERMINISTIC) as e:
        run, events = generate(e, SpecSettings(n_max=4), n_predict=61)
    s = fold(events)
    assert s.n_drafted > 0 and s.n_accept == s.n_drafted
    assert s.acceptance_rate == 1.0
    assert s.position_acceptance == (1.0, 1.0, 1.0, 1.0)
    # every round drafts 4 and emits 5, except the last, cut by the n_predict budget
    assert [len(ev.emitted) for ev in events] == [5] * 12 + [1]
    assert s.mean_accepted_length == pytest.approx((s.n_accept + s.n_draft_rounds) / s.n_draft_rounds)
    assert s.accepted_hist == (0, 0, 0, 0, 12)
    assert s.n_tokens == 61 == len(run.tokens)


def test_a_random_draft_is_almost_never_accepted(tiny_models):
    with Engine(tiny_models["target"], tiny_models["random_draft"], DETERMINISTIC) as e:
        run, events = generate(e, SpecSettings(n_max=3), n_predict=60)
    s = fold(events)
    assert s.acceptance_rate < 0.15
    # stats arithmetic from the raw events
    assert s.n_drafted == sum(len(ev.drafted) for ev in events)
    assert s.n_accept == sum(ev.n_accepted for ev in events)
    assert s.n_tokens == sum(len(ev.emitted) for ev in events) == len(run.tokens) == 60
    assert sum(s.accepted_hist) == s.n_draft_rounds
    assert s.drafted_at[0] == s.n_draft_rounds
    assert s.mean_accepted_length == pytest.approx(1 + s.n_accept / s.n_draft_rounds)


@pytest.mark.parametrize("target,draft", [("mamba", "mamba_draft"), ("target", "mamba_draft"),
                                          ("mamba", "mamba")])
def test_recurrent_memory_uses_checkpoints_and_reproduces_the_baseline(tiny_models, target, draft):
    with Engine(tiny_models[target], tiny_models[draft], DETERMINISTIC) as e:
        assert e.tgt_removable == (target != "mamba")
        assert not e.dft_removable
        base, _ = generate(e, None, n_predict=50)
        spec, events = generate(e, SpecSettings(n_max=3), n_predict=50)
    assert spec.tokens == base.tokens
    s = fold(events)
    if target == "mamba" and draft != "mamba":
        modes = {ev.mode for ev in events}
        assert {"checkpoint", "replay"} <= modes
        # replayed tokens are counted once: in the round that decided them
        assert s.n_tokens == 50
        assert s.n_drafted == sum(len(ev.drafted) for ev in events if ev.mode != "replay")
        assert all(not ev.drafted for ev in events if ev.mode == "replay")


def test_drafts_shrink_at_the_end_of_the_context_and_the_run_stops_cleanly(tiny_models):
    settings = EngineSettings.deterministic(n_ctx=256)
    with Engine(tiny_models["agree_target"], tiny_models["agree_draft"], settings) as e:
        n_ctx = e.tgt.n_ctx
        run, events = generate(e, SpecSettings(n_max=8), n_predict=1000)
    assert run.finish == "context"
    assert events[-1].n_past_after == n_ctx
    for ev in events:
        assert len(ev.drafted) <= max(0, n_ctx - ev.n_past - 2)
    assert [ev.draft_stop for ev in events[-2:]] == ["budget", "budget"]
    assert len(events[-1].drafted) == 0


@pytest.mark.parametrize("n_predict", [1, 2, 5, 17])
def test_n_predict_is_exact(pair, n_predict):
    run, events = generate(pair, SpecSettings(n_max=4), n_predict=n_predict)
    assert len(run.tokens) == n_predict
    assert run.finish == "n_predict"
    assert events[-1].finish == "n_predict"


def test_end_of_generation_stops_both_runs(pair):
    eog_first = SamplerSettings(logit_bias=((EOT, 1e9),))
    for spec in (None, SpecSettings(n_max=3)):
        run, events = generate(pair, spec, eog_first, n_predict=50)
        assert run.tokens == [EOT]
        assert run.finish == "eog"
    # natural end of generation: speculative and baseline stop at the same place
    base, _ = generate(pair, None, SamplerSettings(), n_predict=300)
    spec, _ = generate(pair, SpecSettings(n_max=3), SamplerSettings(), n_predict=300)
    assert spec.tokens == base.tokens
    assert base.finish == spec.finish


def test_n_min_drops_short_drafts_and_p_min_cuts_them(pair):
    _, events = generate(pair, SpecSettings(n_max=3, n_min=3, p_min=0.5), n_predict=40)
    assert all(len(ev.drafted) in (0, 3) for ev in events)
    assert all(p >= 0.5 for ev in events for p in ev.draft_probs)
    dropped = [ev for ev in events if ev.draft_stop == "n_min"]
    assert dropped and all(ev.mode == "plain" and len(ev.emitted) == 1 for ev in dropped)


def test_stop_ends_the_run_within_one_round(pair):
    run = pair.speculative(PROMPT, SpecSettings(n_max=3), GREEDY, 500)
    seen = 0
    for event in run:
        seen += 1
        if seen == 3:
            run.stop()
    assert seen == 3 and run.finish == "stopped"


def test_grammar_and_repetition_penalty_keep_output_equal(pair):
    grammar = 'root ::= [a-z ]+'
    s = SamplerSettings(grammar=grammar, repeat_penalty=1.3, logit_bias=NO_EOG)
    base, _ = generate(pair, None, s, n_predict=30)
    spec, _ = generate(pair, SpecSettings(n_max=3), s, n_predict=30)
    assert spec.tokens == base.tokens
    text = pair.target.detokenize(spec.tokens)
    assert set(text) <= set("abcdefghijklmnopqrstuvwxyz ")


def test_incompatible_pair_is_refused_with_the_rule(tiny_models):
    """llama.cpp's verdict, kept with --spec-vocab off (other modes: tests/test_xvocab.py)."""
    with Engine(tiny_models["target"], tiny_models["foreign"], DETERMINISTIC) as e, \
            pytest.raises(IncompatiblePairError) as err:
        e.speculative("x", SpecSettings(vocab="off"))
    assert "foreign.gguf" in str(err.value)
    message = str(err.value)
    assert "BOS ids differ (target 296, draft 266)" in message
    assert 'token 266 differs (target "Ġw", draft "<|endoftext|>")' in message
    assert {r.passed for r in err.value.rules} == {False}


def test_prompt_longer_than_the_context_is_refused(tiny_models):
    with Engine(tiny_models["target"], tiny_models["draft"], EngineSettings.deterministic(n_ctx=32)) as e:
        n_ctx = e.tgt.n_ctx      # llama.cpp rounds 32 up to 256
        with pytest.raises(ContextFullError, match=f"context holds {n_ctx}"):
            e.speculative("x = 1\n" * n_ctx, SpecSettings())
        with pytest.raises(ConfigError):
            e.baseline([], GREEDY)


def test_bad_files_are_refused_before_llama_cpp_sees_them(tmp_path, tiny_models):
    bad = {
        "missing": tmp_path / "nope.gguf",
        "directory": tmp_path,
        "not GGUF": tmp_path / "text.gguf",
        "truncated": tmp_path / "cut.gguf",
    }
    bad["not GGUF"].write_text("hello, I am not a model\n")
    data = tiny_models["target"].read_bytes()
    bad["truncated"].write_bytes(data[: len(data) * 2 // 3])
    for what, path in bad.items():
        with pytest.raises(ModelFileError) as err:
            Engine(path, tiny_models["draft"])
        assert str(path) in str(err.value), what


def test_top_k_gives_the_k_largest_logits_largest_first_as_llama_cpp_orders_them():
    rng = np.random.default_rng(0)
    for n in (5, 12, 4096, 49_155, 152_064):
        k = min(10, n)
        row = rng.standard_normal(n).astype(np.float32)         # no ties: one right answer
        ids, values, probs = top_k(row, 10)
        expected = np.argsort(-row, kind="stable")[:k]
        assert np.array_equal(ids, expected) and np.array_equal(values, row[expected]), n
        softmax = np.exp(values.astype(np.float64) - values[0])
        assert np.allclose(probs, softmax / softmax.sum(), rtol=1e-6), n     # dist's, in float32
        ties = rng.integers(-3, 3, n).astype(np.float32)        # many ties: any of them, once
        ids, values, _ = top_k(ties, 10)
        assert len(set(ids.tolist())) == k and np.array_equal(ties[ids], values), n
        assert np.array_equal(values, np.sort(ties)[::-1][:k]), n
    row = np.zeros(4096, np.float32)
    row[[5, 17, 900, 3000]] = 1.0                    # tied maxima: in the partial sort's order
    ids, _, probs = top_k(row, 10)
    assert sorted(ids[:4].tolist()) == [5, 17, 900, 3000]
    assert len(set(probs[:4].tolist())) == 1 and probs[0] > probs[4]
    assert top_k(row, 10)[0].tolist() == ids.tolist()          # the same order every time


def test_top_k_keeps_one_sampler_per_thread():
    import threading
    from specscope.core.models import candidates as module
    rows = [np.random.default_rng(i).standard_normal(4096).astype(np.float32) for i in range(4)]
    seen, wrong = [], []

    def work(row):
        for _ in range(200):
            ids, _, _ = top_k(row, 10)
            if ids.tolist() != np.argsort(-row)[:10].tolist():
                wrong.append(ids)
        seen.append(module._mine.kept[("top-k", 4096, 10)])     # kept alive: ids stay distinct
    threads = [threading.Thread(target=work, args=(r,)) for r in rows]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong and len({id(s) for s in seen}) == 4


def test_quick_calls_keep_the_gil_and_answer_as_llama_cpp_python_does(pair):
    """core/models/quick.py: the same functions of the same library, bound through
    ctypes.PyDLL (called holding the GIL), where llama_cpp's own let go of it."""
    import ctypes
    import llama_cpp.llama_cpp as ll
    from specscope.core.models.quick import quick
    for name in ("llama_memory_seq_rm", "llama_sampler_sample", "llama_sampler_apply",
                 "llama_vocab_is_eog", "llama_token_to_piece"):
        assert getattr(quick, name)._flags_ & ctypes._FUNCFLAG_PYTHONAPI, name
        assert not getattr(ll, name)._flags_ & ctypes._FUNCFLAG_PYTHONAPI, name
    e = pair
    vocab = e.target.vocab
    eos = ll.llama_vocab_eos(vocab)
    assert [quick.llama_vocab_is_eog(vocab, t) for t in (eos, 0, 1)] == \
        [ll.llama_vocab_is_eog(vocab, t) for t in (eos, 0, 1)] and quick.llama_vocab_is_eog(vocab, eos)
    events = list(e.speculative("def main():", SpecSettings(), SamplerSettings(), 24))
    assert len(events[-1].emitted) > 0 and e.tgt.pos_max() >= 8
    assert e.tgt.seq_rm(4, -1) and e.tgt.pos_max() == 3             # the trim took effect


def test_one_holder_at_a_time(pair):
    """A run holds the engine while it iterates: another run, a calibration and a lossless
    check are refused in one line until it ends."""
    from specscope.core.measure.cost.calibrate import calibrate
    from specscope.core.measure.bench.lossless import baseline_logits_at
    run = pair.speculative("def f(x):", SpecSettings(n_max=3), SamplerSettings(), 16)
    rounds = iter(run)
    next(rounds)                                            # holding the engine now
    for attempt in (lambda: list(pair.baseline("x", SamplerSettings(), 4)),
                    lambda: calibrate(pair, 2),
                    lambda: baseline_logits_at(pair, run.prompt_tokens, [])):
        with pytest.raises(ConfigError, match="busy"):
            attempt()
    list(rounds)                                            # the run ends and lets go
    assert len(list(pair.baseline("x", SamplerSettings(), 4))) == 4
