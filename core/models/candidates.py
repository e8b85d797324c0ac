"""A row of logits as llama.cpp's samplers see it (``Candidates``), and its k largest logits
by llama.cpp's own top-k sampler (``top_k``).

llama.cpp samples a row by filling a candidate array with every token in id order and applying
its samplers to it (``common_sampler``); ``Candidates`` is that array, refilled in place, for
the target's distribution at temperature, the tree's and lookahead's per-sequence samplers and
the top-k below.

draft-simple's draft sampler in llama.cpp is a chain of top-k 10 and dist
(``common_speculative_impl_draft_simple``): the top-k sampler partially sorts the candidates
(``std::partial_sort``), dist writes each one's probability (a softmax of the k: ``expf`` of
each logit less the first, summed in double), and the draft takes the first and compares its
probability with p_min. Running those same two samplers gives its order exactly, ties included
(which of two equal logits comes first is the partial sort's choice, not the lower id), and its
probabilities to the bit, and costs the same on every numpy: about 6 µs on a 4k vocabulary,
where ``np.argpartition`` took 8 µs with one numpy and 50 µs with another (numpy 2.4).
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.models.quick import quick

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])  # llama_token_data
assert TOKEN_DATA.itemsize == ctypes.sizeof(ll.llama_token_data)


class Candidates:
    """A ``llama_token_data_array`` over a buffer of ``n_vocab`` entries, refilled from a row of
    logits (every token in id order, as llama.cpp's ``common_sampler`` fills ``cur_p``) for
    samplers to run on (``llama_sampler_apply``)."""

    def __init__(self, n_vocab: int):
        self._data = (ll.llama_token_data * n_vocab)()
        self._address = ctypes.addressof(self._data)
        self.entries = np.frombuffer(self._data, TOKEN_DATA)
        self._ids = np.arange(n_vocab, dtype=np.int32)
        self.array = ll.llama_token_data_array(self._data, n_vocab, -1, False)
        self._ref = ctypes.byref(self.array)
        self._data_at = ctypes.c_void_p.from_buffer(self.array)     # the array's data pointer

    def fill(self, row: np.ndarray) -> None:
        entries, array = self.entries, self.array
        entries["id"] = self._ids            # a sampler permutes the entries: every token again
        entries["logit"] = row
        array.size, array.selected, array.sorted = len(self._ids), -1, False

    def apply(self, sampler) -> None:
        """One sampler (a ``llama_sampler *``) on the candidates, as a chain applies it."""
        quick.llama_sampler_apply(sampler, self._ref)

    def left(self) -> np.ndarray:
        """The entries the samplers left, as a view (a sampler may point the array elsewhere)."""
        n = int(self.array.size)
        address = self._data_at.value
        if address == self._address:
            return self.entries[:n]
        return np.frombuffer((ll.llama_token_data * n).from_address(address), TOKEN_DATA)


class TopK:
    """llama.cpp's draft sampler on rows of ``n_vocab`` logits: a top-k sampler, then a dist
    sampler for the probabilities (its draw is not used), and their candidates (its own, not
    ``scratch``: looking that up each draft step cost 3-4 µs a step more); it owns the samplers
    (freed when it is collected: with its thread, ``top_k``)."""

    def __init__(self, n_vocab: int, k: int):
        self.k = k
        self._samplers = (ll.llama_sampler_init_top_k(k), ll.llama_sampler_init_dist(0))
        for ptr in self._samplers:
            weakref.finalize(self, ll.llama_sampler_free, ptr)
        self._candidates = Candidates(n_vocab)

    def __call__(self, row: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, logits, probabilities) of the k largest logits of ``row``, largest first, in
        the order the top-k sampler leaves them, with the probabilities dist gives them."""
        c = self._candidates
        c.fill(row)
        for ptr in self._samplers:
            c.apply(ptr)
        top = c.left()
        return top["id"].copy(), top["logit"].copy(), top["p"].copy()


_mine = threading.local()      # each thread its own: the candidate arrays are scratch


def _per_thread(key, make):
    kept = getattr(_mine, "kept", None)
    if kept is None:
        kept = _mine.kept = {}
    got = kept.get(key)
    if got is None:
        got = kept[key] = make()
    return got


def scratch(n_vocab: int) -> Candidates:
    """This thread's candidate array for rows of ``n_vocab`` logits (refilled by each user)."""
    return _per_thread(("candidates", n_vocab), lambda: Candidates(n_vocab))


def top_k(row: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, logits, probabilities) of the k largest logits of ``row``, largest first, as
    llama.cpp's draft sampler orders them and computes their probabilities (module docs); a
    :class:`TopK` per thread, row size and k."""
    return _per_thread(("top-k", row.size, k), lambda: TopK(row.size, min(k, row.size)))(row)
