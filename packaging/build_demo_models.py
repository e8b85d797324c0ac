"""Rebuild SpecScope's demo model pair (and the foreign-vocabulary draft).

    pip install -e '.[train]'
    python packaging/build_demo_models.py            # everything, at most ~80 min on 2 CPU cores

Stages (``--stages`` picks a comma-separated subset, run in this order):

  tokenizer  corpus split (demo_corpus.py), byte-level BPE 4096 (+ the foreign
             2048-token BPE), token streams, tests/data fixture
  target     train the target (llama, ~5.3M parameters)
  selfgen    greedy continuations by the target (llama.cpp) of training windows
  draft      distil the draft from the target on the corpus (KL + CE)
  draft2     continue distilling the draft on the target's own outputs (selfgen)
  foreign    train the tiny draft with the foreign 2048-token vocabulary
  export     write the three GGUFs to resources/models, check llama.cpp against
             torch (logits, tokenization of every held-out file)
  eval       evaluate_demo.py: acceptance, perplexity, speed, samples
  card       write resources/models/README.md from the figures (with the EAGLE-3 head's
             section when build/eagle3-head/ has its figures)

The demo target's EAGLE-3 head is trained after these, by train_eagle3_head.py (it reads the
shipped target and draft).

Intermediate files (tokenizers, token streams, checkpoints, JSON figures) go to
``--work-dir`` (default build/demo-models). Seeds are fixed; the only
hardware-dependent choice is ``--*-minutes``: if a stage measures that its
step count would not fit its time budget, it shortens the schedule and logs
so (the model card records the steps actually run).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import demo_corpus  # noqa: E402
import gguf_export  # noqa: E402

MODELS_DIR = REPO / "resources" / "models"
FIXTURE = REPO / "tests" / "data" / "demo_tokenizer_fixture.json"
EOT = gguf_export.EOT_TEXT

SEED = 1234

TARGET_CFG = dict(vocab_size=4096, dim=256, n_layers=4, n_heads=4, ffn_dim=688, tie_embeddings=False)
DRAFT_CFG = dict(vocab_size=4096, dim=128, n_layers=1, n_heads=2, ffn_dim=352, tie_embeddings=True)
FOREIGN_CFG = dict(vocab_size=2048, dim=64, n_layers=1, n_heads=2, ffn_dim=176, tie_embeddings=True)

SEQ_LEN = 512
BATCH = 4

STAGES = ["tokenizer", "target", "selfgen", "draft", "draft2", "foreign", "export", "eval", "card"]


def log(msg: str):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def save_json(path: Path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def load_json(path: Path):
    return json.loads(Path(path).read_text())


# ------------------------------------------------------------------ tokenizer


# The foreign tokenizer also has a different special-token layout
# (<|pad|> at id 0, <|endoftext|> at 1): its ids, BOS/EOS and token texts all
# differ from the main vocabulary's, not only its size (a plain 2048-token BPE
# trained the same way would be a prefix of the 4096-token one).
SPECIALS = {"main": [EOT], "foreign": ["<|pad|>", EOT]}
VOCAB_SIZES = {"main": 4096, "foreign": 2048}


def train_tokenizer(texts, vocab_size: int, specials=(EOT,)):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return tok


def encode_stream(tok, docs) -> np.ndarray:
    """<|endoftext|> + ids for every document, concatenated (uint16)."""
    eot = tok.token_to_id(EOT)
    enc = tok.encode_batch([t for _, t in docs], add_special_tokens=False)
    parts = []
    for e in enc:
        parts.append(np.array([eot] + e.ids, dtype=np.uint16))
    return np.concatenate(parts)


def stage_tokenizer(work: Path, args, names=("main", "foreign")):
    train, held = demo_corpus.load_split()
    log(f"corpus: {len(train)} train files, {len(held)} held-out files "
        f"({sum(len(t) for _, t in train)} / {sum(len(t) for _, t in held)} chars)")
    for name in names:
        t0 = time.time()
        tok = train_tokenizer((t for _, t in train), VOCAB_SIZES[name], SPECIALS[name])
        tok.save(str(work / f"tokenizer_{name}.json"))
        s_train = encode_stream(tok, train)
        s_held = encode_stream(tok, held)
        np.save(work / f"train_{name}.npy", s_train)
        np.save(work / f"held_{name}.npy", s_held)
        held_docs = {rel: tok.encode(text, add_special_tokens=False).ids for rel, text in held}
        save_json(work / f"held_docs_{name}.json", held_docs)
        log(f"tokenizer {name}: vocab {tok.get_vocab_size()}, train tokens {len(s_train)}, "
            f"held-out tokens {len(s_held)} ({time.time() - t0:.0f}s)")
    if "main" not in names:
        return
    save_json(work / "corpus.json", {
        "stdlib_root": str(demo_corpus.stdlib_root()),
        "python": platform.python_version(),
        "train_files": len(train),
        "held_out_files": len(held),
        "train_chars": sum(len(t) for _, t in train),
        "held_out_chars": sum(len(t) for _, t in held),
        "held_out_list": [r for r, _ in held],
    })
    # fixture for the tokenizer-equality test (no `tokenizers` needed there)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(work / "tokenizer_main.json"))
    picks = [r for r, _ in held if not r.startswith("encodings/")][:3]
    items = []
    texts = dict(held)
    for rel in picks:
        text = texts[rel]
        cut = text[:700]
        cut = cut[: cut.rfind("\n") + 1] or cut
        items.append({"path": rel, "text": cut, "ids": tok.encode(cut, add_special_tokens=False).ids})
    save_json(FIXTURE, {
        "comment": "Token ids produced by the training tokenizer (HF tokenizers byte-level BPE) "
                   "for the opening lines of held-out stdlib files; made by "
                   "packaging/build_demo_models.py --stages tokenizer.",
        "python": platform.python_version(),
        "bos_id": tok.token_to_id(EOT),
        "items": items,
    })


# ---------------------------------------------------------------- training


def _torch():
    import torch

    torch.set_num_threads(args_threads)
    return torch


args_threads = 2


def _make(cfg_dict):
    import demo_train

    cfg = demo_train.LlamaConfig(**cfg_dict)
    return demo_train.Llama(cfg, max_len=SEQ_LEN), cfg


def _save_ckpt(work, name, model, cfg, stats):
    torch = _torch()
    torch.save(model.state_dict(), work / f"{name}.pt")
    save_json(work / f"{name}.json", {"config": cfg.to_dict(), "params": model.n_params(), "train": stats})


def _load_ckpt(work, name):
    torch = _torch()
    meta = load_json(work / f"{name}.json")
    cfg_dict = dict(meta["config"])
    model, cfg = _make(cfg_dict)
    model.load_state_dict(torch.load(work / f"{name}.pt", map_location="cpu"))
    model.eval()
    return model, cfg, meta


def stage_train(work: Path, args, which: str):
    torch = _torch()
    import demo_train

    spec = {
        "target": (TARGET_CFG, "main", args.target_steps, args.target_minutes, 2e-3, None),
        "draft": (DRAFT_CFG, "main", args.draft_steps, args.draft_minutes, 3e-3, "target"),
        "foreign": (FOREIGN_CFG, "foreign", args.foreign_steps, args.foreign_minutes, 3e-3, None),
    }[which]
    cfg_dict, vocab, steps, minutes, lr, teacher_name = spec
    stream = np.load(work / f"train_{vocab}.npy")
    seed = SEED + STAGES.index(which)
    torch.manual_seed(seed)
    model, cfg = _make(cfg_dict)
    teacher = None
    if teacher_name:
        teacher, _, _ = _load_ckpt(work, teacher_name)
        for p in teacher.parameters():
            p.requires_grad_(False)
    log(f"{which}: {model.n_params()} parameters, {steps} steps of {BATCH}x{SEQ_LEN}, budget {minutes} min"
        + (f", distilled from {teacher_name}" if teacher else ""))
    stats = demo_train.train(
        model, stream, steps=steps, seq_len=SEQ_LEN, batch=BATCH, lr=lr, seed=seed,
        teacher=teacher, time_budget_s=minutes * 60, log=log, bf16=not args.fp32,
    )
    held = load_json(work / f"held_docs_{vocab}.json")
    docs = [np.array(v, dtype=np.int64) for v in held.values()]
    eot = gguf_export.GGUFVocab.from_hf_json(load_json(work / f"tokenizer_{vocab}.json")).bos_id
    docs = [np.concatenate([[eot], d]) for d in docs]
    ce, n = demo_train.eval_ce(model, docs, SEQ_LEN, max_windows=48)
    stats.update({"held_out_ce": ce, "held_out_ppl": float(np.exp(ce)), "held_out_tokens": n,
                  "seq_len": SEQ_LEN, "batch": BATCH, "lr": lr, "seed": seed,
                  "bf16_autocast": not args.fp32, "threads": args_threads,
                  "distilled_from": teacher_name})
    log(f"{which}: done in {stats['seconds']:.0f}s, {stats['tokens']} tokens, held-out ppl {np.exp(ce):.2f} (torch)")
    _save_ckpt(work, which, model, cfg, stats)


# ------------------------------------------------------- self-generated data

SELFGEN_PROMPT = 64
SELFGEN_LEN = 256


def stage_selfgen(work: Path, args):
    """Greedy continuations by the target (through llama.cpp, F32 export) of
    seeded random 64-token windows of the training stream: the draft's
    second distillation phase trains on the target's own outputs."""
    model, cfg, meta = _load_ckpt(work, "target")
    vocab = gguf_export.GGUFVocab.from_hf_json(load_json(work / "tokenizer_main.json"))
    path = work / "target-f32.gguf"
    gguf_export.write_llama_gguf(path, model.gguf_tensors(), gguf_export.GGUFConfig.from_dict(cfg.to_dict()),
                                 vocab, name="target-f32", weight_type="f32")
    stream = np.load(work / "train_main.npy")
    rng = np.random.default_rng(SEED + 100)
    seqs = []
    t0 = time.time()
    with gguf_export.LlamaCppModel(path, n_ctx=SELFGEN_LEN + 8, n_threads=args.threads) as m:
        while len(seqs) < args.selfgen_max and time.time() - t0 < args.selfgen_minutes * 60:
            s0 = int(rng.integers(0, len(stream) - SELFGEN_PROMPT))
            ids = [int(t) for t in stream[s0 : s0 + SELFGEN_PROMPT]]
            m.clear()
            lg = m.decode(ids, 0)
            while len(ids) < SELFGEN_LEN:
                t = int(lg[-1].argmax())
                ids.append(t)
                if len(ids) < SELFGEN_LEN:
                    lg = m.decode([t], len(ids) - 1)
            seqs.append(ids)
            if len(seqs) % 200 == 0:
                log(f"  selfgen {len(seqs)} sequences, {time.time() - t0:.0f}s")
    path.unlink()
    arr = np.array(seqs, dtype=np.uint16)
    np.save(work / "selfgen.npy", arr)
    save_json(work / "selfgen.json", {"sequences": len(seqs), "prompt_tokens": SELFGEN_PROMPT,
                                      "length": SELFGEN_LEN, "seconds": time.time() - t0,
                                      "generated_tokens": len(seqs) * (SELFGEN_LEN - SELFGEN_PROMPT)})
    log(f"selfgen: {len(seqs)} sequences of {SELFGEN_LEN} tokens in {time.time() - t0:.0f}s")


