"""The flags each llama.cpp program takes, read from the vendored common/arg.cpp: every
``add_opt(common_arg({"-x", "--xx"}, ...).set_examples({...}).set_excludes({...}))``. A flag
belongs to a program when its option lists the program's example, or LLAMA_EXAMPLE_COMMON (the
default) and does not exclude the program (``common_params_parser_init``'s rule)."""

from __future__ import annotations

import os
import re
import shlex
from functools import lru_cache
from pathlib import Path

ARG_CPP = Path("/work/ref/llama_cpp_python-0.3.36/vendor/llama.cpp/common/arg.cpp")   # the lead's copy


def arg_cpp() -> Path:
    """common/arg.cpp of the installed binding's llama.cpp: the unpacked sdist at ARG_CPP where
    there is one, else the RPC build's source (rpc_build: $SPECSCOPE_LLAMA_SRC, its cache, else
    the sdist from the package registry, as on a fresh CI machine)."""
    if ARG_CPP.exists():
        return ARG_CPP
    from helpers import rpc_build
    with open(os.devnull, "w") as log:
        return rpc_build._source(log) / "common" / "arg.cpp"
EXAMPLES = {"llama-server": "SERVER", "llama-cli": "CLI", "llama-speculative-simple": "SPECULATIVE",
            "llama-speculative": "SPECULATIVE", "llama-lookahead": "COMMON"}   # as their main() parses


def _names(text: str | None) -> set[str]:
    return set(re.findall(r"LLAMA_EXAMPLE_(\w+)", text or "")) or {"COMMON"}


@lru_cache(maxsize=None)
def options() -> list[tuple[set[str], set[str], set[str]]]:
    """(flags, examples, excluded examples) of every option."""
    out = []
    for chunk in arg_cpp().read_text().split("add_opt(common_arg(")[1:]:
        heads = re.match(r"\s*((?:\{[^}]*\}\s*,\s*)+)", chunk)
        flags = set(re.findall(r'"(-{1,2}[A-Za-z0-9][\w-]*)"', heads.group(1) if heads else ""))
        examples = re.search(r"\.set_examples\(\{([^}]*)\}\)", chunk)
        excludes = re.search(r"\.set_excludes\(\{([^}]*)\}\)", chunk)
        out.append((flags, _names(examples and examples.group(1)),
                    set(re.findall(r"LLAMA_EXAMPLE_(\w+)", excludes.group(1))) if excludes else set()))
    return out


def flags_of(tool: str) -> set[str]:
    """Every flag ``tool`` (llama-server, llama-cli, llama-speculative-simple) takes."""
    ex = EXAMPLES[tool]
    return {f for flags, examples, excludes in options()
            if (ex in examples or "COMMON" in examples) and ex not in excludes for f in flags}


def unknown_flags(command: str) -> set[str]:
    """The flags of ``command`` (its first word the program) that the program does not take."""
    words = shlex.split(command)
    return {w for w in words[1:] if w.startswith("-") and not w.lstrip("-")[:1].isdigit()} - flags_of(words[0])
