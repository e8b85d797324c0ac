"""The main window on a real pair: the demo pair when it is installed, else the tiny
generated pair of conftest.py. Runs are short (small n_predict) to keep CI fast."""

from __future__ import annotations

import json
import threading
import xml.dom.minidom
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402

from specscope.app.token_view import PROMPT, expected_kinds  # noqa: E402
from specscope.app.window import MainWindow  # noqa: E402
from specscope.app.window_settings import recent_pairs  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

from helpers.window import RUN_TIMEOUT_MS, open_window, run_and_wait  # noqa: E402


def test_opens_with_the_pair_and_its_verdict(qtbot, window, pair):
    assert window.pair_panel.pair() == (Path(pair[0]), Path(pair[1]))
    qtbot.waitUntil(lambda: window.pairs.report is not None, timeout=30_000)
    assert window.pairs.report.compatible
    assert "COMPATIBLE" in window.pair_panel.verdict.text()
    assert window.pair_panel.facts.item(0, 0).text() == window.pairs.report.target.architecture
    assert window.act_run.isEnabled() and not window.act_stop.isEnabled()


def test_run_shows_spans_that_match_the_events(qtbot, window):
    finish = run_and_wait(qtbot, window, window.run_clicked)
    assert finish in ("n_predict", "eog")
    events = window.shown.events
    assert [e.index for e in events] == list(range(len(events)))      # no batch lost or doubled
    assert events[-1].finish == finish
    shown = [(s.kind, s.token, s.round) for s in window.token_view.spans if s.kind != PROMPT]
    assert shown == expected_kinds(events)
    emitted = [t for e in events for t in e.emitted]
    vocab = window.controller.session.vocab
    text = b"".join(vocab.piece(t) for t in emitted if not vocab.is_eog(t)).decode("utf-8", "replace")
    assert window.token_view.generated_text() == text
    stats = window.shown.stats
    assert stats.n_tokens == len(emitted) and stats.n_rounds == len(events)
    assert window.stats_bar.text("n_drafted") == str(stats.n_drafted)
    assert window.stats_bar.text("n_accept") == str(stats.n_accept)
    window.tabs.setCurrentWidget(window.round_view)     # hidden tabs catch up when shown
    assert window.round_view.shown_event is events[-1]
    window.tabs.setCurrentWidget(window.plots)
    # the plots hold the run
    held = window.plots.shown()
    assert sum(held["accepted_length"]["height"]) == stats.n_draft_rounds
    assert len(held["acceptance"]["height"]) == len(stats.drafted_at)
    assert len(held["time_split"]["verify"]["height"]) == min(len(events), 200)
    assert len(held["speed"]["x"]) > 0
    assert window.controller.state is RunState.IDLE and window.act_run.isEnabled()


def test_baseline_then_speed_up(qtbot, window):
    assert run_and_wait(qtbot, window, window.baseline_clicked) in ("n_predict", "eog")
    assert all(e.mode == "baseline" for e in window.shown.events)
    assert window.stats_bar.text("n_drafted") == "–"
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert window.stats_bar.text("speedup").endswith("×")
    assert window.cost_panel.measured is not None
    # the other order: a baseline after the speculative run also gives the speed-up (it runs
    # beside the run shown: test_app_run_lifecycle.py)
    assert run_and_wait(qtbot, window, window.baseline_clicked) in ("n_predict", "eog")
    assert window.stats_bar.text("speedup").endswith("×")


def test_stop_mid_run_within_one_round(qtbot, window):
    window.params.n_predict.setValue(100_000)
    window.params.n_ctx.setValue(4096)
    window.run_clicked()
    qtbot.waitUntil(lambda: len(window.shown.events) >= 2, timeout=RUN_TIMEOUT_MS)
    req = window.controller.active
    with qtbot.waitSignal(window.run_done, timeout=30_000) as blocker:
        window.stop_clicked()
        rounds_at_stop = window.worker.rounds_done      # read after the flag is set
    assert blocker.args[1] == "stopped"
    assert req.stop.is_set()
    events = window.shown.events
    assert events[-1].finish == "stopped"
    # the round in flight ends the run; +1 for a round yielded but not yet counted at the read
    assert len(events) - rounds_at_stop <= 2
    assert sum(len(e.emitted) for e in events) < 100_000
    assert window.controller.state is RunState.IDLE
    # and the window can run again
    window.params.n_predict.setValue(8)
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")


