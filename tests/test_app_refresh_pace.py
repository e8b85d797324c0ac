"""A live run's refresh pace (app/shown_run.py): the views take at most UI_SHARE of the UI
thread's time, so that on a small machine the window leaves llama.cpp its cores."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from specscope.app.shown_run import (REFRESH_MAX_WAIT_S, REFRESH_PERIOD_MS, UI_SHARE,  # noqa: E402
                                     refresh_due)


def test_the_first_refresh_of_a_run_is_due_at_once():
    assert refresh_due(None, 10.0, 1.0)


def test_a_cheap_refresh_keeps_the_timer_s_pace():
    # 1 ms of UI time since the last began, one timer period ago: due
    assert refresh_due((10.0, 1.0), 10.0 + REFRESH_PERIOD_MS / 1e3, 1.001)


def test_a_costly_refresh_waits_its_cost_over_the_share():
    cost = 0.010                                   # a refresh and its repaint: 10 ms of UI time
    wait = cost / UI_SHARE                         # 0.2 s at 5 %
    assert not refresh_due((10.0, 1.0), 10.0 + 0.05, 1.0 + cost)
    assert not refresh_due((10.0, 1.0), 10.0 + wait * 0.9, 1.0 + cost)
    assert refresh_due((10.0, 1.0), 10.0 + wait * 1.01, 1.0 + cost)


def test_the_text_never_waits_longer_than_a_quarter_second():
    assert not refresh_due((10.0, 1.0), 10.0 + REFRESH_MAX_WAIT_S * 0.9, 1.1)     # 100 ms of UI time
    assert refresh_due((10.0, 1.0), 10.0 + REFRESH_MAX_WAIT_S, 1.1)
