"""The shipped demo models (resources/models): present, loadable, small, one
shared tokenizer between target and draft, a foreign vocabulary for the third,
and llama.cpp tokenizing exactly as the training tokenizer did.

Needs llama_cpp and numpy only (no torch, no tokenizers): the expected token
ids come from tests/data/demo_tokenizer_fixture.json, written at build time
by the training tokenizer.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "resources" / "models"
TARGET = MODELS / "demo-target.gguf"
DRAFT = MODELS / "demo-draft.gguf"
FOREIGN = MODELS / "demo-draft-foreign-vocab.gguf"
HEAD = MODELS / "demo-eagle3-head.gguf"
CARD = MODELS / "README.md"
FIXTURE = REPO / "tests" / "data" / "demo_tokenizer_fixture.json"

L = pytest.importorskip("llama_cpp")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_specscope_{name}", REPO / "packaging" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ge = _load("gguf_export")


@pytest.fixture(scope="module")
def vocabs():
    ms = {k: ge.LlamaCppModel(p, vocab_only=True) for k, p in
          (("target", TARGET), ("draft", DRAFT), ("foreign", FOREIGN))}
    yield ms
    for m in ms.values():
        m.close()


def _text(m, i):
    return L.llama_vocab_get_text(m.vocab, i)


def test_files_exist_and_fit():
    for p in (TARGET, DRAFT, FOREIGN, HEAD, CARD):
        assert p.is_file(), p
    total = sum(p.stat().st_size for p in MODELS.iterdir() if p.is_file())
    assert total <= 40 * 1024 * 1024, f"resources/models is {total / 1e6:.1f} MB"
    assert DRAFT.stat().st_size <= 0.15 * TARGET.stat().st_size


def test_target_and_draft_share_tokenizer(vocabs):
    t, d = vocabs["target"], vocabs["draft"]
    assert L.llama_vocab_type(t.vocab) == L.llama_vocab_type(d.vocab) == L.LLAMA_VOCAB_TYPE_BPE
    assert t.n_vocab == d.n_vocab == 4096
    for f in (L.llama_vocab_bos, L.llama_vocab_eos, L.llama_vocab_get_add_bos, L.llama_vocab_get_add_eos):
        assert f(t.vocab) == f(d.vocab)
    assert L.llama_vocab_bos(t.vocab) == L.llama_vocab_eos(t.vocab) == 0
    assert _text(t, 0) == b"<|endoftext|>"
    assert L.llama_vocab_is_eog(t.vocab, 0)
    assert L.llama_vocab_get_add_bos(t.vocab)
    assert all(_text(t, i) == _text(d, i) for i in range(t.n_vocab))


def test_foreign_draft_vocabulary_differs(vocabs):
    t, f = vocabs["target"], vocabs["foreign"]
    assert L.llama_vocab_type(f.vocab) == L.LLAMA_VOCAB_TYPE_BPE
    # llama.cpp's gate tolerates at most SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
    # tokens of difference in vocabulary size
    assert abs(t.n_vocab - f.n_vocab) > 128
    # BOS/EOS ids and token texts (from SPEC_VOCAB_CHECK_START_TOKEN_ID = 5) differ too
    assert L.llama_vocab_bos(f.vocab) != L.llama_vocab_bos(t.vocab)
    assert _text(f, L.llama_vocab_eos(f.vocab)) == b"<|endoftext|>"
    assert any(_text(t, i) != _text(f, i) for i in range(5, min(t.n_vocab, f.n_vocab)))
    text = "def __init__(self, name):\n    self.name = name\n"
    assert t.tokenize(text) != f.tokenize(text)


def test_llama_cpp_tokenizes_like_training_tokenizer(vocabs):
    fx = json.loads(FIXTURE.read_text())
    assert len(fx["items"]) >= 2
    for m in (vocabs["target"], vocabs["draft"]):
        for item in fx["items"]:
            ids = m.tokenize(item["text"], add_special=False)
            assert ids == item["ids"], item["path"]
            assert m.detokenize(ids) == item["text"], item["path"]
            with_bos = m.tokenize(item["text"], add_special=True)
            assert with_bos == [fx["bos_id"]] + item["ids"]


def test_text_round_trip(vocabs):
    samples = [
        "def f(x, y):\n    return {'a': x, \"b\": y}  # it's fine , ok .\n",
        "\tif not self._closed:\n\t\traise ValueError(f'{name!r} is closed')\n\n\n",
        "π = 3.14159  # ünïcödé ✓ 数学\r\n",
    ]
    for m in (vocabs["target"], vocabs["foreign"]):
        for s in samples:
            assert m.detokenize(m.tokenize(s)) == s
            assert b"".join(m.piece(t) for t in m.tokenize(s)).decode() == s


@pytest.mark.parametrize("path", [TARGET, DRAFT, FOREIGN], ids=lambda p: p.name)
def test_models_load_and_decode(path):
    with ge.LlamaCppModel(path, n_ctx=64) as m:
        ids = [0] + m.tokenize("import os\nimport sys\n\n\ndef main():\n    ")
        lg = m.decode(ids, 0, all_logits=True)
        assert lg.shape == (len(ids), m.n_vocab)
        assert np.isfinite(lg).all()


def test_pair_predicts_python():
    """The trained target continues an obvious Python prefix sensibly, and the
    draft agrees with it on that token (random weights would not)."""
    prompt = "import os\nimport sys\n\n\nclass Foo(object):\n\n    def __init__(self"
    with ge.LlamaCppModel(TARGET, n_ctx=64) as t, ge.LlamaCppModel(DRAFT, n_ctx=64) as d:
        ids = [0] + t.tokenize(prompt)
        nt = int(t.decode(ids, 0)[-1].argmax())
        nd = int(d.decode(ids, 0)[-1].argmax())
        assert t.piece(nt).strip() in (b",", b")", b"):"), t.piece(nt)
        assert nt == nd


def test_model_card_mentions_figures():
    card = CARD.read_text()
    for word in ("demo-target.gguf", "demo-draft.gguf", "demo-draft-foreign-vocab.gguf",
                 "PSF", "acceptance", "perplexity", "build_demo_models.py"):
        assert word in card, word


def test_model_card_has_the_eagle3_heads_section():
    """The card's intro promises the head its own section: its size, its acceptance by position
    on held-out files beside the demo draft's, its cost per draft token, how to retrain it."""
    card = CARD.read_text()
    assert "\n## EAGLE-3 head\n" in card
    section = card.split("\n## EAGLE-3 head\n")[1].split("\n## ")[0]
    for words in (f"{HEAD.stat().st_size:,} bytes", "held-out", "acceptance at draft position 1 · 2 · 3",
                  "cost of a draft token", "train_eagle3_head.py", "seed"):
        assert words in section, words


def test_the_eagle3_head_fits_the_target():
    """The EAGLE-3 head reads the target's layers 1, 2 and 3, drafts 2048 of its tokens (d2t:
    absolute ids, distinct), carries its tokenizer, and is small: F16 matrices, F32 norms."""
    import gguf
    from specscope.core.models.eagle3 import check_head
    from specscope.core.models.llama import Model

    target, head = Model(TARGET), Model(HEAD)
    try:
        assert check_head(target, head) == (1, 2, 3)
        assert all(_text(head, i) == _text(target, i) for i in range(target.n_vocab))
    finally:
        head.close()
        target.close()
    r = gguf.GGUFReader(str(HEAD))
    tensors = {t.name: t for t in r.tensors}
    d2t = np.asarray(tensors["d2t"].data)
    assert d2t.dtype == np.int64 and len(np.unique(d2t)) == len(d2t) == 2048
    assert {t.tensor_type.name for t in r.tensors if len(t.shape) == 2} == {"F16"}
    assert {t.tensor_type.name for t in r.tensors if len(t.shape) == 1 and t.name != "d2t"} == {"F32"}
    assert HEAD.stat().st_size < DRAFT.stat().st_size * 2
