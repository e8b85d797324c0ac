"""The Advisor workspace: "what should I run?" in the window (``specscope advise``,
core/measure/advise/advisor.py).

A form (:mod:`.advise_form`: the target, candidate drafts, categories, budget, -n), Run · Stop ·
a progress bar with the current step, and the phases (baselines → what-ifs → measuring) with the
budget's time left. The advisor runs on a :class:`~.task.BackgroundTask` (its own thread and
models, loaded there); every report waits until the view has drawn it, so the results fill in
between measurements. Stop ends it after the current run and keeps what was measured.

Results: the table per category with Copy buttons for the llama.cpp command lines
(:mod:`.advise_table`), the details of the chosen category, the measured speed-ups with their
intervals and the break-even plot (:mod:`.advise_charts`). An advice saves as JSON and opens
again without its models; the last one is kept and shown at the next start.
"""

from __future__ import annotations

import time
from html import escape

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtWidgets import (QFileDialog, QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea,
                               QSizePolicy, QSplitter, QVBoxLayout, QWidget)

from .advise_charts import BreakEvenPlot, MeasuredChart
from .advise_form import AdviseForm
from .advise_table import AdviceTable, interval_text
from .errors import MessageBanner
from .session_files import data_dir
from .task import BackgroundTask, MeasureRow

__all__ = ["AdvisorView"]

AUTOSAVE_NAME = "last-advice.json"
BELOW_MIN_HEIGHT = 260           # the details and the two plots under the table
ADVICE_FILTER = "SpecScope advice (*.json);;All files (*)"
INTRO = ("<b>What should I run here?</b> The advisor runs the target alone on the prompts of the "
         "ticked kinds of work, predicts every drafter setting from those runs (what-ifs), then "
         "measures the best few per category for real, speculative and target alone back to back. It "
         "takes at most the budget (the demo pair on one thread: under a minute); Stop keeps what was "
         "measured.")
PHASES = (("baselines", "baselines"), ("predict", "what-ifs"), ("measure", "measuring"))
BREAK_EVEN_NOTE = ("<b>Below the solid curve a draft beats the target alone here</b>, below the "
                   "dashed one by 1.5×; above it, it cannot at any draft length. f: what a drafted "
                   "token costs in target tokens; α: how often one is accepted. Each draft at its "
                   "best fixed n per category, α fitted to its rounds there.")


def advise_task(settings, progress, stop):
    """The task: :class:`~specscope.core.measure.advise.advisor.Advisor` on the task's thread (its
    engines are created there), telling each step (``progress``) and handing over its phase
    and, once the baselines are done, the advice so far (``progress.post``)."""
    from specscope.core.measure.advise.advisor import Advisor

    def say(line: str) -> None:
        phase = advisor.result.phase
        progress(advisor.share(), 1.0, line.split("] ", 1)[-1])
        progress.post((phase, advisor.result if phase in ("predict", "measure") else None))
    advisor = Advisor(settings, say, stop)
    return advisor.run()


