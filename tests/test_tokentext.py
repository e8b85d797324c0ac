"""Tokens as the text they make: the stream (CLI, token view) and shares (step mode)."""

from __future__ import annotations

import pytest

from helpers import ggufgen
from specscope.core.models.tokentext import TextStream
from specscope.core.models.llama import Model
from specscope.core.models.tokentext import TokenText, shares

TEXT = "naïve 中文\n😀 the end"


def test_stream_writes_a_split_character_with_its_last_token():
    s = TokenText()
    pieces = [b"hi", b" \xf0\x9f\x98", b"\x80", b"\xe4", b"\xb8", b"\xad\xe4", b"\xb8\xad"]
    out = [s.feed(i, p) for i, p in enumerate(pieces)]
    assert out == [("hi", ()), (" ", ()), ("😀", (1,)), ("", ()), ("", ()), ("中", (3, 4)), ("中", (5,))]
    assert s.pending == b"" and s.flush() == ""


def test_shares_give_each_token_its_part():
    assert shares([b" \xf0\x9f\x98", b"\x80", b"\xe4\xb8\xad"]) == [" 😀 (1/2)", "😀 (2/2)", "中"]
    assert shares([b"\x98\x80!"], prefix=b"\xf0\x9f") == ["😀 (2/2)!"]
    assert shares([b"\xe4", b"x"]) == ["⟨E4⟩", "x"]               # bytes that make no character
    assert shares([b"\xad"]) == ["⟨AD⟩"]


def test_shares_of_whole_characters_are_the_pieces_read_character_by_character():
    """The fast path (every piece whole characters) says what the character walk says, and a
    piece that splits a character still takes the walk."""
    import random
    from specscope.core.models.tokentext import _split_shares
    rng = random.Random(7)
    chars = ["a", " ", "\n", "é", "中", "😀", "ß", "\t", "{"]
    for _ in range(300):
        pieces = ["".join(rng.choices(chars, k=rng.randint(0, 4))).encode() for _ in range(rng.randint(1, 5))]
        assert shares(pieces) == _split_shares(pieces, b"") == [p.decode() for p in pieces]
        cut = b"".join(pieces)
        k = rng.randint(0, len(cut))
        split = [cut[:k], cut[k:]]
        assert shares(split) == _split_shares(split, b"")


@pytest.mark.parametrize("model", ["llama", "gpt2"])
def test_cli_stream_on_real_vocabularies(tmp_path, model):
    kw = dict(model="llama", tokens=ggufgen.spm_vocab(), bos=1, eos=2) if model == "llama" else {}
    m = Model(ggufgen.write_llama(tmp_path / "m.gguf", n_layer=1, **kw), vocab_only=True)
    try:
        tokens = m.tokenize(TEXT, add_special=False)
        split = [t for t in tokens if not m.piece(t).decode("utf-8", "ignore")]
        assert len(split) >= 5                 # ï, 中, 文 and 😀 are split over byte tokens
        stream = TextStream(m)
        parts = [stream.feed([t]) for t in tokens] + [stream.flush()]
        assert "".join(parts) == (" " if model == "llama" else "") + TEXT
        assert "" in parts and "\ufffd" not in "".join(parts)
    finally:
        m.close()
