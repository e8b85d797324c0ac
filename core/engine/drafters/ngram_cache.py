"""ngram-cache: llama.cpp's ``common_speculative_impl_ngram_cache`` over
``common_ngram_cache_update`` / ``common_ngram_cache_draft`` (common/speculative.cpp,
common/ngram-cache.cpp).

The context cache maps every 1- to 4-gram to the counts of the tokens that followed it. Each
draft call feeds it only the tokens that came since the last call, plus ``id_last``, as a
sequence of its own: n-grams that span two calls' tokens are never counted (so a round that
kept no draft token adds nothing). A draft is up to 8 tokens (fixed in llama.cpp), each the
follower of the preceding n-gram, longest n-gram first, in the context cache (lax thresholds:
enough samples and a large enough share), then a dynamic cache (strict thresholds), then the
static cache's 2-gram (``-lcd`` / ``-lcs``: files saved by llama.cpp's lookup tools). Where the
static cache knows the last 2 tokens, its counts weigh the candidates (100 x its count; 1 for
a token it lacks).

The winner among equal scores is the first in ``std::unordered_map<llama_token, int32_t>``
iteration order (a strict ``>``), and ties are common: two followers seen once each pass the
50% rule. ``Followers`` therefore reproduces libstdc++'s (GCC 12, which built the reference)
unordered_map: identity hash, bucket = key mod bucket count, nodes in one singly linked list
where a node whose bucket is empty goes to the front of the list and any other to the front of
its bucket's run, and the prime rehash policy (13 buckets at the first insert, then the next
prime >= twice the count once the map would exceed one element per bucket, the nodes
re-linked in their old order by the same rule). A copy keeps the order, so llama.cpp's copies
of a part change nothing. tests/reference/umap_order.cpp prints the real order to check it.

Where llama.cpp's draft loop reads before the start of the sequence (a 3- or 4-gram with only
2 or 3 tokens in the context: out-of-bounds reads of whatever precedes the draft buffer),
those n-grams count as not found here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.flag import LOOKUP, SERVER, Flag
from specscope.core.errors import ConfigError


@dataclass(frozen=True)
class NgramCacheParams:
    """ngram-cache: llama.cpp drafts up to 8 tokens (fixed) from 1- to 4-gram statistics of the
    context, optionally backed by lookup caches saved by llama.cpp's lookup tools
    (``-lcs/--lookup-cache-static``, ``-lcd/--lookup-cache-dynamic``)."""
    lookup_cache_static: str = ""
    lookup_cache_dynamic: str = ""

    def validate(self, type_name: str = "ngram-cache") -> None:
        for flag, path in (("--lookup-cache-static", self.lookup_cache_static),
                           ("--lookup-cache-dynamic", self.lookup_cache_dynamic)):
            if path and not Path(path).is_file():
                raise ConfigError(f"{path}: {flag}: no such file")


PARAMS = NgramCacheParams
FLAGS = (
    Flag("ngram-cache.lookup_cache_static", ("-lcs", "--lookup-cache-static"),
         "ngram-cache: static lookup cache saved by llama.cpp's lookup tools",
         types=("ngram-cache",), tools=(LOOKUP, SERVER), metavar="FILE", unset="", label="static"),
    Flag("ngram-cache.lookup_cache_dynamic", ("-lcd", "--lookup-cache-dynamic"),
         "ngram-cache: dynamic lookup cache saved by llama.cpp's lookup tools",
         types=("ngram-cache",), tools=(LOOKUP, SERVER), metavar="FILE", unset="", label="dynamic"),
)

N_DRAFT = 8           # create_state_ngram_cache: n_draft fixed
LLAMA_NGRAM_MAX = 4   # llama.cpp's longest cached n-gram (LLAMA_NGRAM_MIN is 1)
NGRAM_STATIC = 2      # LLAMA_NGRAM_STATIC
# thresholds by n-gram size - 1: (minimum sample size, minimum percentage of the winner)
LAX = ((2, 66), (2, 50), (1, 50), (1, 50))
STRICT = ((4, 75), (3, 66), (2, 66), (2, 66))

# libstdc++'s bucket counts for a growing unordered_map (_Prime_rehash_policy, max load 1):
# 13 at the first insert, then the next prime >= twice the count when the size would exceed it
_BUCKETS = (13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229, 172933,
            351061, 712697, 1447153, 2938679, 5967347, 12117689, 24607243, 49969847)
_NEXT_BUCKETS = dict(zip((0, *_BUCKETS), _BUCKETS))
_U64 = (1 << 64) - 1


def _i32(x: int) -> int:
    """int32 wrap-around, as llama.cpp's int products overflow."""
    return (x + (1 << 31) & 0xFFFFFFFF) - (1 << 31)


