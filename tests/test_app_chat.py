"""The chat in the window: reply, regenerate, edit, step mode on a later turn, the template
hidden and shown, the basics next to the prompt; SmolLM2-135M-Instruct as its own draft (a chat
template) and the demo pair (none: one document)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from helpers.window import for_short_runs, open_window, run_and_wait  # noqa: E402
from specscope.app.token_view import ACCEPTED, MESSAGE, TARGET  # noqa: E402


@pytest.fixture
def chat_window(qtbot, smollm2, settings):
    w = for_short_runs(open_window(qtbot, (smollm2, smollm2), settings), n_predict=16, n_ctx=1024,
                       prompt="Name three fruits that are red.")
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=60_000)
    yield w
    w.close()


def reply_spans(w):
    return [s for s in w.token_view.spans if s.kind in (ACCEPTED, TARGET)]


def test_two_turns_regenerate_edit_and_step_mode_on_a_later_turn(qtbot, chat_window):
    w = chat_window
    assert w.prompt.chat.isChecked()
    assert not w.chat_bar.reply.isEnabled()            # nothing to reply to yet
    assert run_and_wait(qtbot, w, w.run_clicked) in ("eog", "n_predict")
    first = w.controller.session
    assert w.chat_bar.reply.isEnabled() and len(w.chat_log.turns) == 1
    text = w.token_view.toPlainText()
    assert text.startswith("You: Name three fruits that are red.\n") and "<|im_start|>" not in text
    # the template's tokens on request, and hidden again
    w.shown.show_template.setChecked(True)
    assert "<|im_start|>user" in w.token_view.toPlainText()
    w.shown.show_template.setChecked(False)
    assert "<|im_start|>" not in w.token_view.toPlainText()

    # turn 2: the first reply stays, coloured by its own rounds; the caches were kept (the
    # prompt box may be emptied meanwhile: the reply is the message)
    w.prompt.set_text("")
    assert run_and_wait(qtbot, w, lambda: w.chat_send("Which of them is the sweetest?")) \
        in ("eog", "n_predict")
    second = w.controller.session
    assert second.settings.history == (("Name three fruits that are red.", first.text()),)
    assert second.turns[0][1] is first and second.run.reused > 0
    text = w.token_view.toPlainText()
    assert text.index("You: Name three fruits") < text.index("You: Which of them is the sweetest?")
    earlier = [s for s in reply_spans(w) if s.round == -1]
    assert len(earlier) >= len(first.run.tokens) - 1       # the first reply's tokens, hoverable
    assert all(s.describe() for s in earlier[:3])
    assert sum(1 for s in w.token_view.spans if s.kind == MESSAGE) == 2
    assert "Conversation: 2 turns" in w.chat_bar.figures.full
    assert "held from the turn before" in w.chat_bar.figures.full

    # regenerate: the same message, the turn replaced (greedy: the same reply)
    assert run_and_wait(qtbot, w, w.chat_regenerate) in ("eog", "n_predict")
    again = w.controller.session
    assert len(w.chat_log.turns) == 2 and w.chat_log.turns[-1][1] is again
    assert again.settings.prompt == "Which of them is the sweetest?"
    assert again.run.reused == len(again.prompt_tokens) - 1

    # edit the last message: the last turn replaced
    w.chat_bar.edit.emit()
    assert w.chat_bar.reply.text() == "Which of them is the sweetest?"
    w.chat_bar.reply.setText("Which of them is the sourest?")
    assert run_and_wait(qtbot, w, w.chat_bar._send) in ("eog", "n_predict")
    assert [m for m, _ in w.chat_log.turns] == ["Name three fruits that are red.",
                                                  "Which of them is the sourest?"]

    # step mode on turn 3 (the bar's Step)
    w.chat_bar.reply.setText("And the biggest?")
    with qtbot.waitSignal(w.step_done, timeout=60_000):
        w.chat_bar.step_button.click()
    third = w.controller.session
    assert w.controller.paused and len(third.turns) == 2 and len(w.shown.events) == 1
    assert run_and_wait(qtbot, w, w.run_clicked) in ("eog", "n_predict")    # Continue
    assert len(w.chat_log.turns) == 3

    # a new conversation: the next Run begins it
    w.chat_bar.new_button.click()
    assert not w.chat_log.turns and not w.chat_bar.reply.isEnabled()


def test_a_target_without_a_template_continues_one_document(qtbot, window):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) in ("eog", "n_predict")
    assert "no chat template" in w.chat_bar.reply.placeholderText()
    assert w.stats_bar.text("state").startswith("Finished: ")
    first = w.controller.session
    assert run_and_wait(qtbot, w, lambda: w.chat_send("def sub(a, b):")) in ("eog", "n_predict")
    assert w.stats_bar.text("state").startswith("Turn 2 finished: ")    # the bar's figures: this turn's
    s = w.controller.session
    assert not s.settings.chat and s.run.reused > 0
    assert s.prompt_text.startswith("def add(a, b):\n    " + first.text())
    w.token_view.set_show_rejected(False)        # (struck-through drafts are in the plain text)
    text = w.token_view.toPlainText().replace("↵", "")
    assert text.startswith("def add(a, b):\n    " + first.text()[:20])
    assert "def sub(a, b):" in text and "You:" not in text
    assert "one document" in w.chat_bar.figures.full


def test_max_tokens_and_temperature_next_to_the_prompt_follow_the_parameters(qtbot, window):
    w = window
    w.prompt.max_tokens.setValue(40)
    assert w.params.n_predict.value() == 40
    w.params.n_predict.setValue(64)
    assert w.prompt.max_tokens.value() == 64
    w.prompt.temp.setValue(0.7)
    assert w.params.sampler.currentData() == "temperature"
    assert w.params.temperature.value() == pytest.approx(0.7)
    w.prompt.temp.setValue(0.0)
    assert w.params.sampler.currentData() == "greedy" and w.prompt.temp.text() == "greedy"
    assert w.params.sampler_settings().greedy


def test_chat_save_writes_a_conversation_the_window_opens_and_replays(qtbot, window, tmp_path,
                                                                       monkeypatch, capsys):
    """``specscope chat --save FILE`` on the demo pair (no template: one document), two turns
    from stdin: the file is the last turn with the turn before it; the window shows both."""
    import io

    from specscope.core.cli.main import main
    from specscope.core.session.session import Session
    path = tmp_path / "chat.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("def add(a, b):\ndef sub(a, b):\n"))
    assert main(["chat", "-n", "12", "--no-probe", "--save", str(path)]) == 0
    out = capsys.readouterr()
    assert "one document" in out.err
    s = Session.load(path)
    assert s.settings.prompt == "def sub(a, b):" and len(s.settings.history) == 1
    first_message, first_reply = s.settings.history[0]
    assert first_message == "def add(a, b):"
    assert s.prompt_text.startswith("def add(a, b):" + first_reply)
    w = window
    assert w.files.open_session(path)
    text = w.token_view.toPlainText()
    assert text.startswith("def add(a, b):" + first_reply.split("\n")[0])
    assert "def sub(a, b):" in text
    w.shown.replay()                           # (at full speed: at once)
    qtbot.waitUntil(lambda: not w.controller.replaying, timeout=30_000)
    assert [e.emitted for e in w.shown.events] == [e.emitted for e in s.run.events]


def test_the_advisor_takes_the_conversation(qtbot, chat_window, tmp_path, monkeypatch):
    import json

    from PySide6.QtCore import QStandardPaths
    from specscope.core.measure.bench.workloads import YOURS, load_user_prompts
    QStandardPaths.setTestModeEnabled(True)
    w = chat_window
    w.advise_on_conversation()
    assert "No conversation yet" in w.banner.message
    assert run_and_wait(qtbot, w, w.run_clicked) in ("eog", "n_predict")
    assert run_and_wait(qtbot, w, lambda: w.chat_send("Which of them is the sweetest?")) \
        in ("eog", "n_predict")
    w.advise_on_conversation()
    form = w.advisor.form
    assert YOURS in form.chosen_categories() and "the conversation (2 turns)" in form.yours.text()
    s = form.settings()
    assert s.prompts == form.prompts_path and YOURS in s.categories
    turns = load_user_prompts(s.prompts)
    assert [len(t.messages) for t in turns] == [1, 3]
    assert turns[1].messages[1]["role"] == "assistant"
    assert turns[1].messages[1]["content"] == w.chat_log.turns[0][1].text()
    assert json.loads(s.prompts.read_text().splitlines()[1])[-1]["content"] == \
        "Which of them is the sweetest?"
