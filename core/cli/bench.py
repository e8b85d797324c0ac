"""``specscope bench``: drafters × drafts × draft lengths × prompts, measured against the
target alone.

    specscope bench -m TARGET.gguf -md DRAFT1.gguf -md DRAFT2.gguf \\
                    --spec-draft-n-max 1,2,4,8 --prompts prompts.json --csv out.csv
    specscope bench --spec-type draft-simple ngram-simple ngram-simple,draft-simple

``--spec-type`` takes one chain per word (commas join the types of a chain; llama.cpp's
priority order decides who drafts first). n (``--spec-draft-n-max``) belongs to the model
drafters (every type but the n-gram ones): a chain of n-gram types alone runs once, whatever
the list of n, and needs no draft model. Each ``-md`` file is a draft model (draft-simple's) or a
head (its types', registry.SpecType.head), as its GGUF header says: ``-md DRAFT -md HEAD
--spec-type draft-simple draft-eagle3 ngram-mod`` puts the three side by side on one target;
draft-mtp drafts with the target's own MTP blocks (no file).
With n-gram types the table gains the Python lookup time per round and, per member of a
chain, the rounds it won and its acceptance.

Prints, per draft, the calibrated cost figures (c(k), f, ...; see
docs/calibration.md), then one pooled row per draft × n: acceptance,
mean accepted length, tokens/s, the measured speed-up against a target-only run
of the same prompts, the textbook prediction and the calibrated
prediction with their errors, and the lossless check. ``--json`` prints one
JSON document instead; ``--csv``/``--out-json`` write files (the CSV columns are
documented in docs/sweep.md). A progress line goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from specscope.core.cli.args import (add_model_args, engine_settings, output_path, write_or_say,
                                     write_text_whole)
from specscope.core.cli.spec import add_spec_args, spec_from_args
from specscope.core.engine.drafters.registry import drafts_with
from specscope.core.engine.drafters import DRAFT_MODEL, MD_TYPES, MODEL_TYPES, parse_types, type_label
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.engine.synth import WARNING
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.calibrate import TIME_BUDGET_S
from specscope.core.measure.cost.distance import cost_lines, placement_settings
from specscope.core.measure.bench.lossless import DETERMINISTIC_HINT, is_deterministic
from specscope.core.measure.bench.sweep import DEFAULT_REPEATS, run_sweep
from specscope.core.measure.bench.report import (BUSY_SHARE, HEATMAP_KEY, NGRAM_ONLY_NOTE,
                                                 format_heatmap, format_table, prediction_caveat)
from specscope.core.measure.bench.settings import (MODEL_FILE, SweepSettings, config_name, eog_bias,
                                                   file_types, load_prompts, parse_n_values,
                                                   parse_p_values)
from specscope.core.measure.bench.synth_sweep import run_synth_sweep
from specscope.core.models.demo import demo_pair
from specscope.core.models.devices import add_rpc_servers, placement, rpc_device_names
from specscope.core.models.probe import guard

PROGRESS_PERIOD_S = 0.1


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "bench", help="measure speed-up over drafters × drafts × draft lengths × prompts",
        description="Measure speed-up over drafters (--spec-type chains) × drafts × draft lengths × "
                    "prompts against the target alone, beside the textbook prediction and the "
                    "prediction calibrated on this machine.")
    add_model_args(p, draft=False)
    add_spec_args(p, bench=True)
    g = p.add_argument_group("sweep")
    g.add_argument("-md", "--model-draft", type=Path, action="append", default=None,
                   help="draft model, EAGLE-3 head or DFlash head (GGUF); repeat for several: "
                        f"each type drafts with each file of its kind ({drafts_with()}; default: "
                        "the demo draft when a chain uses draft-simple)")
    g.add_argument("--spec-draft-n-max", "--draft-max", default="1,2,4,8", metavar="N[,N...]",
                   help="draft-simple's draft lengths to try: a list like 1,2,4,8 or a range like 1-8 "
                        "(default 1,2,4,8; n-gram-only chains run once)")
    g.add_argument("--prompts", type=Path, default=None,
                   help="prompt-set file (.json, or text with prompts separated by '---' lines; "
                        "default: the shipped bench_prompts.json)")
    g.add_argument("-p", "--prompt", action="append", default=None,
                   help="a prompt (repeat for several; replaces the prompt set)")
    g.add_argument("--chat", action="store_true",
                   help="give each prompt as a user message in the target's own chat template "
                        "(as `specscope run --chat`)")
    g.add_argument("--system", metavar="TEXT", help="with --chat: a system message")
    g.add_argument("-n", "--n-predict", type=int, default=64, help="tokens per run (default 64)")
    g.add_argument("-r", "--repeats", type=int, default=DEFAULT_REPEATS,
                   help="runs per cell, each with its own baselines (default %(default)s): the table "
                        "shows the speed-up's spread over them and flags a row whose spread is wider "
                        "than its distance from 1x; -r 1 for one run (no spread)")
    g.add_argument("--synth-sweep", action="store_true",
                   help="measure speed-up against acceptance on this machine: run the pair (first "
                        "draft, largest n) at several synthetic mean accepted lengths (llama.cpp's "
                        "benchmark-only --spec-synth-len; the text is not valid output) beside the "
                        "textbook and calibrated predictions")
    g.add_argument("--synth-levels", default=None, metavar="L[,L...]",
                   help="with --synth-sweep: the mean accepted lengths (default 6 levels from 1 "
                        "to n + 1)")
    g.add_argument("--alpha", type=float, default=None,
                   help="also predict with an assumed per-token acceptance α")
    g.add_argument("--no-lossless", action="store_true", help="skip the lossless check")
    g.add_argument("--recalibrate", action="store_true", help="measure the costs again, ignoring the cache")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the calibration cache")
    g.add_argument("--calibration-seconds", type=float, default=None, metavar="S",
                   help="time budget for timing the decodes when calibrating (default 4)")
    g.add_argument("--placements", metavar="P[,P...]", default=None,
                   help="run the sweep once per placement and compare them side by side: local, "
                        "target-remote, draft-remote, both-remote (remote: every layer on the "
                        "devices of the first --rpc endpoint); prints the cost of distance per k")
    s = p.add_argument_group("sampling (the target's; drafts are greedy, except under --accept-rule ratio "
                             "at temperature, which samples them)")
    s.add_argument("--temp", type=float, default=0.0, help="temperature; 0 = greedy (default)")
    s.add_argument("--top-k", type=int, default=40)
    s.add_argument("--top-p", type=float, default=0.95)
    s.add_argument("--min-p", type=float, default=0.05)
    s.add_argument("-s", "--seed", type=int, default=42)
    s.add_argument("--ignore-eos", action="store_true",
                   help="never sample end-of-generation tokens (every run generates n tokens)")
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    o.add_argument("--csv", type=Path, help="write the table (every row) as CSV to this file")
    o.add_argument("--out-json", type=Path, help="write the JSON document to this file")
    o.add_argument("--per-prompt", action="store_true", help="print a row per prompt too")
    o.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    o.add_argument("-v", "--verbose", action="store_true", help="show llama.cpp's log")
    return p


class ProgressLine:
    """A one-line progress bar on stderr, redrawn with \\r at most 10 times a second."""

    def __init__(self, stream=None, width: int = 28):
        self.stream = stream or sys.stderr
        self.width = width
        self.last = 0.0
        self.shown = False
        self.t0 = time.monotonic()

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_PERIOD_S and done < total:
            return
        self.last = now
        frac = done / total if total else 1.0
        filled = int(round(self.width * frac))
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"\r[{bar}] {done}/{total} {now - self.t0:5.0f}s {what}"[:120]
        self.stream.write(line.ljust(100))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False


def _prompts(args) -> list[tuple[str, str]]:
    if args.prompt:
        return [(f"p{i}", text) for i, text in enumerate(args.prompt, 1)]
    return load_prompts(args.prompts)


def _sampler(args, target_path: Path):
    bias = ()
    if args.ignore_eos:
        bias = eog_bias(target_path)
    return SamplerSettings(temperature=args.temp, top_k=args.top_k, top_p=args.top_p,
                           min_p=args.min_p, seed=args.seed, logit_bias=bias)


def chains_from_args(args) -> tuple[tuple[str, ...], ...]:
    """--spec-type words to chains (each in llama.cpp's priority order), duplicates dropped."""
    chains: list[tuple[str, ...]] = []
    for word in args.spec_type or [DRAFT_MODEL]:
        chain = parse_types(word)
        if chain not in chains:
            chains.append(chain)
    return tuple(chains)


def settings_from_args(args):
    chains = chains_from_args(args)
    n_values = parse_n_values(args.spec_draft_n_max)
    used = {t for c in chains for t in c}
    kinds = {Path(d): file_types(d) for d in args.model_draft or []}
    # a draft model no chain drafts with is left out (unless a head's type has no head: the
    # settings say which files are not one); a head never is (SweepSettings refuses it)
    models = set(MODEL_FILE) & used               # the types drafting with a draft model
    no_head = any(t in MD_TYPES and not any(t in k for k in kinds.values()) for t in used - models)
    drafts = [d for d, k in kinds.items() if k != MODEL_FILE or models or no_head]
    no_model = bool(models) and all(kinds[d] != MODEL_FILE for d in drafts)
    target = args.model
    if target is None or no_model:
        demo_target, demo_draft = demo_pair()
        target = target or demo_target
        drafts += [demo_draft] if no_model else []
    if args.n_predict < 2:
        raise ConfigError(f"-n must be >= 2 for a benchmark, not {args.n_predict}")
    spec = spec_from_args(args, types=chains[0], n_max=max(n_values))
    if args.system is not None and not args.chat:
        raise ConfigError("--system needs --chat (it is a message in the chat template)")
    sampler = _sampler(args, Path(target))
    # at temperature the ratio rule draws other tokens than the baseline (same distribution)
    lossless = not args.no_lossless and (spec.accept_rule == "match" or sampler.greedy)
    return SweepSettings(
        chat=args.chat, system=args.system,
        target=Path(target), drafts=tuple(Path(d) for d in drafts), chains=chains, spec=spec,
        n_values=n_values, prompts=tuple(_prompts(args)),
        n_predict=args.n_predict, sampler=sampler,
        engine=engine_settings(args, spec), sync=args.sync, p_min=spec.p_min,
        p_min_values=parse_p_values(args.spec_draft_p_min),
        repeats=args.repeats, alpha=args.alpha,
        lossless=lossless and not spec.synthetic,     # synthetic text is not output
        recalibrate=args.recalibrate, use_cache=not args.no_cache,
        calibration_s=TIME_BUDGET_S if args.calibration_seconds is None else args.calibration_seconds)


def report_lines(result) -> list[str]:
    """The text report: settings, calibration, table, best n, lossless."""
    s = result.settings
    rule = getattr(s.spec, "accept_rule", "match")
    lines = [f"!!! {WARNING} !!!"] if s.spec is not None and s.spec.synthetic else []
    lines += [f"target: {s.target}",
             f"drafts: {', '.join(str(d) for d in s.drafts) or 'none (n-gram drafters only)'}",
             f"drafters: {', '.join(type_label(c) for c in s.chains)}",
             f"{len(s.prompts)} prompts × {s.repeats} repeat(s), {s.n_predict} tokens each, "
             f"n = {','.join(map(str, s.n_values))}, sync {s.sync}, sampler {s.sampler.describe()}, "
             f"KV {s.engine.kv_type}, flash attention {s.engine.flash_attn}"
             + (f", draft policy {s.spec.draft_policy} (n is its n_max)"
                if s.spec is not None and s.spec.draft_policy != "fixed" else "")
             + (", prompts in the target's chat template" if s.chat else "")
             + (f", acceptance rule {rule}" if rule != "match" else "")]
    if any(not set(c) & set(MODEL_TYPES) for c in s.chains):
        lines.append(NGRAM_ONLY_NOTE)
    for name, cal in result.calibrations.items():
        lines += ["", f"calibration of {name or 'the target alone (n-gram drafters)'}:",
                  "  " + cal.status(bool(result.from_cache.get(name)))] \
            + ["  " + ln for ln in cal.lines()]
    for name, why in result.uncalibrated.items():
        lines += ["", f"calibration of {name or 'the target alone (n-gram drafters)'}: {why}"]
    for name, why in result.skipped.items():
        lines += ["", f"skipped {name}: {why}"]
    lines += ["", format_table(result, per_prompt=False)]
    spread = ("spread: none with one repetition; -r 3 or more shows how far to trust a figure"
              if s.repeats == 1 else
              "spread: the lowest and highest speed-up over the repetitions, each against the baselines "
              "that bracket it; within noise: the spread is wider than the distance from 1x")
    lines.append(f"  ({spread}" + ("; never drafted: the run was the target alone plus the drafter's "
                                   "lookups" if any(r.never_drafted for r in result.rows) else "") + ")")
    if any(r.drafter not in MODEL_TYPES for r in result.pooled()):
        lines += ["  (lookup/round: Python time of the n-gram drafters per round, and in target "
                  "tokens, the draft cost of the calibrated prediction; rounds won: rounds whose "
                  "draft that member of the chain proposed)"]
    if any(r.vocab for r in result.pooled()):
        lines += ["  (translate/round: Python time per round of drafting across vocabularies, "
                  "re-tokenizing the text, and in target tokens: the calibrated prediction adds it "
                  "to every round; docs/cross-vocab.md)"]
    if result.pooled():
        lines += ["", f"measured speed-up, configurations × n ({HEATMAP_KEY}):", format_heatmap(result)]
    lines += side_by_side(result)
    best = result.best_n()
    if best:
        lines.append("")
        for name, b in best.items():
            picks = (f"calibrated model picks n={b['calibrated']} ({b['calibrated_speedup']:.3f}x), "
                     if b["calibrated"] is not None else "not calibrated, ")
            lines.append(f"best n for {name}: measured n={b['measured']} ({b['measured_speedup']:.3f}x); "
                         f"{picks}textbook n={b['textbook']} ({b['textbook_speedup']:.3f}x)")
    pooled = result.pooled()
    if pooled:
        cal_errs = [abs(r.calibrated_error) for r in pooled if math.isfinite(r.calibrated_error)]
        tb_err = max(abs(r.textbook_error) for r in pooled)
        cal_text = f"calibrated {100 * max(cal_errs):.1f}%, " if cal_errs else ""
        lines.append(f"largest error over the pooled rows: {cal_text}textbook {100 * tb_err:.1f}%")
        caveat = prediction_caveat(result)
        if caveat:
            lines.append(f"  {caveat}")
    if not s.lossless and rule == "ratio" and s.sampler is not None and not s.sampler.greedy:
        lines += ["", "lossless: not checked: at temperature the ratio rule emits other tokens than "
                      "the baseline, from the same distribution"]
    if s.lossless:
        lines.append("")
        if result.lossless_notes:
            lines.append(f"lossless: {len(result.lossless_notes)} run(s) differ from the baseline:")
            lines += ["  " + note for note in result.lossless_notes[:10]]
            if len(result.lossless_notes) > 10:
                lines.append(f"  ... and {len(result.lossless_notes) - 10} more")
        else:
            n_runs = sum(len(c.spec) for c in result.cells)
            lines.append(f"lossless: all {n_runs} speculative runs emitted exactly the baseline's tokens")
        if result.lossless_notes and not is_deterministic(s.engine):
            lines.append("  " + DETERMINISTIC_HINT)
    if result.others_cpu is not None:
        busy = result.others_cpu >= BUSY_SHARE
        lines += ["", f"other processes used {100 * result.others_cpu:.0f}% of the CPU during the sweep"
                  + (": timings are noisy (llama.cpp's threads stall when one loses its core); rerun "
                     "on a quieter machine, with --repeats, or with fewer threads (-t/-td)" if busy else "")]
    lines += thread_lines(result.cells)
    if result.stopped:
        lines += ["", "stopped before the end: the table holds the runs that finished"]
    return lines


def thread_lines(cells) -> list[str]:
    """Where threads auto moved during the sweep: the load changed while it measured (runs
    on other counts ran on a machine in another state)."""
    runs = [r for c in cells for r in (*c.spec, *c.baseline)]
    moved = sum(len(r.stats.threads) > 1 for r in runs)
    main = [r.stats.main_threads for r in runs if r.stats.threads]
    target = sorted({t[0] for t in main}, reverse=True)
    draft = sorted({t[1] for t in main if t[1]}, reverse=True)
    if not moved and len(target) <= 1 and len(draft) <= 1:
        return []
    on = lambda counts: " and ".join(map(str, counts))          # noqa: E731
    during = (f"threads auto changed during {moved} of {len(runs)} runs" if moved else
              "threads auto started the runs on different counts")
    return ["", f"{during} (the target on {on(target)} threads" + (f", the draft on {on(draft)}" if draft else "") + "): "
                "the machine's load changed while measuring; rerun on a steadier "
                "machine, or pin the counts (-t/-td) to compare like with like"]


def side_by_side(result) -> list[str]:
    """With several draft models (e.g. quantized copies from ``specscope quantize``): one line
    per draft, its calibrated cost ratio f beside its pooled acceptance and measured speed-up
    at each n, so what quantizing bought (f) reads beside what it cost (acceptance)."""
    pooled = {d: result.pooled(config_name(d, DRAFT_MODEL)) for d, cal in result.calibrations.items()
              if cal.has_draft}
    drafts = [d for d, rows in pooled.items() if rows]
    if len(drafts) < 2:
        return []
    ns = sorted({r.n_max for d in drafts for r in pooled[d]})
    width = max(len(d) for d in drafts)
    lines = ["", "drafts side by side (f: a draft token's cost in target tokens; per n: acceptance, "
                 "measured speed-up):",
             "draft".ljust(width) + "       f" + "".join(f"{'n=' + str(n):>17}" for n in ns)]
    for d in drafts:
        rows = {r.n_max: r for r in pooled[d]}
        cells = "".join((f"{100 * rows[n].acceptance:5.1f}% {rows[n].measured_speedup:6.3f}x"
                         if n in rows else "").rjust(17) for n in ns)
        lines.append(f"{d.ljust(width)}  {result.calibrations[d].f:6.3f}{cells}")
    return lines


def synth_levels_from_args(args) -> tuple[float, ...] | None:
    if args.synth_levels is None:
        return None
    try:
        return tuple(float(v) for v in args.synth_levels.split(","))
    except ValueError:
        raise ConfigError(f"--synth-levels: {args.synth_levels!r} is not a list of numbers like 1,2.5,4")


def run_synth(args, settings) -> int:
    """``bench --synth-sweep``: the measured synthetic-acceptance curve (core/measure/bench/synth_sweep.py)."""
    if settings.spec.synthetic:
        raise ConfigError("--synth-sweep sets the synthetic acceptance itself: drop "
                          "--spec-synth-len/--spec-synth-rates")
    print(f"!!! {WARNING} !!!", file=sys.stderr)
    bar = None if args.quiet else ProgressLine()
    try:
        curve = run_synth_sweep(settings, synth_levels_from_args(args), progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        sys.stdout.write(json.dumps(curve.to_dict(), indent=1) + "\n")
        return 0
    cal = curve.calibration
    if cal is not None:
        when = "cached" if curve.from_cache else "measured now"
        print(f"calibration ({when}):\n" + "\n".join("  " + ln for ln in cal.lines()) + "\n")
    print("\n".join(curve.lines()))
    if curve.others_cpu is not None:
        print(f"\nother processes used {100 * curve.others_cpu:.0f}% of the CPU during the sweep")
    return 0


def run(args) -> int:
    settings = settings_from_args(args)
    output_path(args.csv, "the table")
    output_path(args.out_json, "the JSON document")
    for draft in () if args.no_probe else settings.drafts or (None,):
        guard(settings.engine, settings.target, draft)
    if args.synth_sweep:
        return run_synth(args, settings)
    if args.placements:
        return run_placements(args, settings)
    bar = None if args.quiet else ProgressLine()
    stop = threading.Event()
    try:
        result = run_sweep(settings, progress=bar, stop=stop)
    except KeyboardInterrupt:
        stop.set()
        raise
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        sys.stdout.write(result.to_json() + "\n")
    else:
        print("\n".join(report_lines(result)))
        if args.per_prompt:
            print("\nper prompt:\n" + format_table(result, per_prompt=True))
    # after the results are shown: a failure to write them loses nothing
    if args.csv:
        write_or_say(args.csv, "the table", lambda p: write_text_whole(p, result.to_csv()))
        if not args.json:
            print(f"\nCSV: {args.csv}")
    if args.out_json:
        write_or_say(args.out_json, "the JSON document",
                     lambda p: write_text_whole(p, result.to_json() + "\n"))
    return 0


def run_placements(args, settings) -> int:
    """--placements: the sweep under each placement, each report, then side by side: the
    cost of distance per k (core/measure/cost/distance.py) and the measured speed-up per n."""
    rpc = settings.engine.rpc
    add_rpc_servers(rpc)
    devs = rpc_device_names(rpc[0]) if rpc else ()
    names = [n.strip() for n in args.placements.split(",") if n.strip()]
    variants = {n: replace(settings, engine=placement_settings(settings.engine, n, devs)) for n in names}
    results = {}
    for name, s in variants.items():
        bar = None if args.quiet else ProgressLine()
        try:
            results[name] = run_sweep(s, progress=bar, stop=threading.Event())
        finally:
            if bar is not None:
                bar.close()
    for name, result in results.items():
        e = result.settings.engine
        print(f"=== placement {name}: target {placement(e.target_devices, e.target_gpu_layers, e.rpc)}, "
              f"draft {placement(e.draft_devices, e.draft_gpu_layers, e.rpc)}")
        print("\n".join(report_lines(result)) + "\n")
    cals = {n: next(iter(r.calibrations.values())) for n, r in results.items() if r.calibrations}
    print("\n".join(cost_lines(cals)))
    ns = sorted({r.n_max for res in results.values() for r in res.pooled()})
    width = max(len(n) for n in results)
    print("\nmeasured per n: tokens/s and speed-up against the target alone under the same placement")
    print(" " * width + "".join(f"{'n=' + str(n):>20}" for n in ns))
    for name, res in results.items():
        rows = {r.n_max: r for r in res.pooled()}
        print(name.ljust(width) + "".join(
            (f"{rows[n].tokens_per_s:7.1f} t/s {rows[n].measured_speedup:6.3f}x" if n in rows else "")
            .rjust(20) for n in ns))
    return 0
