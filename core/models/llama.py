"""Owners of llama.cpp handles: one small class per handle kind.

Every pointer llama.cpp hands out is held by exactly one object (``Model``, ``Context``,
``Batch`` here, ``SamplerChain`` in core/models/sampler_chain.py: each a :class:`Handle`) and freed by
that object's ``close()``, once. Contexts must be closed before the model they were made from;
``Engine`` and the tests do that with an ``ExitStack``.

llama.cpp's log goes to the Python logger ``specscope.llama`` (quiet unless
the application configures logging); the last error line is kept so that a
failed load can say what llama.cpp complained about.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.errors import ConfigError, DecodeError, ModelFileError
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.quick import quick
from specscope.core.models.threads import ThreadGovernor, candidates

log = logging.getLogger("specscope.llama")
log.addHandler(logging.NullHandler())

# llama.cpp's levels: 1 DEBUG, 2 INFO, 3 WARN, 4 ERROR, 5 CONT (continues the previous line)
_LEVELS = {1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_log_state = threading.local()   # per thread: the level of the line being continued, its errors


def _errors() -> list[str]:
    """The last few ERROR lines llama.cpp logged on this thread (for load failures)."""
    errors = getattr(_log_state, "errors", None)
    if errors is None:
        errors = _log_state.errors = []
    return errors


@ll.llama_log_callback
def _on_llama_log(level: int, text: bytes, _user) -> None:  # pragma: no cover - called from C
    try:
        message = text.decode("utf-8", "replace") if text else ""
        if level == 5:
            level = getattr(_log_state, "level", 2)
        else:
            _log_state.level = level
        message = message.rstrip("\n")
        if not message:
            return
        py_level = _LEVELS.get(level, logging.INFO)
        if py_level >= logging.ERROR:
            errors = _errors()
            errors.append(message.strip())
            del errors[:-4]
        if log.isEnabledFor(py_level):
            log.log(py_level, "%s", message)
    except Exception:  # never let an exception unwind into C
        pass


_backend_lock = threading.Lock()
_backend_ready = False


def ensure_backend() -> None:
    """Initialise llama.cpp once per process and route its log to Python."""
    global _backend_ready
    with _backend_lock:
        if _backend_ready:
            return
        ll.llama_log_set(_on_llama_log, ctypes.c_void_p(0))
        ll.llama_backend_init()
        _backend_ready = True


def system_info() -> str:
    """llama.cpp's ``llama_print_system_info``: the CPU features it was built for and found."""
    ensure_backend()
    return (ll.llama_print_system_info() or b"").decode("utf-8", "replace")


REPACK_MODES = ("auto", "on", "off")


def resolve_repack(mode: str) -> tuple[bool, str]:
    """(repack?, why) for ``--repack auto|on|off``.

    ``auto`` turns llama.cpp's extra buffer types off where it reports AMX: there it repacks
    weights into AMX buffers (its quantized types, and F16: ``amx.cpp``'s ``supports_op``) and
    ``ggml_backend_amx_mul_mat`` crashes on the first decode (llama.cpp issue 20824). Without
    AMX, x86's repacking takes only some quantized types (Q4_0, IQ4_NL, some K-quants; not F16,
    F32, Q4_1 or Q8_0, so neither the demo pair nor SmolLM2 Q4_1 changes)."""
    if mode == "on":
        return True, "repacking on (--repack on)"
    if mode == "off":
        return False, "repacking off (--repack off)"
    if mode != "auto":
        raise ConfigError(f"--repack must be auto, on or off, not {mode!r}")
    if "AMX_INT8 = 1" in system_info():
        return False, ("repacking off: this CPU reports AMX, where llama.cpp's repacked "
                       "quantized weights crash (llama.cpp issue 20824)")
    return True, "repacking on: llama.cpp's default on this CPU (no AMX)"


def _take_last_error() -> str:
    errors = _errors()
    text = "; ".join(errors[-2:])
    errors.clear()
    return text


# ---------------------------------------------------------------------------- handles

