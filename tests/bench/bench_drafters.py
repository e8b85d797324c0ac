"""Benchmark (not a test): the Python time of each n-gram drafter per round at a 2,048-token
context, against the demo target's verification of one token (the aim: at most 10 % of it).

    python tests/bench/bench_drafters.py [--file SOURCE.py] [--rounds 400] [-t THREADS]

The history is a repetitive Python source: the first ``--period`` tokens of a file (default:
the standard library's argparse.py, the kind of code the demo models were trained on) tokenized
by the demo target, repeated to 2,048 tokens and beyond, so that the rounds find earlier
n-grams and draft long runs, as on code that repeats its input (``--period 0``: the file as it
is, padded by repetition only if it is short: few matches).
Each drafter is built the way the engine builds it (``core.drafters.build.make_drafter`` with
llama.cpp's default parameters), told the 2,048-token prompt (``begin``), then driven through
rounds on the file's real continuation: draft after the history, keep the drafted tokens that
match the continuation, ``accept`` that many, append them and the next token, and so on, as the
engine's round does. What is timed per round is what the engine pays: the ``draft`` call plus
the ``accept`` call. Types whose module is not written yet are skipped with a line saying so.

The verification of one token is a real llama.cpp decode of one token at position 2,047 on the
demo target with logits (the median over many), as a target-only round pays it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np


CONTEXT = 2048
GOAL = 0.10


def history_tokens(model, path: Path, n: int, period: int) -> np.ndarray:
    tokens = [t for t in model.tokenize(path.read_text(encoding="utf-8"), add_special=False)
              if not model.is_eog(t)]
    tokens = tokens[:period] if period > 0 else tokens
    reps = -(-n // len(tokens))
    return np.array((tokens * reps)[:n], dtype=np.int32)


def verify_seconds(engine, tokens: np.ndarray, reps: int) -> list[float]:
    """One-token decodes with logits at position CONTEXT - 1, after a CONTEXT - 1 token prefill."""
    ctx, batch = engine.tgt, engine.batch
    ctx.prefill(tokens[:CONTEXT - 1].tolist(), batch, "the benchmark history")
    times = []
    for i in range(reps + 5):
        batch.fill((int(tokens[CONTEXT - 1]),), CONTEXT - 1, logits="all")
        t = time.perf_counter()
        ctx.decode(batch, "a token")
        ctx.logits(1)
        dt = time.perf_counter() - t
        ctx.seq_rm(CONTEXT - 1, -1)
        if i >= 5:
            times.append(dt)
    ctx.clear()
    return times


def simulate(chain, tokens: np.ndarray, rounds: int, budget: int = 64) -> tuple[list[float], float, int]:
    """``chain`` (a drafters.Chain) on the history: (seconds per round of draft + accept,
    seconds of begin, tokens accepted) over ``rounds`` rounds past a CONTEXT-token prompt."""
    history = np.zeros(len(tokens) + 1, dtype=np.int32)
    history[:len(tokens)] = tokens
    cur = CONTEXT - 1                      # history[:cur] is in the cache; tokens[cur] is id_last
    t = time.perf_counter()
    chain.begin(history[:cur])
    t_begin = time.perf_counter() - t
    per_round, accepted_total = [], 0
    clock = time.perf_counter
    for _ in range(rounds):
        if cur + 2 >= len(tokens):
            break
        id_last = int(tokens[cur])
        t = clock()
        proposal = chain.draft(history[:cur], id_last, budget)
        t_draft = clock() - t
        draft = proposal.tokens[:budget]
        truth = tokens[cur + 1:cur + 1 + len(draft)]
        n_acc = 0
        while n_acc < len(draft) and n_acc < len(truth) and draft[n_acc] == truth[n_acc]:
            n_acc += 1
        t = clock()
        chain.accept(n_acc)
        per_round.append(t_draft + clock() - t)
        accepted_total += n_acc
        cur += 1 + n_acc                   # id_last and the accepted tokens join the history
    return per_round, t_begin, accepted_total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--file", type=Path, default=Path(argparse.__file__),
                   help="Python source to tokenize as the history (default: argparse.py)")
    p.add_argument("--period", type=int, default=700,
                   help="repeat the file's first N tokens (default 700; 0: the whole file)")
    p.add_argument("--rounds", type=int, default=400, help="rounds per drafter (default 400)")
    p.add_argument("--verify-reps", type=int, default=300, help="one-token decodes timed (default 300)")
    p.add_argument("-t", "--threads", type=int, default=1,
                   help="target threads (default 1: steady on a shared machine; 0 = all cores)")
    args = p.parse_args(argv)

    from specscope.core.models.demo import demo_pair
    from specscope.core.engine.drafters import NGRAM_TYPES, Chain
    from specscope.core.engine.drafters.build import make_drafter
    from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings

    target, _ = demo_pair()
    # the yardstick is the faster of llama.cpp's flash-attention settings (at 2,048 tokens on a
    # CPU, "auto" (on) can be several times slower than off): the stricter goal
    medians = {}
    for fa in ("auto", "off"):
        settings = EngineSettings(n_ctx=CONTEXT, target_threads=args.threads, flash_attn=fa)
        with Engine(target, None, settings) as engine:
            # the history: the file, repeated, plus a continuation to run the rounds over
            tokens = history_tokens(engine.target, args.file, CONTEXT + 64 * args.rounds, args.period)
            times = verify_seconds(engine, tokens, args.verify_reps)
        medians[fa] = (statistics.median(times), times)
    print("one-token verification at position %d: flash attention auto %.0f µs, off %.0f µs "
          "(medians)" % (CONTEXT - 1, 1e6 * medians["auto"][0], 1e6 * medians["off"][0]))
    t_verify, verify = min(medians.values(), key=lambda m: m[0])
    what = f"its first {args.period} tokens" if args.period > 0 else "the whole file"
    print(f"history: {args.file.name} tokenized by {target.name}, {what} repeated to {CONTEXT} "
          f"tokens (+ the continuation the rounds run over); {os.cpu_count()} cores, "
          f"{args.threads or 'all'} target threads")
    print(f"verification of one token at position {CONTEXT - 1}: median {1e6 * t_verify:.0f} µs "
          f"(p90 {1e6 * np.percentile(verify, 90):.0f} µs, {len(verify)} decodes); "
          f"goal per round: <= {100 * GOAL:.0f}% = {1e6 * GOAL * t_verify:.0f} µs")
    print()
    head = f"{'drafter':<28}{'rounds':>7}{'accepted':>9}{'median µs':>11}{'p90 µs':>9}{'max µs':>9}" \
           f"{'÷ verify':>10}{'begin ms':>10}  goal"
    print(head)
    spec = SpecSettings(types=NGRAM_TYPES)
    built = []
    for name in NGRAM_TYPES:
        try:
            make_drafter(name, spec)
        except ImportError as exc:
            print(f"{name:<28}skipped: its module is not written yet ({exc.name or exc})")
            continue
        built.append(name)
        report(name, lambda n=name: Chain([make_drafter(n, spec)]), tokens, args.rounds, t_verify)
    if len(built) > 1:
        label = ",".join(built)
        report(label, lambda: Chain([make_drafter(n, spec) for n in built]), tokens, args.rounds, t_verify)
    return 0


def report(label: str, make, tokens: np.ndarray, rounds: int, t_verify: float) -> None:
    per_round, t_begin, accepted = simulate(make(), tokens, rounds)
    if not per_round:
        print(f"{label:<28}no rounds")
        return
    us = np.array(per_round) * 1e6
    med = float(np.median(us))
    share = med * 1e-6 / t_verify
    print(f"{label:<28}{len(us):>7}{accepted:>9}{med:>11.1f}{np.percentile(us, 90):>9.1f}{us.max():>9.1f}"
          f"{100 * share:>9.1f}%{1e3 * t_begin:>10.1f}  {'ok' if share <= GOAL else 'OVER'}")


if __name__ == "__main__":
    raise SystemExit(main())
