"""Conformance check (a script, not a test): SpecScope's draft-tree against llama.cpp's own
``llama-speculative`` (examples/speculative), round for round: the branches the draft drafted,
the branch the target kept, the tokens it accepted and the token it emitted after them.

Build the reference from llama-cpp-python 0.3.36's source distribution (never committed), with
one line added after its argument parsing in examples/speculative/speculative.cpp,

    params.kv_unified = true;

(at temperature with -np > 1 the vendored program otherwise aborts: "failed to find a memory
slot for batch of size 5"; its branches are sequences of one KV cache and it never asks for a
unified one), then ``cmake --build build --target llama-speculative``, and run

    python tests/conformance/speculative_tree.py --binary build/bin/llama-speculative

Cases: the demo pair and SmolLM2-135M-Instruct as its own draft, -np 1, 2 and 4, greedy on four
prompts, and at temperature 0.8 with seeds 1..S (``--seeds``). llama-speculative emits tokens
past -n (it stops after the round that passes it); rounds after SpecScope's last, and the last
ones SpecScope drafts shorter to end exactly at -n, are not compared. ``--write-golden FILE``
records llama.cpp's side for tests/test_tree_conformance.py, which CI runs without the build.
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
    'def parse_args(argv=None):\n    """Parse the command line."""\n',
    "class Queue:\n    def __init__(self, maxsize=0):\n",
    "import os\nimport sys\n\n\ndef main():\n",
]
CHAT = ["<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
        "def parse_args(argv):", "The history of the Roman Empire"]
N_CTX = 2048

_KEEP = re.compile(r"keeping sequence (\d+), n_past_tgt = (\d+), n_past_dft = (\d+)")
_DRAFT = re.compile(r"D draft (\d+): \[ (.*?) \]\n(?=\d+\.\d\d\.\d{3}\.\d{3} )", re.S)  # pieces hold newlines
_OWN = re.compile(r"the sampled target token \((\d+), '")
_ACC_GREEDY = re.compile(r"the sampled target token matches the (\d+)th drafted token of sequence (\d+) \((\d+), '")
_ACC_STOCH = re.compile(r"draft token (\d+) of sequence (\d+) \((\d+), '.*?'\) (accepted|rejected)", re.S)


def llama_rounds(binary: Path, target: Path, draft: Path, prompt: str, n: int, np_: int,
                 temp: float, seed: int, n_max: int) -> list[dict]:
    """llama-speculative's rounds from its debug log: for each, the branches it verified, the
    kept branch, the accepted tokens and the target's own token."""
    cmd = [str(binary), "-m", str(target), "-md", str(draft), "-p", prompt, "-n", str(n),
           "-np", str(np_), "--temp", str(temp), "--seed", str(seed), "-c", str(N_CTX),
           "--spec-draft-n-max", str(n_max), "-t", "1", "-td", "1", "-v"]
    env = {**os.environ, "LLAMA_ARG_REPACK": "0"}
    for _ in range(2):          # a log cut short (seen once in ~100 runs) is read again
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600, env=env)
        if p.returncode:
            raise SystemExit(f"{' '.join(cmd)}:\n{p.stderr[-3000:]}")
        log = p.stdout + p.stderr
        if "n_accept" in log:
            break
    else:
        raise SystemExit(f"{' '.join(cmd)}: no totals in its log:\n{log[-2000:]}")
    keeps = list(_KEEP.finditer(log))
    rounds, start, prev = [], 0, None
    for k in keeps:
        seg = log[start:k.start()]
        branches = [tuple(int(t) for t in re.findall(r"':(\d+)(?=, '|$)", m.group(2)))
                    for m in _DRAFT.finditer(seg)]
        own = [int(x) for x in _OWN.findall(seg)]
        if temp > 0:
            acc = [int(m.group(3)) for m in _ACC_STOCH.finditer(seg) if m.group(4) == "accepted"]
        else:
            by_pos: dict[int, int] = {}
            for m in _ACC_GREEDY.finditer(seg):
                by_pos[int(m.group(1))] = int(m.group(3))
            acc = [by_pos[i] for i in sorted(by_pos)]
        n_past = int(k.group(2))
        n_acc = n_past - prev - 1 if prev is not None else 0
        if len(acc) != n_acc or len(own) != 1:
            raise SystemExit(f"could not read round {len(rounds)} of the log ({len(acc)} accepted "
                             f"tokens read, {n_acc} counted; {len(own)} own tokens)")
        rounds.append({"branches": branches, "kept": int(k.group(1)) if branches else 0,
                       "accepted": acc, "own": own[0]})
        prev, start = n_past, k.end()
    totals = {key: int(re.search(rf"{key}\s*=\s*(\d+)", log).group(1))
              for key in ("n_predict", "n_drafted", "n_accept")}
    return rounds, totals


