"""Conformance check (a script, not a test): SpecScope's rounds against llama.cpp's own
`llama-speculative-simple` on the same pair, prompt, speculative types and parameters, n_max
and context, greedy; SpecScope's draft model syncs with `replay`, as llama.cpp does.

Cases: draft-simple at several n_max; each n-gram type (ngram-simple, ngram-map-k,
ngram-map-k4v, ngram-mod, ngram-cache) alone, with llama.cpp's defaults and with small
sizes that match often on these prompts; and each chained before draft-simple.

Build the reference program from llama-cpp-python 0.3.36's source distribution
(never committed):

    pip download --no-deps --no-binary llama-cpp-python llama-cpp-python==0.3.36
    tar xf llama_cpp_python-0.3.36.tar.gz
    cmake -S llama_cpp_python-0.3.36/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF
    cmake --build build --target llama-speculative-simple -j2

then

    python tests/conformance/speculative_simple.py --binary build/bin/llama-speculative-simple

It parses llama.cpp's debug lines "accepted A/D draft tokens" (and "partial
acceptance: A < D" for checkpoint rounds) and compares the per-round (accepted,
drafted) counts with SpecScope's events. llama.cpp's run emits n_predict + 1
tokens and, once its per-round budget reaches 0, drafts up to n_max anyway;
rounds after SpecScope's last are therefore not compared.

``--suite eog`` checks runs that end by end of generation instead, whole: every
round, the printed text and llama.cpp's totals (n_predict, n_drafted, n_accept):
SmolLM2-135M-Instruct as its own draft on chat prompts (draft-simple at n_max 1,
3, 8 and every n-gram type), the demo pair on prompts that reach <|endoftext|>,
a generated hybrid LFM2 pair and a generated Mamba pair (checkpoint rounds). ``--write-golden FILE``
records llama.cpp's side for tests/test_eog_conformance.py, which CI runs
without the reference build:

    python tests/conformance/speculative_simple.py --binary build/bin/llama-speculative-simple \
        --suite eog --write-golden tests/data/eog_golden.json

``--suite eagle3``, ``--suite mtp``, ``--suite dflash`` and ``--suite dspark`` compare
draft-eagle3, draft-mtp, draft-dflash and draft-dspark round for round on generated models
(tests/test_eagle3_conformance.py, tests/test_mtp_conformance.py and
tests/test_dflash_conformance.py check their golden data).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: its helpers

from specscope.core.models.demo import demo_eagle3_head, demo_pair
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings

PROMPTS = [
    'def parse_args(argv=None):\n    """Parse the command line."""\n',
    "class Queue:\n    def __init__(self, maxsize=0):\n",
    "import os\nimport sys\n\n\ndef main():\n",
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n",
]

SMALL = {  # sizes that find matches within 128 tokens of these prompts
    "ngram-simple": ["--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", "6"],
    "ngram-map-k": ["--spec-ngram-map-k-size-n", "2", "--spec-ngram-map-k-size-m", "6"],
    "ngram-map-k4v": ["--spec-ngram-map-k4v-size-n", "2", "--spec-ngram-map-k4v-size-m", "6",
                      "--spec-ngram-map-k4v-min-hits", "2"],
    "ngram-mod": ["--spec-ngram-mod-n-match", "3", "--spec-ngram-mod-n-min", "1",
                  "--spec-ngram-mod-n-max", "8"],
    "ngram-cache": [],
}


P_MINS = ("0.5", "0.8")     # draft-simple's p_min cases: a draft that stops early, often


def cases(n_maxes: list[int], types: list[str]) -> list[tuple[str, list[str]]]:
    """(label, llama.cpp flags) for every case; draft-simple's n_max comes with it."""
    out = [(f"draft-simple n_max {n}", ["--spec-type", "draft-simple", "--spec-draft-n-max", str(n)])
           for n in n_maxes if "draft-simple" in types]
    # p_min compares the draft's first probability as llama.cpp's dist sampler computes it
    out += [(f"draft-simple n_max 8 p_min {p}", ["--spec-type", "draft-simple", "--spec-draft-n-max",
                                                 "8", "--spec-draft-p-min", p])
            for p in P_MINS if "draft-simple" in types]
    for t, small in SMALL.items():
        if t not in types:
            continue
        out.append((f"{t} defaults", ["--spec-type", t]))
        if small:
            out.append((f"{t} small", ["--spec-type", t, *small]))
        out.append((f"{t},draft-simple n_max 4", ["--spec-type", f"{t},draft-simple",
                                                  "--spec-draft-n-max", "4", *small]))
    return out


