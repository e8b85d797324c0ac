"""Tree headroom: the rank of the target's token among the draft's top-10 (core/measure/stats.py docs).

The fold is checked on plain events; the ranks themselves on real llama.cpp with the shipped
demo pair, against the measured acceptance and against the draft's own logits recomputed
from scratch."""

import math

import numpy as np
import pytest

from specscope.core.models.demo import demo_pair
from specscope.core.engine.drafters.base import Proposal
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.stats import RANK_BINS, fold

PROMPT = "The lighthouse keeper had not spoken to anyone in eleven days when the storm finally broke, and"


# ----------------------------------------------------------------------------- Proposal.ranks
def test_ranks_stop_at_the_first_rejection_and_skip_an_unaccepted_end_of_generation():
    top = ((5, 1, 2), (6, 3, 4), (7, 8, 9))
    p = Proposal("draft-simple", (5, 6, 7), top_ids=top)
    assert p.ranks([5, 6, 7, 11]) == (0, 0, 0)          # all accepted, then the bonus token
    assert p.ranks([5, 4, 0]) == (0, 2)                  # rejected at position 1: its rank, no more
    assert p.ranks([1]) == (1,)
    assert p.ranks([5, 99]) == (0, -1)                   # not among the draft's top
    assert p.ranks([5, 6]) == (0,)                       # 6 was an end of generation: not accepted
    assert Proposal("ngram-simple", (5, 6)).ranks([5, 6, 7]) == ()
    assert p.truncated(2).top_ids == top[:2]


# ----------------------------------------------------------------------------- the fold
def ev(i, drafted, n_acc, ranks, drafter="draft-simple"):
    emitted = tuple(drafted[:n_acc]) + (99,)
    return RoundEvent(i, 10 + i, 1, tuple(drafted), (0.9,) * len(drafted), n_acc, emitted, "spec",
                      drafter=drafter, draft_ranks=tuple(ranks), t_round=0.01)


EVENTS = [ev(0, [5, 6, 7], 3, [0, 0, 0]), ev(1, [5, 6, 7], 0, [1]), ev(2, [5, 6], 1, [0, 3]),
          ev(3, [5, 6, 7, 8], 1, [0, -1]), ev(4, [1, 2], 0, [], drafter="ngram-simple")]


def test_the_fold_counts_ranks_rounds_and_width_estimates():
    s = fold(EVENTS)
    t = s.tree
    assert (t.n_drafted, t.n_accept) == (12, 5)            # draft-simple's rounds only
    assert t.rank_hist == (5, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1) and len(t.rank_hist) == RANK_BINS
    assert t.rounds == ((2, 1, 3, 1), (3, 0, 1, 1), (3, 3, 0, 1), (4, 1, 10, 1))
    assert t.floor(1) == t.acceptance(1) == 5 / 12 == s.drafter("draft-simple").acceptance_rate
    assert t.floor(2) == 6 / 12 and t.floor(4) == 7 / 12 and t.floor(10) == 7 / 12
    assert t.level_rate(2) == 6 / 8 and t.level_rate(4) == 7 / 8
    # over the first m levels of the rounds at least m long (by hand):
    # w=2: m=1 every round gets 1; m=2: 2, 1 + E(1) = 2, 1, 1 -> 1.5
    # w=4: m=2: 2, 2, 1 + 1 + E(0) = 2, 1 -> 1.75
    assert t.continuation(2)[:3] == [0.0, 1.0, 1.5] and t.continuation(4)[:3] == [0.0, 1.0, 1.75]
    # the caught rejections go on: round 1 (w>=2) with 2 levels left, round 2 (w>=4) with none
    assert t.acceptance(2) == (5 + 1 + 1.5) / 12
    assert t.acceptance(4) == (5 + 1 + 1.75 + 1 + 0) / 12
    d = s.to_dict()["tree"]
    assert d["rank_hist"] == list(t.rank_hist) and d["widths"]["2"]["floor"] == 0.5


def test_the_tree_fold_is_incremental():
    for cut in range(len(EVENTS) + 1):
        assert fold(EVENTS[cut:], fold(EVENTS[:cut])) == fold(EVENTS)


# ----------------------------------------------------------------------------- real llama.cpp
@pytest.fixture(scope="module")
def demo():
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings.deterministic(n_ctx=512)) as engine:
        yield engine


def no_eog(engine):
    return tuple((t, -math.inf) for t in range(engine.target.n_vocab) if engine.target.is_eog(t))


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_ranks_agree_with_the_accepted_counts(demo, temperature):
    sampler = SamplerSettings(temperature=temperature, seed=7, logit_bias=no_eog(demo))
    events = list(demo.speculative(PROMPT, SpecSettings(n_max=6), sampler, 160))
    stats = fold(events)
    misses = 0
    for e in events:
        if not e.drafted:
            continue
        rejected = e.n_accepted < len(e.drafted)
        assert len(e.draft_ranks) == e.n_accepted + rejected
        assert e.draft_ranks[:e.n_accepted] == (0,) * e.n_accepted     # accepted: the draft's argmax
        if rejected:
            assert e.draft_ranks[-1] != 0                             # the target took another token
            misses += 1
    assert 0 < stats.n_accept < stats.n_drafted and misses > 0
    tree = stats.tree
    assert tree.acceptance(1) == tree.floor(1) == stats.acceptance_rate     # exactly
    assert tree.rank_hist[0] == stats.n_accept and sum(tree.rank_hist[1:]) == misses
    assert tree.floor(1) <= tree.floor(2) <= tree.floor(4) <= tree.acceptance(4)


def test_a_rejected_rank_is_the_rank_in_the_drafts_own_logits(demo):
    """Recompute the draft's distribution at the first rejected positions from scratch (prefill the
    draft with the accepted history, decode the position) and rank the target's token in it."""
    sampler = SamplerSettings(temperature=0.8, seed=3, logit_bias=no_eog(demo))   # rejects often
    run = demo.speculative(PROMPT, SpecSettings(n_max=6), sampler, 160)
    events = list(run)
    history = list(run.prompt_tokens)
    checked = 0
    for e in events:
        if e.drafted and e.n_accepted < len(e.drafted) and checked < 6:
            pos = e.n_past + e.n_accepted   # the input whose next token the target did not take
            prefix = (history + list(e.emitted[:e.n_accepted]))[:pos + 1]   # positions 0..pos
            assert len(prefix) == pos + 1
            demo.dft.prefill(prefix[:-1], demo.dbatch, "a prefix")
            demo.dbatch.fill(prefix[-1:], pos, logits="all")
            demo.dft.decode(demo.dbatch, "the rejected position")
            logits = demo.dft.logits(1)[0].copy()
            order = np.argsort(-logits, kind="stable")[:10].tolist()
            target_token = e.emitted[e.n_accepted]
            expected = order.index(target_token) if target_token in order else -1
            assert e.draft_ranks[-1] == expected, (e.index, e.draft_ranks, expected)
            checked += 1
        history.extend(e.emitted)
    demo.dft.clear()
    assert checked >= 3
