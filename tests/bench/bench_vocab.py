"""Large-vocabulary benchmark (not a test): the Python time outside llama.cpp per
speculative round (RoundEvent.t_overhead) against the round, by vocabulary size.

    python tests/bench/bench_vocab.py [--n-vocab 4096,152064,262144] [--n-max 4] [-n 256] [--repeat 5]

Each vocabulary gets a generated pair (byte-level BPE padded with word pieces to the size;
a 2-block llama target, F16, and a draft made of its first block). At the default n_embd 64,
ten times narrower than any real model with such a vocabulary, the output layer dominates
every decode, so the round is as short as it gets and Python's share as large as it gets;
``--n-embd 640`` is Gemma-3-270M's width (262,144 tokens). Greedy, the engine's default
settings (``-t`` sets both contexts' threads). Figures are medians over --repeat runs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.stats import fold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers
from helpers import ggufgen  # noqa: E402

PROMPT = "def fibonacci(n):\n    return"


def write_pair(d: Path, n_vocab: int, n_embd: int) -> tuple[Path, Path]:
    weights = ggufgen.llama_weights(n_vocab, n_embd=n_embd, n_layer=2, n_ff=2 * n_embd, seed=1)
    _, first = ggufgen.first_layer_only(weights)
    kw = dict(n_vocab=n_vocab, n_embd=n_embd, n_ff=2 * n_embd, dtype=np.float16)
    return (ggufgen.write_llama(d / f"target-{n_vocab}.gguf", weights, n_layer=2, **kw),
            ggufgen.write_llama(d / f"draft-{n_vocab}.gguf", first, n_layer=1, **kw))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-vocab", default="4096,152064,262144")
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-max", type=int, default=4)
    p.add_argument("-n", "--n-predict", type=int, default=256)
    p.add_argument("-t", "--threads", type=int, default=0)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    settings = EngineSettings(n_ctx=1024, target_threads=args.threads, draft_threads=args.threads)
    spec = SpecSettings(n_max=args.n_max)
    print(f"n_max {args.n_max}, {args.n_predict} tokens, greedy, median of {args.repeat}; "
          "per round, microseconds\n")
    print(f"{'n_vocab':>8}{'rounds':>8}{'accept':>8}{'round':>9}{'draft':>9}{'verify':>9}"
          f"{'sync':>8}{'python':>9}{'share':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n_vocab in (int(x) for x in args.n_vocab.split(",")):
            target, draft = write_pair(Path(tmp), n_vocab, args.n_embd)
            greedy = SamplerSettings(logit_bias=((n_vocab - 1, -math.inf),))   # no EOS
            with Engine(target, draft, settings) as engine:
                list(engine.speculative(PROMPT, spec, greedy, 16))               # warm-up
                runs = []
                for _ in range(args.repeat):
                    s = fold(engine.speculative(PROMPT, spec, greedy, args.n_predict))
                    runs.append(s)
            s = sorted(runs, key=lambda s: s.overhead_share)[len(runs) // 2]
            us = 1e6 / s.n_rounds
            print(f"{n_vocab:>8}{s.n_rounds:>8}{100 * s.acceptance_rate:>7.1f}%"
                  f"{us * s.t_total:>9.0f}{us * s.t_draft:>9.0f}{us * s.t_verify:>9.0f}"
                  f"{us * s.t_sync:>8.0f}{us * s.t_overhead:>9.0f}{100 * s.overhead_share:>7.1f}%")
            shares = sorted(100 * r.overhead_share for r in runs)
            print(f"{'':>8}python share over the runs: {', '.join(f'{x:.1f}%' for x in shares)}"
                  f" (median {statistics.median(shares):.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
