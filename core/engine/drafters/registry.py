"""llama.cpp's speculative types, one descriptor each: what a type needs, how long it drafts,
how it is shown. The engine, the drafter factory, the cost model, the doctor, the command
writer and the window read this table; a new type is its drafter module and one entry here.

The entries are in llama.cpp's priority order (``common_speculative_init``): the n-gram types
(and suffix, no llama.cpp type but draftless as they are) before the model drafters, whatever
order the user wrote them in. The last two are no
``--spec-type`` of llama.cpp's but programs of their own (``SpecType.program``): draft-tree is
``llama-speculative`` (a tree of drafts), lookahead ``llama-lookahead`` (Jacobi decoding, no
draft model); each drafts alone. suffix (SuffixDecoding) is no llama.cpp program's: vLLM runs it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from specscope.core.errors import ModelFileError

# what a type drafts with (SpecType.source)
LOOKUP = "lookup"     # the tokens so far: no model
MODEL = "model"       # the -md model as a language model (draft-simple)
HEAD = "head"         # the -md model as a head over the target's hidden states
TARGET = "target"     # the target's own layers (MTP blocks)
SELF = "self"         # the target's own guesses, in the verification batch (lookahead)
# SpecType.head (a head's GGUF architecture), in words
HEAD_KINDS = {"eagle3": "an EAGLE-3 head", "dflash": "a DFlash head"}


@dataclass(frozen=True)
class SpecType:
    name: str                 # the --spec-type value
    source: str               # LOOKUP | MODEL | HEAD | TARGET
    drafter: str              # "module:Class" under core/engine/drafters (Drafter.create builds it)
    description: str          # one line: what it drafts from, how
    length: Callable          # SpecSettings -> the longest draft it proposes
    colors: tuple[str, str, str]   # (text, background in the token view, strong for plots/swatches)
    who: tuple[str, str] = ("", "")   # who drafted, in words ("the", "EAGLE-3 head"); "": the name
    what: str = ""            # what it drafts with, in words ("an EAGLE-3 head"); "" for a lookup
    head: str = ""            # the head its -md model must be: its GGUF architecture (HEAD_KINDS)
    block: bool = False       # drafts a whole block in one decode (a DFlash head)
    p_note: str = ""          # the round picture's note on its p values
    cache: str = ""           # the cache its rows live in, in the round picture ("": the draft's)
    markov: bool = False      # each block position biased by the token drafted before it (DSpark)
    program: str = ""         # llama.cpp's program for it where it is not a --spec-type of
                              # llama-server/-cli/-speculative-simple (draft-tree: llama-speculative)
    origin: str = "llama.cpp"  # whose it is: a type no llama.cpp program runs names its source
    no_replay: str = ""       # why a what-if cannot replay it over a recorded run ("": the generic)
    rounds: str = ""          # "module:function" under core/engine: its own loop, run where it
    rounds_np: int = 1        # drafts alone and each context holds at least rounds_np sequences
    program_args: str = ""    # whose flags its program takes (program: llama-speculative-simple's)
    np: tuple[str, int, str] = ()   # -np in the window: (label, default, tooltip); (): not offered
    seqs: Callable | None = None    # SpecSettings -> the sequences each context needs (None: 1)
    batch: Callable | None = None   # (SpecSettings, n_seq) -> its longest verification batch, where
                              # not its longest draft (a tree's nodes, a window beside its n-grams)
    note: str = ""            # the window's line under its check box
    priced: str = ""          # its own loop's price in the cost model: "tree" (a batch of nodes,
                              # the draft's steps) | "batch" (one target batch a round); a run
                              # that verified trees is priced as trees whatever its type
    own_rng: bool = False     # at temperature it draws with its program's own generator (the
                              # same distribution as the target's sampler, other tokens)
    branches: bool = False    # it keeps branches as sequences of both caches (seq_rm on both)

    @property
    def llama(self) -> bool:
        """A ``--spec-type`` of llama-server/-cli/-speculative-simple."""
        return not self.program and self.origin == "llama.cpp"

    def own_rounds(self, n_seq: int):
        """Its own loop for contexts of ``n_seq`` sequences (None: the engine's chain)."""
        if not self.rounds or n_seq < self.rounds_np:
            return None
        module, fn = self.rounds.split(":")
        return getattr(importlib.import_module(f"specscope.core.engine.{module}"), fn)

    @property
    def ngram(self) -> bool:
        return self.source == LOOKUP

    @property
    def uses_md(self) -> bool:
        """It drafts with the -md model (a draft model or a head)."""
        return self.source in (MODEL, HEAD)

    @property
    def reads_target(self) -> bool:
        """It drafts from the target's hidden states (a head or the MTP blocks), so every
        verification batch runs through it (llama.cpp's process)."""
        return self.source in (HEAD, TARGET)

    def who_words(self) -> str:
        """Who drafted, in plain words: "the EAGLE-3 head", or the type's name."""
        return f"{self.who[0]} {self.who[1]}".strip() if self.who[1] else self.name

    @property
    def reads_n_max(self) -> bool:
        """Its length is --spec-draft-n-max (the model drafters')."""
        return self.length is _n_max

    def drafter_module(self):
        return importlib.import_module(f"specscope.core.engine.drafters.{self.drafter.split(':')[0]}")

    def drafter_class(self):
        return getattr(self.drafter_module(), self.drafter.split(":")[1])

    def flags(self) -> tuple:
        """Its own settings' flags (core/engine/flag.py), declared in its drafter module (those
        of its module's ``FLAGS`` that it owns, its name first in their types: a module may
        serve several types, and a flag they share is gathered once)."""
        return tuple(f for f in getattr(self.drafter_module(), "FLAGS", ()) if f.types[0] == self.name)

    @property
    def params_class(self):
        """The dataclass of its own parameters (its drafter module's ``PARAMS``; None: it has
        none beside the shared settings). SpecSettings.params(name) holds one per type."""
        return getattr(self.drafter_module(), "PARAMS", None)

    def sequences(self, spec) -> int:
        return self.seqs(spec) if self.seqs else 1


def _n_max(spec) -> int:
    return spec.n_max


def _size_m(name: str) -> Callable:
    return lambda spec: spec.params(name).size_m


TYPES: dict[str, SpecType] = {t.name: t for t in (
    SpecType("ngram-simple", LOOKUP, "ngram_simple:NgramSimple",
             "copies what followed the last time the latest n tokens occurred",
             _size_m("ngram-simple"), ("#713f12", "#fde68a", "#d4a106")),           # amber
    SpecType("ngram-map-k", LOOKUP, "ngram_map:NgramMap",
             "like ngram-simple, through a hash map of earlier n-grams; drafts as many tokens "
             "as were accepted the last time that n-gram drafted",
             _size_m("ngram-map-k"), ("#581c87", "#e9d5ff", "#8b5cf6")),            # violet
    SpecType("ngram-map-k4v", LOOKUP, "ngram_map:NgramMap",
             "keeps up to 4 different continuations per n-gram and drafts only when one "
             "clearly dominates",
             _size_m("ngram-map-k4v"), ("#164e63", "#a5f3fc", "#0891b2")),          # cyan
    SpecType("ngram-mod", LOOKUP, "ngram_mod:NgramMod",
             "a 4M-entry hash table from n-grams to their next token, drafted one token at a "
             "time (n-min..n-max tokens or nothing)",
             lambda spec: spec.params("ngram-mod").n_max, ("#831843", "#fbcfe8", "#db2777")),  # pink
    SpecType("ngram-cache", LOOKUP, "ngram_cache:NgramCache",
             "1- to 4-gram statistics of the context: each drafted token is the most frequent "
             "follower (up to 8 tokens)",
             lambda spec: 8, ("#7c2d12", "#fed7aa", "#ea580c")),                     # orange
    SpecType("suffix", LOOKUP, "suffix:Suffix",
             "suffix trees over the prompt, the reply and a corpus draft the most frequent "
             "continuation, longer the longer the match (SuffixDecoding; vLLM's method=suffix); "
             "with -np > 1 a tree of continuations",
             lambda spec: spec.params("suffix").longest, ("#312e81", "#c7d2fe", "#4f46e5"),   # indigo
             p_note="p: how often the suffix trees saw it", origin="vLLM (Arctic Inference)",
             rounds="suffix_round:suffix_rounds", rounds_np=2,
             np=("leaves (-np)", 1, "suffix: the most leaves of its tree, llama.cpp's -np: each is "
                 "a sequence of the target's cache, so changing it reloads the target (1: one "
                 "path, as vLLM verifies it)"),
             note="SpecScope only (vLLM has it, llama.cpp does not). Leaves 1: one path, as vLLM "
                  "verifies it; more: a tree of continuations in one batch (reloads the target)."),
    SpecType("draft-simple", MODEL, "model:DraftModel",
             "the draft model: greedy over its top-10 probabilities",
             _n_max, ("#14532d", "#bbf0c6", "#2e9d4b"),                              # green
             who=("the", "draft model"), what="a draft model"),
    SpecType("draft-eagle3", HEAD, "eagle3:Eagle3",
             "an EAGLE-3 head: one layer that drafts from three of the target's own hidden "
             "states, over a reduced vocabulary",
             _n_max, ("#3f6212", "#e2f7a1", "#74a00f"),                              # lime
             who=("the", "EAGLE-3 head"), what="an EAGLE-3 head", head="eagle3",
             p_note="p · head's id→target id (d2t)", cache="head"),
    SpecType("draft-mtp", TARGET, "mtp:Mtp",
             "the target's own MTP (nextn) blocks: each drafts the token after next from a "
             "token and the target's last hidden state before it",
             _n_max, ("#0b3b36", "#82d3bf", "#0f9488"),                              # teal
             who=("the target's own", "MTP block(s)"), what="the target's MTP blocks",
             p_note="p: the block's top-10 share", cache="MTP context"),
    SpecType("draft-dflash", HEAD, "dflash:DFlash",
             "a DFlash head: drafts a whole block at once from the target's own hidden states, "
             "one decode of id_last and mask tokens",
             _n_max, ("#701a75", "#f0abfc", "#c026d3"),                              # fuchsia
             who=("the", "DFlash head"), what="a DFlash head", head="dflash", block=True,
             p_note="p: each position's top-10 share,\nthe whole block in one decode", cache="head"),
    SpecType("draft-dspark", HEAD, "dflash:DSpark",
             "a DFlash head with a Markov head (DSpark): the block drafted at once, each "
             "position biased by the token drafted before it",
             _n_max, ("#292524", "#d6cfc4", "#78716c"),                              # stone
             who=("the", "DSpark head"), what="a DSpark head", head="dflash", block=True,
             p_note="p: each position's top-10 share,\none decode, each biased by the last",
             cache="head", markov=True),
    SpecType("draft-tree", MODEL, "tree:TreeDrafter",
             "the draft model drafts a tree: up to -np branches, split where a runner-up holds "
             "more than --spec-draft-p-split, verified in one batch (llama-speculative)",
             _n_max, ("#5a2e0e", "#e8c4a0", "#a0522d"),                              # sienna
             who=("the draft model's", "tree"), what="a draft model", program="llama-speculative",
             rounds="tree_round:tree_rounds", program_args="llama-speculative-simple",
             priced="tree", own_rng=True, branches=True,
             np=("branches (-np)", 4, "draft-tree: the most branches a tree holds, llama.cpp's -np "
                 "(--parallel): each is a sequence of both models' caches, so changing it "
                 "reloads the pair (1: a chain)"),
             batch=lambda spec, n_seq: spec.n_max + n_seq - 1,   # n nodes, a bonus row per branch
             note="Drafts a tree with the model in the draft slot: up to -np branches, split where a "
                  "runner-up holds more than p_split; n_max above caps its tokens (llama-speculative "
                  "has no n_min or p_min). Changing the branches reloads the pair.",
             no_replay="its branches split on the draft's runner-up candidates at every position "
                       "of every branch, which one run does not record (the tree headroom plot "
                       "says what a wider draft would have accepted)"),
    SpecType("lookahead", SELF, "lookahead:Lookahead",
             "the target guesses a window of W positions ahead (Jacobi iterations); n-grams of its "
             "guesses that follow the token are verified in the same batch (llama-lookahead)",
             lambda spec: spec.params("lookahead").n - 1, ("#1f2937", "#cbd5e1", "#475569"),   # slate
             who=("the target's", "lookahead window"), what="the target's own guesses",
             program="llama-lookahead", rounds="lookahead_round:lookahead_rounds", priced="batch",
             seqs=lambda spec: spec.params("lookahead").n_seq,          # W + G + 1
             batch=lambda spec, n_seq: spec.params("lookahead").beside,
             note="Drafts with nothing but the target: beside each token it decodes a window of W "
                  "guesses and verifies up to G n-grams of N tokens from them in the same batch "
                  "(W + G + 1 sequences: changing W or G reloads the target).",
             no_replay="its n-grams come from the target's guesses at the window's positions, "
                       "decoded beside each token: the target's rows there are not in the run, so "
                       "its pool cannot be rebuilt from the text"),
)}
LLAMA_TYPES = tuple(n for n, t in TYPES.items() if t.llama)   # llama.cpp's --spec-type values


def spec_type(name: str) -> SpecType:
    """The descriptor of ``name``; an unknown or empty name is the draft model's."""
    return TYPES.get(name or "draft-simple", TYPES["draft-simple"])


def alone(types) -> SpecType | None:
    """The descriptor of the one type ``types`` holds (None: a chain of several): a type with a
    loop, a price or a batch of its own has them only when it drafts alone."""
    return TYPES[types[0]] if len(types) == 1 else None


def names(test: Callable[[SpecType], bool] = lambda t: True) -> tuple[str, ...]:
    """The types (in priority order) whose descriptor passes ``test``."""
    return tuple(n for n, t in TYPES.items() if test(t))


def listing(test: Callable[[SpecType], bool], sep: str = ", ", last: str = " and ") -> str:
    """The types passing ``test`` in words: "draft-dflash and draft-dspark"."""
    found = names(test)
    return sep.join(found[:-1]) + last + found[-1] if len(found) > 1 else "".join(found)


def require_generating(info) -> None:
    """ModelFileError where ``info`` (a GGUFInfo) is a head given as the target: a head (its
    architecture one of HEAD_KINDS) drafts on a target's hidden states and makes no text."""
    kind = info.architecture
    if kind in HEAD_KINDS:
        spec = names(lambda t: t.head == kind and not t.markov)[0]
        raise ModelFileError(info.path, f"this is {HEAD_KINDS[kind]}, which drafts on a target's "
                                        "hidden states and generates no text of its own: give it "
                                        f"as the draft (-md) with --spec-type {spec}, and a model "
                                        "as the target (-m)")


def drafts_with() -> str:
    """Each model drafter and what it drafts with, in words ("draft-simple with a draft
    model, draft-eagle3 with an EAGLE-3 head, ...")."""
    return ", ".join(f"{n} with {t.what}" for n, t in TYPES.items() if t.what)


__all__ = ["alone", "drafts_with", "SpecType", "TYPES", "LLAMA_TYPES", "HEAD_KINDS", "LOOKUP", "MODEL", "HEAD", "TARGET",
           "SELF", "spec_type", "names", "listing", "require_generating"]
