"""GGUF's and ggml's constants as the vendored llama.cpp defines them (ggml/src/gguf.cpp,
ggml/include/ggml.h, include/llama.h): the limits llama.cpp's loader checks, GGUF's value types,
ggml's tensor types with their block sizes, and llama.cpp's file types. Read by
core/models/gguf_file.py."""

from __future__ import annotations

import struct

GGUF_MAGIC = b"GGUF"
GGUF_MIN_VERSION = 2
GGUF_MAX_VERSION = 3
GGUF_DEFAULT_ALIGNMENT = 32
GGUF_MAX_STRING_LENGTH = 1024 * 1024 * 1024  # ggml/src/gguf.cpp
GGUF_MAX_ARRAY_ELEMENTS = 1024 * 1024 * 1024  # ggml/src/gguf.cpp
GGML_MAX_DIMS = 4
GGML_MAX_NAME = 64
INT64_MAX = (1 << 63) - 1

# Numeric arrays longer than this are not kept in GGUFInfo.arrays (only their length).
MAX_KEPT_ARRAY = 64

# Strings longer than this are not kept in GGUFInfo.metadata (their length is
# recorded in long_strings). Chat templates are a few tens of KB.
MAX_KEPT_STRING_BYTES = 1 << 20

# GGUF value types: id -> (name, fixed size in bytes, struct format or None)
_GGUF_TYPES: dict[int, tuple[str, int, str | None]] = {
    0: ("uint8", 1, "<B"),
    1: ("int8", 1, "<b"),
    2: ("uint16", 2, "<H"),
    3: ("int16", 2, "<h"),
    4: ("uint32", 4, "<I"),
    5: ("int32", 4, "<i"),
    6: ("float32", 4, "<f"),
    7: ("bool", 1, "<?"),
    8: ("string", 0, None),
    9: ("array", 0, None),
    10: ("uint64", 8, "<Q"),
    11: ("int64", 8, "<q"),
    12: ("float64", 8, "<d"),
}
_T_STRING = 8
_T_ARRAY = 9

# ggml tensor types present in llama.cpp's ggml.h: id -> (name, block size, bytes per block).
# Removed ids (4, 5, 31-33, 36-38) are absent, as ggml gives them block size 0.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
    40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18),
    42: ("Q2_0", 64, 18),
}

# llama.h enum llama_ftype (general.file_type)
LLAMA_FTYPE_NAMES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S",
    15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS",
    20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
    25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M",
    30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
    38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
}

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_HEADER = struct.Struct("<4sIqq")  # magic, version, n_tensors, n_kv

# smallest possible encodings, used to bound counts against the file size
_MIN_KV_BYTES = 8 + 1 + 4 + 1  # key length, 1-char key, type, 1-byte value
_MIN_TENSOR_INFO_BYTES = 8 + 1 + 4 + 4 + 8  # name length, 1-char name, n_dims, type, offset
