"""llama.cpp's sampler chain (``llama_sampler``), as the target's sampling and the tree's and
lookahead's per-sequence samplers use it."""

from __future__ import annotations

import llama_cpp.llama_cpp as ll

from specscope.core.errors import ConfigError
from specscope.core.models.llama import Context, Handle
from specscope.core.models.quick import quick


class SamplerChain(Handle):
    """A llama_sampler chain. ``sample`` = llama_sampler_sample, which also accepts the token.

    ``argmax``: the chain is llama.cpp's greedy sampler alone, which keeps no state and takes the
    first largest logit in id order: numpy's argmax of the row is the same token, without
    llama.cpp's copy of the whole row into a candidate array (0.5 µs against 5 µs a row on a
    4k vocabulary, three rows a round for draft-simple). A row with a NaN goes to llama.cpp
    (its comparison skips NaN where argmax stops at it)."""

    def __init__(self, ptr, argmax: bool = False):
        self.ptr = ptr
        self.argmax = argmax

    @classmethod
    def build(cls, samplers, argmax: bool = False) -> "SamplerChain":
        params = ll.llama_sampler_chain_default_params()
        params.no_perf = True
        chain = ll.llama_sampler_chain_init(params)
        for s in samplers:
            if not s:
                ll.llama_sampler_free(chain)
                raise ConfigError("llama.cpp refused a sampler setting (is the grammar valid GBNF?)")
            ll.llama_sampler_chain_add(chain, s)  # the chain now owns s
        return cls(chain, argmax)

    def sample(self, ctx: Context, row: int) -> int:
        if self.argmax:
            logits = ctx.row(row)
            token = int(logits.argmax())
            if logits[token] == logits[token]:        # not NaN
                return token
        return quick.llama_sampler_sample(self.ptr, ctx.ptr, row)

    def accept(self, token: int) -> None:
        quick.llama_sampler_accept(self.ptr, token)

    def clone(self) -> "SamplerChain":
        return SamplerChain(ll.llama_sampler_clone(self.ptr), self.argmax)

    def restore(self, saved: "SamplerChain") -> None:
        """Become ``saved`` (a clone taken earlier), which gives up its handle."""
        self.close()
        self.ptr, saved.ptr = saved.ptr, None

    def _free(self, ptr) -> None:
        ll.llama_sampler_free(ptr)
