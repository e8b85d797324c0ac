"""Train the demo target's EAGLE-3 head and export it in llama.cpp's ``eagle3`` format.

    pip install -e '.[train]'
    python packaging/train_eagle3_head.py          # all stages, about 90 min on the 2-core machine
    python packaging/write_model_card.py --eagle3-only

Writes resources/models/demo-eagle3-head.gguf, and the figures the model card quotes to
build/eagle3-head/ (data.json, train.json, tune.json, export.json, eval.json).

Stages (``--stages``, in this order):

  data    the training files tokenized with llama.cpp (the target's own vocabulary), the
          target's greedy continuations of 64-token training windows (torch, the shipped F16
          weights in F32, a KV cache, batched), the reduced vocabulary
  train   phase 1: the head, with training-time test (below), on half corpus windows, half
          continuations
  tune    phase 2: fresh continuations (another seed), then continuations only, lower lr
  export  the GGUF; checked: the target's layer inputs as llama.cpp gives them (SpecScope's
          staging module) against torch's, the head's logits in llama.cpp against torch's,
          on the pairs and on draft steps fed the previous step's pre-norm state
  eval    SpecScope's engine on held-out text: acceptance by position at n = 3, the head beside
          the demo draft; the lossless check; tokens/s; the cost of a draft token

The head (src/models/eagle3.cpp): ``fc`` projects the inputs of the target's layers 1, 2 and 3
(concatenated, 3 x 256) to g (128 wide); one llama-style decoder layer reads, at position P,
[attn_norm(embedding of token P+1), hidden_norm(g_P)] (256 wide) and adds g_P as the attention's
residual; its output head covers the reduced vocabulary (``d2t``: absolute target ids), and its
pre-norm state is the g of the next draft step.

* Target layers 1, 2, 3: the deepest states a llama target gives. Layer 0's input is the
  current token's embedding, which the head already reads (as the token of its previous pair);
  the id n_layer (4, the output's pre-norm state) is llama.cpp's MTP output, which its llama
  graph does not set (``t_h_nextn``), so a head reading it gets no features from this target.
* 128 wide with token embeddings of its own (the decoder would otherwise have to be the
  target's 256 wide, to share its embeddings): 0.7x the demo draft's multiply-adds per
  draft token. Warm start: the embeddings, the output norm and the output rows from the demo
  draft (128 wide, tied), the rest random.
* Reduced vocabulary: the ``N_DRAFT`` most frequent tokens of the training data (the corpus
  stream and the target's continuations), sorted by id; the others cannot be drafted.
* Training-time test (EAGLE-3): step 1 runs the head on every position of a window at once with
  the target's g (causal attention over the pairs, as llama.cpp's memory holds them); step j
  (2, 3) runs it again from each position P at RoPE position P + j - 1, on the token the target
  puts there and the pre-norm state step j - 1 left at P, attending to step 1's keys up to P
  and to its own chain's keys (the draft steps llama.cpp's memory holds in a round). Each step
  learns the target's next-token distribution over the reduced vocabulary (cross-entropy with
  the target's softmax, renormalised over it); the steps weigh 1, 0.9, 0.8.
* Data: half the windows from the training files, half from the target's own greedy
  continuations (what it drafts against at run time).

Seeds are fixed; the step count a time budget allows depends on the machine (logged and
recorded). Here (Intel Xeon, 2 cores shared with other work, one torch thread): data 5 min
(3,200 continuations), phase 1 45 min (3,301 steps), phase 2 5 min of continuations and 15 min of
training (2,000 steps), export and checks under a minute, evaluation under a minute.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import demo_corpus  # noqa: E402
import gguf_export  # noqa: E402
from build_demo_models import DRAFT_CFG, TARGET_CFG, load_json, log, save_json  # noqa: E402

MODELS_DIR = REPO / "resources" / "models"
TARGET = MODELS_DIR / "demo-target.gguf"
DRAFT = MODELS_DIR / "demo-draft.gguf"
HEAD = MODELS_DIR / "demo-eagle3-head.gguf"
WORK = REPO / "build" / "eagle3-head"

SEED = 2222
TARGET_LAYERS = (1, 2, 3)
N_DRAFT = 2048
SEQ = 256                  # window length (tokens)
SELFGEN_PROMPT = 64
TTT_STEPS = 3
STEP_WEIGHTS = (1.0, 0.9, 0.8)
STAGES = ["data", "train", "tune", "export", "eval"]


@dataclass
class HeadConfig:
    n_vocab: int = 4096
    n_draft: int = N_DRAFT
    n_embd: int = 128
    n_embd_tgt: int = 256
    n_head: int = 4
    n_ff: int = 352
    norm_eps: float = 1e-5
    rope_base: float = 10000.0
    target_layers: tuple = TARGET_LAYERS

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


# ------------------------------------------------------------------ the GGUF files in torch
def gguf_tensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a GGUF, float32 numpy in (out, in) shape (F16 and F32 files)."""
    import gguf

    r = gguf.GGUFReader(str(path))
    out = {}
    for t in r.tensors:
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))
        out[t.name] = np.asarray(t.data).reshape(shape).astype(np.float32)
    return out


