"""A guard against native crashes: try a model in a child process before using it in-process.

llama.cpp can kill the process that runs it: a segfault in a kernel (on CPUs that report
AMX, repacked quantized weights crash in ``ggml_backend_amx_mul_mat``, llama.cpp issue
20824), or an abort on a ``GGML_ASSERT`` for a malformed file. Python cannot catch either.
So before a (model file, settings) combination is first used in-process, ``probe`` loads it
in a child process, tokenizes a sample text with the vocabulary's special tokens in it, turns
every token back into text (as the window's token view does), decodes a verification-sized
batch, a prompt-sized one and a few single tokens, and reports how the child ended and which
of these steps it was in. llama.cpp's tokenizer throws C++ exceptions on a vocabulary that its
tokenizer model does not fit (``tokenizer.ggml.model`` ``llama`` over a byte-level BPE
vocabulary: ``std::out_of_range`` looking up byte tokens it lacks), which abort the process.
Verdicts are cached in the user's cache folder, keyed by the file's identity, the llama.cpp
build and the settings, so the second open costs nothing.

The probe is a guard, not a second engine: it exercises the same calls the engine will
(the tokenizer, matrix products of one row and of many rows, prefill and verification), then
exits. An EAGLE-3 head (core/models/eagle3.py) or a DFlash head (core/models/dflash.py) runs
only beside its target: it is probed as a pair, after the checks that refuse a head made for
another target, through what its drafting calls (where a malformed head trips llama.cpp's
asserts).

Run as ``python -m specscope.core.models.probe JSON`` it is the child itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import llama_cpp

from specscope.core.cache import cache_root, file_id, read_json, write_json
from specscope.core.errors import ModelCrashError, SpecScopeError
from specscope.core.models.devices import is_remote
from specscope.core.models.dflash import ARCH as DFLASH, DFlashHead, check_dflash, is_dflash
from specscope.core.models.eagle3 import ARCH as EAGLE3, Head, check_head
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.llama import (Batch, Context, ContextSettings, Model, resolve_repack,
                                         system_info)
from specscope.core.models.vocab_gate import require_vocabulary

PROBE_VERSION = 4            # 2: the tokenizer is tried too; 3: EAGLE-3 heads with their target; 4: DFlash
TIMEOUT_S = 120.0
LOG_TAIL = 6                 # llama.cpp log lines kept from a crashed child
SAFE = {"repack": "off"}     # the settings a crashed probe is retried with
_CHILD_ERROR = 3             # the child's exit status for an error SpecScope explains itself
SAMPLE_TEXT = "Hello, world! def f(x):\n\treturn x * 2  # 3.14 ü ñ € 中文 😀"
STEPS = {"load": "loading", "tokenize": "tokenizing text with", "decode": "running"}


@dataclass(frozen=True)
class ProbeSettings:
    """What decides which kernels a model runs with (and so whether they crash)."""
    repack: str = "auto"        # auto | on | off (resolved in the child, as the engine does)
    n_gpu_layers: int = 0
    flash_attn: str = "auto"
    kv_type: str = "f16"
    n_threads: int = 0

    @classmethod
    def of(cls, engine_settings, role: str = "target") -> "ProbeSettings":
        s = engine_settings
        draft = role == "draft"
        return cls(repack=s.repack, flash_attn=s.flash_attn, kv_type=s.kv_type,
                   n_gpu_layers=s.draft_gpu_layers if draft else s.target_gpu_layers,
                   n_threads=s.draft_threads if draft else s.target_threads)


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    model: str
    settings: dict
    status: str = "ok"              # ok | signal | exit | timeout | error
    signal_name: str = ""           # SIGSEGV, SIGABRT …
    exit_code: int = 0
    log_tail: tuple[str, ...] = field(default=())
    cause: str = ""                 # the likely cause, in words
    seconds: float = 0.0
    cached: bool = False
    step: str = ""                  # what the child was doing when it ended (STEPS)

    @property
    def failed_check(self) -> str:
        """The GGML_ASSERT line llama.cpp printed before aborting, if any."""
        for line in self.log_tail:
            if "GGML_ASSERT" in line or "GGML_ABORT" in line:
                return line[line.index("GGML_"):]
        return ""

    @property
    def kernels_matter(self) -> bool:
        """False when the child died in the tokenizer, before any kernel ran: other settings
        (repacking off) would not help."""
        return self.step != "tokenize"

    def describe(self) -> str:
        """One line: what happened to which model."""
        what = {"signal": f"llama.cpp crashed ({self.signal_name})",
                "exit": f"llama.cpp exited with status {self.exit_code}",
                "timeout": f"llama.cpp did not finish within {TIMEOUT_S:.0f} s"}.get(self.status, "")
        repack = self.settings.get("repack_used", self.settings.get("repack"))
        return (f"{self.model}: {what} while {STEPS.get(self.step, 'running')} this model"
                + (f" (repacking {repack})" if self.kernels_matter else "")
                + (f"; likely cause: {self.cause}" if self.cause else "")
                + (f" ({self.failed_check})" if self.failed_check else ""))

    def error(self) -> ModelCrashError:
        return ModelCrashError(self.model, self.describe(), self)


def _build_id() -> str:
    """Which llama.cpp this process runs: the binding's version, its library file, the CPU it found."""
    lib = Path(llama_cpp.llama_cpp._lib._name)
    try:
        lib_id = f"{lib}:{lib.stat().st_size}:{lib.stat().st_mtime_ns}"
    except OSError:
        lib_id = str(lib)
    return f"{llama_cpp.__version__}|{lib_id}|{system_info()}"