class Closing:
    """Closed at the end of a ``with`` block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Handle(Closing):
    """The owner of one llama.cpp handle, ``ptr``: :meth:`close` frees it once (``_free``);
    closing again does nothing."""

    ptr = None                    # the handle; None once freed (or given away)

    def _free(self, ptr) -> None:
        raise NotImplementedError

    def close(self) -> None:
        ptr, self.ptr = self.ptr, None
        if ptr:
            self._free(ptr)


# ---------------------------------------------------------------------------- model


def _fact(getter, kind, of: str = "ptr") -> property:
    """A read-only fact from one of llama.cpp's getters, on the model (``of="ptr"``) or its
    vocabulary (``of="vocab"``), as ``kind`` (int, bool)."""
    return property(lambda self: kind(getter(getattr(self, of))))

class Model(Handle):
    """A loaded GGUF model (or only its vocabulary, with ``vocab_only``)."""

    def __init__(self, path: str | Path, *, vocab_only: bool = False, n_gpu_layers: int = 0,
                 repack: bool = True, progress=None, check_file: bool = True, devices=None,
                 load_mtp: bool = False):
        """repack: let llama.cpp repack weights into extra buffer types (AMX, AVX512 …),
        llama.cpp's ``use_extra_bufts``; ``False`` is its ``--no-repack``. devices: a
        NULL-terminated ggml_backend_dev_t array (``devices.device_array``), None for
        llama.cpp's default devices. load_mtp: load the model's MTP (nextn) blocks too, which
        llama.cpp otherwise skips (``draft-mtp`` drafts with them: core/models/mtp.py)."""
        ensure_backend()
        self.path = Path(path)
        if check_file:
            check_gguf(self.path)
        params = ll.llama_model_default_params()
        params.vocab_only = vocab_only
        params.n_gpu_layers = n_gpu_layers
        params.use_extra_bufts = repack
        params.load_mtp = load_mtp
        if devices is not None:
            params.devices = ctypes.cast(devices, ctypes.c_void_p)
        self._progress_cb = None
        self._eog: dict[int, bool] = {}     # is_eog's answers (a round asks several times a token)
        if progress is not None:
            def _progress(fraction, _user):
                try:
                    return bool(progress(float(fraction)) is not False)
                except Exception:
                    return True
            self._progress_cb = ll.llama_progress_callback(_progress)
            params.progress_callback = self._progress_cb
        _errors().clear()
        self.ptr = ll.llama_model_load_from_file(os.fsencode(self.path), params)
        if not self.ptr:
            detail = _take_last_error()
            raise ModelFileError(self.path, "llama.cpp could not load this model"
                                 + (f" ({detail})" if detail else ""))
        self.vocab = ll.llama_model_get_vocab(self.ptr)
        self.vocab_only = vocab_only
        self.n_vocab = ll.llama_vocab_n_tokens(self.vocab)
        self._pieces: dict[int, bytes] = {}

    def _free(self, ptr) -> None:
        ll.llama_model_free(ptr)

    # -- facts ---------------------------------------------------------------
    bos = _fact(ll.llama_vocab_bos, int, "vocab")
    eos = _fact(ll.llama_vocab_eos, int, "vocab")
    add_bos = _fact(ll.llama_vocab_get_add_bos, bool, "vocab")
    add_eos = _fact(ll.llama_vocab_get_add_eos, bool, "vocab")

    def is_eog(self, token: int) -> bool:
        known = self._eog.get(token)
        if known is None:
            known = self._eog[token] = bool(quick.llama_vocab_is_eog(self.vocab, token))
        return known

    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(512)
        n = ll.llama_model_meta_val_str(self.ptr, key.encode(), buf, len(buf))
        if n >= len(buf):   # it returns the full length: read long values (chat templates) whole
            buf = ctypes.create_string_buffer(n + 1)
            n = ll.llama_model_meta_val_str(self.ptr, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    n_params = _fact(ll.llama_model_n_params, int)
    size_bytes = _fact(ll.llama_model_size, int)
    n_ctx_train = _fact(ll.llama_model_n_ctx_train, int)

    @property
    def description(self) -> str:
        buf = ctypes.create_string_buffer(256)
        ll.llama_model_desc(self.ptr, buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    @property
    def is_recurrent_or_hybrid(self) -> bool:
        return bool(ll.llama_model_is_recurrent(self.ptr) or ll.llama_model_is_hybrid(self.ptr))

    # -- text ----------------------------------------------------------------
    def tokenize(self, text: str, *, add_special: bool = True, parse_special: bool = True) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 16
        buf = (ll.llama_token * cap)()
        n = ll.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, parse_special)
        if n < 0:
            cap = -n
            buf = (ll.llama_token * cap)()
            n = ll.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, parse_special)
        if n < 0:
            raise ConfigError("the prompt could not be tokenized")
        return list(buf[:n])

    def piece(self, token: int) -> bytes:
        """The bytes a token stands for (special tokens rendered as their text)."""
        cached = self._pieces.get(token)
        if cached is None:
            buf = ctypes.create_string_buffer(64)
            n = quick.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = quick.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
            cached = buf.raw[:max(n, 0)]
            self._pieces[token] = cached
        return cached

    def detokenize(self, tokens) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", "replace")

    def token_text(self, token: int) -> bytes:
        """The token's text as stored in the vocabulary (what the vocab gate compares)."""
        return ll.llama_vocab_get_text(self.vocab, token) or b""


