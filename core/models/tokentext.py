"""Tokens as the text they make (Qt-free: the CLI stream, the token view and step mode share it).

A token's *piece* (``llama_token_to_piece``) is bytes: SentencePiece's ``▁`` is
already a space there and a byte token ``<0x0A>`` already the byte 0x0A. What
a piece is not, always, is text: a UTF-8 character can be split over several
tokens (an emoji in a byte-level BPE vocabulary, CJK through SentencePiece's
byte fallback), so a piece alone may hold half a character. Two ways to show
that, both used here:

- a stream (``TokenText``): the character appears with the token that
  completes it; the tokens that held its first bytes show nothing and are
  named (``joined``) so that a view can say which tokens made the character;
- a row of tokens shown side by side (``shares``): each token that holds part
  of a split character shows the whole character with its share, "中 (1/3)".

A token's *vocabulary piece* (``llama_vocab_get_text``: ``▁Hello``,
``<0x0A>``, ``ĠðŁĺ``) is what hovering shows next to its id.

:class:`TokenTable` holds pieces without the model (the window's copy of a vocabulary, a
session's tokens).
"""

from __future__ import annotations

import codecs
import json
from typing import Iterable, Sequence

from specscope.core.plain import PlainError


def hex_bytes(data: bytes) -> str:
    """Bytes that make no character, shown as ⟨E4⟩⟨B8⟩."""
    return "".join(f"⟨{b:02X}⟩" for b in data)


class TokenText:
    """Turns token pieces into text one token at a time (UTF-8 safe).

    ``feed`` returns (text, joined): ``joined`` names the earlier tokens whose bytes
    the first character of ``text`` also holds (empty unless a character was split)."""

    def __init__(self):
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held: list[int] = []

    @property
    def pending(self) -> bytes:
        """Bytes of a character that is not complete yet."""
        return self._decoder.getstate()[0]

    def feed(self, token: int, piece: bytes) -> tuple[str, tuple[int, ...]]:
        text = self._decoder.decode(piece)
        if not self._held and piece and piece[-1] < 0x80:   # the common case: nothing held
            return text, ()
        joined = ()
        if text and self._held:
            joined, self._held = tuple(self._held), []
        if self.pending:
            self._held.append(token)
        return text, joined

    def flush(self) -> str:
        self._held = []
        return self._decoder.decode(b"", final=True)


def text_of(vocab, tokens) -> str:
    """The text of ``tokens`` (end-of-generation tokens left out): characters split over
    tokens joined, an incomplete one at the end decoded with replacement."""
    stream = TokenText()
    out = [stream.feed(t, vocab.piece(t))[0] for t in tokens if not vocab.is_eog(t)]
    return "".join(out) + stream.flush()


def _char_at(data: bytes, i: int) -> int:
    """Length of the UTF-8 character starting at data[i], or 0 if none starts there."""
    b = data[i]
    n = 1 if b < 0x80 else 2 if 0xC2 <= b < 0xE0 else 3 if 0xE0 <= b < 0xF0 else 4 if 0xF0 <= b < 0xF5 else 0
    if n == 0 or i + n > len(data):
        return 0
    try:
        data[i:i + n].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return n


def shares(pieces: Sequence[bytes], prefix: bytes = b"") -> list[str]:
    """The text each token shows when ``pieces`` are read as one UTF-8 text after ``prefix``
    (bytes of an unfinished character before them): its own whole characters, and a character
    split over tokens on every token that holds part of it, with the token's share, e.g.
    "中 (2/3)". Bytes that make no character show as ⟨E4⟩."""
    if not prefix:
        try:        # the common case: each piece whole characters (UTF-8 resynchronises at
            return [p.decode("utf-8") for p in pieces]   # every character, so they are the same)
        except UnicodeDecodeError:
            pass
    return _split_shares(pieces, prefix)


