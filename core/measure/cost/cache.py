"""Calibrations cached per pair, settings and machine, and when to trust one (nothing here times
a decode: :mod:`.calibrate` does).

A calibration is kept as JSON in the user's cache directory (``$SPECSCOPE_CACHE_DIR``, else
``$XDG_CACHE_HOME/specscope``, else ``~/.cache/specscope``), under a key of the model files
(paths, sizes, modification times), the engine settings and placement, the sampler, k_max,
n_past and the machine. A file of another CALIBRATION_VERSION is measured again; one taken
under load (:func:`is_under_load`) is never written; a cached one is used only while the drift
check agrees with it (:func:`drift_of`), and one taken beside other processes' work only until
the machine is quiet (:func:`busy_then_quiet_now`). Why these thresholds: docs/calibration.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Callable, NamedTuple

from specscope.core.cache import cache_root, file_id, read_json, write_json
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.cpuload import LoadReading

CALIBRATION_VERSION = 13      # a cache file of another version is measured again (13: the drift
                              # check also times a token after a batch, ``check_switch``)
DEFAULT_N_PAST = 128          # calibrate at the position of a typical round
DRIFT_TOLERANCE = 0.15        # the check's median further than this from the cached one: recalibrate
DRIFT_FLOOR_S = 20e-6         # ... and by more seconds than this (less is a scheduler's noise on a
                              # tiny model's 30 µs decodes)
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


class CheckTiming(NamedTuple):
    """The drift check's timings, seconds (:func:`.calibrate.check_timing`): a single-token
    decode in a stream of them, and one after a batch of another size."""
    stream: float
    switch: float


def drift_of(cal: Calibration, now: CheckTiming) -> str | None:
    """None when both of the drift check's timings now agree with the ones ``cal`` recorded
    within DRIFT_TOLERANCE (or DRIFT_FLOOR_S); else the reason to measure again, in one line."""
    if cal.check_t <= 0 or cal.check_switch <= 0 or min(now) <= 0:
        return "the cached calibration has no drift-check timing: measured again"
    for what, then, now_s in (("a target token", cal.check_t, now.stream),
                              ("a target token after a batch", cal.check_switch, now.switch)):
        drift = now_s / then - 1.0
        if abs(drift) > DRIFT_TOLERANCE and abs(now_s - then) > DRIFT_FLOOR_S:
            return (f"recalibrated: {what} took {then * 1e3:.2f} ms when the calibration was "
                    f"cached, {now_s * 1e3:.2f} ms now ({100 * drift:+.0f}%, beyond "
                    f"±{100 * DRIFT_TOLERANCE:.0f}%)")
    return None


def busy_then_quiet_now(cal: Calibration, look: Callable[[], LoadReading]) -> str | None:
    """The reason to measure again a cached calibration that was taken beside other processes'
    work (more than LOAD_SLACK_CORES of the CPU, on cores llama.cpp's threads left free too:
    not load by :func:`is_under_load`, yet a busy neighbour moved the demo pair's c(2) from
    1.2 to 2.2 target tokens, docs/calibration.md) where the machine is quiet now (``look``:
    other processes' use now, read only for such a calibration; quiet: at most half of
    LOAD_SLACK_CORES); None where it was quiet then, or is busy still (it serves while the load
    lasts)."""
    then = cal.load_reading
    if then is None or then.others_cores is None or then.others_cores <= LOAD_SLACK_CORES:
        return None
    now = look()          # quiet: half the slack, so that a steady 0.2 core measures nothing twice
    if now.others_cores is None or now.others_cores > LOAD_SLACK_CORES / 2:
        return None
    return (f"recalibrated: the cached calibration was taken while other processes used "
            f"{then.others_cores:.2f} of {then.cores} cores; the machine is quiet now")


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
