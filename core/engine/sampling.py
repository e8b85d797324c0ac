"""The target's sampler chain: greedy, or temperature with top-k / top-p / min-p.

The same chain verifies drafts in a speculative run and samples every token
of a target-only baseline, so both produce the target's distribution.
The order follows llama.cpp's common sampler: grammar, logit bias,
penalties, top-k, top-p, min-p, temperature, dist.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import llama_cpp.llama_cpp as ll

from specscope.core.errors import ConfigError
from specscope.core.models.llama import Model
from specscope.core.models.sampler_chain import SamplerChain


@dataclass(frozen=True)
class SamplerSettings:
    temperature: float = 0.0      # <= 0: greedy
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    seed: int = 42
    repeat_penalty: float = 1.0   # 1.0: off
    repeat_last_n: int = 64
    grammar: str = ""             # GBNF, root rule "root"; "" = none
    logit_bias: tuple[tuple[int, float], ...] = field(default=())

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    def validate(self) -> None:
        if self.top_k < 0:
            raise ConfigError(f"top-k must be >= 0 (0 = off), not {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"top-p must be in (0, 1], not {self.top_p}")
        if not 0.0 <= self.min_p < 1.0:
            raise ConfigError(f"min-p must be in [0, 1), not {self.min_p}")
        if self.repeat_penalty <= 0:
            raise ConfigError(f"the repetition penalty must be > 0, not {self.repeat_penalty}")

    def describe(self) -> str:
        if self.greedy:
            return "greedy"
        return (f"temp {self.temperature:g}, top-k {self.top_k}, top-p {self.top_p:g}, "
                f"min-p {self.min_p:g}, seed {self.seed}")


def build_chain(model: Model, s: SamplerSettings) -> SamplerChain:
    s.validate()
    samplers = []
    if s.grammar:
        samplers.append(ll.llama_sampler_init_grammar(model.vocab, s.grammar.encode(), b"root"))
    if s.logit_bias:
        arr = (ll.llama_logit_bias * len(s.logit_bias))()
        for i, (tok, bias) in enumerate(s.logit_bias):
            arr[i].token = tok
            arr[i].bias = bias
        samplers.append(ll.llama_sampler_init_logit_bias(model.n_vocab, len(s.logit_bias), arr))
    if s.repeat_penalty != 1.0:
        samplers.append(ll.llama_sampler_init_penalties(model.n_vocab, s.repeat_last_n, s.repeat_penalty, 0.0, 0.0))
    if s.greedy:
        samplers.append(ll.llama_sampler_init_greedy())
    else:
        if s.top_k > 0:
            samplers.append(ll.llama_sampler_init_top_k(s.top_k))
        samplers.append(ll.llama_sampler_init_top_p(s.top_p, 1))
        samplers.append(ll.llama_sampler_init_min_p(s.min_p, 1))
        samplers.append(ll.llama_sampler_init_temp(s.temperature))
        samplers.append(ll.llama_sampler_init_dist(s.seed & 0xFFFFFFFF))
    return SamplerChain.build(samplers, argmax=s.greedy and len(samplers) == 1)