class Followers:
    """llama.cpp's ``common_ngram_cache_part`` (token -> count) with libstdc++'s iteration
    order, and the first token of maximal count in that order kept up to date (``best``),
    with the token try_draft would take unweighted (``pick``) under its ``limits``.

    ``rank`` orders the nodes: a larger rank comes earlier in iteration. It is the time the
    node's bucket became non-empty (upper bits: later buckets are at the front of the list)
    and the node's index in its bucket's run (lower bits: later nodes at the front of it)."""
    __slots__ = ("count", "rank", "buckets", "n_buckets", "total", "max_count", "best",
                 "limits", "pick")

    def __init__(self, limits: tuple[int, int] = (1, 0), token: int | None = None):
        self.count: dict[int, int] = {}
        self.rank: dict[int, int] = {}
        self.buckets: dict[int, int] = {}     # bucket -> rank of the node at its run's front
        self.n_buckets = 0                    # 0: nothing allocated (std reports 1)
        self.total = 0                        # sum of the counts
        self.max_count = 0
        self.best = -1                        # LLAMA_TOKEN_NULL while empty
        self.limits = limits                  # (minimum sample size, minimum percentage)
        self.pick = -1                        # best if it passes the limits, else -1
        if token is not None:                 # add(token), the common case, in line
            self.n_buckets = _BUCKETS[0]
            self.count[token] = self.total = self.max_count = 1
            self.rank[token] = self.buckets[(token if token >= 0 else token & _U64) % 13] = 0
            self.best = token
            if limits[0] <= 1 and limits[1] <= 100:
                self.pick = token

    @property
    def bucket_count(self) -> int:
        return self.n_buckets or 1

    def add(self, token: int, count: int = 1) -> None:
        """Count ``token`` ``count`` more times (inserting it first when it is new)."""
        counts = self.count
        old = counts.get(token)
        if old is None:
            self._insert(token)
            old = 0
        new = counts[token] = old + count
        total = self.total = self.total + count
        if new > self.max_count:
            self.max_count, self.best = new, token
        elif new == self.max_count and self.rank[token] > self.rank[self.best]:
            self.best = token
        min_sample, min_percent = self.limits    # passes(), in line: this is the hot path
        ok = total >= min_sample and 100 * self.max_count >= min_percent * total
        self.pick = self.best if ok else -1

    def emplace_all(self, pairs) -> None:
        """``emplace(token, count)`` for each pair in order into an empty part, a token already
        there ignored (common_ngram_cache_load): ``add`` in one pass."""
        count = self.count
        for token, c in pairs:
            if token not in count:
                self._insert(token)
                count[token] = c
        self.total = sum(count.values())
        self.max_count = m = max(count.values())
        self.best = max((t for t in count if count[t] == m), key=self.rank.__getitem__)
        self.pick = self.best if self.passes(m, self.total) else -1

    def passes(self, best_count: int, total: int) -> bool:
        min_sample, min_percent = self.limits
        return total >= min_sample and 100 * best_count >= min_percent * total

    def _insert(self, token: int) -> None:
        """Link a new node (its count is set by the caller), rehashing first if it would
        exceed one element per bucket (13 buckets at the first insert)."""
        if len(self.count) >= self.n_buckets:
            if self.n_buckets:
                self._rehash(_NEXT_BUCKETS[self.n_buckets])
            else:
                self.n_buckets = _BUCKETS[0]
        self._link(token)

    def _link(self, token: int) -> None:
        b = (token if token >= 0 else token & _U64) % self.n_buckets
        front = self.buckets.get(b)
        rank = len(self.buckets) << 32 if front is None else front + 1
        self.buckets[b] = self.rank[token] = rank

    def _rehash(self, n_buckets: int) -> None:
        order = self.order()
        self.n_buckets = n_buckets
        self.buckets.clear()
        self.rank.clear()
        for token in order:
            self._link(token)
        if self.max_count:
            rank, m = self.rank, self.max_count
            self.best = max((t for t in order if self.count[t] == m), key=rank.__getitem__)

    def order(self) -> list[int]:
        """The tokens in iteration order."""
        return sorted(self.count, key=self.rank.__getitem__, reverse=True)

    def weighted(self, weights: "Followers") -> tuple[int, int, int]:
        """try_draft's scan with the static cache's counts as weights: (winner, its count,
        total count)."""
        count, w = self.count, weights.count
        best, best_count, best_w, total = -1, 0, 0, 0
        for token in self.order():
            c = count[token]
            cw = _i32(100 * w[token]) if token in w else 1
            if _i32(c * cw) > _i32(best_count * best_w):
                best, best_count, best_w = token, c, cw
            total += c
        return best, best_count, total