# ---------------------------------------------------------------------------- context

# llama_get_logits returning a plain address (the binding's version returns a ctypes pointer),
# called holding the GIL as the other quick calls (core/models/quick.py)
_get_logits_address = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(("llama_get_logits", ll._lib))
_get_logits_ith_address = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)(
    ("llama_get_logits_ith", ll._lib))

GGML_TYPE_F32 = 0
GGML_TYPE_F16 = 1
FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}


@dataclass(frozen=True)
class ContextSettings:
    """Per-context settings. ``deterministic`` picks F32 KV and no flash attention, which removes
    flash attention's single-token path; batched and single-token matrix kernels still differ
    for some weight types and past 256 tokens (``compare.DETERMINISTIC_GUARANTEE``)."""
    n_ctx: int = 2048
    n_batch: int = 512
    n_threads: int = 0          # 0: auto, the count that is fastest now (core/models/threads.py)
    flash_attn: str = "auto"    # auto | on | off
    kv_type: str = "f16"        # f16 | f32
    n_seq: int = 1              # sequences (llama.cpp's -np): a tree's branches, in one unified KV

    @classmethod
    def deterministic(cls, **kw) -> "ContextSettings":
        return cls(flash_attn="off", kv_type="f32", **kw)


class Context(Handle):
    """One llama_context; runs use sequence 0 (a tree's branches more: models/seqs.py).
    ``other``: the context it reads from
    (llama.cpp's ``ctx_other``: an EAGLE-3 head reads the target's token embeddings and output
    head through it); it must outlive this one. ``mtp``: an MTP context (``LLAMA_CONTEXT_TYPE_MTP``):
    it runs the model's nextn blocks instead of its layers (core/models/mtp.py)."""

    def __init__(self, model: Model, settings: ContextSettings, other: "Context | None" = None,
                 *, mtp: bool = False, governor: ThreadGovernor | None = None):
        if model.vocab_only:
            raise ConfigError(f"{model.path}: was loaded for its vocabulary only")
        params = ll.llama_context_default_params()
        params.n_ctx = settings.n_ctx
        params.n_batch = min(settings.n_batch, settings.n_ctx)
        params.n_ubatch = params.n_batch
        params.n_seq_max = settings.n_seq
        params.kv_unified = settings.n_seq > 1      # branches share their prefix's cells
        # threads 0 ("auto"): a governor moves the count with the machine's load, decode by
        # decode; ``governor``: another context's, when both decode on one thread (one OpenMP team)
        self.governor = None if settings.n_threads else governor or ThreadGovernor(candidates())
        threads = settings.n_threads or self.governor.current
        params.n_threads = threads
        params.n_threads_batch = threads
        params.no_perf = True
        try:
            params.flash_attn_type = FLASH_ATTN[settings.flash_attn]
        except KeyError:
            raise ConfigError(f"flash attention must be auto, on or off, not {settings.flash_attn!r}")
        kv = {"f16": GGML_TYPE_F16, "f32": GGML_TYPE_F32}.get(settings.kv_type)
        if kv is None:
            raise ConfigError(f"KV cache type must be f16 or f32, not {settings.kv_type!r}")
        params.type_k = params.type_v = kv
        if other is not None:
            params.ctx_other = other.ptr
        if mtp:
            params.ctx_type = ll.LLAMA_CONTEXT_TYPE_MTP
        _errors().clear()
        self.ptr = ll.llama_init_from_model(model.ptr, params)
        if not self.ptr:
            detail = _take_last_error()
            raise ConfigError(f"{model.path}: llama.cpp could not create a context of {settings.n_ctx} "
                              "tokens" + (f" ({detail})" if detail else ""))
        self.model = model
        self.n_ctx = ll.llama_n_ctx(self.ptr)
        self.n_batch = ll.llama_n_batch(self.ptr)
        self.n_ubatch = ll.llama_n_ubatch(self.ptr)
        self.n_seq = settings.n_seq
        self.mem = ll.llama_get_memory(self.ptr)
        self.n_vocab = model.n_vocab
        self._views: dict[tuple[int, int], np.ndarray] = {}
        self.pinned = settings.n_threads
        self._count = threads                   # the count llama.cpp has now

    def _free(self, ptr) -> None:
        ll.llama_free(ptr)

    def set_threads(self, n: int) -> None:
        """llama_set_n_threads: the count the next decodes run with (single-token and batch)."""
        ll.llama_set_n_threads(self.ptr, n, n)
        self._count = n

    @property
    def threads(self) -> int:
        """The count decodes run with now: the pinned one, or the governor's current choice."""
        return self.governor.current if self.governor is not None else self.pinned

    def decode(self, batch: "Batch", what: str) -> None:
        """Decode and wait for it: on an asynchronous backend (a model on an rpc-server)
        llama_decode returns once the graph is sent, and the computation would otherwise be
        waited for, and timed, wherever the logits are read next."""
        b = batch.ptr                    # a Batch's or a SeqBatch's llama_batch
        n = b.n_tokens
        self._run(ll.llama_decode, b, n, what, outputs=bool(n and b.logits[n - 1]))

    def process(self, batch: "ExtBatch", what: str, *, encode: bool = False) -> None:
        """``llama_process`` an extended batch (tokens with embeddings, or embeddings alone)
        through the decoder, or with ``encode`` the encoder, and wait for it."""
        kind = ll.LLAMA_PROCESS_TYPE_ENCODE if encode else ll.LLAMA_PROCESS_TYPE_DECODE
        self._run(lambda ctx, b: ll.llama_process(ctx, kind, b), batch.ptr, batch.size, what)

    def _run(self, call, batch_ptr, n_tokens: int, what: str, outputs: bool = True) -> None:
        """One decode, through the governor when threads are auto: it picks the count, and
        learns from the time the decode took (``outputs``: whether it computed logits)."""
        g = self.governor
        if g is not None:
            n = g.before()
            if n != self._count:
                self.set_threads(n)
            t0 = g.clock()
        status = call(self.ptr, batch_ptr)
        if status != 0:
            raise DecodeError(what, status)
        ll.llama_synchronize(self.ptr)
        if g is not None:
            g.after(n_tokens, g.clock() - t0, id(self), outputs)


    def prefill(self, tokens, batch: "Batch", what: str, after=None, keep: int = 0) -> None:
        """Decode ``tokens`` at positions 0.. in batch-sized chunks, without logits (a prompt,
        or a prefix to measure against); ``after(chunk, pos0)`` is called after each chunk's
        decode (the drafters' ``process``). The memory is cleared first, or with ``keep`` > 0
        (a conversation's next turn: the memory already holds ``tokens[:keep]``) cut back to
        its first ``keep`` rows, and only the tokens after them are decoded."""
        if keep > 0:
            if not self.seq_rm(keep, -1):
                raise RuntimeError(f"llama.cpp could not cut {what} back to {keep} rows")
        else:
            self.clear()
        for start in range(keep, len(tokens), batch.capacity):
            chunk = tokens[start:start + batch.capacity]
            batch.fill(chunk, start, logits="none")
            self.decode(batch, what)
            if after is not None:
                after(chunk, start)

    def logits(self, n_rows: int) -> np.ndarray:
        """The logits of the last decode's output rows, as a (n_rows, n_vocab) view.
        Views are cached by buffer address: making one costs more than a draft step's numpy work."""
        addr = _get_logits_address(self.ptr)
        view = self._views.get((addr, n_rows))
        if view is None:
            if len(self._views) > 64:
                self._views.clear()
            raw = (ctypes.c_float * (n_rows * self.n_vocab)).from_address(addr)
            view = self._views[(addr, n_rows)] = np.frombuffer(raw, np.float32).reshape(n_rows, self.n_vocab)
        return view

    def row(self, i: int) -> np.ndarray:
        """The logits of batch entry ``i`` of the last decode (``llama_get_logits_ith``), as a
        view (cached by address, as ``logits``)."""
        addr = _get_logits_ith_address(self.ptr, i)
        if not addr:
            raise RuntimeError(f"llama.cpp has no logits for batch entry {i} of the last decode")
        view = self._views.get(("row", addr))
        if view is None:
            if len(self._views) > 64:
                self._views.clear()
            raw = (ctypes.c_float * self.n_vocab).from_address(addr)
            view = self._views[("row", addr)] = np.frombuffer(raw, np.float32)
        return view

    def seq_rm(self, p0: int, p1: int = -1) -> bool:
        return bool(quick.llama_memory_seq_rm(self.mem, 0, p0, p1))

    def clear(self) -> None:
        ll.llama_memory_clear(self.mem, True)

    def pos_max(self) -> int:
        return int(quick.llama_memory_seq_pos_max(self.mem, 0))

    def pos_min(self) -> int:
        return int(quick.llama_memory_seq_pos_min(self.mem, 0))

    def can_remove_partial(self, probe_token: int = 0) -> bool:
        """llama.cpp's common_context_can_seq_rm: decode two tokens, try to drop the second.
        Clears the memory."""
        self.clear()
        with Batch(2) as batch:
            batch.fill([probe_token, probe_token], 0, logits="none")
            self.decode(batch, "the sequence-removal probe")
        ok = self.seq_rm(1, -1)
        self.clear()
        return ok


