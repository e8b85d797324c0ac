"""Speculative decoding as llama.cpp's speculative-simple does it, in Python.

The round follows seed 000 §6.1 (examples/speculative-simple) with the acceptance rule of
§6.3. What drafts is a chain of drafters (core/drafters: llama.cpp's ``--spec-type``): the
draft model (draft-simple, §5.3) and the draftless n-gram types, tried in llama.cpp's priority
order, the first non-empty draft winning the round:

    1. draft:  the chain proposes up to the round's budget; the draft model decodes id_last at
               n_past on the draft, then takes the greedy argmax over the top-10 renormalized
               probabilities until p_min, n_max or the budget; an n-gram type looks the
               history up and its draft is cut to the budget;
    2. verify: decode [id_last, d0 .. d(k-1)] on the target with logits on every
               row; the user's sampler chain samples row by row, keeps while equal
               and always emits the target's own token (llama.cpp's rule, the default;
               ``accept_rule="ratio"`` is speculative sampling, core/accept_rules.py, and
               synthetic acceptance keeps positions at random, core/synth.py);
    3. sync:   bring the draft cache to the accepted history (``replay``: llama.cpp's
               re-decode of the verification batch; ``reuse``: keep the rows the
               draft already holds, decode only what is missing);
    4. roll back: llama_memory_seq_rm on both caches, or, where the target's
               memory cannot drop part of a sequence, restore the checkpoint taken
               before verifying and replay the decided tokens next round (§7).

Checkpoints, as llama.cpp's speculative-simple takes them (``common_prompt_checkpoint``
with ``LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY``, ``llama.Checkpoint``): a memory that cannot
drop part of a sequence (llama.cpp's ``COMMON_CONTEXT_SEQ_RM_TYPE_FULL``) is recurrent
(Mamba, RWKV) or hybrid (LFM2, Granite-4-H, Jamba, Nemotron-H, Qwen3.5 …: a KV cache for
the attention layers next to a recurrent state for the others). With that flag a hybrid
memory saves only its recurrent part (the KV cache's rows are left out: their size grows
with the context, the recurrent state's does not); a pure recurrent memory ignores the flag
and saves all it has, which is its recurrent state. Restoring reads that part back (the
recurrent cell is reset to the saved position) and leaves the KV cache as it is, holding the
rows decoded since; ``seq_rm(pos_max + 1, -1)``, with pos_max the sequence's last position
at the save, drops them (on a pure recurrent memory it removes nothing). The draft is
checkpointed before drafting and restored after it; the target before verifying, restored
after a partial acceptance. (llama.cpp's experimental ``n_rs_seq`` snapshots, which let some
recurrent memories drop a few trailing tokens, stay off: contexts keep its default 0.)

Without draft-simple in the chain the draft model is neither prefilled nor synchronised (an
n-gram-only run needs no draft model at all). After each verification the chain is told how
many tokens were kept (``common_speculative_accept``), also in replay rounds, not in
checkpoint rounds (llama.cpp's loop ``continue``s before telling).

End of generation, as llama.cpp: a round emits its tokens up to the first end-of-generation
token and nothing after it. A drafted EOG that the target samples too counts as accepted when
it ends the draft (the bonus token sampled after it is dropped: ``RoundEvent.discarded``);
with more drafted tokens after it, the verification stops there and it is the target's own
token (``common_sampler_sample_and_accept_n``; ``RoundEvent.eog_ends_draft``).

Differences from llama.cpp, all deliberate: ``n_predict`` is exact (llama.cpp
emits one token more); a checkpoint round that decides the end of generation ends the run
(llama.cpp replays the decided tokens once more before it stops); a per-round budget of 0 means no draft (llama.cpp then
drafts up to n_max past the end of the context, and an n-gram type's whole draft,
uncut); the run stops cleanly when the context is full; a draft whose memory cannot
drop part of a sequence is restored from a checkpoint and re-synchronised instead of
being left stale.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from .accept_rules import ACCEPT_RULES, Verifier
from .errors import ConfigError, ContextFullError, IncompatiblePairError
from .events import Prefill, RoundEvent
from .llama import Batch, Checkpoint, Context, ContextSettings, Model, SamplerChain, resolve_repack
from .drafters import DRAFT_MODEL, NGRAM_TYPES, type_label
from .drafters.build import make_chain
from .drafters.base import NgramCacheParams, NgramMapParams, NgramModParams
from .sampling import SamplerSettings, build_chain

SYNC_MODES = ("reuse", "replay")


@dataclass(frozen=True)
class SpecSettings:
    """What drafts, and how. ``types`` are llama.cpp's ``--spec-type`` names (drafters.TYPES),
    run in llama.cpp's priority order whatever order they are given in; n_max, n_min, p_min
    and sync belong to draft-simple (the draft model), the ``ngram_*`` fields to their types."""
    n_max: int = 3            # --spec-draft-n-max (llama.cpp's default 3)
    n_min: int = 0            # --spec-draft-n-min: shorter drafts are dropped
    p_min: float = 0.0        # --spec-draft-p-min: stop when the argmax holds less of the top-10 mass
    sync: str = "reuse"       # reuse | replay, see the module docs
    accept_rule: str = "match"  # match (llama.cpp) | ratio (speculative sampling): accept_rules
    types: tuple[str, ...] = ("draft-simple",)
    ngram_simple: NgramMapParams = NgramMapParams()
    ngram_map_k: NgramMapParams = NgramMapParams()
    ngram_map_k4v: NgramMapParams = NgramMapParams()
    ngram_mod: NgramModParams = NgramModParams()
    ngram_cache: NgramCacheParams = NgramCacheParams()
    synth_len: float = -1.0   # --spec-synth-len: benchmark-only synthetic acceptance (core/synth.py)
    synth_rates: tuple[float, ...] = ()   # --spec-synth-rates: its unconditional rates per position
    draft_policy: str = "fixed"  # draft-simple's draft length per round: fixed | hf | cost (draft_policy)

    def validate(self) -> None:
        from .drafters import parse_types
        if parse_types(self.types) != tuple(self.types):
            raise ConfigError(f"speculative types must be given in llama.cpp's priority order: "
                              f"{', '.join(parse_types(self.types))}")
        if self.n_max < 0 or self.n_min < 0:
            raise ConfigError("draft lengths must be >= 0")
        if self.n_min > self.n_max:
            raise ConfigError(f"n_min ({self.n_min}) must not exceed n_max ({self.n_max})")
        if not 0.0 <= self.p_min <= 1.0:
            raise ConfigError(f"p_min must be in [0, 1], not {self.p_min}")
        from .draft_policy import check_policy
        check_policy(self.draft_policy)
        if self.sync not in SYNC_MODES:
            raise ConfigError(f"sync mode must be one of {', '.join(SYNC_MODES)}, not {self.sync!r}")
        if self.accept_rule not in ACCEPT_RULES:
            raise ConfigError(f"the acceptance rule must be one of {', '.join(ACCEPT_RULES)}, "
                              f"not {self.accept_rule!r}")
        for type_name in NGRAM_TYPES:
            self.params(type_name).validate(type_name)
        self.synth_probs()
        if self.synthetic and self.accept_rule != "match":
            raise ConfigError("synthetic acceptance replaces the acceptance rule: "
                              "it cannot be combined with --accept-rule ratio")

    @property
    def uses_draft_model(self) -> bool:
        return DRAFT_MODEL in self.types

    @property
    def synthetic(self) -> bool:
        """Benchmark-only synthetic acceptance: the text is not valid output (core/synth.py)."""
        from .synth import is_synthetic
        return is_synthetic(self.synth_len, self.synth_rates)

    def synth_rates_resolved(self) -> tuple[float, ...]:
        """llama.cpp's unconditional synthetic rates for the longest possible draft (empty: off)."""
        from .synth import resolve_rates
        return resolve_rates(self.synth_len, self.synth_rates, self.max_draft())

    def synth_probs(self) -> tuple[float, ...]:
        """The conditional acceptance probability of each draft position (empty: off)."""
        from .synth import conditional_probs
        return conditional_probs(self.synth_rates_resolved())

    @property
    def label(self) -> str:
        """The chain's name in tables: its types joined by '>' (drafters.type_label)."""
        return type_label(self.types)

    def params(self, type_name: str):
        """An n-gram type's parameters (``ngram-map-k`` -> ``self.ngram_map_k``)."""
        return getattr(self, type_name.replace("-", "_"))

    def max_draft(self) -> int:
        """The longest draft the enabled types can propose (``common_speculative_n_max``)."""
        lengths = {"draft-simple": self.n_max, "ngram-simple": self.ngram_simple.size_m,
                   "ngram-map-k": self.ngram_map_k.size_m,
                   "ngram-map-k4v": self.ngram_map_k4v.size_m,
                   "ngram-mod": self.ngram_mod.n_max, "ngram-cache": 8}
        return max((lengths[t] for t in self.types), default=0)


