"""ngram-simple: llama.cpp's ``common_ngram_simple_draft`` (common/ngram-map.cpp).

The pattern is the last n-1 history tokens followed by ``id_last``. llama.cpp searches the
history backwards, from the n-gram starting at ``len - n - 1`` down to position 1 (position 0
is never a match), and copies the m tokens that followed the most recent occurrence, fewer
where the history ends sooner; a copy shorter than n tokens is no draft, nor is any draft
while the history holds n + m + 1 tokens or fewer. ``--spec-ngram-simple-min-hits`` is
accepted but, as in llama.cpp, unused.

Instead of searching, an index maps each n-gram to its latest start (a dict, filled as the
history grows): the same answer in O(n) per round.
"""

from __future__ import annotations

import numpy as np

from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.drafters.ngram_map import NgramMapParams, map_flags
from specscope.core.engine.events import NgramMatch

PARAMS = NgramMapParams
FLAGS = map_flags("ngram-simple")


class NgramSimple(Drafter):
    name = "ngram-simple"

    @classmethod
    def create(cls, name, spec, engine=None, policy=None, q=None, vocab=""):
        return cls(spec.params(name))

    def __init__(self, params: NgramMapParams = NgramMapParams()):
        params.validate(self.name)
        self.n, self.m = params.size_n, params.size_m
        self.latest: dict[tuple[int, ...], int] = {}   # n-gram -> its latest start >= 1
        self.next_start = 1                             # first start not yet indexed

    def _index(self, history: np.ndarray, last_start: int) -> None:
        """Index the n-grams starting in [next_start, last_start]."""
        lo = self.next_start
        if last_start < lo:
            return
        n = self.n
        toks = history[lo:last_start + n].tolist()
        latest = self.latest
        for j in range(last_start - lo + 1):
            latest[tuple(toks[j:j + n])] = lo + j
        self.next_start = last_start + 1

    def begin(self, prompt: np.ndarray) -> None:
        self._index(prompt, len(prompt) - self.n - 1)

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        n, m, cur_len = self.n, self.m, len(history)
        if cur_len <= n + m + 1:
            return Proposal(self.name)
        self._index(history, cur_len - n - 1)
        pattern = (*history[cur_len - n + 1:].tolist(), int(id_last))
        match = self.latest.get(pattern, 0)
        if match == 0:
            return Proposal(self.name)
        copy = min(m, cur_len - (match + n))
        if copy < n:
            return Proposal(self.name)
        start = match + n
        return Proposal(self.name, tuple(history[start:start + copy].tolist()),
                        note=f"the last {n} tokens occurred before at position {match}; "
                             f"drafting the {copy} tokens that followed them there",
                        detail=NgramMatch(match, n, start))
