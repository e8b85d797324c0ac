"""EAGLE-3 heads in the pair doctor, the folder scan, the calibration and ``specscope bench``
(tests/test_eagle3.py runs them; docs/eagle3.md): a head is reported as what it is, refused with
the rule that fails when it was made for another target, timed as it drafts, and benched beside
draft-simple and the n-gram types on one target."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import ggufgen
from helpers.cli import doctor
from specscope.core.cli.main import main
from specscope.core.engine.engine import Engine, EngineSettings
from specscope.core.measure.cost.calibrate import calibrate

pytestmark = pytest.mark.usefixtures("quiet_machine")


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


def _fc_for_32(weights) -> None:
    weights["fc.weight"] = weights["fc.weight"][:, :96].copy()


@pytest.fixture(scope="module")
def heads(tmp_path_factory, tiny_models):
    """A target, a head that fits it, a plain draft for it, heads made for other targets, a
    broken DFlash head (this head relabelled dflash) and a model with nextn (MTP) layers, all
    in one folder."""
    d = tmp_path_factory.mktemp("heads")
    target, head = ggufgen.write_eagle3_pair(d, prefix="good")
    n_vocab = len(ggufgen.bpe_vocab()[0])
    d2t = ggufgen.reduced_vocab(n_vocab, 200)
    d2t[5] = n_vocab + 100
    out = {"target": target, "head": head,
           "draft": ggufgen.write_llama(d / "draft.gguf", n_layer=1, seed=3),
           "layers": ggufgen.write_eagle3_pair(d, prefix="layers", target_layers=(0, 1, 7))[1],
           "d2t": ggufgen.write_eagle3_pair(d, prefix="d2t", d2t=d2t)[1],
           "hidden": ggufgen.write_eagle3_pair(d, prefix="hidden", target_hidden_size=32,
                                               head_weights=_fc_for_32)[1],
           "dflash": ggufgen.with_string(head, d / "dflash.gguf", "general.architecture", "dflash"),
           "mtp": ggufgen.write_mtp(d / "mtp.gguf", seed=5)}
    for name in ("layers", "d2t", "hidden"):      # their targets are the good one's twins
        (d / f"{name}-target.gguf").unlink()
    return out


def test_the_doctor_reports_a_head_with_what_it_needs_and_the_spec_type(heads, capsys):
    code, out, _ = doctor(capsys, heads["target"], heads["head"], "--json")
    doc = json.loads(out)
    assert code == 0 and doc["compatible"] and doc["spec_type"] == "draft-eagle3"
    assert doc["draft"]["kind"] == "eagle3"
    assert doc["draft"]["head"] == {"target_layers": [0, 1, 3], "target_hidden_size": 64,
                                    "n_vocab": 297, "n_draft_vocab": 200}
    assert [r["name"] for r in doc["rules"] if r["passed"]] == ["eagle3 head", "target memory"]
    code, out, _ = doctor(capsys, heads["target"], heads["head"])
    assert code == 0
    assert "COMPATIBLE: an EAGLE-3 head for this target: run it with --spec-type draft-eagle3" in out
    assert "target layers [0, 1, 3], target hidden size 64, draft vocabulary 200" in out
    assert "draft-simple refuses a head" in out


@pytest.mark.parametrize("what, says", [
    ("layers", "its target layer id 7 (eagle3.target_layers [0, 1, 7]) exceeds the target's 4 layers"),
    ("d2t", "its d2t table maps draft token 5 to 397, outside the vocabulary of 297 tokens"),
    ("hidden", "its target hidden size (eagle3.target_hidden_size 32) is not the target's 64"),
])
def test_the_doctor_refuses_a_head_made_for_another_target_with_the_rule_that_fails(
        heads, capsys, what, says):
    """The rules are check_head's (core/models/eagle3.py), applied to the two headers: the
    same line `specscope run` gives (tests/test_eagle3.py)."""
    code, out, _ = doctor(capsys, heads["target"], heads[what])
    assert code == 1
    assert f"FAIL  eagle3 head      {says}" in out
    assert "INCOMPATIBLE" in out and "eagle3 head rule failed" in out


def test_the_scan_lists_heads_beside_drafts_and_refuses_a_broken_dflash_head_in_one_line(heads, capsys):
    """(tests/test_dflash_measure.py scans real DFlash heads.)"""
    code, out, _ = doctor(capsys, heads["target"], "--scan", heads["target"].parent, "--json")
    doc = json.loads(out)
    assert code == 0
    good = {e["path"]: e for e in doc["compatible"]}
    assert set(good) == {str(heads["head"]), str(heads["draft"]), str(heads["mtp"])}
    assert good[str(heads["head"])]["report"]["spec_type"] == "draft-eagle3"
    assert good[str(heads["draft"])]["report"]["spec_type"] == "draft-simple"
    bad = {e["path"]: e["reason"] for e in doc["incompatible"]}
    assert "exceeds the target's 4 layers" in bad[str(heads["layers"])]
    assert "outside the vocabulary" in bad[str(heads["d2t"])]
    assert "is not the target's 64" in bad[str(heads["hidden"])]
    assert bad[str(heads["dflash"])] == ("DFlash model has no target_layer_ids "
                                         "(dflash.target_layers is empty)")
    code, out, _ = doctor(capsys, heads["target"], "--scan", heads["target"].parent)
    head_line = out.splitlines().index(next(ln for ln in out.splitlines() if ln.endswith(str(heads["head"]))))
    assert "run it with --spec-type draft-eagle3" in out.splitlines()[head_line + 1]


def test_the_doctor_names_nextn_layers(heads, capsys):
    code, out, _ = doctor(capsys, heads["target"], heads["mtp"])
    assert code == 0 and "(1 nextn (MTP) layers)" in out
    assert "draft has 1 nextn (MTP) layer: --spec-type draft-mtp drafts with them" in out


def test_the_calibration_times_the_head_as_it_drafts(heads):
    """f is a head decode of a draft step, f_batch(k) the head's process of a k-token batch
    (the target's features, the encoder, the decoder pairs): both timed on the head."""
    settings = EngineSettings(n_ctx=256, target_threads=1, draft_threads=1)
    with Engine(heads["target"], heads["head"], settings) as engine:
        cal = calibrate(engine, 4, time_budget_s=0.2, reps=5)
    assert cal.head and cal.has_draft and cal.f > 0
    assert all(x > 0 for x in cal.f_batch) and len(cal.f_batch) == 4
    assert "head decode f" in "\n".join(cal.lines())


def _bench(heads, *extra):
    return ["bench", "-m", str(heads["target"]), "-c", "256", "-t", "1", "-td", "1", "-n", "16",
            "--ignore-eos", "--calibration-seconds", "0.3", "-r", "1", "-q",
            "-p", "def f(x):", "-p", "import os\nimport sys\n", *map(str, extra)]


def test_bench_puts_draft_simple_a_head_and_an_ngram_type_side_by_side(heads, capsys):
    """One bench: draft-simple with the draft model, draft-eagle3 with the head, ngram-simple
    without either, on one target; every row calibrated and each run checked lossless."""
    code = main(_bench(heads, "-md", heads["draft"], "-md", heads["head"], "--spec-draft-n-max",
                       "2,3", "--spec-type", "draft-simple", "draft-eagle3", "ngram-simple",
                       "ngram-simple,draft-eagle3", "--json"))
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    rows = {(r["drafter"], r["draft"], r["n_max"]): r for r in doc["rows"] if r["prompt"] == "ALL"}
    assert set(rows) == {("draft-simple", "draft.gguf", 2), ("draft-simple", "draft.gguf", 3),
                         ("draft-eagle3", "good-head.gguf", 2), ("draft-eagle3", "good-head.gguf", 3),
                         ("ngram-simple>draft-eagle3", "good-head.gguf", 2),
                         ("ngram-simple>draft-eagle3", "good-head.gguf", 3), ("ngram-simple", "", 0)}
    assert all(r["lossless"] == "identical" for r in rows.values())
    for key in (("draft-eagle3", "good-head.gguf", 3), ("ngram-simple>draft-eagle3", "good-head.gguf", 3)):
        assert rows[key]["draft_rounds"] > 0 and np.isfinite(rows[key]["calibrated_speedup"])
    assert doc["calibration"]["good-head.gguf"]["head"] is True
    assert doc["calibration"]["draft.gguf"]["head"] is False


@pytest.mark.parametrize("extra, says", [
    (("-md", "{head}", "--spec-type", "draft-simple"),
     "{head}: an EAGLE-3 head drafts with --spec-type draft-eagle3, not draft-simple"),
    (("-md", "{draft}", "--spec-type", "draft-eagle3"),
     "draft-eagle3 needs an EAGLE-3 head (-md HEAD.gguf); draft.gguf is not one"),
    (("-md", "{draft}", "-md", "{head}", "--spec-type", "draft-simple,draft-eagle3"),
     "draft-simple and draft-eagle3 each draft with the -md model"),
    (("-md", "{layers}", "--spec-type", "draft-eagle3"),
     "{layers}: its target layer id 7 (eagle3.target_layers [0, 1, 7]) exceeds the target's 4 layers"),
    (("-md", "{d2t}", "--spec-type", "draft-eagle3", "--no-probe"),
     "{d2t}: its d2t table maps draft token 5 to 397"),
    (("-md", "{hidden}", "--spec-type", "draft-eagle3", "--no-probe"),
     "{hidden}: its target hidden size (eagle3.target_hidden_size 32) is not the target's 64"),
    (("--spec-type", "draft-dflash"), "draft-dflash needs a DFlash head (-md HEAD.gguf)"),
    (("-md", "{head}", "--spec-type", "draft-dspark"),
     "draft-dspark needs a DFlash head (-md HEAD.gguf); good-head.gguf is not one"),
    (("-md", "{draft}", "--spec-type", "draft-simple,draft-mtp"),
     "draft-simple>draft-mtp: draft-simple and draft-mtp each draft with a model of its own"),
])
def test_bench_refuses_a_head_it_cannot_run_in_one_line(heads, capsys, extra, says):
    names = {k: str(v) for k, v in heads.items()}
    code = main(_bench(heads, *(e.format(**names) for e in extra)))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert says.format(**names) in err, err