def test_the_engine_starts_once_the_cleared_plots_have_painted(qtbot, window, monkeypatch):
    """The worker waits for the window's go (ui_ready) before the prefill, so the first rounds
    do not compete with the cleared plots' paints; the window gives it once they painted."""
    from specscope.app import worker as worker_mod
    from specscope.core.engine import engine as engine_mod
    monkeypatch.setattr(worker_mod, "UI_READY_TIMEOUT_S", 60.0)   # only the window's go counts
    seen = {}
    prefill = engine_mod.Run._prefill

    def spy(run, *args):
        seen.setdefault("at_prefill", (window.controller.active.ui_ready.is_set(), window.shown.plots_painted,
                                       window.plots.paints))
        prefill(run, *args)

    monkeypatch.setattr(engine_mod.Run, "_prefill", spy)
    window.tabs.setCurrentWidget(window.plots)
    paints_before = window.plots.paints
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    ready, painted, paints = seen["at_prefill"]
    assert ready and painted
    assert paints > paints_before          # the cleared plots painted before the first round
    # the final update's repaints are staggered, one plot per tick: none stays held
    qtbot.waitUntil(lambda: window.shown.plots_painted, timeout=5_000)
    assert all(window.plots.plot_widget(n).updatesEnabled() for n in window.plots.plot_names())


