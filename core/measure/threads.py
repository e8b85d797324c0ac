"""How many threads a context decodes fastest with, measured rather than assumed.

llama.cpp's CPU backend, as built here, runs every decode on an OpenMP (libgomp) team, and
its threads meet at a barrier after almost every operation (``ggml_barrier`` is ``#pragma omp
barrier``); a waiting thread spins before it sleeps. On an idle machine that makes all cores
the fastest choice (the CLI's default). On a machine busy with other work it is the slowest:
a thread whose partner lost its core spins away its own time slice at each barrier. On this
project's 2-core VM, loaded by other jobs (load average 6-15), SmolLM2-135M Q4_1 took 42-54 ms
per token on 1 thread and 190-380 ms on 2. Which count is fastest depends on the machine and
on what else runs on it, so the window measures it when it loads a pair (``fastest_threads``).
"""

from __future__ import annotations

import os
import statistics
import time

import llama_cpp.llama_cpp as ll

from specscope.core.models.llama import Batch, Context

BUDGET_S = 0.5           # the measurement's time budget per context
MIN_EACH, MAX_EACH = 3, 8


def candidates(n_cores: int | None = None) -> tuple[int, ...]:
    """All cores, all but one, half of them (most first)."""
    n = max(1, n_cores or os.cpu_count() or 1)
    return tuple(dict.fromkeys((n, max(1, n - 1), max(1, n // 2))))


def set_threads(ctx: Context, n: int) -> None:
    ll.llama_set_n_threads(ctx.ptr, n, n)


def fastest_threads(ctx: Context, counts: tuple[int, ...] | None = None,
                    budget_s: float = BUDGET_S) -> tuple[int, dict[int, float]]:
    """Time single-token decodes (the draft loop's and the baseline's shape) with each thread
    count, taking turns, and leave ``ctx`` set to the fastest. Returns it and the median
    seconds per decode of each count still in the race at the end. A count more than twice
    as slow as the best is dropped early (on a busy machine one such decode can take
    seconds). The context's memory is cleared before and after (a run's prefill clears it
    anyway)."""
    counts = sorted(counts or candidates())          # fewest first: the safe one sets the pace
    token = max(0, ctx.model.bos)
    times: dict[int, list[float]] = {}
    pos = 0
    ctx.clear()
    with Batch(1) as batch:
        def decode(n: int) -> float:
            nonlocal pos
            set_threads(ctx, n)
            batch.fill([token], pos, logits="all")
            t0 = time.perf_counter()
            ctx.decode(batch, "measuring the thread count")
            pos += 1
            return time.perf_counter() - t0

        def best() -> float:
            return min(statistics.median(t) for t in times.values())
        try:
            for n in counts:
                warm_up = decode(n)                  # the graph, a team of this size
                if times and warm_up > 5 * best():
                    continue
                times[n] = [decode(n)]
            end = time.perf_counter() + budget_s
            for i in range(1, MAX_EACH):
                if len(times) < 2 or (i >= MIN_EACH and time.perf_counter() > end):
                    break
                for n in list(times):
                    times[n].append(decode(n))
                limit = 2 * best()
                times = {n: t for n, t in times.items() if statistics.median(t) <= limit}
        finally:
            ctx.clear()
    medians = {n: statistics.median(t) for n, t in times.items() if t}
    fastest = min(medians, key=medians.get) if medians else counts[-1]
    set_threads(ctx, fastest)
    return fastest, medians
