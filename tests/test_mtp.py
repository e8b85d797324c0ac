"""draft-mtp: a generated target's own MTP block drafts losslessly, its tokens are attributed
to draft-mtp, it chains after the n-gram types, and what cannot run is one line."""

from __future__ import annotations

import subprocess
import sys

import llama_cpp
import pytest

from helpers import ggufgen
from specscope.core.cli.main import main
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.bench.lossless import compare
from specscope.core.measure.stats import fold
from specscope.core.models import staging

PROMPTS = ["def parse_args(argv=None):\n", "import os\nimport sys\n\n\ndef main():\n"]
SETTINGS = EngineSettings(n_ctx=512, target_threads=2, draft_threads=2)


@pytest.fixture(scope="module")
def mtp(tmp_path_factory):
    d = tmp_path_factory.mktemp("mtp")
    return {"one": ggufgen.write_mtp(d / "mtp.gguf"),
            "two": ggufgen.write_mtp(d / "mtp2.gguf", n_nextn=2, seed=1)}


@pytest.mark.parametrize("model", ["one", "two"])
def test_the_target_s_mtp_blocks_draft_losslessly_and_the_tokens_are_theirs(mtp, model):
    """Greedy, at n_max 1, 3 and 8, alone and after ngram-simple: the speculative output is the
    target's own; the drafts are attributed to draft-mtp, some kept and some rejected (two
    blocks: llama.cpp chains them, so a draft is at most 2 tokens)."""
    specs = [SpecSettings(types=("draft-mtp",), n_max=n) for n in (1, 3, 8)]
    specs.append(SpecSettings(types=("ngram-simple", "draft-mtp"), n_max=3))
    with Engine(mtp[model], None, SETTINGS) as engine:
        for spec in specs:
            for prompt in PROMPTS:
                c = compare(engine, prompt, spec, SamplerSettings(), 96)
                assert c.lossless.identical, (spec.label, prompt, c.lossless.describe())
                assert len(c.spec.tokens) == 96
        events = list(engine.speculative(PROMPTS[0], specs[2], SamplerSettings(), 96))
    stats = fold(events)
    assert [d.name for d in stats.by_drafter] == ["draft-mtp"]
    assert 0 < stats.n_accept < stats.n_drafted
    assert max(len(e.drafted) for e in events) == (8 if model == "one" else 2)


def test_draft_mtp_comes_after_the_ngram_types_whatever_the_order(mtp):
    """``--spec-type draft-mtp,ngram-mod``: llama.cpp's priority order, ngram-mod first; both
    win rounds on a prompt that repeats itself."""
    prompt = "def add(a, b):\n    return a + b\n\n\ndef add(a, b):\n    return a + b\n\n\n"
    code = main(["run", "-m", str(mtp["one"]), "--spec-type", "draft-mtp,ngram-mod",
                 "--spec-ngram-mod-n-match", "3", "--spec-ngram-mod-n-min", "1", "-n", "48",
                 "-p", prompt, "--ignore-eos", "--no-probe", "--json"])
    assert code == 0
    spec = SpecSettings(types=("ngram-mod", "draft-mtp"), n_max=3)
    with Engine(mtp["one"], None, SETTINGS) as engine:
        events = list(engine.speculative(prompt, spec, SamplerSettings(), 48))
    assert {e.drafter for e in events if e.drafted} == {"ngram-mod", "draft-mtp"}


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "specscope.core.cli.main", *map(str, argv)],
                          capture_output=True, text=True, timeout=300)


def test_the_command_line_runs_draft_mtp_without_a_draft_model(mtp):
    proc = _cli("run", "-m", mtp["one"], "--spec-type", "draft-mtp", "-n", "32", "-p",
                "def f(x):", "--ignore-eos", "--no-probe")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "generated: 32 tokens" in proc.stdout
    assert "draft-mtp " in proc.stdout          # its line among the drafters


def test_a_target_without_mtp_blocks_is_one_line_naming_it(capsys, tiny_models):
    code = main(["run", "-m", str(tiny_models["target"]), "--spec-type", "draft-mtp", "-n", "4",
                 "--no-probe"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and str(tiny_models["target"]) in err and "MTP" in err, err


def test_a_missing_staging_symbol_is_one_line_naming_it(capsys, mtp, monkeypatch):
    """A llama-cpp-python whose libllama lacks the function that selects an MTP block."""
    name = "llama_set_nextn_layer_offset"
    real = staging.resolve

    def fake(symbol, mangled, argtypes, restype, lib=None):
        if symbol == name:
            return real("llama_no_such_symbol_" + symbol, "_Z3nopv", argtypes, restype, lib)
        return real(symbol, mangled, argtypes, restype, lib)
    monkeypatch.setattr(staging, "resolve", fake)
    staging.function.cache_clear()
    try:
        code = main(["run", "-m", str(mtp["one"]), "--spec-type", "draft-mtp", "-n", "4",
                     "--no-probe"])
    finally:
        staging.function.cache_clear()
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and f"llama-cpp-python {llama_cpp.__version__}" in err and name in err, err