def probe_key(path, settings: ProbeSettings, target=None) -> str:
    desc = {"version": PROBE_VERSION, "file": file_id(path), "build": _build_id(),
            "settings": asdict(settings)}
    if target is not None:
        desc["target"] = file_id(target)
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:24]


def _cache_path(key: str) -> Path:
    return cache_root() / "probes" / f"{key}.json"


def likely_cause(settings: dict, log_tail, signal_name: str, step: str = "", path=None) -> str:
    text = "\n".join(log_tail).lower()
    if step == "tokenize":
        thrown = cxx_exception(log_tail)
        return ("llama.cpp's tokenizer failed" + (f" ({thrown})" if thrown else "")
                + f": the tokenizer model ({tokenizer_key(path)}) may not fit the vocabulary")
    if "amx" in text or (settings.get("repack_used") == "on" and "AMX_INT8 = 1" in
                         settings.get("system_info", "")):
        return ("llama.cpp's AMX kernels for repacked quantized weights crash on this CPU "
                "(llama.cpp issue 20824); repacking off (--repack off) avoids them")
    if "layer input tensor is null" in text:
        return ("the target's architecture does not give its layers' inputs, which an EAGLE-3 "
                "head reads: llama.cpp's draft-eagle3 cannot run on it")
    if signal_name == "SIGABRT" or "ggml_assert" in text:
        return "llama.cpp stopped on a failed internal check: the file may be malformed"
    if settings.get("repack_used") == "on":
        return "a llama.cpp kernel for repacked weights may be at fault; try repacking off"
    return "a bug in llama.cpp or a malformed model file"


def cxx_exception(log_tail) -> str:
    """"std::out_of_range: unordered_map::at" from the C++ runtime's last words, or ""."""
    kind = what = ""
    for line in log_tail:
        if "terminate called after throwing an instance of" in line:
            kind = line.split("instance of", 1)[1].strip().strip("'")
        elif line.startswith("what():"):
            what = line.split(":", 1)[1].strip()
    return ": ".join(x for x in (kind, what) if x)


def tokenizer_key(path) -> str:
    """tokenizer.ggml.model = 'llama' (as the file's header says)."""
    try:
        model = check_gguf(path).tokenizer_model if path is not None else None
    except SpecScopeError:
        model = None
    return "tokenizer.ggml.model" + (f" = {model!r}" if model else "")


