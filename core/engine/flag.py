"""One speculative setting's flag (:class:`Flag`): the SpecSettings field it sets, its spelling in
llama.cpp (common/arg.cpp), its range and the llama.cpp programs that take it. The table of them
is core/engine/spec_flags.py; a type's own settings are declared in its drafter module
(``FLAGS``) and gathered there through the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

# llama.cpp's programs, by the example names arg.cpp gives them
SPECULATIVE, LOOKUP, SERVER, CLI = ("llama-speculative-simple", "llama-lookup", "llama-server",
                                    "llama-cli")
SPEC_TOOLS = (SPECULATIVE, SERVER, CLI)


@dataclass(frozen=True)
class Flag:
    field: str                     # SpecSettings field; "ngram-mod.n_match": a type's own parameter
    names: tuple[str, ...]         # llama.cpp's spelling first, then its aliases
    help: str                      # what it does; "(default …)" is added
    lo: float | None = None        # the range the window offers
    hi: float | None = None
    choices: tuple[str, ...] = ()
    types: tuple[str, ...] = ()    # the types it steers: written for llama.cpp when one is on
    tools: tuple[str, ...] = ()    # the llama.cpp programs that take it; (): SpecScope's own
    metavar: str = ""
    parse: Callable | None = None  # text -> value, where not the default's type
    write: Callable = str          # value -> the word llama.cpp reads
    unset: object = None           # a value that means "not given" (not written)
    label: str = ""                # its label in the window's drafter panel, under its first
                                   # type ("": not there)
    step: float = 0.05             # a float's step in the window
    default: object = None         # SpecSettings' value (the table fills it in: spec_flags.FLAGS)

    @property
    def flag(self) -> str:
        return self.names[0]

    @property
    def dest(self) -> str:
        return self.field.replace(".", "__").replace("-", "_")

    def tooltip(self) -> str:
        """The window's tooltip: what it does, its flag, its default and range."""
        span = f", {self.lo:g}–{self.hi:g}" if self.lo is not None else ""
        return f"{self.help} ({self.flag}; default {self.default}{span})"

    def applies(self, spec) -> bool:
        return not self.types or bool(set(self.types) & set(spec.types))


def read(spec, path: str):
    """The value of a field, or of a type's own parameter ("ngram-mod.n_match")."""
    name, _, field = path.partition(".")
    return getattr(spec.params(name), field) if field else getattr(spec, name)


def with_values(spec, values: dict):
    """``spec`` with ``values`` ({field path: value}) set, types' own parameters included."""
    top: dict = {}
    own: dict = {}
    for path, value in values.items():
        name, _, field = path.partition(".")
        if field:
            own.setdefault(name, {})[field] = value
        else:
            top[name] = value
    if own:
        top["own"] = spec.own.with_({t: replace(spec.params(t), **kw) for t, kw in own.items()})
    return replace(spec, **top)


def fmt(v) -> str:
    """A float as llama.cpp reads it back (no trailing zeros)."""
    return f"{v:g}"


__all__ = ["Flag", "read", "with_values", "fmt", "SPECULATIVE", "LOOKUP", "SERVER", "CLI", "SPEC_TOOLS"]