def load_llama(path: Path, cfg: dict):
    """A demo model (llama GGUF) as demo_train.Llama, its weights as the file stores them."""
    import torch
    import demo_train

    t = gguf_tensors(path)
    model = demo_train.Llama(demo_train.LlamaConfig(**cfg), max_len=2048)
    state = {"tok_emb.weight": t["token_embd.weight"], "norm.weight": t["output_norm.weight"]}
    if "output.weight" in t:
        state["out.weight"] = t["output.weight"]
    names = {"attn_norm": "attn_norm", "wq": "attn_q", "wk": "attn_k", "wv": "attn_v",
             "wo": "attn_output", "ffn_norm": "ffn_norm", "w_gate": "ffn_gate", "w_up": "ffn_up",
             "w_down": "ffn_down"}
    for i in range(cfg["n_layers"]):
        for ours, theirs in names.items():
            state[f"blocks.{i}.{ours}.weight"] = t[f"blk.{i}.{theirs}.weight"]
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def target_states(target, idx, layers=TARGET_LAYERS):
    """(features, logits): the inputs of ``layers`` side by side (B, T, 3 * dim), as
    llama_get_embeddings_layer_inp gives them, and the target's logits (B, T, vocab)."""
    import torch
    import torch.nn.functional as F

    x = target.tok_emb(idx)
    feats = []
    for i, b in enumerate(target.blocks):
        if i in layers:
            feats.append(x)
        x = b(x, target.rope_cos, target.rope_sin)
    return torch.cat(feats, -1), F.linear(target.norm(x), target.out.weight)


def greedy_continue(target, prompts, length: int):
    """The target's greedy continuations of ``prompts`` (B, P) to ``length`` tokens, batched,
    with a KV cache."""
    import torch
    import torch.nn.functional as F
    import demo_train

    cfg = target.cfg
    B = prompts.shape[0]
    H, hd = cfg.n_heads, cfg.head_dim
    cache: list = [None] * cfg.n_layers
    out, step, pos, n = [prompts], prompts, 0, prompts.shape[1]
    with torch.no_grad():
        while n < length:
            T = step.shape[1]
            cos, sin = target.rope_cos[pos:pos + T], target.rope_sin[pos:pos + T]
            x = target.tok_emb(step)
            for i, b in enumerate(target.blocks):
                h = b.attn_norm(x)
                q = demo_train.apply_rope(b.wq(h).view(B, T, H, hd).transpose(1, 2), cos, sin)
                k = demo_train.apply_rope(b.wk(h).view(B, T, H, hd).transpose(1, 2), cos, sin)
                v = b.wv(h).view(B, T, H, hd).transpose(1, 2)
                if cache[i] is not None:
                    k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
                cache[i] = (k, v)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)
                x = x + b.wo(a.transpose(1, 2).reshape(B, T, -1))
                h = b.ffn_norm(x)
                x = x + b.w_down(F.silu(b.w_gate(h)) * b.w_up(h))
            step = F.linear(target.norm(x[:, -1]), target.out.weight).argmax(-1, keepdim=True)
            out.append(step)
            pos, n = pos + T, n + 1
    return torch.cat(out, 1)


