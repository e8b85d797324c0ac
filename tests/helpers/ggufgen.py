"""Tiny GGUF models for tests, written with the `gguf` package.

Real llama.cpp loads and runs them; the weights are random (seeded) unless a
caller passes its own. Vocabularies are byte-level BPE (llama.cpp model
``gpt2``): the 256 byte tokens, a few merges, and ``<|endoftext|>`` last.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

MERGES = ["Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t",
          "Ġ w", "Ġ o", "e n", "Ġ c", "i s", "i t", "o r", "e s", "Ġ f", "Ġ d",
          "d e", "Ġd e", "Ġde f", "Ġ (", "Ġ =", "Ġ r", "Ġr e", "Ġre t", "u r", "Ġret ur",
          "Ġretur n", "Ġ i", "Ġi n", "Ġ p", "s e", "Ġ n", "Ċ Ġ", "ĊĠ Ġ", "ĊĠĠ Ġ", "ĊĠĠĠ Ġ"]
EOT = "<|endoftext|>"


def byte_tokens() -> list[str]:
    """GPT-2's bytes_to_unicode, in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def bpe_vocab(extra_merges: int = len(MERGES), n_vocab: int | None = None) -> tuple[list[str], list[str]]:
    """n_vocab: pad with word pieces ``w0``, ``w1`` … (never produced by the merges) to that
    size, ``<|endoftext|>`` still last: a large vocabulary for benchmarks."""
    tokens = byte_tokens()
    merges = MERGES[:extra_merges]
    for m in merges:
        a, b = m.split(" ")
        tokens.append(a + b)
    if n_vocab is not None:
        tokens += [f"w{i}" for i in range(n_vocab - 1 - len(tokens))]
    tokens.append(EOT)
    return tokens, merges


SPM_PIECES = ["▁", "▁t", "▁a", "he", "▁the", "in", "er", "▁def", "▁(", "▁=", "▁return", "▁in",
              "▁hello", "▁world", "ing", "on"]


def spm_vocab(specials=()) -> list[str]:
    """A SentencePiece-style vocabulary (llama.cpp model ``llama``): <unk>, <s>, </s>, the 256
    byte tokens <0x00>..<0xFF> (byte fallback), ``▁``-word pieces, the letters, ``specials``,
    and <|endoftext|> last. Anything else (line breaks, CJK, emoji) becomes byte tokens."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("(),.:=")
    return (["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + SPM_PIECES
            + letters + list(specials) + [EOT])


def _token_type(text: str, model: str) -> int:
    if text.startswith("<|") and text.endswith("|>"):
        return gguf.TokenType.CONTROL
    if model == "llama":
        if len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            return gguf.TokenType.BYTE
        if text in ("<s>", "</s>"):
            return gguf.TokenType.CONTROL
        if text == "<unk>":
            return gguf.TokenType.UNKNOWN
    return gguf.TokenType.NORMAL


def write_tokenizer(w: gguf.GGUFWriter, tokens: list[str], merges: list[str], *,
                    model: str = "gpt2", bos: int | None = None, eos: int | None = None,
                    add_bos: bool = True, chat_template: str | None = None) -> None:
    """``<|…|>`` tokens are control tokens; with ``model="llama"`` also <s>, </s> (and <unk>,
    <0xNN> byte tokens get their SentencePiece types)."""
    eot = len(tokens) - 1
    w.add_tokenizer_model(model)
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    types = [_token_type(t, model) for t in tokens]
    types[eot] = gguf.TokenType.CONTROL
    w.add_token_types(types)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    if model == "llama":
        w.add_token_scores([-float(i) for i in range(len(tokens))])
    else:
        w.add_token_merges(merges)
    if model in ("none", "no_vocab"):      # llama.cpp then takes the size from {arch}.vocab_size
        w.add_vocab_size(len(tokens))
    w.add_bos_token_id(eot if bos is None else bos)
    w.add_eos_token_id(eot if eos is None else eos)
    w.add_add_bos_token(add_bos)


def llama_weights(n_vocab: int, n_embd: int = 64, n_layer: int = 2, n_ff: int = 128,
                  n_head: int = 4, n_head_kv: int = 2, seed: int = 0,
                  scale: float = 0.25) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mat = _random_matrix(rng, scale)
    w = {"token_embd.weight": (rng.standard_normal((n_vocab, n_embd))).astype(np.float32),
         "output_norm.weight": np.ones(n_embd, np.float32),
         "output.weight": mat(n_vocab, n_embd)}
    for i in range(n_layer):
        w[f"blk.{i}.attn_norm.weight"] = np.ones(n_embd, np.float32)
        _attention(w, i, mat, n_embd, n_head_kv * (n_embd // n_head))
        _feed_forward(w, i, mat, n_embd, n_ff)
    return w


def _random_matrix(rng, scale: float):
    """mat(out, inp): a random float32 matrix whose rows keep the input's scale."""
    def mat(out, inp):
        return (rng.standard_normal((out, inp)) * scale / np.sqrt(inp) * 4).astype(np.float32)
    return mat


