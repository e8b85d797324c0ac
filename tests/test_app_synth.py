"""Synthetic acceptance in the window: the drafter box offers it with sliders and a warning,
a synthetic run is marked over the text and in the stats bar, and the cost panel measures
speed-up against acceptance on the real demo pair and draws it beside both predictions."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from specscope.app.drafter_panel import DrafterPanel  # noqa: E402

from helpers.window import RUN_TIMEOUT_MS, open_window, run_and_wait  # noqa: E402


def test_the_drafter_box_offers_synthetic_acceptance_with_a_warning(qtbot):
    p = DrafterPanel()
    qtbot.addWidget(p)
    p.show()
    assert not p.synth.isChecked() and p.spec_settings().synth_len == -1.0
    assert not p.synth.warning.isVisible()
    p.synth.setChecked(True)
    assert p.synth.warning.isVisible() and "NOT valid output" in p.synth.warning.text()
    p.synth.length.setValue(150)                        # L = 2.5 with n_max 3
    spec = p.spec_settings()
    assert spec.synth_len == 2.5 and spec.synthetic and p.problem() == ""
    assert "α = 0.69" in p.synth.length_readout.text()
    p.n_max.setValue(2)                                  # L is kept within [1, n_max + 1]
    assert p.spec_settings().synth_len == 2.5
    p.n_max.setValue(1)
    assert p.spec_settings().synth_len == 2.0
    p.n_max.setValue(3)
    p.synth.mode.setCurrentIndex(1)                       # per-position rates
    assert sum(s.isVisible() for s in p.synth.rates) == 3
    p.synth.rates[1].setValue(100)                        # 0.8, 1.0, 0.51: increasing
    assert p.problem() == "synthetic acceptance rates must be monotonically non-increasing"
    p.synth.rates[1].setValue(60)
    assert p.spec_settings().synth_rates == (0.8, 0.6, 0.51) and p.problem() == ""
    assert "synth" not in str(p.to_dict())                # never restored into a new session


def test_a_synthetic_run_is_marked_and_the_cost_panel_measures_the_curve(qtbot, pair, settings):
    w = open_window(qtbot, pair, settings)
    try:
        w.params.n_predict.setValue(12)
        w.params.n_ctx.setValue(256)
        w.prompt.set_text("def add(a, b):\n    ")
        w.params.drafter.synth.setChecked(True)
        finish = run_and_wait(qtbot, w, w.run_clicked)
        assert finish == "n_predict"
        assert all(ev.synthetic for ev in w.shown.events)
        assert w.synth_warning.isVisible() and w.stats_bar.synthetic.isVisible()
        w.params.drafter.synth.setChecked(False)
        run_and_wait(qtbot, w, w.run_clicked)
        assert not w.synth_warning.isVisible() and not w.stats_bar.synthetic.isVisible()

        view = w.synth_view
        s = w.synth_view.source()
        assert s.n_values == (3,) and s.drafts == (pair[1],)
        from dataclasses import replace
        s = replace(s, n_predict=8, calibration_s=0.2, use_cache=False)
        from specscope.app.task import EngineTask
        assert isinstance(view.task, EngineTask)       # in the window's engine: no second copy
        engine = w.worker.engine
        with qtbot.waitSignal(view.measured, timeout=4 * RUN_TIMEOUT_MS) as blocker:
            view.start(s)
            assert view.running and not view.measure.isEnabled()
        curve = blocker.args[0]
        assert [round(p.synth_len, 2) for p in curve.points] == [1.0, 1.6, 2.2, 2.8, 3.4, 4.0]
        assert curve.points[0].row.acceptance == 0.0 and curve.points[-1].row.acceptance == 1.0
        xs, ys = view.points.getData()
        assert list(ys) == [p.row.measured_speedup for p in curve.points]
        tx, ty = view.textbook_line.getData()
        assert ty[-1] == pytest.approx(curve.textbook(1.0)) and ty[0] == pytest.approx(curve.textbook(0.0))
        cx, cy = view.calibrated_line.getData()
        assert cy[-1] == pytest.approx(curve.calibrated(1.0))
        assert "measured" in view.table.text() and view.measure.isEnabled() and not view.running
        assert w.worker.engine is engine and run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    finally:
        w.close()
