"""Benchmark (not a test): the speed-up of the demo target's EAGLE-3 head (draft-eagle3) and of
the demo draft (draft-simple) against the demo target alone, in CPU time.

    python tests/bench/bench_eagle3_demo.py [-n 200] [--n-max 3] [--repeats 3]

Greedy, one thread for each model, the 4 code prompts of the conformance suites, each run to
``-n`` tokens: the target alone, then speculative, per drafter and repeat. One thread makes the
process's CPU time the time llama.cpp and the engine compute, whatever else a shared machine
runs; wall time is printed beside it. `specscope run --with-baseline -t 1 -td 1` measures the
same in wall time, one prompt at a time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the conformance prompts

from conformance.speculative_simple import PROMPTS
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.models.demo import demo_eagle3_head, demo_pair


def timed(run) -> tuple[int, float, float]:
    """(tokens, CPU seconds, wall seconds) of a run driven to its end."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in run:
        pass
    return len(run.tokens), time.process_time() - cpu, time.perf_counter() - wall


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--n-predict", type=int, default=200)
    p.add_argument("--n-max", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    target, draft = demo_pair()[:2]
    settings = EngineSettings(n_ctx=1024, target_threads=1, draft_threads=1)
    for name, model in (("draft-eagle3", demo_eagle3_head()), ("draft-simple", draft)):
        spec = SpecSettings(types=(name,), n_max=args.n_max)
        with Engine(target, model, settings) as engine:
            for rep in range(args.repeats):
                base = [0, 0.0, 0.0]
                ours = [0, 0.0, 0.0]
                for prompt in PROMPTS:
                    for acc, run in ((base, engine.baseline(prompt, SamplerSettings(), args.n_predict)),
                                     (ours, engine.speculative(prompt, spec, SamplerSettings(),
                                                               args.n_predict))):
                        for i, v in enumerate(timed(run)):
                            acc[i] += v
                print(f"{name} n_max {args.n_max}, repeat {rep + 1}: speed-up {base[1] / ours[1]:.2f}x "
                      f"in CPU time ({ours[0] / ours[1]:.0f} tokens per CPU second, the target alone "
                      f"{base[0] / base[1]:.0f}), {base[2] / ours[2]:.2f}x in wall time", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
