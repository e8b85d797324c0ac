"""The What-if tab (app/whatif_panel.py): after a greedy run on the demo pair (real llama.cpp),
the tab shows the run's acceptance curve beside the setting chosen; every slider move shows
exactly what the core's replays give for that setting (core/measure/whatif/ngram.py,
core/measure/whatif/draft.py), and an n-gram what-if is what the engine then really runs, round
for round; with a calibration the bars under the hindsight ceiling are those settings' prices; a
sampled run says the what-ifs are exact for greedy only and offers the synthetic estimate."""

import time
from dataclasses import replace

import pytest

from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.engine import SpecSettings
from specscope.core.cache import file_id
from specscope.core.measure.cost.cache import CALIBRATION_VERSION, save_cached, this_machine
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.whatif.ngram import whatif
from specscope.core.measure.whatif.draft import draft_whatif, hindsight

from helpers.window import RUN_TIMEOUT_MS, for_short_runs, open_window, run_and_wait

CODE = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\n"
# verification costs 1 + 0.4 per extra token, a draft token 0.1: the cost policy moves its n
COSTS = tuple(1 + 0.4 * i for i in range(10))
CAL = Calibration(k_max=10, n_past=64, t1=1e-3, c_raw=COSTS, c=COSTS, f=0.1, f_batch=(0.1,) * 10, b=1.0)


@pytest.fixture
def window(qtbot, pair, settings, monkeypatch, tmp_path):
    """The window on the demo pair, 64 greedy tokens after a prompt that repeats itself; a cache
    of its own (no calibration of the pair that other tests cached)."""
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    w = for_short_runs(open_window(qtbot, pair, settings), n_predict=64, prompt=CODE)
    yield w
    w.close()


def show_whatifs(qtbot, w):
    """The What-if tab shown; the draft's pass over the run done."""
    panel = w.whatif
    with qtbot.waitSignal(panel.traced, timeout=RUN_TIMEOUT_MS):
        w.tabs.setCurrentWidget(panel)
    assert panel.whatifs.trace is not None, panel.shown()["trace"]
    return panel


def same(a, b) -> bool:
    return list(a) == pytest.approx(list(b), abs=1e-12)


def test_a_greedy_run_shows_its_curve_and_each_slider_move_is_the_core_s_replay(qtbot, window):
    w = window
    w.params.drafter.set_types(["draft-simple"])
    w.params.n_max.setValue(3)
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    panel = show_whatifs(qtbot, w)
    run = w.controller.session.run
    wi = panel.whatifs
    assert wi.cont == tuple(run.tokens)
    shown = panel.shown()
    assert shown["message"] == ""
    assert same(shown["curves"]["measured"], run.stats.position_acceptance)
    # the tab starts at the run's own setting: draft-simple, n_max 3
    assert panel.spec().types == ("draft-simple",) and panel.spec().n_max == 3
    assert shown["curves"]["whatif"]
    for n in (1, 6, 8):
        panel.controls.knobs["n_max"].slider.setValue(n)
        expected = draft_whatif(wi.trace, replace(panel.spec(), n_max=n), n_ctx=wi.n_ctx,
                                n_predict=wi.n_predict)
        assert panel.current.stats.position_acceptance == expected.stats.position_acceptance
        assert same(panel.shown()["curves"]["whatif"], expected.stats.position_acceptance)
        assert len(panel.shown()["curves"]["whatif"]) == n
        assert f"{expected.tokens_per_round:.2f}" in panel.shown()["readout"]
    panel.controls.knobs["p_min"].slider.setValue(10)                  # p_min 0.5
    expected = draft_whatif(wi.trace, replace(panel.spec(), n_max=8, p_min=0.5), n_ctx=wi.n_ctx,
                            n_predict=wi.n_predict)
    assert panel.spec().p_min == 0.5
    assert same(panel.shown()["curves"]["whatif"], expected.stats.position_acceptance)
    # no calibration: the tab says which figure to compare
    assert "tokens per round" in panel.shown()["calibration"]
    assert "no calibration" in panel.shown()["readout"]
    # draft-simple after ngram-simple: a chain, both types' sliders shown, the core's replay
    panel.controls.knobs["p_min"].slider.setValue(0)
    panel.controls.checks["ngram-simple"].setChecked(True)
    panel.controls.knobs["ngram-simple n"].slider.setValue(2)
    panel.controls.knobs["ngram-simple m"].slider.setValue(8)
    spec = panel.spec()
    assert spec.types == ("ngram-simple", "draft-simple") and panel.controls.checks["draft-simple"].isChecked()
    assert panel.controls.knobs["ngram-simple n"].slider.isVisible() and \
        panel.controls.knobs["n_max"].slider.isVisible()
    expected = draft_whatif(wi.trace, spec, n_ctx=wi.n_ctx, n_predict=wi.n_predict)
    rounds = lambda w: [(r.drafter, r.draft, r.accepted, r.emitted) for r in w.rounds]
    assert rounds(panel.current) == rounds(expected) and panel.shown()["message"] == ""
    assert {r.drafter for r in expected.rounds} >= {"ngram-simple", "draft-simple"}
    assert same(panel.shown()["curves"]["whatif"], expected.stats.position_acceptance)