@dataclass
class Outcome:
    """A run as llama-speculative-simple reports it: its rounds in order (``("accepted", A, D)``
    for each "accepted A/D draft tokens" line, ``("partial", A, D)`` for each "partial
    acceptance: A < D, restoring checkpoint" line), the text it printed after the prompt (up to
    the first end-of-generation token), and its totals: n_predict counts every token of every
    committed round, an end-of-generation token's round included, n_drafted and n_accept the
    drafted and accepted tokens of those rounds."""
    rounds: list[tuple[str, int, int]]
    text: str
    n_predict: int
    n_drafted: int
    n_accept: int


def reference_run(binary: Path, target: Path, draft: Path | None, prompt: str, flags: list[str],
                  n_ctx: int, n_predict: int, threads: int, prefix: str,
                  logit_bias: tuple = ()) -> Outcome:
    """``prefix``: what llama.cpp prints before the generated text (two newlines and the
    prompt's tokens' pieces)."""
    bias = [a for tok, b in logit_bias for a in ("-l", f"{tok}{b:+g}")]
    cmd = [str(binary), "-m", str(target), *(["-md", str(draft)] if draft else []),
           "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", *flags, *bias,
           "-c", str(n_ctx), "-n", str(n_predict), "--temp", "0", "-p", prompt, "-lv", "5",
           "-t", str(threads), "-td", str(threads), "--seed", "1"]
    for _ in range(20):
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        if proc.returncode != 0:
            raise SystemExit(f"llama-speculative-simple failed ({proc.returncode}):\n"
                             f"{(proc.stdout + proc.stderr)[-2000:]}")
        # llama.cpp logs from a thread of its own, which often loses the last lines at exit (half
        # the runs, with -lv 5): run again until the summary, logged after the text, is there
        if "n_accept " in proc.stderr:
            break
    else:
        raise SystemExit("llama-speculative-simple's log lost its summary 20 times: " + " ".join(cmd))
    err, out = proc.stderr, proc.stdout
    rounds = [("partial" if m[0] else "accepted", int(m[0] or m[2]), int(m[1] or m[3]))
              for m in re.findall(r"partial acceptance: (\d+) < (\d+)|accepted (\d+)/(\d+) draft tokens",
                                  err)]
    if not out.startswith(prefix):
        raise SystemExit(f"llama.cpp printed another prompt than SpecScope tokenized:\n{out[:300]!r}")
    # the text, then LOG("\n\n") twice; the second, logged at the very end, is often lost, so
    # the text is compared without its trailing newlines (the token counts cover them)
    text = out[len(prefix):].rstrip("\n")
    totals = {k: int(v) for k, v in re.findall(r"(n_predict|n_drafted|n_accept) += (\d+)", err)}
    return Outcome(rounds, text, totals["n_predict"], totals["n_drafted"], totals["n_accept"])


def our_run(engine: Engine, prompt: str, flags: list[str], n_predict: int,
            logit_bias: tuple = ()) -> tuple[Outcome, list]:
    """SpecScope's run in llama.cpp's terms (``Outcome``), and its events. SpecScope's
    draft model syncs with ``replay``, as llama.cpp does.

    A checkpoint round is llama.cpp's "partial acceptance" line; the replay round after it is
    llama.cpp's next round, whose draft is the decided tokens (accepted in full). When a
    checkpoint round decides the end of generation, SpecScope ends there, while llama.cpp
    replays the decided tokens once more before it stops: that round is added here (a
    deliberate difference, the engine's docs say so)."""
    from dataclasses import replace
    from specscope.core.cli.spec import spec_from_flags
    spec = replace(spec_from_flags(flags), sync="replay")
    run = engine.speculative(prompt, spec, SamplerSettings(logit_bias=tuple(logit_bias)), n_predict)
    events = list(run)
    rounds, n_tokens = [], 0
    for ev in events:
        if ev.mode == "checkpoint":
            rounds.append(("partial", ev.n_accepted, len(ev.drafted)))
        elif ev.mode == "replay":
            rounds.append(("accepted", len(ev.replayed), len(ev.replayed)))
        else:
            rounds.append(("accepted", ev.n_accepted, len(ev.drafted)))
        if ev.mode != "checkpoint":
            n_tokens += len(ev.replayed) + len(ev.emitted) + len(ev.discarded)
    if events and events[-1].mode == "checkpoint" and run.finish == "eog":
        r = len(events[-1].emitted)
        rounds.append(("accepted", r, r))
        n_tokens += r + 1
    full = [r for r in rounds if r[0] == "accepted"]
    t = engine.target
    text = b"".join(t.piece(tok) for tok in run.tokens if not t.is_eog(tok)).decode("utf-8", "replace")
    text = text.rstrip("\n")
    return Outcome(rounds, text, n_tokens, sum(r[2] for r in full), sum(r[1] for r in full)), events


