"""How busy the CPUs were with other processes while we measured (Linux /proc/stat).

A timing taken while other processes compete for the cores llama.cpp's threads run on is
not a timing of this machine: the threads meet at a barrier after almost every operation
(core/models/threads.py), so one that loses its core stalls the others. :class:`LoadMeter` reads,
over a window, the CPU time all processes spent busy on the cores this process may run on
(``/proc/stat``: its first line, or the lines of the CPUs in its affinity mask where that is
not all of them, as in a container limited to a few of a host's cores) minus this process's own
CPU time (``os.times()``, every thread), as a share of those cores.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from specscope.core.models.threads import affinity_mask


def _busy(fields: list[str]) -> int:
    """Busy ticks of one /proc/stat cpu line: all but idle and iowait."""
    values = [int(v) for v in fields[1:9]]
    return sum(values) - values[3] - (values[4] if len(values) > 4 else 0)


def _busy_seconds(cpus: frozenset[int] | None = None) -> float | None:
    """CPU seconds all processes have spent busy since boot (Linux /proc/stat) on ``cpus``
    (None: every CPU, the first line), or None where it cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            lines = [f.readline()] if cpus is None else f.readlines()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    rows = [line.split() for line in lines if line.startswith("cpu")]
    if cpus is None:
        rows = [r for r in rows if r[0] == "cpu"]
    else:
        rows = [r for r in rows if r[0][3:].isdigit() and int(r[0][3:]) in cpus]
    if not rows:
        return None
    return sum(_busy(r) for r in rows) / ticks


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system


def own_cores() -> tuple[frozenset[int] | None, int]:
    """The CPUs this process may run on (its affinity mask; None: all of them) and how many."""
    cpus = affinity_mask()
    return cpus, len(cpus) if cpus else max(1, os.cpu_count() or 1)


def load_average() -> tuple[float, float, float] | None:
    """os.getloadavg() (runnable processes over 1, 5 and 15 minutes), or None where missing."""
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except (OSError, AttributeError):
        return None


@dataclass(frozen=True)
class LoadReading:
    """Other processes' CPU use over a window: ``others`` is their share of the ``cores`` this
    process may run on
    (0..1; None where /proc/stat cannot be read), ``loadavg`` the 1/5/15-minute load
    averages at its end (context only: they count our own threads too)."""
    others: float | None
    cores: int
    seconds: float
    loadavg: tuple[float, float, float] | None = None

    @property
    def others_cores(self) -> float | None:
        """Other processes' CPU use in cores (share × cores)."""
        return None if self.others is None else self.others * self.cores

    def describe(self) -> str:
        if self.others is None:
            return "other processes' CPU use unknown (no /proc/stat)"
        text = f"other processes used {100 * self.others:.0f}% of the CPU ({self.others_cores:.2f} of {self.cores} cores)"
        if self.loadavg:
            text += f", load average {self.loadavg[0]:.2f}"
        return text

    def to_dict(self) -> dict:
        return {"others": self.others, "cores": self.cores, "seconds": self.seconds,
                "loadavg": list(self.loadavg) if self.loadavg else None}

    @classmethod
    def from_dict(cls, d: dict) -> "LoadReading":
        avg = d.get("loadavg")
        others = d.get("others")
        return cls(others=None if others is None else float(others), cores=int(d["cores"]),
                   seconds=float(d.get("seconds", 0.0)),
                   loadavg=tuple(float(x) for x in avg) if avg else None)


class LoadMeter:
    """How much CPU other processes took while we measured (their share of the cores this
    process may run on)."""

    def __init__(self):
        self.cpus, self.cores = own_cores()
        self.t0 = time.perf_counter()
        self.busy0 = _busy_seconds(self.cpus)
        self.own0 = _own_seconds()

    def others_share(self) -> float | None:
        busy = _busy_seconds(self.cpus)
        if busy is None or self.busy0 is None:
            return None
        wall = time.perf_counter() - self.t0
        if wall <= 0:
            return None
        others = (busy - self.busy0) - (_own_seconds() - self.own0)
        return max(0.0, min(1.0, others / (wall * self.cores)))

    def reading(self) -> LoadReading:
        """The window so far as a :class:`LoadReading`."""
        return LoadReading(others=self.others_share(), cores=self.cores,
                           seconds=time.perf_counter() - self.t0, loadavg=load_average())


class SpareCores:
    """The cores no process used (this one's threads included) between one look and the next:
    where none is spare, a thread that wakes takes its time from one that computes, llama.cpp's
    or another program's (the window slows its live views then: app/shown_run.py)."""

    def __init__(self):
        self.cpus, self.cores = own_cores()
        self._last = (time.perf_counter(), _busy_seconds(self.cpus))

    def look(self) -> float | None:
        """Cores left unused since the last look (None where /proc/stat cannot be read)."""
        now, busy = time.perf_counter(), _busy_seconds(self.cpus)
        (then, before), self._last = self._last, (now, busy)
        if busy is None or before is None or now <= then:
            return None
        return max(0.0, self.cores - (busy - before) / (now - then))
