"""Evaluate the demo pair with llama.cpp: speculative acceptance, perplexity,
decode speed, sample generations.

    python packaging/evaluate_demo.py [--models-dir resources/models] [--out eval.json]

Needs numpy and llama_cpp only. The speculative loop is the greedy
draft-simple scheme (llama.cpp examples/speculative-simple with a greedy
sampler, p_min 0): each round the draft proposes n_max = 4 tokens greedily
after the last committed token; the target decodes [last, d1..d4] in one batch;
d_i is accepted when it equals the target's greedy token and d_1..d_(i-1) were
accepted; the target's token at the first mismatch (or after d4) is committed
too. Both KV caches are trimmed back to the committed tokens.

Figures:
  acceptance        accepted drafted tokens / drafted tokens
  per position i    P(d_i accepted | d_1..d_(i-1) accepted)  (conditional)
                    and P(d_1..d_i all accepted)               (cumulative)
  perplexity        exp(mean NLL) of the held-out files, each file starting
                    with <|endoftext|>, in independent 512-token windows
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import demo_corpus  # noqa: E402
from gguf_export import LlamaCppModel  # noqa: E402

N_MAX = 4
PROMPT_TOKENS = 128
GEN_TOKENS = 128
# Prompts end without a trailing newline: the tokenizer merges a newline with
# the next line's indentation, so a prompt cut after "\n" would be an
# unnatural token boundary (the model would rarely indent next).
SAMPLE_PROMPTS = [
    "import os\nimport sys\n\n\ndef main(argv=None):",
    "class Stack:\n    \"\"\"A simple LIFO stack.\"\"\"\n\n    def __init__(self):",
    "def read_config(path):\n    \"\"\"Read a configuration file and return a dict.\"\"\"",
]


class SpecStats:
    def __init__(self, n_max):
        self.n_max = n_max
        self.reached = np.zeros(n_max, dtype=np.int64)
        self.accepted = np.zeros(n_max, dtype=np.int64)
        self.rounds = 0
        self.drafted = 0
        self.n_accepted = 0
        self.generated = 0

    def add(self, k: int, n_drafted: int):
        self.rounds += 1
        self.drafted += n_drafted
        self.n_accepted += k
        for i in range(n_drafted):
            self.reached[i] += 1
            if i < k:
                self.accepted[i] += 1
            else:
                break

    def merge(self, o: "SpecStats"):
        self.reached += o.reached
        self.accepted += o.accepted
        self.rounds += o.rounds
        self.drafted += o.drafted
        self.n_accepted += o.n_accepted
        self.generated += o.generated

    def to_dict(self) -> dict:
        cond = (self.accepted / np.maximum(self.reached, 1)).tolist()
        cum = (self.accepted / max(self.rounds, 1)).tolist()
        return {
            "rounds": self.rounds,
            "drafted": self.drafted,
            "accepted": self.n_accepted,
            "acceptance": self.n_accepted / max(self.drafted, 1),
            "per_position_conditional": cond,
            "per_position_cumulative": cum,
            "mean_accepted_per_round": self.n_accepted / max(self.rounds, 1),
            "tokens_per_round": self.generated / max(self.rounds, 1),
            "generated": self.generated,
        }


def spec_generate(target: LlamaCppModel, draft: LlamaCppModel, prompt: list[int], n_gen: int,
                  n_max: int = N_MAX, eos: int | None = 0) -> tuple[list[int], SpecStats]:
    """Greedy speculative generation; returns (generated ids, stats)."""
    st = SpecStats(n_max)
    target.clear()
    draft.clear()
    committed = list(prompt)
    # first target token from the prompt
    lg = target.decode(committed, 0)
    cached_t = len(committed)
    cur = int(lg[-1].argmax())
    out = [cur]
    committed.append(cur)
    cached_d = 0
    while len(out) < n_gen and cur != eos:
        # draft: catch up on committed tokens, then propose n_max greedily
        room = min(n_max, target.n_ctx - len(committed) - 1, draft.n_ctx - len(committed) - 1)
        if room <= 0:
            break
        drafts = []
        dl = draft.decode(committed[cached_d:], cached_d)
        cached_d = len(committed)
        for i in range(room):
            d = int(dl[-1].argmax())
            drafts.append(d)
            if i + 1 < room:
                dl = draft.decode([d], cached_d + i)
        # target: verify [pending committed tokens] + drafts in one batch
        pend = committed[cached_t:]
        rows = target.decode(pend + drafts, cached_t, all_logits=True)
        base = len(pend) - 1  # row predicting the token after the last committed one
        k = 0
        while k < len(drafts) and int(rows[base + k].argmax()) == drafts[k]:
            k += 1
        new = int(rows[base + k].argmax())
        st.add(k, len(drafts))
        n0 = len(committed)
        acc = drafts[:k] + [new]
        committed.extend(acc)
        # caches: target holds up to d_k; draft holds up to d_min(k, room-1)
        cached_t = n0 + k
        target.clear(cached_t)
        cached_d = n0 + min(k, len(drafts) - 1)
        draft.clear(cached_d)
        for t in acc:
            out.append(t)
            if t == eos or len(out) >= n_gen:
                break
        cur = out[-1]
    st.generated = len(out)
    return out[:n_gen], st


def plain_generate(model: LlamaCppModel, prompt: list[int], n_gen: int, eos: int | None = 0) -> list[int]:
    model.clear()
    lg = model.decode(prompt, 0)
    out = []
    pos = len(prompt)
    while len(out) < n_gen:
        t = int(lg[-1].argmax())
        out.append(t)
        if t == eos or pos >= model.n_ctx - 1:
            break
        lg = model.decode([t], pos)
        pos += 1
    return out


def perplexity(model: LlamaCppModel, docs: list[list[int]], window: int = 512) -> tuple[float, int]:
    nll, n = 0.0, 0
    for d in docs:
        for s in range(0, len(d) - 1, window):
            w = d[s : s + window + 1]
            if len(w) < 2:
                continue
            model.clear()
            lg = model.decode(w[:-1], 0, all_logits=True).astype(np.float64)
            lse = np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1)) + lg.max(-1)
            nll += float((lse - lg[np.arange(len(w) - 1), w[1:]]).sum())
            n += len(w) - 1
    return float(np.exp(nll / max(n, 1))), n


def decode_speed(model: LlamaCppModel, n_tokens: int = 128, prompt_len: int = 64, reps: int = 3) -> dict:
    """Mean µs per single-token decode (batch of 1) after a prompt, best of reps,
    and the cost of a 5-token verification batch."""
    rng = np.random.default_rng(0)
    prompt = [0] + rng.integers(1, model.n_vocab, prompt_len - 1).tolist()
    toks = rng.integers(1, model.n_vocab, n_tokens).tolist()
    best, best5 = float("inf"), float("inf")
    for _ in range(reps):
        model.clear()
        model.decode(prompt, 0)
        t0 = time.perf_counter()
        for i, t in enumerate(toks):
            model.decode([t], prompt_len + i)
        best = min(best, (time.perf_counter() - t0) / n_tokens)
        model.clear(prompt_len)
        t0 = time.perf_counter()
        for i in range(20):
            model.decode(toks[:5], prompt_len, all_logits=True)
            model.clear(prompt_len)
        best5 = min(best5, (time.perf_counter() - t0) / 20)
    return {"us_per_token": best * 1e6, "us_per_5_token_batch": best5 * 1e6}


def held_out_prompts(docs):
    for rel, ids in docs:
        starts = [0]
        if len(ids) > 2 * (PROMPT_TOKENS + GEN_TOKENS):
            starts.append((len(ids) // 2) // 64 * 64)
        for s in starts:
            prompt = ids[s : s + PROMPT_TOKENS]
            yield rel, (prompt if s == 0 else [0] + prompt)  # every prompt starts with BOS


def engine_cross_check(models_dir: Path, docs, n_ctx: int, threads: int) -> dict:
    """The same measurement through SpecScope's engine (specscope.core.engine.engine),
    when it is installed: greedy, n_max 4, p_min 0, deterministic numerics."""
    try:
        from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
        from specscope.core.engine.sampling import SamplerSettings
        from specscope.core.measure.stats import fold
    except Exception as e:  # engine not installed / not importable
        return {"available": False, "error": repr(e)}
    try:
        settings = EngineSettings.deterministic(n_ctx=n_ctx, target_threads=threads, draft_threads=threads)
        events = []
        with Engine(models_dir / "demo-target.gguf", models_dir / "demo-draft.gguf", settings) as eng:
            for _, prompt in held_out_prompts(docs):
                run = eng.speculative(prompt, SpecSettings(n_max=N_MAX, p_min=0.0), SamplerSettings(),
                                      n_predict=GEN_TOKENS)
                events.extend(run)
        st = fold(events)
        return {"available": True, "acceptance": st.acceptance_rate, "drafted": st.n_drafted,
                "accepted": st.n_accept, "per_position": list(st.position_acceptance),
                "mean_accepted_length": st.mean_accepted_length}
    except Exception as e:
        return {"available": True, "error": repr(e)}


def held_out_token_docs(target: LlamaCppModel) -> list[tuple[str, list[int]]]:
    _, held = demo_corpus.load_split()
    return [(rel, [0] + target.tokenize(text)) for rel, text in held]


def evaluate(models_dir: Path, n_ctx: int = 512, threads: int = 2, max_files: int | None = None) -> dict:
    models_dir = Path(models_dir)
    res: dict = {"n_max": N_MAX, "prompt_tokens": PROMPT_TOKENS, "gen_tokens": GEN_TOKENS,
                 "loop": "packaging/evaluate_demo.py (greedy draft-simple loop over llama_cpp low-level API)"}
    target = LlamaCppModel(models_dir / "demo-target.gguf", n_ctx=n_ctx, n_threads=threads)
    draft = LlamaCppModel(models_dir / "demo-draft.gguf", n_ctx=n_ctx, n_threads=threads)
    eos = 0
    docs = held_out_token_docs(target)[:max_files]
    res["threads"] = threads
    t_start = time.time()

    # acceptance on held-out files: prompts at the start and middle of each file
    total = SpecStats(N_MAX)
    per_file = {}
    t_spec = 0.0
    t_plain = 0.0
    same = 0
    n_prompts = 0
    by_file: dict[str, SpecStats] = {}
    for rel, prompt in held_out_prompts(docs):
        fs = by_file.setdefault(rel, SpecStats(N_MAX))
        t0 = time.perf_counter()
        gen, st = spec_generate(target, draft, prompt, GEN_TOKENS, eos=eos)
        t_spec += time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = plain_generate(target, prompt, GEN_TOKENS, eos=eos)
        t_plain += time.perf_counter() - t0
        same += int(gen == ref)
        n_prompts += 1
        fs.merge(st)
    for rel, fs in by_file.items():
        per_file[rel] = fs.to_dict()["acceptance"]
        total.merge(fs)
    res["held_out"] = total.to_dict()
    res["held_out"]["prompts"] = n_prompts
    res["held_out"]["spec_output_equals_plain_greedy"] = same
    res["held_out"]["per_file_acceptance"] = per_file
    res["held_out"]["wall_s_spec"] = t_spec
    res["held_out"]["wall_s_plain_target"] = t_plain
    res["held_out"]["speedup_vs_plain"] = t_plain / t_spec if t_spec else None

    res["engine_cross_check"] = engine_cross_check(models_dir, docs, n_ctx, threads)

    # novel text: a shuffled-token prompt is still Python-ish tokens but unpredictable
    rng = np.random.default_rng(7)
    nov = SpecStats(N_MAX)
    for rel, ids in docs[:12]:
        prompt = [0] + list(rng.permutation(ids[1 : 1 + PROMPT_TOKENS]))
        _, st = spec_generate(target, draft, prompt, 64, eos=None)
        nov.merge(st)
    res["novel_prompt"] = nov.to_dict()
    res["novel_prompt"]["what"] = "prompts = held-out file openings with their tokens shuffled (first 12 files)"

    print(f"  acceptance done ({time.time() - t_start:.0f}s)", flush=True)
    # perplexity
    ppl_t, n = perplexity(target, [d for _, d in docs])
    ppl_d, _ = perplexity(draft, [d for _, d in docs])
    res["perplexity"] = {"target": ppl_t, "draft": ppl_d, "tokens": n, "window": 512}

    print(f"  perplexity done ({time.time() - t_start:.0f}s)", flush=True)
    # speed
    res["speed"] = {"target": decode_speed(target), "draft": decode_speed(draft)}
    res["speed"]["draft_to_target_time_ratio"] = (
        res["speed"]["draft"]["us_per_token"] / res["speed"]["target"]["us_per_token"])

    # samples
    samples = []
    for p in SAMPLE_PROMPTS:
        ids = [0] + target.tokenize(p)
        gen, st = spec_generate(target, draft, ids, 96, eos=eos)
        gen = [t for t in gen if t != eos]
        samples.append({"prompt": p, "completion": target.detokenize(gen),
                        "acceptance": st.to_dict()["acceptance"]})
    res["samples"] = samples
    target.close()
    draft.close()
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", default=str(REPO / "resources" / "models"))
    ap.add_argument("--work-dir", default=None, help="unused; accepted for the build script")
    ap.add_argument("--out", default=None)
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads (1 on a busy machine)")
    ap.add_argument("--max-files", type=int, default=None, help="only the first N held-out files (quick check)")
    args = ap.parse_args(argv)
    t0 = time.time()
    res = evaluate(Path(args.models_dir), threads=args.threads, max_files=args.max_files)
    res["eval_seconds"] = time.time() - t0
    h = res["held_out"]
    print(f"held-out acceptance {h['acceptance']:.3f} over {h['drafted']} drafted tokens "
          f"({h['prompts']} prompts); per position (conditional) "
          + ", ".join(f"{a:.3f}" for a in h["per_position_conditional"]))
    print(f"novel-prompt acceptance {res['novel_prompt']['acceptance']:.3f}")
    print(f"perplexity target {res['perplexity']['target']:.3f}  draft {res['perplexity']['draft']:.3f}")
    sp = res["speed"]
    print(f"decode µs/token target {sp['target']['us_per_token']:.0f}  draft {sp['draft']['us_per_token']:.0f}")
    for s in res["samples"]:
        print("----\n" + s["prompt"] + s["completion"])
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return res


if __name__ == "__main__":
    main()