def probe(path, settings: ProbeSettings = ProbeSettings(), *, use_cache: bool = True,
          timeout_s: float = TIMEOUT_S, target=None) -> ProbeResult:
    """How a child process fared with this model and these settings (cached); ``target``: the
    target an EAGLE-3 head is probed with (the head's settings are ``settings``)."""
    path = Path(path)
    key = probe_key(path, settings, target)
    if use_cache:
        doc = read_json(_cache_path(key))
        if isinstance(doc, dict):
            try:
                doc["log_tail"] = tuple(doc.get("log_tail", ()))
                return ProbeResult(**{**doc, "cached": True})
            except TypeError:
                pass
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "specscope.core.models.probe",
           json.dumps({"path": str(path), **asdict(settings),
                       **({"target": str(target)} if target is not None else {})})]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout_s,
                              env={**os.environ, "GGML_NO_BACKTRACE": "1"})
        rc, out, err, status = proc.returncode, proc.stdout, proc.stderr, None
    except subprocess.TimeoutExpired as exc:
        rc, out, err, status = None, exc.stdout or b"", exc.stderr or b"", "timeout"
    seconds = time.perf_counter() - t0
    report, step = {}, ""
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if "step" in doc:
                step = doc["step"]
            else:
                report.update(doc)
    if rc == _CHILD_ERROR:
        # a clean error (a missing or malformed file, a setting llama.cpp refused): not a
        # crash; the in-process load reports it the usual way. Not cached.
        return ProbeResult(True, str(path), asdict(settings), "error", seconds=seconds)
    used = {**asdict(settings), **report}
    lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    tail = tuple(lines[-LOG_TAIL:])
    asserts = [line for line in lines if "GGML_ASSERT" in line or "GGML_ABORT" in line]
    if asserts and asserts[-1] not in tail:
        tail = (asserts[-1], *tail[1:])
    if rc == 0:
        verdict = ProbeResult(True, str(path), used, "ok", seconds=seconds)
    else:
        sig = ""
        if status is None:
            status = "signal" if rc < 0 else "exit"
            if rc < 0:
                try:
                    sig = signal.Signals(-rc).name
                except ValueError:
                    sig = f"signal {-rc}"
        verdict = ProbeResult(False, str(path), used, status, sig, rc or 0, tail,
                          likely_cause(used, tail, sig, step, path), seconds, step=step)
    if status != "timeout" and use_cache:     # a timeout may be a busy machine: ask again next time
        write_json(_cache_path(key), {k: v for k, v in asdict(verdict).items() if k != "cached"})
    return verdict


def first_crash(engine_settings, target, draft=None) -> ProbeResult | None:
    """The verdict of the first model of a pair (target, then draft) that crashes a child
    process with these EngineSettings; None when both run. A model placed on an rpc-server
    is not probed: its kernels run there (a crash ends that server, and llama.cpp here stops
    with "Remote RPC server crashed"), and a child would load it whole on this machine."""
    s = engine_settings
    for role, path in (("target", target), ("draft", draft)):
        if path is not None and not is_remote(getattr(s, f"{role}_devices", None),
                                              getattr(s, f"{role}_gpu_layers", 0), getattr(s, "rpc", ())):
            beside = target if role == "draft" and _is_head_file(path) else None
            verdict = probe(path, ProbeSettings.of(engine_settings, role), target=beside)
            if not verdict.ok:
                return verdict
    return None


def _is_head_file(path) -> bool:
    """An EAGLE-3 or DFlash head: it runs only beside its target."""
    try:
        return check_gguf(path).architecture in (EAGLE3, DFLASH)
    except SpecScopeError:
        return False          # the child reports the file's problem


