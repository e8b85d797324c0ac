"""Calibration benchmark (not a test): how far the calibrated prediction is from the measured
speed-up, and which part of a round the calibration misprices.

    python tests/bench/bench_calibration.py                       # the demo pair, then SmolLM2 as its own draft
    python tests/bench/bench_calibration.py --pair demo --n 2,4 --repeats 5
    python tests/bench/bench_calibration.py --pair skip --keep 26 # SmolLM2 with its first 26 of 30 layers as draft
    python tests/bench/bench_calibration.py --check               # the drift check: cost and spread
    python tests/bench/bench_calibration.py -t 0                  # all cores (on a quiet machine)
    python tests/bench/bench_calibration.py --cpu-clock           # a busy machine: CPU time (1 thread)

For every pair: one fresh calibration (the cache is not used), then per draft length n the
bench prompts' baseline and speculative runs, alternating, ``--repeats`` times. It prints

- per n: the measured speed-up (as ``specscope bench`` pools it: medians over repeats), the
  calibrated prediction of a calibration measured as version 7 did ("before":
  ``calibrate(legacy=True)``: the reuse sync's row timed without the logits the engine
  computes for it, and a draft graph rebuild charged after it that the engine does not pay)
  and of one measured as now ("after"), and their errors;
- per phase of a round (RoundEvent's t_draft, t_verify, t_sync and the Python rest), the
  measured time per round beside what the calibrated model charges for the same rounds (each
  round priced with its own draft length and acceptance), in ms and as a ratio; the baseline's
  per-token time likewise. A ratio far from the baseline's is what the calibration misses.

Timings are noisy on a shared machine: say so when quoting them, and prefer the ratios.
``--cpu-clock`` (one thread per context) times the calibration's decodes with the thread's CPU
time and measures the speed-up from the runs' process CPU time after their first round: a
process waiting for a core uses none, so this approximates a quiet machine's figures where
wall time cannot (the Python overheads stay wall time: the engine's rounds time them).
SmolLM2 (``~/.cache/specscope/test-models/SmolLM2-135M-Instruct.Q4_1.gguf``, or
``$SPECSCOPE_SMOLLM2``) is skipped with a line when it is not there. ``--pair skip`` drafts
with a layer-skipping copy of it (:func:`layer_skip_draft`: the first ``--keep`` blocks, the
output norm and head; written to the temporary folder with the gguf package, tensors copied
as they are).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from specscope.core.measure.cost import calibrate as cb
from specscope.core.measure.bench.lossless import run_result
from specscope.core.measure.cpuload import LoadMeter
from specscope.core.models.demo import demo_pair
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.bench.rows import Cell, make_row
from specscope.core.measure.bench.settings import load_prompts

PHASES = ("draft", "verify", "sync", "python")


def smollm2() -> Path | None:
    env = os.environ.get("SPECSCOPE_SMOLLM2")
    path = Path(env) if env else Path.home() / ".cache/specscope/test-models/SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


def layer_skip_draft(src: Path, keep: int, out: Path) -> Path:
    """A draft made of ``src``'s first ``keep`` transformer blocks (self-speculative decoding's
    early exit): every metadata field and tensor copied unchanged but the block count and the
    blocks from ``keep`` on."""
    import gguf
    reader = gguf.GGUFReader(str(src))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(str(out), arch=arch, endianess=reader.endianess)
    count_key = gguf.Keys.LLM.BLOCK_COUNT.format(arch=arch)
    for fld in reader.fields.values():
        if fld.name == gguf.Keys.General.ARCHITECTURE or fld.name.startswith("GGUF."):
            continue
        kind = fld.types[0]
        sub = fld.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(fld.name, keep if fld.name == count_key else fld.contents(), kind, sub_type=sub)
    tensors = [t for t in reader.tensors
               if not t.name.startswith("blk.") or int(t.name.split(".")[1]) < keep]
    for t in tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in tensors:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    return out


def model_phases(cal: cb.Calibration, ev, prev_synced: bool, sync: str) -> dict[str, float]:
    """What the calibrated model charges for this round, per phase, in seconds (the round's own
    draft length and acceptance; ``prev_synced``: the round before ended with a draft sync
    decode, so this round's first draft decode rebuilds the draft's graph)."""
    t1 = cal.t1
    if ev.mode == "baseline":
        return {"draft": 0.0, "verify": (cal.baseline_token - cal.o_base) * t1, "sync": 0.0,
                "python": cal.o_base * t1}
    n = len(ev.drafted)
    a = ev.n_accepted
    full = a == n            # a plain round (no draft: the run's budget) syncs its one row too
    rebuild = prev_synced if sync == "replay" or cal.reuse_rebuilds else False
    draft = n * cal.f + (max(0.0, cal.f_first - cal.f) if (n and rebuild) else 0.0)
    verify = cal.cost(n + 1) + cal.s * (a + 1)
    if sync == "replay":
        sync_cost = cal.r + cal.draft_batch(n + 1)
    else:
        sync_cost = cal.r + (cal.draft_batch(1) if full else 0.0)
    return {"draft": draft * t1, "verify": verify * t1, "sync": sync_cost * t1,
            "python": (cal.o0 + cal.o1 * n) * t1}


def measured_phases(ev) -> dict[str, float]:
    return {"draft": ev.t_draft, "verify": ev.t_verify, "sync": ev.t_sync, "python": ev.t_overhead}


def timed(run, cpu_per_token: list[float]) -> list:
    """The run's events; appends its process CPU seconds per token after the first round
    (prefill and round 0, with their graph builds, left out of both kinds of run alike)."""
    events, t0 = [], None
    for ev in run:
        events.append(ev)
        if t0 is None:
            t0 = time.process_time()
    tokens = sum(len(ev.emitted) for ev in events[1:])
    if tokens:
        cpu_per_token.append((time.process_time() - t0) / tokens)
    return events


def phase_table(cal, events_by_kind: dict[str, list], sync: str) -> list[str]:
    """Per kind of run (baseline, n=...): measured and modelled ms per round of every phase."""
    lines = [f"  {'run':<9}{'phase':<8}{'measured ms':>12}{'model ms':>10}{'ratio':>8}"]
    for kind, runs in events_by_kind.items():
        meas = {p: [] for p in PHASES + ("round",)}
        model = {p: [] for p in PHASES + ("round",)}
        for events in runs:
            prev_synced = False
            m_sum = {p: 0.0 for p in PHASES}
            d_sum = {p: 0.0 for p in PHASES}
            for i, ev in enumerate(events):
                mp, dp = measured_phases(ev), model_phases(cal, ev, prev_synced, sync)
                prev_synced = sync == "replay" or (bool(ev.drafted) and ev.n_accepted == len(ev.drafted))
                if i == 0:           # the first round rebuilds graphs; the runs' own figures include it
                    pass
                for p in PHASES:
                    m_sum[p] += mp[p]
                    d_sum[p] += dp[p]
            rounds = max(1, len(events))
            for p in PHASES:
                meas[p].append(m_sum[p] / rounds)
                model[p].append(d_sum[p] / rounds)
            meas["round"].append(sum(ev.t_round for ev in events) / rounds)
            model["round"].append(sum(d_sum.values()) / rounds)
        for p in PHASES + ("round",):
            m, d = statistics.median(meas[p]), statistics.median(model[p])
            if m == 0 and d == 0:
                continue
            ratio = f"{m / d:8.3f}" if d > 0 else "       -"
            lines.append(f"  {kind:<9}{p:<8}{1e3 * m:12.3f}{1e3 * d:10.3f}{ratio}")
    return lines


def bench_pair(name: str, target: Path, draft: Path, args) -> None:
    settings = EngineSettings(n_ctx=1024, target_threads=args.threads, draft_threads=args.threads)
    sampler = SamplerSettings(temperature=args.temp) if args.temp > 0 else SamplerSettings()
    prompts = load_prompts(None)[: args.prompts]
    n_values = [int(x) for x in args.n.split(",")]
    print(f"\n=== {name}: target {target.name}, draft {draft.name}, {args.threads or 'all'} thread(s), "
          f"{len(prompts)} prompts × {args.repeats} repeats, {args.n_predict} tokens, "
          f"sampler {sampler.describe()}, sync {args.sync}")
    with Engine(target, draft, settings) as engine:
        list(engine.speculative(prompts[0][1], SpecSettings(n_max=2), sampler, 8))   # warm-up
        k_max = max(n_values) + 1
        clock = time.thread_time if args.cpu_clock else time.perf_counter
        cals = {}
        for label, legacy in (("before", True), ("after", False)):
            cals[label] = cal = cb.calibrate(engine, k_max, sampler=sampler, n_past=args.n_past,
                                             time_budget_s=args.calibration_seconds, legacy=legacy,
                                             clock=clock)
            print(f"calibration {label}: {cal.status(False)}")
            for line in cal.lines():
                print("  " + line)
        cal = cals["after"]
        cpu: dict[tuple[int, str], list[float]] = {}      # (n or 0, prompt): CPU s per token
        cells = {(n, p): Cell(name, n, p) for n in n_values for p, _ in prompts}
        events: dict[str, list] = {"baseline": []}
        meter = LoadMeter()
        for rep in range(args.repeats):
            for p_name, text in prompts:
                run = engine.baseline(text, sampler, args.n_predict)
                base_events = timed(run, cpu.setdefault((0, p_name), []))
                base = run_result("baseline", run, base_events)
                events["baseline"].append(base_events)
                order = n_values[rep % len(n_values):] + n_values[:rep % len(n_values)]
                for n in order:
                    spec = SpecSettings(n_max=n, sync=args.sync)
                    run = engine.speculative(text, spec, sampler, args.n_predict)
                    evs = timed(run, cpu.setdefault((n, p_name), []))
                    events.setdefault(f"n={n}", []).append(evs)
                    cells[(n, p_name)].add(run_result("spec", run, evs, n), base)
        print(f"runs: {meter.reading().describe()}")
        what = "CPU time after the first round" if args.cpu_clock else "wall time, as bench"
        print(f"\n  measured speed-up: {what}")
        print(f"  {'n':>3}{'measured':>10}{'before':>10}{'(err)':>9}{'after':>10}{'(err)':>9}")
        for n in n_values:
            group = [c for (m, _), c in cells.items() if m == n]
            row_after = make_row(name, n, "ALL", group, cal, args.sync)
            row_before = make_row(name, n, "ALL", group, cals["before"], args.sync)
            measured = row_after.measured_speedup
            if args.cpu_clock:
                base = sum(statistics.median(cpu[(0, p)]) for p, _ in prompts)
                measured = base / sum(statistics.median(cpu[(n, p)]) for p, _ in prompts)
            before, after = row_before.calibrated_speedup, row_after.calibrated_speedup
            print(f"  {n:>3}{measured:10.3f}{before:10.3f}{100 * (before / measured - 1):+8.1f}%"
                  f"{after:10.3f}{100 * (after / measured - 1):+8.1f}%")
        print("\n  per phase of a round, medians over the runs (model: the calibration's charge for "
              "the same rounds):")
        for line in phase_table(cal, events, args.sync):
            print(line)


def check_spread(target: Path, draft: Path, args, name: str) -> None:
    """The drift check: its cost (wall ms, including the prefix) and how much its result
    varies from one check to the next on this machine (the tolerance must exceed that)."""
    settings = EngineSettings(n_ctx=1024, target_threads=args.threads, draft_threads=args.threads)
    with Engine(target, draft, settings) as engine:
        costs, values = [], []
        for _ in range(args.checks):
            meter = LoadMeter()
            t = time.perf_counter()
            values.append(cb.check_timing(engine))
            costs.append(time.perf_counter() - t)
        for i, what in enumerate(("a token in a stream", "a token after a batch")):
            vals = [v[i] for v in values]
            med = statistics.median(vals)
            dev = sorted(abs(v / med - 1.0) for v in vals)
            print(f"{name}: drift check {args.checks}×, {what}: timing median {1e3 * med:.3f} ms, "
                  f"|deviation| from it: median {100 * dev[len(dev) // 2]:.1f}%, 90th percentile "
                  f"{100 * dev[int(0.9 * (len(dev) - 1))]:.1f}%, max {100 * dev[-1]:.1f}%")
        print(f"{name}: the check's cost median {1e3 * statistics.median(costs):.1f} ms "
              f"(max {1e3 * max(costs):.1f}); {meter.reading().describe()} (last check)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", choices=("demo", "smollm2", "skip", "both"), default="both",
                   help="both: demo and smollm2; skip: SmolLM2 with a layer-skipping draft")
    p.add_argument("--keep", type=int, default=26, help="--pair skip: blocks the draft keeps (default 26)")
    p.add_argument("--n", default="2,4", help="draft lengths (default 2,4)")
    p.add_argument("-n", "--n-predict", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--prompts", type=int, default=5, help="how many bench prompts (default all 5)")
    p.add_argument("-t", "--threads", type=int, default=1, help="threads per context (0: all cores; default 1)")
    p.add_argument("--temp", type=float, default=0.0)
    p.add_argument("--sync", choices=cb.SYNC_MODES, default="reuse")
    p.add_argument("--n-past", type=int, default=96, help="calibration position (default 96)")
    p.add_argument("--calibration-seconds", type=float, default=cb.TIME_BUDGET_S)
    p.add_argument("--cpu-clock", action="store_true",
                   help="CPU time instead of wall time (use with -t 1 on a busy machine)")
    p.add_argument("--check", action="store_true", help="only the drift check's cost and spread")
    p.add_argument("--checks", type=int, default=20)
    args = p.parse_args(argv)
    pairs = []
    if args.pair in ("demo", "both"):
        t, d = demo_pair()
        pairs.append(("demo", Path(t), Path(d)))
    if args.pair in ("smollm2", "skip", "both"):
        path = smollm2()
        if path is None:
            print("SmolLM2-135M-Instruct.Q4_1.gguf not found: skipped (set SPECSCOPE_SMOLLM2)")
        elif args.pair == "skip":
            import tempfile
            out = Path(tempfile.gettempdir()) / f"{path.stem}.first{args.keep}.gguf"
            pairs.append((f"smollm2 first {args.keep} blocks", path, layer_skip_draft(path, args.keep, out)))
        else:
            pairs.append(("smollm2", path, path))
    for name, target, draft in pairs:
        if args.check:
            check_spread(target, draft, args, name)
        else:
            bench_pair(name, target, draft, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
