"""The message banner: its Details dialog shows the newest error, never an old one."""

from __future__ import annotations

from specscope.app.errors import MessageBanner


def test_an_open_details_dialog_follows_the_newest_error(qtbot):
    banner = MessageBanner()
    qtbot.addWidget(banner)
    banner.show_error(ValueError("first.gguf: not a GGUF file"))
    banner.show_details()
    dialog = banner.dialog
    assert "first.gguf" in dialog.label.text() and "ValueError" in dialog.text.toPlainText()
    banner.show_error(OSError("second.gguf: truncated"))
    assert "second.gguf" in dialog.label.text() and "first.gguf" not in dialog.label.text()
    assert "OSError" in dialog.text.toPlainText() and "ValueError" not in dialog.text.toPlainText()
    banner.show_details()                       # pressed again: the same dialog, not a second
    assert banner.dialog is dialog
    banner.show_message("info", "a note with no details")
    assert not dialog.isVisible()


def test_a_setting_the_user_can_change_has_no_traceback_behind_details(qtbot):
    from specscope.core.errors import ConfigError, ContextFullError, ModelFileError
    banner = MessageBanner()
    qtbot.addWidget(banner)
    banner.show()
    for exc in (ConfigError("n_min (5) must not exceed n_max (3)"),
                ContextFullError("the prompt is 300 tokens but the context holds 256")):
        banner.show_error(exc, "Traceback (most recent call last): ...", "The run failed")
        assert not banner.details_button.isVisible() and banner.details == ""
    banner.show_error(ModelFileError("x.gguf", "truncated"), "Traceback (most recent call last): ...")
    assert banner.details_button.isVisible()           # a file or a crash: the traceback helps