def test_the_engine_goes_on_without_the_windows_go(qtbot, window, monkeypatch):
    """A window that never answers (busy, closing) delays a run by UI_READY_TIMEOUT_S at most."""
    from specscope.app import worker as worker_mod
    monkeypatch.setattr(worker_mod, "UI_READY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(window.shown, "ready_when_painted", lambda ready: None)
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert window.shown.events and window.shown.stats.n_tokens == sum(len(e.emitted) for e in window.shown.events)


def test_step_advances_exactly_one_round(qtbot, window):
    sent = []                                     # events the worker sent (counted as it sends)
    window.worker.events_ready.connect(lambda _run, batch: sent.append(len(batch)),
                                       Qt.ConnectionType.DirectConnection)
    with qtbot.waitSignal(window.step_done, timeout=RUN_TIMEOUT_MS):
        window.step_clicked()
    assert len(window.shown.events) == 1 and window.controller.state is RunState.PAUSED
    assert window.round_view.shown_event is window.shown.events[0]
    assert "Round 1</b>" in window.round_view.text.text()             # counted from 1, as the slider
    # nothing runs while paused: the worker's thread is idle (it runs a call queued to it now)
    # and did one round; no event arrived after the step's
    from PySide6.QtCore import QTimer
    idle = threading.Event()
    QTimer.singleShot(0, window.worker, idle.set)
    qtbot.waitUntil(idle.is_set, timeout=10_000)
    assert window.worker.rounds_done == 1 and sent == [1]
    assert len(window.shown.events) == 1 and window.controller.state is RunState.PAUSED
    with qtbot.waitSignal(window.step_done, timeout=RUN_TIMEOUT_MS):
        window.step_clicked()
    assert [e.index for e in window.shown.events] == [0, 1]
    assert "Round 2</b>" in window.round_view.text.text()
    assert window.stats_bar.text("state").startswith("Paused after round 2")
    assert window.tabs.currentWidget() is window.round_view
    shown = [(s.kind, s.token, s.round) for s in window.token_view.spans if s.kind != PROMPT]
    assert shown == expected_kinds(window.shown.events)
    with qtbot.waitSignal(window.run_done, timeout=30_000) as blocker:
        window.stop_clicked()
    assert blocker.args[1] == "stopped"
    assert len(window.shown.events) == 2 and window.controller.state is RunState.IDLE


def test_continue_after_steps(qtbot, window):
    with qtbot.waitSignal(window.step_done, timeout=RUN_TIMEOUT_MS):
        window.step_clicked()
    assert window.act_run.text().endswith("Continue")
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert sum(len(e.emitted) for e in window.shown.events) <= 24


def test_bad_file_shows_the_error_and_the_app_keeps_working(qtbot, window, pair, tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a model")
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
        window.pair_panel.set_pair(bad, Path(pair[1]))
    assert window.banner.isVisible() and window.banner.level == "error"
    assert "broken.gguf" in window.banner.message
    assert "Traceback" in window.banner.details
    assert window.banner.details_button.isVisible()
    window.banner.show_details()
    assert "Traceback" in window.banner.dialog.findChild(
        __import__("PySide6.QtWidgets", fromlist=["QPlainTextEdit"]).QPlainTextEdit).toPlainText()
    window.banner.dialog.close()
    # Run anyway: the load fails with a message naming the file, the window stays usable
    assert run_and_wait(qtbot, window, window.run_clicked) == "error"
    assert "broken.gguf" in window.banner.message and window.controller.state is RunState.IDLE
    log_text = (Path(window.log_path)).read_text(encoding="utf-8")
    assert "broken.gguf" in log_text and "Traceback" in log_text
    # back to the good pair: it runs
    window.pair_panel.set_pair(Path(pair[0]), Path(pair[1]))
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert len(window.shown.events) > 0


def test_a_model_that_crashes_llama_cpp_leaves_the_window_running(qtbot, window, pair, tiny_models):
    crashed = []
    window.worker.crashed.connect(lambda verdict, retrying: crashed.append((verdict, retrying)),
                                  Qt.ConnectionType.DirectConnection)
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
        window.pair_panel.set_pair(Path(tiny_models["crashing"]), Path(tiny_models["draft"]))
    assert run_and_wait(qtbot, window, window.run_clicked) == "error"
    # probed in a child process; where --repack auto repacks (a CPU without AMX) retried once with
    # repacking off and crashed again; on a CPU with AMX auto already turned it off: no retry.
    # Reported for the preload when the pair was set, and again for Run
    from specscope.core.models.llama import resolve_repack
    repacks = resolve_repack("auto")[0]
    tries = [(True, "on"), (False, "off")] if repacks else [(False, "off")]
    seen = [(retrying, v.settings["repack_used"]) for v, retrying in crashed]
    assert seen and seen == tries * (len(seen) // len(tries)), seen
    assert all(v.signal_name == "SIGABRT" and v.model.endswith("crashing.gguf") for v, _ in crashed)
    assert window.banner.level == "error" and "crashing.gguf" in window.banner.message
    assert "SIGABRT" in window.banner.message and window.controller.state is RunState.IDLE
    # the window goes on: the good pair runs, and its settings are what they were
    assert window.params.n_predict.value() == 24
    window.pair_panel.set_pair(Path(pair[0]), Path(pair[1]))
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")


def test_incompatible_pair(qtbot, window, pair, tmp_path):
    from helpers.vocab_gguf import write_no_byte_tokens     # a draft no mode can take either
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000) as blocker:
        window.pair_panel.set_pair(Path(pair[0]), write_no_byte_tokens(tmp_path / "spm.gguf"))
    assert not blocker.args[0].compatible
    assert "INCOMPATIBLE" in window.pair_panel.verdict.text()
    window.run_clicked()            # refused before it starts: the doctor already said why
    assert window.controller.state is RunState.IDLE and window.banner.level == "error"
    assert "cannot draft for" in window.banner.message
    # Baseline needs no draft: it still works with the target
    assert run_and_wait(qtbot, window, window.baseline_clicked) in ("n_predict", "eog")


def test_full_context_is_reported(qtbot, window):
    window.params.n_ctx.setValue(256)
    window.prompt.set_text("x = 1\n" * 300)
    assert run_and_wait(qtbot, window, window.run_clicked) == "error"
    assert "context" in window.banner.message and "prompt" in window.banner.message
    # a repeating prompt that leaves 24 free rows: greedy decoding repeats it until they are full
    from specscope.core.models.llama import Model
    vocab = Model(window.pair_panel.pair()[0], vocab_only=True)
    try:
        k = 1
        while len(vocab.tokenize("x = 1\n" * (k + 1))) <= 256 - 24:
            k += 1
    finally:
        vocab.close()
    window.prompt.chat.setChecked(False)
    window.prompt.set_text("x = 1\n" * k)
    window.params.n_predict.setValue(400)
    assert run_and_wait(qtbot, window, window.run_clicked) == "context"
    assert window.banner.level == "warning" and "context" in window.banner.message


def test_settings_round_trip(qtbot, pair, settings, tmp_path):
    w = open_window(qtbot, pair, settings, preload=False)
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=30_000)   # a compatible pair is "recent"
    p = w.params
    p.n_max.setValue(5)
    p.n_min.setValue(1)
    p.p_min.setValue(0.25)
    p.sync.setCurrentIndex(p.sync.findData("replay"))
    p.sampler.setCurrentIndex(p.sampler.findData("temperature"))
    p.temperature.setValue(0.6)
    p.top_k.setValue(20)
    p.seed.setValue(7)
    p.n_predict.setValue(33)
    p.n_ctx.setValue(1024)
    w.pair_panel.threads["draft"].setValue(1)
    w.prompt.set_text("print('hi')\n")
    w.tabs.setCurrentIndex(1)
    w.resize(1200, 800)
    saved = p.to_dict()
    w.close()
    assert w.worker_thread.isFinished()

    again = MainWindow(settings=settings, preload=False)
    try:
        assert again.params.to_dict() == saved
        assert again.prompt.text() == "print('hi')\n"
        assert again.pair_panel.pair() == (Path(pair[0]), Path(pair[1]))
        assert again.pair_panel.threads["draft"].value() == 1
        assert again.tabs.currentIndex() == 1
        assert settings.value("window/geometry") is not None   # (offscreen clamps it to its screen)
        assert [Path(t) for t in recent_pairs(settings)[0]] == [Path(pair[0]), Path(pair[1])]
        spec = again.params.spec_settings()
        assert (spec.n_max, spec.n_min, spec.sync) == (5, 1, "replay")
        sampler = again.params.sampler_settings()
        assert sampler.temperature == pytest.approx(0.6) and sampler.top_k == 20 and sampler.seed == 7
    finally:
        again.close()


def test_export(qtbot, window, tmp_path):
    run_and_wait(qtbot, window, window.run_clicked)
    window.files.save_text(tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == window.token_view.full_text()
    window.files.save_stats(tmp_path / "stats.json")
    doc = json.loads((tmp_path / "stats.json").read_text())
    assert doc["stats"]["n_drafted"] == window.shown.stats.n_drafted
    assert len(doc["rounds"]) == len(window.shown.events) and doc["run"]["kind"] == "spec"
    window.files.save_stats(tmp_path / "stats.csv")
    lines = (tmp_path / "stats.csv").read_text().splitlines()
    assert lines[0].startswith("index,") and len(lines) == len(window.shown.events) + 1
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    def drawn(image: QImage) -> tuple[int, int]:
        """(colours, dark pixels) on a grid: a plot has axes, text and bars, a blank has none."""
        pixels = [image.pixel(x, y) for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)]
        return len(set(pixels)), sum(QColor(p).value() < 128 for p in pixels)

    for name in window.plots.plot_names():
        widget = window.plots.plot_widget(name)
        png = window.plots.export(name, tmp_path / f"{name.replace(' ', '_')}.png")
        image = QImage(str(png))
        assert not image.isNull()
        assert abs(image.width() - widget.width()) <= 2 and abs(image.height() - widget.height()) <= 2
        colours, dark = drawn(image)
        assert colours > 8 and dark > 100, name
        svg = window.plots.export(name, tmp_path / f"{name.replace(' ', '_')}.svg")
        assert xml.dom.minidom.parse(str(svg)).documentElement.tagName == "svg"
        rendered = QImage(image.size(), QImage.Format.Format_ARGB32)
        rendered.fill(QColor("white"))
        renderer = QSvgRenderer(str(svg))
        assert renderer.isValid()
        painter = QPainter(rendered)
        renderer.render(painter)
        painter.end()
        colours, dark = drawn(rendered)
        assert colours > 8 and dark > 100, name
    window.copy_text()
    from PySide6.QtGui import QGuiApplication
    assert QGuiApplication.clipboard().text() == window.token_view.generated_text()


def test_shortcuts(window):
    assert window.act_run.shortcut().toString() == "Ctrl+R"
    assert window.act_stop.shortcut().toString() == "Esc"
    assert window.act_step.shortcut().toString() == "F10"


def test_no_thread_left_after_close(qtbot, pair, settings):
    w = open_window(qtbot, pair, settings)
    w.params.n_predict.setValue(100_000)
    w.params.n_ctx.setValue(4096)
    w.run_clicked()
    qtbot.waitUntil(lambda: len(w.shown.events) >= 1, timeout=RUN_TIMEOUT_MS)
    w.close()                                     # mid-run: stops, frees the engine, joins
    assert w.worker_thread.isFinished() and w.pairs.doctor_thread.isFinished()
    assert not [t for t in threading.enumerate() if t.name.startswith("specscope")]


def test_load_progress_reaches_the_bars(qtbot, pair, settings):
    w = open_window(qtbot, pair, settings, preload=False)
    seen = []
    w.worker.load_progressed.connect(lambda role, f: seen.append((role, f)))
    w.params.n_predict.setValue(4)
    try:
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        assert {"target", "draft"} <= {role for role, _ in seen}
        assert max(f for _, f in seen) == pytest.approx(1.0)
        assert w.pair_panel.progress["target"].value() == 1000
        assert not w.pair_panel.progress["target"].isVisible()      # hidden once loaded
        assert "Loaded" in w.pair_panel.load_label.text()
    finally:
        w.close()


def test_dropping_two_files_sets_the_pair(qtbot, window, pair):
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(pair[1])), QUrl.fromLocalFile(str(pair[0]))])
    event = QDropEvent(QPointF(700, 400), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    window.pair_panel.set_pair(None, None)
    window.dropEvent(event)
    assert window.pair_panel.pair() == (Path(pair[0]), Path(pair[1]))   # the larger file is the target


def test_the_pair_cannot_change_during_a_run_by_a_drop_or_the_library(qtbot, window, pair):
    """The pair panel is off during a run; a dropped file and the model library's Use as target
    went round it, and the next turn of the conversation ran on another target."""
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    from specscope.app.session_files import PAIR_BUSY
    w = window
    w.params.n_predict.setValue(64)
    w.step_clicked()                                      # a run, paused after its first round
    qtbot.waitUntil(lambda: w.controller.paused, timeout=60_000)
    dialog = w.model_library()
    try:
        before = w.pair_panel.pair()
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(pair[1]))])
        w.dropEvent(QDropEvent(QPointF(700, 400), Qt.DropAction.CopyAction, mime,
                               Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))
        assert w.pair_panel.pair() == before and w.banner.message == PAIR_BUSY
        qtbot.waitUntil(lambda: dialog.library is not None, timeout=30_000)
        if dialog.table.rowCount():
            dialog.table.selectRow(0)
        assert not dialog.as_target.isEnabled() and not dialog.as_draft.isEnabled()
        dialog._use("target")                             # a double-click: refused too
        assert w.pair_panel.pair() == before
        w.stop_clicked()
        qtbot.waitUntil(lambda: not w.controller.busy, timeout=60_000)
        assert dialog.as_target.isEnabled() == bool(dialog.table.selectionModel().selectedRows())
    finally:
        dialog.close()
    w.dropEvent(QDropEvent(QPointF(700, 400), Qt.DropAction.CopyAction, mime,
                           Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))
    assert w.pair_panel.pair()[0] == Path(pair[1])        # idle: the drop is taken


