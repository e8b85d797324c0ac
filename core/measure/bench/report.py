"""A sweep's result: its rows with their views (pooled rows, best n, the heatmap's grid), the CSV
and JSON exports, the text table and heatmap, and why a prediction may be far off."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from specscope.core.engine.drafters import MODEL_TYPES, type_label
from specscope.core.engine.drafters.registry import listing
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.bench.rows import ALL, CSV_COLUMNS, Cell, Row
from specscope.core.measure.bench.settings import SweepSettings

BIG_ERROR = 0.25             # a calibrated prediction off by more than this is explained
BUSY_SHARE = 0.1             # others using more of the CPU than this: the figures are noisy
NGRAM_ONLY_NOTE = (f"n applies to the model drafters only ({listing(lambda t: not t.ngram, last=', ')}): "
                   "chains of n-gram types are swept once (n_max shown as -)")


@dataclass
class SweepResult:
    settings: SweepSettings
    calibrations: dict[str, Calibration] = field(default_factory=dict)   # draft name -> figures
                                                    # ("" : the n-gram-only group, no draft model)
    from_cache: dict[str, bool] = field(default_factory=dict)
    cells: list[Cell] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    stopped: bool = False
    seconds: float = 0.0
    lossless_notes: list[str] = field(default_factory=list)
    others_cpu: float | None = None    # share of the CPU other processes used meanwhile (Linux)
    skipped: dict[str, str] = field(default_factory=dict)   # draft name -> why (vocabulary gate)
    uncalibrated: dict[str, str] = field(default_factory=dict)   # draft name -> why no calibration

    # -- views ------------------------------------------------------------
    def pooled(self, config: str | None = None) -> list[Row]:
        """The pooled rows (of one configuration name, :func:`config_name`, if given)."""
        return [r for r in self.rows if r.prompt == ALL and (config is None or r.config == config)]

    def drafts(self) -> list[str]:
        """The configuration names (draft file, chain, or both), in the order run."""
        return configs_in(self.rows)

    def best_n(self) -> dict[str, dict]:
        """Per configuration with a draft model: the n with the highest measured speed-up, and
        the calibrated model's pick (n-gram-only chains have no n to pick)."""
        out = {}
        for d in self.drafts():
            rows = [r for r in self.pooled(d) if r.n_max > 0]
            if not rows:
                continue
            measured = max(rows, key=lambda r: (r.measured_speedup, -r.n_max))
            priced = [r for r in rows if math.isfinite(r.calibrated_speedup)]   # none: uncalibrated
            predicted = max(priced, key=lambda r: (r.calibrated_speedup, -r.n_max)) if priced else None
            textbook = max(rows, key=lambda r: (r.textbook_speedup, -r.n_max))
            out[d] = {"measured": measured.n_max, "measured_speedup": measured.measured_speedup,
                      "calibrated": predicted.n_max if predicted else None,
                      "calibrated_speedup": predicted.calibrated_speedup if predicted else None,
                      "textbook": textbook.n_max, "textbook_speedup": textbook.textbook_speedup}
        return out

    def heatmap(self) -> tuple[list[str], list[int], list[list[float | None]]]:
        """(configurations, n values, measured speed-up[configuration][n]) from the pooled rows;
        n = 0 is the column of the n-gram-only chains (n does not apply)."""
        drafts = self.drafts()
        ns = sorted({r.n_max for r in self.pooled()})
        grid = [[None] * len(ns) for _ in drafts]
        for r in self.pooled():
            grid[drafts.index(r.config)][ns.index(r.n_max)] = r.measured_speedup
        return drafts, ns, grid

    # -- export ------------------------------------------------------------
    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for r in self.rows:
            w.writerow(r.csv_values())
        return buf.getvalue()

    def to_dict(self) -> dict:
        s = self.settings
        return {
            "target": str(s.target), "drafts": [str(d) for d in s.drafts],
            "settings": {"n_values": list(s.n_values), "n_predict": s.n_predict, "sync": s.sync,
                         "chat": s.chat, "system": s.system,
                         "spec_types": [type_label(c) for c in s.chains],
                         "spec_params": s.spec.own_params() if s.spec is not None else {},
                         "draft_policy": s.spec.draft_policy if s.spec is not None else "fixed",
                         "p_min": s.p_min, "p_min_values": list(s.p_mins), "repeats": s.repeats, "alpha": s.alpha,
                         "ignore_eos": s.ignore_eos,
                         "sampler": s.sampler.describe() if s.sampler is not None else "greedy",
                         "engine": asdict(s.engine) if s.engine is not None else None,
                         "prompts": [{"name": n, "text": t} for n, t in s.prompts]},
            "calibration": {d: {**c.to_dict(), "from_cache": self.from_cache.get(d, False)}
                            for d, c in self.calibrations.items()},
            "columns": list(CSV_COLUMNS),
            "rows": [r.to_dict() for r in self.rows],
            "best_n": self.best_n(),
            "stopped": self.stopped, "seconds": self.seconds, "others_cpu": self.others_cpu,
            "skipped": dict(self.skipped), "uncalibrated": dict(self.uncalibrated),
            "prediction_caveat": prediction_caveat(self),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, default=str)

    def save(self, path: str | Path) -> Path:
        """Write CSV or JSON, by the file's suffix."""
        path = Path(path)
        text = self.to_json() if path.suffix.lower() == ".json" else self.to_csv()
        path.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")
        return path


