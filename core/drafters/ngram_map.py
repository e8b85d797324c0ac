"""ngram-map-k and ngram-map-k4v: llama.cpp's ``common_ngram_map_begin/_draft/_accept``
(common/ngram-map.cpp) behind ``common_speculative_impl_ngram_map_k`` (common/speculative.cpp).

The key is the last n-1 history tokens followed by ``id_last``. llama.cpp looks it up in
``key_map``, 2^18 slots indexed by the key's uint32 LCG hash (factor 2654435761) modulo 2^18,
each holding one history position. Positions enter the map in batches, each batch from its
highest position down, and only into an empty slot: a slot is never overwritten, so a hit
can be an *older* occurrence than the latest one, and a slot taken by another n-gram (a
collision) hides the key. A hit counts only before ``len - n - m - 1``. On a miss llama.cpp
searches linearly, latest first, only the positions not yet in the map: the prompt's
[key_map_last_idx + 1, len(prompt) - n - m - 1] and the generation's
(max(len(prompt), key_map_last_idx), len - n - m - 1] — positions len(prompt) - n - m to
len(prompt), and 0, are never found. No draft while the history holds fewer than 2n + m
tokens.

Per distinct key it keeps ``keys`` statistics: hits (``key_num``) and up to 4 different
m-token continuations with their counts and the number of tokens accepted the last time each
drafted (``n_accepted``, m at first). ngram-map-k drafts min(m, n_accepted) tokens — 0 once a
draft of this key had none accepted, and then it stays 0, since an empty draft is never
verified. ngram-map-k4v drafts only after ``min_hits`` hits and when the most frequent
continuation was seen at least twice as often as all the others together; it counts the
occurrences from the last counted one (``stat_idx``, counted again) to the match. Both copy
the tokens after the *matched* position, not after the chosen continuation's. ``accept``
stores the accepted count on the key and continuation drafted last, and ignores other
drafters' rounds (llama.cpp's ``is_other``).

Instead of rehashing windows token by token, every window's hash comes from prefix sums of
``token[i] * F^-i`` (F is odd, so invertible modulo 2^32), computed with numpy as the
history grows; the linear searches and the k4v count compare those hashes and check the
tokens of the candidates. ``keys`` is found through a dict from the key's tokens.
"""

from __future__ import annotations

import numpy as np

from .base import Drafter, NgramMapParams, Proposal

LCG_FACTOR = 2654435761              # llama.cpp's LCG_FACTOR
KEY_MAP_SIZE = 1 << 18               # COMMON_NGRAM_HASH_MAP_SIZE
MAX_VALUES = 4                       # COMMON_NGRAM_MAX_VALUES
MAX_COUNT = 16380                    # COMMON_NGRAM_MAX_VALUE_COUNT
_MASK = 0xFFFFFFFF
_F_INV = pow(LCG_FACTOR, -1, 1 << 32)


def _powers(base: int, count: int) -> np.ndarray:
    """base^0 .. base^(count-1) modulo 2^32 (uint64; the products wrap modulo 2^64)."""
    out = np.empty(count, np.uint64)
    out[0] = 1
    out[1:] = np.cumprod(np.full(count - 1, base, np.uint64))
    return out & np.uint64(_MASK)


