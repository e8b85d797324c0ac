"""The cost of distance on loopback: the demo pair calibrated and run local, with its target on
a ggml-rpc-server on 127.0.0.1, and with both models there (``specscope bench --placements``
in a child running the RPC-enabled llama.cpp of tests/rpc_build.py, built first if needed).

    python tests/bench_rpc.py [--threads 1] [--repeats 3] [-- extra bench flags]

Loopback has no wire latency to speak of: what it measures is the RPC protocol's own cost per
decode (serialising the graph, copying the batch in and the logits out, one TCP round trip
each). A real network adds its round-trip time to every decode of a remote model.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import rpc_build  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="threads of each model and of the server")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--placements", default="local,target-remote,both-remote")
    ap.add_argument("extra", nargs="*", help="more `specscope bench` flags (after --)")
    args = ap.parse_args()
    lib = rpc_build.ensure()
    proc, endpoint = rpc_build.start_server(lib, threads=args.threads)
    try:
        t = str(args.threads)
        cmd = [sys.executable, "-m", "specscope.core.cli", "bench", "--rpc", endpoint,
               "--placements", args.placements, "-t", t, "-td", t, "--spec-draft-n-max", "1,2,4,8",
               "--ignore-eos", "-n", "64", "--repeats", str(args.repeats), "--recalibrate",
               "--no-lossless", "-q", *args.extra]
        env = {**os.environ, "LLAMA_CPP_LIB_PATH": str(lib)}
        print(f"rpc-server on {endpoint} (-t {t}); {' '.join(cmd[3:])}", flush=True)
        return subprocess.run(cmd, env=env).returncode
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
