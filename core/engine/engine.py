"""Speculative decoding as llama.cpp's speculative-simple does it, in Python.

``Run._spec_rounds`` reads beside examples/speculative-simple/speculative-simple.cpp. What
drafts is a chain of drafters (core/drafters: llama.cpp's ``--spec-type``): the draft model
(draft-simple), an EAGLE-3 head (draft-eagle3, docs/eagle3.md), the target's own MTP blocks
(draft-mtp, docs/mtp.md) and the draftless n-gram types,
tried in llama.cpp's priority order, the first non-empty draft winning the round. A round, with both caches holding [0, n_past) and id_last
sampled but not yet evaluated (``RoundState``, core/engine/round_record.py):

    1. draft:   the chain proposes up to the round's budget (min(n_ctx - n_past - 2, what is
                left of n_predict - 1)); a replay round takes the tokens a checkpoint round
                decided instead; a target that cannot drop rows is checkpointed first;
    2. verify:  the target decodes [id_last, *draft] in one batch, logits on every row;
    3. process: the drafters see that batch (``common_speculative_process``; the prompt's
                chunks too, as the target decodes them);
    4. sample:  the acceptance rule samples the rows (core/engine/accept_rules.py: llama.cpp's
                ``match``, the default, keeps drafted tokens while the target samples them and
                always emits its own; ``ratio`` is speculative sampling; synthetic acceptance,
                core/engine/synth.py, keeps positions at random);
    5. restore: after a partial acceptance on a target that cannot drop part of a sequence,
                the checkpoints are restored and the decided tokens replayed next round;
    6. accept:  otherwise the drafters learn how many were kept (``common_speculative_accept``;
                the draft model brings its cache to the kept history, core/engine/drafters/model.py),
                the target drops its rejected rows (``llama_memory_seq_rm``), and the round
                state moves on.

Checkpoints, as llama.cpp's speculative-simple takes them (``common_prompt_checkpoint`` with
``LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY``, ``llama.Checkpoint``), are for a memory that cannot
drop part of a sequence (``COMMON_CONTEXT_SEQ_RM_TYPE_FULL``): recurrent (Mamba, RWKV) or
hybrid (LFM2, Granite-4-H, Jamba, Nemotron-H, Qwen3.5 …). A hybrid memory saves only its
recurrent part and a restore trims the attention rows decoded since. llama.cpp's experimental
``n_rs_seq`` snapshots stay off.

End of generation, as llama.cpp: a round emits its tokens up to the first end-of-generation
token and nothing after it. A drafted EOG that the target samples too counts as accepted when
it ends the draft (the bonus token sampled after it is dropped: ``RoundEvent.discarded``);
with more drafted tokens after it, the verification stops there and it is the target's own
token (``common_sampler_sample_and_accept_n``; ``RoundEvent.eog_ends_draft``).

Differences from llama.cpp, all deliberate: ``n_predict`` is exact (llama.cpp emits one token
more); a per-round budget of 0 means no draft (llama.cpp then drafts up to n_max past the end
of the context, and an n-gram type's whole draft, uncut); the run stops cleanly when the
context is full; a checkpoint round that decides the end of generation ends the run
(llama.cpp replays the decided tokens once more before it stops); a draft whose memory cannot
drop part of a sequence is restored from a checkpoint and re-synchronised instead of being
left stale.
"""

from __future__ import annotations

import itertools
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

import numpy as np

from specscope.core.engine.accept_rules import make_rule
from specscope.core.engine.draft_policy import make_policy
from specscope.core.engine.drafters import MD_TYPES, MODEL_TYPES
from specscope.core.engine.drafters.build import make_chain
from specscope.core.engine.drafters.registry import (HEAD, HEAD_KINDS, MODEL, TARGET, TYPES, alone, listing,
                                                     require_generating)