def stage_draft2(work: Path, args):
    """Second distillation phase of the draft: continue from the corpus-distilled
    draft on the target's own greedy outputs (selfgen), loss 0.5 KL + 0.5 CE
    (the CE labels of the generated part are the target's greedy tokens)."""
    torch = _torch()
    import demo_train

    model, cfg, meta = _load_ckpt(work, "draft")
    teacher, _, _ = _load_ckpt(work, "target")
    for p in teacher.parameters():
        p.requires_grad_(False)
    data = np.load(work / "selfgen.npy")
    seed = SEED + 50
    log(f"draft2: {len(data)} self-generated sequences, {args.draft2_steps} steps of 8x{SELFGEN_LEN - 1}, "
        f"budget {args.draft2_minutes} min")
    stats = demo_train.train(
        model, data, steps=args.draft2_steps, seq_len=SELFGEN_LEN - 1, batch=8, lr=1e-3, seed=seed,
        teacher=teacher, distill_weight=0.5, time_budget_s=args.draft2_minutes * 60, log=log,
        bf16=not args.fp32, warmup=10,
    )
    held = load_json(work / "held_docs_main.json")
    docs = [np.concatenate([[0], np.array(v, dtype=np.int64)]) for v in held.values()]
    ce, n = demo_train.eval_ce(model, docs, SEQ_LEN, max_windows=48)
    stats.update({"held_out_ce": ce, "held_out_ppl": float(np.exp(ce)), "held_out_tokens": n,
                  "seq_len": SELFGEN_LEN - 1, "batch": 8, "lr": 1e-3, "seed": seed,
                  "data": "selfgen", "distill_weight": 0.5})
    meta["train_phase2"] = stats
    torch.save(model.state_dict(), work / "draft.pt")
    save_json(work / "draft.json", meta)
    log(f"draft2: done in {stats['seconds']:.0f}s, {stats['tokens']} tokens, held-out ppl {np.exp(ce):.2f} (torch)")


