"""The Compare view's results table: one row per configuration (pooled over the prompts, or per
prompt), the columns of the CSV export the view shows, the measured speed-up coloured around 1×
(grey where the repetitions do not back it)."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

__all__ = ["SweepTable", "TABLE_COLUMNS", "measured_text", "measured_tip", "row_color", "speedup_color"]

# (header, Row attribute, format)
TABLE_COLUMNS = (
    ("Configuration", "config", "name"), ("n", "n_max", "n"), ("Prompt", "prompt", "{}"),
    ("Accept", "acceptance", "pct"), ("Mean len", "mean_accepted_length", "{:.2f}"),
    ("tok/s", "tokens_per_s", "{:.1f}"), ("Base tok/s", "baseline_tokens_per_s", "{:.1f}"),
    ("Measured (spread)", "measured_speedup", "measured"),
    ("Textbook (err)", "textbook_speedup", "textbook_error"),
    ("Calibrated (err)", "calibrated_speedup", "calibrated_error"),
    ("Lossless", "lossless", "{}"), ("Other rule", "cf_acceptance", "cf"),
    ("Lookup/round", "lookup_us", "lookup"), ("Rounds won", "drafters", "won"),
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
    "tok/s": "speculative tokens per second, generation only (prompt processing excluded); with "
             "repeats, each prompt's median time per token, so a run stalled by load from elsewhere "
             "counts little here (Measured takes each repetition as it ran: its spread shows such a "
             "run)",
    "Base tok/s": "the target alone on the same prompts and settings",
    "Measured (spread)": "tok/s ÷ base tok/s: per repetition, against the baselines measured just before "
                         "and after it; the median over the repetitions, and in brackets the lowest and the "
                         "highest of them (none with one repetition: set repeats to 3 or more to know how "
                         "far to trust the figure). ≈ and grey: within noise (the spread is wider than the "
                         "distance from 1×: the repetitions disagree by more than the gain or loss they "
                         "measure, so its size is not known); never "
                         "drafted: the drafter proposed no token, the run was the target alone plus its "
                         "lookups",
    "Textbook (err)": "the textbook model: (E + 1) / (n·f + 1), a verification batch costing one target pass; "
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
        from specscope.core.engine.drafters import MODEL_TYPES
        if row.drafter in MODEL_TYPES:             # a model drafter alone: no lookups, no chain
            return ""
        if fmt == "lookup":
            return f"{value:.0f} µs ({row.lookup_cost:.3f})"
        from specscope.core.measure.bench.report import drafter_summary
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


class SweepTable(QTableWidget):
    """The sweep's rows, as the table and the CSV name their columns."""

    def __init__(self, parent=None):
        super().__init__(0, len(TABLE_COLUMNS), parent)
        self.setHorizontalHeaderLabels([c[0] for c in TABLE_COLUMNS])
        for i, (head, _, _) in enumerate(TABLE_COLUMNS):
            item = self.horizontalHeaderItem(i)
            if head in COLUMN_TIPS:
                item.setToolTip(COLUMN_TIPS[head])
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the last column (a chain's members) takes what is left, its full text in the tooltip
        self.horizontalHeader().setSectionResizeMode(len(TABLE_COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setDefaultSectionSize(22)

    def fill(self, rows, every_row, best: dict, per_prompt: bool, with_draft: bool) -> None:
        """Show ``rows`` (pooled, or every row per prompt); the columns of the n-gram drafters
        and of the other acceptance rule only when ``every_row`` of the sweep has them; the best
        n per configuration in bold."""
        self.setColumnHidden(PROMPT_COLUMN, not per_prompt)
        from specscope.core.engine.drafters import MODEL_TYPES
        ngram = any(r.drafter not in MODEL_TYPES for r in every_row)
        for j in NGRAM_COLUMNS:                              # n-gram drafters' figures only
            self.setColumnHidden(j, not ngram)
        self.setColumnHidden(CF_COLUMN, all(r.cf_acceptance is None for r in every_row))
        self.setRowCount(len(rows))
        bold = QFont()
        bold.setBold(True)
        for i, row in enumerate(rows):
            for j in range(len(TABLE_COLUMNS)):
                item = self._item(row, j, with_draft)
                if row.prompt == "ALL" and best.get(row.config, {}).get("measured") == row.n_max:
                    item.setFont(bold)
                self.setItem(i, j, item)

    @staticmethod
    def _item(row, j: int, with_draft: bool) -> QTableWidgetItem:
        _, attr, fmt = TABLE_COLUMNS[j]
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
            item.setToolTip(f"{row.drafter}" + (f", draft model {row.draft}" if row.draft else ", no draft model"))
        if attr == "lossless" and value not in ("identical", ""):
            item.setForeground(QBrush(QColor("#b00020" if value == "mismatch" else "#8a6d00")))
            if row.divergence_at is not None:
                item.setText(f"{value} @{row.divergence_at}")
        if fmt == "won":
            item.setToolTip(item.text())
        return item

    def needed_width(self) -> int:
        """The width at which every shown column fits (no sideways scrolling)."""
        header = self.horizontalHeader()
        need = sum(max(self.sizeHintForColumn(j), header.sectionSizeHint(j))
                   for j in range(len(TABLE_COLUMNS)) if not self.isColumnHidden(j))
        return need + 2 * self.frameWidth() + self.verticalScrollBar().sizeHint().width()
