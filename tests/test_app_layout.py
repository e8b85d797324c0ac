"""The window as a first-time user meets it (issue 20, section 2): it fits the screen, the prompt
comes first, the text keeps its lines after a run, the cost model fits a laptop's screen."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QRect, Qt  # noqa: E402

from specscope.app.desktop import fit_rect  # noqa: E402

from helpers.window import for_short_runs, make_window, open_window, run_and_wait  # noqa: E402

TEXT_LINES = 8          # at 1366×768 the generated text keeps at least this many lines after a run

# the window on a screen of a given size, fresh settings: where it is and what shows unscrolled
FIRST_SCREEN = r"""
import json, sys, time
from PySide6.QtCore import QEventLoop, QPoint, QRect, QSettings
from specscope.app.main import make_app
from specscope.app.window import MainWindow
app = make_app()
w = MainWindow(settings=QSettings(sys.argv[1], QSettings.Format.IniFormat), preload=False)
w.show()
end = time.monotonic() + 60
while not w.panels_ready and time.monotonic() < end:
    app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 30)
app.processEvents()
viewport = w.main_split.widget(0).viewport()      # the left panel
def unscrolled(widget):
    return viewport.rect().contains(QRect(widget.mapTo(viewport, QPoint(0, 0)), widget.size()))
f, a = w.frameGeometry(), w.screen().availableGeometry()
print(json.dumps({"frame": [f.x(), f.y(), f.width(), f.height()],
                  "available": [a.x(), a.y(), a.width(), a.height()],
                  "prompt_unscrolled": unscrolled(w.prompt.editor),
                  "examples_unscrolled": unscrolled(w.prompt.examples)}))
w.close()
"""


@pytest.mark.parametrize("width,height", [(1024, 600), (1280, 720), (1366, 768), (1920, 1080)])
def test_the_first_screen_fits_the_screen_with_the_prompt_on_top(tmp_path, width, height):
    screen = tmp_path / "screen.json"
    screen.write_text(json.dumps({"screens": [{"name": "s", "x": 0, "y": 0, "width": width,
                                               "height": height, "logicalDpi": 96,
                                               "logicalBaseDpi": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={screen}",
           "SPECSCOPE_LOG_DIR": str(tmp_path / "log")}
    proc = subprocess.run([sys.executable, "-c", FIRST_SCREEN, str(tmp_path / "settings.ini")],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert QRect(*got["available"]).contains(QRect(*got["frame"])), got
    assert got["prompt_unscrolled"] and got["examples_unscrolled"], got


def test_fit_rect_shrinks_and_moves_a_rect_into_the_screen():
    screen = QRect(0, 0, 1366, 768)
    assert fit_rect(QRect(-40, 100, 1440, 900), screen) == QRect(0, 0, 1366, 768)
    assert fit_rect(QRect(1000, 500, 800, 600), screen) == QRect(566, 168, 800, 600)
    assert fit_rect(QRect(10, 20, 800, 600), screen) == QRect(10, 20, 800, 600)
    second = QRect(1366, 0, 1920, 1080)                    # a second screen to the right
    assert fit_rect(QRect(0, 0, 1440, 900), second) == QRect(QPoint(1366, 0), QRect(0, 0, 1440, 900).size())


def test_after_a_run_on_a_laptop_screen_the_text_the_table_and_the_cost_model_fit(qtbot, pair, settings):
    """1366×768: a run shows the drafter table below the plots; the text keeps its lines, the
    table's titles are whole, and the Cost model tab shows its curve and sliders unscrolled."""
    w = open_window(qtbot, pair, settings)
    try:
        w.resize(1366, 768)
        w.params.n_predict.setValue(24)
        w.params.n_ctx.setValue(512)
        w.prompt.set_text("def add(a, b):\n    ")
        w.tabs.setCurrentWidget(w.plots)
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        table = w.plots.drafter_table
        qtbot.waitUntil(table.isVisible)
        qtbot.wait(50)                         # the layout settles
        lines = w.token_view.height() // w.token_view.fontMetrics().lineSpacing()
        assert lines >= TEXT_LINES
        header = table.horizontalHeader()
        for i in range(header.count()):
            assert header.sectionSize(i) >= header.sectionSizeHint(i), table.horizontalHeaderItem(i).text()
        cost = w.cost_panel
        w.tabs.setCurrentIndex(w.tabs.indexOf(cost.parentWidget().parentWidget().parentWidget()))
        qtbot.wait(50)
        viewport = cost.parentWidget().parentWidget()
        for part in (cost._chart, cost._alpha_slider, cost._f_slider):     # the plot and its key
            shown = QRect(part.mapTo(viewport, QPoint(0, 0)), part.size())
            assert viewport.rect().contains(shown), (part, shown, viewport.rect())
    finally:
        w.close()