def rounds_text(rounds: list[tuple[str, int, int]]) -> str:
    """Rounds in a line: "A/D" for an accepted round, "A<D" for a partial acceptance."""
    return " ".join(f"{a}{'/' if kind == 'accepted' else '<'}{d}" for kind, a, d in rounds)


def rounds_of(text: str) -> list[tuple[str, int, int]]:
    """``rounds_text`` read back."""
    return [("accepted", *map(int, r.split("/"))) if "/" in r else ("partial", *map(int, r.split("<")))
            for r in text.split()]


def printed_prefix(engine: Engine, prompt: str) -> str:
    """What llama-speculative-simple prints before the generated text."""
    pieces = b"".join(engine.target.piece(t) for t in engine.tokenize(prompt))
    return "\n\n" + pieces.decode("utf-8", "replace")


def differences(ours: Outcome, ref: Outcome, whole: bool) -> list[str]:
    """What differs. ``whole`` (runs that end by end of generation): every round, the text and
    the totals; otherwise the rounds while both runs are inside SpecScope's budget (llama.cpp
    emits one token more than n_predict and drafts past its budget: module docs)."""
    if not whole:
        n = min(len(ours.rounds), len(ref.rounds)) - 1
        first = next((i for i in range(n) if ours.rounds[i] != ref.rounds[i]), None)
        return [] if first is None else [f"round {first}: ours {ours.rounds[first]}, llama.cpp "
                                         f"{ref.rounds[first]}"]
    out = []
    first = next((i for i, (a, b) in enumerate(zip(ours.rounds, ref.rounds)) if a != b), None)
    if first is not None:
        out.append(f"round {first}: ours {ours.rounds[first]}, llama.cpp {ref.rounds[first]}")
    elif len(ours.rounds) != len(ref.rounds):
        out.append(f"{len(ours.rounds)} rounds, llama.cpp {len(ref.rounds)}")
    if ours.text != ref.text:
        at = next((i for i, (a, b) in enumerate(zip(ours.text, ref.text)) if a != b),
                  min(len(ours.text), len(ref.text)))
        out.append(f"text differs at character {at}: ours {ours.text[at:at + 30]!r}, "
                   f"llama.cpp {ref.text[at:at + 30]!r}")
    for name in ("n_predict", "n_drafted", "n_accept"):
        if getattr(ours, name) != getattr(ref, name):
            out.append(f"{name} {getattr(ours, name)}, llama.cpp {getattr(ref, name)}")
    return out


# ------------------------------------------------------------------------- runs that end
CHAT_PROMPTS = [
    "Explain in three sentences why the sky is blue.",
    "Copy this sentence exactly: The committee met on Tuesday to review the budget for the new "
    "library and the reading room.",
    "Write a Python function that returns the square of a number.",
    "What is the capital of France? Answer in one word.",
]
EOG_BIAS = ((0, 2.0),)     # the demo pair's <|endoftext|> (id 0), +2: these prompts then end
DEMO_EOG_PROMPTS = [PROMPTS[0], "def add(a, b):\n    return a + b\n"]
MAMBA_PROMPTS = ["import os\n", "x = 1\n"]    # a random pair: every draft rejected, every round
# checkpointed, and the target ends the run by end of generation
# the hybrid pair's prompts, with a logit bias on its end-of-text token (id 296) where needed
HYBRID_PROMPTS = [("import os\n", ()), ("class A:\n", ()),
                  ("def fibonacci(n):\n    return", ((296, 1.0),))]


