"""The Compare view: drafters × drafts × draft lengths × prompts, measured against the target
alone.

The same sweep as ``specscope bench`` (:mod:`specscope.core.measure.bench.sweep`), run on a
:class:`~.task.BackgroundTask` with progress and a cooperative Stop (checked between runs and
passed to the engine's runs, so Stop takes effect within one round); every report waits until
the view has drawn it, so the window paints between measurements. It shows

- the calibrated cost figures of every pair (c(k), f, ...; :mod:`specscope.core.measure.cost.calibrate`);
- the table of the CSV export (:mod:`.compare_table`: pooled rows, per-prompt rows on request,
  the measured speed-up with its spread, grey and ≈ within noise);
- a heatmap of the measured speed-up, configurations × n, and the speed-up against n, measured,
  calibrated and textbook (:mod:`.compare_charts`);
- the best n per configuration, in words the figures the repetitions do not back, why a
  calibrated prediction may be far off, and the lossless check.

The controls are :mod:`.compare_form`'s; a configuration has the same name in the table, the
heatmap and the chart's legend (the draft file only when the sweep has several).

    python -m specscope.app.compare_view [-m TARGET.gguf] [-md DRAFT.gguf ...]
"""

from __future__ import annotations

import math
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QCheckBox, QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton,
                               QScrollArea, QSizePolicy, QSplitter, QVBoxLayout, QWidget)

from .compare_charts import KEY_TIP, SpeedupChart, SpeedupHeatmap
from .compare_form import SweepForm
from .compare_table import SweepTable, measured_text
from .plot_base import AXIS_COLOR
from .task import BackgroundTask

__all__ = ["CompareView"]

CHART_MIN_WIDTH = 350      # the heatmap and the speed-up chart beside the table


def sweep(settings, progress, stop):
    """The task: :func:`specscope.core.measure.bench.sweep.run_sweep`, handing over each calibration and
    the rows so far as they come (``progress.post``)."""
    from specscope.core.measure.bench.sweep import run_sweep
    return run_sweep(settings, stop=stop, progress=progress,
                     on_calibrated=lambda name, cal, cached: progress.post(("calibrated", name, cal, cached)),
                     on_rows=lambda rows: progress.post(("rows", rows)))