def wheel(widget, steps: int = -1) -> None:
    """A mouse-wheel turn over the middle of ``widget`` (negative: down, towards the next item),
    as the window system delivers it (spontaneous: Qt gives it focus and passes it up as for a
    real mouse)."""
    from PySide6.QtTest import QTest
    window = widget.window()
    center = widget.mapTo(window, widget.rect().center())
    QTest.wheelEvent(window.windowHandle(), center, QPoint(0, 120 * steps))


def test_the_wheel_scrolls_the_settings_panel_past_its_inputs(qtbot, pair, settings):
    """Issue 20 item 5: the wheel over an unfocused combo or spin box scrolls the panel; once
    clicked (focused) the wheel changes it, as in other desktop applications."""
    w = open_window(qtbot, pair, settings)
    try:
        panel = w.main_split.widget(0)                           # the left panel
        bar = panel.verticalScrollBar()
        sync, n_ctx = w.params.sync, w.params.n_ctx
        for box in (sync, n_ctx):
            panel.ensureWidgetVisible(box, 0, 150)
            qtbot.wait(20)
            value, at = box.currentIndex() if box is sync else box.value(), bar.value()
            assert at < bar.maximum() and not box.hasFocus()
            wheel(box)
            assert (box.currentIndex() if box is sync else box.value()) == value
            assert bar.value() != at and not box.hasFocus()     # the panel scrolled instead
        assert sync.currentData() == "reuse"
        panel.ensureWidgetVisible(sync, 0, 150)                # the panel scrolled it away
        qtbot.wait(20)
        w.activateWindow()
        qtbot.waitUntil(w.isActiveWindow)
        sync.setFocus()
        qtbot.waitUntil(sync.hasFocus)
        wheel(sync)
        assert sync.currentData() == "replay"
    finally:
        w.close()


def test_the_pace_that_shows_one_round_per_next_is_not_called_step(qtbot):
    """Issue 20 item 8: "Step" was both a Pace and the toolbar's action. The pace is "Manual";
    its key is still "step", so what a caller (or a saved value) passes still selects it."""
    from specscope.app.playback import PaceControl, Playback
    control = PaceControl(Playback())
    qtbot.addWidget(control)
    labels = [control.mode.itemText(i) for i in range(control.mode.count())]
    assert not any("step" in label.lower() for label in labels), labels
    control.set_pace("step")
    assert control.mode.currentText() == "Manual" and control.playback.pace == "step"
    assert "Next" in control.mode.itemData(control.mode.currentIndex(), Qt.ItemDataRole.ToolTipRole)


def test_the_run_toolbar_shows_on_the_run_workspace_only(qtbot, pair, settings):
    """Issue 20 item 12: Run, Step, Baseline, Pace… do nothing for the Compare tabs."""
    from PySide6.QtWidgets import QToolBar
    w = open_window(qtbot, pair, settings)
    try:
        toolbar = w.findChild(QToolBar, "run_toolbar")
        assert toolbar.isVisible()
        for name in ("compare", "sessions"):
            w.show_workspace(name)
            assert not toolbar.isVisible(), name
        w.show_workspace("run")
        assert toolbar.isVisible()
        w.show_workspace("compare")
    finally:
        w.close()                              # closed on Compare: saved so
    w = open_window(qtbot, pair, settings)
    try:
        toolbar = w.findChild(QToolBar, "run_toolbar")
        assert w.workspace.currentIndex() == 1 and not toolbar.isVisible()
        w.show_workspace("run")
        assert toolbar.isVisible()
    finally:
        w.close()


def example_labels(prompt) -> list[str]:
    return [prompt.examples.itemText(i) for i in range(1, prompt.examples.count())]


