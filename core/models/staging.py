"""llama.cpp's staging API (src/llama-ext.h), which EAGLE-3 and MTP read the target's hidden
states with, and :class:`StagedHead`, what their drafting contexts share.

llama.cpp declares these functions in a C++ header, so llama-cpp-python's ``libllama.so``
exports them with C++ linkage, under mangled names (``_Z26llama_set_embeddings_nextnP13
llama_contextbb``), and its Python binding leaves them out. :func:`function` finds one in the
library the binding loaded, by its plain name or its mangled one, once, with its argument and
result types set; a library without it raises :class:`StagingSymbolError`: one line naming the
symbol and the llama-cpp-python version.
"""

from __future__ import annotations

import ctypes
from functools import cache

import llama_cpp
import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.errors import DecodeError, SpecScopeError
from specscope.core.models.llama import Closing, Context, ExtBatch

_ctx, _model = ctypes.c_void_p, ctypes.c_void_p
_floats = ctypes.POINTER(ctypes.c_float)

# name -> (mangled name, argument types, result type), as src/llama-ext.h declares them
SIGNATURES = {
    # context -> layer id -> on: output the input rows of that target layer on every decode
    "llama_set_embeddings_layer_inp": ("_Z30llama_set_embeddings_layer_inpP13llama_contextjb",
                                       [_ctx, ctypes.c_uint32, ctypes.c_bool], None),
    # their rows of the last decode: n_tokens x n_embd floats
    "llama_get_embeddings_layer_inp": ("_Z30llama_get_embeddings_layer_inpP13llama_contextj",
                                       [_ctx, ctypes.c_uint32], _floats),
    # the pre-norm hidden state (EAGLE-3's g), for every token or (masked) the output rows only
    "llama_set_embeddings_nextn": ("_Z26llama_set_embeddings_nextnP13llama_contextbb",
                                   [_ctx, ctypes.c_bool, ctypes.c_bool], None),
    "llama_get_embeddings_nextn": ("_Z26llama_get_embeddings_nextnP13llama_context", [_ctx], _floats),
    "llama_get_embeddings_nextn_ith": ("_Z30llama_get_embeddings_nextn_ithP13llama_contexti",
                                       [_ctx, ctypes.c_int32], _floats),
    "llama_set_nextn_layer_offset": ("_Z28llama_set_nextn_layer_offsetP13llama_contexti",
                                     [_ctx, ctypes.c_int32], None),
    # a head's target layers (EAGLE-3: the 3 layers whose inputs it reads)
    "llama_model_target_layer_ids": ("_Z28llama_model_target_layer_idsPK11llama_model",
                                     [_model], ctypes.POINTER(ctypes.c_int32)),
    "llama_model_target_layer_ids_n": ("_Z30llama_model_target_layer_ids_nPK11llama_model",
                                       [_model], ctypes.c_uint32),
    "llama_model_dflash_selector_top_k": ("_Z33llama_model_dflash_selector_top_kPK11llama_model",
                                          [_model], ctypes.c_int32),
}


class StagingSymbolError(SpecScopeError):
    """The llama.cpp library lacks a function of the staging API."""


def resolve(name: str, mangled: str, argtypes, restype, lib=None):
    """The function ``name`` of ``lib`` (default: the binding's libllama), found by its plain or
    its mangled name, its types set; StagingSymbolError when neither is exported."""
    lib = lib if lib is not None else ll._lib
    for symbol in (name, mangled):
        try:
            fn = getattr(lib, symbol)
        except AttributeError:
            continue
        fn.argtypes, fn.restype = argtypes, restype
        return fn
    raise StagingSymbolError(
        f"llama-cpp-python {llama_cpp.__version__}'s libllama does not export {name} "
        f"({mangled}), which EAGLE-3 and MTP need (llama.cpp's staging API, src/llama-ext.h)")


@cache
def function(name: str):
    """A staging function by its name in src/llama-ext.h (``SIGNATURES``), resolved once."""
    return resolve(name, *SIGNATURES[name])


class StagedHead(Closing):
    """A drafting context beside the target's that reads the target's hidden states (an EAGLE-3
    head, core/models/eagle3.py; an MTP context, core/models/mtp.py): the target's context
    ``tgt``, the drafting context ``ctx`` with its pre-norm state turned on for its output rows
    (``llama_set_embeddings_nextn(ctx, true, masked)``), and its extended batch ``dec``."""

    def __init__(self, tgt: Context, ctx: Context):
        self.tgt, self.ctx = tgt, ctx
        self.n_embd_dec = int(ll.llama_model_n_embd(ctx.model.ptr))
        self.dec = ExtBatch(ctx)
        self._nextn = function("llama_get_embeddings_nextn")
        self._nextn_ith = function("llama_get_embeddings_nextn_ith")
        function("llama_set_embeddings_nextn")(ctx.ptr, True, True)

    def close(self) -> None:
        self.dec.close()

    def prenorm(self, i: int) -> np.ndarray:
        """The drafting context's pre-norm hidden state at entry ``i`` of its last batch, an
        output (a copy): the row that goes with the token drafted there."""
        ptr = self._nextn_ith(self.ctx.ptr, i)
        if not ptr:
            raise DecodeError(f"the drafting head's pre-norm state of batch entry {i}", -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_embd_dec,)).copy()