Cache = dict[tuple[int, ...], Followers]     # n-gram (without llama.cpp's -1 padding) -> part


def update(cache: Cache, seq: list[int], first: int = 0, limits=LAX) -> None:
    """``common_ngram_cache_update`` for the n-grams of ``seq`` followed by seq[i], i >= first
    (llama.cpp counts them size by size; each part sees its tokens in position order either
    way)."""
    for i in range(max(first, 1), len(seq)):
        token = seq[i]
        for size in range(1, min(i, LLAMA_NGRAM_MAX) + 1):
            key = tuple(seq[i - size:i])
            part = cache.get(key)
            if part is None:
                cache[key] = Followers(limits[size - 1], token)
            else:
                part.add(token)


def load_cache(path: str, flag: str, limits) -> Cache:
    """``common_ngram_cache_load``: repeated [4 x int32 n-gram][int32 n][n x (int32 token,
    int32 count)], native byte order. Duplicate n-grams or tokens: the first wins, as with
    llama.cpp's emplace. A truncated or corrupt file raises ConfigError naming it (llama.cpp
    aborts, or ignores a trailing partial n-gram). ``limits(n-gram size)``: the thresholds
    try_draft applies to its parts."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: {flag}: cannot read the lookup cache: "
                          f"{e.strerror or e}") from None

    def bad(what: str, at: int) -> ConfigError:
        return ConfigError(f"{path}: {flag}: not a llama.cpp lookup cache: {what} "
                           f"(byte {4 * at} of {len(data)})")

    if len(data) % 4:
        raise ConfigError(f"{path}: {flag}: not a llama.cpp lookup cache: its size, "
                          f"{len(data)} bytes, is not a multiple of 4")
    a = np.frombuffer(data, dtype=np.int32).tolist()
    cache: Cache = {}
    i, end = 0, len(a)
    while i < end:
        if i + LLAMA_NGRAM_MAX + 1 > end:
            raise bad("the file ends inside an n-gram's header", i)
        n_tokens = a[i + LLAMA_NGRAM_MAX]
        if n_tokens <= 0:
            raise bad(f"an n-gram with {n_tokens} tokens", i + LLAMA_NGRAM_MAX)
        j = i + LLAMA_NGRAM_MAX + 1
        if j + 2 * n_tokens > end:
            raise bad(f"an n-gram lists {n_tokens} tokens but the file ends after "
                      f"{(end - j) // 2}", i + LLAMA_NGRAM_MAX)
        key = a[i:i + LLAMA_NGRAM_MAX]
        while key and key[-1] == -1:
            key.pop()
        pairs = list(zip(a[j:j + 2 * n_tokens:2], a[j + 1:j + 2 * n_tokens:2]))
        if min(c for _, c in pairs) <= 0:
            k = next(k for k, (_, c) in enumerate(pairs) if c <= 0)
            raise bad(f"token {pairs[k][0]} with count {pairs[k][1]}", j + 2 * k + 1)
        if tuple(key) not in cache:
            part = cache[tuple(key)] = Followers(limits(len(key)))
            part.emplace_all(pairs)
        i = j + 2 * n_tokens
    return cache


class NgramCache(Drafter):
    name = "ngram-cache"

    @classmethod
    def create(cls, name, spec, engine=None, policy=None, q=None, vocab=""):
        return cls(spec.params(name))

    def __init__(self, params: NgramCacheParams = NgramCacheParams()):
        params.validate(self.name)
        self.static: Cache = (load_cache(params.lookup_cache_static, "--lookup-cache-static",
                                         lambda size: LAX[NGRAM_STATIC - 1])
                              if params.lookup_cache_static else {})
        self.dynamic: Cache = (load_cache(params.lookup_cache_dynamic, "--lookup-cache-dynamic",
                                          lambda size: STRICT[max(size, 1) - 1])
                               if params.lookup_cache_dynamic else {})
        self._none = Proposal(self.name)      # frozen: one for every empty draft
        self._notes: dict[tuple, str] = {}
        self.context: Cache = {}
        self.cache_size = 0                  # llama.cpp's sinfo.cache_size: tokens counted
        self._prompt: np.ndarray | None = None   # begin's prompt, counted ahead of the first draft

    def begin(self, prompt: np.ndarray) -> None:
        """llama.cpp counts the prompt at the first draft (its begin is a no-op); counting
        all but the n-grams ending at id_last here gives the same cache, off the round. A
        drafter serves one run: begin starts from an empty context cache."""
        self.context, self.cache_size = {}, 0
        self._prompt = np.array(prompt, dtype=np.int32)
        update(self.context, self._prompt.tolist())

    def resume(self, prompt: np.ndarray, keep: int, before) -> None:
        """A conversation's next turn: llama.cpp keeps a sequence's context cache across a
        slot's requests (its ``begin`` is a no-op) and counts only the tokens past those it
        counted, so the turn takes over the cache of the turn before (after a regenerate or
        an edit the history is shorter: nothing is counted until it is longer again)."""
        if before is None:
            self.begin(prompt)
            return
        self.context, self.cache_size, self._prompt = before.context, before.cache_size, None

    def _count_new(self, history: np.ndarray, id_last: int) -> None:
        cur_len = len(history)
        if self._prompt is not None:
            prompt, self._prompt = self._prompt, None
            if cur_len == len(prompt) and np.array_equal(history, prompt):
                tail = [*history[max(0, cur_len - LLAMA_NGRAM_MAX):].tolist(), id_last]
                update(self.context, tail, len(tail) - 1)
                self.cache_size = cur_len + 1
                return
            self.context = {}
        if self.cache_size < cur_len + 1:
            update(self.context, [*history[self.cache_size:].tolist(), id_last])
            self.cache_size = cur_len + 1

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        id_last = int(id_last)
        self._count_new(history, id_last)
        if len(history) + 1 < NGRAM_STATIC:
            return self._none
        seq = [*history[max(0, len(history) - LLAMA_NGRAM_MAX + 1):].tolist(), id_last]
        keys = [tuple(seq[-size:]) for size in range(1, len(seq) + 1)]   # keys[size - 1]
        primaries = [(c.get, label) for c, label in ((self.context, "context"),
                                                     (self.dynamic, "dynamic cache")) if c]
        static = self.static
        drafted: list[int] = []
        by: dict[tuple[int, str], int] = {}    # (n-gram size, cache) -> tokens drafted
        while len(drafted) < N_DRAFT:
            part_static = static.get(keys[NGRAM_STATIC - 1]) if static else None
            token, how = -1, None
            for find, label in primaries:
                for key in reversed(keys):
                    part = find(key)
                    if part is None:
                        continue
                    if part_static is None:
                        token = part.pick
                    else:
                        best, best_count, total = part.weighted(part_static)
                        token = best if part.passes(best_count, total) else -1
                    if token != -1:
                        how = (len(key), label)
                        break
                if token != -1:
                    break
            if token == -1 and part_static is not None:
                token, how = part_static.pick, (NGRAM_STATIC, "static cache")
            if token == -1:
                break
            drafted.append(token)
            by[how] = by.get(how, 0) + 1
            k1 = (token,)
            keys = ([k1, keys[0] + k1, keys[1] + k1, keys[2] + k1] if len(keys) >= LLAMA_NGRAM_MAX - 1
                    else [k1, *(k + k1 for k in keys)])
        if not drafted:
            return self._none
        return Proposal(self.name, tuple(drafted), note=self._note(tuple(by.items())),
                        stop="n_max" if len(drafted) == N_DRAFT else "")

    def _note(self, by: tuple[tuple[tuple[int, str], int], ...]) -> str:
        """The proposal's note from ((n-gram size, cache), tokens drafted) pairs, memoised (a
        handful of different ones make up a run)."""
        note = self._notes.get(by)
        if note is None:
            note = self._notes[by] = (
                "each token is the most frequent follower of the n-gram before it: "
                + ", ".join(f"{k} by {size}-gram{'s' if k > 1 else ''} in the {label}"
                            for (size, label), k in by))
        return note
