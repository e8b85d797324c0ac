"""draft-simple: the draft model (``common_speculative_impl_draft_simple`` in common/speculative.cpp).

Decode id_last at n_past on the draft, then take the argmax of the top-10 renormalised
probabilities, decode it, and go on until p_min, n_max, the round's budget or the draft-length
policy stops it (core/engine/draft_policy.py; ``cost`` reads each token's share); a draft shorter
than n_min is dropped. With the ratio acceptance rule at temperature it drafts a sample of its
own distribution q instead of the argmax (``q``, core/engine/accept_rules.py); p_min still reads the
top-10 share of the argmax.

The draft context and its batch belong to the Engine; this drafter keeps the draft cache in
step with the target's, by sync mode (``SpecSettings.sync``):

* ``replay`` (llama.cpp): after drafting, the cache is rolled back to n_past; once the target
  verified, the whole verification batch is decoded on the draft and the rejected rows dropped
  (llama.cpp does it in ``process``, before sampling; done after, the result is the same);
* ``reuse``: the rows decoded while drafting stay; after verification only the kept rows it
  lacks are decoded, and the rest dropped. A round the draft-length policy skips (its length
  0: drafting cannot pay) decodes nothing on the draft: the kept tokens wait (``pending``) and
  go into the draft's first decode of the next round it drafts, as one batch.

A draft memory that cannot drop part of a sequence (recurrent, hybrid) is checkpointed before
drafting and restored after it, and only the kept tokens are decoded (llama.cpp would leave
it stale).
"""

from __future__ import annotations

import time

import numpy as np

from specscope.core.engine.draft_policy import DROP, LAST, FixedLength
from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.errors import ConfigError
from specscope.core.models.candidates import top_k

SYNC_MODES = ("reuse", "replay")   # how the draft cache follows the target's (module docs)
DRAFT_TOP_K = 10          # the draft's sampler chain in llama.cpp: top-k 10, then dist