def guard(engine_settings, target, draft=None) -> None:
    """Raise ModelCrashError (one line) when llama.cpp crashes on either model of the pair."""
    crash = first_crash(engine_settings, target, draft)
    if crash is not None:
        raise crash.error()


# ---------------------------------------------------------------------------- the child

def _child(spec: dict) -> int:
    # llama.cpp's log lines go to stderr, where the parent keeps the last few
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    llama_log = logging.getLogger("specscope.llama")
    llama_log.addHandler(handler)
    llama_log.setLevel(logging.INFO)
    try:
        repack, _why = resolve_repack(spec["repack"])
        print(json.dumps({"repack_used": "on" if repack else "off",
                          "system_info": system_info().strip()}), flush=True)
        _step("load")
        model = Model(spec["path"], repack=repack, n_gpu_layers=spec["n_gpu_layers"])
        require_vocabulary(model)           # none: a clean error, reported by the in-process load
        _step("tokenize")
        _try_tokenizer(model)
        _step("decode")
        settings = ContextSettings(n_ctx=256, n_batch=64, n_threads=spec["n_threads"],
                                   flash_attn=spec["flash_attn"], kv_type=spec["kv_type"])
        if "target" in spec:
            _try_head(model, Model(spec["target"], repack=repack), settings)
            return 0
        ctx = Context(model, settings)
        token = model.bos if model.bos >= 0 else 0
        with Batch(64) as batch:
            pos = 0
            for n in (32, 9, 4, 2, 1, 1):         # a prompt chunk, verifications, single tokens
                batch.fill([token] * n, pos, logits="all")
                ctx.decode(batch, f"a probe batch of {n} tokens")
                ctx.logits(n)[-1].argmax()
                pos += n
        ctx.close()
        model.close()
    except SpecScopeError as exc:
        print(str(exc), file=sys.stderr)
        return _CHILD_ERROR
    return 0


def _try_head(head: Model, target: Model, settings: ContextSettings) -> None:
    """An EAGLE-3 head as draft-eagle3 runs it: a target batch's features through the head's
    encoder, its pairs through the decoder, a draft step's logits and pre-norm state. A DFlash
    head as draft-dflash runs it: the features injected, a block decoded, its logits."""
    dflash = is_dflash(head)
    # a head made for another target: a clean error
    ids = (check_dflash if dflash else check_head)(target, head)
    tgt = Context(target, settings)
    ctx = Context(head, settings, other=tgt)
    h = (DFlashHead if dflash else Head)(tgt, ctx, ids)
    token = target.bos if target.bos >= 0 else 0
    with Batch(64) as batch:
        batch.fill([token] * 32, 0, logits="none")
        tgt.decode(batch, "a probe batch of 32 tokens")
    if dflash:
        h.inject(h.features(32), 0)
        h.block(token, 4, 32)
        ctx.logits(4)[-1].argmax()
    else:
        g = h.encode(h.features(32))
        h.dec.clear()
        for k in range(32):
            h.dec.add(token, k, g[k], output=k == 31)
        ctx.process(h.dec, "a probe batch of 32 EAGLE-3 pairs")
        ctx.logits(1)[0].argmax()
        h.prenorm(31)
    h.close()
    ctx.close()
    tgt.close()


def _step(name: str) -> None:
    print(json.dumps({"step": name}), flush=True)


def _try_tokenizer(model) -> None:
    """What the engine and the window do with the vocabulary: tokenize a text holding the
    special tokens (parsed as such, and as plain text), turn every token into its piece and
    its vocabulary text."""
    specials = [model.piece(t).decode("utf-8", "replace") for t in (model.bos, model.eos) if t >= 0]
    text = " ".join([*specials, SAMPLE_TEXT, *specials])
    for parse_special in (True, False):
        model.detokenize(model.tokenize(text, parse_special=parse_special))
    for t in range(model.n_vocab):
        model.piece(t)
        model.token_text(t)


if __name__ == "__main__":
    sys.exit(_child(json.loads(sys.argv[1])))
