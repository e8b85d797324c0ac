"""lookahead: llama.cpp's llama-lookahead, Jacobi decoding without a draft model
(core/engine/drafters/lookahead.py, core/engine/lookahead_round.py).

tests/data/lookahead_golden.json holds what ``llama-lookahead`` (built from llama-cpp-python
0.3.36's source; tests/conformance/lookahead.py wrote it) printed on the demo target and
SmolLM2-135M-Instruct, greedy, 128 tokens, at its W = 15, N = 5, G = 15: each token, the
accepted ones marked. SpecScope's rounds must print the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.lookahead import our_stream
from specscope.core.engine.drafters.lookahead import LookaheadParams, NgramPool
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.command_line import command_line
from specscope.core.models.demo import demo_pair
from helpers.lossless import assert_targets_output

GOLDEN = json.loads((Path(__file__).parent / "data" / "lookahead_golden.json").read_text())["cases"]
LOOK = ("lookahead",)


def _engine(target, n_seq: int = 31) -> Engine:
    return Engine(target, None, EngineSettings(n_seq=n_seq, n_ctx=2048, target_threads=1, repack="off"))


@pytest.mark.parametrize("target", ["demo", "smollm2"])
def test_lookahead_prints_what_llama_lookahead_prints(request, target):
    path = demo_pair()[0] if target == "demo" else request.getfixturevalue("smollm2")
    cases = [c for c in GOLDEN if c["target"] == target]
    assert len(cases) == 4
    if target == "smollm2":      # a 121-token batch a round: 30 s a prompt here; the script runs all
        cases = cases[:1]
    with _engine(path) as engine:
        for c in cases:
            ours, events = our_stream(engine, c["prompt"], c["n"])
            assert c["stream"].startswith(ours), c["prompt"]
            assert len(events) > 20 and sum(e.n_accepted for e in events) > 30


@pytest.fixture(scope="module")
def demo():
    with _engine(demo_pair()[0]) as engine:
        yield engine


def test_greedy_lookahead_emits_the_targets_own_output(demo):
    prompt = "class Queue:\n    def __init__(self, maxsize=0):\n"
    run = demo.speculative(prompt, SpecSettings(types=LOOK), n_predict=96)
    events = list(run)
    base = demo.baseline(prompt, n_predict=96)
    list(base)
    assert_targets_output(demo, run, events, base)
    shaped = [e for e in events if e.shape is not None]
    assert shaped and all(len(g) == 4 for e in shaped for g in e.shape.verified)
    for e in events:        # the draft shown is the n-gram followed, its accepted part emitted
        if e.drafted:
            assert list(e.emitted[:e.n_accepted]) == list(e.drafted[:e.n_accepted])
        assert RoundEvent.from_dict(json.loads(json.dumps(e.to_dict(exact=True)))) == e


def test_smaller_windows_are_flags_of_their_own(demo):
    spec = SpecSettings(types=LOOK, own={"lookahead": LookaheadParams(w=4, n=3, g=2)})
    events = list(demo.speculative("import os\nimport sys\n\n\ndef main():\n", spec, n_predict=64))
    assert all(len(g) == 2 for e in events if e.shape for g in e.shape.verified)
    assert max(len(e.shape.verified) for e in events if e.shape) <= 2
    with pytest.raises(ConfigError, match="lookahead N must be between 2 and 64"):
        SpecSettings(types=LOOK, own={"lookahead": LookaheadParams(n=1)}).validate()


def test_its_context_needs_w_plus_g_plus_1_sequences():
    with _engine(demo_pair()[0], n_seq=1) as engine:
        with pytest.raises(ConfigError, match="needs 31 sequences"):
            list(engine.speculative("def f():", SpecSettings(types=LOOK), n_predict=8))
    assert SpecSettings(types=LOOK).sequences() == 31 and SpecSettings().sequences() == 1


def test_the_pool_keeps_g_distinct_ngrams_per_token_in_a_ring():
    pool = NgramPool(g=2)
    pool.add(7, (1, 2))
    pool.add(7, (1, 2))                  # a repeat is not added
    pool.add(7, (3, 4))
    assert pool.candidates(7) == [(1, 2), (3, 4)] and pool.n_total == 2
    pool.add(7, (5, 6))                  # full: the ring's head (slot 0) is overwritten
    assert pool.candidates(7) == [(5, 6), (3, 4)]
    assert pool.candidates(8) == []


def test_its_llama_cpp_command_is_llama_lookahead():
    assert command_line("llama-server", "t.gguf", SpecSettings(types=LOOK), None, 2) == \
        "llama-lookahead -m t.gguf -t 2"


def test_bench_runs_lookahead_without_a_draft_model_and_prices_its_batch(tmp_path, capsys):
    """`bench --spec-type lookahead`: no -md needed (the target guesses in its own batch); its
    calibration reaches its batch (the token, G n-grams, the window) and every round is priced
    as one batch of that size (cost.model.batch_speedup)."""
    import json as _json
    from specscope.core.cli import main as cli
    out_json = tmp_path / "bench.json"
    rc = cli.main(["bench", "-m", str(demo_pair()[0]), "--spec-type", "lookahead", "--lookahead-w", "4",
                   "--lookahead-g", "4", "-n", "24", "-r", "1", "-t", "1", "-q", "-p", "def f(x):\n",
                   "--no-cache", "--calibration-seconds", "5", "--out-json", str(out_json)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc = _json.loads(out_json.read_text())
    rows = [r for r in doc["rows"] if r["drafter"] == "lookahead"]
    assert rows and all(r["lossless"] == "identical" for r in rows)
    # its batch, 1 + (N - 1)(W + G) = 33 tokens at most, is in the calibration, not extrapolated
    assert doc["calibration"][""]["k_max"] == 1 + 4 * (4 + 4)
    assert all(r["calibrated_speedup"] > 0 and r["f"] == 0.0 for r in rows)


def test_lookahead_is_priced_as_one_batch_a_round():
    from specscope.core.measure.cost.model import Calibration, batch_cost, batch_speedup
    c = (1.0, 1.2, 1.4, 1.6)
    cal = Calibration(k_max=4, n_past=64, t1=1e-3, c_raw=c, c=c, f=0.0, f_batch=(), k_draft=0)
    assert batch_cost(cal, 10) == pytest.approx(1.6 + 6 * 0.2)       # past 4: the last slope
    assert batch_speedup(cal, 10, 100, 20) == pytest.approx(20 * 1.0 / (10 * 2.8))


def test_a_lossless_check_decodes_lookaheads_batch_again_as_it_was(demo):
    """bench's lossless check replays lookahead's rounds with their batches as they were (the
    n-grams and the window, each in its sequences: LookaheadShape.rows): every row it decodes
    again picks the token the run emitted (greedy)."""
    import numpy as np
    from specscope.core.measure.bench.lossless import spec_logits_at
    run = demo.speculative("def f(x):\n    return x\n\n\ndef g(x):\n", SpecSettings(types=LOOK),
                           n_predict=40)
    events = list(run)
    assert any(e.shape and e.shape.followed >= 0 and e.n_accepted for e in events)
    for i, token in enumerate(run.tokens):
        assert int(np.argmax(spec_logits_at(demo, run.prompt_tokens, events, i))) == token, i


def test_a_lookahead_round_is_told_by_its_shape_in_step_mode_and_the_timeline(demo):
    """The window's words come from the round's shape (app/shape_words.py): step mode names the
    pool, the n-grams verified and the one the target followed; the timeline its batch."""
    pytest.importorskip("PySide6")
    from specscope.app.round_words import explain
    from specscope.app.timeline_view import batch_of
    from specscope.core.engine.events import LookaheadShape
    prompt = "class Queue:\n    def __init__(self, maxsize=0):\n"
    events = list(demo.speculative(prompt, SpecSettings(types=LOOK), n_predict=64))
    ev = next(e for e in events if e.n_accepted and e.shape.verified)
    assert isinstance(ev.shape, LookaheadShape) and ev.shape.kept_seq() > 0
    text = explain(ev, demo.target, (), LOOK)
    assert "<b>pool</b>" in text and f"n-gram {ev.shape.followed}" in text
    assert f"one batch</b> of {ev.batch_size} tokens" in text
    assert batch_of(ev) == (f"a batch of {ev.batch_size} tokens: the seed, "
                            f"{len(ev.shape.verified)} n-grams and the lookahead window")


def test_step_mode_says_which_caches_a_round_holds(demo):
    """A draftless type's round lives in the target's cache alone; a draft model's in both."""
    pytest.importorskip("PySide6")
    from specscope.app.round_words import explain
    ev = next(e for e in demo.speculative("def f(x):\n", SpecSettings(types=LOOK), n_predict=8))
    assert "The target's cache held positions" in explain(ev, demo.target, (), LOOK)
    assert "Both caches held positions" in explain(ev, demo.target, (), ("draft-simple",))
