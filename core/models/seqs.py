"""Several sequences in one context, as llama.cpp's ``llama-speculative`` keeps a tree's branches:
a batch whose tokens belong to one or more sequences, the memory calls on a given sequence, and
a sampler chain's candidates for one output row (``common_sampler_get_candidates``).

A context decodes several sequences when it was made with ``ContextSettings.n_seq`` > 1 (its
KV cache is then unified: a branch's prefix is one set of cells shared by every sequence).
"""

from __future__ import annotations

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.errors import ConfigError
from specscope.core.models.candidates import scratch
from specscope.core.models.llama import Context, Handle
from specscope.core.models.sampler_chain import SamplerChain
from specscope.core.models.quick import quick


class SeqBatch(Handle):
    """A llama_batch whose tokens each belong to up to ``n_seq`` sequences (``common_batch``'s
    ``add`` and ``add_seq``), every token with logits."""

    def __init__(self, capacity: int, n_seq: int):
        self.capacity, self.n_seq = capacity, n_seq
        self.ptr = ll.llama_batch_init(capacity, 0, n_seq)
        self.size = 0

    def clear(self) -> None:
        self.size = self.ptr.n_tokens = 0

    def add(self, token: int, pos: int, seq, logits: bool = True) -> int:
        """``token`` at ``pos`` in sequence ``seq`` (or in each of several), with logits or
        without; its index in the batch."""
        i = self.size
        if i >= self.capacity:
            raise ConfigError(f"a batch of more than {self.capacity} tokens does not fit")
        b = self.ptr
        seqs = (seq,) if isinstance(seq, int) else tuple(seq)
        b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, len(seqs), int(logits)
        for k, s in enumerate(seqs):
            b.seq_id[i][k] = s
        self.size = b.n_tokens = i + 1
        return i

    def add_seq(self, i: int, seq: int) -> None:
        """Token ``i`` belongs to sequence ``seq`` too (a branch split off where it was)."""
        b = self.ptr
        b.seq_id[i][b.n_seq_id[i]] = seq
        b.n_seq_id[i] += 1

    def rows(self, n_past: int) -> tuple[tuple[int, ...], ...]:
        """Each token as (token, position - n_past, logits 1 or 0, its sequences...), in batch
        order: what a lossless check needs to decode the same batch again (events.TreeShape.rows,
        LookaheadShape.rows)."""
        b = self.ptr
        return tuple((b.token[i], b.pos[i] - n_past, int(bool(b.logits[i])),
                      *(b.seq_id[i][k] for k in range(b.n_seq_id[i]))) for i in range(self.size))

    def _free(self, ptr) -> None:
        ll.llama_batch_free(ptr)


def seq_rm(ctx: Context, seq: int, p0: int = -1, p1: int = -1) -> None:
    quick.llama_memory_seq_rm(ctx.mem, seq, p0, p1)


def seq_cp(ctx: Context, src: int, dst: int) -> None:
    """Every cell of ``src`` belongs to ``dst`` too."""
    ll.llama_memory_seq_cp(ctx.mem, src, dst, -1, -1)


def seq_keep(ctx: Context, seq: int) -> None:
    """Only ``seq`` stays: the cells of every other sequence are dropped."""
    ll.llama_memory_seq_keep(ctx.mem, seq)


def keep_branch(ctx: Context, kept: int, after: int) -> None:
    """A tree's round ends: sequence ``kept`` loses its cells from ``after`` on, every other
    sequence's cells go, and what stays is sequence 0 (llama-speculative's keep of a branch)."""
    seq_rm(ctx, kept, after, -1)
    seq_keep(ctx, kept)
    if kept:
        seq_cp(ctx, kept, 0)
        seq_keep(ctx, 0)


def row_logits(ctx: Context, row: int) -> np.ndarray:
    """The logits of output row ``row`` of the context's last decode."""
    ptr = quick.llama_get_logits_ith(ctx.ptr, row)
    return np.ctypeslib.as_array(ptr, shape=(ctx.n_vocab,))


def candidates(chain: SamplerChain, ctx: Context, row: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, probabilities) of row ``row`` after the chain, most probable first: llama.cpp's
    ``common_sampler_sample`` then ``common_sampler_get_candidates(.., true)``. The chain runs as
    when it samples (its final sampler draws: its random state moves on), and its draw is not
    kept; the probabilities are those its final sampler drew from."""
    c = scratch(ctx.n_vocab)
    c.fill(row_logits(ctx, row))
    c.apply(chain.ptr)
    out = c.left().copy()
    order = np.argsort(-out["p"], kind="stable")
    return out["id"][order], out["p"][order]


def draw(chain: SamplerChain, ctx: Context, row: int) -> int:
    """The token the chain draws from row ``row`` without accepting it (llama.cpp's
    ``common_sampler_sample`` alone: lookahead's guesses for its window)."""
    c = scratch(ctx.n_vocab)
    c.fill(row_logits(ctx, row))
    c.apply(chain.ptr)
    return int(c.left()[c.array.selected]["id"])


__all__ = ["SeqBatch", "seq_rm", "seq_cp", "seq_keep", "row_logits", "candidates", "draw"]