def configs_in(rows: Sequence[Row]) -> list[str]:
    seen: list[str] = []
    for r in rows:
        if r.config not in seen:
            seen.append(r.config)
    return seen


# ============================================================================ reading the figures

def prediction_caveat(result: SweepResult, with_draft: bool = True) -> str:
    """Why the calibrated prediction may be far off (more than BIG_ERROR on a pooled row), from
    what the sweep saw: load from other processes, a calibration taken under load or cached
    from earlier (drift), repetitions that spread wide; "" when no row is that far off.
    ``with_draft``: name configurations with their draft file (:func:`config_name`)."""
    off = [r for r in result.pooled() if math.isfinite(r.calibrated_error)
           and abs(r.calibrated_error) > BIG_ERROR]
    if not off:
        return ""
    worst = max(off, key=lambda r: abs(r.calibrated_error))
    why = []
    if result.others_cpu is not None and result.others_cpu >= BUSY_SHARE:
        why.append(f"load: other processes used {100 * result.others_cpu:.0f}% of the CPU during the "
                   "sweep, and llama.cpp's threads stall when one loses its core")
    cals = {r.draft: result.calibrations[r.draft] for r in off if r.draft in result.calibrations}
    for name, cal in cals.items():
        what = f"the calibration of {name or 'the target alone'}"
        if cal.under_load:
            why.append(f"load: {what} was taken under load")
        elif result.from_cache.get(name):
            why.append(f"drift: {what} is cached from {cal.cached_age_s / 60:.0f} min ago and the "
                       "machine may run differently now (--recalibrate)")
    if worst.spread is not None:
        why.append(f"noise: the repetitions of {worst.name(with_draft)}" + (f" n={worst.n_max}" if worst.n_max else "")
                   + f" spread {worst.spread_text('×')}"
                   + (", wider than its distance from 1×" if worst.within_noise else ""))
    else:
        why.append("noise: one repetition, so the measurement's own spread is unknown (repeat 3 times or more)")
    return (f"the calibrated prediction is off by more than {100 * BIG_ERROR:.0f}% on {len(off)} of "
            f"{len(result.pooled())} rows (at most {100 * abs(worst.calibrated_error):.0f}%); it prices "
            "this machine as calibrated, so the gap may be " + "; ".join(why))


# ============================================================================ text table

def drafter_summary(row: Row) -> str:
    """Per member of a chain: the rounds it won, its acceptance and its mean accepted length
    ("ngram-simple 12r 91% len 9.4")."""
    return " · ".join(f"{d.name} {d.n_draft_rounds}r {100 * d.acceptance_rate:.0f}% "
                      f"len {d.mean_accepted_length:.1f}" for d in row.drafters)


