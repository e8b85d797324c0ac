"""The window's Chat toggle on generated models: with a template, without one, a refused one."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSettings  # noqa: E402

from helpers import ggufgen  # noqa: E402
from specscope.app.token_view import PROMPT  # noqa: E402
from specscope.app.window import MainWindow  # noqa: E402
from specscope.core.models.chat import render_chat  # noqa: E402
from specscope.core.models.llama import Model  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

from test_chat import CHAT_TOKENS, CHATML, evil_template  # noqa: E402

RUN_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("chatwin")
    kw = dict(n_layer=1, n_embd=32, n_ff=64, n_head=2, n_head_kv=1, seed=5, specials=CHAT_TOKENS)
    return {"marker": d / "PWNED",
            "chat": ggufgen.write_llama(d / "chat.gguf", chat_template=CHATML, **kw),
            "plain": ggufgen.write_llama(d / "plain.gguf", **kw),
            "evil": ggufgen.write_llama(d / "evil.gguf", chat_template=evil_template(d / "PWNED"), **kw)}


@pytest.fixture
def settings(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_LOG_DIR", str(tmp_path / "log"))
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def open_on(qtbot, settings, path: Path) -> MainWindow:
    w = MainWindow(path, path, settings=settings, preload=False)
    w.resize(1440, 900)
    w.show()
    qtbot.waitUntil(lambda: w.panels_ready, timeout=10_000)
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=30_000)
    w.params.n_predict.setValue(4)
    w.params.n_ctx.setValue(256)
    return w


def choose(qtbot, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(path, path)


def run(qtbot, w: MainWindow) -> str:
    with qtbot.waitSignal(w.run_done, timeout=RUN_TIMEOUT_MS) as blocker:
        w.run_clicked()
    return blocker.args[1]


def prompt_tokens(w: MainWindow) -> list[int]:
    """The prompt's tokens as the target was given them (the view shows them with the template)."""
    if w.shown.show_template.isVisible() and not w.shown.show_template.isChecked():
        w.shown.show_template.setChecked(True)
        tokens = [s.token for s in w.token_view.spans if s.kind == PROMPT]
        w.shown.show_template.setChecked(False)
        assert tokens == list(w.controller.session.prompt_tokens)
        return tokens
    return [s.token for s in w.token_view.spans if s.kind == PROMPT]


def test_chat_toggle_follows_the_target_and_the_run_uses_the_template(qtbot, settings, models):
    w = open_on(qtbot, settings, models["chat"])
    try:
        assert w.prompt.chat.isChecked() and w.prompt.chat.isEnabled()     # on by default
        assert w.prompt.system.isVisible()
        w.prompt.set_text("Name a colour.")
        w.prompt.system.setText("Be brief.")
        assert run(qtbot, w) in ("n_predict", "eog")
        m = Model(models["chat"], vocab_only=True)
        try:
            rendered = render_chat(m, "Name a colour.", "Be brief.")
            assert prompt_tokens(w) == m.tokenize(rendered)                # the template's tokens
            raw = m.tokenize("Name a colour.")
        finally:
            m.close()
        # the messages and the reply, the template's tokens hidden; shown on request (this
        # vocabulary adds a BOS, <|endoftext|>, before the template's text: shown as its mark)
        assert w.token_view.toPlainText().startswith("You: Name a colour.\n")
        w.shown.show_template.setChecked(True)
        assert w.token_view.toPlainText().startswith("⟨BOS⟩<|im_start|>system\nBe brief.<|im_end|>")
        w.shown.show_template.setChecked(False)
        assert w.controller.stats_document()["run"]["chat"] is True

        # a target without a template: the toggle shows off and disabled, the prompt goes as typed
        choose(qtbot, w, models["plain"])
        assert not w.prompt.chat.isChecked() and not w.prompt.chat.isEnabled()
        assert "no template" in w.prompt.chat.text() and not w.prompt.system.isVisible()
        assert run(qtbot, w) in ("n_predict", "eog")
        assert prompt_tokens(w) == raw

        # back to the chat model: the user's choice (on) comes back; turn it off and keep that
        choose(qtbot, w, models["chat"])
        assert w.prompt.chat.isChecked()
        w.prompt.chat.setChecked(False)
        assert run(qtbot, w) in ("n_predict", "eog")
        assert prompt_tokens(w) == raw
    finally:
        w.close()

    again = open_on(qtbot, settings, models["chat"])
    try:
        assert not again.prompt.chat.isChecked() and again.prompt.chat.isEnabled()
        assert again.prompt.system.text() == "Be brief."
    finally:
        again.close()


def test_a_refused_template_is_one_message_and_the_window_keeps_working(qtbot, settings, models):
    w = open_on(qtbot, settings, models["evil"])
    try:
        assert w.prompt.chat_enabled()
        w.prompt.set_text("hi")
        assert run(qtbot, w) == "error"
        assert "evil.gguf: the chat template was refused" in w.banner.message
        assert "\n" not in w.banner.message and w.controller.state is RunState.IDLE
        assert not models["marker"].exists()
        w.prompt.chat.setChecked(False)              # the model itself is fine without chat
        assert run(qtbot, w) in ("n_predict", "eog")
    finally:
        w.close()