def test_a_reply_whose_turn_does_not_run_stays_in_the_box_and_an_outgrown_conversation_says_so(
        qtbot, window):
    """The chat bar emptied its box before the window checked anything: a refused turn (bad
    drafter settings) or a failed one (the conversation outgrew the context) lost the reply, and
    the failure blamed "the prompt"."""
    w = window
    w.params.n_ctx.setValue(256)
    w.prompt.set_text("def f(x):\n    return x\n\n" * 14)
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    n_max, n_min = w.params.n_max.value(), w.params.n_min.value()
    w.params.n_max.setValue(2)
    w.params.n_min.setValue(3)                            # n_min above n_max: refused
    reply = "and now a much longer reply " * 4
    w.chat_bar.reply.setText(reply)
    w.chat_bar.send_button.click()
    assert "n_min" in w.banner.message and w.chat_bar.reply.text() == reply
    w.params.n_min.setValue(n_min)
    w.params.n_max.setValue(n_max)
    w.chat_bar.reply.setText("x " * 200)                  # the turns and this: over 256 tokens
    with qtbot.waitSignal(w.run_done, timeout=60_000):
        w.chat_bar.send_button.click()
    assert "the conversation no longer fits the context" in w.banner.message, w.banner.message
    assert "start a new conversation" in w.banner.message
    assert w.chat_bar.reply.text() == "x " * 200          # back in the box
    assert len(w.chat_log.turns) == 1