def format_table(result: SweepResult, *, per_prompt: bool = False) -> str:
    """The pooled rows (and per-prompt rows if asked) as a fixed-width table. With n-gram
    types in the sweep, two more columns: the lookup time per round (µs, and in target tokens)
    and, per member of the chain, the rounds it won and its acceptance; with drafts across
    vocabularies, their translation time per round (µs, and in target tokens)."""
    head = ("configuration", "n", "prompt", "accept", "mean len", "tok/s", "base tok/s", "measured",
            "spread", "textbook", "(err)", "calibrated", "(err)", "lossless")
    lines = []
    rows = result.rows if per_prompt else result.pooled()
    has_alpha = any(r.alpha_speedup is not None for r in rows)
    has_cf = any(r.cf_acceptance is not None for r in rows)
    ngram = any(r.drafter not in MODEL_TYPES for r in rows)
    xvocab = any(r.vocab for r in rows)
    if has_alpha:
        head = head + ("α-model",)
    if has_cf:
        head = head + ("other rule, expected",)
    if ngram:
        head = head + ("lookup/round", "rounds won · acceptance · mean len")
    if xvocab:
        head = head + ("translate/round",)
    head = head + ("note",)
    data = []
    for r in rows:
        cells = [r.config, str(r.n_max) if r.n_max else "-", r.prompt, f"{100 * r.acceptance:.1f}%",
                 f"{r.mean_accepted_length:.2f}", f"{r.tokens_per_s:.1f}",
                 f"{r.baseline_tokens_per_s:.1f}", f"{r.measured_speedup:.3f}", r.spread_text() or "-",
                 f"{r.textbook_speedup:.3f}", f"{100 * r.textbook_error:+.1f}%",
                 *((f"{r.calibrated_speedup:.3f}", f"{100 * r.calibrated_error:+.1f}%")
                   if math.isfinite(r.calibrated_speedup) else ("—", "")),
                 r.lossless + (f"@{r.divergence_at}" if r.divergence_at is not None else "")]
        if has_alpha:
            cells.append(f"{r.alpha_speedup:.3f}" if r.alpha_speedup is not None else "")
        if has_cf:
            cells.append(f"{r.cf_rule} {100 * r.cf_acceptance:.1f}%" if r.cf_acceptance is not None else "")
        if ngram:
            cells += [f"{r.lookup_us:.0f} µs ({r.lookup_cost:.3f})" if r.drafter not in MODEL_TYPES else "",
                      drafter_summary(r) if r.drafter not in MODEL_TYPES else ""]
        if xvocab:
            cells.append(f"{r.translate_us:.0f} µs ({r.translate_cost:.3f})" if r.vocab else "")
        data.append(cells + [r.note])
    widths = [max([len(h)] + [len(row[i]) for row in data]) for i, h in enumerate(head)]
    left = {0, 1, 2, len(head) - 1} | ({head.index("rounds won · acceptance · mean len")} if ngram else set())

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    lines.append(line(head))
    lines += [line(row) for row in data]
    return "\n".join(lines)


HEATMAP_KEY = "* = best n, ~ = within noise, no drafts = never drafted"


def format_heatmap(result: SweepResult) -> str:
    """The measured speed-up as a configurations × n grid: the best n per configuration marked
    with *, a figure within noise with ~, a configuration that never drafted says so."""
    drafts, ns, _ = result.heatmap()
    if not drafts:
        return ""
    rows = {(r.config, r.n_max): r for r in result.pooled()}
    best = result.best_n()
    width = max(len(d) for d in drafts)
    lines = [" " * width + "  " + "".join(f"{'n=' + str(n) if n else 'no n':>11}" for n in ns)]
    for d in drafts:
        cells = []
        for n in ns:
            r = rows.get((d, n))
            flags = ("~" if r is not None and r.within_noise else "") \
                + ("*" if best.get(d, {}).get("measured") == n else "")
            text = ("" if r is None else "no drafts" if r.never_drafted
                    else f"{r.measured_speedup:.2f}x") + flags
            cells.append((text + " " * (2 - len(flags))).rjust(11))
        lines.append(d.ljust(width) + "  " + "".join(cells))
    return "\n".join(lines)
