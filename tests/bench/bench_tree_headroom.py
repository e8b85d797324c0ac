"""Figures (not a test): tree headroom on the bench prompts (core/measure/stats.py, ``Stats.tree``).

    python tests/bench/bench_tree_headroom.py [-m TARGET -md DRAFT] [--n-max 8] [-n 128]
                                        [--temp 0,0.8] [--prompts FILE]

For each temperature: one speculative run per prompt (draft-simple, end of generation
banned), folded together, then the histogram of the rank of the target's token among the
draft's top-10 at the measured positions, and the acceptance a width-1, 2 and 4 draft tree
would reach (measured floor and estimate). No timing: the figures do not depend on the
machine's load. Default pair: the shipped demo pair.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path



def main(argv=None) -> int:
    from specscope.core.models.demo import demo_pair
    from specscope.core.engine.engine import Engine, SpecSettings
    from specscope.core.engine.sampling import SamplerSettings
    from specscope.core.measure.stats import TREE_WIDTHS, fold
    from specscope.core.measure.bench.settings import eog_bias, load_prompts

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", type=Path)
    ap.add_argument("-md", "--model-draft", type=Path)
    ap.add_argument("--n-max", type=int, default=8)
    ap.add_argument("-n", "--n-predict", type=int, default=128)
    ap.add_argument("--temp", default="0,0.8", help="temperatures, comma-separated")
    ap.add_argument("--prompts", type=Path, default=None)
    ap.add_argument("-s", "--seed", type=int, default=42)
    args = ap.parse_args(argv)
    target, draft = (args.model, args.model_draft or args.model) if args.model else demo_pair()
    prompts = load_prompts(args.prompts)
    bias = eog_bias(target)
    print(f"target {Path(target).name}, draft {Path(draft).name}; {len(prompts)} prompts, "
          f"{args.n_predict} tokens each, n_max {args.n_max}")
    with Engine(target, draft) as engine:
        for temp in (float(t) for t in args.temp.split(",")):
            sampler = SamplerSettings(temperature=temp, seed=args.seed, logit_bias=bias)
            events = []
            for _, text in prompts:
                events += list(engine.speculative(text, SpecSettings(n_max=args.n_max), sampler,
                                                  args.n_predict))
            s = fold(events)
            t = s.tree
            misses = sum(t.rank_hist[1:])
            print(f"\ntemperature {temp:g}: accept {100 * s.acceptance_rate:.1f}% "
                  f"({s.n_accept}/{s.n_drafted}), {misses} measured rejections")
            print("  rank of the target's token (1 = the draft's choice): "
                  + " ".join(f"{r + 1}:{c}" for r, c in enumerate(t.rank_hist[:-1]))
                  + f" >10:{t.rank_hist[-1]}")
            if misses:
                print("  of the rejections: " + ", ".join(
                    f"rank {r + 1} {100 * t.rank_hist[r] / misses:.0f}%" for r in (1, 2, 3))
                    + f", >10 {100 * t.rank_hist[-1] / misses:.0f}%")
            for w in TREE_WIDTHS:
                print(f"  width {w}: acceptance {100 * t.floor(w):.1f}% measured, "
                      f"{100 * t.acceptance(w):.1f}% estimated (positions ranking below {w}: "
                      f"{100 * t.level_rate(w):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
