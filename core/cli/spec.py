"""The speculative flags, named as llama.cpp names them (common/arg.cpp), and the
SpecSettings they make. ``specscope run`` and ``bench`` share them."""

from __future__ import annotations

import argparse
from pathlib import Path

from specscope.core.engine.drafters import SPEC_TYPES, parse_types
from specscope.core.engine.drafters.base import NgramCacheParams, NgramMapParams, NgramModParams
from specscope.core.engine.drafters.xvocab import VOCAB_MODES
from specscope.core.engine.engine import SpecSettings
from specscope.core.measure.sweep_settings import parse_p_values


def add_spec_args(p: argparse.ArgumentParser, *, bench: bool = False) -> None:
    g = p.add_argument_group("speculative decoding (llama.cpp's flags)")
    if bench:
        g.add_argument("--spec-type", nargs="+", metavar="TYPE[,TYPE...]",
                       help="drafters to sweep, one chain per word: types joined by commas run "
                            f"as one chain in llama.cpp's priority order ({', '.join(SPEC_TYPES)}); "
                            "default draft-simple")
    else:
        g.add_argument("--spec-type", action="append", metavar="TYPE[,TYPE...]",
                       help=f"what drafts ({', '.join(SPEC_TYPES)}; default draft-simple; "
                            "draft-eagle3 drafts with an EAGLE-3 head as -md, draft-mtp with the "
                            "target's own MTP blocks). Several "
                            "form a chain tried in llama.cpp's priority order, n-gram types "
                            "first: the first non-empty draft wins the round")
        g.add_argument("--spec-default", action="store_true",
                       help="llama.cpp's default config: ngram-mod with n-match 24, n-min 48, "
                            "n-max 64")
        g.add_argument("--spec-draft-n-max", "--draft-max", type=int, default=3, metavar="N",
                       help="draft-simple, draft-eagle3, draft-mtp: tokens to draft per round (default 3, as "
                            "llama.cpp)")
    g.add_argument("--spec-draft-n-min", "--draft-min", type=int, default=0, metavar="N",
                   help="draft-simple, draft-eagle3, draft-mtp: drop drafts shorter than this (default 0)")
    g.add_argument("--spec-draft-policy", choices=("fixed", "hf", "cost"), default="fixed",
                   help="draft-simple's draft length per round: fixed n_max (llama.cpp, the "
                        "default); hf, Hugging Face's +2 after a fully accepted draft / -1 "
                        "otherwise, within 1..n_max; cost, the n in 1..n_max with the best "
                        "predicted speed-up for this machine's calibrated costs and the run's "
                        "acceptance so far (calibrates the pair first when no calibration is cached)")
    if bench:
        g.add_argument("--spec-draft-p-min", "--draft-p-min", default="0", metavar="P[,P...]",
                       help="draft-simple: stop drafting below this top-10 probability; a list "
                            "like 0,0.5,0.75 sweeps it (each value a configuration; default 0)")
    else:
        g.add_argument("--spec-draft-p-min", "--draft-p-min", type=float, default=0.0, metavar="P",
                       help="draft-simple, draft-eagle3, draft-mtp: stop drafting below this top-10 "
                            "probability (default 0.0)")
    g.add_argument("--sync", choices=("reuse", "replay"), default="reuse",
                   help="draft cache sync: reuse its own rows (default, faster) or replay "
                        "the verification batch as llama.cpp does")
    g.add_argument("--accept-rule", choices=("match", "ratio"), default="match",
                   help="how the target accepts a drafted token: match (llama.cpp's rule, the "
                        "default: its sampler must draw the same token) or ratio (speculative "
                        "sampling: the draft samples at the same temperature, kept with "
                        "probability min(1, p/q), else resampled from max(0, p - q)). At "
                        "temperature > 0 the output shows the other rule's expected acceptance "
                        "on the same drafts")
    g.add_argument("--spec-vocab", choices=VOCAB_MODES, default="auto",
                   help="draft-simple with a draft whose vocabulary is not the target's (llama.cpp "
                        "refuses such a pair): translate re-tokenizes the draft's text with the "
                        "target's tokenizer (universal assisted decoding), intersect drafts only "
                        "tokens whose text both vocabularies have and maps their ids; auto (the "
                        "default) uses translate where llama.cpp's vocabulary check fails "
                        "(intersect with --accept-rule ratio); off keeps llama.cpp's refusal")
    for t in ("simple", "map-k", "map-k4v"):
        dest = "ngram_" + t.replace("-", "_")
        g.add_argument(f"--spec-ngram-{t}-size-n", type=int, default=12, dest=f"{dest}_size_n", metavar="N",
                       help=f"ngram-{t}: length of the n-gram looked up (default 12)")
        g.add_argument(f"--spec-ngram-{t}-size-m", type=int, default=48, dest=f"{dest}_size_m", metavar="M",
                       help=f"ngram-{t}: length of the m-gram drafted (default 48)")
        g.add_argument(f"--spec-ngram-{t}-min-hits", type=int, default=1, dest=f"{dest}_min_hits", metavar="N",
                       help=f"ngram-{t}: key hits before drafting (default 1"
                            + ("; unused, as in llama.cpp)" if t != "map-k4v" else ")"))
    g.add_argument("--spec-ngram-mod-n-match", type=int, default=24, metavar="N",
                   help="ngram-mod: lookup length (default 24)")
    g.add_argument("--spec-ngram-mod-n-min", type=int, default=48, metavar="N",
                   help="ngram-mod: fewer drafted tokens than this is no draft (default 48)")
    g.add_argument("--spec-ngram-mod-n-max", type=int, default=64, metavar="N",
                   help="ngram-mod: most tokens drafted (default 64)")
    g.add_argument("-lcs", "--lookup-cache-static", type=Path, metavar="FILE",
                   help="ngram-cache: static lookup cache saved by llama.cpp's lookup tools")
    g.add_argument("-lcd", "--lookup-cache-dynamic", type=Path, metavar="FILE",
                   help="ngram-cache: dynamic lookup cache saved by llama.cpp's lookup tools")
    g.add_argument("--spec-synth-len", type=_synth_len, default=-1.0, metavar="L",
                   help="target mean synthetic acceptance length, including the target token "
                        "(benchmarking only: drafts are accepted at random, the text is NOT valid output)")
    g.add_argument("--spec-synth-rates", type=_synth_rates, default=(), metavar="P0,P1,...",
                   help="comma-separated unconditional per-position synthetic acceptance "
                        "probabilities (benchmarking only: the text is NOT valid output)")


