"""The pair doctor's calibrated estimate: what this machine's cached calibrations say a draft
would buy a target, beside the textbook figure (core/measure/doctor/pair.py).

The textbook model prices a verification batch at one target token and a draft token at the
files' size ratio; on a CPU neither holds (a batch of k tokens costs c(k) > 1, a small model
costs more per byte than a large one). When a calibration of the target is cached on this
machine (core/measure/cost/cache.py: any pair with it, or the target alone), the
calibrated round (cost.model.round_cost) prices the draft instead:

- c(k), sampling, the target's token B and the round's own Python and rollback come from the
  target's calibration: a pair's where one is cached (it timed a speculative round's own costs:
  core/measure/cost/break_even.py), else the target's alone;
- f is measured where this very pair was calibrated; otherwise it is the draft's file size over
  the target's, scaled by what a pair calibrated here measured (its f ÷ its own size ratio; this
  target's pair where there is one). With no pair calibrated here the ratio stays unscaled, and
  the basis says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specscope.core.cache import file_id
from specscope.core.measure.cost.break_even import (SPEEDUPS, DraftPoint, alpha_needed, summary, verdict,
                                                    with_draft)
from specscope.core.measure.cost.cache import cached_here
from specscope.core.measure.cost.model import ALPHAS, N_MAX, Calibration, calibrated_speedup

NO_CALIBRATION = ("no calibration of this target is cached on this machine, so the figures are "
                  "textbook (a verification batch costing one target token, f from file sizes); "
                  "for a calibrated estimate run `specscope bench -m TARGET -md DRAFT` (or "
                  "calibrate the pair in the window) on a quiet machine (a calibration taken "
                  "under load is not cached) and ask the doctor again")
RANK_ALPHA = 0.7        # the acceptance the scan ranks at (the textbook line's too)
THREAD_FLAGS = (("-t", "target_threads"), ("-td", "draft_threads"))


@dataclass(frozen=True)
class CalibratedEstimate:
    """One draft priced with this machine's calibration (module docs); speed-ups as the textbook
    table's: str(α) -> [n = 1..n_max], best per α."""
    f: float
    f_basis: str
    source: str                           # the calibration that priced it
    n_max: int
    speedups: dict[str, list[float]]
    best: dict[str, dict[str, float]]     # str(α) -> {"n", "speedup"}
    alpha_needed: dict[str, float | None]  # "1.0", "1.5" -> the least α reaching it (None: none)
    break_even: str                       # break_even.summary of the calibration
    verdict: str                          # break_even.verdict at α = RANK_ALPHA


def _name(desc: dict | None) -> str:
    return Path(desc["path"]).name if desc else "?"


def _size_ratio(cal: Calibration) -> float | None:
    d, t = cal.describe.get("draft"), cal.describe.get("target")
    return d["size"] / t["size"] if d and t and d.get("size") and t.get("size") else None


def _model_pair(cal: Calibration) -> bool:
    """A draft model's pair calibration (not the target alone, not an EAGLE-3 head)."""
    return cal.has_draft and not cal.head and cal.f > 0 and _size_ratio(cal) is not None


def describe(cal: Calibration) -> str:
    """"the calibration of target.gguf with draft.gguf (-t 1 -td 1, cached 12 min ago)"."""
    desc, engine = cal.describe, cal.describe.get("engine") or {}
    draft = desc.get("draft")
    what = _name(desc.get("target")) + (f" with {_name(draft)}" if draft else " alone")
    threads = "".join(f"{flag} {engine[key]}, " for flag, key in THREAD_FLAGS if engine.get(key))
    return (f"the calibration of {what} ({threads}batches up to {cal.k_max} at position "
            f"{cal.n_past}, cached {cal.cached_age_s / 60:.0f} min ago)")


@dataclass(frozen=True)
class MachineCosts:
    """What this machine's cached calibrations say about one target (module docs)."""
    cal: Calibration                      # the target's, which prices every draft
    pairs: tuple[Calibration, ...]        # this target's draft-model pairs, newest first
    scale: float | None                   # measured f ÷ size ratio of a pair calibrated here
    scale_basis: str

    def lines(self) -> list[str]:
        """Where the figures come from and what a draft must cost here."""
        return [f"c(k) and the target's token (t1 {self.cal.t1 * 1e3:.3f} ms) from {describe(self.cal)}",
                f"f of a draft not calibrated with this target: {self.scale_basis}",
                f"break-even here: {summary(self.cal)}"]

    def estimate(self, draft_path: str, size_ratio: float, name: str = "this draft") -> CalibratedEstimate:
        own = next((c for c in self.pairs if c.describe["draft"] == file_id(draft_path)), None)
        base = own or self.cal                  # what the curves and the source line come from
        if own is not None:
            cal, f, basis = own, own.f, "measured: this pair's calibration"
        else:
            f = size_ratio * (self.scale or 1.0)
            cal, basis = with_draft(self.cal, f), (
                f"file sizes {size_ratio:.4f} × {self.scale:.2f} (what this machine measured)"
                if self.scale else f"file sizes {size_ratio:.4f}, unscaled (no pair calibrated here)")
        ns = range(1, min(N_MAX, cal.k_max - 1) + 1)
        table = {str(a): [round(calibrated_speedup(cal, n, alpha=a), 4) for n in ns] for a in ALPHAS}
        best = {a: max(range(len(row)), key=lambda i: (row[i], -i)) for a, row in table.items()}
        return CalibratedEstimate(
            f=f, f_basis=basis, source=describe(base), n_max=len(ns), speedups=table,
            best={a: {"n": i + 1, "speedup": table[a][i]} for a, i in best.items()},
            alpha_needed={f"{s:.1f}": alpha_needed(base, f, s) for s in SPEEDUPS},
            break_even=summary(base), verdict=verdict(base, DraftPoint(name, f, RANK_ALPHA)))


def machine_costs(target_path) -> MachineCosts | None:
    """The target's calibration on this machine and the scale of f (module docs); None when no
    calibration of the target is cached here."""
    here = cached_here()
    target = file_id(target_path)
    mine = [c for c in here if c.describe.get("target") == target]
    if not mine:
        return None
    cal = min(mine, key=lambda c: (not _model_pair(c), c.head))     # newest first among equals
    pairs = tuple(c for c in mine if _model_pair(c))
    ref = next(iter(pairs), None) or next((c for c in here if _model_pair(c)), None)
    if ref is None:
        return MachineCosts(cal, pairs, None, "the file-size ratio, unscaled: no draft model was "
                                              "calibrated on this machine")
    ratio = _size_ratio(ref)
    return MachineCosts(cal, pairs, ref.f / ratio,
                        f"the file-size ratio × {ref.f / ratio:.2f}, what "
                        f"{'that pair' if ref is cal else describe(ref)} measured (f {ref.f:.3f} "
                        f"over its size ratio {ratio:.4f})")
