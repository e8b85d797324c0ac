"""Conformance check (a script, not a test): SpecScope's `replay` rounds against
llama.cpp's own `llama-speculative-simple` on the same pair, prompt, n_max and
context, greedy.

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
]


def reference_rounds(binary: Path, target: Path, draft: Path, prompt: str, n_max: int,
                     n_ctx: int, n_predict: int, threads: int) -> list[tuple[int, int]]:
    cmd = [str(binary), "-m", str(target), "-md", str(draft), "--spec-type", "draft-simple",
           "--spec-draft-n-max", str(n_max), "--spec-draft-n-min", "0", "--spec-draft-p-min", "0",
           "-c", str(n_ctx), "-n", str(n_predict), "--temp", "0", "-p", prompt, "-lv", "5",
           "-t", str(threads), "-td", str(threads), "--seed", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"llama-speculative-simple failed ({proc.returncode}):\n{out[-2000:]}")
    return [(int(a), int(d)) for a, d in re.findall(r"accepted (\d+)/(\d+) draft tokens", out)]


def our_rounds(engine: Engine, prompt: str, n_max: int, n_predict: int):
    run = engine.speculative(prompt, SpecSettings(n_max=n_max, sync="replay"), SamplerSettings(),
                             n_predict)
    return [(ev.n_accepted, len(ev.drafted)) for ev in run], run.tokens


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", type=Path, required=True)
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path)
    p.add_argument("-c", "--ctx-size", type=int, default=1024)
    p.add_argument("-n", "--n-predict", type=int, default=128)
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("--n-max", default="1,3,4,8")
    args = p.parse_args(argv)
    target, draft = (args.model, args.model_draft) if args.model else demo_pair()
    settings = EngineSettings(n_ctx=args.ctx_size, target_threads=args.threads,
                              draft_threads=args.threads)
    total = same = 0
    with Engine(target, draft, settings) as engine:
        for n_max in (int(x) for x in args.n_max.split(",")):
            for prompt in PROMPTS:
                ours, _ = our_rounds(engine, prompt, n_max, args.n_predict)
                ref = reference_rounds(args.binary, target, draft, prompt, n_max, args.ctx_size,
                                       args.n_predict, args.threads)
                # compare while both runs are inside SpecScope's budget (see module docs)
                n = min(len(ours), len(ref)) - 1
                first_diff = next((i for i in range(n) if ours[i] != ref[i]), None)
                total += n
                same += n if first_diff is None else first_diff
                status = "identical" if first_diff is None else \
                    f"first difference at round {first_diff}: ours {ours[first_diff]}, llama.cpp {ref[first_diff]}"
                print(f"n_max {n_max}  prompt {PROMPTS.index(prompt)}: {n} rounds compared, {status}")
                print(f"    ours      {ours[:12]}{' ...' if len(ours) > 12 else ''}")
                print(f"    llama.cpp {ref[:12]}{' ...' if len(ref) > 12 else ''}")
    print(f"\n{same}/{total} rounds identical before the first difference of each run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