def eog_cases(smollm2: Path | None, hybrid: tuple[Path, Path] | None) -> list[dict]:
    """Runs that end by end of generation: SmolLM2 as its own draft on chat prompts
    in its template (draft-simple at n_max 1, 3 and 8; every n-gram type alone), the demo pair on
    prompts that reach <|endoftext|> (with a logit bias on it), and a generated hybrid LFM2 pair
    (checkpoint rounds). Each case: label, models, prompt, flags, logit bias."""
    out = []
    if smollm2 is not None:
        for n in (1, 3, 8):
            out += [dict(label=f"smollm2 chat draft-simple n_max {n}", model="smollm2", draft="smollm2",
                         prompt=("chat", p), flags=["--spec-type", "draft-simple",
                                                    "--spec-draft-n-max", str(n)]) for p in CHAT_PROMPTS]
        for t, small in SMALL.items():
            out += [dict(label=f"smollm2 chat {t} small", model="smollm2", draft=None,
                         prompt=("chat", p), flags=["--spec-type", t, *small]) for p in CHAT_PROMPTS]
    for n in (1, 3, 8):
        out += [dict(label=f"demo <|endoftext|> draft-simple n_max {n}", model="demo-target",
                     draft="demo-draft", prompt=("text", p), bias=EOG_BIAS,
                     flags=["--spec-type", "draft-simple", "--spec-draft-n-max", str(n)])
                for p in DEMO_EOG_PROMPTS]
    for t, small in SMALL.items():
        out += [dict(label=f"demo <|endoftext|> {t} small", model="demo-target", draft=None,
                     prompt=("text", p), bias=EOG_BIAS, flags=["--spec-type", t, *small])
                for p in DEMO_EOG_PROMPTS]
    if hybrid is not None:
        for n in (1, 3, 8):
            out += [dict(label=f"recurrent mamba checkpoints draft-simple n_max {n}", model="mamba",
                         draft="mamba-draft", prompt=("text", p),
                         flags=["--spec-type", "draft-simple", "--spec-draft-n-max", str(n)])
                    for p in MAMBA_PROMPTS]
        for n in (1, 3, 8):
            out += [dict(label=f"hybrid lfm2 checkpoints draft-simple n_max {n}", model="lfm2",
                         draft="lfm2-draft", prompt=("text", p), bias=bias,
                         flags=["--spec-type", "draft-simple", "--spec-draft-n-max", str(n)])
                    for p, bias in HYBRID_PROMPTS]
    return out


def write_recurrent_pair(folder: Path) -> tuple[Path, Path]:
    """Two generated Mamba models (pure recurrent memories; deterministic weights)."""
    from helpers import ggufgen
    return (ggufgen.write_mamba(folder / "mamba.gguf", seed=4),
            ggufgen.write_mamba(folder / "mamba-draft.gguf", n_layer=1, seed=5))


def write_hybrid_pair(folder: Path) -> tuple[Path, Path]:
    """The generated hybrid LFM2 pair of tests/test_hybrid.py (deterministic weights)."""
    from helpers import ggufgen
    weights = ggufgen.lfm2_weights(len(ggufgen.bpe_vocab()[0]), "cac", seed=1)
    for name in ("blk.2.shortconv.out_proj.weight", "blk.2.ffn_down.weight"):
        weights[name] = weights[name] * 0.3
    first_two = {k: v for k, v in weights.items() if not k.startswith("blk.2.")}
    return (ggufgen.write_lfm2(folder / "lfm2.gguf", weights, layers="cac"),
            ggufgen.write_lfm2(folder / "lfm2-draft.gguf", first_two, layers="ca"))


def case_prompt(engine: Engine, case: dict) -> str:
    kind, text = case["prompt"]
    if kind == "chat":
        from specscope.core.models.chat import render_chat
        return render_chat(engine.target, text, None)
    return text


