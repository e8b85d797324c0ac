"""The random numbers llama.cpp's ``llama-speculative`` draws with, bit for bit: its own
``std::default_random_engine`` (libstdc++'s ``minstd_rand0``) seeded with ``--seed``, and the
three libstdc++ distributions it draws from (``uniform_real_distribution<double>``,
``uniform_int_distribution<unsigned>``, ``discrete_distribution<int>``).

With them, a llama-speculative round at temperature picks the same branch to verify, the same ``r`` for
the ratio test and the same token from the residual as the C++ program, round for round
(core/engine/tree_round.py). The algorithms are libstdc++'s (bits/random.tcc,
bits/uniform_int_dist.h), the compiler's library on the Linux builds llama.cpp ships.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from itertools import accumulate

_M = 2147483647           # minstd_rand0: x <- 16807 x mod (2^31 - 1); outputs 1 .. m - 1
_A = 16807
_MIN, _MAX = 1, _M - 1
_R = _MAX - _MIN + 1      # the engine's range, 2^31 - 2 values
_R2 = float(_R * _R)      # generate_canonical's r*r: exact in long double, then one rounding


class MinstdRand0:
    """``std::minstd_rand0`` (libstdc++'s ``std::default_random_engine``)."""

    def __init__(self, seed: int):
        seed %= _M
        self.x = seed or 1            # libstdc++: a seed that is 0 mod m becomes 1

    def __call__(self) -> int:
        self.x = self.x * _A % _M
        return self.x

    def canonical(self) -> float:
        """``generate_canonical<double, 53>``: two draws, (g1 - 1 + (g2 - 1) r) / r^2 in doubles."""
        total = float(self() - _MIN)
        total += float(self() - _MIN) * float(_R)
        value = total / _R2
        return value if value < 1.0 else math.nextafter(1.0, 0.0)

    def uniform_real(self) -> float:
        """``uniform_real_distribution<double>(0, 1)``."""
        return self.canonical()

    def uniform_int(self, lo: int, hi: int) -> int:
        """``uniform_int_distribution<unsigned>(lo, hi)``: libstdc++'s downscaling by division
        (the engine's range is neither 2^32 nor 2^64 values), one draw at least, even for lo == hi."""
        span = hi - lo + 1
        scaling = (_MAX - _MIN) // span
        past = span * scaling
        while True:
            value = self() - _MIN
            if value < past:
                return value // scaling + lo

    def discrete(self, weights) -> int:
        """``discrete_distribution<int>(weights)`` (float weights, as doubles): no draw at all for
        fewer than two weights (index 0), else the first cumulative share >= one canonical draw."""
        weights = [float(w) for w in weights]
        if len(weights) < 2:
            return 0
        *_, total = accumulate(weights)   # std::accumulate: left to right, in doubles
        cumulative = list(accumulate(w / total for w in weights))
        cumulative[-1] = 1.0
        return bisect_left(cumulative, self.canonical())


__all__ = ["MinstdRand0"]
