"""Benchmark (prints figures, asserts nothing): a round's time beside llama.cpp's own
``llama-speculative-simple``, split into llama.cpp's decodes and the rest (the host code around
them: our Python, its C++), idle, the same pair, prompt, flags and thread counts as
``bench_vs_llama.py``.

    python tests/bench/bench_host_time.py --llama-bin build/bin [-n 256] [-r 5] [-t 1] [--modes ...]

tokens/s moves with the VM's speed from run to run (bench_vs_llama needs a bootstrap interval to
say anything); the decodes' seconds and the host time per round split that ratio into its two
causes. llama.cpp's decodes are timed by a small shim preloaded into its program (LD_PRELOAD,
compiled here with ``cc``: it wraps ``llama_process``, which the program decodes through); ours by
a wrapper around ``llama_cpp.llama_cpp.llama_decode`` in the run's own process (about a
microsecond a call). A decode counts when it starts inside the generation, the last X seconds
before the last decode ends, X the generation time each program reports. Host time per round:
X less those decodes, over the rounds (ours: the run's; llama.cpp's: its target's decodes).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_load import RUN_TIMEOUT_S, llama_run   # (this folder is on the path when run as a script)
from bench_vs_llama import MODES, parse_args, run_args

RECORD = struct.Struct("=ddQ")       # a decode: start, end (seconds, CLOCK_MONOTONIC), context

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define MAX_CALLS 1000000
struct rec { double t0, t1; uint64_t ctx; };
static struct rec recs[MAX_CALLS];
static long n;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int32_t llama_process(void *ctx, int type, void *batch) {
    static int32_t (*real)(void *, int, void *);
    if (!real) real = (int32_t (*)(void *, int, void *)) dlsym(RTLD_NEXT, "llama_process");
    double t0 = now();
    int32_t status = real(ctx, type, batch);
    if (n < MAX_CALLS) { recs[n].t0 = t0; recs[n].t1 = now(); recs[n].ctx = (uint64_t) ctx; n++; }
    return status;
}
__attribute__((destructor)) static void dump(void) {
    const char *path = getenv("SPECSCOPE_SHIM_OUT");
    FILE *f = path ? fopen(path, "wb") : NULL;
    if (f) { fwrite(recs, sizeof recs[0], n, f); fclose(f); }
}
"""

# SpecScope's side: the CLI's run in this process, ll.llama_decode wrapped (time.monotonic is
# CLOCK_MONOTONIC, as the shim's)
OURS = r"""
import contextlib, io, json, sys, time
import llama_cpp.llama_cpp as ll
from specscope.core.cli.main import main
real, calls = ll.llama_decode, []
def timed(ctx, batch):
    t0 = time.monotonic()
    status = real(ctx, batch)
    calls.append((t0, time.monotonic(), 0))
    return status
ll.llama_decode = timed
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(sys.argv[1:])
stats = json.loads(out.getvalue())["stats"]
print(json.dumps({"seconds": stats["t_total"], "tokens": stats["n_tokens"], "rounds": stats["n_rounds"],
                  "calls": calls}))
"""


def split(calls: list[tuple[float, float, int]], seconds: float) -> tuple[list, float]:
    """The decodes that started in the generation (the last ``seconds`` before the last decode
    ended) and the time outside them."""
    end = max(t1 for _, t1, _ in calls)
    inside = [c for c in calls if c[0] >= end - seconds]
    return inside, seconds - sum(t1 - t0 for t0, t1, _ in inside)


def ours(target: Path, draft: Path, flags: list[str], n: int, threads: int) -> dict:
    cmd = [sys.executable, "-c", OURS, *run_args(target, draft, flags, n, threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd[:2])} ... {' '.join(cmd[3:])}:\n{p.stderr[-2000:]}")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    inside, host = split([tuple(c) for c in d["calls"]], d["seconds"])
    return {"tokens": d["tokens"], "rounds": d["rounds"], "decodes": len(inside),
            "decode_s": d["seconds"] - host, "host_s": host, "seconds": d["seconds"]}


def theirs(binary: Path, shim: Path, target: Path, draft: Path, flags: list[str], n: int,
           threads: int, out: Path) -> dict:
    env = {**os.environ, "LD_PRELOAD": str(shim), "SPECSCOPE_SHIM_OUT": str(out)}
    tokens, seconds, _ = llama_run(binary, target, draft, n, env,
                                   [*flags, "-t", str(threads), "-td", str(threads)])
    raw = out.read_bytes()
    calls = [RECORD.unpack_from(raw, i) for i in range(0, len(raw), RECORD.size)]
    inside, host = split(calls, seconds)
    target_ctx = calls[0][2]          # common_init warms the target up first
    return {"tokens": tokens, "rounds": sum(c[2] == target_ctx for c in inside),
            "decodes": len(inside), "decode_s": seconds - host, "host_s": host, "seconds": seconds}


def compile_shim(folder: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("no C compiler (cc) to build the timing shim for llama.cpp's program")
    src, lib = folder / "shim.c", folder / "shim.so"
    src.write_text(SHIM)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(src), "-ldl"], check=True)
    return lib


def main() -> None:
    a, label, target, draft, binary = parse_args(__doc__, threads=1)
    print(f"{os.cpu_count()} cores; {label}, -n {a.n}, -t {a.threads}, {a.repeats} runs each, "
          "alternating; medians per run")
    print("| mode | program | tokens/s | rounds | decodes | decode ms | host ms | host µs per round |\n"
          "|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        shim, out = compile_shim(Path(tmp)), Path(tmp) / "calls.bin"
        for mode in a.modes.split(","):
            common, ours_only = MODES[mode]
            runs = {"SpecScope": [], "llama.cpp": []}
            for i in range(a.repeats):           # who runs first alternates
                order = ("SpecScope", "llama.cpp") if i % 2 == 0 else ("llama.cpp", "SpecScope")
                for who in order:
                    runs[who].append(ours(target, draft, common + ours_only, a.n, a.threads)
                                     if who == "SpecScope" else
                                     theirs(binary, shim, target, draft, common, a.n, a.threads, out))
            for who, rs in runs.items():
                med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
                per_round = statistics.median(r["host_s"] / r["rounds"] for r in rs)
                tps = statistics.median(r["tokens"] / r["seconds"] for r in rs)
                print(f"| {mode} | {who} | {tps:,.0f} | {med['rounds']:.0f} | {med['decodes']:.0f} | "
                      f"{med['decode_s'] * 1e3:.1f} | {med['host_s'] * 1e3:.1f} | {per_round * 1e6:.0f} |",
                      flush=True)


if __name__ == "__main__":
    main()