def run_eog_suite(args, paths: dict[str, Path]) -> int:
    """Every end-of-generation case against llama.cpp; with --write-golden, their llama.cpp
    outcomes as golden data for tests/test_eog_conformance.py."""
    from dataclasses import asdict
    cases = eog_cases(paths.get("smollm2"), (paths["lfm2"], paths["lfm2-draft"]) if "lfm2" in paths else None)
    settings = EngineSettings(n_ctx=args.ctx_size, target_threads=args.threads, draft_threads=args.threads)
    golden, bad, engines = [], 0, {}
    try:
        for case in cases:
            key = (case["model"], case["draft"])
            if key not in engines:
                engines[key] = Engine(paths[case["model"]], paths[case["draft"]] if case["draft"] else None,
                                      settings)
            engine = engines[key]
            prompt = case_prompt(engine, case)
            bias = tuple(tuple(b) for b in case.get("bias", ()))
            ours, events = our_run(engine, prompt, case["flags"], args.n_predict, bias)
            ref = reference_run(args.binary, paths[case["model"]],
                                paths[case["draft"]] if case["draft"] else None, prompt, case["flags"],
                                args.ctx_size, args.n_predict, args.threads,
                                printed_prefix(engine, prompt), bias)
            diff = differences(ours, ref, whole=True)
            ended = events[-1].finish == "eog"
            if not ended:
                diff.append(f"SpecScope's run ended by {events[-1].finish}, not by end of generation")
            bad += bool(diff)
            drafted = sum(1 for e in events if e.drafted)
            print(f"{case['label']:<44} {case['prompt'][1][:28]!r:<32} {len(ref.rounds):>3} rounds "
                  f"({drafted} drafted), {ref.n_accept}/{ref.n_drafted} accepted, "
                  + ("identical" if not diff else "; ".join(diff)))
            golden.append({**case, "n_ctx": args.ctx_size, "n_predict": args.n_predict,
                           "threads": args.threads, "llama_cpp": {**asdict(ref),
                                                                  "rounds": rounds_text(ref.rounds)}})
    finally:
        for e in engines.values():
            e.close()
    print(f"\n{len(cases) - bad}/{len(cases)} runs identical to llama.cpp, rounds, text and totals")
    if args.write_golden:
        args.write_golden.write_text(json.dumps({
            "source": "llama-speculative-simple built from llama-cpp-python 0.3.36's source "
                      "(tests/conformance/speculative_simple.py --suite eog --write-golden)",
            "cases": golden}, indent=1) + "\n")
    return 0 if bad == 0 else 1


# ------------------------------------------------------------------------- draft-eagle3
EAGLE3_PAIRS = {   # generated target + EAGLE-3 head pairs (tests/helpers/ggufgen.py write_eagle3_pair)
    # the decoder reads the target's token embeddings (ctx_other); its residual is g itself
    "eagle3-a": dict(seed=0, target_layers=(0, 1, 3)),
    # a head with token embeddings of its own and norm_before_residual (its residual is the
    # normalised g, weighted 0.1: drafts of up to 8 tokens get accepted)
    "eagle3-b": dict(seed=1, target_layers=(1, 2, 3), n_draft_vocab=270, own_embeddings=True,
                     layer_scale=0.15, g_norm=0.1, norm_before_residual=True),
}


def head_cases(spec_type: str, pairs, with_p_min=lambda pair: True) -> list[dict]:
    """``spec_type`` alone at n_max 1, 3 and 8, chained after an n-gram type (ngram-simple,
    ngram-mod at n_max 3: the drafter then processes batches it did not draft), and at n_max 4
    with p_min 0.3 on the pairs ``with_p_min`` allows, on every pair and code prompt."""
    flag_sets = [(f"{spec_type} n_max {n}", ["--spec-type", spec_type, "--spec-draft-n-max", str(n)])
                 for n in (1, 3, 8)]
    for t in ("ngram-simple", "ngram-mod"):
        flag_sets.append((f"{t},{spec_type} n_max 3", ["--spec-type", f"{t},{spec_type}",
                                                       "--spec-draft-n-max", "3", *SMALL[t]]))
    p_min = (f"{spec_type} n_max 4 p_min 0.3", ["--spec-type", spec_type, "--spec-draft-n-max", "4",
                                                "--spec-draft-p-min", "0.3"])
    return [dict(label=label, pair=pair, prompt=prompt, flags=flags)
            for pair in pairs
            for label, flags in flag_sets + ([p_min] if with_p_min(pair) else [])
            for prompt in PROMPTS]


def demo_eagle3_pairs() -> dict[str, tuple[Path, Path]]:
    return {"demo": (demo_pair()[0], demo_eagle3_head())}


