"""Figures (not a test): draft-simple's draft-length policies under the hindsight ceiling, per
workload category (core/measure/whatif/draft.py, resources/prompts/workloads.json).

    python tests/bench/bench_draft_ceiling.py [--pair demo|smollm2|both] [-n 128] [-t 1]
                                              [--traces DIR]

Per pair (the demo pair; SmolLM2-135M-Instruct Q4_1 drafting for itself): the target alone on
every workload prompt, greedy, a chat prompt in the target's chat template where it has one;
one teacher-forced pass of the draft over each continuation; the pair's calibration (cached).
Then, from replays priced by the calibrated model and pooled over a category's prompts (tokens
over cost), per category:

- the hindsight ceiling, and as shares of it every fixed n 1..8, the best fixed n, the best
  p_min (n 1..8 × p_min 0.3..0.9), hf and cost (n_max 8);
- where the best fixed n, the best p_min, hf and cost lose against the hindsight-best: their
  rounds too long and too short, and how much of their cost over the ceiling's each kind makes;
- held out: the best fixed n and the best p_min picked on prompts 1-3 of each category, every
  setting measured on prompts 4-6.

No timing but the calibration's: the figures are exact replays. ``--traces DIR`` keeps each
pair's traces and calibration there (``PAIR.json``) and reads them back on the next run, so a
change of policy is priced on the same traces and costs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers

N_PRED = 128
N_CTX = 2048
HELD_OUT = 3              # prompts 1..HELD_OUT of each category pick, the rest are measured


def collect(target: Path, draft: Path, n_predict: int, threads: int) -> dict:
    """The pair's calibration, and per workload prompt the draft's trace of the target's run."""
    from specscope.core.engine.engine import Engine, EngineSettings
    from specscope.core.engine.sampling import SamplerSettings
    from specscope.core.measure.cost.calibrate import get_calibration
    from specscope.core.measure.whatif.draft import N_MAX_RANGE, trace_draft
    from specscope.core.measure.bench.workloads import load_workloads
    from specscope.core.models.chat import chat_template, render_messages

    settings = EngineSettings(n_ctx=N_CTX, target_threads=threads, draft_threads=threads)
    n_max = max(N_MAX_RANGE)
    out = {"target": target.name, "draft": draft.name, "n_predict": n_predict, "prompts": []}
    with Engine(target, draft, settings) as engine:
        cal, _ = get_calibration(engine, n_max + 1, sampler=SamplerSettings(), k_draft=n_max + 1)
        out["calibration"] = cal.to_dict()
        for w in load_workloads():
            text = render_messages(engine.target, list(w.messages)) \
                if w.chat and chat_template(engine.target) else w.text
            run = engine.baseline(text, SamplerSettings(), n_predict)
            list(run)
            trace = trace_draft(engine, run.prompt_tokens, run.tokens, depth=n_max - 1)
            out["prompts"].append({"name": w.name, "category": w.category, "trace": asdict(trace)})
    return out


def traces_of(data: dict):
    """(calibration, [(name, category, DraftTrace)]) of collect()'s output, or of its JSON."""
    from specscope.core.measure.cost.model import Calibration
    from specscope.core.measure.whatif.draft import DraftTrace

    out = []
    for p in data["prompts"]:
        t = p["trace"]
        tails = {int(k): tuple(tuple(x) for x in v) for k, v in t["tails"].items()}
        out.append((p["name"], p["category"],
                    DraftTrace(*(tuple(t[k]) for k in ("prompt", "cont", "top", "p", "margin")), tails,
                               t.get("depth", 0), t.get("p_floor", 0.0))))
    return Calibration.from_dict(data["calibration"]), out


def tally(data: dict):
    """{category: {setting: [tokens, cost, too long, too short, cost long, cost short, rounds]}}
    over the prompts 1..HELD_OUT ("pick") and the others ("measure") apart, and all."""
    from specscope.core.measure.whatif.draft import draft_label, draft_specs, hindsight, missed, price, replay_draft

    cal, traces = traces_of(data)
    specs = [s for s in draft_specs() if s.draft_policy == "fixed" or s.n_max == 8]
    out = {part: defaultdict(lambda: defaultdict(lambda: [0.0] * 7)) for part in ("all", "pick", "measure")}
    for name, cat, trace in traces:
        part = "pick" if int(name.rsplit("-", 1)[1]) <= HELD_OUT else "measure"
        kw = dict(n_ctx=N_CTX, n_predict=data["n_predict"])
        ceiling = hindsight(trace, cal, **kw)
        tokens = len(trace.cont)
        rows = {"ceiling": (tokens / ceiling.speedup, None)}
        for spec in specs:
            rounds = replay_draft(trace, spec, cal=cal, **kw)
            rows[draft_label(spec)] = (tokens / price(cal, rounds), missed(rounds, ceiling, cal))
        for label, (cost, m) in rows.items():
            for where in (out["all"], out[part]):
                t = where[cat][label]
                t[0] += tokens
                t[1] += cost
                if m is not None:
                    for i, v in enumerate((m.too_long, m.too_short, m.cost_long, m.cost_short, m.rounds), 2):
                        t[i] += v
    return out


