"""The cost of distance on loopback: the demo pair calibrated and run local, with its target on
a ggml-rpc-server on 127.0.0.1, and with both models there (``specscope bench --placements``
in a child running the RPC-enabled llama.cpp of tests/helpers/rpc_build.py, built first if needed).

    python tests/bench/bench_rpc.py [--threads 1] [--repeats 3] [-- extra bench flags]

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers
from helpers import rpc_build  # noqa: E402


def interleaved(endpoint: str, threads: int, reps: int) -> None:
    """(In the child with the RPC build.) The same decodes local and remote, alternated
    decode by decode, so that a shared machine's load falls on both alike: the target's
    verification of k tokens (logits of every row), the draft's single token; medians."""
    import statistics
    import time
    from specscope.core.models.demo import demo_pair
    from specscope.core.engine.engine import Engine, EngineSettings
    from specscope.core.models.llama import Batch
    target, draft = demo_pair()
    base = EngineSettings(n_ctx=512, target_threads=threads, draft_threads=threads)
    remote = EngineSettings(**{**base.__dict__, "rpc": (endpoint,), "target_devices": ("RPC0",),
                               "target_gpu_layers": -1, "draft_devices": ("RPC0",),
                               "draft_gpu_layers": -1})
    ks = (1, 2, 3, 5, 9)
    with Engine(target, draft, base) as loc, Engine(target, draft, remote) as rem:
        prompt = loc.target.tokenize("def fibonacci(n):\n    if n < 2:\n        return n")
        times = {(w, m, k): [] for w in ("local", "remote") for m in ("target", "draft") for k in ks}
        with Batch(16) as b:
            for e in (loc, rem):
                e.tgt.prefill(prompt, b, "the prompt")
                e.dft.prefill(prompt, b, "the prompt")
            for _ in range(reps):
                for k in ks:
                    for where, e in (("local", loc), ("remote", rem)):
                        for model, ctx in (("target", e.tgt), ("draft", e.dft)):
                            if model == "draft" and k > 1:
                                continue
                            b.fill([prompt[-1]] * k, len(prompt), logits="all")
                            t0 = time.perf_counter()
                            ctx.decode(b, "a timed batch")
                            ctx.logits(k)[-1].argmax()
                            times[(where, model, k)].append(time.perf_counter() - t0)
                            ctx.seq_rm(len(prompt), -1)
    med = {key: statistics.median(v[2:]) * 1e3 for key, v in times.items() if v}
    print(f"interleaved, medians of {reps - 2} (ms; target and draft both on the server when remote):")
    print("target verify k   " + "".join(f"{'k=' + str(k):>9}" for k in ks))
    for where in ("local", "remote"):
        print(f"{where:<18}" + "".join(f"{med[(where, 'target', k)]:9.2f}" for k in ks))
    print(f"{'remote - local':<18}" + "".join(
        f"{med[('remote', 'target', k)] - med[('local', 'target', k)]:+9.2f}" for k in ks))
    print(f"draft token       local {med[('local', 'draft', 1)]:.2f}  remote {med[('remote', 'draft', 1)]:.2f}")
    for n in (1, 2, 4, 8):
        k = min((x for x in ks if x >= n + 1), default=ks[-1])
        loc = n * med[("local", "draft", 1)] + med[("local", "target", k)]
        tgt = n * med[("local", "draft", 1)] + med[("remote", "target", k)]
        both = n * med[("remote", "draft", 1)] + med[("remote", "target", k)]
        print(f"round n={n} (n draft tokens, verify k={k}): local {loc:.2f}, target remote "
              f"{tgt:.2f} ({tgt - loc:+.2f}), both remote {both:.2f} ({both - loc:+.2f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="threads of each model and of the server")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--placements", default="local,target-remote,both-remote")
    ap.add_argument("--cpu", type=int, default=None,
                    help="pin this script, the server and the bench to one core: a remote model then "
                         "gets no CPU a local one would not, so the difference is the RPC's own cost "
                         "(on a shared machine the server, a process of its own, otherwise gets a "
                         "scheduler share of its own)")
    ap.add_argument("--interleaved", type=int, default=0, metavar="REPS",
                    help="instead of `bench --placements`: time the same decodes local and remote, "
                         "alternated, REPS times (the fairest figures on a shared machine)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("extra", nargs="*", help="more `specscope bench` flags (after --)")
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})     # inherited by the server and the bench
    if args.child:
        interleaved(args.child, args.threads, args.interleaved)
        return 0
    lib = rpc_build.ensure()
    proc, endpoint = rpc_build.start_server(lib, threads=args.threads)
    try:
        t = str(args.threads)
        if args.interleaved:
            env = {**os.environ, "LLAMA_CPP_LIB_PATH": str(lib)}
            return subprocess.run([sys.executable, __file__, "--child", endpoint, "--threads", t,
                                   "--interleaved", str(args.interleaved)], env=env).returncode
        cmd = [sys.executable, "-m", "specscope.core.cli.main", "bench", "--rpc", endpoint,
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
