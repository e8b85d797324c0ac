"""Tokens two vocabularies share: the id map of tokens whose text is identical in both.

A token's text here is its piece (``llama_token_to_piece``: the bytes it stands for, a
SentencePiece ``▁`` already a space, a byte token already its byte), so that a SentencePiece
vocabulary and a byte-level BPE one are compared on what they write, not on how they spell
it. A control token matches only a control token of the same text (``<|endoftext|>`` in
both); unknown and unused tokens and empty pieces match nothing. Where one vocabulary has
several tokens with the same piece (a byte token and a one-character token), the ordinary
token is kept, else the lowest id, so that the map is one to one.

The map is what token-level intersection drafts with (docs/cross-vocab.md), and how far two
vocabularies overlap (:attr:`VocabMap.target_share`, :attr:`VocabMap.draft_share`). Building it
reads every token of both vocabularies once; it is cached per pair of files
(``core/cache.py``), keyed by both files' identities.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
from dataclasses import dataclass

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.cache import cache_root, file_id

ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_BYTE = 1, 2, 4, 8, 32
LLAMA_VOCAB_TYPE_SPM = 1
MAP_VERSION = 1


@dataclass(frozen=True)
class VocabMap:
    """``draft_to_target[d]``: the target id with draft token d's text (-1: none), and the
    reverse. Both int32."""
    draft_to_target: np.ndarray
    target_to_draft: np.ndarray

    @property
    def n_shared(self) -> int:
        return int((self.draft_to_target >= 0).sum())

    @property
    def target_share(self) -> float:
        """The share of the target's tokens whose text the draft has."""
        return self.n_shared / max(1, len(self.target_to_draft))

    @property
    def draft_share(self) -> float:
        """The share of the draft's tokens whose text the target has."""
        return self.n_shared / max(1, len(self.draft_to_target))

    def draft_mask(self) -> np.ndarray:
        """A logit bias over the draft's vocabulary: 0 on shared tokens, -inf elsewhere."""
        return np.where(self.draft_to_target >= 0, 0.0, -np.inf).astype(np.float32)


def spelling_gap(model) -> str:
    """Why llama.cpp cannot tokenize any text with this vocabulary ("" when it can). A
    SentencePiece tokenizer spells what its pieces do not cover with byte tokens (``<0x0A>``,
    or the byte alone), and where one is missing llama.cpp's tokenizer throws and the process
    aborts (``llama_vocab::byte_to_token``); the other tokenizers skip or replace such bytes."""
    if int(ll.llama_vocab_type(model.vocab)) != LLAMA_VOCAB_TYPE_SPM:
        return ""
    texts = {ll.llama_vocab_get_text(model.vocab, t) for t in range(model.n_vocab)}
    missing = [b for b in range(256) if f"<0x{b:02X}>".encode() not in texts and bytes([b]) not in texts]
    if not missing:
        return ""
    return (f"{model.path.name}: its SentencePiece vocabulary has no byte token for "
            f"{len(missing)} of the 256 bytes (<0x{missing[0]:02X}> …), and llama.cpp's tokenizer "
            "aborts on text it cannot spell")


def token_keys(model) -> dict[bytes, int]:
    """piece -> id over a loaded vocabulary (module docs: which tokens, which id on a tie).
    A control token's key is prefixed with a NUL byte, so that it meets only control tokens.
    (One llama.cpp call per token: a 150k-token vocabulary takes about 0.2 s.)"""
    vocab, keys, byte_keys = model.vocab, {}, set()   # byte_keys: keys held by a byte token
    buf = ctypes.create_string_buffer(256)
    get_attr, to_piece = ll.llama_vocab_get_attr, ll.llama_token_to_piece
    for t in range(model.n_vocab):
        attr = get_attr(vocab, t)
        if attr & (ATTR_UNKNOWN | ATTR_UNUSED):
            continue
        n = to_piece(vocab, t, buf, 256, 0, True)
        if n <= 0:                 # empty, or longer than any text a model shares (256 bytes)
            continue
        key = b"\0" + buf[:n] if attr & ATTR_CONTROL else buf[:n]
        if key in keys:            # an ordinary token takes a key from a byte token, else the lower id stays
            if key in byte_keys and not attr & ATTR_BYTE:
                keys[key] = t
                byte_keys.discard(key)
            continue
        keys[key] = t
        if attr & ATTR_BYTE:
            byte_keys.add(key)
    return keys


def build_map(target, draft) -> VocabMap:
    """The map of two loaded models (``llama.Model``, a vocabulary-only load is enough)."""
    return map_of_keys(token_keys(target), token_keys(draft), target.n_vocab, draft.n_vocab)


def map_of_keys(t_keys: dict[bytes, int], d_keys: dict[bytes, int], n_target: int,
                n_draft: int) -> VocabMap:
    """The map from both vocabularies' :func:`token_keys`."""
    d2t = np.full(n_draft, -1, np.int32)
    t2d = np.full(n_target, -1, np.int32)
    shared = t_keys.keys() & d_keys.keys()
    t_ids = np.fromiter((t_keys[k] for k in shared), np.int32, len(shared))
    d_ids = np.fromiter((d_keys[k] for k in shared), np.int32, len(shared))
    d2t[d_ids], t2d[t_ids] = t_ids, d_ids
    return VocabMap(d2t, t2d)


def _cache_path(target, draft):
    key = json.dumps([MAP_VERSION, file_id(target.path), file_id(draft.path)], sort_keys=True)
    return cache_root() / "vocab-maps" / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".npz")


def control_keys(model) -> set[bytes]:
    """The keys of a vocabulary's control tokens (as :func:`token_keys` writes them), without
    reading the others' pieces."""
    vocab, get_attr = model.vocab, ll.llama_vocab_get_attr
    return {b"\0" + model.piece(t) for t in range(model.n_vocab)
            if get_attr(vocab, t) & ATTR_CONTROL and not get_attr(vocab, t) & (ATTR_UNKNOWN | ATTR_UNUSED)
            and model.piece(t)}


def vocab_map(target, draft, keys=None) -> VocabMap:
    """The pair's map, from the cache when both files are unchanged, else built and cached
    (a cache that cannot be written is not an error). ``keys``: a function giving both
    vocabularies' :func:`token_keys` (target, draft), where the caller keeps them."""
    path = _cache_path(target, draft)
    try:
        with np.load(path) as f:
            m = VocabMap(f["draft_to_target"].astype(np.int32), f["target_to_draft"].astype(np.int32))
        if len(m.draft_to_target) == draft.n_vocab and len(m.target_to_draft) == target.n_vocab:
            return m
    except (OSError, KeyError, ValueError):
        pass
    m = map_of_keys(*keys(), target.n_vocab, draft.n_vocab) if keys else build_map(target, draft)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".tmp.npz")
        np.savez(tmp, draft_to_target=m.draft_to_target, target_to_draft=m.target_to_draft)
        tmp.replace(path)
    except OSError:
        pass
    return m
