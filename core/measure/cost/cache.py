"""Calibrations cached per pair, settings and machine, and when to trust one (nothing here times
a decode: :mod:`.calibrate` does).

A calibration is kept as JSON in the user's cache directory (``$SPECSCOPE_CACHE_DIR``, else
``$XDG_CACHE_HOME/specscope``, else ``~/.cache/specscope``), under a key of the model files
(paths, sizes, modification times), the engine settings and placement, the sampler, k_max,
n_past and the machine. A file of another CALIBRATION_VERSION is measured again; one taken
under load (:func:`is_under_load`) is never written; a cached one is used only while the drift
check agrees with it (:func:`drift_of`). Why these thresholds: docs/calibration.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict
from pathlib import Path

from specscope.core.cache import cache_root, file_id, read_json, write_json
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.cpuload import LoadReading

CALIBRATION_VERSION = 12      # a cache file of another version is measured again (12: a draft
                              # step's Python is cheaper on a small vocabulary: o1 measured again)
DEFAULT_N_PAST = 128          # calibrate at the position of a typical round
DRIFT_TOLERANCE = 0.15        # the check's median further than this from the cached one: recalibrate
LOAD_SLACK_CORES = 0.2        # other processes may take this much of the cores llama.cpp's threads
                              # need before a calibration counts as taken under load


def cache_dir() -> Path:
    return cache_root() / "calibration"


def this_machine() -> dict:
    """What a calibration's key says of the machine it was taken on."""
    return {"node": platform.node(), "cpus": os.cpu_count(), "system": platform.system()}


def calibration_key(engine, k_max: int, sampler=None, n_past: int = DEFAULT_N_PAST,
                    k_draft: int | None = None, mtp: bool = False) -> tuple[str, dict]:
    """(key, description) identifying a pair, its settings and this machine (``mtp``: the
    target's MTP blocks drafting)."""
    desc = {
        "version": CALIBRATION_VERSION,
        "target": file_id(engine.target.path),
        "draft": file_id(engine.draft.path) if engine.draft is not None else None,
        "engine": asdict(engine.settings),       # with the placement (--rpc, --device, -ngl)
        # threads auto: the counts decoding now (a calibration at 2+2 idle prices nothing of
        # a run at 1+1 under load); a pinned count is in the settings already
        "threads_now": threads_now(engine),
        "placement": getattr(engine, "placement", None),
        "sampler": sampler.describe() if sampler is not None else "greedy",
        "k_max": k_max, "n_past": n_past, "k_draft": k_draft,
        "machine": this_machine(),
        **({"mtp": True} if mtp else {}),
    }
    blob = json.dumps(desc, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:20], json.loads(blob)   # as the cache reads it back


def load_cached(key: str, *, k_max: int | None = None) -> Calibration | None:
    doc = read_json(cache_dir() / f"{key}.json")
    try:
        cal = Calibration.from_dict(doc)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if cal.version != CALIBRATION_VERSION or (k_max is not None and cal.k_max < k_max):
        return None          # an older format: measured again
    return cal


def cached_here() -> list[Calibration]:
    """Every cached calibration of the current version taken on this machine, newest first
    (whatever its pair and settings: the doctor's calibrated estimate looks for its target's)."""
    cals = (load_cached(path.stem) for path in cache_dir().glob("*.json"))
    return sorted((c for c in cals if c is not None and c.describe.get("machine") == this_machine()),
                  key=lambda c: -c.created)


def cached_pair(target, draft=None) -> Calibration | None:
    """The newest calibration cached on this machine of this very pair (``draft`` None: the
    target alone), whoever took it (bench, advise, Compare, the window's cost tab); None too
    when a model file is gone (nothing to match it with)."""
    try:
        t, d = file_id(target), file_id(draft) if draft else None
    except OSError:
        return None
    return next((c for c in cached_here()
                 if c.describe.get("target") == t and c.describe.get("draft") == d), None)


def save_cached(cal: Calibration) -> Path | None:
    return write_json(cache_dir() / f"{cal.key}.json", cal.to_dict())


def drift_of(cal: Calibration, now_s: float) -> str | None:
    """None when the drift check's timing now (seconds) agrees with the one ``cal`` recorded
    within DRIFT_TOLERANCE; else the reason to measure again, in one line."""
    if cal.check_t <= 0 or now_s <= 0:
        return "the cached calibration has no drift-check timing: measured again"
    drift = now_s / cal.check_t - 1.0
    if abs(drift) <= DRIFT_TOLERANCE:
        return None
    return (f"recalibrated: a target token now takes {now_s * 1e3:.2f} ms, the cached calibration's "
            f"check {cal.check_t * 1e3:.2f} ms ({100 * drift:+.0f}%, beyond ±{100 * DRIFT_TOLERANCE:.0f}%)")


def _contexts(engine) -> list:
    return [c for c in (engine.tgt, engine.dft, engine.mtp.ctx if engine.mtp is not None else None)
            if c is not None]


def threads_now(engine) -> list[int]:
    """The thread count of each of the engine's contexts now (target, draft, MTP blocks; threads
    auto: the governors' current counts, core/models/threads.py)."""
    return [c.threads for c in _contexts(engine)]


def threads_used(engine) -> int:
    """The most threads a decode of this engine runs on now."""
    return max(threads_now(engine))


def is_under_load(reading: LoadReading, threads: int) -> bool:
    """Whether other processes competed for the cores a decode's ``threads`` run on: their CPU
    use, in cores, exceeded the cores those threads leave free by more than LOAD_SLACK_CORES
    (llama.cpp's threads meet at a barrier after almost every operation, so one that loses its
    core stalls the rest). Unknown readings (no /proc/stat) do not count as load."""
    busy = reading.others_cores
    if busy is None:
        return False
    return busy > max(0, reading.cores - threads) + LOAD_SLACK_CORES
