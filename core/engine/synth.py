"""Synthetic acceptance: llama.cpp's benchmark-only ``--spec-synth-len`` / ``--spec-synth-rates``.

The drafter still drafts and the target still decodes the whole verification batch and
samples every row, so every timing is real; but each draft position is accepted *at random*
with a fixed probability instead of by matching the target's sample. The generated text is
therefore NOT valid output of the target: it is a speed benchmark at a chosen acceptance.

As llama.cpp does it (the vendored source is the specification):

* ``resolve_rates`` is ``common_speculative_synth_rates_resolve`` (common/speculative.cpp):
  the unconditional per-position rates a_1..a_n (the share of rounds that accept at least i
  draft tokens), either given (``--spec-synth-rates``: n values, each in [0, 1], non-increasing)
  or derived from a mean accepted length L including the target's token
  (``--spec-synth-len``: a_i = p^i with p found by bisection so that 1 + Σ p^i = L); n is the
  longest draft the enabled drafters can propose (``common_speculative_n_max``). Same checks,
  same messages (as ConfigError).
* ``conditional_probs``: the probability of accepting position i once i - 1 were accepted,
  p_i = a_i / a_{i-1} (a_0 = 1; 0 after a rate of 0), as ``common_speculative_init`` stores them.
* ``SynthAcceptance.accept`` is llama-server's ``server_sample_and_accept_synth``
  (tools/server/server-context.cpp): for each draft position the target's sampler samples its
  row (its RNG advances as in a real run), then a uniform draw u from a Mersenne Twister
  seeded with the sampler's seed decides: u < p_i and the drafted token is not an
  end-of-generation token -> the drafted token is kept; otherwise the target's own sample is
  emitted and the round ends. After a fully accepted draft the target samples the bonus
  token from the last row. A replay round (after a checkpoint restore) repeats the decisions:
  every replayed token is kept, with no draw. The draws are exactly llama.cpp's: std::mt19937
  seeded with the seed, std::uniform_real_distribution<double>(0, 1) as libstdc++ computes it
  (two 32-bit outputs, (x0 + x1·2^32) / 2^64).

One difference, stated: llama.cpp accepts a kept drafted token into the sampler chain without
advancing its grammar; SpecScope's chain samples and accepts in one call
(``llama_sampler_sample``), so a grammar or a repetition penalty would see the target's
sample instead of the kept token. Those two are refused with synthetic acceptance
(``check_sampler``); temperature, top-k/p, min-p and logit bias do not depend on what was
accepted and run as in llama.cpp.
"""

from __future__ import annotations

import math
import os
from typing import Sequence

import numpy as np

from specscope.core.errors import ConfigError

LLAMA_DEFAULT_SEED = 0xFFFFFFFF     # llama.cpp: "random seed"
WARNING = ("synthetic acceptance is enabled for benchmarking: draft tokens are accepted at "
           "random, so the generated text is NOT valid output of the target")


def is_synthetic(synth_len: float, synth_rates: Sequence[float]) -> bool:
    """llama.cpp's ``has_synth``: a length other than -1 or any rates."""
    return synth_len != -1.0 or len(synth_rates) > 0


