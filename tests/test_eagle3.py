"""draft-eagle3 (issue 22): an EAGLE-3 head drafting in SpecScope's rounds, and the inputs that
must end in one line, never in an abort (tests/test_eagle3_conformance.py compares its rounds
with llama.cpp's)."""

from __future__ import annotations

import subprocess
import sys

import llama_cpp
import numpy as np
import pytest

from helpers import ggufgen
from specscope.core.cli.main import main
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.bench.lossless import compare
from specscope.core.measure.stats import fold
from specscope.core.models import staging
from specscope.core.models.demo import demo_eagle3_head, demo_pair
from specscope.core.models.probe import probe

PROMPTS = ["def parse_args(argv=None):\n", "import os\nimport sys\n\n\ndef main():\n"]


def _crashing_head(weights) -> None:
    """3 KV heads for 4 query heads: the shapes agree with the header, llama.cpp's attention
    then aborts on GGML_ASSERT(ggml_can_mul_mat(k, q)) at the head's first decode."""
    for name in ("blk.0.attn_k.weight", "blk.0.attn_v.weight"):
        weights[name] = weights[name][:48].copy()


def _fc_for_32(weights) -> None:
    """An encoder for 3 x 32 features: the head loads, and would read a 64-wide target."""
    weights["fc.weight"] = weights["fc.weight"][:, :96].copy()


@pytest.fixture(scope="module")
def eagle3(tmp_path_factory):
    d = tmp_path_factory.mktemp("eagle3")
    target, head = ggufgen.write_eagle3_pair(d, prefix="good")
    n_vocab = len(ggufgen.bpe_vocab()[0])
    d2t = ggufgen.reduced_vocab(n_vocab, 200)
    d2t[5] = n_vocab + 100
    bad = {"layers": ggufgen.write_eagle3_pair(d, prefix="layers", target_layers=(0, 1, 7))[1],
           "d2t": ggufgen.write_eagle3_pair(d, prefix="d2t", d2t=d2t)[1],
           "hidden": ggufgen.write_eagle3_pair(d, prefix="hidden", target_hidden_size=32,
                                               head_weights=_fc_for_32)[1],
           "crashing": ggufgen.write_eagle3_pair(d, prefix="crashing", n_head_kv=3,
                                                 head_weights=_crashing_head)[1]}
    # a hybrid target (LFM2, whose graph records its layers' inputs) and a head for it
    lfm2 = ggufgen.lfm2_weights(n_vocab, "cac", seed=1)
    hybrid = ggufgen.write_lfm2(d / "lfm2.gguf", lfm2)
    hybrid_head = ggufgen.write_eagle3_head(d / "lfm2-head.gguf",
                                            ggufgen.eagle3_head_weights(lfm2, ggufgen.reduced_vocab(n_vocab, 200)),
                                            target_layers=(0, 1, 2), target_hidden_size=64)
    return {"target": target, "head": head, **bad, "hybrid": hybrid, "hybrid_head": hybrid_head}


def test_a_head_drafts_losslessly_and_its_tokens_are_its_own(eagle3):
    """Greedy, at n_max 1, 3 and 8, alone and after ngram-simple, and under the ratio rule: the
    speculative output is the target's own (the lossless check would name a near-tie); the
    head's drafts are attributed to draft-eagle3, some kept and some rejected."""
    settings = EngineSettings(n_ctx=512, target_threads=2, draft_threads=2)
    specs = [SpecSettings(types=("draft-eagle3",), n_max=n) for n in (1, 3, 8)]
    specs += [SpecSettings(types=("ngram-simple", "draft-eagle3"), n_max=3),
              SpecSettings(types=("draft-eagle3",), n_max=4, accept_rule="ratio")]
    with Engine(eagle3["target"], eagle3["head"], settings) as engine:
        for spec in specs:
            for prompt in PROMPTS:
                c = compare(engine, prompt, spec, SamplerSettings(), 96)
                assert c.lossless.identical, (spec.label, prompt, c.lossless.describe())
                assert len(c.spec.tokens) == 96
        run = engine.speculative(PROMPTS[0], specs[1], SamplerSettings(), 96)
        events = list(run)
    stats = fold(events)
    assert [d.name for d in stats.by_drafter] == ["draft-eagle3"]
    assert {e.drafter for e in events if e.drafted} == {"draft-eagle3"}
    assert 0 < stats.n_accept < stats.n_drafted
    assert all(len(e.draft_ranks) >= 1 for e in events if e.drafted)


