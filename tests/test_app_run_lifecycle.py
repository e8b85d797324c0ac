"""The run lifecycle in the window, as a first-time user meets it (issue 20, section 2): the
rejected-drafts toggle, the error banner's details, a baseline measured beside the run being
studied, a stale baseline, and what switching the pair or opening a session leaves shown."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtGui import QAction  # noqa: E402
from PySide6.QtWidgets import QCheckBox, QFileDialog  # noqa: E402

from specscope.core.session.session import Session  # noqa: E402

from helpers.window import run_and_wait  # noqa: E402


def shown(w) -> dict:
    """What the views hold: the text, the plots, the timeline and the round explained."""
    w.tabs.setCurrentWidget(w.plots)
    plots = w.plots.shown()
    w.tabs.setCurrentWidget(w.timeline)
    timeline = w.timeline.spans["end"].tolist()
    w.tabs.setCurrentWidget(w.round_view)
    return {"text": w.token_view.full_text(), "events": len(w.shown.events),
            "spans": [(s.kind, s.token, s.round) for s in w.token_view.spans],
            "accepted_length": plots["accepted_length"]["height"].tolist(),
            "acceptance": plots["acceptance"]["height"].tolist(),
            "timeline": timeline, "round": w.round_view.shown_event}


# ---------------------------------------------------------------------------- item 1
def test_the_menu_toggle_and_the_checkbox_are_one_state(qtbot, window):
    act, box = window.act_hide, window.show_rejected
    assert act.isCheckable() and act.isChecked() and box.isChecked()
    act.trigger()                                 # Ctrl+H and Run ▸ Show rejected drafts
    assert not act.isChecked() and not box.isChecked()
    assert not window.token_view.show_rejected
    box.click()                                   # the checkbox above the text
    assert act.isChecked() and box.isChecked() and window.token_view.show_rejected
    act.trigger()
    act.trigger()
    assert act.isChecked() and box.isChecked() and window.token_view.show_rejected


def test_an_unexpected_exception_shows_its_traceback_behind_details(qtbot, window):
    from specscope.app.errors import report_uncaught
    hook = report_uncaught(window.banner)
    try:
        def helper_that_fails():
            raise ValueError("a slot failed")

        def failing_slot():
            helper_that_fails()

        QTimer.singleShot(0, failing_slot)
        qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=5_000)
        details = window.banner.details
        assert "Traceback" in details and "ValueError: a slot failed" in details
        assert "in failing_slot" in details and "in helper_that_fails" in details
        window.banner.dismiss()

        # Qt itself raises calling a slot with the wrong arguments (the Ctrl+H bug): no Python
        # frame raised, the details still show the Python stack that led to it
        action, box = QAction(window), QCheckBox()
        action.triggered.connect(box.setChecked)
        action.trigger()
        qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=5_000)
        details = window.banner.details
        assert "TypeError" in details and "setChecked" in details
        assert "Traceback" in details
        assert "in test_an_unexpected_exception_shows_its_traceback_behind_details" in details
    finally:
        hook.uninstall()


# ---------------------------------------------------------------------------- item 2
def test_a_baseline_runs_beside_the_run_being_studied(qtbot, window, tmp_path, monkeypatch):
    for role in ("target", "draft"):     # pinned: on threads auto a tiny model's baseline (single
        window.pair_panel.threads[role].setValue(1)   # tokens) may rightly run on another count
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")  # (stale)
    before = shown(window)
    assert before["events"] and window.stats_bar.text("speedup").startswith("–")
    assert run_and_wait(qtbot, window, window.baseline_clicked) in ("n_predict", "eog")
    assert shown(window) == before                           # the views keep the spec run
    assert window.controller.session.kind == "spec" and window.controller.session.baseline is not None
    assert window.stats_bar.text("speedup").endswith("×"), \
        window.controller.session.baseline_check().describe()   # the measured speed-up
    assert window.stats_bar.text("n_drafted") != "–"
    window.tabs.setCurrentWidget(window.cost_panel.parentWidget().parentWidget())
    assert window.cost_panel.measured.speedup == pytest.approx(window.controller.session.speedup)

    saved = tmp_path / "both.jsonl"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **kw: (str(saved), ""))
    window.files.save_session_dialog()
    again = Session.load(saved)
    assert again.spec is not None and again.baseline is not None
    assert again.speedup == pytest.approx(window.controller.session.speedup)
    auto = Session.load(window.files.autosave_path)                # the autosave keeps both too
    assert auto.spec is not None and auto.baseline is not None


# ---------------------------------------------------------------------------- item 3
def test_a_stale_baseline_is_marked_and_measured_again_in_one_click(qtbot, window):
    assert run_and_wait(qtbot, window, window.baseline_clicked) in ("n_predict", "eog")
    # no speculative run to measure it beside: the baseline itself is shown
    assert window.shown.events and all(e.mode == "baseline" for e in window.shown.events)
    base = window.controller.session.baseline
    base.started_at -= 900                      # as if it had been measured 15 minutes ago
    base.ended_at -= 900
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    bar = window.stats_bar
    assert "stale" in bar.text("speedup")
    assert "15 min" in bar.values["speedup"].toolTip()
    assert bar.remeasure_button.isVisibleTo(bar)
    window.tabs.setCurrentWidget(window.cost_panel.parentWidget().parentWidget())
    assert "stale" in window.cost_panel.baseline_text()
    assert not window.cost_panel.measured.target_from_baseline     # f is not taken from it
    before = shown(window)
    assert run_and_wait(qtbot, window, bar.remeasure_button.click) in ("n_predict", "eog")
    assert shown(window) == before
    assert window.controller.session.baseline is not base
    assert "stale" not in bar.text("speedup") and bar.text("speedup").endswith("×")
    assert not bar.remeasure_button.isVisibleTo(bar)
    assert "before the run" in bar.values["speedup"].toolTip() or \
        "after the run" in bar.values["speedup"].toolTip()
    window.tabs.setCurrentWidget(window.cost_panel.parentWidget().parentWidget())
    assert window.cost_panel.measured.target_from_baseline
    assert "stale" not in window.cost_panel.baseline_text()


# ---------------------------------------------------------------------------- item 6
def test_switching_the_pair_clears_the_views_and_rerun(qtbot, window, pair):
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert window.files.open_session(window.files.autosave_path)        # a recording whose models are here
    assert window.act_rerun.isEnabled() and window.token_view.spans
    window.pair_panel.set_pair(Path(pair[0]), Path(pair[2]))    # another pair
    assert not window.act_rerun.isEnabled()
    assert window.token_view.full_text() == "" and not window.token_view.spans
    assert window.shown.events == [] and window.stats_bar.text("tokens") == "–"
    empty = shown(window)
    assert sum(empty["accepted_length"]) == 0 and empty["timeline"] == [] and empty["round"] is None


def test_opening_a_session_sets_the_controls_to_the_recordings(qtbot, window):
    window.params.n_max.setValue(3)
    window.params.n_predict.setValue(20)
    window.prompt.set_text("def mul(a, b):\n    ")
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    recorded = Session.load(window.files.autosave_path)
    window.params.n_max.setValue(1)
    window.params.n_predict.setValue(7)
    window.params.drafter.set_types(["ngram-simple"])
    window.prompt.set_text("something else")
    assert window.files.open_session(window.files.autosave_path)
    assert window.params.n_max.value() == 3
    assert window.params.spec_settings() == recorded.settings.spec
    assert window.params.sampler_settings() == recorded.settings.sampler
    assert window.params.n_predict.value() == 20
    assert window.prompt.text() == "def mul(a, b):\n    "


def test_reset_during_a_run_stops_it_and_shows_nothing(qtbot, window):
    window.params.n_predict.setValue(100_000)
    window.params.n_ctx.setValue(4096)
    window.run_clicked()
    qtbot.waitUntil(lambda: len(window.shown.events) >= 2, timeout=120_000)
    with qtbot.waitSignal(window.run_done, timeout=30_000) as done:
        window.reset_clicked()
        assert window.controller.session is None and window.token_view.full_text() == ""
    assert done.args[1] == "stopped" and not window.controller.busy
    assert window.controller.session is None and window.shown.events == []
    assert window.token_view.full_text() == "" and window.stats_bar.text("tokens") == "–"
    assert window.stats_bar.text("state").startswith("Finished: stopped")
    window.params.n_predict.setValue(8)
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