# ------------------------------------------------------------------------------ the head
def _head_module(cfg: HeadConfig):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import demo_train

    class Eagle3Head(nn.Module):
        """llama.cpp's eagle3 graphs (src/models/eagle3.cpp) in torch, with training-time test."""

        def __init__(self):
            super().__init__()
            E, A = cfg.n_embd, cfg.n_head * cfg.head_dim
            self.fc = nn.Linear(len(cfg.target_layers) * cfg.n_embd_tgt, E, bias=False)
            self.tok_emb = nn.Embedding(cfg.n_vocab, E)
            self.attn_norm = demo_train.RMSNorm(E, cfg.norm_eps)
            self.hidden_norm = demo_train.RMSNorm(E, cfg.norm_eps)
            self.wq = nn.Linear(2 * E, A, bias=False)
            self.wk = nn.Linear(2 * E, A, bias=False)
            self.wv = nn.Linear(2 * E, A, bias=False)
            self.wo = nn.Linear(A, E, bias=False)
            self.ffn_norm = demo_train.RMSNorm(E, cfg.norm_eps)
            self.w_gate = nn.Linear(E, cfg.n_ff, bias=False)
            self.w_up = nn.Linear(E, cfg.n_ff, bias=False)
            self.w_down = nn.Linear(cfg.n_ff, E, bias=False)
            self.norm = demo_train.RMSNorm(E, cfg.norm_eps)
            self.out = nn.Linear(E, cfg.n_draft, bias=False)
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
            nn.init.normal_(self.wo.weight, std=0.02 / math.sqrt(2))
            nn.init.normal_(self.w_down.weight, std=0.02 / math.sqrt(2))
            cos, sin = demo_train.rope_tables(cfg.head_dim, 4096, cfg.rope_base)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)

        def qkv(self, tok, g, pos0: int):
            """Q, K, V (B, H, L, hd) of the pairs (tok, g) at positions pos0, pos0 + 1, ..."""
            B, L = tok.shape
            x = torch.cat([self.attn_norm(self.tok_emb(tok)), self.hidden_norm(g)], -1)
            cos, sin = self.rope_cos[pos0:pos0 + L], self.rope_sin[pos0:pos0 + L]
            shape = (B, L, cfg.n_head, cfg.head_dim)
            q = demo_train.apply_rope(self.wq(x).view(shape).transpose(1, 2), cos, sin)
            k = demo_train.apply_rope(self.wk(x).view(shape).transpose(1, 2), cos, sin)
            return q, k, self.wv(x).view(shape).transpose(1, 2)

        def finish(self, a, g):
            """(pre-norm state, logits over the reduced vocabulary) from the attention's output;
            the residual is g itself (norm_before_residual false)."""
            B, H, L, hd = a.shape
            h = self.wo(a.transpose(1, 2).reshape(B, L, H * hd)) + g
            n = self.ffn_norm(h)
            h = h + self.w_down(F.silu(self.w_gate(n)) * self.w_up(n))
            return h, self.out(self.norm(h))

        def forward(self, feats, tokens, n_steps: int = TTT_STEPS):
            """Training-time test over windows: ``feats`` (B, T, 3 * n_embd_tgt), ``tokens``
            (B, T). Step j's logits (B, T - 1, n_draft): row P drafts token P + j + 1 from the
            pair at position P + j - 1 (step 1: the target's g_P; then the previous step's
            pre-norm state at P), as llama.cpp drafts from a boundary at P."""
            B, T = tokens.shape
            L = T - 1
            scale = 1.0 / math.sqrt(cfg.head_dim)
            g = self.fc(feats[:, :L])
            q, k1, v1 = self.qkv(tokens[:, 1:], g, 0)
            causal = torch.ones(L, L, dtype=torch.bool).tril()
            s = (q @ k1.transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))
            h, logits = self.finish(torch.softmax(s, -1) @ v1, g)
            outs, chain = [logits], []
            for j in range(2, n_steps + 1):
                tok = F.pad(tokens[:, j:], (0, j - 1))        # token P + j; padding past the end
                q, k, v = self.qkv(tok, h, j - 1)
                chain.append((k, v))
                s = (q @ k1.transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))
                diag = [(q * kc).sum(-1, keepdim=True) * scale for kc, _ in chain]
                att = torch.softmax(torch.cat([s, *diag], -1), -1)
                a = att[..., :L] @ v1
                for i, (_, vc) in enumerate(chain):
                    a = a + att[..., L + i:L + i + 1] * vc
                h, logits = self.finish(a, h)
                outs.append(logits)
            return outs

        def gguf_tensors(self, d2t: np.ndarray) -> dict[str, np.ndarray]:
            def put(p):
                return p.detach().float().cpu().numpy().copy()

            return {
                "token_embd.weight": put(self.tok_emb.weight), "fc.weight": put(self.fc.weight),
                "blk.0.attn_norm.weight": put(self.attn_norm.weight),
                "blk.0.attn_norm_2.weight": put(self.hidden_norm.weight),
                "blk.0.attn_q.weight": put(self.wq.weight), "blk.0.attn_k.weight": put(self.wk.weight),
                "blk.0.attn_v.weight": put(self.wv.weight),
                "blk.0.attn_output.weight": put(self.wo.weight),
                "blk.0.ffn_norm.weight": put(self.ffn_norm.weight),
                "blk.0.ffn_gate.weight": put(self.w_gate.weight),
                "blk.0.ffn_up.weight": put(self.w_up.weight),
                "blk.0.ffn_down.weight": put(self.w_down.weight),
                "output_norm.weight": put(self.norm.weight), "output.weight": put(self.out.weight),
                "d2t": np.asarray(d2t, dtype=np.int64),
            }

    return Eagle3Head()


def make_head(cfg: HeadConfig, d2t: np.ndarray, seed: int):
    """A fresh head; warm start from the demo draft (128 wide, tied): its token embeddings,
    output norm and the output rows of the reduced vocabulary."""
    import torch

    torch.manual_seed(seed)
    head = _head_module(cfg)
    if cfg.n_embd == DRAFT_CFG["dim"]:
        t = gguf_tensors(DRAFT)
        with torch.no_grad():
            head.tok_emb.weight.copy_(torch.from_numpy(t["token_embd.weight"]))
            head.out.weight.copy_(torch.from_numpy(t["token_embd.weight"][d2t]))
            head.norm.weight.copy_(torch.from_numpy(t["output_norm.weight"]))
    return head


# ------------------------------------------------------------------------------ stages
def _torch(threads: int):
    import torch

    torch.set_num_threads(threads)
    return torch