def _attention(w: dict, i: int, mat, n_embd: int, n_kv: int) -> None:
    """Block i's attention projections (q, k, v, output), drawn in that order."""
    w[f"blk.{i}.attn_q.weight"] = mat(n_embd, n_embd)
    w[f"blk.{i}.attn_k.weight"] = mat(n_kv, n_embd)
    w[f"blk.{i}.attn_v.weight"] = mat(n_kv, n_embd)
    w[f"blk.{i}.attn_output.weight"] = mat(n_embd, n_embd)


def _feed_forward(w: dict, i: int, mat, n_embd: int, n_ff: int) -> None:
    """Block i's norm and gated feed-forward (gate, up, down), drawn in that order."""
    w[f"blk.{i}.ffn_norm.weight"] = np.ones(n_embd, np.float32)
    w[f"blk.{i}.ffn_gate.weight"] = mat(n_ff, n_embd)
    w[f"blk.{i}.ffn_up.weight"] = mat(n_ff, n_embd)
    w[f"blk.{i}.ffn_down.weight"] = mat(n_embd, n_ff)


def write_llama(path: str | Path, weights: dict[str, np.ndarray] | None = None, *,
                n_vocab_merges: int = len(MERGES), n_embd: int = 64, n_layer: int = 2,
                n_ff: int = 128, n_head: int = 4, n_head_kv: int = 2, n_ctx_train: int = 4096,
                seed: int = 0, dtype=np.float32, name: str = "tiny", tokens: list[str] | None = None,
                specials=(), n_vocab: int | None = None, merges: list[str] = (), **tok_kw) -> Path:
    """``tokens``: a whole vocabulary of one's own (e.g. ``spm_vocab()``, with ``model="llama"``;
    a BPE one needs ``merges``, at least one);
    ``specials``: control tokens such as ``<|im_start|>`` added before <|endoftext|>;
    ``n_vocab``: pad the BPE vocabulary to this many tokens."""
    if tokens is None:
        tokens, merges = bpe_vocab(n_vocab_merges, n_vocab)
        tokens = tokens[:-1] + list(specials) + tokens[-1:]
    else:
        merges = list(merges)
    if weights is None:
        weights = llama_weights(len(tokens), n_embd, n_layer, n_ff, n_head, n_head_kv, seed)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_context_length(n_ctx_train)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if dtype == np.float32 else gguf.LlamaFileType.MOSTLY_F16)
    write_tokenizer(w, tokens, merges, **tok_kw)
    return _finish(w, path, {k: a if a.ndim == 1 else a.astype(dtype) for k, a in weights.items()})


