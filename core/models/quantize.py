"""Quantized copies of a GGUF model, made by llama.cpp's own ``llama_model_quantize``.

A draft quantized harder than the target is often a good trade (it is wrong a
little more often but costs much less). :class:`Quantization` makes the copies so that
``specscope bench -md ORIG -md DIR/x.Q8_0.gguf ...`` can sweep them against the original.

``llama_model_quantize`` is one blocking C call with no callback, so each file is made in a
child process (``python -m specscope.core.models.quantize JSON``, as the crash probe runs its
child): Stop terminates it, and a crash in llama.cpp cannot take the caller down. The child
writes ``NAME.part`` beside the destination; only a complete file is renamed to its name,
and a stopped or failed run's part file is removed. An existing file is never overwritten
unless asked.

Progress within a file is the share of the model's weights (elements) in the tensors
llama.cpp has finished, read from its ``[ i/ n] name - [shape]`` log line per tensor; it
counts weights, not bytes written or time.

llama.cpp decides the types of single tensors itself: 1-D tensors stay F32, and a tensor
whose rows are not a multiple of the type's block (256 for K-quants) falls back to a
compatible type (Q4_K -> Q5_0, Q6_K -> Q8_0, ...; ``tensor_type_fallback`` in
src/llama-quant.cpp), and the output matrix (or a token embedding tied to it) gets more bits
(Q6_K for most types) unless ``pure`` (llama-quantize's ``--pure``) asks for one type
everywhere. Each result therefore reports the tensor types the file really holds.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import llama_cpp.llama_cpp as ll

from specscope.core.errors import ConfigError, ModelFileError, SpecScopeError
from specscope.core.models.gguf_file import check_gguf

# the types offered (llama.h enum llama_ftype), and their nominal bits per weight
TYPES: dict[str, tuple[int, float]] = {
    "F16": (1, 16.0), "Q8_0": (7, 8.5), "Q6_K": (18, 6.6), "Q5_K_M": (17, 5.7),
    "Q5_0": (8, 5.5), "Q4_K_M": (15, 4.9), "Q4_0": (2, 4.5), "Q3_K_M": (12, 3.9),
    "Q2_K": (10, 3.4),
}
DEFAULT_TYPES = ("Q8_0", "Q4_0", "Q4_K_M")
_FLOAT = {"F32", "F16", "BF16"}
_CHILD_ERROR = 3
_PART = ".part"

Progress = Callable[[int, int, float, str], None]   # file index, files, fraction of file, dest


EXISTS = "already exists and is not overwritten: choose another folder or delete it"


@dataclass
class QuantResult:
    qtype: str
    path: Path
    status: str = "pending"          # done | failed | stopped | pending
    error: str = ""
    seconds: float = 0.0
    size: int = 0
    bits_per_weight: float = 0.0
    tensor_types: dict[str, int] = field(default_factory=dict)   # ggml type -> tensors
    fallbacks: int = 0               # tensors llama.cpp gave another type (row size)

    def describe(self) -> str:
        """One line: the file, its size, bits per weight and the time taken (or the error)."""
        if self.status != "done":
            return self.error or f"{self.path}: {self.status}"
        mix = ", ".join(f"{t} x{n}" for t, n in sorted(self.tensor_types.items(), key=lambda kv: -kv[1]))
        note = (f"; {self.fallbacks} tensor(s) fell back to another type (rows not a multiple "
                "of the block)" if self.fallbacks else "")
        return (f"{self.path}  {self.size / 1e6:.2f} MB  {self.bits_per_weight:.2f} bits/weight  "
                f"{self.seconds:.2f} s  [{mix}]{note}")


def output_name(source: str | Path, qtype: str) -> str:
    """``demo-draft.gguf`` + Q4_0 -> ``demo-draft.Q4_0.gguf``."""
    stem = Path(source).name
    if stem.lower().endswith(".gguf"):
        stem = stem[:-5]
    return f"{stem}.{qtype}.gguf"


def parse_quant_types(text: str | Sequence[str]) -> list[str]:
    names = text.split(",") if isinstance(text, str) else list(text)
    out = []
    for name in (n.strip().upper() for n in names):
        if not name:
            continue
        if name not in TYPES:
            raise ConfigError(f"unknown quantization type {name!r}: choose from {', '.join(TYPES)}")
        if name not in out:
            out.append(name)
    if not out:
        raise ConfigError("no quantization type given (e.g. --type Q8_0,Q4_0,Q4_K_M)")
    return out


def has_f32_weights(info) -> bool:
    """True when F32 tensors hold more than the norms (which stay F32 in every type): an
    F16 copy is then worth making."""
    f32 = info.tensor_types.get("F32")
    return bool(f32) and f32.n_elements > 0.05 * info.n_params


def offered_types(source: str | Path) -> list[str]:
    """The types worth offering for this source (F16 only where it has F32 weights)."""
    info = check_gguf(source)
    return [t for t in TYPES if t != "F16" or has_f32_weights(info)]


class Quantization:
    """Quantized copies of ``source``, one per type, in ``out_dir``: checked on creation
    (raises SpecScopeError with one line naming the file), made by :meth:`run`."""

    def __init__(self, source: str | Path, types: Sequence[str], out_dir: str | Path, *,
                 overwrite: bool = False, nthread: int = 0, allow_requantize: bool = False,
                 pure: bool = False):
        self.source = Path(source)
        self.info = check_gguf(self.source)          # missing, unreadable, not GGUF: one line
        self.types = parse_quant_types(types)
        self.out_dir = Path(out_dir)
        self.nthread = nthread
        self.allow_requantize = allow_requantize
        self.overwrite = overwrite
        self.pure = pure
        self._proc: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        src_types = set(self.info.tensor_types)
        quantized = sorted(src_types - _FLOAT)
        if quantized and not allow_requantize:
            raise ModelFileError(self.source, f"is already quantized ({', '.join(quantized)}); "
                                 "quantizing it again loses more than quantizing its F16/F32 "
                                 "original (allow it with --allow-requantize)")
        if "F16" in self.types and not has_f32_weights(self.info):
            raise ModelFileError(self.source, "has no F32 weight matrices: an F16 copy would gain nothing")
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise ModelFileError(self.out_dir, "is not a folder")
        self.results = [QuantResult(t, self.out_dir / output_name(self.source, t)) for t in self.types]
        if not overwrite:
            for r in self.results:
                if r.path.exists():
                    raise ModelFileError(r.path, EXISTS)

    def expected_bytes(self, qtype: str) -> int:
        return int(self.info.n_params * TYPES[qtype][1] / 8 * 1.1) + 1_000_000

    def stop(self) -> None:
        """Stop the run: the file being made is abandoned and its part removed."""
        self._stop.set()
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.terminate()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self, progress: Progress | None = None) -> list[QuantResult]:
        """Make each file in turn; a failed file does not stop the others, Stop does. An
        unwritable folder raises ModelFileError (one line naming it)."""
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ModelFileError(self.out_dir, f"cannot create this folder ({exc.strerror})") from None
        for i, r in enumerate(self.results):
            if self._stop.is_set():
                r.error = f"{r.path}: not made (stopped before it)"   # stays pending
                continue
            if progress:
                progress(i, len(self.results), 0.0, str(r.path))
            self._one(r, lambda f, _i=i, _r=r: progress and progress(_i, len(self.results), f, str(_r.path)))
        if progress and not self._stop.is_set():
            progress(len(self.results), len(self.results), 1.0, "")
        return self.results

    def _one(self, r: QuantResult, on_fraction: Callable[[float], None]) -> None:
        part = r.path.with_name(r.path.name + _PART)
        t0 = time.perf_counter()
        try:
            with open(part, "wb"):
                pass
        except OSError as exc:      # the folder is unwritable: no file can be made there
            raise ModelFileError(part.parent, f"cannot write in this folder ({exc.strerror})") from None
        try:
            free = shutil.disk_usage(part.parent).free
            need = self.expected_bytes(r.qtype)
            if free < need:
                raise ModelFileError(part.parent, f"not enough free space for {r.path.name} "
                                     f"({free / 1e6:.1f} MB free, about {need / 1e6:.1f} MB needed)")
            self._child(r, part, on_fraction)
            if self._stop.is_set():
                raise _Stopped()
            info = check_gguf(part)     # a short write (disk full) shows here as a truncated file
            if r.path.exists() and not self.overwrite:
                raise ModelFileError(r.path, "appeared while quantizing; not overwritten")
            os.replace(part, r.path)
            r.status, r.seconds = "done", time.perf_counter() - t0
            r.size = r.path.stat().st_size
            data = sum(s.n_bytes for s in info.tensor_types.values())
            r.bits_per_weight = 8.0 * data / max(1, info.n_params)
            r.tensor_types = {t: s.count for t, s in info.tensor_types.items()}
        except _Stopped:
            r.status, r.error = "stopped", f"{r.path}: stopped; the partial file was removed"
        except SpecScopeError as exc:
            r.status, r.error = "failed", str(exc).replace(str(part), str(r.path))
        finally:
            r.seconds = r.seconds or time.perf_counter() - t0
            try:
                part.unlink()
            except OSError:
                pass

    def _child(self, r: QuantResult, part: Path, on_fraction: Callable[[float], None]) -> None:
        spec = {"source": str(self.source), "dest": str(part), "ftype": TYPES[r.qtype][0],
                "nthread": self.nthread, "allow_requantize": self.allow_requantize,
                "pure": self.pure}
        cmd = [sys.executable, "-m", "specscope.core.models.quantize", json.dumps(spec)]
        with self._lock:
            if self._stop.is_set():
                raise _Stopped()
            self._proc = proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**os.environ, "GGML_NO_BACKTRACE": "1"})
        err_lines: list[str] = []
        drain = threading.Thread(target=lambda: err_lines.extend(
            proc.stderr.read().decode("utf-8", "replace").splitlines()), daemon=True)
        drain.start()
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "fraction" in msg:
                on_fraction(float(msg["fraction"]))
            r.fallbacks = msg.get("fallbacks", r.fallbacks)
        rc = proc.wait()
        drain.join()
        with self._lock:
            self._proc = None
        if self._stop.is_set():
            raise _Stopped()
        if rc == 0:
            return
        last = next((l.strip() for l in reversed(err_lines) if l.strip()), "")
        if rc == _CHILD_ERROR:
            if "iostream error" in last or "failed to open" in last:
                free = shutil.disk_usage(part.parent).free
                raise ModelFileError(r.path, f"llama.cpp could not write the {r.qtype} copy "
                                     f"({free / 1e6:.1f} MB free on that disk: is it full?): {last}")
            raise ModelFileError(r.path, f"llama.cpp could not make a {r.qtype} copy: {last}")
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            raise ModelFileError(r.path, f"llama.cpp crashed ({name}) while quantizing to {r.qtype}"
                                 + (f": {last}" if last else ""))
        raise ModelFileError(r.path, f"the quantizing process exited with status {rc}"
                             + (f": {last}" if last else ""))


class _Stopped(Exception):
    pass


# ---------------------------------------------------------------------------- the child

_TENSOR_LINE = re.compile(r"^\[\s*(\d+)/\s*(\d+)\]\s+\S+\s+-\s+\[([\d,\s]+)\]")


def _child(spec: dict) -> int:

    total = max(1, check_gguf(spec["source"]).n_params)
    state = {"done": 0, "current": 0, "fallbacks": 0, "errors": []}

    def emit(**kw):
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()

    @ll.llama_log_callback
    def on_log(level, text, _user):  # pragma: no cover - called from C
        try:
            s = text.decode("utf-8", "replace") if text else ""
            m = _TENSOR_LINE.match(s)
            if m:       # a tensor starts: the previous one is finished
                state["done"] += state["current"]
                n = 1
                for d in m.group(3).split(","):
                    n *= int(d)
                state["current"] = n
                emit(fraction=min(1.0, state["done"] / total), fallbacks=state["fallbacks"])
            elif "falling back to" in s:
                state["fallbacks"] += 1
            if level == 4 and s.strip():
                state["errors"].append(s.strip())
                sys.stderr.write(s.rstrip("\n") + "\n")
        except Exception:
            pass

    ll.llama_log_set(on_log, ctypes.c_void_p(0))
    ll.llama_backend_init()
    params = ll.llama_model_quantize_default_params()
    params.ftype = int(spec["ftype"])
    params.nthread = int(spec["nthread"])
    params.allow_requantize = bool(spec["allow_requantize"])
    params.quantize_output_tensor = True
    params.pure = bool(spec.get("pure", False))
    rc = ll.llama_model_quantize(spec["source"].encode(), spec["dest"].encode(), ctypes.byref(params))
    if rc != 0:
        why = state["errors"][-1] if state["errors"] else f"llama_model_quantize returned {rc}"
        sys.stderr.write(why.replace("llama_model_quantize: ", "") + "\n")
        return _CHILD_ERROR
    emit(fraction=1.0, fallbacks=state["fallbacks"])
    return 0


if __name__ == "__main__":
    sys.exit(_child(json.loads(sys.argv[1])))
