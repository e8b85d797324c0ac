"""EAGLE-3 heads (llama.cpp's ``eagle3`` architecture, src/models/eagle3.cpp) beside their target.

A head is one decoder layer that drafts from the target's own hidden states. Its encoder (``fc``)
turns the inputs of three target layers (``eagle3.target_layers``), concatenated, into one row
g per token; its decoder reads, at position P, the pair (token P+1, g of P) and outputs logits
over a reduced vocabulary, which the ``d2t`` table (I64, absolute target ids) spreads over the
target's vocabulary (-inf elsewhere), plus its pre-norm hidden state, the g of its next step.
A head converted without token embeddings or an output head uses the target's, through the
context it is made with (``ctx_other``).

:func:`check_head` applies the checks llama.cpp makes when it loads a head and starts
``draft-eagle3`` (common/speculative.cpp), and those it leaves to a ``GGML_ABORT`` or
``GGML_ASSERT`` that would end the process (a target layer beyond the target's layers, a d2t
entry outside the vocabulary, a d2t of the wrong type or length, a target hidden size that is
not the target's): each is one line naming the file. :class:`Head` holds the llama.cpp side of
a head in use: the target's features, the encoder and decoder calls (``llama_process``), the
g rows read back (the staging API, core/models/staging.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.errors import ModelFileError
from specscope.core.models.gguf_file import GGUFInfo, check_gguf
from specscope.core.models.llama import Context, ExtBatch, Model
from specscope.core.models.staging import StagedHead, function

ARCH = "eagle3"
N_TARGET_LAYERS = 3      # common_speculative_impl_draft_eagle3 requires exactly 3
DFLASH = "dflash"        # llama.cpp's draft-dflash drafter (src/models/dflash.cpp): core/models/dflash.py


def is_eagle3(model: Model) -> bool:
    return model.meta("general.architecture") == ARCH


def target_layer_ids(head: Model) -> tuple[int, ...]:
    """The target layers whose inputs the head reads (``llama_model_target_layer_ids``)."""
    n = function("llama_model_target_layer_ids_n")(head.ptr)
    ids = function("llama_model_target_layer_ids")(head.ptr)
    return tuple(int(ids[i]) for i in range(n))


@dataclass(frozen=True)
class TargetShape:
    """What a head is checked against: the target's file, its layer count, hidden size and
    vocabulary size."""
    path: Path
    n_layer: int
    n_embd: int
    n_vocab: int

    @classmethod
    def of_file(cls, info: GGUFInfo) -> "TargetShape":
        """From the target's GGUF header (the pair doctor: no weights loaded)."""
        arch = info.architecture
        return cls(Path(info.path), _int(info.metadata.get(f"{arch}.block_count")),
                   _int(info.metadata.get(f"{arch}.embedding_length")), info.n_vocab)


