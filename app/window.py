"""The SpecScope main window.

Left: the prompt (and its examples), the pair (pickers, doctor verdict, facts,
load progress), the drafter and the parameters. Right: the live token view over a tab stack (plots, cost
model, the latest round explained). Bottom: the stats bar.

Threads: an ``EngineWorker`` (load + runs) and a ``DoctorWorker`` (pair
checks), each on its own QThread. Round events arrive in batches through
``events_ready`` and are only queued; ``_refresh`` (a timer, at most every
``REFRESH_PERIOD_MS``) applies them: token view, stats fold, plots, cost panel.
"""

from __future__ import annotations

import csv
import json
import logging
import time
from collections import deque
from pathlib import Path

from PySide6.QtCore import QSettings, QSize, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QKeySequence
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import (QCheckBox, QFileDialog, QHBoxLayout, QLabel, QMainWindow,
                               QMessageBox, QScrollArea, QSplitter, QTabWidget, QToolBar,
                               QToolButton, QVBoxLayout, QWidget)

from specscope.core.measure.stats import fold

from .controls import DEFAULT_PROMPT, ParamsPanel, PromptEditor
from .desktop import guard_wheel, place_window
from .errors import MessageBanner, setup_logging
from .pair_panel import PairPanel, gguf_paths
from .playback import PaceControl, Playback, Scrubber
from .round_view import RoundExplainer
from .session_actions import SessionActions
from .stats_bar import StatsBar
from .token_view import TokenView, legend_html
from .worker import DoctorWorker, EngineWorker, RunRequest, start_thread

log = logging.getLogger("specscope.app")

REFRESH_PERIOD_MS = 50           # the GUI applies new events 20 times a second (the text view
                                 # repaint is most of a tick: 30 Hz took 17 % of a core in a run)
STATS_PERIOD_MS = 250            # the stats bar's numbers: 4 times a second
PANEL_PERIOD_MS = 1000           # the visible plot / cost / round tab redraws once a second in a run
                                 # (the four plots' update and repaint cost ~10-20 ms of UI CPU)
PRELOAD_DELAY_MS = 150           # load the pair this long after the window is shown
MAX_RECENT_PAIRS = 8
TEXT_MIN_LINES = 8               # the generated text never gets fewer lines than this
SETTINGS_VERSION = 1
SWEEP_RUNNING = ("A sweep is running in the Compare tab: stop it there (or let it finish) "
                 "before starting a run.")
MEASURING = ("A measurement is running in the Cost model tab (a calibration, the distance or the "
             "synthetic sweep): let it finish or stop it before starting a run.")