def test_the_examples_say_which_are_chat_and_put_code_first_for_a_code_model(qtbot):
    """Issue 20 item 10: chat and prose examples beside the code ones, labelled; without a chat
    template (the demo pair, a code model) code comes first."""
    from specscope.app.controls import PromptEditor, example_prompts
    kinds = [e.kind for e in example_prompts()]
    assert kinds.count("chat") >= 3 and kinds.count("prose") >= 2 and kinds.count("code") >= 4
    prompt = PromptEditor()
    qtbot.addWidget(prompt)
    for has_template in (None, False):
        prompt.set_template_available(has_template)
        labels = example_labels(prompt)
        assert labels[0].startswith("Code: ") and sum(x.startswith("Chat: ") for x in labels) >= 3
    prompt.set_template_available(True)
    assert example_labels(prompt)[0].startswith("Chat: ")


def test_a_chat_example_goes_through_smollm2s_chat_template(qtbot, smollm2, settings):
    from specscope.app.window import MainWindow
    from specscope.core.models.chat import render_chat
    from specscope.core.models.llama import Model
    w = MainWindow(smollm2, smollm2, settings=settings, preload=False)
    w.show()
    try:
        qtbot.waitUntil(lambda: w.panels_ready and w.pairs.report is not None, timeout=60_000)
        assert w.prompt.has_template is True
        examples = w.prompt.examples
        assert examples.itemText(1).startswith("Chat: ")            # chat first for a chat model
        w.prompt.chat.setChecked(False)                               # the user had turned it off
        examples.activated.emit(1)
        message = w.prompt.text()
        assert message and w.prompt.chat_enabled()                    # a chat example: Chat on
        w.params.n_predict.setValue(8)
        w.params.n_ctx.setValue(512)
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        m = Model(smollm2, vocab_only=True)
        try:
            assert w.controller.session.prompt_text == render_chat(m, message, None)
        finally:
            m.close()
        code = next(i for i, x in enumerate(example_labels(w.prompt), 1) if x.startswith("Code: "))
        examples.activated.emit(code)
        assert not w.prompt.chat_enabled()                            # code is continued as typed
    finally:
        w.close()


def test_help_guide_explains_colours_plots_cost_model_and_step_mode(qtbot, pair, settings):
    """Issue 20 item 11: Help had only the log folder and About."""
    from PySide6.QtWidgets import QTextBrowser
    w = open_window(qtbot, pair, settings)
    try:
        help_menu = next(a.menu() for a in w.menuBar().actions() if a.text() == "&Help")
        guide = next(a for a in help_menu.actions() if a.text() == "Guide")
        guide.trigger()
        page = next(b for b in w.findChildren(QTextBrowser) if b.window() is not w)
        qtbot.waitUntil(page.window().isVisible)
        text = page.toPlainText()
        for words in ("draft token, accepted", "target's own token", "draft token, rejected",
                      "Acceptance by draft position", "Textbook", "Calibrated", "Measured",
                      "Baseline", "Step mode", "n_past", "␣"):
            assert words in text, words
        guide.trigger()                                    # once: the same window is raised
        assert len([b for b in w.findChildren(QTextBrowser) if b.window() is not w]) == 1
        page.window().close()
    finally:
        w.close()


@pytest.mark.parametrize("n_max", [1, 3])
def test_a_chat_turn_ends_at_end_of_turn_in_the_window(qtbot, smollm2, settings, n_max):
    """Issue 20: in the window too, SmolLM2 as its own draft ends its answer where the target
    alone ends it, at <|im_end|>, and emits nothing after it (at n_max 1 it used to write all
    of n_predict, a new conversation after the answer); its baseline, run beside it, agrees."""
    from specscope.app.window import MainWindow
    w = MainWindow(smollm2, smollm2, settings=settings, preload=False)
    w.show()
    try:
        qtbot.waitUntil(lambda: w.panels_ready and w.pairs.report is not None, timeout=60_000)
        w.prompt.set_text("Explain in three sentences why the sky is blue.")
        w.prompt.chat.setChecked(True)
        w.params.drafter.n_max.setValue(n_max)
        w.params.n_predict.setValue(256)
        w.params.n_ctx.setValue(512)
        assert run_and_wait(qtbot, w, w.run_clicked) == "eog"
        assert run_and_wait(qtbot, w, w.baseline_clicked) == "eog"
        spec, base = w.controller.session.spec, w.controller.session.baseline
        assert spec is not None and base is not None               # the baseline ran beside it
        assert spec.tokens == base.tokens and len(spec.tokens) < 100
        assert w.controller.session.run.stats.acceptance_rate == 1.0          # llama.cpp: 100% here too
        assert w.token_view.generated_text().endswith("natural world.")
    finally:
        w.close()