def stage_data(work: Path, args):
    """Token streams (llama.cpp's tokenizer of the target: the ids it runs on), the target's
    greedy continuations, and the reduced vocabulary."""
    torch = _torch(args.threads)
    train, held = demo_corpus.load_split()
    t0 = time.time()
    with gguf_export.LlamaCppModel(TARGET, vocab_only=True) as m:
        stream = np.concatenate([np.array([0] + m.tokenize(text), dtype=np.uint16) for _, text in train])
    np.save(work / "train.npy", stream)
    log(f"data: {len(train)} training files, {len(stream):,} tokens ({time.time() - t0:.0f}s)")
    t1 = time.time()
    selfgen = continuations(load_llama(TARGET, TARGET_CFG), stream, args, SEED)
    np.save(work / "selfgen.npy", selfgen)
    generated = selfgen[:, SELFGEN_PROMPT:].ravel()
    counts = np.bincount(stream, minlength=TARGET_CFG["vocab_size"]) + \
        np.bincount(generated, minlength=TARGET_CFG["vocab_size"])
    d2t = np.sort(np.argsort(-counts, kind="stable")[:N_DRAFT]).astype(np.int64)
    np.save(work / "d2t.npy", d2t)
    keep = np.zeros(TARGET_CFG["vocab_size"], bool)
    keep[d2t] = True
    save_json(work / "data.json", {
        "train_files": len(train), "train_tokens": int(len(stream)),
        "selfgen_sequences": len(selfgen), "selfgen_prompt": SELFGEN_PROMPT, "selfgen_length": SEQ,
        "selfgen_seconds": time.time() - t1, "n_draft": N_DRAFT,
        "coverage_train_tokens": float(keep[stream].mean()),
        "coverage_target_continuations": float(keep[generated].mean()),
        "seconds": time.time() - t0})
    log(f"data: {len(selfgen)} continuations; the {N_DRAFT} most frequent tokens cover "
        f"{keep[stream].mean():.1%} of the training tokens, {keep[generated].mean():.1%} of the "
        f"target's continuations")


def continuations(target, stream: np.ndarray, args, seed: int) -> np.ndarray:
    """The target's greedy continuations of random 64-token windows of ``stream`` to SEQ tokens
    (at most ``args.selfgen``, within ``args.selfgen_minutes``), seeded."""
    import torch

    rng = np.random.default_rng(seed)
    seqs, t0 = [], time.time()
    while len(seqs) < args.selfgen and time.time() - t0 < args.selfgen_minutes * 60:
        starts = rng.integers(0, len(stream) - SELFGEN_PROMPT, size=args.selfgen_batch)
        prompts = torch.from_numpy(np.stack([stream[s:s + SELFGEN_PROMPT] for s in starts]).astype(np.int64))
        seqs.extend(greedy_continue(target, prompts, SEQ).numpy().astype(np.uint16))
        log(f"  {len(seqs)} continuations ({time.time() - t0:.0f}s)")
    return np.stack(seqs)


def windows(stream: np.ndarray, selfgen: np.ndarray, batch: int, rng, corpus_share: float = 0.5):
    """Endless batches: random windows of the training stream (``corpus_share`` of each batch),
    the rest continuations."""
    import torch

    n_corpus = round(batch * corpus_share)
    while True:
        starts = rng.integers(0, len(stream) - SEQ, size=n_corpus)
        rows = rng.integers(0, len(selfgen), size=batch - n_corpus)
        w = np.concatenate([stream[starts[:, None] + np.arange(SEQ)], selfgen[rows]])
        yield torch.from_numpy(w.astype(np.int64))


def ttt_loss(head, target, tokens, d2t_t, n_steps: int = TTT_STEPS):
    """(loss, per-step accuracy): each step's cross-entropy with the target's softmax over the
    reduced vocabulary, weighted; the accuracy is the share of rows whose draft (the head's
    argmax, as a target id) is the target's own argmax."""
    import torch
    import torch.nn.functional as F

    with torch.no_grad(), torch.autocast("cpu", enabled=False):     # the target in F32
        feats, tl = target_states(target, tokens)
        best = tl.argmax(-1)
    outs = head(feats, tokens, n_steps)
    T = tokens.shape[1]
    loss, acc = 0.0, []
    for j, logits in enumerate(outs, start=1):
        n = T - j                                   # rows P = 0 .. T - 1 - j
        p = torch.softmax(tl[:, j:, :][..., d2t_t], -1)
        lq = F.log_softmax(logits[:, :n].float(), -1)
        loss = loss + STEP_WEIGHTS[j - 1] * -(p * lq).sum(-1).mean()
        acc.append((d2t_t[logits[:, :n].argmax(-1)] == best[:, j:]).float().mean().item())
    return loss / sum(STEP_WEIGHTS[:n_steps]), acc


