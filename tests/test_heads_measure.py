"""draft-mtp and the DFlash heads (draft-dflash, draft-dspark) in the calibration and
``specscope bench`` (tests/test_eagle3_measure.py does draft-eagle3): each is calibrated as it
drafts, benched as a group of its own with a calibrated prediction, and checked lossless."""

from __future__ import annotations

import json
import math

import pytest

from helpers import ggufgen
from specscope.core.cli.main import main
from specscope.core.errors import ModelFileError
from specscope.core.measure.cost.model import Calibration, round_cost
from specscope.core.measure.bench.settings import SweepSettings

pytestmark = pytest.mark.usefixtures("quiet_machine")


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A target with one MTP block, and a DFlash pair whose target a DSpark head (a Markov
    head and a confidence head) fits too."""
    d = tmp_path_factory.mktemp("heads")
    target, head = ggufgen.write_dflash_pair(d, prefix="df")
    _, spark = ggufgen.write_dflash_pair(d, prefix="sp", markov_rank=8, confidence=True)
    return {"mtp": ggufgen.write_mtp(d / "mtp.gguf", seed=5), "target": target, "head": head,
            "spark": spark}


def _bench(capsys, target, *extra):
    code = main(["bench", "-m", str(target), "-c", "256", "-t", "1", "-td", "1", "-n", "24",
                 "--ignore-eos", "--calibration-seconds", "0.3", "-r", "1", "-q", "--json",
                 "--spec-draft-n-max", "1,3", "-p", "def f(x):", "-p", "import os\nimport sys\n",
                 *map(str, extra)])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    return {(r["drafter"], r["draft"], r["n_max"]): r for r in doc["rows"] if r["prompt"] == "ALL"}, \
        doc["calibration"]


def test_bench_runs_draft_mtp_as_a_group_of_its_own_calibrated_as_it_drafts(models, capsys):
    """draft-mtp beside an n-gram type on its target: its own engine group, named after the
    target's MTP blocks, whose calibration times the MTP context's draft steps (f) and its
    process of a verified batch (f_batch); each row predicted and checked lossless."""
    rows, cals = _bench(capsys, models["mtp"], "--spec-type", "draft-mtp", "ngram-simple")
    assert set(rows) == {("draft-mtp", "mtp.gguf MTP", 1), ("draft-mtp", "mtp.gguf MTP", 3),
                         ("ngram-simple", "", 0)}
    assert all(r["lossless"] == "identical" for r in rows.values())
    for n in (1, 3):
        row = rows[("draft-mtp", "mtp.gguf MTP", n)]
        assert row["draft_rounds"] > 0 and math.isfinite(row["calibrated_speedup"])
    mtp, alone = cals["mtp.gguf MTP"], cals[""]
    assert mtp["head"] and mtp["k_draft"] == 4 and mtp["f"] > 0
    assert len(mtp["f_batch"]) == 4 and all(x > 0 for x in mtp["f_batch"])
    assert not alone["head"] and alone["k_draft"] == 0


def test_bench_runs_dflash_and_dspark_heads_priced_by_their_block(models, capsys):
    """Both DFlash heads as -md files, with draft-dflash, draft-dspark and a chain after an
    n-gram type: a group per head, whose calibration times each type's whole draft (one block
    decode) at every n, and the head's process of a verified batch."""
    rows, cals = _bench(capsys, models["target"], "-md", models["head"], "-md", models["spark"],
                        "--spec-type", "draft-dflash", "draft-dspark", "ngram-simple,draft-dflash")
    drafters = ("draft-dflash", "draft-dspark", "ngram-simple>draft-dflash")
    assert set(rows) == {(d, f, n) for d in drafters for f in ("df-head.gguf", "sp-head.gguf")
                         for n in (1, 3)}
    assert all(r["lossless"] == "identical" for r in rows.values())
    for key, row in rows.items():
        assert row["draft_rounds"] > 0 and math.isfinite(row["calibrated_speedup"]), key
    for name in ("df-head.gguf", "sp-head.gguf"):
        cal = cals[name]
        assert cal["head"] and set(cal["block"]) == {"draft-dflash", "draft-dspark"}
        assert all(len(v) == 3 and min(v) > 0 for v in cal["block"].values())
        assert all(x > 0 for x in cal["f_batch"])


def test_a_dflash_round_is_priced_as_one_block_whatever_it_drafted():
    """The draft cost of a DFlash head's round is its block at n_max (calibrated), not the
    draft length times a draft step; its sync is the head's process of the verified batch."""
    cal = Calibration(k_max=4, n_past=64, t1=1e-3, c_raw=(1.0, 1.5, 2.0, 2.5), c=(1.0, 1.5, 2.0, 2.5),
                      f=0.5, f_batch=(0.1, 0.2, 0.3, 0.4), k_draft=4, head=True,
                      block={"draft-dflash": (0.5, 0.6, 0.7), "draft-dspark": (0.4, 0.5, 0.6)})
    rc = round_cost(cal, 3, [0.5, 0.2, 0.1], "replay", n_draft=1.5, drafter="draft-dflash")
    assert rc.draft == pytest.approx(0.7) and rc.sync == pytest.approx(0.25)
    assert round_cost(cal, 3, [0.5], "replay", drafter="draft-dspark").draft == pytest.approx(0.6)
    assert round_cost(cal, 3, [0.5], "replay", n_draft=1.5).draft == pytest.approx(0.75)
    assert Calibration.from_dict(json.loads(json.dumps(cal.to_dict()))) == cal


def test_draft_mtp_on_a_target_without_mtp_blocks_is_one_line_before_the_sweep(tiny_models):
    settings = SweepSettings(target=tiny_models["target"], drafts=(), chains=(("draft-mtp",),),
                             prompts=(("p", "def f(x):"),))
    with pytest.raises(ModelFileError, match="draft-mtp drafts with the target's own MTP") as err:
        settings.validate()
    assert str(tiny_models["target"]) in str(err.value) and "\n" not in str(err.value)