# ------------------------------------------------------------------ export


FILES = {
    "target": "demo-target.gguf",
    "draft": "demo-draft.gguf",
    "foreign": "demo-draft-foreign-vocab.gguf",
}


def stage_export(work: Path, args):
    torch = _torch()
    report = {}
    vocabs = {
        "main": gguf_export.GGUFVocab.from_hf_json(load_json(work / "tokenizer_main.json")),
        "foreign": gguf_export.GGUFVocab.from_hf_json(load_json(work / "tokenizer_foreign.json")),
    }
    descr = {
        "target": "SpecScope demo target: llama, trained on the CPython standard library (Python source).",
        "draft": "SpecScope demo draft for demo-target (same tokenizer), distilled from it.",
        "foreign": "SpecScope demo draft with a different (2048-token) tokenizer: an incompatible pair for the gate.",
    }
    held_main = load_json(work / "held_docs_main.json")
    probe_ids = [0] + list(held_main.values())[0][:127]
    for name, fname in FILES.items():
        model, cfg, meta = _load_ckpt(work, name)
        vocab = vocabs["foreign" if name == "foreign" else "main"]
        gcfg = gguf_export.GGUFConfig.from_dict(cfg.to_dict())
        tensors = model.gguf_tensors()
        out = MODELS_DIR / fname
        gguf_export.write_llama_gguf(out, tensors, gcfg, vocab, name=f"specscope-demo-{name}",
                                     weight_type="f16", description=descr[name],
                                     metadata={"general.source.corpus": "CPython standard library (PSF License 2.0)"})
        f32_path = work / f"{name}-f32.gguf"
        gguf_export.write_llama_gguf(f32_path, tensors, gcfg, vocab, name=f"specscope-demo-{name}-f32",
                                     weight_type="f32")
        ids = probe_ids if name != "foreign" else [vocab.bos_id] + list(load_json(work / "held_docs_foreign.json").values())[0][:127]
        with torch.no_grad():
            ref = model(torch.tensor([ids])).float()[0].numpy()
        d16 = float(np.abs(gguf_export.llama_cpp_logits(out, ids) - ref).max())
        d32 = float(np.abs(gguf_export.llama_cpp_logits(f32_path, ids) - ref).max())
        f32_path.unlink()
        report[name] = {
            "file": fname, "bytes": out.stat().st_size, "params": meta["params"],
            "logits_max_abs_diff_f16_file_vs_torch_f32": d16,
            "logits_max_abs_diff_f32_export_vs_torch_f32": d32,
            "logits_probe_tokens": len(ids),
            "logit_range": [float(ref.min()), float(ref.max())],
        }
        log(f"export {fname}: {out.stat().st_size} bytes; max|llama.cpp - torch| F16 {d16:.4g}, F32 {d32:.4g}")
    # tokenization equality over every held-out file, and round-trip
    texts = dict(demo_corpus.load_split()[1])
    for vname, fname in (("main", FILES["target"]), ("foreign", FILES["foreign"])):
        held = load_json(work / f"held_docs_{vname}.json")
        mism, rt_bad, ntok = [], [], 0
        with gguf_export.LlamaCppModel(MODELS_DIR / fname, vocab_only=True) as m:
            for rel, ids in held.items():
                got = m.tokenize(texts[rel])
                ntok += len(ids)
                if got != ids:
                    mism.append(rel)
                if m.detokenize(got) != texts[rel]:
                    rt_bad.append(rel)
        report[f"tokenizer_{vname}"] = {"held_out_files": len(held), "tokens": ntok,
                                        "id_mismatch_files": mism, "roundtrip_fail_files": rt_bad}
        log(f"tokenizer {vname} vs llama.cpp: {len(held) - len(mism)}/{len(held)} held-out files identical "
            f"({ntok} tokens), round-trip failures {len(rt_bad)}")
    total = sum(p.stat().st_size for p in MODELS_DIR.iterdir() if p.is_file())
    report["models_dir_bytes"] = total
    report["draft_to_target_file_ratio"] = report["draft"]["bytes"] / report["target"]["bytes"]
    save_json(work / "export.json", report)
    log(f"resources/models total {total / 1e6:.2f} MB; draft/target file ratio {report['draft_to_target_file_ratio']:.3f}")