def test_an_ngram_what_if_is_what_the_engine_then_runs_round_for_round(qtbot, window):
    w = window
    w.params.drafter.set_types(["ngram-simple"])
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    panel = w.whatif
    w.tabs.setCurrentWidget(panel)
    qtbot.waitUntil(lambda: panel.current is not None, timeout=RUN_TIMEOUT_MS)
    session, wi = w.controller.session, panel.whatifs
    # the run's own setting, replayed, is the run
    own = panel.current
    assert [(len(r.draft), r.accepted, r.emitted) for r in own.rounds] == \
        [(len(e.drafted), e.n_accepted, e.emitted) for e in session.run.events]
    # another type and its sizes, by the pickers and sliders
    panel.controls.checks["ngram-map-k"].setChecked(True)
    panel.controls.checks["ngram-simple"].setChecked(False)
    panel.controls.knobs["ngram-map-k n"].slider.setValue(2)
    panel.controls.knobs["ngram-map-k m"].slider.setValue(8)
    spec = panel.spec()
    assert spec.types == ("ngram-map-k",) and spec.params("ngram-map-k") == NgramMapParams(2, 8)
    what = panel.current
    core = whatif(spec, wi.prompt, wi.cont, n_ctx=wi.n_ctx, n_predict=wi.n_predict)
    assert what.stats.position_acceptance == core.stats.position_acceptance
    assert same(panel.shown()["curves"]["whatif"], core.stats.position_acceptance)
    assert what.stats.n_accept > 0
    # the engine runs that setting: the same rounds
    d = w.params.drafter
    d.set_types(["ngram-map-k"])
    d.knobs["ngram-map-k.size_n"].setValue(2)
    d.knobs["ngram-map-k.size_m"].setValue(8)
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    real = w.controller.session.run
    assert real.tokens == list(wi.cont)
    assert [(len(r.draft), r.accepted, r.emitted) for r in what.rounds] == \
        [(len(e.drafted), e.n_accepted, e.emitted) for e in real.events]


def test_with_a_calibration_the_ceiling_bars_are_the_settings_prices(qtbot, window):
    w = window
    w.params.drafter.set_types(["draft-simple"])
    assert run_and_wait(qtbot, w, w.baseline_clicked) in ("n_predict", "eog")
    panel = show_whatifs(qtbot, w)
    assert panel.spec().types == ("draft-simple",)          # a baseline run: draft-simple to start
    assert panel.shown()["ceiling"]["ceiling"] is None and panel.ceiling is None
    panel.set_calibration(CAL)
    wi = panel.whatifs
    bars = panel.shown()["ceiling"]
    assert bars["labels"][:8] == [f"n={n}" for n in range(1, 9)]
    assert bars["labels"][8:10] == ["hf n≤8", "cost n≤8"] and bars["labels"][10].startswith("best p_min")
    for n in (1, 4, 8):
        expected = draft_whatif(wi.trace, SpecSettings(types=("draft-simple",), n_max=n),
                                n_ctx=wi.n_ctx, n_predict=wi.n_predict, cal=wi.draft_cal)
        assert bars["heights"][n - 1] == pytest.approx(expected.predicted)
    top = hindsight(wi.trace, wi.draft_cal, n_ctx=wi.n_ctx, n_predict=wi.n_predict)
    assert bars["ceiling"] == pytest.approx(top.speedup)
    assert all(h <= top.speedup + 1e-9 for h in bars["heights"])
    panel.controls.knobs["n_max"].slider.setValue(4)
    panel.controls.knobs["p_min"].slider.setValue(0)
    assert panel.shown()["ceiling"]["chosen"] == [pytest.approx(bars["heights"][3])]
    assert f"{panel.current.predicted:.2f}× predicted" in panel.shown()["readout"]
    assert "calibration" in panel.shown()["calibration"]


