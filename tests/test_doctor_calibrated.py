"""The doctor and the scan beside the textbook figure: the calibrated estimate from a calibration
of the target cached on this machine (core/measure/doctor/estimate.py), on the demo pair
with real calibrations written to a cache folder of the test's own."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from specscope.core.cache import read_json, write_json
from specscope.core.cli.main import main
from specscope.core.engine.engine import EngineSettings
from specscope.core.measure.cost import calibrate as cb
from specscope.core.measure.cost.break_even import alpha_needed, summary, with_draft
from specscope.core.measure.cost.calibrate import calibrate_pair
from specscope.core.measure.cost.cache import cache_dir, cached_here
from specscope.core.measure.cost.model import calibrated_speedup
from specscope.core.models.demo import demo_eagle3_head, demo_pair

from test_calibrate import FixedLoad

K_MAX = 9          # the doctor's draft lengths 1..8


def _calibrated(folder, draft: bool):
    """A real calibration of the demo target (with its draft, or alone), cached in ``folder``."""
    target, demo_draft = demo_pair()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECSCOPE_CACHE_DIR", str(folder))
        mp.setattr(cb, "LoadMeter", lambda: FixedLoad(0.0))     # cached whatever the machine's load
        cal, _, _ = calibrate_pair(target, demo_draft if draft else None,
                                   EngineSettings(target_threads=1, draft_threads=1), K_MAX)
        assert [c.key for c in cached_here()] == [cal.key]
    return cal


@pytest.fixture(scope="module")
def pair_cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pair-cache")
    return folder, _calibrated(folder, draft=True)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    def use(folder):
        monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(folder))
    use(tmp_path / "empty")
    return use


def _best(cal, alpha=0.7):
    """The best calibrated speed-up over the doctor's lengths, to the 4 decimals the doctor keeps
    (then shown to 2: unrounded, a best of 0.995003 would read 1.00 here and 0.99 there)."""
    return round(max(calibrated_speedup(cal, n, alpha=alpha) for n in range(1, K_MAX)), 4)


def test_without_a_cached_calibration_the_figure_is_textbook_and_says_how_to_get_one(cache, capsys, tmp_path):
    target, draft = demo_pair()
    assert main(["doctor", str(target), str(draft)]) == 0
    out = capsys.readouterr().out
    assert "Cost estimate (textbook)" in out
    assert "Cost estimate (calibrated on this machine): none: no calibration of this target" in out
    assert "specscope bench -m TARGET -md DRAFT" in out
    folder = tmp_path / "scan"
    folder.mkdir()
    shutil.copy(draft, folder / "copy.gguf")
    assert main(["doctor", str(target), "--scan", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "ranked by the textbook estimate, cheapest f first; no calibration of this target" in out
    assert "calibrated best" not in out


def test_the_pairs_own_calibration_prices_the_doctor(pair_cache, cache, capsys):
    folder, cal = pair_cache
    cache(folder)
    target, draft = demo_pair()
    assert main(["doctor", str(target), str(draft)]) == 0
    out = capsys.readouterr().out
    best = _best(cal)
    assert (f"Cost estimate (calibrated on this machine): f ≈ {cal.f:.4f}  (measured: this pair's "
            "calibration)") in out
    figure = re.search(r"at α = 0\.7: textbook speed-up 1\.75x with n = 3, calibrated on this machine "
                       r"(\d+\.\d\d)x", out)
    assert figure and abs(float(figure[1]) - best) <= 0.005 + 1e-9, out   # to its 2 decimals
    assert f"break-even here: {summary(cal)}" in out
    needed = alpha_needed(cal, cal.f)
    assert (f"1.0× needs α ≥ {needed:.2f}" if needed else "1.0× is out of reach") in out
    assert main(["doctor", str(target), str(draft), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["cost"]["calibrated"]
    assert doc["f"] == pytest.approx(cal.f) and doc["best"]["0.7"]["speedup"] == pytest.approx(best, abs=1e-4)


def test_the_scan_scales_f_by_what_the_pair_measured_and_ranks_by_it(pair_cache, cache, capsys, tmp_path):
    folder, cal = pair_cache
    cache(folder)
    target, draft = demo_pair()
    scan = tmp_path / "drafts"
    scan.mkdir()
    shutil.copy(draft, scan / "copy.gguf")                # the same size, another file: scaled
    shutil.copy(demo_eagle3_head(), scan / "head.gguf")
    assert main(["doctor", str(target), "--scan", str(scan), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    scale = cal.f / (draft.stat().st_size / target.stat().st_size)
    assert "ranked by the calibrated estimate on this machine" in doc["ranking"]
    assert [e["path"] for e in doc["compatible"]] == [str(scan / "copy.gguf"), str(scan / "head.gguf")]
    for e in doc["compatible"]:
        k = e["report"]["cost"]["calibrated"]
        assert k["f"] == pytest.approx(e["f"] * scale)
        assert k["f_basis"].startswith(f"file sizes {e['f']:.4f} × {scale:.2f}")
    ranked = [e["report"]["cost"]["calibrated"]["best"]["0.7"]["speedup"] for e in doc["compatible"]]
    assert ranked == sorted(ranked, reverse=True)
    assert main(["doctor", str(target), "--scan", str(scan)]) == 0
    out = capsys.readouterr().out
    assert "Calibrated on this machine:" in out and f"the file-size ratio × {scale:.2f}" in out
    assert f"1. calibrated best {ranked[0]:.2f}x at α=0.7" in out and "; textbook best" in out


def test_a_calibration_of_the_target_alone_prices_with_the_size_ratio_unscaled(cache, capsys, tmp_path):
    folder = tmp_path / "alone"
    cal = _calibrated(folder, draft=False)
    cache(folder)
    target, draft = demo_pair()
    assert main(["doctor", str(target), str(draft), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["cost"]
    f = doc["f"]
    assert doc["calibrated"]["f"] == pytest.approx(f) and "unscaled" in doc["calibrated"]["f_basis"]
    assert "the calibration of demo-target.gguf alone" in doc["calibrated"]["source"]
    assert doc["calibrated"]["best"]["0.7"]["speedup"] == pytest.approx(_best(with_draft(cal, f)), abs=1e-4)


def test_a_calibration_taken_on_another_machine_is_not_used(pair_cache, cache, capsys, tmp_path):
    folder, cal = pair_cache
    other = tmp_path / "other"
    doc = read_json(next(cache_dir_of(folder).glob("*.json")))
    doc["describe"]["machine"]["node"] += "-elsewhere"
    write_json(other / "calibration" / f"{cal.key}.json", doc)
    cache(other)
    target, draft = demo_pair()
    assert main(["doctor", str(target), str(draft)]) == 0
    assert "Cost estimate (calibrated on this machine): none" in capsys.readouterr().out


def cache_dir_of(folder):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECSCOPE_CACHE_DIR", str(folder))
        return cache_dir()


def test_a_calibration_of_short_drafts_says_how_far_its_figures_go(cache, capsys, tmp_path):
    """After `bench --spec-draft-n-max 1,2` the doctor's calibrated table stopped at n = 2 and
    said "1.5× is out of reach at any α" without saying that n ≤ 2 was all it had timed."""
    target, draft = demo_pair()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "short"))
        mp.setattr(cb, "LoadMeter", lambda: FixedLoad(0.0))
        calibrate_pair(target, draft, EngineSettings(target_threads=1, draft_threads=1), 3)
    cache(tmp_path / "short")
    assert main(["doctor", str(target), str(draft)]) == 0
    out = capsys.readouterr().out
    assert "batches up to 3 at position" in out
    assert "(n ≤ 2 only: the calibration timed batches up to 3;" in out
    assert "(of n ≤ 2 it timed)" in out
    assert "out of reach at any α with n ≤ 2" in out or "1.5× needs α ≥" in out
