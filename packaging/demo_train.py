"""A minimal llama-architecture model in torch, and its training loops.

Needs the optional ``train`` extra (torch). The model is written so that its
weights export to GGUF without any permutation:

* RoPE rotates adjacent pairs (2i, 2i+1) of each head, which is llama.cpp's
  "normal" RoPE layout (LLAMA_ROPE_TYPE_NORM, used by architecture ``llama``).
  HF transformers' Llama rotates halves instead and its converter therefore
  permutes Q/K rows; a model trained in the pair layout needs no permutation.
* RMSNorm, SwiGLU feed-forward, no biases, optional tied output head (the GGUF
  then omits ``output.weight`` and llama.cpp reuses ``token_embd.weight``).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    ffn_dim: int
    n_kv_heads: int | None = None
    norm_eps: float = 1e-5
    rope_base: float = 10000.0
    tie_embeddings: bool = False
    context_length: int = 2048

    def __post_init__(self):
        if self.n_kv_heads is None:
            self.n_kv_heads = self.n_heads

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (xf * self.weight.float()).type_as(x)


def rope_tables(head_dim: int, max_len: int, base: float):
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    t = torch.arange(max_len, dtype=torch.float64)
    ang = torch.outer(t, inv)  # (T, hd/2)
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    # x: (B, H, T, hd) ; rotate adjacent pairs (llama.cpp "normal" layout)
    x0 = x[..., 0::2].float()
    x1 = x[..., 1::2].float()
    c = cos[: x.shape[-2]]
    s = sin[: x.shape[-2]]
    r0 = x0 * c - x1 * s
    r1 = x0 * s + x1 * c
    return torch.stack((r0, r1), dim=-1).flatten(-2).type_as(x)


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        hd = cfg.head_dim
        self.attn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.n_heads * hd, cfg.dim, bias=False)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.w_gate = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_down = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        cfg = self.cfg
        hd = cfg.head_dim
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, cfg.n_heads, hd).transpose(1, 2)
        k = self.wk(h).view(B, T, cfg.n_kv_heads, hd).transpose(1, 2)
        v = self.wv(h).view(B, T, cfg.n_kv_heads, hd).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        if cfg.n_kv_heads != cfg.n_heads:
            rep = cfg.n_heads // cfg.n_kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(B, T, -1))
        h = self.ffn_norm(x)
        x = x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))
        return x


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig, max_len: int = 1024):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        if cfg.tie_embeddings:
            self.out = None
        else:
            self.out = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg.head_dim, max_len, cfg.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)
        for b in self.blocks:  # scaled init of residual projections
            nn.init.normal_(b.wo.weight, std=0.02 / math.sqrt(2 * cfg.n_layers))
            nn.init.normal_(b.w_down.weight, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        x = self.tok_emb(idx)
        for b in self.blocks:
            x = b(x, self.rope_cos, self.rope_sin)
        x = self.norm(x)
        w = self.tok_emb.weight if self.out is None else self.out.weight
        return F.linear(x, w)

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def gguf_tensors(self) -> dict[str, np.ndarray]:
        """Weights under llama.cpp's GGUF tensor names, as float32 numpy arrays.

        numpy shape = torch shape (out_features, in_features); the gguf writer
        stores it so that llama.cpp sees ne = (in, out), as it expects.
        """
        t = {}

        def put(name, p):
            t[name] = p.detach().float().cpu().numpy().copy()

        put("token_embd.weight", self.tok_emb.weight)
        for i, b in enumerate(self.blocks):
            put(f"blk.{i}.attn_norm.weight", b.attn_norm.weight)
            put(f"blk.{i}.attn_q.weight", b.wq.weight)
            put(f"blk.{i}.attn_k.weight", b.wk.weight)
            put(f"blk.{i}.attn_v.weight", b.wv.weight)
            put(f"blk.{i}.attn_output.weight", b.wo.weight)
            put(f"blk.{i}.ffn_norm.weight", b.ffn_norm.weight)
            put(f"blk.{i}.ffn_gate.weight", b.w_gate.weight)
            put(f"blk.{i}.ffn_up.weight", b.w_up.weight)
            put(f"blk.{i}.ffn_down.weight", b.w_down.weight)
        put("output_norm.weight", self.norm.weight)
        if self.out is not None:
            put("output.weight", self.out.weight)
        return t


def batches(stream: np.ndarray, seq_len: int, batch: int, seed: int):
    """Endless random windows (x, y) from a token stream (1-D), or random
    rows of a 2-D array of sequences, seeded."""
    rng = np.random.default_rng(seed)
    if stream.ndim == 2:  # rows of fixed-length sequences: random rows
        while True:
            rows = rng.integers(0, len(stream), size=batch)
            w = torch.from_numpy(stream[rows, : seq_len + 1].astype(np.int64))
            yield w[:, :-1], w[:, 1:]
    n = len(stream) - seq_len - 1
    while True:
        starts = rng.integers(0, n, size=batch)
        w = np.stack([stream[s : s + seq_len + 1] for s in starts]).astype(np.int64)
        w = torch.from_numpy(w)
        yield w[:, :-1], w[:, 1:]


def lr_at(progress: float, step: int, peak: float, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine from ``peak`` to
    0.1 * peak as ``progress`` goes from 0 to 1."""
    if step < warmup:
        return peak * (step + 1) / warmup
    p = min(1.0, max(0.0, progress))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def train(
    model: Llama,
    stream: np.ndarray,
    *,
    steps: int,
    seq_len: int,
    batch: int,
    lr: float,
    seed: int,
    teacher: Llama | None = None,
    distill_weight: float = 0.7,
    time_budget_s: float | None = None,
    log=print,
    log_every: int = 25,
    bf16: bool = True,
    warmup: int = 20,
) -> dict:
    """Train with AdamW and a cosine schedule. With ``teacher``, the loss is
    ``distill_weight * KL(teacher || model) + (1 - distill_weight) * CE``.

    The schedule runs on progress = max(step / steps, elapsed / time_budget_s):
    training stops at ``steps`` or when the time budget is spent, whichever
    comes first, and the learning rate is annealed properly either way (the
    machine is shared, so step times vary). Batches and initialisation are
    seeded; the number of steps reached depends on the machine's speed.
    """
    torch.manual_seed(seed)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), eps=1e-8,
    )
    it = batches(stream, seq_len, batch, seed)
    model.train()
    if teacher is not None:
        teacher.eval()
    t0 = time.time()
    tokens = 0
    ema = None
    step = 0

    def progress():
        p = step / steps
        if time_budget_s:
            p = max(p, (time.time() - t0) / time_budget_s)
        return p

    cur_lr = lr_at(0.0, 0, lr, warmup)
    while progress() < 1.0:
        x, y = next(it)
        cur_lr = lr_at(progress(), step, lr, warmup)
        for g in opt.param_groups:
            g["lr"] = cur_lr
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
            ce = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.reshape(-1))
            if teacher is not None:
                with torch.no_grad():
                    tl = teacher(x).float()
                lp = F.log_softmax(logits.float(), -1)
                tp = F.log_softmax(tl, -1)
                kl = (tp.exp() * (tp - lp)).sum(-1).mean()
                loss = distill_weight * kl + (1 - distill_weight) * ce
            else:
                loss = ce
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += x.numel()
        ema = ce.item() if ema is None else 0.95 * ema + 0.05 * ce.item()
        step += 1
        if step % log_every == 0:
            el = time.time() - t0
            log(f"  step {step} (of at most {steps})  ce {ema:.3f}  lr {cur_lr:.2e}  "
                f"{tokens / el:.0f} tok/s  {el:.0f}s  progress {progress():.2f}")
    el = time.time() - t0
    log(f"  stopped at step {step}  ce {ema:.3f}  {el:.0f}s")
    model.eval()
    return {"steps": step, "max_steps": steps, "tokens": tokens, "seconds": el, "final_ce_ema": ema,
            "time_budget_s": time_budget_s}


@torch.no_grad()
def eval_ce(model: Llama, docs: list[np.ndarray], seq_len: int, bf16: bool = False,
            max_windows: int | None = None) -> tuple[float, int]:
    """Mean next-token cross-entropy (nats) over documents, in windows
    (the first ``max_windows`` windows when given)."""
    model.eval()
    tot, n = 0.0, 0
    wins = [(d, s) for d in docs for s in range(0, len(d) - 1, seq_len)]
    if max_windows is not None:
        wins = wins[:max_windows]
    for d, s in wins:
        w = torch.from_numpy(d[s : s + seq_len + 1].astype(np.int64))[None]
        if w.shape[1] < 2:
            continue
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            lg = model(w[:, :-1]).float()
        tot += F.cross_entropy(lg[0], w[0, 1:], reduction="sum").item()
        n += w.shape[1] - 1
    return tot / max(n, 1), n
