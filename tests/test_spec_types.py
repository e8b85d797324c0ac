"""The speculative-type registry (core/engine/drafters/registry.py): every entry builds its
drafter, the groups the program reads come from it, and a type lives in few files."""

import ast
from pathlib import Path

import pytest

from specscope.core.engine.drafters import (BLOCK_TYPES, MD_TYPES, MODEL_TYPES, NGRAM_TYPES,
                                            SPEC_TYPES, parse_types)
from specscope.core.engine.drafters.base import Drafter
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.drafters.build import make_drafter
from specscope.core.engine.drafters.registry import (HEAD, HEAD_KINDS, LLAMA_TYPES, LOOKUP, MODEL, SELF,
                                                     TARGET, TYPES)
from specscope.core.engine.engine import SpecSettings

ROOT = Path(__file__).resolve().parents[1]


def test_the_registry_holds_llama_cpp_s_types_in_its_priority_order():
    # common_speculative_init: n-gram types first (suffix, vLLM's, draftless with them), then the
    # draft model, the heads, MTP, DFlash
    assert SPEC_TYPES == ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache",
                          "suffix", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash",
                          "draft-dspark", "draft-tree", "lookahead")   # llama-speculative, -lookahead
    assert parse_types("draft-dspark,ngram-simple") == ("ngram-simple", "draft-dspark")
    assert "suffix" not in LLAMA_TYPES and "draft-tree" not in LLAMA_TYPES
    assert LLAMA_TYPES == SPEC_TYPES[:5] + SPEC_TYPES[6:11]


@pytest.mark.parametrize("name", list(TYPES))
def test_each_entry_names_a_drafter_class_of_its_own_type(name):
    t = TYPES[name]
    cls = t.drafter_class()
    assert issubclass(cls, Drafter)
    assert t.source in (LOOKUP, MODEL, HEAD, TARGET, SELF)
    assert (t.source == HEAD) == bool(t.head) and (not t.head or t.head in HEAD_KINDS)
    assert t.description and len(t.colors) == 3 and all(c.startswith("#") for c in t.colors)
    assert t.markov <= t.block and (not t.block or t.source == HEAD)
    if t.ngram:      # a lookup needs no engine: the factory builds it from the settings alone
        drafter = make_drafter(name, SpecSettings(types=(name,)))
        assert drafter.name == name
    else:
        assert cls.name == name and t.what


def test_the_groups_the_program_reads_come_from_the_registry():
    assert NGRAM_TYPES == tuple(n for n, t in TYPES.items() if t.source == LOOKUP)
    assert MODEL_TYPES == tuple(n for n in SPEC_TYPES if n not in NGRAM_TYPES)
    assert MD_TYPES == ("draft-simple", "draft-eagle3", "draft-dflash", "draft-dspark", "draft-tree")
    assert BLOCK_TYPES == ("draft-dflash", "draft-dspark")


def test_the_longest_draft_is_each_type_s_own_length_knob():
    spec = SpecSettings(n_max=5, types=("ngram-simple", "draft-simple"),
                        own={"ngram-simple": NgramMapParams(size_n=3, size_m=11)})
    assert spec.max_draft() == 11                     # ngram-simple's m beats n_max
    assert SpecSettings(n_max=5, types=("draft-mtp",)).max_draft() == 5
    assert SpecSettings(types=("ngram-cache",)).max_draft() == 8    # llama.cpp's fixed 8


def test_a_head_type_is_refused_with_the_head_it_needs():
    """The engine checks the -md model's kind against each type's registry entry."""
    from specscope.core.engine.engine import Engine, EngineSettings
    from specscope.core.errors import ConfigError
    from specscope.core.models.demo import demo_pair
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings(n_ctx=256)) as engine:
        for t in ("draft-dspark", "draft-eagle3"):
            with pytest.raises(ConfigError, match=rf"{t} needs (a DFlash|an EAGLE-3) head as the "
                                                  r"draft model; this is a \w+ model "
                                                  r"\(--spec-type draft-simple or draft-tree drafts with it\)"):
                engine.speculative("x", SpecSettings(types=(t,)))


def _files_naming(word: str) -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for d in ("core", "app") for p in (ROOT / d).rglob("*.py")
                  if word in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["draft-dspark", "draft-tree"])
def test_the_newest_types_live_in_their_registry_entry_drafter_and_head_reader(name):
    # issue 32: a type is its drafter module and one registry entry (and its head reader); even
    # in prose (lookahead and suffix are words, and llama-lookahead a program: counted in code below)
    assert len(_files_naming(name)) <= 4, _files_naming(name)


def _files_coding(name: str) -> list[str]:
    """The files of core/ and app/ whose code holds the string ``name`` (a literal, outside
    docstrings: prose may say "lookahead window" and a path its ``.suffix``)."""
    out = []
    for p in sorted(p for d in ("core", "app") for p in (ROOT / d).rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        if any(isinstance(n, ast.Constant) and n.value == name and id(n) not in docs for n in ast.walk(tree)):
            out.append(str(p.relative_to(ROOT)))
    return out


@pytest.mark.parametrize("name", ["draft-dspark", "draft-tree", "lookahead", "suffix"])
def test_a_type_added_since_the_registry_is_named_in_at_most_four_files(name):
    """issue 32: the types added with or after the registry are named in code by their registry
    entry, their drafter module and at most two more (a lesson, the screenshots, a what-if's
    parameter sets, a session version's old key): their own loops take the name from the run."""
    files = _files_coding(name)
    assert "core/engine/drafters/registry.py" in files and len(files) <= 4, files
