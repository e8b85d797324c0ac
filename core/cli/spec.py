"""The speculative flags, named as llama.cpp names them (common/arg.cpp; the table in
core/engine/spec_flags.py), and the SpecSettings they make. ``specscope run`` and ``bench`` share
them."""

from __future__ import annotations

import argparse

from specscope.core.engine.drafters import SPEC_TYPES, parse_types
from specscope.core.engine.drafters.registry import drafts_with
from specscope.core.engine.engine import SpecSettings
from specscope.core.engine.spec_flags import FLAGS, with_values
from specscope.core.measure.bench.settings import parse_p_values

BENCH_P_MIN = "spec_draft_p_min"     # bench's list of p_min values (core/cli/bench.py reads it)


def add_spec_args(p: argparse.ArgumentParser, *, bench: bool = False) -> None:
    """The speculative flags of the table (core/engine/spec_flags.py), with ``--spec-type``;
    ``bench`` takes lists of n_max (its own flag) and p_min (here) to sweep."""
    g = p.add_argument_group("speculative decoding (llama.cpp's flags)")
    if bench:
        g.add_argument("--spec-type", nargs="+", metavar="TYPE[,TYPE...]",
                       help="drafters to sweep, one chain per word: types joined by commas run "
                            f"as one chain in llama.cpp's priority order ({', '.join(SPEC_TYPES)}); "
                            "default draft-simple")
    else:
        g.add_argument("--spec-type", action="append", metavar="TYPE[,TYPE...]",
                       help=f"what drafts ({', '.join(SPEC_TYPES)}; default draft-simple; "
                            f"{drafts_with()}). Several form a chain tried in llama.cpp's "
                            "priority order, n-gram types first: the first non-empty draft wins "
                            "the round")
        g.add_argument("--spec-default", action="store_true",
                       help="llama.cpp's default config: ngram-mod with n-match 24, n-min 48, "
                            "n-max 64")
    for f in FLAGS:
        if bench and f.field == "n_max":                 # bench's own list of n
            continue
        if bench and f.field == "p_min":
            g.add_argument(*f.names, dest=BENCH_P_MIN, default="0", metavar="P[,P...]",
                           help=f"{f.help}; a list like 0,0.5,0.75 sweeps it (each value a "
                                "configuration; default 0)")
            continue
        g.add_argument(*f.names, dest=f.dest, default=f.default, choices=f.choices or None,
                       type=_typed(f), metavar=f.metavar or None,
                       help=f.help if f.default == f.unset else f"{f.help} (default {f.default})")


def _typed(f):
    """argparse's type for a flag: its parser, or its default's type; a bad value is named, with
    the form the flag takes (its metavar, else its type)."""
    parse = f.parse or type(f.default)
    form = f.metavar or {int: "a whole number", float: "a number"}.get(type(f.default), "a value")

    def convert(text: str):
        try:
            return parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r} (expected {form})") from None
    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def spec_from_args(args, types: tuple[str, ...] | None = None, n_max: int | None = None):
    """SpecSettings from parsed flags (``types``/``n_max`` override, for the bench's sweep).
    Bad values raise ConfigError: one line, exit 2."""
    if types is None:
        names = [n for v in (args.spec_type or []) for n in v.split(",")]
        if getattr(args, "spec_default", False):
            names.append("ngram-mod")
        types = parse_types(names) if names else ("draft-simple",)
    values = {f.field: getattr(args, f.dest) for f in FLAGS if hasattr(args, f.dest)}
    if hasattr(args, BENCH_P_MIN):
        values["p_min"] = parse_p_values(getattr(args, BENCH_P_MIN))[0]   # the template's
    if n_max is not None:
        values["n_max"] = n_max
    spec = with_values(SpecSettings(types=types), values)
    spec.validate()
    return spec


def spec_from_flags(flags: list[str]):
    """SpecSettings for a list of llama.cpp flags (the conformance scripts)."""
    p = argparse.ArgumentParser()
    add_spec_args(p)
    return spec_from_args(p.parse_args(flags))
