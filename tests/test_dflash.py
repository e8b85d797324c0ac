"""draft-dflash and draft-dspark: a DFlash head drafting a block per round in SpecScope's rounds,
and the inputs that must end in one line (tests/test_dflash_conformance.py compares their rounds
with llama.cpp's)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import ggufgen
from specscope.core.cli.main import main
from specscope.core.engine.drafters import TYPES, parse_types
from specscope.core.engine.drafters.registry import LLAMA_TYPES
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.bench.lossless import compare
from specscope.core.measure.stats import fold

PROMPTS = ["def parse_args(argv=None):\n", "import os\nimport sys\n\n\ndef main():\n"]


@pytest.fixture(scope="module")
def dflash(tmp_path_factory):
    d = tmp_path_factory.mktemp("dflash")
    return {**ggufgen.write_dflash_heads(d),
            "mask": ggufgen.write_dflash_pair(d, prefix="mask", mask_token=None)[1],
            "noconf": ggufgen.write_dflash_pair(d, prefix="noconf", markov_rank=4)[1]}


def test_a_dflash_head_drafts_losslessly_and_its_drafts_are_its_own(dflash):
    """Greedy, draft-dflash at n_max 1, 3 and 8, after ngram-simple, and draft-dspark: the
    speculative output is the target's own; the drafts are attributed to their type, some
    kept and some rejected."""
    settings = EngineSettings(n_ctx=512, target_threads=2, draft_threads=2)
    specs = [SpecSettings(types=("draft-dflash",), n_max=n) for n in (1, 3, 8)]
    specs.append(SpecSettings(types=("ngram-simple", "draft-dflash"), n_max=3))
    with Engine(dflash["target"], dflash["head"], settings) as engine:
        for spec in specs:
            for prompt in PROMPTS:
                c = compare(engine, prompt, spec, SamplerSettings(), 96)
                assert c.lossless.identical, (spec.label, prompt, c.lossless.describe())
        events = list(engine.speculative(PROMPTS[0], specs[1], SamplerSettings(), 96))
    stats = fold(events)
    assert [d.name for d in stats.by_drafter] == ["draft-dflash"]
    assert 0 < stats.n_accept < stats.n_drafted
    # a block of n_max at once (shorter only where the round's budget cut it)
    assert {len(e.drafted) for e in events if e.drafted and e.draft_stop != "budget"} == {3}
    with Engine(dflash["spark_target"], dflash["spark"], settings) as engine:
        spec = SpecSettings(types=("draft-dspark",), n_max=4)
        events = []
        for prompt in PROMPTS:
            c = compare(engine, prompt, spec, SamplerSettings(), 96)
            assert c.lossless.identical, c.lossless.describe()
            events += list(engine.speculative(prompt, spec, SamplerSettings(), 96))
    assert {e.drafter for e in events if e.drafted} == {"draft-dspark"}
    assert sum(e.n_accepted for e in events) > 0


def test_the_dflash_types_come_last_in_llama_cpp_s_order_and_in_the_window_s_picker():
    assert LLAMA_TYPES[-3:] == ("draft-mtp", "draft-dflash", "draft-dspark")
    assert parse_types("draft-dspark,ngram-mod,draft-dflash") == ("ngram-mod", "draft-dflash",
                                                                  "draft-dspark")
    # after them only the programs of their own (llama-speculative, llama-lookahead); suffix
    # (vLLM's, draftless) sits with the n-gram types
    assert [t for t in TYPES if t not in LLAMA_TYPES] == ["suffix", "draft-tree", "lookahead"]
    assert list(TYPES).index("suffix") < list(TYPES).index("draft-simple")


def test_the_command_line_probes_and_runs_a_dflash_head(dflash):
    """``specscope run --spec-type draft-dflash``: the crash probe tries the head beside its
    target in a child, then the run drafts with it."""
    proc = subprocess.run([sys.executable, "-m", "specscope.core.cli.main", "run",
                           "-m", str(dflash["target"]), "-md", str(dflash["head"]),
                           "--spec-type", "draft-dflash", "-n", "32", "-p", "def f(x):",
                           "--ignore-eos"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "generated: 32 tokens" in proc.stdout
    assert "draft-dflash " in proc.stdout


def test_a_dflash_head_that_does_not_fit_is_one_line_and_exit_2(capsys, dflash, tiny_models):
    cases = [
        (dflash["target"], tiny_models["draft"], ["draft-dflash"],
         f"{tiny_models['draft']}: draft-dflash needs a DFlash head as the draft model; this is a "
         "llama model"),
        (dflash["target"], dflash["head"], ["draft-simple"],
         f"{dflash['head']}: a DFlash head drafts with --spec-type draft-dflash or draft-dspark"),
        (dflash["target"], dflash["head"], ["draft-eagle3"],
         f"{dflash['head']}: draft-eagle3 needs an EAGLE-3 head as the draft model; this is a "
         "dflash model"),
        (dflash["target"], dflash["layers"], ["draft-dflash"],
         f"{dflash['layers']}: its target layer id 7 (dflash.target_layers [0, 1, 7]) is not one "
         "of the target's 4 layers"),
        (dflash["target"], dflash["mask"], ["draft-dflash"],
         f"{dflash['mask']}: it has no mask token (tokenizer.ggml.mask_token_id)"),
        (dflash["target"], dflash["noconf"], ["draft-dspark", "--spec-draft-p-min", "0.2"],
         f"{dflash['noconf']}: DSpark draft has no confidence head: please set "
         "--spec-draft-p-min 0"),
    ]
    for target, draft, flags, says in cases:
        code = main(["run", "-m", str(target), "-md", str(draft), "--spec-type", *flags, "-n", "4",
                     "--no-probe"])
        err = capsys.readouterr().err
        assert code == 2, (flags, err)
        assert err.count("\n") == 1 and err.startswith("specscope: error: ") and says in err, err
