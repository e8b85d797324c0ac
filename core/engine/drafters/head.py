"""What draft-eagle3 and draft-mtp share: a drafting context that reads the target's hidden
states (core/models/staging.py ``StagedHead``), a deferred boundary, and llama.cpp's draft loop.

Both keep, after each batch the target decodes (``process``), the batch's hidden-state rows
(``verify_rows``, from ``verify_pos_first`` on) and the boundary: the row the next draft
starts from (``pending_row``, the batch's last; ``pending_pos`` its position). ``accept(n)``
moves the boundary to the first row the target did not keep, whoever drafted
(``i = min(n, rows - 1)``), and trims the drafting context to the kept history, as
llama-speculative-simple does (``llama_memory_seq_rm(ctx_dft, n_past, -1)``).

``draft``: the boundary's first entry (``_start``) is decoded with an output; then, as
draft-simple, the argmax of the top-10 renormalised probabilities is drafted while it holds at
least p_min of their mass, each drafted token decoded next with the drafting context's own
pre-norm state of the step that drafted it (``_next``), up to n_max (the drafters do not stop
at the round's budget: the chain truncates, after); a draft shorter than n_min is dropped.
After drafting the context is trimmed back to n_past (speculative-simple's
``llama_memory_seq_rm(ctx_dft, ckpt.pos_max + 1, -1)``). A checkpoint restore trims it to
n_past and leaves the boundary as ``process`` set it, as llama-speculative-simple does.
"""

from __future__ import annotations

import time

import numpy as np

from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.drafters.model import draft_top
from specscope.core.engine.events import HeadIds


class HeadDrafter(Drafter):
    """Subclasses set ``name`` and implement ``process`` (filling ``verify_rows``,
    ``verify_pos_first``, ``pending_row``, ``pending_pos``) and ``_start``."""
    resumes = False     # its cache is filled from the target's prefill: a turn starts afresh

    def __init__(self, head, spec):
        self.head, self.ctx = head, head.ctx
        self.ctx.clear()                         # a run makes its drafters afresh: an empty head
        self.n_max, self.n_min, self.p_min = spec.n_max, spec.n_min, spec.p_min
        self.pending_row = np.zeros(head.n_embd_dec, np.float32)   # the deferred boundary
        self.pending_pos = -1
        self.verify_rows = np.zeros((0, head.n_embd_dec), np.float32)
        self.verify_pos_first = -1
        self.dropped = 0
        self.out = 0                             # the output entry of the last draft step's batch
        self.note = ""                           # what fed the draft, in words (RoundEvent.draft_note)

    def _start(self, history: np.ndarray, id_last: int) -> int | None:
        """Fill the head's batch with the draft's first step (its one output last) and return
        the position of its output entry; None: no draft this round."""
        raise NotImplementedError

    def _next(self, draft: list[int], row: np.ndarray, pos: int) -> None:
        """The next step's batch after ``draft`` grew by a token at ``pos``, decoded with
        ``row``: that token alone at the next position."""
        dec = self.head.dec
        dec.clear()
        self.out = dec.add(draft[-1], pos + 1, row, output=True)

    def _step(self, i: int) -> None:
        """Draft step ``i``'s decode."""
        self.ctx.process(self.head.dec, f"draft step {i} on the {self.name} context")

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        clock = time.perf_counter
        t0 = clock()
        drafted = self._draft_tokens(history, id_last)
        if drafted is None:                      # nothing processed yet: llama.cpp drafts nothing
            return Proposal(self.name, stop="none")
        draft, probs, tops, stop, rows = drafted
        self._trim(len(history))                 # speculative-simple: back to n_past
        t_decode = clock() - t0
        if len(draft) < self.n_min:
            return Proposal(self.name, stop="n_min", dropped=len(draft), rows=rows,
                            t_decode=t_decode, limit=self.n_max)
        return Proposal(self.name, tuple(draft), probs=tuple(probs), stop=stop, rows=rows,
                        t_decode=t_decode, top_ids=tuple(tops), limit=self.n_max, note=self.note,
                        detail=self._draft_ids(draft))

    @staticmethod
    def _pick(logits: np.ndarray) -> tuple[int, float, tuple[int, ...]]:
        """A draft position's token as llama.cpp's top-10 sampler picks it: the argmax, its
        renormalised probability among the top 10, and the top 10 ids."""
        ids, _, p = draft_top(logits)
        return int(ids[0]), p, tuple(ids.tolist())

    def _draft_tokens(self, history: np.ndarray, id_last: int):
        """(tokens, probabilities, top-10 ids, why it stopped, rows decoded), or None: no draft
        this round. Here llama.cpp's sequential loop (module docs)."""
        pos = self._start(history, id_last)
        if pos is None:
            return None
        draft: list[int] = []
        probs: list[float] = []
        tops: list[tuple[int, ...]] = []
        stop = "n_max"
        while True:
            self._step(len(draft))
            token, p, top = self._pick(self.ctx.logits(1)[0])
            row = self.head.prenorm(self.out)
            if p < self.p_min:
                stop = "p_min"
                break
            draft.append(token)
            probs.append(p)
            tops.append(top)
            if len(draft) >= self.n_max:
                break
            self._next(draft, row, pos)
            pos += 1
        self._done()
        return draft, probs, tops, stop, len(draft) + (stop == "p_min")

    def _draft_ids(self, draft: list[int]) -> HeadIds | None:
        """The drafting context's own ids of the drafted tokens (None: the target's): a head
        with a d2t table maps them (``draft_id``)."""
        if not getattr(self.head, "n_draft_vocab", 0):        # no d2t table: the target's ids
            return None
        return HeadIds(tuple(self.head.draft_id(t) for t in draft))

    def _done(self) -> None:
        """After the draft loop (draft-mtp's chained blocks: back to the first)."""

    def _keep(self, rows: np.ndarray, pos0: int) -> None:
        """``process``'s end: the batch's rows, the boundary at its last."""
        self.verify_pos_first, self.pending_pos = pos0, pos0 + len(rows) - 1
        self.verify_rows, self.pending_row = rows, rows[-1].copy()

    def accept(self, n_accepted: int, mine: bool) -> None:
        """The boundary moves to the first row not kept (llama.cpp ignores whose draft it was);
        the head's memory comes to the kept history, as speculative-simple trims it."""
        rows = len(self.verify_rows)
        if rows > 0:
            i = min(n_accepted, rows - 1)
            self.pending_pos = self.verify_pos_first + i
            self.pending_row = self.verify_rows[i].copy()
            self._trim(self.verify_pos_first + n_accepted + 1)

    def restore(self, n_past: int) -> None:
        self._trim(n_past)

    def _trim(self, pos: int) -> None:
        """Drop the head's rows from ``pos`` on."""
        self.dropped += max(0, self.ctx.pos_max() + 1 - pos)
        self.ctx.seq_rm(pos, -1)
