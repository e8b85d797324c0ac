"""`specscope bench` with a draft llama.cpp refuses (another vocabulary, docs/cross-vocab.md): it
runs in both modes, translate and intersect, beside a same-vocabulary draft and an n-gram type on
the demo target, each mode a configuration with its translation time, lossless and priced."""

from __future__ import annotations

import csv
import io
import json

import pytest

from specscope.core.cli import main as cli
from specscope.core.measure.cost.model import Calibration
from specscope.core.models.demo import DEMO_FOREIGN_DRAFT, models_dir, prompts_dir

MODELS = models_dir()
FOREIGN = MODELS / DEMO_FOREIGN_DRAFT
PROMPT = sorted(prompts_dir().glob("0[1-5]_*.txt"))[1].read_text(encoding="utf-8")
XNAME = f"draft-simple ({DEMO_FOREIGN_DRAFT})"


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


pytestmark = pytest.mark.usefixtures("quiet_machine")


def bench(*extra):
    return ["bench", "-m", str(MODELS / "demo-target.gguf"), "-md", str(MODELS / "demo-draft.gguf"),
            "-md", str(FOREIGN), "--spec-type", "draft-simple", "ngram-simple",
            "--spec-draft-n-max", "2", "-n", "16", "-r", "1", "--ignore-eos", "--deterministic",
            "-t", "1", "-td", "1", "--calibration-seconds", "0.3", "-q", "-p", PROMPT, *extra]


def test_bench_runs_a_refused_draft_in_both_modes(capsys, tmp_path):
    out_csv = tmp_path / "x.csv"
    rc = cli.main(bench("--json", "--csv", str(out_csv)))
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["skipped"] == {}
    names = [(r["drafter"], r["draft"], r["vocab"]) for r in doc["rows"] if r["prompt"] == "ALL"]
    assert names == [("ngram-simple", "", ""), ("draft-simple", "demo-draft.gguf", ""),
                     ("draft-simple", DEMO_FOREIGN_DRAFT, "translate"),
                     ("draft-simple", DEMO_FOREIGN_DRAFT, "intersect")]
    cal = Calibration.from_dict(doc["calibration"][DEMO_FOREIGN_DRAFT])
    for row in (r for r in doc["rows"] if r["prompt"] == "ALL"):
        assert row["lossless"] == "identical", row
        if row["vocab"]:
            # the translation is timed and priced: in target tokens, in every round's cost
            assert row["draft_rounds"] > 0 and row["translate_us"] > 0
            assert row["translate_cost"] == pytest.approx(row["translate_us"] * 1e-6 / cal.t1)
        else:
            assert row["translate_us"] == 0
    table = list(csv.reader(io.StringIO(out_csv.read_text(encoding="utf-8"))))
    header = table[0]
    assert {(line[header.index("draft")], line[header.index("vocab")]) for line in table[1:]
            if line[header.index("prompt")] == "ALL"} >= {(DEMO_FOREIGN_DRAFT, "translate"),
                                                           (DEMO_FOREIGN_DRAFT, "intersect")}

    # the text report (cached calibrations): the mode in the name, the translation column
    rc = cli.main(bench())
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = out.splitlines()
    assert "translate/round" in next(ln for ln in lines if ln.startswith("configuration"))
    for mode in ("translate", "intersect"):
        row = next(ln for ln in lines if ln.startswith(f"{XNAME} · {mode} "))
        assert " µs (" in row and "identical" in row

    # --spec-vocab off keeps llama.cpp's refusal: the draft is skipped, the others run
    rc = cli.main(bench("--spec-vocab", "off"))
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert f"skipped {DEMO_FOREIGN_DRAFT}: {DEMO_FOREIGN_DRAFT} cannot draft" in out
    assert XNAME not in out and "draft-simple (demo-draft.gguf)" in out


def test_vocab_modes():
    """auto: both modes for a refused draft, none for an accepted one, intersect alone under the
    ratio rule (translate has no q); a mode named by hand with any draft; off: none."""
    from specscope.core.engine.engine import SpecSettings
    from specscope.core.measure.bench.settings import vocab_modes
    assert vocab_modes(SpecSettings(), refused=True) == ("translate", "intersect")
    assert vocab_modes(SpecSettings(accept_rule="ratio"), refused=True) == ("intersect",)
    assert vocab_modes(SpecSettings(), refused=False) == ()
    assert vocab_modes(SpecSettings(vocab="off"), refused=True) == ()
    assert vocab_modes(SpecSettings(vocab="translate"), refused=False) == ("translate",)


def test_a_refused_draft_no_mode_can_run_is_skipped_with_why(tmp_path):
    """A SentencePiece draft without byte tokens: llama.cpp cannot spell the text with it, so
    neither mode can run; the sweep skips it with each mode's reason and runs the other draft, or, alone,
    raises llama.cpp's refusal with the modes' reasons."""
    from helpers import ggufgen
    from specscope.core.engine.engine import EngineSettings
    from specscope.core.errors import IncompatiblePairError
    from specscope.core.measure.bench.sweep import run_sweep
    from specscope.core.measure.bench.settings import SweepSettings
    target = ggufgen.write_llama(tmp_path / "target.gguf", n_layer=2, seed=1)
    same = ggufgen.write_llama(tmp_path / "same.gguf", n_layer=1, seed=2)
    spm = ggufgen.write_llama(tmp_path / "spm.gguf", n_layer=1, seed=14, model="llama", bos=1, eos=2,
                              tokens=[t for t in ggufgen.spm_vocab() if not t.startswith("<0x")])
    s = SweepSettings(target=target, drafts=(same, spm), n_values=(1,), prompts=(("p", "def f(x):"),),
                      n_predict=4, engine=EngineSettings(n_ctx=128, target_threads=1, draft_threads=1),
                      use_cache=False, calibration_s=0.1)
    result = run_sweep(s)
    assert list(result.skipped) == ["spm.gguf"]
    assert all(f"--spec-vocab {mode}" in result.skipped["spm.gguf"] for mode in ("translate", "intersect"))
    assert result.drafts() == ["draft-simple (same.gguf)"]
    with pytest.raises(IncompatiblePairError, match=r"spm.gguf cannot draft .*--spec-vocab translate"):
        run_sweep(SweepSettings(**{**s.__dict__, "drafts": (spm,)}))
