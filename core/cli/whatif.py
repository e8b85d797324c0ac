"""``specscope whatif SESSION``: every n-gram drafter and chain replayed against a recorded
greedy run, ranked (core/measure/whatif/ngram.py). No model is needed, except to calibrate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specscope.core.engine.engine import Engine
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.calibrate import get_calibration
from specscope.core.measure.bench.sweep import uncalibratable
from specscope.core.measure.whatif.ngram import longest_drafted, priced, ranked, whatifs
from specscope.core.measure.whatif.run import unreplayable
from specscope.core.session.session import Session

HEADER = f"{'configuration':44} {'rounds':>6} {'accept':>7} {'tokens/round':>12} " \
         f"{'lookup µs':>9} {'predicted':>9}"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "whatif", help="replay every n-gram drafter and chain against a recorded greedy run",
        description="With greedy sampling the target's output does not depend on the drafter, so "
                    "one recorded run (run or baseline --record) fixes the continuation: every "
                    "n-gram type and chain is replayed against it without a model, and ranked by "
                    "the speed-up the calibrated cost model predicts (--calibrate) or by tokens "
                    "per round.")
    p.add_argument("session", type=Path, help="a session file of a greedy run (run/baseline --record)")
    p.add_argument("--calibrate", action="store_true",
                   help="load the session's target and calibrate it on this machine (cached): "
                        "predicted speed-ups")
    p.add_argument("--top", type=int, default=0, metavar="N", help="print the best N only")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    return p


def _calibration(session: Session, k_max: int):
    s = session.settings
    with Engine(s.target, None, s.engine) as engine:
        why = uncalibratable(engine)
        if why:
            raise ConfigError(f"{s.target}: {why}")
        cal, _ = get_calibration(engine, k_max, sampler=s.sampler)
    return cal


def run(args) -> int:
    session = Session.load(args.session)
    s = session.settings
    why = unreplayable(session)     # sampled, synthetic acceptance, or no tokens: the window's rule
    if why:
        raise ConfigError(f"{args.session}: {why}")
    cont = session.run.tokens
    ws = whatifs(list(session.prompt_tokens), cont, n_ctx=s.engine.n_ctx, n_predict=s.n_predict)
    cal = _calibration(session, longest_drafted(ws) + 1) if args.calibrate else None
    ws = ranked(priced(w, cal) for w in ws)
    shown = ws[:args.top] if args.top > 0 else ws
    if args.json:
        print(json.dumps({"session": str(args.session), "tokens": len(cont),
                          "calibrated": cal is not None,
                          "configurations": [w.to_dict() for w in shown]}, indent=1))
        return 0
    print(f"{args.session}: {len(cont)} tokens, {len(ws)} configurations replayed"
          + (f"; predicted: the speed-up this machine's calibration (k up to {cal.k_max}, at "
             f"position {cal.n_past}) gives for each" if cal else " (speed-ups need --calibrate)"))
    print(HEADER)
    for w in shown:
        speedup = f"{w.predicted:8.2f}x" if w.predicted is not None else f"{'-':>9}"
        print(f"{w.name[:44]:44} {w.stats.n_rounds:6d} {w.stats.acceptance_rate:7.1%} "
              f"{w.tokens_per_round:12.2f} {w.lookup_s * 1e6:9.0f} {speedup}")
    return 0
