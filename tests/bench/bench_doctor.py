"""Benchmark: how long the pair doctor takes on two ~150k-token vocabularies.

    python tests/bench/bench_doctor.py [--runs 5] [--n-vocab 151936] [TARGET DRAFT]

Generates two vocabulary-only GGUF files of ``--n-vocab`` BPE tokens (with as
many merges, like Qwen2's 151,936 tokens / 151,387 merges) in a temporary
folder, the draft padded by 64 tokens at the end, and prints the wall time of
``check_pair`` on them: the first run (llama.cpp's library already imported)
and the median of the following runs. With TARGET DRAFT, times those files
instead (e.g. llama.cpp's models/ggml-vocab-qwen2.gguf twice).

Not collected by pytest (the file name does not start with test_); speed goals
live here, not in timed asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n-vocab", type=int, default=151_936)
    args = ap.parse_args()

    t0 = time.perf_counter()
    import llama_cpp.llama_cpp  # noqa: F401

    from specscope.core.models.gguf_file import check_gguf
    from specscope.core.measure.doctor.pair import check_pair

    t_import = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        if args.files:
            if len(args.files) != 2:
                ap.error("give TARGET and DRAFT, or nothing")
            target, draft = args.files
        else:
            from helpers.vocab_gguf import write_vocab_gguf

            t0 = time.perf_counter()
            n_merges = args.n_vocab - 549
            target = write_vocab_gguf(Path(tmp) / "target.gguf", n_base=args.n_vocab, n_merges=n_merges)
            draft = write_vocab_gguf(Path(tmp) / "draft.gguf", n_base=args.n_vocab, pad=64,
                                     n_merges=n_merges)
            print(f"generated two {args.n_vocab:,}-token BPE vocabularies "
                  f"({target.stat().st_size / 1e6:.1f} MB each) in {time.perf_counter() - t0:.1f} s")

        print(f"import llama_cpp + specscope: {t_import:.3f} s")
        times, cpu = [], []
        for _ in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            report = check_pair(target, draft)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        assert report.compatible, report.reason
        t_hdr = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            check_gguf(target)
            t_hdr.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "specscope.core.cli.main", "doctor", str(target), str(draft)],
                              capture_output=True, text=True)
        t_cli = time.perf_counter() - t0

    print(f"check_pair on {report.target.vocab.n_tokens:,} / {report.draft.vocab.n_tokens:,} tokens: "
          f"first run {times[0]:.3f} s, median of {len(times)} {statistics.median(times):.3f} s "
          f"(min {min(times):.3f} s)")
    print(f"  CPU time of the process per run (all threads): median {statistics.median(cpu):.3f} s; "
          f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  of which check_gguf (Python header check) per file: median {statistics.median(t_hdr):.3f} s")
    print(f"'specscope doctor TARGET DRAFT' in a fresh interpreter (start-up and imports included): "
          f"{t_cli:.3f} s, exit {proc.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
