"""Write resources/models/README.md (the demo models' card) from the build's
JSON figures (corpus.json, target/draft/foreign.json, export.json, eval.json,
timings.json in the work dir). Needs numpy and gguf only.

    python packaging/write_model_card.py [--work-dir build/demo-models]
"""

from __future__ import annotations

import argparse
import json
import platform
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS_DIR = REPO / "resources" / "models"
FILES = {"target": "demo-target.gguf", "draft": "demo-draft.gguf", "foreign": "demo-draft-foreign-vocab.gguf"}
HEAD_FILE = "demo-eagle3-head.gguf"                # packaging/train_eagle3_head.py
HEAD_WORK = REPO / "build" / "eagle3-head"
EVAL_PROMPT_TOKENS = 128                           # evaluate_demo.PROMPT_TOKENS


def _j(p):
    return json.loads(Path(p).read_text())


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _tensor_types(path: Path) -> str:
    import gguf

    r = gguf.GGUFReader(str(path))
    c = Counter()
    for t in r.tensors:
        c[(t.tensor_type.name, len([d for d in t.shape if d > 1]) >= 2)] += 1
    parts = []
    for (ty, is2d), n in sorted(c.items()):
        parts.append(f"{n} × {ty} ({'2-D' if is2d else '1-D'})")
    return ", ".join(parts)


def _mb(n):
    return f"{n / 1e6:.2f} MB"


def _min(s):
    return f"{s / 60:.1f} min"


