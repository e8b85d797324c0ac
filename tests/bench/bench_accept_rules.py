"""Benchmark (not a test): llama.cpp's acceptance rule against speculative sampling's, at
temperatures 0.3, 0.8 and 1.2, on the demo pair over the shipped benchmark prompts.

    python tests/bench/bench_accept_rules.py [--n-max 3] [-n 128] [--seeds 3] [--temps 0.3,0.8,1.2]

For each temperature and rule (``--accept-rule match|ratio``), every prompt runs with
``--seeds`` sampler seeds (top-k 40, top-p 0.95, min-p 0.05, the CLI's defaults). The events of
all those runs are folded together (core/measure/stats.py), and the table gives, per rule:

  * measured: the share of drafted tokens the target kept (accepted / drafted) and, per draft
    position k, the share of the drafts reaching k whose first k tokens were kept;
  * counterfactual: the same figures for the *other* rule, expected on the same drafts
    (core/engine/accept_rules.py says exactly what that means and its limits); overall, the expected
    accepted drafted tokens per drafted token;
  * tokens/s: the median over the runs of each run's generated tokens per second (noisy on a
    busy machine: compare acceptance, not speed, there).

Reading it: a rule's measured row and the other rule's counterfactual row estimate the same
thing from different runs; they should agree within sampling noise.
"""

from __future__ import annotations

import argparse
import json
import statistics



def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-max", type=int, default=3, help="draft length (default 3, llama.cpp's)")
    p.add_argument("-n", "--n-predict", type=int, default=128)
    p.add_argument("--seeds", type=int, default=3, help="sampler seeds per prompt (default 3)")
    p.add_argument("--temps", default="0.3,0.8,1.2")
    p.add_argument("-t", "--threads", type=int, default=1, help="threads per model (default 1)")
    args = p.parse_args(argv)

    from specscope.core.measure import stats
    from specscope.core.models.demo import demo_pair, prompts_dir
    from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
    from specscope.core.engine.sampling import SamplerSettings

    prompts = json.loads((prompts_dir() / "bench_prompts.json").read_text(encoding="utf-8"))["prompts"]
    temps = [float(t) for t in args.temps.split(",")]
    target, draft = demo_pair()
    print(f"demo pair, {len(prompts)} bench prompts x {args.seeds} seeds, {args.n_predict} tokens "
          f"each, n_max {args.n_max}, top-k 40, top-p 0.95, min-p 0.05, {args.threads} thread(s)")
    head = (f"{'temp':>5} {'rule':<6} {'accept':>7} {'by position':<20} "
            f"{'other rule, expected':<21} {'accept':>7} {'by position':<20} {'tok/s':>7}")
    print(head)
    print("-" * len(head))
    with Engine(target, draft, EngineSettings(target_threads=args.threads,
                                              draft_threads=args.threads)) as engine:
        for temp in temps:
            for rule in ("match", "ratio"):
                events, speeds = [], []
                for prompt in prompts:
                    for seed in range(args.seeds):
                        run = engine.speculative(
                            prompt["text"], SpecSettings(n_max=args.n_max, accept_rule=rule),
                            SamplerSettings(temperature=temp, seed=seed), args.n_predict)
                        mine = list(run)
                        events += mine
                        speeds.append(stats.fold(mine).tokens_per_s)
                s = stats.fold(events)
                cf_rate = sum(s.cf_at) / sum(s.cf_drafted_at) if s.cf_drafted_at else 0.0
                per = " ".join(f"{x:.2f}" for x in s.position_acceptance)
                cf_per = " ".join(f"{x:.2f}" for x in s.counterfactual_acceptance)
                print(f"{temp:5.1f} {rule:<6} {100 * s.acceptance_rate:6.1f}% {per:<20} "
                      f"{s.cf_rule:<21} {100 * cf_rate:6.1f}% {cf_per:<20} "
                      f"{statistics.median(speeds):7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
