"""The llama.cpp command line for a drafter setting, spelled as the vendored llama.cpp spells its
flags (common/arg.cpp): the advisor's recommendations (advise_report.llama_command) and the
window's Copy command both write it here, so there is one spelling.

What SpecScope runs but no llama.cpp flag carries (the hf and cost draft-length policies, the
ratio acceptance rule, synthetic acceptance) is left out of the line; :func:`left_out` names it.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict
from pathlib import Path

from specscope.core.engine.drafters import MODEL_TYPES, NGRAM_TYPES

NO_FLAGS = ("ngram-cache",)          # its parameters are files (lookup caches), not sizes
LENGTH_TYPES = MODEL_TYPES    # the types --spec-draft-n-max etc. steer: every model drafter
LOOKUP_CACHE_TOOLS = ("llama-server",)   # -lcs/-lcd: llama-server and llama-lookup only


def command_line(tool: str, target, spec=None, draft=None, target_threads: int = 0,
                 draft_threads: int = 0) -> str:
    """``tool`` running ``target`` with the drafter setting ``spec`` (a SpecSettings; None: the
    target alone) and its ``draft`` model (-md: a draft model, an EAGLE-3 head or a DFlash head), on the given
    threads (0: llama.cpp's default, no flag)."""
    words = [tool, "-m", str(target)]
    if spec is not None:
        if draft is not None and spec.needs_draft:
            words += ["-md", str(draft)]
        words += ["--spec-type", ",".join(spec.types)]
        if any(t in LENGTH_TYPES for t in spec.types):
            words += ["--spec-draft-n-max", str(spec.n_max), "--spec-draft-p-min", f"{spec.p_min:g}"]
            if spec.n_min:
                words += ["--spec-draft-n-min", str(spec.n_min)]
        for t in (t for t in spec.types if t in NGRAM_TYPES and t not in NO_FLAGS):
            for key, value in asdict(spec.params(t)).items():
                words += [f"--spec-{t}-{key.replace('_', '-')}", str(value)]
        if "ngram-cache" in spec.types and tool in LOOKUP_CACHE_TOOLS:
            cache = spec.ngram_cache
            for flag, path in (("-lcs", cache.lookup_cache_static), ("-lcd", cache.lookup_cache_dynamic)):
                if path:
                    words += [flag, str(Path(path))]
    if target_threads:
        words += ["-t", str(target_threads)]
    if draft_threads and spec is not None and draft is not None and spec.needs_draft:
        words += ["-td", str(draft_threads)]
    return shlex.join(words)


def left_out(spec, tool: str = "llama-server") -> list[str]:
    """What of ``spec`` the command line cannot carry, in words (empty: all of it)."""
    if spec is None:
        return []
    out = []
    if spec.draft_policy != "fixed" and any(t in LENGTH_TYPES for t in spec.types):
        out.append(f"the {spec.draft_policy} draft-length policy (SpecScope's own: llama.cpp "
                   "drafts n_max every round)")
    if spec.accept_rule != "match":
        out.append(f"the {spec.accept_rule} acceptance rule (llama.cpp keeps a token its sampler drew)")
    if spec.synthetic:
        out.append("synthetic acceptance (a SpecScope benchmark setting)")
    cache = spec.ngram_cache
    if "ngram-cache" in spec.types and tool not in LOOKUP_CACHE_TOOLS and (
            cache.lookup_cache_static or cache.lookup_cache_dynamic):
        out.append(f"the lookup-cache files ({tool} has no -lcs/-lcd)")
    return out