def test_the_command_line_probes_and_runs_a_head(eagle3):
    """``specscope run --spec-type draft-eagle3``: the crash probe tries the head beside its
    target in a child (and caches its verdict), then the run drafts with it."""
    verdict = probe(eagle3["head"], target=eagle3["target"])
    assert verdict.status == "ok", verdict          # it ran the head, it did not fail
    proc = _cli("run", "-m", eagle3["target"], "-md", eagle3["head"], "--spec-type",
                "draft-eagle3", "-n", "32", "-p", "def f(x):", "--ignore-eos")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "generated: 32 tokens" in proc.stdout
    assert "draft-eagle3 " in proc.stdout        # its line among the drafters


def test_a_head_at_temperature_keeps_the_target_sampler_s_output(eagle3):
    """llama.cpp's match rule at temperature: the same seed gives the baseline's tokens."""
    settings = EngineSettings(n_ctx=512, target_threads=2, draft_threads=2)
    sampler = SamplerSettings(temperature=0.8, seed=7)
    with Engine(eagle3["target"], eagle3["head"], settings) as engine:
        c = compare(engine, PROMPTS[1], SpecSettings(types=("draft-eagle3",), n_max=3), sampler, 64)
    assert c.lossless.identical, c.lossless.describe()


def test_the_staging_api_resolves_and_a_missing_symbol_is_named():
    for name in staging.SIGNATURES:
        assert staging.function(name) is staging.function(name)      # resolved once
    with pytest.raises(staging.StagingSymbolError) as exc:
        staging.resolve("llama_set_embeddings_elsewhere", "_Z30llama_set_embeddings_elsewhereP13llama_contextb",
                        [], None)
    text = str(exc.value)
    assert "llama_set_embeddings_elsewhere" in text and llama_cpp.__version__ in text
    assert "\n" not in text


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "specscope.core.cli.main", *map(str, argv)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("what, target, says, checked", [
    ("layers", "target", "its target layer id 7 (eagle3.target_layers [0, 1, 7]) exceeds the target's 4 layers", True),
    ("d2t", "target", "its d2t table maps draft token 5 to 397, outside the vocabulary of 297 tokens", True),
    ("hidden", "target", "its target hidden size (eagle3.target_hidden_size 32) is not the target's 64", True),
    ("crashing", "target", "llama.cpp crashed (SIGABRT) while running this model", False),
    ("hybrid_head", "mamba", "the target's architecture does not give its layers' inputs", False),
])
def test_a_head_that_does_not_fit_is_one_line_and_exit_2(eagle3, tiny_models, what, target, says,
                                                         checked):
    """llama.cpp GGML_ABORTs on a target layer beyond the target's, GGML_ASSERTs on a d2t entry
    outside the vocabulary (in ggml_set_rows) and on a hidden size that is not the target's:
    SpecScope checks these before it loads. The crash probe (core/models/probe.py) runs the
    head beside its target in a child: a head malformed otherwise, or a target whose
    architecture does not record its layers' inputs (Mamba), is one line too. Each run in a
    child process, so that a regression fails the test instead of killing pytest; the checks
    hold without the probe as well."""
    head, target = eagle3[what], {**tiny_models, **eagle3}[target]
    for probe in ([], ["--no-probe"]) if checked else ([],):
        proc = _cli("run", "-m", target, "-md", head, "--spec-type", "draft-eagle3",
                    "-n", "8", "-p", "def f(x):", *probe)
        assert proc.returncode == 2, (what, probe, proc.returncode, proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"specscope: error: {head}: "), proc.stderr
        assert says in lines[0], lines[0]