@dataclass(frozen=True)
class EngineSettings:
    n_ctx: int = 2048                      # both contexts get the same n_ctx
    n_batch: int = 512
    flash_attn: str = "auto"               # auto | on | off
    kv_type: str = "f16"                   # f16 | f32
    target_threads: int = 0                # 0: all cores
    draft_threads: int = 0
    target_gpu_layers: int = 0
    draft_gpu_layers: int = 0
    repack: str = "auto"                   # auto | on | off: llama.cpp's weight repacking (--repack)
    # placement (core/devices.py): rpc-server endpoints to register (--rpc), and the devices
    # each model's offloaded layers may use (--device/-devd; None: llama.cpp's default, every
    # GPU and RPC device; (): none); *_gpu_layers < 0 offloads every layer (-ngl all)
    rpc: tuple[str, ...] = ()
    target_devices: tuple[str, ...] | None = None
    draft_devices: tuple[str, ...] | None = None

    @classmethod
    def deterministic(cls, **kw) -> "EngineSettings":
        """F32 KV cache and no flash attention: batched and single-token decodes agree as far as
        llama.cpp's kernels allow (``compare.DETERMINISTIC_GUARANTEE`` says how far)."""
        return cls(flash_attn="off", kv_type="f32", **kw)

    def context(self, threads: int) -> ContextSettings:
        return ContextSettings(n_ctx=self.n_ctx, n_batch=self.n_batch, n_threads=threads,
                               flash_attn=self.flash_attn, kv_type=self.kv_type)