class Checkpoint:
    """Sequence 0's state in one context, copied out to a buffer that later saves reuse.

    ``partial`` is llama.cpp's ``LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY``, what its
    speculative-simple passes: a hybrid memory (llama_memory_hybrid) then writes only its
    recurrent part, whose size does not depend on the context; the KV cache of its attention
    layers is left out, and ``restore`` trims it back to the checkpoint with ``seq_rm``. A pure
    recurrent memory (Mamba) ignores the flag: its whole state is the recurrent one. Bytes move
    with llama.cpp's own copy into a ctypes buffer, grown only when a save needs more room.
    """

    def __init__(self, ctx: Context, *, partial: bool = True):
        self.ctx = ctx
        self.flags = ll.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY if partial else ll.LLAMA_STATE_SEQ_FLAGS_NONE
        self._buf = (ctypes.c_uint8 * 0)()
        self.size = 0        # bytes the last save wrote
        self.pos_max = -1    # the sequence's last position when it was saved

    def save(self) -> "Checkpoint":
        ctx = self.ctx
        n = ll.llama_state_seq_get_size_ext(ctx.ptr, 0, self.flags)
        if n > len(self._buf):
            self._buf = (ctypes.c_uint8 * n)()
        written = ll.llama_state_seq_get_data_ext(ctx.ptr, self._buf, n, 0, self.flags)
        if written != n:
            raise DecodeError("a state checkpoint save", -1)
        self.size, self.pos_max = n, ctx.pos_max()
        return self

    def restore(self) -> None:
        """Back to the saved state: the saved part read back (the recurrent state, or the whole
        state when not partial), then every row after the saved position dropped (the attention
        rows a partial state left in the KV cache; a no-op otherwise), as llama.cpp does."""
        ctx = self.ctx
        if ll.llama_state_seq_set_data_ext(ctx.ptr, self._buf, self.size, 0, self.flags) != self.size \
                or not ctx.seq_rm(self.pos_max + 1, -1):
            raise DecodeError("a state checkpoint restore", -1)