def write(work: Path, out: Path, models_dir: Path = MODELS_DIR, head_work: Path = HEAD_WORK):
    work = Path(work)
    models_dir = Path(models_dir)
    corpus = _j(work / "corpus.json")
    meta = {k: _j(work / f"{k}.json") for k in FILES}
    exp = _j(work / "export.json")
    ev = _j(work / "eval.json")
    tim = _j(work / "timings.json") if (work / "timings.json").exists() else {}
    h = ev["held_out"]
    nov = ev["novel_prompt"]
    sp = ev["speed"]
    train_total = sum(meta[k]["train"]["seconds"] for k in FILES)
    build_total = sum(tim.values()) if tim else None

    def cfg_row(k):
        c = meta[k]["config"]
        return (f"| `{FILES[k]}` | {c['vocab_size']} | {c['dim']} | {c['n_layers']} | {c['n_heads']} "
                f"(kv {c['n_kv_heads']}, head {c['dim'] // c['n_heads']}) | {c['ffn_dim']} | "
                f"{'tied' if c['tie_embeddings'] else 'separate'} | {meta[k]['params']:,} | "
                f"{exp[k]['bytes']:,} ({_mb(exp[k]['bytes'])}) |")

    def train_row(k):
        t = meta[k]["train"]
        how = "distilled from the target: 0.7·KL(target‖draft) + 0.3·CE" if t.get("distilled_from") else "next-token CE"
        return (f"| {k} | {t['steps']} | {t['batch']}×{t['seq_len']} | {t['tokens']:,} | {t['lr']:g} | "
                f"{_min(t['seconds'])} | {how} |")

    d2 = meta["draft"].get("train_phase2")
    sg = _j(work / "selfgen.json") if (work / "selfgen.json").exists() else None
    draft2_row = ""
    if d2:
        draft2_row = (f"| draft, phase 2 | {d2['steps']} | {d2['batch']}×{d2['seq_len']} | {d2['tokens']:,} | "
                      f"{d2['lr']:g} | {_min(d2['seconds'])} | on the target's own greedy outputs"
                      + (f" ({sg['sequences']:,} continuations of {sg['prompt_tokens']}-token training windows "
                         f"to {sg['length']} tokens, made with llama.cpp in {_min(sg['seconds'])})" if sg else "")
                      + ": 0.5·KL + 0.5·CE |")
        train_total_extra = d2["seconds"] + (sg["seconds"] if sg else 0)
    else:
        train_total_extra = 0
    pos_c = " · ".join(f"{a:.1%}" for a in h["per_position_conditional"])
    pos_u = " · ".join(f"{a:.1%}" for a in h["per_position_cumulative"])
    nov_u = " · ".join(f"{a:.1%}" for a in nov["per_position_cumulative"])
    tok_main = exp["tokenizer_main"]
    samples = "\n\n".join(
        f"Prompt + greedy completion (acceptance {s['acceptance']:.0%}):\n\n```python\n{s['prompt']}{s['completion']}\n```"
        for s in ev["samples"])
    held_list = ", ".join(f"`{r}`" for r in corpus["held_out_list"])
    files_total = exp["models_dir_bytes"]

    text = f"""# SpecScope demo models

Three small llama-architecture GGUF models that SpecScope uses when no model
is given: a **target**, a **draft** that shares its tokenizer (the default
pair), and a **foreign-vocabulary draft** that the compatibility gate must
refuse; beside them, an **EAGLE-3 head** for the target (`demo-eagle3-head.gguf`,
`--spec-type draft-eagle3`: its own section below). They were trained here, on CPU, on the Python source of the CPython
standard library, so they run offline and behave like a real pair: the draft
agrees with the target often on predictable code, less on unpredictable text,
and less the further it drafts ahead.

They are toys (a few million parameters, {meta['target']['train']['tokens'] / 1e6:.1f}M training tokens for the
target): they write Python-looking text, not correct programs.

## Files

| file | vocab | dim | layers | heads | FFN | output head | parameters | bytes |
|---|---|---|---|---|---|---|---|---|
{cfg_row("target")}
{cfg_row("draft")}
{cfg_row("foreign")}

All of resources/models: {_mb(files_total)} (limit 40 MB). Draft/target file
size ratio: {exp["draft_to_target_file_ratio"]:.3f} (limit 0.15).

Tensor types:
- `demo-target.gguf`: {_tensor_types(models_dir / FILES["target"])}
- `demo-draft.gguf`: {_tensor_types(models_dir / FILES["draft"])}
- `demo-draft-foreign-vocab.gguf`: {_tensor_types(models_dir / FILES["foreign"])}

2-D weight matrices are F16, 1-D norm weights F32. The architecture is plain
llama (`general.architecture = llama`): RMSNorm (eps 1e-5), RoPE (base 10000,
llama.cpp's "normal" adjacent-pair layout, which is how the models were
trained, so no Q/K permutation is involved), SwiGLU feed-forward, no biases.
A tied output head means the file has no `output.weight` and llama.cpp uses
`token_embd.weight`. `llama.context_length` is 2048; training used
{meta["target"]["train"]["seq_len"]}-token windows, so quality drops beyond
~{meta["target"]["train"]["seq_len"]} positions.

## Tokenizer

Byte-level BPE trained with HF `tokenizers` on the training files
(GPT-2 pre-tokenizer regex, no prefix space, all 256 byte symbols,
min frequency 2): 4096 tokens = `<|endoftext|>` (id 0) + 256 bytes + 3839
merges. The foreign draft has its own 2048-token BPE trained the same way
but with two special tokens, `<|pad|>` (id 0) and `<|endoftext|>` (id 1, its
BOS/EOS): its size, BOS/EOS ids, token texts and tokenization all differ from
the pair's, so llama.cpp's vocabulary check (and SpecScope's gate) refuses it
as a draft for the target.

GGUF metadata: `tokenizer.ggml.model = gpt2`, `tokenizer.ggml.pre = trillion`
(llama.cpp applies exactly the GPT-2 regex for it, like `gpt-2`, but without
`clean_spaces`, so `llama_detokenize` returns the original text; with `gpt-2`
it would rewrite `x = 's'` as `x ='s'`), merges, token types (id 0 CONTROL,
the rest NORMAL), BOS = EOS = 0 (`<|endoftext|>`, an end-of-generation token
for llama.cpp), `add_bos_token = true`, `add_eos_token = false`. Every
training document starts with `<|endoftext|>`, so prompts should too (llama.cpp
adds it when tokenizing with `add_special`).

Checked at build time: llama.cpp's token ids equal the training tokenizer's on
all {tok_main["held_out_files"]} held-out files ({tok_main["tokens"]:,} tokens;
files that differ: {len(tok_main["id_mismatch_files"])}), and detokenizing
gives back the exact text (failures: {len(tok_main["roundtrip_fail_files"])}).
`tests/test_demo_models.py` repeats this on snippets stored in
`tests/data/demo_tokenizer_fixture.json`.

## Corpus

The `*.py` files of the CPython {corpus["python"]} standard library that ships
with the build machine's Python (`sysconfig.get_paths()["stdlib"]`),
excluding `site-packages/`, the test suites (any `test/`, `tests/` or
`idle_test/` directory) and `__pycache__`, and skipping files that are not
UTF-8; sorted by relative POSIX path (packaging/demo_corpus.py).
{corpus["train_files"] + corpus["held_out_files"]} files, {corpus["train_chars"] + corpus["held_out_chars"]:,} characters.

Held-out rule: a file is held out when
`int(sha256(relative_path).hexdigest()[:8], 16) % 100 < 5`. That holds out
{corpus["held_out_files"]} files ({corpus["held_out_chars"]:,} characters,
{h.get("held_out_tokens", tok_main["tokens"]):,} tokens); the other
{corpus["train_files"]} files ({corpus["train_chars"]:,} characters) are the
training data. Held-out files: {held_list}.

License: the CPython standard library is distributed under the Python
Software Foundation License Version 2 (PSF License); the models are derived
from it. The weights themselves ship as part of SpecScope.

## Training

| model | steps | batch×seq | tokens trained | peak lr | time | objective |
|---|---|---|---|---|---|---|
{train_row("target")}
{train_row("draft")}
{draft2_row}
{train_row("foreign")}

AdamW (β 0.9/0.95, weight decay 0.1 on matrices), linear warm-up then cosine
to 10% of the peak, gradient clipping 1.0, bf16 autocast, random
{meta["target"]["train"]["seq_len"]}-token windows of the token stream (seeded),
fixed seeds. Hardware: {_cpu()}, {meta["target"]["train"]["threads"]} torch thread(s)
(torch {_torch_version()}), shared with other work. Training time
{_min(train_total + train_total_extra)} for the three models (including the self-generated data){f"; the whole build {_min(build_total)}" if build_total else ""}.
Each stage has a step cap and a wall-clock budget; its cosine schedule runs
on whichever is used up first (the machine was shared with other builds, so
step times varied), and the steps above are the ones actually run.

## Evaluation

Measured with llama.cpp (llama-cpp-python {_llama_version()}) on the shipped
F16 files by `packaging/evaluate_demo.py`: greedy, n_max = {ev["n_max"]}, the
draft-simple loop (draft proposes {ev["n_max"]} tokens greedily, the target
verifies them in one batch, accepts the longest agreeing prefix and adds its
own next token). Prompts: the first {ev["prompt_tokens"]} tokens of each
held-out file (and of its middle, for long files), {ev["gen_tokens"]} generated
tokens each; {h["prompts"]} prompts.

| held-out standard-library files | |
|---|---|
| drafted tokens accepted | **{h["acceptance"]:.1%}** ({h["accepted"]:,} of {h["drafted"]:,}) |
| acceptance at draft position 1 · 2 · 3 · 4 (share of drafts whose i-th token was accepted; SpecScope's per-position figure) | **{pos_u}** |
| the same, given positions 1..i−1 were accepted | {pos_c} |
| tokens per target pass | {h["tokens_per_round"]:.2f} |
| speculative output identical to plain greedy target output | {h["spec_output_equals_plain_greedy"]} of {h["prompts"]} prompts |
| wall time, speculative vs plain target | {h["wall_s_spec"]:.2f} s vs {h["wall_s_plain_target"]:.2f} s |
| per file | {_per_file(h)} |

{_engine_line(ev)}

Unpredictable input (the same files' opening tokens shuffled, 64 tokens
generated): acceptance {nov["acceptance"]:.1%}, by position {nov_u}.

Held-out perplexity (llama.cpp, F16 files, {ev["perplexity"]["tokens"]:,} tokens, each file
starting with `<|endoftext|>`, independent {ev["perplexity"]["window"]}-token windows):
target **{ev["perplexity"]["target"]:.2f}**, draft {ev["perplexity"]["draft"]:.2f}
(torch, F32 weights, first {meta["target"]["train"]["held_out_tokens"]:,} of those tokens: target
{meta["target"]["train"]["held_out_ppl"]:.2f}, draft {_draft_ppl(meta)}).

Decode speed in llama.cpp on the build machine ({ev.get("threads", 2)} thread(s), one token per call
after a 64-token prompt, best of 3): target {sp["target"]["us_per_token"]:.0f} µs/token,
draft {sp["draft"]["us_per_token"]:.0f} µs/token (ratio {sp["draft_to_target_time_ratio"]:.2f});
a 5-token verification batch on the target: {sp["target"]["us_per_5_token_batch"]:.0f} µs.

Export check (llama.cpp logits vs torch F32 logits on the first 128 tokens
of a held-out file, max abs difference):

| model | F32 export | shipped F16 file | logit range |
|---|---|---|---|
""" + "\n".join(
        f"| {k} | {exp[k]['logits_max_abs_diff_f32_export_vs_torch_f32']:.2g} | "
        f"{exp[k]['logits_max_abs_diff_f16_file_vs_torch_f32']:.2g} | "
        f"{exp[k]['logit_range'][0]:.1f} … {exp[k]['logit_range'][1]:.1f} |" for k in FILES) + f"""

Sample generations (target greedy via the speculative loop, 96 tokens):

{samples}

{eagle3_section(head_work, models_dir) if (Path(head_work) / "eval.json").exists() else ""}
## Rebuild

```sh
pip install -e '.[train]'        # torch==2.13.0 (CPU) and tokenizers
python packaging/build_demo_models.py
python packaging/train_eagle3_head.py   # then the EAGLE-3 head (its section above)
```

This retrains the tokenizers and the three models, rewrites the GGUFs here,
`tests/data/demo_tokenizer_fixture.json` and this card (intermediate files in
`build/demo-models/`; `--stages` runs a subset, in this order: tokenizer,
target, selfgen, draft, draft2, foreign, export, eval, card). Seeds are fixed; on a different CPU the time
budgets may cut a different number of steps. `packaging/evaluate_demo.py`
re-measures the figures above on its own. The export path is tested in CI on
a tiny random model by `tests/test_demo_export.py` (no torch needed).
"""
    out = Path(out)
    out.write_text(text)
    return out


