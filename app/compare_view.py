"""The Compare view: drafters × drafts × draft lengths × prompts, measured against the target
alone.

The same sweep as ``specscope bench`` (:mod:`specscope.core.measure.sweep`), run on a
worker thread with progress and a cooperative Stop (checked between runs and
passed to the engine's runs, so Stop takes effect within one round). It shows

- the calibrated cost figures of every pair (c(k), f, ...; :mod:`specscope.core.measure.calibrate`);
- the table of the CSV export (pooled rows, per-prompt rows on request), with the
  configuration (llama.cpp's type, or a chain of types, and the draft file when the sweep has
  several: the same name in the table, the heatmap and the chart's legend), the measured
  speed-up with its spread over the repetitions (grey and marked ≈ within noise: the spread is
  wider than the distance from 1×; "never drafted" when the drafter proposed nothing), the
  n-gram lookup time per round and, per member of a chain, the rounds it won;
- a heatmap of the measured speed-up, configurations × n, the best n per configuration outlined
  (n-gram-only chains in their own "no n" column: n is draft-simple's), a figure within noise
  uncoloured in grey italics, "none" where the drafter never drafted;
- the speed-up against n: measured (markers, with the repetitions' spread as error bars),
  calibrated prediction (solid), textbook prediction (dashed), one colour per configuration
  (n-gram-only chains are flat);
- the best n per configuration, in words the figures the repetitions do not back, why a
  calibrated prediction may be far off, and the lossless check.

Drafters are picked in a checklist (each type alone) and a line of chains written as on the
command line (``ngram-simple,draft-simple ngram-mod,draft-simple``).

    python -m specscope.app.compare_view [-m TARGET.gguf] [-md DRAFT.gguf ...]
"""

from __future__ import annotations

import math
import os
import threading
import traceback
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QObject, QThread, Qt, Signal, Slot
from PySide6.QtGui import QBrush, QColor, QFont, QFontDatabase
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QListWidget, QListWidgetItem, QProgressBar, QPushButton, QSizePolicy,
                               QSpinBox, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout,
                               QWidget)

from specscope.app.plots import cache_static_parts, styled_plot
from specscope.app.worker import start_thread
from specscope.core.measure.lossless import DETERMINISTIC_GUARANTEE
from specscope.core.measure.sweep import DEFAULT_REPEATS

__all__ = ["CompareView", "SweepWorker", "TABLE_COLUMNS", "speedup_color"]

DRAFT_COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")
TEXT_COLOR = "#222222"
AXIS_COLOR = "#555555"
DEFAULT_N_VALUES = "1,2,4,8"
DEFAULT_N_PREDICT = 64
SHIPPED_PROMPTS = "Shipped benchmark prompts"
SHIPPED_DRAFTER_PROMPTS = "Shipped n-gram prompts (repeating and free-form)"
DRAFTER_PROMPT_FILE = "drafter_prompts.json"
CHOOSE_FILE = "Choose a file…"
CHART_MIN_WIDTH = 350      # the heatmap and the speed-up chart beside the table
LEGEND_CHARS = 44           # longer configuration names are cut in the chart's legend
ACK_TIMEOUT_S = 2.0         # the worker waits at most this long for the view to draw an update

# (header, Row attribute, format)
TABLE_COLUMNS = (
    ("Configuration", "config", "name"),
    ("n", "n_max", "n"),
    ("Prompt", "prompt", "{}"),
    ("Accept", "acceptance", "pct"),
    ("Mean len", "mean_accepted_length", "{:.2f}"),
    ("tok/s", "tokens_per_s", "{:.1f}"),
    ("Base tok/s", "baseline_tokens_per_s", "{:.1f}"),
    ("Measured (spread)", "measured_speedup", "measured"),
    ("Textbook (err)", "textbook_speedup", "textbook_error"),
    ("Calibrated (err)", "calibrated_speedup", "calibrated_error"),
    ("Lossless", "lossless", "{}"),
    ("Other rule", "cf_acceptance", "cf"),
    ("Lookup/round", "lookup_us", "lookup"),
    ("Rounds won", "drafters", "won"),
)
PROMPT_COLUMN = next(j for j, (head, _, _) in enumerate(TABLE_COLUMNS) if head == "Prompt")
FIRST_NUMBER_COLUMN = PROMPT_COLUMN + 1
NGRAM_COLUMNS = tuple(j for j, (_, _, fmt) in enumerate(TABLE_COLUMNS) if fmt in ("lookup", "won"))
CF_COLUMN = next(j for j, (_, _, fmt) in enumerate(TABLE_COLUMNS) if fmt == "cf")
COLUMN_TIPS = {
    "Configuration": "llama.cpp's speculative type, or a chain of types in priority order (joined by "
                     ">): the first that proposes a non-empty draft wins the round; with several draft "
                     "files, the draft model's in brackets. The heatmap and the chart use the same name",
    "n": "draft-simple's draft length; – for chains of n-gram types alone (n does not apply)",
    "Lookup/round": "Python time of the n-gram drafters per round (their draft and accept calls), "
                    "and in target tokens: the draft cost of an n-gram round in the calibrated prediction",
    "Rounds won": "per member of the chain: the rounds whose draft it proposed, its acceptance and its "
                  "mean accepted length (1 + accepted per round it won)",
    "Accept": "accepted ÷ drafted tokens (llama.cpp's accept%)",
    "Mean len": "tokens per round that drafted: 1 + accepted",
    "tok/s": "speculative tokens per second, generation only (prompt processing excluded)",
    "Base tok/s": "the target alone on the same prompts and settings",
    "Measured (spread)": "tok/s ÷ base tok/s: per repetition, against the baselines measured just before "
                         "and after it; the median over the repetitions, and in brackets the lowest and the "
                         "highest of them (none with one repetition: set repeats to 3 or more to know how "
                         "far to trust the figure). ≈ and grey: within noise (the spread is wider than the "
                         "distance from 1×: the repetitions disagree by more than the gain or loss they "
                         "measure, so its size is not known); never "
                         "drafted: the drafter proposed no token, the run was the target alone plus its "
                         "lookups",
    "Textbook (err)": "textbook: (E + 1) / (n·f + 1), a verification batch costing one target pass; "
                      "in brackets: prediction ÷ measured − 1",
    "Calibrated (err)": "the calibrated model: c(k), f, sync and Python costs measured on this machine; "
                        "in brackets: prediction ÷ measured − 1",
    "Lossless": "identical: the speculative run emitted exactly the baseline's tokens",
    "Other rule": "at temperature: the acceptance the other rule would expect on the same drafts "
                  "(match: llama.cpp's, the target samples the drafted token; ratio: speculative "
                  "sampling, min(1, p/q)); see the sampler settings' acceptance rule",
}


