"""Benchmark (not a test): does the advisor's stated interval hold when its recommendation is
measured again with `specscope bench`?

    python tests/bench/bench_advise_recheck.py [-m TARGET] [-md DRAFT ...] [--budget 3m]
        [--categories ...] [-n 64] [-t 1] [--repeats 5] [--out recheck.json]

Runs `specscope advise` in-process (the demo pair by default), then, per category, takes its
recommendation (or, for "don't speculate", the best candidate tried) and runs `specscope bench`
``--repeats`` times on the category's prompts, as the advisor gave them to the target (chat
prompts already in the target's template), with the command line the advice prints
(``llama_command``'s flags are bench's flags too). Each bench run is its own process with its own
baselines and its default three repetitions; its speed-up is bench's pooled one over the
category's prompts. Prints, per category, the advised figure and interval, the five
re-measurements, how many land inside, and whether their median does; the issue's check is the median inside for at least 7 of 8 categories.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specscope.core.cli.advise import parse_budget
from specscope.core.engine.engine import EngineSettings
from specscope.core.measure.advise.advice import AdviseSettings
from specscope.core.measure.advise.advisor import advise
from specscope.core.measure.advise.report import llama_command, summary_lines, to_dict
from specscope.core.measure.bench.workloads import CATEGORIES
from specscope.core.models.demo import demo_pair


def bench_once(words: list[str], prompts: Path, n_predict: int) -> float | None:
    cmd = [sys.executable, "-m", "specscope.core.cli.main", "bench", *words, "--prompts", str(prompts),
           "-n", str(n_predict), "--json", "--no-lossless", "-q"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"    bench failed ({out.returncode}): {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    rows = [r for r in json.loads(out.stdout)["rows"] if r.get("measured_speedup") is not None]
    pooled = [r for r in rows if r["prompt"] == "ALL"] or rows    # one row per prompt, then ALL
    return pooled[0]["measured_speedup"] if pooled else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path, action="append")
    p.add_argument("--budget", default="3m")
    p.add_argument("--categories", nargs="+", default=list(CATEGORIES))
    p.add_argument("-n", "--n-predict", type=int, default=64)
    p.add_argument("-t", "--threads", type=int, default=0)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, help="write the advice and the re-measurements as JSON")
    a = p.parse_args(argv)
    target, drafts = a.model, list(a.model_draft or [])
    if target is None:
        target, demo_draft = demo_pair()
        drafts = drafts or [demo_draft]
    s = AdviseSettings(target=Path(target), drafts=tuple(map(Path, drafts)),
                       categories=tuple(a.categories), budget_s=parse_budget(a.budget),
                       n_predict=a.n_predict,
                       engine=EngineSettings(target_threads=a.threads, draft_threads=a.threads))
    t0 = time.monotonic()
    advice = advise(s, lambda line: print(line, file=sys.stderr, flush=True))
    print(f"advise: {time.monotonic() - t0:.0f} s (budget {s.budget_s:.0f} s)")
    print("\n".join(summary_lines(advice)))
    results, inside = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for cat in advice.categories:
            d = cat.decision()
            m = d.best or d.runner_up
            iv = m.interval() if m else None
            if iv is None:
                print(f"{cat.category}: no interval to check")
                continue
            prompts = Path(tmp) / f"{cat.category}.json"
            prompts.write_text(json.dumps({"prompts": [{"name": q.workload.name, "text": q.text}
                                                       for q in cat.prompts if q.cont]}))
            words = shlex.split(llama_command(advice, m, tool="bench"))[1:]
            again = [x for x in (bench_once(words, prompts, s.n_predict) for _ in range(a.repeats))
                     if x is not None]
            med = statistics.median(again) if again else None
            hits = sum(iv[1] <= x <= iv[2] for x in again)
            ok = med is not None and iv[1] <= med <= iv[2]
            inside += ok
            print(f"{cat.category:18s} {d.verdict:38s} advised {iv[0]:.2f}x ({iv[1]:.2f}-{iv[2]:.2f}); "
                  f"bench x{len(again)}: {' '.join(f'{x:.2f}' for x in again)}; median "
                  f"{med if med is None else round(med, 2)} {'inside' if ok else 'OUTSIDE'}; "
                  f"{hits}/{len(again)} runs inside")
            results.append({"category": cat.category, "verdict": d.verdict, "checked": m.candidate.name,
                            "advised": list(iv), "bench": again, "median_inside": ok, "runs_inside": hits})
    print(f"median inside the stated interval: {inside} of {len(results)} categories")
    if a.out:
        a.out.write_text(json.dumps({"advice": to_dict(advice), "recheck": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
