"""CostPanel: measured α and f, seed 003's curve, sliders, best n, the measured point."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore  # noqa: E402

from specscope.app.cost_panel import ALPHA_DEFAULT, F_DEFAULT, CostPanel  # noqa: E402
from specscope.core.engine.events import RoundEvent  # noqa: E402
from specscope.core.measure.cost.model import (expected_accepted, fit_alpha, measure,  # noqa: E402
                                               textbook_speedup)
from specscope.core.measure.stats import Stats, fold  # noqa: E402


def spec_run(accepted: list[int], n: int = 4, *, t_draft_tok=0.005, t_verify=0.050,
             t_overhead=0.001) -> Stats:
    events = []
    for i, acc in enumerate(accepted):
        drafted = tuple(range(n))
        events.append(RoundEvent(i, 10 + i, 1, drafted, (0.5,) * n, acc, drafted[:acc] + (9,), "spec",
                                 t_draft=t_draft_tok * n, t_verify=t_verify,
                                 t_round=t_draft_tok * n + t_verify + t_overhead))
    return fold(events)


def baseline_run(n_tokens: int, t_token=0.040) -> Stats:
    return fold([RoundEvent(i, 10 + i, 1, (), (), 0, (9,), "baseline", t_verify=t_token,
                            t_round=t_token) for i in range(n_tokens)])


@pytest.fixture
def panel(qtbot):
    p = CostPanel()
    qtbot.addWidget(p)
    p.resize(500, 600)
    return p


# ---------------------------------------------------------------- pure measuring

@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.72, 0.95, 1.0])
def test_fit_alpha_inverts_the_model(alpha):
    n, rounds = 4, 1000
    drafted_at = [rounds] * n
    n_accept = rounds * expected_accepted(alpha, n)
    assert fit_alpha(drafted_at, n_accept) == pytest.approx(alpha, abs=1e-9)


def test_fit_alpha_is_not_the_acceptance_rate():
    stats = spec_run([4, 0, 2, 1, 3, 0, 4, 1])
    alpha = fit_alpha(stats.drafted_at, stats.n_accept)
    predicted = sum(d * alpha ** (k + 1) for k, d in enumerate(stats.drafted_at))
    assert predicted == pytest.approx(stats.n_accept)
    assert alpha > stats.acceptance_rate


def test_measure_f_from_baseline_and_without():
    spec = spec_run([2] * 10, n=4, t_draft_tok=0.004, t_verify=0.050)
    with_base = measure(spec, baseline_run(20, t_token=0.040), 4)
    assert with_base.target_from_baseline
    assert with_base.draft_s_per_token == pytest.approx(0.004)
    assert with_base.target_s_per_token == pytest.approx(0.040)
    assert with_base.f == pytest.approx(0.1)
    assert with_base.speedup == pytest.approx(spec.tokens_per_s / (1 / 0.040))
    assert with_base.verify_ratio == pytest.approx(0.050 / 0.040)
    # no baseline: target time per token = verify time per round
    alone = measure(spec, None, 4)
    assert not alone.target_from_baseline
    assert alone.target_s_per_token == pytest.approx(0.050)
    assert alone.f == pytest.approx(0.08)
    assert alone.speedup is None
    assert measure(fold([]), None, 4) is None


# ---------------------------------------------------------------- the widget

def test_best_n_on_plain_numbers(panel):
    # α = 0.8, f = 0.1: (1 + 4(1 − 0.8ⁿ)) / (1 + 0.1n) peaks at n = 6 with ≈ 2.4696
    panel.set_alpha(0.8)
    panel.set_f(0.1)
    assert panel.alpha == pytest.approx(0.8)
    assert panel.f == pytest.approx(0.1, abs=1e-3)
    n, s = panel.best_point()
    assert n == 6
    assert s == pytest.approx(textbook_speedup(0.8, 6, panel.f))
    assert s == pytest.approx(2.4696, abs=2e-3)
    x, y = panel.curve()
    np.testing.assert_allclose(x, range(1, 9))
    assert int(x[np.argmax(y)]) == 6
    assert "n = 6 (best)" in panel.summary_text()


def test_sliders_change_the_curve(panel, qtbot):
    before = panel.curve()[1].copy()
    panel._alpha_slider.setValue(500)  # as the user would
    after_alpha = panel.curve()[1].copy()
    assert panel.alpha == pytest.approx(0.5)
    assert not np.allclose(before, after_alpha)
    np.testing.assert_allclose(after_alpha, [textbook_speedup(0.5, n, panel.f) for n in range(1, 9)])
    panel._f_slider.setValue(700)
    assert panel.f == pytest.approx(0.49)
    after_f = panel.curve()[1]
    np.testing.assert_allclose(after_f, [textbook_speedup(0.5, n, 0.49) for n in range(1, 9)])
    assert "0.500" in panel._alpha_readout.text()
    assert "0.490" in panel._f_readout.text()


def test_f_slider_has_fine_steps_near_zero(panel):
    panel._f_slider.setValue(100)
    small = panel.f
    panel._f_slider.setValue(101)
    assert 0 < panel.f - small < 0.001
    panel._f_slider.setValue(panel._f_slider.maximum())
    assert panel.f == pytest.approx(1.0)


def test_sliders_start_at_measured_and_use_measured_resets(panel, qtbot):
    assert (panel.alpha, panel.f) == (ALPHA_DEFAULT, F_DEFAULT)
    spec = spec_run([4, 0, 2, 1, 3, 0, 4, 1] * 5)
    panel.update_measured(spec, baseline_run(40), 4)
    m = panel.measured
    assert panel.alpha == pytest.approx(m.alpha)
    assert panel.f == pytest.approx(m.f)
    # the user explores; later measurements no longer move the sliders
    panel._alpha_slider.setValue(300)
    panel.update_measured(spec, baseline_run(40), 4)
    assert panel.alpha == pytest.approx(0.3)
    # "Use measured" puts them back
    qtbot.mouseClick(panel._use_measured, QtCore.Qt.MouseButton.LeftButton)
    assert panel.alpha == pytest.approx(m.alpha)
    assert panel.f == pytest.approx(m.f)


def test_measured_point_only_with_a_baseline(panel):
    spec = spec_run([1, 2, 0, 3, 1] * 6)
    panel.update_measured(spec, None, 4)
    assert panel.measured_point() is None
    assert "Measured:" not in panel.summary_text()
    assert "verified; no baseline yet" in panel._values["target"].text()
    assert "understates f" in panel._values["target"].toolTip()
    assert "No baseline run" in panel._values["target"].toolTip()

    base = baseline_run(30)
    panel.update_measured(spec, base, 4)
    n, s = panel.measured_point()
    assert n == 4
    assert s == pytest.approx(spec.tokens_per_s / base.tokens_per_s)
    assert "Measured:" in panel.summary_text()
    assert "baseline run" in panel._values["target"].text()

    panel.clear()
    assert panel.measured_point() is None
    assert panel.measured is None
    assert (panel.alpha, panel.f) == (ALPHA_DEFAULT, F_DEFAULT)


def test_sentence_names_a_costly_verification(panel):
    # verifying 5 tokens costs 3× one target token: measured falls far below the model
    spec = spec_run([3, 4, 2, 4, 3] * 8, n=4, t_draft_tok=0.002, t_verify=0.120)
    panel.update_measured(spec, baseline_run(40, t_token=0.040), 4)
    m = panel.measured
    assert m.speedup < 0.8 * textbook_speedup(m.alpha, 4, m.f)
    text = panel.summary_text()
    # what was measured leads (issue 31: the textbook's best is not the headline), then the model
    assert text.startswith(f"Measured: {m.speedup:.2f}× at n = 4 (this run against its baseline)")
    assert f" At α = {panel.alpha:.2f} and f = {panel.f:.2f} the textbook model predicts" in text
    assert text.index("3.0× as long as one target token") < text.index("textbook model predicts")
    assert panel._best_label.toPlainText().startswith("textbook best: n = ")


def test_no_excuse_when_measured_matches(panel):
    # verifying costs what one target token costs: measured is close to the model
    spec = spec_run([3, 4, 2, 4, 3] * 8, n=4, t_draft_tok=0.002, t_verify=0.040, t_overhead=0.0)
    panel.update_measured(spec, baseline_run(40, t_token=0.040), 4)
    text = panel.summary_text()
    assert "Measured:" in text
    assert "—" not in text


def test_curve_extends_to_a_long_n_max(panel):
    panel.update_measured(spec_run([5, 2, 10, 0] * 5, n=12), baseline_run(20), 12)
    x, _ = panel.curve()
    assert x[-1] == 12
    assert panel.measured_point()[0] == 12


def test_n_max_line_is_labelled_from_the_first_measurement(panel):
    panel.update_measured(spec_run([2, 1, 3] * 5, n=6), None, 6)
    assert panel._nmax_line.isVisible()
    assert panel._nmax_line.label.toPlainText() == "n_max = 6"
    panel.clear()
    assert not panel._nmax_line.isVisible()
    assert "Nothing measured yet" in panel.summary_text()


def test_sentence_doubts_a_slow_baseline(panel):
    spec = spec_run([1, 0, 2] * 10, n=4, t_draft_tok=0.002, t_verify=0.040, t_overhead=0.0)
    panel.update_measured(spec, baseline_run(30, t_token=0.400), 4)  # a baseline 10× too slow
    assert "baseline run was probably slowed" in panel.summary_text()


def test_wide_and_tall_arrangements(panel, qtbot):
    panel.show()
    panel.resize(1000, 480)
    qtbot.waitUntil(lambda: panel._chart.geometry().left() > panel._box.geometry().right())  # beside
    assert panel._wide is True
    panel.resize(500, 650)
    qtbot.waitUntil(lambda: panel._chart.geometry().top() > panel._box.geometry().bottom())  # below
    assert panel._wide is False


def test_sentence_names_the_baselines_per_token_overhead(panel):
    spec = spec_run([1, 0, 2] * 10, n=4, t_draft_tok=0.002, t_verify=0.040, t_overhead=0.0)
    slow_glue = fold([RoundEvent(i, 10 + i, 1, (), (), 0, (9,), "baseline", t_verify=0.040,
                                 t_round=0.120) for i in range(30)])   # 2/3 outside llama.cpp
    panel.update_measured(spec, slow_glue, 4)
    assert "67% of its time outside llama.cpp" in panel.summary_text()


def test_break_even_label_sits_where_the_curve_is_away(panel):
    panel.set_alpha(0.9)
    panel.set_f(0.01)     # rising: n = 8 is far above 1 -> label at the right end
    assert panel._break_even.label.orthoPos == pytest.approx(0.98)
    panel.set_alpha(0.6)
    panel.set_f(0.15)     # 1.39× at n = 1, 1.13× at n = 8 -> label at the left end
    assert panel._break_even.label.orthoPos == pytest.approx(0.02)


def test_the_calibrations_standing_is_one_line_loud_under_load(panel, tmp_path):
    from specscope.core.measure.cost.model import Calibration
    from specscope.core.measure.cpuload import LoadReading
    quiet_load = LoadReading(others=0.02, cores=2, seconds=5.0, loadavg=(0.3, 0.3, 0.3)).to_dict()
    cal = Calibration(k_max=3, n_past=64, t1=1e-3, c_raw=(1.0, 1.2, 1.4), c=(1.0, 1.2, 1.4), f=0.2,
                      f_batch=(0.2, 0.3, 0.4), load=quiet_load, check_t=1e-3)
    assert panel.calibration_text() == ""                      # nothing calibrated yet
    panel.show()
    panel.set_calibration("draft.gguf", cal, from_cache=True)
    text = panel.calibration_text()
    assert text.startswith("Calibration of draft.gguf: cached") and "2% of the CPU" in text
    assert "⚠" not in text
    busy = Calibration(**{**cal.__dict__, "under_load": True,
                          "load": {**quiet_load, "others": 0.8}})
    panel.set_calibration("draft.gguf", busy, from_cache=False)
    text = panel.calibration_text()
    assert text.startswith("⚠ Calibration of draft.gguf: TAKEN UNDER LOAD") and "not cached" in text
    panel.resize(900, 500)                                     # the wide arrangement keeps it
    panel.grab().save(str(tmp_path / "cost_panel_under_load.png"))
    assert panel.calibration_text() == text
    panel.set_calibration("", None, from_cache=False)
    assert panel.calibration_text() == ""


def test_the_calibrated_curve_follows_alpha_and_covers_what_was_timed(panel):
    from specscope.core.measure.cost.model import Calibration, calibrated_speedup
    c = (1.0, 1.8, 2.1, 2.3, 2.5)                   # timed up to k = 5: n = 1..4
    cal = Calibration(k_max=5, n_past=64, t1=1e-3, c_raw=c, c=c, f=0.2, f_batch=(0.25,) * 5,
                      s=0.01, o_base=0.02, o0=0.1, o1=0.05, b=0.7, k_draft=5)
    assert panel.calibrated_curve()[0].size == 0
    panel.set_alpha(0.7)
    # the curves are named under the plot (a legend in it covered the n_max line's label),
    # the calibrated one once it is drawn
    assert "textbook" in panel._key.text() and "calibrated" not in panel._key.text()
    assert panel._plot.getPlotItem().legend is None
    panel.show_calibrated(cal, "reuse")
    panel.set_alpha(0.8)
    assert "calibrated on this machine" in panel._key.text()
    x, y = panel.calibrated_curve()
    assert list(x) == [1, 2, 3, 4]
    assert y == pytest.approx([calibrated_speedup(cal, n, alpha=0.8) for n in (1, 2, 3, 4)])
    best = int(x[np.argmax(y)])
    assert f"{y.max():.2f}× at n = {best} (best)" in panel.summary_text()
    assert "Calibrated on this machine" in panel.summary_text()
    panel.set_alpha(0.3)                             # the curve moves with the slider
    assert panel.calibrated_curve()[1][0] == pytest.approx(calibrated_speedup(cal, 1, alpha=0.3))
    panel.show_calibrated(None)
    assert panel.calibrated_curve()[0].size == 0 and "Calibrated" not in panel.summary_text()
    assert "calibrated" not in panel._key.text()
