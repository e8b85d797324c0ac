"""A tree's rounds, as llama.cpp's ``llama-speculative`` (examples/speculative/speculative.cpp)
runs them; the tree itself is drafted by core/engine/drafters/tree.py.

The first round samples the first token from the prompt's last row and drafts nothing, as
llama-speculative does before its loop drafts. Every later round, with both caches holding
[0, n_past) and the token emitted last (the root) not yet in the target:

    1. draft:   the draft model decodes the root, then drafts the tree (up to ``-np`` branches,
                each a sequence of both caches; more than n_max tokens with the root stops it);
    2. verify:  the target's sequence 0 is copied into every branch's sequence, and the target
                decodes the root and every branch token in one batch (each token in the
                sequences of the branches that hold it);
    3. walk:    position by position along the branches, the target decides:
                * greedy: the target's sampler samples the row of the kept branch; a branch whose
                  token is that sample stays (the last such is kept), the others drop out;
                * at temperature: a branch chosen at random is tested with the ratio rule,
                  kept if r <= p/q (p from the target's chain, q the draft's as drafted); after a
                  rejection the target's distribution becomes the residual and the next branch
                  is tested against it; when none is kept, the token is drawn from what is left;
                it stops at the first position where no branch is kept, the token decided there
                (or the bonus token after a whole branch) being the target's own;
    4. keep:    the kept branch's cells become sequence 0 in both caches, the others are dropped.

At temperature llama-speculative draws with its own ``std::default_random_engine`` seeded with
``--seed`` (core/engine/cxx_random.py), and SpecScope draws the same numbers: its branch order,
its r and its residual draws are llama.cpp's own, and the round are equal to it round for round
(docs/conformance.md). That includes two things llama-speculative does that speculative sampling
does not: the residual subtracts the draft's probabilities from the target's *index by index*
over both candidate lists sorted by token id (not token by token), and after a branch is kept at
a position, a branch that drafted another token there stays in the draw for the next position.
``RoundEvent.tree`` keeps the tree; ``n_drafted`` of a tree run counts the draft's decodes, as
llama-speculative counts it (each branch is as long as the tree is deep).

Differences from llama-speculative, all deliberate, as for the other types (core/engine/engine.py):
``n_predict`` is exact (the last rounds draft within what is left), the round stops at its first
end-of-generation token, and a run stops cleanly when the context is full.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from specscope.core.engine.cxx_random import MinstdRand0
from specscope.core.engine.drafters.build import make_drafter
from specscope.core.engine.events import TreeShape
from specscope.core.engine.round_record import Recorder
from specscope.core.models.seqs import candidates, keep_branch, seq_cp, seq_keep


def tree_rounds(run, smpl):
    """The rounds of ``run`` (an engine.Run drafting a tree: registry.SpecType.rounds): its RoundEvents."""
    e, spec, settings = run.engine, run.spec, run.sampler_settings
    name = run.spec.types[0]            # the type whose loop this is: it drafts alone
    drafter = make_drafter(name, spec, e)
    try:
        t0 = time.perf_counter()
        drafter.begin(np.asarray(run.prompt_tokens, np.int32))
        run.prefill = replace(run.prefill, seconds=run.prefill.seconds + time.perf_counter() - t0)
        walk = Walk(e.tgt, smpl, settings.greedy, MinstdRand0(settings.seed))
        n_past, root, index = len(run.prompt_tokens) - 1, run.prompt_tokens[-1], 0
        while not run._stopped():
            rec = Recorder(e.draft.piece)
            budget = min(e.tgt.n_ctx - n_past - 2 - drafter.n_seq, run.n_predict - len(run.tokens) - 1)
            n_draft = max(0, min(spec.n_max, budget))
            # 1. draft: the root on the draft model, then the tree (the first round: nothing)
            with rec.phase("draft"):
                if index:
                    drafter.root(root, n_past)
                    batch = drafter.grow(root, n_past, n_draft, smpl, settings.greedy)
                else:
                    batch = drafter.first(root, n_past)
            branches = drafter.branches[:drafter.n_branches]
            shape = [(tuple(b.tokens[1:]), _probs(b)) for b in branches]
            # 2. verify: every branch's sequence starts as the target's sequence 0
            with rec.phase("verify"):
                seq_keep(e.tgt, 0)
                for s in range(1, drafter.n_seq):
                    seq_cp(e.tgt, 0, s)
                e.tgt.decode(batch, f"the tree of {batch.size} tokens")
                for b in branches:
                    if b.active:
                        del b.tokens[0], b.dists[0]
                # 3. walk the tree
                accepted, own, kept = walk.run(drafter.branches)
            # 4. keep the branch in both caches
            with rec.phase("sync"):
                after = n_past + 1 + len(accepted)
                drafter.keep(kept, after)
                keep_branch(e.tgt, kept, after)
            ids = (*accepted, own)
            emitted, discarded = run._through_eog(ids)
            run.tokens.extend(emitted)
            run.finish = run._finish_after(emitted, after)
            drafted, probs = shape[kept] if index and shape else ((), ())
            tree = TreeShape(tuple(b for b, _ in shape), tuple(p for _, p in shape), kept,
                             batch.size - 1, drafter.steps, batch.rows(n_past)) if drafted else None
            yield run._event(rec, index=index, n_past=n_past, seed=root, drafted=drafted,
                             draft_probs=probs, n_accepted=len(accepted), emitted=emitted,
                             mode="spec" if drafted else "plain",
                             drafter=name if drafted else "",
                             draft_stop=("n_max" if n_draft == spec.n_max else "budget") if drafted else "",
                             kv_dropped_target=batch.size - 1 - len(accepted),
                             kv_dropped_draft=max(0, batch.size - 1 - len(accepted)) if index else 0,
                             discarded=discarded, shape=tree)
            if run.finish:
                return
            n_past, root, index = after, own, index + 1
    finally:
        drafter.close()


def _probs(b) -> tuple[float, ...]:
    """The draft's probability of each of a branch's drafted tokens, as it drafted them."""
    out = []
    for token, dist in zip(b.tokens[1:], b.dists[1:]):
        ids, ps = dist
        out.append(float(ps[np.flatnonzero(ids == token)[0]]))
    return tuple(out)


class Walk:
    """Step 3: the target's walk along the branches (speculative.cpp's verification loop)."""

    def __init__(self, tgt, smpl, greedy: bool, rng: MinstdRand0):
        self.tgt, self.smpl, self.greedy, self.rng = tgt, smpl, greedy, rng

    def run(self, br) -> tuple[list[int], int, int]:
        """(the accepted tokens, the target's own token after them, the kept branch)."""
        active = {s for s, b in enumerate(br) if b.active}
        accepted, i_dft, s_keep = [], 0, 0
        while True:
            row = br[s_keep].i_batch_tgt[i_dft]
            if self.greedy:
                token, s_keep, accept = self._greedy(br, row, i_dft, s_keep)
            else:
                token, s_keep, accept = self._stochastic(br, active, row, i_dft, s_keep)
            if not accept:
                return accepted, token, s_keep
            accepted.append(token)
            i_dft += 1

    def _greedy(self, br, row: int, i_dft: int, s_keep: int):
        token = self.smpl.sample(self.tgt, row)
        accept = False
        for s, b in enumerate(br):
            if not b.active:
                continue
            if i_dft < len(b.tokens) and token == b.tokens[i_dft]:
                s_keep, accept = s, True
            else:
                b.active = False
        return token, s_keep, accept

    def _stochastic(self, br, active: set, row: int, i_dft: int, s_keep: int):
        """One position at temperature, draw for draw as llama-speculative (module docs)."""
        ids, p = candidates(self.smpl, self.tgt, row)
        rng, p_tgt, p_dft = self.rng, np.float32(0), np.float32(0)
        while active:
            s = sorted(active)[rng.uniform_int(0, len(active) - 1)]
            b = br[s]
            if i_dft >= len(b.tokens):
                b.active = False
                active.discard(s)
                continue
            token = b.tokens[i_dft]
            r = np.float32(rng.uniform_real())
            hit = np.flatnonzero(ids == token)
            if hit.size:                     # not among the target's candidates: p as before
                p_tgt = p[hit[0]]
            q_ids, q = b.dists[i_dft]
            hit = np.flatnonzero(q_ids == token)
            if hit.size:
                p_dft = q[hit[0]]
            with np.errstate(divide="ignore", invalid="ignore"):
                keep = r <= np.float32(p_tgt / p_dft)
            if keep:
                self.smpl.accept(token)
                return token, s, True
            b.active = False
            ids, p = _residual(ids, p, q_ids, q)
            active.discard(s)
            for i, other in enumerate(br):
                # llama.cpp drops the branches that drafted the same token, from the draw only
                # through its own: they are marked inactive but stay in the set
                if i != s and other.active and i_dft < len(other.tokens) and other.tokens[i_dft] == token:
                    other.active = False
        token = int(ids[rng.discrete(p)])
        self.smpl.accept(token)
        return token, s_keep, False


def _residual(ids, p, q_ids, q):
    """llama-speculative's residual after a rejection: both candidate lists sorted by token id,
    the draft's probabilities subtracted from the target's index by index (clipped at 0),
    renormalised in single precision and sorted by probability again."""
    by_id = np.argsort(ids, kind="stable")
    ids, p = ids[by_id], p[by_id].copy()
    q = q[np.argsort(q_ids, kind="stable")]
    n = min(len(p), len(q))
    p[:n] = np.maximum(np.float32(0), p[:n] - q[:n])
    p = np.maximum(np.float32(0), p)
    total = np.cumsum(p, dtype=np.float32)[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (p / total).astype(np.float32)
    order = np.argsort(-p, kind="stable")
    return ids[order], p[order]


__all__ = ["tree_rounds", "Walk"]