def train_loop(head, target, batches, d2t_t, held, *, steps: int, minutes: float, lr: float,
               warmup: int, bf16: bool, save) -> dict:
    """AdamW, warm-up then cosine on progress = max(step / steps, elapsed / budget) (the machine
    is shared: the budget decides); held-out accuracy every 200 steps, when ``save``-ing."""
    import torch
    import demo_train

    decay = [p for p in head.parameters() if p.dim() >= 2]
    rest = [p for p in head.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95))
    t0, step, ema, history = time.time(), 0, None, []

    def progress():
        return max(step / steps, (time.time() - t0) / (minutes * 60))

    head.train()
    while progress() < 1.0:
        cur = demo_train.lr_at(progress(), step, lr, warmup)
        for g in opt.param_groups:
            g["lr"] = cur
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, acc = ttt_loss(head, target, next(batches), d2t_t)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        step += 1
        ema = acc if ema is None else [0.95 * e + 0.05 * a for e, a in zip(ema, acc)]
        if step % 25 == 0:
            log(f"  step {step}  loss {loss.item():.3f}  accuracy by step "
                + " ".join(f"{a:.3f}" for a in ema) + f"  lr {cur:.2e}  {time.time() - t0:.0f}s")
        if step % 200 == 0:
            history.append({"step": step, "seconds": time.time() - t0,
                            "held_out": _evaluate(head, target, held, d2t_t)})
            log(f"  held-out accuracy by step {history[-1]['held_out']}")
            save()
    head.eval()
    save()
    return {"steps": step, "max_steps": steps, "seconds": time.time() - t0, "lr": lr,
            "held_out_accuracy_by_step": _evaluate(head, target, held, d2t_t), "history": history}


def stage_train(work: Path, args):
    """Phase 1: half corpus windows, half continuations."""
    torch = _torch(args.threads)
    cfg = HeadConfig()
    d2t = np.load(work / "d2t.npy")
    stream, selfgen = np.load(work / "train.npy"), np.load(work / "selfgen.npy")
    target = load_llama(TARGET, TARGET_CFG)
    head = make_head(cfg, d2t, SEED)
    n_params = sum(p.numel() for p in head.parameters())
    log(f"train: {n_params:,} parameters, at most {args.steps} steps of {args.batch}x{SEQ}, "
        f"budget {args.minutes} min, {TTT_STEPS} training-time-test steps")
    stats = train_loop(head, target, windows(stream, selfgen, args.batch, np.random.default_rng(SEED + 1)),
                       torch.from_numpy(d2t), torch.from_numpy(_held_windows(work)), steps=args.steps,
                       minutes=args.minutes, lr=args.lr, warmup=30, bf16=not args.fp32,
                       save=lambda: torch.save(head.state_dict(), work / "head.pt"))
    stats.update({"batch": args.batch, "seq": SEQ, "seed": SEED, "tokens": stats["steps"] * args.batch * SEQ,
                  "bf16_autocast": not args.fp32, "threads": args.threads, "params": n_params,
                  "config": asdict(cfg), "corpus_share": 0.5})
    save_json(work / "train.json", stats)
    shutil.copy(work / "head.pt", work / "head1.pt")      # phase 1's head, where tune starts
    log(f"train: {stats['steps']} steps in {stats['seconds']:.0f}s; held-out accuracy by step "
        f"{stats['held_out_accuracy_by_step']}")


def stage_tune(work: Path, args):
    """Phase 2 (as the demo draft's): fresh continuations by the target (another seed), then
    training on continuations only, at a lower learning rate: what the head drafts against."""
    torch = _torch(args.threads)
    stream = np.load(work / "train.npy")
    target = load_llama(TARGET, TARGET_CFG)
    path = work / "selfgen2.npy"
    if not path.exists():
        t0 = time.time()
        np.save(path, continuations(target, stream, args, SEED + 7))
        save_json(work / "selfgen2.json", {"seconds": time.time() - t0})
    fresh = np.load(path)
    selfgen = np.concatenate([np.load(work / "selfgen.npy"), fresh])
    gen_s = load_json(work / "selfgen2.json")["seconds"]
    head, cfg, d2t = load_head(work, "head1.pt")
    log(f"tune: {len(fresh)} fresh continuations ({gen_s:.0f}s), {len(selfgen)} in all; at most "
        f"{args.tune_steps} steps, budget {args.tune_minutes} min")
    stats = train_loop(head, target, windows(stream, selfgen, args.batch, np.random.default_rng(SEED + 2), 0.0),
                       torch.from_numpy(d2t), torch.from_numpy(_held_windows(work)), steps=args.tune_steps,
                       minutes=args.tune_minutes, lr=args.tune_lr, warmup=10, bf16=not args.fp32,
                       save=lambda: torch.save(head.state_dict(), work / "head.pt"))
    stats.update({"fresh_continuations": len(fresh), "continuations": len(selfgen),
                  "generation_seconds": gen_s, "tokens": stats["steps"] * args.batch * SEQ,
                  "batch": args.batch, "corpus_share": 0.0})
    save_json(work / "tune.json", stats)
    log(f"tune: {stats['steps']} steps in {stats['seconds']:.0f}s; held-out accuracy by step "
        f"{stats['held_out_accuracy_by_step']}")


