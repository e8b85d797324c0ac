"""Benchmark (prints figures, asserts nothing): SpecScope's per-round cost beside llama.cpp's own
``llama-speculative-simple``, idle, the same pair, prompt, flags and thread counts.

    python tests/bench/bench_vs_llama.py --llama-bin build/bin [-n 256] [-r 5] [-t 2] [--pair smollm2]

For draft-simple in SpecScope's reuse sync (its default) and replay sync (llama.cpp's), and each
n-gram type alone with llama.cpp's defaults, runs SpecScope (``specscope run --json``) and
llama.cpp alternately, ``-r`` times each, and prints the median generation tokens/s of each
(as each program reports it: prompt processing excluded), their ratio, and the median of
the paired ratios (each run of ours beside the llama.cpp run next to it) with a 90 % bootstrap
interval: on a VM whose speed drifts, the interval says whether a ratio is above 1. The demo pair and
``-p "def parse_args(argv):"``; repacking off on both sides (LLAMA_ARG_REPACK=0, SpecScope
``--repack off``) so the kernels are the same on every CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

from bench_load import PROMPT, llama_cpp, pairs   # (this folder is on the path when run as a script)
MODES = {"draft-simple reuse": (["--spec-type", "draft-simple"], ["--sync", "reuse"]),
         "draft-simple replay": (["--spec-type", "draft-simple"], ["--sync", "replay"]),
         **{t: (["--spec-type", t], []) for t in
            ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")}}


def run_args(target: Path, draft: Path, flags: list[str], n: int, threads: int) -> list[str]:
    """``specscope run``'s arguments for one run beside llama.cpp's (repacking off as there)."""
    return ["run", "-m", str(target), "-md", str(draft), "-p", PROMPT, "-n", str(n), "--json",
            "-t", str(threads), "-td", str(threads), "--repack", "off", "--no-probe", *flags]


def ours(target: Path, draft: Path, flags: list[str], n: int, threads: int) -> float:
    cmd = [sys.executable, "-c", "import sys; from specscope.core.cli.main import main; sys.exit(main())",
           *run_args(target, draft, flags, n, threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)}:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout)["stats"]["tokens_per_s"]


def theirs(binary: Path, target: Path, draft: Path, flags: list[str], n: int, threads: int) -> float:
    return llama_cpp(binary, target, draft, n, dict(os.environ),
                     [*flags, "-t", str(threads), "-td", str(threads)])


def parse_args(doc: str, threads: int):
    """The options this benchmark and bench_host_time.py share: (the arguments, the pair's label,
    target, draft, llama-speculative-simple's path)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--llama-bin", type=Path, required=True, help="folder with llama-speculative-simple")
    ap.add_argument("-n", type=int, default=256)
    ap.add_argument("-r", "--repeats", type=int, default=5)
    ap.add_argument("-t", "--threads", type=int, default=threads)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--pair", default="demo", choices=("demo", "smollm2"),
                    help="the demo pair, or SmolLM2-135M-Instruct as its own draft (a token ~10x dearer)")
    a = ap.parse_args()
    found = pairs([a.pair])
    if not found:
        raise SystemExit(f"no {a.pair} pair here")
    (label, (target, draft)), = found.items()
    return a, label, target, draft, a.llama_bin / "llama-speculative-simple"


def main() -> None:
    a, label, target, draft, binary = parse_args(__doc__, threads=2)
    print(f"{os.cpu_count()} cores; {label}, -n {a.n}, -t {a.threads}, {a.repeats} runs each, alternating")
    print("| mode | SpecScope tokens/s | llama.cpp tokens/s | SpecScope / llama.cpp | paired ratios: "
          "median (90 % interval) |\n|---|---|---|---|---|")
    for mode in a.modes.split(","):
        common, ours_only = MODES[mode]
        mine, other = [], []
        for i in range(a.repeats):          # who runs first alternates from pair to pair
            if i % 2 == 0:
                mine.append(ours(target, draft, common + ours_only, a.n, a.threads))
            other.append(theirs(binary, target, draft, common, a.n, a.threads))
            if i % 2 == 1:
                mine.append(ours(target, draft, common + ours_only, a.n, a.threads))
        m, o = statistics.median(mine), statistics.median(other)
        lo, mid, hi = paired_interval([x / y for x, y in zip(mine, other)])
        print(f"| {mode} | {m:,.1f} | {o:,.1f} | {m / o:.2f}× | {mid:.2f}× ({lo:.2f}–{hi:.2f}) |",
              flush=True)


def paired_interval(ratios: list[float], draws: int = 2000) -> tuple[float, float, float]:
    """The median of the paired ratios and a 90 % bootstrap interval of it (the machine's speed
    drifts between runs: one median says little without its spread)."""
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return meds[int(0.05 * draws)], statistics.median(ratios), meds[int(0.95 * draws) - 1]


if __name__ == "__main__":
    main()