def speed(t) -> float:
    """Pooled speed-up over the target alone in the calibration's units (tokens over cost)."""
    return t[0] / t[1] if t[1] else 0.0


def best(rows: dict, kind: str, by: dict | None = None) -> str:
    """The best label of a kind ("n" fixed lengths, "p" with p_min), by ``by``'s figures."""
    labels = [k for k in rows if k.startswith("draft-simple n=") and ("p_min" in k) == (kind == "p")]
    return max(labels, key=lambda k: speed((by or rows)[k]))


def short(label: str) -> str:
    return label.replace("draft-simple ", "").replace(" n≤8", "")


POLICIES = ("draft-simple hf n≤8", "draft-simple cost n≤8")


def report(title: str, data: dict, cats) -> None:
    cal, _ = traces_of(data)
    parts = tally(data)
    rows_all = parts["all"]
    b = cal.baseline_token
    print(f"\n## {title}\n\n{len(data['prompts'])} prompts, {data['n_predict']} tokens at most each; "
          f"calibration: draft token f = {cal.f:.3f}, c(2) = {cal.cost(2):.2f}, "
          f"c(9) = {cal.cost(9):.2f} target tokens" + (" (TAKEN UNDER LOAD: rerun on a quiet machine)"
                                                       if cal.under_load else "") + "\n")
    print("| category | ceiling | " + " | ".join(f"n={n}" for n in range(1, 9))
          + " | best fixed n | best p_min | hf | cost |")
    print("|---" * 14 + "|")
    for cat in cats:
        rows = rows_all[cat]
        top = speed(rows["ceiling"])
        share = lambda k: f"{speed(rows[k]) / top:.1%}"
        fixed, pmin = best(rows, "n"), best(rows, "p")
        print(f"| {cat} | {top * b:.2f}× | " + " | ".join(share(f"draft-simple n={n}") for n in range(1, 9))
              + f" | {share(fixed)} ({short(fixed)}) | {share(pmin)} ({short(pmin)}) | "
              + " | ".join(share(k) for k in POLICIES) + " |")
    print("\nWhere they lose against the hindsight-best (rounds too long / too short; the share of "
          "the cost over the ceiling's that the rounds too short make):\n")
    print("| category | best fixed n | best p_min | hf | cost |\n|---|---|---|---|---|")
    for cat in cats:
        rows = rows_all[cat]
        cells = []
        for k in (best(rows, "n"), best(rows, "p"), *POLICIES):
            t = rows[k]
            excess = t[4] + t[5]
            cells.append(f"{t[2] / t[6]:.0%} / {t[3] / t[6]:.0%}; {t[5] / excess:.0%}" if excess > 0 else "-")
        print(f"| {cat} | " + " | ".join(cells) + " |")
    pick, measure = parts["pick"], parts["measure"]
    print(f"\nHeld out: settings picked on prompts 1-{HELD_OUT} of each category, shares of the "
          f"ceiling on the others:\n")
    print("| category | ceiling | fixed n picked | best fixed n | p_min picked | hf | cost |\n"
          "|---|---|---|---|---|---|---|")
    for cat in cats:
        rows = measure[cat]
        top = speed(rows["ceiling"])
        share = lambda k: f"{speed(rows[k]) / top:.1%}"
        fixed, pmin, oracle = best(rows, "n", pick[cat]), best(rows, "p", pick[cat]), best(rows, "n")
        print(f"| {cat} | {top * b:.2f}× | {share(fixed)} ({short(fixed)}) | {share(oracle)} ({short(oracle)}) "
              f"| {share(pmin)} ({short(pmin)}) | " + " | ".join(share(k) for k in POLICIES) + " |")


def main(argv=None) -> int:
    from specscope.core.measure.bench.workloads import CATEGORIES
    from specscope.core.models.demo import demo_pair
    from helpers.realmodel import smollm2_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", choices=("demo", "smollm2", "both"), default="both")
    ap.add_argument("-n", "--n-predict", type=int, default=N_PRED)
    ap.add_argument("-t", "--threads", type=int, default=1)
    ap.add_argument("--traces", type=Path, help="keep the traces and calibrations here")
    args = ap.parse_args(argv)
    for name in (("demo", "smollm2") if args.pair == "both" else (args.pair,)):
        saved = args.traces / f"{name}.json" if args.traces else None
        if saved is not None and saved.is_file():
            data = json.loads(saved.read_text())
        else:
            target, draft = demo_pair() if name == "demo" else (smollm2_path(),) * 2
            data = collect(Path(target), Path(draft), args.n_predict, args.threads)
            if saved is not None:
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_text(json.dumps(data))
        report(f"{data['target']} ← {data['draft']}", data, CATEGORIES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
