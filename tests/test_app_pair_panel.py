"""The pair panel: it fits its column whatever the paths, and the weight repacking choice
reaches the engine, is shown after a load and persists."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSettings  # noqa: E402

from specscope.app.pair_panel import PairPanel  # noqa: E402
from specscope.core.engine.engine import EngineSettings  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

LONG_DIR = "/home/someone/" + "/".join(["a-folder-with-a-rather-long-name-for-models"] * 4)
LONG_NAME = "SmolLM2-135M-Instruct-with-an-extremely-long-descriptive-file-name-Q4_1-imatrix.gguf"


def test_a_long_path_does_not_widen_the_panel(qtbot):
    panel = PairPanel()
    qtbot.addWidget(panel)
    panel.resize(400, 700)
    panel.show()
    short_min = panel.minimumSizeHint().width()
    long_path = f"{LONG_DIR}/{LONG_NAME}"
    panel.set_pair(long_path, long_path.replace("SmolLM2", "draft"), notify=False)
    panel.set_load_state("idle", f"Loaded {LONG_NAME} + {LONG_NAME} (context 2048)")
    panel.set_verdict_text(f"{long_path}: not a GGUF file (bad magic)", "#b42318")
    panel.set_load_facts({"repack": False, "repack_reason": "repacking off (--repack off)"})
    panel.layout().activate()                    # lay out now (no waiting for the event loop)
    assert panel.minimumSizeHint().width() <= max(short_min, 400)
    for widget in (panel.target_browse, panel.draft_browse, panel.demo_button):
        assert widget.geometry().right() <= panel.contentsRect().right(), widget.toolTip()
    assert panel.target_edit.toolTip() == long_path            # the full path is the tooltip
    assert panel.load_label.toolTip().startswith(f"Loaded {LONG_NAME}")
    assert panel.pair()[0] == Path(long_path)                   # the text itself is whole


def test_the_repack_choice_reaches_the_engine_settings(qtbot):
    panel = PairPanel()
    qtbot.addWidget(panel)
    assert panel.engine_kwargs()["repack"] == "auto"
    panel.repack.setCurrentText("off")
    assert EngineSettings(**panel.engine_kwargs()).repack == "off"
    panel.set_engine_kwargs({"repack": "sideways"})          # a hand-edited settings file
    assert panel.repack.currentText() == "auto"
    panel.set_engine_kwargs({"repack": "on"})
    assert panel.repack.currentText() == "on"


def test_the_window_loads_with_the_chosen_repacking_and_says_so(qtbot, tmp_path, monkeypatch):
    from specscope.app.window import MainWindow
    from specscope.core.models.demo import demo_pair
    from specscope.core.errors import ConfigError
    try:
        target, draft = demo_pair()
    except ConfigError:
        pytest.skip("no demo pair installed")
    monkeypatch.setenv("SPECSCOPE_LOG_DIR", str(tmp_path / "log"))
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(Path(target), Path(draft), settings=settings)
    w.show()
    try:
        w.pair_panel.repack.setCurrentText("off")
        w.params.n_predict.setValue(4)
        with qtbot.waitSignal(w.worker.engine_loaded, timeout=60_000) as loaded:
            w.run_clicked()
        assert loaded.args[0]["repack"] is False
        qtbot.waitUntil(lambda: w.controller.state is RunState.IDLE, timeout=60_000)
        assert w.pair_panel.engine_label.isVisible()
        assert "repacking off" in w.pair_panel.engine_label.text()
        assert w.pair_panel.engine_label.text().startswith("Threads: target auto (")
        # the line says the counts the contexts hold now: after a run, its last round's (auto
        # moves them with the load; here the facts are made stale, as a count changed since)
        w.pairs.facts["threads"] = {role: (99, True) for role in ("target", "draft")}
        w.pair_panel.set_load_facts(w.pairs.facts)
        assert "(99 now)" in w.pair_panel.engine_label.text()
        with qtbot.waitSignal(w.run_done, timeout=60_000) as done:   # the loaded pair runs again
            w.run_clicked()
        assert done.args[1] in ("n_predict", "eog"), w.banner.message
        t, d = w.controller.session.run.events[-1].threads
        assert w.pair_panel.engine_label.text().startswith(
            f"Threads: target auto ({t} now), draft auto ({d} now)"), w.pair_panel.engine_label.text()
        # a baseline decodes no draft: the draft on auto shares the target's governor, its count
        w.pairs.facts["threads"] = {role: (99, True) for role in ("target", "draft")}
        ended = []
        w.controller.subscribe(lambda what, payload: ended.append(payload) if what == "finished" else None)
        with qtbot.waitSignal(w.run_done, timeout=60_000) as done:
            w.baseline_clicked()
        assert done.args[1] in ("n_predict", "eog"), w.banner.message
        t, d = ended[-1].session.run.events[-1].threads
        assert ended[-1].session.kind == "baseline" and d == 0
        assert w.pair_panel.engine_label.text().startswith(
            f"Threads: target auto ({t} now), draft auto ({t} now)"), w.pair_panel.engine_label.text()
    finally:
        w.close()
    again = MainWindow(settings=settings, preload=False)
    try:
        assert again.pair_panel.repack.currentText() == "off"
    finally:
        again.close()


def test_a_compatible_pair_is_green_only_where_a_speed_up_is_in_sight(qtbot, tmp_path):
    """✔ COMPATIBLE says llama.cpp takes the draft; its colour says whether it may pay: green,
    or amber for a draft as dear as its target (or one this machine's calibration prices under
    1× at the assumed acceptance)."""
    from dataclasses import replace

    from helpers.vocab_gguf import write_vocab_gguf
    from specscope.core.measure.doctor.pair import check_pair
    from specscope.core.models.demo import demo_pair
    panel = PairPanel()
    qtbot.addWidget(panel)
    demo = check_pair(*demo_pair())
    demo = replace(demo, cost=replace(demo.cost, calibrated=None))    # the textbook's 1.75x
    same = check_pair(write_vocab_gguf(tmp_path / "t.gguf"), write_vocab_gguf(tmp_path / "d.gguf"))
    assert demo.compatible and same.compatible and same.cost.warning
    panel.set_report(demo)
    assert "color:#15803d'>✔ COMPATIBLE" in panel.verdict.text()
    panel.set_report(same)
    assert "color:#a15c00'>✔ COMPATIBLE" in panel.verdict.text()
    slow = replace(demo.cost, best={k: {**v, "speedup": 0.9} for k, v in demo.cost.best.items()})
    panel.set_report(replace(demo, cost=slow))
    assert "color:#a15c00'>✔ COMPATIBLE" in panel.verdict.text()