class CompareView(QWidget):
    """Compare tab: set a pair (and optional extra drafts), choose draft lengths and
    prompts, Run; results fill in as the sweep goes. Stop ends it after the current run."""

    sweep_started = Signal()
    sweep_finished = Signal(object)             # SweepResult (also after Stop)
    sweep_failed = Signal(object, str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.result = None                       # the last SweepResult
        self.rows: list = []
        self.calibrations: dict[str, object] = {}
        self.from_cache: dict[str, bool] = {}
        self._loaded_shown: list[str] = []       # calibrations taken under load, said in the banner
        self.blocker = None                      # () -> why a sweep cannot start now ("": it can)
        self._settings = None                    # the SweepSettings of the sweep shown
        self._steps = 1                          # its progress steps (run_sweep's)
        # each report waits until it is drawn: the window paints between measurements
        self.task = BackgroundTask(sweep, "specscope-compare", self, handoff=True)
        self.task.progressed.connect(self._on_progress)
        self.task.posted.connect(self._on_posted)
        self.task.finished.connect(self._on_finished)
        self.task.failed.connect(self._on_failed)
        self._quit_hooked = False
        self._build()
        self._update_buttons()

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        from specscope.app.errors import MessageBanner
        root = QVBoxLayout(self)
        root.setContentsMargins(6, 6, 6, 6)
        self.banner = MessageBanner()
        root.addWidget(self.banner)
        self.form = SweepForm()
        self.form.changed.connect(self._update_buttons)
        f = self.form                            # its controls, as the window and the tests use them
        self.drafts, self.drafters, self.chains, self.prompts = f.drafts, f.drafters, f.chains, f.prompts
        self.n_values, self.p_min_values, self.n_predict, self.repeats = (f.n_values, f.p_min_values,
                                                                          f.n_predict, f.repeats)
        self.sync, self.threads, self.temperature, self.accept_rule = f.sync, f.threads, f.temperature, f.accept_rule
        self.deterministic, self.ignore_eos, self.recalibrate = f.deterministic, f.ignore_eos, f.recalibrate
        self.alpha_on, self.alpha = f.alpha_on, f.alpha
        root.addWidget(self.form)
        root.addLayout(self._run_bar())
        self.calibration_label = QLabel("Calibration: not measured yet (Run sweep first times this "
                                        "machine's target batches and draft tokens, a few seconds "
                                        "per draft, and keeps them).")
        self.calibration_label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.calibration_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.calibration_label.setWordWrap(False)
        self.calibration_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        root.addWidget(self.calibration_label)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self._results())
        split.addWidget(self._pictures())
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([800, 480])
        self.splitter = split
        root.addWidget(split, 1)

    def _run_bar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.run_button = QPushButton("Run sweep")
        self.run_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.request_stop)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("no sweep yet")        # "%v / %m" once one starts
        self.status = QLabel("")
        self.status.setMinimumWidth(200)
        self.csv_button = QPushButton("Export CSV…")
        self.json_button = QPushButton("Export JSON…")
        self.csv_button.clicked.connect(lambda: self._export_dialog("csv"))
        self.json_button.clicked.connect(lambda: self._export_dialog("json"))
        for w, stretch in ((self.run_button, 0), (self.stop_button, 0), (self.progress, 1), (self.status, 2),
                           (self.csv_button, 0), (self.json_button, 0)):
            bar.addWidget(w, stretch)
        return bar

    def _results(self) -> QWidget:
        """The table (pooled rows, or per prompt), the best n and the lossless check in words."""
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("<b>Results</b> (ALL = pooled over the prompts)"))
        top.addStretch(1)
        self.per_prompt = QCheckBox("Rows per prompt")
        self.per_prompt.toggled.connect(self._fill_table)
        top.addWidget(self.per_prompt)
        lv.addLayout(top)
        self.table = SweepTable()
        lv.addWidget(self.table, 1)
        self.best_label = _text_label()
        lv.addWidget(self.best_label)
        self.lossless_label = _text_label()
        lv.addWidget(self.lossless_label)
        return left

    def _pictures(self) -> QWidget:
        """The heatmap over the chart, each with its key."""
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        caption = QLabel("<b>Measured speed-up</b> (×), configurations × n (best n in bold; grey "
                         "<i>italics</i>: within noise; none: never drafted)")
        caption.setWordWrap(True)
        caption.setToolTip("within noise: the repetitions' spread is wider than the distance from 1×: "
                           "they disagree by more than the gain or loss they measure; never drafted: "
                           "the drafter proposed no token, the figure is the target alone plus its lookups")
        rv.addWidget(caption)
        self.heatmap = SpeedupHeatmap()
        rv.addWidget(self.heatmap)
        self.chart = SpeedupChart()
        self.plot, self.legend = self.chart.widget, self.chart.legend
        rv.addWidget(self.plot, 1)
        key = self.key = QLabel(self.chart.key_html())
        key.setTextFormat(Qt.TextFormat.RichText)
        key.setToolTip(KEY_TIP)
        key.setStyleSheet(f"color:{AXIS_COLOR}")
        key.setWordWrap(True)
        rv.addWidget(key)
        # where the window is short (1280x720) the column scrolls: squeezed, its wrapped words
        # were drawn over the chart's axis
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(right)
        return scroll

    # ------------------------------------------------------------------ public API
    @property
    def target(self) -> Path | None:
        return self.form.target

    @property
    def prompt_file(self) -> Path | None:
        return self.form.prompt_file

    @property
    def running(self) -> bool:
        return self.task.running

    def set_pair(self, target_path, draft_path=None, extra_drafts=()) -> None:
        """The pair to benchmark (the window's current pair), plus optional other drafts."""
        self.form.set_pair(target_path, draft_path, extra_drafts)
        if self.rows and not self.running:       # the results shown say they are another pair's
            self._fill_summary()

    def add_draft(self, path) -> None:
        self.form.add_draft(path)

    def draft_paths(self) -> list[str]:
        return self.form.draft_paths()

    def settings(self):
        """The SweepSettings the controls describe (raises ConfigError on bad input)."""
        return self.form.settings()

    def chosen_chains(self) -> tuple[tuple[str, ...], ...]:
        return self.form.chosen_chains()

    def set_drafters(self, *words: str) -> None:
        """Tick these single types; the rest (multi-type words) go to the chains line."""
        self.form.set_drafters(*words)

    def set_prompt_file(self, path) -> None:
        self.form.set_prompt_file(path)

    def start(self, settings=None) -> bool:
        """Run a sweep (the controls' settings unless given). False if it could not start."""
        if self.running:
            return False
        reason = self.blocker() if self.blocker is not None else ""
        if reason:                  # the window is running: one piece of work at a time
            self.banner.show_message("warning", reason)
            return False
        try:
            settings = settings or self.settings()
            settings.validate()
            from specscope.core.measure.bench.settings import sweep_steps
            self._steps = max(1, sweep_steps(settings))
        except Exception as exc:  # noqa: BLE001 - bad input is shown, not raised
            self.banner.show_error(exc, context="Cannot run the sweep")
            return False
        self.banner.dismiss()
        self._hook_quit()
        self._settings = settings
        self.rows = []
        self.calibrations, self.from_cache = {}, {}
        self._loaded_shown = []
        self.result = None
        self._fill_all()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m")
        self.status.setText("starting…")
        self.task.start(settings)
        self._update_buttons()
        self.sweep_started.emit()
        return True

    def request_stop(self) -> None:
        if self.running:
            self.task.request_stop()
            self.status.setText("stopping after the current run…")

    def export(self, path) -> Path:
        """Write the last results as CSV or JSON (by the file's suffix)."""
        if self.result is None:
            raise ValueError("nothing to export yet")
        return self.result.save(path)

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop a running sweep and end the worker thread (call before closing)."""
        return self.task.shutdown(timeout_ms)

    def resizeEvent(self, event):  # noqa: N802 - Qt override: first shown, or the window resized
        super().resizeEvent(event)
        self._fit_table()

    def closeEvent(self, event):  # noqa: N802 - Qt override
        self.shutdown()
        super().closeEvent(event)

    def to_dict(self) -> dict:
        """The controls, for the window's settings (not the pair: the window owns it)."""
        return {**self.form.to_dict(), "per_prompt": self.per_prompt.isChecked()}

    def from_dict(self, d: dict) -> None:
        """Put saved controls back; a value that no longer fits keeps the default."""
        self.form.from_dict(d)
        if isinstance(d.get("per_prompt"), bool):
            self.per_prompt.setChecked(d["per_prompt"])
        self._update_buttons()

    # ------------------------------------------------------------------ the task's reports
    def _hook_quit(self) -> None:
        app = QCoreApplication.instance()
        if app is not None and not self._quit_hooked:
            app.aboutToQuit.connect(self.shutdown)   # a tab's closeEvent does not run at exit
            self._quit_hooked = True

    def _drawn(self) -> None:
        """Paint now and let the sweep go on measuring."""
        try:
            if self.isVisible():
                self.repaint()
        finally:
            self.task.acknowledge()

    def _on_progress(self, fraction: float, what: str) -> None:
        try:
            self.progress.setRange(0, self._steps)
            self.progress.setValue(round(fraction * self._steps))
            if self.running and not self.task.stopping:
                self.status.setText(what)
        finally:
            self._drawn()

    def _on_posted(self, item) -> None:
        try:
            if item[0] == "calibrated":
                _, name, cal, cached = item
                self.calibrations[name] = cal
                self.from_cache[name] = cached
                self._fill_calibration()
            else:
                self.rows = list(item[1])
                self._fill_all()
        finally:
            self._drawn()

    def _on_finished(self, _settings, result) -> None:
        self.result = result
        self.rows = list(result.rows)
        self.calibrations = dict(result.calibrations)
        self.from_cache = dict(result.from_cache)
        self.status.setText(f"stopped after {result.seconds:.0f} s" if result.stopped
                            else f"done in {result.seconds:.0f} s")
        if result.skipped:
            self.banner.show_message("warning", "Skipped " + "; ".join(result.skipped.values()))
        self._fill_all()
        self._update_buttons()
        self.sweep_finished.emit(result)

    def _on_failed(self, exc, tb: str) -> None:
        self.status.setText("failed")
        self.banner.show_error(exc, tb, context="The sweep failed")
        self._update_buttons()
        self.sweep_failed.emit(exc, tb)

    # ------------------------------------------------------------------ filling in
    def _update_buttons(self) -> None:
        idle = not self.running
        self.run_button.setEnabled(idle and self.form.can_run())
        self.stop_button.setEnabled(self.running)
        self.csv_button.setEnabled(idle and self.result is not None)
        self.json_button.setEnabled(idle and self.result is not None)
        self.form.set_idle(idle)

    def _fill_all(self) -> None:
        self._fill_calibration()
        self._fill_table()
        self.heatmap.fill(self._shown(), self._name)
        self.chart.fill(self._shown(), self._name)
        self.key.setText(self.chart.key_html())
        self._fill_summary()

    def _fill_calibration(self) -> None:
        uncalibrated = self.result.uncalibrated if self.result is not None else {}
        if not self.calibrations and not uncalibrated:
            return
        parts = [f"{name or 'target alone (n-gram drafters)'}: {why.split(';')[0]}"   # all of it: tooltip
                 for name, why in uncalibrated.items()]
        for name, cal in self.calibrations.items():
            ks = range(1, cal.k_max + 1)
            when = ("TAKEN UNDER LOAD, not cached" if cal.under_load else "cached" if self.from_cache.get(name)
                    else "measured again (why: tooltip)" if cal.note else "measured now")
            ks = [k for k in ks if k <= 6 or k == cal.k_max]     # all of them in the tooltip
            draft = f"f {cal.f:.3f}" if cal.has_draft else "no draft model"
            parts.append(f"{name or 'target alone (n-gram drafters)'} ({when}): t1 {cal.t1 * 1e3:.2f} ms, "
                         f"{draft}, c(k) " + " ".join(f"{k}:{cal.cost(k):.2f}" for k in ks)
                         + f", python/round {cal.o0:.2f}+{cal.o1:.2f}·n")
        self.calibration_label.setText("Calibration — " + "\n".join(parts))
        self.calibration_label.setToolTip("\n\n".join([
            f"{name or 'target alone'}: {cal.status(bool(self.from_cache.get(name)))}\n" + "\n".join(cal.lines())
            for name, cal in self.calibrations.items()] + [
            f"{name or 'target alone'}: {why}" for name, why in uncalibrated.items()]))
        loaded = [name or "the target alone" for name, cal in self.calibrations.items() if cal.under_load]
        if loaded and loaded != self._loaded_shown:      # once, not again at every row
            self._loaded_shown = loaded
            self.banner.show_message("warning", f"The calibration of {', '.join(loaded)} was taken under load "
                                     "(other processes used the CPU): not cached, and its predictions may be "
                                     "off. Run the sweep again on a quieter machine.")

    def _shown(self):
        """The rows shown as a SweepResult (the finished one, or the sweep's rows so far): the
        pooled rows, the best n and the heatmap's grid come from :mod:`specscope.core.measure.bench.sweep`."""
        from specscope.core.measure.bench.report import SweepResult
        return self.result if self.result is not None else SweepResult(self._settings, rows=self.rows)

    def _fill_table(self) -> None:
        rows = self.rows if self.per_prompt.isChecked() else self._shown().pooled()
        self.table.fill(rows, self.rows, self._shown().best_n(), self.per_prompt.isChecked(),
                        self._with_draft())
        self._fit_table()

    def _fit_table(self) -> None:
        """Widen the table until its columns fit (the chart keeps CHART_MIN_WIDTH): no sideways
        scrolling to read a row while there is room."""
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if total <= 0:                           # not laid out yet
            return
        left = min(self.table.needed_width(), total - CHART_MIN_WIDTH)
        if left > sizes[0]:
            self.splitter.setSizes([left, total - left])

    def _with_draft(self) -> bool:
        """Name the draft file in the configurations' names: when the sweep has several."""
        return len({r.draft for r in self.rows if r.draft}) > 1

    def _name(self, config: str) -> str:
        """A configuration's name as the table, the heatmap and the legend show it."""
        row = next((r for r in self.rows if r.config == config), None)
        return row.name(self._with_draft()) if row is not None else config

    def _fill_summary(self) -> None:
        shown, s = self._shown(), self._settings
        parts = [self._measured_pair()] if self.rows else []
        stopped = self.result is not None and self.result.stopped
        for d, b in shown.best_n().items():
            picks = (f"the calibrated model picks n = {b['calibrated']}, " if b["calibrated"] is not None
                     else "not calibrated, ")
            done = {r.n_max for r in shown.pooled(d) if r.n_max > 0}
            missing = sorted(set(s.n_values) - done) if s is not None else []
            among = (f" <span style='color:#8a6d00'>(of the n measured: n = {', '.join(map(str, missing))} "
                     f"{'never ran: the sweep was stopped' if stopped else 'not yet'})</span>"
                     if missing else "")
            parts.append(f"<b>{self._name(d)}</b>: best measured n = {b['measured']} ({b['measured_speedup']:.2f}×)"
                         f"{among}; {picks}the textbook n = {b['textbook']}")
        pooled = shown.pooled()
        for r in pooled:
            if not r.n_max:
                parts.append(f"<b>{self._name(r.config)}</b> (n-gram drafters, no n): "
                             + ("never drafted" if r.never_drafted else f"measured {measured_text(r, '×', 2)}")
                             + (f", calibrated {r.calibrated_speedup:.2f}×"
                                if math.isfinite(r.calibrated_speedup) else "")
                             + f", lookup {r.lookup_us:.0f} µs per round")
        flags = self._flags(pooled)
        if flags:
            parts.append(f"<span style='color:#8a6d00'>{flags}</span>")
        if pooled:
            from specscope.core.measure.bench.report import prediction_caveat
            cal = [abs(r.calibrated_error) for r in pooled if math.isfinite(r.calibrated_error)]
            tb = max((abs(r.textbook_error) for r in pooled if math.isfinite(r.textbook_error)), default=0.0)
            caveat = prediction_caveat(shown, self._with_draft())
            parts.append("largest prediction error: " + (f"calibrated {100 * max(cal):.1f}%, " if cal else "")
                         + f"textbook {100 * tb:.1f}%"
                         + (f" <span style='color:#8a6d00'>— {caveat}</span>" if caveat else ""))
        self.best_label.setText("<br>".join(parts))
        verdicts = [r.lossless for r in self.rows if r.prompt != "ALL" and r.lossless]
        if not verdicts:
            self.lossless_label.setText("")
            return
        bad = [r for r in self.rows if r.prompt != "ALL" and r.lossless not in ("identical", "")]
        if not bad:
            self.lossless_label.setText("<span style='color:#1a7f37'>Lossless: every speculative run "
                                        "emitted exactly the baseline's tokens.</span>")
        else:
            near = sum(1 for r in bad if r.lossless == "numerical")
            text = (f"Lossless: {len(bad)} of {len(verdicts)} runs differ from the baseline "
                    f"({near} numerical, {len(bad) - near} mismatches: engine bugs). ")
            if self.result is not None and self.result.lossless_notes:
                text += self.result.lossless_notes[0].replace("<", "&lt;") + ". "
            if not self.deterministic.isChecked():
                text += "Tick <i>Deterministic numerics</i> (F32 KV cache, flash attention off): " \
                        "fewer and smaller differences remain (hover it for which)."
            color = "#b00020" if len(bad) > near else "#8a6d00"
            self.lossless_label.setText(f"<span style='color:{color}'>{text}</span>")

    def _measured_pair(self) -> str:
        """Which target and drafts the results shown were measured on; amber where the window's
        pair is another now (the form names the new one above the old results)."""
        s = self._settings
        what = (f"Measured: {Path(s.target).name} drafted by "
                + (", ".join(Path(d).name for d in s.drafts) or "n-gram types alone"))
        now = self.form.target
        if now is not None and Path(now) != Path(s.target) or \
                {Path(d) for d in s.drafts} - {Path(d) for d in self.draft_paths()}:
            return (f"<span style='color:#8a6d00'>{what}: not the pair chosen now (Run sweep "
                    "measures that one)</span>")
        return what

    def _flags(self, pooled) -> str:
        """In words, the pooled figures the repetitions cannot back: within noise, never drafted,
        drafted on some prompts only; or that one repetition gives no spread at all."""
        if not pooled:
            return ""
        def label(r):
            return self._name(r.config) + (f" n={r.n_max}" if r.n_max else "")
        asked = self._settings.repeats if self._settings is not None else 1
        short = [f"{label(r)} ({r.repeats} of {asked})" for r in pooled if r.repeats < asked]
        short_text = f"Fewer repetitions than asked (stopped): {', '.join(short)}. " if short else ""
        if all(r.spread is None for r in pooled):
            return short_text + ("One repetition: the spread is unknown. Set repeats to 3 or more to "
                                 "know how far to trust these figures.")
        groups = (("Within noise (≈, grey: the repetitions' spread is wider than the distance from 1×)",
                   [label(r) for r in pooled if r.within_noise and not r.never_drafted]),
                  ("never drafted (the figure is the target alone plus the lookups)",
                   [label(r) for r in pooled if r.never_drafted]),
                  ("drafted on some prompts only",
                   [f"{label(r)} ({r.prompts_drafted} of {r.prompts})" for r in pooled
                    if not r.never_drafted and r.prompts_drafted < r.prompts]))
        said = [f"{what}: {', '.join(names)}" for what, names in groups if names]
        text = "; ".join(said)
        return short_text + (text[:1].upper() + text[1:] + "." if said else "")

    def _export_dialog(self, kind: str) -> None:
        if self.result is None:
            return
        filt = "CSV (*.csv)" if kind == "csv" else "JSON (*.json)"
        path, _ = QFileDialog.getSaveFileName(self, f"Export {kind.upper()}", f"specscope-bench.{kind}", filt)
        if not path:
            return
        if not path.lower().endswith(f".{kind}"):
            path += f".{kind}"
        try:
            self.export(path)
        except OSError as exc:
            self.banner.show_error(exc, context="Cannot export")