def eagle3_section(work: Path, models_dir: Path = MODELS_DIR) -> str:
    """The EAGLE-3 head's part of the card, from packaging/train_eagle3_head.py's figures
    (data.json, train.json, export.json, eval.json in its work dir)."""
    work = Path(work)
    d, t, e, v = (_j(work / f"{k}.json") for k in ("data", "train", "export", "eval"))
    tu = _j(work / "tune.json") if (work / "tune.json").exists() else None
    c, cfg = v["cost"], t["config"]
    hd, dr = v["head"], v["draft"]

    def pos(r):
        return " · ".join(f"{a:.1%}" for a in r["by_position"])

    def lossless(r):
        other = ", ".join(f"{x['verdict']} (`{x['file']}`)" for x in r["lossless_other"])
        return f"{r['lossless_identical']} of {r['prompts']}" + (f"; the others: {other}" if other else "")

    def check(k):
        x = e[k]
        steps = ", ".join(f"{a:.2g}" for a in x["logits_draft_steps"])
        return (f"| {k[6:].upper()} | {x['features']:.2g} | {x['g']:.2g} | {x['logits_pairs']:.2g} | {steps} | "
                f"{x['same_argmax_pairs']:.0%} |")

    n = v["n_max"]
    met_acc = all(h >= a for h, a in zip(hd["by_position"], dr["by_position"]))
    cheaper = c["head_to_target"] < c["draft_to_target"]
    acc_words = ("at least the draft's at every position" if met_acc else
                 "below the draft's at position(s) " + ", ".join(
                     str(i + 1) for i, (h, a) in enumerate(zip(hd["by_position"], dr["by_position"])) if h < a))
    hist = " → ".join(f"{' · '.join(f'{a:.0%}' for a in h['held_out'])} ({h['step']})" for h in t["history"][::4])
    return f"""## EAGLE-3 head

`{HEAD_FILE}` is an EAGLE-3 head for the demo target: llama.cpp's `eagle3` architecture, which
SpecScope runs with `--spec-type draft-eagle3` (docs/eagle3.md), as `llama-speculative-simple`
does. `specscope run --spec-type draft-eagle3` takes it by default with the demo target. It was
trained here by `packaging/train_eagle3_head.py` (torch, CPU) on the target's own features.

| | |
|---|---|
| file | {e["bytes"]:,} bytes ({_mb(e["bytes"])}); all of resources/models now {_mb(e["models_dir_bytes"])} (limit 40 MB) |
| parameters | {e["params"]:,} ({cfg["n_vocab"] * cfg["n_embd"]:,} of them its token embeddings) |
| tensor types | {_tensor_types(models_dir / HEAD_FILE)} (the 1-D I64 one is `d2t`) |
| encoder | `fc`: the inputs of the target's layers {", ".join(map(str, cfg["target_layers"]))} side by side (3 × {cfg["n_embd_tgt"]}) → g ({cfg["n_embd"]} wide) |
| decoder | one llama layer {cfg["n_embd"]} wide reading [norm(token embedding), norm(g)] ({2 * cfg["n_embd"]} wide): {cfg["n_head"]} heads of {cfg["n_embd"] // cfg["n_head"]} (KV {cfg["n_head"]}), SwiGLU FFN {cfg["n_ff"]}, g as the attention's residual; token embeddings of its own |
| output | {cfg["n_draft"]} tokens (`d2t`: absolute target ids): the most frequent of the training data, {d["coverage_train_tokens"]:.1%} of the training files' tokens and {d["coverage_target_continuations"]:.1%} of the target's own continuations |

Why these choices: layers 1, 2 and 3 are the deepest states a llama target gives (layer 0's input
is the current token's embedding, which the head reads anyway; id 4, the output's pre-norm
state, is an MTP output that llama.cpp's llama graph does not set). A decoder 128 wide, with
embeddings of its own rather than the target's 256-wide ones, and an output head over
{cfg["n_draft"]:,} tokens rather than 4,096 needs {_macs_head(cfg) / 1e3:.0f}k multiply-adds per draft token, {_macs_head(cfg) / _macs_draft():.1f}× the
demo draft's {_macs_draft() / 1e3:.0f}k (its matrices; fc, {3 * cfg["n_embd_tgt"] * cfg["n_embd"] / 1e3:.0f}k, runs once per verified token, not per draft
step).

**Training.** Data: the training files ({d["train_tokens"]:,} tokens, llama.cpp's tokenizer) and
{d["selfgen_sequences"]:,} greedy continuations by the target of {d["selfgen_prompt"]}-token training windows to
{d["selfgen_length"]} tokens (torch, the shipped weights, a KV cache; the same tokens as llama.cpp's greedy
decoding on the sequences checked); each batch half of each, {t["batch"]} windows × {t["seq"]} tokens. The target's
features and logits come from torch on the shipped F16 weights (checked against llama.cpp below).
Training-time test, as EAGLE-3 trains: step 1 runs the head over every position of a window with
the target's g (causal attention over its pairs, as llama.cpp's memory holds them); steps 2 and
3 run it again from every position P, at RoPE position P + j − 1, on the next token and the
pre-norm state the previous step left at P, attending to step 1's keys up to P and to their own
chain's: what a draft of 3 sees in llama.cpp. Loss: cross-entropy with the target's softmax over
the reduced vocabulary, steps weighted 1 · 0.9 · 0.8. Warm start from the demo draft (its token
embeddings, output norm and the output rows of the reduced vocabulary). AdamW (lr {t["lr"]:g}, β
0.9/0.95, weight decay 0.1 on matrices), warm-up then cosine, clipping 1.0, bf16 autocast,
seed {t["seed"]}: {t["steps"]:,} steps, {t["tokens"]:,} window tokens, {_min(t["seconds"])} on {t["threads"]} torch thread
(torch {_torch_version()}), the machine shared with other work.{_tune_text(tu)} The head's argmax equals the
target's on held-out windows of the corpus (teacher-forced, by step): {" · ".join(f"{a:.1%}" for a in (tu or t)["held_out_accuracy_by_step"])}
(during the first phase, at the step count in brackets: {hist}).

Export check (llama.cpp against torch F32 on a 128-token held-out window, max abs difference):

| file | target features (layers' inputs) | g | logits, 127 pairs | logits, draft steps 1 · 2 · 3 | same argmax |
|---|---|---|---|---|---|
{check("check_f32")}
{check("check_f16")}

**Evaluation.** SpecScope's engine, greedy, n = {n}, p_min 0, {v["threads"]} thread, on evaluate_demo.py's
held-out prompts ({hd["prompts"]}: the first {EVAL_PROMPT_TOKENS} tokens of each held-out file and of the
middle of long files), {v["tokens"]} tokens each; the same prompts for both drafters:

| held-out files, n = {n} | demo draft (`draft-simple`) | EAGLE-3 head (`draft-eagle3`) |
|---|---|---|
| acceptance at draft position 1 · 2 · 3 (share of drafts whose i-th token was accepted) | {pos(dr)} | **{pos(hd)}** |
| drafted tokens accepted | {dr["acceptance"]:.1%} ({dr["accepted"]:,} of {dr["drafted"]:,}) | {hd["acceptance"]:.1%} ({hd["accepted"]:,} of {hd["drafted"]:,}) |
| mean accepted length (tokens per round) | {dr["mean_accepted_length"]:.2f} | {hd["mean_accepted_length"]:.2f} |
| cost of a draft token, fraction of the target's single-token decode | {c["draft_to_target"]:.2f} ({c["draft"] * 1e6:.0f} µs) | {c["head_to_target"]:.2f} ({c["head_draft_step"] * 1e6:.0f} µs) |
| tokens/s, wall time (the target alone: {dr["baseline_tokens_per_s"]:.0f} and {hd["baseline_tokens_per_s"]:.0f}) | {dr["tokens_per_s"]:.0f} | {hd["tokens_per_s"]:.0f} |
| output equal to the target's (lossless check) | {lossless(dr)} | {lossless(hd)} |

Cost, measured by `cost_per_draft_token` in packaging/train_eagle3_head.py: Python timing loops
over llama.cpp's calls, in the process's CPU time ({c["threads"]} thread, after a 64-token prompt, best of
{c["reps"]} × {c["n"]}, each back at the same position; wall time on the shared machine varied 2.5× between
runs): the target's single-token decode with its logits
{c["target"] * 1e6:.0f} µs; the draft's {c["draft"] * 1e6:.0f} µs; the head's draft step (one pair decoded with an output,
its logits row and pre-norm state read back, as draft-eagle3 does) {c["head_draft_step"] * 1e6:.0f} µs. The head also
`process`es every verified batch (the target layers' inputs read back, the encoder, the decoder
on the kept pairs): {c["head_process_n3"] * 1e6:.0f} µs for a round of 4 rows. The head's step has
{_macs_head(cfg) / _macs_draft():.1f}× the draft's multiply-adds, yet costs {c["head_to_draft"]:.1f}× the draft's: at these sizes a call's fixed cost
sets the time, and the head's goes through more of it (an extended batch with an embedding row,
the logits spread over the whole vocabulary by `d2t`, the pre-norm state read back); how much
each part costs was not measured. A round at n = {n} costs the head {n} draft steps and a `process`,
{(n * c["head_draft_step"] + c["head_process_n3"]) / c["target"]:.1f} target tokens' worth, the draft {n} steps, {n * c["draft"] / c["target"]:.1f} (its own sync aside):
more than the head's longer accepted runs win back. The tokens/s (wall time, in the same runs
as the acceptance, on the machine shared with other work) say the same: neither drafter speeds
this small target up on a CPU; docs/eagle3.md has the speed-ups measured with
`specscope run --with-baseline` and `tests/bench/bench_eagle3_demo.py`.

The aim (at n = 3, at least the draft's acceptance at a fraction of its cost): the
head's acceptance is {acc_words}; its cost per draft token is
{"below" if cheaper else "above"} the draft's ({c["head_to_target"]:.2f} against {c["draft_to_target"]:.2f} of a target token).

Rebuild the head (after the models above; it reads the shipped target and draft):
`python packaging/train_eagle3_head.py` (all stages: data, train, tune, export, eval; `--stages`
picks some; figures in `build/eagle3-head/`), then `python packaging/write_model_card.py --eagle3-only` rewrites this section.
"""