from specscope.core.engine.drafters.xvocab import choose_mode
from specscope.core.engine.events import Prefill, RoundEvent
from specscope.core.engine.round_record import Recorder, RoundCheckpoint, RoundState
from specscope.core.engine.sampling import SamplerSettings, build_chain
from specscope.core.engine.settings import EngineSettings, SpecSettings
from specscope.core.engine.synth import check_sampler
from specscope.core.errors import ConfigError, ContextFullError, IncompatiblePairError
from specscope.core.models.devices import (add_rpc_servers, device_array, hold, is_remote,
                                           placement, release)
from specscope.core.models.dflash import DFlashHead, check_dflash, is_dflash
from specscope.core.models.eagle3 import Head, check_head, is_eagle3
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.llama import Batch, Checkpoint, Closing, Context, Model, resolve_repack
from specscope.core.models.mtp import MtpHead, nextn_layers, require_nextn
from specscope.core.models.sampler_chain import SamplerChain
from specscope.core.models.vocab_gate import require_vocabulary, vocab_rules



_EPOCHS = itertools.count(1)


@dataclass(frozen=True)
class Held:
    """What a run left in the engine's caches, for a conversation's next turn (core/session/
    conversation.py): rows [0, len(tokens)) of the target's cache hold ``tokens`` (and the draft
    model's cache the same), as of the engine's ``epoch`` that run had; ``chain``: its drafters."""
    tokens: np.ndarray
    epoch: int
    chain: object = None