def test_reset_clears_the_views(qtbot, window):
    window.params.n_predict.setValue(8)
    run_and_wait(qtbot, window, window.run_clicked)
    assert window.token_view.spans and window.shown.stats is not None
    window.reset_clicked()
    assert window.token_view.toPlainText() == "" and not window.token_view.spans
    assert window.shown.events == [] and window.shown.stats is None
    assert window.stats_bar.text("n_drafted") == "–"
    assert sum(window.plots.shown()["accepted_length"]["height"]) == 0
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")   # still works


def test_compare_tab_follows_the_pair(window, pair):
    assert window.workspace.indexOf(window.compare.parentWidget().parentWidget()) == 1   # scrolls
    assert window.compare.target == Path(pair[0])
    assert window.compare.draft_paths() == [str(Path(pair[1]))]


def test_decode_failure_mid_run_is_reported(qtbot, window, monkeypatch):
    from specscope.core.engine import engine as engine_mod
    from specscope.core.errors import DecodeError
    real = engine_mod.Run._spec_rounds

    def failing(self, *args):
        rounds = real(self, *args)
        yield next(rounds)
        raise DecodeError("the verification batch of 4 tokens", 1)

    monkeypatch.setattr(engine_mod.Run, "_spec_rounds", failing)
    assert run_and_wait(qtbot, window, window.run_clicked) == "error"
    assert "decoding the verification batch" in window.banner.message
    assert len(window.shown.events) == 1                      # what came before the failure is kept
    monkeypatch.setattr(engine_mod.Run, "_spec_rounds", real)
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")


