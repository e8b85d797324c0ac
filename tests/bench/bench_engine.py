"""Engine benchmark (not a test): tokens/s of the baseline and of n_max 1..8 in
both sync modes, and the Python overhead per round.

    python tests/bench/bench_engine.py [-m TARGET -md DRAFT] [-n 256] [--repeat 3]

Uses the bundled demo pair unless models are given. Greedy, F16 KV cache,
flash attention auto (the defaults of `specscope run`). Each figure is the
median of --repeat runs; generation time only (prompt processing excluded).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specscope.core.models.demo import demo_pair
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.stats import fold

DEFAULT_PROMPT = '''import os
import sys


def main(argv=None):
    """Parse the command line and run the program."""
'''


def measure(run_factory, repeat: int):
    results = []
    for _ in range(repeat):
        run = run_factory()
        events = list(run)
        results.append(fold(events))
    return sorted(results, key=lambda s: s.tokens_per_s)[len(results) // 2]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path)
    p.add_argument("-n", "--n-predict", type=int, default=256)
    p.add_argument("-c", "--ctx-size", type=int, default=1024)
    p.add_argument("-t", "--threads", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--n-max", default="1,2,3,4,5,6,7,8")
    p.add_argument("-f", "--file", type=Path, help="prompt file")
    args = p.parse_args(argv)
    target, draft = (args.model, args.model_draft) if args.model else demo_pair()
    prompt = args.file.read_text() if args.file else DEFAULT_PROMPT
    settings = EngineSettings(n_ctx=args.ctx_size, target_threads=args.threads,
                              draft_threads=args.threads)
    greedy = SamplerSettings()
    n_maxes = [int(x) for x in args.n_max.split(",")]
    print(f"target {target}\ndraft  {draft}\n{args.n_predict} tokens, greedy, median of {args.repeat}\n")
    with Engine(target, draft, settings) as engine:
        list(engine.speculative(prompt, SpecSettings(n_max=2), greedy, 16))   # warm-up
        base = measure(lambda: engine.baseline(prompt, greedy, args.n_predict), args.repeat)
        print(f"{'run':<18}{'tok/s':>8}{'speed-up':>10}{'accept':>8}{'mean len':>10}"
              f"{'draft':>8}{'verify':>8}{'sync':>8}{'python':>8}{'py us/rnd':>10}")
        print(f"{'baseline':<18}{base.tokens_per_s:>8.1f}{1.0:>10.2f}{'':>8}{'':>10}"
              f"{'':>8}{100 * base.t_verify / base.t_total:>7.1f}%{'':>8}"
              f"{100 * base.overhead_share:>7.1f}%{1e6 * base.t_overhead / base.n_rounds:>10.1f}")
        for sync in ("reuse", "replay"):
            for n_max in n_maxes:
                spec = SpecSettings(n_max=n_max, sync=sync)
                s = measure(lambda: engine.speculative(prompt, spec, greedy, args.n_predict), args.repeat)
                t = s.t_total
                print(f"{sync + ' n_max ' + str(n_max):<18}{s.tokens_per_s:>8.1f}"
                      f"{s.tokens_per_s / base.tokens_per_s:>10.2f}{100 * s.acceptance_rate:>7.1f}%"
                      f"{s.mean_accepted_length:>10.2f}{100 * s.t_draft / t:>7.1f}%"
                      f"{100 * s.t_verify / t:>7.1f}%{100 * s.t_sync / t:>7.1f}%"
                      f"{100 * s.overhead_share:>7.1f}%{1e6 * s.t_overhead / s.n_rounds:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
