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
    """(the k largest values of ``row``, in no order; ``row.argmax()``), exactly, in one pass
    over the row instead of two (argmax, then ``np.partition(row, -k)``): on a 150k-token
    vocabulary that pass is most of a draft step's Python time.

    The row is read as a grid of ``groups`` rows (``row.reshape(groups, -1)``). Take the k
    columns with the largest maxima: a value outside them is at most its column's maximum,
    hence at most each of the k chosen maxima, so it is not needed among the k largest. Those
    columns and the few elements left over by the reshape hold the k largest values; the
    maximum's index comes from its column (``argmax`` itself where maxima tie across columns,
    so that the lowest index wins as with ``argmax``)."""
    n = row.size - row.size % groups
    if n < 4 * k * groups:
        return np.partition(row, -k)[-k:], int(row.argmax())
    width = n // groups
    grid, tail = row[:n].reshape(groups, width), row[n:]
    maxima = grid.max(axis=0)
    columns = np.argpartition(maxima, -k)[-k:]
    top = np.partition(np.concatenate((grid[:, columns].ravel(), tail)), -k)[-k:]
    best_value = top.max()
    at = np.flatnonzero(maxima == best_value)
    if len(at) == 1 and not (tail == best_value).any():     # the maximum's one column
        return top, int(grid[:, at[0]].argmax()) * width + int(at[0])
    return top, int(row.argmax())                            # ties across columns: rare


class DraftModel(Drafter):
    name = "draft-simple"

    def __init__(self, engine, spec):
        if engine is None or engine.dft is None:
            from ..errors import ConfigError
            raise ConfigError("draft-simple needs a draft model (-md)")
        self.ctx, self.batch = engine.dft, engine.dbatch
        self.n_max, self.n_min, self.p_min = spec.n_max, spec.n_min, spec.p_min
        self.q = None   # accept_rules.DraftSampler: the run needs q (ratio rule, counterfactual)

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        ctx, batch, p_min = self.ctx, self.batch, self.p_min
        n_past, cap = len(history), min(self.n_max, budget)
        if cap <= 0:
            return Proposal(self.name, stop="budget")
        draft: list[int] = []
        probs: list[float] = []
        token, stop, t_decode = id_last, "n_max", 0.0
        clock = time.perf_counter
        while True:
            batch.fill((token,), n_past + len(draft), logits="all")
            t = clock()
            ctx.decode(batch, "a draft token")
            logits = ctx.logits(1)[0]          # llama_get_logits synchronises: llama.cpp time
            t_decode += clock() - t
            top, best = top_values(logits, DRAFT_TOP_K)                # the top-10 logits, argmax
            p = float(1.0 / np.exp(top - logits[best]).sum())          # argmax's share of their mass
            if p < p_min:
                stop = "p_min"
                break
            token = best if self.q is None else self.q.draw(logits, best)
            draft.append(token)
            probs.append(p)
            if len(draft) >= cap:
                break
        if stop == "n_max" and cap < self.n_max:
            stop = "budget"
        rows = len(draft) + (1 if stop == "p_min" else 0)   # rows decoded from n_past on
        dists = self.q.take() if self.q is not None else ()
        if len(draft) < self.n_min:
            return Proposal(self.name, stop="n_min", dropped=len(draft), rows=rows,
                            t_decode=t_decode)
        return Proposal(self.name, tuple(draft), probs=tuple(probs), stop=stop, rows=rows,
                        t_decode=t_decode, dists=dists)
