"""Thread counts that follow the machine's load, decode by decode (threads "auto").

llama.cpp's CPU backend runs a decode on an OpenMP team whose threads meet at a barrier after
almost every operation. All cores is fastest on an idle machine; once another process takes
one of them, a descheduled thread stalls the team at every barrier and the same decode can
take 10-100x longer (docs/threads.md has the figures). Which count is fastest changes while a
run goes on, so a context whose threads are "auto" carries a :class:`ThreadGovernor`:

- every decode is timed and kept by its shape (the batch's token count: a draft step, a
  verification batch of k tokens, a prompt chunk) and the count that ran it;
- when the last ``STEADY`` decodes of one shape all took more than ``SLOW`` times the best
  that count gave for that shape, the load has changed: the other counts are tried now;
- otherwise the other counts are tried now and then (``FIRST_TRIAL_S``, doubling to
  ``MAX_TRIAL_S`` while the current count keeps winning), so that the count that fits an
  idle machine comes back when the load goes;
- a trial runs a few decodes at the other count and compares each with the current count's
  latest decodes of the same shape; one that is ``ABORT`` times slower ends it at once (under
  load a trial decode at all cores can take a hundred times longer), one whose decodes take
  less than ``FASTER`` of the current count's takes over.

The counts a context ran with, and why they changed, are in :attr:`ThreadGovernor.changes`
(the engine copies them into each round's event). The governor itself calls no llama.cpp
function: ``apply(n)`` (``llama_set_n_threads``) belongs to the context that owns the handle.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable


def cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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
    STEADY = 3            # decodes of one shape that must all be slow to call it a change
    SLOW = 2.0            # slower than a count's own best by this much: the load changed
    TRIAL_DECODES = 4     # comparable decodes a trial count runs (at most twice as many in all)
    ABORT = 3.0           # a trial decode this much slower than the current count's ends it
    FASTER = 0.85         # a trial count whose decodes take less than this share takes over
    FIRST_TRIAL_S = 0.5   # the first periodic trial, and the interval after a change
    MAX_TRIAL_S = 8.0     # the longest interval between periodic trials

    last_choice: int | None = None   # the count the latest change chose, in any context: where
                                     # the next governor starts (a baseline after a run, a reload)

    def __init__(self, counts: tuple[int, ...], apply: Callable[[int], None], start: int | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.counts = tuple(sorted(set(counts), reverse=True))
        self._apply, self.clock = apply, clock
        start = ThreadGovernor.last_choice if start is None else start
        self.current = start if start in self.counts else self.counts[0]
        self.changes: list[ThreadChange] = []
        self.decodes = self.trials = 0
        self.held = 0                  # > 0: no trials (a measurement is timing this count)
        self.slow_while_held = False   # the load changed while held
        self._recent: dict[tuple[int, int], deque] = {}
        self._best: dict[tuple[int, int], float] = {}
        self._trial: list[int] = []            # counts still to try; the first runs now
        self._ratios: list[float] = []         # the running trial's decodes against the current
        self._pairs: list[tuple[float, float]] = []   # and their (seconds, the current's seconds)
        self._trial_n = 0
        self._won: dict[int, float] = {}       # finished trial counts that beat the current
        self._interval = self.FIRST_TRIAL_S
        self._next_trial = None                # first trial once STEADY decodes are in
        self._applied = self.current
        apply(self.current)

    # ------------------------------------------------------------------ the decode's hooks
    def before(self) -> None:
        """Called before a decode: set the count it runs with."""
        if not self._trial and self._due():
            self._start_trial()
        n = self._trial[0] if self._trial else self.current
        if n != self._applied:
            self._apply(n)
            self._applied = n

    def after(self, n_tokens: int, seconds: float) -> None:
        """Called after a decode of ``n_tokens`` that took ``seconds``."""
        self.decodes += 1
        key = (self._applied, shape(n_tokens))
        recent = self._recent.setdefault(key, deque(maxlen=2 * self.STEADY))
        if self._trial:
            self._trial_decode(key, seconds)
            recent.append(seconds)
            return
        recent.append(seconds)
        if len(recent) < self.STEADY:
            return
        last = list(recent)[-self.STEADY:]
        best = self._best.get(key)
        if best is not None and min(last) > self.SLOW * best:
            self._note_slow()
        level = statistics.median(last)
        self._best[key] = level if best is None else min(best, level)
        if self._next_trial is None:
            self._next_trial = self.clock()       # the first trial: right away

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
            self.before()
            yield self
        finally:
            self.held -= 1

    # ------------------------------------------------------------------ trials
    def _due(self) -> bool:
        return (not self.held and len(self.counts) > 1 and self._next_trial is not None
                and self.clock() >= self._next_trial)

    def _note_slow(self) -> None:
        if self.held:
            self.slow_while_held = True
        else:
            self._next_trial = self.clock()          # the load changed: try the others now

    def _start_trial(self) -> None:
        self.trials += 1
        self._trial = [n for n in self.counts if n != self.current]
        self._ratios, self._pairs, self._trial_n, self._won = [], [], 0, {}

    def _trial_decode(self, key: tuple[int, int], seconds: float) -> None:
        """One decode at the trial count: against the current count's latest of that shape."""
        self._trial_n += 1
        mine = self._recent.get((self.current, key[1]))
        if mine:
            ref = statistics.median(list(mine)[-self.STEADY:])
            self._ratios.append(seconds / max(ref, 1e-9))
            self._pairs.append((seconds, ref))
        if self._ratios and self._ratios[-1] > self.ABORT:
            return self._next_count()                        # far slower: no more of it
        if len(self._ratios) >= self.TRIAL_DECODES or self._trial_n >= 2 * self.TRIAL_DECODES:
            if self._ratios and statistics.median(self._ratios) < self.FASTER:
                mine, theirs = (statistics.median(x) for x in zip(*self._pairs))
                self._won[self._trial[0]] = (statistics.median(self._ratios), mine, theirs)
            self._next_count()

    def _next_count(self) -> None:
        tried = self._trial.pop(0)
        self._forget(tried)
        self._ratios, self._pairs, self._trial_n = [], [], 0
        if self._trial:
            return
        if self._won:
            new = min(self._won, key=lambda n: self._won[n][0])
            _, mine, theirs = self._won[new]
            self.changes.append(ThreadChange(self.decodes, self.current, new,
                                             f"{mine * 1e3:.2f} ms per decode against "
                                             f"{theirs * 1e3:.2f} ms"))
            self.current = ThreadGovernor.last_choice = new
            self._interval = self.FIRST_TRIAL_S
        else:
            self._interval = min(2 * self._interval, self.MAX_TRIAL_S)
        self._forget(self.current)        # the current count's best is learnt anew: the load moved
        self._next_trial = self.clock() + self._interval

    def _end_trial(self) -> None:
        if self._trial:
            self._trial = []
            self._next_trial = self.clock() + self._interval

    def _forget(self, count: int) -> None:
        """A count's best belongs to the load it was measured under."""
        for key in [k for k in self._best if k[0] == count]:
            del self._best[key]
