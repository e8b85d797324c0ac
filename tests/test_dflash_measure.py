"""DFlash heads in the pair doctor and its folder scan (tests/test_dflash.py runs them;
docs/dflash.md): a DFlash or DSpark head is reported with what it needs and the spec type that
drafts with it, a head made for another target is refused with the rule that fails (the engine's
rules: check_fit), and a DFlash2 (selector) head is refused in one line."""

from __future__ import annotations

import json

import pytest

from helpers import ggufgen
from helpers.cli import doctor


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    """A target with a DFlash head and a DSpark head for it, a head made for a target with more
    layers, a DFlash2 head and a head without a mask token, all in one folder (the generated
    targets of one seed are twins: only the first is kept)."""
    d = tmp_path_factory.mktemp("dflash-heads")
    target, head = ggufgen.write_dflash_pair(d, prefix="good")
    out = {"target": target, "head": head,
           "spark": ggufgen.write_dflash_pair(d, prefix="spark", markov_rank=8, confidence=True)[1],
           "layers": ggufgen.write_dflash_pair(d, prefix="layers", target_layers=(0, 1, 7))[1],
           "selector": ggufgen.write_dflash_pair(d, prefix="selector",
                                                 extra_kv={"dflash.selector_top_k": 4})[1],
           "mask": ggufgen.write_dflash_pair(d, prefix="mask", mask_token=None)[1]}
    for name in ("spark", "layers", "selector", "mask"):
        (d / f"{name}-target.gguf").unlink()
    return out


@pytest.mark.parametrize("which, spec, noun", [("head", "draft-dflash", "a DFlash head"),
                                                ("spark", "draft-dspark", "a DSpark head")])
def test_the_doctor_reports_a_dflash_head_with_what_it_needs_and_the_spec_type(
        heads, capsys, which, spec, noun):
    code, out, _ = doctor(capsys, heads["target"], heads[which], "--json")
    doc = json.loads(out)
    assert code == 0 and doc["compatible"] and doc["spec_type"] == spec
    assert doc["draft"]["kind"] == "dflash"
    assert doc["draft"]["head"] == {"target_layers": [0, 1, 3], "target_hidden_size": 64,
                                    "n_vocab": 297, "n_draft_vocab": 297, "block_size": 16,
                                    "mask_token": 0, "markov_head": which == "spark",
                                    "confidence_head": which == "spark"}
    assert [r["name"] for r in doc["rules"] if r["passed"]] == ["dflash head", "target memory"]
    assert doc["cost"]["block"] and doc["cost"]["best"]["0.7"]["n"] == 8   # a block: f per round
    code, out, _ = doctor(capsys, heads["target"], heads[which])
    assert code == 0
    assert f"COMPATIBLE: {noun} for this target: run it with --spec-type {spec}" in out
    assert "target layers [0, 1, 3], hidden size 64, block size 16, mask token 0" in out
    assert "draft-simple, draft-eagle3 and draft-tree refuse it" in out
    assert ("its Markov head makes it llama.cpp's draft-dspark" in out) == (which == "spark")


@pytest.mark.parametrize("which, says", [
    ("layers", "its target layer id 7 (dflash.target_layers [0, 1, 7]) is not one of the "
               "target's 4 layers (good-target.gguf): it was made for another target"),
    ("mask", "it has no mask token (tokenizer.ggml.mask_token_id)"),
    ("selector", "it is a DFlash2 head (a selector lattice, dflash.selector_top_k): SpecScope "
                 "drafts with DFlash and DSpark heads only"),
])
def test_the_doctor_refuses_a_dflash_head_it_cannot_run_with_the_rule_that_fails(
        heads, capsys, which, says):
    """The rules are the engine's (check_fit with DFlashFacts' rules, core/models/dflash.py) on
    the two headers: the same line `specscope run` gives (tests/test_dflash.py)."""
    code, out, _ = doctor(capsys, heads["target"], heads[which])
    assert code == 1
    assert f"FAIL  dflash head      {says}" in out
    assert "INCOMPATIBLE: draft-dflash cannot draft with this head (dflash head rule failed)" in out


def test_the_scan_lists_dflash_heads_beside_the_others(heads, capsys):
    code, out, _ = doctor(capsys, heads["target"], "--scan", heads["target"].parent, "--json")
    doc = json.loads(out)
    assert code == 0
    good = {e["path"]: e["report"]["spec_type"] for e in doc["compatible"]}
    assert good == {str(heads["head"]): "draft-dflash", str(heads["spark"]): "draft-dspark"}
    bad = {e["path"]: e["reason"] for e in doc["incompatible"]}
    assert set(bad) == {str(heads[k]) for k in ("layers", "mask", "selector")}
    assert bad[str(heads["selector"])].startswith("it is a DFlash2 head (a selector lattice")
    code, out, _ = doctor(capsys, heads["target"], "--scan", heads["target"].parent)
    lines = out.splitlines()
    for which, spec in (("head", "draft-dflash"), ("spark", "draft-dspark")):
        i = next(i for i, ln in enumerate(lines) if ln.endswith(str(heads[which])))
        assert lines[i + 1].endswith(f"run it with --spec-type {spec}")