def resolve_rates(synth_len: float, synth_rates: Sequence[float], n_max: int) -> tuple[float, ...]:
    """``common_speculative_synth_rates_resolve``: the unconditional rates a_1..a_n_max (empty
    when synthetic acceptance is off). Bad values raise ConfigError with llama.cpp's message."""
    has_length = synth_len != -1.0
    has_rates = len(synth_rates) > 0
    if not has_length and not has_rates:
        return ()
    if has_length and has_rates:
        raise ConfigError("synthetic acceptance length and rates are mutually exclusive")
    if n_max <= 0:
        raise ConfigError("synthetic acceptance requires at least one speculative token")
    if has_rates:
        rates = tuple(float(r) for r in synth_rates)
        if len(rates) != n_max:
            raise ConfigError(f"synthetic acceptance rates must contain {n_max} values, got {len(rates)}")
        for i, r in enumerate(rates):
            if not math.isfinite(r) or r < 0.0 or r > 1.0:
                raise ConfigError("synthetic acceptance rates must be finite and within [0, 1]")
            if i > 0 and r > rates[i - 1]:
                raise ConfigError("synthetic acceptance rates must be monotonically non-increasing")
        return rates
    length = float(synth_len)
    length_max = n_max + 1.0
    if not math.isfinite(length) or length < 1.0 or length > length_max:
        raise ConfigError(f"synthetic acceptance length must be finite and within [1, {length_max:.0f}]")
    p = 0.0
    if length == length_max:
        p = 1.0
    elif length > 1.0:
        lo, hi = 0.0, 1.0
        for _ in range(32):
            mid = 0.5 * (lo + hi)
            total, term = 0.0, mid
            for _ in range(n_max):
                total += term
                term *= mid
            if total < length - 1.0:
                lo = mid
            else:
                hi = mid
        p = 0.5 * (lo + hi)
    rates, rate = [], p
    for _ in range(n_max):
        rates.append(rate)
        rate *= p
    return tuple(rates)


def conditional_probs(rates: Sequence[float]) -> tuple[float, ...]:
    """p_i = a_i / a_{i-1} (a_0 = 1; 0 after a rate of 0), as ``common_speculative_init``."""
    out, prev = [], 1.0
    for rate in rates:
        out.append(rate / prev if prev > 0.0 else 0.0)
        prev = rate
    return tuple(out)


def mean_length(rates: Sequence[float]) -> float:
    """The mean accepted length the rates imply, the target's token included (1 + Σ a_i)."""
    return 1.0 + sum(rates)


def describe(rates: Sequence[float]) -> str:
    """llama.cpp's info line: n_max, mean length, rates."""
    return (f"synthetic acceptance: n_max = {len(rates)}, mean length = {mean_length(rates):.6f}, "
            f"rates = [{', '.join(f'{r:.6g}' for r in rates)}]")


def check_sampler(sampler) -> None:
    """Refuse the sampler settings whose state depends on what was accepted (module docs)."""
    if sampler.grammar or sampler.repeat_penalty != 1.0:
        raise ConfigError("synthetic acceptance runs without a grammar or a repetition penalty "
                          "here: SpecScope's sampler chain would remember the target's samples "
                          "instead of the kept draft tokens")


class MersenneUniform:
    """std::mt19937 seeded with ``seed`` and std::uniform_real_distribution<double>(0, 1) over
    it, as libstdc++ computes it (generate_canonical<double, 53> from two 32-bit outputs)."""

    def __init__(self, seed: int):
        key, pos = np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1:3]   # init_genrand(seed)
        self._bits = np.random.MT19937()
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}

    def __call__(self) -> float:
        lo, hi = int(self._bits.random_raw()), int(self._bits.random_raw())
        u = (float(lo) + float(hi) * 4294967296.0) / 18446744073709551616.0
        return u if u < 1.0 else math.nextafter(1.0, 0.0)


class SynthAcceptance:
    """One run's synthetic verification (llama-server's ``server_sample_and_accept_synth``)."""

    def __init__(self, probs: Sequence[float], seed: int):
        self.probs = tuple(probs)
        if seed == LLAMA_DEFAULT_SEED:          # llama-server: std::random_device
            seed = int.from_bytes(os.urandom(4), "little")
        self.uniform = MersenneUniform(seed)

    def accept(self, smpl, ctx, is_eog, draft: Sequence[int], replay: bool = False) -> list[int]:
        """The round's kept tokens: the accepted draft prefix, then the target's own token."""
        if len(self.probs) < len(draft):
            raise ConfigError(f"a draft of {len(draft)} tokens is longer than the synthetic "
                              f"rates ({len(self.probs)})")
        ids = []
        for i, drafted in enumerate(draft):
            token = smpl.sample(ctx, i)
            if (replay or self.uniform() < self.probs[i]) and (replay or not is_eog(drafted)):
                ids.append(drafted)
                continue
            ids.append(token)
            return ids
        ids.append(smpl.sample(ctx, len(draft)))
        return ids
