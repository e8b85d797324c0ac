"""Thread counts that follow the machine's load, decode by decode (threads "auto").

llama.cpp's CPU backend runs a decode on an OpenMP team whose threads meet at a barrier after
almost every operation. All cores is fastest on an idle machine; once another process takes
one of them, a descheduled thread stalls the team at every barrier and the same decode can
take 10-100x longer (docs/threads.md has the figures). Which count is fastest changes while a
run goes on, so a context whose threads are "auto" carries a :class:`ThreadGovernor`:

- every decode is timed and kept by its shape (the batch's token count: a draft step, a
  verification batch of k tokens, a prompt chunk) and the count that ran it;
- when the mean of the last ``STEADY`` decodes of one shape is more than ``SLOW`` times the
  best that count gave for that shape, the load has changed: the other counts are tried now;
- otherwise the other counts are tried now and then (``FIRST_TRIAL_S``, doubling to
  ``MAX_TRIAL_S`` while the current count keeps winning, ``MAX_UP_S`` for more threads; more
  ``BACK_UP_S`` after a move to fewer while moves up hold, as a blip moves down too), so
  that the count that fits an idle machine comes back when the load goes; more threads are
  not tried while other processes' runnable threads hold the cores they would need;
- a trial runs a few decodes at the other count and compares them with the current count's
  latest decodes of the same shapes; one that is ``ABORT`` times slower ends it at once (under
  load a trial decode at all cores can take a hundred times longer), a count whose decodes take
  less than ``FASTER`` of the current count's time takes over (a count with fewer threads at
  once when two decodes took less than half: being at too many threads under load costs far
  more than being at too few on an idle machine);
- a decode during which this process's own UI thread worked (a window painting) is left out:
  those short stretches are not a load, and over a run the count that fits an idle machine
  stays the fastest (``Foreground``);
- a context starts at the most threads the cores that other work leaves free can run (Linux's
  count of runnable threads, read when it is made), so that a run on a busy machine does not
  begin with stalls; trials of more threads come ever more rarely while moves up do not hold,
  except that each run tries them soon after it starts (``run_starts``).

Timings are compared by their means, not medians: under load most decodes at all cores may be
quick and one in a few stalls for milliseconds, and the stalls are what a run pays.

The counts a context ran with, and why they changed, are in :attr:`ThreadGovernor.changes`
(the engine copies them into each round's event). The governor itself calls no llama.cpp
function: the context that owns the handle sets the count ``before`` returns
(``llama_set_n_threads``). The contexts an engine decodes on one thread (target, draft, head,
MTP blocks) share one governor: they share that thread's OpenMP team, so the load hits them
alike, and a draft decoding on fewer threads than its target makes the target's team wake up
from sleep at each of its decodes (2+1 threads ran 5 % slower than 2+2 on the demo pair idle,
and 12 % slower in the window, though the draft's own decodes were faster at 1).
"""

from __future__ import annotations

import math
import os
import statistics
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Callable


# a CPU quota (Docker's --cpus, systemd's CPUQuota=): the cgroup folders, and which ones hold
# this process (cgroup v2: "0::/path"; v1: "N:cpu,cpuacct:/path")
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _cgroup_dirs() -> list[str]:
    """This process's cgroup folders that may hold a CPU quota, each from its own up to its
    hierarchy's root (a limit on a parent holds too): v2's unified hierarchy and v1's cpu
    controller; the roots alone where /proc/self/cgroup cannot be read."""
    dirs = []
    for line in (_read(PROC_CGROUP) or "").splitlines():
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hid == "0" and not controllers:
            bases = [CGROUP_ROOT]
        elif "cpu" in controllers.split(","):
            bases = [f"{CGROUP_ROOT}/{controllers}", f"{CGROUP_ROOT}/cpu", f"{CGROUP_ROOT}/cpu,cpuacct"]
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for base in dict.fromkeys(bases):
            dirs += ["/".join([base, *parts[:i]]) for i in range(len(parts), -1, -1)]
    return list(dict.fromkeys(dirs)) or [CGROUP_ROOT, f"{CGROUP_ROOT}/cpu", f"{CGROUP_ROOT}/cpu,cpuacct"]


