"""Break-even draft costs from a target's calibration (core/measure/cost/break_even.py)."""

import re
from dataclasses import replace

import pytest

from specscope.core.measure.cost.break_even import (DraftPoint, alpha_needed, break_even, curves, draft_point,
                                                    point_speed, required_f, summary, verdict, with_draft)
from specscope.core.measure.cost.model import Calibration, calibrated_speedup


def target(c=(1.0, 1.05, 1.1, 1.2, 1.3, 1.45, 1.6, 1.75, 1.9), **kw):
    return Calibration(k_max=len(c), n_past=64, t1=1e-3, c_raw=c, c=c, f=0.0, f_batch=(),
                       k_draft=0, **kw)


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("speedup", [1.0, 1.5])
def test_required_f_reaches_the_speedup_exactly(n, speedup):
    cal = target(s=0.02, r=0.01, o0=0.05, o1=0.01)
    f = required_f(cal, 0.8, speedup, n)
    assert f is not None and f > 0
    assert calibrated_speedup(with_draft(cal, f), n, alpha=0.8) == pytest.approx(speedup)
    assert calibrated_speedup(with_draft(cal, f * 1.1), n, alpha=0.8) < speedup


def test_no_draft_wins_when_verification_alone_is_too_dear():
    flat = target(c=(1.0, 2.0, 3.0, 4.0, 5.0))      # compute-bound: a k-token batch costs k
    assert required_f(flat, 0.5, 1.0, 2) is None
    line = break_even(flat, 0.5, 1.0)
    assert (line.f, line.n) == (None, None)
    assert "no draft beats the target alone" in verdict(flat, DraftPoint("d.gguf", 0.1, 0.5))


def test_break_even_takes_the_best_draft_length_and_grows_with_acceptance():
    cal = target()
    line = break_even(cal, 0.9, 1.0)
    assert line.f == max(required_f(cal, 0.9, 1.0, n) or 0 for n in range(1, cal.k_max))
    assert line.n == max(range(1, cal.k_max), key=lambda n: required_f(cal, 0.9, 1.0, n) or 0)
    one, half = curves(cal)[1.0], curves(cal)[1.5]
    fs = [b.f or 0.0 for b in one]
    assert fs == sorted(fs) and fs[-1] > fs[0]
    assert all((h.f or 0.0) <= (o.f or 0.0) for h, o in zip(half, one))


def test_a_draft_is_placed_by_its_cost_and_fitted_acceptance():
    cal = target()
    pair = Calibration(**{**cal.__dict__, "f": 0.05, "f_batch": (0.05,) * cal.k_max, "k_draft": -1})
    point = draft_point("draft.gguf", pair, drafted_at=[100, 100, 100], n_accept=80 + 64 + 51)
    assert point.f == 0.05 and 0.75 < point.alpha < 0.85
    assert "under the break-even" in verdict(cal, point)
    dear = DraftPoint("dear.gguf", 0.9, point.alpha)
    assert "above the break-even" in verdict(cal, dear)


def test_a_measurement_on_the_other_side_of_one_says_how_far_the_model_was_off():
    cal = target()
    placed_under = DraftPoint("d.gguf", 0.05, 0.8, speedup=1.12)
    assert verdict(cal, replace(placed_under, measured=1.05)).endswith("; it measured 1.05×")
    wrong = verdict(cal, replace(placed_under, measured=0.90))
    assert "under the break-even" in wrong and "yet it measured 0.90×" in wrong
    assert "predicted 1.12× (+24%)" in wrong
    assert "yet" not in verdict(cal, replace(placed_under, measured=0.97))   # within DISAGREE of 1.0×
    placed_over = DraftPoint("dear.gguf", 0.9, 0.8, speedup=0.7, measured=1.1)
    assert "yet it measured 1.10×" in verdict(cal, placed_over)
    assert point_speed(placed_under) == ", predicted 1.12×"
    assert point_speed(replace(placed_under, measured=0.9)) == ", measured 0.90× (predicted 1.12×)"


def test_alpha_needed_is_where_the_break_even_reaches_the_drafts_cost():
    cal = target(s=0.02, r=0.01, o0=0.05, o1=0.01)
    alpha = alpha_needed(cal, 0.1)
    assert break_even(cal, alpha, 1.0).f == pytest.approx(0.1, rel=1e-4)
    assert break_even(cal, alpha - 0.01, 1.0).f < 0.1
    assert alpha_needed(cal, 0.1, 1.5) > alpha
    assert alpha_needed(cal, 100.0) is None                 # dearer than any acceptance pays for


def test_the_summary_gives_both_curves_at_four_acceptances():
    flat = target(c=(1.0, 2.0, 3.0, 4.0, 5.0))
    text = summary(target())
    assert text.startswith("a draft must cost ≤ ") and " at α = 0.6/0.7/0.8/0.9" in text
    one, half = re.findall(r"≤ ([-\d./]+) \((1\.0|1\.5)×\)", text)
    for values, s in (one, half):
        fs = [break_even(target(), a, float(s)).f for a in (0.6, 0.7, 0.8, 0.9)]
        assert values.split("/") == [f"{f:.2f}" if f is not None else "-" for f in fs]
    assert "≤ -/-/-/- (1.0×)" in summary(flat, (0.3, 0.35, 0.4, 0.45))
