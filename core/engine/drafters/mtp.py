"""draft-mtp: the target's own MTP (nextn) blocks draft (``common_speculative_impl_draft_mtp``,
common/speculative.cpp), step for step.

The MTP context (core/models/mtp.py) decodes, at position p, the pair (token p, h_{p-1}), where
h_{p-1} is the target's last hidden state at p - 1 (its ``h_nextn``, read for every row the
target decodes); its logits predict the token at p + 1.

* ``process`` (every batch the target decodes: each prompt chunk, each verification batch):
  each of the batch's tokens is paired with the target's row before it, the first with the
  deferred boundary (``pending_row``: the last row of the previous batch, or zeros before the
  first), and the pairs decoded, without outputs. The batch's rows are kept (``verify_rows``),
  the boundary moves to its last. With several MTP blocks (llama.cpp's chained heads) the
  batch is decoded once per block, each block selected with ``llama_set_nextn_layer_offset``
  after the context's rows from the batch's first position on are dropped.
* ``draft``: (id_last, pending_row) at n_past, decoded with an output; then draft-eagle3's
  loop (core/engine/drafters/head.py): the top-10 best token while it holds p_min, decoded at
  the next position with the MTP context's own pre-norm state of the step that drafted it.
  Chained blocks: block i drafts step i, after the rows from n_past on are dropped and the
  whole draft so far is decoded again ((id_last, pending_row), then each drafted token with
  the state of the step that drafted it), so n_max is at most the number of blocks.
* ``accept(n)``: whoever drafted, the boundary moves to the target's row of the last token it
  kept: ``verify_rows[min(n, rows - 1)]``; the MTP context is trimmed to the kept history, as
  llama-speculative-simple trims its draft context.
"""

from __future__ import annotations

import numpy as np

from specscope.core.engine.drafters.head import HeadDrafter


class Mtp(HeadDrafter):
    name = "draft-mtp"

    def __init__(self, engine, spec):
        head = engine.mtp_head()
        super().__init__(head, spec)
        self.chained = head.n_layers > 1
        if self.chained:
            self.n_max = min(self.n_max, head.n_layers)
        self.note = ("one MTP block drafted every token" if not self.chained else
                     f"{head.n_layers} MTP blocks, chained: "
                     + ", ".join(f"block {k} drafted token {k}" for k in range(1, head.n_layers + 1)))
        self.chain_rows: list[np.ndarray] = []     # chained blocks: the draft's rows so far
        self.pos0 = 0
        self.id_last = -1

    def process(self, tokens: list[int], pos0: int) -> None:
        n = len(tokens)
        if n <= 0:
            return
        head, dec = self.head, self.head.dec
        h = head.target_rows(n)
        dec.clear()
        for k in range(n):
            dec.add(tokens[k], pos0 + k, self.pending_row if k == 0 else h[k - 1])
        for block in range(head.n_layers):
            if self.chained:
                self._trim(pos0)
                head.select(block)
            self.ctx.process(dec, f"{n} MTP pairs on the MTP context")
        if self.chained:
            head.select(0)
        self._keep(h, pos0)

    def _start(self, history: np.ndarray, id_last: int) -> int:
        """(id_last, pending_row) at n_past."""
        self.pos0, self.id_last = len(history), id_last
        self.chain_rows = [self.pending_row]
        dec = self.head.dec
        dec.clear()
        self.out = dec.add(id_last, self.pos0, self.pending_row, output=True)
        return self.pos0

    def _step(self, i: int) -> None:
        if self.chained:                         # block i rebuilds its rows from n_past on
            self._trim(self.pos0)
            self.head.select(i)
        super()._step(i)

    def _next(self, draft: list[int], row: np.ndarray, pos: int) -> None:
        if not self.chained:
            return super()._next(draft, row, pos)
        self.chain_rows.append(row)
        dec = self.head.dec
        dec.clear()
        tokens = [self.id_last, *draft]
        for t, (token, r) in enumerate(zip(tokens, self.chain_rows)):
            self.out = dec.add(token, self.pos0 + t, r, output=t == len(tokens) - 1)

    def _done(self) -> None:
        if self.chained:
            self.head.select(0)
