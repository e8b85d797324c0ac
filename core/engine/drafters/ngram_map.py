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

Speed: every window's hash comes from prefix sums of ``token[i] * F^-i`` (F is odd, hence
invertible modulo 2^32), O(1) per new token, with an index from each hash to the windows
that have it; the linear searches and the k4v count are bisections in that index (then a
check of the candidates' tokens), and ``keys`` is found through a dict from the key's
tokens. llama.cpp's answers, without its scans.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np

from specscope.core.engine.drafters.base import NGRAM_MAX, Drafter, Proposal, check_size
from specscope.core.engine.events import NgramMatch
from specscope.core.engine.flag import SPEC_TOOLS, Flag
from specscope.core.errors import ConfigError


@dataclass(frozen=True)
class NgramMapParams:
    """ngram-simple, ngram-map-k, ngram-map-k4v (``common_params_speculative_ngram_map``)."""
    size_n: int = 12      # length of the n-gram looked up
    size_m: int = 48      # length of the m-gram drafted after it
    min_hits: int = 1     # ngram-map-k4v: hits a key needs before its values are drafted

    def validate(self, type_name: str) -> None:
        check_size(self.size_n, f"{type_name} size N")
        check_size(self.size_m, f"{type_name} size M")
        if self.min_hits < 1:
            raise ConfigError(f"{type_name} min hits must be at least 1, not {self.min_hits}")


def map_flags(t: str) -> tuple[Flag, ...]:
    """The flags of one of the types that read NgramMapParams (llama.cpp's ``--spec-ngram-*``)."""
    key = t.removeprefix("ngram-")
    hits = "" if t == "ngram-map-k4v" else "; unused, as in llama.cpp"
    return (Flag(f"{t}.size_n", (f"--spec-ngram-{key}-size-n",),
                 f"{t}: length of the n-gram looked up", 1, NGRAM_MAX, types=(t,), tools=SPEC_TOOLS,
                 metavar="N", label="n"),
            Flag(f"{t}.size_m", (f"--spec-ngram-{key}-size-m",),
                 f"{t}: length of the m-gram drafted", 1, NGRAM_MAX, types=(t,), tools=SPEC_TOOLS,
                 metavar="M", label="m"),
            Flag(f"{t}.min_hits", (f"--spec-ngram-{key}-min-hits",),
                 f"{t}: key hits before drafting{hits}", 1, 1_000_000, types=(t,), tools=SPEC_TOOLS,
                 metavar="N", label="" if hits else "min hits"))


PARAMS = NgramMapParams
FLAGS = (*map_flags("ngram-map-k"), *map_flags("ngram-map-k4v"))

LCG_FACTOR = 2654435761              # llama.cpp's LCG_FACTOR
KEY_MAP_SIZE = 1 << 18               # COMMON_NGRAM_HASH_MAP_SIZE
MAX_VALUES = 4                       # COMMON_NGRAM_MAX_VALUES
MAX_COUNT = 16380                    # COMMON_NGRAM_MAX_VALUE_COUNT
_MASK = 0xFFFFFFFF
_SLOT = KEY_MAP_SIZE - 1             # hash % KEY_MAP_SIZE
BULK = 64                            # new tokens from which numpy hashes them, not Python


def _powers(base: int, count: int) -> np.ndarray:
    """base^0 .. base^(count-1) modulo 2^64, as int64 (numpy's int64 arrays wrap)."""
    base &= (1 << 64) - 1
    out = np.ones(count, np.int64)
    out[1:] = np.cumprod(np.full(count - 1, base - (base >> 63 << 64), np.int64))
    return out


class WindowHashes:
    """llama.cpp's ``common_ngram_map_hash`` (``hash = hash * F + token`` over the window,
    modulo 2^32) of every n-token window of a growing history, and the windows each hash
    starts. With q[k] = the sum of token[i] * F^-i over i < k, window [j, j + n) hashes to
    F^(j+n-1) * (q[j+n] - q[j]) (F is odd, hence invertible): O(1) per new token. Python
    ints, since a round adds a few tokens; numpy for a long stretch (the prompt), in int64
    arithmetic that wraps modulo 2^64, exact modulo 2^32."""

    F_INV = pow(LCG_FACTOR, -1, 1 << 64)

    def __init__(self, n: int):
        self.n = n
        self.q = [0]                             # prefix sums, modulo 2^32
        self.h: list[int] = []                   # h[j]: the hash of window j
        self.where: dict[int, list[int]] = {}    # hash -> the windows with it, ascending
        self.fpow, self.ipow = [1], [1]          # F^k, F^-k modulo 2^32

    def update(self, history: np.ndarray) -> None:
        """Hash the windows that lie inside ``history`` and were not hashed yet."""
        size, n, q, h, where = len(history), self.n, self.q, self.h, self.where
        a = len(q) - 1                                 # tokens summed
        if size <= a:
            return
        fpow, ipow = self.fpow, self.ipow              # both hold k = 0 .. a at least
        if size - a >= BULK:
            lo = len(h)
            f = _powers(LCG_FACTOR, size - a + 1) * fpow[a]     # F^(a .. size), and so on
            i = _powers(self.F_INV, size - a + 1) * ipow[a]
            fpow.extend((f[len(fpow) - a:] & _MASK).tolist())
            ipow.extend((i[len(ipow) - a:] & _MASK).tolist())
            sums = np.cumsum(history[a:size] * i[:-1]) + q[a]
            qs = np.concatenate((np.array(q[lo:], np.int64), sums & _MASK))   # q[lo:size + 1]
            q.extend(qs[a + 1 - lo:].tolist())
            hs = ((qs[n:] - qs[:-n]) * f[lo + n - 1 - a:size - a] & _MASK).tolist()
            h.extend(hs)
            for j, x in enumerate(hs, lo):
                if x in where:
                    where[x].append(j)
                else:
                    where[x] = [j]
            return
        while len(fpow) <= size:
            fpow.append(fpow[-1] * LCG_FACTOR & _MASK)
            ipow.append(ipow[-1] * self.F_INV & _MASK)
        s = q[-1]
        for k, t in enumerate(history[a:size].tolist(), a):
            s = (s + t * ipow[k]) & _MASK
            q.append(s)
            j = k + 1 - n                              # the window ending with token k
            if j >= 0:
                x = fpow[k] * (s - q[j]) & _MASK
                h.append(x)
                if x in where:
                    where[x].append(j)
                else:
                    where[x] = [j]

    def span(self, start: int, length: int) -> int:
        """The hash of ``history[start:start + length]`` (hashed by ``update``)."""
        if length == 0:
            return 0
        end = start + length
        return self.fpow[end - 1] * (self.q[end] - self.q[start]) & _MASK

    def starts(self, hash_: int, lo: int, hi: int) -> list[int]:
        """The windows in [lo, hi] with this hash, ascending."""
        js = self.where.get(hash_, ())
        return js[bisect_left(js, lo):bisect_right(js, hi)]


def _count(k: int, noun: str, the: str = "") -> str:
    """'3 tokens', '1 token'; with ``the``: 'the last 3 tokens', 'the last token'."""
    if the:
        return f"{the} {noun}" if k == 1 else f"{the} {k} {noun}s"
    return f"{k} {noun}" if k == 1 else f"{k} {noun}s"


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
    """ngram-map-k (``key_only``) or ngram-map-k4v; field names follow ``common_ngram_map``."""

    @classmethod
    def create(cls, name, spec, engine=None, policy=None, q=None, vocab=""):
        return cls(spec.params(name), key_only=name == "ngram-map-k")

    def __init__(self, params: NgramMapParams = NgramMapParams(), key_only: bool = True):
        self.name = "ngram-map-k" if key_only else "ngram-map-k4v"
        params.validate(self.name)
        self.n, self.m, self.min_hits, self.key_only = (params.size_n, params.size_m,
                                                        params.min_hits, key_only)
        self.hashes = WindowHashes(self.n)
        self.key_map: dict[int, int] = {}        # slot -> position; a missing slot is 0
        self.key_map_last_idx = 0
        self.size_last_begin = 0
        self.keys: list[_Key] = []
        self.key_offset: dict[bytes, int] = {}   # the key's tokens -> its index in keys
        self.last: tuple[int, int] | None = None  # (key, value) of the draft created last
        self.nothing = Proposal(self.name)

    def begin(self, prompt: np.ndarray) -> None:
        # a fresh map: llama.cpp's clean-up of a shrunk history has nothing to do
        self.size_last_begin = len(prompt)
        self.hashes.update(prompt)

    # ------------------------------------------------------------------ the key_map
    def _search(self, history: np.ndarray, key: bytes, key_hash: int, lo: int, hi: int) -> int:
        """llama.cpp's linear search: the highest j in [lo, hi] where the key starts, or 0."""
        n = self.n
        for j in reversed(self.hashes.starts(key_hash, lo, hi)):
            if history[j:j + n].tobytes() == key:
                return j
        return 0

    def _insert(self, lo: int, hi: int) -> None:
        """Positions hi down to lo into the slots still empty: the first (highest) wins."""
        if hi < lo:
            return
        h = self.hashes.h
        if not self.key_map:      # the first batch: built ascending, so the highest wins
            self.key_map = {x & _SLOT: j for j, x in enumerate(h[lo:hi + 1], lo)}
            return
        fill = self.key_map.setdefault
        for j in range(hi, lo - 1, -1):
            fill(h[j] & _SLOT, j)

    def _match(self, history: np.ndarray, key: bytes, key_hash: int) -> tuple[int, str]:
        """Where the key occurred before (0: nowhere) and how it was found; updates key_map."""
        n, m, cur_len = self.n, self.m, len(history)
        end = cur_len - n - m - 1
        begin, last_idx = self.size_last_begin, self.key_map_last_idx
        prompt = (last_idx + 1, begin - n - m - 1) if begin > n + m + 1 else (1, 0)
        recent = (max(begin, last_idx) + 1, end)
        match_pos, how = 0, "found in the hash map"
        idx_key = self.key_map.get(key_hash & _SLOT, 0)
        if idx_key != 0 and idx_key < end and history[idx_key:idx_key + n].tobytes() == key:
            match_pos = idx_key
        if match_pos == 0:
            how = "found by search"
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
            return self.nothing
        self.hashes.update(history)
        key = history[cur_len - n + 1:].tobytes() + history.dtype.type(id_last).tobytes()
        key_hash = (self.hashes.span(cur_len - n + 1, n - 1) * LCG_FACTOR + id_last) & _MASK
        match_pos, how = self._match(history, key, key_hash)
        if match_pos == 0:
            return self.nothing

        offset = self.key_offset.get(key)
        if offset is None:
            offset = self.key_offset[key] = len(self.keys)
            self.keys.append(_Key(match_pos, m))
        k = self.keys[offset]
        k.key_num = min(k.key_num + 1, MAX_COUNT)
        where = (f"{_count(n, 'token', 'the last')} occurred before at position {match_pos} "
                 f"({how})")
        if self.key_only:
            return self._propose(history, match_pos, offset, 0, where)
        if k.key_num < self.min_hits:
            return Proposal(self.name, detail=NgramMatch(match_pos, n),
                            note=f"{where}: hit {k.key_num} of the {self.min_hits} it needs "
                                 "before drafting")
        self._count_values(history, k, key, key_hash, match_pos)
        nums = [v.value_num for v in k.values]
        slot = nums.index(max(nums))
        top, others = nums[slot], sum(nums) - nums[slot]
        seen = (f"its most frequent continuation was seen {_count(top, 'time')} after it, the "
                f"others {_count(others, 'time')}")
        if others > 0 and top < 2 * others:
            return Proposal(self.name, detail=NgramMatch(match_pos, n),
                            note=f"{where}; {seen}: not twice as often, so no draft")
        return self._propose(history, match_pos, offset, slot, f"{where}; {seen}")

    def _count_values(self, history: np.ndarray, k: _Key, key: bytes, key_hash: int,
                      match_pos: int) -> None:
        """Count the continuations after the key's occurrences in [stat_idx, match_pos]."""
        starts = self.hashes.starts(key_hash, k.stat_idx, match_pos)
        n, m, raw, w = self.n, self.m, history.tobytes(), history.itemsize   # bytes: cheap slices
        kw, mw = n * w, m * w
        for i in starts:
            a = i * w
            if raw[a:a + kw] != key:
                continue
            tokens = raw[a + kw:a + kw + mw]
            for v in k.values:
                if v.value_idx == 0:      # an empty slot: a new continuation
                    v.value_idx, v.value_num, v.n_accepted, v.tokens = i + n, 0, m, tokens
                if v.tokens == tokens:
                    if v.value_num < MAX_COUNT:
                        v.value_num += 1
                    break
        k.stat_idx = match_pos

    def _propose(self, history: np.ndarray, match_pos: int, offset: int, slot: int,
                 why: str) -> Proposal:
        self.last = (offset, slot)
        n, m = self.n, self.m
        count = min(m, self.keys[offset].values[slot].n_accepted)
        start = match_pos + n
        if count == 0:
            what = "no draft, since none of this n-gram's last draft was accepted"
        elif count < m:
            what = (f"drafting the first {_count(count, 'token')} that followed position "
                    f"{match_pos}, as many as were accepted the last time this n-gram drafted")
        else:
            what = f"drafting the {_count(count, 'token')} that followed position {match_pos}"
        return Proposal(self.name, tuple(history[start:start + count].tolist()),
                        note=f"{why}; {what}", detail=NgramMatch(match_pos, n, start))

    def accept(self, n_accepted: int, mine: bool) -> None:
        if mine and self.last is not None:
            offset, slot = self.last
            self.keys[offset].values[slot].n_accepted = n_accepted