def _held_windows(work: Path, n: int = 16) -> np.ndarray:
    """Fixed windows of the held-out files (their tokens by llama.cpp), for the training log."""
    path = work / "held_windows.npy"
    if not path.exists():
        _, held = demo_corpus.load_split()
        with gguf_export.LlamaCppModel(TARGET, vocab_only=True) as m:
            docs = [[0] + m.tokenize(text) for _, text in held]
        rows = [d[:SEQ] for d in docs if len(d) >= SEQ][:n]
        np.save(path, np.array(rows, dtype=np.int64))
    return np.load(path)


def _evaluate(head, target, held, d2t_t) -> list[float]:
    import torch

    with torch.no_grad():
        _, acc = ttt_loss(head, target, held, d2t_t)
    return [round(a, 4) for a in acc]


# ------------------------------------------------------------------------------ export
def load_head(work: Path, name: str = "head.pt"):
    import torch

    cfg = HeadConfig()
    d2t = np.load(work / "d2t.npy")
    head = _head_module(cfg)
    head.load_state_dict(torch.load(work / name, map_location="cpu"))
    head.eval()
    return head, cfg, d2t


def write_head(path: Path, head, cfg: HeadConfig, d2t: np.ndarray, weight_type: str = "f16") -> Path:
    """The head in llama.cpp's eagle3 layout (what convert_hf_to_gguf.py writes for a head
    with token embeddings and an output head of its own), with the target's tokenizer."""
    gcfg = gguf_export.GGUFConfig(vocab_size=cfg.n_vocab, dim=cfg.n_embd, n_layers=1, n_heads=cfg.n_head,
                                  ffn_dim=cfg.n_ff, norm_eps=cfg.norm_eps, rope_base=cfg.rope_base)
    return gguf_export.write_llama_gguf(
        path, head.gguf_tensors(d2t), gcfg, gguf_export.vocab_from_gguf(TARGET),
        name="specscope-demo-eagle3-head", weight_type=weight_type, arch="eagle3",
        description="SpecScope demo EAGLE-3 head for demo-target (reads its layers 1, 2, 3), "
                    "trained with training-time test on the target's features.",
        metadata={"general.source.corpus": "CPython standard library (PSF License 2.0)"},
        arch_metadata={"eagle3.target_layers": list(cfg.target_layers),
                       "eagle3.target_hidden_size": cfg.n_embd_tgt,
                       "eagle3.norm_before_residual": False})


def export_check(head_path: Path, head, target, ids: list[int], d2t: np.ndarray, base: int = 60) -> dict:
    """llama.cpp against torch on one window: the target layers' inputs (SpecScope's staging
    module), g (the encoder), the decoder's logits over the reduced vocabulary on every pair, and
    two draft steps from position ``base`` (each fed the previous step's pre-norm state), as
    draft-eagle3 runs them. Max abs differences."""
    import torch
    from specscope.core.engine.engine import Engine, EngineSettings

    n = len(ids)
    with torch.no_grad():
        feats, _ = target_states(target, torch.tensor([ids]))
        outs = head(feats, torch.tensor([ids]), TTT_STEPS)
        g_ref = head.fc(feats)[0].numpy()
    settings = EngineSettings.deterministic(n_ctx=512, target_threads=1, draft_threads=1)
    with Engine(TARGET, head_path, settings) as engine:
        h, ctx = engine.head, engine.head.ctx
        engine.batch.fill(ids, 0, logits="last")
        engine.tgt.decode(engine.batch, "the check's window")
        f = h.features(n)
        g = h.encode(f)
        h.dec.clear()
        for k in range(n - 1):
            h.dec.add(ids[k + 1], k, g[k], output=True)
        ctx.process(h.dec, "the check's pairs")
        lg = ctx.logits(n - 1)[:, d2t]
        state = h.prenorm(base)
        steps = [lg[base]]
        for j in range(2, TTT_STEPS + 1):      # draft steps from the boundary at ``base``
            ctx.seq_rm(base + j - 1, -1)
            h.dec.clear()
            h.dec.add(ids[base + j], base + j - 1, state, output=True)
            ctx.process(h.dec, "a check's draft step")
            steps.append(ctx.logits(1)[0][d2t])
            state = h.prenorm(0)
    ref = [o[0].numpy() for o in outs]
    return {"features": float(np.abs(f - feats[0].numpy()).max()),
            "g": float(np.abs(g - g_ref).max()),
            "logits_pairs": float(np.abs(lg - ref[0]).max()),
            "logits_draft_steps": [float(np.abs(s - r[base]).max()) for s, r in zip(steps, ref)],
            "logit_range": [float(ref[0].min()), float(ref[0].max())],
            "same_argmax_pairs": float((lg.argmax(-1) == ref[0].argmax(-1)).mean()),
            "window_tokens": n, "base": base}