class WindowHashes:
    """llama.cpp's ``common_ngram_map_hash`` of every n-token window of a growing history:
    ``hash = hash * F + token`` over the window, modulo 2^32."""

    def __init__(self, n: int, capacity: int = 1024):
        self.n = n
        self.q_len = 1                   # q[k] = sum of token[i] * F^-i for i < k, mod 2^32
        self.h_len = 0                   # windows hashed so far
        self._alloc(capacity)

    def _alloc(self, capacity: int) -> None:
        self.fpow, self.ipow = _powers(LCG_FACTOR, capacity + 1), _powers(_F_INV, capacity + 1)
        q, h = np.zeros(capacity + 1, np.uint64), np.zeros(capacity + 1, np.uint64)
        if hasattr(self, "q"):
            q[:self.q_len], h[:self.h_len] = self.q[:self.q_len], self.h[:self.h_len]
        self.q, self.h = q, h

    def update(self, history: np.ndarray) -> None:
        """Hash the windows that lie inside ``history`` and were not hashed yet."""
        size = len(history)
        if size + 1 > len(self.q):
            self._alloc(max(size, 2 * len(self.q)))
        a = self.q_len - 1
        if size > a:
            terms = history[a:size].astype(np.uint32) * self.ipow[a:size]
            self.q[a + 1:size + 1] = (np.cumsum(terms) + self.q[a]) & np.uint64(_MASK)
            self.q_len = size + 1
        lo, hi = self.h_len, size - self.n + 1
        if hi > lo:
            n, q = self.n, self.q
            self.h[lo:hi] = (self.fpow[lo + n - 1:hi + n - 1] * (q[lo + n:hi + n] - q[lo:hi])) \
                & np.uint64(_MASK)
            self.h_len = hi

    def span(self, start: int, length: int) -> int:
        """The hash of ``history[start:start + length]`` (hashed by ``update``)."""
        if length == 0:
            return 0
        end = start + length
        return int(self.fpow[end - 1]) * (int(self.q[end]) - int(self.q[start])) & _MASK


class _Value:
    """common_ngram_map_value: one continuation of a key (``tokens`` cached for comparison)."""
    __slots__ = ("value_idx", "value_num", "n_accepted", "tokens")

    def __init__(self, n_accepted: int):
        self.value_idx, self.value_num, self.n_accepted, self.tokens = 0, 0, n_accepted, b""


class _Key:
    """common_ngram_map_key: the statistics of one distinct key n-gram."""
    __slots__ = ("key_idx", "stat_idx", "key_num", "values")

    def __init__(self, key_idx: int, m: int):
        self.key_idx, self.stat_idx, self.key_num = key_idx, 0, 0
        self.values = [_Value(m) for _ in range(MAX_VALUES)]