def test_a_calibration_of_the_pair_cached_by_bench_or_advise_prices_the_what_ifs(qtbot, window, pair):
    """No calibration in the window, but one of this very pair on disk (as `specscope bench` or
    `advise` leave it): the tab prices with it at once and says where it came from; one of the
    target alone prices the n-gram types, never a draft-simple run."""
    w = window
    w.params.drafter.set_types(["draft-simple"])
    w.params.n_max.setValue(3)
    target, draft, _ = pair
    alone = replace(CAL, key="alone", created=time.time(), version=CALIBRATION_VERSION,
                    describe={"target": file_id(target), "draft": None, "machine": this_machine()})
    save_cached(alone)
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    panel = show_whatifs(qtbot, w)
    assert panel.whatifs.cal is None and "No calibration of this pair" in panel.shown()["calibration"]
    # the target alone's prices the n-gram types (as bench does), not draft-simple
    assert panel.whatifs.alone.key == "alone" and "n-gram types are priced" in panel.shown()["calibration"]
    assert panel.whatifs.evaluate(SpecSettings(types=("ngram-simple",))).predicted is not None
    assert panel.current.predicted is None                                # draft-simple: unpriced
    mine = replace(alone, key="pair", describe={**alone.describe, "draft": file_id(draft)},
                   created=time.time() - 600)
    save_cached(mine)
    with qtbot.waitSignal(panel.traced, timeout=RUN_TIMEOUT_MS):
        panel.refresh(force=True)                   # the run taken again, as opening it does
    assert panel.whatifs.cal is not None and panel.whatifs.cal.key == "pair"
    assert "cached on this machine 10 min ago" in panel.shown()["calibration"]
    expected = draft_whatif(panel.whatifs.trace, panel.spec(), n_ctx=panel.whatifs.n_ctx,
                            n_predict=panel.whatifs.n_predict, cal=panel.whatifs.draft_cal)
    assert f"{expected.predicted:.2f}× predicted" in panel.shown()["readout"]


def test_a_sampled_run_says_what_ifs_are_exact_for_greedy_only(qtbot, window):
    w = window
    w.params.drafter.set_types(["draft-simple"])
    w.params.sampler.setCurrentIndex(w.params.sampler.findData("temperature"))
    w.params.n_predict.setValue(16)
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    panel = w.whatif
    w.tabs.setCurrentWidget(panel)
    message = panel.shown()["message"]
    assert "exact for greedy runs only" in message and "0.8" in message
    assert panel.synth_button.isVisible() and not panel.body.isVisible()
    panel.synth_button.click()
    assert w.tabs.currentWidget() is w.cost_tab


@pytest.mark.parametrize("case", ["head", "foreign vocabulary"])
def test_a_run_whose_own_drafter_cannot_be_replayed_says_why_in_one_line(qtbot, pair, settings, case):
    from specscope.core.models.demo import demo_eagle3_head
    draft, types = (demo_eagle3_head(), ["draft-eagle3"]) if case == "head" else (pair[2], ["draft-simple"])
    w = for_short_runs(open_window(qtbot, (pair[0], draft), settings), n_predict=32, prompt=CODE)
    try:
        w.params.drafter.set_types(types)
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        assert w.banner.level != "error", w.banner.message
        panel = w.whatif
        with qtbot.waitSignal(panel.traced, timeout=RUN_TIMEOUT_MS):
            w.tabs.setCurrentWidget(panel)
        message, trace = panel.shown()["message"], panel.shown()["trace"]
        if case == "head":
            assert "draft-eagle3 drafts with an EAGLE-3 head" in message and "cannot be replayed" in message
            assert "is a head, not a draft model" in trace
        else:
            assert "drafted across vocabularies (translate)" in message
            assert "another vocabulary than the target" in trace
        assert "\n" not in message and "\n" not in trace
        # the n-gram what-ifs are still exact: the tab starts on one
        assert panel.spec().types == ("ngram-simple",) and panel.current is not None
        wi = panel.whatifs
        assert panel.current.stats.position_acceptance == whatif(
            panel.spec(), wi.prompt, wi.cont, n_ctx=wi.n_ctx, n_predict=wi.n_predict).stats.position_acceptance
    finally:
        w.close()
