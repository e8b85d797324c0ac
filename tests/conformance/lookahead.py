"""Conformance check (a script, not a test): SpecScope's lookahead against llama.cpp's own
``llama-lookahead`` (examples/lookahead, built from llama-cpp-python 0.3.36's source: ``cmake
--build build --target llama-lookahead``), greedy, at its fixed W = 15, N = 5, G = 15.

llama-lookahead prints every token as it emits it, an accepted one (taken from a verified
n-gram) in light cyan (``ESC[0;96m … ESC[0m``). Each of SpecScope's rounds is its first token
plain and its accepted tokens in cyan, so the two printed streams are equal exactly when every
round emitted the same tokens and accepted the same ones. llama-lookahead emits past -n; the
comparison is over SpecScope's tokens.

    python tests/conformance/lookahead.py --binary build/bin/llama-lookahead [--write-golden FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.models.demo import demo_pair

PROMPTS = [
    "def parse_args(argv):",
    "class Queue:\n    def __init__(self, maxsize=0):\n",
    "import os\nimport sys\n\n\ndef main():\n",
    "The history of the Roman Empire",
]
CYAN, RESET = "\033[0;96m", "\033[0m"
N_CTX = 2048


def llama_stream(binary: Path, target: Path, prompt: str, n: int) -> tuple[str, dict]:
    """What llama-lookahead printed after the prompt, and its totals."""
    cmd = [str(binary), "-m", str(target), "-p", prompt, "-n", str(n), "--temp", "0",
           "-c", str(N_CTX), "-t", "1"]
    p = subprocess.run(cmd, capture_output=True, timeout=600,
                       env={**os.environ, "LLAMA_ARG_REPACK": "0"})
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)}:\n{p.stderr.decode(errors='replace')[-3000:]}")
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    start = out.index(prompt) + len(prompt)
    totals = {k: int(re.search(rf"{k}\s*=\s*(\d+)", err).group(1)) for k in ("n_predict", "n_accept")}
    return out[start:], totals


def our_stream(engine: Engine, prompt: str, n: int) -> tuple[str, list]:
    run = engine.speculative(prompt, SpecSettings(types=("lookahead",)), SamplerSettings(), n_predict=n)
    events = list(run)
    piece = lambda t: engine.target.piece(t)       # noqa: E731
    out = b""
    for ev in events:
        out += piece(ev.emitted[0])
        for t in ev.emitted[1:]:
            out += CYAN.encode() + piece(t) + RESET.encode()
    return out.decode("utf-8", "replace"), events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, required=True, help="llama-lookahead")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--pairs", default="demo,smollm2")
    ap.add_argument("--write-golden", type=Path)
    a = ap.parse_args()
    targets = {}
    if "demo" in a.pairs:
        targets["demo"] = demo_pair()[0]
    if "smollm2" in a.pairs:
        from helpers.realmodel import smollm2_path
        targets["smollm2"] = smollm2_path()
    golden, same_runs, rounds_all = [], 0, 0
    print("| target | prompt | rounds | accepted (SpecScope) | llama.cpp n_predict/n_accept | equal |")
    print("|---|---|---|---|---|---|")
    for label, target in targets.items():
        engine = Engine(target, None, EngineSettings(n_seq=31, n_ctx=N_CTX, target_threads=1, repack="off"))
        for prompt in PROMPTS:
            theirs, totals = llama_stream(a.binary, target, prompt, a.n)
            ours, events = our_stream(engine, prompt, a.n)
            equal = theirs.startswith(ours)
            same_runs += equal
            rounds_all += len(events)
            print(f"| {label} | {prompt[:24]!r} | {len(events)} | {sum(e.n_accepted for e in events)} "
                  f"| {totals['n_predict']}/{totals['n_accept']} | {'yes' if equal else 'NO'} |", flush=True)
            if not equal:
                i = next(i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y) if ours[:len(theirs)] != theirs[:len(ours)] else min(len(ours), len(theirs))
                print(f"    first difference at character {i}: SpecScope {ours[i:i + 60]!r}, "
                      f"llama.cpp {theirs[i:i + 60]!r}")
            golden.append({"target": label, "prompt": prompt, "n": a.n, "stream": theirs,
                           "totals": totals})
        engine.close()
    print(f"\n{same_runs} of {len(golden)} runs equal ({rounds_all} rounds)")
    if a.write_golden:
        a.write_golden.write_text(json.dumps({"cases": golden}, separators=(",", ":")) + "\n")
    sys.exit(0 if same_runs == len(golden) else 1)


if __name__ == "__main__":
    main()
