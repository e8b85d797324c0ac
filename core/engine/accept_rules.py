"""Two acceptance rules, and the acceptance the other one would have had.

``match`` is llama.cpp's rule (common/sampling.cpp, :func:`sample_and_accept`): the draft model
drafts greedily; the user's sampler chain samples each verified row and a drafted token is
kept while the sample equals it; the target's own sample is emitted at the first mismatch.

``ratio`` is speculative sampling (Leviathan et al. 2023; Chen et al. 2023). The draft model
samples each drafted token d_i from its own distribution q_i: the user's sampler settings
(logit bias, top-k, top-p, min-p, temperature; ``draft_distribution``) on the draft's logits,
drawn with a generator seeded from the sampler seed. The target keeps d_i with probability
min(1, p_i(d_i) / q_i(d_i)), where p_i is the distribution the user's sampler chain draws
from at row i (``TargetDistribution``: the chain itself, all but its final sampler); at the
first rejection it draws from normalize(max(0, p_i - q_i)) and the round ends; when every
drafted token is kept, the bonus token is drawn from p at the next row. Each emitted token is
then ``llama_sampler_accept``-ed into the user's chain, so grammar and repetition penalties
see the output as with ``match``. The output is distributed as the target alone would sample
it, whatever q is, as long as d_i is drawn from q_i: grammar and penalties, which depend on
the target's history, shape p only, and q needs no bit-exact copy of llama.cpp's samplers.

  * n-gram drafters have no distribution: their draft is a deterministic function of the
    history, i.e. q is one-hot at d. The ratio rule then keeps d with probability p(d) and
    otherwise draws from p without d, renormalized: in distribution, exactly ``match`` (which
    is the ratio rule for a deterministic draft, the greedy draft model's included).
  * greedy (temperature 0): p is one-hot at the target's argmax and the draft is greedy
    (q one-hot at its argmax), so d is kept iff it is the target's argmax and a rejection
    emits that argmax: exactly the target's greedy output, as with ``match``.

The counterfactual (``RoundEvent.counterfactual``, at temperature > 0 only): for each drafted
position i of a verified draft, the probability that *the other rule* keeps position i given
this round's context, i.e. the target's rows as verified here (the prefix d_<i drafted this
round) and the sampler state with d_<i accepted:

  * in a ``match`` run, ratio's expected acceptance sum_x min(p_i(x), q_i(x)) (= 1 - the total
    variation distance between p_i and q_i): the chance that a token drawn from the draft's
    q_i at the user's settings is kept by the ratio test, averaged over that draw, not the
    ratio test applied to the greedy token that was drafted. For an n-gram draft (q one-hot)
    it is p_i(d_i);
  * in a ``ratio`` run, match's acceptance p_i(g_i), where g_i is the token llama.cpp's
    greedy draft would have proposed in that context (the draft's argmax at that row; for an
    n-gram draft, d_i itself): the chance that the target's sampler draws it.

``stats.fold`` multiplies these along the draft (position k gets the product over i <= k) and
averages over the drafts that reached k, next to the measured share. Limits: exact at
position 1 for the round's context; past it, the other rule would have drafted other tokens
(ratio samples, match takes the argmax), so the product follows *this* run's prefix, not the
one the other rule would have drafted, and treats the positions as independent; the
history before the round (and so which rounds happen at all) is this run's; the draft lengths
(n_max, p_min, budgets) are this run's. It is an expectation, not a sampled outcome: over many
rounds its average is what the other rule would have measured on these contexts. Those
contexts are where this run's rounds began, and where rounds begin depends on the rule (a
rejection ends a round): on the demo pair at temperature 0.3 a ratio run's round starts were
easier for *both* rules than a match run's, so a rule's counterfactual can differ from the
other rule's own measured acceptance by several points while agreeing, within sampling
noise, with what that rule's expectation gives on the same contexts. Compare the two rules
within a run (same contexts), not one run's measurement with another's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.engine.synth import SynthAcceptance
from specscope.core.models.candidates import Candidates
from specscope.core.models.quick import quick

ACCEPT_RULES = ("match", "ratio")


def _draw(weights: np.ndarray, u: float) -> int:
    """Index drawn from unnormalised ``weights`` with the uniform number ``u`` in [0, 1)."""
    c = np.cumsum(weights)
    return min(int(np.searchsorted(c, u * c[-1], side="right")), len(weights) - 1)


def _prob(ids: np.ndarray, probs: np.ndarray, token: int) -> float:
    return float(probs[ids == token].sum())


def _overlap(p, q) -> tuple[np.ndarray, np.ndarray]:
    """Indices into p's and q's arrays of the tokens both hold."""
    _, ip, iq = np.intersect1d(p[0], q[0], assume_unique=True, return_indices=True)
    return ip, iq


def residual(p, q) -> np.ndarray:
    """max(0, p - q) over p's tokens (unnormalised): what a rejection draws from. Tokens
    outside p's support have p = 0 and so no residual."""
    ip, iq = _overlap(p, q)
    rest = p[1].copy()
    rest[ip] = np.maximum(rest[ip] - q[1][iq], 0.0)
    return rest if rest.sum() > 0.0 else p[1]   # p == q up to rounding: no rejection happens