@dataclass
class _Timer:
    """Accumulates seconds spent inside llama.cpp calls, per phase."""
    draft: float = 0.0
    verify: float = 0.0
    sync: float = 0.0
    lookup: float = 0.0       # n-gram drafters' Python time (also counted in draft)
    observe: float = 0.0      # time spent only observing the other acceptance rule: left out


class Engine:
    """Owns the target and (optionally) draft model, their contexts, batches and samplers."""

    def __init__(self, target: str | Path, draft: str | Path | None = None,
                 settings: EngineSettings = EngineSettings(), progress=None):
        """progress(model_role, fraction) is called while a model loads."""
        self.settings = settings
        self._stack = ExitStack()
        self._lock = threading.Lock()
        try:
            self._open(Path(target), Path(draft) if draft else None, progress)
        except BaseException:
            self._stack.close()
            raise

    def _open(self, target: Path, draft: Path | None, progress) -> None:
        s = self.settings
        on = (lambda role: (lambda f: progress(role, f))) if progress else (lambda role: None)
        from .vocab_gate import require_vocabulary, vocab_rules  # the gate of seed 000 §4.2
        self.repack, self.repack_reason = resolve_repack(s.repack)
        from .devices import add_rpc_servers, device_array, hold, is_remote, placement, release
        add_rpc_servers(s.rpc)
        remote = list(s.rpc) if (is_remote(s.target_devices, s.target_gpu_layers, s.rpc) or (
            draft and is_remote(s.draft_devices, s.draft_gpu_layers, s.rpc))) else []
        hold(remote)                      # llama.cpp stays connected while the models live
        self._stack.callback(release, remote)
        self.placement = {"target": placement(s.target_devices, s.target_gpu_layers, s.rpc)}
        self.target = self._own(Model(target, n_gpu_layers=s.target_gpu_layers, repack=self.repack,
                                      progress=on("target"),
                                      devices=device_array(s.target_devices, "target")))
        require_vocabulary(self.target)
        self.draft = None
        if draft is not None:
            self.placement["draft"] = placement(s.draft_devices, s.draft_gpu_layers, s.rpc)
            self.draft = self._own(Model(draft, n_gpu_layers=s.draft_gpu_layers, repack=self.repack,
                                         progress=on("draft"),
                                         devices=device_array(s.draft_devices, "draft")))
            require_vocabulary(self.draft)
            failed = [r for r in vocab_rules(self.target.vocab, self.draft.vocab) if not r.passed]
            if failed:
                raise IncompatiblePairError(
                    f"{draft.name} cannot draft for {target.name}: "
                    + "; ".join(r.message for r in failed), failed)
        # contexts are pushed after their models, so the ExitStack frees them first
        self.tgt = self._own(Context(self.target, s.context(s.target_threads)))
        self.dft = self._own(Context(self.draft, s.context(s.draft_threads))) if self.draft else None
        self.tgt_removable = self.tgt.can_remove_partial()
        self.dft_removable = self.dft.can_remove_partial() if self.dft else True
        # where a memory cannot drop part of a sequence, the rounds checkpoint it (module docs)
        self.tgt_checkpoint = None if self.tgt_removable else Checkpoint(self.tgt)
        self.dft_checkpoint = None if self.dft_removable else Checkpoint(self.dft)
        self.batch = self._own(Batch(self.tgt.n_batch))
        self.dbatch = self._own(Batch(self.dft.n_batch)) if self.dft else None

    @contextmanager
    def exclusive(self, what: str = "a generation"):
        """Hold the engine's contexts for ``what`` (a run, a calibration, a lossless check):
        ConfigError at once when something else holds them."""
        if not self._lock.acquire(blocking=False):
            raise ConfigError(f"this engine is busy: it cannot start {what} now")
        try:
            yield self
        finally:
            self._lock.release()

    def _own(self, handle):
        self._stack.callback(handle.close)
        return handle

    def close(self) -> None:
        self._stack.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ public runs
    def speculative(self, prompt: str | list[int], spec: SpecSettings = SpecSettings(),
                    sampler: SamplerSettings = SamplerSettings(), n_predict: int = 128,
                    stop: threading.Event | None = None, calibration=None) -> "Run":
        """``calibration``: what the ``cost`` draft policy predicts with (default: this pair's,
        cached; measured now when there is none)."""
        spec.validate()
        if spec.uses_draft_model and self.draft is None:
            raise ConfigError("draft-simple needs a draft model (-md); the n-gram types "
                              "(--spec-type ngram-...) draft without one")
        from .draft_policy import make_policy, policy_calibration
        if spec.draft_policy == "cost" and spec.uses_draft_model and calibration is None:
            calibration = policy_calibration(self, spec, sampler, stop=stop)
        policy = make_policy(spec, calibration) if spec.uses_draft_model else None
        return Run(self, prompt, spec, sampler, n_predict, stop, policy)

    def baseline(self, prompt: str | list[int], sampler: SamplerSettings = SamplerSettings(),
                 n_predict: int = 128, stop: threading.Event | None = None) -> "Run":
        return Run(self, prompt, None, sampler, n_predict, stop)

    def tokenize(self, prompt: str | list[int]) -> list[int]:
        tokens = self.target.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        if not tokens:
            raise ConfigError("the prompt is empty")
        if len(tokens) >= self.tgt.n_ctx:
            raise ContextFullError(
                f"the prompt is {len(tokens)} tokens but the context holds {self.tgt.n_ctx}: "
                "shorten the prompt or raise the context size")
        return tokens