def test_hover_shows_the_token(qtbot, window):
    from PySide6.QtCore import QEvent, QPoint
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QToolTip
    run_and_wait(qtbot, window, window.run_clicked)
    view = window.token_view
    span = next(s for s in view.spans if s.kind != PROMPT and s.end > s.start
                and view.document().characterAt(s.start) not in "\u2029 ")
    cursor = view.textCursor()
    cursor.setPosition(span.start)
    rect = view.cursorRect(cursor)
    point = QPoint(rect.x() + 2, rect.center().y())
    assert view.span_at_point(point) == span
    event = QHelpEvent(QEvent.Type.ToolTip, point, view.viewport().mapToGlobal(point))
    view.eventFilter(view.viewport(), event)
    assert QToolTip.isVisible() and f"round {span.round + 1}</b>" in QToolTip.text()
    QToolTip.hideText()


def test_the_round_explainer_does_not_shadow_qwidget_event(qtbot):
    """The round shown is ``shown_event``: an attribute named ``event`` hid QWidget.event."""
    from PySide6.QtCore import QEvent
    from specscope.app.round_view import RoundExplainer
    w = RoundExplainer()
    qtbot.addWidget(w)
    assert w.shown_event is None
    assert w.event(QEvent(QEvent.Type.ToolTip)) in (True, False)    # QWidget.event answers
    w.clear()
    assert callable(w.event) and w.shown_event is None


