"""Pure-Python sanity check and summary of a GGUF file, before llama.cpp sees it.

Malformed GGUF headers are a known attack surface of native parsers, and a
native loader that hits one may abort the whole process instead of returning
an error. :func:`check_gguf` therefore walks the header with bounds checks on
every length and count (the same limits ggml's ``gguf_init_from_file`` and
llama.cpp's vocabulary loader apply, plus a few that would otherwise end in a
``GGML_ASSERT``), and raises :class:`~specscope.core.errors.ModelFileError`
with a sentence naming the file and the problem.

It never reads tensor data: the file is memory-mapped and only the header
(metadata and tensor infos) is touched, so a multi-gigabyte model is checked
in about the time it takes to walk its vocabulary (~0.1 s for 150k tokens).
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specscope.core.errors import ModelFileError, printable
from specscope.core.models.gguf_types import (_GGUF_TYPES, _HEADER, _I64, _MIN_KV_BYTES,
                                              _MIN_TENSOR_INFO_BYTES, _T_ARRAY, _T_STRING, _U32,
                                              _U64, GGML_MAX_DIMS, GGML_MAX_NAME, GGML_TYPES,
                                              GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC,
                                              GGUF_MAX_ARRAY_ELEMENTS, GGUF_MAX_STRING_LENGTH,
                                              GGUF_MAX_VERSION, GGUF_MIN_VERSION, INT64_MAX,
                                              LLAMA_FTYPE_NAMES, MAX_KEPT_ARRAY,
                                              MAX_KEPT_STRING_BYTES)

__all__ = [
    "GGUFInfo",
    "TensorInfo",
    "TensorTypeStats",
    "check_gguf",
    "quote_text",
    "GGML_TYPES",
    "LLAMA_FTYPE_NAMES",
]

@dataclass(frozen=True)
class TensorTypeStats:
    """Tensors of one ggml type: how many, how many weights, how many bytes."""

    count: int
    n_elements: int
    n_bytes: int

    @property
    def bits_per_weight(self) -> float:
        return 8.0 * self.n_bytes / self.n_elements if self.n_elements else 0.0


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the file: its ggml type name, its shape (ggml's ne: the row length
    first), and where its data lies in the file."""

    type: str
    shape: tuple[int, ...]
    file_offset: int
    n_bytes: int


@dataclass(frozen=True)
class GGUFInfo:
    """What the header of a GGUF file says, checked for consistency."""

    path: str
    file_size: int
    version: int
    n_tensors: int
    n_kv: int
    alignment: int
    data_offset: int  # where the tensor data section starts (0 if no tensors)
    metadata: dict[str, Any]  # scalar keys: int, float, bool or str
    array_lengths: dict[str, int]  # array keys: number of elements
    array_types: dict[str, str]  # array keys: element type name
    long_strings: dict[str, int] = field(default_factory=dict)  # strings not kept: length
    # numeric arrays of at most MAX_KEPT_ARRAY elements: their values (eagle3.target_layers)
    arrays: dict[str, tuple] = field(default_factory=dict)
    tensor_types: dict[str, TensorTypeStats] = field(default_factory=dict)
    tensors: dict[str, TensorInfo] = field(default_factory=dict, repr=False, compare=False)
    # file offset of each entry of tokenizer.ggml.tokens (its length prefix), plus the end:
    # token i's bytes lie in [token_offsets[i] + 8, token_offsets[i + 1])
    token_offsets: array | None = field(default=None, repr=False, compare=False)

    # -- derived -----------------------------------------------------------
    def text(self, key: str) -> str | None:
        """A string value of the metadata; None when the key is missing or holds another type."""
        v = self.metadata.get(key)
        return v if isinstance(v, str) else None

    @property
    def architecture(self) -> str | None:
        return self.text("general.architecture")

    @property
    def name(self) -> str | None:
        return self.text("general.name")

    @property
    def tokenizer_model(self) -> str | None:
        return self.text("tokenizer.ggml.model")

    @property
    def n_vocab(self) -> int:
        return self.array_lengths.get("tokenizer.ggml.tokens", 0)

    @property
    def has_tokenizer(self) -> bool:
        """True when llama.cpp would find a real vocabulary in the file."""
        return (
            self.tokenizer_model not in (None, "none", "no_vocab")
            and self.array_types.get("tokenizer.ggml.tokens") == "string"
            and self.n_vocab > 0
        )

    @property
    def context_length(self) -> int | None:
        arch = self.architecture
        v = self.metadata.get(f"{arch}.context_length") if arch else None
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def chat_template(self) -> str | None:
        return self.text("tokenizer.chat_template")

    @property
    def n_params(self) -> int:
        """Number of weights (elements of all tensors), as llama_model_n_params counts."""
        return sum(s.n_elements for s in self.tensor_types.values())

    @property
    def tensor_bytes(self) -> int:
        return sum(s.n_bytes for s in self.tensor_types.values())

    @property
    def bits_per_weight(self) -> float:
        n = self.n_params
        return 8.0 * self.tensor_bytes / n if n else 0.0

    @property
    def file_type(self) -> str | None:
        """The quantisation named by general.file_type (e.g. "Q4_K_M"), if any."""
        v = self.metadata.get("general.file_type")
        if isinstance(v, int) and not isinstance(v, bool):
            return LLAMA_FTYPE_NAMES.get(v, f"type {v}")
        return None

    @property
    def main_tensor_type(self) -> str | None:
        """The ggml type that holds the most bytes."""
        if not self.tensor_types:
            return None
        return max(self.tensor_types.items(), key=lambda kv: kv[1].n_bytes)[0]


