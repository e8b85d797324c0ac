"""Draft-length policies: how many tokens draft-simple drafts in a round.

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

``cost``: the length with the best calibrated value, planned again at every draft step from the
draft's confidence. When the draft model has proposed its next token with top-10 share p, the
policy knows the chance a_i that the draft so far, this token included, is accepted whole:
a_i = a_(i-1)·g(p), where g(p) is the acceptance this run has shown at that confidence (kept per
fifth of p, conditional on reaching the position: of the drafts that reached a position with
all before it accepted and had that confidence there, the share accepted). For every final
length m from i - 1 (drop this token) to the round's cap it prices the round with the
calibrated model (:func:`specscope.core.measure.cost.model.round_cost`: this machine's c(k), f,
sampling, sync and Python costs), the positions past i at the run's pooled rate, and takes the
m with the best value V·(1 + E) − cost, V being what a token has cost this run so far (its own
rounds priced by the same model, those it dropped at the first token too; the target's token
B before any). A final length whose
verification batch differs in size from the last round's also pays ``Calibration.shape``:
llama.cpp rebuilds the target's graph for a batch of a new size, so a length is changed only
where the change is worth it. So it stops where one more
token would cost more than the tokens it is expected to bring, and drafts on through a run of
confident tokens. The rates are shrunk towards the run's pooled rate with ``PRIOR_WEIGHT``
pseudo-observations, and the pooled rate towards ``PRIOR_RATE`` with as many. A draft that
stopped on a token it proposed has decoded that row in vain, as a p_min stop does.

A dropped token teaches nothing (the target never judges it), so a rate learned from the prior
alone could keep the policy from drafting for good. It therefore drafts a token whose band it
has seen fewer than ``PRIOR_WEIGHT`` times, or any token before the target has judged
``EXPLORE_POSITIONS`` drafted positions of the run, when drafting could pay there: when the
plan with that token, and every token after it, certain to be kept would not drop it. Where
not even that pays (a draft token as dear as the target's), it drops it unseen.

Where not even a draft whose first token has the best confidence seen would make tokens that
cost less each than a skipped round's (the target's token alone; after another skipped round a
token of the target-alone stream), ``next_n`` is 0 and the round drafts nothing (until the target has judged ``EXPLORE_POSITIONS`` drafted
positions, the question is whether a draft kept whole would pay: a pair whose drafts are
dear but almost always kept, such as a model beside its own harder-quantized copy, pays only
at its real rate, far above the prior, and a policy that asked at the prior never drafted
there, so never learned it): the draft model then decodes nothing either, and catches its
cache up in one batch when it drafts again (core/engine/drafters/model.py). Such a round costs
the target's token alone, so a pair whose drafts cannot pay on this machine runs at about the
target's own speed instead of paying the draft's decode every round.

What a run learned carries into the engine's next run with the same sampler (its seed aside
where it is greedy), acceptance rule and vocabulary mode (``Engine.speculative``: ``Learned``, the counts scaled to at most ``MEMORY_POSITIONS``
judged positions): a run starts from the pair's rates instead of the prior, so it does not
spend its first rounds learning them again (on a 64-token run of a pair whose drafts pay
25 %, its first three rounds drafted 1, 3 and 5 tokens where 8 paid), and its own rounds
outweigh them within a few rounds where the text changes. Whether to draft at all is still
asked of a draft kept whole until the run's own drafts have had ``EXPLORE_POSITIONS`` positions
judged, so an earlier run that found no draft paying does not keep a later one from trying.

A policy sees what llama.cpp's drafters see (``Drafter.accept``): the draft model's own
rounds, with the number of its tokens the target kept, and while drafting the share of each
token it proposes. (On a target whose memory needs
checkpoints, llama.cpp tells its drafters nothing in a checkpoint round and, in the replay round
after it, one token more than was kept: the policy hears the same.)
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from specscope.core.errors import ConfigError

POLICIES = ("fixed", "hf", "cost")
POLICY_DESCRIPTIONS = {
    "fixed": "n_max every round (llama.cpp)",
    "hf": "+2 after a fully accepted draft, −1 otherwise (Hugging Face assisted generation)",
    "cost": "at every draft step, the length with the best value for this machine's costs, "
            "the draft's confidence and the run's acceptance at that confidence",
}
HF_STEP_UP = 2
HF_STEP_DOWN = 1
PRIOR_RATE = 0.7        # the cost policy's per-token acceptance before any observation
PRIOR_WEIGHT = 2.0      # pseudo-observations behind each prior
CONFIDENCE_BANDS = (0.2, 0.4, 0.6, 0.8)   # the cost policy keeps acceptance per fifth of p
EXPLORE_POSITIONS = 8   # drafted positions the target judges before the cost policy trusts its rates
MEMORY_POSITIONS = 32   # judged positions a cost policy's rates carry into the engine's next run
TAKE, LAST, DROP = "take", "last", "drop"  # a draft step: keep the token and draft on, keep it
                                           # and stop, stop without it


@dataclass(frozen=True)
class Learned:
    """What a ``cost`` policy learned of the pair's acceptance (its counts: judged positions and
    those kept, pooled and per confidence band), which the engine's next run with the same
    sampler and acceptance rule starts from (module docs)."""
    pool: tuple[float, float]
    reached: tuple[float, ...]
    kept: tuple[float, ...]


def check_policy(name: str) -> None:
    if name not in POLICIES:
        raise ConfigError(f"draft policy must be one of {', '.join(POLICIES)}, not {name!r}")


class FixedLength:
    """llama.cpp: n_max every round."""
    name = "fixed"
    reads_shares = False     # whether step() depends on the draft's shares (a replay needs them)

    def __init__(self, n_max: int):
        self.n_max = n_max

    def next_n(self) -> int:
        """The most tokens the draft model may draft in the next round."""
        return self.n_max

    def step(self, i: int, p: float, cap: int) -> str:
        """The draft model proposed its token i (from 0) with top-10 share ``p``, the round may
        draft ``cap``: TAKE, LAST or DROP it."""
        return TAKE

    def update(self, n_drafted: int, n_accepted: int, probs=()) -> None:
        """A round verified ``n_drafted`` tokens of the draft model's, ``n_accepted`` kept;
        ``probs``: their shares, where the draft's tokens are the target's."""


class HfHeuristic(FixedLength):
    """transformers' +2 / −1 heuristic, started and capped at n_max (module docs)."""
    name = "hf"

    def __init__(self, n_max: int):
        super().__init__(n_max)
        self.n = n_max

    def next_n(self) -> int:
        return self.n

    def update(self, n_drafted: int, n_accepted: int, probs=()) -> None:
        if n_drafted <= 0:
            return
        if n_accepted == n_drafted:
            self.n = min(self.n_max, self.n + HF_STEP_UP)
        else:
            self.n = max(1, self.n - HF_STEP_DOWN)


