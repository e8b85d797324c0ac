"""Benchmark (not a test): adaptive draft length (core/engine/draft_policy.py) against the best fixed
n_max, on the shipped bench prompts.

    python tests/bench/bench_adaptive.py [-m TARGET -md DRAFT | --pair demo|smollm2|smollm2-f32]
                                   [--n-max 8] [-n 96] [--repeats 5]
                                   [--prompts FILE] [-t THREADS] [--json OUT.json]

Configurations: llama.cpp's fixed policy at every n_max in 1..N (the sweep the best fixed n is
picked from, after the fact: an oracle the adaptive policies do not have), and the ``hf`` and
``cost`` policies with n_max = N (they choose within 1..N each round). Greedy, end of
generation banned (every run generates exactly -n tokens), the demo pair by default
(``--pair``: also SmolLM2-135M-Instruct's Q4_1 file drafting for itself, or for its own
weights widened to F32, made once beside it by llama.cpp: a real pair where drafting pays).

Per repetition and prompt: the target alone, every configuration once in an order rotated per
repetition, the target alone again (the two baselines bracket the runs in time, so slow drift in
the machine's load hits every configuration alike). Every speculative run is checked against
the baseline's tokens (lossless). Per configuration and repetition: tokens/s pooled over the
prompts (all tokens ÷ all generation seconds) and the speed-up against the baselines' pooled
tokens/s of the same repetition; the table prints the medians over the repetitions, the pooled
acceptance and, for the adaptive policies, the mean draft length they chose. The ``cost``
policy predicts with the pair's calibration (cached; measured first when there is none).

On a shared machine the figures are noisy: run it on a quiet one, with --repeats 5 or more.
The share of the CPU that other processes used is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path



PAIRS = ("demo", "smollm2", "smollm2-f32")


def named_pair(name: str) -> tuple[Path, Path]:
    """(target, draft) of ``--pair``; the SmolLM2 files as the real-model tier has them."""
    from specscope.core.models.demo import demo_pair
    if name == "demo":
        return demo_pair()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from helpers.realmodel import smollm2_f32_path, smollm2_path
    q4 = smollm2_path()
    return (smollm2_f32_path() if name == "smollm2-f32" else q4), q4


@dataclass
class Tally:
    """One configuration's runs: per repetition, tokens and seconds (pooled over prompts)."""
    name: str
    tokens: dict[int, int] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)
    drafted: int = 0
    accepted: int = 0
    limits: list[int] = field(default_factory=list)
    mismatches: int = 0

    def add(self, rep: int, stats, events, lossless: bool) -> None:
        self.tokens[rep] = self.tokens.get(rep, 0) + stats.n_tokens
        self.seconds[rep] = self.seconds.get(rep, 0.0) + stats.t_total
        self.drafted += stats.n_drafted
        self.accepted += stats.n_accept
        # the length the policy chose: hf's limit for the round; cost stops while drafting
        self.limits += [len(e.drafted) if e.draft_stop == "policy" else e.draft_limit
                        for e in events if e.draft_limit]
        self.mismatches += not lossless

    def tok_s(self, rep: int) -> float:
        return self.tokens[rep] / self.seconds[rep]


def held_out(configs, tallies, base, reps: list[int]) -> str:
    """The best fixed n without hindsight: picked on half the repetitions (every other one),
    measured on the other half, both ways round; beside it each adaptive policy on the same
    halves. The best of eight noisy medians is higher than the best n's true speed-up (the
    maximum of noisy values is biased up); picked on one half and measured on the other, it is not."""
    if len(reps) < 2:
        return ""
    halves = (reps[0::2], reps[1::2])
    def speedup(name, half):
        return statistics.median(tallies[name].tok_s(r) / base.tok_s(r) for r in half)
    fixed = [name for name, _ in configs if name.startswith("fixed")]
    adaptive = [name for name, _ in configs if not name.startswith("fixed")]
    parts, picked_means, mean = [], [], {a: [] for a in adaptive}
    for pick, measure in (halves, halves[::-1]):
        n = max(fixed, key=lambda name: speedup(name, pick))
        picked_means.append(speedup(n, measure))
        parts.append(n.split("=")[1])
        for a in adaptive:
            mean[a].append(speedup(a, measure))
    fixed_s = statistics.fmean(picked_means)
    return (f"held out (fixed n picked on one half of the repetitions, n={'/'.join(parts)}, "
            f"measured on the other, both ways): fixed {fixed_s:.3f}x; "
            + "; ".join(f"{a.split()[0]} {statistics.fmean(v):.3f}x ({statistics.fmean(v) / fixed_s:.3f} of it)"
                        for a, v in mean.items()))


