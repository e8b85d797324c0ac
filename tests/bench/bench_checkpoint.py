"""Checkpoint benchmark (not a test): the state work of one checkpoint round on a hybrid
memory at several context lengths, three ways.

    python tests/bench/bench_checkpoint.py [-m HYBRID.gguf] [-c 256,2048] [--repeat 30]

A checkpoint round (engine module docs) saves the target's sequence state before the
verification batch and restores it after a partial acceptance. Each repeat here decodes a
5-token verification batch at the end of an n-token context between a save and a restore,
and times the save and the restore:

  before   the whole state (KV cache + recurrent), copied through a Python list of ints and
           back through ``from_buffer_copy`` (SpecScope's code before PARTIAL_ONLY);
  whole    the whole state again, llama.cpp copying into a reused ctypes buffer;
  partial  ``LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY`` (the recurrent part) + ``seq_rm`` of the
           KV rows after it, what llama.cpp's speculative-simple and the engine do.

Without -m it generates an LFM2 with a hybrid memory (4 short-convolution blocks, 2
attention blocks, n_embd 512; F16 KV cache, the engine's default). Figures are medians.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import tempfile
import time
from pathlib import Path

import llama_cpp.llama_cpp as ll

from specscope.core.models.llama import Batch, Checkpoint, Context, ContextSettings, Model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers
from helpers import ggufgen  # noqa: E402


class ListCopy:
    """SpecScope's Context.save_state / load_state before this change, for the 'before' column."""

    def __init__(self, ctx: Context):
        self.ctx, self.data = ctx, b""

    def save(self):
        n = ll.llama_state_seq_get_size(self.ctx.ptr, 0)
        buf = (ctypes.c_uint8 * n)()
        written = ll.llama_state_seq_get_data(self.ctx.ptr, buf, n, 0)
        self.data = bytes(buf[:written])
        return self

    def restore(self):
        buf = (ctypes.c_uint8 * len(self.data)).from_buffer_copy(self.data)
        assert ll.llama_state_seq_set_data(self.ctx.ptr, buf, len(self.data), 0) != 0

    @property
    def size(self):
        return len(self.data)


def fill(ctx: Context, batch: Batch, n: int) -> None:
    ctx.clear()
    for start in range(0, n, batch.capacity):
        batch.fill([(i * 7919) % 250 for i in range(start, min(n, start + batch.capacity))],
                   start, logits="none")
        ctx.decode(batch, "the benchmark context")


def measure(ctx: Context, batch: Batch, ckpt, n: int, repeat: int) -> tuple[float, float, int]:
    saves, restores = [], []
    for r in range(repeat):
        t = time.perf_counter()
        ckpt.save()
        saves.append(time.perf_counter() - t)
        batch.fill([1 + r % 200, 2, 3, 4, 5], n, logits="all")   # the verification batch
        ctx.decode(batch, "a verification batch")
        t = time.perf_counter()
        ckpt.restore()
        restores.append(time.perf_counter() - t)
        assert ctx.pos_max() == n - 1
    return statistics.median(saves), statistics.median(restores), ckpt.size


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", type=Path, help="a GGUF with a hybrid (or recurrent) memory")
    p.add_argument("-c", "--contexts", default="256,2048", help="context lengths to fill")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("-t", "--threads", type=int, default=0)
    args = p.parse_args(argv)
    contexts = [int(x) for x in args.contexts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model or ggufgen.write_lfm2(Path(tmp) / "lfm2-bench.gguf", layers="ccacca",
                                                n_embd=512, n_ff=1024, n_head=8, n_head_kv=4)
        model = Model(path)
        ctx = Context(model, ContextSettings(n_ctx=max(contexts) + 16, n_threads=args.threads))
        batch = Batch(ctx.n_batch)
        try:
            print(f"{model.description}, {'hybrid' if ll.llama_model_is_hybrid(model.ptr) else 'not hybrid'}"
                  f" memory; median of {args.repeat}; save + restore per checkpoint round\n")
            print(f"{'context':>8} {'method':<8}{'bytes':>12}{'save ms':>10}{'restore ms':>12}{'round ms':>10}")
            for n in contexts:
                fill(ctx, batch, n)
                for name, ckpt in (("before", ListCopy(ctx)), ("whole", Checkpoint(ctx, partial=False)),
                                   ("partial", Checkpoint(ctx))):
                    save, restore, size = measure(ctx, batch, ckpt, n, args.repeat)
                    print(f"{n:>8} {name:<8}{size:>12,}{1e3 * save:>10.3f}{1e3 * restore:>12.3f}"
                          f"{1e3 * (save + restore):>10.3f}")
        finally:
            batch.close()
            ctx.close()
            model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