# ---------------------------------------------------------------------------- batch

class Batch(Handle):
    """A llama_batch for sequence 0 (``ptr``: the struct), filled through numpy views."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.ptr = ll.llama_batch_init(capacity, 0, 1)
        self.token = np.ctypeslib.as_array(self.ptr.token, shape=(capacity,))
        self.pos = np.ctypeslib.as_array(self.ptr.pos, shape=(capacity,))
        self.logits = np.ctypeslib.as_array(self.ptr.logits, shape=(capacity,))
        np.ctypeslib.as_array(self.ptr.n_seq_id, shape=(capacity,))[:] = 1
        for i in range(capacity):
            self.ptr.seq_id[i][0] = 0

    def fill(self, tokens, pos0: int, *, logits: str = "all") -> None:
        """tokens at positions pos0, pos0+1, ...; logits: 'all', 'last' or 'none'."""
        n = len(tokens)
        if n == 1:                      # the draft loop's case: skip numpy's slice machinery
            self.token[0], self.pos[0], self.logits[0] = tokens[0], pos0, logits != "none"
            self.ptr.n_tokens = 1
            return
        if n > self.capacity:
            raise ConfigError(f"a batch of {n} tokens exceeds the batch capacity {self.capacity}")
        self.token[:n] = tokens
        self.pos[:n] = np.arange(pos0, pos0 + n, dtype=np.int32)
        self.logits[:n] = 1 if logits == "all" else 0
        if logits == "last" and n:
            self.logits[n - 1] = 1
        self.ptr.n_tokens = n

    def _free(self, ptr) -> None:
        ll.llama_batch_free(ptr)


class ExtBatch(Handle):
    """A ``llama_batch_ext`` of a context, for sequence 0: entries of a token with an embedding
    row (an EAGLE-3 decoder input), or of an embedding row alone (its encoder input). llama.cpp
    copies the rows in."""

    def __init__(self, ctx: Context):
        self.ptr = ll.llama_batch_ext_init(ctx.ptr)
        if not self.ptr:
            raise ConfigError(f"{ctx.model.path}: llama.cpp could not make an extended batch")
        self._pos = ll.llama_pos(0)
        self.size = 0

    def clear(self) -> None:
        ll.llama_batch_ext_clear(self.ptr)
        self.size = 0

    def add(self, token: int | None, pos: int, row: np.ndarray | None, *,
            output: bool = False) -> int:
        """An entry at ``pos``: ``token`` (None: none) with the embedding ``row`` (float32,
        contiguous; None: the token alone); its batch index."""
        embd = None if row is None else \
            ll.llama_embd(row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), 1, row.size)
        if token is None:
            idx = ll.llama_batch_ext_add_embd(self.ptr, 0, embd)
        else:
            idx = ll.llama_batch_ext_add_token(self.ptr, 0, token)
        if idx < 0:
            raise ConfigError(f"an extended batch refused an entry (status {idx})")
        self._pos.value = pos
        ok = ll.llama_batch_ext_set_pos(self.ptr, idx, ctypes.byref(self._pos))
        if ok and token is not None and embd is not None:
            ok = ll.llama_batch_ext_set_embd_token(self.ptr, idx, embd)
        if ok and output:
            ok = ll.llama_batch_ext_set_output_logits(self.ptr, idx, True)
        if not ok:
            raise ConfigError(f"an extended batch refused an entry at position {pos}"
                              + ("" if row is None else f" (an embedding row of {row.size} floats)"))
        self.size += 1
        return idx

    def _free(self, ptr) -> None:
        ll.llama_batch_ext_free(ptr)
