"""Benchmark: the pair doctor on every pair of llama.cpp's vocabulary GGUFs.

    python tests/bench/bench_xvocab_doctor.py [--models DIR] [--markdown]

For each ordered pair (target, draft) of the ``ggml-vocab-*.gguf`` files in llama.cpp's
``models/`` folder (the vendored copy by default) it runs ``check_pair`` as the doctor does, in
a fresh cache folder (the pair's token map is built, not read), and prints llama.cpp's verdict, the overlap (the share of
the target's tokens whose text the draft has, and the reverse), the mode ``--spec-vocab auto``
drafts with (or why none can), the re-tokenization each mode adds per round, and the wall and
CPU time of the whole check (CPU: all threads, the two files load at once). The pairs with two
vocabularies of 128k tokens or more are checked a second time, the map then read from the
cache, and summed up at the end. Not collected by pytest; speed goals live here, not in timed asserts.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

VENDORED = Path("/work/ref/llama_cpp_python-0.3.36/vendor/llama.cpp/models")
LARGE = 128_000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=Path, default=VENDORED)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()
    logging.getLogger("specscope.llama").setLevel(logging.CRITICAL)
    os.environ["SPECSCOPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="specscope-bench-")
    from specscope.core.errors import SpecScopeError
    from specscope.core.measure.doctor.pair import check_pair

    files = sorted(args.models.glob("ggml-vocab-*.gguf"))
    if not files:
        ap.error(f"{args.models}: no ggml-vocab-*.gguf files")
    name = lambda p: p.stem.removeprefix("ggml-vocab-")  # noqa: E731
    check_pair(files[0], files[0])          # llama.cpp's backend started once
    print(f"{len(files)} vocabularies in {args.models}; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    head = ("target", "draft", "n target", "n draft", "llama.cpp", "target share", "draft share",
            "auto mode", "translate µs/round", "intersect µs/round", "wall s", "CPU s")
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    else:
        print("  ".join(head))
    large = []
    for t in files:
        for d in files:
            if t == d:
                continue
            try:
                r, wall, cpu = timed(check_pair, t, d)
            except SpecScopeError as e:
                print(f"{name(t)} <- {name(d)}: {e}")
                continue
            c = r.cross
            cost = (c.per_round_s if c else {})
            row = (name(t), name(d), f"{r.target.vocab.n_tokens:,}", f"{r.draft.vocab.n_tokens:,}",
                   "compatible" if r.compatible else "refused",
                   f"{c.target_share:.1%}" if c else "–", f"{c.draft_share:.1%}" if c else "–",
                   (c.mode or f"none: {c.refusal}") if c else "native",
                   *(f"{cost[m] * 1e6:.0f}" if m in cost else "–" for m in ("translate", "intersect")),
                   f"{wall:.2f}", f"{cpu:.2f}")
            print(("| " + " | ".join(row) + " |") if args.markdown else "  ".join(row), flush=True)
            if min(r.target.vocab.n_tokens, r.draft.vocab.n_tokens) >= LARGE:
                large.append((wall, cpu, *timed(check_pair, t, d)[1:]))
    if large:
        print(f"\npairs of two vocabularies of {LARGE:,}+ tokens: {len(large)}; load average "
              f"{os.getloadavg()[0]:.1f}")
        for i, what in enumerate(("wall", "CPU", "wall, map cached", "CPU, map cached")):
            x = [row[i] for row in large]
            print(f"  {what}: median {statistics.median(x):.2f} s, min {min(x):.2f} s, max {max(x):.2f} s")
    return 0


def timed(f, *args):
    """f(*args), its wall and CPU seconds."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = f(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


if __name__ == "__main__":
    sys.exit(main())