class MainWindow(QMainWindow, SessionActions):
    start_requested = Signal(object)
    measure_requested = Signal(object)
    warm_up_requested = Signal()
    preload_requested = Signal(object)
    step_requested = Signal(int)
    resume_requested = Signal(int)
    cancel_requested = Signal()
    shutdown_requested = Signal()
    check_requested = Signal(int, str, str)
    # for tests and the benchmark
    run_done = Signal(int, str)          # run_id, finish (after the final refresh)
    step_done = Signal(int)              # run_id: a step was applied to the views
    pair_report_shown = Signal(object)   # PairReport, or an exception

    @property
    def events(self) -> list:
        """The round events of the run shown."""
        if self.session is None:
            return []
        events = self.session.run.events
        return events if self._view_upto is None else events[:self._view_upto]

    def __init__(self, model: Path | None = None, draft: Path | None = None,
                 settings: QSettings | None = None, preload: bool = True):
        super().__init__()
        self.setWindowTitle("SpecScope — speculative decoding, live")
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings()
        self.log_path = setup_logging()
        self._preload_enabled = preload

        self._run_id = 0
        self._check_id = 0
        self.active: RunRequest | None = None       # the run in progress
        self.mode = "idle"                          # idle | running | stepping | paused
        self._pending: list = []                    # arrived, not yet applied
        self.shown_request: RunRequest | None = None   # the live run shown (None: a recording)
        self.vocab = None
        self.report = None
        from specscope.core.session.session import Workbench
        self.workbench = Workbench()                # baselines by run key, the latest spec session
        self.session = None                         # the session shown (core/session/session.py)
        self._live = None                           # the session the active run writes to: the
                                                    # one shown, or a baseline measured beside it
        self._view_upto: int | None = None          # the views show this many rounds (scrubber)
        self._replaying = False                     # a recording plays through the playback
        self._finish_waiting = None                 # (run_id, finish) while the playback drains
        self.stats = None
        self._loaded_key = None
        self._closing = False
        self.refresh_count = 0
        self._panels_dirty = False
        self._stats_stale = False
        self._panels_shown_at = 0.0
        self._stats_shown_at = 0.0
        self._dirty_tabs: set = set()
        self.refresh_costs: deque = deque(maxlen=10_000)   # (wall s, UI-thread CPU s) per refresh

        self._build_ui()
        self._build_actions()
        self._start_threads()
        self._restore(model, draft)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_PERIOD_MS)
        self.timer.timeout.connect(self._refresh)
        self.timer.start()
        self._update_buttons()
        guard_wheel(self)         # a wheel scrolling the panels passes over their inputs
        QTimer.singleShot(0, self._build_panels)

    def _build_panels(self) -> None:
        """Build the pyqtgraph views (plots, cost model, Compare) once the window shows: importing
        pyqtgraph takes about a second. Until then their tabs hold a "loading…" line."""
        if self.panels_ready or self._closing:
            return
        from .compare_view import CompareView
        from .cost_panel import CostPanel
        from .plots import PlotsPanel
        current = self.tabs.currentIndex()
        self.plots, self.cost_panel = PlotsPanel(), CostPanel()
        scroll = QScrollArea()              # the cost model is tall: scroll rather than squeeze it
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        from .synth_view import SynthCurveView      # below it: the measured synthetic curve
        self.synth_view = SynthCurveView()
        self.synth_view.source = self._synth_sweep_settings
        from .synth_view import sweep
        self.synth_view.use_task(self._engine_task(
            lambda settings, engine, progress, stop: sweep(settings, progress, stop, engine)))
        cost_page = QWidget()
        cost_lay = QVBoxLayout(cost_page)
        cost_lay.setContentsMargins(0, 0, 0, 0)
        cost_lay.addWidget(self.cost_panel, 1)
        self.cost_panel.calibrate_button.clicked.connect(self.calibrate_clicked)
        self.calibration_task = self._engine_task(self._calibrate_in)
        self.calibration_task.progressed.connect(self._calibration_progress)
        self.calibration_task.finished.connect(self._calibration_done)
        self.calibration_task.failed.connect(self._calibration_failed)
        from .distance_view import DistanceView     # then what an rpc-server placement costs
        self.distance_view = DistanceView()
        self.distance_view.source = self._distance_request
        box = self.pair_panel.placement                # it follows the placement controls
        for role in ("target", "draft"):
            box.devices[role].currentTextChanged.connect(lambda *_: self.distance_view.refresh())
            self.pair_panel.gpu_layers[role].valueChanged.connect(lambda *_: self.distance_view.refresh())
        box.rpc_edit.textChanged.connect(lambda *_: self.distance_view.refresh())
        cost_lay.addWidget(self.distance_view)
        cost_lay.addWidget(self.synth_view)
        scroll.setWidget(cost_page)
        for index, (page, title) in enumerate(((self.plots, "Plots"), (scroll, "Cost model"))):
            old = self.tabs.widget(index)
            self.tabs.removeTab(index)
            self.tabs.insertTab(index, page, title)
            old.deleteLater()
        # the Compare view needs neither the token view nor the run's parameters: a workspace of
        # its own, with the window's whole width and height
        self.compare = CompareView()
        try:                                   # the sweep's controls as they were left
            self.compare.from_dict(json.loads(self.settings.value("compare/json") or "{}"))
        except (ValueError, TypeError, AttributeError):
            pass
        self.compare.blocker = self._sweep_blocker
        self.compare.sweep_started.connect(self._sweep_state)
        self.compare.sweep_finished.connect(self._sweep_state)
        self.compare.sweep_finished.connect(self._calibration_to_cost_panel)
        self.compare.sweep_failed.connect(self._sweep_state)
        scroll = QScrollArea()              # a small screen: let it scroll rather than squeeze it
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(self.compare)
        self.workspace.addTab(scroll, "Compare (sweep)")
        self.workspace.setTabToolTip(1, "Sweep drafters × draft lengths × prompts against the target "
                                        "alone (Ctrl+2; Ctrl+1 returns to the live run)")
        from .session_compare_view import SessionCompareView
        from .timeline_view import TimelineView
        self.timeline = TimelineView()
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.setTabToolTip(self.tabs.count() - 1, "Each round's draft, verify, sync and Python "
                                "time on one time axis: click a bar to select its tokens")
        self.timeline.round_clicked.connect(self.token_view.select_round)
        self.token_view.round_hovered.connect(
            lambda i: self.timeline.highlight_round(i if i >= 0 else None))
        self.session_compare = SessionCompareView()
        self.workspace.addTab(self.session_compare, "Compare sessions")
        self.workspace.setTabToolTip(2, "Two recorded sessions side by side (File → Compare with "
                                        "session…; Ctrl+3)")
        t, d = self.pair_panel.pair()
        if t is not None:
            self.compare.set_pair(t, d)
        if self._restore_tab is not None and self._restore_tab < self.tabs.count():
            current = self._restore_tab
        self._restore_tab = None
        self.tabs.setCurrentIndex(current)
        if self._restore_workspace is not None and self._restore_workspace < self.workspace.count():
            self.workspace.setCurrentIndex(self._restore_workspace)
        self._restore_workspace = None
        if not self._splits_restored:      # first start: the text gets 40 % of the height (on a
            h = sum(self.right_split.sizes())     # 768-pixel screen the plots and their table fit)
            self.right_split.setSizes([h * 40 // 100, h - h * 40 // 100])
        for name in self.plots.plot_names():
            self.plots_menu.addAction(self._action(f"{name}…", lambda _=False, n=name: self.save_plot_dialog(n)))
        self.panels_ready = True
        guard_wheel(self)
        if self.stats is not None:
            self._panels_dirty = True
            self._dirty_tabs = self._panel_tabs()
            self._update_panels()
            self._show_measured()

    # ================================================================== UI
    def _build_ui(self) -> None:
        self.pair_panel = PairPanel()
        self.prompt = PromptEditor()
        self.params = ParamsPanel()
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(8, 8, 8, 8)
        ll.addWidget(self.prompt)               # what a first run needs first, at the top
        ll.addWidget(self.pair_panel)
        ll.addWidget(self.params.drafter)
        ll.addWidget(self.params)
        ll.addStretch(1)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(left)
        left_scroll.setMinimumWidth(400)
        left_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.banner = MessageBanner()
        self.banner.log_path = self.log_path
        self.token_view = TokenView()
        self.legend = QLabel(legend_html())
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.show_rejected = QCheckBox("show rejected drafts")
        self.show_rejected.setChecked(True)
        self.show_rejected.setToolTip("Show the drafted tokens the target rejected, struck through (Ctrl+H)")
        self.show_rejected.toggled.connect(self.token_view.set_show_rejected)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(8, 4, 8, 4)
        title = QLabel("<b>Generated text</b> <span style='color:#777'>— hover a token for its round, "
                       "position, drafter and why it was drafted</span>")
        title_row = QHBoxLayout()
        title_row.addWidget(title, 1)
        title_row.addWidget(self.show_rejected)
        tl.addLayout(title_row)
        tl.addWidget(self.legend)
        from .drafter_panel import SYNTH_WARNING
        self.synth_warning = QLabel(SYNTH_WARNING)       # shown while a synthetic run is shown
        self.synth_warning.setWordWrap(True)
        self.synth_warning.setStyleSheet("color:#ffffff; background:#b42318; font-weight:bold; padding:4px")
        self.synth_warning.setVisible(False)
        tl.addWidget(self.synth_warning)
        tl.addWidget(self.token_view, 1)
        # the text keeps room for a few lines whatever the tabs below it need (the drafter table)
        self.token_view.setMinimumHeight(TEXT_MIN_LINES * self.token_view.fontMetrics().lineSpacing()
                                         + 2 * self.token_view.frameWidth() + 8)
        self.playback = Playback(self)
        self.playback.released.connect(self._released)
        self.playback.backlog_changed.connect(self._backlog_changed)
        self.scrubber = Scrubber()
        self.scrubber.seek.connect(self.show_upto)
        self.scrubber.setEnabled(False)
        tl.addWidget(self.scrubber)

        # pyqtgraph takes about a second to import: the plot tabs are built once the window shows
        self.plots = self.cost_panel = self.compare = self.synth_view = None     # see _build_panels
        self.distance_view = self.calibration_task = None
        self.engine_facts: dict = {}        # the loaded pair's facts (worker._facts)
        self.timeline = self.session_compare = None
        self.panels_ready = False
        self._restore_tab = self._restore_workspace = None
        self._splits_restored = False
        self.round_view = RoundExplainer()
        self.tabs = QTabWidget()
        for title in ("Plots", "Cost model"):
            loading = QLabel(f"{title}: loading…")
            loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.tabs.addTab(loading, title)
        self.tabs.addTab(self.round_view, "Round (step mode)")
        self.tabs.setDocumentMode(True)
        self.tabs.currentChanged.connect(self._update_panels)
        self.expand_button = QToolButton()      # the tabs take the text's height too, and back
        self.expand_button.setCheckable(True)
        self.expand_button.setAutoRaise(True)
        self.expand_button.toggled.connect(self.set_tabs_expanded)
        self.tabs.setCornerWidget(self.expand_button, Qt.Corner.TopRightCorner)
        self.text_pane = top
        self.set_tabs_expanded(False)

        self.right_split = QSplitter(Qt.Orientation.Vertical)
        self.right_split.addWidget(top)
        self.right_split.addWidget(self.tabs)
        self.right_split.setStretchFactor(0, 1)
        self.right_split.setStretchFactor(1, 1)
        self.right_split.setChildrenCollapsible(False)
        right = QWidget()                       # the banner stays in view when the text is hidden
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.setSpacing(0)
        banner_row = QHBoxLayout()
        banner_row.setContentsMargins(8, 6, 8, 0)
        banner_row.addWidget(self.banner)
        rl.addLayout(banner_row)
        rl.addWidget(self.right_split, 1)
        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(left_scroll)
        self.main_split.addWidget(right)
        self.main_split.setStretchFactor(0, 0)
        self.main_split.setStretchFactor(1, 1)
        self.main_split.setSizes([430, 1010])
        self.right_split.setSizes([390, 410])
        self.main_split.setChildrenCollapsible(False)

        self.stats_bar = StatsBar()
        run_page = QWidget()
        cl = QVBoxLayout(run_page)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(0)
        cl.addWidget(self.main_split, 1)
        cl.addWidget(self.stats_bar)
        # workspaces: the live run (pair, prompt, text, tabs); the Compare sweep is added with the
        # plots (_build_panels) and has the window's whole width and height
        self.workspace = QTabWidget()
        self.workspace.setDocumentMode(True)
        self.workspace.addTab(run_page, "Run")
        self.workspace.setTabToolTip(0, "The live run: pair, prompt, generated text and its plots (Ctrl+1)")
        self.setCentralWidget(self.workspace)

        self.pair_panel.pair_changed.connect(self._pair_changed)
        self.pair_panel.demo_requested.connect(self.use_demo_pair)
        self.pair_panel.drafter_suggested.connect(self.use_drafter)
        self.params.changed.connect(self._params_changed)
        self.stats_bar.remeasure_requested.connect(self.remeasure_baseline)

    def set_tabs_expanded(self, on: bool) -> None:
        """Give the tabs below the text the whole height (the text is hidden), or share it again."""
        self.text_pane.setVisible(not on)
        if self.expand_button.isChecked() != on:
            self.expand_button.setChecked(on)
        self.expand_button.setText("⤡  Show the text" if on else "⤢  Expand")
        self.expand_button.setToolTip("Show the generated text above the tabs again" if on else
                                      "Give these tabs the whole height (hides the generated text "
                                      "until pressed again)")

    def tabs_expanded(self) -> bool:
        return self.expand_button.isChecked()

    def show_workspace(self, name: str) -> None:
        """'run' (the live run) or 'compare' (the sweep; once the panels are built)."""
        index = {"run": 0, "compare": 1, "sessions": 2}[name]
        if index < self.workspace.count():
            self.workspace.setCurrentIndex(index)

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
        self.act_replay = self._action("▷  Replay", self.replay_clicked, "Ctrl+P",
                                       "Play the run shown again at the chosen pace (no model runs)")
        # one state: the menu's tick and the checkbox above the text follow each other (toggled
        # carries the new state; setChecked to the same state emits nothing, so no loop)
        self.act_hide = self._action("Show rejected drafts", None, "Ctrl+H",
                                     "Show the drafted tokens the target rejected, struck through")
        self.act_hide.setCheckable(True)
        self.act_hide.setChecked(self.show_rejected.isChecked())
        self.act_hide.toggled.connect(self.show_rejected.setChecked)
        self.show_rejected.toggled.connect(self.act_hide.setChecked)

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
        self.workspace.currentChanged.connect(self._show_run_toolbar)

        m = self.menuBar()
        f = m.addMenu("&File")
        f.addAction(self._action("Open target…", lambda: self.pair_panel.target_browse.click(), "Ctrl+O"))
        f.addAction(self._action("Open draft…", lambda: self.pair_panel.draft_browse.click(), "Ctrl+Shift+O"))
        f.addAction(self._action("Use the demo pair", self.use_demo_pair))
        f.addAction(self._action("Quantize the draft…", self.quantize_draft_dialog, None,
                                 "Make harder-quantized copies of the draft with llama.cpp and "
                                 "sweep them against it in Compare"))
        f.addSeparator()
        f.addAction(self._action("Open session…", self.open_session_dialog, "Ctrl+Shift+L",
                                 "Show a recorded run (a .jsonl session file) without its models"))
        f.addAction(self._action("Save session…", self.save_session_dialog, "Ctrl+Shift+S",
                                 "Record the run shown (and its baseline) as a session file"))
        f.addAction(self._action("Compare with session…", self.compare_session_dialog, None,
                                 "The run shown (or a first recording) side by side with a recording"))
        f.addSeparator()
        f.addAction(self._action("Save text…", self.save_text_dialog, "Ctrl+S"))
        f.addAction(self._action("Save stats as JSON…", lambda: self.save_stats_dialog("json")))
        f.addAction(self._action("Save stats as CSV…", lambda: self.save_stats_dialog("csv")))
        self.plots_menu = f.addMenu("Save plot")
        f.addSeparator()
        f.addAction(self._action("Quit", self.close, "Ctrl+Q"))
        e = m.addMenu("&Edit")
        e.addAction(self._action("Copy generated text", self.copy_text, "Ctrl+Shift+C"))
        e.addAction(self._action("Copy prompt and text", lambda: self.copy_text(full=True)))
        v = m.addMenu("&View")
        v.addAction(self._action("Live run", lambda: self.show_workspace("run"), "Ctrl+1",
                                 "The pair, prompt, generated text and its plots"))
        v.addAction(self._action("Compare (sweep)", lambda: self.show_workspace("compare"), "Ctrl+2",
                                 "Sweep drafters × draft lengths × prompts, with the window's whole height"))
        v.addAction(self._action("Compare sessions", lambda: self.show_workspace("sessions"), "Ctrl+3",
                                 "Two recorded sessions side by side"))
        v.addAction(self._action("Expand the tabs below the text", lambda: self.set_tabs_expanded(
            not self.tabs_expanded()), "Ctrl+Shift+E", "Hide the generated text so the plots, cost "
                                                       "model and round get the whole height"))
        r = m.addMenu("&Run")
        for a in (self.act_run, self.act_step, self.act_stop, self.act_baseline, self.act_reset,
                  self.act_rerun):
            r.addAction(a)
        r.addSeparator()
        r.addAction(self.act_hide)
        h = m.addMenu("&Help")
        h.addAction(self._action("Guide", self.guide, "F1", "What the colours, plots, cost model "
                                                            "and step mode show"))
        h.addAction(self._action("Open the log folder", self.open_log_folder))
        h.addAction(self._action("About SpecScope", self.about))

    def _show_run_toolbar(self, *_args) -> None:
        self.run_toolbar.setVisible(self.workspace.currentIndex() == 0)

    def _start_threads(self) -> None:
        self.worker = EngineWorker()
        self.worker_thread = start_thread(self.worker, "specscope-engine")
        self.doctor = DoctorWorker()
        self.doctor_thread = start_thread(self.doctor, "specscope-doctor")
        w = self.worker
        self.start_requested.connect(w.start)
        self.warm_up_requested.connect(w.warm_up)
        self.preload_requested.connect(w.preload)
        self.step_requested.connect(w.step)
        self.resume_requested.connect(w.resume)
        self.cancel_requested.connect(w.cancel)
        self.shutdown_requested.connect(w.shutdown)
        w.closed.connect(self.worker_thread.quit, Qt.ConnectionType.DirectConnection)
        w.load_started.connect(self._load_started)
        w.load_progressed.connect(self.pair_panel.set_progress)
        w.engine_loaded.connect(self._engine_loaded)
        w.run_started.connect(self._run_started)
        w.events_ready.connect(self._events_ready)
        w.run_finished.connect(self._run_finished)
        w.calibration_progressed.connect(self._calibration_progressed)
        self.measure_requested.connect(w.measure)
        w.prefill_done.connect(self._prefill_done)
        w.step_paused.connect(self._step_paused)
        w.failed.connect(self._failed)
        w.crashed.connect(self._model_crashed)
        self.check_requested.connect(self.doctor.check)
        self.doctor.pair_checked.connect(self._pair_checked)
        self.doctor.check_failed.connect(self._check_failed)
        self.warm_up_requested.emit()

    # ================================================================== settings
    def _restore(self, model, draft) -> None:
        s = self.settings
        place_window(self, s.value("window/geometry"))     # inside the screen it opens on
        state = s.value("window/state")
        if state is not None:
            self.restoreState(state)
        for key, split in (("window/main_split", self.main_split), ("window/right_split", self.right_split)):
            v = s.value(key)
            if v is not None:
                split.restoreState(v)
                self._splits_restored = True
        tab = s.value("window/tab")
        if tab is not None:
            self._restore_tab = int(tab)        # applied once all the tabs exist
            self.tabs.setCurrentIndex(int(tab))
        workspace = s.value("window/workspace")
        if workspace is not None:
            self._restore_workspace = int(workspace)     # the Compare workspace is built later
        self.set_tabs_expanded(str(s.value("window/tabs_expanded", "false")).lower() == "true")
        params = s.value("params/json")
        if params:
            try:
                self.params.from_dict(json.loads(params))
            except (ValueError, TypeError):
                pass
        engine_kw = s.value("params/engine_json")
        if engine_kw:
            try:
                self.pair_panel.set_engine_kwargs(json.loads(engine_kw))
            except (ValueError, TypeError):
                pass
        self.prompt.set_text(s.value("params/prompt", DEFAULT_PROMPT) or DEFAULT_PROMPT)
        try:
            self.prompt.from_dict(json.loads(s.value("params/prompt_json") or "{}"))
        except (ValueError, TypeError, AttributeError):
            pass
        self.pair_panel.set_recent(self.recent_pairs())
        if model is not None or draft is not None:
            t, d = model, draft
            if t is None or d is None:
                demo = self._demo()
                t, d = t or (demo[0] if demo else None), d or (demo[1] if demo else None)
        else:
            t, d = s.value("pair/target"), s.value("pair/draft")
            # a target alone is a pair too (the n-gram drafters need no draft model)
            if not (t and Path(t).is_file() and (not d or Path(d).is_file())):
                demo = self._demo()
                t, d = demo if demo else (t, d)
        self.pair_panel.set_pair(t, d)
        if not t:
            self.banner.show_message("info", "No demo model pair is installed. Choose a target and a "
                                             "draft model (File ▸ Open, or drop .gguf files on the window).")

    def _demo(self):
        try:
            from specscope.core.models.demo import demo_pair
            return demo_pair()
        except Exception:  # noqa: BLE001 - no demo pair: the user picks one
            return None

    def recent_pairs(self) -> list[tuple[str, str]]:
        raw = self.settings.value("pair/recent") or "[]"
        try:
            pairs = [tuple(p) for p in json.loads(raw) if len(p) == 2]
        except (ValueError, TypeError):
            pairs = []
        return pairs

    def _remember_pair(self, target: Path, draft: Path) -> None:
        pair = (str(target), str(draft))
        pairs = [p for p in self.recent_pairs() if p != pair]
        pairs.insert(0, pair)
        self.settings.setValue("pair/recent", json.dumps(pairs[:MAX_RECENT_PAIRS]))
        self.pair_panel.set_recent(pairs[:MAX_RECENT_PAIRS])

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("version", SETTINGS_VERSION)
        t, d = self.pair_panel.pair()
        s.setValue("pair/target", str(t) if t else "")
        s.setValue("pair/draft", str(d) if d else "")
        s.setValue("params/json", json.dumps(self.params.to_dict()))
        s.setValue("params/engine_json", json.dumps(self.pair_panel.engine_kwargs()))
        s.setValue("params/prompt", self.prompt.text())
        s.setValue("params/prompt_json", json.dumps(self.prompt.to_dict()))
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("window/main_split", self.main_split.saveState())
        s.setValue("window/right_split", self.right_split.saveState())
        s.setValue("window/tab", self.tabs.currentIndex())
        s.setValue("window/workspace", self.workspace.currentIndex())
        s.setValue("window/tabs_expanded", self.tabs_expanded())
        if self.compare is not None:
            s.setValue("compare/json", json.dumps(self.compare.to_dict()))
        s.sync()

    # ================================================================== pair
    def use_demo_pair(self) -> None:
        demo = self._demo()
        if demo is None:
            from specscope.core.errors import ConfigError
            try:
                from specscope.core.models.demo import demo_pair
                demo_pair()
            except ConfigError as exc:
                self.banner.show_error(exc)
            return
        self.pair_panel.set_pair(*demo)

    def _pair_changed(self) -> None:
        t, d = self.pair_panel.pair()
        if self.mode == "idle":          # the old pair's run (or recording) is not this pair's
            self._show_nothing()
        if self.cost_panel is not None:
            self.cost_panel.show_calibrated(None)
        if self.compare is not None and not self.compare.running and t is not None:
            self.compare.set_pair(t, d)
        self.report = None
        self.prompt.set_template_available(None)
        self.pair_panel.clear_facts()
        self.pair_panel.set_load_state("idle")
        self._update_draft_problem()
        if not t:
            self.pair_panel.set_verdict_text("Choose a target model (and a draft model for draft-simple).")
            return
        self._check_id += 1
        if not d:
            self.pair_panel.set_no_draft()
            # the doctor reads the target alone (as its own draft) for its facts and chat template
            self.check_requested.emit(self._check_id, str(t), str(t))
            if self._preload_enabled and self.mode == "idle":
                QTimer.singleShot(PRELOAD_DELAY_MS, self._preload)
            return
        self.pair_panel.set_checking()
        self.check_requested.emit(self._check_id, str(t), str(d))

    @Slot(int, object)
    def _pair_checked(self, req_id: int, report) -> None:
        if req_id != self._check_id:
            return
        self.prompt.set_template_available(report.target.has_chat_template)
        if self.pair_panel.pair()[1] is None:          # a target alone: its facts, no verdict
            self.pair_panel.set_model_facts(0, report.target)
            self.pair_report_shown.emit(report)
            return
        self.report = report
        self.pair_panel.set_report(report)
        self._update_draft_problem()
        if report.compatible:
            t, d = self.pair_panel.pair()
            self._remember_pair(t, d)
            if self._preload_enabled and self.mode == "idle":
                QTimer.singleShot(PRELOAD_DELAY_MS, self._preload)
        self.pair_report_shown.emit(report)

    @Slot(int, object, str)
    def _check_failed(self, req_id: int, exc, tb: str) -> None:
        if req_id != self._check_id:
            return
        from .errors import describe
        self.pair_panel.set_verdict_text(describe(exc), "#b42318")
        self.banner.show_error(exc, tb, "The pair cannot be checked")
        self.pair_report_shown.emit(exc)

    def _preload(self) -> None:
        if self.mode != "idle" or self._closing or (self.compare is not None and self.compare.running):
            return
        req = self._request("spec", step=False, quiet=True)
        if req is not None:
            self.preload_requested.emit(req)

    def _params_changed(self) -> None:
        if self.mode == "idle" and (self.session is None or not self.events):
            self.legend.setText(legend_html(self.params.drafter.types()))

    def use_drafter(self, name: str) -> None:
        """Draft with ``name`` alone (the pair panel's suggestion when no draft fits)."""
        if self.mode == "idle":
            self.params.drafter.set_types([name])
            self.params.drafter.checks[name].setFocus()

    def _update_draft_problem(self) -> None:
        """Tell the drafter picker whether draft-simple can run with the chosen draft."""
        t, d = self.pair_panel.pair()
        if d is None:
            problem = ("draft-simple needs a draft model: choose one under Models, or uncheck "
                       "draft-simple to draft with the n-gram types alone.")
        elif self.report is not None and not self.report.compatible:
            problem = (f"draft-simple: {d.name} cannot draft for this target ({self.report.reason}); "
                       "choose another draft, or uncheck draft-simple.")
        else:
            problem = ""
        self.params.drafter.set_draft_problem(problem)

    # ================================================================== drag and drop
    def dragEnterEvent(self, event):  # noqa: N802
        if gguf_paths(event.mimeData()) or self.session_paths(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event):  # noqa: N802
        sessions = self.session_paths(event.mimeData())
        if sessions:
            self.open_session(sessions[0])
            event.acceptProposedAction()
            return
        paths = gguf_paths(event.mimeData())
        if not paths:
            return
        if len(paths) >= 2:
            a, b = sorted(paths[:2], key=lambda p: p.stat().st_size if p.exists() else 0, reverse=True)
            self.pair_panel.set_pair(a, b)
        else:
            t, d = self.pair_panel.pair()
            self.pair_panel.set_pair(paths[0], d)
        event.acceptProposedAction()

    # ================================================================== runs
    def _engine_settings(self):
        from specscope.core.engine.engine import EngineSettings
        # threads 0 is "auto": the engine worker measures the fastest count when it loads the pair
        return EngineSettings(n_ctx=self.params.n_ctx.value(), **self.pair_panel.engine_kwargs())

    def _request(self, kind: str, step: bool = False, quiet: bool = False) -> RunRequest | None:
        from specscope.core.errors import ConfigError
        t, d = self.pair_panel.pair()
        try:
            if t is None:
                raise ConfigError("choose a target model first (File ▸ Open target, or drop a .gguf file)")
            prompt = self.prompt.text()
            if not prompt.strip():
                raise ConfigError("the prompt is empty: type one or choose an example")
            spec = self.params.spec_settings() if kind == "spec" else None
            if spec is not None:
                problem = self.params.drafter.problem()
                if problem:
                    raise ConfigError(problem)
                spec.validate()
            sampler = self.params.sampler_settings()
            sampler.validate()
        except ConfigError as exc:
            if not quiet:
                self.banner.show_error(exc)
            return None
        if (spec is None or not spec.uses_draft_model) and self.report is not None \
                and not self.report.compatible:
            d = None                 # no draft model needed: do not load a draft the gate refuses
        self._run_id += 1
        return RunRequest(self._run_id, kind, t, d, self._engine_settings(), prompt, spec, sampler,
                          self.params.n_predict.value(), step=step, chat=self.prompt.chat_enabled(),
                          system=self.prompt.system_text())

    def _synth_sweep_settings(self):
        """What the cost panel's synthetic-acceptance sweep measures: the chosen pair with
        draft-simple at the drafter box's n_max, sync and p_min, the prompt and sampler, at most
        64 tokens a run (core/measure/synth_sweep.py)."""
        from dataclasses import replace

        from specscope.core.errors import ConfigError
        from specscope.core.measure.sweep import SweepSettings
        t, d = self.pair_panel.pair()
        if t is None or d is None:
            raise ConfigError("the synthetic sweep needs a target and a draft model")
        self._require_free_cores(self.synth_view)
        spec = replace(self.params.spec_settings(), synth_len=-1.0, synth_rates=())
        if spec.n_max < 1:
            raise ConfigError("set draft-simple's n_max to 1 or more")
        return SweepSettings(target=Path(t), drafts=(Path(d),), n_values=(spec.n_max,),
                             prompts=(("prompt", self.prompt.text()),),
                             n_predict=max(2, min(64, self.params.n_predict.value())),
                             sampler=self.params.sampler_settings(), engine=self._engine_settings(),
                             sync=spec.sync, p_min=spec.p_min, spec=spec,
                             chat=self.prompt.chat_enabled(), system=self.prompt.system_text())

    def _engine_settings_as_loaded(self, target):
        """The controls' engine settings, as the run loaded ``target``'s pair: the thread counts
        "auto" chose and repacking as the crash probe left it (what a measurement of the pair
        in its own engine must use to time what the runs do)."""
        from dataclasses import replace
        engine, facts = self._engine_settings(), self.engine_facts
        if facts.get("target", {}).get("path") != str(target):
            return engine
        threads = facts.get("threads", {})
        return replace(engine, repack="on" if facts.get("repack") else "off", **{
            f"{role}_threads": threads[role][0] for role in threads
            if getattr(engine, f"{role}_threads") == 0})

    def _last_run_position(self) -> int:
        """Where the latest speculative run's typical round sat (the prompt plus half the
        generation, rounded to 16): the position to time decodes at."""
        from specscope.core.measure.calibrate import DEFAULT_N_PAST
        last = self.workbench.last_spec
        if last is None or not last.prompt_tokens:
            return DEFAULT_N_PAST
        return max(16, round((len(last.prompt_tokens) + last.settings.n_predict / 2) / 16) * 16)

    def _engine_task(self, task):
        """An EngineTask: ``task(request, engine, progress, stop)`` in the window's engine, on the
        engine's thread (app/task.py)."""
        from .task import EngineTask
        et = EngineTask(task, self._submit_measurement, self)
        self.worker.measure_progressed.connect(et.on_progress)
        self.worker.measured.connect(et.on_done)
        self.worker.measure_failed.connect(et.on_failed)
        return et

    def _submit_measurement(self, fn):
        """Send ``fn(engine, progress, stop)`` to the engine worker for the pair and settings of
        the controls (loaded first if need be); the MeasureRequest sent."""
        from .worker import MeasureRequest
        t, d = self.pair_panel.pair()
        self._run_id += 1
        req = MeasureRequest(self._run_id, t, d, self._engine_settings(), fn)
        self.measure_requested.emit(req)
        return req

    @staticmethod
    def _calibrate_in(request: dict, engine, progress, stop):
        from specscope.core.measure.calibrate import get_calibration
        return get_calibration(engine, request["k_max"], sampler=request["sampler"],
                               n_past=request["n_past"], k_draft=request["k_max"],
                               progress=progress, stop=stop)

    def calibrate_clicked(self) -> None:
        """The cost panel's Calibrate: this pair timed on this machine in the window's own engine
        (on the engine's thread; cached), then drawn beside the textbook curve. Pressed while it
        runs, it stops it."""
        from specscope.core.errors import ConfigError
        from .cost_panel import N_PLOT_MAX
        if self.calibration_task.running:
            self.calibration_task.request_stop()
            self.cost_panel.set_calibrating("Stopping…")
            return
        t, d = self.pair_panel.pair()
        try:
            if t is None or d is None:
                raise ConfigError("calibrating needs a target and a draft model")
            self._require_free_cores(self.calibration_task)
        except ConfigError as exc:
            self.banner.show_message("warning", f"Cannot calibrate: {exc}.")
            return
        spec = self.params.spec_settings()
        self.cost_panel.set_calibrating("Stop calibrating (0%)")
        self.stats_bar.set_state("Calibrating the pair", "Run, Step and Baseline wait until it ends")
        self.calibration_task.start(dict(
            target=t, draft=d, k_max=max(N_PLOT_MAX, spec.n_max) + 1, sync=spec.sync,
            sampler=self.params.sampler_settings(), n_past=self._last_run_position()))

    def _calibration_progress(self, fraction: float, _what: str) -> None:
        if not self.calibration_task.stopping:
            self.cost_panel.set_calibrating(f"Stop calibrating ({100 * fraction:.0f}%)")

    def _calibration_done(self, request: dict, result) -> None:
        cal, cached = result
        self.cost_panel.set_calibrating(None)
        if self.pair_panel.pair() == (request["target"], request["draft"]):     # still this pair
            self.cost_panel.show_calibrated(cal, request["sync"])
            self.cost_panel.set_calibration(Path(request["draft"]).name, cal, cached)
        if self.mode == "idle":
            self.stats_bar.set_state("Idle")

    def _calibration_failed(self, exc, tb: str) -> None:
        self.cost_panel.set_calibrating(None)
        if exc is not None:
            self.banner.show_error(exc, tb, "The calibration failed")
        if self.mode == "idle":
            self.stats_bar.set_state("Calibration stopped" if exc is None else "Idle")

    def _require_free_cores(self, asking) -> None:
        """ConfigError when a run, a Compare sweep or another of the cost tab's measurements than
        ``asking`` holds the cores: two measurements at once spoil both."""
        from specscope.core.errors import ConfigError
        if self.mode != "idle" or (self.compare is not None and self.compare.running) or \
                self._measuring(but=asking):
            raise ConfigError("wait until the run, the Compare sweep or the other measurement ends: "
                              "both would share the cores")

    def _measuring(self, but=None) -> bool:
        """A measurement of the cost tab (calibration, distance, synthetic sweep) other than
        ``but`` is running."""
        return any(task is not None and task is not but and task.running
                   for task in (self.calibration_task, self.distance_view, self.synth_view))

    def _distance_request(self):
        """What the cost tab's distance view measures: the pair as the controls place it now, and
        the round to account for: the latest speculative run's (its draft length, acceptance and,
        when it ran under this placement, its rounds), else the drafter box's n_max at the cost
        panel's α (core/measure/distance.py)."""
        from specscope.core.measure.calibrate import alpha_acceptance
        from specscope.core.errors import ConfigError

        from .distance_view import DistanceRequest, RoundShape
        t, d = self.pair_panel.pair()
        if t is None:
            raise ConfigError("choose a target model first")
        self._require_free_cores(self.distance_view)
        engine, spec = self._engine_settings_as_loaded(t), self.params.spec_settings()
        last = self.workbench.last_spec
        stats = last.spec.stats if last is not None and last.spec is not None else None
        if stats is not None and stats.n_draft_rounds and last.settings.spec.n_max > 0:
            same = (last.settings.engine.rpc, last.settings.engine.target_devices,
                    last.settings.engine.draft_devices, last.settings.engine.target_gpu_layers,
                    last.settings.engine.draft_gpu_layers) == (
                engine.rpc, engine.target_devices, engine.draft_devices,
                engine.target_gpu_layers, engine.draft_gpu_layers)
            n = last.settings.spec.n_max
            shape = RoundShape(
                n=n, acceptance=tuple(a / stats.n_draft_rounds for a in stats.accepted_at[:n]),
                sync=last.settings.spec.sync, n_draft=min(n, stats.n_drafted / stats.n_draft_rounds),
                source="the last run's acceptance and draft length",
                run_rounds=stats.n_rounds if same else 0, run_seconds=stats.t_total if same else 0.0)
        else:
            n = max(1, spec.n_max)
            alpha = self.cost_panel.alpha if self.cost_panel is not None else 0.7
            shape = RoundShape(n=n, acceptance=alpha_acceptance(alpha, n), sync=spec.sync,
                               source=f"α = {alpha:.2f}, no run yet")
        return DistanceRequest(target=str(t), draft=str(d) if d else None, engine=engine,
                               sampler=self.params.sampler_settings(), n_past=self._last_run_position(),
                               shape=shape)

    def _sweep_running(self) -> bool:
        """True (and says so) while a Compare sweep or a measurement of the cost tab runs: a run
        now would compete with it for the cores and spoil both measurements."""
        if self._measuring():
            self.banner.show_message("warning", MEASURING)
            return True
        if self.compare is None or not self.compare.running:
            return False
        self.show_workspace("run")
        self.banner.show_message("warning", SWEEP_RUNNING)
        return True

    def _sweep_state(self, *_args) -> None:
        """The stats bar says when a sweep holds the machine (and when it is free again)."""
        if self.mode != "idle":
            return
        if self.compare.running:
            self.stats_bar.set_state("Compare sweep running", "Run, Step and Baseline wait until "
                                                              "the sweep in the Compare tab ends")
        else:
            self.stats_bar.set_state("Idle")
            if self.banner.message == SWEEP_RUNNING:      # no longer true
                self.banner.dismiss()

    def _calibration_to_cost_panel(self, result) -> None:
        """The cost panel says where the sweep's calibration stands (one taken under load
        first: that is the one to warn about)."""
        if result.calibrations:
            name, cal = max(result.calibrations.items(), key=lambda kv: (kv[1].under_load, bool(kv[1].note)))
            self.cost_panel.set_calibration(name, cal, bool(result.from_cache.get(name)))

    def _sweep_blocker(self) -> str:
        """Why the Compare view cannot start a sweep now ("" when it can)."""
        if self.mode == "idle":
            return ("The Run tab is loading the models: start the sweep once they are loaded."
                    if self.pair_panel.loading() else "")
        return ("A run is in progress in the Run tab: stop it there (Esc) or let it finish "
                "before starting a sweep.")

    def _start(self, req: RunRequest) -> None:
        self.show_workspace("run")
        self.active, self._live = req, None
        self.mode = "stepping" if req.step else "running"
        self.stats_bar.set_state("Starting…")
        if self.banner.level == "error" or self.banner.level == "info":
            self.banner.dismiss()
        self._update_buttons()
        self.start_requested.emit(req)

    def run_clicked(self) -> None:
        if self.mode == "paused" and self.active is not None:
            self.mode = "running"
            self.stats_bar.set_state("Running…")
            self._update_buttons()
            self.resume_requested.emit(self.active.run_id)
            return
        if self.mode != "idle" or self._sweep_running():
            return
        req = self._request("spec")
        if req is not None:
            self._start(req)

    def step_clicked(self) -> None:
        if self.mode == "paused" and self.active is not None:
            self.mode = "stepping"
            self._update_buttons()
            self.step_requested.emit(self.active.run_id)
            return
        if self.mode != "idle" or self._sweep_running():
            return
        req = self._request("spec", step=True)
        if req is not None:
            self.tabs.setCurrentWidget(self.round_view)
            self._start(req)

    def stop_clicked(self) -> None:
        if self.active is None:
            return
        self.active.stop.set()
        self.active.ui_ready.set()
        self.playback.flush()                # the rounds already run are shown at once
        self.stats_bar.set_state("Stopping…")
        if self.mode == "paused":
            self.cancel_requested.emit()

    def baseline_clicked(self) -> None:
        if self.mode != "idle" or self._sweep_running():
            return
        req = self._request("baseline")
        if req is not None:
            self._start(req)

    def reset_clicked(self) -> None:
        if self.active is not None:
            self.stop_clicked()
        self._show_nothing()
        if self.active is None:
            self.stats_bar.set_state("Idle")

    def _show_nothing(self) -> None:
        """Forget the run shown (and the latest speculative run) and empty the views."""
        self.session = self.shown_request = self.workbench.last_spec = None
        self._clear_views()

    def _clear_views(self, running: bool = False) -> None:
        """Empty every view of the run shown: the text and its legend, the plots, timeline, round
        explained, cost panel's measurement, stats bar and scrubber; drop the rounds not shown
        yet. ``running``: a run starts (the plots say they will update, and hold their
        repaints; the cost panel keeps the what-if sliders until the run measures)."""
        self._pending.clear()
        self.playback.clear()
        self._replaying = False
        self._view_upto = self.stats = None
        self._panels_dirty = self._stats_stale = False
        self._dirty_tabs = set()
        self.token_view.clear_tokens()
        self.legend.setText(legend_html(self.params.drafter.types()))
        if self.panels_ready:
            self.plots.clear(update_period_s=PANEL_PERIOD_MS / 1e3 if running else None)
            if running:
                self.plots.hold_repaints()
            else:
                self.cost_panel.clear()
            self.timeline.clear()
        self.round_view.clear()
        self.stats_bar.clear()
        self.synth_warning.setVisible(False)
        self.scrubber.show_at(0, 0)
        self._update_buttons()

    def _update_buttons(self) -> None:
        idle, paused = self.mode == "idle", self.mode == "paused"
        self.act_run.setEnabled(idle or paused)
        self.act_step.setEnabled(idle or paused)
        self.act_baseline.setEnabled(idle)
        self.act_stop.setEnabled(not idle)
        self.act_rerun.setEnabled(self.can_rerun)
        self.act_run.setText("▶  Continue" if paused else "▶  Run")
        has_rounds = self.session is not None and bool(self.session.run.events)
        self.act_replay.setEnabled(idle and has_rounds)
        self.scrubber.setEnabled(idle and has_rounds)
        self.pair_panel.setEnabled(idle)
        self.params.setEnabled(idle)
        self.params.drafter.setEnabled(idle)
        self.prompt.set_read_only(not idle)

    # ================================================================== worker signals
    @Slot(str)
    def _load_started(self, text: str) -> None:
        self.pair_panel.set_load_state("loading", text + "…")
        self.stats_bar.set_state("Loading models…")

    @Slot(dict)
    def _engine_loaded(self, facts: dict) -> None:
        self.engine_facts = facts
        names = " + ".join(Path(facts[r]["path"]).name for r in ("target", "draft") if r in facts)
        self.pair_panel.set_load_state("idle", f"Loaded {names} (context {facts['n_ctx']})")
        self.pair_panel.set_load_facts(facts)
        if self.mode == "idle" and not (self.session is not None and self.session.is_recording):
            self.stats_bar.set_state("Ready")

    @Slot(object, bool)
    def _model_crashed(self, verdict, retrying: bool) -> None:
        """A model crashed llama.cpp in the probe's child process (this window is unharmed)."""
        name = Path(verdict.model).name
        what = verdict.signal_name or verdict.status
        message = f"{name} crashed llama.cpp ({what}) in a test process"
        if verdict.cause:
            message += f". Likely cause: {verdict.cause}"
        message += (". Retrying once with repacking off." if retrying else
                    ". The window is unaffected; choose another model or other settings.")
        details = "\n".join([verdict.describe(), "", "Last llama.cpp log lines:", *verdict.log_tail])
        self.banner.show_message("warning" if retrying else "error", message, details)

    @Slot(int, float)
    def _calibration_progressed(self, run_id: int, fraction: float) -> None:
        """The cost policy measures the pair before the first round (a cached calibration
        reports nothing): say so, with how far it is."""
        if self.active is None or run_id != self.active.run_id or self.active.stop.is_set():
            return
        self.stats_bar.set_state(f"Calibrating the pair for the cost policy… {100 * fraction:.0f}%",
                                 "Measured once per pair and settings, then cached · Esc: stop")

    @Slot(object)
    def _run_started(self, info) -> None:
        if self.active is None or info.run_id != self.active.run_id:
            return
        self._live = self.workbench.start(self.run_settings(self.active), info.kind,
                                          prompt_text=info.prompt_text,
                                          prompt_tokens=info.prompt_tokens, vocab=info.vocab)
        self.pair_panel.end_loading()
        if self.session is not None and self.session.takes_baseline(self._live):   # beside it
            self.stats_bar.set_state("Measuring the baseline beside the run…", "The target alone, "
                                     "for the speed-up; the views keep the speculative run")
            self.active.ui_ready.set()
            return
        self.shown_request, self.session, self.vocab = self.active, self._live, info.vocab
        self._clear_views(running=True)
        self.token_view.begin(info.prompt_text, info.vocab, info.prompt_tokens)
        spec = self.active.spec
        self.legend.setText(legend_html(spec.types if spec is not None else ()))
        if info.calibration is not None and self.cost_panel is not None:
            self.cost_panel.set_calibration(Path(self.active.draft).name, *info.calibration)
            self.cost_panel.show_calibrated(info.calibration[0], self.active.spec.sync)
        label = "baseline (target only)" if info.kind == "baseline" else "speculative"
        self.stats_bar.set_state(f"Step mode ({label})" if self.active.step else f"Running {label}…")
        # The engine waits (prefill included) until the cleared plots have painted, so its first
        # rounds do not compete with those paints for the GIL; the first live plot update then
        # waits a full panel period.
        self._panels_shown_at = time.perf_counter()
        self._ready_when_painted(self.active.ui_ready)

    def _ready_when_painted(self, ready, seen: int = -1, quiet: int = 0) -> None:
        """Set ``ready`` once every held plot has painted. pyqtgraph settles in a cascade of
        paints, so the plots count as painted after two checks (2 ms apart) without a paint;
        held plots are released one at a time (each paint is an event-loop stall of several
        ms). The worker waits at most UI_READY_TIMEOUT_S."""
        if ready.is_set():
            return
        if self.plots is None:
            ready.set()
            return
        n = self.plots.paints
        quiet = quiet + 1 if n == seen else 0
        if quiet >= 2:
            if not self.plots.release_repaint():
                ready.set()
                return
            quiet = 0
        QTimer.singleShot(2, self, lambda: self._ready_when_painted(ready, n, quiet))

    @Slot(int, list)
    def _events_ready(self, run_id: int, batch: list) -> None:
        if self.active is not None and run_id == self.active.run_id:
            if self._live is not None and self._live is not self.session:    # beside the run shown
                self._live.run.append(batch)
            elif self.active.step:
                self._pending.extend(batch)
            else:
                self.playback.feed(batch)

    @Slot(int)
    def _step_paused(self, run_id: int) -> None:
        if self.active is None or run_id != self.active.run_id:
            return
        self._refresh()
        self.mode = "paused"
        self._update_panels()
        n = len(self.events)
        self.stats_bar.set_state(f"Paused after round {n - 1}",
                                 "F10: the next round · Ctrl+R: run on · Esc: stop")
        self._update_buttons()
        self.step_done.emit(run_id)

    @Slot(int, object)
    def _prefill_done(self, run_id: int, prefill) -> None:
        if self.active is not None and run_id == self.active.run_id and self._live is not None:
            self._live.run.prefill_s = prefill.seconds

    @Slot(int, str)
    def _run_finished(self, run_id: int, finish: str) -> None:
        if self.active is None or run_id != self.active.run_id:
            return
        if self.playback.backlog:            # the engine is done; the views follow at their pace
            self._finish_waiting = (run_id, finish)
            self.stats_bar.set_state("Engine done; showing the rest at your pace…")
            return
        self._refresh()
        req = self.active
        self.active = None
        self.mode = "idle"
        self._update_panels()
        stats = self.stats
        live, self._live = self._live, None    # None when stopped while calibrating: no session
        started = live is not None
        if started:
            live.run.end(finish)
            self.workbench.finished(live)
            if live is not self.session:       # a baseline beside the run shown: now its own
                self.session.attach_baseline(live)
            self.session_finished(live)
            if stats is not None:
                self._show_measured()
        words = {"eog": "the model ended the text", "n_predict": "n_predict reached",
                 "context": "the context is full", "stopped": "stopped"}.get(finish, finish)
        self.stats_bar.set_state(("Baseline measured" if live is not self.session else "Finished")
                                 + f": {words}" if started else
                                 "Stopped while calibrating: no round was run")
        if finish == "context":
            self.banner.show_message(
                "warning", f"The context filled up after {stats.n_tokens if stats else 0} "
                           f"generated tokens (context size {req.engine_settings.n_ctx}). Raise the context "
                           "size or shorten the prompt to generate more.")
        self._update_buttons()
        self.run_done.emit(run_id, finish)

    @Slot(int, object, str)
    def _failed(self, run_id: int, exc, tb: str) -> None:
        if self._closing:
            return
        if run_id == 0:      # a preload
            self.pair_panel.set_load_state("idle", "The models could not be loaded.")
            self.banner.show_error(exc, tb, "Loading the models failed")
            if self.mode == "idle":
                self.stats_bar.set_state("Idle")
            return
        if self.active is None or run_id != self.active.run_id:
            return
        self.playback.flush()
        self._finish_waiting = None
        self._refresh()
        req = self.active
        self.active = self._live = None
        self.mode = "idle"
        self._update_panels()
        self.pair_panel.end_loading("The models could not be loaded.")
        what = "The baseline run failed" if req.kind == "baseline" else "The run failed"
        from specscope.core.errors import ContextFullError, IncompatiblePairError
        hint = {IncompatiblePairError: "Choose another draft, or press Baseline to run the target alone",
                ContextFullError: ""}.get(type(exc), "")
        self.banner.show_error(exc, tb, what, hint)
        self._rerun_of = None
        self.stats_bar.set_state("Failed — see the message above")
        self._update_buttons()
        self.run_done.emit(run_id, "error")

    # ================================================================== pace, scrubber, replay
    def _panel_tabs(self) -> set:
        """The tabs below the text that follow the run (each catches up when shown)."""
        return {t for t in (self.plots, self.round_view, self.cost_panel, self.timeline) if t is not None}

    @Slot(list)
    def _released(self, events: list) -> None:
        """Rounds the playback hands on: a live run's go to the views as they always did; a
        replayed recording's move the view forward over rounds it already holds."""
        if self._replaying:
            shown = len(self.events)
            self.show_upto(shown + len(events))
            self.scrubber.show_at(len(self.events), len(self.session.run.events))
            if self._view_upto is None:
                self._replaying = False
                self.stats_bar.set_state(f"Replayed {len(self.events)} rounds")
        else:
            self._pending.extend(events)

    @Slot(int)
    def _backlog_changed(self, n: int) -> None:
        if n == 0 and self._finish_waiting is not None:
            run_id, finish = self._finish_waiting
            self._finish_waiting = None
            QTimer.singleShot(0, self, lambda: self._run_finished(run_id, finish))

    def replay_clicked(self) -> None:
        """Play the run shown from its first round at the chosen pace (no model runs)."""
        if self.mode != "idle" or self.session is None or not self.session.run.events:
            return
        self.playback.clear()
        self.show_upto(0)
        self._replaying = True
        self.stats_bar.set_state("Replaying at your pace…", "Pace, in the toolbar, sets how fast")
        self.playback.feed(list(self.session.run.events))

    @Slot(int)
    def show_upto(self, k: int) -> None:
        """Show the run as it was after its first k rounds: the text, the round explained, the
        statistics, plots and timeline (k = all of them: the run as it ended)."""
        session = self.session
        if session is None or session.vocab is None or self.mode != "idle":
            return
        events = session.run.events
        k = max(0, min(int(k), len(events)))
        before = len(self.events)
        target = None if k >= len(events) else k
        if target is not None and target >= before and self._view_upto is not None:
            self.token_view.append_events(events[before:k])       # forward: only what is new
        else:
            self.token_view.begin(session.prompt_text, session.vocab, session.prompt_tokens)
            self.token_view.append_events(events[:k])
            if self.plots is not None:
                self.plots.clear()
                self.timeline.clear()
            self.round_view.clear()
        self._view_upto = target
        self._stats_stale = True
        self._fold()
        if k == 0:
            self.stats_bar.clear()
        self._panels_dirty = True
        self._dirty_tabs = self._panel_tabs()
        self._update_panels()
        if self.timeline is not None and k:
            self.timeline.highlight_round(k - 1)
        if not self._replaying:
            self.stats_bar.set_state(f"After round {k} of {len(events)}" if target is not None
                                     else f"All {len(events)} rounds",
                                     "Drag the Round slider under the text; its end shows the whole run")

    def quantize_draft_dialog(self) -> None:
        from .quantize_dialog import open_quantize_dialog
        open_quantize_dialog(self, self.pair_panel.pair()[1], self.compare)

    def compare_session_dialog(self) -> None:
        """File → Compare with session…: the run shown against a recording, or two recordings."""
        from specscope.core.errors import SpecScopeError
        from specscope.core.session.session import Session
        from specscope.core.session.comparison import compare_sessions
        if self.session_compare is None:
            return
        first = self.session if self.session is not None and self.session.run.events else None
        picked = []
        for which in (["second"] if first is not None else ["first", "second"]):
            path, _ = QFileDialog.getOpenFileName(self, f"The {which} session to compare",
                                                  str(self.autosave_path.parent),
                                                  "SpecScope sessions (*.jsonl);;All files (*)")
            if not path:
                return
            picked.append(path)
        try:
            loaded = [Session.load(p) for p in picked]
        except SpecScopeError as exc:
            self.banner.show_message("error", f"The session cannot be compared: {exc}")
            return
        a, b = ([first] if first is not None else []) + loaded
        self.session_compare.show_comparison(compare_sessions(a, b))
        self.show_workspace("sessions")

    # ================================================================== refresh
    def _refresh(self) -> None:
        """Apply the events that arrived since the last tick (timer, REFRESH_PERIOD_MS)."""
        if self.plots is not None:
            self.plots.release_repaint()
        if not self._pending:
            if self._panels_dirty and time.perf_counter() - self._panels_shown_at >= PANEL_PERIOD_MS / 1e3:
                self._update_panels()
            return
        t_wall, t_cpu = time.perf_counter(), time.thread_time()
        self._apply_pending()
        self.refresh_costs.append((time.perf_counter() - t_wall, time.thread_time() - t_cpu))

    def _apply_pending(self) -> None:
        batch, self._pending = self._pending, []
        self.refresh_count += 1
        now = time.perf_counter()
        self.token_view.append_events(batch)           # the text: every tick
        self.session.run.append(batch)
        self.scrubber.set_total(len(self.session.run.events))
        self._stats_stale = True
        if now - self._stats_shown_at >= STATS_PERIOD_MS / 1e3:
            self._stats_shown_at = now
            self._fold()
        self._panels_dirty = True
        self._dirty_tabs = self._panel_tabs()
        if now - self._panels_shown_at >= PANEL_PERIOD_MS / 1e3 or self.mode in ("idle", "paused"):
            self._update_panels()                       # the visible tab: once a second

    def _fold(self) -> None:
        if self._stats_stale and self.session is not None:
            # the run's own fold grows incrementally; a scrubbed view folds its prefix
            self.stats = self.session.run.stats if self._view_upto is None else fold(self.events)
            self._stats_stale = False
            self._update_stats_bar()

    def _update_panels(self, *_args) -> None:
        """Bring the visible tab up to date (the plots redraw at most every PANEL_PERIOD_MS;
        a hidden tab catches up when it is shown)."""
        if not self._panels_dirty:
            return
        self._panels_shown_at = time.perf_counter()
        self._fold()
        if self.stats is None:
            return
        session, stats = self.session, self.stats
        current = self.tabs.currentWidget()
        if isinstance(current, QScrollArea):
            current = current.widget()
        if current is self.plots:
            self.plots.update_stats(stats, self.events)
            self.plots.hold_repaints()
        elif current is self.round_view:
            if session is not None and session.vocab is not None and self.events:
                spec = session.settings.spec
                self.round_view.show_round(self.events[-1], session.vocab, self.token_view.history,
                                           spec.types if spec is not None else ())
        elif current is self.timeline:
            self.timeline.update_events(self.events)
        elif current is self.cost_panel:
            if session is not None and session.kind == "spec":
                self._show_cost(session, stats)
        else:
            return
        self._dirty_tabs.discard(current)
        if not self._dirty_tabs:
            self._panels_dirty = False

    @property
    def plots_painted(self) -> bool:
        """No plot is waiting for its staggered repaint."""
        return self.plots is None or self.plots.all_painted

    def _update_stats_bar(self) -> None:
        req, stats = self.shown_request, self.stats
        if stats is None or self.session is None:
            return
        baseline = self.session.kind == "baseline"
        self.synth_warning.setVisible(stats.synthetic)
        note = "– (step mode)" if req is not None and req.step else "– (no baseline yet)"
        speedup = None if baseline else self._speedup(stats)
        self.stats_bar.update_stats(stats, speedup, baseline, note,
                                    self.session.baseline_check() if speedup else None)

    def _speedup(self, stats) -> float | None:
        req = self.shown_request
        if self.session is None or stats is None or (req is not None and req.step):
            return None           # a stepped run's first rounds are not a fair speed sample
        return self.session.speedup

    def _show_measured(self) -> None:
        """After a run: the cost panel and speed-up, pairing the latest spec run with its baseline."""
        last = self.workbench.last_spec
        if last is None or not self.panels_ready:
            return
        self._show_cost(last, last.spec.stats)
        self.distance_view.refresh()
        if self.session is not None and self.session.kind == "spec" and self.stats is not None:
            self._update_stats_bar()

    def _show_cost(self, session, stats) -> None:
        """The cost panel measures ``stats`` of the speculative ``session`` against its baseline
        (or the workbench's with its key): α, f, the speed-up, and the baseline's age and load."""
        b = session.baseline or self.workbench.baseline_for(session.settings)
        self.cost_panel.update_measured(stats, b.stats if b else None,
                                        session.settings.spec.max_draft(), session.baseline_check(b))

    # ================================================================== export
    def copy_text(self, full: bool = False) -> None:
        text = self.token_view.full_text() if full else self.token_view.generated_text()
        QGuiApplication.clipboard().setText(text)
        self.statusBar().showMessage("Copied to the clipboard", 2000)

    def _save_path(self, title: str, name: str, filters: str) -> Path | None:
        start = self.settings.value("export/dir") or str(Path.home())
        path, _ = QFileDialog.getSaveFileName(self, title, str(Path(start) / name), filters)
        if not path:
            return None
        self.settings.setValue("export/dir", str(Path(path).parent))
        return Path(path)

    def save_text_dialog(self) -> None:
        path = self._save_path("Save the generated text", "specscope.txt", "Text (*.txt);;All files (*)")
        if path:
            self._export(lambda: self.save_text(path), path)

    def save_stats_dialog(self, fmt: str) -> None:
        flt = "JSON (*.json)" if fmt == "json" else "CSV (*.csv)"
        path = self._save_path("Save the statistics", f"specscope-stats.{fmt}", flt)
        if path:
            self._export(lambda: self.save_stats(path), path)

    def save_plot_dialog(self, name: str) -> None:
        slug = name.lower().replace(" ", "-")
        path = self._save_path(f"Save “{name}”", f"{slug}.png", "PNG image (*.png);;SVG image (*.svg)")
        if path:
            self._export(lambda: self.plots.export(name, path), path)

    def _export(self, fn, path: Path) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            self.banner.show_error(exc, context=f"Saving {path.name} failed")
            return
        self.statusBar().showMessage(f"Saved {path}", 4000)

    def save_text(self, path: Path) -> None:
        Path(path).write_text(self.token_view.full_text(), encoding="utf-8")

    def stats_document(self) -> dict:
        if self.session is None:
            return {"run": None, "stats": None, "rounds": []}
        doc = self.session.stats_document()
        if self.shown_request is not None and self.shown_request.step:
            doc.pop("speedup", None)     # a stepped run is no speed sample
        return doc

    def save_stats(self, path: Path) -> None:
        path = Path(path)
        doc = self.stats_document()
        if path.suffix.lower() == ".csv":
            with path.open("w", newline="", encoding="utf-8") as fh:
                rows = doc["rounds"]
                fields = list(rows[0].keys()) if rows else ["index"]
                w = csv.DictWriter(fh, fieldnames=fields)
                w.writeheader()
                for row in rows:
                    w.writerow({k: (" ".join(str(x) for x in v) if isinstance(v, list) else v)
                                for k, v in row.items()})
        else:
            path.write_text(json.dumps(doc, indent=1), encoding="utf-8")

    # ================================================================== misc
    def open_log_folder(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.log_path.parent)))

    def guide(self) -> None:
        from .guide import show_guide
        show_guide(self)

    def about(self) -> None:
        box = QMessageBox(self)
        box.setWindowTitle("About SpecScope")
        box.setText("<b>SpecScope</b><br>A playground for llama.cpp's speculative decoding: a "
                    "drafter (a small draft model, or an n-gram lookup in the text so far) proposes "
                    "tokens, the target verifies them in one batch."
                    f"<br><br>Log file: {self.log_path}")
        box.setModal(False)
        box.open()

    def shutdown(self, timeout_ms: int = 15000) -> bool:
        """Stop any run, free the engine on its thread, join both threads."""
        if self._closing:
            return True
        self._closing = True
        self.timer.stop()
        if self.active is not None:
            self.active.stop.set()
            self.active.ui_ready.set()
        for task in (self.calibration_task, self.synth_view):   # on the engine's thread
            if task is not None:
                task.request_stop()
        self.worker.abort.set()          # a model still loading gives up
        self.shutdown_requested.emit()
        ok = self.worker_thread.wait(timeout_ms)
        if self.compare is not None:
            ok = self.compare.shutdown(timeout_ms) and ok
        for view in (self.synth_view, self.distance_view):
            if view is not None:
                ok = view.shutdown(timeout_ms) and ok
        self.doctor_thread.quit()
        ok = self.doctor_thread.wait(timeout_ms) and ok
        if not ok:
            log.warning("a worker thread did not finish within %d ms", timeout_ms)
        return ok

    def closeEvent(self, event):  # noqa: N802
        try:
            self.save_settings()
        except Exception:  # noqa: BLE001 - never block closing
            log.exception("saving the settings failed")
        self.shutdown()
        event.accept()
