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

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.errors import ConfigError, ModelFileError
from specscope.core.models.eagle3 import (DFLASH, Head, HeadFacts, TargetShape, check_d2t,
                                          target_layer_ids)
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.llama import Context, Model
from specscope.core.models.staging import function

ARCH = DFLASH
BLOCK_SIZE = 16          # llama.cpp's block size when dflash.block_size is absent


def is_dflash(model: Model) -> bool:
    return model.meta("general.architecture") == ARCH


def check_dflash(target: Model, head: Model) -> tuple[int, ...]:
    """The head's target layer ids, once the head fits the target; ModelFileError (one line,
    naming the head) when it does not."""
    n_layer = int(ll.llama_model_n_layer(target.ptr))
    ids = target_layer_ids(head)
    if not ids:
        raise ModelFileError(head.path, "DFlash model has no target_layer_ids "
                                        "(dflash.target_layers is empty)")
    for lid in ids:
        if not 0 <= lid < n_layer:
            raise ModelFileError(head.path, f"its target layer id {lid} (dflash.target_layers "
                                            f"{list(ids)}) is not one of the target's {n_layer} "
                                            f"layers ({target.path.name}): it was made for another "
                                            "target")
    n_embd, n_head = int(ll.llama_model_n_embd(target.ptr)), int(ll.llama_model_n_embd(head.ptr))
    if n_head != n_embd:       # llama.cpp feeds it len(ids) * the target's width per row
        raise ModelFileError(head.path, f"its hidden size {n_head} is not the target's {n_embd} "
                                        f"({target.path.name}): it was made for another target")
    if head.n_vocab < target.n_vocab:
        raise ModelFileError(head.path, f"its vocabulary has {head.n_vocab} tokens, fewer than "
                                        f"the target's {target.n_vocab} ({target.path.name}): "
                                        "it was made for another target")
    mask = int(ll.llama_vocab_mask(head.vocab))
    if not 0 <= mask < head.n_vocab:
        raise ModelFileError(head.path, "it has no mask token (tokenizer.ggml.mask_token_id), "
                                        "which a DFlash block is made of")
    if function("llama_model_dflash_selector_top_k")(head.ptr) > 0:
        raise ModelFileError(head.path, "it is a DFlash2 head (a selector lattice, "
                                        "dflash.selector_top_k): SpecScope drafts with DFlash "
                                        "and DSpark heads only")
    check_d2t(HeadFacts.of_file(check_gguf(head.path), ids, head.n_vocab),
              TargetShape(target.path, n_layer, n_embd, target.n_vocab))
    return ids


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
        tensors = check_gguf(model.path).tensors
        self.dspark = "markov_w1.weight" in tensors
        self.block_size = int(model.meta(f"{ARCH}.block_size") or BLOCK_SIZE)
        self.sample_from_anchor = model.meta(f"{ARCH}.sample_from_anchor") in (None, "true")
        self.causal = model.meta(f"{ARCH}.attention.causal") == "true"
        # llama.cpp reads the confidence unless the file says it has none; without conf_proj
        # there is none to read
        self.has_confidence = (model.meta(f"{ARCH}.has_confidence_head") in (None, "true")
                               and "conf_proj.weight" in tensors)
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