def _text_label() -> QLabel:
    label = QLabel("")
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


# ============================================================================ standalone

def main(argv=None) -> int:
    import argparse
    import sys
    from PySide6.QtWidgets import QApplication
    parser = argparse.ArgumentParser(description="SpecScope's Compare view on its own")
    parser.add_argument("-m", "--model", type=Path)
    parser.add_argument("-md", "--model-draft", type=Path, action="append")
    parser.add_argument("--spec-type", nargs="+", metavar="TYPE[,TYPE...]",
                        help="drafters to tick (commas: a chain)")
    parser.add_argument("--prompts", type=Path, help="prompt-set file (or a shipped set's name)")
    parser.add_argument("--run", action="store_true", help="start the sweep at once")
    args = parser.parse_args(argv)
    sys.setswitchinterval(0.0005)   # as the window does: the worker gets the GIL back quickly
    app = QApplication.instance() or QApplication(sys.argv[:1])
    target, drafts = args.model, list(args.model_draft or [])
    if target is None or not drafts:
        try:
            from specscope.core.models.demo import demo_pair
            demo_target, demo_draft = demo_pair()
            target = target or demo_target
            drafts = drafts or [demo_draft]
        except Exception:  # noqa: BLE001 - the view says what is missing
            pass
    view = CompareView()
    view.setWindowTitle("SpecScope — Compare")
    view.resize(1280, 820)
    if target is not None:
        view.set_pair(target, drafts[0] if drafts else None, drafts[1:])
    if args.spec_type:
        view.set_drafters(*args.spec_type)
    if args.prompts:
        from specscope.core.models.demo import prompts_dir
        shipped = prompts_dir() / args.prompts
        view.set_prompt_file(shipped if not args.prompts.exists() and shipped.exists() else args.prompts)
    view.show()
    if args.run:
        view.start()
    rc = app.exec()
    view.shutdown()
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