def test_compare_has_the_windows_height_and_the_layout_is_remembered(qtbot, pair, settings):
    """Compare is a workspace of its own (the whole window below the toolbar); the tabs below the
    text can take the text's height too; the window reopens as it was left."""
    w = open_window(qtbot, pair, settings, preload=False)
    assert w.workspace.currentIndex() == 0 and w.token_view.isVisible()
    w.show_workspace("compare")
    page = w.workspace.currentWidget()
    assert page.widget() is w.compare
    qtbot.waitUntil(lambda: w.compare.isVisible() and not w.token_view.isVisible())
    assert page.width() >= w.width() - 4                   # no pair panel beside it
    assert page.height() >= w.centralWidget().height() - w.workspace.tabBar().height() - 4
    assert w.compare.table.height() >= 200                 # rows to read, not four
    w.close()
    w = open_window(qtbot, pair, settings, preload=False)
    try:
        assert w.workspace.currentWidget().widget() is w.compare
        w.show_workspace("run")
        assert w.token_view.isVisible() and not w.tabs_expanded()
        before = w.tabs.height()
        w.expand_button.click()                            # the tabs take the text's height
        qtbot.waitUntil(lambda: not w.token_view.isVisible() and w.tabs.height() > before + 200)
        assert w.expand_button.text().endswith("Show the text")
    finally:
        w.close()
    w = open_window(qtbot, pair, settings, preload=False)
    try:
        assert w.workspace.currentIndex() == 0 and w.tabs_expanded() and not w.token_view.isVisible()
        w.expand_button.click()                            # and back
        assert w.token_view.isVisible() and not w.tabs_expanded()
    finally:
        w.close()


def test_a_run_and_a_sweep_refuse_each_other(qtbot, window, monkeypatch, tmp_path):
    """(The window preloads the pair: a sweep waits for that too.)"""
    from dataclasses import replace as dc_replace
    from specscope.app.compare_table import TABLE_COLUMNS
    from specscope.core.engine.engine import EngineSettings
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"name": "p", "text": "def f(x):"}]}), encoding="utf-8")
    compare = window.compare
    qtbot.waitUntil(lambda: "Loaded" in window.pair_panel.load_label.text(), timeout=RUN_TIMEOUT_MS)
    compare.set_prompt_file(prompts)
    compare.n_values.setText("1")
    compare.set_drafters("draft-simple", "ngram-simple", "ngram-simple,draft-simple")
    sweep = dc_replace(compare.settings(), n_predict=8, calibration_s=0.2,
                       engine=EngineSettings(n_ctx=256, target_threads=1, draft_threads=1))
    loaded = window.pair_panel.load_label.text()
    window.pair_panel.set_load_state("loading", "Loading the models…")     # as a preload shows it
    assert not compare.start(sweep) and "loading the models" in compare.banner.message
    assert "start a sweep once" in compare.banner.message
    assert window.advisor.blocker().endswith("start the advisor once they are loaded.")   # not "sweep"
    window.pair_panel.set_load_state("idle", loaded)
    with qtbot.waitSignal(compare.sweep_finished, timeout=RUN_TIMEOUT_MS):
        assert compare.start(sweep)
        window.show_workspace("compare")
        window.run_clicked()                               # refused while the sweep measures
        assert window.controller.state is RunState.SWEEPING and window.controller.active is None
        assert window.workspace.currentIndex() == 0        # shown where the run would be
        assert window.banner.level == "warning" and "sweep is running" in window.banner.message
        assert "\n" not in window.banner.message
        window.baseline_clicked()
        window.step_clicked()
        assert window.controller.state is RunState.SWEEPING and window.banner.count == 3   # the same line, thrice
        assert window.stats_bar.text("state") == "Compare sweep running"
    # at 1440×900 every column of the results can be read without scrolling sideways
    window.show_workspace("compare")
    qtbot.waitUntil(lambda: compare.table.isVisible())
    assert compare.table.rowCount() == 3 and not compare.table.isColumnHidden(len(TABLE_COLUMNS) - 1)
    qtbot.waitUntil(lambda: compare.table.horizontalScrollBar().maximum() == 0)
    with qtbot.waitSignal(window.run_done, timeout=RUN_TIMEOUT_MS):
        window.run_clicked()
        assert window.controller.state is RunState.RUNNING
        assert not compare.start(sweep) and not compare.running    # refused while the run runs
        assert compare.banner.level == "warning" and "run is in progress" in compare.banner.message
    assert window.stats_bar.text("state").startswith("Finished")
    assert window.banner.isHidden()                        # the sweep's warning left with it
    assert compare.start(sweep)                            # idle again: the sweep may run
    with qtbot.waitSignal(compare.sweep_finished, timeout=RUN_TIMEOUT_MS):
        compare.request_stop()