def test_the_window_fits_a_1280x720_screen_after_a_run_a_baseline_and_a_reply(qtbot, pair, settings):
    """Issue 31 item 7: the window never asks for more than a 1280×720 screen holds (its title
    bar and a panel take about 40 px), not after a baseline, a conversation's turn or any tab."""
    w = open_window(qtbot, pair, settings)
    try:
        w.resize(1280, 720)
        w.params.n_predict.setValue(16)
        w.params.n_ctx.setValue(512)
        w.prompt.set_text("def add(a, b):\n    ")

        def fits():
            hint = w.minimumSizeHint()
            assert hint.width() <= 1280 and hint.height() <= 680, hint
            assert w.width() <= 1280 and w.height() <= 720, w.size()
        fits()
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        fits()
        assert run_and_wait(qtbot, w, w.baseline_clicked) in ("n_predict", "eog")
        fits()
        assert run_and_wait(qtbot, w, lambda: w.chat_send("def sub(a, b):")) in ("n_predict", "eog")
        fits()
        for i in range(w.tabs.count()):
            w.tabs.setCurrentIndex(i)
            qtbot.wait(20)
            fits()
        lines = w.token_view.height() // w.token_view.fontMetrics().lineSpacing()
        assert lines >= 5
    finally:
        w.close()


def bar_fields(bar):
    """The stats bar's fields as laid out: (what, rectangle in the bar) for each one shown."""
    from PySide6.QtWidgets import QWidget
    return [(c.findChildren(QWidget)[-1].text() if c.findChildren(QWidget) else c.text(), c.geometry())
            for c in bar.findChildren(QWidget) if c.parentWidget() is bar and c.isVisible()]


def test_at_1024x600_the_window_fits_and_the_stats_bar_wraps_without_overlapping(qtbot, pair, settings):
    """Issue 31 item 7: at 1024×600 the status bar's fields overlapped and the window asked for
    1227 pixels. Now it fits with the settings panel shown; the bar's fields wrap onto a second
    line instead of overlapping, each inside the bar; the reply box keeps room to type."""
    from specscope.app.chat_bar import REPLY_MIN_PX
    w = open_window(qtbot, pair, settings)
    try:
        w.resize(1024, 600)
        for_short_runs(w, n_predict=16)
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        assert run_and_wait(qtbot, w, lambda: w.chat_send("def sub(a, b):")) in ("n_predict", "eog")
        qtbot.wait(50)
        hint = w.minimumSizeHint()
        assert hint.width() <= 1024 and hint.height() <= 560, hint
        assert w.width() <= 1024 and w.height() <= 600, w.size()
        assert w.left_panel.isVisible()
        bar = w.stats_bar
        fields = bar_fields(bar)
        assert len(fields) >= 9, fields
        for i, (what, rect) in enumerate(fields):
            assert bar.rect().contains(rect), (what, rect, bar.rect())
            for other, rect2 in fields[i + 1:]:
                assert not rect.intersects(rect2), (what, other)
        assert len({rect.y() for _, rect in fields}) == 2            # two lines, not one squeezed
        assert w.chat_bar.reply.width() >= REPLY_MIN_PX
        w.resize(1366, 768)                                           # room again: one line
        qtbot.waitUntil(lambda: len({rect.y() for _, rect in bar_fields(bar)}) == 1, timeout=2000)
    finally:
        w.close()


def test_f9_hides_the_settings_panel_and_a_restart_keeps_it_hidden(qtbot, tmp_path):
    w = make_window(qtbot, tmp_path)
    try:
        assert w.left_panel.isVisible() and w.act_left_panel.isChecked()
        assert w.act_left_panel.shortcut().toString() == "F9"
        width = w.text_pane.width()
        w.act_left_panel.trigger()
        qtbot.waitUntil(lambda: w.text_pane.width() > width + 300, timeout=2000)
        assert not w.left_panel.isVisible() and not w.act_left_panel.isChecked()
        assert w.minimumSizeHint().width() < 700         # what is left fits a small screen
    finally:
        w.close()
    w = make_window(qtbot, tmp_path)
    try:
        assert not w.left_panel.isVisible() and not w.act_left_panel.isChecked()
        w.act_left_panel.trigger()
        assert w.left_panel.isVisible()
    finally:
        w.close()
