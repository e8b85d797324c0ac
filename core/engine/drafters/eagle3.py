"""draft-eagle3: an EAGLE-3 head drafts from the target's own features
(``common_speculative_impl_draft_eagle3``, common/speculative.cpp), step for step.

The head (core/models/eagle3.py) decodes, at position P, the pair (token P+1, g_P), where g_P
is its encoder's projection of the target's features at P (the inputs of three target layers).

* ``process`` (every batch the target decodes: each prompt chunk, each verification batch):
  the target's features of the batch's rows go through the encoder (g per row); the decoder
  writes the pairs (token k+1, g_k) for every row but the last. The last row's pair needs the
  token after the batch, which is not known yet: it is the *deferred boundary*
  (``pending_pos``, ``pending_g``). A batch that starts right after a boundary the head's
  memory lacks completes it first with its own first token (llama.cpp's cross-ubatch bridge:
  a prompt decoded in chunks). The batch's g rows are kept (``verify_g``).
* ``draft``: the boundary is completed with id_last, the target's latest token, and decoded
  with an output; then, as draft-simple, the argmax of the top-10 renormalised probabilities
  is drafted while it holds at least p_min of their mass, each drafted token decoded at the
  next position with the pre-norm state of the step that drafted it as its g, up to n_max
  (llama.cpp's eagle3 does not stop at the round's budget: the chain truncates, after); a
  draft shorter than n_min is dropped. The head's logits are -inf outside its reduced
  vocabulary (the ``d2t`` table, applied in its graph), so it drafts target ids from it.
* ``accept(n)``: whoever drafted, the boundary moves to the first row the target did not keep:
  position pos0 + min(n, rows - 1), with that row's g from ``verify_g``.

The head's memory follows llama-speculative-simple's: after drafting it is trimmed back to the
round's n_past (``llama_memory_seq_rm(ctx_dft, ckpt.pos_max + 1, -1)``), after accepting to
the kept history. Its rows past the boundary are rewritten by the next draft; when another
drafter wins a round after a partial acceptance, the row at the boundary keeps its stale pair,
as in llama.cpp. A checkpoint restore (a recurrent or hybrid target) trims the head's memory
to n_past and leaves the boundary as ``process`` set it, as llama-speculative-simple does
(it does not call llama.cpp's get_state/set_state, the server's boundary stash).
"""

from __future__ import annotations

import time

import numpy as np

from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.drafters.model import DRAFT_TOP_K, top_entries
from specscope.core.errors import ConfigError
from specscope.core.models.eagle3 import layers_words


class Eagle3(Drafter):
    name = "draft-eagle3"

    def __init__(self, engine, spec):
        head = getattr(engine, "head", None)
        if head is None:
            raise ConfigError("draft-eagle3 needs an EAGLE-3 head as the draft model (-md)")
        self.head, self.ctx = head, head.ctx
        self.ctx.clear()                         # a run makes its drafters afresh: an empty head
        self.n_max, self.n_min, self.p_min = spec.n_max, spec.n_min, spec.p_min
        self.pending_g = np.zeros(head.n_embd_dec, np.float32)   # the deferred boundary
        self.pending_pos = -1
        self.verify_g = np.zeros((0, head.n_embd_dec), np.float32)
        self.verify_pos_first = -1
        self.dropped = 0
        vocab = (f"; its reduced vocabulary of {head.n_draft_vocab:,} tokens maps to target ids "
                 "through d2t" if head.n_draft_vocab else "; it drafts over the target's vocabulary")
        self.note = f"fed by {layers_words(head.layer_ids, head.n_layer_tgt)}{vocab}"

    # ------------------------------------------------------------------ process
    def process(self, tokens: list[int], pos0: int) -> None:
        n = len(tokens)
        if n <= 0:
            return
        head, dec = self.head, self.head.dec
        g = head.encode(head.features(n))
        dec.clear()
        pending = self.pending_pos
        if pending >= 0 and pending + 1 == pos0 and pending > self.ctx.pos_max():
            dec.add(tokens[0], pending, self.pending_g)          # the cross-ubatch bridge
        for k in range(n - 1):
            dec.add(tokens[k + 1], pos0 + k, g[k])
        self.verify_pos_first, self.pending_pos = pos0, pos0 + n - 1
        self.verify_g, self.pending_g = g, g[n - 1].copy()
        if dec.size:
            self.ctx.process(dec, f"{dec.size} EAGLE-3 pairs on the head")

    # ------------------------------------------------------------------ draft
    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        if self.pending_pos < 0:                 # nothing processed yet: llama.cpp drafts nothing
            return Proposal(self.name, stop="none")
        head, ctx, dec = self.head, self.ctx, self.head.dec
        clock = time.perf_counter
        t0 = clock()
        self._trim(self.pending_pos)
        dec.clear()
        dec.add(id_last, self.pending_pos, self.pending_g, output=True)
        ctx.process(dec, "the EAGLE-3 boundary on the head")
        draft: list[int] = []
        probs: list[float] = []
        tops: list[tuple[int, ...]] = []
        stop = "n_max"
        while True:
            logits = ctx.logits(1)[0]
            g = head.prenorm(0)
            ids, top = top_entries(logits, DRAFT_TOP_K)
            p = float(1.0 / np.exp(top - top[0]).sum())
            if p < self.p_min:
                stop = "p_min"
                break
            token = int(ids[0])
            draft.append(token)
            probs.append(p)
            tops.append(tuple(ids.tolist()))
            if len(draft) >= self.n_max:
                break
            dec.clear()
            dec.add(token, self.pending_pos + len(draft), g, output=True)
            ctx.process(dec, "a draft token on the EAGLE-3 head")
        rows = len(draft) + (stop == "p_min")
        self._trim(len(history))                 # speculative-simple: back to n_past
        t_decode = clock() - t0
        if len(draft) < self.n_min:
            return Proposal(self.name, stop="n_min", dropped=len(draft), rows=rows,
                            t_decode=t_decode, limit=self.n_max)
        return Proposal(self.name, tuple(draft), probs=tuple(probs), stop=stop, rows=rows,
                        t_decode=t_decode, top_ids=tuple(tops), limit=self.n_max, note=self.note,
                        draft_ids=tuple(head.draft_id(t) for t in draft))

    # ------------------------------------------------------------------ accept
    def accept(self, n_accepted: int, mine: bool) -> None:
        """The boundary moves to the first row not kept (llama.cpp ignores whose draft it was);
        the head's memory comes to the kept history, as speculative-simple trims it."""
        rows = len(self.verify_g)
        if rows > 0:
            i = min(n_accepted, rows - 1)
            self.pending_pos = self.verify_pos_first + i
            self.pending_g = self.verify_g[i].copy()
            self._trim(self.verify_pos_first + n_accepted + 1)

    def restore(self, n_past: int) -> None:
        self._trim(n_past)

    def _trim(self, pos: int) -> None:
        """Drop the head's rows from ``pos`` on."""
        self.dropped += max(0, self.ctx.pos_max() + 1 - pos)
        self.ctx.seq_rm(pos, -1)
