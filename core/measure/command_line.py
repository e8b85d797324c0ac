"""The llama.cpp command line for a drafter setting, spelled as the vendored llama.cpp spells its
flags (common/arg.cpp): the advisor's recommendations (advise.report.llama_command) and the
window's Copy command both write it here, so there is one spelling.

What SpecScope runs but the program has no flag for (the hf and cost draft-length policies, the
ratio acceptance rule; synthetic acceptance and lookup caches where the program lacks them) is
left out of the line; :func:`left_out` names it.
"""

from __future__ import annotations

import shlex

from specscope.core.engine.drafters.registry import TYPES
from specscope.core.engine.spec_flags import FLAGS, llama_words, not_carried, read

# SpecScope's settings a llama.cpp command needs no word for: the draft cache's sync gives the
# same output (llama.cpp replays), and a draft of another vocabulary is refused by llama.cpp anyway
SAME_OUTPUT = ("sync", "vocab")


def command_line(tool: str, target, spec=None, draft=None, target_threads: int = 0,
                 draft_threads: int = 0, parallel: int = 1) -> str:
    """``tool`` running ``target`` with the drafter setting ``spec`` (a SpecSettings; None: the
    target alone) and its ``draft`` model (-md: a draft model or a head), on the given threads
    (0: llama.cpp's default, no flag). The setting's flags are the ones of the table that
    ``tool`` takes (core/engine/spec_flags.py). A type that is a program of its own
    (registry.SpecType.program, with ``parallel`` sequences) is written for that program, whatever
    ``tool``, with the flags it takes (SpecType.program_args)."""
    if unrunnable(spec):          # SpecScope's own command, and why
        words = ["specscope", "run", "-m", str(target), "--spec-type", ",".join(spec.types),
                 *(["-np", str(parallel)] if parallel > 1 else []), *specscope_words(spec),
                 *(["-t", str(target_threads)] if target_threads else [])]
        return f"{shlex.join(words)}  # {unrunnable(spec)}"
    own = next((TYPES[t] for t in spec.types if TYPES[t].program), None) if spec else None
    program = own.program if own else ""
    words = [program or tool, "-m", str(target)]
    if spec is not None:
        if draft is not None and spec.needs_draft:
            words += ["-md", str(draft)]
        if own is not None:   # a program of its own: its flags, if any (LLAMA_EXAMPLE_SPECULATIVE)
            words += ["-np", str(parallel), *llama_words(spec, own.program_args)] if own.program_args else []
        else:
            words += ["--spec-type", ",".join(spec.types), *llama_words(spec, tool)]
    if target_threads:
        words += ["-t", str(target_threads)]
    if draft_threads and spec is not None and draft is not None and spec.needs_draft:
        words += ["-td", str(draft_threads)]
    return shlex.join(words)


def unrunnable(spec) -> str:
    """Why no llama.cpp program runs ``spec``, in words ("": one does): a type of another
    project's (registry.SpecType.origin), which SpecScope alone runs on a GGUF pair; its command line is
    then ``specscope run``'s, with the reason as a shell comment."""
    other = [t for t in spec.types if TYPES[t].origin != "llama.cpp"] if spec else []
    return "".join(f"SpecScope only: no llama.cpp program runs {t} ({TYPES[t].origin} has it)"
                   for t in other[:1])


def specscope_words(spec) -> list[str]:
    """The flags of ``spec`` that differ from SpecScope's defaults, for its own command line."""
    words: list[str] = []
    for f in FLAGS:
        value = read(spec, f.field)
        if f.applies(spec) and value != f.default and value != f.unset:
            words += [f.flag, f.write(value)]
    return words


def left_out(spec, tool: str = "llama-server") -> list[str]:
    """What of ``spec`` the command line cannot carry, in words (empty: all of it; SpecScope's
    own command carries all of a type no llama.cpp program runs)."""
    if spec is None or unrunnable(spec):
        return []
    words = {"draft_policy": f"the {spec.draft_policy} draft-length policy (SpecScope's own: "
                             "llama.cpp drafts n_max every round)",
             "accept_rule": f"the {spec.accept_rule} acceptance rule (llama.cpp keeps a token "
                            "its sampler drew)"}
    out = []
    for f in not_carried(spec, tool):
        if f.field in SAME_OUTPUT:
            continue
        if f.field.startswith("synth_"):
            what = f"synthetic acceptance ({tool} has no {f.flag})"
        elif f.field.startswith("ngram-cache."):
            what = f"the lookup-cache files ({tool} has no -lcs/-lcd)"
        else:
            what = words.get(f.field, f"{f.flag} ({tool} has no such flag)")
        if what not in out:
            out.append(what)
    return out
