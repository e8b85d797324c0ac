"""Benchmark (prints figures, asserts nothing): the first result of a new pair, idle and busy.

    python tests/bench/bench_cold_start.py [-m TARGET -md DRAFT] [-n 4] [-r 3] [--loads 0,1]

The wall time of a whole ``specscope run -n 4`` process, from its start to its exit, for a
pair SpecScope has never seen (a fresh cache: the crash probe runs in its child process) and
again with that cache (warm), with k busy loops on the machine (started by this script,
bounded by their own deadline, stopped by their PIDs). Threads auto (the default) beside
``-t N -td N`` at all cores (what the command line ran before threads auto). Defaults to
SmolLM2-135M-Instruct as its own draft where the real-model tier's copy is there, else the
demo pair. With ``--profile`` one cold run per load is profiled (cProfile, the top functions
by cumulative time), to see where the time goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_load import busy_loops, pairs, stop  # noqa: E402

CLI = "import sys; from specscope.core.cli.main import main; sys.exit(main())"


def one(target: Path, draft: Path, n: int, threads: int, cache: str, profile: str = "") -> float:
    cmd = [sys.executable, *(["-m", "cProfile", "-o", profile] if profile else []), "-c", CLI,
           "run", "-m", str(target), "-md", str(draft), "-p", "Hello", "-n", str(n)]
    if threads:
        cmd += ["-t", str(threads), "-td", str(threads)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "SPECSCOPE_CACHE_DIR": cache})
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", type=Path)
    ap.add_argument("-md", "--model-draft", type=Path)
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--loads", default="0,1")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    from specscope.core.models.threads import cores
    if a.model:
        name, (target, draft) = a.model.name, (a.model, a.model_draft or a.model)
    else:
        found = pairs(["demo", "smollm2"])
        name = next(reversed(found))
        target, draft = found[name]
    print(f"{name}, -n {a.n}, {cores()} cores; seconds from process start to exit, "
          f"median of {a.repeats}")
    print("| busy cores | threads | cold (new pair) | warm |")
    print("|---|---|---|---|")
    for load in a.loads.split(","):
        k = cores() if load == "all" else int(load)
        procs = busy_loops(k)
        try:
            time.sleep(0.5 if k else 0)
            for label, threads in (("auto (default)", 0), (f"-t {cores()} (before)", cores())):
                cold, warm = [], []
                for _ in range(a.repeats):
                    with tempfile.TemporaryDirectory() as cache:
                        cold.append(one(target, draft, a.n, threads, cache))
                        warm.append(one(target, draft, a.n, threads, cache))
                print(f"| {k} | {label} | {statistics.median(cold):.2f} "
                      f"({min(cold):.2f}-{max(cold):.2f}) | {statistics.median(warm):.2f} "
                      f"({min(warm):.2f}-{max(warm):.2f}) |", flush=True)
            if a.profile:
                import pstats
                with tempfile.TemporaryDirectory() as cache:
                    out = Path(cache) / "profile"
                    one(target, draft, a.n, 0, cache, str(out))
                    print(f"\nk={k}, auto, cold: top 15 by cumulative time")
                    pstats.Stats(str(out)).sort_stats("cumulative").print_stats(15)
        finally:
            stop(procs)


if __name__ == "__main__":
    main()