def _quota_in(folder: str) -> float | None:
    """CPUs of the quota set in one cgroup folder (v2 cpu.max, v1 cfs quota ÷ period), or None."""
    v2 = _read(f"{folder}/cpu.max")
    if v2:
        quota, _, period = v2.partition(" ")
    else:
        quota, period = _read(f"{folder}/cpu.cfs_quota_us"), _read(f"{folder}/cpu.cfs_period_us")
    try:
        q, p = int(quota), int(period)
    except (TypeError, ValueError):     # "max", unreadable: none here
        return None
    return q / p if q > 0 and p > 0 else None


def cpu_quota() -> int | None:
    """The CPUs a cgroup CPU quota lets this process keep busy (the smallest quota on its
    cgroup's path, rounded down, at least 1), or None where there is none. A container started
    with --cpus=2 on a 16-core host sees 16 cores in its affinity mask; 16 threads there, or 2
    under --cpus=1.5, would meet at their barriers throttled for the rest of each period."""
    quotas = [q for q in map(_quota_in, _cgroup_dirs()) if q is not None]
    return max(1, math.floor(min(quotas))) if quotas else None


def affinity_mask() -> frozenset[int] | None:
    """The CPUs this process may run on, where its affinity mask holds fewer than the machine
    has (taskset, a container's cpuset); None: all of them, or no mask to read."""
    try:
        mine = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None
    return frozenset(mine) if len(mine) < (os.cpu_count() or 0) else None


def _affinity() -> int:
    """The cores in this process's affinity mask (all of the machine's where there is none)."""
    mask = affinity_mask()
    return len(mask) if mask else max(1, os.cpu_count() or 1)


def cores() -> int:
    """The cores this process may run on: its affinity mask, at most what a CPU quota allows."""
    n, quota = _affinity(), cpu_quota()
    return min(n, quota) if quota else n