def stage_export(work: Path, args):
    torch = _torch(args.threads)
    head, cfg, d2t = load_head(work)
    target = load_llama(TARGET, TARGET_CFG)
    write_head(HEAD, head, cfg, d2t)
    f32 = write_head(work / "head-f32.gguf", head, cfg, d2t, weight_type="f32")
    ids = [int(t) for t in _held_windows(work)[0][:128]]
    report = {"file": HEAD.name, "bytes": HEAD.stat().st_size,
              "params": sum(p.numel() for p in head.parameters()),
              "check_f32": export_check(f32, head, target, ids, d2t),
              "check_f16": export_check(HEAD, head, target, ids, d2t),
              "models_dir_bytes": sum(p.stat().st_size for p in MODELS_DIR.iterdir() if p.is_file())}
    f32.unlink()
    save_json(work / "export.json", report)
    log(f"export: {HEAD.name} {report['bytes']:,} bytes, {report['params']:,} parameters; "
        f"llama.cpp vs torch: F32 {report['check_f32']}, F16 {report['check_f16']}")
    del torch


# ------------------------------------------------------------------------------ eval
EVAL_N = 3
EVAL_TOKENS = 128


def _spec_sums(results) -> dict:
    """Acceptance of speculative runs (RunResult), summed: by position (the share of drafts whose
    i-th token was accepted, SpecScope's figure), overall, the mean accepted length."""
    at = np.zeros(EVAL_N, np.int64)
    reached = np.zeros(EVAL_N, np.int64)
    rounds = drafted = accepted = 0
    for r in results:
        s = r.stats
        at[:len(s.accepted_at)] += s.accepted_at[:EVAL_N]
        reached[:len(s.drafted_at)] += s.drafted_at[:EVAL_N]
        rounds, drafted, accepted = rounds + s.n_draft_rounds, drafted + s.n_drafted, accepted + s.n_accept
    return {"by_position": (at / np.maximum(reached, 1)).tolist(), "drafted_at": reached.tolist(),
            "accepted_at": at.tolist(), "draft_rounds": rounds, "drafted": drafted, "accepted": accepted,
            "acceptance": accepted / max(drafted, 1), "mean_accepted_length": 1 + accepted / max(rounds, 1)}


def _speed(results) -> float:
    return sum(r.stats.n_tokens for r in results) / sum(r.stats.t_total for r in results)


def held_out_prompts() -> list[tuple[str, list[int]]]:
    """evaluate_demo.py's prompts: the first 128 tokens of each held-out file and of its middle
    (long files), llama.cpp's tokens, each starting with <|endoftext|>."""
    import evaluate_demo

    with gguf_export.LlamaCppModel(TARGET, vocab_only=True) as m:
        return list(evaluate_demo.held_out_prompts(evaluate_demo.held_out_token_docs(m)))


def compare_on(model: Path, types: tuple[str, ...], prompts, threads: int) -> dict:
    """Baseline and speculative runs (greedy, n = 3, p_min 0) of every prompt, and the lossless
    check of each, in SpecScope's engine."""
    from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
    from specscope.core.engine.sampling import SamplerSettings
    from specscope.core.measure.bench.lossless import compare

    spec = SpecSettings(types=types, n_max=EVAL_N, p_min=0.0)
    settings = EngineSettings(n_ctx=512, target_threads=threads, draft_threads=threads)
    base, runs, diverged = [], [], []
    with Engine(TARGET, model, settings) as engine:
        for rel, prompt in prompts:
            c = compare(engine, prompt, spec, SamplerSettings(), EVAL_TOKENS)
            base.append(c.baseline)
            runs.append(c.spec)
            if not c.lossless.identical:
                diverged.append({"file": rel, "verdict": c.lossless.verdict,
                                 "describe": c.lossless.describe()})
    return {**_spec_sums(runs), "prompts": len(prompts), "tokens_per_s": _speed(runs),
            "baseline_tokens_per_s": _speed(base), "lossless_identical": len(prompts) - len(diverged),
            "lossless_other": diverged}