class NgramMap(Drafter):
    def __init__(self, params: NgramMapParams = NgramMapParams(), key_only: bool = True):
        self.name = "ngram-map-k" if key_only else "ngram-map-k4v"
        params.validate(self.name)
        self.n, self.m, self.min_hits, self.key_only = (params.size_n, params.size_m,
                                                        params.min_hits, key_only)
        self.hashes = WindowHashes(self.n)
        self.key_map = np.zeros(KEY_MAP_SIZE, np.uint32)
        self.key_map_last_idx = 0
        self.size_last_begin = 0
        self.keys: list[_Key] = []
        self.key_offset: dict[bytes, int] = {}   # the key's tokens -> its index in keys
        self.last: tuple[int, int] | None = None  # (key, value) of the draft created last

    def begin(self, prompt: np.ndarray) -> None:
        # a fresh map: llama.cpp's clean-up of a shrunk history has nothing to do
        self.size_last_begin = len(prompt)
        self.hashes.update(prompt)

    # ------------------------------------------------------------------ the key_map
    def _search(self, history: np.ndarray, key: bytes, key_hash: int, lo: int, hi: int) -> int:
        """llama.cpp's linear search: the highest j in [lo, hi] where the key starts, or 0."""
        if hi < lo:
            return 0
        n = self.n
        for c in np.flatnonzero(self.hashes.h[lo:hi + 1] == key_hash)[::-1].tolist():
            if history[lo + c:lo + c + n].tobytes() == key:
                return lo + c
        return 0

    def _insert(self, lo: int, hi: int) -> None:
        """Positions hi down to lo into empty slots: the first (highest) of a slot wins."""
        if hi < lo:
            return
        slots = (self.hashes.h[lo:hi + 1][::-1] % KEY_MAP_SIZE).astype(np.intp)
        free = self.key_map[slots] == 0
        slots, first = np.unique(slots[free], return_index=True)
        self.key_map[slots] = hi - np.flatnonzero(free)[first]

    def _match(self, history: np.ndarray, key: bytes, key_hash: int) -> tuple[int, str]:
        """Where the key occurred before (0: nowhere) and how it was found; updates key_map."""
        n, m, cur_len = self.n, self.m, len(history)
        end = cur_len - n - m - 1
        begin, last_idx = self.size_last_begin, self.key_map_last_idx
        prompt = (last_idx + 1, begin - n - m - 1) if begin > n + m + 1 else (1, 0)
        recent = (max(begin, last_idx) + 1, end)
        match_pos, how = 0, "through the hash map"
        idx_key = int(self.key_map[key_hash % KEY_MAP_SIZE])
        if idx_key != 0 and idx_key < end and history[idx_key:idx_key + n].tobytes() == key:
            match_pos = idx_key
        if match_pos == 0:
            how = "by search"
            match_pos = (self._search(history, key, key_hash, *prompt)
                         or self._search(history, key, key_hash, *recent))
        self._insert(*prompt)
        self._insert(*recent)
        self.key_map_last_idx = max(end, last_idx)
        return match_pos, how

    # ------------------------------------------------------------------ drafting
    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        self.last = None
        n, m, cur_len = self.n, self.m, len(history)
        if cur_len < 2 * n + m:
            return Proposal(self.name)
        self.hashes.update(history)
        key_arr = np.empty(n, np.int32)
        key_arr[:-1] = history[cur_len - n + 1:]
        key_arr[-1] = id_last
        key = key_arr.tobytes()
        key_hash = (self.hashes.span(cur_len - n + 1, n - 1) * LCG_FACTOR + id_last) & _MASK
        match_pos, how = self._match(history, key, key_hash)
        if match_pos == 0:
            return Proposal(self.name)

        offset = self.key_offset.get(key)
        if offset is None:
            offset = self.key_offset[key] = len(self.keys)
            self.keys.append(_Key(match_pos, m))
        k = self.keys[offset]
        k.key_num = min(k.key_num + 1, MAX_COUNT)
        where = f"the last {n} tokens occurred before at position {match_pos} (found {how})"
        if self.key_only:
            return self._propose(history, match_pos, offset, 0, where)
        if k.key_num < self.min_hits:
            return Proposal(self.name, note=f"{where}, but only {k.key_num} times of the "
                                            f"{self.min_hits} needed to draft",
                            key=match_pos, key_len=n)
        self._count_values(history, k, key, key_hash, match_pos)
        nums = [v.value_num for v in k.values]
        slot = nums.index(max(nums))
        top, others = nums[slot], sum(nums) - nums[slot]
        seen = f"the continuation seen {top} times after them against {others} for the others"
        if others > 0 and top < 2 * others:
            return Proposal(self.name, note=f"{where}; not drafting: {seen} is not twice as "
                                            "frequent", key=match_pos, key_len=n)
        return self._propose(history, match_pos, offset, slot, f"{where}; {seen}")

    def _count_values(self, history: np.ndarray, k: _Key, key: bytes, key_hash: int,
                      match_pos: int) -> None:
        """Count the continuations after the key's occurrences in [stat_idx, match_pos]."""
        n, m, lo = self.n, self.m, k.stat_idx
        for c in np.flatnonzero(self.hashes.h[lo:match_pos + 1] == key_hash).tolist():
            i = lo + c
            if history[i:i + n].tobytes() != key:
                continue
            tokens = history[i + n:i + n + m].tobytes()
            for v in k.values:
                if v.value_idx == 0:      # an empty slot: a new continuation
                    v.value_idx, v.value_num, v.n_accepted, v.tokens = i + n, 0, m, tokens
                if v.tokens == tokens:
                    v.value_num = min(v.value_num + 1, MAX_COUNT)
                    break
        k.stat_idx = match_pos

    def _propose(self, history: np.ndarray, match_pos: int, offset: int, slot: int,
                 why: str) -> Proposal:
        self.last = (offset, slot)
        n, m = self.n, self.m
        count = min(m, self.keys[offset].values[slot].n_accepted)
        start = match_pos + n
        if count < m:
            what = (f"drafting {count} of the tokens that followed there, as many as were "
                    "accepted the last time this n-gram drafted")
        else:
            what = f"drafting the {count} tokens that followed there"
        return Proposal(self.name, tuple(history[start:start + count].tolist()),
                        note=f"{why}; {what}", source=start, key=match_pos, key_len=n)

    def accept(self, n_accepted: int, mine: bool) -> None:
        if mine and self.last is not None:
            offset, slot = self.last
            self.keys[offset].values[slot].n_accepted = n_accepted