class AdvisorView(QWidget):
    """The workspace (module docs). ``shown(advice)`` after an advice is drawn (a run's end, a
    file opened)."""

    sweep_started = Signal()                 # the cores are held (the window's run waits)
    sweep_finished = Signal(object)          # the Advice (also after Stop)
    sweep_failed = Signal(object, str)
    shown = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.advice = None                   # the Advice shown
        self.pair = None                     # its (name, calibration) pricing the break-even (None: none)
        self.points = []                     # its drafts placed: (category, draft, DraftPoint)
        self.blocker = None                  # () -> why it cannot start now ("": it can)
        self._started_at = 0.0
        self._budget_s = 0.0
        self._phase = ""
        self.task = BackgroundTask(advise_task, "specscope-advise", self, handoff=True)
        self._build()
        self.task.started.connect(self.sweep_started)
        self.task.posted.connect(self._on_posted)
        self.task.progressed.connect(lambda *_: self.task.acknowledge())
        self.task.failed.connect(self._on_failed)
        self.row.finished.connect(self._on_finished)
        self.clock = QTimer(self)
        self.clock.setInterval(1000)
        self.clock.timeout.connect(self._show_phase)
        self._update_buttons()
        self._quit_hooked = False

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        root = QVBoxLayout(self)
        root.setContentsMargins(6, 6, 6, 6)
        self.banner = MessageBanner()
        root.addWidget(self.banner)
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        intro.setStyleSheet("color:#444")
        root.addWidget(intro)
        self.form = AdviseForm()
        self.form.changed.connect(self._update_buttons)
        root.addWidget(self.form)
        bar = QHBoxLayout()
        self.row = MeasureRow(self.task, "Run the advisor with these settings (it holds the cores: the "
                                         "Run tab waits until it ends)", "stopping after the current run…")
        self.row.measure.setText("▶  Run advisor")
        self.row.measure.clicked.connect(lambda: self.start())
        self.row.progress.setMaximumWidth(220)
        self.run_button, self.stop_button, self.status = self.row.measure, self.row.stop, self.row.status
        bar.addWidget(self.row, 1)
        self.open_button = QPushButton("Open advice…")
        self.save_button = QPushButton("Save advice…")
        self.open_button.setToolTip("Show a saved advice (a .json file, or `specscope advise --json`'s "
                                    "output) without its models")
        self.save_button.setToolTip("Save the advice shown as JSON (the same document as "
                                    "`specscope advise --json`)")
        self.open_button.clicked.connect(self._open_dialog)
        self.save_button.clicked.connect(self._save_dialog)
        bar.addWidget(self.open_button)
        bar.addWidget(self.save_button)
        root.addLayout(bar)
        self.phase_label = QLabel("")
        self.phase_label.setTextFormat(Qt.TextFormat.RichText)
        self.phase_label.setWordWrap(True)
        root.addWidget(self.phase_label)
        self.table = AdviceTable()
        self.table.copied.connect(self._copied)
        self.table.category_selected.connect(self._category_chosen)
        root.addWidget(self.table)
        root.addWidget(self._below(), 1)
        self._show_phase()

    def _below(self) -> QWidget:
        """The chosen category's details, the measured chart and the break-even plot, side by side."""
        self.details = QLabel("Run the advisor, or open a saved advice: the advice per workload "
                              "category fills the table above.")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop)
        details = QScrollArea()
        details.setMinimumWidth(260)
        details.setWidgetResizable(True)
        details.setFrameShape(QScrollArea.Shape.NoFrame)
        details.setWidget(self.details)
        self.chart = MeasuredChart()
        self.break_even = BreakEvenPlot()
        chart_box, self.chart_key = _with_caption(self.chart.widget, "")
        plot_box, self.caption = _with_caption(self.break_even.widget, BREAK_EVEN_NOTE)
        row = QSplitter(Qt.Orientation.Horizontal)
        for w, stretch in ((details, 3), (chart_box, 3), (plot_box, 4)):
            row.addWidget(w)
            row.setStretchFactor(row.count() - 1, stretch)
        row.setSizes([300, 300, 400])
        row.setChildrenCollapsible(False)
        # the rest of the height, whatever the plots would like: on a small screen the workspace
        # then fits without scrolling
        row.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        row.setMinimumHeight(BELOW_MIN_HEIGHT)
        self.splitter = row
        return row

    # ------------------------------------------------------------------ public API
    @property
    def running(self) -> bool:
        return self.task.running

    def set_pair(self, target, draft=None) -> None:
        """The target and the candidate draft (the window's current pair)."""
        self.form.set_pair(target, draft)

    def settings(self):
        return self.form.settings()

    def start(self, settings=None) -> bool:
        """Run the advisor (the controls' settings unless given); False, said in the banner, when
        it cannot start."""
        if self.running:
            return False
        reason = self.blocker() if self.blocker is not None else ""
        if reason:
            self.banner.show_message("warning", reason)
            return False
        from specscope.core.errors import SpecScopeError
        try:
            settings = settings or self.settings()
            settings.validate()
        except SpecScopeError as exc:
            self.banner.show_error(exc, context="Cannot run the advisor")
            return False
        self.banner.dismiss()
        self._hook_quit()
        self._started_at, self._budget_s, self._phase = time.monotonic(), settings.budget_s, ""
        self.row.run(settings)
        self.clock.start()
        self._show_phase()
        self._update_buttons()
        return True

    def request_stop(self) -> None:
        self.row.request_stop()

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        self.clock.stop()
        return self.task.shutdown(timeout_ms)

    def show_advice(self, advice) -> None:
        """Draw ``advice`` (an Advice: a run's, or one opened from a file)."""
        self.advice = advice
        self._fill()
        self._update_buttons()
        self.shown.emit(advice)

    def save(self, path):
        from specscope.core.measure.advise.file import save_advice
        return save_advice(self.advice, path)

    def open(self, path) -> bool:
        """Show the advice saved at ``path``; a bad file is one banner line, what was shown stays."""
        from specscope.core.errors import SpecScopeError
        from specscope.core.measure.advise.file import load_advice
        if self.running:
            self.banner.show_message("info", "Stop the advisor before opening an advice.")
            return False
        try:
            advice = load_advice(path)
        except SpecScopeError as exc:
            self.banner.show_message("error", f"The advice cannot be opened: {exc}")
            return False
        self.banner.dismiss()
        self._phase = ""
        self.status.setText(f"opened {path}")
        self.form.show_settings(advice.settings)     # the controls as it ran
        self.show_advice(advice)
        return True

    @property
    def autosave_path(self):
        return data_dir() / AUTOSAVE_NAME

    def restore_last(self) -> None:
        """Show the advice of the last run, where there is one (quietly: none, none shown)."""
        if self.autosave_path.is_file() and self.advice is None:
            from specscope.core.errors import SpecScopeError
            from specscope.core.measure.advise.file import load_advice
            try:
                self.show_advice(load_advice(self.autosave_path))
                self.status.setText("the last advice")
            except SpecScopeError:
                pass

    def to_dict(self) -> dict:
        return self.form.to_dict()

    def from_dict(self, d: dict) -> None:
        self.form.from_dict(d)
        self._update_buttons()

    def closeEvent(self, event):  # noqa: N802 - Qt override
        self.shutdown()
        super().closeEvent(event)

    # ------------------------------------------------------------------ the task's reports
    def _hook_quit(self) -> None:
        app = QCoreApplication.instance()
        if app is not None and not self._quit_hooked:
            app.aboutToQuit.connect(self.shutdown)
            self._quit_hooked = True

    def _on_posted(self, item) -> None:
        try:
            self._phase, advice = item
            self._show_phase()
            if advice is not None:
                self.show_advice(advice)
            if self.isVisible():
                self.repaint()
        finally:
            self.task.acknowledge()

    def _on_finished(self, _settings, advice) -> None:
        self.clock.stop()
        self._phase = ""
        self.show_advice(advice)
        self.status.setText(f"stopped after {advice.seconds:.0f} s: what was measured is shown" if advice.stopped
                            else f"the budget ended it after {advice.seconds:.0f} s" if advice.out_of_time
                            else f"done in {advice.seconds:.0f} s")
        self._show_phase()
        from specscope.core.measure.advise.file import save_advice
        try:
            save_advice(advice, self.autosave_path)
        except OSError:
            pass                    # the autosave never interrupts
        self.sweep_finished.emit(advice)

    def _on_failed(self, exc, tb: str) -> None:
        self.clock.stop()
        self._phase = ""
        self._show_phase()
        self._update_buttons()
        if exc is not None:
            self.banner.show_error(exc, tb, context="The advisor failed")
        self.sweep_failed.emit(exc, tb)

    # ------------------------------------------------------------------ filling in
    def _update_buttons(self) -> None:
        idle = not self.running
        self.run_button.setEnabled(idle and self.form.can_run())
        self.stop_button.setEnabled(not idle)
        self.open_button.setEnabled(idle)
        self.save_button.setEnabled(idle and self.advice is not None)
        self.form.set_idle(idle)

    def _show_phase(self) -> None:
        """baselines → what-ifs → measuring: done ✓, the current one in bold; while it runs, the
        budget's time left; after, what the advice shown was run on."""
        names = [k for k, _ in PHASES]
        a, running = self.advice, self.running
        phase = self._phase if running else a.phase if a is not None else ""
        here = names.index(phase) if phase in names else -1
        if a is not None and not running and not a.stopped and not a.out_of_time:
            here = len(names)                       # every step done
        steps = []
        for i, (_, label) in enumerate(PHASES):
            text = f"{i + 1}. {label}"
            steps.append(f"<span style='color:#1a7f37'>{text} ✓</span>" if i < here else
                         f"<b>{text}</b>" if i == here else f"<span style='color:#777'>{text}</span>")
        if running and phase not in names:
            steps.insert(0, "<b>loading the models</b>")
        tail = ""
        if running:
            s = max(0.0, self._budget_s - (time.monotonic() - self._started_at))
            tail = f" · {int(s) // 60}:{int(s) % 60:02d} of the budget left"
        elif a is not None:
            tail = " · " + self._summary()
        self.phase_label.setText(" → ".join(steps) + tail)

    def _fill(self) -> None:
        a = self.advice
        self.pair = a.pair_calibration() if a is not None else None
        self.points = a.draft_points() if self.pair is not None else []
        self.table.fill(a, self.running)
        self.chart.fill(a)
        self.chart_key.setText(self.chart.key_html())
        self._category_chosen(self.table.selected_category())
        self._show_phase()

    def _summary(self) -> str:
        """What the advice shown was run on, and how it ended."""
        from pathlib import Path
        a = self.advice
        drafts = ", ".join(Path(d).name for d in a.settings.drafts) or "no draft model (n-gram types)"
        ending = ("stopped: what was measured" if a.stopped else "the budget ended it" if a.out_of_time
                  else "every planned pass measured")
        return (f"{a.settings.target.name} with {drafts}, {a.settings.n_predict} tokens per run, "
                f"{a.seconds:.0f} s: {ending}")

    def _category_chosen(self, name: str | None) -> None:
        """The details of ``name``'s advice under the table; its drafts drawn larger on the break-even plot."""
        a = self.advice
        cat = next((c for c in a.categories if c.category == name), None) if a is not None else None
        from specscope.core.measure.cost.break_even import verdict
        cal = self.pair[1] if self.pair is not None else None
        self.break_even.fill(cal, self.points, name)
        notes = []
        if self.pair is not None:
            notes.append(f"Curves priced with {self.pair[0]}'s calibration"
                         + (" (taken under load: they sit lower than on a quiet machine)." if cal.under_load else "."))
            notes += [f"{s:g}× is out of reach here at any α shown." for s in self.break_even.out_of_reach()]
        lines = [f"{escape(c)} — {escape(verdict(cal, p))}" for c, _, p in self.points if c == name]
        key = self.break_even.key_html()
        self.caption.setText((f"{key}<br>" if key else "") + " ".join([BREAK_EVEN_NOTE, *notes])
                             + "".join(f"<br>{x}" for x in lines))
        if cat is None:
            self.details.setText("")
            return
        from specscope.core.measure.advise.report import ceiling_line
        d = cat.decision()
        lines = [f"<b>{cat.category}</b>: {'speculate' if d.best else 'don’t speculate' if d.judged else 'no advice'}"
                 f" — {escape(d.why)}.",
                 f"<tt>{escape(self.table.command(cat.category, 'llama-server'))}</tt>"]
        lines += [f"{escape(m.candidate.name)}: {interval_text(m)}, {len(m.pass_speedups())} passes "
                  f"({m.pairs} pairs, {m.identical} with the target's tokens)" for m in cat.measured]
        lines += [escape(ceiling_line(cat, draft)) for draft in cat.ceilings]
        self.details.setText("<br>".join(lines))

    def _copied(self, tool: str, category: str, line: str) -> None:
        self.status.setText(f"copied the {tool} command for {category}")
        self.status.setToolTip(line)

    # ------------------------------------------------------------------ files
    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open an advice", str(self.autosave_path.parent),
                                              ADVICE_FILTER)
        if path:
            self.open(path)

    def _save_dialog(self) -> None:
        if self.advice is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the advice", "specscope-advice.json", ADVICE_FILTER)
        if not path:
            return
        try:
            self.save(path)
        except OSError as exc:
            self.banner.show_error(exc, context="Cannot save the advice")
            return
        self.status.setText(f"saved {path}")


