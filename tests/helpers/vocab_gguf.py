"""Vocabulary-only GGUF files for the pair doctor's tests, made with the ``gguf`` package.

Layout of a generated vocabulary (``n_base`` tokens, then ``pad`` padding tokens):

    0..4        special tokens (<unk>, <s>, <|endoftext|>, <|sp3|>, <|sp4|>)
    5..260      the 256 byte tokens (BPE: GPT-2's byte-to-unicode characters;
                SPM: <0x00>..<0xFF>)
    261..       word pieces "w261", "w262", ...
    n_base..    padding "<|pad0|>", "<|pad1|>", ...

``rename={id: text}`` replaces single token texts, e.g. to make the text
rule fail at a chosen id.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import gguf

N_SPECIAL = 5


def _gpt2_byte_chars() -> list[str]:
    from helpers.ggufgen import byte_tokens  # GPT-2's bytes_to_unicode, in byte order
    return byte_tokens()


def vocab_tokens(model: str, n_base: int, pad: int = 0, rename: dict[int, str] | None = None) -> list[str]:
    specials = ["<unk>", "<s>", "<|endoftext|>", "<|sp3|>", "<|sp4|>"]
    if model == "llama":
        byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
        word = "\u2581w{}"
    else:
        byte_tokens = _gpt2_byte_chars()
        word = "w{}"
    toks = specials + byte_tokens
    toks += [word.format(i) for i in range(len(toks), n_base)]
    toks = toks[:n_base]
    toks += [f"<|pad{k}|>" for k in range(pad)]
    for i, text in (rename or {}).items():
        toks[i] = text
    return toks


def write_vocab_gguf(
    path: str | Path,
    *,
    model: str = "gpt2",
    arch: str = "llama",
    n_base: int = 600,
    pad: int = 0,
    rename: dict[int, str] | None = None,
    bos: int | None = 1,
    eos: int | None = 2,
    add_bos: bool | None = True,
    add_eos: bool | None = False,
    context_length: int | None = 2048,
    name: str | None = None,
    finetune: str | None = None,
    base_model: str | None = None,
    chat_template: str | None = None,
    n_merges: int | None = None,
    tensors: dict[str, np.ndarray] | None = None,
    file_type: int | None = None,
    tokenizer: bool = True,
) -> Path:
    """Write a GGUF file holding a vocabulary (and optionally a few tensors)."""
    path = Path(path)
    tokens = vocab_tokens(model, n_base, pad, rename)
    w = gguf.GGUFWriter(str(path), arch)
    if name is not None:
        w.add_name(name)
    if finetune is not None:
        w.add_finetune(finetune)
    if base_model is not None:
        w.add_base_model_count(1)
        w.add_base_model_name(0, base_model)
    if context_length is not None:
        w.add_context_length(context_length)
    if file_type is not None:
        w.add_file_type(file_type)
    if tokenizer:
        w.add_tokenizer_model(model)
        if model == "gpt2":
            w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        types = [gguf.TokenType.NORMAL] * len(tokens)
        for i in range(N_SPECIAL):
            types[i] = gguf.TokenType.CONTROL
        if model == "llama":
            for i in range(N_SPECIAL, N_SPECIAL + 256):
                types[i] = gguf.TokenType.BYTE
        for i in range(n_base, len(tokens)):
            types[i] = gguf.TokenType.CONTROL
        w.add_token_types(types)
        w.add_token_scores([-float(i) for i in range(len(tokens))])
        if model == "gpt2":
            n_words = max(0, n_base - N_SPECIAL - 256)
            k = min(n_words, 64) if n_merges is None else n_merges
            # merges between word pieces are never used for these tests but must be present
            w.add_token_merges([f"w {i}" for i in range(k)])
        if bos is not None:
            w.add_bos_token_id(bos)
        if eos is not None:
            w.add_eos_token_id(eos)
        if add_bos is not None:
            w.add_add_bos_token(add_bos)
        if add_eos is not None:
            w.add_add_eos_token(add_eos)
        if chat_template is not None:
            w.add_chat_template(chat_template)
    for tname, arr in (tensors or {}).items():
        w.add_tensor(tname, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# ----------------------------------------------------------------------------- raw GGUF bytes

def gguf_string(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def raw_gguf(kvs: list[bytes] = (), tensor_infos: list[bytes] = (), data: bytes = b"", *,
             version: int = 3, n_kv: int | None = None, n_tensors: int | None = None,
             alignment: int = 32) -> bytes:
    """Assemble a GGUF file byte by byte, for malformed-header tests."""
    head = b"GGUF" + struct.pack("<Iqq", version,
                                 len(tensor_infos) if n_tensors is None else n_tensors,
                                 len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(tensor_infos)
    if tensor_infos:
        body += b"\0" * (-len(body) % alignment)
    return body + data


def kv_str(key: str, value: str | bytes) -> bytes:
    return gguf_string(key) + struct.pack("<I", 8) + gguf_string(value)


def kv_u32(key: str, value: int) -> bytes:
    return gguf_string(key) + struct.pack("<II", 4, value)


def kv_str_array(key: str, values: list[str]) -> bytes:
    return gguf_string(key) + struct.pack("<IIQ", 9, 8, len(values)) + b"".join(gguf_string(v) for v in values)


def tensor_info(name: str, shape: tuple[int, ...], ggml_type: int = 0, offset: int = 0) -> bytes:
    return (gguf_string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<q", d) for d in shape)
            + struct.pack("<IQ", ggml_type, offset))


def write_no_byte_tokens(path: str | Path) -> Path:
    """A SentencePiece vocabulary without byte tokens (its <0xNN> renamed): llama.cpp's tokenizer
    aborts on text it cannot spell, so no mode of drafting across vocabularies takes it."""
    return write_vocab_gguf(path, model="llama", rename={5 + b: f"\u2581x{b}" for b in range(256)})
