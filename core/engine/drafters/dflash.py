"""draft-dflash and draft-dspark: a DFlash head drafts a whole block in one decode
(``common_speculative_impl_draft_dflash``, common/speculative.cpp), round for round.

The head (core/models/dflash.py) keeps, in its KV cache, rows made from the target's own
features at every position the target decoded.

* ``process`` (every batch the target decodes: each prompt chunk, each verification batch):
  the target's features of the batch's rows (the inputs of the head's target layers) are
  injected into the head's cache at the rows' positions. Nothing is deferred: there is no
  boundary to complete.
* ``draft``: one decode of the block at n_past: draft-dflash's is [id_last, mask × n_max]
  and reads the logits of the mask positions; draft-dspark's (with llama.cpp's default
  ``sample_from_anchor``) is [id_last, mask × (n_max - 1)] and reads every position, id_last's
  too, its logits already biased by the Markov head in the graph. Each position's token is the
  argmax of its top 10 (llama.cpp's draft sampler); draft-dflash stops at the first whose
  renormalised top-10 probability is below p_min, draft-dspark at the first whose confidence
  (the confidence head's value) is, where p_min > 0. n_max and n_min are clamped to what the
  head's ``dflash.block_size`` allows (block_size - 1; draft-dspark from the anchor:
  block_size), as llama.cpp does; a draft shorter than n_min is dropped.
* The head's memory follows llama-speculative-simple's: after drafting it is trimmed back to
  n_past, after accepting to the kept history (llama.cpp's dflash ``accept`` does nothing; the
  program trims the draft context). HeadDrafter (core/engine/drafters/head.py) does those
  trims, the checkpoint restore and the proposal, as for draft-eagle3 and draft-mtp.
"""

from __future__ import annotations

import numpy as np

from specscope.core.engine.drafters.head import HeadDrafter
from specscope.core.errors import ConfigError
from specscope.core.models.dflash import DFlashHead
from specscope.core.models.eagle3 import layers_words


class DFlash(HeadDrafter):
    name = "draft-dflash"
    markov = False        # DSpark: drafts through the head's Markov head and confidence head

    def __init__(self, engine, spec):
        head = getattr(engine, "head", None)
        if not isinstance(head, DFlashHead):
            raise ConfigError(f"{self.name} needs a DFlash head as the draft model (-md)")
        super().__init__(head, spec)
        self.anchor = self.markov and head.sample_from_anchor
        if self.markov and self.p_min > 0 and not head.has_confidence:
            raise ConfigError(f"{head.ctx.model.path}: DSpark draft has no confidence head: "
                              "please set --spec-draft-p-min 0")
        n_most = head.facts.most_drafted(self.markov)
        self.n_max, self.n_min = min(self.n_max, n_most), min(self.n_min, n_most)
        kind = "a DSpark head (its Markov head in the graph)" if head.dspark else "a DFlash head"
        self.note = (f"{kind} fed by {layers_words(head.layer_ids, head.n_layer_tgt)}; "
                     f"a block of {head.block_size} at most, drafted in one decode")

    def process(self, tokens: list[int], pos0: int) -> None:
        n = len(tokens)
        if n <= 0:
            return
        features = self.head.features(n)
        self.head.inject(features, pos0)
        self._keep(features, pos0)

    def _draft_tokens(self, history: np.ndarray, id_last: int):
        """The block at n_past, decoded once; its positions read in order (module docs)."""
        head, first = self.head, 0 if self.anchor else 1     # the first position read
        n_block = self.n_max + first
        if n_block <= 0:
            return [], [], [], "n_max", 0
        self._trim(len(history))
        head.block(id_last, n_block, len(history))
        logits = self.ctx.logits(n_block)
        conf = head.confidence(n_block) if self.markov and self.p_min > 0 else None
        draft: list[int] = []
        probs: list[float] = []
        tops: list[tuple[int, ...]] = []
        for i in range(first, n_block):
            if conf is not None and conf[i] < self.p_min:
                return draft, probs, tops, "p_min", n_block
            token, p, top = self._pick(logits[i])
            if not self.markov and p < self.p_min:
                return draft, probs, tops, "p_min", n_block
            draft.append(token)
            probs.append(p)
            tops.append(top)
        return draft, probs, tops, "n_max", n_block


class DSpark(DFlash):
    name = "draft-dspark"
    markov = True
