"""The main window's actions, its Run toolbar and its menus (a part of MainWindow, app/window.py:
the actions call the window's own slots)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QToolBar

from . import palette
from .guide import open_log_folder, show_about, show_guide
from .playback import PaceControl
from .presenter import SCALES


PALETTE_KEY = "view/palette"
PRESENTER_SCALE_KEY = "view/presenter_scale"


class WindowActions:
    """MainWindow's actions and menus; ``act_*`` are the actions the window enables."""

    library_dialog = None        # File ▸ Model library, made when first opened

    def _action(self, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        a = QAction(text, self)
        if shortcut:
            a.setShortcut(QKeySequence(shortcut))
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if tip:
            a.setToolTip(tip + (f" ({a.shortcut().toString()})" if shortcut else ""))
            a.setStatusTip(tip)
        if slot is not None:
            a.triggered.connect(slot)
        self.addAction(a)
        return a

    def _build_actions(self) -> None:
        """The run's actions, the Run toolbar and the menus."""
        self._build_run_actions()
        self._build_toolbar()
        self._build_menus()

    def _build_run_actions(self) -> None:
        self.act_run = self._action("▶  Run", self.run_clicked, "Ctrl+R",
                                    "Speculative decoding with the chosen drafter")
        self.act_step = self._action("⇥  Step", self.step_clicked, "F10", "Run one round and explain it")
        self.act_stop = self._action("■  Stop", self.stop_clicked, "Esc", "Stop after the current round")
        self.act_baseline = self._action("◆  Baseline", self.baseline_clicked, "Ctrl+B",
                                         "Generate with the target alone, for the measured speed-up")
        self.act_reset = self._action("↺  Reset", self.reset_clicked, "Ctrl+Shift+R",
                                      "Clear the text, plots and statistics")
        self.act_rerun = self._action("⟳  Re-run", self.rerun_clicked, "F5",
                                      "Run the recording shown again with its models and settings, "
                                      "and say whether it matched")
        self.act_replay = self._action("▷  Replay", self.shown.replay, "Ctrl+P",
                                       "Play the run shown again at the chosen pace (no model runs)")
        # one state: the menu's tick and the checkbox above the text follow each other (toggled
        # carries the new state; setChecked to the same state emits nothing, so no loop)
        self.act_hide = self._action("Show rejected drafts", None, "Ctrl+H",
                                     "Show the drafted tokens the target rejected, struck through")
        self.act_hide.setCheckable(True)
        self.act_hide.setChecked(self.show_rejected.isChecked())
        self.act_hide.toggled.connect(self.show_rejected.setChecked)
        self.show_rejected.toggled.connect(self.act_hide.setChecked)

    def _build_toolbar(self) -> None:
        """Run, Step, Stop, Baseline, Reset, Re-run, the pace and Replay."""
        tb = QToolBar("Run")
        tb.setObjectName("run_toolbar")
        tb.setMovable(False)
        tb.setIconSize(QSize(16, 16))
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for a in (self.act_run, self.act_step, self.act_stop, self.act_baseline, self.act_reset,
                  self.act_rerun):
            tb.addAction(a)
        tb.setStyleSheet("QToolButton { padding: 4px 12px; font-weight: 600; }"
                         " QToolButton:disabled { color: #aaa; }")
        run_button = tb.widgetForAction(self.act_run)
        run_button.setStyleSheet("QToolButton { color: #15803d; } QToolButton:disabled { color: #aaa; }")
        self.pace = PaceControl(self.playback)
        tb.addSeparator()
        tb.addWidget(self.pace)
        tb.addAction(self.act_replay)
        tb.addSeparator()
        self.addToolBar(tb)
        self.run_toolbar = tb        # for the Run workspace: the Compare tabs have their own controls
        self.workspace.currentChanged.connect(lambda i: self.run_toolbar.setVisible(i == 0))

    def _build_menus(self) -> None:
        m = self.menuBar()
        self._build_file_menu(m.addMenu("&File"))
        e = m.addMenu("&Edit")
        e.addAction(self._action("Copy generated text", self.copy_text, "Ctrl+Shift+C"))
        e.addAction(self._action("Copy prompt and text", lambda: self.copy_text(full=True)))
        self._build_view_menu(m.addMenu("&View"))
        r = m.addMenu("&Run")
        for a in (self.act_run, self.act_step, self.act_stop, self.act_baseline, self.act_reset,
                  self.act_rerun):
            r.addAction(a)
        r.addSeparator()
        r.addAction(self.act_hide)
        h = m.addMenu("&Help")
        h.addAction(self._action("Guide", lambda: show_guide(self), "F1", "What the colours, plots, "
                                                                          "cost model and step mode show"))
        h.addAction(self._action("Lessons", lambda: self.show_lessons(), "Shift+F1",
                                 "Nine short lessons on the demo pair, each with an exercise the "
                                 "window checks"))
        h.addAction(self._action("Open the log folder", lambda: open_log_folder(self.log_path)))
        h.addAction(self._action("About SpecScope", lambda: show_about(self, self.log_path)))

    def _build_file_menu(self, f) -> None:
        f.addAction(self._action("Open target…", self.pair_panel.browse_target, "Ctrl+O"))
        f.addAction(self._action("Open draft…", self.pair_panel.browse_draft, "Ctrl+Shift+O"))
        f.addAction(self._action("Use the demo pair", self.pairs.use_demo_pair))
        f.addAction(self._action("Model library…", self.model_library, "Ctrl+L",
                                 "The GGUF models you already have (LM Studio, Ollama, the Hugging "
                                 "Face cache, llama.cpp's cache, Jan, GPT4All, your folders), and "
                                 "what among them can draft for the target"))
        f.addAction(self._action("Quantize the draft…", self.quantize_draft_dialog, None,
                                 "Make harder-quantized copies of the draft with llama.cpp and "
                                 "sweep them against it in Compare"))
        f.addSeparator()
        f.addAction(self._action("Open session…", self.files.open_session_dialog, "Ctrl+Shift+L",
                                 "Show a recorded run (a .jsonl session file) without its models"))
        f.addAction(self._action("Save session…", self.files.save_session_dialog, "Ctrl+Shift+S",
                                 "Record the run shown (and its baseline) as a session file"))
        f.addAction(self._action("Compare with session…", self.files.compare_session_dialog, None,
                                 "The run shown (or a first recording) side by side with a recording"))
        f.addSeparator()
        f.addAction(self._action("Save text…", self.files.save_text_dialog, "Ctrl+S"))
        f.addAction(self._action("Save stats as JSON…", lambda: self.files.save_stats_dialog("json")))
        f.addAction(self._action("Save stats as CSV…", lambda: self.files.save_stats_dialog("csv")))
        self.plots_menu = f.addMenu("Save plot")
        f.addAction(self._action("Export the rounds (GIF, MP4)…", self.export_rounds_dialog, None,
                                 "For slides: each round of the run shown as the text and its step "
                                 "picture, one frame per round (specscope export does it too)"))
        f.addSeparator()
        f.addAction(self._action("Quit", self.close, "Ctrl+Q"))

    def _build_view_menu(self, v) -> None:
        v.addAction(self._action("Live run", lambda: self.show_workspace("run"), "Ctrl+1",
                                 "The pair, prompt, generated text and its plots"))
        v.addAction(self._action("Compare (sweep)", lambda: self.show_workspace("compare"), "Ctrl+2",
                                 "Sweep drafters × draft lengths × prompts, with the window's whole height"))
        v.addAction(self._action("Compare sessions", lambda: self.show_workspace("sessions"), "Ctrl+3",
                                 "Two recorded sessions side by side"))
        v.addAction(self._action("Advisor", lambda: self.show_workspace("advisor"), "Ctrl+4",
                                 "What should I run? The best drafter and settings per kind of work"))
        v.addAction(self._action("Expand the tabs below the text", lambda: self.set_tabs_expanded(
            not self.tabs_expanded()), "Ctrl+Shift+E", "Hide the generated text so the plots, cost "
                                                       "model and round get the whole height"))
        self.act_left_panel = self._action("Settings panel", None, "F9",
                                           "Show or hide the panel on the left (prompt, pair, "
                                           "drafter, settings): the text and plots get its width")
        self.act_left_panel.setCheckable(True)
        self.act_left_panel.setChecked(True)
        self.act_left_panel.toggled.connect(self.set_left_panel_shown)
        v.addAction(self.act_left_panel)
        self.act_presenter = self._action(
            "Presenter", None, "F11", "For a projector: full screen, larger type in the window and "
            "the plots (View ▸ Presenter scale), the settings panel hidden; F11 again to leave")
        self.act_presenter.setCheckable(True)
        self.act_presenter.toggled.connect(self.set_presenter)
        v.addAction(self.act_presenter)
        scale_menu = v.addMenu("Presenter scale")
        self.presenter_scales = {}
        for factor in SCALES:
            a = self._action(f"{factor:g}×", lambda _on=False, f=factor: self.set_presenter_scale(f))
            a.setCheckable(True)
            a.setChecked(factor == self.presenter.scale)
            scale_menu.addAction(a)
            self.presenter_scales[factor] = a
        self.act_safe_palette = self._action(
            "Colour-blind safe palette", None, None,
            "Blue accepted, orange own, struck-through rejected tokens (Okabe and Ito's colours): "
            "told apart with any common colour-vision deficiency; every drafter's accepted tokens "
            "take one colour. The text follows at once, the plots at the next start")
        self.act_safe_palette.setCheckable(True)
        self.act_safe_palette.setChecked(palette.active_name() == palette.SAFE)
        self.act_safe_palette.toggled.connect(self.set_safe_palette)
        v.addAction(self.act_safe_palette)

    def export_rounds_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog
        if self.controller.busy or self.controller.session is None or not self.shown.events:
            self.banner.show_message("info", "Run, or open a session, and let it end: then its "
                                             "rounds can be exported.")
            return
        default = Path.home() / "rounds.gif"
        path, chosen = QFileDialog.getSaveFileName(self, "Export the rounds", str(default),
                                                   "GIF (*.gif);;MP4 video (*.mp4)")
        if path:
            path, wanted = Path(path), ".mp4" if "mp4" in chosen else ".gif"
            if path.suffix.lower() not in (".gif", ".mp4") or (path == default and wanted == ".mp4"):
                path = path.with_suffix(wanted)        # (the filter chosen, the name left as it was)
            self.export_rounds(path)

    def export_rounds(self, path: Path, pace_ms: int = 1500) -> int:
        """The run shown, round by round as the window draws it (the Round tab shown), into an
        animated GIF or (``path`` ending .mp4) an MP4 video at the window's size; the view comes
        back to where it was. Frames written (0: the banner says why none)."""
        from .gif import each_round, write_gif
        from .video import NO_FFMPEG, ffmpeg_exe, write_mp4
        if path.suffix.lower() == ".mp4" and ffmpeg_exe() is None:
            self.banner.show_message("warning", f"The rounds were not exported: {NO_FFMPEG}.")
            return 0
        c, tab = self.controller, self.tabs.currentWidget()
        back = c.shown_upto
        images = [self.grab().toImage() for _ in each_round(self)]
        self.shown.seek(back)
        self.tabs.setCurrentWidget(tab)
        try:
            write = write_mp4 if path.suffix.lower() == ".mp4" else write_gif
            written = write(images, path, pace_ms)
        except (ValueError, OSError) as exc:
            self.banner.show_message("warning", f"The rounds were not exported: {exc}.")
            return 0
        self.statusBar().showMessage(f"{path.name}: {written} frames", 4000)
        return written

    def set_presenter(self, on: bool) -> None:
        """View ▸ Presenter (app/presenter.py)."""
        (self.presenter.enter if on else self.presenter.leave)()
        if self.act_presenter.isChecked() != on:
            self.act_presenter.setChecked(on)

    def set_presenter_scale(self, factor: float) -> None:
        """View ▸ Presenter scale: kept in the settings; in presenter mode, applied at once."""
        for f, a in self.presenter_scales.items():
            a.setChecked(f == factor)
        self.settings.setValue(PRESENTER_SCALE_KEY, factor)
        if self.presenter.on:
            self.presenter.leave()
            self.presenter.enter(factor)
        else:
            self.presenter.scale = factor

    def set_safe_palette(self, on: bool) -> None:
        """View ▸ Colour-blind safe palette (app/palette.py): kept in the settings; the text,
        its legend and the step picture are drawn again in it (not during a run)."""
        name = palette.SAFE if on else palette.STANDARD
        palette.use(name)
        self.settings.setValue(PALETTE_KEY, name)
        if not self.controller.busy:
            self.shown.session = None              # the views are built again from the session
            self.shown.draw()
        self.statusBar().showMessage(f"The {name} palette: the plots take it at the next start", 4000)

    # ------------------------------------------------------------------ what menu items open
    def show_lessons(self, index: int | None = None) -> None:
        """Help ▸ Lessons: the lessons' panel at lesson ``index`` (from 0; None: where the user
        left off), the window set up for it (once the plots exist)."""
        if not self.panels_ready:
            QTimer.singleShot(100, lambda: self.show_lessons(index))
            return
        if self.lessons is None:
            from .lesson_panel import PANEL_WIDTH, LessonPanel
            self.lessons = LessonPanel(self, self.settings)
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.lessons)
            self.resizeDocks([self.lessons], [PANEL_WIDTH], Qt.Orientation.Horizontal)
        elif index is None and self.lessons.index >= 0:   # back to the lesson as it was left:
            self.lessons.show()                           # its runs and settings kept
            self.lessons.raise_()
            return
        self.lessons.open(self.lessons.saved_index() if index is None else index)

    def model_library(self):
        """File ▸ Model library (app/library_dialog.py): a model picked there becomes the
        target or the draft."""
        from .library_dialog import LibraryDialog
        dialog = LibraryDialog(self.settings, self.pair_panel.pair()[0], self)

        def use(role: str, path: str) -> None:
            t, d = self.pair_panel.pair()
            self.pair_panel.set_pair(Path(path) if role == "target" else t,
                                     Path(path) if role == "draft" else d)
        dialog.use.connect(use)
        dialog.set_busy(self.controller.busy)
        dialog.setModal(False)
        dialog.show()
        self.library_dialog = dialog
        return dialog

    def quantize_draft_dialog(self) -> None:
        from .quantize_dialog import open_quantize_dialog
        open_quantize_dialog(self, self.pair_panel.pair()[1], self.compare)

    def copy_text(self, full: bool = False) -> None:
        text = self.token_view.full_text() if full else self.token_view.generated_text()
        QGuiApplication.clipboard().setText(text)
        self.statusBar().showMessage("Copied to the clipboard", 2000)
