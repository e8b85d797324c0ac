"""DFlash heads (llama.cpp's ``dflash`` architecture, src/models/dflash.cpp) beside their target,
for ``draft-dflash`` and ``draft-dspark``.

A DFlash head drafts a whole block in one decode. Its KV cache holds, for every position the
target decoded, K/V rows made from the target's own features there (the inputs of the target
layers in ``dflash.target_layers``, concatenated, through its ``fc`` and encoder norm: an
embedding batch the head decodes, "injection"). A draft decodes the block [id_last, mask …]
at n_past on (the mask token is the tokenizer's ``tokenizer.ggml.mask_token_id``), its
attention not causal unless ``dflash.attention.causal`` says so, and reads each block
position's logits. A head without token embeddings or an output head uses the target's,
through the context it is made with (``ctx_other``); a ``d2t`` table spreads a reduced
vocabulary over the target's, as EAGLE-3's does.

A DSpark head is a DFlash head with a Markov head (``markov_w1.weight``, ``markov_w2.weight``:
llama.cpp's ``common_speculative_types_from_gguf`` tells the two apart by the first) that
biases each block position's logits by the token drafted before it, in the graph, and an
optional confidence head (``conf_proj``) whose value stops the draft below p_min.

:func:`check_dflash` applies the checks llama.cpp makes when it loads a head and starts
``draft-dflash``, and those it leaves to a ``GGML_ASSERT`` or ``GGML_ABORT`` that would end the
process: each is one line naming the file. :class:`DFlashHead` holds the llama.cpp side.
"""

from __future__ import annotations

from dataclasses import dataclass

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.errors import ConfigError, ModelFileError
from specscope.core.models.eagle3 import (DFLASH, Head, HeadFacts, TargetShape, check_fit,
                                          target_layer_ids)
from specscope.core.models.gguf_file import GGUFInfo, check_gguf
from specscope.core.models.llama import Context, Model

ARCH = DFLASH
BLOCK_SIZE = 16          # llama.cpp's block size when dflash.block_size is absent
MARKOV = "markov_w1.weight"   # a DSpark head's Markov head (common_speculative_types_from_gguf)


def is_dflash(model: Model) -> bool:
    return model.meta("general.architecture") == ARCH


def _flag(info: GGUFInfo, key: str, default: bool) -> bool:
    """A metadata flag as llama.cpp reads it (its value's text is "true"), or ``default``."""
    value = info.metadata.get(key)
    return default if value is None else value in (True, "true")


@dataclass(frozen=True)
class DFlashFacts(HeadFacts):
    """What a DFlash head needs of its target and what it drafts, as its file says (or
    llama.cpp loaded it): the target layers whose inputs it reads, its hidden size (which must
    be the target's: ``target_hidden_size``), a vocabulary at least the target's, the mask
    token its blocks are made of (None: none); its block size, its Markov head (a DSpark
    head), its confidence head, and a DFlash2 selector lattice (``selector_top_k`` > 0)."""
    mask: int | None = None

    @classmethod
    def of_file(cls, info: GGUFInfo, target_layers=None, n_vocab: int | None = None,
                mask: int | None = None, n_embd: int | None = None) -> "DFlashFacts":
        """From the head's GGUF header; the target layers, vocabulary size, mask token and
        hidden size as llama.cpp loaded them when it has (they are the header's)."""
        layers = info.arrays.get(f"{ARCH}.target_layers", ()) if target_layers is None else target_layers
        if mask is None:
            mask = info.metadata.get("tokenizer.ggml.mask_token_id")
        hidden = info.metadata.get(f"{ARCH}.embedding_length") if n_embd is None else n_embd
        return cls(info, tuple(int(x) for x in layers), hidden if isinstance(hidden, int) else None,
                   info.n_vocab if n_vocab is None else n_vocab,
                   mask if isinstance(mask, int) and mask >= 0 else None)

    @property
    def block_size(self) -> int:
        size = self.info.metadata.get(f"{ARCH}.block_size")
        return size if isinstance(size, int) and not isinstance(size, bool) else BLOCK_SIZE

    @property
    def dspark(self) -> bool:
        """It carries a Markov head: llama.cpp drafts with it as draft-dspark."""
        return MARKOV in self.info.tensors

    @property
    def has_confidence(self) -> bool:
        """llama.cpp reads the confidence unless the file says it has none; without
        ``conf_proj`` there is none to read."""
        return (_flag(self.info, f"{ARCH}.has_confidence_head", True)
                and "conf_proj.weight" in self.info.tensors)

    @property
    def sample_from_anchor(self) -> bool:
        return _flag(self.info, f"{ARCH}.sample_from_anchor", True)

    @property
    def causal(self) -> bool:
        return _flag(self.info, f"{ARCH}.attention.causal", False)

    @property
    def selector_top_k(self) -> int:
        k = self.info.metadata.get(f"{ARCH}.selector_top_k")
        return k if isinstance(k, int) and not isinstance(k, bool) else 0

    def most_drafted(self, dspark: bool) -> int:
        """The most tokens a block drafts (llama.cpp's clamp of n_max and n_min): the block
        after id_last, block_size - 1; draft-dspark's from the anchor (its default),
        block_size."""
        return self.block_size if dspark and self.sample_from_anchor else self.block_size - 1

    def check_layers(self, target: TargetShape, other: str) -> None:
        ids = self.target_layers
        if not ids:
            raise ModelFileError(self.path, "DFlash model has no target_layer_ids "
                                            f"({ARCH}.target_layers is empty)")
        for lid in ids:
            if not 0 <= lid < target.n_layer:
                raise ModelFileError(self.path, f"its target layer id {lid} ({ARCH}.target_layers "
                                                f"{list(ids)}) is not one of the target's "
                                                f"{target.n_layer} layers {other}")

    @property
    def hidden_words(self) -> str:      # llama.cpp feeds it len(ids) * the target's width per row
        return f"its hidden size {self.target_hidden_size}"

    def check_own(self) -> None:
        if self.mask is None or not self.mask < self.n_vocab:
            raise ModelFileError(self.path, "it has no mask token (tokenizer.ggml.mask_token_id), "
                                            "which a DFlash block is made of")
        if self.selector_top_k > 0:
            raise ModelFileError(self.path, "it is a DFlash2 head (a selector lattice, "
                                            f"{ARCH}.selector_top_k): SpecScope drafts with DFlash "
                                            "and DSpark heads only")

    @property
    def noun(self) -> str:
        return "a DSpark head" if self.dspark else "a DFlash head"

    def describe(self) -> str:
        """One line: what the head reads and how it drafts."""
        markov = (" (a DFlash head with a Markov head: each block position biased by the token "
                  "drafted before it)" if self.dspark else "")
        return (f"{self.noun}{markov}: reads the inputs of target layers {list(self.target_layers)} of a target "
                f"of hidden size {self.target_hidden_size}, drafts up to "
                f"{self.most_drafted(self.dspark)} tokens in one decode (a block of "
                f"{self.block_size}, mask token {self.mask})"
                + ("; a confidence head" if self.dspark and self.has_confidence else ""))