def write_eagle3_pairs(folder: Path) -> dict[str, tuple[Path, Path]]:
    from helpers import ggufgen
    return {name: ggufgen.write_eagle3_pair(folder, prefix=name, **kw)
            for name, kw in EAGLE3_PAIRS.items()}


def compared_rounds(ours: Outcome, ref_rounds: list) -> tuple[int, int | None]:
    """(rounds compared, the first that differs or None): the rounds while both runs are
    inside SpecScope's budget (module docs)."""
    n = min(len(ours.rounds), len(ref_rounds)) - 1
    first = next((i for i in range(n) if ours.rounds[i] != ref_rounds[i]), None)
    return n, first


def golden_failures(paths: tuple, cases: list[dict]) -> tuple[list[str], int, int]:
    """SpecScope's runs of golden ``cases`` (one model: ``paths`` is its target and -md model or
    None) against llama.cpp's recorded rounds: (what differs, rounds compared, drafted tokens
    kept in them)."""
    c0 = cases[0]
    settings = EngineSettings(n_ctx=c0["n_ctx"], target_threads=c0["threads"],
                              draft_threads=c0["threads"])
    failures, compared, kept = [], 0, 0
    with Engine(*paths, settings) as engine:
        for case in cases:
            ours, events = our_run(engine, case["prompt"], case["flags"], case["n_predict"])
            ref = rounds_of(case["llama_cpp"])
            n, first = compared_rounds(ours, ref)
            compared += n
            kept += sum(e.n_accepted for e in events[:n])
            if first is not None or n < len(ref) - 2:
                failures.append(f"{case['label']}, {case['prompt'][:24]!r}: round {first} of {n}: "
                                f"ours {ours.rounds[first] if first is not None else ours.rounds[n:]}, "
                                f"llama.cpp {ref[first] if first is not None else ref[n:]}")
    return failures, compared, kept


def run_rounds_suite(args, suite: str, models: dict, cases: list[dict], pairs: dict) -> int:
    """Every case against llama.cpp, per round (``models``: name -> (target, -md model or
    None)); with --write-golden, llama.cpp's rounds as golden data (``pairs``: how each model
    was generated) for tests/test_{suite}_conformance.py."""
    settings = EngineSettings(n_ctx=args.ctx_size, target_threads=args.threads, draft_threads=args.threads)
    golden, total, same, summary = [], 0, 0, {}
    for name, (target, draft) in models.items():
        with Engine(target, draft, settings) as engine:
            for case in (c for c in cases if c["pair"] == name):
                ours, events = our_run(engine, case["prompt"], case["flags"], args.n_predict)
                ref = reference_run(args.binary, target, draft, case["prompt"], case["flags"],
                                    args.ctx_size, args.n_predict, args.threads,
                                    printed_prefix(engine, case["prompt"]))
                n, first = compared_rounds(ours, ref.rounds)
                total += n
                same += n if first is None else first
                drafted = sum(1 for e in events[:n] if e.drafted)
                kept = sum(e.n_accepted for e in events[:n])
                cell = summary.setdefault(f"{name} {case['label']}", [0, 0, 0, 0])
                for i, v in enumerate((n if first is None else first, n, drafted, kept)):
                    cell[i] += v
                print(f"{name} {case['label']:<34} {case['prompt'][:20]!r:<24} {n} rounds compared "
                      f"({drafted} drafted, {kept} tokens kept), "
                      + ("identical" if first is None else
                         f"first difference at round {first}: ours {ours.rounds[first]}, "
                         f"llama.cpp {ref.rounds[first]}"))
                golden.append({**case, "n_ctx": args.ctx_size, "n_predict": args.n_predict,
                               "threads": args.threads, "llama_cpp": rounds_text(ref.rounds)})
    print()
    for label, (ok, n, drafted, kept) in summary.items():
        print(f"{label:<46} {ok}/{n} rounds identical ({drafted} drafted, {kept} tokens kept)")
    print(f"\n{same}/{total} rounds identical to llama.cpp's")
    if args.write_golden:
        args.write_golden.write_text(json.dumps({
            "source": "llama-speculative-simple built from llama-cpp-python 0.3.36's source "
                      f"(tests/conformance/speculative_simple.py --suite {suite} --write-golden)",
            "pairs": pairs, "cases": golden}, indent=1) + "\n")
    return 0 if same == total else 1