def report(configs, tallies, base, reps, pair, prompts, args, others=None, elapsed=None):
    """Print the table over repetitions ``reps``; (rows, best fixed row)."""
    rows = []
    for name, _ in configs:
        t = tallies[name]
        speedups = [t.tok_s(r) / base.tok_s(r) for r in reps]
        rows.append({"config": name, "tok_s": statistics.median(t.tok_s(r) for r in reps),
                     "speedup": statistics.median(speedups),
                     "speedup_min": min(speedups), "speedup_max": max(speedups),
                     "acceptance": t.accepted / t.drafted if t.drafted else 0.0,
                     "mean_n": statistics.fmean(t.limits) if t.limits else math.nan,
                     "lossless_mismatches": t.mismatches})
    fixed = [r for r in rows if r["config"].startswith("fixed")]
    best = max(fixed, key=lambda r: r["speedup"])
    print(f"{pair}; {len(prompts)} prompts × "
          f"{len(reps)} repetition(s), {args.n_predict} tokens, greedy, sync {args.sync}; "
          f"baseline {statistics.median(base.tok_s(r) for r in reps):.1f} tok/s (median)")
    print(f"{'configuration':<16} {'tok/s':>8} {'speed-up':>9} {'(min-max)':>13} {'accept':>8} "
          f"{'mean n':>7} {'vs best fixed':>14} {'lossless':>9}")
    for r in rows:
        vs = r["speedup"] / best["speedup"]
        mark = " *" if r is best else ""
        print(f"{r['config']:<16} {r['tok_s']:8.1f} {r['speedup']:8.3f}x "
              f"{r['speedup_min']:6.2f}-{r['speedup_max']:.2f}x {100 * r['acceptance']:7.1f}% "
              f"{r['mean_n']:7.2f} {vs:13.3f}x {'ok' if not r['lossless_mismatches'] else r['lossless_mismatches']:>9}"
              f"{mark}")
    held = held_out(configs, tallies, base, list(reps))
    if held:
        print(held)
    print("* best fixed n_max (picked after the fact)"
          + (f"; took {elapsed:.0f} s" if elapsed is not None else "")
          + (f"; other processes used {100 * others:.0f}% of the CPU meanwhile"
             + (" (noisy: rerun on a quiet machine)" if others >= 0.1 else "") if others is not None else ""))
    return rows, best


def main(argv=None) -> int:
    from specscope.core.measure.cost.calibrate import policy_calibration
    from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
    from specscope.core.engine.sampling import SamplerSettings
    from specscope.core.measure.stats import fold
    from specscope.core.measure.cpuload import LoadMeter
    from specscope.core.measure.bench.settings import eog_bias, load_prompts

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", type=Path)
    ap.add_argument("-md", "--model-draft", type=Path)
    ap.add_argument("--pair", choices=PAIRS, default="demo",
                    help="without -m: the demo pair; SmolLM2-135M-Instruct Q4_1 as its own draft (no "
                         "draft pays); or drafting for its own weights widened to F32 (drafts cost "
                         "about half a target token and are almost always kept)")
    ap.add_argument("--n-max", type=int, default=8, help="fixed n swept 1..N; the policies' n_max")
    ap.add_argument("-n", "--n-predict", type=int, default=96)
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("--prompts", type=Path, default=None, help="default: the shipped bench prompts")
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("--sync", choices=("reuse", "replay"), default="reuse")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)

    target, draft = (args.model, args.model_draft) if args.model else named_pair(args.pair)
    prompts = load_prompts(args.prompts)
    pair = f"target {Path(target).name}, draft {Path(draft).name}"
    sampler = SamplerSettings(logit_bias=eog_bias(target))
    configs = [(f"fixed n={n}", SpecSettings(n_max=n, sync=args.sync)) for n in range(1, args.n_max + 1)]
    configs += [(f"{p} n_max={args.n_max}", SpecSettings(n_max=args.n_max, sync=args.sync, draft_policy=p))
                for p in ("hf", "cost")]
    tallies = {name: Tally(name) for name, _ in configs}
    base = Tally("baseline")
    settings = EngineSettings(target_threads=args.threads, draft_threads=args.threads)
    with Engine(target, draft, settings) as engine:
        print("calibrating (or reading the cached calibration) for the cost policy ...", file=sys.stderr)
        cal = policy_calibration(engine, configs[-1][1], sampler)
        meter, t0 = LoadMeter(), time.perf_counter()
        for rep in range(args.repeats):
            order = configs[rep % len(configs):] + configs[:rep % len(configs)]
            for p_name, text in prompts:
                print(f"\rrepetition {rep + 1}/{args.repeats}: {p_name:<12}", end="", file=sys.stderr)
                expected = None
                for _ in range(2):                      # a baseline before and after the runs
                    run = engine.baseline(text, sampler, args.n_predict)
                    events = list(run)
                    base.add(rep, fold(events), events, True)
                    if expected is None:
                        expected = run.tokens
                        for name, spec in order:
                            run = engine.speculative(text, spec, sampler, args.n_predict, calibration=cal)
                            events = list(run)
                            tallies[name].add(rep, fold(events), events, run.tokens == expected)
            if rep + 1 < args.repeats:        # the table so far, in case the run is cut short
                print(f"\nafter {rep + 1} repetition(s):", file=sys.stderr)
                report(configs, tallies, base, range(rep + 1), pair, prompts, args)
                sys.stdout.flush()
        others = meter.others_share()
        elapsed = time.perf_counter() - t0
    print(file=sys.stderr)

    rows, best = report(configs, tallies, base, range(args.repeats), pair, prompts,
                        args, others, elapsed)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "best_fixed": best["config"],
                                         "others_cpu": others, "repeats": args.repeats,
                                         "n_predict": args.n_predict,
                                         "calibration": cal.to_dict()}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