def test_calibrate_draws_the_machines_curve_and_holds_runs_back(qtbot, pair, settings):
    """The cost panel's Calibrate times the pair in the window's engine, on the engine's thread
    (no second copy of the models); a run or a sweep asked for meanwhile is refused with one
    line; the button stops it; the curve appears for this pair and goes when the pair changes."""
    import shutil
    from specscope.core.measure.cost.cache import cache_dir
    shutil.rmtree(cache_dir(), ignore_errors=True)   # another test's cached calibration of this pair
    w = open_window(qtbot, pair, settings)          # would end it before the button can stop it
    try:
        qtbot.waitUntil(lambda: w.panels_ready, timeout=30_000)
        w.params.n_predict.setValue(16)
        w.cost_tab.calibrate()
        assert w.cost_tab.calibration_task.running and w.cost_panel.calibrate_button.text().startswith("Stop")
        w.cost_tab.calibrate()                               # the button stops it
        qtbot.waitUntil(lambda: not w.cost_tab.calibration_task.running, timeout=60_000)
        assert w.cost_panel.calibrated is None and w.cost_panel.calibrate_button.text() == \
            "Calibrate on this machine" and w.stats_bar.text("state") == "Calibration stopped"
        w.cost_tab.calibrate()
        w.run_clicked()
        assert w.controller.state is RunState.MEASURING and "Cost model tab" in w.banner.message
        assert w.controller.holder is w.cost_tab.calibration_task
        assert not w.compare.start() and "Cost model tab" in w.compare.banner.message   # nor a sweep
        qtbot.waitUntil(lambda: not w.cost_tab.calibration_task.running, timeout=120_000)
        assert w.cost_panel.calibrated is not None, w.banner.message
        x, y = w.cost_panel.calibrated_curve()
        assert list(x) == list(range(1, 9)) and all(v > 0 for v in y)
        assert "Calibration of demo-draft.gguf" in w.cost_panel.calibration_text()
        assert w.cost_panel.calibrate_button.isEnabled()
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")   # runs go again
        w.pair_panel.draft_edit.setText(str(pair[2]))
        w.pair_panel.draft_edit.editingFinished.emit()
        qtbot.waitUntil(lambda: w.cost_panel.calibrated is None, timeout=10_000)
    finally:
        w.close()


def test_the_compare_tabs_controls_survive_a_restart(qtbot, pair, settings):
    w = open_window(qtbot, pair, settings, preload=False)
    qtbot.waitUntil(lambda: w.panels_ready, timeout=30_000)
    c = w.compare
    c.n_values.setText("1-3")
    c.p_min_values.setText("0,0.6")
    c.chains.setText("ngram-simple,draft-simple")
    c.n_predict.setValue(40)
    c.temperature.setValue(0.7)
    c.accept_rule.setCurrentText("ratio")
    c.ignore_eos.setChecked(False)
    c.per_prompt.setChecked(True)
    c.set_prompt_file(None)
    saved = c.to_dict()
    w.close()
    again = MainWindow(settings=settings, preload=False)
    try:
        qtbot.waitUntil(lambda: again.panels_ready, timeout=30_000)
        assert again.compare.to_dict() == saved
        s = again.compare.settings()
        assert s.n_values == (1, 2, 3) and s.p_mins == (0.0, 0.6) and s.spec.accept_rule == "ratio"
        assert s.sampler.temperature == pytest.approx(0.7) and not s.ignore_eos
    finally:
        again.close()


def test_tab_moves_through_the_window_and_each_stop_can_show_its_focus(qtbot, window):
    """Tab in the prompt box typed a tab and kept the focus (a trap for the keyboard); the
    generated text, the left panel's and the round view's scroll areas were stops that showed
    nothing."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QScrollArea
    w = window
    editor = w.prompt.editor
    text = editor.toPlainText()
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert not editor.hasFocus() and editor.toPlainText() == text
    assert w.token_view.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByKeyboard
    areas = [a for a in w.findChildren(QScrollArea)]
    assert areas and all(a.focusPolicy() == Qt.FocusPolicy.NoFocus for a in areas)
