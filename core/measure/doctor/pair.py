"""The pair doctor: can this draft draft for that target, why not, and what could it buy?

Everything here runs before any weights are loaded:

- the GGUF headers are checked and summarised in pure Python
  (:func:`~specscope.core.models.gguf_file.check_gguf`);
- the vocabulary values come from llama.cpp itself through a vocab-only load,
  and :mod:`specscope.core.models.vocab_gate` applies the four rules of llama.cpp's
  ``common_speculative_are_compatible`` (common/speculative.cpp) to them, so
  the verdict is the one llama.cpp will enforce;
- the cost estimate is the textbook model: ``f`` ≈ the ratio of the
  two files' sizes and speed-up ``(E+1)/(n·f+1)`` with
  ``E = α + α² + … + αⁿ`` (:mod:`.cost_model`); beside it, when a calibration of the
  target is cached on this machine, the calibrated estimate (:mod:`.calibrated_estimate`),
  which then ranks the scan.

The engine runs the gate (``vocab_gate.vocab_rules``) on its already-loaded models; the CLI
(``specscope doctor``) and the GUI call :func:`check_pair` and :func:`scan`.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import llama_cpp.llama_cpp as ll

from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.drafters.registry import require_generating
from specscope.core.errors import ModelFileError, printable
from specscope.core.measure.cost.model import ALPHAS, N_MAX, best_n, speedup_table
from specscope.core.measure.doctor.cross_vocab import CrossVocabReport, cross_vocab
from specscope.core.measure.doctor.estimate import (RANK_ALPHA, CalibratedEstimate, MachineCosts,
                                                    machine_costs)
from specscope.core.measure.doctor.heads import head_notes, head_rules, head_spec_type, nextn_notes
from specscope.core.models.dflash import DFlashFacts
from specscope.core.models.eagle3 import ARCH as EAGLE3, DFLASH, HeadFacts
from specscope.core.models.gguf_file import GGUFInfo, check_gguf
from specscope.core.models.llama import Closing, Model, ensure_backend
from specscope.core.models.mtp import nextn_layers
from specscope.core.models.vocab_map import token_keys
from specscope.core.models.vocab_gate import (NO_TOKENIZER, SPEC_VOCAB_CHECK_START_TOKEN_ID, Rule,
                                              VocabFacts, escape_token_text, first_text_mismatch,
                                              rules_from_facts, vocab_facts)

__all__ = [
    "Rule",
    "VocabFacts",
    "ModelSummary",
    "CostEstimate",
    "PairReport",
    "vocab_facts",
    "rules_from_facts",
    "check_pair",
    "escape_token_text",
    "memory_kind",
    "tuning_lineage",
]

# src/llama-arch.cpp: llm_arch_is_recurrent / llm_arch_is_hybrid (llama-cpp-python 0.3.36).
# Only a fallback: the report asks llama.cpp (llama_model_is_recurrent/_hybrid),
# which knows the architecture even after a vocab-only load.
RECURRENT_ARCHS = frozenset({"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})
HYBRID_ARCHS = frozenset({
    "jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h",
    "nemotron_h_moe", "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3", "glm5-next",
    "qwen35", "qwen35moe", "qwen4exp", "deepseek4", "minimax-01",
})


# ============================================================================ beyond the vocabulary

def memory_kind(arch: str | None, *, recurrent: bool | None = None, hybrid: bool | None = None) -> str:
    """"attention", "recurrent" or "hybrid" (llama.cpp's answer when given, else by name)."""
    if recurrent is None:
        recurrent = arch in RECURRENT_ARCHS
    if hybrid is None:
        hybrid = arch in HYBRID_ARCHS
    return "recurrent" if recurrent else "hybrid" if hybrid else "attention"


_INSTRUCT_RE = re.compile(
    r"(?<![a-z0-9])(instruct|instruction|chat|it|sft|dpo|orpo|kto|rlhf|assistant|hermes|thinking)(?![a-z])",
    re.IGNORECASE)
_BASE_RE = re.compile(r"(?<![a-z])(base|pretrain|pretrained|pt)(?![a-z])", re.IGNORECASE)


def tuning_lineage(metadata: dict[str, Any]) -> tuple[str, str]:
    """Guess the tuning lineage from ``general.*`` metadata.

    Returns (kind, evidence): kind is "instruct", "fine-tuned", "base" or
    "unknown"; evidence names the key and value the guess rests on.
    """
    name = metadata.get("general.name")
    for key in ("general.finetune", "general.name"):   # any fine-tune name is a fine-tune
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            ev = f"{key} = {value!r}"
            if _INSTRUCT_RE.search(value):
                return "instruct", ev
            if _BASE_RE.search(value):
                return "base", ev
            if key == "general.finetune":
                return "fine-tuned", ev
    n_base = metadata.get("general.base_model.count")
    if isinstance(n_base, int) and n_base > 0:
        base_name = metadata.get("general.base_model.0.name")
        return "fine-tuned", "general.base_model.count = %d%s" % (
            n_base, f" ({base_name!r})" if isinstance(base_name, str) else "")
    if isinstance(name, str) and name.strip():
        return "base", f"general.name = {name!r}, no tuning named"
    return "unknown", "no general.finetune, general.name or general.base_model keys"


@dataclass(frozen=True)
class ModelSummary:
    """One side of a pair: what the header and llama.cpp say about a model file."""

    path: str
    name: str | None
    architecture: str | None
    file_size: int
    n_tensors: int
    n_params: int
    bits_per_weight: float
    file_type: str | None
    tensor_types: dict[str, dict[str, float]]  # type -> {"count", "n_params", "bytes", "bits_per_weight"}
    context_length: int | None
    has_chat_template: bool
    chat_template_sha256: str | None
    memory: str  # attention / recurrent / hybrid
    can_remove_partial: bool
    tuning: str
    tuning_evidence: str
    vocab: VocabFacts | None
    kind: str = "model"        # "model", or a head's architecture (registry.HEAD_KINDS: the
                               # types with that SpecType.head draft with it)
    head: dict | None = None   # a head's needs: target_layers, target_hidden_size, n_vocab,
                               # n_draft_vocab (the reduced vocabulary); a DFlash head's also
                               # block_size, mask_token, markov_head, confidence_head
    nextn_layers: int = 0      # MTP (nextn) blocks, which draft-mtp drafts with (core/models/mtp.py)

    @property
    def display_name(self) -> str:
        """general.name (escaped: it comes from the file), else the file name."""
        return printable(self.name) if self.name else Path(self.path).name


def head_facts(info: GGUFInfo, n_vocab: int | None = None, mask: int | None = None) -> HeadFacts | None:
    """What a head's file says it needs (its kind's rules: check_fit), None for a model that is
    not a head; ``n_vocab``, a DFlash head's ``mask``: as llama.cpp read them, where it has."""
    if info.architecture == DFLASH:
        return DFlashFacts.of_file(info, n_vocab=n_vocab, mask=mask)
    return HeadFacts.of_file(info, n_vocab=n_vocab) if info.architecture == EAGLE3 else None


def _head_dict(h: HeadFacts | None) -> dict | None:
    if h is None:
        return None
    more = {"block_size": h.block_size, "mask_token": h.mask, "markov_head": h.dspark,
            "confidence_head": h.has_confidence} if isinstance(h, DFlashFacts) else {}
    return {"target_layers": list(h.target_layers), "target_hidden_size": h.target_hidden_size,
            "n_vocab": h.n_vocab, "n_draft_vocab": h.n_draft_vocab, **more}


def _summary(info: GGUFInfo, facts: VocabFacts | None, recurrent=None, hybrid=None,
             head: HeadFacts | None = None) -> ModelSummary:
    mem = memory_kind(info.architecture, recurrent=recurrent, hybrid=hybrid)
    tmpl = info.chat_template
    kind, evidence = tuning_lineage(info.metadata)
    return ModelSummary(
        path=info.path,
        name=info.name,
        architecture=info.architecture,
        file_size=_model_size(info),
        n_tensors=info.n_tensors,
        n_params=info.n_params,
        bits_per_weight=round(info.bits_per_weight, 3),
        file_type=info.file_type,
        tensor_types={
            k: {"count": s.count, "n_params": s.n_elements, "bytes": s.n_bytes,
                "bits_per_weight": round(s.bits_per_weight, 3)}
            for k, s in info.tensor_types.items()
        },
        context_length=info.context_length,
        has_chat_template=tmpl is not None or "tokenizer.chat_template" in info.long_strings,
        chat_template_sha256=hashlib.sha256(tmpl.encode()).hexdigest() if tmpl is not None else None,
        memory=mem,
        can_remove_partial=mem == "attention",
        tuning=kind,
        tuning_evidence=evidence,
        vocab=facts,
        kind=info.architecture if head is not None else "model",
        head=_head_dict(head),
        nextn_layers=nextn_layers(info),
    )


_SPLIT_RE = re.compile(r"^(?P<stem>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def _model_size(info: GGUFInfo) -> int:
    """The file's size, or the sum over all parts of a split model (…-00001-of-0000N.gguf)."""
    count = info.metadata.get("split.count")
    m = _SPLIT_RE.match(Path(info.path).name)
    if not (isinstance(count, int) and count > 1 and m):
        return info.file_size
    total = 0
    for k in range(1, count + 1):
        part = Path(info.path).with_name(f"{m['stem']}-{k:05d}-of-{m['count']}.gguf")
        try:
            total += part.stat().st_size
        except OSError:
            return info.file_size
    return total


@dataclass(frozen=True)
class CostEstimate:
    """The textbook cost model for the pair."""

    f: float  # draft cost / target cost ≈ draft file size / target file size
    basis: str
    alphas: tuple[float, ...]
    n_max: int
    speedups: dict[str, list[float]]  # str(α) -> speed-up at n = 1..n_max
    best: dict[str, dict[str, float]]  # str(α) -> {"n": best n, "speedup": ...}
    warning: str | None
    calibrated: CalibratedEstimate | None = None  # this machine's figure (None: none cached)
    block: bool = False  # a block drafter (a DFlash head): f per round, (E+1)/(f+1)

    def figures(self) -> str:
        """"at α = 0.7: textbook speed-up 1.33x with n = 2, calibrated on this machine 0.81x with
        n = 1": both at the same assumed acceptance, not this pair's (a run measures that)."""
        a = str(RANK_ALPHA)
        b, c = self.best[a], self.calibrated.best[a] if self.calibrated else None
        return (f"at α = {a}: textbook speed-up {b['speedup']:.2f}x with n = {b['n']}"
                + (f", calibrated on this machine {c['speedup']:.2f}x with n = {c['n']}"
                   + (f" (of n ≤ {self.calibrated.n_max} it timed)" if self.calibrated.n_max < self.n_max
                      else "") if c else ""))

    @property
    def may_pay(self) -> bool:
        """Whether a speed-up is in sight at α = RANK_ALPHA: no warning (a draft as dear as the
        target), and above 1× on this machine's calibration where there is one, else in the
        textbook."""
        a = str(RANK_ALPHA)
        best = self.calibrated.best[a] if self.calibrated else self.best[a]
        return self.warning is None and best["speedup"] > 1.0

    @property
    def rank_key(self) -> tuple[int, float]:
        """What the scan ranks by: the calibrated speed-up at α = RANK_ALPHA where there is one
        (higher first), else f (cheaper first: the textbook speed-up falls with f)."""
        if self.calibrated:
            return 0, -self.calibrated.best[str(RANK_ALPHA)]["speedup"]
        return 1, self.f


def _cost(target: ModelSummary, draft: ModelSummary, borrowed: int = 0,
          here: MachineCosts | None = None, head: HeadFacts | None = None) -> CostEstimate:
    """``borrowed``: bytes of the target's weights the draft computes with (a head without an
    output head of its own runs the target's); ``here``: the target's calibration on this
    machine, for the calibrated estimate beside the textbook one; ``head``: what a head is (a
    DFlash head drafts a block, at most as long as its block allows, in one decode)."""
    f = (draft.file_size + borrowed) / target.file_size if target.file_size else float("inf")
    block = isinstance(head, DFlashFacts)
    n_max = min(N_MAX, max(1, head.most_drafted(head.dspark))) if block else N_MAX
    table = speedup_table(f, n_max=n_max, block=block)
    warning = None
    if target.n_tensors == 0 or draft.n_tensors == 0:
        warning = ("a file holds no weights (vocabulary only), so the size ratio says nothing "
                   "about the real cost")
    elif f >= 1.0:
        warning = "the draft is not smaller than the target: speculation cannot pay"
    elif f > 0.5:
        warning = "the draft costs over half a target pass: it needs very high acceptance to pay"
    extra = {EAGLE3: "; an EAGLE-3 head also runs its encoder over every verified token, which "
                     "this ratio leaves out (bench calibrates it)",
             DFLASH: "; a DFlash head drafts its whole block in one decode (f per round, not n·f) "
                     "and also takes in the target's features of every verified token, which this "
                     "ratio leaves out"}
    basis = (f"draft file {draft.file_size:,} bytes"
             + (f" + the target's output head it uses, {borrowed:,} bytes" if borrowed else "")
             + f" / target file {target.file_size:,} bytes; both models memory-bound at batch "
             "size one" + extra.get(draft.kind, ""))
    return CostEstimate(
        f=f,
        basis=basis,
        alphas=ALPHAS,
        n_max=n_max,
        speedups={str(a): [round(x, 4) for x in v] for a, v in table.items()},
        best={str(a): {"n": n, "speedup": round(s, 4)}
              for a, (n, s) in ((a, best_n(a, f, n_max, block)) for a in ALPHAS)},
        warning=warning,
        calibrated=here.estimate(draft.path, f, Path(draft.path).name)
        if here is not None and f < float("inf") else None,
        block=block,
    )


# what the doctor offers when no draft fits a target: llama.cpp's draftless drafters
# (ngram-mod is what llama.cpp's --spec-default enables)
NGRAM_SUGGESTION = ("draftless n-gram drafting needs no draft model: try --spec-type ngram-mod "
                    "(or ngram-simple for text that repeats its input)")


@dataclass(frozen=True)
class PairReport:
    """The pair doctor's answer for one target/draft pair."""

    target: ModelSummary
    draft: ModelSummary
    rules: tuple[Rule, ...]
    compatible: bool
    verdict: str
    notes: tuple[str, ...]  # beyond the vocabulary: memory, context, chat template, lineage
    cost: CostEstimate
    elapsed_s: float
    spec_type: str = DRAFT_MODEL  # the --spec-type that drafts with this draft ("" when none can)
    cross: CrossVocabReport | None = None  # a draft llama.cpp refuses: what SpecScope can do with it

    @property
    def cross_modes(self) -> tuple[str, ...]:
        """The modes draft-simple can draft with across vocabularies (none: compatible, or none can)."""
        return self.cross.modes if self.cross is not None else ()

    @property
    def failed_rules(self) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if not r.passed)

    @property
    def reason(self) -> str:
        """One line: why the pair is incompatible (the first failing rule), or 'compatible'."""
        failed = self.failed_rules
        if not failed:
            return "compatible"
        more = len(failed) - 1
        return failed[0].message + (f" (and {more} more rule{'s' if more > 1 else ''} failed)" if more else "")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["f"] = self.cost.f
        return _jsonable(d)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    if isinstance(x, bytes):
        return escape_token_text(x)
    return x


def _notes(t: ModelSummary, d: ModelSummary) -> list[str]:
    notes = []
    # memory (recurrent state cannot be rolled back: llama.cpp checkpoints it)
    for side, m in (("target", t), ("draft", d)):
        arch = m.architecture or "unknown architecture"
        if m.can_remove_partial:
            notes.append(f"{side} ({arch}): attention KV cache; rejected drafts are removed with seq_rm")
        else:
            notes.append(f"{side} ({arch}): {m.memory} memory cannot remove part of a sequence; "
                         "will use checkpoints (state save/restore and replay, as llama.cpp does)")
    # context
    tc, dc = t.context_length, d.context_length
    if tc and dc:
        if dc < tc:
            notes.append(f"training context: target {tc:,}, draft {dc:,} tokens; past {dc:,} tokens "
                         "the draft is outside what it was trained on and acceptance may fall")
        else:
            notes.append(f"training context: target {tc:,}, draft {dc:,} tokens")
    else:
        notes.append(f"training context: target {tc or 'unknown'}, draft {dc or 'unknown'}")
    # chat template
    if t.has_chat_template and d.has_chat_template:
        if t.chat_template_sha256 == d.chat_template_sha256:
            notes.append("chat template: both have one, and they are identical")
        else:
            notes.append("chat template: both have one, and they differ; the draft was tuned on "
                         "another conversation format, so acceptance on chat prompts may suffer")
    elif t.has_chat_template or d.has_chat_template:
        has, hasnt = ("target", "draft") if t.has_chat_template else ("draft", "target")
        notes.append(f"chat template: only the {has} has one (the {hasnt} may be a base model)")
    else:
        notes.append("chat template: neither has one")
    # tuning lineage
    kinds = {t.tuning, d.tuning}
    lineage = f"tuning: target {t.tuning} ({t.tuning_evidence}); draft {d.tuning} ({d.tuning_evidence})"
    if "base" in kinds and kinds & {"instruct", "fine-tuned"}:
        base_side = "draft" if d.tuning == "base" else "target"
        lineage += (f" — a base {base_side} paired with a tuned model: however well the "
                    "vocabularies fit, acceptance may disappoint; measure it before deciding")
    elif "unknown" in kinds:
        lineage += " — lineage not recorded; measure acceptance"
    elif t.tuning == d.tuning:
        lineage += f" — both {t.tuning} (the same kind of tuning, not necessarily the same family)"
    notes.append(lineage)
    return notes


def _verdict(compatible: bool, rules: list[Rule], t: ModelSummary, d: ModelSummary, cost: CostEstimate,
             cross: CrossVocabReport | None = None) -> str:
    if not compatible:
        failed = [r.name for r in rules if not r.passed]
        verdict = (f"INCOMPATIBLE for llama.cpp: it will refuse this draft ({', '.join(failed)} "
                   f"rule{'s' if len(failed) > 1 else ''} failed)")
        if cross is None:
            return verdict
        if cross.modes:
            return verdict + f". SpecScope can still draft with it: {cross.summary()}"
        return verdict + f". SpecScope cannot draft with it either: {cross.refusal}"
    if cost.f >= 1.0:
        return "COMPATIBLE, but the draft is not smaller than the target, so it cannot speed it up"
    return f"COMPATIBLE: llama.cpp will accept this draft; f ≈ {cost.f:.3f}, {cost.figures()}"


# ============================================================================ loading

class _Loaded(Closing):
    """A checked file, its vocab-only model and what llama.cpp says about it."""

    _keys: dict | None = None

    @property
    def keys(self) -> dict[bytes, int]:
        """Its tokens' pieces (``vocab_map.token_keys``), read once: a scan reads the target's once."""
        if self._keys is None:
            self._keys = token_keys(self.model)
        return self._keys

    def __init__(self, path: str | os.PathLike, target: bool = False):
        self.info = check_gguf(path)
        if target:
            require_generating(self.info)
        if not self.info.has_tokenizer:
            raise ModelFileError(str(path), NO_TOKENIZER)
        if self.info.architecture is None:
            raise ModelFileError(str(path), "this GGUF file names no architecture (general.architecture)")

        try:
            self.model = Model(path, vocab_only=True, check_file=False)
        except ModelFileError as e:
            e.native = True  # llama.cpp refused a file that passed the Python check
            raise
        try:
            self.facts = vocab_facts(self.model.vocab)
            self.head = head_facts(self.info, self.facts.n_tokens,
                                   int(ll.llama_vocab_mask(self.model.vocab)))
            self.summary = _summary(self.info, self.facts,
                                    recurrent=bool(ll.llama_model_is_recurrent(self.model.ptr)),
                                    hybrid=bool(ll.llama_model_is_hybrid(self.model.ptr)),
                                    head=self.head)
        except BaseException:
            self.model.close()
            raise

    def close(self) -> None:
        self.model.close()


def _token_region(info: GGUFInfo, start: int, stop: int) -> bytes | None:
    """The raw bytes of tokens [start, stop) of tokenizer.ggml.tokens, or None if unavailable."""
    offs = info.token_offsets
    if offs is None or len(offs) <= stop:
        return None
    try:
        with open(info.path, "rb") as f:
            if os.fstat(f.fileno()).st_size != info.file_size:
                return None  # the file changed since it was checked
            f.seek(offs[start])
            return f.read(offs[stop] - offs[start])
    except OSError:
        return None


def _texts_identical(t: _Loaded, d: _Loaded, n: int) -> bool:
    """True when the token texts of ids [5, n) are provably identical for llama.cpp.

    llama.cpp's text for id i is the i-th string of tokenizer.ggml.tokens,
    except that an empty one becomes "[EMPTY_i]" (the same on both sides) and
    the "hybriddna" tokenizer edits some (src/llama-vocab.cpp, load()). So
    byte-identical token regions in the two files mean llama.cpp's
    comparison passes; anything else goes through llama.cpp's own texts.
    This skips ~2n calls into llama.cpp for the common compatible case.
    """
    start = SPEC_VOCAB_CHECK_START_TOKEN_ID
    if n <= start:
        return True
    if "hybriddna" in (t.info.tokenizer_model, d.info.tokenizer_model):
        return False
    a = _token_region(t.info, start, n)
    return a is not None and a == _token_region(d.info, start, n)


def _pair(t: _Loaded, d: _Loaded, t0: float, here: MachineCosts | None = None) -> PairReport:
    if d.head is None:
        return _model_pair(t, d, t0, here)
    rules, spec = head_rules(t, d), head_spec_type(d.head)
    out = t.info.tensors.get("output.weight") if "output.weight" not in d.info.tensors else None
    cost = _cost(t.summary, d.summary, out.n_bytes if out is not None else 0, here, d.head)
    compatible = all(r.passed for r in rules)
    failed = next((r for r in rules if not r.passed), None)
    verdict = (f"COMPATIBLE: {d.head.noun} for this target: run it with --spec-type {spec}; "
               f"f ≈ {cost.f:.3f}, {cost.figures()}" if compatible else
               f"INCOMPATIBLE: {spec} cannot draft with this head ({failed.name} rule failed)")
    return PairReport(target=t.summary, draft=d.summary, rules=tuple(rules), compatible=compatible,
                      verdict=verdict, notes=tuple(head_notes(t, d) + nextn_notes(t.summary, d.summary)),
                      cost=cost, elapsed_s=time.perf_counter() - t0,
                      spec_type=spec if compatible else "")


def _model_pair(t: _Loaded, d: _Loaded, t0: float, here: MachineCosts | None) -> PairReport:
    n = min(t.facts.n_tokens, d.facts.n_tokens)
    if _texts_identical(t, d, n):
        mismatch = None
    else:
        mismatch = first_text_mismatch(t.model.vocab, d.model.vocab, n)
    rules = rules_from_facts(t.facts, d.facts, mismatch)
    compatible = all(r.passed for r in rules)
    cost = _cost(t.summary, d.summary, here=here)
    cross = None if compatible else cross_vocab(t.model, d.model, d.summary.can_remove_partial,
                                                lambda: (t.keys, d.keys))
    return PairReport(
        target=t.summary,
        draft=d.summary,
        rules=tuple(rules),
        compatible=compatible,
        verdict=_verdict(compatible, rules, t.summary, d.summary, cost, cross),
        notes=tuple(_notes(t.summary, d.summary) + nextn_notes(t.summary, d.summary)),
        cost=cost,
        elapsed_s=time.perf_counter() - t0,
        spec_type=DRAFT_MODEL if compatible or (cross and cross.modes) else "",
        cross=cross,
    )


def _load_both(target_path, draft_path) -> tuple[_Loaded, _Loaded]:
    """Check and vocab-load both files at once (llama.cpp's loader runs without the GIL).

    On failure, the target's error wins; a native load error is reproduced
    alone so that the llama.cpp log line it quotes is that file's.
    """

    ensure_backend()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="specscope-doctor") as pool:
        futures = [pool.submit(_Loaded, target_path, True), pool.submit(_Loaded, draft_path)]
    loaded, errors = [], []
    for fut in futures:
        exc = fut.exception()
        loaded.append(None if exc else fut.result())
        errors.append(exc)
    if not any(errors):
        return loaded[0], loaded[1]
    for x in loaded:
        if x is not None:
            x.close()
    for path, exc, target in zip((target_path, draft_path), errors, (True, False)):
        if exc is None:
            continue
        if getattr(exc, "native", False):
            _Loaded(path, target).close()  # raises again, this time with its own log line
        raise exc
    raise AssertionError("unreachable")


def check_pair(target_path: str | os.PathLike, draft_path: str | os.PathLike) -> PairReport:
    """Say whether ``draft_path`` can draft for ``target_path``, why not, and what it could buy.

    Raises :class:`ModelFileError` for a file that is missing, unreadable, not
    GGUF, truncated, malformed or without a tokenizer.
    """
    t0 = time.perf_counter()
    t, d = _load_both(target_path, draft_path)
    try:
        report = _pair(t, d, t0, machine_costs(target_path))
    finally:
        # freeing a 150k-token vocabulary takes ~70 ms of native time: free both at once
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="specscope-doctor") as pool:
            for fut in [pool.submit(t.close), pool.submit(d.close)]:
                fut.result()
    return replace(report, elapsed_s=time.perf_counter() - t0)
