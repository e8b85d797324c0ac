"""Export a llama-architecture model (numpy weights) to GGUF, and check it.

Needs only numpy, ``gguf`` and (for the checks) ``llama_cpp``; no torch. The
build script (build_demo_models.py) and the CI smoke test
(tests/test_demo_export.py) both use it; tests load it by file path because
``packaging/`` is deliberately not an importable package (it would shadow the
PyPI ``packaging`` library).

Conventions (see demo_train.py): tensors use llama.cpp's GGUF names and numpy
shape (out_features, in_features); RoPE is the adjacent-pair ("normal")
layout, so Q/K need no permutation.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

EOT_TEXT = "<|endoftext|>"
# llama.cpp pre-tokenizer name. "trillion" selects exactly the GPT-2 regex
# (LLAMA_VOCAB_PRE_TYPE_TRILLION shares the GPT2 case in llama-vocab.cpp) that
# HF ByteLevel(use_regex=True) uses, and it also sets clean_spaces = false, so
# llama_detokenize() returns the exact text (with "gpt-2" llama.cpp would turn
# " 's" into "'s" and " ." into ".", which breaks Python source).
PRE_TOKENIZER = "trillion"


@dataclass
class GGUFVocab:
    tokens: list[str]
    merges: list[str]
    token_types: list[int]
    bos_id: int = 0
    eos_id: int = 0
    add_bos: bool = True
    add_eos: bool = False
    model: str = "gpt2"
    pre: str = PRE_TOKENIZER

    @classmethod
    def from_hf_json(cls, tokenizer_json: dict) -> "GGUFVocab":
        """Build from a HF ``tokenizers`` BPE tokenizer.json (already parsed)."""
        m = tokenizer_json["model"]
        vocab = m["vocab"]
        tokens = [None] * len(vocab)
        for t, i in vocab.items():
            tokens[i] = t
        specials = {a["content"]: a["id"] for a in tokenizer_json.get("added_tokens", [])}
        for a in tokenizer_json.get("added_tokens", []):
            if a["id"] >= len(tokens):
                tokens.extend([None] * (a["id"] + 1 - len(tokens)))
            tokens[a["id"]] = a["content"]
        if any(t is None for t in tokens):
            raise ValueError("token ids are not contiguous")
        merges = [mm if isinstance(mm, str) else f"{mm[0]} {mm[1]}" for mm in m["merges"]]
        types = [3 if t in specials else 1 for t in tokens]  # 3 = CONTROL, 1 = NORMAL
        eot = specials[EOT_TEXT]
        return cls(tokens=tokens, merges=merges, token_types=types, bos_id=eot, eos_id=eot)


@dataclass
class GGUFConfig:
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    ffn_dim: int
    n_kv_heads: int | None = None
    norm_eps: float = 1e-5
    rope_base: float = 10000.0
    context_length: int = 2048
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.n_kv_heads is None:
            self.n_kv_heads = self.n_heads

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @classmethod
    def from_dict(cls, d: dict) -> "GGUFConfig":
        keys = {"vocab_size", "dim", "n_layers", "n_heads", "ffn_dim", "n_kv_heads",
                "norm_eps", "rope_base", "context_length"}
        return cls(**{k: v for k, v in d.items() if k in keys})


def write_llama_gguf(
    path: str | Path,
    tensors: dict[str, np.ndarray],
    cfg: GGUFConfig,
    vocab: GGUFVocab,
    *,
    name: str,
    weight_type: str = "f16",
    description: str = "",
    metadata: dict[str, str] | None = None,
    arch: str = "llama",
    arch_metadata: dict | None = None,
) -> Path:
    """Write a llama GGUF. 2-D tensors in ``weight_type`` ("f16" or "f32"),
    1-D tensors (norms) always F32, integer tensors as they are. ``arch``: another
    llama-style architecture (``eagle3``: an EAGLE-3 head, with one block, its ``d2t``
    table as I64 and its keys in ``arch_metadata``: lists, booleans, unsigned integers)."""
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(vocab.tokens) != cfg.vocab_size:
        raise ValueError(f"vocab has {len(vocab.tokens)} tokens, config says {cfg.vocab_size}")
    if vocab.model == "gpt2" and not vocab.merges:
        raise ValueError("a gpt2 (BPE) vocabulary needs at least one merge for llama.cpp to load it")
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    if description:
        w.add_description(description)
    for k, v in (metadata or {}).items():
        w.add_string(k, v)
    for k, v in (arch_metadata or {}).items():
        (w.add_array if isinstance(v, (list, tuple)) else w.add_bool if isinstance(v, bool)
         else w.add_uint32)(k, list(v) if isinstance(v, tuple) else v)
    w.add_context_length(cfg.context_length)
    w.add_embedding_length(cfg.dim)
    w.add_block_count(cfg.n_layers)
    w.add_feed_forward_length(cfg.ffn_dim)
    w.add_head_count(cfg.n_heads)
    w.add_head_count_kv(cfg.n_kv_heads)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_rope_freq_base(cfg.rope_base)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if weight_type == "f16" else gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model(vocab.model)
    w.add_tokenizer_pre(vocab.pre)
    w.add_token_list(vocab.tokens)
    w.add_token_types(vocab.token_types)
    w.add_token_merges(vocab.merges)
    w.add_bos_token_id(vocab.bos_id)
    w.add_eos_token_id(vocab.eos_id)
    w.add_add_bos_token(vocab.add_bos)
    w.add_add_eos_token(vocab.add_eos)
    for tname in sorted(tensors, key=_tensor_order):
        arr = np.asarray(tensors[tname])
        if arr.dtype.kind in "iu":
            pass
        elif arr.ndim >= 2 and weight_type == "f16":
            arr = arr.astype(np.float16)
        else:
            arr = arr.astype(np.float32)
        w.add_tensor(tname, np.ascontiguousarray(arr))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def vocab_from_gguf(path: str | Path) -> GGUFVocab:
    """The tokenizer a GGUF carries (to give a model made for it, such as an EAGLE-3 head, the
    same one)."""
    import gguf

    f = gguf.GGUFReader(str(path)).fields

    def one(key):
        field = f[key]
        v = field.parts[field.data[0]]
        return bytes(v).decode() if field.types[0] == gguf.GGUFValueType.STRING else v[0].item()

    def strings(key):
        field = f[key]
        return [bytes(field.parts[i]).decode() for i in field.data]

    return GGUFVocab(tokens=strings("tokenizer.ggml.tokens"), merges=strings("tokenizer.ggml.merges"),
                     token_types=[int(f["tokenizer.ggml.token_type"].parts[i][0])
                                  for i in f["tokenizer.ggml.token_type"].data],
                     bos_id=one("tokenizer.ggml.bos_token_id"), eos_id=one("tokenizer.ggml.eos_token_id"),
                     add_bos=bool(one("tokenizer.ggml.add_bos_token")),
                     add_eos=bool(one("tokenizer.ggml.add_eos_token")),
                     model=one("tokenizer.ggml.model"), pre=one("tokenizer.ggml.pre"))


def _tensor_order(name: str):
    if name.startswith("token_embd"):
        return (0, 0, name)
    if name.startswith("blk."):
        return (1, int(name.split(".")[1]), name)
    return (2, 0, name)


# ---------------------------------------------------------------- reference


def _rmsnorm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x, pos, base):
    # x: (T, H, hd), adjacent pairs rotated (llama.cpp "normal" RoPE)
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None].astype(np.float64) * inv[None, :]  # (T, hd/2)
    c = np.cos(ang)[:, None, :]
    s = np.sin(ang)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def reference_forward(tensors: dict[str, np.ndarray], cfg: GGUFConfig, ids) -> np.ndarray:
    """float64 numpy forward of the llama graph; returns logits (T, vocab)."""
    t = {k: np.asarray(v, dtype=np.float64) for k, v in tensors.items()}
    ids = np.asarray(ids)
    T = len(ids)
    pos = np.arange(T)
    H, KV, hd = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    x = t["token_embd.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(cfg.n_layers):
        p = f"blk.{i}."
        h = _rmsnorm(x, t[p + "attn_norm.weight"], cfg.norm_eps)
        q = (h @ t[p + "attn_q.weight"].T).reshape(T, H, hd)
        k = (h @ t[p + "attn_k.weight"].T).reshape(T, KV, hd)
        v = (h @ t[p + "attn_v.weight"].T).reshape(T, KV, hd)
        q, k = _rope(q, pos, cfg.rope_base), _rope(k, pos, cfg.rope_base)
        rep = H // KV
        k = np.repeat(k, rep, axis=1)
        v = np.repeat(v, rep, axis=1)
        att = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        a = np.einsum("hts,shd->thd", att, v).reshape(T, H * hd)
        x = x + a @ t[p + "attn_output.weight"].T
        h = _rmsnorm(x, t[p + "ffn_norm.weight"], cfg.norm_eps)
        g = h @ t[p + "ffn_gate.weight"].T
        u = h @ t[p + "ffn_up.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * u) @ t[p + "ffn_down.weight"].T
    x = _rmsnorm(x, t["output_norm.weight"], cfg.norm_eps)
    out = t.get("output.weight", t["token_embd.weight"])
    return x @ out.T


def random_tensors(cfg: GGUFConfig, seed: int = 0, tie: bool = False, scale: float = 0.2) -> dict[str, np.ndarray]:
    """Random llama weights under GGUF names (for smoke tests)."""
    rng = np.random.default_rng(seed)
    hd = cfg.head_dim

    def m(o, i):
        return (rng.standard_normal((o, i)) * scale / np.sqrt(i) * 4).astype(np.float32)

    t = {"token_embd.weight": (rng.standard_normal((cfg.vocab_size, cfg.dim))).astype(np.float32)}
    for i in range(cfg.n_layers):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = (1 + 0.1 * rng.standard_normal(cfg.dim)).astype(np.float32)
        t[p + "attn_q.weight"] = m(cfg.n_heads * hd, cfg.dim)
        t[p + "attn_k.weight"] = m(cfg.n_kv_heads * hd, cfg.dim)
        t[p + "attn_v.weight"] = m(cfg.n_kv_heads * hd, cfg.dim)
        t[p + "attn_output.weight"] = m(cfg.dim, cfg.n_heads * hd)
        t[p + "ffn_norm.weight"] = (1 + 0.1 * rng.standard_normal(cfg.dim)).astype(np.float32)
        t[p + "ffn_gate.weight"] = m(cfg.ffn_dim, cfg.dim)
        t[p + "ffn_up.weight"] = m(cfg.ffn_dim, cfg.dim)
        t[p + "ffn_down.weight"] = m(cfg.dim, cfg.ffn_dim)
    t["output_norm.weight"] = (1 + 0.1 * rng.standard_normal(cfg.dim)).astype(np.float32)
    if not tie:
        t["output.weight"] = m(cfg.vocab_size, cfg.dim)
    return t


def byte_level_vocab(n_merged: int = 0) -> GGUFVocab:
    """A valid gpt2-style byte-level vocabulary without real merges:
    ``<|endoftext|>`` + the 256 byte symbols (+ ``n_merged`` merged pairs of
    the first symbols, to reach a chosen size). For smoke tests."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    syms = [chr(c) for c in cs]
    tokens = [EOT_TEXT] + syms
    merges = []
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    for i in range(n_merged):
        a, b = letters[i // 26 % 26], letters[i % 26]
        merges.append(f"{a} {b}")
        tokens.append(a + b)
    types = [3] + [1] * (len(tokens) - 1)
    return GGUFVocab(tokens=tokens, merges=merges, token_types=types, bos_id=0, eos_id=0)


# ----------------------------------------------------------- llama.cpp side


class LlamaCppModel:
    """Load, tokenize, detokenize and decode with logits, over SpecScope's own owners of
    llama.cpp handles (specscope.core.models.llama), which also route llama.cpp's log to Python
    logging. Deterministic numerics: flash attention off, F32 KV cache."""

    def __init__(self, path: str | Path, n_ctx: int = 1024, n_threads: int = 2, vocab_only: bool = False):
        from specscope.core.models.llama import Batch, Context, ContextSettings, Model

        self._model = Model(path, vocab_only=vocab_only)
        self.vocab = self._model.vocab
        self.n_vocab = self._model.n_vocab
        self._ctx = self._batch = None
        if not vocab_only:
            self.n_ctx = n_ctx
            self._ctx = Context(self._model, ContextSettings.deterministic(
                n_ctx=n_ctx, n_batch=n_ctx, n_threads=n_threads))
            self._batch = Batch(n_ctx)

    def close(self):
        for handle in (self._batch, self._ctx, self._model):   # context before model
            if handle is not None:
                handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    # -- vocabulary
    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = False) -> list[int]:
        return self._model.tokenize(text, add_special=add_special, parse_special=parse_special)

    def detokenize(self, ids, remove_special: bool = False, unparse_special: bool = False) -> str:
        import llama_cpp as L

        arr = (L.llama_token * max(1, len(ids)))(*ids)
        n = len(ids) * 64 + 16
        buf = ctypes.create_string_buffer(n)
        r = L.llama_detokenize(self.vocab, arr, len(ids), buf, n, remove_special, unparse_special)
        if r < 0:
            n = -r + 1
            buf = ctypes.create_string_buffer(n)
            r = L.llama_detokenize(self.vocab, arr, len(ids), buf, n, remove_special, unparse_special)
        return buf.raw[:r].decode("utf-8", errors="replace")

    def piece(self, tok: int) -> bytes:
        return self._model.piece(tok)

    # -- decoding
    def clear(self, p0: int = 0):
        self._ctx.seq_rm(p0, -1)

    def decode(self, ids, pos0: int, all_logits: bool = False) -> np.ndarray:
        """Decode ``ids`` at positions pos0.. ; return logits rows (n, vocab)
        for every token (all_logits) or just the last one (1, vocab)."""
        self._batch.fill([int(t) for t in ids], pos0, logits="all" if all_logits else "last")
        self._ctx.decode(self._batch, f"{len(ids)} tokens")
        return self._ctx.logits(len(ids) if all_logits else 1).copy()


def llama_cpp_logits(path: str | Path, ids, n_ctx: int = 512) -> np.ndarray:
    """llama.cpp logits for every position of ``ids`` (one batch)."""
    with LlamaCppModel(path, n_ctx=max(n_ctx, len(ids))) as m:
        return m.decode(list(ids), 0, all_logits=True)
