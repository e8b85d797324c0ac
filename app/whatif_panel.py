"""The What-if tab: what the run shown would have done with other settings, exact for greedy runs.

With greedy sampling the target's output does not depend on the drafter, so a finished run's
tokens are the continuation any other setting would have produced (core/measure/whatif/run.py).
The tab's pickers choose a drafter (n-gram types, alone or chained, or draft-simple) and its
sliders the parameters SpecSettings carry for it; every move replays the setting against the
run (milliseconds, on the UI thread: no model runs) and redraws its acceptance by draft
position beside the run as measured, with tokens per round and the predicted speed-up
(calibrated where this pair has a calibration, else said). draft-simple's settings replay from
one teacher-forced pass of the draft model over the run: it runs once per run, in the window's
engine on the engine's thread (``engine_task``), when the tab is shown; a Run pressed meanwhile
waits behind it there. With a calibration the bars under the hindsight ceiling show where each
fixed n, the hf and cost policies and the best p_min land.

A sampled run says in one line that what-ifs are exact for greedy only and offers the
synthetic-acceptance estimate (the Cost model tab's synthetic sweep, app/synth_view.py); a run
whose own drafter cannot be replayed (a head, a draft across vocabularies) says why in one line.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QProgressBar, QPushButton, QScrollArea,
                               QSizePolicy, QVBoxLayout, QWidget)

from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.errors import ConfigError
from specscope.core.session.run_state import FREE

from .task import engine_task
from .whatif_controls import WhatIfControls
from .whatif_plots import CeilingPlot, CurvesPlot
from .worker import MeasureRequest

__all__ = ["WhatIfPanel", "install"]

TEACH = ("<b>What this run would have done with other settings — exact for greedy.</b> "
         "<span style='color:#555'>Replayed from the run's own tokens: no model runs (draft-simple: "
         "one pass of the draft model, near-ties aside).</span>")
TEACH_TIP = ("With greedy sampling the target's output does not depend on the drafter: the run's "
             "tokens are what any other setting would have produced, so each setting's rounds are "
             "replayed against them instead of run. The n-gram types need no model and replay "
             "exactly; draft-simple replays from one pass of the draft model over the run, made "
             "once. That pass reads every position in one batch, and where the draft's top two "
             "tokens are nearly tied its batched arithmetic can pick the other one than the run's "
             "one-token decodes did: the run's own setting can then differ from the run by a point "
             "of acceptance or so (SmolLM2-135M F32 with its Q4_1 file: 96.0 % against 96.9 %).")
NAME_CHARS = 34               # a setting's name in the table is cut here (the full name in the tooltip)
SYNTH_OFFER = (" Instead, the synthetic-acceptance estimate times this pair at several acceptance "
               "levels, each against the target alone.")
NOTE_STYLE = "color:#555"
WARN_STYLE = "color:#b42318"

def _label(text: str = "", style: str = "") -> QLabel:
    """A line of words that wraps, at the top of its room."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    label.setStyleSheet(style)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