def _split_shares(pieces: Sequence[bytes], prefix: bytes) -> list[str]:
    """``shares`` character by character."""
    data = prefix + b"".join(pieces)
    owner = [-1] * len(prefix)                  # -1: the text before these tokens
    for k, p in enumerate(pieces):
        owner += [k] * len(p)
    out = [""] * len(pieces)
    i = 0
    while i < len(data):
        n = _char_at(data, i)
        text, n = (data[i:i + n].decode("utf-8"), n) if n else (hex_bytes(data[i:i + 1]), 1)
        holders = sorted(set(owner[i:i + n]))   # -1 (the prefix) sorts first
        tokens = [k for k in holders if k >= 0]
        if len(holders) == 1:
            if tokens:
                out[tokens[0]] += text
        else:
            for k in tokens:
                out[k] += f"{text} ({holders.index(k) + 1}/{len(holders)})"
        i += n
    return out


class TextStream:
    """Turns emitted tokens into text incrementally, leaving out EOG tokens: a character
    split over tokens is written once its last byte arrives (:class:`TokenText`)."""

    def __init__(self, model):
        self.model = model
        self.text = TokenText()

    def feed(self, tokens) -> str:
        return "".join(self.text.feed(t, self.model.piece(t))[0]
                       for t in tokens if not self.model.is_eog(t))

    def flush(self) -> str:
        return self.text.flush()


# ---------------------------------------------------------------------------- token tables

class TokenTable:
    """Token pieces without the model: the vocabulary interface the views and text streams need
    (``piece``, ``text``, ``is_eog``), safe on any thread. A model's whole vocabulary (:meth:`of`,
    the window's copy for the UI thread), or the tokens a session uses (:meth:`collect`, saved
    with it)."""

    def __init__(self, entries: dict[int, tuple[bytes, bytes, bool]] | None = None):
        self.entries = dict(entries or {})       # id -> (piece, vocabulary text, is_eog)

    @classmethod
    def of(cls, model) -> "TokenTable":
        """Every token of a model (``llama.Model``)."""
        return cls.collect(model, range(model.n_vocab))

    @classmethod
    def from_pieces(cls, pieces: Sequence[bytes], eog: Iterable[int] = (),
                    texts: Sequence[bytes] = ()) -> "TokenTable":
        """Tokens 0, 1, ... with these pieces; their vocabulary texts are the pieces unless given."""
        eog = set(eog)
        return cls({t: (p, texts[t] if t < len(texts) else p, t in eog) for t, p in enumerate(pieces)})

    @classmethod
    def collect(cls, vocab, ids: Iterable[int]) -> "TokenTable":
        """The entries of ``ids`` from a model (``llama.Model``) or another table."""
        if isinstance(vocab, TokenTable):
            return cls({t: vocab.entries[t] for t in set(ids) if t in vocab.entries})
        return cls({t: (vocab.piece(t), vocab.token_text(t), bool(vocab.is_eog(t)))
                    for t in sorted(set(ids))})

    def piece(self, token: int) -> bytes:
        e = self.entries.get(token)
        return e[0] if e else b""

    def text(self, token: int) -> str:
        e = self.entries.get(token)
        return (e[1] if e else b"").decode("utf-8", "replace")

    def is_eog(self, token: int) -> bool:
        e = self.entries.get(token)
        return bool(e and e[2])

    def to_plain(self) -> list:
        return [[t, _bytes_out(p), _bytes_out(x), eog] for t, (p, x, eog) in sorted(self.entries.items())]

    @classmethod
    def from_plain(cls, rows, what: str = "tokens") -> "TokenTable":
        if not isinstance(rows, list):
            raise PlainError(f"{what} is not a list")
        entries = {}
        for row in rows:
            if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], int)
                    and not isinstance(row[0], bool) and isinstance(row[3], bool)):
                raise PlainError(f"tokens has a malformed entry {json.dumps(row)[:60]}")
            entries[row[0]] = (_bytes_in(row[1]), _bytes_in(row[2]), row[3])
        return cls(entries)


def _bytes_out(b: bytes):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def _bytes_in(v) -> bytes:
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, dict) and set(v) == {"hex"} and isinstance(v["hex"], str):
        try:
            return bytes.fromhex(v["hex"])
        except ValueError:
            pass
    raise PlainError(f"tokens has a malformed piece {json.dumps(v)[:60]}")
