"""What-ifs from one greedy run (core/measure/whatif/ngram.py): every n-gram configuration replayed
against the run's continuation must be what the engine really does with that configuration,
round for round, on the demo target with real llama.cpp."""

import json

import pytest

from specscope.core.cli.main import main as cli_main
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.drafters.ngram_mod import NgramModParams
from specscope.core.engine.drafters.suffix import SuffixParams
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.stats import fold
from specscope.core.engine.drafters.build import make_chain
from specscope.core.measure.whatif.ngram import config_label, configurations, replay, whatif, whatifs
from specscope.core.models.demo import demo_pair

PROMPT = ("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
          "def mul(a, b):\n")
N = 120
CASES = [SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(2, 8)}),
         SpecSettings(types=("ngram-map-k",), own={"ngram-map-k": NgramMapParams(3, 16)}),
         SpecSettings(types=("ngram-map-k4v",), own={"ngram-map-k4v": NgramMapParams(2, 8)}),
         SpecSettings(types=("ngram-mod",), own={"ngram-mod": NgramModParams(8, 8, 32)}),
         SpecSettings(types=("ngram-cache",)),
         SpecSettings(types=("ngram-simple", "ngram-cache"), own={"ngram-simple": NgramMapParams(4, 16)}),
         SpecSettings(types=("suffix",)),
         SpecSettings(types=("suffix",), own={"suffix": SuffixParams(max_spec_factor=2.0)})]


@pytest.fixture(scope="module")
def greedy():
    """The demo target alone, greedy: the prompt's tokens and the continuation."""
    target, _ = demo_pair()
    with Engine(target, None, EngineSettings.deterministic(n_ctx=1024)) as engine:
        base = engine.baseline(PROMPT, SamplerSettings(), N)
        list(base)
        yield engine, list(base.prompt_tokens), list(base.tokens)


@pytest.mark.parametrize("spec", CASES, ids=config_label)
def test_a_replayed_configuration_is_the_engines_run_round_for_round(greedy, spec):
    engine, prompt, cont = greedy
    run = engine.speculative(PROMPT, spec, SamplerSettings(), N)
    events = list(run)
    assert run.tokens == cont
    real = [(e.drafter, e.drafted, e.n_accepted, e.emitted) for e in events]
    replayed = replay(make_chain(spec), prompt, cont, n_ctx=1024, n_predict=N)
    assert [(r.drafter, r.draft, r.accepted, r.emitted) for r in replayed] == real
    w = whatif(spec, prompt, cont, n_ctx=1024, n_predict=N)
    real_stats = fold(events)
    assert (w.stats.n_drafted, w.stats.n_accept, w.stats.n_tokens) == \
        (real_stats.n_drafted, real_stats.n_accept, real_stats.n_tokens)
    assert w.stats.position_acceptance == real_stats.position_acceptance
    assert real_stats.n_accept > 0          # the case really drafts and keeps tokens


def test_every_configuration_replays_and_the_best_comes_first(greedy):
    _, prompt, cont = greedy
    ws = whatifs(prompt, cont, n_ctx=1024, n_predict=N)
    assert len(ws) == len(configurations()) and len({w.name for w in ws}) == len(ws)
    per_round = [w.tokens_per_round for w in ws]
    assert per_round == sorted(per_round, reverse=True) and per_round[0] > 1.5
    assert all(w.predicted is None for w in ws)


def test_a_calibration_prices_every_configuration(greedy):
    """With a calibration (here: verification costs 1 + 0.5 per extra token, no overheads)
    every configuration gets a speed-up, and a longer kept draft at the same cost wins."""
    _, prompt, cont = greedy
    k = 65
    costs = tuple(1 + 0.5 * i for i in range(k))
    cal = Calibration(k_max=k, n_past=64, t1=1e-3, c_raw=costs, c=costs, f=0.0, f_batch=(), b=1.0)
    ws = whatifs(prompt, cont, n_ctx=1024, n_predict=N, cal=cal)
    assert all(w.predicted is not None and w.predicted > 0 for w in ws)
    assert [w.predicted for w in ws] == sorted((w.predicted for w in ws), reverse=True)


def test_the_cli_replays_a_recorded_session(tmp_path, capsys):
    rec = tmp_path / "run.jsonl"
    target, _ = demo_pair()
    assert cli_main(["baseline", "-m", str(target), "-p", PROMPT, "-n", str(N), "--record", str(rec)]) == 0
    capsys.readouterr()
    assert cli_main(["whatif", str(rec), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["configurations"]) == len(configurations())
    best = doc["configurations"][0]
    assert best["tokens_per_round"] > 1.5 and best["predicted_speedup"] is None
    assert cli_main(["whatif", str(rec), "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "tokens/round" in out and out.count("\n") >= 7


def test_the_cli_refuses_a_sampled_run(tmp_path, capsys):
    rec = tmp_path / "hot.jsonl"
    target, _ = demo_pair()
    assert cli_main(["baseline", "-m", str(target), "-p", PROMPT, "-n", "16", "--temp", "0.8",
                     "--record", str(rec)]) == 0
    capsys.readouterr()
    assert cli_main(["whatif", str(rec)]) == 2
    err = capsys.readouterr().err
    assert "greedy" in err and "hot.jsonl" in err


def test_the_cli_refuses_a_synthetic_acceptance_run(tmp_path, capsys):
    """Synthetic acceptance keeps drafts at random: the text is not the target's, so nothing
    can be replayed against it (the window refuses it too)."""
    rec = tmp_path / "synth.jsonl"
    assert cli_main(["run", "-p", PROMPT, "-n", "16", "--spec-synth-len", "3",
                     "--record", str(rec)]) == 0
    capsys.readouterr()
    assert cli_main(["whatif", str(rec)]) == 2
    err = capsys.readouterr().err
    assert "synth.jsonl" in err and "synthetic-acceptance" in err and err.count("\n") == 1
