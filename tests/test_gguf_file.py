"""check_gguf: the pure-Python GGUF sanity check that runs before any native load."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from specscope.core.models import gguf_file
from specscope.core.errors import ModelFileError
from specscope.core.models.gguf_file import check_gguf

from helpers.vocab_gguf import (
    gguf_string,
    kv_str,
    kv_str_array,
    kv_u32,
    raw_gguf,
    tensor_info,
    write_vocab_gguf,
)


def _problem(path) -> str:
    with pytest.raises(ModelFileError) as exc:
        check_gguf(path)
    err = exc.value
    assert err.path == str(path)
    assert str(err).startswith(f"{path}: ")
    assert "\n" not in str(err)
    return err.problem


# ----------------------------------------------------------------------------- good files

def test_vocab_only_file_summary(tmp_path):
    p = write_vocab_gguf(tmp_path / "v.gguf", n_base=600, pad=10, name="Tiny 1M Instruct",
                         chat_template="{{ messages }}", context_length=4096)
    info = check_gguf(p)
    assert info.path == str(p)
    assert info.file_size == p.stat().st_size
    assert info.version == 3
    assert info.n_tensors == 0
    assert info.architecture == "llama"
    assert info.has_tokenizer
    assert info.tokenizer_model == "gpt2"
    assert info.n_vocab == 610
    assert info.array_lengths["tokenizer.ggml.tokens"] == 610
    assert info.array_types["tokenizer.ggml.token_type"] == "int32"
    assert info.context_length == 4096
    assert info.chat_template == "{{ messages }}"
    assert info.metadata["tokenizer.ggml.bos_token_id"] == 1
    assert info.metadata["tokenizer.ggml.add_bos_token"] is True
    assert info.name == "Tiny 1M Instruct"
    assert info.n_params == 0 and info.bits_per_weight == 0.0
    # big arrays are not kept, only their lengths
    assert "tokenizer.ggml.tokens" not in info.metadata


def test_tensor_types_and_bits_per_weight(tmp_path):
    emb = np.zeros((600, 64), np.float16)
    norm = np.zeros(64, np.float32)
    p = write_vocab_gguf(tmp_path / "w.gguf", tensors={"token_embd.weight": emb, "output_norm.weight": norm},
                         file_type=1)
    info = check_gguf(p)
    assert info.n_tensors == 2
    assert info.tensor_types["F16"].count == 1
    assert info.tensor_types["F16"].n_elements == 600 * 64
    assert info.tensor_types["F16"].n_bytes == 600 * 64 * 2
    assert info.tensor_types["F32"].n_bytes == 64 * 4
    assert info.n_params == 600 * 64 + 64
    assert info.bits_per_weight == pytest.approx(8 * (600 * 64 * 2 + 256) / (600 * 64 + 64))
    assert info.main_tensor_type == "F16"
    assert info.file_type == "F16"
    assert info.data_offset % 32 == 0


def test_quantized_tensor_sizes(tmp_path):
    # Q8_0: blocks of 32 weights in 34 bytes
    import gguf

    data = np.zeros((4, 34 * 2), np.uint8)  # 4 rows of 64 weights
    w = gguf.GGUFWriter(str(tmp_path / "q8.gguf"), "llama")
    w.add_tensor("blk.0.ffn_up.weight", data, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    info = check_gguf(tmp_path / "q8.gguf")
    st = info.tensor_types["Q8_0"]
    assert (st.count, st.n_elements, st.n_bytes) == (1, 256, 4 * 68)
    assert st.bits_per_weight == pytest.approx(8.5)
    assert not info.has_tokenizer


def test_minimal_raw_file(tmp_path):
    p = tmp_path / "raw.gguf"
    p.write_bytes(raw_gguf([kv_str("general.architecture", "llama")]))
    info = check_gguf(p)
    assert info.architecture == "llama"
    assert not info.has_tokenizer


# ----------------------------------------------------------------------------- bad files

def test_missing(tmp_path):
    assert "no such file" in _problem(tmp_path / "nope.gguf")


def test_directory(tmp_path):
    d = tmp_path / "dir.gguf"
    d.mkdir()
    assert "directory" in _problem(d)


def test_unreadable_simulated(tmp_path, monkeypatch):
    p = write_vocab_gguf(tmp_path / "v.gguf")

    def deny(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(gguf_file, "open", deny, raising=False)
    assert "permission denied" in _problem(p)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_chmod(tmp_path):
    p = write_vocab_gguf(tmp_path / "v.gguf")
    p.chmod(0)
    try:
        assert "permission denied" in _problem(p)
    finally:
        p.chmod(0o644)


def test_empty(tmp_path):
    p = tmp_path / "empty.gguf"
    p.write_bytes(b"")
    assert "empty" in _problem(p)


@pytest.mark.parametrize("content, hint", [
    (b"<!DOCTYPE html><html>Not found</html>", "text file"),
    (b"PK\x03\x04" + b"\0" * 40, "zip"),
    (struct.pack("<Q", 20) + b'{"a": {"dtype": 1}}' + b"\0" * 8, "safetensors"),
    (b"ggjt" + b"\0" * 40, "GGML"),
    (b"GG", "only 2 bytes"),
])
def test_not_gguf(tmp_path, content, hint):
    p = tmp_path / "x.gguf"
    p.write_bytes(content)
    problem = _problem(p)
    assert "not a GGUF file" in problem
    assert hint in problem


def test_truncated_header(tmp_path):
    p = tmp_path / "t.gguf"
    p.write_bytes(b"GGUF" + struct.pack("<I", 3) + b"\0" * 5)
    assert "truncated" in _problem(p)


@pytest.mark.parametrize("cut", [0.2, 0.5, 0.9, 0.999])
def test_truncated_vocabulary(tmp_path, cut):
    p = write_vocab_gguf(tmp_path / "v.gguf", n_base=2000)
    data = p.read_bytes()
    p.write_bytes(data[: int(len(data) * cut)])
    assert "truncated" in _problem(p)


def test_truncated_tensor_data(tmp_path):
    p = write_vocab_gguf(tmp_path / "w.gguf", tensors={"token_embd.weight": np.zeros((600, 64), np.float32)})
    data = p.read_bytes()
    p.write_bytes(data[:-1000])
    problem = _problem(p)
    assert "truncated" in problem and "token_embd.weight" in problem


@pytest.mark.parametrize("version, words", [(1, "version 1"), (4, "not supported"), (0, "not supported"),
                                            (0x03000000, "big-endian")])
def test_unsupported_version(tmp_path, version, words):
    p = tmp_path / "v.gguf"
    p.write_bytes(raw_gguf([kv_str("general.architecture", "llama")], version=version))
    assert words in _problem(p)


@pytest.mark.parametrize("field", ["n_kv", "n_tensors"])
@pytest.mark.parametrize("value", [-1, 1 << 40, (1 << 63) - 1])
def test_counts_out_of_bounds(tmp_path, field, value):
    p = tmp_path / "c.gguf"
    p.write_bytes(raw_gguf([kv_str("general.architecture", "llama")], **{field: value}))
    assert "cannot fit" in _problem(p)


def test_key_length_past_eof(tmp_path):
    p = tmp_path / "k.gguf"
    p.write_bytes(raw_gguf([struct.pack("<Q", 1 << 62) + b"general.architecture"]))
    assert "limit" in _problem(p) or "truncated" in _problem(p)


def test_string_value_past_eof(tmp_path):
    p = tmp_path / "s.gguf"
    kv = gguf_string("general.architecture") + struct.pack("<IQ", 8, 1000) + b"llama"
    p.write_bytes(raw_gguf([kv]))
    assert "truncated" in _problem(p)


def test_array_past_eof(tmp_path):
    p = tmp_path / "a.gguf"
    kv = gguf_string("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 1 << 30) + b"\0" * 64
    p.write_bytes(raw_gguf([kv]))
    assert "truncated" in _problem(p)


def test_string_array_count_past_eof(tmp_path):
    p = tmp_path / "a.gguf"
    kv = gguf_string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 1 << 29) + gguf_string("a")
    p.write_bytes(raw_gguf([kv]))
    assert "truncated" in _problem(p)


def test_string_in_array_past_eof(tmp_path):
    p = tmp_path / "a.gguf"
    kv = gguf_string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + gguf_string("a") \
        + gguf_string("b") + struct.pack("<Q", 1 << 40) + b"c"
    p.write_bytes(raw_gguf([kv]))
    assert "runs past the end" in _problem(p)


@pytest.mark.parametrize("kv, words", [
    (gguf_string("x") + struct.pack("<I", 13) + b"\0" * 8, "invalid value type 13"),
    (gguf_string("x") + struct.pack("<IIQ", 9, 9, 1) + b"\0" * 16, "invalid element type 9"),
    (gguf_string("x") + struct.pack("<IIQ", 9, 77, 1) + b"\0" * 16, "invalid element type 77"),
    (gguf_string("x") + struct.pack("<IB", 7, 2), "not 0 or 1"),
    (gguf_string("") + struct.pack("<II", 4, 1), "empty name"),
    (gguf_string(b"\xff\xfe") + struct.pack("<II", 4, 1), "UTF-8"),
])
def test_invalid_value_types(tmp_path, kv, words):
    p = tmp_path / "t.gguf"
    p.write_bytes(raw_gguf([kv]))
    assert words in _problem(p)


def test_duplicate_key(tmp_path):
    p = tmp_path / "d.gguf"
    p.write_bytes(raw_gguf([kv_u32("a.b", 1), kv_u32("a.b", 2)]))
    assert "twice" in _problem(p)


def test_duplicate_token_text_is_refused(tmp_path):
    # llama.cpp's vocabulary loader aborts the process on this (GGML_ASSERT)
    p = write_vocab_gguf(tmp_path / "dup.gguf", rename={300: "w301"})
    assert "same token text" in _problem(p)


def test_short_token_type_array_is_refused(tmp_path):
    p = tmp_path / "tt.gguf"
    kv_types = gguf_string("tokenizer.ggml.token_type") + struct.pack("<IIQ", 9, 5, 1) + struct.pack("<i", 1)
    p.write_bytes(raw_gguf([kv_str("tokenizer.ggml.model", "gpt2"),
                            kv_str_array("tokenizer.ggml.tokens", ["a", "b", "c"]), kv_types]))
    assert "1 entries for 3 tokens" in _problem(p)


@pytest.mark.parametrize("alignment, words", [(0, "power of 2"), (48, "power of 2")])
def test_bad_alignment(tmp_path, alignment, words):
    p = tmp_path / "al.gguf"
    p.write_bytes(raw_gguf([kv_u32("general.alignment", alignment)]))
    assert words in _problem(p)


@pytest.mark.parametrize("info, words", [
    (gguf_string("t") + struct.pack("<I", 5) + struct.pack("<5q", 1, 1, 1, 1, 1) + struct.pack("<IQ", 0, 0),
     "5 dimensions"),
    (tensor_info("t", (4, -1)), "negative dimension"),
    (tensor_info("t", (1 << 62, 1 << 62)), "too large"),
    (tensor_info("t", (4,), ggml_type=4), "unknown or removed ggml type 4"),
    (tensor_info("t", (4,), ggml_type=99), "unknown or removed ggml type 99"),
    (tensor_info("t", (33,), ggml_type=8), "not a multiple of the block size 32"),
    (tensor_info("t", (4,), offset=64), "offset 64, expected 0"),
    (tensor_info("t" * 64, (4,)), "name of 64 bytes"),
    (tensor_info("t", (1 << 40,)), "truncated"),
])
def test_tensor_info_out_of_bounds(tmp_path, info, words):
    p = tmp_path / "ti.gguf"
    p.write_bytes(raw_gguf([kv_str("general.architecture", "llama")], [info], b"\0" * 64))
    assert words in _problem(p)


def test_duplicate_tensor_name(tmp_path):
    p = tmp_path / "dt.gguf"
    p.write_bytes(raw_gguf([], [tensor_info("t", (8,)), tensor_info("t", (8,), offset=32)], b"\0" * 64))
    assert "appears twice" in _problem(p)


def test_a_wrong_data_offset_names_the_tensor_it_belongs_to(tmp_path):
    p = tmp_path / "off.gguf"
    p.write_bytes(raw_gguf([], [tensor_info("first", (8,), offset=32), tensor_info("last", (8,))],
                           b"\0" * 64))
    assert "tensor 'first' has data offset 32, expected 0" in _problem(p)


def test_tensor_data_exactly_fits(tmp_path):
    p = tmp_path / "ok.gguf"
    p.write_bytes(raw_gguf([], [tensor_info("a", (8,)), tensor_info("b", (3,), offset=32)], b"\0" * (32 + 12)))
    info = check_gguf(p)
    assert info.tensor_types["F32"].n_elements == 11
    p.write_bytes(p.read_bytes()[:-1])
    assert "truncated" in _problem(p)


# ----------------------------------------------------------------------------- names from the file, shown escaped

CORRUPT = "gen\0ra\n.\x1bam\re\t\u200b"           # NUL, newline, ESC, CR, tab, a zero-width space
CORRUPT_SHOWN = r"'gen\0ra\n.\x1bam\re\t\u200b'"


@pytest.mark.parametrize("kv, words", [
    (gguf_string(CORRUPT) + struct.pack("<I", 77) + b"\0" * 8, "invalid value type 77"),
    (gguf_string(CORRUPT) + struct.pack("<IB", 7, 2), "not 0 or 1"),
    (gguf_string(CORRUPT) + struct.pack("<IIQ", 9, 8, 1) + b"\xff" * 8, "runs past the end"),
    (gguf_string(CORRUPT.encode() + b"\xff") + struct.pack("<II", 4, 1), "not valid UTF-8"),
])
def test_a_corrupted_key_name_is_shown_escaped_on_one_line(tmp_path, kv, words):
    p = tmp_path / "k.gguf"
    p.write_bytes(raw_gguf([kv]))
    problem = _problem(p)                      # one line (checked there)
    assert words in problem
    assert not any(c in problem for c in "\0\r\t\x1b\u200b")
    assert CORRUPT_SHOWN[:-1] in problem        # what is there, escaped


def test_a_duplicate_corrupted_key_and_tensor_name_are_escaped(tmp_path):
    p = tmp_path / "d.gguf"
    p.write_bytes(raw_gguf([kv_u32(CORRUPT, 1), kv_u32(CORRUPT, 2)]))
    assert f"metadata key {CORRUPT_SHOWN} appears twice" in _problem(p)
    name = "t\n\x07"
    p.write_bytes(raw_gguf([], [tensor_info(name, (8,)), tensor_info(name, (8,), offset=32)], b"\0" * 64))
    assert r"tensor 't\n\x07' appears twice" in _problem(p)


@pytest.mark.parametrize("raw, shown", [
    ("plain.key", "'plain.key'"),
    ("it's", r"'it\'s'"),
    ("a\\b", r"'a\\b'"),
    (b"\xc3(", r"'\xc3('"),
    ("x" * 300, "'" + "x" * 200 + "'…"),
])
def test_quote_text(raw, shown):
    assert gguf_file.quote_text(raw) == shown