def speedup_color(value: float | None) -> QColor:
    """Diverging colour around 1×: red below (slower), white at 1, blue above (faster)."""
    if value is None or not math.isfinite(value) or value <= 0:
        return QColor("#eeeeee")
    t = max(-1.0, min(1.0, math.log2(value) / math.log2(2.0)))   # ±1 at 0.5× and 2×
    white = (255, 255, 255)
    end = (33, 102, 172) if t > 0 else (202, 0, 32)
    a = abs(t) * 0.85
    return QColor(*(int(w + (e - w) * a) for w, e in zip(white, end)))


def row_color(row) -> QColor:
    """A sweep row's measured speed-up in speedup_color, grey when it never drafted or is within
    noise: no colour claims a difference the repetitions do not show."""
    return speedup_color(None if row.never_drafted or row.within_noise else row.measured_speedup)


def _cell_text(row, attr: str, fmt: str, with_draft: bool = True) -> str:
    value = getattr(row, attr)
    if fmt == "name":
        return row.name(with_draft)
    if fmt == "n":
        return str(value) if value else "–"
    if fmt == "measured":
        if row.spread is None or row.never_drafted:
            return measured_text(row, "×")
        return f"{measured_text(row, '×', 2)} ({row.spread_text()})"
    if fmt == "cf":
        return "" if value is None else f"{row.cf_rule} {100 * value:.1f}%"
    if fmt in ("lookup", "won"):
        if row.drafter == "draft-simple":
            return ""
        if fmt == "lookup":
            return f"{value:.0f} µs ({row.lookup_cost:.3f})"
        from specscope.core.measure.sweep import drafter_summary
        return drafter_summary(row)
    if fmt.endswith("_error"):
        if not math.isfinite(value):
            return "—"                      # not calibrated (a recurrent or hybrid memory)
        err = getattr(row, fmt)
        return f"{value:.3f}× ({_fmt(err, 'err')})"
    return _fmt(value, fmt)


def measured_text(row, unit: str = "", digits: int = 3) -> str:
    """The measured speed-up as the table and the summary show it: "never drafted" when the
    drafter proposed nothing (the figure is the target alone's, plus the lookups), "≈1.04×"
    within noise."""
    if row.never_drafted:
        return "never drafted"
    return ("≈" if row.within_noise else "") + f"{row.measured_speedup:.{digits}f}{unit}"


def measured_tip(row) -> str:
    """The figures behind a measured speed-up, for a tooltip."""
    parts = [f"measured {row.measured_speedup:.3f}×"
             + (" (the target alone plus the drafter's lookups: it never drafted)" if row.never_drafted else "")]
    parts.append(f"spread over {row.repeats} repetitions {row.spread_text('×')}" if row.spread is not None
                 else "one repetition: the spread is unknown")
    if row.within_noise:
        parts.append("within noise: the spread is wider than the distance from 1×")
    elif not row.never_drafted and row.prompts_drafted < row.prompts:
        parts.append(f"drafted on {row.prompts_drafted} of {row.prompts} prompts")
    if math.isfinite(row.calibrated_speedup):
        parts.append(f"calibrated {row.calibrated_speedup:.3f}×")
    parts += [f"textbook {row.textbook_speedup:.3f}×", f"acceptance {100 * row.acceptance:.1f}%"]
    return ", ".join(parts)


def _fmt(value, fmt: str) -> str:
    if value is None:
        return ""
    if fmt == "pct":
        return f"{100 * value:.1f}%"
    if fmt == "err":
        return "" if not math.isfinite(value) else f"{100 * value:+.1f}%"
    return fmt.format(value)


# ============================================================================ worker

