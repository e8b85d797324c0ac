"""One table of the speculative settings' flags: the command line's argparse flags, the llama.cpp
command a setting is written as, and the window's ranges and tooltips are all made from it.

Each :class:`Flag` is one SpecSettings field (or "type.field": a type's own parameter), spelled
as the vendored llama.cpp spells it (common/arg.cpp), with its range and the llama.cpp programs
that take it (``tools``; none: SpecScope's own setting, which a llama.cpp command cannot carry).
Defaults are SpecSettings' own. ``--spec-type`` (a list of types) and the bench's lists of values
are the command lines' own (core/cli/spec.py, core/cli/bench.py).
"""

from __future__ import annotations

from dataclasses import fields, replace

from specscope.core.engine.accept_rules import ACCEPT_RULES
from specscope.core.engine.draft_policy import POLICIES
from specscope.core.engine.drafters import MODEL_TYPES
from specscope.core.engine.drafters.registry import TYPES, names
from specscope.core.engine.flag import (CLI, LOOKUP, SERVER, SPEC_TOOLS, SPECULATIVE, Flag, fmt, read,
                                      with_values)
from specscope.core.engine.drafters.model import SYNC_MODES
from specscope.core.engine.drafters.xvocab import VOCAB_MODES
from specscope.core.engine.settings import SpecSettings

# each type's own settings, declared in its drafter module (SpecType.flags)
TYPE_FLAGS = tuple(f for t in TYPES.values() for f in t.flags())
CHAIN_TYPES = tuple(t for t in MODEL_TYPES if not TYPES[t].program)   # llama.cpp's --spec-type ones


def _rates(text: str) -> tuple[float, ...]:
    """llama.cpp's --spec-synth-rates: numbers separated by commas."""
    return tuple(float(v.strip()) for v in text.split(","))


def _synth_len(text: str) -> float:
    """llama.cpp's --spec-synth-len: one number, not -1 (which means off)."""
    value = float(text.strip())
    if value == -1.0:
        raise ValueError("-1 means off")
    return value


_TABLE: tuple[Flag, ...] = (
    Flag("n_max", ("--spec-draft-n-max", "--draft-max"),
         "the model drafters: tokens to draft per round at most (a DFlash head: at most its block)",
         0, 64, types=names(lambda t: t.reads_n_max), tools=(*SPEC_TOOLS, LOOKUP), metavar="N",
         label="n_max"),
    Flag("n_min", ("--spec-draft-n-min", "--draft-min"),
         "the model drafters: drop drafts shorter than this (the round decodes plainly)",
         0, 64, types=CHAIN_TYPES, tools=(*SPEC_TOOLS, LOOKUP), metavar="N", label="n_min"),
    Flag("p_min", ("--spec-draft-p-min", "--draft-p-min"),
         "the model drafters: stop drafting when the top token holds less than this share of "
         "its top-10 probability mass (a DSpark head reads its confidence head)",
         0.0, 1.0, types=CHAIN_TYPES, tools=SPEC_TOOLS, metavar="P", write=fmt, label="p_min"),
    *TYPE_FLAGS,
    Flag("draft_policy", ("--spec-draft-policy",),
         "draft-simple's draft length per round: fixed n_max (llama.cpp); hf, Hugging Face's +2 "
         "after a fully accepted draft / -1 otherwise, within 1..n_max; cost, the length with the "
         "best predicted speed-up for this machine's calibrated costs and the run's acceptance "
         "so far (calibrates the pair first when no calibration is cached)",
         choices=POLICIES, types=("draft-simple",), label="n policy"),
    Flag("sync", ("--sync",),
         "draft cache sync: reuse its own rows (faster) or replay the verification batch as "
         "llama.cpp does", choices=SYNC_MODES, types=("draft-simple",), label="sync"),
    Flag("accept_rule", ("--accept-rule",),
         "how the target accepts a drafted token: match (llama.cpp's rule: its sampler must draw "
         "the same token) or ratio (speculative sampling: the draft samples at the same "
         "temperature, kept with probability min(1, p/q), else resampled from max(0, p - q)); at "
         "temperature > 0 the output shows the other rule's expected acceptance on the same drafts",
         choices=ACCEPT_RULES),
    Flag("vocab", ("--spec-vocab",),
         "draft-simple with a draft whose vocabulary is not the target's (llama.cpp refuses such a "
         "pair): translate re-tokenizes the draft's text with the target's tokenizer (universal "
         "assisted decoding), intersect drafts only tokens whose text both vocabularies have and "
         "maps their ids; auto uses translate where llama.cpp's vocabulary check fails (intersect "
         "with --accept-rule ratio); off keeps llama.cpp's refusal",
         choices=VOCAB_MODES, types=("draft-simple",), label="vocab"),
    Flag("synth_len", ("--spec-synth-len",),
         "target mean synthetic acceptance length, including the target token (benchmarking "
         "only: drafts are accepted at random, the text is NOT valid output)",
         tools=(SERVER, CLI), metavar="L", parse=_synth_len, write=fmt, unset=-1.0),
    Flag("synth_rates", ("--spec-synth-rates",),
         "comma-separated unconditional per-position synthetic acceptance probabilities "
         "(benchmarking only: the text is NOT valid output)",
         tools=(SERVER, CLI), metavar="P0,P1,...", parse=_rates,
         write=lambda v: ",".join(f"{p:g}" for p in v), unset=()),
)
FLAGS = tuple(replace(f, default=read(SpecSettings(), f.field)) for f in _TABLE)   # defaults are SpecSettings'
BY_FIELD = {f.field: f for f in FLAGS}


def settings_fields() -> set[str]:
    """Every SpecSettings value a flag sets: its fields but the types, and each type's own
    parameters field by field ("ngram-mod.n_match")."""
    out = {f.name for f in fields(SpecSettings) if f.name not in ("types", "own")}
    for name, t in TYPES.items():
        if t.params_class is not None:
            out |= {f"{name}.{g.name}" for g in fields(t.params_class)}
    return out


def flag(field: str) -> Flag:
    return BY_FIELD[field]


def llama_words(spec, tool: str) -> list[str]:
    """The flags and values of ``spec`` that ``tool`` takes, in the table's order; a value that
    means "not given" is not written."""
    words: list[str] = []
    for f in FLAGS:
        value = read(spec, f.field)
        if tool in f.tools and f.applies(spec) and value != f.unset:
            words += [f.flag, f.write(value)]
    return words


def not_carried(spec, tool: str) -> list[Flag]:
    """The flags whose value in ``spec`` differs from the default and ``tool`` does not take."""
    return [f for f in FLAGS if tool not in f.tools and f.applies(spec)
            and read(spec, f.field) != f.default]


__all__ = ["Flag", "FLAGS", "settings_fields", "flag", "read", "with_values", "llama_words", "not_carried",
           "SPECULATIVE", "LOOKUP", "SERVER", "CLI", "SPEC_TOOLS"]
