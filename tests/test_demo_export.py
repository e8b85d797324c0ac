"""CI smoke test of the demo-model export path (seconds, no torch).

Exports a tiny random-weight llama with packaging/gguf_export.py, loads it in
llama.cpp and compares its logits with a float64 numpy forward of the same
weights (RMSNorm, adjacent-pair RoPE, SwiGLU, GQA, tied and untied heads).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

pytest.importorskip("gguf")
pytest.importorskip("llama_cpp")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_specscope_{name}", REPO / "packaging" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses need the module registered
    spec.loader.exec_module(mod)
    return mod


ge = _load("gguf_export")

# Tolerance for F32 weights, F32 KV cache, flash attention off: llama.cpp's
# float32 arithmetic against a float64 reference on logits of magnitude ~1-5.
TOL_F32 = 1e-3


@pytest.mark.parametrize(
    "tie,n_kv_heads,n_layers",
    [(False, 4, 2), (True, 2, 1)],
    ids=["untied-mha", "tied-gqa"],
)
def test_tiny_export_logits_match_reference(tmp_path, tie, n_kv_heads, n_layers):
    n_merged = 43
    cfg = ge.GGUFConfig(vocab_size=257 + n_merged, dim=64, n_layers=n_layers, n_heads=4,
                        n_kv_heads=n_kv_heads, ffn_dim=96, context_length=256)
    vocab = ge.byte_level_vocab(n_merged)
    tensors = ge.random_tensors(cfg, seed=3, tie=tie)
    path = ge.write_llama_gguf(tmp_path / "tiny.gguf", tensors, cfg, vocab, name="tiny", weight_type="f32")
    ids = [0] + list(np.random.default_rng(1).integers(1, cfg.vocab_size, 40))
    got = ge.llama_cpp_logits(path, ids, n_ctx=64)
    ref = ge.reference_forward(tensors, cfg, ids)
    diff = float(np.abs(got - ref).max())
    print(f"max |llama.cpp - numpy| = {diff:.3g} (logits up to {np.abs(ref).max():.2f})")
    assert got.shape == ref.shape
    assert diff < TOL_F32
    # the tensor layout matters: a transposed projection or half-split RoPE
    # would give differences of order 1, far above the tolerance
    assert (got.argmax(-1) == ref.argmax(-1)).all()


def test_tiny_export_f16_close(tmp_path):
    cfg = ge.GGUFConfig(vocab_size=258, dim=64, n_layers=1, n_heads=2, ffn_dim=64, context_length=128)
    vocab = ge.byte_level_vocab(1)  # llama.cpp needs a non-empty merges array
    tensors = ge.random_tensors(cfg, seed=5)
    path = ge.write_llama_gguf(tmp_path / "tiny16.gguf", tensors, cfg, vocab, name="tiny16", weight_type="f16")
    ids = [0, 5, 17, 99, 200, 3]
    got = ge.llama_cpp_logits(path, ids, n_ctx=32)
    ref = ge.reference_forward(tensors, cfg, ids)
    assert float(np.abs(got - ref).max()) < 0.05


def test_tiny_export_metadata(tmp_path):
    cfg = ge.GGUFConfig(vocab_size=257 + 5, dim=32, n_layers=1, n_heads=2, ffn_dim=32)
    vocab = ge.byte_level_vocab(5)
    path = ge.write_llama_gguf(tmp_path / "m.gguf", ge.random_tensors(cfg), cfg, vocab, name="m", weight_type="f32")
    import llama_cpp as L

    with ge.LlamaCppModel(path, vocab_only=True) as m:
        assert L.llama_vocab_type(m.vocab) == L.LLAMA_VOCAB_TYPE_BPE
        assert L.llama_vocab_bos(m.vocab) == 0
        assert L.llama_vocab_eos(m.vocab) == 0
        assert L.llama_vocab_is_eog(m.vocab, 0)
        assert L.llama_vocab_get_add_bos(m.vocab)
        assert not L.llama_vocab_get_add_eos(m.vocab)
        assert m.n_vocab == 262
        text = "x = 'spam' , y ."
        assert m.detokenize(m.tokenize(text)) == text


def test_tiny_eagle3_head_export_drafts_beside_its_target(tmp_path):
    """An EAGLE-3 head written by write_llama_gguf(arch="eagle3") (what train_eagle3_head.py
    ships): llama.cpp loads it beside a target whose tokenizer it copies (vocab_from_gguf), its
    d2t stays I64, and SpecScope drafts with it, the output the target's own."""
    from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
    from specscope.core.engine.sampling import SamplerSettings
    from specscope.core.measure.bench.lossless import compare
    from specscope.core.models.eagle3 import check_head
    from specscope.core.models.llama import Model

    cfg = ge.GGUFConfig(vocab_size=257 + 43, dim=64, n_layers=4, n_heads=4, ffn_dim=96, context_length=256)
    target = ge.write_llama_gguf(tmp_path / "target.gguf", ge.random_tensors(cfg, seed=3), cfg,
                                 ge.byte_level_vocab(43), name="target", weight_type="f32")
    rng = np.random.default_rng(4)
    E, F, n_draft = 32, 48, 100

    def m(o, i):
        return (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)

    tensors = {"token_embd.weight": m(cfg.vocab_size, E), "fc.weight": m(E, 3 * cfg.dim),
               "blk.0.attn_norm.weight": np.ones(E, np.float32),
               "blk.0.attn_norm_2.weight": np.ones(E, np.float32),
               "blk.0.attn_q.weight": m(E, 2 * E), "blk.0.attn_k.weight": m(E, 2 * E),
               "blk.0.attn_v.weight": m(E, 2 * E), "blk.0.attn_output.weight": m(E, E),
               "blk.0.ffn_norm.weight": np.ones(E, np.float32), "blk.0.ffn_gate.weight": m(F, E),
               "blk.0.ffn_up.weight": m(F, E), "blk.0.ffn_down.weight": m(E, F),
               "output_norm.weight": np.ones(E, np.float32), "output.weight": m(n_draft, E),
               "d2t": np.sort(rng.choice(cfg.vocab_size, n_draft, replace=False)).astype(np.int64)}
    hcfg = ge.GGUFConfig(vocab_size=cfg.vocab_size, dim=E, n_layers=1, n_heads=2, ffn_dim=F)
    head = ge.write_llama_gguf(tmp_path / "head.gguf", tensors, hcfg, ge.vocab_from_gguf(target),
                               name="head", weight_type="f16", arch="eagle3",
                               arch_metadata={"eagle3.target_layers": [1, 2, 3],
                                              "eagle3.target_hidden_size": cfg.dim,
                                              "eagle3.norm_before_residual": False})
    t, h = Model(target), Model(head)
    try:
        assert check_head(t, h) == (1, 2, 3)
    finally:
        h.close()
        t.close()
    settings = EngineSettings(n_ctx=256, target_threads=2, draft_threads=2)
    with Engine(target, head, settings) as engine:
        c = compare(engine, [0, 5, 17, 99, 200, 3], SpecSettings(types=("draft-eagle3",), n_max=3),
                    SamplerSettings(), 24)
    assert c.lossless.identical, c.lossless.describe()
    assert c.spec.stats.n_drafted > 0