def quote_text(raw: bytes | str, quote: str = "'", limit: int = 200) -> str:
    """A key, name or token text from a file in quotes, escaped by :func:`printable`
    (the quote and backslashes too), cut after ``limit`` characters."""
    text = raw.decode("utf-8", errors="surrogateescape") if isinstance(raw, bytes) else raw
    cut = len(text) > limit
    return quote + printable(text[:limit], also="\\" + quote) + quote + ("…" if cut else "")


class _Malformed(Exception):
    """Internal: the header is inconsistent; the message is the problem."""


def _fmt_bytes(n: int) -> str:
    return f"{n:,} bytes"


def check_gguf(path: str | os.PathLike) -> GGUFInfo:
    """Validate ``path`` as a GGUF file with pure Python and summarise its header.

    Raises :class:`ModelFileError` (message ``"PATH: problem"``) when the file
    is missing, a directory, unreadable, empty, not GGUF, of an unsupported
    version, or its header is inconsistent or truncated in any way that could
    make a native parser read out of bounds or abort.
    """
    p = Path(path)
    spath = str(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ModelFileError(spath, "no such file") from None
    except PermissionError:
        raise ModelFileError(spath, "the file cannot be read (permission denied)") from None
    except OSError as e:
        raise ModelFileError(spath, f"the file cannot be read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ModelFileError(spath, "this is a directory, not a GGUF model file")
    if not stat.S_ISREG(st.st_mode):
        raise ModelFileError(spath, "this is not a regular file")
    size = st.st_size
    try:
        f = open(p, "rb")
    except PermissionError:
        raise ModelFileError(spath, "the file cannot be read (permission denied)") from None
    except OSError as e:
        raise ModelFileError(spath, f"the file cannot be read ({e.strerror or e})") from None
    with f:
        if size == 0:
            raise ModelFileError(spath, "the file is empty")
        try:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise ModelFileError(spath, f"the file cannot be read ({e})") from None
        try:
            return _parse(spath, buf, len(buf))
        except _Malformed as e:
            raise ModelFileError(spath, str(e)) from None
        except OSError as e:  # e.g. an I/O error while paging in
            raise ModelFileError(spath, f"the file cannot be read ({e.strerror or e})") from None
        finally:
            buf.close()


def _parse(spath: str, buf: mmap.mmap, size: int) -> GGUFInfo:
    """The file's header, metadata and tensor table, each checked as llama.cpp's loader checks
    it (gguf_init_from_file_impl), then the data section's offsets and size."""
    version, n_tensors, n_kv = _header(buf, size)
    r = _Reader(buf, size, _HEADER.size)
    meta = _Metadata()
    for i in range(n_kv):
        meta.read(r, i)
    _check_tokenizer_arrays(meta.values, meta.array_lengths, meta.array_types)
    alignment = meta.alignment()
    seen: set[bytes] = set()
    infos = [_tensor_info(r, i, seen) for i in range(n_tensors)]
    data_offset = -(-r.pos // alignment) * alignment if n_tensors else 0
    _check_data(infos, data_offset, size, alignment)
    stats: dict[int, list[int]] = {}
    for _, _, nbytes, ttype, shape in infos:
        s = stats.setdefault(ttype, [0, 0, 0])
        s[0], s[1], s[2] = s[0] + 1, s[1] + _n_elements(shape), s[2] + nbytes
    return GGUFInfo(
        path=spath, file_size=size, version=version, n_tensors=n_tensors, n_kv=n_kv,
        alignment=alignment, data_offset=data_offset, metadata=meta.values,
        array_lengths=meta.array_lengths, array_types=meta.array_types,
        long_strings=meta.long_strings, arrays=meta.arrays,
        tensor_types={
            GGML_TYPES[t][0]: TensorTypeStats(count=c, n_elements=e, n_bytes=b)
            for t, (c, e, b) in sorted(stats.items(), key=lambda kv: -kv[1][2])
        },
        token_offsets=meta.token_offsets,
        tensors={name: TensorInfo(GGML_TYPES[t][0], shape, data_offset + offset, nbytes)
                 for name, offset, nbytes, t, shape in infos},
    )


def _header(buf: mmap.mmap, size: int) -> tuple[int, int, int]:
    """(version, n_tensors, n_kv) of a GGUF header llama.cpp reads, or why not."""
    if size < 4 or buf[:4] != GGUF_MAGIC:
        raise _Malformed(_not_gguf_reason(buf, size))
    if size < _HEADER.size:
        raise _Malformed(
            f"the file is truncated: it ends inside the GGUF header ({size} of {_HEADER.size} bytes)"
        )
    _, version, n_tensors, n_kv = _HEADER.unpack_from(buf, 0)
    if version & 0xFFFF == 0 and version != 0:
        raise _Malformed(
            f"GGUF version {version} looks byte-swapped: this is a big-endian file, "
            "which llama.cpp cannot load on this machine"
        )
    if version == 1:
        raise _Malformed("GGUF version 1 is no longer supported by llama.cpp; convert the model again")
    if not GGUF_MIN_VERSION <= version <= GGUF_MAX_VERSION:
        raise _Malformed(
            f"GGUF version {version} is not supported (this llama.cpp reads versions 2 and 3)"
        )
    room = size - _HEADER.size
    for count, per, what in ((n_tensors, _MIN_TENSOR_INFO_BYTES, "tensors"),
                             (n_kv, _MIN_KV_BYTES, "metadata keys")):
        if count < 0 or count * per > room:
            raise _Malformed(
                f"the header declares {count} {what}, which cannot fit in a file of "
                f"{_fmt_bytes(size)} (corrupt or truncated header)"
            )
    return version, n_tensors, n_kv


class _Reader:
    """Little-endian reads from ``buf`` at ``pos``, each checked against the file's end."""

    def __init__(self, buf: mmap.mmap, size: int, pos: int):
        self.buf, self.size, self.pos = buf, size, pos

    def need(self, n: int, what: str) -> None:
        if self.pos + n > self.size:
            raise _Malformed(
                f"the file is truncated: {what} needs {_fmt_bytes(n)} at offset {self.pos:,} "
                f"but the file ends at {self.size:,}"
            )

    def u32(self, what: str) -> int:
        self.need(4, what)
        (value,) = _U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return value

    def u64(self, what: str) -> int:
        self.need(8, what)
        (value,) = _U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return value

    def string(self, what: str) -> bytes:
        n = self.u64(f"the length of {what}")
        if n > GGUF_MAX_STRING_LENGTH:
            raise _Malformed(f"{what} claims a length of {n:,} bytes, over GGUF's limit of 1 GiB")
        self.need(n, what)
        self.pos += n
        return self.buf[self.pos - n:self.pos]


@dataclass
class _Metadata:
    """The key/value pairs read so far: scalars and short strings (``values``), arrays (their
    lengths and element types; the short ones' values), long strings' lengths, and the
    vocabulary's string offsets."""
    values: dict[str, Any] = field(default_factory=dict)
    array_lengths: dict[str, int] = field(default_factory=dict)
    array_types: dict[str, str] = field(default_factory=dict)
    long_strings: dict[str, int] = field(default_factory=dict)
    arrays: dict[str, tuple] = field(default_factory=dict)
    token_offsets: array | None = None

    def read(self, r: _Reader, i: int) -> None:
        """Key/value pair ``i``: its name, its type, its value."""
        raw_key = r.string(f"the name of metadata key {i}")
        if not raw_key:
            raise _Malformed(f"metadata key {i} has an empty name")
        try:
            key = raw_key.decode("utf-8")
        except UnicodeDecodeError:
            raise _Malformed(f"the name of metadata key {i} is not valid UTF-8 "
                             f"({quote_text(raw_key)})") from None
        shown = quote_text(key)
        if key in self.values or key in self.array_lengths or key in self.long_strings:
            raise _Malformed(f"metadata key {shown} appears twice")
        vtype = r.u32(f"the type of metadata key {shown}")
        if vtype not in _GGUF_TYPES:
            raise _Malformed(f"metadata key {shown} has an invalid value type {vtype}")
        if vtype == _T_ARRAY:
            self._array(r, key, shown)
        elif vtype == _T_STRING:
            self._string(r, key, shown)
        else:
            _, esize, fmt = _GGUF_TYPES[vtype]
            r.need(esize, f"the value of {shown}")
            (value,) = struct.unpack_from(fmt, r.buf, r.pos)
            if vtype == 7 and r.buf[r.pos] > 1:
                raise _Malformed(f"the boolean {shown} holds {r.buf[r.pos]}, not 0 or 1")
            r.pos += esize
            self.values[key] = value

    def _array(self, r: _Reader, key: str, shown: str) -> None:
        r.need(12, f"the array header of {shown}")
        etype = r.u32(f"the array header of {shown}")
        n = r.u64(f"the array header of {shown}")
        if etype not in _GGUF_TYPES or etype == _T_ARRAY:
            raise _Malformed(f"metadata array {shown} has an invalid element type {etype}")
        if n > GGUF_MAX_ARRAY_ELEMENTS:
            raise _Malformed(f"metadata array {shown} claims {n:,} elements, over GGUF's limit")
        if etype == _T_STRING:
            if n * 8 > r.size - r.pos:
                raise _Malformed(
                    f"the file is truncated or corrupt: metadata array {shown} claims {n:,} strings, "
                    f"more than the {_fmt_bytes(r.size - r.pos)} left can hold"
                )
            if n > 2**31 - 1:
                raise _Malformed(f"metadata array {shown} claims {n:,} strings, more than llama.cpp reads")
            if key == "tokenizer.ggml.tokens":
                self.token_offsets = array("Q")
                r.pos = _walk_tokens(r.buf, r.pos, n, r.size, key, self.token_offsets)
            else:
                r.pos = _walk_strings(r.buf, r.pos, n, r.size, key)
        else:
            _, esize, efmt = _GGUF_TYPES[etype]
            r.need(n * esize, f"metadata array {shown} ({n:,} × {_GGUF_TYPES[etype][0]})")
            if n <= MAX_KEPT_ARRAY:
                self.arrays[key] = struct.unpack_from(f"<{n}{efmt[1]}", r.buf, r.pos)
            r.pos += n * esize
        self.array_lengths[key] = n
        self.array_types[key] = _GGUF_TYPES[etype][0]

    def _string(self, r: _Reader, key: str, shown: str) -> None:
        """A string value: kept when short, its length only when long."""
        r.need(8, f"the length of the value of {shown}")
        (n,) = _U64.unpack_from(r.buf, r.pos)
        if n <= MAX_KEPT_STRING_BYTES:
            self.values[key] = r.string(f"the value of {shown}").decode("utf-8", errors="replace")
            return
        if n > GGUF_MAX_STRING_LENGTH:
            raise _Malformed(f"the value of {shown} claims a length of {n:,} bytes, over GGUF's limit")
        r.pos += 8
        r.need(n, f"the value of {shown}")
        r.pos += n
        self.long_strings[key] = n

    def alignment(self) -> int:
        """general.alignment (a power of 2), or GGUF's default."""
        if "general.alignment" not in self.values and "general.alignment" not in self.array_lengths:
            return GGUF_DEFAULT_ALIGNMENT
        alignment = self.values.get("general.alignment")
        if not isinstance(alignment, int) or isinstance(alignment, bool):
            raise _Malformed("'general.alignment' is not an integer")
        if alignment <= 0 or alignment & (alignment - 1):
            raise _Malformed(f"'general.alignment' is {alignment}, not a power of 2")
        return alignment


def _n_elements(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _tensor_info(r: _Reader, i: int, seen: set[bytes]) -> tuple[str, int, int, int, tuple]:
    """Tensor info ``i``: (name, data offset, bytes, ggml type, shape); ``seen``: the names
    before it."""
    raw_name = r.string(f"the name of tensor {i}")
    shown = quote_text(raw_name)
    if len(raw_name) >= GGML_MAX_NAME:
        raise _Malformed(f"tensor {i} has a name of {len(raw_name)} bytes; ggml allows at most {GGML_MAX_NAME - 1}")
    if raw_name in seen:
        raise _Malformed(f"tensor {shown} appears twice")
    seen.add(raw_name)
    n_dims = r.u32(f"the shape of tensor {shown}")
    if n_dims > GGML_MAX_DIMS:
        raise _Malformed(f"tensor {shown} has {n_dims} dimensions; ggml allows at most {GGML_MAX_DIMS}")
    r.need(8 * n_dims + 4 + 8, f"the shape, type and offset of tensor {shown}")
    ne = tuple(_I64.unpack_from(r.buf, r.pos + 8 * j)[0] for j in range(n_dims))
    r.pos += 8 * n_dims
    if any(d < 0 for d in ne):
        raise _Malformed(f"tensor {shown} has a negative dimension {ne}")
    n_el = _n_elements(ne)
    if n_el > INT64_MAX:
        raise _Malformed(f"tensor {shown} has a shape {ne} too large to address")
    ttype = r.u32(f"the type of tensor {shown}")
    if ttype not in GGML_TYPES:
        raise _Malformed(f"tensor {shown} has an unknown or removed ggml type {ttype}")
    tname, blck, tsize = GGML_TYPES[ttype]
    ne0 = ne[0] if ne else 1
    if ne0 % blck:
        raise _Malformed(
            f"tensor {shown} of type {tname} has {ne0} elements per row, not a multiple of the block size {blck}"
        )
    offset = r.u64(f"the offset of tensor {shown}")
    return raw_name.decode("utf-8", errors="replace"), offset, n_el // blck * tsize, ttype, ne


def _check_data(infos, data_offset: int, size: int, alignment: int) -> None:
    """Each tensor's data where the one before it ends (aligned), and inside the file."""
    expected = 0
    for name, offset, nbytes, _, _ in infos:
        shown = quote_text(name)
        if offset != expected:
            raise _Malformed(
                f"tensor {shown} has data offset {offset:,}, expected {expected:,} (corrupt tensor table)"
            )
        end = data_offset + offset + nbytes
        if end > size:
            raise _Malformed(
                f"the file is truncated: the data of tensor {shown} ends at byte {end:,} "
                f"but the file has only {_fmt_bytes(size)} (an incomplete download?)"
            )
        expected += -(-nbytes // alignment) * alignment


def _walk_strings(buf: mmap.mmap, pos: int, n: int, size: int, key: str,
                  offsets: array | None = None) -> int:
    """Skip ``n`` length-prefixed strings starting at ``pos``; return the end.

    With ``offsets``, append the position of each string (its length prefix)
    and finally the end. Kept tight: this loop is most of the check's time.
    """
    u64 = _U64.unpack_from
    j = 0
    try:
        if offsets is None:
            for j in range(n):
                pos += 8 + u64(buf, pos)[0]
        else:
            mark = offsets.append
            for j in range(n):
                mark(pos)
                pos += 8 + u64(buf, pos)[0]
            mark(pos)
    except (struct.error, OverflowError, ValueError):
        raise _Malformed(
            f"the file is truncated or corrupt: metadata array {quote_text(key)} runs past the end of the file "
            f"(element {j:,} of {n:,})"
        ) from None
    if pos > size:
        raise _Malformed(
            f"the file is truncated or corrupt: metadata array {quote_text(key)} runs past the end of the file "
            f"(its last string ends at byte {pos:,}, the file at {size:,})"
        )
    return pos


def _walk_tokens(buf: mmap.mmap, pos: int, n: int, size: int, key: str, offsets: array) -> int:
    """Like _walk_strings, recording offsets, and reject duplicate token texts.

    llama.cpp's vocabulary loader asserts (aborting the process) when two ids
    have the same text, so this must be caught here.
    """
    end = _walk_strings(buf, pos, n, size, key, offsets)
    texts = {buf[a + 8:b] for a, b in zip(offsets, offsets[1:])}
    if len(texts) != n:
        # llama.cpp renames an empty token i to "[EMPTY_i]": redo exactly if there are any
        if b"" in texts:
            texts = {buf[a + 8:b] if b - a > 8 else b"[EMPTY_%d]" % i
                     for i, (a, b) in enumerate(zip(offsets, offsets[1:]))}
        if len(texts) != n:
            raise _Malformed(
                f"the vocabulary '{key}' holds the same token text under two ids; llama.cpp cannot load it"
            )
    return end


def _check_tokenizer_arrays(metadata: dict, lengths: dict, types: dict) -> None:
    """Tokenizer arrays llama.cpp reads by token id must cover every id."""
    if "tokenizer.ggml.tokens" not in lengths:
        return
    n = lengths["tokenizer.ggml.tokens"]
    if types["tokenizer.ggml.tokens"] != "string":
        raise _Malformed("'tokenizer.ggml.tokens' is not an array of strings")
    for key, allowed in (
        ("tokenizer.ggml.scores", ("float32", "int32")),
        ("tokenizer.ggml.token_type", ("int32",)),
    ):
        if key in lengths:
            if types[key] not in allowed:
                raise _Malformed(f"'{key}' is an array of {types[key]}, expected {' or '.join(allowed)}")
            if lengths[key] < n:
                raise _Malformed(f"'{key}' has {lengths[key]:,} entries for {n:,} tokens")
        elif key in metadata:
            raise _Malformed(f"'{key}' is a single value, expected an array")
    if n > 2**31 - 1:
        raise _Malformed(f"the vocabulary has {n:,} tokens, more than llama.cpp can index")


def _not_gguf_reason(buf: mmap.mmap, size: int) -> str:
    head = bytes(buf[: min(size, 16)])
    hint = ""
    if head.startswith(b"PK\x03\x04"):
        hint = " (it is a zip archive, e.g. a PyTorch checkpoint)"
    elif head.startswith(b"\x80") or head.startswith(b"\x80\x02"):
        hint = " (it looks like a Python pickle)"
    elif size >= 10 and head[8:10] in (b'{"', b"{'"):
        hint = " (it looks like a safetensors file; convert it with llama.cpp's convert_hf_to_gguf.py)"
    elif head.startswith(b"ggml") or head.startswith(b"ggjt") or head.startswith(b"ggmf") or head[:4] in (
        b"lmgg", b"tjgg", b"fmgg"
    ):
        hint = " (it is an old GGML/GGJT file, which llama.cpp no longer reads)"
    elif head.lstrip()[:1] in (b"<", b"{", b"#"):
        hint = " (it looks like a text file, e.g. an HTML error page saved instead of the model)"
    if size < 4:
        return f"not a GGUF file: it is only {size} byte{'s' if size != 1 else ''} long"
    return f"not a GGUF file: it does not start with the bytes 'GGUF'{hint}"
