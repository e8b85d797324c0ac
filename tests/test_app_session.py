"""Sessions in the window: a live run recorded (menu and autosave), opened in a fresh window
with its models moved away, bad files, drag and drop, and re-running a recording."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402
from PySide6.QtWidgets import QFileDialog  # noqa: E402

from specscope.core.models.demo import demo_pair  # noqa: E402
from specscope.core.engine.events import RoundEvent  # noqa: E402
from specscope.core.session.controller import rerun_verdict  # noqa: E402
from specscope.core.session.session import RunRecord, Session  # noqa: E402

from helpers.window import make_window, run_and_wait  # noqa: E402

STATS_KEYS = ("tokens", "n_drafted", "n_accept", "acceptance", "mean_len", "tps", "speedup")


@pytest.fixture
def models(tmp_path):
    """A copy of the demo pair in a folder the test can rename away and back."""
    d = tmp_path / "models"
    d.mkdir()
    return d, tuple(Path(shutil.copy(p, d / p.name)) for p in demo_pair())


def views(w) -> dict:
    """What the window shows of the run: stats bar, text, token kinds, plots, cost panel."""
    w.tabs.setCurrentWidget(w.round_view)
    explained = w.round_view.shown_event
    w.tabs.setCurrentWidget(w.cost_panel.parentWidget().parentWidget())
    measured = w.cost_panel.measured
    w.tabs.setCurrentWidget(w.plots)
    plots = w.plots.shown()
    return {"stats": {k: w.stats_bar.text(k) for k in STATS_KEYS},
            "tokens_per_s": w.shown.stats.tokens_per_s, "text": w.token_view.full_text(),
            "spans": [(s.kind, s.token, s.round) for s in w.token_view.spans],
            "explained": explained, "measured": measured,
            "accepted_length": plots["accepted_length"]["height"].tolist(),
            "acceptance": plots["acceptance"]["height"].tolist()}


def drop(w, path: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    w.dropEvent(QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime,
                           Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))


def test_a_recorded_run_replays_in_a_fresh_window_without_its_models(qtbot, tmp_path, models, monkeypatch):
    folder, pair = models
    w = make_window(qtbot, tmp_path, pair)
    w.params.n_predict.setValue(40)
    w.params.n_ctx.setValue(512)
    w.prompt.set_text("def add(a, b):\n    ")
    try:
        assert run_and_wait(qtbot, w, w.baseline_clicked) in ("n_predict", "eog")
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        live = views(w)
        assert live["stats"]["speedup"].endswith("×")          # the baseline was paired
        saved = tmp_path / "saved.jsonl"
        monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **kw: (str(saved), ""))
        w.files.save_session_dialog()
        assert saved.is_file()
        auto = Session.load(w.files.autosave_path)                     # the autosave of the last run
        assert auto.spec.stats == w.shown.stats and auto.baseline is not None
    finally:
        w.close()
    folder.rename(tmp_path / "moved")                            # no model where it was recorded

    # the CLI replays the window's recording, with the same statistics
    import json
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "specscope.core.cli.main", "replay", str(saved),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["stats"] == json.loads(json.dumps(Session.load(saved).spec.stats.to_dict()))
    assert doc["stats"]["n_tokens"] == w.shown.stats.n_tokens and doc["speedup"] == auto.speedup

    f = make_window(qtbot, tmp_path, name="b", preload=False)
    try:
        assert f.files.open_session(saved)
        shown = views(f)
        assert shown == live
        assert f.shown.stats == Session.load(saved).spec.stats
        assert "not present" in f.pair_panel.load_label.text()
        assert not f.act_rerun.isEnabled()
        assert f.controller.stats_document()["speedup"] == auto.speedup

        # a bad file: one banner line naming it and the line; what was shown stays
        bad = tmp_path / "bad.jsonl"
        bad.write_text(saved.read_text().splitlines()[0] + "\n{\"run\": \"spec\", \"ev\n")
        assert not f.files.open_session(bad)
        assert f.banner.level == "error"
        assert f"{bad}, line 2" in f.banner.message and "\n" not in f.banner.message
        assert views(f) == live
        assert f.files.open_session(saved)             # a good one: the error was not about it
        assert not f.banner.isVisible()

        # drag and drop opens a session too
        f.reset_clicked()
        assert f.token_view.full_text() == ""
        drop(f, saved)
        assert views(f) == live
    finally:
        f.close()


def test_a_recording_whose_models_are_back_reruns_and_says_it_matched(qtbot, tmp_path, models):
    folder, pair = models
    w = make_window(qtbot, tmp_path, pair)
    w.params.n_predict.setValue(32)
    w.params.n_ctx.setValue(512)
    w.pair_panel.set_engine_kwargs({"target_threads": 1, "draft_threads": 1})
    try:
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        recorded = Session.load(w.files.autosave_path)
        w.reset_clicked()
        assert w.files.open_session(w.files.autosave_path)
        assert "models are present" in w.pair_panel.load_label.text()
        assert w.act_rerun.isEnabled()
        assert run_and_wait(qtbot, w, w.rerun_clicked) in ("n_predict", "eog")
        ok, sentence = w.controller.rerun_result
        assert ok, sentence
        assert "matched" in w.banner.message
        assert w.controller.session.run.tokens == recorded.run.tokens
    finally:
        w.close()


def ev(i, drafted, n_acc, emitted):
    return RoundEvent(i, 10 + i, 1, tuple(drafted), (0.5,) * len(drafted), n_acc, tuple(emitted), "spec")


def run_of(*events) -> RunRecord:
    r = RunRecord("spec")
    r.append(events)
    return r


def test_the_rerun_verdict_names_where_a_rerun_parted():
    a = run_of(ev(0, [5, 6], 2, [5, 6, 7]), ev(1, [8], 0, [9]))
    assert rerun_verdict(a, run_of(*a.events))[0]
    ok, words = rerun_verdict(a, run_of(ev(0, [5, 6], 2, [5, 6, 7]), ev(1, [8], 0, [4])))
    assert not ok and "generated token 4" in words
    ok, words = rerun_verdict(a, run_of(ev(0, [5], 1, [5, 6]), ev(1, [7, 8], 1, [7, 9])))
    assert not ok and "same 4 tokens" in words and "round 1 on" in words     # counted from 1