def ours(engine: Engine, prompt: str, n: int, temp: float, seed: int, n_max: int) -> list:
    run = engine.speculative(prompt, SpecSettings(types=("draft-tree",), n_max=n_max),
                             SamplerSettings(temperature=temp, seed=seed), n_predict=n)
    return list(run)


def compare(theirs: list[dict], events: list) -> tuple[int, int, str]:
    """(rounds compared, rounds equal, the first difference in words). A round that ends the
    run at an end-of-generation token is compared up to it (SpecScope stops there)."""
    same, first = 0, ""
    compared = [ev for ev in events if ev.index == 0 or ev.draft_stop == "n_max"]
    for ev in compared:
        t = theirs[ev.index]
        want = {"branches": [tuple(b) for b in t["branches"]], "kept": t["kept"],
                "accepted": t["accepted"], "own": t["own"]}
        got = {"branches": list(ev.tree.branches) if ev.tree else [],
               "kept": ev.tree.kept if ev.tree else 0,
               "accepted": list(ev.emitted[:ev.n_accepted]), "own": ev.own}
        if ev.finish == "eog":
            want["accepted"] = want["accepted"][:len(got["accepted"])]
            got["own"] = want["own"] if ev.own is None else got["own"]
        if got == want:
            same += 1
        elif not first:
            first = f"round {ev.index}: SpecScope {got}, llama.cpp {want}"
    return len(compared), same, first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, required=True, help="llama-speculative (kv_unified build)")
    ap.add_argument("-n", type=int, default=96)
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..S at temperature")
    ap.add_argument("--pairs", default="demo,smollm2")
    ap.add_argument("--write-golden", type=Path)
    a = ap.parse_args()
    pairs = {}
    if "demo" in a.pairs:
        pairs["demo"] = (*demo_pair(), PROMPTS)
    if "smollm2" in a.pairs:
        from helpers.realmodel import smollm2_path
        sm = smollm2_path()
        pairs["smollm2"] = (sm, sm, CHAT)
    golden, total, equal = [], 0, 0
    print("| pair | -np | sampling | rounds compared | equal | llama.cpp n_drafted/n_accept | first difference |")
    print("|---|---|---|---|---|---|---|")
    for label, (target, draft, prompts) in pairs.items():
        for np_ in (1, 2, 4):
            engine = Engine(target, draft, EngineSettings(n_seq=np_, n_ctx=N_CTX, target_threads=1,
                                                         draft_threads=1, repack="off"))
            runs = [(p, 0.0, 1) for p in prompts] + [(prompts[0], 0.8, s) for s in range(1, a.seeds + 1)]
            for prompt, temp, seed in runs:
                theirs, totals = llama_rounds(a.binary, target, draft, prompt, a.n, np_, temp, seed, 3)
                events = ours(engine, prompt, a.n, temp, seed, 3)
                n, same, first = compare(theirs, events)
                total, equal = total + n, equal + same
                mode = "greedy" if temp == 0 else f"temp {temp} seed {seed}"
                print(f"| {label} | {np_} | {mode} | {n} | {same} | {totals['n_drafted']}/{totals['n_accept']} "
                      f"| {first[:160]} |", flush=True)
                golden.append({"pair": label, "np": np_, "prompt": prompt, "temp": temp, "seed": seed,
                               "n": a.n, "rounds": theirs, "totals": totals})
            engine.close()
    print(f"\n{equal} of {total} rounds equal")
    if a.write_golden:
        a.write_golden.write_text(json.dumps({"cases": golden}, separators=(",", ":")) + "\n")
    sys.exit(0 if equal == total else 1)


if __name__ == "__main__":
    main()
