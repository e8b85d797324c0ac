"""Screenshots of the window's main states, for looking at it (a developer tool).

    python -m specscope.app.screenshots OUT_DIR [-m TARGET -md DRAFT] [-n 160]

Writes 1440×900 PNGs: 01 fresh window, 02 mid-run, 03 finished run with plots,
04 cost model after a baseline, 05 step mode (a round with a rejection when one
comes within a few steps), 06 an error. Offscreen unless QT_QPA_PLATFORM is set.

With ``--drafters``, the n-gram drafters instead: 11 the picker with a chain, 12 the
token view after an ngram-simple run with a token hovered (its tooltip drawn in), 13 the
plots of an ngram-simple > draft-simple chain, 14 step mode on an n-gram draft, 15 a
draft of another vocabulary and the doctor's n-gram suggestion, 16 a target alone and a bad
draft-model value (the picker's inline line).

With ``--session FILE``, a recorded session instead (no model loaded): 21 its plots, 22 the
last round explained, 23 the cost panel with the recorded baseline, 24 a bad session file's
banner over what was shown.

With ``--compare``, the Compare workspace after a real sweep (draft-simple, ngram-simple and
their chain; n 1,2,4,8; two of the shipped benchmark prompts, 48 tokens): 21 mid-sweep, with a Run refused in the
Run workspace, 22 the finished sweep, 23 its rows per prompt, 24 the Run workspace with the
tabs expanded over the text.

With ``--advisor``, the Advisor workspace running on the demo pair (translation, multi-turn and
code editing, 32 tokens, one thread, two candidates each, six passes): 31 measuring, 32 the advice with its charts, 33 the Run
workspace after Copy command. With ``--whatif``, the What-if tab after a draft-simple run: 41 the
run's own setting, 42 draft-simple after ngram-simple (2-token keys, 8-token drafts).
With ``--chat``, a conversation (a model with a chat template, -m and -md): 51 three turns,
52 the same with the template's tokens shown, 53 step mode on the third turn.
``--size WxH`` sets the window's size.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SIZE = (1440, 900)
PROMPT_FILE = "01_code_function_with_docstring.txt"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path)
    p.add_argument("-n", "--n-predict", type=int, default=160)
    p.add_argument("--drafters", action="store_true", help="the n-gram drafters' screenshots")
    p.add_argument("--session", type=Path, help="a recorded session's screenshots")
    p.add_argument("--compare", action="store_true", help="the Compare workspace's screenshots")
    p.add_argument("--advisor", action="store_true", help="the Advisor workspace's screenshots")
    p.add_argument("--whatif", action="store_true", help="the What-if tab's screenshots")
    p.add_argument("--chat", action="store_true", help="a three-turn conversation's screenshots")
    p.add_argument("--tree", action="store_true", help="draft-tree's screenshots (step mode on a tree)")
    p.add_argument("--suffix", action="store_true", help="suffix's screenshots (its tree, a run)")
    p.add_argument("--safe-palette", action="store_true", help="in the colour-blind safe palette")
    p.add_argument("--lesson", type=int, metavar="N", help="lesson N's screenshots (Help ▸ Lessons)")
    p.add_argument("--size", default="x".join(map(str, SIZE)), help="the window's size, WxH")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="specscope-shots-"))
    os.environ.setdefault("SPECSCOPE_LOG_DIR", str(tmp / "log"))

    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from .main import make_app
    from .window import MainWindow

    app = make_app()
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    if args.safe_palette:
        settings.setValue("view/palette", "colour-blind safe")
    w = MainWindow(args.model, args.model_draft, settings=settings, preload=args.session is None)
    w.resize(*(int(x) for x in args.size.lower().split("x")))
    w.show()

    idle = QEventLoop()

    def wait(cond, timeout=120.0):
        """Let the window work until ``cond()``; asleep between its events (processEvents alone
        returns at once when none is pending, and a loop of it kept a core busy: a load that
        halved the runs' speed and once made a 13x speed-up of a stalled baseline)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and not cond():
            QTimer.singleShot(10, idle.quit)
            idle.exec()
        return cond()

    def shot(name):
        wait(lambda: w.shown.plots_painted, 2)     # plots repaint one per tick after an update
        app.processEvents()
        path = args.out / f"{name}.png"
        w.grab().save(str(path))
        print(path)

    wait(lambda: w.panels_ready and (w.pairs.report is not None or w.banner.isVisible()), 30)
    try:
        from specscope.core.models.demo import prompts_dir
        w.prompt.set_text((prompts_dir() / PROMPT_FILE).read_text(encoding="utf-8"))
    except OSError:
        pass
    if args.session is not None:
        session_shots(w, wait, shot, args.session, tmp)
        w.close()
        return 0
    if args.drafters:
        drafter_shots(app, w, wait, shot, args.out)
        w.close()
        return 0
    if args.lesson is not None:
        lesson_shots(w, wait, shot, args.lesson)
        w.close()
        return 0
    special = next((shots for flag, shots in SPECIAL if getattr(args, flag)), None)
    if special is not None:
        special(w, wait, shot, tmp)
        w.close()
        return 0
    default_shots(w, wait, shot, args.n_predict, tmp)
    w.close()
    return 0


def session_shots(w, wait, shot, path: Path, tmp: Path) -> None:
    if not w.files.open_session(path):
        shot("20_session_refused")
        return
    w.tabs.setCurrentIndex(0)
    shot("21_session_plots")
    w.tabs.setCurrentWidget(w.round_view)
    shot("22_session_round")
    w.tabs.setCurrentIndex(1)
    shot("23_session_cost")
    bad = tmp / "cut-short.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    bad.write_text("".join(lines[:3]) + lines[3][:40], encoding="utf-8")
    w.files.open_session(bad)
    w.tabs.setCurrentIndex(0)
    shot("24_session_bad_file")


def compare_shots(w, wait, shot, tmp: Path) -> None:
    import json
    from specscope.core.measure.bench.settings import load_prompts
    c = w.compare
    w.show_workspace("compare")
    c.set_drafters("draft-simple", "ngram-simple", "ngram-simple,draft-simple")
    c.n_values.setText("1,2,4,8")
    c.n_predict.setValue(48)
    prompts = tmp / "two_prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"name": n, "text": t} for n, t in load_prompts()[:2]]}))
    c.set_prompt_file(prompts)
    c.start()
    wait(lambda: not c.running or len(c.rows) >= 4, 600)
    w.run_clicked()                       # refused while the sweep runs: the Run workspace says so
    shot("21_run_refused_during_sweep")
    w.show_workspace("compare")
    wait(lambda: not c.running, 1800)
    shot("22_compare_after_sweep")
    c.per_prompt.setChecked(True)
    shot("23_compare_per_prompt")
    c.per_prompt.setChecked(False)
    w.show_workspace("run")
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    w.tabs.setCurrentIndex(0)
    w.set_tabs_expanded(True)
    shot("24_run_tabs_expanded")
    w.set_tabs_expanded(False)


REPEATING = ("def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\n"
             "def sub(a, b):\n")


def _with_tooltip(app, w, image_path: Path) -> None:
    """The window's image with the visible tooltip painted where it shows (grab() has no
    tooltips: they are windows of their own)."""
    from PySide6.QtGui import QPainter
    pix = w.grab()
    for tip in app.topLevelWidgets():
        if tip.metaObject().className() == "QTipLabel" and tip.isVisible():
            painter = QPainter(pix)
            painter.drawPixmap(tip.pos() - w.mapToGlobal(w.rect().topLeft()), tip.grab())
            painter.end()
    pix.save(str(image_path))
    print(image_path)


def drafter_shots(app, w, wait, shot, out: Path) -> None:
    from PySide6.QtCore import QEvent, QPoint
    from PySide6.QtGui import QHelpEvent
    from .token_view import ACCEPTED
    d = w.params.drafter
    w.prompt.chat.setChecked(False)
    w.prompt.set_text(REPEATING)
    w.params.n_predict.setValue(96)
    d.set_types(["ngram-simple", "draft-simple"])
    d.knobs["ngram-simple.size_n"].setValue(2)
    d.knobs["ngram-simple.size_m"].setValue(6)
    shot("11_drafter_picker")

    d.set_types(["ngram-simple"])
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    tv = w.token_view
    spans = [s for s in tv.spans if s.kind == ACCEPTED and s.event is not None and s.event.n_accepted > 1]
    spans = spans or [s for s in tv.spans if s.kind == ACCEPTED]
    if spans:
        c = tv.textCursor()
        c.setPosition(spans[0].start)
        rect = tv.cursorRect(c)
        point = QPoint(rect.x() + 3, rect.center().y())
        app.sendEvent(tv.viewport(), QHelpEvent(QEvent.Type.ToolTip, point, tv.viewport().mapToGlobal(point)))
        wait(lambda: False, 0.5)
    _with_tooltip(app, w, out / "12_ngram_tokens_hover.png")
    app.sendEvent(tv.viewport(), QEvent(QEvent.Type.Leave))

    d.set_types(["ngram-simple", "draft-simple"])
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    w.tabs.setCurrentIndex(0)
    shot("13_chain_plots")

    w.step_clicked()                         # the same chain, one round at a time
    for _ in range(80):
        wait(lambda: w.controller.paused or not w.controller.busy)
        ev = w.round_view.shown_event
        if not w.controller.paused or (ev is not None and ev.drafter == "ngram-simple" and ev.n_accepted):
            break
        w.step_clicked()
    shot("14_step_mode_ngram")
    w.stop_clicked()
    wait(lambda: not w.controller.busy)

    t, _ = w.pair_panel.pair()
    try:
        from specscope.core.models.demo import DEMO_FOREIGN_DRAFT, models_dir
        w.pairs.report = None
        w.pair_panel.set_pair(t, models_dir() / DEMO_FOREIGN_DRAFT)
        wait(lambda: w.pairs.report is not None, 30)
        d.set_types(["draft-simple"])
        from PySide6.QtWidgets import QScrollArea
        scroll = d.parentWidget()
        while scroll is not None and not isinstance(scroll, QScrollArea):
            scroll = scroll.parentWidget()
        if scroll is not None:                  # the drafter's inline message in view
            scroll.ensureWidgetVisible(d.message)
        shot("15_no_draft_fits")
    except Exception as exc:  # noqa: BLE001 - a developer tool: say so and go on
        print("no foreign-vocabulary demo draft:", exc)
    w.pair_panel.set_pair(t, None)
    wait(lambda: w.pair_panel.facts.item(0, 0).text() != "–", 30)
    d.n_max.setValue(3)
    d.n_min.setValue(5)
    shot("16_bad_value")


def chat_shots(w, wait, shot, _tmp: Path) -> None:
    w.params.n_predict.setValue(48)
    w.prompt.set_text("Name three fruits that are red.")
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    for message in ("Which of them is the sweetest?", "Name three fruits that are red."):
        w.chat_send(message)
        wait(lambda: not w.controller.busy, 600)
    w.tabs.setCurrentIndex(0)
    shot("51_chat_three_turns")
    w.shown.show_template.setChecked(True)
    shot("52_chat_template_shown")
    w.shown.show_template.setChecked(False)
    w.chat_regenerate()
    w.stop_clicked()
    wait(lambda: not w.controller.busy, 600)
    w.chat_send("And the biggest?", step=True)
    wait(lambda: w.controller.paused or not w.controller.busy)
    for _ in range(3):
        w.step_clicked()
        wait(lambda: w.controller.paused or not w.controller.busy)
    shot("53_chat_step_mode")
    w.stop_clicked()
    wait(lambda: not w.controller.busy)


def default_shots(w, wait, shot, n_predict: int, tmp: Path) -> None:
    """Fresh, mid-run, finished with plots, after a Baseline, the cost model, step mode and a
    bad file's banner."""
    shot("01_fresh")
    w.params.n_predict.setValue(n_predict)
    w.run_clicked()
    wait(lambda: len(w.shown.events) >= 12 or not w.controller.busy)
    shot("02_mid_run")
    wait(lambda: not w.controller.busy, 600)
    w.run_clicked()                     # again: the grab above stalled that run (its speed, its
    wait(lambda: not w.controller.busy, 600)    # time per round), this one runs undisturbed
    w.tabs.setCurrentIndex(0)
    shot("03_finished_with_plots")
    w.baseline_clicked()                # measured beside the run: the views keep the run
    wait(lambda: not w.controller.busy, 600)
    shot("03b_run_after_baseline")
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    w.tabs.setCurrentIndex(1)
    shot("04_cost_model")
    w.step_clicked()
    for _ in range(12):
        wait(lambda: w.controller.paused or not w.controller.busy)
        ev = w.round_view.shown_event
        if not w.controller.paused or (ev is not None and ev.drafted and ev.n_accepted < len(ev.drafted)):
            break
        w.step_clicked()
    shot("05_step_mode")
    w.stop_clicked()
    wait(lambda: not w.controller.busy)
    bad = tmp / "not-a-model.gguf"
    bad.write_bytes(b"hello, I am not a GGUF file")
    t, d = w.pair_panel.pair()
    w.pair_panel.set_pair(bad, d)
    wait(lambda: w.banner.isVisible() and w.banner.level == "error", 30)
    shot("06_error")


def lesson_shots(w, wait, shot, n: int) -> None:
    """Lesson ``n`` as set up (and pointing), then after a run and Check, with its hint shown."""
    w.show_lessons(n - 1)
    wait(lambda: w.lessons is not None and w.lessons.pointer.isVisible(), 10)
    shot(f"70_lesson_{n}_set_up")
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    w.lessons.check()
    w.lessons.hint_button.click()
    shot(f"71_lesson_{n}_checked")


def _tree_shots(w, wait, shot, names: tuple[str, str], wanted, steps: int) -> None:
    """Step mode until a round ``wanted(ev)`` is shown (at most ``steps`` rounds), its shot, then
    the whole run's."""
    w.step_clicked()
    for _ in range(steps):
        wait(lambda: w.controller.paused or not w.controller.busy, 120)
        ev = w.round_view.shown_event
        if not w.controller.paused or (ev is not None and ev.tree is not None and wanted(ev)):
            break
        w.step_clicked()
    shot(names[0])
    w.stop_clicked()
    wait(lambda: not w.controller.busy)
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    w.tabs.setCurrentIndex(0)
    shot(names[1])


def tree_shots(w, wait, shot, _tmp: Path) -> None:
    """draft-tree at temperature, 4 branches: step mode on a round whose tree split and whose
    target kept a split-off branch, then the finished run."""
    w.params.drafter.set_types(["draft-tree"])
    w.params.drafter.np["draft-tree"].setValue(4)
    w.prompt.temp.setValue(0.8)
    w.params.n_predict.setValue(96)
    _tree_shots(w, wait, shot, ("61_tree_step_mode", "62_tree_plots"),
                lambda ev: ev.tree.kept > 0 and len(ev.tree.branches) > 2 and ev.n_accepted, 60)


SUFFIX_PROMPT = ("def area(w, h):\n    return w * h\n\n\ndef volume(w, h, d):\n    return w * h * d\n\n\n"
                 "def area(w, h):\n    return w * h\n\n\ndef volume(")


def suffix_shots(w, wait, shot, _tmp: Path) -> None:
    """suffix with a tree of 4 leaves on a text that repeats itself: step mode on a round whose
    tree branched and was partly accepted, then the finished run."""
    d = w.params.drafter
    d.set_types(["suffix"])
    d.np["suffix"].setValue(4)
    d.knobs["suffix.max_spec_factor"].setValue(2.0)
    d.knobs["suffix.min_token_prob"].setValue(0.05)
    w.prompt.chat.setChecked(False)
    w.prompt.set_text(SUFFIX_PROMPT)
    w.params.n_predict.setValue(96)
    _tree_shots(w, wait, shot, ("63_suffix_tree_step_mode", "64_suffix_run"),
                lambda ev: len(ev.tree.branches) > 1 and ev.n_accepted, 80)


def whatif_shots(w, wait, shot, _tmp: Path) -> None:
    w.params.drafter.set_types(["draft-simple"])
    w.params.n_max.setValue(3)
    w.run_clicked()
    wait(lambda: not w.controller.busy, 600)
    panel = w.whatif
    w.tabs.setCurrentWidget(panel)
    wait(lambda: panel.whatifs is not None and panel.whatifs.trace is not None and panel.current is not None, 120)
    shot("41_whatif_own_setting")
    panel.controls.checks["ngram-simple"].setChecked(True)
    panel.controls.knobs["ngram-simple n"].slider.setValue(2)
    panel.controls.knobs["ngram-simple m"].slider.setValue(8)
    wait(lambda: panel.current is not None and len(panel.current.spec.types) == 2, 30)
    shot("42_whatif_chain")


def advisor_shots(w, wait, shot, _tmp: Path) -> None:
    v = w.advisor
    w.show_workspace("advisor")
    v.form.set_categories(("multi-turn", "translation", "code-editing"))
    v.form.n_predict.setValue(32)
    v.form.threads.setValue(1)
    v.form.budget.setValue(3.0)
    v.form.top.setValue(2)
    v.form.passes.setValue(6)
    v.start()
    wait(lambda: v.advice is not None and any(m.pairs for c in v.advice.categories for m in c.measured), 300)
    shot("31_advisor_measuring")
    wait(lambda: not v.running, 600)
    shot("32_advisor_advice")
    w.show_workspace("run")
    w.copy_command.copy()
    wait(lambda: False, 0.3)               # the note under the button is laid out
    scroll = w.copy_command.parentWidget()
    while scroll is not None and not hasattr(scroll, "ensureWidgetVisible"):
        scroll = scroll.parentWidget()
    if scroll is not None:                 # the left column scrolls to the button
        scroll.ensureWidgetVisible(w.copy_command)
    shot("33_copy_command")


# the options that take one workspace's screenshots instead of the run's
SPECIAL = (("compare", compare_shots), ("advisor", advisor_shots), ("chat", chat_shots),
           ("suffix", suffix_shots), ("tree", tree_shots), ("whatif", whatif_shots))

if __name__ == "__main__":
    sys.exit(main())
