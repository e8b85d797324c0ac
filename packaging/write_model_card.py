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


def write(work: Path, out: Path, models_dir: Path = MODELS_DIR):
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
refuse. They were trained here, on CPU, on the Python source of the CPython
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

## Rebuild

```sh
pip install -e '.[train]'        # torch==2.13.0 (CPU) and tokenizers
python packaging/build_demo_models.py
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
    a = ap.parse_args()
    md = Path(a.models_dir)
    print(write(Path(a.work_dir), md / "README.md", md))