def first_layer_only(weights: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """(target, draft): the target keeps layer 0 and zeroes the outputs of the others,
    so it computes exactly what the 1-layer draft computes."""
    target = dict(weights)
    n_layer = 1 + max(int(k.split(".")[1]) for k in weights if k.startswith("blk."))
    for i in range(1, n_layer):
        target[f"blk.{i}.attn_output.weight"] = np.zeros_like(weights[f"blk.{i}.attn_output.weight"])
        target[f"blk.{i}.ffn_down.weight"] = np.zeros_like(weights[f"blk.{i}.ffn_down.weight"])
    draft = {k: v for k, v in weights.items() if not k.startswith("blk.") or k.startswith("blk.0.")}
    return target, draft


def write_mamba(path: str | Path, *, n_embd: int = 64, n_layer: int = 2, d_state: int = 16,
                d_conv: int = 4, dt_rank: int = 4, seed: int = 0, name: str = "tiny-mamba") -> Path:
    """A tiny Mamba (recurrent memory: no partial sequence removal)."""
    tokens, merges = bpe_vocab()
    n_vocab = len(tokens)
    d_inner = 2 * n_embd
    rng = np.random.default_rng(seed)

    def mat(out, inp, scale=1.0):
        return (rng.standard_normal((out, inp)) * scale / np.sqrt(inp)).astype(np.float32)

    w = gguf.GGUFWriter(str(path), "mamba")
    w.add_name(name)
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(0)
    w.add_head_count(0)
    w.add_ssm_conv_kernel(d_conv)
    w.add_ssm_inner_size(d_inner)
    w.add_ssm_state_size(d_state)
    w.add_ssm_time_step_rank(dt_rank)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    write_tokenizer(w, tokens, merges)
    w.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, n_embd)).astype(np.float32))
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("output.weight", mat(n_vocab, n_embd, 4.0))
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(f"blk.{i}.ssm_in.weight", mat(2 * d_inner, n_embd))
        w.add_tensor(f"blk.{i}.ssm_conv1d.weight", mat(d_inner, d_conv))
        w.add_tensor(f"blk.{i}.ssm_conv1d.bias", np.zeros(d_inner, np.float32))
        w.add_tensor(f"blk.{i}.ssm_x.weight", mat(dt_rank + 2 * d_state, d_inner))
        w.add_tensor(f"blk.{i}.ssm_dt.weight", mat(d_inner, dt_rank))
        w.add_tensor(f"blk.{i}.ssm_dt.bias", np.full(d_inner, -2.0, np.float32))
        a = -np.exp(rng.standard_normal((d_inner, d_state)) * 0.5).astype(np.float32)
        w.add_tensor(f"blk.{i}.ssm_a", a)
        w.add_tensor(f"blk.{i}.ssm_d", np.ones(d_inner, np.float32))
        w.add_tensor(f"blk.{i}.ssm_out.weight", mat(n_embd, d_inner))
    return _finish(w, path, {})


def write_crashing_llama(path: str | Path) -> Path:
    """A malformed model that llama.cpp loads but aborts on at the first decode: 3 KV heads
    for 4 query heads (the tensor shapes agree with the header, so the load checks pass; the
    attention's matrix product then fails ``GGML_ASSERT(ggml_can_mul_mat(k, q))``)."""
    return write_llama(path, n_head=4, n_head_kv=3, name="crashes-llama.cpp")


def lfm2_weights(n_vocab: int, layers: str = "cac", n_embd: int = 64, n_ff: int = 128,
                 n_head: int = 4, n_head_kv: int = 2, l_cache: int = 3, seed: int = 0,
                 scale: float = 0.25) -> dict[str, np.ndarray]:
    """LFM2 weights; ``layers`` names each block: ``c`` a short convolution (recurrent
    memory), ``a`` attention (KV cache)."""
    rng = np.random.default_rng(seed)
    head_dim = n_embd // n_head
    mat = _random_matrix(rng, scale)
    w = {"token_embd.weight": rng.standard_normal((n_vocab, n_embd)).astype(np.float32),
         "token_embd_norm.weight": np.ones(n_embd, np.float32),   # LFM2's output norm
         "output.weight": mat(n_vocab, n_embd)}
    for i, kind in enumerate(layers):
        w[f"blk.{i}.attn_norm.weight"] = np.ones(n_embd, np.float32)
        if kind == "a":
            w[f"blk.{i}.attn_q_norm.weight"] = np.ones(head_dim, np.float32)
            w[f"blk.{i}.attn_k_norm.weight"] = np.ones(head_dim, np.float32)
            _attention(w, i, mat, n_embd, n_head_kv * head_dim)
        else:
            w[f"blk.{i}.shortconv.conv.weight"] = mat(n_embd, l_cache)
            w[f"blk.{i}.shortconv.in_proj.weight"] = mat(3 * n_embd, n_embd)
            w[f"blk.{i}.shortconv.out_proj.weight"] = mat(n_embd, n_embd)
        _feed_forward(w, i, mat, n_embd, n_ff)
    return w


def write_lfm2(path: str | Path, weights: dict[str, np.ndarray] | None = None, *,
               layers: str = "cac", n_embd: int = 64, n_ff: int = 128, n_head: int = 4,
               n_head_kv: int = 2, l_cache: int = 3, seed: int = 0,
               name: str = "tiny-lfm2") -> Path:
    """A tiny LFM2: a hybrid memory (KV cache for the ``a`` layers, recurrent convolution
    state for the ``c`` layers), llama.cpp's simplest hybrid architecture."""
    tokens, merges = bpe_vocab()
    if weights is None:
        weights = lfm2_weights(len(tokens), layers, n_embd, n_ff, n_head, n_head_kv, l_cache, seed)
    w = gguf.GGUFWriter(str(path), "lfm2")
    w.add_name(name)
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(len(layers))
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv([n_head_kv if kind == "a" else 0 for kind in layers])
    w.add_shortconv_l_cache(l_cache)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    write_tokenizer(w, tokens, merges)
    return _finish(w, path, weights)