class BestPredicted(FixedLength):
    """At every draft step, the final length with the best calibrated value (module docs)."""
    name = "cost"
    reads_shares = True

    def __init__(self, n_max: int, calibration, sync: str = "reuse", learned: Learned | None = None):
        super().__init__(n_max)
        if calibration is None:
            raise ConfigError("the cost draft policy needs a calibration of this pair")
        if calibration.k_max < n_max + 1:
            raise ConfigError(f"the calibration covers drafts up to {calibration.k_max - 1} "
                              f"tokens, not n_max = {n_max}: recalibrate")
        self.cal, self.sync = calibration, sync
        bands = len(CONFIDENCE_BANDS) + 1
        self.reached = [0] * bands      # positions reached with all before accepted, per band
        self.kept = [0] * bands         # ... and accepted
        self.pool = [0, 0]              # the same over every position (shares known or not)
        if learned is not None:         # an earlier run's, on the same engine
            self.pool, self.reached, self.kept = list(learned.pool), list(learned.reached), list(learned.kept)
        self.seen = 0                   # positions this run's drafts had judged
        self.spent = [0, 0.0]           # the tokens of the run's drafted rounds, their cost
        self._terms = [self._affine(n) for n in range(1, n_max + 1)]
        self.whole: list[float] = []    # this round: a_1..a_i, the chance the draft so far is kept
        self.dropped = False            # this round stopped on a token it proposed
        self.last_k = n_max + 1         # the last verification batch's size (a change costs shape)
        self._pays: tuple = (None, False)   # (rates and size, whether some draft pays: _draft_pays)
        self._learn()
        self._price()

    def _affine(self, n: int) -> tuple[float, float, float]:
        """round_cost(n, a) is affine in E = Σa_i and in a_n (sampling the kept rows; the reuse
        sync and the draft's graph rebuild after a full acceptance): (cost at a = 0, per unit of
        E before a_n, per unit of a_n). Taken from round_cost itself, so the policy prices a
        round exactly as the calibrated model does, at a few µs per step."""
        cost = self.cal.round_cost
        zero = cost(n, [0.0] * n, self.sync).total
        last = cost(n, [0.0] * (n - 1) + [1.0], self.sync).total - zero
        first = cost(n, [1.0] + [0.0] * (n - 1), self.sync).total - zero if n > 1 else last
        return zero, first, last

    def round_price(self, n: int, expected: float, whole: float, held: bool) -> float:
        """The calibrated cost of a round of n drafted tokens (0: none), E accepted on average,
        all n with probability ``whole``; ``held``: a row decoded in vain after them (under
        reuse it holds the last kept token, as :func:`whatif.draft._round_price` prices it)."""
        cal = self.cal
        held_sync = held and self.sync == "reuse"
        if n == 0:
            return cal.cost(1) + cal.s + cal.r + cal.o0 + (0.0 if held_sync else cal.draft_batch(1)) \
                + held * cal.f
        zero, first, last = self._terms[n - 1]
        return zero + first * (expected - whole) + (first if held_sync else last) * whole + held * cal.f

    def _learn(self) -> None:
        """What step() reads: the pooled rate, the shrunk rate of every band (module docs), and
        their best, where a draft's first token would start."""
        self.pooled = (self.pool[1] + PRIOR_WEIGHT * PRIOR_RATE) / (self.pool[0] + PRIOR_WEIGHT)
        self.rates = [(k + PRIOR_WEIGHT * self.pooled) / (r + PRIOR_WEIGHT)
                      for k, r in zip(self.kept, self.reached)]
        self.best_rate = max(self.rates)

    def _price(self) -> None:
        """V: what a token has cost this run (module docs)."""
        self.per_token = self.spent[1] / self.spent[0] if self.spent[0] else self.cal.baseline_token

    def _plan(self, i: int, kept: float, rate: float, cap: int) -> int:
        """Where the best final length, i (this token dropped) to cap, lies, when the draft so
        far with this token is kept whole with chance ``kept``, each token after it with
        ``rate``: i, i + 1, or a length past i + 1. A step asks no more, so the first length past
        i + 1 that beats both is returned at once, not the best one (which is then past i + 1
        too); run at every draft step, the full search was most of the policy's time."""
        v, e = self.per_token, sum(self.whole)
        before = self.whole[-1] if self.whole else 0.0
        best = v * (1.0 + e) - self.round_price(i, e, before, True) - self._reshape(i)
        choice, a = i, kept
        for m in range(i + 1, cap + 1):
            e += a
            zero, first, last = self._terms[m - 1]
            value = v * (1.0 + e) - zero - first * (e - a) - last * a - self._reshape(m)
            if value > best:
                if m > i + 1:
                    return m
                best, choice = value, m
            a *= rate
        return choice

    def _reshape(self, n: int) -> float:
        """What verifying n drafted tokens costs more because the batch before had another
        size (the target's graph is rebuilt: ``Calibration.shape``)."""
        return self.cal.shape if n + 1 != self.last_k else 0.0

    def next_n(self) -> int:
        """n_max, or 0 where no draft would pay even with its first token at the best
        confidence seen (while ``exploring``: even kept whole; module docs): the round is
        priced as :meth:`_skipped` prices it."""
        self.whole = []
        if self._draft_pays():
            return self.n_max
        self._spend(1, self._skipped())
        self.last_k = 1
        return 0

    def _skipped(self) -> float:
        """A round that drafts nothing: the target's token alone, and under reuse sync the draft
        decodes nothing. After a round that verified one token (skipped, or its first token
        dropped) that is a token of the target-alone stream (B: llama.cpp keeps the graph of a
        single-token decode after another); after a drafted round, a single-token decode after
        another shape (c(1), and the graph's rebuild). Under replay sync the draft cannot wait:
        the round is an empty one, whose kept token the draft decodes (as the what-if prices it)."""
        if self.sync != "reuse":
            return self.round_price(0, 0.0, 0.0, False) + self._reshape(0)
        return self.cal.skipped_round(self.last_k == 1) + self._reshape(0)

    def _draft_pays(self) -> bool:
        """Whether some draft pays where ``next_n`` asks, against S, the price of a skipped round
        (its one token): a length m beats skipping when S·(1 + E_m) > cost_m, i.e. when its
        round's tokens cost less each than the skipped round's, E_m its expected kept tokens
        with the first at the best confidence seen. Tokens per cost, round against round: both
        can be repeated for the rest of the run. Not what a token has cost the run so far (V,
        which ``step`` weighs its tokens by): after rounds whose drafts were kept whole V was
        lower than any round's own price and a draft's value fell below the skip's, so a pair
        whose drafts paid 25 % skipped for rounds on end; after dear rounds V was higher, and
        a run whose drafts were dropped at their first token went on paying that decode.
        Skipping, not a draft dropped at its first token: asked before the draft decodes
        anything, the first decode is not yet spent. It depends on the rates and the last
        batch's size only (S on the size), so it is worked out again only when they change (a
        round that drafts nothing then costs a comparison, not a plan), and stops at the first
        length that pays."""
        first_rate, rate = (1.0, 1.0) if self.exploring else (self.best_rate, self.pooled)
        key = (first_rate, rate, self.last_k)
        if self._pays[0] != key:
            none = self._skipped()
            pays, e, a = False, 0.0, first_rate
            for m in range(1, self.n_max + 1):
                e += a
                zero, first, last = self._terms[m - 1]
                extra = zero + first * (e - a) + last * a + self._reshape(m) - none
                if extra / e < none:      # e > 0: every rate is shrunk towards a prior > 0
                    pays = True
                    break
                a *= rate
            self._pays = (key, pays)
        return self._pays[1]

    @property
    def exploring(self) -> bool:
        """The target has judged too few drafted positions of this run to trust its rates."""
        return self.seen < EXPLORE_POSITIONS

    def learned(self) -> Learned:
        """Its counts so far, scaled down to at most MEMORY_POSITIONS judged positions: the
        next run starts from these rates, and its own rounds soon outweigh them."""
        k = min(1.0, MEMORY_POSITIONS / self.pool[0]) if self.pool[0] else 1.0
        return Learned((self.pool[0] * k, self.pool[1] * k), tuple(r * k for r in self.reached),
                       tuple(x * k for x in self.kept))

    def step(self, i: int, p: float, cap: int) -> str:
        if i == 0:
            self.whole, self.dropped = [], False
        band = bisect_right(CONFIDENCE_BANDS, p)
        before = self.whole[-1] if self.whole else 1.0
        kept = before * self.rates[band]           # the chance all so far and this one are kept
        choice = self._plan(i, kept, self.pooled, cap)
        if choice == i and (self.exploring or self.reached[band] < PRIOR_WEIGHT) \
                and self._plan(i, before, 1.0, cap) > i:
            choice = i + 1      # a run or a band it has hardly seen, where drafting could pay: learn it
        if choice == i:
            self.dropped = True
            if i == 0:          # no draft: update() does not hear of this round, its cost counts
                self._spend(1, self.round_price(0, 0.0, 0.0, True) + self._reshape(0))
            self.last_k = i + 1
            return DROP
        self.whole.append(kept)
        return LAST if choice == i + 1 else TAKE

    def update(self, n_drafted: int, n_accepted: int, probs=()) -> None:
        if n_drafted <= 0:
            return
        self.seen += min(n_drafted, n_accepted + 1)
        for i in range(min(n_drafted, n_accepted + 1)):
            self.pool[0] += 1
            self.pool[1] += i < n_accepted
            if i < len(probs):
                band = bisect_right(CONFIDENCE_BANDS, probs[i])
                self.reached[band] += 1
                self.kept[band] += i < n_accepted
        whole = float(n_accepted == n_drafted)
        n = min(n_drafted, self.n_max)
        self._spend(n_accepted + 1, self.round_price(n, n_accepted, whole, self.dropped) + self._reshape(n))
        self.last_k = n + 1
        self._learn()

    def _spend(self, tokens: int, cost: float) -> None:
        """A round of the run, priced: V follows what a token has cost so far."""
        self.spent[0] += tokens
        self.spent[1] += cost
        self._price()


def make_policy(spec, calibration=None, learned: Learned | None = None) -> FixedLength:
    """The draft-length policy of a run's SpecSettings (``calibration``: for ``cost``, which
    starts from ``learned`` where given)."""
    check_policy(spec.draft_policy)
    if spec.draft_policy == "hf":
        return HfHeuristic(spec.n_max)
    if spec.draft_policy == "cost":
        return BestPredicted(spec.n_max, calibration, spec.sync, learned)
    return FixedLength(spec.n_max)
