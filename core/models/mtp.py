"""MTP (multi-token prediction, "nextn") blocks: a target's own drafting layers, as llama.cpp's
``draft-mtp`` runs them.

A model converted with its MTP blocks (Qwen3.5, GLM-4.5, MiMo-V2, DeepSeek-V3 …) carries them
after its layers: ``{arch}.block_count`` counts both, ``{arch}.nextn_predict_layers`` the MTP
blocks, and the last block holds ``blk.N.nextn.eh_proj.weight`` (llama.cpp's
``common_speculative_types_from_gguf`` detects ``draft-mtp`` by that tensor). llama.cpp skips
those tensors unless the model is loaded with ``load_mtp``. An MTP context
(``LLAMA_CONTEXT_TYPE_MTP``, made on the target's own weights with ``ctx_other`` = the
target's context, common/common.cpp) runs the MTP block instead of the layers: at position p
it reads the token at p and the target's last hidden state at p - 1 (its ``h_nextn``), and its
logits predict the token at p + 1; its own hidden state at p stands in for the target's when
it drafts further.

:func:`nextn_layers` reads the count from the file; :class:`MtpHead` holds the llama.cpp side
in use: the target's hidden states turned on for every row it decodes, the MTP context's on
its output rows, and the rows read back (the staging API, core/models/staging.py).
"""

from __future__ import annotations

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.errors import ModelFileError
from specscope.core.models.gguf_file import GGUFInfo
from specscope.core.models.llama import Context
from specscope.core.models.staging import StagedHead, function


def nextn_layers(info: GGUFInfo) -> int:
    """How many MTP blocks the file carries: 0 unless its last block holds the ``nextn``
    projection (llama.cpp's test), else ``{arch}.nextn_predict_layers`` (at least 1)."""
    arch = info.metadata.get("general.architecture")
    blocks = info.metadata.get(f"{arch}.block_count")
    if not isinstance(blocks, int) or f"blk.{blocks - 1}.nextn.eh_proj.weight" not in info.tensors:
        return 0
    n = info.metadata.get(f"{arch}.nextn_predict_layers")
    return max(1, n if isinstance(n, int) else 1)


def require_nextn(info: GGUFInfo, path) -> None:
    """ModelFileError (one line naming the file) for a target without MTP blocks."""
    if nextn_layers(info) == 0:
        raise ModelFileError(path, "draft-mtp drafts with the target's own MTP (nextn) blocks, and "
                                   "this model has none (no blk.N.nextn.eh_proj.weight in its last "
                                   "block; convert it with its MTP layers, or choose another "
                                   "--spec-type)")


class MtpHead(StagedHead):
    """The MTP context beside the target's (``common_speculative_impl_draft_mtp``'s
    constructor): the target's ``h_nextn`` on for every row it decodes (unmasked), the MTP
    context's for its output rows; ``n_layers`` MTP blocks (more than one: llama.cpp chains
    them, one per draft step, selected with ``llama_set_nextn_layer_offset``)."""

    def __init__(self, tgt: Context, ctx: Context):
        super().__init__(tgt, ctx)
        n_tgt = int(ll.llama_model_n_embd_out(tgt.model.ptr))
        if n_tgt != self.n_embd_dec:       # llama.cpp asserts it in the constructor
            raise ModelFileError(tgt.model.path, f"its MTP rows have {self.n_embd_dec} values but "
                                                 f"its hidden states {n_tgt}")
        self.n_layers = max(1, int(ll.llama_model_n_layer_nextn(ctx.model.ptr)))
        self._offset = function("llama_set_nextn_layer_offset")
        function("llama_set_embeddings_nextn")(tgt.ptr, True, False)

    def target_rows(self, n_tokens: int) -> np.ndarray:
        """The target's ``h_nextn`` rows of its last decode ((n_tokens, n_embd) float32, a copy)."""
        ptr = self._nextn(self.tgt.ptr)
        if not ptr:
            raise ModelFileError(self.tgt.model.path, "the target's hidden states (h_nextn) were "
                                                      "not extracted")
        return np.ctypeslib.as_array(ptr, shape=(n_tokens, self.n_embd_dec)).copy()

    def select(self, block: int) -> None:
        """Run MTP block ``block`` (0: the first) on the next decodes."""
        self._offset(self.ctx.ptr, block)
