"""``specscope advise``: which drafter and settings make this target fastest on this machine, per
kind of work, and the llama.cpp command to copy (core/measure/advise/advisor.py; docs/advise.md)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from specscope.core.cli.args import add_model_args, engine_settings, output_path, write_or_say
from specscope.core.errors import ConfigError
from specscope.core.measure.advise.advice import MIN_PASSES, AdviseSettings
from specscope.core.measure.advise.advisor import advise
from specscope.core.measure.advise.report import summary_lines, to_dict, write_report
from specscope.core.measure.bench.workloads import CATEGORIES, YOURS, load_user_prompts
from specscope.core.models.demo import demo_pair
from specscope.core.models.probe import guard

UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}
DESCRIPTION = ("Run the target alone once per workload prompt, replay every n-gram configuration and "
               "draft-simple setting against it (what-ifs priced with this machine's calibration), "
               "then measure the best candidates of each category for real until the budget is "
               "spent. Reports per category the best setup with its measured speed-up and the range a "
               "re-measurement lands in 95 % of the time, or \"don't speculate\", and the llama.cpp command line to copy. Ctrl-C "
               "keeps what was measured.")


def parse_budget(text: str) -> float:
    """"5m", "90s", "1h", "300" -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"--budget {text!r}: give a duration such as 5m, 90s or 300")
    return float(match.group(1)) * UNITS[match.group(2)]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("advise", description=DESCRIPTION,
                              help="which drafter and settings make the target fastest, per kind of work")
    add_model_args(p, draft=False)
    p.add_argument("-md", "--model-draft", type=Path, action="append", default=None,
                   help="a draft model (GGUF) for draft-simple; repeat for several (default: none "
                        "with -m, the demo draft without)")
    p.add_argument("--categories", nargs="+", default=None, metavar="CATEGORY",
                   help=f"workload categories (default all: {', '.join(CATEGORIES)}; with --prompts "
                        "only yours unless some are named)")
    p.add_argument("--prompts", type=Path, metavar="FILE",
                   help=f"your own prompts, measured as the category {YOURS!r}: one per line, or "
                        "JSON Lines of chat conversations (a list of {role, content} messages, or "
                        "an object with one as \"messages\")")
    p.add_argument("--budget", default="5m", help="wall time for the whole run (default 5m)")
    p.add_argument("-n", "--n-predict", type=int, default=64, help="tokens per run (default 64)")
    p.add_argument("--top", type=int, default=3, help="candidates measured per category (default 3)")
    p.add_argument("--passes", type=int, default=AdviseSettings.passes,
                   help="at most this many measuring passes over a category's prompts (default "
                        f"{AdviseSettings.passes}; a candidate needs {MIN_PASSES} for a range)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    p.add_argument("--report", type=Path, metavar="FILE.md|.html", help="write a self-contained report")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("-v", "--verbose", action="store_true", help="show llama.cpp's log")
    return p


def settings_from_args(args) -> AdviseSettings:
    target, drafts = args.model, list(args.model_draft or [])
    if target is None:
        target, demo_draft = demo_pair()
        drafts = drafts or [demo_draft]
    if args.report is not None and args.report.suffix.lower() not in (".md", ".html", ".htm"):
        raise ConfigError(f"{args.report}: the report is Markdown (.md) or HTML (.html)")
    output_path(args.report, "the report")
    named = args.categories if args.categories is not None else (
        [] if args.prompts is not None else list(CATEGORIES))
    unknown = [c for c in named if c not in CATEGORIES]
    if unknown:
        raise ConfigError(f"unknown workload category {', '.join(unknown)} (known: {', '.join(CATEGORIES)})")
    if args.prompts is not None:
        load_user_prompts(args.prompts)            # a bad file: its one line, before any load
        named = [*named, YOURS]
    return AdviseSettings(target=Path(target), drafts=tuple(Path(d) for d in drafts),
                          categories=tuple(dict.fromkeys(named)), prompts=args.prompts,
                          budget_s=parse_budget(args.budget), n_predict=args.n_predict,
                          top=args.top, passes=args.passes, engine=engine_settings(args))


def run(args) -> int:
    s = settings_from_args(args)
    s.validate()
    for draft in () if args.no_probe else s.drafts or (None,):
        guard(s.engine, s.target, draft)
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    result = advise(s, say)
    written = []
    if args.report is not None:
        write_or_say(args.report, "the report", lambda p: written.extend(write_report(result, p)))
    if args.json:
        print(json.dumps(to_dict(result), indent=1))
    else:
        print("\n".join(summary_lines(result)))
        if written:
            plots = f" (its {len(written) - 1} plots as SVG files beside it)" if len(written) > 1 else ""
            print(f"report: {args.report}{plots}")
    return 130 if result.stopped else 0