def candidates(n_cores: int | None = None) -> tuple[int, ...]:
    """The counts "auto" chooses from: all cores, all but one, half of them (most first)."""
    n = max(1, n_cores or cores())
    return tuple(dict.fromkeys((n, max(1, n - 1), max(1, n // 2))))


def shape(n_tokens: int) -> int:
    """A decode's shape: its token count up to 8 (a draft step, a verification batch), then
    buckets (prompt chunks), so that only like decodes are compared."""
    if n_tokens <= 8:
        return n_tokens
    return next(b for b in (16, 64, 256, 1 << 30) if n_tokens <= b)


def runnable_others(samples: int = 5, gap_s: float = 0.002) -> float:
    """Threads of other processes runnable now (Linux: /proc/loadavg's count of runnable
    threads less this process's own, from /proc/self/task), averaged over a few readings; 0
    where they cannot be read."""
    seen = []
    for i in range(samples):
        try:
            with open("/proc/loadavg", encoding="ascii") as f:
                running = int(f.read().split()[3].split("/")[0])
            seen.append(max(0, running - _own_running()))
        except (OSError, ValueError, IndexError):
            return 0.0
        if i + 1 < samples:
            time.sleep(gap_s)
    return statistics.fmean(seen)


def _own_running() -> int:
    """This process's threads in state R (the one reading, OpenMP threads still spinning)."""
    n = 0
    for task in os.scandir("/proc/self/task"):
        try:
            with open(f"{task.path}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        n += stat[stat.rindex(")") + 2:stat.rindex(")") + 3] == "R"
    return max(1, n)


def fitting(counts: tuple[int, ...], samples: int = 5) -> int:
    """The most threads that the cores other work leaves free can run (at least the fewest):
    where a context starts, and how far a trial of more threads may go. Linux counts runnable
    threads machine-wide: where this process's affinity mask holds only some of the machine's
    cores, its share of them is counted, the others spread evenly."""
    mask, machine = _affinity(), max(1, os.cpu_count() or 1)
    others = runnable_others(samples) * min(1.0, mask / machine)
    busy = int(others + 0.2)                      # a core busy in most readings (not a blip)
    free = max(1, min(cores(), mask - busy))      # under a quota its threads may use any idle core
    return max((n for n in counts if n <= free), default=min(counts))


def mean_without_slowest(times) -> float:
    """The mean without the slowest (of three or more): a stall that comes now and then (the
    window's own UI thread painting on a core) is not a load, one in most decodes is."""
    if len(times) < 3:
        return statistics.fmean(times)
    return (sum(times) - max(times)) / (len(times) - 1)


class Foreground:
    """This process's UI thread, where it has one (a window's), whose CPU time a governor reads
    around each decode, so that it can leave out the decodes that shared a core with it. With as
    many threads as cores, the UI thread takes a core from llama.cpp's team while it works, and
    the team's decodes stall meanwhile as under another process's load; but that work comes in
    short stretches a few times a second, and a count that fits an idle machine stays the
    fastest over a run. Judged with those decodes, trials moved the window to one thread per
    model on an idle machine in 3 of 8 runs of ``bench_gui.py`` (two of them stayed there, at
    54-73 % of the CLI). Read with ``clock_gettime`` on the thread's CPU clock (0.2 µs), before
    and after each decode. Where Python has no ``pthread_getcpuclockid`` (Windows, macOS) it
    follows nothing, and every decode is judged as before."""
    SHARE = 0.1       # the UI thread ran for this share of a decode's time or more: it shared

    def __init__(self):
        self._clock: int | None = None
        self.ident: int | None = None

    def follow(self) -> None:
        """Called on the UI thread (app/main.py): from now on its CPU time is read."""
        try:
            self._clock = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):      # no per-thread CPU clocks here (not POSIX)
            return
        self.ident = threading.get_ident()

    def cpu(self) -> float | None:
        """The UI thread's CPU seconds so far; None without one, or on that thread itself (a
        decode there is the UI's own work, as in the tests' main thread)."""
        clock = self._clock
        if clock is None or threading.get_ident() == self.ident:
            return None
        try:
            return time.clock_gettime(clock)
        except OSError:                        # that thread has ended
            self._clock = None
            return None


FOREGROUND = Foreground()     # this process's UI thread, where it has one (app/main.py)


@dataclass(frozen=True)
class ThreadChange:
    """The count a context moved to, after which of its decodes, and why (in words)."""
    decode: int
    old: int
    new: int
    why: str

    def describe(self) -> str:
        return f"{self.old} → {self.new} threads after decode {self.decode}: {self.why}"


class ThreadGovernor:
    """Chooses, before each decode, the thread count it runs with (module docs)."""
    STEADY = 3            # the recent decodes of one shape whose mean is compared with its best
    SLOW = 2.0            # slower than a count's own best by this much: the load changed
    TRIAL_DECODES = 4     # comparable decodes a trial runs ...
    UP = 2                # ... times this for more threads: under load a few of their decodes
                          # may pass between stalls
    MIN_TRIAL_S = 0.002   # ... and as many as the current count takes this long for (a draft's
                          # decode of 0.15 ms is too short to judge by four)
    MAX_TRIAL_DECODES = 32
    ABORT = 3.0           # a trial decode this much slower than the current count's ends it
    FASTER = 0.85         # a trial count whose decodes take less than this share takes over
    DECISIVE = 0.5        # ... after two decodes when it has fewer threads (the harmless way)
    UP_LOST = 1.5         # a trial of more threads this much slower over three decodes ends
    FIRST_TRIAL_S = 0.5   # the first periodic trial, and the interval after a change
    MAX_TRIAL_S = 16.0    # the longest interval between trials of fewer threads
    MAX_UP_S = 32.0       # ... and of more threads (each one under load can cost a stall)
    HELD_S = 8.0          # a move to more threads that holds this long resets their interval
    UI_WINDOW = 256       # decodes over which ...
    UI_MOST = 0.25        # ... at most this share that shared a core with the UI thread are left
                          # out (Foreground); more is a load
    BACK_UP_S = 0.1       # after a move to fewer: the first trial of more, while moves up hold (a
                          # blip moves down as a load does: 2 of 7 window runs went 2+2 -> 1+1 on
                          # an idle VM and stayed there 0.5 s, at 60 % of the speed)

    def __init__(self, counts: tuple[int, ...], start: int | None = None,
                 clock: Callable[[], float] = time.perf_counter, foreground: Foreground | None = None):
        self.counts = tuple(sorted(set(counts), reverse=True))
        self.clock, self.foreground = clock, foreground or FOREGROUND
        if start is None:
            start = fitting(self.counts)
        self.current = start if start in self.counts else self.counts[0]
        self.changes: list[ThreadChange] = []
        self.decodes = self.trials = 0
        self.held = 0                  # > 0: no trials (a measurement is timing this count)
        self.slow_while_held = False   # the load changed while held (_held_check)
        self._recent: dict[tuple[int, int, int], deque] = {}     # (count, context, shape)
        self._shapes: set[tuple[int, int]] = set()
        self._last_size: dict[int, tuple[int, bool]] = {}   # held: each context's last decode
        self._held: dict[tuple, deque] = {}            # held: recent decodes of each kind
        self._best_typical: dict[tuple, float] = {}    # ... and each kind's lowest median
        self._best: dict[tuple[int, int, int], float] = {}
        self._trial: list[int] = []            # counts still to try; the first runs now
        self._kind = "down"                    # the running trial's: fewer or more threads
        self._pairs: list[tuple[float, float]] = []   # its decodes: (seconds, the current's mean)
        self._trial_n = 0
        self._won: dict[int, tuple[float, float, float]] = {}   # counts that beat the current
        self._interval = {"down": self.FIRST_TRIAL_S, "up": self.FIRST_TRIAL_S}
        self._next = {"down": None, "up": None}      # when each kind of trial is due
        self._due = math.inf                         # the earliest of them
        self._moved_up_at = None
        self._applied = self.current
        self._ui_cpu: float | None = None     # the UI thread's CPU time when this decode began
        self._ui_recent: deque = deque(maxlen=self.UI_WINDOW)   # whether each decode shared
        self._ui_many = 0                                      # ... and how many did

    # ------------------------------------------------------------------ the decode's hooks
    def before(self) -> int:
        """Called before a decode: the count it runs with (its context sets it)."""
        if not self._trial and not self.held and self.clock() >= self._due:
            self._start_due_trial()
        self._applied = self._trial[0] if self._trial else self.current
        self._ui_cpu = self.foreground.cpu()
        return self._applied

    def after(self, n_tokens: int, seconds: float, tag: int = 0, outputs: bool = True) -> None:
        """Called after a decode of ``n_tokens`` that took ``seconds``; ``tag``: which of the
        contexts that share this governor decoded (each has its own shapes); ``outputs``:
        whether it computed logits."""
        self.decodes += 1
        key = (self._applied, tag, n_tokens if n_tokens <= 8 else shape(n_tokens))
        if self._ui_shared(seconds):          # the UI thread took a core meanwhile: not a load
            if self.held:                     # the next decode of this context follows this one
                self._last_size[tag] = (key[2], outputs)
            elif self._trial:                 # a trial still ends within MAX_TRIAL_DECODES
                self._trial_n += 1
                if self._trial_n >= self.MAX_TRIAL_DECODES:
                    self._end_trial(soon=True)
            return
        if self.held:
            self._held_check(key, outputs, seconds)
        recent = self._recent.get(key)
        if recent is None:
            if key[1:] not in self._shapes:  # the first decode of a shape builds its graph: untimed
                self._shapes.add(key[1:])
                return
            recent = self._recent[key] = deque(maxlen=2 * self.STEADY)
        if self._trial:
            self._trial_decode(key, seconds)
            recent.append(seconds)
            return
        recent.append(seconds)
        if len(recent) < self.STEADY:
            return
        if self._next["down"] is None:      # the first trials: fewer threads at once (cheap, and
            now = self.clock()              # what a loaded machine needs), more a little later
            self._schedule(down=now, up=now + self.FIRST_TRIAL_S)
        level = sum(islice(reversed(recent), self.STEADY)) / self.STEADY
        best = self._best.get(key)
        slow = best is not None and level > self.SLOW * best
        if slow and not self.held:
            self._schedule(down=self.clock())          # the load changed: try fewer threads now
        self._best[key] = level if best is None else min(best, level)

    def _ui_shared(self, seconds: float) -> bool:
        """Whether this process's UI thread ran for SHARE of this decode's time or more (its CPU
        clock read before and after the decode), while such decodes stay a few (UI_MOST of the
        last UI_WINDOW): a UI thread that works all the time is a load like any other."""
        ui, start = self.foreground.cpu(), self._ui_cpu
        if ui is None or start is None:
            return False
        shared = ui - start >= self.foreground.SHARE * seconds
        recent = self._ui_recent
        if len(recent) == recent.maxlen:
            self._ui_many -= recent[0]
        recent.append(shared)
        self._ui_many += shared
        return shared and self._ui_many <= self.UI_MOST * recent.maxlen

    def _held_check(self, key: tuple[int, int, int], outputs: bool, seconds: float) -> None:
        """During a measurement the load changed when the typical decode of a kind (the median
        of its last 2·STEADY) is SLOW times the kind's best typical one. A measurement mixes
        decodes on purpose, so a kind here is also whether the decode computed logits (a tiny
        model's output head is much of its decode) and whether it followed a decode of another
        shape (llama.cpp then rebuilds its graph: on the demo pair's draft 200-270 µs against a
        step's 60-110). Compared by shape alone, with the mean of three, every calibration on
        threads auto was called loaded on an idle machine."""
        size = (key[2], outputs)
        rebuilt, self._last_size[key[1]] = self._last_size.get(key[1]) != size, size
        key = (*key, outputs, rebuilt)
        recent = self._held.get(key)
        if recent is None:
            recent = self._held[key] = deque(maxlen=2 * self.STEADY)
        recent.append(seconds)
        if len(recent) < recent.maxlen:
            return
        typical = statistics.median(recent)
        low = self._best_typical.get(key)
        self.slow_while_held |= low is not None and typical > self.SLOW * low
        self._best_typical[key] = typical if low is None else min(low, typical)

    def run_starts(self) -> None:
        """A run begins (the engine calls it): where fewer threads than the most run now, more
        are tried within BACK_UP_S, whatever the interval their trials had backed off to. A blip
        that moved the count down during the run before (another program's moment, the window
        painting) otherwise held whole idle runs at fewer threads: 1 of 8 window runs on an
        idle VM at 1+1 throughout, at 66 % of the CLI's 2+2. The interval stays as it was for
        the rest of the run, and more threads are tried only where other processes leave the
        cores free (``_free_for``), so a steady load costs no stall."""
        if self.current < self.counts[0] and not self.held and self._next["up"] is not None:
            self._schedule(up=min(self._next["up"], self.clock() + self.BACK_UP_S))

    @property
    def running(self) -> int:
        """The count the last decode ran with (a trial's, during a trial)."""
        return self._applied

    @contextmanager
    def hold(self):
        """No trials while a measurement times the current count; ``slow_while_held`` says
        whether the decodes slowed down as a change of load does, meanwhile."""
        self.held += 1
        self.slow_while_held = False
        try:
            self._end_trial()
            yield self
        finally:
            self.held -= 1

    # ------------------------------------------------------------------ trials
    def _others(self, kind: str) -> list[int]:
        if kind == "down":
            return [n for n in self.counts if n < self.current]
        return [n for n in reversed(self.counts) if n > self.current]     # the nearest first

    def _free_for(self, counts: list[int]) -> list[int]:
        """Of more threads, those the cores other processes leave free can run now: under a
        steady load a trial of more would only buy a stall."""
        free = fitting(self.counts, samples=2)
        return [n for n in counts if n <= free]

    def _start_due_trial(self) -> None:
        now = self.clock()
        for kind in ("down", "up"):
            due = self._next[kind]
            if due is None or now < due:
                continue
            if not self._others(kind):           # none of that kind from here: until a move
                self._schedule(**{kind: math.inf})
                continue
            counts = self._others(kind) if kind == "down" else self._free_for(self._others(kind))
            if not counts:                       # no core free for more: as a trial lost
                self._back_off(kind)
                self._schedule(**{kind: now + self._interval[kind]})
                continue
            self.trials += 1
            self._kind, self._trial = kind, counts
            self._pairs, self._trial_n, self._won = [], 0, {}
            return

    def _trial_decode(self, key: tuple[int, int, int], seconds: float) -> None:
        """One decode at the trial count, against the current count's recent ones of its shape.
        A trial of more threads does not count its first decode (it wakes the threads that
        slept: 30-50 % slower on the demo pair) and is called lost early only when UP_LOST times
        slower over three, not when slower over two: a round's draft steps come first, which
        more threads do not speed up where its verification batch gains most (the window, once
        down at 1+1 on an idle VM, lost every trial of 2+2 on its first two draft steps and
        stayed at 1+1, 700 tokens/s against 1,000-1,170 at 2+2). A decode of a shape the current count has not run yet
        ends the trial without a verdict: judged on the rest, a trial of one thread early in a
        run compared the draft steps alone (one thread's as fast) and moved the CLI to 1+1 at
        its sixth round in 3 of 9 idle runs, at 45-65 % of 2+2's speed."""
        self._trial_n += 1
        down = self._kind == "down"
        mine = self._recent.get((self.current, *key[1:]))
        if not mine:                # a shape the current count has not run: the trial cannot
            return self._end_trial(soon=True)    # judge the round (below): it judges nothing
        ref = mean_without_slowest(mine)
        if seconds > self.ABORT * ref:
            return self._next_count()                      # far slower: no more of it
        if down or self._trial_n > 1:
            self._pairs.append((seconds, ref))
        share = sum(t for t, _ in self._pairs) / max(sum(r for _, r in self._pairs), 1e-12)
        enough = self.TRIAL_DECODES * (1 if down else self.UP)
        timed = sum(r for _, r in self._pairs) >= self.MIN_TRIAL_S     # tiny decodes: more of them
        decisive = down and len(self._pairs) >= 2 and timed and share < self.DECISIVE
        lost = (len(self._pairs) >= 2 and share > 1.0) if down else \
            (len(self._pairs) >= 3 and share > self.UP_LOST)             # slower so far: no more
        if (decisive or lost or (len(self._pairs) >= enough and timed)
                or self._trial_n >= self.MAX_TRIAL_DECODES):
            if self._pairs and share < self.FASTER:
                mine_s, theirs_s = (statistics.fmean(x) for x in zip(*self._pairs))
                self._won[self._trial[0]] = (share, mine_s, theirs_s)
            self._next_count()

    def _next_count(self) -> None:
        tried = self._trial.pop(0)
        self._forget(tried)
        self._pairs, self._trial_n = [], 0
        if self._trial:
            return
        kind, now = self._kind, self.clock()
        if self._won:
            new = min(self._won, key=lambda n: self._won[n][0])
            _, mine, theirs = self._won[new]
            self.changes.append(ThreadChange(self.decodes, self.current, new,
                                             f"{mine * 1e3:.2f} ms per decode against "
                                             f"{theirs * 1e3:.2f} ms"))
            self._moved(new, now)
        else:
            self._back_off(kind)
        self._forget(self.current)        # the current count's best is learnt anew: the load moved
        up = self._interval["up"]
        if self._won and kind == "down" and up <= self.FIRST_TRIAL_S:
            up = self.BACK_UP_S            # moved down, and moves up have held: look back soon
        self._schedule(down=now + self._interval["down"], up=now + up)

    def _moved(self, new: int, now: float) -> None:
        """To ``new`` threads. More threads are tried again ever more rarely while the moves
        up do not hold (a machine whose load comes and goes), as soon as one held HELD_S."""
        up = new > self.current
        if not up and self._moved_up_at is not None:
            held = now - self._moved_up_at >= self.HELD_S
            self._interval["up"] = (self.FIRST_TRIAL_S if held
                                    else min(2 * self._interval["up"], self.MAX_UP_S))
        self._moved_up_at = now if up else None
        self._interval["down"] = self.FIRST_TRIAL_S
        self.current = new

    def _back_off(self, kind: str) -> None:
        """That kind of trial lost (or could not run): twice as long until the next one."""
        limit = self.MAX_TRIAL_S if kind == "down" else self.MAX_UP_S
        self._interval[kind] = min(2 * self._interval[kind], limit)

    def _end_trial(self, soon: bool = False) -> None:
        """No verdict: that kind is tried again after its interval (``soon``: at most
        FIRST_TRIAL_S, the trial having been cut short by a shape it could not compare)."""
        if self._trial:
            self._trial = []
            wait = self._interval[self._kind]
            if soon:
                wait = min(wait, self.FIRST_TRIAL_S)
            self._schedule(**{self._kind: self.clock() + wait})

    def _schedule(self, **due: float) -> None:
        self._next.update(due)
        self._due = min((t for t in self._next.values() if t is not None), default=math.inf)

    def _forget(self, count: int) -> None:
        """A count's best belongs to the load it was measured under."""
        for key in [k for k in self._best if k[0] == count]:
            del self._best[key]