class SweepWorker(QObject):
    """Runs :func:`specscope.core.measure.sweep.run_sweep` on its own thread."""

    progressed = Signal(int, int, str)          # steps done, steps in all, what now
    calibrated = Signal(str, object, bool)      # draft name, Calibration, from cache
    rows_updated = Signal(object)               # list[Row]: the table so far
    finished = Signal(object)                   # SweepResult
    failed = Signal(object, str)                # exception, traceback

    def __init__(self):
        super().__init__()
        self.stop = threading.Event()
        self.ack = threading.Event()           # the view has shown what was handed over

    def _handoff(self, signal, *args) -> None:
        """Emit, then wait until the view has drawn it: the window's painting then
        happens between measurements, never during one (it would slow the run being
        timed; a run of 64 tokens takes well under a second)."""
        self.ack.clear()
        signal.emit(*args)
        if not self.stop.is_set():
            self.ack.wait(ACK_TIMEOUT_S)

    @Slot(object)
    def run(self, settings) -> None:
        from specscope.core.measure.sweep import run_sweep
        try:
            result = run_sweep(settings, stop=self.stop,
                               progress=lambda d, t, w: self._handoff(self.progressed, d, t, w),
                               on_calibrated=lambda n, c, k: self._handoff(self.calibrated, n, c, k),
                               on_rows=lambda rows: self._handoff(self.rows_updated, rows))
        except Exception as exc:  # noqa: BLE001 - every failure goes to the view
            self.failed.emit(exc, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            return
        self.finished.emit(result)


# ============================================================================ the view

class CompareView(QWidget):
    """Compare tab: set a pair (and optional extra drafts), choose draft lengths and
    prompts, Run; results fill in as the sweep goes. Stop ends it after the current run."""

    sweep_started = Signal()
    sweep_finished = Signal(object)             # SweepResult (also after Stop)
    sweep_failed = Signal(object, str)
    _start_requested = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.target: Path | None = None
        self.result = None                       # the last SweepResult
        self.rows: list = []
        self.calibrations: dict[str, object] = {}
        self.from_cache: dict[str, bool] = {}
        self._loaded_shown: list[str] = []       # calibrations taken under load, said in the banner
        self.prompt_file: Path | None = None     # None: the shipped set
        self.running = False
        self.blocker = None                      # () -> why a sweep cannot start now ("": it can)
        self._settings = None                    # the SweepSettings of the sweep shown
        self._thread: QThread | None = None
        self._worker: SweepWorker | None = None
        self._quit_hooked = False
        self._build()
        self._update_buttons()

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        from specscope.app.errors import MessageBanner
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        root = QVBoxLayout(self)
        root.setContentsMargins(6, 6, 6, 6)
        self.banner = MessageBanner()
        root.addWidget(self.banner)

        # -- settings
        box = QGroupBox("Sweep")
        grid = QGridLayout(box)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        self.target_label = QLabel("no target")
        self.target_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        grid.addWidget(QLabel("Target"), 0, 0)
        grid.addWidget(self.target_label, 0, 1)
        self.drafts = QListWidget()
        self.drafts.setMaximumHeight(64)
        self.drafts.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.drafts.setToolTip("Draft models to compare (each is paired with the target)")
        grid.addWidget(QLabel("Drafts"), 1, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.drafts, 1, 1, 2, 1)
        buttons = QHBoxLayout()
        self.add_draft_button = QPushButton("Add draft…")
        self.remove_draft_button = QPushButton("Remove")
        self.add_draft_button.clicked.connect(self._add_draft_dialog)
        self.remove_draft_button.clicked.connect(self._remove_drafts)
        buttons.addWidget(self.add_draft_button)
        buttons.addWidget(self.remove_draft_button)
        buttons.addStretch(1)
        grid.addLayout(buttons, 3, 1)

        from specscope.core.engine.drafters import DESCRIPTIONS, TYPES
        self.drafters = QListWidget()
        row_h = self.drafters.fontMetrics().height() + 8
        self.drafters.setMaximumHeight(2 * row_h + 2 * self.drafters.frameWidth())   # 2 rows if it wraps
        self.drafters.setFlow(QListWidget.Flow.LeftToRight)
        self.drafters.setWrapping(True)
        self.drafters.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.drafters.setToolTip("Each ticked type is one configuration (llama.cpp's --spec-type); "
                                 "the draft model's draft-simple runs once per n, the n-gram types once")
        for name in TYPES:
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name == "draft-simple" else Qt.CheckState.Unchecked)
            item.setToolTip(f"{name}: {DESCRIPTIONS[name]}")
            self.drafters.addItem(item)
        self.drafters.itemChanged.connect(lambda _item: self._update_buttons())
        grid.addWidget(QLabel("Drafters"), 4, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.drafters, 4, 1)
        self.chains = QLineEdit()
        self.chains.setPlaceholderText("chains, e.g. ngram-simple,draft-simple ngram-mod,draft-simple")
        self.chains.setToolTip("More configurations: chains of types joined by commas, separated by "
                               "spaces (as --spec-type on the command line). A chain runs its types "
                               "in llama.cpp's priority order, n-gram types first; the first non-empty "
                               "draft wins the round")
        self.chains.textChanged.connect(lambda _text: self._update_buttons())

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        self.n_values = QLineEdit(DEFAULT_N_VALUES)
        self.n_values.setToolTip("draft-simple's draft lengths to try: a list like 1,2,4,8 or a range "
                                 "like 1-8 (chains of n-gram types alone run once)")
        self.p_min_values = QLineEdit("0")
        self.p_min_values.setToolTip("draft-simple's confidence cut-off (llama.cpp's --draft-p-min): "
                                     "stop drafting when the draft's top token holds less than this "
                                     "share of its top-10. A list like 0,0.5,0.75 sweeps it: each "
                                     "value is a configuration of its own (rows, heatmap, curves)")
        lengths = QHBoxLayout()
        lengths.addWidget(self.n_values, 3)
        lengths.addWidget(QLabel("p_min"))
        lengths.addWidget(self.p_min_values, 1)
        form.addRow("Draft lengths n", lengths)
        form.addRow("Chains", self.chains)
        prompts_row = QHBoxLayout()
        self.prompts = QComboBox()
        self.prompts.addItem(SHIPPED_PROMPTS)
        self.prompts.addItem(SHIPPED_DRAFTER_PROMPTS)
        self.prompts.addItem(CHOOSE_FILE)
        self.prompts.activated.connect(self._prompts_chosen)
        prompts_row.addWidget(self.prompts, 1)
        form.addRow("Prompts", prompts_row)
        line = QHBoxLayout()
        self.n_predict = QSpinBox()
        self.n_predict.setRange(2, 4096)
        self.n_predict.setValue(DEFAULT_N_PREDICT)
        self.n_predict.setToolTip("tokens generated by every run")
        self.repeats = QSpinBox()
        self.repeats.setRange(1, 20)
        self.repeats.setValue(DEFAULT_REPEATS)
        self.repeats.setToolTip("runs per cell, each with its own baselines: the table shows the speed-up's "
                                "spread over them and flags a figure the spread does not tell from 1× "
                                "(1: no spread)")
        self.sync = QComboBox()
        self.sync.addItems(["reuse", "replay"])
        self.sync.setToolTip("draft cache sync: reuse its own rows, or replay the verification "
                             "batch as llama.cpp does")
        self.threads = QSpinBox()
        self.threads.setRange(1, max(1, os.cpu_count() or 1))
        self.threads.setValue(max(1, os.cpu_count() or 1))      # as `specscope bench`
        self.threads.setToolTip("CPU threads for each model (default: all cores, as in the command "
                                "line; on a machine busy with other work fewer can be faster)")
        line.addWidget(self.n_predict)
        line.addWidget(QLabel("repeats"))
        line.addWidget(self.repeats)
        line.addWidget(QLabel("sync"))
        line.addWidget(self.sync)
        line.addWidget(QLabel("threads"))
        line.addWidget(self.threads)
        line.addStretch(1)
        form.addRow("Tokens per run", line)
        sampling = QHBoxLayout()
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setDecimals(2)
        self.temperature.setSpecialValueText("greedy")
        self.temperature.setToolTip("0 (greedy): the target's argmax, llama.cpp's lossless case. Above "
                                    "0: llama.cpp's sampler chain (top-k 40, top-p 0.95, min-p 0.05, "
                                    "seed 42) at this temperature")
        self.accept_rule = QComboBox()
        self.accept_rule.addItems(["match", "ratio"])
        self.accept_rule.setToolTip("match: llama.cpp's rule, the target samples and keeps the drafted "
                                    "token when it drew the same one (lossless against the baseline); "
                                    "ratio: speculative sampling, kept with probability min(1, p/q) "
                                    "(the same distribution, other tokens). At temperature the table "
                                    "adds what the other rule would expect on the same drafts")
        self.accept_rule.setEnabled(False)
        self.temperature.valueChanged.connect(lambda t: self.accept_rule.setEnabled(t > 0))
        sampling.addWidget(self.temperature)
        sampling.addWidget(QLabel("acceptance rule"))
        sampling.addWidget(self.accept_rule)
        sampling.addStretch(1)
        form.addRow("Temperature", sampling)
        grid.addLayout(form, 0, 2, 5, 2)

        checks = QHBoxLayout()
        self.deterministic = QCheckBox("Deterministic numerics")
        self.deterministic.setToolTip(DETERMINISTIC_GUARANTEE)
        self.ignore_eos = QCheckBox("Ignore EOS")
        self.ignore_eos.setChecked(True)
        self.ignore_eos.setToolTip("never sample end-of-generation tokens, so every run has the same length")
        self.recalibrate = QCheckBox("Recalibrate")
        self.recalibrate.setToolTip("measure c(k) and f again instead of using the cached figures")
        self.alpha_on = QCheckBox("Assumed α")
        self.alpha = QDoubleSpinBox()
        self.alpha.setRange(0.0, 1.0)
        self.alpha.setSingleStep(0.05)
        self.alpha.setValue(0.7)
        self.alpha.setEnabled(False)
        self.alpha_on.toggled.connect(self.alpha.setEnabled)
        for w in (self.deterministic, self.ignore_eos, self.recalibrate, self.alpha_on, self.alpha):
            checks.addWidget(w)
        checks.addStretch(1)
        grid.addLayout(checks, 5, 0, 1, 4)
        root.addWidget(box)

        # -- run bar
        bar = QHBoxLayout()
        self.run_button = QPushButton("Run sweep")
        self.run_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.request_stop)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m")
        self.status = QLabel("")
        self.status.setMinimumWidth(200)
        self.csv_button = QPushButton("Export CSV…")
        self.json_button = QPushButton("Export JSON…")
        self.csv_button.clicked.connect(lambda: self._export_dialog("csv"))
        self.json_button.clicked.connect(lambda: self._export_dialog("json"))
        for w in (self.run_button, self.stop_button):
            bar.addWidget(w)
        bar.addWidget(self.progress, 1)
        bar.addWidget(self.status, 2)
        bar.addWidget(self.csv_button)
        bar.addWidget(self.json_button)
        root.addLayout(bar)

        # -- calibration figures
        self.calibration_label = QLabel("Calibration: not measured yet (Run measures c(k) and f first, "
                                        "a few seconds per draft, cached afterwards).")
        self.calibration_label.setFont(fixed)
        self.calibration_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.calibration_label.setWordWrap(False)
        self.calibration_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        root.addWidget(self.calibration_label)

        # -- results
        split = QSplitter(Qt.Orientation.Horizontal)
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
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels([c[0] for c in TABLE_COLUMNS])
        for i, (head, _, _) in enumerate(TABLE_COLUMNS):
            item = self.table.horizontalHeaderItem(i)
            if head in COLUMN_TIPS:
                item.setToolTip(COLUMN_TIPS[head])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the last column (a chain's members) takes what is left, its full text in the tooltip
        self.table.horizontalHeader().setSectionResizeMode(len(TABLE_COLUMNS) - 1,
                                                           QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setDefaultSectionSize(22)
        lv.addWidget(self.table, 1)
        self.best_label = QLabel("")
        self.best_label.setWordWrap(True)
        self.best_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lv.addWidget(self.best_label)
        self.lossless_label = QLabel("")
        self.lossless_label.setWordWrap(True)
        self.lossless_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lv.addWidget(self.lossless_label)
        split.addWidget(left)

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
        self.heatmap = QTableWidget(0, 0)
        self.heatmap.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.heatmap.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.heatmap.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.heatmap.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.heatmap.verticalHeader().setDefaultSectionSize(24)
        self.heatmap.setFixedHeight(60)
        self.heatmap.setToolTip("blue: faster than the target alone; red: slower")
        rv.addWidget(self.heatmap)
        self.plot = self._make_plot()
        rv.addWidget(self.plot, 1)
        key = QLabel("● measured, ┬ the repetitions' spread   ━ calibrated prediction   ╌ textbook "
                     "prediction (E+1)/(n·f+1); one colour per configuration (n-gram drafters alone: flat, "
                     "n is the draft model's)")
        key.setStyleSheet(f"color:{AXIS_COLOR}")
        key.setWordWrap(True)
        rv.addWidget(key)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([800, 480])
        self.splitter = split
        root.addWidget(split, 1)

    def _make_plot(self) -> pg.PlotWidget:
        w = styled_plot("Speed-up against the target alone", "speed-up (×)", "draft length n",
                        antialias=True)
        w.setMinimumSize(280, 220)
        p = w.getPlotItem()
        self.one_line = pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#999999", width=1,
                                                                        style=Qt.PenStyle.DotLine))
        p.addItem(self.one_line)
        self.legend = p.addLegend(offset=(-10, 10), labelTextColor=TEXT_COLOR, labelTextSize="8pt")
        self.legend.setBrush(pg.mkBrush(255, 255, 255, 220))
        self.legend.setPen(pg.mkPen("#cccccc"))
        self._curves: list = []
        cache_static_parts(p)
        return w

    # ------------------------------------------------------------------ public API
    def set_pair(self, target_path, draft_path=None, extra_drafts=()) -> None:
        """The pair to benchmark (the window's current pair), plus optional other drafts."""
        self.target = Path(target_path) if target_path else None
        self.target_label.setText(str(self.target) if self.target else "no target")
        self.target_label.setToolTip(str(self.target) if self.target else "")
        self.drafts.clear()
        for d in ([draft_path] if draft_path else []) + list(extra_drafts):
            self.add_draft(d)
        self._update_buttons()

    def add_draft(self, path) -> None:
        path = str(Path(path))
        if path not in self.draft_paths():
            self.drafts.addItem(path)
        self._update_buttons()

    def draft_paths(self) -> list[str]:
        return [self.drafts.item(i).text() for i in range(self.drafts.count())]

    def settings(self):
        """The SweepSettings the controls describe (raises ConfigError on bad input)."""
        from specscope.core.engine.engine import EngineSettings
        from specscope.core.errors import ConfigError
        from specscope.core.engine.sampling import SamplerSettings
        from specscope.core.measure.sweep import (SweepSettings, load_prompts, parse_n_values,
            parse_p_values)
        if self.target is None:
            raise ConfigError("choose a target model first")
        chains = self.chosen_chains()
        drafts = self.draft_paths() if any("draft-simple" in c for c in chains) else []
        if any("draft-simple" in c for c in chains) and not drafts:
            raise ConfigError("draft-simple needs a draft model: add one, or pick n-gram drafters only")
        from specscope.core.engine.engine import SpecSettings
        threads = dict(target_threads=self.threads.value(), draft_threads=self.threads.value())
        temp = self.temperature.value()
        rule = self.accept_rule.currentText() if temp > 0 else "match"
        engine = EngineSettings.deterministic(**threads) if self.deterministic.isChecked() \
            else EngineSettings(**threads)
        return SweepSettings(
            target=self.target, drafts=tuple(Path(d) for d in drafts),
            n_values=parse_n_values(self.n_values.text()),
            p_min_values=parse_p_values(self.p_min_values.text()),
            prompts=tuple(load_prompts(self.prompt_file)), n_predict=self.n_predict.value(),
            sampler=SamplerSettings(temperature=temp), ignore_eos=self.ignore_eos.isChecked(),
            engine=engine, sync=self.sync.currentText(), spec=SpecSettings(accept_rule=rule),
            lossless=rule == "match",      # ratio draws other tokens than the baseline (same distribution)
            repeats=self.repeats.value(),
            alpha=self.alpha.value() if self.alpha_on.isChecked() else None,
            recalibrate=self.recalibrate.isChecked(), chains=chains)

    def chosen_chains(self) -> tuple[tuple[str, ...], ...]:
        """The ticked types (one configuration each), then the chains typed in; ConfigError on a
        bad name, or when nothing is chosen."""
        from specscope.core.engine.drafters import parse_types
        from specscope.core.errors import ConfigError
        chains: list[tuple[str, ...]] = []
        words = [self.drafters.item(i).text() for i in range(self.drafters.count())
                 if self.drafters.item(i).checkState() == Qt.CheckState.Checked]
        words += self.chains.text().split()
        for word in words:
            chain = parse_types(word)
            if chain not in chains:
                chains.append(chain)
        if not chains:
            raise ConfigError("tick at least one drafter, or write a chain")
        return tuple(chains)

    def set_drafters(self, *words: str) -> None:
        """Tick these single types; the rest (multi-type words) go to the chains line."""
        singles = {w for w in words if "," not in w}
        for i in range(self.drafters.count()):
            item = self.drafters.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.text() in singles else Qt.CheckState.Unchecked)
        self.chains.setText(" ".join(w for w in words if "," in w))

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
        except Exception as exc:  # noqa: BLE001 - bad input is shown, not raised
            self.banner.show_error(exc, context="Cannot run the sweep")
            return False
        self.banner.dismiss()
        self._ensure_thread()
        self._worker.stop.clear()
        self.running = True
        self._settings = settings
        self.rows = []
        self.calibrations, self.from_cache = {}, {}
        self._loaded_shown = []
        self.result = None
        self._fill_all()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.status.setText("starting…")
        self._update_buttons()
        self.sweep_started.emit()
        self._start_requested.emit(settings)
        return True

    def request_stop(self) -> None:
        if self._worker is not None and self.running:
            self._worker.stop.set()
            self.status.setText("stopping after the current run…")
            self._worker.ack.set()

    def export(self, path) -> Path:
        """Write the last results as CSV or JSON (by the file's suffix)."""
        if self.result is None:
            raise ValueError("nothing to export yet")
        return self.result.save(path)

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop a running sweep and end the worker thread (call before closing)."""
        if self._worker is not None:
            self._worker.stop.set()
            self._worker.ack.set()
        self.running = False
        return self._end_thread(timeout_ms)

    def _end_thread(self, timeout_ms: int = 10000) -> bool:
        """End the worker thread. Done after every sweep, not only at exit: llama.cpp's OpenMP
        (libgomp) keeps a team of threads for each thread that ran a decode while that thread
        lives, and once a process holds more of them than there are cores, every team waits at
        its barriers by sleeping instead of spinning, which slows the window's own runs."""
        if self._thread is None:
            return True
        self._thread.quit()
        ok = self._thread.wait(timeout_ms)
        self._thread = None
        self._worker = None
        return ok

    def resizeEvent(self, event):  # noqa: N802 - Qt override: first shown, or the window resized
        super().resizeEvent(event)
        self._fit_table()

    def closeEvent(self, event):  # noqa: N802 - Qt override
        self.shutdown()
        super().closeEvent(event)

    # ------------------------------------------------------------------ worker plumbing
    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        self._worker = SweepWorker()
        self._start_requested.connect(self._worker.run, Qt.ConnectionType.QueuedConnection)
        self._worker.progressed.connect(self._on_progress)
        self._worker.calibrated.connect(self._on_calibrated)
        self._worker.rows_updated.connect(self._on_rows)
        self._worker.finished.connect(self._on_finished)
        self._worker.failed.connect(self._on_failed)
        self._thread = start_thread(self._worker, "specscope-compare")
        self._thread.finished.connect(self._worker.deleteLater)
        app = QCoreApplication.instance()
        if app is not None and not self._quit_hooked:
            app.aboutToQuit.connect(self.shutdown)   # a tab's closeEvent does not run at exit
            self._quit_hooked = True

    def _drawn(self) -> None:
        """Paint now and let the worker go on measuring."""
        try:
            if self.isVisible():
                self.repaint()
        finally:
            if self._worker is not None:
                self._worker.ack.set()

    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, what: str) -> None:
        try:
            self.progress.setRange(0, max(1, total))
            self.progress.setValue(done)
            if self.running and not (self._worker and self._worker.stop.is_set()):
                self.status.setText(what)
        finally:
            self._drawn()

    @Slot(str, object, bool)
    def _on_calibrated(self, name: str, cal, cached: bool) -> None:
        try:
            self.calibrations[name] = cal
            self.from_cache[name] = cached
            self._fill_calibration()
        finally:
            self._drawn()

    @Slot(object)
    def _on_rows(self, rows) -> None:
        try:
            self.rows = list(rows)
            self._fill_all()
        finally:
            self._drawn()

    @Slot(object)
    def _on_finished(self, result) -> None:
        self.running = False
        self._end_thread()
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

    @Slot(object, str)
    def _on_failed(self, exc, tb: str) -> None:
        self.running = False
        self._end_thread()
        self.status.setText("failed")
        self.banner.show_error(exc, tb, context="The sweep failed")
        self._update_buttons()
        self.sweep_failed.emit(exc, tb)

    # ------------------------------------------------------------------ filling in
    def _update_buttons(self) -> None:
        idle = not self.running
        self.run_button.setEnabled(idle and self.target is not None
                                   and (self.drafts.count() > 0 or not self._needs_draft()))
        self.stop_button.setEnabled(self.running)
        self.csv_button.setEnabled(idle and self.result is not None)
        self.json_button.setEnabled(idle and self.result is not None)
        for w in (self.add_draft_button, self.remove_draft_button, self.n_values, self.p_min_values, self.prompts,
                  self.drafters, self.chains,
                  self.n_predict, self.repeats, self.sync, self.threads, self.deterministic, self.ignore_eos,
                  self.recalibrate, self.alpha_on, self.temperature):
            w.setEnabled(idle)
        self.alpha.setEnabled(idle and self.alpha_on.isChecked())
        self.accept_rule.setEnabled(idle and self.temperature.value() > 0)

    def _needs_draft(self) -> bool:
        ticked = any(self.drafters.item(i).checkState() == Qt.CheckState.Checked
                     and self.drafters.item(i).text() == "draft-simple" for i in range(self.drafters.count()))
        return ticked or "draft-simple" in self.chains.text()

    def _fill_all(self) -> None:
        self._fill_calibration()
        self._fill_table()
        self._fill_heatmap()
        self._fill_plot()
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
                    else "measured again: drifted" if cal.note else "measured now")
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
        pooled rows, the best n and the heatmap's grid come from :mod:`specscope.core.measure.sweep`."""
        from specscope.core.measure.sweep import SweepResult
        return self.result if self.result is not None else SweepResult(self._settings, rows=self.rows)

    def _visible_rows(self) -> list:
        return self.rows if self.per_prompt.isChecked() else self._shown().pooled()

    def _fill_table(self) -> None:
        rows = self._visible_rows()
        self.table.setColumnHidden(PROMPT_COLUMN, not self.per_prompt.isChecked())
        ngram = any(r.drafter != "draft-simple" for r in self.rows)
        for j in NGRAM_COLUMNS:                              # n-gram drafters' figures only
            self.table.setColumnHidden(j, not ngram)
        self.table.setColumnHidden(CF_COLUMN, all(r.cf_acceptance is None for r in self.rows))
        self.table.setRowCount(len(rows))
        bold = QFont()
        bold.setBold(True)
        best = self._shown().best_n()
        with_draft = self._with_draft()
        for i, row in enumerate(rows):
            for j, (_, attr, fmt) in enumerate(TABLE_COLUMNS):
                value = getattr(row, attr)
                item = QTableWidgetItem(_cell_text(row, attr, fmt, with_draft))
                if j >= FIRST_NUMBER_COLUMN and fmt != "won":
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if attr == "measured_speedup":
                    item.setBackground(QBrush(row_color(row)))
                    item.setToolTip(measured_tip(row))
                    if row.never_drafted or row.within_noise:
                        item.setForeground(QBrush(QColor("#666666")))
                if fmt == "name":
                    item.setToolTip(f"{row.drafter}" + (f", draft model {row.draft}" if row.draft else
                                                         ", no draft model"))
                if attr == "lossless" and value not in ("identical", ""):
                    item.setForeground(QBrush(QColor("#b00020" if value == "mismatch" else "#8a6d00")))
                    if row.divergence_at is not None:
                        item.setText(f"{value} @{row.divergence_at}")
                if row.prompt == "ALL" and best.get(row.config, {}).get("measured") == row.n_max:
                    item.setFont(bold)
                if fmt == "won":
                    item.setToolTip(item.text())
                self.table.setItem(i, j, item)
        self._fit_table()

    def _fit_table(self) -> None:
        """Widen the table until its columns fit (the chart keeps CHART_MIN_WIDTH): no sideways
        scrolling to read a row while there is room."""
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if total <= 0:                           # not laid out yet
            return
        header = self.table.horizontalHeader()
        need = sum(max(self.table.sizeHintForColumn(j), header.sectionSizeHint(j))
                   for j in range(len(TABLE_COLUMNS)) if not self.table.isColumnHidden(j))
        need += 2 * self.table.frameWidth() + self.table.verticalScrollBar().sizeHint().width()
        left = min(need, total - CHART_MIN_WIDTH)
        if left > sizes[0]:
            self.splitter.setSizes([left, total - left])

    def _with_draft(self) -> bool:
        """Name the draft file in the configurations' names: when the sweep has several."""
        return len({r.draft for r in self.rows if r.draft}) > 1

    def _name(self, config: str) -> str:
        """A configuration's name as the table, the heatmap and the legend show it."""
        row = next((r for r in self.rows if r.config == config), None)
        return row.name(self._with_draft()) if row is not None else config

    def _fill_heatmap(self) -> None:
        shown = self._shown()
        drafts, ns, grid = shown.heatmap()
        rows = {(r.config, r.n_max): r for r in shown.pooled()}
        self.heatmap.clear()
        self.heatmap.setRowCount(len(drafts))
        self.heatmap.setColumnCount(len(ns))
        self.heatmap.setHorizontalHeaderLabels([f"n={n}" if n else "no n" for n in ns])
        # the table's names, a chain's types and the draft file on lines of their own: the
        # figures keep the width beside them
        labels = [self._name(d).replace(">", ">\n").replace(" (", "\n(") for d in drafts]
        self.heatmap.setVerticalHeaderLabels(labels)
        row_h = self.heatmap.verticalHeader().defaultSectionSize()
        line_h = self.heatmap.fontMetrics().height()
        for i, label in enumerate(labels):
            self.heatmap.setRowHeight(i, max(row_h, (label.count("\n") + 1) * line_h + 6))
        header = self.heatmap.horizontalHeader().sizeHint().height()
        rows_h = sum(self.heatmap.rowHeight(i) for i in range(len(labels))) or row_h
        self.heatmap.setFixedHeight(header + rows_h + 2 * self.heatmap.frameWidth())
        best = shown.best_n()
        bold = QFont()
        bold.setBold(True)
        bold.setUnderline(True)
        for i, (config, values) in enumerate(zip(drafts, grid)):
            for j, (n, value) in enumerate(zip(ns, values)):
                if value is None:
                    continue
                r = rows[(config, n)]
                item = QTableWidgetItem("none" if r.never_drafted else f"{value:.2f}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setBackground(QBrush(row_color(r)))
                unsure = r.never_drafted or r.within_noise
                item.setForeground(QBrush(QColor("#666666" if unsure else "#111111")))
                item.setToolTip(f"{self._name(config)}, n = {n or '–'}: {measured_tip(r)}")
                font = QFont(bold) if best.get(config, {}).get("measured") == n else QFont()
                font.setItalic(unsure)
                font.setPointSizeF(max(6.0, self.heatmap.font().pointSizeF() - 1))
                item.setFont(font)
                self.heatmap.setItem(i, j, item)

    def _fill_plot(self) -> None:
        p = self.plot.getPlotItem()
        for c in self._curves:
            p.removeItem(c)
        self._curves = []
        self.legend.clear()
        shown = self._shown()
        pooled = shown.pooled()
        ns = sorted({r.n_max for r in pooled if r.n_max}) or [1]
        for k, draft in enumerate(shown.drafts()):
            rows = sorted((r for r in pooled if r.config == draft), key=lambda r: r.n_max)
            if not rows:
                continue
            color = DRAFT_COLORS[k % len(DRAFT_COLORS)]
            xs = [r.n_max for r in rows]
            if rows[0].n_max == 0:                 # an n-gram-only chain: the same at every n
                xs, rows = ns, rows * len(ns)
            short = self._name(draft)
            short = short if len(short) <= LEGEND_CHARS else short[:LEGEND_CHARS - 1] + "…"
            # a drafter that never drafted measured the target alone: no point of its own
            drafted = [(x, r.measured_speedup) for x, r in zip(xs, rows) if not r.never_drafted]
            measured = p.plot([x for x, _ in drafted], [y for _, y in drafted], pen=pg.mkPen(color, width=1),
                              symbol="o", symbolSize=8, symbolBrush=pg.mkBrush(color),
                              symbolPen=pg.mkPen("w"), name=short if drafted else None)
            calibrated = p.plot(xs, [r.calibrated_speedup for r in rows], pen=pg.mkPen(color, width=2.5),
                                connect="finite", name=None if drafted else short)
            textbook = p.plot(xs, [r.textbook_speedup for r in rows],
                              pen=pg.mkPen(color, width=1.5, style=Qt.PenStyle.DashLine))
            self._curves += [measured, calibrated, textbook]
            spread = [(x, r) for x, r in zip(xs, rows) if r.spread is not None]
            if spread and rows[0].n_max:           # the repetitions' spread around each point
                bars = pg.ErrorBarItem(x=np.array([x for x, _ in spread], dtype=float),
                                       y=np.array([r.measured_speedup for _, r in spread]),
                                       top=np.array([r.speedup_max - r.measured_speedup for _, r in spread]),
                                       bottom=np.array([r.measured_speedup - r.speedup_min for _, r in spread]),
                                       beam=0.12, pen=pg.mkPen(color, width=1))
                p.addItem(bars)
                self._curves.append(bars)
        if pooled:
            p.getAxis("bottom").setTicks([[(n, str(n)) for n in ns]])
            values = [v for r in pooled for v in (math.nan if r.never_drafted else r.measured_speedup,
                                                  r.calibrated_speedup, r.textbook_speedup)
                      if math.isfinite(v)] + [1.0]
            lo, hi = min(values), max(values)
            pad = 0.08 * (hi - lo or 1.0)
            p.setYRange(max(0.0, lo - pad), hi + pad, padding=0)
            p.setXRange(min(ns) - 0.4, max(ns) + 0.4, padding=0)

    def _fill_summary(self) -> None:
        shown = self._shown()
        parts = []
        for d, b in shown.best_n().items():
            picks = (f"the calibrated model picks n = {b['calibrated']}, " if b["calibrated"] is not None
                     else "not calibrated, ")
            parts.append(f"<b>{self._name(d)}</b>: best measured n = {b['measured']} ({b['measured_speedup']:.2f}×); "
                         f"{picks}the textbook n = {b['textbook']}")
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
            from specscope.core.measure.sweep import prediction_caveat
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

    def _flags(self, pooled) -> str:
        """In words, the pooled figures the repetitions cannot back: within noise, never drafted,
        drafted on some prompts only; or that one repetition gives no spread at all."""
        if not pooled:
            return ""
        if all(r.spread is None for r in pooled):
            return ("One repetition: the spread is unknown. Set repeats to 3 or more to know how far to "
                    "trust these figures.")
        def label(r):
            return self._name(r.config) + (f" n={r.n_max}" if r.n_max else "")
        groups = (("Within noise (≈, grey: the repetitions' spread is wider than the distance from 1×)",
                   [label(r) for r in pooled if r.within_noise and not r.never_drafted]),
                  ("never drafted (the figure is the target alone plus the lookups)",
                   [label(r) for r in pooled if r.never_drafted]),
                  ("drafted on some prompts only",
                   [f"{label(r)} ({r.prompts_drafted} of {r.prompts})" for r in pooled
                    if not r.never_drafted and r.prompts_drafted < r.prompts]))
        said = [f"{what}: {', '.join(names)}" for what, names in groups if names]
        text = "; ".join(said)
        return text[:1].upper() + text[1:] + "." if said else ""

    # ------------------------------------------------------------------ dialogs
    def _add_draft_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Add draft models", "", "GGUF models (*.gguf)")
        for p in paths:
            self.add_draft(p)

    def _remove_drafts(self) -> None:
        for item in self.drafts.selectedItems():
            self.drafts.takeItem(self.drafts.row(item))
        self._update_buttons()

    def _prompts_chosen(self, index: int) -> None:
        if index == 0:
            self.set_prompt_file(None)
            return
        if index == 1:
            from specscope.core.models.demo import prompts_dir
            self.set_prompt_file(prompts_dir() / DRAFTER_PROMPT_FILE)
            return
        if index == 2:
            path, _ = QFileDialog.getOpenFileName(self, "Prompt set", "", "Prompt sets (*.json *.txt)")
            if path:
                self.set_prompt_file(path)
            else:
                self.set_prompt_file(self.prompt_file)      # back to what was chosen

    def to_dict(self) -> dict:
        """The controls, for the window's settings (not the pair: the window owns it)."""
        ticked = [self.drafters.item(i).text() for i in range(self.drafters.count())
                  if self.drafters.item(i).checkState() == Qt.CheckState.Checked]
        return {"n_values": self.n_values.text(), "p_min_values": self.p_min_values.text(),
                "drafters": ticked, "chains": self.chains.text(),
                "prompt_file": str(self.prompt_file) if self.prompt_file else None,
                "n_predict": self.n_predict.value(), "repeats": self.repeats.value(),
                "sync": self.sync.currentText(), "threads": self.threads.value(),
                "temperature": self.temperature.value(), "accept_rule": self.accept_rule.currentText(),
                "deterministic": self.deterministic.isChecked(), "ignore_eos": self.ignore_eos.isChecked(),
                "alpha_on": self.alpha_on.isChecked(), "alpha": self.alpha.value(),
                "per_prompt": self.per_prompt.isChecked()}

    def from_dict(self, d: dict) -> None:
        """Put saved controls back; a value that no longer fits (a prompt file gone, a thread
        count above this machine's cores) keeps the default."""
        for key, edit in (("n_values", self.n_values), ("p_min_values", self.p_min_values),
                          ("chains", self.chains)):
            if isinstance(d.get(key), str):
                edit.setText(d[key])
        if isinstance(d.get("drafters"), list):
            for i in range(self.drafters.count()):
                item = self.drafters.item(i)
                item.setCheckState(Qt.CheckState.Checked if item.text() in d["drafters"]
                                   else Qt.CheckState.Unchecked)
        prompt_file = d.get("prompt_file")
        if isinstance(prompt_file, str) and Path(prompt_file).is_file():
            self.set_prompt_file(prompt_file)
        for key, box in (("n_predict", self.n_predict), ("repeats", self.repeats),
                         ("threads", self.threads), ("temperature", self.temperature),
                         ("alpha", self.alpha)):
            if isinstance(d.get(key), (int, float)) and not isinstance(d.get(key), bool):
                box.setValue(d[key])
        for key, combo in (("sync", self.sync), ("accept_rule", self.accept_rule)):
            if isinstance(d.get(key), str) and combo.findText(d[key]) >= 0:
                combo.setCurrentText(d[key])
        for key, check in (("deterministic", self.deterministic), ("ignore_eos", self.ignore_eos),
                           ("alpha_on", self.alpha_on), ("per_prompt", self.per_prompt)):
            if isinstance(d.get(key), bool):
                check.setChecked(d[key])
        self._update_buttons()

    def set_prompt_file(self, path) -> None:
        """None: the shipped benchmark set; the shipped drafter set is item 1; any other file is
        added after "Choose a file…"."""
        self.prompt_file = Path(path) if path else None
        while self.prompts.count() > 3:
            self.prompts.removeItem(3)
        if self.prompt_file is None:
            self.prompts.setCurrentIndex(0)
        elif self.prompt_file.name == DRAFTER_PROMPT_FILE and self.prompt_file.parent.name == "prompts":
            self.prompts.setCurrentIndex(1)
        else:
            self.prompts.addItem(self.prompt_file.name)
            self.prompts.setCurrentIndex(3)

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