class Run:
    """One generation. Iterate it for RoundEvents; ``prefill``, ``tokens`` and
    ``finish`` are filled in as it goes. Only one Run per Engine may iterate at a time."""

    def __init__(self, engine: Engine, prompt, spec: SpecSettings | None,
                 sampler: SamplerSettings, n_predict: int, stop: threading.Event | None,
                 policy=None):
        if n_predict < 1:
            raise ConfigError(f"n_predict must be >= 1, not {n_predict}")
        sampler.validate()
        self.engine = engine
        self.prompt_tokens = engine.tokenize(prompt)
        self.spec = spec
        self.sampler_settings = sampler
        self.n_predict = n_predict
        self.stop_event = stop or threading.Event()
        self.policy = policy                 # draft-simple's draft length per round (draft_policy)
        self.prefill: Prefill | None = None
        self.tokens: list[int] = []
        self.finish = ""
        self._synth = None
        if spec is not None and spec.synthetic:      # benchmark-only: core/synth.py
            from .synth import SynthAcceptance, check_sampler
            check_sampler(sampler)
            self._synth = SynthAcceptance(spec.synth_probs(), sampler.seed)

    def stop(self) -> None:
        self.stop_event.set()

    def __iter__(self) -> Iterator[RoundEvent]:
        e = self.engine
        with e.exclusive("a generation"), build_chain(e.target, self.sampler_settings) as smpl:
            self._prefill()
            yield from self._baseline_rounds(smpl) if self.spec is None else self._spec_rounds(smpl)

    # ------------------------------------------------------------------ prefill
    def _prefill(self) -> None:
        """All prompt tokens but the last into both caches (no logits)."""
        e = self.engine
        t0 = time.perf_counter()
        body = self.prompt_tokens[:-1]
        for ctx, batch in ((e.tgt, e.batch), (e.dft, e.dbatch)):
            if ctx is None or (ctx is e.dft and not (self.spec and self.spec.uses_draft_model)):
                continue
            ctx.prefill(body, batch, f"the prompt on the {'target' if ctx is e.tgt else 'draft'}")
        self.prefill = Prefill(tuple(self.prompt_tokens), time.perf_counter() - t0)

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
        while not self._stopped():
            t0 = time.perf_counter()
            batch.fill((id_last,), n_past, logits="all")
            tgt.decode(batch, "a token on the target")
            token = smpl.sample(tgt, 0)
            t_verify = time.perf_counter() - t0
            self.tokens.append(token)
            seed, n_past, id_last = id_last, n_past + 1, token
            self.finish = self._finish_after((token,), n_past)
            yield self._event(t0, _Timer(verify=t_verify), index=index, n_past=n_past - 1,
                              seed=seed, drafted=(), draft_probs=(), n_accepted=0,
                              emitted=(token,), mode="baseline")
            if self.finish:
                return
            index += 1

    # ------------------------------------------------------------------ speculative
    def _spec_rounds(self, smpl: SamplerChain) -> Iterator[RoundEvent]:
        e, spec = self.engine, self.spec
        tgt = e.tgt
        dft = e.dft if spec.uses_draft_model else None     # the draft model's context, if drafting
        n_ctx = tgt.n_ctx
        n_past = len(self.prompt_tokens) - 1   # the caches hold [0, n_past)
        id_last = self.prompt_tokens[-1]       # sampled, not yet evaluated
        history = np.zeros(n_ctx + 1, dtype=np.int32)   # llama.cpp's prompt_tgt: tokens in [0, n_past)
        history[:n_past] = self.prompt_tokens[:-1]
        chain = make_chain(spec, e, self.policy)
        rule = None if self._synth else Verifier(self, chain)   # core/accept_rules.py
        chain.begin(history[:n_past])
        replay: tuple[int, ...] = ()           # tokens a checkpoint round decided
        smpl_save = None
        index = 0
        while not self._stopped():
            t0 = time.perf_counter()
            tm = _Timer()
            proposal = None
            dft_ckpt = tgt_ckpt = None
            n_dft_rows = dft_dropped = 0

            # 1. draft (or take the tokens a checkpoint round already decided)
            if replay:
                draft = list(replay)
            else:
                budget = min(n_ctx - n_past - 2, self.n_predict - len(self.tokens) - 1)
                if dft is not None and e.dft_checkpoint is not None:   # cannot drop rows
                    dft_ckpt = self._timed(tm, "draft", e.dft_checkpoint.save)
                if budget > 0:
                    proposal = chain.draft(history[:n_past], id_last, budget)
                    tm.lookup += chain.t_lookup
                    tm.draft += chain.t_lookup + proposal.t_decode
                    n_dft_rows = proposal.rows
                draft = list(proposal.tokens) if proposal else []
                if dft is not None and (spec.sync == "replay" or dft_ckpt is not None):
                    # llama.cpp: roll the draft back to n_past before verification
                    dft_dropped += n_dft_rows
                    self._restore_or_trim(dft, dft_ckpt, n_past, tm, "draft")
                    n_dft_rows = 0
                if draft and not e.tgt_removable:
                    tgt_ckpt = self._timed(tm, "verify", e.tgt_checkpoint.save)
                    smpl_save = smpl.clone()
            about = self._draft_fields(proposal, draft)

            # 2. verify [id_last, *draft] on the target, sampling row by row
            t = time.perf_counter()
            batch_tokens = [id_last, *draft]
            e.batch.fill(batch_tokens, n_past, logits="all")
            tgt.decode(e.batch, f"the verification batch of {len(batch_tokens)} tokens")
            ids = (self._synth.accept(smpl, tgt, e.target.is_eog, draft, bool(replay)) if self._synth
                   else rule.verify(smpl, draft, proposal, replay, about))
            tm.verify += time.perf_counter() - t
            if rule is not None:     # a counterfactual's cost is left out of the round's timings
                t_draft_cf, t_verify_cf = rule.take_observe_time()   # (the draft's t_decode
                tm.verify -= t_verify_cf                              # never held its part)
                tm.observe += t_draft_cf + t_verify_cf
            n_accepted = len(ids) - 1
            if proposal is not None and draft:     # tree headroom: the target's tokens' ranks
                about["draft_ranks"] = proposal.ranks(ids)

            # 4a. partial acceptance on a memory that cannot drop rows: restore, replay next round
            if tgt_ckpt is not None and n_accepted < len(draft):
                self._timed(tm, "sync", tgt_ckpt.restore)
                smpl.restore(smpl_save)
                if dft is not None:
                    self._restore_or_trim(dft, dft_ckpt, n_past, tm, "sync")
                replay = tuple(ids)
                self.tokens.extend(ids)
                self.finish = self._finish_after(ids, n_past)
                yield self._event(t0, tm, index=index, n_past=n_past, seed=id_last,
                                  drafted=tuple(draft), n_accepted=n_accepted, emitted=tuple(ids),
                                  mode="checkpoint", kv_dropped_target=len(draft) + 1,
                                  kv_dropped_draft=dft_dropped + n_dft_rows, **about)
                if self.finish:
                    return
                index += 1
                continue
            if smpl_save is not None:
                smpl_save.close()
                smpl_save = None

            # llama.cpp tells the drafters what was kept (common_speculative_accept)
            t = time.perf_counter()
            chain.accept(n_accepted)
            if chain.looks_up:              # n-gram bookkeeping is lookup time
                tm.lookup += time.perf_counter() - t
                tm.draft += time.perf_counter() - t
            was_replay = replay
            if replay:
                if tuple(ids[:len(replay)]) != replay:
                    raise RuntimeError("a replayed round sampled different tokens than the "
                                       "checkpointed round: the sampler state was not restored")
                mode, emitted, replay = "replay", tuple(ids[len(was_replay):]), ()
                draft, n_accepted = [], 0
            else:
                mode = "spec" if draft else "plain"
                emitted = tuple(ids)
            emitted, discarded = self._through_eog(emitted)
            n_past_new = n_past + len(ids)

            # 3. sync the draft cache to [0, n_past_new)
            t = time.perf_counter()
            if dft is None:                 # no draft model in the chain: nothing to sync
                pass
            elif dft_ckpt is not None:      # restored to n_past after drafting: decode what was kept
                self._decode_draft(batch_tokens[:len(ids)], n_past, "the accepted tokens")
            elif spec.sync == "replay":     # llama.cpp: replay the whole verification batch
                self._decode_draft(batch_tokens, n_past, "the verification batch (replay sync)")
                dft_dropped += len(batch_tokens) - len(ids)
                dft.seq_rm(n_past_new, -1)
            elif n_dft_rows >= len(ids):    # reuse: the draft holds what it needs
                dft_dropped += n_dft_rows - len(ids)
                dft.seq_rm(n_past_new, -1)
            else:                           # reuse: decode only the missing rows
                self._decode_draft(batch_tokens[n_dft_rows:len(ids)], n_past + n_dft_rows,
                                   "the missing draft rows (reuse sync)")

            # 4. drop the rejected rows from the target cache
            n_rm_tgt = len(batch_tokens) - len(ids)
            if e.tgt_removable:
                tgt.seq_rm(n_past_new, -1)
            tm.sync += time.perf_counter() - t

            history[n_past:n_past_new] = batch_tokens[:len(ids)]   # id_last and all ids but the last
            self.tokens.extend(emitted)
            n_past, id_last = n_past_new, ids[-1]
            self.finish = self._finish_after(emitted, n_past)
            if was_replay:
                about = dict(draft_stop="none")
            yield self._event(t0, tm, index=index, n_past=n_past - len(ids), seed=batch_tokens[0],
                              drafted=tuple(draft), n_accepted=n_accepted, emitted=emitted,
                              mode=mode, replayed=was_replay, kv_dropped_target=n_rm_tgt,
                              kv_dropped_draft=dft_dropped, discarded=discarded, **about)
            if self.finish:
                return
            index += 1

    def _draft_fields(self, proposal, draft: list[int]) -> dict:
        """What the event says about the round's draft: who proposed it and why it stopped."""
        if proposal is None:
            return dict(draft_stop="budget" if not draft else "none")
        p = proposal
        if p.drafter == DRAFT_MODEL:
            stop = p.stop
        else:
            stop = p.stop or ("lookup" if p.tokens else "no match")
        fields = dict(draft_stop=stop, dropped_draft=p.dropped, draft_limit=p.limit)
        if draft:
            fields.update(drafter=p.drafter, draft_note=p.note, draft_probs=p.probs,
                          draft_source=p.source, draft_key=p.key, draft_key_len=p.key_len)
        return fields

    def _event(self, t0: float, tm: _Timer, **fields) -> RoundEvent:
        """The round's event, with its phase timings and the run's finish (the one place events
        are built: by keyword)."""
        fields.setdefault("draft_probs", ())
        fields.setdefault("synthetic", self._synth is not None)
        return RoundEvent(**fields, t_draft=tm.draft, t_verify=tm.verify, t_sync=tm.sync,
                          t_lookup=tm.lookup, t_round=time.perf_counter() - t0 - tm.observe,
                          finish=self.finish)

    def _sample_and_accept(self, smpl: SamplerChain, draft: list[int]) -> list[int]:
        """Seed 000 §6.3: keep while the target samples the drafted token; always emit its own."""
        tgt, is_eog = self.engine.tgt, self.engine.target.is_eog
        ids = []
        for i, drafted in enumerate(draft):
            token = smpl.sample(tgt, i)
            ids.append(token)
            if token != drafted or (is_eog(token) and i + 1 < len(draft)):
                return ids
        ids.append(smpl.sample(tgt, len(draft)))
        return ids

    def _decode_draft(self, tokens, pos0: int, what: str) -> None:
        if tokens:
            # a single row is decoded with logits, unused: the same graph as a draft step,
            # so llama.cpp does not rebuild its graph for the next draft decode
            self.engine.dbatch.fill(tokens, pos0, logits="last" if len(tokens) == 1 else "none")
            self.engine.dft.decode(self.engine.dbatch, f"{what} on the draft")

    @staticmethod
    def _timed(tm: _Timer, phase: str, fn, *args):
        t = time.perf_counter()
        result = fn(*args)
        setattr(tm, phase, getattr(tm, phase) + time.perf_counter() - t)
        return result

    def _restore_or_trim(self, ctx: Context, ckpt: Checkpoint | None, n_past: int, tm: _Timer,
                         phase: str):
        if ckpt is not None:
            self._timed(tm, phase, ckpt.restore)
        else:
            self._timed(tm, phase, ctx.seq_rm, n_past, -1)
