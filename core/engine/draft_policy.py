"""Draft-length policies: how many tokens draft-simple may draft in the next round.

``fixed`` (the default, llama.cpp's): ``n_max`` every round; p_min, n_min and the round's
budget apply as always.

``hf``: Hugging Face assisted generation's heuristic (transformers
``AssistedCandidateGenerator.update_candidate_strategy``, schedule "heuristic"): the draft
length goes up by 2 after a round whose every drafted token was accepted, down by 1 (to at
least 1) otherwise. transformers starts ``num_assistant_tokens`` at 20 and does not cap it;
here it starts at ``n_max`` and is capped at ``n_max``, so that it moves in the same range
1..n_max as the other policies (and a benchmark compares like with like). "Every drafted token"
is the draft actually verified, as current transformers counts it (``num_matches ==
len(candidates)``; older versions compared with the budget, so a draft cut short by p_min
counted as a miss). A round in which the draft model proposed nothing (p_min, another drafter
of the chain won) leaves it as it is.

``cost``: each round, the n in 1..n_max with the best predicted speed-up of the calibrated
model (:func:`specscope.core.measure.cost_model.round_cost`: this machine's c(k), f, sampling, sync and
Python costs) for the acceptance this run has shown so far. The acceptance is kept per draft
position as a *conditional* rate q_i (of the drafts that reached position i with all before it
accepted, the share accepted at i), so drafts of any length inform it; the unconditional
a_i = q_1·…·q_i is what the model takes. Before there are observations the rates come from a
prior: every position is shrunk towards the run's pooled rate with ``PRIOR_WEIGHT``
pseudo-observations, and the pooled rate towards ``PRIOR_RATE`` with as many (so the first
round drafts for α ≈ 0.7, and a position never reached yet takes the pooled rate).

A policy sees what llama.cpp's drafters see (``Drafter.accept``): the draft model's own
rounds, with the number of its tokens the target kept. (On a target whose memory needs
checkpoints, llama.cpp tells its drafters nothing in a checkpoint round and, in the replay round
after it, one token more than was kept: the policy hears the same.)
"""

from __future__ import annotations

from specscope.core.errors import ConfigError

POLICIES = ("fixed", "hf", "cost")
POLICY_DESCRIPTIONS = {
    "fixed": "n_max every round (llama.cpp)",
    "hf": "+2 after a fully accepted draft, −1 otherwise (Hugging Face assisted generation)",
    "cost": "the n with the best predicted speed-up for this machine's costs and the run's "
            "acceptance so far",
}
HF_STEP_UP = 2
HF_STEP_DOWN = 1
PRIOR_RATE = 0.7        # the cost policy's per-token acceptance before any observation
PRIOR_WEIGHT = 2.0      # pseudo-observations behind each prior


def check_policy(name: str) -> None:
    if name not in POLICIES:
        raise ConfigError(f"draft policy must be one of {', '.join(POLICIES)}, not {name!r}")


class FixedLength:
    """llama.cpp: n_max every round."""
    name = "fixed"

    def __init__(self, n_max: int):
        self.n_max = n_max

    def next_n(self) -> int:
        """The most tokens the draft model may draft in the next round."""
        return self.n_max

    def update(self, n_drafted: int, n_accepted: int) -> None:
        """A round verified ``n_drafted`` tokens of the draft model's, ``n_accepted`` kept."""


class HfHeuristic(FixedLength):
    """transformers' +2 / −1 heuristic, started and capped at n_max (module docs)."""
    name = "hf"

    def __init__(self, n_max: int):
        super().__init__(n_max)
        self.n = n_max

    def next_n(self) -> int:
        return self.n

    def update(self, n_drafted: int, n_accepted: int) -> None:
        if n_drafted <= 0:
            return
        if n_accepted == n_drafted:
            self.n = min(self.n_max, self.n + HF_STEP_UP)
        else:
            self.n = max(1, self.n - HF_STEP_DOWN)


class BestPredicted(FixedLength):
    """The n in 1..n_max with the best calibrated speed-up for the acceptance seen so far."""
    name = "cost"

    def __init__(self, n_max: int, calibration, sync: str = "reuse"):
        super().__init__(n_max)
        if calibration is None:
            raise ConfigError("the cost draft policy needs a calibration of this pair")
        if calibration.k_max < n_max + 1:
            raise ConfigError(f"the calibration covers drafts up to {calibration.k_max - 1} "
                              f"tokens, not n_max = {n_max}: recalibrate")
        self.cal, self.sync = calibration, sync
        self.reached = [0] * n_max      # drafts that reached position i with all before accepted
        self.kept = [0] * n_max         # ... and had position i accepted
        self._terms = [self._affine(n) for n in range(1, n_max + 1)]
        self.n = self._choose()

    def _affine(self, n: int) -> tuple[float, float, float, float]:
        """round_cost(n, a) is affine in E = Σa_i and in a_n (sampling the kept rows; the reuse
        sync and the draft's graph rebuild after a full acceptance): (cost at a = 0, per unit of
        E before a_n, per unit of a_n, B). Taken from round_cost itself, so the policy prices a
        round exactly as the calibrated model does, at a few µs per round instead of a call per n."""
        cost = self.cal.round_cost
        zero = cost(n, [0.0] * n, self.sync)
        last = cost(n, [0.0] * (n - 1) + [1.0], self.sync).total - zero.total
        first = cost(n, [1.0] + [0.0] * (n - 1), self.sync).total - zero.total if n > 1 else last
        return zero.total, first, last, zero.baseline

    def next_n(self) -> int:
        return self.n

    def update(self, n_drafted: int, n_accepted: int) -> None:
        if n_drafted <= 0:
            return
        for i in range(min(n_drafted, n_accepted + 1, self.n_max)):
            self.reached[i] += 1
            self.kept[i] += i < n_accepted
        self.n = self._choose()

    def rates(self) -> list[float]:
        """The conditional acceptance q_i per position, shrunk towards the pooled rate."""
        pooled = (sum(self.kept) + PRIOR_WEIGHT * PRIOR_RATE) / (sum(self.reached) + PRIOR_WEIGHT)
        return [(k + PRIOR_WEIGHT * pooled) / (r + PRIOR_WEIGHT)
                for k, r in zip(self.kept, self.reached)]

    def predicted(self) -> list[float]:
        """The calibrated speed-up S(n) = (1 + E)·B / C(n) for n = 1..n_max with the current
        rates (a_i = q_1·…·q_i; :func:`specscope.core.measure.cost_model.round_cost`)."""
        out, expected, a = [], 0.0, 1.0
        for q, (zero, first, last, base) in zip(self.rates(), self._terms):
            a *= q
            expected += a
            out.append((1.0 + expected) * base / (zero + first * (expected - a) + last * a))
        return out

    def _choose(self) -> int:
        if self.n_max < 1:
            return 0
        s = self.predicted()
        return max(range(len(s)), key=lambda i: (s[i], -i)) + 1


def make_policy(spec, calibration=None) -> FixedLength:
    """The draft-length policy of a run's SpecSettings (``calibration``: for ``cost``)."""
    check_policy(spec.draft_policy)
    if spec.draft_policy == "hf":
        return HfHeuristic(spec.n_max)
    if spec.draft_policy == "cost":
        return BestPredicted(spec.n_max, calibration, spec.sync)
    return FixedLength(spec.n_max)