def _macs_head(cfg) -> int:
    """Multiply-adds of a head's draft step: q, k, v read [embedding, g] (2 x n_embd wide),
    the attention output, the SwiGLU FFN, the output head over the reduced vocabulary."""
    n = cfg["n_embd"]
    return 3 * 2 * n * n + n * n + 3 * n * cfg["n_ff"] + cfg["n_draft"] * n


def _macs_draft() -> int:
    """Multiply-adds of the demo draft's token: its layers' matrices and its output head."""
    from build_demo_models import DRAFT_CFG as c
    n = c["dim"]
    return c["n_layers"] * (4 * n * n + 3 * n * c["ffn_dim"]) + c["vocab_size"] * n


def _tune_text(tu) -> str:
    if not tu:
        return ""
    return (f" Then, as the demo draft's second phase, on the target's continuations only"
            f" ({tu['fresh_continuations']:,} fresh ones, another seed, made in {_min(tu['generation_seconds'])};"
            f" {tu['continuations']:,} in all): {tu['steps']:,} steps, {tu['tokens']:,} window tokens, peak lr"
            f" {tu['lr']:g}, {_min(tu['seconds'])}.")


def update_eagle3_section(card: Path, work: Path = HEAD_WORK, models_dir: Path = MODELS_DIR) -> Path:
    """Write the EAGLE-3 head's section into an existing card (before ``## Rebuild``)."""
    card = Path(card)
    text = card.read_text()
    end = text.index("## Rebuild")
    start = text.find("## EAGLE-3 head")
    card.write_text(text[:start if start >= 0 else end] + eagle3_section(work, models_dir) + "\n"
                    + text[end:])
    return card


