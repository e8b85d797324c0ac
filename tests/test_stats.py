"""The stats fold on plain events (no llama.cpp)."""

import pytest

from specscope.core.engine.events import RoundEvent
from specscope.core.measure.stats import Stats, fold


def ev(i, drafted, n_acc, mode="spec", t=0.01):
    emitted = tuple(drafted[:n_acc]) + (99,)
    return RoundEvent(i, 10 + i, 1, tuple(drafted), (0.9,) * len(drafted), n_acc, emitted, mode,
                      t_draft=t / 4, t_verify=t / 2, t_sync=t / 8, t_round=t)


EVENTS = [ev(0, [5, 6, 7], 3), ev(1, [5, 6, 7], 0), ev(2, [5, 6], 1), ev(3, [], 0, "plain"),
          RoundEvent(4, 20, 1, (), (), 0, (7,), "replay", replayed=(5, 6), t_round=0.01)]


def test_counts_positions_histogram_and_rates():
    s = fold(EVENTS)
    assert (s.n_rounds, s.n_tokens, s.n_draft_rounds) == (5, 4 + 1 + 2 + 1 + 1, 3)
    assert (s.n_drafted, s.n_accept) == (8, 4)
    assert s.drafted_at == (3, 3, 2) and s.accepted_at == (2, 1, 1)
    assert s.position_acceptance == pytest.approx((2 / 3, 1 / 3, 1 / 2))
    assert s.accepted_hist == (1, 1, 0, 1)
    assert s.acceptance_rate == 0.5
    assert s.mean_accepted_length == pytest.approx(1 + 4 / 3)
    assert s.t_total == pytest.approx(0.05)
    assert s.tokens_per_s == pytest.approx(9 / 0.05)
    assert s.t_overhead == pytest.approx(4 * 0.01 / 8 + 0.01)


def test_incremental_fold_equals_the_whole_fold():
    for cut in range(len(EVENTS) + 1):
        assert fold(EVENTS[cut:], fold(EVENTS[:cut])) == fold(EVENTS)


def test_empty():
    s = fold([])
    assert s == Stats() and s.acceptance_rate == 0 and s.tokens_per_s == 0
    assert s.mean_accepted_length == 1.0
