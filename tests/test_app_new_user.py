"""What a new user hit in ten minutes (issue 31, item 7), each where a test can see it."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from helpers.window import run_and_wait  # noqa: E402


def test_changing_the_target_says_what_happened_to_the_run_shown(qtbot, window, pair, tiny_models):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    assert w.controller.session is not None
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(tiny_models["target"], tiny_models["draft"])
    assert w.controller.session is None
    assert w.banner.isVisible() and "the run shown was cleared" in w.banner.message
    assert "last-session.jsonl" in w.banner.message
    assert not w.stats_bar.values["state"].full.startswith("Recording")


def test_after_opening_a_recording_another_pair_closes_it_and_says_so(qtbot, window, tiny_models, tmp_path):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    path = tmp_path / "run.jsonl"
    w.controller.session.save(path)
    assert w.files.open_session(path)
    assert w.stats_bar.values["state"].full.startswith("Recording")
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(tiny_models["target"], tiny_models["draft"])
    assert "the recording run.jsonl was closed" in w.banner.message
    assert w.stats_bar.values["state"].full == "Idle"
    assert w.width() <= 1440            # opening it did not widen the window