def _draft_ppl(meta) -> str:
    d = meta["draft"]
    if "train_phase2" in d:
        return (f"{d['train_phase2']['held_out_ppl']:.2f} after phase 2, {d['train']['held_out_ppl']:.2f} after "
                f"phase 1: training on the target's own outputs trades perplexity on real files for agreement "
                f"with the target")
    return f"{d['train']['held_out_ppl']:.2f}"


def _per_file(h) -> str:
    pf = sorted(h["per_file_acceptance"].items(), key=lambda kv: kv[1])
    if not pf:
        return "n/a"
    mid = pf[len(pf) // 2]
    return (f"lowest {pf[0][1]:.0%} (`{pf[0][0]}`), median {mid[1]:.0%}, "
            f"highest {pf[-1][1]:.0%} (`{pf[-1][0]}`)")


def _engine_line(ev) -> str:
    e = ev.get("engine_cross_check") or {}
    if not e.get("available"):
        return "SpecScope's engine was not available for a cross-check."
    if "error" in e:
        return f"Cross-check with SpecScope's engine failed: {e['error']}"
    pos = " · ".join(f"{a:.1%}" for a in e["per_position"])
    return (f"The same prompts through SpecScope's own engine (`specscope.core.engine.engine`, greedy, "
            f"n_max {ev['n_max']}, p_min 0, F32 KV, flash attention off): acceptance "
            f"**{e['acceptance']:.1%}** ({e['accepted']:,} of {e['drafted']:,}), by position {pos}.")


def _torch_version():
    try:
        import torch

        return torch.__version__
    except ImportError:
        return "n/a"


def _llama_version():
    try:
        import llama_cpp

        return llama_cpp.__version__
    except ImportError:
        return "n/a"


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--work-dir", default=str(REPO / "build" / "demo-models"))
    ap.add_argument("--models-dir", default=str(MODELS_DIR))
    ap.add_argument("--eagle3-work-dir", default=str(HEAD_WORK))
    ap.add_argument("--eagle3-only", action="store_true",
                    help="rewrite only the EAGLE-3 head's section of the existing card")
    a = ap.parse_args()
    md = Path(a.models_dir)
    if a.eagle3_only:
        print(update_eagle3_section(md / "README.md", Path(a.eagle3_work_dir), md))
    else:
        print(write(Path(a.work_dir), md / "README.md", md, Path(a.eagle3_work_dir)))