def _cut(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


class _Either:
    """Set when any of the events is (the trace stops for its own Stop and for the window closing)."""

    def __init__(self, *events):
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


class WhatIfPanel(QWidget):
    """The tab's page (module docs): it follows the run ``controller``, runs the draft's pass
    on the engine ``worker`` and takes the ``cost_tab``'s calibration; ``synthetic_requested``
    asks for the cost tab's synthetic-acceptance view."""

    updated = Signal()                  # the views show the setting chosen (tests, the benchmark)
    traced = Signal()                   # the draft's pass ended (done, failed or stopped)
    measure_requested = Signal(object)  # a MeasureRequest for the engine's thread
    synthetic_requested = Signal()      # show the cost tab's synthetic-acceptance view

    def __init__(self, controller, worker, cost_tab):
        super().__init__()
        self.controller, self.worker, self.cost_tab = controller, worker, cost_tab
        self.session = None              # the run shown here
        self.whatifs = None              # its RunWhatIfs (None: nothing to replay)
        self.current = None              # the WhatIf shown (None: none)
        self.ceiling = None              # draft-simple's bars under the ceiling (with a calibration)
        self._traced_for = None          # the session whose trace was asked for
        self._no_trace = ""              # why this run has no draft-simple pass ("" : none yet, or done)
        self._tracing = ()               # the (prompt, continuation) of the pass asked for last
        self._stale = True               # the controller changed while the tab was hidden
        self._base = None                # the setting the controls start from (the run's own)
        self._build()
        self.measure_requested.connect(worker.measure)
        self.trace_task = engine_task(self._trace_in, self._submit, worker, self)
        self.trace_task.progressed.connect(self._trace_progress)
        self.trace_task.finished.connect(self._trace_done)
        self.trace_task.failed.connect(self._trace_failed)
        controller.subscribe(self._heard)
        self._take(None)

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.setSpacing(4)
        teach = QLabel(TEACH)
        teach.setToolTip(TEACH_TIP)
        teach.setWordWrap(True)
        lay.addWidget(teach)
        row = QHBoxLayout()
        self.message = _label()
        self.synth_button = QPushButton("Estimate with synthetic acceptance…")
        self.synth_button.setToolTip("The Cost model tab's synthetic sweep: the pair really drafts and "
                                     "verifies at several acceptance levels, each against the target alone")
        self.synth_button.clicked.connect(self.synthetic_requested)
        row.addWidget(self.message, 1)
        row.addWidget(self.synth_button, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(row)
        self.body = QWidget()
        body = QHBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        self.controls = WhatIfControls()
        self.controls.changed.connect(self.redraw)
        controls = QScrollArea()        # a long chain's sliders scroll; the plots keep their room
        controls.setWidgetResizable(True)
        controls.setWidget(self.controls)
        controls.setFrameShape(QScrollArea.Shape.NoFrame)
        controls.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        controls.setFixedWidth(controls.widget().width() + controls.verticalScrollBar().sizeHint().width())
        body.addWidget(controls)
        right = QVBoxLayout()
        right.setSpacing(2)
        plots = QHBoxLayout()
        self.curves = CurvesPlot()
        self.ceiling_plot = CeilingPlot()
        for plot, stretch in ((self.curves, 2), (self.ceiling_plot, 3)):   # the bars need the room
            plot.widget.setMinimumSize(220, 160)
            plots.addWidget(plot.widget, stretch)
        right.addLayout(plots, 1)
        self.readout = QLabel()
        self.readout.setTextFormat(Qt.TextFormat.RichText)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        right.addWidget(self.readout)
        self.trace_line = _label(style=NOTE_STYLE)
        self.trace_progress = QProgressBar()
        self.trace_progress.setRange(0, 1000)
        self.trace_progress.setTextVisible(False)
        self.trace_progress.setMaximumSize(160, 10)
        self.trace_progress.setVisible(False)
        status = QHBoxLayout()
        status.addWidget(self.trace_line, 1)
        status.addWidget(self.trace_progress)
        right.addLayout(status)
        self.calibration_line = _label(style=NOTE_STYLE)
        self.calibrate_button = QPushButton("Calibrate")
        self.calibrate_button.setToolTip("Time this pair on this machine (the Cost model tab's "
                                         "Calibrate; seconds, cached): predicted speed-ups and the ceiling")
        self.calibrate_button.clicked.connect(lambda: self.cost_tab.calibrate())
        cal_row = QHBoxLayout()
        cal_row.addWidget(self.calibration_line, 1)
        cal_row.addWidget(self.calibrate_button)
        right.addLayout(cal_row)
        body.addLayout(right, 1)
        lay.addWidget(self.body, 1)
        self.filler = QWidget()             # holds the room while the body is hidden
        lay.addWidget(self.filler, 1)

    # ------------------------------------------------------------------ the run shown
    def _heard(self, what: str, _payload) -> None:
        if what in ("started", "finished", "failed", "session"):
            self.refresh()
        elif what == "state":
            self._maybe_trace()

    def refresh(self, force: bool = False) -> None:
        """Follow the controller: the run shown once it is over, its measured speed-up (a
        baseline measured beside it), nothing while a run is in progress. A hidden tab catches
        up when it is shown."""
        if not self.isVisible():
            self._stale = True
            return
        self._stale = False
        c = self.controller
        session = None if c.busy else c.session
        if force or session is not self.session:
            self._take(session)
        else:
            self.redraw()

    def _take(self, session) -> None:
        from specscope.core.measure.whatif.run import RunWhatIfs, own_setting_problem, unreplayable
        self.trace_task.request_stop()
        self.session, self.whatifs, self.current, self.ceiling = session, None, None, None
        self._traced_for = None
        self._no_trace = "" if session is None or session.settings.draft else "this run has no draft model"
        self.synth_button.setVisible(False)
        self.trace_progress.setVisible(False)
        why = ("A run is in progress: its what-ifs come when it ends." if self.controller.busy else
               "Run with the greedy sampler (or open a recorded session): when it ends, every "
               "n-gram type and draft-simple setting can be replayed against its tokens here."
               ) if session is None else unreplayable(session)
        if why:
            sampled = session is not None and not session.settings.sampler.greedy
            self._say(why + (SYNTH_OFFER if sampled else ""), warn=session is not None)
            self.synth_button.setVisible(sampled)
            self._show_body(False)
            self.updated.emit()
            return
        self.whatifs = RunWhatIfs.of(session)
        self.whatifs.use(cal=self._calibration_for(session), alone=self._alone_for(session))
        self._say(own_setting_problem(session), warn=True)
        self._show_body(True)
        self._base = self._start_spec(session)
        self.controls.show_spec(self._base)
        self.trace_line.setText("draft-simple: waiting for the draft's pass over the run (it runs "
                                "while this tab is shown)." if session.settings.draft else
                                "draft-simple: the run has no draft model to replay it with.")
        self._maybe_trace()
        self._new_prices()

    def _show_body(self, on: bool) -> None:
        self.body.setVisible(on)
        self.filler.setVisible(not on)

    def _say(self, text: str, warn: bool) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(WARN_STYLE if warn else NOTE_STYLE)
        self.message.setVisible(bool(text))

    def _start_spec(self, session):
        """The run's own setting where it replays, else draft-simple (a pair with a draft) or
        ngram-simple, at llama.cpp's defaults."""
        from specscope.core.engine.engine import SpecSettings
        from specscope.core.measure.whatif.run import own_setting_problem
        spec = session.settings.spec
        if spec is not None and not own_setting_problem(session):
            return spec
        types = (DRAFT_MODEL,) if session.settings.draft and spec is None else ("ngram-simple",)
        return SpecSettings(types=types)

    def _calibration_for(self, session):
        """The cost tab's calibration when it is of this run's pair (the cost policy's run
        shows its own there too), else the newest one of the pair cached on this machine (from
        bench, advise, Compare or an earlier calibration here), else None."""
        from specscope.core.measure.cost.cache import cached_pair
        s, cal = session.settings, self._cost_tab_calibration()

        def path(p):
            return str(Path(p).resolve()) if p else None
        if cal is not None and (cal.describe.get("target") or {}).get("path") == path(s.target) and \
                (cal.describe.get("draft") or {}).get("path") == path(s.draft):
            return cal
        return cached_pair(s.target, s.draft)

    def _cost_tab_calibration(self):
        panel = self.cost_tab.cost_panel
        return panel.calibrated if panel is not None else None

    @staticmethod
    def _alone_for(session):
        """For a run with a draft model: the newest calibration of its target alone cached on
        this machine, which prices the n-gram types (None: they take the pair's)."""
        from specscope.core.measure.cost.cache import cached_pair
        return cached_pair(session.settings.target) if session.settings.draft else None

    def set_calibration(self, cal) -> None:
        """Price the what-ifs with ``cal`` (a Calibration of this run's pair)."""
        if self.whatifs is not None:
            self.whatifs.use(cal=cal)
            self._new_prices()

    def adopt_calibration(self) -> None:
        """The cost tab calibrated: its calibration prices the what-ifs if it is of this pair."""
        if self.session is not None and self.whatifs is not None:
            cal = self._calibration_for(self.session)
            if cal is not None:
                self.set_calibration(cal)
            else:
                self.calibration_line.setText("The calibration taken is of another pair than this run's.")

    def _new_prices(self) -> None:
        """The trace or the calibration changed: the ceiling's bars again, then the views."""
        wi = self.whatifs
        self.ceiling = wi.ceiling() if wi is not None else None
        cal = wi.cal if wi is not None else None
        self.calibrate_button.setVisible(cal is None)
        self.calibration_line.setText(self._priced_with(wi))
        self.redraw()

    def _priced_with(self, wi) -> str:
        """The line saying which calibration prices the what-ifs."""
        cal, alone = (wi.cal, wi.alone) if wi is not None else (None, None)
        own = f"the target's own calibration, cached {alone.cached_age_s / 60:.0f} min ago" \
            if alone is not None else ""
        if cal is None:
            return ("No calibration of this pair yet: " + (f"the n-gram types are priced with {own}; "
                                                           if own else "")
                    + "compare tokens per round (exact); Calibrate for predicted speed-ups and "
                      "the ceiling.")
        return ("Speed-ups are predicted with this pair's calibration"
                + (f" cached on this machine {cal.cached_age_s / 60:.0f} min ago"
                   if cal is not self._cost_tab_calibration() else "")
                + (f"; the n-gram types with {own}" if own else "")
                + (" (⚠ taken under load: they may be off)." if cal.under_load else "."))

    # ------------------------------------------------------------------ the controls
    def spec(self):
        """The setting the controls describe (the run's own for what they do not set)."""
        from specscope.core.engine.engine import SpecSettings
        return self.controls.spec(self._base or SpecSettings())

    # ------------------------------------------------------------------ drawing
    def redraw(self, *_args) -> None:
        """Replay the setting chosen (cached once made) and draw it beside the measured run."""
        wi = self.whatifs
        if wi is None:
            self.updated.emit()
            return
        spec = self.spec()
        why = "" if spec.types else "Check a drafter."
        try:
            if not why:
                spec.validate()
                self.current = wi.evaluate(spec)
        except ConfigError as exc:
            why = str(exc)
        if why:
            self.current = None
        run = self.session.run
        measured = run.stats.position_acceptance if self.session.kind == "spec" else ()
        w = self.current
        self.curves.show(w.stats.position_acceptance if w else (), measured,
                         why or ("" if w and w.stats.n_drafted else "this setting drafts nothing here"))
        self.readout.setText(self._readout())
        self.readout.setToolTip(f"what-if: {w.name}" if w else "")
        chosen = next((i for i, (_, _, s) in enumerate(self.ceiling.bars)
                       if (s.types, s.n_max, s.p_min, s.draft_policy) ==
                       (spec.types, spec.n_max, spec.p_min, spec.draft_policy)), None) \
            if self.ceiling is not None else None
        self.ceiling_plot.show(self.ceiling, chosen, self.session.speedup,
                               self._ceiling_note())
        self.updated.emit()

    def _ceiling_note(self) -> str:
        wi = self.whatifs
        if self._no_trace:
            return f"No draft-simple ceiling:\n{self._no_trace}"
        if wi.trace is None:
            return "The ceiling waits for\nthe draft's pass over the run"
        if wi.draft_cal is None:
            return "The ceiling needs a calibration\nof this pair: Calibrate"
        return ""

    def _readout(self) -> str:
        """The run as measured and the what-if: acceptance, tokens per round, speed-up."""
        s, w = self.session, self.current
        stats = s.run.stats
        spec = s.settings.spec

        def cells(name, rate, per_round, speed, color):
            return (f"<tr><td style='color:{color}'><b>{html.escape(name)}</b></td>"
                    f"<td align=right>&nbsp;{rate}&nbsp;</td><td align=right>&nbsp;{per_round}&nbsp;</td>"
                    f"<td>&nbsp;{speed}</td></tr>")
        if s.kind == "spec":
            measured = s.speedup
            check = s.baseline_check() if measured is not None else None
            if measured is None:
                speed = "– (no baseline yet)"
            elif check is not None and check.stale:      # said here, not only in the status bar
                speed = (f"{measured:.2f}× measured, <span style='color:#b42318'>⚠ stale "
                         f"baseline</span> ({html.escape(check.stale)}: Baseline measures it again)")
            else:
                speed = f"{measured:.2f}× measured"
            own = cells(f"this run: {_cut(spec.label)}", f"{stats.acceptance_rate:.1%}",
                        f"{stats.n_tokens / max(stats.n_rounds, 1):.2f}", speed, "#d64545")
        else:
            own = cells("this run (target alone)", "–", "1.00", "1.00×", "#d64545")
        if w is None:
            mine = cells("what-if", "–", "–", "–", "#0072b2")
        else:
            speed = (f"{w.predicted:.2f}× predicted" if w.predicted is not None else
                     "– (no calibration)")
            mine = cells(f"what-if: {_cut(w.name)}", f"{w.stats.acceptance_rate:.1%}",
                         f"{w.tokens_per_round:.2f}", speed, "#0072b2")
        head = ("<tr><td></td><td align=right>&nbsp;acceptance&nbsp;</td>"
                "<td align=right>&nbsp;tokens/round&nbsp;</td><td>&nbsp;speed-up</td></tr>")
        return f"<table cellspacing=0>{head}{own}{mine}</table>"

    # ------------------------------------------------------------------ the draft's pass
    def _maybe_trace(self) -> None:
        """Ask for the draft's pass over the run once, when the tab is shown and the cores are
        free (it runs in the window's engine)."""
        s = self.session
        if s is None or self.whatifs is None or self._traced_for is s or not self.isVisible() \
                or self.trace_task.running or self.controller.state not in FREE:
            return
        draft = s.settings.draft
        if not draft:
            return
        if not Path(draft).is_file():
            self._no_trace = "its draft model is not there"
            self.trace_line.setText(f"draft-simple: the run's draft model {draft} is not there.")
            self._traced_for = s
            self.redraw()
            return
        self._traced_for = s
        self.trace_line.setText("draft-simple: the draft's pass over the run…")
        self.trace_progress.setValue(0)
        self.trace_progress.setVisible(True)
        self._tracing = (self.whatifs.prompt, self.whatifs.cont)
        self.trace_task.start(self._tracing)

    def _submit(self, fn) -> MeasureRequest:
        s = self.session.settings
        req = MeasureRequest(self.controller.next_id(), Path(s.target), Path(s.draft), s.engine, fn)
        self.measure_requested.emit(req)
        return req

    def _trace_in(self, request, engine, progress, stop):
        from specscope.core.measure.whatif.run import trace_run
        prompt, cont = request
        return trace_run(engine, prompt, cont, progress, _Either(stop, self.worker.abort))

    def _trace_progress(self, fraction: float, what: str) -> None:
        if not self._mine(self._tracing):
            return
        self.trace_progress.setValue(int(1000 * fraction))
        self.trace_line.setText(f"draft-simple: {what}… {100 * fraction:.0f}%")

    def _mine(self, request) -> bool:
        """``request`` (prompt, continuation) is the pass of the run shown now."""
        wi = self.whatifs
        return wi is not None and (wi.prompt, wi.cont) == tuple(request)

    def _trace_done(self, request, trace) -> None:
        self.trace_progress.setVisible(False)
        if self._mine(request):
            self.whatifs.use(trace=trace)
            name = Path(self.session.settings.draft).name
            self.trace_line.setText(f"draft-simple: replayed from one pass of {name} over the run"
                                    + ("." if trace.depth else
                                       "; p_min 0 only (this draft cannot roll on)."))
            self._new_prices()
            self.traced.emit()
        self._maybe_trace()              # a pass of an earlier run: this one's now

    def _trace_failed(self, exc, _tb: str) -> None:
        self.trace_progress.setVisible(False)
        if self._mine(self._tracing):
            if exc is None:              # stopped: asked again when the tab is shown
                self.trace_line.setText("draft-simple: the draft's pass was stopped.")
                self._traced_for = None
            else:
                self._no_trace = "see the line below"
                self.trace_line.setText(f"draft-simple: {exc}")
                self.redraw()
            self.traced.emit()
        self._maybe_trace()

    def showEvent(self, event):  # noqa: N802
        super().showEvent(event)
        if self._stale:
            self.refresh()
        self._maybe_trace()

    # ------------------------------------------------------------------ elsewhere
    def shown(self) -> dict:
        """What the tab shows (numbers and lines, for tests)."""
        return {"message": self.message.text() if self.message.isVisible() else "",
                "curves": self.curves.data(), "ceiling": self.ceiling_plot.data(),
                "readout": self.readout.text(), "trace": self.trace_line.text(),
                "calibration": self.calibration_line.text()}


def install(window) -> WhatIfPanel:
    """The What-if tab among the window's tabs below the text, told when the cost tab calibrates;
    its synthetic button shows the cost tab's synthetic-acceptance view."""
    panel = WhatIfPanel(window.controller, window.worker, window.cost_tab)
    window.tabs.addTab(panel, "What-if")
    window.tabs.setTabToolTip(window.tabs.count() - 1, "What this run would have done with other "
                              "drafters and settings: replayed from its own tokens, exact for greedy")
    window.cost_tab.calibration_task.finished.connect(lambda *_: panel.adopt_calibration())

    def show_synthetic() -> None:
        window.tabs.setCurrentWidget(window.cost_tab)
        window.cost_tab.ensureWidgetVisible(window.synth_view)
        window.synth_view.measure.setFocus()
    panel.synthetic_requested.connect(show_synthetic)
    return panel