def with_string(source: str | Path, path: str | Path, key: str, value: str) -> Path:
    """A copy of a GGUF file with one string metadata value replaced (e.g. the demo draft with
    ``tokenizer.ggml.model`` ``llama`` instead of ``gpt2``). The tensor data keeps its offset:
    the padding before it absorbs the change in length."""
    reader = gguf.GGUFReader(str(source))
    field = reader.fields[key]
    assert field.types == [gguf.GGUFValueType.STRING], f"{key} is not a string"
    at = field.offset + sum(p.nbytes for p in field.parts[:3])          # the value's length
    end = at + sum(p.nbytes for p in field.parts[3:])
    header_end = max(t.field.offset + sum(p.nbytes for p in t.field.parts) for t in reader.tensors)
    data = bytearray(Path(source).read_bytes())
    raw = value.encode()
    grow = 8 + len(raw) - (end - at)
    if grow > reader.data_offset - header_end:
        raise ValueError(f"{value!r} does not fit in the padding before the tensor data")
    data[at:end] = len(raw).to_bytes(8, "little") + raw
    end_now = header_end + grow                  # the header's end after the change
    if grow > 0:
        del data[end_now:end_now + grow]
    else:
        data[end_now:end_now] = bytes(-grow)
    Path(path).write_bytes(bytes(data))
    return Path(path)


# --------------------------------------------------------------------------- EAGLE-3 heads
def eagle3_target_weights(n_embd: int = 64, n_layer: int = 4, seed: int = 0,
                          layer_scale: float = 0.35) -> dict[str, np.ndarray]:
    """A tiny llama target for EAGLE-3 heads: its layers' outputs scaled by ``layer_scale``, so
    its next token depends mostly on the current one (and on the context, less): a head that
    sees the current token can agree with it often, not always."""
    w = llama_weights(len(bpe_vocab()[0]), n_embd, n_layer, seed=seed)
    for i in range(n_layer):
        for name in ("attn_output", "ffn_down"):
            w[f"blk.{i}.{name}.weight"] = w[f"blk.{i}.{name}.weight"] * layer_scale
    return w


def eagle3_head_weights(target: dict[str, np.ndarray], d2t: np.ndarray, *, n_ff: int = 128,
                        seed: int = 0, alpha: float = 2.0, mix: float = 0.15,
                        fc_scale: float = 0.5, g_norm: float = 1.0) -> dict[str, np.ndarray]:
    """A one-layer EAGLE-3 head (src/models/eagle3.cpp) for ``target`` (llama_weights), with no
    token embeddings of its own (the decoder reads the target's, as Llama-3.1-8B heads do).

    It is built to agree with the target often: its attention (as many KV heads as heads) has
    Q = K = alpha * the normalised token embedding, so each position attends mostly to itself,
    and V = that embedding: the decoder's output at position P is about the embedding of the
    token it reads there (t_{P+1}, which the target reads at P+1). Its output head is the
    target's output rows for the reduced vocabulary ``d2t`` (absolute target ids, as
    convert_hf_to_gguf.py writes them). The target's features enter through ``fc`` (random,
    ``fc_scale``) and, by ``mix``, through Q, K and V: a head whose features were wrong drafts
    other tokens. ``g_norm``: the weight of the g rows' norm (``attn_norm_2``; with
    ``norm_before_residual`` the residual is that normalised g: a small weight lets the token
    read dominate at every drafted position)."""
    rng = np.random.default_rng(seed + 1000)
    n_embd = target["token_embd.weight"].shape[1]
    eye = np.eye(n_embd, dtype=np.float32)

    def rand(out, inp, scale):
        return (rng.standard_normal((out, inp)) * scale / np.sqrt(inp)).astype(np.float32)

    return {
        "fc.weight": rand(n_embd, 3 * n_embd, fc_scale),
        "output_norm.weight": np.ones(n_embd, np.float32),
        "output.weight": target["output.weight"][d2t].copy(),
        "blk.0.attn_norm.weight": np.ones(n_embd, np.float32),
        "blk.0.attn_norm_2.weight": np.full(n_embd, g_norm, np.float32),
        "blk.0.attn_q.weight": np.hstack([alpha * eye, rand(n_embd, n_embd, mix)]),
        "blk.0.attn_k.weight": np.hstack([alpha * eye, rand(n_embd, n_embd, mix)]),
        "blk.0.attn_v.weight": np.hstack([eye, rand(n_embd, n_embd, mix)]),
        "blk.0.attn_output.weight": eye.copy(),
        "blk.0.ffn_norm.weight": np.ones(n_embd, np.float32),
        "blk.0.ffn_gate.weight": rand(n_ff, n_embd, 1.0),
        "blk.0.ffn_up.weight": rand(n_ff, n_embd, 1.0),
        "blk.0.ffn_down.weight": rand(n_embd, n_ff, 0.3),
        "d2t": np.asarray(d2t, dtype=np.int64),
    }


