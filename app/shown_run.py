"""The run shown: the generated text and the views of the controller's session, up to the
round the pace reached.

``ShownRun`` is the text pane (the token view with its legend, the synthetic-run warning and the
Round scrubber) and the one object that clears and refreshes the views of the session shown
(``controller.session``) up to ``controller.shown_upto`` rounds: the token view, the plots, the
round explained, the timeline, the stats bar and the cost panel's measurement. Live runs,
replays, opened sessions, seeks and a switched pair all go through it. It listens to the run
controller (core/session/controller.py) and owns the pace of the views (``playback``: the
engine's rounds are in the session already; the pace only says how far the views show them).

While a run is in progress the views follow on a timer (``tick``, every REFRESH_PERIOD_MS), at
a ``Cadence``: the text each tick, the stats bar's numbers 4 times a second, the visible tab of
the plots, round and timeline once a second (a hidden tab catches up when it is shown); a tick
waits while the UI thread has used more than its share of the time since the last refresh
began, and the first waits FIRST_REFRESH_S after the run's first rounds came. Where no core is
spare (another program, or llama.cpp's threads on every core), each wake of the UI thread takes
time from a thread that computes, so the views follow at BUSY_CADENCE: the text twice a second,
the plots every 3 s (on 2 cores with one busy, the UI thread took 8-10 % of a core at the other
cadence, and the engine thread lost as much), the timer and the engine's batches of events 4
times a second instead of 20.
Otherwise ``draw`` brings them to the round at once.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QTimer, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from specscope.core.measure.cpuload import SpareCores
from specscope.core.session.run_state import RunState

from .chat_bar import ChatBar
from .synth_box import SYNTH_WARNING
from .playback import Playback, Scrubber
from .legend import legend_html
from .token_view import TokenView

REFRESH_PERIOD_MS = 50           # the views take new rounds 20 times a second (the text view
                                 # repaint is most of a tick: 30 Hz took 17 % of a core in a run)


@dataclass(frozen=True)
class Cadence:
    """How a live run's views follow it: the text at least every ``text_s`` seconds, and more
    often only while the views took at most ``share`` of the UI thread's time (a refresh and
    its repaint wait that many times their cost); the stats bar's numbers every ``stats_s``;
    the visible plot / round / timeline tab every ``panels_s`` (the plots' update and repaint
    cost 20-40 ms of UI CPU); the UI thread wakes for the timer and the engine's events every
    ``wake_s`` (each wake where no core is spare takes a core from a thread that computes: 20
    wakes a second cost 0.9 % of a core with nothing drawn, 4 cost 0.25 %)."""
    text_s: float
    share: float
    stats_s: float
    panels_s: float
    wake_s: float = REFRESH_PERIOD_MS / 1000


CADENCE = Cadence(text_s=0.25, share=0.05, stats_s=0.25, panels_s=1.0)
BUSY_CADENCE = Cadence(text_s=0.5, share=0.02, stats_s=0.5, panels_s=3.0, wake_s=0.25)   # no core spare
FIRST_REFRESH_S = 0.1            # a live run's first refresh waits this long after its first rounds
                                 # came: a run shorter than that (the demo pair's 128 tokens take
                                 # 70 ms) shows at its end, with no refresh taking a core from it
SPARE_CORE_MIN = 0.5             # fewer cores unused than this over the last second: BUSY_CADENCE
LOOK_PERIOD_S = 1.0              # how often a live run looks at the cores
TITLE = "<b>Generated text</b>"
TITLE_HINT = (" <span style='color:#777'>— hover a token for its round, position, drafter and why "
              "it was drafted</span>")
PLOTS_NOTE = (f"Run in progress: the plots update every {CADENCE.panels_s:g} s "
              f"({BUSY_CADENCE.panels_s:g} s while no core is spare)")
TEXT_MIN_LINES = 5               # the generated text never gets fewer lines than this
FINISH_WORDS = {"eog": "the model ended the text", "n_predict": "Max tokens reached",
                "context": "the context is full", "stopped": "stopped"}


def refresh_due(last: tuple[float, float] | None, wall: float, cpu: float,
                cadence: Cadence = CADENCE) -> bool:
    """A live refresh may begin at ``wall`` (perf_counter) with the UI thread at ``cpu``
    (thread_time): the UI thread's time since the last began (``last``: its wall and CPU; the
    refresh, its repaint, the rest) is at most the cadence's share of the time gone since, or
    its ``text_s`` has gone by (the text never waits longer)."""
    if last is None or wall - last[0] >= cadence.text_s:
        return True
    return (cpu - last[1]) <= cadence.share * (wall - last[0])


def cadence_for(spare_cores: float | None) -> Cadence:
    """The views' cadence where ``spare_cores`` cores went unused over the last look (None:
    unknown, as on a system without /proc/stat)."""
    return BUSY_CADENCE if spare_cores is not None and spare_cores < SPARE_CORE_MIN else CADENCE


class ShownRun(QWidget):
    """The text pane and the views of the session shown (module docs). ``drafter_types()``:
    the drafters the controls have checked (the legend of an empty view)."""
    wakes_changed = Signal(float)       # the views' wake period (s): the engine's batch period

    def __init__(self, controller, round_view, stats_bar, tabs, drafter_types, parent=None):
        super().__init__(parent)
        self.controller = controller
        self.round_view, self.stats_bar, self.tabs = round_view, stats_bar, tabs
        self.drafter_types = drafter_types
        self._build()
        self.plots = self.cost_panel = self.timeline = self.distance_view = None    # see attach
        self.session = None              # the session the views hold
        self.drawn = 0                   # how many of its rounds they hold
        self.stats = None                # the fold of those rounds
        self._stats_stale = self._panels_dirty = False
        self._dirty_tabs: set = set()
        self._stats_shown_at = self._panels_shown_at = 0.0
        self._refreshed: tuple[float, float] | None = None   # (wall, UI CPU) when the last began
        self._first_news: float | None = None     # when this run's first rounds came (wall)
        self.spare_cores: float | None = None    # cores unused over the last look (cadence)
        self._cores: SpareCores | None = None    # this run's watch (None: none yet)
        self._looked_at = 0.0
        self.refresh_count = 0
        self.refresh_costs: deque = deque(maxlen=10_000)   # (wall s, UI-thread CPU s) per live tick
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_PERIOD_MS)
        self.timer.timeout.connect(self.tick)
        self.timer.start()
        tabs.currentChanged.connect(self.update_panels)
        self.playback = Playback(self)                   # the pace of the views
        self.playback.released.connect(self._released)
        self.scrubber.seek.connect(self.seek)
        controller.subscribe(self._heard)

    def _build(self) -> None:
        self.token_view = TokenView()
        self.legend = QLabel(legend_html())
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.show_rejected = QCheckBox("show rejected drafts")
        self.show_rejected.setChecked(True)
        self.show_rejected.setToolTip("Show the drafted tokens the target rejected, struck through (Ctrl+H)")
        self.show_rejected.toggled.connect(self.token_view.set_show_rejected)
        self.show_template = QCheckBox("show template")
        self.show_template.setToolTip("A chat: show the prompt as the target was given it, with the "
                                      "chat template's tokens, instead of the messages and replies")
        self.show_template.setVisible(False)
        self.show_template.toggled.connect(self._template_toggled)
        tl = QVBoxLayout(self)
        tl.setContentsMargins(8, 4, 8, 4)
        title = self.title = QLabel(TITLE + TITLE_HINT)
        title.setWordWrap(True)                          # two lines on a narrow screen
        title_row = QHBoxLayout()
        title_row.addWidget(title, 1)
        title_row.addWidget(self.show_template)
        title_row.addWidget(self.show_rejected)
        tl.addLayout(title_row)
        tl.addWidget(self.legend)
        self.synth_warning = QLabel(SYNTH_WARNING)       # shown while a synthetic run is shown
        self.synth_warning.setWordWrap(True)
        self.synth_warning.setStyleSheet("color:#ffffff; background:#b42318; font-weight:bold; padding:4px")
        self.synth_warning.setVisible(False)
        tl.addWidget(self.synth_warning)
        tl.addWidget(self.token_view, 1)
        # the text keeps room for a few lines whatever the tabs below it need (the drafter table)
        self.token_view.setMinimumHeight(TEXT_MIN_LINES * self.token_view.fontMetrics().lineSpacing()
                                         + 2 * self.token_view.frameWidth() + 8)
        self.scrubber = Scrubber()
        self.scrubber.setEnabled(False)
        tl.addWidget(self.scrubber)
        self.chat_bar = ChatBar()                        # the conversation goes on (the window's)
        tl.addWidget(self.chat_bar)

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the title without its hover hint and the chat bar without its
        figures line, for the pictures' room on a 720-pixel projector."""
        self.title.setText(TITLE if on else TITLE + TITLE_HINT)
        self.chat_bar.set_compact(on)

    def attach(self, plots, cost_panel, timeline, distance_view) -> None:
        """The pyqtgraph views, once built (after the window shows)."""
        self.plots, self.cost_panel, self.timeline = plots, cost_panel, timeline
        self.distance_view = distance_view
        if self.stats is not None:
            self.refresh_panels()
            self.show_measured()

    @property
    def events(self) -> list:
        """The rounds the views show."""
        if self.session is None:
            return []
        events = self.session.run.events
        return events if self.drawn >= len(events) else events[:self.drawn]

    @property
    def plots_painted(self) -> bool:
        """No plot is waiting for its staggered repaint."""
        return self.plots is None or self.plots.all_painted

    # ------------------------------------------------------------------ clearing
    def clear(self, running: bool = False) -> None:
        """Empty every view: the text and its legend, the plots, timeline, round explained, cost
        panel's measurement, stats bar and scrubber. ``running``: a run starts (the plots say
        they will update, and hold their repaints; the cost panel keeps the what-if sliders
        until the run measures)."""
        self.drawn, self.stats, self._refreshed, self._cores = 0, None, None, None
        self._first_news = None
        self._panels_dirty = self._stats_stale = False
        self._dirty_tabs = set()
        self.token_view.clear_tokens()
        self.legend.setText(legend_html(self.drafter_types()))
        if self.plots is not None:
            self.plots.clear(running_note=PLOTS_NOTE if running else None)
            if running:
                self.plots.hold_repaints()
            else:
                self.cost_panel.clear()
            self.timeline.clear()
        self.round_view.clear()
        self.stats_bar.clear()
        self.synth_warning.setVisible(False)
        self.scrubber.set_live(running)
        self.scrubber.show_at(0, 0)

    def _begin(self) -> None:
        """The text starts again with the session's prompt, the legend names its drafters. A
        chat shows its messages and replies (the template's tokens on request), a conversation
        without a template its document, the earlier replies coloured as they were made."""
        s = self.session
        st = s.settings
        self.show_template.setVisible(st.chat)
        if (st.chat and not self.show_template.isChecked()) or (st.history and not st.chat):
            self.token_view.begin_conversation(s.prompt_text, s.vocab, s.prompt_tokens, s.turns,
                                               st.history, st.prompt, document=not st.chat)
        else:
            self.token_view.begin(s.prompt_text, s.vocab, s.prompt_tokens)
        spec = s.settings.spec
        self.legend.setText(legend_html(spec.types if spec is not None else ()))
        self.drawn = 0

    def _template_toggled(self) -> None:
        if self.session is not None:
            events = self.events                 # the rounds shown, shown again
            self._begin()
            self.token_view.append_events(events)
            self.drawn = len(events)

    # ------------------------------------------------------------------ drawing
    def draw(self, live: bool = False, point: bool = False) -> None:
        """Bring the views to the controller's session and ``shown_upto`` (another session:
        cleared first). ``live``: a run's tick (the numbers and the visible tab at their
        periods); ``point``: the timeline shades the last round shown (a seek, a replay)."""
        c = self.controller
        if c.session is not self.session:
            self.clear()
            self.session = c.session
            if self.session is not None:
                self._begin()
        if self.session is None:
            return
        events, k = self.session.run.events, c.shown_upto
        if k < self.drawn:                         # back: the text and plots start over
            self._begin()
            if self.plots is not None:
                self.plots.clear()
                self.timeline.clear()
            self.round_view.clear()
            self.token_view.append_events(events[:k])
        else:
            self.token_view.append_events(events[self.drawn:k])
        self.drawn = k
        now = time.perf_counter()
        self.scrubber.show_at(k, k if c.busy else len(events))
        self._stats_stale = True
        if not live or now - self._stats_shown_at >= self.cadence.stats_s:
            self._stats_shown_at = now
            self._fold()
        if k == 0:
            self.stats_bar.clear()
        self._panels_dirty = True
        self._dirty_tabs = self._panel_tabs()
        if not live or now - self._panels_shown_at >= self.cadence.panels_s:
            self.update_panels()
        if point and self.timeline is not None and k:
            self.timeline.highlight_round(k - 1)

    def tick(self) -> None:
        """The timer: a run's newly revealed rounds into the views; a pending panel redraw."""
        if self.plots is not None:
            self.plots.release_repaint()
        c = self.controller
        if c.busy:
            self._look_at_cores()
        self._follow_wakes(self.cadence if c.busy else CADENCE)
        if not c.busy or self.session is None or c.session is not self.session \
                or c.shown_upto == self.drawn:
            if self._panels_dirty and time.perf_counter() - self._panels_shown_at >= self.cadence.panels_s:
                self.update_panels()
            return
        t_wall = time.perf_counter()
        first = self._first_news
        if self._refreshed is None and first is not None and t_wall - first < FIRST_REFRESH_S:
            return
        t_cpu = time.thread_time()
        if not refresh_due(self._refreshed, t_wall, t_cpu, self.cadence):
            return
        self._refreshed = (t_wall, t_cpu)
        self.refresh_count += 1
        self.draw(live=True)
        self.refresh_costs.append((time.perf_counter() - t_wall, time.thread_time() - t_cpu))

    def _look_at_cores(self) -> None:
        """During a run, once every LOOK_PERIOD_S: the views' cadence for the cores that went
        unused since the last look (a run's first look starts a new watch)."""
        now = time.perf_counter()
        if self._cores is None:
            self._cores, self._looked_at = SpareCores(), now
        elif now - self._looked_at >= LOOK_PERIOD_S:
            self._looked_at = now
            self.spare_cores = self._cores.look()

    def _follow_wakes(self, cadence: Cadence) -> None:
        """The timer at the cadence's wake period; the engine's worker told (``wakes_changed``)."""
        ms = round(cadence.wake_s * 1000)
        if self.timer.interval() != ms:
            self.timer.setInterval(ms)
            self.wakes_changed.emit(cadence.wake_s)

    @property
    def cadence(self) -> Cadence:
        """How the views follow a live run: for the cores the last look found spare."""
        return cadence_for(self.spare_cores)

    def _fold(self) -> None:
        if self._stats_stale and self.session is not None:
            self.stats = self.session.run.stats_upto(self.drawn)
            self._stats_stale = False
            self.update_stats_bar()

    def _panel_tabs(self) -> set:
        """The tabs below the text that follow the run (each catches up when shown)."""
        return {t for t in (self.plots, self.round_view, self.timeline) if t is not None}

    def refresh_panels(self) -> None:
        """Redraw the visible tab now."""
        self._panels_dirty = True
        self._dirty_tabs = self._panel_tabs()
        self.update_panels()

    def update_panels(self, *_args) -> None:
        """Bring the visible tab up to date (a hidden tab catches up when it is shown)."""
        if not self._panels_dirty:
            return
        self._panels_shown_at = time.perf_counter()
        self._fold()
        if self.stats is None:
            return
        events = self.events
        current = self.tabs.currentWidget()
        if isinstance(current, QScrollArea):
            current = current.widget()
        if current is self.plots:
            self.plots.update_stats(self.stats, events)
            self.plots.hold_repaints()
        elif current is self.round_view:
            if self.session.vocab is not None and events:
                spec = self.session.settings.spec
                self.round_view.show_round(events[-1], self.session.vocab, self.token_view.history,
                                           spec.types if spec is not None else ())
        elif current is self.timeline:
            self.timeline.update_events(events)
        else:
            return
        self._dirty_tabs.discard(current)
        if not self._dirty_tabs:
            self._panels_dirty = False

    def update_stats_bar(self) -> None:
        req, stats, session = self.controller.shown_request, self.stats, self.session
        if stats is None or session is None:
            return
        baseline = session.kind == "baseline"
        step = req is not None and req.step      # a stepped run's first rounds: no fair speed sample
        self.synth_warning.setVisible(stats.synthetic)
        speedup = None if baseline or step else session.speedup
        self.stats_bar.update_stats(stats, speedup, baseline,
                                    "– (step mode)" if step else "– (no baseline yet)",
                                    session.baseline_check() if speedup else None)

    def show_measured(self) -> None:
        """After a run: the cost panel measures the latest speculative run against its baseline
        (or the workbench's with its key): α, f, the speed-up, and the baseline's age and load."""
        c = self.controller
        last = c.workbench.last_spec
        if last is None or self.cost_panel is None:
            return
        b = last.baseline or c.workbench.baseline_for(last.settings)
        self.cost_panel.update_measured(last.spec.stats, b.stats if b else None,
                                        last.settings.spec.max_draft(), last.baseline_check(b))
        self.distance_view.refresh()
        if self.session is not None and self.session.kind == "spec" and self.stats is not None:
            self.update_stats_bar()

    def ready_when_painted(self, ready, seen: int = -1, quiet: int = 0) -> None:
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
        QTimer.singleShot(2, self, lambda: self.ready_when_painted(ready, n, quiet))

    # ------------------------------------------------------------------ the pace, a replay, a seek
    def replay(self) -> None:
        """Play the run shown from its first round at the chosen pace (no model runs)."""
        c = self.controller
        if not c.replay():
            return
        self.draw(point=True)
        self.stats_bar.set_state("Replaying at your pace…", "Pace, in the toolbar, sets how fast")
        self.playback.feed(list(c.session.run.events))

    def _released(self, events: list) -> None:
        """Rounds the pace lets through: the views show them (a live run's at the next tick)."""
        c = self.controller
        replaying = c.replaying
        c.reveal(len(events))
        if replaying:
            self.draw(point=True)
            if not c.replaying:
                self.stats_bar.set_state(f"Replayed {len(self.events)} rounds")

    def seek(self, k: int) -> None:
        """Show the run as it was after its first k rounds: the text, the round explained, the
        statistics, plots and timeline (k = all of them: the run as it ended)."""
        c = self.controller
        if c.session is None or c.session.vocab is None or not c.seek(k):
            return
        self.draw(point=True)
        k, n = c.shown_upto, len(c.session.run.events)
        self.stats_bar.set_state(f"After round {k} of {n}" if k < n else f"All {n} rounds",
                                 "Drag the Round slider under the text; its end shows the whole run")

    def calibration_progressed(self, run_id: int, fraction: float) -> None:
        """The worker: the cost policy measures the pair before the first round (a cached
        calibration reports nothing): say so, with how far it is."""
        a = self.controller.active
        if a is None or run_id != a.run_id or a.stop.is_set():
            return
        self.stats_bar.set_state(f"Calibrating the pair for the cost policy… {100 * fraction:.0f}%",
                                 "Measured once per pair and settings, then cached · Esc: stop")

    # ------------------------------------------------------------------ the controller's news
    def _heard(self, what: str, payload) -> None:
        handler = getattr(self, f"_on_{what}", None)
        if handler is not None:
            handler(payload)

    def _on_state(self, change) -> None:
        old, new = change
        if old is RunState.REPLAYING:
            self.playback.clear()            # the views stay at the round the replay reached
        if new is RunState.SWEEPING:
            self.stats_bar.set_state("Compare sweep running", "Run, Step and Baseline wait until "
                                                              "the sweep in the Compare tab ends")
        elif old is RunState.SWEEPING:
            self.stats_bar.set_state("Idle")

    def _on_session(self, session) -> None:
        self.draw()
        if session is not None:                  # a recording
            if session.kind == "spec":
                self.show_measured()
            self.stats_bar.set_state(f"Recording: {Path(session.path).name}")

    def _on_started(self, info) -> None:
        req = self.controller.active
        self.clear(running=True)
        self.session = self.controller.session
        self._begin()
        if info.calibration is not None and self.cost_panel is not None:
            self.cost_panel.set_calibration(Path(req.draft).name, *info.calibration)
            self.cost_panel.show_calibrated(info.calibration[0], req.spec.sync)
        label = "baseline (target only)" if info.kind == "baseline" else "speculative"
        self.stats_bar.set_state(f"Step mode ({label})" if req.step else f"Running {label}…")
        # The engine waits (prefill included) until the cleared plots have painted, so its first
        # rounds do not compete with those paints for the GIL; the first live plot update then
        # waits a full panel period.
        self._panels_shown_at = time.perf_counter()
        self.ready_when_painted(req.ui_ready)

    def _on_beside(self, _session) -> None:
        self.stats_bar.set_state("Measuring the baseline beside the run…", "The target alone, "
                                 "for the speed-up; the views keep the speculative run")
        self.controller.active.ui_ready.set()

    def _on_events(self, batch: list) -> None:
        if self._first_news is None:
            self._first_news = time.perf_counter()
        if not self.controller.active.step:      # a step's round is shown at once
            self.playback.feed(batch)

    def _on_finishing(self, _finish: str) -> None:
        self.stats_bar.set_state("Engine done; showing the rest at your pace…")

    def _on_paused(self, _run_id: int) -> None:
        self.draw()
        self.stats_bar.set_state(f"Paused after round {len(self.events)}",
                                 "F10: the next round · Ctrl+R: run on · Esc: stop")

    def _on_finished(self, ended) -> None:
        self.scrubber.set_live(False)
        self.draw()
        if ended.session is not None and self.stats is not None:
            self.show_measured()
        words = FINISH_WORDS.get(ended.finish, ended.finish)
        s = ended.session
        # a conversation's turn: the stats bar's figures are that turn's (the chat line's, all turns')
        done = f"Turn {len(s.settings.history) + 1} finished" if s is not None and s.settings.history \
            else "Finished"
        self.stats_bar.set_state(("Baseline measured" if ended.beside else done) + f": {words}"
                                 if s is not None else
                                 "Stopped while calibrating: no round was run")

    def _on_failed(self, _failure) -> None:
        self.scrubber.set_live(False)
        self.playback.clear()                # the controller shows every round that ran
        self.draw()
        self.stats_bar.set_state("Failed — see the message above")
