"""ngram-mod: llama.cpp's ``common_speculative_impl_ngram_mod`` over ``common_ngram_mod``
(common/speculative.cpp, common/ngram-mod.cpp).

A table of 4M slots maps the hash of an n-gram (n = n-match) to the token that followed it;
``add`` overwrites whatever the slot held, so different n-grams that collide share a slot, as
in llama.cpp. The hash is ``res = res*6364136223846793005 + token`` over the n tokens (uint64
arithmetic), modulo the table size. ``begin`` adds the prompt's n-grams (those followed by a
prompt token) and empties the table if more than a quarter of the slots are in use; each
draft adds the newer n-grams only in chunks, once more than 32 tokens came since the last
chunk. The draft looks up the last n tokens (id_last included), then slides over its own
tokens, up to n-max; an empty slot before n-min tokens means no draft at all. After five
verified drafts in a row that kept less than a quarter of their tokens (counted against the
draft's length before the chain cut it to the round's budget), the table is emptied and
refilled from position 0 at the next chunk. Other drafters' rounds do not count.

How it is done here: the table size is 2^22, so the slot is the hash modulo 2^22 and the whole
computation can run modulo 2^22 (a ring homomorphism of uint64 arithmetic): slot hashes of a
chunk are one integer correlation with the powers of the multiplier, and the draft's sliding
lookups are an O(1) rolling hash each. The table is a dict slot -> history position of the
token stored there (the token is read back from the history), which also tells where the
first drafted token was copied from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specscope.core.engine.drafters.base import NGRAM_MAX, Drafter, Proposal, check_size
from specscope.core.engine.events import NgramMatch
from specscope.core.engine.flag import SPEC_TOOLS, Flag
from specscope.core.errors import ConfigError


@dataclass(frozen=True)
class NgramModParams:
    """ngram-mod (``common_params_speculative_ngram_mod``)."""
    n_match: int = 24     # lookup length
    n_min: int = 48       # fewer drafted tokens than this: no draft
    n_max: int = 64       # most drafted tokens

    def validate(self, type_name: str = "ngram-mod") -> None:
        check_size(self.n_match, f"{type_name} n-match")
        for name, value in (("n-min", self.n_min), ("n-max", self.n_max)):
            if not 0 <= value <= NGRAM_MAX:
                raise ConfigError(f"{type_name} {name} must be between 0 and {NGRAM_MAX} "
                                  f"inclusive, not {value}")


PARAMS = NgramModParams
FLAGS = (
    Flag("ngram-mod.n_match", ("--spec-ngram-mod-n-match",), "ngram-mod: lookup length",
         1, NGRAM_MAX, types=("ngram-mod",), tools=SPEC_TOOLS, metavar="N", label="match"),
    Flag("ngram-mod.n_min", ("--spec-ngram-mod-n-min",),
         "ngram-mod: fewer drafted tokens than this is no draft",
         0, NGRAM_MAX, types=("ngram-mod",), tools=SPEC_TOOLS, metavar="N", label="min"),
    Flag("ngram-mod.n_max", ("--spec-ngram-mod-n-max",), "ngram-mod: most tokens drafted",
         0, NGRAM_MAX, types=("ngram-mod",), tools=SPEC_TOOLS, metavar="N", label="max"),
)

TABLE_SIZE = 4 * 1024 * 1024          # llama.cpp: mod(n_match, 4*1024*1024)
_MASK = TABLE_SIZE - 1                # a power of two: slot = hash & _MASK
_MULT = 6364136223846793005 & _MASK   # the hash multiplier, modulo the table size
CHUNK = 32                            # add new n-grams once more than this many tokens came
OCCUPANCY_MAX = 0.25                  # begin: empty the table above this fraction of slots used
LOW_ACCEPT = 0.25                     # accepted/drafted below this ...
LOW_STREAK = 5                        # ... this many times in a row: empty the table


class NgramMod(Drafter):
    name = "ngram-mod"

    @classmethod
    def create(cls, name, spec, engine=None, policy=None, q=None, vocab=""):
        return cls(spec.params(name))

    def __init__(self, params: NgramModParams = NgramModParams()):
        params.validate(self.name)
        self.n, self.n_min, self.n_max = params.n_match, params.n_min, params.n_max
        pw = [1] * self.n                     # pw[k] = multiplier^(n-1-k): the k-th token's weight
        for k in range(self.n - 2, -1, -1):
            pw[k] = pw[k + 1] * _MULT & _MASK
        self._pw = np.array(pw, dtype=np.int64)
        self._pw_first = pw[0]
        self.prefix = [0]                     # prefix[j]: hash of history[:j], modulo 2^22
        self._empty = {}                      # found -> the no-draft Proposal (they are frozen)
        self.table: dict[int, int] = {}       # slot -> position of the token that slot holds
        self.i_last = 0                       # llama.cpp's sinfo: first n-gram not yet added
        self.n_draft_last = 0                 # length of the last draft, before any truncation
        self.n_low = 0                        # rounds in a row with low acceptance

    def _add(self, tokens: np.ndarray, lo: int, hi: int) -> None:
        """``add`` for the n-grams starting at lo .. hi-1 (each followed by tokens[i + n])."""
        if hi <= lo:
            return
        n = self.n
        window = tokens[lo:hi + n - 1].astype(np.int64) & _MASK
        slots = np.correlate(window, self._pw, "valid") & _MASK
        self.table.update(zip(slots.tolist(), range(lo + n, hi + n)))

    def _prefix(self, history: np.ndarray) -> list[int]:
        """prefix[j]: the hash of history[:j] (modulo 2^22), extended to the whole history."""
        prefix = self.prefix
        if len(prefix) <= len(history):
            h = prefix[-1]
            for t in history[len(prefix) - 1:].tolist():
                h = (h * _MULT + t) & _MASK
                prefix.append(h)
        return prefix

    def begin(self, prompt: np.ndarray) -> None:
        """llama.cpp keeps the table across generations; here a drafter serves one run (the
        table holds positions in its history), so begin starts from an empty one."""
        self.i_last = self.n_draft_last = 0
        self.table, self.prefix = {}, [0]
        self._prefix(prompt)
        n = self.n
        if len(prompt) < n:
            return
        self._add(prompt, 0, len(prompt) - n)
        self.i_last = len(prompt) - n
        if len(self.table) / TABLE_SIZE > OCCUPANCY_MAX:
            self.table.clear()

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        self.n_draft_last = 0
        n, cur_len, id_last = self.n, len(history), int(id_last)
        if cur_len < n or not self.n_max:
            return self._none(self.n_min)
        if self.i_last + CHUNK < cur_len:
            self._add(history, self.i_last, cur_len - n)
            self.i_last = cur_len - n

        prefix = self._prefix(history)
        # the hash of the last n-1 tokens and id_last
        h = ((prefix[cur_len] - prefix[cur_len - n + 1] * self._pw_first) * _MULT
             + id_last) & _MASK
        table = self.table
        source = table.get(h, -1)
        if source < 0:
            return self._none(0)
        window = [*history[cur_len - n + 1:].tolist(), int(id_last)]
        get, first = history.item, self._pw_first
        drafted: list[int] = []
        for i in range(self.n_max):
            pos = table.get(h)
            if pos is None:
                if i < self.n_min:
                    return self._none(i)
                break
            token = get(pos)
            drafted.append(token)
            h = ((h - (window[i] & _MASK) * first) * _MULT + token) & _MASK
            window.append(token)
        self.n_draft_last = len(drafted)
        key = source - n
        same = history[key:source].tolist() == window[:n]
        return Proposal(
            self.name, tuple(drafted), detail=NgramMatch(key, n, source),
            stop="n_max" if len(drafted) == self.n_max else "",
            note=f"each token is the hash table's entry for the {n} tokens before it "
                 f"({len(drafted)} found; n-min {self.n_min}, n-max {self.n_max}); the first "
                 f"was stored from position {source}"
                 + ("" if same else " by a different n-gram with the same hash"))

    def _none(self, found: int) -> Proposal:
        """No draft: the hash table followed the last n tokens for only ``found`` tokens."""
        p = self._empty.get(found)
        if p is None:
            if found >= self.n_min:          # n-max 0
                p = Proposal(self.name)
            else:
                p = Proposal(self.name, stop="n_min", dropped=found,
                             note=f"the hash table followed the last {self.n} tokens for only "
                                  f"{found} token{'s' if found != 1 else ''}, fewer than n-min "
                                  f"{self.n_min}: no draft")
            self._empty[found] = p
        return p

    def accept(self, n_accepted: int, mine: bool) -> None:
        if not mine or self.n_draft_last == 0:
            return
        if n_accepted / self.n_draft_last < LOW_ACCEPT:
            self.n_low += 1
            if self.n_low >= LOW_STREAK:
                self.table.clear()
                self.n_low = self.i_last = 0
        else:
            self.n_low = 0