def reduced_vocab(n_vocab: int, n_draft: int, seed: int = 0) -> np.ndarray:
    """A reduced vocabulary: ``n_draft`` target ids, sorted, end of text (the last id) included."""
    rng = np.random.default_rng(seed + 2000)
    ids = rng.choice(n_vocab - 1, size=n_draft - 1, replace=False)
    return np.sort(np.append(ids, n_vocab - 1)).astype(np.int64)


def write_eagle3_head(path: str | Path, weights: dict[str, np.ndarray], *, target_layers,
                      target_hidden_size: int, n_head: int = 4, n_head_kv: int = 4,
                      n_ctx_train: int = 4096, tokens: list[str] | None = None,
                      name: str = "tiny-eagle3", norm_before_residual: bool = False,
                      extra_kv: dict | None = None) -> Path:
    """An EAGLE-3 head GGUF as convert_hf_to_gguf.py writes one: architecture ``eagle3``, the
    target's tokenizer, ``eagle3.target_layers`` (the target layers whose inputs it reads),
    ``eagle3.target_hidden_size``, and the ``d2t`` table as I64. ``extra_kv``: more uint32/bool
    keys (e.g. a malformed value) by name."""
    if tokens is None:
        tokens, merges = bpe_vocab()
    else:
        merges = []
    n_embd = weights["blk.0.attn_norm.weight"].shape[0]
    w = _one_layer_head(path, "eagle3", weights, name, n_ctx_train, n_head, n_head_kv,
                        n_embd // n_head)
    w.add_array("eagle3.target_layers", [int(x) for x in target_layers])
    w.add_uint32("eagle3.target_hidden_size", target_hidden_size)
    w.add_bool("eagle3.norm_before_residual", norm_before_residual)
    _add_kv(w, extra_kv)
    write_tokenizer(w, tokens, merges)
    return _finish(w, path, weights)


def _one_layer_head(path, arch: str, weights, name: str, n_ctx_train: int, n_head: int,
                    n_head_kv: int, rope_dims: int) -> gguf.GGUFWriter:
    """The header of a one-layer head (EAGLE-3, DFlash) of ``weights``, F32."""
    n_embd = weights["blk.0.attn_norm.weight"].shape[0]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_context_length(n_ctx_train)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(weights["blk.0.ffn_gate.weight"].shape[0])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(rope_dims)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    return w


def _add_kv(w: gguf.GGUFWriter, extra_kv: dict | None) -> None:
    """More keys by name: bool, str or uint32 by the value's type."""
    for key, value in (extra_kv or {}).items():
        add = w.add_bool if isinstance(value, bool) else w.add_string if isinstance(value, str) \
            else w.add_uint32
        add(key, value)


def _finish(w: gguf.GGUFWriter, path, weights) -> Path:
    for name_, arr in weights.items():
        w.add_tensor(name_, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def write_eagle3_pair(folder: str | Path, *, seed: int = 0, n_layer: int = 4,
                      target_layers=(0, 1, 3), n_draft_vocab: int = 200,
                      d2t: np.ndarray | None = None, own_embeddings: bool = False,
                      layer_scale: float = 0.35, g_norm: float = 1.0, fc_scale: float = 0.5,
                      prefix: str = "eagle3", target_hidden_size: int | None = None,
                      head_weights=None, **head_kw) -> tuple[Path, Path]:
    """(target, head): a tiny llama target (eagle3_target_weights) and an EAGLE-3 head for it
    (eagle3_head_weights) reading the inputs of ``target_layers``, over a reduced vocabulary of
    ``n_draft_vocab`` ids (or the given ``d2t``); ``own_embeddings``: the head carries a copy of
    the target's token embeddings (as Llama-3.3-70B heads carry their own);
    ``target_hidden_size``: another value for the head's ``eagle3.target_hidden_size``;
    ``head_weights(weights)``: changes the head's weights before they are written."""
    folder = Path(folder)
    target = eagle3_target_weights(n_layer=n_layer, seed=seed, layer_scale=layer_scale)
    n_vocab, n_embd = target["token_embd.weight"].shape
    if d2t is None:
        d2t = reduced_vocab(n_vocab, n_draft_vocab, seed)
    head = eagle3_head_weights(target, np.clip(d2t, 0, n_vocab - 1), seed=seed, g_norm=g_norm,
                               fc_scale=fc_scale)
    head["d2t"] = np.asarray(d2t, dtype=np.int64)
    if own_embeddings:
        head["token_embd.weight"] = target["token_embd.weight"].copy()
    if head_weights is not None:
        head_weights(head)
    return (write_llama(folder / f"{prefix}-target.gguf", target, n_layer=n_layer, n_embd=n_embd,
                        name="tiny-eagle3-target"),
            write_eagle3_head(folder / f"{prefix}-head.gguf", head, target_layers=target_layers,
                              target_hidden_size=target_hidden_size or n_embd, **head_kw))


# --------------------------------------------------------------------------- MTP (nextn) models
def mtp_weights(n_embd: int = 64, n_layer: int = 2, n_nextn: int = 1, n_ff: int = 128,
                n_head: int = 4, n_head_kv: int = 2, seed: int = 0, layer_scale: float = 0.35,
                h_mix: float = 0.15, noise: float = 0.1) -> dict[str, np.ndarray]:
    """A tiny dense target with ``n_nextn`` MTP (nextn) blocks after its ``n_layer`` layers.

    The target is eagle3_target_weights' kind (its layers' outputs scaled by ``layer_scale``:
    its next token depends mostly on the current one). Each nextn block is built to agree with
    it often: ``eh_proj`` passes the normalised token embedding through, plus ``h_mix`` of the
    target's hidden state; its attention and FFN add ``noise``-scaled random terms. Its output
    is then about the target's output for the token it reads, i.e. the target's next token
    one step ahead. The nextn blocks' attention is fused (``attn_qkv``), as mimo2's MTP graph
    requires."""
    w = eagle3_target_weights(n_embd, n_layer, seed, layer_scale)
    rng = np.random.default_rng(seed + 3000)
    head_dim = n_embd // n_head
    eye = np.eye(n_embd, dtype=np.float32)

    def rand(out, inp, scale):
        return (rng.standard_normal((out, inp)) * scale / np.sqrt(inp)).astype(np.float32)

    for i in range(n_layer, n_layer + n_nextn):
        w.update({
            f"blk.{i}.nextn.eh_proj.weight": np.hstack([eye, h_mix * rand(n_embd, n_embd, 1.0)]),
            f"blk.{i}.nextn.enorm.weight": np.ones(n_embd, np.float32),
            f"blk.{i}.nextn.hnorm.weight": np.ones(n_embd, np.float32),
            f"blk.{i}.attn_norm.weight": np.ones(n_embd, np.float32),
            f"blk.{i}.attn_qkv.weight": rand((n_head + 2 * n_head_kv) * head_dim, n_embd, 1.0),
            f"blk.{i}.attn_output.weight": rand(n_embd, n_embd, noise),
            f"blk.{i}.ffn_norm.weight": np.ones(n_embd, np.float32),
            f"blk.{i}.ffn_gate.weight": rand(n_ff, n_embd, 1.0),
            f"blk.{i}.ffn_up.weight": rand(n_ff, n_embd, 1.0),
            f"blk.{i}.ffn_down.weight": rand(n_embd, n_ff, noise),
        })
    return w


def write_mtp(path: str | Path, weights: dict[str, np.ndarray] | None = None, *,
              n_embd: int = 64, n_layer: int = 2, n_nextn: int = 1, n_ff: int = 128,
              n_head: int = 4, n_head_kv: int = 2, n_swa: int = 8192, seed: int = 0,
              name: str = "tiny-mtp", **weight_kw) -> Path:
    """A tiny dense model whose MTP block llama.cpp runs (architecture ``mimo2``: dense FFN,
    no experts): ``n_layer`` layers plus ``n_nextn`` nextn blocks (``block_count`` counts
    both, ``nextn_predict_layers`` the latter). mimo2 always uses a sliding-window cache: its
    first layer slides over ``n_swa`` tokens (more than the tests' contexts, so it attends to
    all of them), the others attend to everything."""
    tokens, merges = bpe_vocab()
    if weights is None:
        weights = mtp_weights(n_embd, n_layer, n_nextn, n_ff, n_head, n_head_kv, seed,
                              **weight_kw)
    n_all = n_layer + n_nextn
    arch = "mimo2"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_all)
    w.add_uint32(f"{arch}.nextn_predict_layers", n_nextn)
    w.add_feed_forward_length(n_ff)
    w.add_expert_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_rope_freq_base(10000.0)
    w.add_sliding_window(n_swa)
    w.add_array(f"{arch}.attention.sliding_window_pattern", [i == 0 for i in range(n_all)])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    write_tokenizer(w, tokens, merges)
    return _finish(w, path, weights)


# --------------------------------------------------------------------------- DFlash heads
DFLASH_REAL, DFLASH_MASK = 62, 63   # the head's flag dimensions: a real token, the mask token


def dflash_head_weights(target: dict[str, np.ndarray], *, mask_token: int, n_ff: int = 128,
                        n_head: int = 4, seed: int = 0, sharp: float = 1.5, enc_norm: float = 1.0,
                        fc_scale: float = 0.5, noise: float = 0.1, n_target_layers: int = 3,
                        markov_rank: int = 0, markov_scale: float = 0.5,
                        confidence: bool = False) -> dict[str, np.ndarray]:
    """A one-layer DFlash head (src/models/dflash.cpp) for ``target`` (llama_weights), with
    token embeddings and an output head of its own.

    It is built so that its block's mask positions read the block's first token (id_last), the
    target's latest: the head's embeddings are the target's with two flag dimensions
    (``DFLASH_REAL`` set on every token, ``DFLASH_MASK`` on ``mask_token`` alone, whose row is
    the flag only); each attention head's unrotated half of Q reads the mask flag and of K the
    real flag (``sharp``: the weight of the Q norm), so a mask position attends mostly to the
    real token of the block, and V passes the token's content. The target's features enter
    through ``fc`` into the K/V rows the head injects for the context (no flag: the mask
    positions give them a part of their attention, ``enc_norm`` weighting their values): the
    drafts depend on them. The output head is the target's (flag columns zeroed): each mask position drafts
    about the target's next token after id_last.

    ``markov_rank`` > 0 makes it a DSpark head: a Markov head of that rank (random, its bias
    ``markov_scale``) and, with ``confidence``, a confidence head (random ``conf_proj``)."""
    rng = np.random.default_rng(seed + 4000)
    n_vocab, n_embd = target["token_embd.weight"].shape
    head_dim = n_embd // n_head
    half = head_dim // 2

    def rand(out, inp, scale):
        return (rng.standard_normal((out, inp)) * scale / np.sqrt(inp)).astype(np.float32)

    embd = target["token_embd.weight"].copy()
    embd[:, DFLASH_REAL:] = 0.0
    embd[:, DFLASH_REAL] = 3.0
    embd[mask_token] = 0.0
    embd[mask_token, DFLASH_MASK] = 3.0
    wq, wk = np.zeros((n_embd, n_embd), np.float32), rand(n_embd, n_embd, 1.0)
    for h in range(n_head):
        flags = slice(h * head_dim + half, (h + 1) * head_dim)   # not rotated (rope dims = half)
        wk[flags] = 0.0
        wq[flags, DFLASH_MASK] = 1.0
        wk[flags, DFLASH_REAL] = 1.0
    content = np.eye(n_embd, dtype=np.float32)
    content[DFLASH_REAL:] = 0.0
    fc = rand(n_embd, n_target_layers * n_embd, fc_scale)
    fc[DFLASH_REAL:] = 0.0
    output = target["output.weight"].copy()
    output[:, DFLASH_REAL:] = 0.0
    dspark = {}
    if markov_rank:
        dspark = {"markov_w1.weight": rand(n_vocab, markov_rank, np.sqrt(markov_rank)),
                  "markov_w2.weight": rand(n_vocab, markov_rank, markov_scale)}
        if confidence:
            dspark["conf_proj.weight"] = rand(1, n_embd + markov_rank, 1.0)
            dspark["conf_proj.bias"] = np.ones(1, np.float32)
    return dspark | {
        "token_embd.weight": embd,
        "fc.weight": fc,
        "enc.output_norm.weight": np.full(n_embd, enc_norm, np.float32),
        "output_norm.weight": np.ones(n_embd, np.float32),
        "output.weight": output,
        "blk.0.attn_norm.weight": np.ones(n_embd, np.float32),
        "blk.0.attn_q.weight": wq,
        "blk.0.attn_k.weight": wk,
        "blk.0.attn_v.weight": content,
        "blk.0.attn_output.weight": np.eye(n_embd, dtype=np.float32),
        "blk.0.attn_q_norm.weight": np.full(head_dim, sharp, np.float32),
        "blk.0.attn_k_norm.weight": np.ones(head_dim, np.float32),
        "blk.0.ffn_norm.weight": np.ones(n_embd, np.float32),
        "blk.0.ffn_gate.weight": rand(n_ff, n_embd, 1.0),
        "blk.0.ffn_up.weight": rand(n_ff, n_embd, 1.0),
        "blk.0.ffn_down.weight": rand(n_embd, n_ff, noise),
    }


def write_dflash_head(path: str | Path, weights: dict[str, np.ndarray], *, target_layers,
                      mask_token: int | None, block_size: int | None = 16, n_head: int = 4,
                      n_ctx_train: int = 4096, name: str = "tiny-dflash",
                      extra_kv: dict | None = None) -> Path:
    """A DFlash head GGUF as llama.cpp reads one: architecture ``dflash``, the target's
    tokenizer with its mask token (``tokenizer.ggml.mask_token_id``; None: none),
    ``dflash.target_layers``, ``dflash.block_size`` (None: left out, llama.cpp's 16), and the
    rope over half of each attention head's dimensions. ``extra_kv``: more uint32/bool/str keys."""
    tokens, merges = bpe_vocab()
    n_embd = weights["blk.0.attn_norm.weight"].shape[0]
    w = _one_layer_head(path, "dflash", weights, name, n_ctx_train, n_head, n_head,
                        n_embd // n_head // 2)
    w.add_array("dflash.target_layers", [int(x) for x in target_layers])
    if block_size is not None:
        w.add_uint32("dflash.block_size", block_size)
    _add_kv(w, extra_kv)
    write_tokenizer(w, tokens, merges)
    if mask_token is not None:
        w.add_mask_token_id(mask_token)
    return _finish(w, path, weights)


def write_dflash_pair(folder: str | Path, *, seed: int = 0, n_layer: int = 4,
                      target_layers=(0, 1, 3), mask_token: int = 0, prefix: str = "dflash",
                      layer_scale: float = 0.35, head_weights=None, **kw) -> tuple[Path, Path]:
    """(target, head): a tiny llama target (eagle3_target_weights) and a DFlash head for it
    (dflash_head_weights) reading the inputs of ``target_layers``; ``head_weights(weights)``
    changes the head's weights before they are written; ``kw`` go to write_dflash_head,
    or to dflash_head_weights where they are its (sharp, enc_norm, fc_scale, noise, and a
    DSpark head's markov_rank, markov_scale, confidence)."""
    folder = Path(folder)
    target = eagle3_target_weights(n_layer=n_layer, seed=seed, layer_scale=layer_scale)
    n_embd = target["token_embd.weight"].shape[1]
    wkw = {k: kw.pop(k) for k in ("sharp", "enc_norm", "fc_scale", "noise", "markov_rank",
                                  "markov_scale", "confidence") if k in kw}
    head = dflash_head_weights(target, mask_token=mask_token, seed=seed,
                               n_target_layers=len(target_layers), **wkw)
    if head_weights is not None:
        head_weights(head)
    return (write_llama(folder / f"{prefix}-target.gguf", target, n_layer=n_layer, n_embd=n_embd,
                        name="tiny-dflash-target"),
            write_dflash_head(folder / f"{prefix}-head.gguf", head, target_layers=target_layers,
                              mask_token=mask_token, **kw))


def write_dflash_heads(folder: str | Path) -> dict[str, Path]:
    """The DFlash pairs the tests share: ``target`` with its DFlash ``head``, ``spark_target``
    with a DSpark ``spark`` (a Markov and a confidence head), and ``layers``, a head reading a
    layer the target lacks."""
    target, head = write_dflash_pair(folder, prefix="good")
    spark_target, spark = write_dflash_pair(folder, prefix="spark", seed=2, markov_rank=8,
                                            confidence=True)
    return {"target": target, "head": head, "spark_target": spark_target, "spark": spark,
            "layers": write_dflash_pair(folder, prefix="layers", target_layers=(0, 1, 7))[1]}
