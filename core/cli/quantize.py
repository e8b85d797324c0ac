"""``specscope quantize``: quantized copies of a draft, to sweep against the original.

    specscope quantize DRAFT.gguf --type Q8_0,Q4_0,Q4_K_M --out DIR
    specscope bench -m TARGET.gguf -md DRAFT.gguf -md DIR/DRAFT.Q8_0.gguf \\
                    -md DIR/DRAFT.Q4_0.gguf -md DIR/DRAFT.Q4_K_M.gguf --spec-draft-n-max 1,2,4

The copies are made by llama.cpp's own ``llama_model_quantize`` in a child process (see
``specscope.core.models.quantize``). Prints each file, its size, bits per weight (tensor data over
weights, as llama.cpp counts), the tensor types it really holds (llama.cpp falls back to
another type for tensors whose rows do not fit the block: K-quants need multiples of 256)
and the time taken. Exit status 0 when every file was made, 2 otherwise (one line each).
The bench then prints, per draft, the calibrated cost ratio f beside acceptance and the
measured speed-up, so the copies read side by side with the original.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specscope.core.errors import ModelFileError
from specscope.core.models.quantize import DEFAULT_TYPES, EXISTS, TYPES, Quantization


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "quantize", help="quantized copies of a draft model (llama.cpp's llama_model_quantize)",
        description="Make quantized copies of a GGUF model with llama.cpp's own quantizer, named "
                    "NAME.TYPE.gguf in the output folder, to sweep against the original with "
                    "`specscope bench -md ORIG -md DIR/NAME.Q8_0.gguf ...`.")
    p.add_argument("model", type=Path, help="the model to copy (GGUF, F16 or F32 weights)")
    p.add_argument("--type", default=",".join(DEFAULT_TYPES), metavar="T[,T...]",
                   help=f"types to make (default {','.join(DEFAULT_TYPES)}; any of {', '.join(TYPES)})")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace files that already exist (by default an existing file is an error)")
    p.add_argument("--allow-requantize", action="store_true",
                   help="allow a source that is already quantized (it loses more)")
    p.add_argument("--pure", action="store_true",
                   help="llama-quantize's --pure: every weight matrix in the chosen type (by default "
                        "llama.cpp gives the output matrix, or a token embedding tied to it, more bits)")
    p.add_argument("-t", "--threads", type=int, default=0, help="quantizing threads (default: all cores)")
    return p


def run(args) -> int:
    try:
        q = Quantization(args.model, args.type, args.out, overwrite=args.overwrite,
                         nthread=args.threads, allow_requantize=args.allow_requantize,
                         pure=args.pure)
    except ModelFileError as exc:
        if exc.problem != EXISTS:
            raise
        raise ModelFileError(exc.path, f"{EXISTS}, or pass --overwrite") from None
    tty = sys.stderr.isatty()

    def progress(i, n, frac, path):
        if tty and path:
            sys.stderr.write(f"\r[{i + 1}/{n}] {Path(path).name} {frac:4.0%} ")
            sys.stderr.flush()

    try:
        results = q.run(progress)
    except KeyboardInterrupt:
        q.stop()
        print("specscope: stopped; the partial file was removed", file=sys.stderr)
        return 130
    if tty:
        sys.stderr.write("\r" + " " * 60 + "\r")
    failed = 0
    for r in results:
        if r.status == "done":
            print(r.describe())
        else:
            failed += 1
            print(f"specscope: error: {r.describe()}", file=sys.stderr)
    made = [str(r.path) for r in results if r.status == "done"]
    if made:
        print("\nsweep them against the original:\n  specscope bench -m TARGET.gguf -md "
              f"{args.model} " + " ".join(f"-md {p}" for p in made) + " --spec-draft-n-max 1,2,4")
    return 2 if failed else 0