class Engine(Closing):
    """Owns the target and (optionally) draft model, their contexts, batches and samplers."""

    def __init__(self, target: str | Path, draft: str | Path | None = None,
                 settings: EngineSettings = EngineSettings(), progress=None):
        """progress(model_role, fraction) is called while a model loads."""
        self.settings = settings
        self._stack = ExitStack()
        self._lock = threading.Lock()
        # each hold of the contexts gets an epoch, unique across engines: a Held is good for the
        # next hold of the same engine only (nothing else used its caches in between)
        self.epoch = self.epoch_before = 0
        self._policies: dict = {}    # the last cost policy per sampler, rule and vocabulary mode
        try:
            self._open(Path(target), Path(draft) if draft else None, progress)
        except BaseException:
            self._stack.close()
            raise

    def _open(self, target: Path, draft: Path | None, progress) -> None:
        s = self.settings
        on = (lambda role: (lambda f: progress(role, f))) if progress else (lambda role: None)
        self.repack, self.repack_reason = resolve_repack(s.repack)
        add_rpc_servers(s.rpc)
        remote = list(s.rpc) if (is_remote(s.target_devices, s.target_gpu_layers, s.rpc) or (
            draft and is_remote(s.draft_devices, s.draft_gpu_layers, s.rpc))) else []
        hold(remote)                      # llama.cpp stays connected while the models live
        self._stack.callback(release, remote)
        self.placement = {"target": placement(s.target_devices, s.target_gpu_layers, s.rpc)}
        # a target with MTP blocks loads them (llama.cpp's load_mtp) for draft-mtp's context
        self.target_info = check_gguf(target)
        require_generating(self.target_info)
        self.target = self._own(Model(target, n_gpu_layers=s.target_gpu_layers, repack=self.repack,
                                      progress=on("target"), check_file=False,
                                      devices=device_array(s.target_devices, "target"),
                                      load_mtp=nextn_layers(self.target_info) > 0))
        require_vocabulary(self.target)
        self.draft, layer_ids, self.vocab_failed = None, (), ()
        if draft is not None:
            self.placement["draft"] = placement(s.draft_devices, s.draft_gpu_layers, s.rpc)
            self.draft = self._own(Model(draft, n_gpu_layers=s.draft_gpu_layers, repack=self.repack,
                                         progress=on("draft"),
                                         devices=device_array(s.draft_devices, "draft")))
            require_vocabulary(self.draft)
            if is_eagle3(self.draft):       # an EAGLE-3 head: llama.cpp's eagle3 checks instead
                layer_ids = check_head(self.target, self.draft)
            elif is_dflash(self.draft):     # a DFlash head: its own checks
                layer_ids = check_dflash(self.target, self.draft)
            else:
                # llama.cpp's verdict: its rules failed, draft-simple drafts across vocabularies
                self.vocab_failed = tuple(r for r in vocab_rules(self.target.vocab, self.draft.vocab)
                                          if not r.passed)
        # contexts are pushed after their models, so the ExitStack frees them first; a head's
        # context (EAGLE-3, DFlash) reads the target's (llama.cpp's ctx_other) and goes first
        self.tgt = self._own(Context(self.target, s.context(s.target_threads)))
        self.dft = self.head = self.mtp = None
        if self.draft is not None:
            # decoded on the target's thread, its OpenMP team: one governor (models/threads.py)
            self.dft = self._own(Context(self.draft, s.context(s.draft_threads),
                                         self.tgt if layer_ids else None, governor=self.tgt.governor))
        if layer_ids:
            kind = DFlashHead if is_dflash(self.draft) else Head
            self.head = self._own(kind(self.tgt, self.dft, layer_ids))
        self.tgt_removable = self.tgt.can_remove_partial()
        # a head's memory is a KV cache, and it decodes nothing without its embeddings
        self.dft_removable = self.dft.can_remove_partial() if self.dft and not self.head else True
        # where a memory cannot drop part of a sequence, the rounds checkpoint it (module docs)
        self.tgt_checkpoint = None if self.tgt_removable else Checkpoint(self.tgt)
        self.dft_checkpoint = None if self.dft_removable else Checkpoint(self.dft)
        self.batch = self._own(Batch(self.tgt.n_batch))
        self.dbatch = self._own(Batch(self.dft.n_batch)) if self.dft and not self.head else None

    def vocab_refusal(self) -> IncompatiblePairError | None:
        """llama.cpp's refusal of this pair ("the target and draft vocabs are not compatible"),
        naming its failed rules; None when its gate passes."""
        if not self.vocab_failed:
            return None
        return IncompatiblePairError(f"{self.draft.path.name} cannot draft for "
                                     f"{self.target.path.name}: "
                                     + "; ".join(r.message for r in self.vocab_failed),
                                     self.vocab_failed)

    @contextmanager
    def exclusive(self, what: str = "a generation"):
        """Hold the engine's contexts for ``what`` (a run, a calibration, a lossless check):
        ConfigError at once when something else holds them."""
        if not self._lock.acquire(blocking=False):
            raise ConfigError(f"this engine is busy: it cannot start {what} now")
        self.epoch_before, self.epoch = self.epoch, next(_EPOCHS)
        try:
            yield self
        finally:
            self._lock.release()

    def mtp_head(self) -> MtpHead:
        """draft-mtp's context on the target's own weights (``LLAMA_CONTEXT_TYPE_MTP``, reading
        the target's context as ``ctx_other``, as many tokens, the draft threads), made at its
        first use and kept; freed before the target's context."""
        if self.mtp is None:
            require_nextn(self.target_info, self.target.path)
            s = self.settings
            ctx = self._own(Context(self.target, s.context(s.draft_threads), self.tgt, mtp=True,
                                    governor=self.tgt.governor))
            self.mtp = self._own(MtpHead(self.tgt, ctx))
        return self.mtp

    def _own(self, handle):
        self._stack.callback(handle.close)
        return handle

    def close(self) -> None:
        self._stack.close()

    # ------------------------------------------------------------------ public runs
    def speculative(self, prompt: str | list[int], spec: SpecSettings = SpecSettings(),
                    sampler: SamplerSettings = SamplerSettings(), n_predict: int = 128,
                    stop: threading.Event | None = None, calibration=None,
                    resume: Held | None = None, teach: bool = False) -> "Run":
        """``teach``: each round also keeps the target's p of the drafted tokens and the entropy
        of its rows (step mode; RoundEvent.target_p, .entropy). ``calibration``: what the
        ``cost`` draft policy predicts with
        (``measure.cost.calibrate.policy_calibration``: the caller measures it, or takes it from the cache,
        before the run, so that a run never starts with seconds of timing). ``resume``: what the
        turn before left in the caches (a conversation: ``Run.held``), reused where it matches."""
        spec.validate()
        if spec.needs_draft and self.draft is None:
            raise ConfigError(f"{' and '.join(t for t in spec.types if t in MD_TYPES)} needs a "
                              "draft model (-md); the n-gram types (--spec-type ngram-...) draft "
                              "without one")
        self._check_draft_kind(spec)
        vocab = choose_mode(spec, self)       # across vocabularies: drafters/xvocab.py
        if spec.draft_policy == "cost" and spec.uses_draft_model and calibration is None:
            raise ConfigError("the cost draft policy needs the pair's calibration "
                              "(measure.cost.calibrate.policy_calibration)")
        policy = self._policy(spec, calibration, sampler, vocab) if spec.uses_draft_model else None
        return Run(self, prompt, spec, sampler, n_predict, stop, policy, vocab, resume, teach)

    def _policy(self, spec: SpecSettings, calibration, sampler: SamplerSettings, vocab: str):
        """The run's draft-length policy; ``cost`` starts from what the last run with the same
        sampler (a greedy one's seed aside), acceptance rule and vocabulary mode learned of this
        pair (draft_policy.Learned)."""
        key = (replace(sampler, seed=0) if sampler.greedy else sampler, spec.accept_rule, vocab)
        before = self._policies.get(key)
        policy = make_policy(spec, calibration, before.learned() if before is not None else None)
        if hasattr(policy, "learned"):
            self._policies[key] = policy
        return policy

    def forget_learned(self) -> None:
        """The next runs' cost policies start from the prior (what a what-if replay assumes)."""
        self._policies.clear()

    def _check_draft_kind(self, spec: SpecSettings) -> None:
        """Each type drafts with what its registry entry says: a head type with a head of its
        kind as the -md model, draft-simple with any other model, a type reading the target's
        layers with the target's MTP blocks; a type reading the target's hidden states needs a
        target whose rows can be dropped."""
        kind = self._head_kind()
        if self.draft is not None:
            arch, types = self.draft.meta("general.architecture"), self._md_types()
        for t in (TYPES[name] for name in spec.types):
            if t.source == HEAD and t.head != kind:
                raise ConfigError(f"{self.draft.path}: {t.name} needs {HEAD_KINDS[t.head]} as the "
                                  f"draft model; this is a {arch} model (--spec-type {types} "
                                  "drafts with it)")
            if t.source == MODEL and kind:
                raise ConfigError(f"{self.draft.path}: {HEAD_KINDS[kind]} drafts with "
                                  f"--spec-type {types}, not {t.name}")
            if t.source == TARGET:
                require_nextn(self.target_info, self.target.path)
            if t.branches and not (self.tgt_removable and self.dft_removable):
                raise ConfigError(f"{self.target.path}: {t.name} keeps its branches as sequences "
                                  "of both caches, which a recurrent or hybrid memory cannot drop")
            if t.reads_target and not self.tgt_removable:
                raise ConfigError(f"{self.target.path}: {t.name} on a recurrent or hybrid target: "
                                  "llama.cpp rolls such a target back with its n_rs_seq snapshots, "
                                  "which SpecScope does not mirror yet")

    def _head_kind(self) -> str:
        """The -md model's head kind (registry.HEAD_KINDS), "" for a draft model or none."""
        if self.head is None:
            return ""
        return "dflash" if isinstance(self.head, DFlashHead) else "eagle3"

    def _md_types(self) -> str:
        """The --spec-type values the -md model drafts with, in words."""
        kind = self._head_kind()
        return listing(lambda t: t.uses_md and t.head == kind, last=" or ")

    def baseline(self, prompt: str | list[int], sampler: SamplerSettings = SamplerSettings(),
                 n_predict: int = 128, stop: threading.Event | None = None,
                 resume: Held | None = None) -> "Run":
        return Run(self, prompt, None, sampler, n_predict, stop, resume=resume)

    def tokenize(self, prompt: str | list[int]) -> list[int]:
        tokens = self.target.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        if not tokens:
            raise ConfigError("the prompt is empty")
        if len(tokens) >= self.tgt.n_ctx:
            asked = self.settings.n_ctx
            rounded = f" ({asked} asked, rounded up by llama.cpp)" if asked < self.tgt.n_ctx else ""
            raise ContextFullError(
                f"the prompt is {len(tokens)} tokens but the context holds {self.tgt.n_ctx}{rounded}: "
                "shorten the prompt or raise the context size")
        return tokens


