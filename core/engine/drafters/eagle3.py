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
  a prompt decoded in chunks, or a batch another drafter drafted after a round the head's draft
  was kept whole). As in llama.cpp, that bridge pair's g is this batch's *last* g row, not the
  boundary's: llama.cpp's batch holds a view of ``pending_g_last``, which process() refreshes
  to the last row before the batch is decoded. The batch's g rows are kept (``verify_g``).
* ``draft``: the boundary is completed with id_last, the target's latest token, and decoded
  with an output; then, as draft-simple, the argmax of the top-10 renormalised probabilities
  is drafted while it holds at least p_min of their mass, each drafted token decoded at the
  next position with the pre-norm state of the step that drafted it as its g, up to n_max
  (llama.cpp's eagle3 does not stop at the round's budget: the chain truncates, after); a
  draft shorter than n_min is dropped. The head's logits are -inf outside its reduced
  vocabulary (the ``d2t`` table, applied in its graph), so it drafts target ids from it.
* ``accept(n)``: whoever drafted, the boundary moves to the first row the target did not keep:
  position pos0 + min(n, rows - 1), with that row's g from ``verify_g``.

The draft loop, accept, the trims and restore are draft-mtp's too (core/engine/drafters/head.py).
The head's memory follows llama-speculative-simple's: after drafting it is trimmed back to the
round's n_past (``llama_memory_seq_rm(ctx_dft, ckpt.pos_max + 1, -1)``), after accepting to
the kept history. Its rows past the boundary are rewritten by the next draft; when another
drafter wins a round after a partial acceptance, the row at the boundary keeps its stale pair,
as in llama.cpp. A checkpoint restore (a recurrent or hybrid target) trims the head's memory
to n_past and leaves the boundary as ``process`` set it, as llama-speculative-simple does
(it does not call llama.cpp's get_state/set_state, the server's boundary stash).
"""

from __future__ import annotations

import numpy as np

from specscope.core.engine.drafters.head import HeadDrafter
from specscope.core.errors import ConfigError
from specscope.core.models.eagle3 import layers_words


class Eagle3(HeadDrafter):
    name = "draft-eagle3"

    def __init__(self, engine, spec):
        head = getattr(engine, "head", None)
        if head is None:
            raise ConfigError("draft-eagle3 needs an EAGLE-3 head as the draft model (-md)")
        super().__init__(head, spec)
        vocab = (f"; its reduced vocabulary of {head.n_draft_vocab:,} tokens maps to target ids "
                 "through d2t" if head.n_draft_vocab else "; it drafts over the target's vocabulary")
        self.note = f"fed by {layers_words(head.layer_ids, head.n_layer_tgt)}{vocab}"

    def process(self, tokens: list[int], pos0: int) -> None:
        n = len(tokens)
        if n <= 0:
            return
        head, dec = self.head, self.head.dec
        g = head.encode(head.features(n))
        dec.clear()
        pending = self.pending_pos
        if pending >= 0 and pending + 1 == pos0 and pending > self.ctx.pos_max():
            dec.add(tokens[0], pending, g[n - 1])     # the cross-ubatch bridge (module docs)
        for k in range(n - 1):
            dec.add(tokens[k + 1], pos0 + k, g[k])
        self._keep(g, pos0)
        if dec.size:
            self.ctx.process(dec, f"{dec.size} EAGLE-3 pairs on the head")

    def _start(self, history: np.ndarray, id_last: int) -> int | None:
        """The boundary completed with id_last, at pending_pos."""
        if self.pending_pos < 0:
            return None
        self._trim(self.pending_pos)
        dec = self.head.dec
        dec.clear()
        self.out = dec.add(id_last, self.pending_pos, self.pending_row, output=True)
        return self.pending_pos
