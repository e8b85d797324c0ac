"""What a round carries and records beside its six steps (Run._spec_rounds, core/engine/engine.py):
the state speculative-simple.cpp carries from round to round, the checkpoint of a target that
cannot drop rows, and the round's observer, which the round feeds through hooks and which keeps
the seconds of each phase and the event's fields (who drafted and why it stopped, the other
acceptance rule's expected acceptance, the tree headroom's ranks)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from specscope.core.engine.drafters import MODEL_TYPES
from specscope.core.engine.events import OwnVocab
from specscope.core.models.seqs import row_logits
from specscope.core.models.tokentext import shares


@dataclass
class RoundState:
    """What speculative-simple.cpp carries from round to round: both caches hold [0, n_past);
    ``id_last`` was sampled and is not yet evaluated; ``history[:n_past]`` is its prompt_tgt;
    ``replay`` holds the tokens a checkpoint round decided, verified again next round."""
    n_past: int
    id_last: int
    history: np.ndarray
    replay: tuple[int, ...] = ()
    index: int = 0

    @property
    def prefix(self) -> np.ndarray:
        return self.history[:self.n_past]

    def commit(self, ids) -> None:
        """The round kept ``ids``: id_last and all of them but the last join the history."""
        if len(ids) == 1:               # a round that drafted nothing: one item, not a slice
            self.history[self.n_past] = self.id_last
        else:
            self.history[self.n_past:self.n_past + len(ids)] = [self.id_last, *ids[:-1]]
        self.n_past += len(ids)
        self.id_last, self.replay = ids[-1], ()


class RoundCheckpoint:
    """A target whose memory cannot drop part of a sequence, saved before verifying: its memory
    (llama.Checkpoint) and its sampler chain, restored together after a partial acceptance."""

    def __init__(self, memory, smpl):
        self.memory, self.smpl = memory.save(), smpl
        self.saved = smpl.clone()

    def restore(self) -> None:
        self.memory.restore()
        self.smpl.restore(self.saved)

    def close(self) -> None:
        self.saved.close()


@dataclass
class Timings:
    """Seconds spent inside llama.cpp calls in one round, per phase."""
    draft: float = 0.0
    verify: float = 0.0
    sync: float = 0.0
    lookup: float = 0.0       # n-gram drafters' Python time (also counted in draft)
    translate: float = 0.0    # translating between vocabularies (Python; in no other phase)
    observe: float = 0.0      # time spent only observing the other acceptance rule: left out


class _Clock:
    """``Recorder.phase``'s context: a class, not a generator, since a round enters one about
    eight times and a generator-based context costs a microsecond more each time (on a tiny
    model's round of ~300 µs, a few percent)."""
    __slots__ = ("timings", "name", "t")

    def __init__(self, timings: Timings, name: str):
        self.timings, self.name = timings, name

    def __enter__(self) -> None:
        self.t = time.perf_counter()

    def __exit__(self, *exc) -> None:
        setattr(self.timings, self.name, getattr(self.timings, self.name) + time.perf_counter() - self.t)


class Recorder:
    """One round's observer. The round calls ``phase`` around its llama.cpp calls and a hook
    after each step; ``fields`` and ``time`` are what its event says."""

    def __init__(self, piece=None):
        self.t0 = time.perf_counter()
        self.time = Timings()
        self.fields: dict = {}
        self.piece = piece            # the draft model's token text (a draft of another vocabulary)
        self._clocks: dict[str, _Clock] = {}

    def phase(self, name: str) -> "_Clock":
        """A context that adds the seconds it encloses to the phase ``name`` of ``time``."""
        clock = self._clocks.get(name)
        if clock is None:
            clock = self._clocks[name] = _Clock(self.time, name)
        return clock

    # ------------------------------------------------------------------ hooks, in round order
    def replaying(self) -> None:
        """Step 1 took again the tokens a checkpoint round decided: nobody drafted."""
        self.fields.update(draft_stop="none")

    def drafted(self, chain, proposal, draft: list[int]) -> None:
        """Step 1: the chain's draft (the draft model's llama.cpp time, the n-gram lookups) and
        what the event says about it: who proposed it and why it stopped."""
        tm = self.time
        tm.lookup += chain.t_lookup
        tm.draft += chain.t_lookup + (proposal.t_decode if proposal else 0.0)
        tm.translate += chain.take_translate()
        self.fields.update(self._draft_fields(proposal, draft))

    def verified(self, rule, proposal, draft: list[int], verdict) -> None:
        """Step 4: the counterfactual's cost leaves the round's timings (accept_rules.Verifier);
        the other rule's expected acceptance and the target's tokens' ranks in the draft's
        top-10 (tree headroom) join the event."""
        t_draft, t_verify = rule.take_observe_time()
        self.time.verify -= t_verify
        self.time.observe += t_draft + t_verify
        if verdict.counterfactual:
            self.fields.update(counterfactual=verdict.counterfactual,
                               counterfactual_rule=verdict.counterfactual_rule)
        if proposal is not None and draft:
            self.fields["draft_ranks"] = proposal.ranks(verdict.ids)

    def taught(self, ctx, n_rows: int, draft: list[int]) -> None:
        """Step 4 of a run that teaches: from the verification batch's rows, the target's
        probability of each drafted token and the entropy of each row (softmax of the raw
        logits, before the sampler's transforms); observation time, not the round's."""
        t0 = time.perf_counter()
        p, h = [], []
        for i in range(n_rows):
            logits = row_logits(ctx, i).astype(np.float64)
            e = np.exp(logits - logits.max())
            probs = e / e.sum()
            nz = probs[probs > 0]
            h.append(float(-(nz * np.log2(nz)).sum()))
            if i < len(draft):
                p.append(float(probs[draft[i]]))
        self.fields.update(target_p=tuple(p), entropy=tuple(h))
        self.time.observe += time.perf_counter() - t0

    def restored(self, chain) -> None:
        """Step 5: the drafters went back to the checkpoint too."""
        self.time.sync += chain.t_sync

    def accepted(self, chain) -> None:
        """Step 6: the chain was told what was kept: n-gram bookkeeping, the draft model's sync."""
        tm, translate = self.time, chain.take_translate()   # timed inside the draft model's accept
        tm.lookup += chain.t_lookup
        tm.draft += chain.t_lookup
        tm.sync += chain.t_sync - translate
        tm.translate += translate

    # ------------------------------------------------------------------ the event's words
    def _draft_fields(self, proposal, draft: list[int]) -> dict:
        if proposal is None:
            return dict(draft_stop="budget" if not draft else "none")
        p = proposal
        stop = p.stop if p.drafter in MODEL_TYPES else p.stop or ("lookup" if p.tokens else "no match")
        fields = dict(draft_stop=stop, dropped_draft=p.dropped, draft_limit=p.limit)
        if draft:
            fields.update(drafter=p.drafter, draft_note=p.note, draft_probs=p.probs, detail=p.detail)
        if isinstance(p.detail, OwnVocab):     # across vocabularies, drafted or not: its note and
            own = p.detail.own                 # the draft's own tokens, with their text
            fields.update(draft_note=p.note,
                          detail=replace(p.detail, text=tuple(shares([self.piece(t) for t in own]))))
        return fields


__all__ = ["RoundState", "RoundCheckpoint", "Timings", "Recorder"]