class Run:
    """One generation. Iterate it for RoundEvents; ``prefill``, ``tokens`` and
    ``finish`` are filled in as it goes. Only one Run per Engine may iterate at a time."""

    def __init__(self, engine: Engine, prompt, spec: SpecSettings | None,
                 sampler: SamplerSettings, n_predict: int, stop: threading.Event | None,
                 policy=None, vocab: str = "", resume: Held | None = None, teach: bool = False):
        if n_predict < 1:
            raise ConfigError(f"n_predict must be >= 1, not {n_predict}")
        sampler.validate()
        if spec is not None and spec.synthetic:      # benchmark-only: core/engine/synth.py
            check_sampler(sampler)
        self.engine = engine
        self.prompt_tokens = engine.tokenize(prompt)
        self.spec = spec
        self.sampler_settings = sampler
        self.n_predict = n_predict
        self.stop_event = stop or threading.Event()
        self.policy = policy                 # draft-simple's draft length per round (draft_policy)
        self.vocab_mode = vocab              # "", translate or intersect (drafters/xvocab.py)
        self.resume = resume                 # what the turn before left in the caches
        self.held: Held | None = None        # what this run left there (once it ended)
        self._cached = None                  # () -> the tokens the caches hold now
        self._chain = None                   # the drafters (a speculative run's)
        self.prefill: Prefill | None = None
        self.tokens: list[int] = []
        self.finish = ""
        self._contexts: tuple = ()           # (target, draft) contexts: their thread counts
        self._governors: list = []           # (role, governor) of those that follow the load
        self._changes_seen: list[int] = []   # each governor's changes reported so far
        self.teach = teach                   # keep the target's p and entropies (Engine.speculative)
        self.synthetic = bool(spec and spec.synthetic)   # synthetic acceptance: every event says so

    def stop(self) -> None:
        self.stop_event.set()

    def __iter__(self) -> Iterator[RoundEvent]:
        e = self.engine
        with e.exclusive("a generation"), build_chain(e.target, self.sampler_settings) as smpl, \
                self._leaving_held():
            if self.spec is None:
                self._watch_threads(e.tgt, None)
                self._prefill()
                yield from self._baseline_rounds(smpl)
                return
            single = alone(self.spec.types)
            own = single.own_rounds(e.tgt.n_seq) if single else None
            if own is not None:     # a type's own loop (registry.SpecType.rounds)
                self._watch_threads(e.tgt, e.dft if single.uses_md else None)
                self._prefill()
                yield from own(self, smpl)
                return
            rule = make_rule(e, self.spec, self.sampler_settings)   # core/engine/accept_rules.py
            chain = self._chain = make_chain(self.spec, e, self.policy, q=rule.q, vocab=self.vocab_mode)
            self._watch_threads(e.tgt, e.mtp.ctx if e.mtp is not None and any(
                TYPES[t].source == TARGET for t in self.spec.types) else e.dft)
            self._prefill(chain)
            yield from self._spec_rounds(smpl, chain, rule)

    @contextmanager
    def _leaving_held(self):
        """``held``, once the run ends: between rounds (its end, or the caller stopped
        iterating) the caches hold the round state's history; a failure inside a round leaves
        them unknown (None)."""
        try:
            yield
        except GeneratorExit:
            raise
        except BaseException:
            self._cached = None
            raise
        finally:
            cached = self._cached() if self._cached is not None else None
            self.held = Held(cached, self.engine.epoch, self._chain) if cached is not None else None

    # ------------------------------------------------------------------ prefill
    def _prefill(self, chain=None) -> None:
        """All prompt tokens but the last into the target's cache (no logits), and the drafters
        told the prompt (the draft model decodes it too: ``Drafter.begin``)."""
        e = self.engine
        t0 = time.perf_counter()
        body = self.prompt_tokens[:-1]
        keep, before = self._reusable(chain, np.asarray(body, dtype=np.int32))
        e.tgt.prefill(body, e.batch, "the prompt on the target",
                      after=chain.process if chain is not None else None, keep=keep)
        if chain is not None:
            chain.begin(np.asarray(body, dtype=np.int32), keep, before)
        self.prefill = Prefill(tuple(self.prompt_tokens), time.perf_counter() - t0, keep)

    def _reusable(self, chain, body: np.ndarray) -> tuple[int, object]:
        """(rows of the caches this run keeps, the drafters of the turn before to resume from),
        as llama-server reuses a slot's cache: the turn before's tokens up to the first that
        differs from this prompt, where nothing else used the engine in between and both
        memories can drop part of a sequence (a recurrent or hybrid one starts afresh)."""
        r, e = self.resume, self.engine
        if r is None or (chain is not None and not chain.resumes):
            return 0, None
        before = r.chain if chain is not None else None
        if r.epoch != e.epoch_before or not r.epoch or not (e.tgt_removable and e.dft_removable):
            return 0, before
        if chain is not None and r.chain is None and any(d.name in MODEL_TYPES for d in chain.drafters):
            return 0, before         # the turn before ran the target alone: the draft's cache is stale
        n = min(len(r.tokens), len(body))
        diff = np.flatnonzero(r.tokens[:n] != body[:n])
        return (int(diff[0]) if diff.size else n), before

    def _through_eog(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(what the round emits, what it drops): the tokens up to and with the first
        end-of-generation token, and those after it. A drafted EOG that the target sampled too
        is kept like any drafted token when it ends the draft, so the bonus token sampled after
        it must not be emitted: speculative-simple.cpp walks ``ids`` and stops at the first EOG
        (``has_eos``)."""
        is_eog = self.engine.target.is_eog
        for i, token in enumerate(ids):
            if is_eog(token):
                return ids[:i + 1], ids[i + 1:]
        return ids, ()

    def _stopped(self) -> bool:
        """Stop requested between rounds: end without starting another."""
        if self.stop_event.is_set():
            self.finish = "stopped"
        return bool(self.finish)

    def _finish_after(self, emitted, n_past: int) -> str:
        """The stop rule shared by both loops: EOG, n_predict, full context."""
        if emitted and self.engine.target.is_eog(emitted[-1]):
            return "eog"
        if len(self.tokens) >= self.n_predict:
            return "n_predict"
        if n_past >= self.engine.tgt.n_ctx:
            return "context"
        if self.stop_event.is_set():
            return "stopped"
        return ""

    # ------------------------------------------------------------------ baseline
    def _baseline_rounds(self, smpl: SamplerChain) -> Iterator[RoundEvent]:
        e = self.engine
        tgt, batch = e.tgt, e.batch
        n_past = len(self.prompt_tokens) - 1
        id_last = self.prompt_tokens[-1]
        index = 0
        self._cached = lambda: np.asarray([*self.prompt_tokens, *self.tokens], np.int32)[:n_past]
        while not self._stopped():
            rec = Recorder()
            with rec.phase("verify"):
                batch.fill((id_last,), n_past, logits="all")
                tgt.decode(batch, "a token on the target")
                token = smpl.sample(tgt, 0)
            self.tokens.append(token)
            seed, n_past, id_last = id_last, n_past + 1, token
            self.finish = self._finish_after((token,), n_past)
            yield self._event(rec, index=index, n_past=n_past - 1,
                              seed=seed, drafted=(), draft_probs=(), n_accepted=0,
                              emitted=(token,), mode="baseline")
            if self.finish:
                return
            index += 1

    # ------------------------------------------------------------------ speculative
    def _spec_rounds(self, smpl: SamplerChain, chain, rule) -> Iterator[RoundEvent]:
        """speculative-simple.cpp's loop, step for step (module docs); the Recorder times the
        steps and keeps what the round's event says (core/engine/round_record.py)."""
        e = self.engine
        n_past = len(self.prompt_tokens) - 1
        history = np.zeros(e.tgt.n_ctx + 1, dtype=np.int32)     # llama.cpp's prompt_tgt
        history[:n_past] = self.prompt_tokens[:-1]
        st = RoundState(n_past, self.prompt_tokens[-1], history)
        self._cached = lambda: st.prefix.copy()
        while not self._stopped():
            rec = Recorder(e.draft.piece if e.draft is not None else None)
            # 1. draft, or take again the tokens a checkpoint round decided
            draft, proposal = self._draft(st, chain, rec)
            checkpoint = None
            if draft and not st.replay and e.tgt_checkpoint is not None:   # cannot drop rows
                with rec.phase("verify"):
                    checkpoint = RoundCheckpoint(e.tgt_checkpoint, smpl)
            # 2. verify: the target decodes [id_last, *draft] in one batch, logits on every row
            batch = [st.id_last, *draft]
            with rec.phase("verify"):
                e.batch.fill(batch, st.n_past, logits="all")
                e.tgt.decode(e.batch, f"the verification batch of {len(batch)} tokens")
            # 3. the drafters see the target's batch (common_speculative_process): an EAGLE-3
            # head (or the MTP context) runs it through its own layers: its sync with the target
            with rec.phase("sync"):
                chain.process(batch, st.n_past)
            # 4. the acceptance rule samples the rows: the kept draft, then the target's own token
            with rec.phase("verify"):
                verdict = rule.verify(smpl, draft, proposal, st.replay)
            rec.verified(rule, proposal, draft, verdict)
            if self.teach:
                rec.taught(e.tgt, len(batch), draft)
            # 5. partial acceptance where the target cannot drop rows: restore, replay next round
            if checkpoint is not None and len(verdict.ids) - 1 < len(draft):
                event = self._restore(st, chain, checkpoint, batch, verdict.ids, rec)
            else:
                if checkpoint is not None:
                    checkpoint.close()
                # 6. accept: the drafters learn what was kept, both caches drop the rest
                event = self._accept(st, chain, batch, verdict.ids, rec)
            yield event
            if self.finish:
                return
            st.index += 1

    def _draft(self, st: RoundState, chain, rec: Recorder) -> tuple[list[int], object]:
        """Step 1: (the draft, the chain's proposal); a replay round's decided tokens, no proposal."""
        if st.replay:
            rec.replaying()
            return list(st.replay), None
        e = self.engine
        budget = min(e.tgt.n_ctx - st.n_past - 2, self.n_predict - len(self.tokens) - 1)
        proposal = chain.draft(st.prefix, st.id_last, budget) if budget > 0 else None
        draft = list(proposal.tokens) if proposal else []
        rec.drafted(chain, proposal, draft)
        return draft, proposal

    def _restore(self, st: RoundState, chain, checkpoint: RoundCheckpoint, batch: list[int],
                 ids: list[int], rec: Recorder) -> RoundEvent:
        """Step 5: back to the checkpoint taken before verifying (the target, its sampler and the
        draft model's cache); the decided tokens are emitted now and verified next round."""
        with rec.phase("sync"):
            checkpoint.restore()
        checkpoint.close()
        chain.restore(st.n_past)
        rec.restored(chain)
        st.replay = tuple(ids)
        self.tokens.extend(ids)
        self.finish = self._finish_after(ids, st.n_past)
        return self._event(rec, index=st.index, n_past=st.n_past, seed=st.id_last,
                           drafted=tuple(batch[1:]), n_accepted=len(ids) - 1, emitted=tuple(ids),
                           mode="checkpoint", kv_dropped_target=len(batch),
                           kv_dropped_draft=chain.take_dropped())

    def _accept(self, st: RoundState, chain, batch: list[int], ids: list[int],
                rec: Recorder) -> RoundEvent:
        """Step 6 (common_speculative_accept, then llama_memory_seq_rm on both caches): the
        drafters are told how many drafted tokens were kept (the draft model syncs its cache),
        the target drops its rejected rows, and the round state moves on."""
        e, replayed = self.engine, st.replay
        if replayed and tuple(ids[:len(replayed)]) != replayed:
            raise RuntimeError("a replayed round sampled different tokens than the checkpointed "
                               "round: the sampler state was not restored")
        chain.accept(len(ids) - 1)
        rec.accepted(chain)
        if e.tgt_removable and len(ids) < len(batch):     # rows rejected: drop them
            with rec.phase("sync"):
                e.tgt.seq_rm(st.n_past + len(ids), -1)
        n_past, seed = st.n_past, st.id_last
        st.commit(ids)
        emitted, discarded = self._through_eog(tuple(ids[len(replayed):]))
        self.tokens.extend(emitted)
        self.finish = self._finish_after(emitted, st.n_past)
        drafted = () if replayed else tuple(batch[1:])
        return self._event(rec, index=st.index, n_past=n_past, seed=seed, drafted=drafted,
                           n_accepted=0 if replayed else len(ids) - 1, emitted=emitted,
                           mode="replay" if replayed else ("spec" if drafted else "plain"),
                           replayed=replayed, kv_dropped_target=len(batch) - len(ids),
                           kv_dropped_draft=chain.take_dropped(), discarded=discarded)

    # ------------------------------------------------------------------ threads
    def _watch_threads(self, target: Context, draft: Context | None) -> None:
        """The contexts whose thread counts each round's event reports (threads "auto": their
        governors, core/models/threads.py, change them as the load changes)."""
        self._contexts = (target, draft)
        shared = draft is not None and draft.governor is not None and draft.governor is target.governor
        roles = [("target+draft" if shared else "target", target)]
        if draft is not None and not shared:
            roles.append(("draft", draft))
        self._governors = [(role, ctx.governor) for role, ctx in roles if ctx.governor is not None]
        self._changes_seen = [len(g.changes) for _, g in self._governors]
        for _, g in self._governors:
            g.run_starts()

    def _threads(self) -> tuple[tuple[int, ...], str]:
        """(the counts now, the changes since the last round's event, in words)."""
        notes = []
        for i, (role, g) in enumerate(self._governors):
            if len(g.changes) > self._changes_seen[i]:
                notes += [f"{role} {c.describe()}" for c in g.changes[self._changes_seen[i]:]]
                self._changes_seen[i] = len(g.changes)
        target, draft = self._contexts
        return (target.threads, draft.threads if draft is not None else 0), "; ".join(notes)

    def _event(self, rec: Recorder, **fields) -> RoundEvent:
        """The round's event: what the round says, what its Recorder kept, its phase timings,
        thread counts and the run's finish (the one place events are built: by keyword)."""
        fields = {"draft_probs": (), **rec.fields, **fields}
        threads, note = self._threads()
        tm = rec.time
        return RoundEvent(**fields, t_draft=tm.draft, t_verify=tm.verify, t_sync=tm.sync,
                          t_lookup=tm.lookup, t_translate=tm.translate,
                          t_round=time.perf_counter() - rec.t0 - tm.observe,
                          finish=self.finish, synthetic=self.synthetic,
                          threads=threads, threads_note=note)


__all__ = ["Engine", "EngineSettings", "Held", "Run", "SpecSettings"]
