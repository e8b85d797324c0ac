"""The window at human speed: the pace of the views, the scrubber, replaying a recording, the
draft/verify timeline linked to the text, and two sessions compared."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QFileDialog  # noqa: E402

from specscope.core.cli.main import main as cli_main  # noqa: E402
from specscope.core.measure.stats import fold  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

from helpers.window import make_window, run_and_wait  # noqa: E402

PROMPT = "def parse_args(argv=None):\n"


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_LOG_DIR", str(tmp_path / "log"))
    w = make_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=30_000)
    w.prompt.chat.setChecked(False)
    w.prompt.set_text(PROMPT)
    w.params.n_predict.setValue(48)
    yield w
    w.close()


def test_step_pace_shows_one_round_per_click_while_the_engine_is_done(qtbot, window):
    w = window
    w.pace.set_pace("step")
    w.run_clicked()
    qtbot.waitUntil(lambda: w.controller.finishing is not None, timeout=120_000)   # the engine ended
    assert w.controller.state is RunState.RUNNING and w.playback.backlog > 2 and len(w.shown.events) == 0
    # the session has every round already, whatever the views show: its statistics are exact
    session = w.controller.session
    assert session.run.finish == "n_predict" and fold(session.run.events).n_tokens == 48
    assert session.run.stats == fold(session.run.events) and w.stats_bar.text("tokens") == "–"
    for n in (1, 2):
        w.pace.next.click()
        qtbot.waitUntil(lambda: len(w.shown.events) == n, timeout=5_000)
    assert w.pace.waiting.text().endswith(" waiting")
    with qtbot.waitSignal(w.run_done, timeout=10_000) as done:
        w.stop_clicked()                  # Stop shows what ran at once and ends the run
    assert done.args[1] == "n_predict" and w.controller.state is RunState.IDLE
    assert fold(w.shown.events).n_tokens == 48 and w.playback.backlog == 0


def test_the_scrubber_shows_the_run_as_it_was_after_any_round(qtbot, window):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    events = list(w.shown.events)
    assert w.scrubber.isEnabled() and w.scrubber.slider.maximum() == len(events)
    k = len(events) // 2
    w.scrubber.slider.setValue(k)
    assert len(w.shown.events) == k and w.shown.stats.n_rounds == k and w.shown.stats == fold(events[:k])
    assert {s.round for s in w.token_view.spans if s.round >= 0} == set(range(k))
    st = fold(events[:k])
    assert w.stats_bar.values["tokens"].text() == f"{st.n_tokens} ({st.n_rounds} rounds)"
    w.tabs.setCurrentWidget(w.round_view)
    assert w.round_view.shown_event == events[k - 1]          # the KV picture of round k
    w.scrubber.slider.setValue(len(events))                    # the end: the whole run again
    assert w.shown.events == events and w.shown.stats == fold(events) and w.scrubber.label.text() == f"{len(events)} of {len(events)}"


def test_a_replay_plays_the_rounds_again_at_the_pace_and_ends_where_the_run_did(qtbot, window):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    events, stats = list(w.shown.events), w.shown.stats
    w.pace.set_pace("rate", 200.0)
    w.shown.replay()
    assert len(w.shown.events) == 0 and w.controller.replaying
    qtbot.waitUntil(lambda: 0 < len(w.shown.events) < len(events), timeout=5_000)   # part-way
    qtbot.waitUntil(lambda: not w.controller.replaying, timeout=20_000)
    assert w.shown.events == events and w.shown.stats == stats


def test_seeking_during_a_replay_ends_it_and_the_session_keeps_its_rounds(qtbot, window):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    events = list(w.controller.session.run.events)
    w.pace.set_pace("step")
    w.shown.replay()
    for n in (1, 2):
        w.pace.next.click()
        assert len(w.shown.events) == n and w.controller.replaying
    w.scrubber.slider.setValue(len(events))                # the slider takes over from the replay
    assert not w.controller.replaying and w.playback.backlog == 0
    assert w.stats_bar.text("state") == f"All {len(events)} rounds"
    w.pace.next.click()                                    # nothing is left to show twice
    w.pace.next.click()
    assert w.controller.session.run.events == events and w.shown.events == events
    assert w.shown.stats == fold(events) and w.act_replay.isEnabled()


def test_the_timeline_and_the_text_point_at_each_others_rounds(qtbot, window):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    w.tabs.setCurrentWidget(w.timeline)
    events = w.shown.events
    assert len(w.timeline.spans["start"]) == len(events)
    assert w.timeline.spans["verify_w"].tolist() == [e.t_verify for e in events]
    w.timeline.round_clicked.emit(3)
    spans = [s for s in w.token_view.spans if s.round == 3]
    c = w.token_view.textCursor()
    assert (c.selectionStart(), c.selectionEnd()) == (spans[0].start, spans[-1].end)
    w.token_view.round_hovered.emit(5)
    assert w.timeline.highlighted == 5 and w.timeline.shade.isVisible()
    w.token_view.round_hovered.emit(-1)
    assert w.timeline.highlighted is None


def test_two_recordings_side_by_side(qtbot, window, tmp_path, monkeypatch):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert cli_main(["run", "-p", PROMPT, "-n", "32", "--spec-draft-n-max", "2", "--record", str(a)]) == 0
    assert cli_main(["run", "-p", PROMPT, "-n", "32", "--spec-draft-n-max", "6", "--record", str(b)]) == 0
    w = window
    assert w.files.open_session(a)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kw: (str(b), ""))
    w.files.compare_session_dialog()
    assert w.workspace.currentIndex() == 2
    shown = w.session_compare.shown()
    assert shown["differences"] == "Settings that differ: n_max 2 vs 6"
    assert shown["divergence"] == "The outputs agree on all 32 tokens both generated."
    assert len(shown["curves"]) == 2 and len(shown["curves"][1]) == 6
    # a bad file picked from the Compare sessions workspace: said there, the comparison kept
    bad = tmp_path / "bad.jsonl"
    bad.write_text(a.read_text().splitlines()[0][:40])
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kw: (str(bad), ""))
    w.files.compare_session_dialog()
    assert w.session_compare.problem.isVisible() and "bad.jsonl" in w.session_compare.problem.text()
    assert w.session_compare.shown()["differences"] == "Settings that differ: n_max 2 vs 6"


def test_file_quantize_the_draft_opens_the_dialog_on_the_windows_draft(qtbot, window):
    from specscope.app.quantize_dialog import QuantizeDialog
    window.quantize_draft_dialog()
    dialogs = [d for d in window.findChildren(QuantizeDialog) if d.isVisible()]
    assert len(dialogs) == 1
    assert str(window.pair_panel.pair()[1].name) in dialogs[0].windowTitle() + " ".join(
        label.text() for label in dialogs[0].findChildren(type(window.legend)))
    dialogs[0].close()
