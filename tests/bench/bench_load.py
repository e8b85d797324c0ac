"""Benchmark (prints figures, asserts nothing): speed with the machine busy.

    python tests/bench/bench_load.py [-n 256] [-r 3] [--loads 0,1,all] [--pairs demo,smollm2]
                                     [--llama-bin build/bin] [--env NAME=VALUE ...]

For each load k (k busy loops started by this script, each one process spinning on the CPU,
bounded by its own deadline and stopped by its PID when the load's runs are done), for each
pair (the demo pair; SmolLM2-135M-Instruct as its own draft, where the real-model tier's copy
is there), runs in turn, round-robin (the order rotated each round), ``-r`` times each:

- SpecScope's default (``specscope run``: threads auto, core/models/threads.py),
- SpecScope with each fixed thread count (``-t N -td N``, N in the counts auto chooses from),
- llama.cpp's ``llama-speculative-simple`` at its default threads, where ``--llama-bin`` names
  a build from the vendored source (docs/conformance.md; repacking off as SpecScope's
  ``--repack auto`` on a CPU with AMX),

and prints the median tokens/s of each (generation only, as each program reports it), the
default's share of the best fixed count (goal: >= 80 % at every k) and its ratio to
llama.cpp's default (goal: > 1 at every k > 0). ``--env`` sets a variable for every program
run (``OMP_WAIT_POLICY=PASSIVE``, ``GOMP_SPINCOUNT=10000``: docs/threads.md compares them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPT = "def parse_args(argv):"
BUSY_S = 900                    # the longest a busy loop lives, whatever happens to this script
RUN_TIMEOUT_S = 300


def busy_loops(k: int) -> list[subprocess.Popen]:
    code = f"import time\nend = time.monotonic() + {BUSY_S}\nwhile time.monotonic() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(k)]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def pairs(names: list[str]) -> dict[str, tuple[Path, Path]]:
    from specscope.core.models.demo import demo_pair
    found = {}
    if "demo" in names:
        found["demo pair"] = demo_pair()
    if "smollm2" in names:
        from helpers.realmodel import folder
        path = Path(os.environ.get("SPECSCOPE_SMOLLM2") or folder() / "SmolLM2-135M-Instruct.Q4_1.gguf")
        if path.is_file():
            found["SmolLM2-135M as its own draft"] = (path, path)
        else:
            print(f"(no {path}: run the real-model tier once, or set SPECSCOPE_SMOLLM2)")
    return found


def specscope(target: Path, draft: Path, n: int, threads: int, env: dict) -> tuple[float, str]:
    """tokens/s and the threads line of one ``specscope run`` (threads 0: the default)."""
    cmd = [sys.executable, "-c", "import sys; from specscope.core.cli.main import main; sys.exit(main())",
           "run", "-m", str(target), "-md", str(draft),
           "-p", PROMPT, "-n", str(n), "--json"]
    if threads:
        cmd += ["-t", str(threads), "-td", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    stats = json.loads(p.stdout)["stats"]
    spans = stats.get("threads") or []
    line = ", ".join(f"{t[1]}+{t[2]}@{t[0]}" for t in spans)
    return stats["tokens_per_s"], line


def llama_cpp(binary: Path, target: Path, draft: Path, n: int, env: dict,
              flags=("--spec-type", "draft-simple")) -> float:
    """tokens/s of one ``llama-speculative-simple`` run (generation only, as it reports it)."""
    return llama_run(binary, target, draft, n, env, flags)[2]


def llama_run(binary: Path, target: Path, draft: Path, n: int, env: dict,
              flags=("--spec-type", "draft-simple")) -> tuple[int, float, float]:
    """One ``llama-speculative-simple`` run: the tokens it generated, their seconds and tokens/s,
    as it reports them (prompt processing excluded)."""
    cmd = [str(binary), "-m", str(target), "-md", str(draft), *flags,
           "-p", PROMPT, "-n", str(n),
           "--temp", "0", "-c", "2048"]
    for _ in range(10):      # llama.cpp's log thread may lose the last lines at exit: again
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=RUN_TIMEOUT_S, env={**env, "LLAMA_ARG_REPACK": "0"})
        m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s",
                      p.stderr)
        if m:
            return int(m.group(1)), float(m.group(2)), float(m.group(3))
    raise SystemExit(f"no speed line from {' '.join(cmd)}:\n{p.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=256)
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--loads", default="0,1,all", help="busy loops: counts, 'all' = every core")
    ap.add_argument("--pairs", default="demo,smollm2")
    ap.add_argument("--llama-bin", type=Path, help="folder with llama-speculative-simple")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for every run")
    ap.add_argument("--only-llama", action="store_true",
                    help="llama.cpp's program alone (another build of it: --llama-bin)")
    a = ap.parse_args()
    from specscope.core.models.threads import candidates, cores
    env = {**os.environ, **dict(e.split("=", 1) for e in a.env)}
    binary = a.llama_bin / "llama-speculative-simple" if a.llama_bin else None
    counts = candidates()
    print(f"{cores()} cores, {os.uname().machine}; -n {a.n}, {a.repeats} runs each, round-robin (rotated)"
          + (f"; env {' '.join(a.env)}" if a.env else ""))
    rows = []
    for load in a.loads.split(","):
        k = cores() if load == "all" else int(load)
        for name, (target, draft) in pairs(a.pairs.split(",")).items():
            runs = {} if a.only_llama else {"default": [], **{f"-t {c}": [] for c in counts}}
            if binary:
                runs["llama.cpp"] = []
            lines = []
            procs = busy_loops(k)
            try:
                time.sleep(0.5 if k else 0)
                labels = list(runs)
                for r in range(a.repeats):      # the order rotated each time: under load a run
                    turn = r % len(labels)      # after a slow one is not like one after a quick one
                    for label in labels[turn:] + labels[:turn]:
                        if label == "llama.cpp":
                            runs[label].append(llama_cpp(binary, target, draft, a.n, env))
                            continue
                        tps, line = specscope(target, draft, a.n, 0 if label == "default"
                                              else int(label.split()[1]), env)
                        runs[label].append(tps)
                        if label == "default":
                            lines.append(line)
            finally:
                stop(procs)
            med = {label: statistics.median(v) for label, v in runs.items()}
            if a.only_llama:
                print(f"k={k} {name:32} llama.cpp {med['llama.cpp']:8.1f} "
                      f"({', '.join(f'{v:.1f}' for v in runs['llama.cpp'])})", flush=True)
                continue
            best = max(med[f"-t {c}"] for c in counts)
            rows.append((k, name, med, best, lines))
            cells = "  ".join(f"{label} {v:8.1f}" for label, v in med.items())
            share = med["default"] / best
            vs = f", {med['default'] / med['llama.cpp']:.2f}x llama.cpp" if binary else ""
            print(f"k={k} {name:32} {cells}  default/best fixed {share:.0%}{vs}", flush=True)
            print(f"      default's threads (target+draft@round): {' | '.join(lines)}", flush=True)
    if a.only_llama:
        return
    print("\n| busy cores | pair | default | " + " | ".join(f"-t {c}" for c in counts)
          + (" | llama.cpp default" if binary else "") + " | default / best fixed |"
          + (" default / llama.cpp |" if binary else ""))
    print("|---" * (4 + len(counts) + (2 if binary else 0)) + "|")
    for k, name, med, best, _ in rows:
        cells = [f"{med['default']:,.1f}"] + [f"{med[f'-t {c}']:,.1f}" for c in counts]
        tail = [f"{med['default'] / best:.0%}"]
        if binary:
            cells.append(f"{med['llama.cpp']:,.1f}")
            tail.append(f"{med['default'] / med['llama.cpp']:.2f}x")
        print(f"| {k} | {name} | " + " | ".join(cells + tail) + " |")


if __name__ == "__main__":
    main()