def cost_per_draft_token(threads: int, reps: int = 5, n: int = 200) -> dict:
    """Seconds per draft token (best of ``reps`` loops of ``n``, each back at the same position
    after a 64-token prompt): the target's single-token decode with its logits; the demo draft's;
    the head's draft step (a pair with its g, the logits row and the pre-norm state read back,
    as draft-eagle3 does); and the head's share of a verified round at n = 3 (the encoder on 4
    rows and 3 decoder pairs: ``process``). The clock is the process's CPU time: on a machine
    shared with other work, wall time counts the time other processes run (the target's decode
    measured 237 and 624 µs of wall time in two runs an hour apart)."""
    from specscope.core.engine.engine import Engine, EngineSettings

    prompt = [0] + [int(t) for t in _held_windows(WORK)[1][1:64]]
    settings = EngineSettings(n_ctx=512, target_threads=threads, draft_threads=threads)
    clock = time.process_time

    def best(fn) -> float:
        out = []
        for _ in range(reps):
            t0 = clock()
            for _ in range(n):
                fn()
            out.append((clock() - t0) / n)
        return min(out)

    res = {}
    with gguf_export.LlamaCppModel(TARGET, n_ctx=512, n_threads=threads) as t, \
            gguf_export.LlamaCppModel(DRAFT, n_ctx=512, n_threads=threads) as d:
        for name, m in (("target", t), ("draft", d)):
            m.decode(prompt, 0)
            res[name] = best(lambda m=m: (m.decode([prompt[5]], 64), m.clear(64)))
    with Engine(TARGET, HEAD, settings) as engine:
        h, ctx = engine.head, engine.head.ctx
        engine.batch.fill(prompt, 0, logits="last")
        engine.tgt.decode(engine.batch, "the timing prompt")
        g = h.encode(h.features(len(prompt)))
        h.dec.clear()
        for k in range(len(prompt) - 1):
            h.dec.add(prompt[k + 1], k, g[k])
        ctx.process(h.dec, "the timing prompt's pairs")
        state = g[-1].copy()
        feats = h.features(len(prompt))[-4:].copy()

        def step():
            h.dec.clear()
            h.dec.add(prompt[5], 63, state, output=True)
            ctx.process(h.dec, "a timed draft step")
            ctx.logits(1)
            h.prenorm(0)
            ctx.seq_rm(63, -1)

        def process():
            gg = h.encode(feats)
            h.dec.clear()
            for k in range(3):
                h.dec.add(prompt[k + 1], 63 + k, gg[k])
            ctx.process(h.dec, "timed pairs")
            ctx.seq_rm(63, -1)

        res["head_draft_step"] = best(step)
        res["head_process_n3"] = best(process)
    res["head_to_target"] = res["head_draft_step"] / res["target"]
    res["draft_to_target"] = res["draft"] / res["target"]
    res["head_to_draft"] = res["head_draft_step"] / res["draft"]
    res.update(threads=threads, reps=reps, n=n)
    return res


def stage_eval(work: Path, args):
    prompts = held_out_prompts()
    if args.eval_prompts:
        prompts = prompts[:args.eval_prompts]
    t0 = time.time()
    res = {"n_max": EVAL_N, "p_min": 0.0, "tokens": EVAL_TOKENS, "threads": args.threads,
           "head": compare_on(HEAD, ("draft-eagle3",), prompts, args.threads)}
    log(f"eval: head {_line(res['head'])} ({time.time() - t0:.0f}s)")
    res["draft"] = compare_on(DRAFT, ("draft-simple",), prompts, args.threads)
    log(f"eval: draft {_line(res['draft'])} ({time.time() - t0:.0f}s)")
    res["cost"] = cost_per_draft_token(args.threads)
    c = res["cost"]
    log(f"eval: per draft token: target {c['target'] * 1e6:.0f} µs, draft {c['draft'] * 1e6:.0f} µs, "
        f"head {c['head_draft_step'] * 1e6:.0f} µs (head/target {c['head_to_target']:.2f}, "
        f"draft/target {c['draft_to_target']:.2f}); head's process of a round at n = 3 "
        f"{c['head_process_n3'] * 1e6:.0f} µs")
    res["seconds"] = time.time() - t0
    save_json(work / "eval.json", res)


def _line(r) -> str:
    return (f"acceptance by position " + " · ".join(f"{a:.1%}" for a in r["by_position"])
            + f", {r['acceptance']:.1%} of {r['drafted']} drafted, mean accepted length "
            f"{r['mean_accepted_length']:.2f}, {r['tokens_per_s']:.0f} tokens/s (target alone "
            f"{r['baseline_tokens_per_s']:.0f}), lossless {r['lossless_identical']}/{r['prompts']}")


# ------------------------------------------------------------------------------ main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work-dir", default=str(WORK))
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1: on a shared 2-core machine, 2 threads ran 3-15x slower)")
    ap.add_argument("--selfgen", type=int, default=4096, help="the target's continuations, at most")
    ap.add_argument("--selfgen-minutes", type=float, default=5)
    ap.add_argument("--selfgen-batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--minutes", type=float, default=35)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--tune-steps", type=int, default=2000)
    ap.add_argument("--tune-minutes", type=float, default=20)
    ap.add_argument("--tune-lr", type=float, default=1e-3)
    ap.add_argument("--fp32", action="store_true", help="train without bf16 autocast")
    ap.add_argument("--eval-prompts", type=int, default=None, help="only the first N prompts (a quick check)")
    args = ap.parse_args(argv)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    for s in stages:
        if s not in STAGES:
            ap.error(f"unknown stage {s!r}")
    timings = load_json(work / "timings.json") if (work / "timings.json").exists() else {}
    for s in STAGES:
        if s not in stages:
            continue
        t0 = time.time()
        log(f"== stage {s}")
        globals()[f"stage_{s}"](work, args)
        timings[s] = time.time() - t0
        save_json(work / "timings.json", timings)


if __name__ == "__main__":
    main()
