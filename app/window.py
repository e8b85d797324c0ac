"""The SpecScope main window: layout, actions and signal wiring.

Left: the prompt (and its examples), the pair (pickers, doctor verdict, facts, load progress),
the drafter and the parameters. Right: the live token view over a tab stack (plots, cost model,
the latest round explained, the timeline). Bottom: the stats bar.

What the window does with the machine is the Qt-free run controller's
(core/session/controller.py): the buttons ask it, the engine worker's signals go to it, and the
window listens (``_heard``) to redraw. Its actions, toolbar and menus are built in
app/window_actions.py. The views of the session shown are one object
(app/shown_run.py), the cost tab and its measurements another (app/cost_tab.py), the files a
third (app/session_files.py).

Threads: an ``EngineWorker`` (load + runs) and a ``DoctorWorker`` (pair checks: app/pair_watch.py),
each on its own QThread. Round events arrive in batches through ``events_ready``: into the
session at once, into the views at the pace chosen (app/playback.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QMainWindow, QScrollArea, QSplitter,
                               QTabWidget, QToolButton, QVBoxLayout, QWidget)

from specscope.core.session.run_state import SWEEPING_IN, RunState

from .controls import ParamsPanel, PromptEditor, RunControls, link_basics
from .copy_command import CopyCommand
from .desktop import guard_wheel
from .drafter_panel import head_slot
from .errors import MessageBanner, run_failure_hint, setup_logging
from .pair_panel import PairPanel
from .pair_watch import PairWatch
from .round_view import RoundExplainer
from .session_files import SessionFiles
from .shown_run import ShownRun
from .stats_bar import StatsBar
from .legend import legend_html
from . import palette
from .presenter import DEFAULT_SCALE, SCALES, Presenter
from .window_actions import PALETTE_KEY, PRESENTER_SCALE_KEY, WindowActions
from .window_chat import WindowChat
from .window_settings import Layout, apply_json, restore_controls, restore_layout, save_settings
from .worker import EngineWorker, on_ui_thread, start_thread

log = logging.getLogger("specscope.app")


class MainWindow(WindowActions, WindowChat, QMainWindow):
    start_requested = Signal(object)
    warm_up_requested = Signal()
    step_requested = Signal(int)
    resume_requested = Signal(int)
    cancel_requested = Signal()
    shutdown_requested = Signal()
    # for tests and the benchmark
    run_done = Signal(int, str)          # run_id, finish (after the views showed all of it)
    step_done = Signal(int)              # run_id: a step was applied to the views

    def __init__(self, model: Path | None = None, draft: Path | None = None,
                 settings: QSettings | None = None, preload: bool = True):
        super().__init__()
        self.setWindowTitle("SpecScope — speculative decoding, live")
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings()
        palette.use(str(self.settings.value(PALETTE_KEY, palette.STANDARD)))   # before the plots
        self.presenter = Presenter(self)
        try:
            scale = float(self.settings.value(PRESENTER_SCALE_KEY, DEFAULT_SCALE))
        except (TypeError, ValueError):
            scale = DEFAULT_SCALE
        self.presenter.scale = scale if scale in SCALES else DEFAULT_SCALE
        self.log_path = setup_logging()
        self._preload_enabled = preload
        # (the controller imports the session and the engine's settings: here, not at import)
        from specscope.core.session.controller import RunController
        self.controller = RunController()           # the runs, the session shown, the cores
        self.closing = False
        self.lessons = None                         # Help ▸ Lessons, made when first opened

        self._build_ui()                            # (the views hear the controller first)
        self.files = self._session_files()
        self.controller.subscribe(self._heard)
        self._start_threads()
        self._build_actions()
        # the tab and workspace shown last are chosen once they exist (_build_panels)
        self._restore_tab, self._restore_workspace, self._splits_restored = restore_layout(
            self.settings, self.kept_layout())
        if not restore_controls(self.settings, self.controls, model, draft):
            self.banner.show_message("info", "No demo model pair is installed. Choose a target and a "
                                             "draft model (File ▸ Open, or drop .gguf files on the window).")
        self._update_buttons()
        guard_wheel(self)         # a wheel scrolling the panels passes over their inputs
        QTimer.singleShot(0, self._build_panels)

    def _build_panels(self) -> None:
        """Build the pyqtgraph views (plots, cost model, Compare, Advisor) once the window shows: importing
        pyqtgraph takes about a second. Until then their tabs hold a "loading…" line."""
        if self.panels_ready or self.closing:
            return
        from .advise_view import AdvisorView
        from .compare_view import CompareView
        from .cost_tab import CostTab
        from .plots import PlotsPanel
        from .session_compare_view import SessionCompareView
        from .timeline_view import TimelineView
        from .whatif_panel import install as install_whatif
        current = self.tabs.currentIndex()
        self.plots = PlotsPanel()
        self.cost_tab = tab = CostTab(self.controller, self.worker, self.controls, lambda: self.pairs.facts)
        tab.state.connect(self.stats_bar.set_state)
        tab.message.connect(self.banner.show_message)
        tab.error.connect(self.banner.show_error)
        self.cost_panel, self.distance_view, self.synth_view = tab.cost_panel, tab.distance_view, tab.synth_view
        for index, (page, title) in enumerate(((self.plots, "Plots"), (self.cost_tab, "Cost model"))):
            old = self.tabs.widget(index)
            self.tabs.removeTab(index)
            self.tabs.insertTab(index, page, title)
            old.deleteLater()
        # the Compare view needs neither the token view nor the run's parameters: a workspace of
        # its own, with the window's whole width and height
        self.compare = self._sweep_workspace(CompareView(), "compare", "Compare (sweep)", "A sweep",
                                             "Sweep drafters × draft lengths × prompts against the "
                                             "target alone (Ctrl+2; Ctrl+1 returns to the live run)")
        self.compare.sweep_finished.connect(tab.show_sweep_calibration)
        self.timeline = TimelineView()
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.setTabToolTip(self.tabs.count() - 1, "Each round's draft, verify, sync and Python "
                                "time on one time axis: click a bar to select its tokens")
        self.timeline.round_clicked.connect(self.token_view.select_round)
        self.token_view.round_hovered.connect(
            lambda i: self.timeline.highlight_round(i if i >= 0 else None))
        self.whatif = install_whatif(self)     # what the run would have done with other settings
        self.session_compare = SessionCompareView()
        self.workspace.addTab(self.session_compare, "Compare sessions")
        self.workspace.setTabToolTip(2, "Two recorded sessions side by side (File → Compare with "
                                        "session…; Ctrl+3)")
        self.advisor = self._sweep_workspace(AdvisorView(), "advisor", "Advisor", "The advisor",
                                             "What should I run? The best drafter and settings per "
                                             "kind of work, measured (Ctrl+4)")
        self.advisor.restore_last()
        self.advisor.form.conversation_wanted.connect(self.advise_on_conversation)
        t, d = self.pair_panel.pair()
        for view in (self.compare, self.advisor) if t is not None else ():
            view.set_pair(t, d)
        if self._restore_tab is not None and self._restore_tab < self.tabs.count():
            current = self._restore_tab
        self._restore_tab = None
        self.tabs.setCurrentIndex(current)
        if self._restore_workspace is not None and self._restore_workspace < self.workspace.count():
            self.workspace.setCurrentIndex(self._restore_workspace)
        self._restore_workspace = None
        if not self._splits_restored:      # first start: the text gets 45 % of the height (on a
            h = sum(self.right_split.sizes())     # 768-pixel screen the plots and their table fit)
            self.right_split.setSizes([h * 45 // 100, h - h * 45 // 100])
        for name in self.plots.plot_names():
            self.plots_menu.addAction(self._action(f"{name}…", lambda _=False, n=name: self.files.save_plot_dialog(n)))
        self.panels_ready = True
        guard_wheel(self)
        self.shown.attach(self.plots, self.cost_panel, self.timeline, self.distance_view)
        self.cost_tab.show_cached(*self.pair_panel.pair())

    def _sweep_workspace(self, view, key: str, title: str, who: str, tip: str):
        """``view`` (Compare or the Advisor: ``who`` holds the cores from start to end) as a
        workspace of its own, scrolling on a small screen, its controls as they were left."""
        apply_json(self.settings, f"{key}/json", view.from_dict)
        c = self.controller
        view.blocker = lambda: self._sweep_blocker(who.lower())
        view.sweep_started.connect(lambda: c.sweep_started(who, title.split(" (")[0]))
        view.sweep_finished.connect(lambda _result: c.sweep_ended())
        view.sweep_failed.connect(lambda *_: c.sweep_ended())
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(view)
        self.workspace.setTabToolTip(self.workspace.addTab(scroll, title), tip)
        return view

    # ================================================================== UI
    def _build_ui(self) -> None:
        self.pair_panel = PairPanel()
        self.prompt = PromptEditor()
        self.params = ParamsPanel()
        self.controls = RunControls(self.pair_panel, self.params, self.prompt)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(8, 8, 8, 8)
        self.copy_command = CopyCommand(self.pair_panel, self.params, lambda: self.pairs.report)
        for part in (self.prompt, self.pair_panel, self.params.drafter, self.copy_command, self.params):
            ll.addWidget(part)                  # what a first run needs first, at the top
        ll.addStretch(1)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(left)
        left_scroll.setMinimumWidth(400)
        left_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.left_panel = left_scroll             # hidden and shown again with F9 (a small screen)

        self.banner = MessageBanner()
        self.banner.log_path = self.log_path
        self.round_view = RoundExplainer()
        self.tabs = QTabWidget()
        self.stats_bar = StatsBar()
        # the text pane, and the views of the session shown (app/shown_run.py)
        self.shown = ShownRun(self.controller, self.round_view, self.stats_bar, self.tabs,
                              self.params.drafter.types)
        top = self.text_pane = self.shown
        self.token_view, self.legend, self.show_rejected = top.token_view, top.legend, top.show_rejected
        self.synth_warning, self.scrubber, self.playback = top.synth_warning, top.scrubber, top.playback
        from specscope.core.session.conversation import ChatLog
        self.chat_log = ChatLog()                # the conversation the runs make (app/chat_bar.py)
        self.chat_bar = top.chat_bar
        self.chat_bar.send.connect(self.chat_send)
        self.chat_bar.regenerate.connect(self.chat_regenerate)
        self.chat_bar.edit.connect(lambda: self.chat_bar.start_edit(self.chat_log.turns[-1][0])
                                   if self.chat_log.turns else None)
        self.chat_bar.new_conversation.connect(self.chat_new)
        link_basics(self.prompt, self.params)

        # pyqtgraph takes about a second to import: the plot tabs are built once the window shows
        self.plots = self.cost_tab = self.cost_panel = self.compare = self.advisor = None   # _build_panels
        self.distance_view = self.synth_view = self.timeline = self.session_compare = self.whatif = None
        self.panels_ready = False
        for title in ("Plots", "Cost model"):
            loading = QLabel(f"{title}: loading…")
            loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.tabs.addTab(loading, title)
        self.tabs.addTab(self.round_view, "Round (step mode)")
        self.tabs.setDocumentMode(True)
        self.expand_button = QToolButton()      # the tabs take the text's height too, and back
        self.expand_button.setCheckable(True)
        self.expand_button.setAutoRaise(True)
        self.expand_button.toggled.connect(self.set_tabs_expanded)
        self.tabs.setCornerWidget(self.expand_button, Qt.Corner.TopRightCorner)
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

    def set_left_panel_shown(self, on: bool) -> None:
        """Show or hide the panel of settings on the left (the prompt, pair and drafter): on a
        small screen the text and the plots get its width. The chat's reply box and the
        toolbar keep working without it."""
        self.left_panel.setVisible(on)
        if self.act_left_panel.isChecked() != on:
            self.act_left_panel.setChecked(on)

    def left_panel_shown(self) -> bool:
        return not self.left_panel.isHidden()

    def show_workspace(self, name: str) -> None:
        """'run' (the live run), 'compare' (the sweep), 'sessions' or 'advisor' (these three once
        the panels are built)."""
        index = {"run": 0, "compare": 1, "sessions": 2, "advisor": 3}[name]
        if index < self.workspace.count():
            self.workspace.setCurrentIndex(index)

    def _start_threads(self) -> None:
        self.worker = EngineWorker()
        self.worker_thread = start_thread(self.worker, "specscope-engine")
        w, c = self.worker, self.controller
        for name in ("start", "warm_up", "step", "resume", "cancel", "shutdown"):
            getattr(self, f"{name}_requested").connect(getattr(w, name))   # asks: to the worker
        w.closed.connect(self.worker_thread.quit, Qt.ConnectionType.DirectConnection)
        for signal, news in ((w.run_started, c.on_started), (w.events_ready, c.on_events),
                             (w.prefill_done, c.on_prefill), (w.step_paused, c.on_paused),
                             (w.run_finished, c.on_finished), (w.failed, c.on_failed)):
            on_ui_thread(signal, news, self)                # the run's news: to the controller
        w.calibration_progressed.connect(self.shown.calibration_progressed)
        # the views' pace sets the worker's batch period directly (its loop holds its thread)
        self.shown.wakes_changed.connect(lambda s: setattr(w, "batch_period_s", s))
        self.pairs = self._pair_watch()                     # the doctor, loading the pair
        self.warm_up_requested.emit()

    def _pair_watch(self) -> PairWatch:
        """The pair's doctor and loader, and the views that follow what it says."""
        preload = (lambda: self.request("spec", quiet=True)) if self._preload_enabled else None
        pw = PairWatch(self.pair_panel, self.controller, self.worker, self.settings, preload,
                       lambda: self.closing, self)
        pw.template_available.connect(self.prompt.set_template_available)
        pw.target_mtp.connect(self.params.drafter.set_target_mtp)
        pw.draft_kind.connect(self.params.drafter.set_draft)
        pw.state.connect(self.stats_bar.set_state)
        pw.message.connect(self.banner.show_message)
        pw.error.connect(self.banner.show_error)
        pw.resolved.connect(self.banner.dismiss_if)
        pw.pair_switched.connect(self._pair_switched)
        return pw

    def _session_files(self) -> SessionFiles:
        """Sessions and exports to and from files, and the views that show what they did."""
        files = SessionFiles(self.controller, self.controls, self.settings, self)
        files.text = self.token_view.full_text
        files.export_plot = lambda name, path: self.plots.export(name, path)
        files.can_compare = lambda: self.session_compare is not None
        files.message.connect(self.banner.show_message)
        files.resolved.connect(self.banner.dismiss_if)
        files.error.connect(lambda exc, context: self.banner.show_error(exc, context=context))
        files.saved.connect(lambda path: self.statusBar().showMessage(f"Saved {path}", 4000))
        files.compared.connect(self._show_comparison)
        files.compare_failed.connect(lambda text: self.session_compare.show_problem(text))
        return files

    def _show_comparison(self, comparison) -> None:
        self.session_compare.show_comparison(comparison)
        self.show_workspace("sessions")

    def _pair_switched(self, target, draft) -> None:
        """Another pair: the cost tab draws the newest calibration of this pair cached on this
        machine (bench, advise, Compare or its own button took it), or none; the Compare and
        Advisor workspaces follow, unless they are running."""
        if self.cost_tab is not None:
            self.cost_tab.show_cached(target, draft)
        for view in (self.compare, self.advisor):
            if view is not None and not view.running and target is not None:
                view.set_pair(target, draft)

    # ================================================================== settings
    def save_settings(self) -> None:
        save_settings(self.settings, self.controls, self.kept_layout())

    def kept_layout(self) -> Layout:
        """The parts whose arrangement the settings keep (app/window_settings.py)."""
        return Layout(self, {"window/main_split": self.main_split, "window/right_split": self.right_split},
                      self.tabs, self.workspace, (self.tabs_expanded, self.set_tabs_expanded),
                      (self.left_panel_shown, self.set_left_panel_shown),
                      lambda: {"compare": self.compare, "advisor": self.advisor})

    # ================================================================== pair
    def _params_changed(self) -> None:
        self.pair_panel.set_head_slot(head_slot(self.params.drafter.types()))
        if not self.controller.busy and not self.shown.events:
            self.legend.setText(legend_html(self.params.drafter.types()))

    def use_drafter(self, name: str) -> None:
        """Draft with ``name`` alone (the pair panel's suggestion when no draft fits)."""
        if not self.controller.busy:
            self.params.drafter.set_types([name])
            self.params.drafter.focus_type(name)

    # ================================================================== drag and drop
    def dragEnterEvent(self, event):  # noqa: N802
        if self.files.accepts(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event):  # noqa: N802
        if self.files.drop(event.mimeData()):
            event.acceptProposedAction()

    # ================================================================== runs
    def engine_settings(self):
        return self.controls.engine()

    def request(self, kind: str, step: bool = False, quiet: bool = False, prompt: str | None = None):
        """A RunRequest as the controls ask (the controller checks them), or None when they are
        not ready (the banner says why unless ``quiet``). ``prompt``: instead of the prompt box's
        (a conversation's reply)."""
        from specscope.core.errors import ConfigError
        from specscope.core.session.controller import Controls
        t, d = self.pair_panel.pair()
        p, report = self.params, self.pairs.report
        try:
            controls = Controls(t, d, self.prompt.text() if prompt is None else prompt,
                                p.spec_settings(), p.sampler_settings(),
                                p.n_predict.value(), self.engine_settings(),
                                chat=self.prompt.chat_enabled(), system=self.prompt.system_text(),
                                drafter_problem=p.drafter.problem(),
                                draft_refused=report is not None and not report.compatible
                                and not report.cross_modes)
            return self.controller.request(kind, controls, step)
        except ConfigError as exc:
            if not quiet:
                self.banner.show_error(exc)
            return None

    def _refused(self) -> bool:
        """True (and says so) while a Compare sweep or a measurement of the cost tab holds the
        cores: a run now would compete with it and spoil both measurements."""
        reason = self.controller.refusal("run")
        if not reason:
            return False
        if self.controller.sweeping:
            self.show_workspace("run")
        self.banner.show_message("warning", reason)
        return True

    def _sweep_blocker(self, who: str = "the sweep") -> str:
        """Why Compare's sweep or the Advisor (``who``) cannot start now ("" when it can)."""
        return self.controller.refusal("sweep") or (
            f"The Run tab is loading the models: start {who} once they are loaded."
            if self.pair_panel.loading() else "")

    def _start(self, req, rerun_of=None) -> None:
        self.show_workspace("run")
        self.controller.start(req, rerun_of)
        self.stats_bar.set_state("Starting…")
        if self.banner.level == "error" or self.banner.level == "info":
            self.banner.dismiss()
        self.start_requested.emit(req)

    def _start_new(self, kind: str, step: bool = False) -> None:
        """Run, Step or Baseline: a new run as the controls ask."""
        if self.controller.busy or self._refused():
            return
        req = self.request(kind, step=step)
        if req is not None:
            if step:
                self.tabs.setCurrentWidget(self.round_view)
            self._start(req)

    def run_clicked(self) -> None:
        c = self.controller
        if c.paused:
            self.stats_bar.set_state("Running…")
            self.resume_requested.emit(c.resume())
            return
        self._start_new("spec")

    def step_clicked(self) -> None:
        c = self.controller
        if c.paused:
            self.step_requested.emit(c.step())
            return
        self._start_new("spec", step=True)

    def baseline_clicked(self) -> None:
        self._start_new("baseline")

    def stop_clicked(self) -> None:
        c = self.controller
        if c.active is None:
            return
        paused = c.stop()
        self.stats_bar.set_state("Stopping…")
        if paused:
            self.cancel_requested.emit()
        self.playback.flush()                # the rounds already run are shown at once

    def reset_clicked(self) -> None:
        if self.controller.active is not None:
            self.stop_clicked()
        self.controller.show(None)
        if self.controller.active is None:
            self.stats_bar.set_state("Idle")

    def rerun_clicked(self) -> None:
        """Run the shown recording again with its own settings and models."""
        c = self.controller
        if c.can_rerun:
            self._start(c.request_of(c.session, c.session.kind, recorded=True), rerun_of=c.session)

    def remeasure_baseline(self) -> None:
        """Measure the baseline of the speculative run shown again, with that run's settings:
        it runs beside the run (the views keep it) and replaces a stale baseline."""
        c = self.controller
        s = c.session
        if c.busy or s is None or s.kind != "spec" or self._refused():
            return
        self._start(c.request_of(s, "baseline"))

    def _update_buttons(self) -> None:
        c = self.controller
        busy, paused = c.busy, c.paused
        self.act_run.setEnabled(not busy or paused)
        self.act_step.setEnabled(not busy or paused)
        self.act_baseline.setEnabled(not busy)
        self.act_stop.setEnabled(busy)
        self.act_rerun.setEnabled(c.can_rerun)
        self.act_run.setText("▶  Continue" if paused else "▶  Run")
        self.act_replay.setEnabled(c.can_replay)
        self.scrubber.setEnabled(not busy and c.has_rounds)
        for controls in (self.pair_panel, self.params, self.params.drafter):
            controls.setEnabled(not busy)
        if self.library_dialog is not None:
            self.library_dialog.set_busy(busy)
        self.prompt.set_read_only(busy)
        self._update_chat()

    # ================================================================== the controller's news
    def _heard(self, what: str, payload) -> None:
        """What changed in the run controller (core/session/controller.py); the views have
        heard it first (app/shown_run.py). The buttons, the banner and the signals follow."""
        if what in ("state", "session"):
            if what == "state" and payload[0] is RunState.SWEEPING and \
                    self.banner.message == SWEEPING_IN.format(*self.controller.sweeper, "a run"):
                self.banner.dismiss()                # no longer true
            self._update_buttons()
        elif what in ("started", "beside"):
            self.pair_panel.end_loading()
        elif what == "paused":
            self.step_done.emit(payload)
        elif what == "finished":
            self._run_ended(payload)
        elif what == "failed":
            req, exc, tb = payload
            if self.closing:
                return
            self.pair_panel.end_loading("The models could not be loaded.")
            self.banner.show_error(exc, tb, "The baseline run failed" if req.kind == "baseline"
                                   else "The run failed", run_failure_hint(exc))
            self.put_back_unsent()
            self.run_done.emit(req.run_id, "error")

    def _run_ended(self, ended) -> None:
        self._turn_ended(ended)
        if ended.session is not None:
            self.files.autosave(ended.session)
            if ended.verdict is not None:
                ok, sentence = ended.verdict
                self.banner.show_message("info" if ok else "warning", sentence)
        if ended.finish == "context":
            stats = self.shown.stats
            self.banner.show_message(
                "warning", f"The context filled up after {stats.n_tokens if stats else 0} "
                           f"generated tokens (context size {ended.request.engine_settings.n_ctx}). "
                           "Raise the context size or shorten the prompt to generate more.")
        self.run_done.emit(ended.request.run_id, ended.finish)

    # ================================================================== misc
    def shutdown(self, timeout_ms: int = 15000) -> bool:
        """Stop any run and measurement, free the engine on its thread, join the threads."""
        if self.closing:
            return True
        self.closing = True
        self.shown.timer.stop()
        self.controller.stop()
        ok = self.cost_tab is None or self.cost_tab.shutdown(timeout_ms)
        self.worker.abort.set()          # a model still loading gives up
        self.shutdown_requested.emit()
        ok = self.worker_thread.wait(timeout_ms) and ok
        for view in (self.compare, self.advisor):
            if view is not None:
                ok = view.shutdown(timeout_ms) and ok
        ok = self.pairs.shutdown(timeout_ms) and ok
        if not ok:
            log.warning("a worker thread did not finish within %d ms", timeout_ms)
        return ok

    def closeEvent(self, event):  # noqa: N802
        try:
            self.presenter.leave()      # the window's own geometry saved, the picture's zoom reset
            self.save_settings()
        except Exception:  # noqa: BLE001 - never block closing
            log.exception("saving the settings failed")
        self.shutdown()
        event.accept()