@dataclass(frozen=True)
class HeadFacts:
    """What a head needs of its target, as its file says: the target layers it reads, the
    target's hidden size, a vocabulary at least its own (``n_vocab``), and its reduced draft
    vocabulary (``n_draft_vocab``: the d2t table's length, else its output rows)."""
    info: GGUFInfo
    target_layers: tuple[int, ...]
    target_hidden_size: int | None
    n_vocab: int

    @classmethod
    def of_file(cls, info: GGUFInfo, target_layers=None, n_vocab: int | None = None) -> "HeadFacts":
        """From the head's GGUF header; ``target_layers``/``n_vocab`` as llama.cpp loaded them
        when it has (they are the header's)."""
        layers = info.arrays.get(f"{ARCH}.target_layers", ()) if target_layers is None else target_layers
        hidden = info.metadata.get(f"{ARCH}.target_hidden_size")
        return cls(info, tuple(int(x) for x in layers), hidden if isinstance(hidden, int) else None,
                   info.n_vocab if n_vocab is None else n_vocab)

    @property
    def path(self) -> Path:
        return Path(self.info.path)

    @property
    def n_draft_vocab(self) -> int:
        d2t = self.info.tensors.get("d2t")
        if d2t is not None and d2t.shape:
            return d2t.shape[0]
        rows = self.info.tensors.get("output.weight")
        return rows.shape[1] if rows is not None and len(rows.shape) == 2 else self.n_vocab

    def fit(self, target: TargetShape) -> tuple[int, ...]:
        """check_fit: the target layers, then the vocabulary, the hidden size, the head's own
        needs and the d2t table."""
        other = f"({target.path.name}): it was made for another target"
        self.check_layers(target, other)
        if self.n_vocab < target.n_vocab:     # the head reads the target's tokens: it would abort
            raise ModelFileError(self.path, f"its vocabulary has {self.n_vocab} tokens, fewer "
                                            f"than the target's {target.n_vocab} {other}")
        if self.target_hidden_size != target.n_embd:
            raise ModelFileError(self.path, f"{self.hidden_words} is not the target's "
                                            f"{target.n_embd} {other}")
        self.check_own()
        check_d2t(self, target)
        return self.target_layers

    def check_layers(self, target: TargetShape, other: str) -> None:
        """llama.cpp's draft-eagle3 reads exactly three target layers, each one of the target's
        or its output (an id of n_layer)."""
        ids = self.target_layers
        if len(ids) != N_TARGET_LAYERS:
            raise ModelFileError(self.path, f"draft model is not eagle3 (expected "
                                            f"{N_TARGET_LAYERS} extract layers, got {len(ids)})")
        for lid in ids:
            if not 0 <= lid <= target.n_layer:
                raise ModelFileError(self.path, f"its target layer id {lid} ({ARCH}.target_layers "
                                                f"{list(ids)}) exceeds the target's "
                                                f"{target.n_layer} layers {other}")

    @property
    def hidden_words(self) -> str:
        return f"its target hidden size ({ARCH}.target_hidden_size {self.target_hidden_size})"

    def check_own(self) -> None:
        """What the head needs of itself (an EAGLE-3 head: nothing more)."""

    noun = "an EAGLE-3 head"

    def describe(self) -> str:
        """One line: what the head reads and drafts over."""
        return (f"{self.noun}: reads the inputs of target layers {list(self.target_layers)} "
                f"of a target of hidden size {self.target_hidden_size}, drafts over "
                f"{self.n_draft_vocab:,} of {self.n_vocab:,} tokens")


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def check_head(target: Model, head: Model) -> tuple[int, ...]:
    """The head's target layer ids, once the head fits the loaded target (:func:`check_fit`,
    the target's shape and the head's layers as llama.cpp loaded them)."""
    shape = TargetShape(target.path, int(ll.llama_model_n_layer(target.ptr)),
                        int(ll.llama_model_n_embd(target.ptr)), target.n_vocab)
    return check_fit(shape, HeadFacts.of_file(check_gguf(head.path), target_layer_ids(head),
                                              head.n_vocab))


def check_fit(target: TargetShape, head: HeadFacts) -> tuple[int, ...]:
    """The head's target layer ids, once the head fits the target; ModelFileError (one line,
    naming the head) at the first rule that fails. The rules are the head's kind's
    (:meth:`HeadFacts.fit`: EAGLE-3's; core/models/dflash.py's DFlashFacts: a DFlash head's).
    The engine runs it on the loaded models (:func:`check_head`, ``check_dflash``), the pair
    doctor on the two headers."""
    return head.fit(target)


def check_d2t(head: HeadFacts, target: TargetShape) -> None:
    """d2t, where present: I64, one entry per row of the output head (the head's own, or the
    target's), every entry a token of both vocabularies (llama.cpp asserts in ggml_set_rows)."""
    info = head.info
    d2t = info.tensors.get("d2t")
    if d2t is None:
        return
    rows = info.tensors.get("output.weight")
    n_rows = rows.shape[1] if rows is not None and len(rows.shape) == 2 else target.n_vocab
    if d2t.type != "I64" or len(d2t.shape) != 1 or d2t.shape[0] != n_rows:
        raise ModelFileError(head.path, f"its d2t table is {d2t.type} {list(d2t.shape)}; llama.cpp "
                                        f"needs I64 [{n_rows}], one target id per output row")
    table = d2t_table(info)
    limit = min(head.n_vocab, target.n_vocab)
    bad = np.flatnonzero((table < 0) | (table >= limit))
    if bad.size:
        i = int(bad[0])
        raise ModelFileError(head.path, f"its d2t table maps draft token {i} to {int(table[i])}, "
                                        f"outside the vocabulary of {limit} tokens "
                                        f"({bad.size} entries out of range)")


def d2t_table(info) -> np.ndarray | None:
    """The d2t table of a head's ``check_gguf`` info: the target id of each draft id (None: the
    head has none, its vocabulary is the target's)."""
    d2t = info.tensors.get("d2t")
    if d2t is None:
        return None
    return np.fromfile(info.path, dtype="<i8", count=d2t.shape[0], offset=d2t.file_offset)