def check_dflash(target: Model, head: Model) -> tuple[int, ...]:
    """The head's target layer ids, once the head fits the loaded target (``check_fit`` with
    DFlashFacts' rules, on the target's shape and the head as llama.cpp loaded it);
    ModelFileError (one line, naming the head) when it does not."""
    shape = TargetShape(target.path, int(ll.llama_model_n_layer(target.ptr)),
                        int(ll.llama_model_n_embd(target.ptr)), target.n_vocab)
    return check_fit(shape, DFlashFacts.of_file(
        check_gguf(head.path), target_layer_ids(head), head.n_vocab,
        int(ll.llama_vocab_mask(head.vocab)), int(ll.llama_model_n_embd(head.ptr))))


class DFlashHead(Head):
    """A DFlash head's context beside the target's (made with ``other`` = the target's), as
    ``common_speculative_impl_draft_dflash``'s constructor sets it up: the target layers'
    inputs on for every row the target decodes, the head's attention causal or not as its file
    says, its pre-norm state (DSpark's confidence) on for its output rows. ``dspark``: the
    file carries the Markov head; ``block_size``, ``mask``, ``sample_from_anchor`` and
    ``has_confidence`` are its metadata as llama.cpp reads them."""

    def __init__(self, tgt: Context, ctx: Context, layer_ids: tuple[int, ...]):
        super().__init__(tgt, ctx, layer_ids)
        model = ctx.model
        self.facts = facts = DFlashFacts.of_file(check_gguf(model.path))
        self.dspark, self.block_size, self.has_confidence = (facts.dspark, facts.block_size,
                                                             facts.has_confidence)
        self.sample_from_anchor, self.causal = facts.sample_from_anchor, facts.causal
        self.mask = int(ll.llama_vocab_mask(model.vocab))
        ll.llama_set_causal_attn(ctx.ptr, self.causal)

    def inject(self, features: np.ndarray, pos0: int) -> None:
        """The target's features of a batch at positions pos0.. into the head's KV cache, in
        chunks of the head's n_ubatch."""
        step = self.ctx.n_ubatch
        for i in range(0, len(features), step):
            self.enc.clear()
            for j, row in enumerate(features[i:i + step]):
                self.enc.add(None, pos0 + i + j, row)
            self.ctx.process(self.enc, "the target's features into the DFlash head")

    def block(self, id_last: int, n_tokens: int, pos0: int) -> None:
        """Decode the block [id_last, mask …] of ``n_tokens`` at pos0.., every entry an output."""
        dec = self.dec
        dec.clear()
        for i in range(n_tokens):
            dec.add(id_last if i == 0 else self.mask, pos0 + i, None, output=True)
        self.ctx.process(dec, f"a block of {n_tokens} on the DFlash head")

    def confidence(self, n_rows: int) -> np.ndarray:
        """DSpark's confidence of each output row of the last block (its pre-norm state's first
        value, where llama.cpp's graph broadcasts it)."""
        ptr = self._nextn(self.ctx.ptr)
        if not ptr:
            raise ConfigError(f"{self.ctx.model.path}: the DSpark head returned no confidence")
        return np.ctypeslib.as_array(ptr, shape=(n_rows, self.n_embd_dec))[:, 0].copy()
