"""draft-simple: the draft model (seed 000 §5.3; ``common_speculative_impl_draft_simple``).

Decode id_last at n_past on the draft, then take the argmax of the top-10 renormalised
probabilities, decode it, and go on until p_min, n_max or the round's budget; a draft shorter
than n_min is dropped. The draft context and its batch belong to the Engine; the round keeps
the draft cache in step with the target (engine module docs, step 3). With the ratio acceptance
rule at temperature it drafts a sample of its own distribution q instead of the argmax
(``self.q``, core/accept_rules.py); p_min still reads the top-10 share of the argmax.
"""

from __future__ import annotations

import time

import numpy as np

from .base import Drafter, Proposal

DRAFT_TOP_K = 10          # the draft's sampler chain in llama.cpp: top-k 10, then dist


def top_values(row: np.ndarray, k: int, groups: int = 64) -> tuple[np.ndarray, int]:
    """(the k largest values of ``row``, largest first; ``row.argmax()``), exactly, in one pass
    over the row instead of two (argmax, then a partition): on a 150k-token vocabulary that
    pass is most of a draft step's Python time. :func:`top_entries` also gives their ids."""
    ids, values = top_entries(row, k, groups)
    return values, int(ids[0])


def top_entries(row: np.ndarray, k: int, groups: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(ids, values) of the k largest values of ``row``, largest first, ties by the lower id
    (so ``ids[0] == row.argmax()``), exactly, in one pass over the row.

    The row is read as a grid of ``groups`` rows (``row.reshape(groups, -1)``). Take the k
    columns with the largest maxima: a value outside them is at most its column's maximum,
    hence at most each of the k chosen maxima, so it is not needed among the k largest. Those
    columns and the few elements left over by the reshape hold the k largest values. Where k
    or more of them share the maximum (rare: which k is then a matter of ties), the k lowest
    ids holding it are taken from the whole row, as ``argmax`` would pick."""
    n = row.size - row.size % groups
    if n < 4 * k * groups:
        ids = np.argpartition(row, -k)[-k:]
    else:
        width = n // groups
        grid = row[:n].reshape(groups, width)
        columns = np.argpartition(grid.max(axis=0), -k)[-k:]
        # candidate ids: every element of the chosen columns, then the tail
        ids = np.concatenate(((np.arange(groups)[:, None] * width + columns).ravel(),
                              np.arange(n, row.size)))
        ids = ids[np.argpartition(row[ids], -k)[-k:]]
    values = row[ids]
    order = np.lexsort((ids, -values))
    ids, values = ids[order], values[order]
    if values[-1] == values[0]:                   # k or more ties at the maximum
        ids = np.flatnonzero(row == values[0])[:k]
        values = row[ids]
    return ids, values


class DraftModel(Drafter):
    name = "draft-simple"

    def __init__(self, engine, spec, policy=None):
        if engine is None or engine.dft is None:
            from ..errors import ConfigError
            raise ConfigError("draft-simple needs a draft model (-md)")
        from ..draft_policy import FixedLength
        self.ctx, self.batch = engine.dft, engine.dbatch
        self.n_max, self.n_min, self.p_min = spec.n_max, spec.n_min, spec.p_min
        self.q = None   # accept_rules.DraftSampler: the run needs q (ratio rule, counterfactual)
        self.policy = policy or FixedLength(spec.n_max)   # the draft length per round
        self.n_drafted = 0                    # this round's draft (0: none of mine)

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        ctx, batch, p_min = self.ctx, self.batch, self.p_min
        limit = max(self.policy.next_n(), self.n_min)    # a policy's n below n_min would drop every draft
        n_past, cap = len(history), min(limit, budget)
        self.n_drafted = 0
        if cap <= 0:
            return Proposal(self.name, stop="budget", limit=limit)
        draft: list[int] = []
        probs: list[float] = []
        tops: list[tuple[int, ...]] = []    # the draft's top-10 ids at each drafted position
        token, stop, t_decode = id_last, "n_max", 0.0
        clock = time.perf_counter
        while True:
            batch.fill((token,), n_past + len(draft), logits="all")
            t = clock()
            ctx.decode(batch, "a draft token")
            logits = ctx.logits(1)[0]          # llama_get_logits synchronises: llama.cpp time
            t_decode += clock() - t
            ids, top = top_entries(logits, DRAFT_TOP_K)                # the top-10, largest first
            best = int(ids[0])
            p = float(1.0 / np.exp(top - top[0]).sum())                # argmax's share of their mass
            if p < p_min:
                stop = "p_min"
                break
            token = best if self.q is None else self.q.draw(logits, best)
            draft.append(token)
            probs.append(p)
            tops.append(tuple(ids.tolist()))
            if len(draft) >= cap:
                break
        if stop == "n_max" and cap < limit:
            stop = "budget"
        elif stop == "n_max" and limit < self.n_max:
            stop = "policy"
        rows = len(draft) + (1 if stop == "p_min" else 0)   # rows decoded from n_past on
        dists = self.q.take() if self.q is not None else ()
        if len(draft) < self.n_min:
            return Proposal(self.name, stop="n_min", dropped=len(draft), rows=rows,
                            t_decode=t_decode, limit=limit)
        self.n_drafted = len(draft)
        return Proposal(self.name, tuple(draft), probs=tuple(probs), stop=stop, rows=rows,
                        t_decode=t_decode, dists=dists, top_ids=tuple(tops), limit=limit)

    def accept(self, n_accepted: int, mine: bool) -> None:
        """The policy learns how the draft model's own draft fared (not another drafter's, and
        not again when nobody drafted: the chain then tells its last winner once more)."""
        if mine and self.n_drafted:
            self.policy.update(self.n_drafted, n_accepted)
        self.n_drafted = 0