class TargetDistribution:
    """p: what the user's sampler chain draws from at a row of the target's logits. As
    ``llama_sampler_sample`` does, the row becomes an (id, logit) array in id order; every
    sampler of the chain but the last (grammar, logit bias, penalties, top-k, top-p, min-p,
    temperature: ``sampling.build_chain``) is applied to it, in the chain's current state,
    which the call does not change. What is left is then what the last sampler sees: ``dist``
    takes its softmax, ``greedy`` its first maximum (all the mass)."""

    def __init__(self, n_vocab: int, greedy: bool):
        self._candidates = Candidates(n_vocab)
        self.greedy = greedy

    def __call__(self, chain, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = self._candidates
        c.fill(logits)
        for i in range(ll.llama_sampler_chain_n(chain.ptr) - 1):
            c.apply(quick.llama_sampler_chain_get(chain.ptr, i))
        left = c.left()
        ids, x = left["id"].copy(), left["logit"].astype(np.float64)
        if self.greedy:
            return ids[[int(x.argmax())]], np.ones(1)
        p = np.exp(x - x.max())
        return ids, p / p.sum()


def draft_distribution(logits: np.ndarray, s) -> tuple[np.ndarray, np.ndarray]:
    """q: the user's sampler settings (``sampling.SamplerSettings``) on the draft's logits, in
    llama.cpp's order: logit bias, top-k, top-p, min-p (on the probabilities before
    temperature), temperature. Grammar and repetition penalties are left out (they follow the
    target's history); any q keeps the ratio rule exact. (token ids, probabilities)."""
    x = logits.astype(np.float64)
    for token, bias in s.logit_bias:
        x[token] += bias
    if s.greedy:
        return np.array([int(x.argmax())]), np.ones(1)
    ids = np.argpartition(x, -s.top_k)[-s.top_k:] if 0 < s.top_k < len(x) else np.arange(len(x))
    ids = ids[np.argsort(-x[ids], kind="stable")]
    z = x[ids]
    p = np.exp(z - z[0])
    p /= p.sum()
    n = min(int(np.searchsorted(np.cumsum(p), s.top_p)) + 1, len(p)) if s.top_p < 1.0 else len(p)
    if s.min_p > 0.0:
        n = min(n, int((p[:n] >= s.min_p * p[0]).sum()))
    q = np.exp((z[:n] - z[0]) / s.temperature)
    return ids[:n], q / q.sum()


@dataclass(frozen=True)
class DraftDist:
    """The draft model's q at one drafted position, and its greedy token there."""
    ids: np.ndarray
    probs: np.ndarray
    greedy: int


class DraftSampler:
    """Given to the draft model (``DraftModel.q``) when the run needs its q: under ``ratio`` it
    drafts a sample of q; under ``match`` it keeps drafting the greedy token and only records
    q, for the counterfactual."""

    def __init__(self, settings, sample: bool):
        self.settings, self.sample = settings, sample
        self.rng = np.random.default_rng((settings.seed & 0xFFFFFFFF, 1))
        self.drawn: list[DraftDist] = []
        self.t_observe = 0.0    # seconds spent on q only to observe it (match: the counterfactual)

    def draw(self, logits: np.ndarray, best: int) -> int:
        t = time.perf_counter()
        ids, q = draft_distribution(logits, self.settings)
        token = int(ids[_draw(q, self.rng.random())]) if self.sample else best
        self.drawn.append(DraftDist(ids, q, best))
        if not self.sample:
            self.t_observe += time.perf_counter() - t
        return token

    def take(self) -> tuple[DraftDist, ...]:
        """The q of each token drawn since the last take (one draft's)."""
        drawn, self.drawn = tuple(self.drawn), []
        return drawn


def sample_and_accept(smpl, ctx, is_eog, draft: list[int]) -> list[int]:
    """llama.cpp's rule (``common_sampler_sample_and_accept_n``, common/sampling.cpp): sample row by
    row and keep while the target samples the drafted token; always emit its own. No drafted
    token is kept after an end of generation (it would stay in the context): a drafted EOG the
    target samples too ends the verification there, unless it ends the draft."""
    ids = []
    for i, drafted in enumerate(draft):
        token = smpl.sample(ctx, i)
        ids.append(token)
        if token != drafted or (is_eog(token) and i + 1 < len(draft)):
            return ids
    ids.append(smpl.sample(ctx, len(draft)))
    return ids


@dataclass(frozen=True)
class Verdict:
    """What an acceptance rule decided in one round: ``ids``, the kept drafted tokens then the
    target's own; at temperature, the other rule's chance to keep each drafted position."""
    ids: list[int]
    counterfactual: tuple[float, ...] = ()
    counterfactual_rule: str = ""


class SyntheticRule:
    """Synthetic acceptance (core/engine/synth.py, benchmark only) as a run's acceptance rule."""
    q = None

    def __init__(self, engine, spec, sampler):
        self.ctx, self.is_eog = engine.tgt, engine.target.is_eog
        self.synth = SynthAcceptance(spec.synth_probs(), sampler.seed)

    def verify(self, smpl, draft: list[int], proposal, replay: tuple[int, ...]) -> Verdict:
        return Verdict(self.synth.accept(smpl, self.ctx, self.is_eog, draft, bool(replay)))

    def take_observe_time(self) -> tuple[float, float]:
        return 0.0, 0.0


def make_rule(engine, spec, sampler):
    """A run's acceptance rule: one ``verify(smpl, draft, proposal, replay) -> Verdict``
    per round. ``rule.q``, when not None, is what the draft model draws its tokens with."""
    return SyntheticRule(engine, spec, sampler) if spec.synthetic else Verifier(engine, spec, sampler)


class Verifier:
    """The ``match`` and ``ratio`` rules, and the other rule's expected acceptance at temperature
    (the module docs)."""

    def __init__(self, engine, spec, sampler):
        s = sampler
        self.engine, self.sampler, self.rule = engine, sampler, spec.accept_rule
        self.counterfactual = not s.greedy
        self.rng = np.random.default_rng((s.seed & 0xFFFFFFFF, 2))
        self.p = TargetDistribution(engine.tgt.n_vocab, s.greedy)
        self.t_observe = 0.0        # this round's seconds spent only on the counterfactual
        # the draft model's q (where it drafts): ratio samples its tokens from q, a match run
        # at temperature records q for the counterfactual
        self.q = DraftSampler(s, sample=self.rule == "ratio") \
            if self.counterfactual and spec.uses_draft_model else None

    def take_observe_time(self) -> tuple[float, float]:
        """(draft, verify) seconds this round spent only on observing the other rule (a match
        run's counterfactual: q on the draft, p on the target), which the round's timings leave
        out so that observing does not slow the speeds it reports; 0 under the ratio rule, whose
        p and q are the rule's own cost."""
        t_draft = 0.0
        if self.q is not None:
            t_draft, self.q.t_observe = self.q.t_observe, 0.0
        t_verify, self.t_observe = self.t_observe, 0.0
        return t_draft, t_verify

    def verify(self, smpl, draft: list[int], proposal, replay: tuple[int, ...]) -> Verdict:
        """The round's tokens (kept drafted tokens, then the target's own) and, at temperature,
        the other rule's expected acceptance of the draft."""
        dists = proposal.dists if proposal is not None and draft else ()
        e = self.engine
        if self.rule == "match" and not (self.counterfactual and draft and not replay):
            return Verdict(sample_and_accept(smpl, e.tgt, e.target.is_eog, draft))
        t = time.perf_counter()
        logits = e.tgt.logits(len(draft) + 1)
        ps = self._p_rows(smpl, draft, logits) if draft and not replay else []
        other = ()
        if self.counterfactual and ps:
            other = self._other(ps, draft, dists)
        other_rule = ("ratio" if self.rule == "match" else "match") if other else ""
        if self.rule == "match":
            self.t_observe += time.perf_counter() - t
            return Verdict(sample_and_accept(smpl, e.tgt, e.target.is_eog, draft), other, other_rule)
        return Verdict(self._ratio(smpl, draft, dists, ps, logits, forced=bool(replay)), other,
                       other_rule)

    def _p_rows(self, smpl, draft, logits) -> list:
        """p at each drafted row, the chain (a clone) having accepted the drafted tokens before."""
        with smpl.clone() as clone:
            ps = []
            for i, token in enumerate(draft):
                ps.append(self.p(clone, logits[i]))
                clone.accept(token)
            return ps

    def _other(self, ps, draft, dists) -> tuple[float, ...]:
        """The other rule's chance to keep each drafted position (module docs)."""
        out = []
        for i, (p, token) in enumerate(zip(ps, draft)):
            if self.rule == "ratio":
                out.append(_prob(*p, dists[i].greedy if dists else token))
            elif dists:
                q = (dists[i].ids, dists[i].probs)
                ip, iq = _overlap(p, q)
                out.append(float(np.minimum(p[1][ip], q[1][iq]).sum()))
            else:
                out.append(_prob(*p, token))
        return tuple(out)

    def _ratio(self, smpl, draft, dists, ps, logits, forced: bool) -> list[int]:
        is_eog = self.engine.target.is_eog
        ids: list[int] = []
        for i, token in enumerate(draft):
            if not forced:           # a replay round re-emits tokens a checkpoint round decided
                p = ps[i]
                q = (dists[i].ids, dists[i].probs) if dists else (np.array([token]), np.ones(1))
                if self.rng.random() * _prob(*q, token) >= _prob(*p, token):    # rejected
                    token = int(p[0][_draw(residual(p, q), self.rng.random())])
                    smpl.accept(token)
                    ids.append(token)
                    return ids
            smpl.accept(token)
            ids.append(token)
            if is_eog(token) and i + 1 < len(draft) and not forced:
                return ids
        p = self.p(smpl, logits[len(draft)])
        token = int(p[0][_draw(p[1], self.rng.random())])
        smpl.accept(token)
        ids.append(token)
        return ids