def run_eagle3_suite(args) -> int:
    import tempfile
    pairs = write_eagle3_pairs(Path(tempfile.mkdtemp(prefix="specscope-eagle3-")))
    return run_rounds_suite(args, "eagle3", pairs, head_cases("draft-eagle3", EAGLE3_PAIRS),
                            {k: {**v, "target_layers": list(v["target_layers"])}
                             for k, v in EAGLE3_PAIRS.items()})


def run_eagle3_demo_suite(args) -> int:
    """The demo target with its shipped head (resources/models/demo-eagle3-head.gguf)."""
    pairs = demo_eagle3_pairs()
    return run_rounds_suite(args, "eagle3-demo", pairs,
                            head_cases("draft-eagle3", ["demo"], lambda pair: False),
                            {"demo": {"target": pairs["demo"][0].name, "head": pairs["demo"][1].name}})


# ------------------------------------------------------------------------- draft-mtp
MTP_MODELS = {     # generated targets with MTP blocks (tests/helpers/ggufgen.py write_mtp)
    "mtp-a": dict(seed=0),                    # one MTP block
    "mtp-b": dict(seed=1, n_nextn=2),         # two: llama.cpp chains them, one per draft step
}


def write_mtp_models(folder: Path) -> dict[str, tuple[Path, None]]:
    from helpers import ggufgen
    return {name: (ggufgen.write_mtp(folder / f"{name}.gguf", **kw), None)
            for name, kw in MTP_MODELS.items()}


def run_mtp_suite(args) -> int:
    import tempfile
    models = write_mtp_models(Path(tempfile.mkdtemp(prefix="specscope-mtp-")))
    return run_rounds_suite(args, "mtp", models, head_cases("draft-mtp", MTP_MODELS), MTP_MODELS)


# ------------------------------------------------------------------------- draft-dflash, draft-dspark
DFLASH_PAIRS = {   # generated target + DFlash head pairs (tests/helpers/ggufgen.py write_dflash_pair)
    "dflash-a": dict(seed=0, target_layers=[0, 1, 3]),
    # two target layers, a trained block of 8 (n_max 8 is clamped to 7), more of the features
    "dflash-b": dict(seed=1, target_layers=[1, 2], block_size=8, sharp=1.2, enc_norm=1.5),
}
DSPARK_PAIRS = {   # the same with a Markov head (DSpark), one with a confidence head
    "dspark-a": dict(seed=2, target_layers=[0, 1, 3], markov_rank=8, confidence=True,
                     extra_kv={"dflash.has_confidence_head": "true"}),
    "dspark-b": dict(seed=3, target_layers=[1, 3], markov_rank=4, block_size=6),
}


def write_dflash_pairs(folder: Path, pairs: dict) -> dict[str, tuple[Path, Path]]:
    from helpers import ggufgen
    return {name: ggufgen.write_dflash_pair(folder, prefix=name, **kw) for name, kw in pairs.items()}


