"""Is a baseline still a fair measure for a speculative run? (Qt-free)

The measured speed-up is the speculative run's tokens/s over the baseline's (the target alone,
same prompt and settings). Both must be timed on the machine in the same state: a baseline
taken minutes earlier, or while other processes took a different share of the CPU, gives a
wrong speed-up and a wrong f (the cost panel's draft ÷ target cost takes the target's cost per
token from it). Every live ``core.session.session.RunRecord`` notes when it ran (``started_at``, ``ended_at``)
and what other processes took of the CPU meanwhile (``load``, core/measure/cpuload.py);
:func:`check_baseline` compares the two runs.

The rule (:data:`MAX_GAP_S`, :func:`load_gap_limit`):

- **More than 5 minutes apart: stale.** The load reading below sees only CPU time; what it
  misses (clock and thermal state, what other processes hold in the caches, the thread count
  "auto" chose) drifts on a scale of minutes. Five
  minutes is the kernel's own horizon for load (the 5-minute load average) and covers a
  baseline, a few runs and their study; runs further apart are measured again.
- **Other processes' load differs by half a core or more (a tenth of the cores on machines
  with more than 5): stale.** llama.cpp's threads meet at a barrier after almost every
  operation, so one thread that loses its core stalls the rest (core/models/threads.py: on the 2-core
  VM loaded by other jobs, SmolLM2-135M took 42–54 ms per token on one thread and 190–380 ms
  on two); half a core of other work is enough to take one.
- **The target ran on another thread count: stale.** Threads "auto" moves with the load, so
  a baseline whose target ran mostly on 2 threads and a run whose target ran mostly on 1 were
  timed on a machine in different states.
- The load of a run shorter than :data:`MIN_LOAD_WINDOW_S` is not compared: /proc/stat counts
  in ticks of 10 ms, so a shorter window reads mostly noise (the demo pair makes 24 tokens in
  a few tens of ms). Its age still counts.
- A run recorded without these readings (an older session file) cannot be checked: not stale,
  and the description says it is not known.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MAX_GAP_S = 300.0             # more than 5 minutes between the runs: measure the baseline again
LOAD_GAP_CORES = 0.5          # other processes' load differing by this many cores or more ...
LOAD_GAP_SHARE = 0.1          # ... or by this share of all cores, whichever is more
MIN_LOAD_WINDOW_S = 1.0       # a shorter run's load reading is noise (10 ms ticks)


def load_gap_limit(cores: int) -> float:
    """How many cores of other processes' load two runs may differ by and still compare."""
    return max(LOAD_GAP_CORES, LOAD_GAP_SHARE * cores)


def duration(seconds: float) -> str:
    """'12 s', '4 min 5 s', '2 h 3 min'."""
    s = int(round(abs(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _cores(reading) -> float | None:
    """Other processes' load in cores, when the reading spans long enough to tell."""
    if reading is None or reading.others is None or reading.seconds < MIN_LOAD_WINDOW_S:
        return None
    return reading.others_cores


@dataclass(frozen=True)
class BaselineCheck:
    """How a baseline run stands to the speculative run it is measured against."""
    gap_s: float | None           # seconds between the runs (0: back to back); None: not recorded
    before: bool                  # the baseline ran before the speculative run
    load: object | None           # cpuload.LoadReading during the baseline
    run_load: object | None       # ... and during the speculative run
    stale: str                    # why the baseline is no fair measure ("": it is, or unknown)

    def describe(self) -> str:
        """One line: when the baseline was measured and under what load, and if stale, why."""
        if self.gap_s is None:
            text = "when the baseline was measured, and under what load, is not recorded"
        else:
            when = "right" if self.gap_s < 1 else duration(self.gap_s)
            text = f"baseline measured {when} {'before' if self.before else 'after'} the run"
            b, s = _cores(self.load), _cores(self.run_load)
            if b is not None:
                text += (f"; other processes used {b:.2f} of {self.load.cores} cores during it"
                         + (f" ({s:.2f} during the run)" if s is not None else ""))
            elif self.load is not None:
                text += f"; too short ({self.load.seconds * 1e3:.0f} ms) to read the machine's load"
        return f"stale: {self.stale} ({text})" if self.stale else text


def _target_threads(record) -> int:
    """The thread count the target ran most rounds with (0: not recorded): threads "auto"
    follows the load (core/models/threads.py), so a different count means a different load."""
    counts = getattr(record, "stats", None)
    counts = counts.main_threads if counts is not None else ()
    return counts[0] if counts else 0


def check_baseline(run, baseline, now: float | None = None) -> BaselineCheck | None:
    """Compare ``baseline`` (a core.session.Run of the target alone) with the speculative
    ``run`` it measures the speed-up of; None without a baseline. A run still going counts
    as ending ``now`` (default: the time now)."""
    if baseline is None or run is None:
        return None
    if None in (run.started_at, baseline.started_at, baseline.ended_at):
        return BaselineCheck(None, True, baseline.load, run.load, "")
    run_end = run.ended_at if run.ended_at is not None else (time.time() if now is None else now)
    before = baseline.ended_at <= run_end
    gap = max(0.0, run.started_at - baseline.ended_at) if before \
        else max(0.0, baseline.started_at - run_end)
    why = []
    if gap > MAX_GAP_S:
        why.append(f"more than {duration(MAX_GAP_S)} apart")
    b, s = _cores(baseline.load), _cores(run.load)
    if b is not None and s is not None and abs(b - s) >= load_gap_limit(baseline.load.cores):
        why.append(f"other processes' load differed by {abs(b - s):.2f} cores")
    tb, ts = _target_threads(baseline), _target_threads(run)
    if tb and ts and tb != ts:
        why.append(f"the target ran on {tb} thread{'s' if tb > 1 else ''} in the baseline and on "
                   f"{ts} in the run")
    return BaselineCheck(gap, before, baseline.load, run.load, " and ".join(why))