def layers_words(layer_ids, n_layer: int) -> str:
    """Which of the target's hidden states a head reads, in words: "the inputs of the target's
    layers 1, 2 and 3" (an id of n_layer is the target's output before its final norm)."""
    inputs = [str(i) for i in layer_ids if i < n_layer]
    words = []
    if inputs:
        listed = inputs[0] if len(inputs) == 1 else f"{', '.join(inputs[:-1])} and {inputs[-1]}"
        words.append(f"the inputs of the target's layer{'s' if len(inputs) > 1 else ''} {listed}")
    if len(inputs) < len(layer_ids):
        words.append("the target's last hidden state (before its output norm)")
    return " and ".join(words)


class Head(StagedHead):
    """A head's context beside the target's (the head's made with ``other`` = the target's):
    turns on what ``draft-eagle3`` reads (the target layers' inputs on every decode of the
    target, the head's pre-norm state on its output rows), and owns the head's two extended
    batches: ``dec`` (decoder pairs) and ``enc`` (encoder rows)."""

    def __init__(self, tgt: Context, ctx: Context, layer_ids: tuple[int, ...]):
        super().__init__(tgt, ctx)
        self.layer_ids = layer_ids
        self.n_layer_tgt = int(ll.llama_model_n_layer(tgt.model.ptr))
        self.n_embd_tgt = int(ll.llama_model_n_embd(tgt.model.ptr))
        self.enc = ExtBatch(ctx)
        table = d2t_table(check_gguf(ctx.model.path))
        self.n_draft_vocab = 0 if table is None else len(table)   # 0: the target's vocabulary
        # target id -> draft id (the first draft id that maps to it)
        self.draft_ids = {} if table is None else {t: i for i, t in reversed(list(enumerate(table.tolist())))}
        self._layer_inp = function("llama_get_embeddings_layer_inp")
        for lid in layer_ids:          # common_speculative_impl_draft_eagle3's constructor
            if lid < self.n_layer_tgt:
                function("llama_set_embeddings_layer_inp")(tgt.ptr, lid, True)
            else:                      # == n_layer: the target's pre-norm output
                function("llama_set_embeddings_nextn")(tgt.ptr, True, False)

    def draft_id(self, token: int) -> int:
        """The head's own id of a target token it drafted: its row in the reduced vocabulary
        (``d2t[draft_id] == token``); the token itself when the head has no d2t table."""
        return self.draft_ids.get(token, -1) if self.n_draft_vocab else token

    def close(self) -> None:
        super().close()
        self.enc.close()

    def features(self, n_tokens: int) -> np.ndarray:
        """The target's last decode, as the encoder reads it: per token, the inputs of the
        three target layers side by side ((n_tokens, 3 * n_embd_tgt) float32)."""
        n = self.n_embd_tgt
        out = np.empty((n_tokens, len(self.layer_ids) * n), np.float32)
        for k, lid in enumerate(self.layer_ids):
            ptr = self._layer_inp(self.tgt.ptr, lid) if lid < self.n_layer_tgt \
                else self._nextn(self.tgt.ptr)
            if not ptr:
                raise ModelFileError(self.ctx.model.path, f"the target's layer {lid} input was "
                                                          "not extracted")
            out[:, k * n:(k + 1) * n] = np.ctypeslib.as_array(ptr, shape=(n_tokens, n))
        return out

    def encode(self, features: np.ndarray) -> np.ndarray:
        """g for each row of ``features`` ((n, n_embd_dec) float32), the encoder run in chunks
        of the head's n_ubatch, at placeholder positions after the head's memory (it does not
        read them), as llama.cpp does."""
        g = np.empty((len(features), self.n_embd_dec), np.float32)
        step = self.ctx.n_ubatch
        for i in range(0, len(features), step):
            chunk = features[i:i + step]
            self.enc.clear()
            pos = self.ctx.pos_max() + 1
            for j, row in enumerate(chunk):
                self.enc.add(None, pos + j, row, output=True)
            self.ctx.process(self.enc, "the EAGLE-3 encoder", encode=True)
            g[i:i + len(chunk)] = np.ctypeslib.as_array(self._nextn(self.ctx.ptr),
                                                        shape=(len(chunk), self.n_embd_dec))
        return g