CAPTION_MIN_PX = 40         # the least a caption is given; longer than its room, it scrolls


class _CaptionBox(QWidget):
    """A plot over its wrapped caption; a caption longer than the room the plot's minimum
    height leaves scrolls in its own area instead of being drawn over the plot's axis."""

    def __init__(self, plot, caption: QLabel):
        super().__init__()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(plot, 1)
        self.plot = plot
        self.area = QScrollArea()
        self.area.setWidgetResizable(True)
        self.area.setFrameShape(QFrame.Shape.NoFrame)
        self.area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.area.setWidget(caption)
        lay.addWidget(self.area)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.fit()

    def fit(self) -> None:
        label = self.area.widget()
        need = label.heightForWidth(max(1, self.area.viewport().width())) + 4
        room = self.height() - self.plot.minimumHeight() - 2
        self.area.setFixedHeight(min(need, max(CAPTION_MIN_PX, room)))


class _Caption(QLabel):
    """A caption that asks its box to fit it again when its text changes."""
    box: "_CaptionBox | None" = None

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        if self.box is not None:
            self.box.fit()


def _with_caption(plot, text: str) -> tuple[QWidget, QLabel]:
    """``plot`` over a wrapped caption: (the box, the caption)."""
    caption = _Caption(text)
    caption.setWordWrap(True)
    caption.setTextFormat(Qt.TextFormat.RichText)
    caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    caption.box = box = _CaptionBox(plot, caption)
    return box, caption
