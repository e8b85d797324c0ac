"""Conformance check (a script, not a test): SpecScope's n-gram drafters and chains against
llama.cpp's own ``common_speculative_*`` (common/speculative.cpp), draft by draft.

Both sides run llama-speculative-simple's round loop with an oracle target (see
tests/conformance/drafter_oracle.py): the same prompt and continuation, so every round's draft must be
the same token for token. Sequences: random ones built to repeat (copied spans, a small
alphabet) and, with --real, the demo target's own greedy outputs.

Build the reference (llama.cpp from llama-cpp-python 0.3.36's sdist, as in
tests/conformance/speculative_simple.py, plus the common library):

    cmake --build build --target llama-common -j2
    g++ -O2 -std=c++17 tests/reference/drafter_oracle.cpp -I $SRC/common -I $SRC/include \
        -I $SRC/ggml/include -I $SRC/vendor -L build/bin -lllama-common -lllama -lggml \
        -lggml-base -Wl,-rpath,$PWD/build/bin -o build/bin/drafter_oracle

    python tests/conformance/drafters.py --binary build/bin/drafter_oracle
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers
from conformance.drafter_oracle import oracle_rounds  # noqa: E402

from specscope.core.engine.drafters import Chain  # noqa: E402

# (label, llama.cpp flags) -> a Chain factory, filled by the drafter modules' FLAG_CASES
CASES: list[tuple[str, list[str]]] = [
    ("ngram-simple defaults", ["--spec-type", "ngram-simple"]),
    ("ngram-simple n2 m4", ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2",
                            "--spec-ngram-simple-size-m", "4"]),
    ("ngram-simple n3 m8", ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3",
                            "--spec-ngram-simple-size-m", "8"]),
    ("ngram-simple n1 m2", ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1",
                            "--spec-ngram-simple-size-m", "2"]),
    ("ngram-map-k defaults", ["--spec-type", "ngram-map-k"]),
    ("ngram-map-k n2 m4", ["--spec-type", "ngram-map-k", "--spec-ngram-map-k-size-n", "2",
                           "--spec-ngram-map-k-size-m", "4"]),
    ("ngram-map-k n3 m8", ["--spec-type", "ngram-map-k", "--spec-ngram-map-k-size-n", "3",
                           "--spec-ngram-map-k-size-m", "8"]),
    ("ngram-map-k n1 m2", ["--spec-type", "ngram-map-k", "--spec-ngram-map-k-size-n", "1",
                           "--spec-ngram-map-k-size-m", "2"]),
    ("ngram-map-k4v defaults", ["--spec-type", "ngram-map-k4v"]),
    ("ngram-map-k4v n2 m4 min-hits 1", ["--spec-type", "ngram-map-k4v",
                                        "--spec-ngram-map-k4v-size-n", "2",
                                        "--spec-ngram-map-k4v-size-m", "4"]),
    ("ngram-map-k4v n3 m8 min-hits 2", ["--spec-type", "ngram-map-k4v",
                                        "--spec-ngram-map-k4v-size-n", "3",
                                        "--spec-ngram-map-k4v-size-m", "8",
                                        "--spec-ngram-map-k4v-min-hits", "2"]),
    ("ngram-map-k4v n1 m2 min-hits 3", ["--spec-type", "ngram-map-k4v",
                                        "--spec-ngram-map-k4v-size-n", "1",
                                        "--spec-ngram-map-k4v-size-m", "2",
                                        "--spec-ngram-map-k4v-min-hits", "3"]),
    ("chain ngram-simple,ngram-map-k", ["--spec-type", "ngram-simple,ngram-map-k",
                                        "--spec-ngram-simple-size-n", "3",
                                        "--spec-ngram-map-k-size-n", "2",
                                        "--spec-ngram-map-k-size-m", "8"]),
    ("chain ngram-map-k,ngram-map-k4v", ["--spec-type", "ngram-map-k,ngram-map-k4v",
                                         "--spec-ngram-map-k-size-n", "3",
                                         "--spec-ngram-map-k-size-m", "4",
                                         "--spec-ngram-map-k4v-size-n", "2",
                                         "--spec-ngram-map-k4v-size-m", "8",
                                         "--spec-ngram-map-k4v-min-hits", "2"]),
    ("ngram-mod defaults", ["--spec-type", "ngram-mod"]),
    ("ngram-mod match4 min2 max8", ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "4",
                                    "--spec-ngram-mod-n-min", "2",
                                    "--spec-ngram-mod-n-max", "8"]),
    ("ngram-mod match2 min1 max16", ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "2",
                                     "--spec-ngram-mod-n-min", "1",
                                     "--spec-ngram-mod-n-max", "16"]),
    ("ngram-mod match40 min0 max4", ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "40",
                                     "--spec-ngram-mod-n-min", "0",
                                     "--spec-ngram-mod-n-max", "4"]),
    ("ngram-mod match1 min3 max2", ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "1",
                                    "--spec-ngram-mod-n-min", "3",
                                    "--spec-ngram-mod-n-max", "2"]),
    ("ngram-cache", ["--spec-type", "ngram-cache"]),
    ("chain ngram-mod,ngram-cache", ["--spec-type", "ngram-mod,ngram-cache",
                                     "--spec-ngram-mod-n-match", "4",
                                     "--spec-ngram-mod-n-min", "2"]),
    ("chain ngram-simple,ngram-cache", ["--spec-type", "ngram-simple,ngram-cache",
                                        "--spec-ngram-simple-size-n", "3",
                                        "--spec-ngram-simple-size-m", "8"]),
    ("chain of all five n-gram types", ["--spec-type", "ngram-simple,ngram-map-k,ngram-map-k4v,"
                                        "ngram-mod,ngram-cache",
                                        "--spec-ngram-simple-size-n", "4",
                                        "--spec-ngram-map-k-size-n", "3",
                                        "--spec-ngram-map-k4v-size-n", "2",
                                        "--spec-ngram-map-k4v-size-m", "6",
                                        "--spec-ngram-mod-n-match", "3",
                                        "--spec-ngram-mod-n-min", "2",
                                        "--spec-ngram-mod-n-max", "8"]),
]


def chain_from_flags(flags: list[str]) -> Chain:
    """Our chain for llama.cpp's flags, through the CLI's own parser."""
    from specscope.core.cli.spec import spec_from_flags
    from specscope.core.engine.drafters.build import make_chain
    return make_chain(spec_from_flags(flags), engine=None)


def reference(binary: Path, flags: list[str], prompt, cont, n_ctx, n_predict):
    text = " ".join(map(str, prompt)) + "\n" + " ".join(map(str, cont)) + "\n"
    proc = subprocess.run([str(binary), str(n_ctx), str(n_predict), "-m", "none", *flags],
                          input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{binary} failed: {proc.stderr[-1500:]}")
    rounds = []
    for line in proc.stdout.splitlines():
        head, _, toks = line.partition(":")
        acc, n = map(int, head.split())
        rounds.append((acc, n, tuple(int(t) for t in toks.split())))
    return rounds


def random_sequence(rng: random.Random, n: int, vocab: int) -> list[int]:
    """Tokens that repeat the way code and quoting text do: copies of earlier spans, with
    small edits, between stretches of fresh tokens."""
    seq = [rng.randrange(vocab) for _ in range(8)]
    while len(seq) < n:
        if rng.random() < 0.6 and len(seq) > 16:
            start = rng.randrange(len(seq) - 4)
            span = seq[start:start + rng.randint(3, 60)]
            if rng.random() < 0.3:
                span[rng.randrange(len(span))] = rng.randrange(vocab)
            seq.extend(span)
        else:
            seq.extend(rng.randrange(vocab) for _ in range(rng.randint(1, 12)))
    return seq[:n]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", type=Path, required=True)
    p.add_argument("--sequences", type=int, default=40)
    p.add_argument("--only", help="run only the cases whose label contains this")
    p.add_argument("--write-golden", type=Path, metavar="JSON",
                   help="also save llama.cpp's rounds for the first 4 sequences of each case "
                        "(tests/data/drafter_golden.json: CI checks them without the reference)")
    args = p.parse_args(argv)
    golden = []
    rng = random.Random(1234)
    total = same = 0
    for label, flags in CASES:
        if args.only and args.only not in label:
            continue
        ok = rounds = 0
        for k in range(args.sequences):
            vocab = rng.choice((4, 16, 50, 2000))
            seq = random_sequence(rng, rng.randint(40, 900), vocab)
            if k % 5 == 4:    # ids 2^18 apart: every hash table's slots collide (ngram-map's
                seq = [t * 262144 + 7 for t in seq]   # key_map, ngram-mod's table, buckets)
            cut = rng.randint(2, max(3, len(seq) // 2))
            prompt, cont = seq[:cut], seq[cut:]
            n_ctx, n_predict = rng.choice(((4096, 1 << 20), (len(seq) + 8, 1 << 20), (4096, 60)))
            ours = oracle_rounds(chain_from_flags(flags), prompt, cont, n_ctx, n_predict)
            ref = reference(args.binary, flags, prompt, cont, n_ctx, n_predict)
            if args.write_golden and k < 4:
                golden.append({"case": label, "flags": flags, "n_ctx": n_ctx,
                               "n_predict": n_predict, "prompt": " ".join(map(str, prompt)),
                               "cont": " ".join(map(str, cont)),
                               "rounds": [f"{a} {n} : {' '.join(map(str, t))}" for a, n, t in ref]})
            n = min(len(ours), len(ref))
            first = next((i for i in range(n) if ours[i] != ref[i]), None)
            rounds += n
            if first is None and len(ours) <= len(ref):   # ours stop at a budget of 0
                ok += 1
                same += n
            else:
                same += n if first is None else first
                where = first if first is not None else n
                print(f"  {label}: sequence {k} differs at round {where} of {len(ref)}: "
                      f"ours {ours[where] if where < len(ours) else None}, "
                      f"llama.cpp {ref[where] if where < len(ref) else None}")
            total += n
        print(f"{label}: {ok}/{args.sequences} sequences identical ({rounds} rounds)")
    print(f"\n{same}/{total} rounds identical before the first difference of each sequence")
    if args.write_golden:
        import json
        args.write_golden.write_text(json.dumps(
            {"source": "llama.cpp (llama-cpp-python 0.3.36 sdist) common_speculative_* through "
                       "tests/reference/drafter_oracle.cpp, written by tests/conformance/drafters.py",
             "cases": golden}, indent=0) + "\n")
        print(f"wrote {len(golden)} reference runs to {args.write_golden}")
    return 0 if same == total else 1


if __name__ == "__main__":
    sys.exit(main())
