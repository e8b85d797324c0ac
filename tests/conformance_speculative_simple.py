"""Conformance check (a script, not a test): SpecScope's rounds against llama.cpp's own
`llama-speculative-simple` on the same pair, prompt, speculative types and parameters, n_max
and context, greedy; SpecScope's draft model syncs with `replay`, as llama.cpp does.

Cases: draft-simple at several n_max; each n-gram type (ngram-simple, ngram-map-k,
ngram-map-k4v, ngram-mod, ngram-cache) alone, with llama.cpp's defaults and with small
sizes that match often on these prompts; and each chained before draft-simple.

Build the reference program from llama-cpp-python 0.3.36's source distribution
(never committed):

    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36
    tar xf llama_cpp_python-0.3.36.tar.gz
    cmake -S llama_cpp_python-0.3.36/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF
    cmake --build build --target llama-speculative-simple -j2

then

    python tests/conformance_speculative_simple.py --binary build/bin/llama-speculative-simple

It parses llama.cpp's debug lines "accepted A/D draft tokens" and compares the
per-round (accepted, drafted) counts with SpecScope's events. llama.cpp's run
emits n_predict + 1 tokens and, once its per-round budget reaches 0, drafts up
to n_max anyway; rounds after SpecScope's last are therefore not compared.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from specscope.core.demo import demo_pair
from specscope.core.engine import Engine, EngineSettings, SpecSettings
from specscope.core.sampling import SamplerSettings

PROMPTS = [
    'def parse_args(argv=None):\n    """Parse the command line."""\n',
    "class Queue:\n    def __init__(self, maxsize=0):\n",
    "import os\nimport sys\n\n\ndef main():\n",
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n",
]

SMALL = {  # sizes that find matches within 128 tokens of these prompts
    "ngram-simple": ["--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", "6"],
    "ngram-map-k": ["--spec-ngram-map-k-size-n", "2", "--spec-ngram-map-k-size-m", "6"],
    "ngram-map-k4v": ["--spec-ngram-map-k4v-size-n", "2", "--spec-ngram-map-k4v-size-m", "6",
                      "--spec-ngram-map-k4v-min-hits", "2"],
    "ngram-mod": ["--spec-ngram-mod-n-match", "3", "--spec-ngram-mod-n-min", "1",
                  "--spec-ngram-mod-n-max", "8"],
    "ngram-cache": [],
}


def cases(n_maxes: list[int], types: list[str]) -> list[tuple[str, list[str]]]:
    """(label, llama.cpp flags) for every case; draft-simple's n_max comes with it."""
    out = [(f"draft-simple n_max {n}", ["--spec-type", "draft-simple", "--spec-draft-n-max", str(n)])
           for n in n_maxes if "draft-simple" in types]
    for t, small in SMALL.items():
        if t not in types:
            continue
        out.append((f"{t} defaults", ["--spec-type", t]))
        if small:
            out.append((f"{t} small", ["--spec-type", t, *small]))
        out.append((f"{t},draft-simple n_max 4", ["--spec-type", f"{t},draft-simple",
                                                  "--spec-draft-n-max", "4", *small]))
    return out


def reference_rounds(binary: Path, target: Path, draft: Path | None, prompt: str, flags: list[str],
                     n_ctx: int, n_predict: int, threads: int) -> list[tuple[int, int]]:
    cmd = [str(binary), "-m", str(target), *(["-md", str(draft)] if draft else []), *flags,
           "--spec-draft-n-min", "0", "--spec-draft-p-min", "0",
           "-c", str(n_ctx), "-n", str(n_predict), "--temp", "0", "-p", prompt, "-lv", "5",
           "-t", str(threads), "-td", str(threads), "--seed", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"llama-speculative-simple failed ({proc.returncode}):\n{out[-2000:]}")
    return [(int(a), int(d)) for a, d in re.findall(r"accepted (\d+)/(\d+) draft tokens", out)]


def our_rounds(engine: Engine, prompt: str, flags: list[str], n_predict: int):
    from dataclasses import replace
    from specscope.core.cli_spec import spec_from_flags
    spec = replace(spec_from_flags(flags), sync="replay")
    run = engine.speculative(prompt, spec, SamplerSettings(), n_predict)
    events = list(run)
    return [(ev.n_accepted, len(ev.drafted)) for ev in events], events


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", type=Path, required=True)
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path)
    p.add_argument("-c", "--ctx-size", type=int, default=1024)
    p.add_argument("-n", "--n-predict", type=int, default=128)
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("--n-max", default="1,3,4,8", help="draft-simple's n_max values")
    p.add_argument("--prompts", metavar="JSON",
                   help="a prompt set instead of the built-in code prompts (a file, or a shipped "
                        "set by name: drafter_prompts.json has prompts whose continuation repeats)")
    p.add_argument("--types", default=",".join(["draft-simple", *SMALL]),
                   help="which types to check (default all)")
    args = p.parse_args(argv)
    target, draft = (args.model, args.model_draft) if args.model else demo_pair()
    settings = EngineSettings(n_ctx=args.ctx_size, target_threads=args.threads,
                              draft_threads=args.threads)
    prompts = PROMPTS
    if args.prompts:
        from specscope.core.sweep import load_prompts
        prompts = [text for _, text in load_prompts(args.prompts)]
    total = same = 0
    summary: dict[str, list[int]] = {}
    with Engine(target, draft, settings) as engine:
        for label, flags in cases([int(x) for x in args.n_max.split(",")], args.types.split(",")):
            for k, prompt in enumerate(prompts):
                ours, events = our_rounds(engine, prompt, flags, args.n_predict)
                uses_draft = any("draft-simple" in f for f in flags)
                ref = reference_rounds(args.binary, target, draft if uses_draft else None, prompt,
                                       flags, args.ctx_size, args.n_predict, args.threads)
                # compare while both runs are inside SpecScope's budget (see module docs)
                n = min(len(ours), len(ref)) - 1
                first_diff = next((i for i in range(n) if ours[i] != ref[i]), None)
                total += n
                same += n if first_diff is None else first_diff
                drafted = sum(1 for e in events[:n] if e.drafted)
                winners = sorted({e.drafter for e in events[:n] if e.drafted})
                cell = summary.setdefault(label, [0, 0, 0])
                cell[0] += n if first_diff is None else first_diff
                cell[1] += n
                cell[2] += drafted
                status = "identical" if first_diff is None else \
                    f"first difference at round {first_diff}: ours {ours[first_diff]}, llama.cpp {ref[first_diff]}"
                print(f"{label:<34} prompt {k}: {n} rounds compared ({drafted} with a draft, "
                      f"by {', '.join(winners) or 'none'}), {status}")
                if first_diff is not None:
                    print(f"    ours      {ours[:12]}{' ...' if len(ours) > 12 else ''}")
                    print(f"    llama.cpp {ref[:12]}{' ...' if len(ref) > 12 else ''}")
    print()
    for label, (ok, n, drafted) in summary.items():
        print(f"{label:<34} {ok}/{n} rounds identical, {drafted} of them drafted")
    print(f"\n{same}/{total} rounds identical before the first difference of each run")
    return 0 if same == total else 1


if __name__ == "__main__":
    sys.exit(main())