def draft_top(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A row as llama.cpp's draft sampler sees it: the top-10 ids and logits, largest first
    (its top-k sampler's order), and the first's share of their probability mass as its dist
    sampler computes it (p_min reads it)."""
    ids, top, probs = top_k(logits, DRAFT_TOP_K)
    return ids, top, float(probs[0])


class DraftModel(Drafter):
    name = "draft-simple"

    @classmethod
    def create(cls, name, spec, engine=None, policy=None, q=None, vocab=""):
        return cls(engine, spec, policy, q)

    def __init__(self, engine, spec, policy=None, q=None, mask=None):
        if engine is None or engine.dft is None:
            raise ConfigError("draft-simple needs a draft model (-md)")
        self.ctx, self.batch, self.checkpoint = engine.dft, engine.dbatch, engine.dft_checkpoint
        self.n_max, self.n_min, self.p_min = spec.n_max, spec.n_min, spec.p_min
        self.replay = spec.sync == "replay"
        self.q = q      # accept_rules.DraftSampler: the run needs q (ratio rule, counterfactual)
        self.mask = mask  # a logit bias over the draft's vocabulary (token-level intersection)
        self.policy = policy or FixedLength(spec.n_max)   # the draft length per round
        self.n_drafted = 0                    # this round's draft (0: none of mine)
        self.probs: tuple[float, ...] = ()    # ... and its tokens' shares
        self.rows = 0                         # rows the cache holds from the round's n_past on
        self.verified: tuple[list[int], int] = ([], 0)   # the target's last batch and its pos0
        self.dropped = 0                      # rows dropped since take_dropped()
        # the kept tokens the draft's cache lacks, at [n_past - len(pending), n_past): rounds the
        # policy skipped (reuse sync, a memory that can drop rows)
        self.pending: list[int] = []
        self.lazy = not self.replay and self.checkpoint is None
        self.skipped = False                  # this round the policy skipped: nothing decoded
        self.cached = 0                       # rows the draft's cache holds after the last round

    def begin(self, prompt: np.ndarray) -> None:
        """The prompt but its last token into the draft's cache, as into the target's."""
        self.ctx.prefill(prompt.tolist(), self.batch, "the prompt on the draft")

    def resume(self, prompt: np.ndarray, keep: int, before) -> None:
        """A conversation's next turn: the draft's cache holds the same rows as the target's
        (llama-server cuts both at the first difference), but those skipped rounds left, so
        only the rest is decoded."""
        if isinstance(before, DraftModel) and before.pending:
            keep = min(keep, before.cached)
        self.ctx.prefill(prompt.tolist(), self.batch, "the prompt on the draft", keep=keep)

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        clock = time.perf_counter
        t = clock()
        if self.checkpoint is not None:           # a memory that cannot drop rows
            self.checkpoint.save()
        t_cache = clock() - t
        proposal = self._draft(history, id_last, budget)
        self.rows = proposal.rows
        if self.checkpoint is None and not self.replay:   # reuse: the rows stay, as made
            return proposal
        t = clock()                               # back to n_past before verifying
        self._drop_to(len(history))
        proposal.t_decode += t_cache + clock() - t          # this round's own Proposal
        return proposal

    def process(self, tokens: list[int], pos0: int) -> None:
        """Kept until ``accept`` says how much of it the target kept (module docs)."""
        self.verified = (tokens, pos0)

    def accept(self, n_accepted: int, mine: bool) -> None:
        """The policy learns how the draft model's own draft fared (not another drafter's, and
        not again when nobody drafted: the chain then tells its last winner once more); the
        cache comes to the kept history [0, n_past + n_accepted + 1)."""
        if mine and self.n_drafted:
            self.policy.update(self.n_drafted, n_accepted, self.probs)
        self.n_drafted = 0
        batch, n_past = self.verified
        kept = n_accepted + 1
        if self.skipped or self.pending and not self.rows:   # nothing decoded: the kept rows
            self.pending.extend(batch[:kept])               # wait (resume: the run's last)
            self.skipped = False
        elif self.replay and self.checkpoint is None:   # llama.cpp: the whole batch, then trim
            self._decode(batch, n_past, "the verification batch (replay sync)")
            self.dropped += len(batch) - kept
            self.ctx.seq_rm(n_past + kept, -1)
        elif self.rows >= kept:                       # reuse: the cache holds what it needs
            self.dropped += self.rows - kept
            self.ctx.seq_rm(n_past + kept, -1)
        else:                                         # decode only the rows it lacks
            self._decode(batch[self.rows:kept], n_past + self.rows, "the kept tokens")
        self.rows = 0
        self.cached = n_past + kept - len(self.pending)

    def restore(self, n_past: int) -> None:
        self._drop_to(n_past)

    def _drop_to(self, n_past: int) -> None:
        """Back to the round's start: the checkpoint taken before drafting, or a trim."""
        if self.rows:
            if self.checkpoint is not None:
                self.checkpoint.restore()
            else:
                self.ctx.seq_rm(n_past, -1)
        self.dropped += self.rows
        self.rows = 0

    def _decode(self, tokens: list[int], pos0: int, what: str) -> None:
        if tokens:
            # a single row is decoded with logits, unused: the same graph as a draft step,
            # so llama.cpp does not rebuild its graph for the next draft decode
            self.batch.fill(tokens, pos0, logits="last" if len(tokens) == 1 else "none")
            self.ctx.decode(self.batch, f"{what} on the draft")

    def _draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        ctx, batch, p_min = self.ctx, self.batch, self.p_min
        limit = max(self.policy.next_n(), self.n_min)    # a policy's n below n_min would drop every draft
        n_past, cap = len(history), min(limit, budget)
        self.n_drafted = 0
        if limit == 0 < budget and self.n_max > 0 and self.lazy:   # the policy skips the round
            self.skipped = True
            return Proposal(self.name, stop="policy", limit=0)
        if cap <= 0:
            return Proposal(self.name, stop="budget", limit=limit)
        draft: list[int] = []
        probs: list[float] = []
        tops: list[tuple[int, ...]] = []    # the draft's top-10 ids at each drafted position
        token, stop, t_decode = id_last, "n_max", 0.0
        in_vain = 0                         # 1: the last row decoded proposed no token
        clock = time.perf_counter
        while True:
            if self.pending:      # the kept tokens of skipped rounds first, in the same batch
                batch.fill([*self.pending, token], n_past - len(self.pending), logits="last")
                self.pending = []
            else:
                batch.fill((token,), n_past + len(draft), logits="all")
            t = clock()
            ctx.decode(batch, "a draft token")
            logits = ctx.logits(1)[0]          # llama_get_logits synchronises: llama.cpp time
            t_decode += clock() - t
            if self.mask is not None:
                logits = logits + self.mask
            ids, _, p = draft_top(logits)
            best = int(ids[0])
            if p < p_min:
                stop, in_vain = "p_min", 1
                break
            step = self.policy.step(len(draft), p, cap)
            if step == DROP:
                stop, in_vain = "policy", 1
                break
            token = best if self.q is None else self.q.draw(logits, best)
            draft.append(token)
            probs.append(p)
            tops.append(tuple(ids.tolist()))
            if len(draft) >= cap:
                break
            if step == LAST:
                stop = "policy"
                break
        if stop == "n_max" and cap < limit:
            stop = "budget"
        elif stop == "n_max" and limit < self.n_max:
            stop = "policy"
        rows = len(draft) + in_vain          # rows decoded from n_past on
        dists = self.q.take() if self.q is not None else ()
        if len(draft) < self.n_min:
            return Proposal(self.name, stop="n_min", dropped=len(draft), rows=rows,
                            t_decode=t_decode, limit=limit)
        self.n_drafted, self.probs = len(draft), tuple(probs)
        return Proposal(self.name, tuple(draft), probs=tuple(probs), stop=stop, rows=rows,
                        t_decode=t_decode, dists=dists, top_ids=tuple(tops), limit=limit)