def _synth_len(text: str) -> float:
    """llama.cpp's --spec-synth-len parsing: one number, not -1 (which means off)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError("invalid value") from None
    if value == -1.0:
        raise argparse.ArgumentTypeError("invalid value")
    return value


def _synth_rates(text: str) -> tuple[float, ...]:
    """llama.cpp's --spec-synth-rates parsing: numbers separated by commas."""
    try:
        return tuple(float(v.strip()) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("invalid value") from None


def spec_from_args(args, types: tuple[str, ...] | None = None, n_max: int | None = None):
    """SpecSettings from parsed flags (``types``/``n_max`` override, for the bench's sweep).
    Bad values raise ConfigError: one line, exit 2."""
    if types is None:
        names = [n for v in (args.spec_type or []) for n in v.split(",")]
        if getattr(args, "spec_default", False):
            names.append("ngram-mod")
        types = parse_types(names) if names else ("draft-simple",)
    maps = {t: NgramMapParams(getattr(args, f"ngram_{t}_size_n"), getattr(args, f"ngram_{t}_size_m"),
                              getattr(args, f"ngram_{t}_min_hits"))
            for t in ("simple", "map_k", "map_k4v")}
    spec = SpecSettings(
        n_max=args.spec_draft_n_max if n_max is None else n_max, n_min=args.spec_draft_n_min,
        p_min=_first_p_min(args.spec_draft_p_min), sync=args.sync, types=types,
        accept_rule=args.accept_rule,
        draft_policy=getattr(args, "spec_draft_policy", "fixed"), vocab=args.spec_vocab,
        ngram_simple=maps["simple"], ngram_map_k=maps["map_k"], ngram_map_k4v=maps["map_k4v"],
        ngram_mod=NgramModParams(args.spec_ngram_mod_n_match, args.spec_ngram_mod_n_min,
                                 args.spec_ngram_mod_n_max),
        ngram_cache=NgramCacheParams(str(args.lookup_cache_static or ""),
                                     str(args.lookup_cache_dynamic or "")),
        synth_len=getattr(args, "spec_synth_len", -1.0), synth_rates=tuple(getattr(args, "spec_synth_rates", ())))
    spec.validate()
    return spec


def spec_from_flags(flags: list[str]):
    """SpecSettings for a list of llama.cpp flags (the conformance scripts)."""
    p = argparse.ArgumentParser()
    add_spec_args(p)
    return spec_from_args(p.parse_args(flags))


def _first_p_min(value) -> float:
    """run's --spec-draft-p-min is a number; bench's a list (the first stands for the template)."""
    if isinstance(value, (int, float)):
        return float(value)
    return parse_p_values(value)[0]