def test_a_head_with_the_wrong_type_or_target_is_one_line(capsys, eagle3, tiny_models):
    cases = [
        (["-m", eagle3["target"], "-md", tiny_models["draft"], "--spec-type", "draft-eagle3"],
         f"{tiny_models['draft']}: draft-eagle3 needs an EAGLE-3 head as the draft model; this is a llama model"),
        (["-m", eagle3["target"], "-md", eagle3["head"], "--spec-type", "draft-simple"],
         f"{eagle3['head']}: an EAGLE-3 head drafts with --spec-type draft-eagle3"),
        (["-m", eagle3["hybrid"], "-md", eagle3["hybrid_head"], "--spec-type", "draft-eagle3"],
         f"{eagle3['hybrid']}: draft-eagle3 on a recurrent or hybrid target"),
        (["-m", eagle3["target"], "--spec-type", "draft-eagle3"], "needs a draft model"),
        (["-m", eagle3["head"], "-md", tiny_models["draft"]],
         f"{eagle3['head']}: this is an EAGLE-3 head, which drafts on a target's hidden states"),
        (["-m", eagle3["head"]], f"{eagle3['head']}: this is an EAGLE-3 head"),
    ]
    for argv, says in cases:
        code = main(["run", *map(str, argv), "-n", "4", "--no-probe"])
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and err.startswith("specscope: error: ") and says in err, err


def test_a_missing_staging_symbol_is_one_line_naming_it(capsys, eagle3, monkeypatch):
    """A llama-cpp-python whose libllama lacks one of the staging functions EAGLE-3 needs."""
    name = "llama_set_embeddings_layer_inp"
    monkeypatch.setitem(staging.SIGNATURES, name, ("_Z3nopv", *staging.SIGNATURES[name][1:]))
    monkeypatch.setattr(staging, "resolve", _without(name, staging.resolve))
    staging.function.cache_clear()
    try:
        code = main(["run", "-m", str(eagle3["target"]), "-md", str(eagle3["head"]), "--spec-type",
                     "draft-eagle3", "-n", "4", "--no-probe"])
    finally:
        staging.function.cache_clear()
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and f"llama-cpp-python {llama_cpp.__version__}" in err and name in err, err


def _without(name: str, resolve):
    """``staging.resolve`` in a library that exports ``name`` under no name at all."""
    def fake(symbol, mangled, argtypes, restype, lib=None):
        if symbol == name:
            return resolve("llama_no_such_symbol_" + symbol, mangled, argtypes, restype, lib)
        return resolve(symbol, mangled, argtypes, restype, lib)
    return fake


def test_the_head_reads_the_layers_it_names(eagle3):
    """The features are the named target layers' inputs: layer 0's input is the token
    embedding row of each token of the batch."""
    settings = EngineSettings(n_ctx=256, target_threads=2, draft_threads=2)
    weights = ggufgen.eagle3_target_weights()
    with Engine(eagle3["target"], eagle3["head"], settings) as engine:
        tokens = engine.tokenize("def f(x):")
        engine.batch.fill(tokens, 0, logits="last")
        engine.tgt.decode(engine.batch, "a test batch")
        features = engine.head.features(len(tokens))
    assert engine.head is not None and features.shape == (len(tokens), 3 * 64)
    np.testing.assert_allclose(features[:, :64], weights["token_embd.weight"][tokens], rtol=1e-6)


# ------------------------------------------------------------------ the shipped demo head
def test_the_demo_head_drafts_losslessly_on_the_demo_target():
    """resources/models/demo-eagle3-head.gguf on the demo target, greedy, n_max 1, 3 and 8: the
    output is the target's own (or the lossless check names a numerical near-tie), and the
    head's drafts are mostly kept."""
    settings = EngineSettings(n_ctx=512, target_threads=2, draft_threads=2)
    kept = drafted = 0
    with Engine(demo_pair()[0], demo_eagle3_head(), settings) as engine:
        for n in (1, 3, 8):
            for prompt in PROMPTS:
                c = compare(engine, prompt, SpecSettings(types=("draft-eagle3",), n_max=n),
                            SamplerSettings(), 96)
                assert c.lossless.identical or c.lossless.verdict == "numerical", \
                    (n, prompt, c.lossless.describe())
                kept, drafted = kept + c.spec.stats.n_accept, drafted + c.spec.stats.n_drafted
    assert kept > drafted / 2


def test_the_command_line_drafts_with_the_demo_head():
    """``specscope run --spec-type draft-eagle3``: given as -md, or by default with the demo
    target (no -m, no -md)."""
    for models in (["-md", demo_eagle3_head()], []):
        proc = _cli("run", *models, "--spec-type", "draft-eagle3", "-n", "32", "-p", "def f(x):",
                    "--ignore-eos", "--no-probe")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "generated: 32 tokens" in proc.stdout
        assert "draft-eagle3 " in proc.stdout