def run_block_suite(args, suite: str) -> int:
    import tempfile
    spec_type, pairs = {"dflash": ("draft-dflash", DFLASH_PAIRS),
                        "dspark": ("draft-dspark", DSPARK_PAIRS)}[suite]
    models = write_dflash_pairs(Path(tempfile.mkdtemp(prefix=f"specscope-{suite}-")), pairs)
    return run_rounds_suite(args, suite, models, head_cases(
        spec_type, pairs, lambda pair: spec_type == "draft-dflash" or pairs[pair].get("confidence")), pairs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", type=Path, required=True)
    p.add_argument("--suite", choices=("code", "eog", "eagle3", "eagle3-demo", "mtp", "dflash", "dspark"),
                   default="code",
                   help="code: the code prompts to n_predict (default); eog: runs that end by end of "
                        "generation (SmolLM2 chat, the demo pair, a hybrid LFM2); eagle3: "
                        "draft-eagle3 on generated target + EAGLE-3 head pairs; eagle3-demo: "
                        "draft-eagle3 on the demo target with the shipped demo head; mtp: draft-mtp "
                        "on generated targets with MTP blocks; dflash, dspark: draft-dflash, draft-dspark on generated "
                        "target + DFlash head pairs")
    p.add_argument("--write-golden", type=Path, metavar="JSON",
                   help="with --suite eog, eagle3, eagle3-demo, mtp, dflash or dspark: write "
                        "llama.cpp's outcomes "
                        "as golden data")
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path)
    p.add_argument("-c", "--ctx-size", type=int, default=1024)
    p.add_argument("-n", "--n-predict", type=int, default=None,
                   help="default 128 (code), 256 (eog)")
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("--n-max", default="1,3,4,8", help="draft-simple's n_max values")
    p.add_argument("--prompts", metavar="JSON",
                   help="a prompt set instead of the built-in code prompts (a file, or a shipped "
                        "set by name: drafter_prompts.json has prompts whose continuation repeats)")
    p.add_argument("--types", default=",".join(["draft-simple", *SMALL]),
                   help="which types to check (default all)")
    args = p.parse_args(argv)
    if args.suite in ("eagle3", "eagle3-demo", "mtp", "dflash", "dspark"):
        args.n_predict = args.n_predict or 128
        run = {"eagle3": run_eagle3_suite, "eagle3-demo": run_eagle3_demo_suite, "mtp": run_mtp_suite,
               "dflash": lambda a: run_block_suite(a, "dflash"),
               "dspark": lambda a: run_block_suite(a, "dspark")}
        return run[args.suite](args)
    if args.suite == "eog":
        import tempfile

        from helpers.realmodel import smollm2_path
        args.n_predict = args.n_predict or 256
        t, d = demo_pair()
        paths = {"demo-target": t, "demo-draft": d}
        try:
            paths["smollm2"] = smollm2_path()
        except RuntimeError as exc:
            print(f"SmolLM2 cases left out: {exc}")
        folder = Path(tempfile.mkdtemp(prefix="specscope-eog-"))
        paths["lfm2"], paths["lfm2-draft"] = write_hybrid_pair(folder)
        paths["mamba"], paths["mamba-draft"] = write_recurrent_pair(folder)
        return run_eog_suite(args, paths)
    args.n_predict = args.n_predict or 128
    target, draft = (args.model, args.model_draft) if args.model else demo_pair()
    settings = EngineSettings(n_ctx=args.ctx_size, target_threads=args.threads,
                              draft_threads=args.threads)
    prompts = PROMPTS
    if args.prompts:
        from specscope.core.measure.bench.settings import load_prompts
        prompts = [text for _, text in load_prompts(args.prompts)]
    total = same = 0
    summary: dict[str, list[int]] = {}
    with Engine(target, draft, settings) as engine:
        for label, flags in cases([int(x) for x in args.n_max.split(",")], args.types.split(",")):
            for k, prompt in enumerate(prompts):
                ours, events = our_run(engine, prompt, flags, args.n_predict)
                uses_draft = any("draft-simple" in f for f in flags)
                ref = reference_run(args.binary, target, draft if uses_draft else None, prompt,
                                    flags, args.ctx_size, args.n_predict, args.threads,
                                    printed_prefix(engine, prompt))
                # compare while both runs are inside SpecScope's budget (see module docs)
                n = min(len(ours.rounds), len(ref.rounds)) - 1
                diff = differences(ours, ref, whole=False)
                first_diff = int(diff[0].split()[1].rstrip(":")) if diff else None
                total += n
                same += n if first_diff is None else first_diff
                drafted = sum(1 for e in events[:n] if e.drafted)
                winners = sorted({e.drafter for e in events[:n] if e.drafted})
                cell = summary.setdefault(label, [0, 0, 0])
                cell[0] += n if first_diff is None else first_diff
                cell[1] += n
                cell[2] += drafted
                status = "identical" if first_diff is None else f"first difference at {diff[0]}"
                print(f"{label:<34} prompt {k}: {n} rounds compared ({drafted} with a draft, "
                      f"by {', '.join(winners) or 'none'}), {status}")
                if first_diff is not None:
                    print(f"    ours      {ours.rounds[:12]}{' ...' if len(ours.rounds) > 12 else ''}")
                    print(f"    llama.cpp {ref.rounds[:12]}{' ...' if len(ref.rounds) > 12 else ''}")
    print()
    for label, (ok, n, drafted) in summary.items():
        print(f"{label:<34} {ok}/{n} rounds identical, {drafted} of them drafted")
    print(f"\n{same}/{total} rounds identical before the first difference of each run")
    return 0 if same == total else 1


if __name__ == "__main__":
    sys.exit(main())