# -------------------------------------------------------------------- main


def main(argv=None):
    global args_threads, MODELS_DIR
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work-dir", default=str(REPO / "build" / "demo-models"))
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models-dir", default=str(MODELS_DIR), help="where the GGUFs and the card go")
    ap.add_argument("--target-steps", type=int, default=1200)
    ap.add_argument("--target-minutes", type=float, default=30)
    ap.add_argument("--draft-steps", type=int, default=1200)
    ap.add_argument("--draft-minutes", type=float, default=14)
    ap.add_argument("--selfgen-minutes", type=float, default=8)
    ap.add_argument("--selfgen-max", type=int, default=4000)
    ap.add_argument("--draft2-steps", type=int, default=1500)
    ap.add_argument("--draft2-minutes", type=float, default=9)
    ap.add_argument("--foreign-steps", type=int, default=150)
    ap.add_argument("--foreign-minutes", type=float, default=3)
    ap.add_argument("--fp32", action="store_true", help="train without bf16 autocast")
    args = ap.parse_args(argv)
    args_threads = args.threads
    MODELS_DIR = Path(args.models_dir)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    for s in stages:
        if s not in STAGES:
            ap.error(f"unknown stage {s!r}")
    t_all = time.time()
    timings = load_json(work / "timings.json") if (work / "timings.json").exists() else {}
    for s in STAGES:
        if s not in stages:
            continue
        t0 = time.time()
        log(f"== stage {s}")
        if s == "tokenizer":
            stage_tokenizer(work, args)
        elif s in ("target", "draft", "foreign"):
            stage_train(work, args, s)
        elif s == "selfgen":
            stage_selfgen(work, args)
        elif s == "draft2":
            stage_draft2(work, args)
        elif s == "export":
            stage_export(work, args)
        elif s == "eval":
            import evaluate_demo

            evaluate_demo.main(["--models-dir", str(MODELS_DIR), "--work-dir", str(work),
                                "--out", str(work / "eval.json"), "--threads", str(args.threads)])
        elif s == "card":
            import write_model_card

            write_model_card.write(work, MODELS_DIR / "README.md", MODELS_DIR)
        timings[s] = time.time() - t0
        save_json(work / "timings.json", timings)
    log(f"done in {time.time() - t_all:.0f}s")


if __name__ == "__main__":
    main()
