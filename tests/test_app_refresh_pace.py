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


def test_growing_counts_do_not_re_lay_out_the_scrubber_or_the_stats_bar(qtbot):
    """A live refresh changes the scrubber's count and the stats bar's numbers; a label that
    widened with them would re-lay out its row and repaint the widgets around it at every
    refresh (seen: the scrubber at 43, 193 rounds, tokens/s at 1963.4)."""
    from types import SimpleNamespace

    from specscope.app.playback import Scrubber
    from specscope.app.stats_bar import StatsBar
    scrubber, bar = Scrubber(), StatsBar()
    for w in (scrubber, bar):
        qtbot.addWidget(w)
        w.resize(1200, 40)
        w.show()
    qtbot.waitExposed(bar)

    def widths():
        return ([scrubber.label.width()] +
                [bar.values[k].width() for k in ("tokens", "n_drafted", "n_accept", "tps")])

    def show(n: int, tps: float):
        scrubber.show_at(n, n)
        stats = SimpleNamespace(n_tokens=4 * n, n_rounds=n, n_drafted=3 * n, n_accept=2 * n,
                                acceptance_rate=2 / 3, mean_accepted_length=3.0, n_draft_rounds=n,
                                tokens_per_s=tps, t_total=1.0, threads=((0, 1, 1),), synthetic=False)
        bar.update_stats(stats, None)
        qtbot.wait(1)

    show(1, 9.5)
    first = widths()
    for n, tps in ((43, 123.4), (193, 1963.4), (2400, 3456.7)):
        show(n, tps)
        assert widths() == first, (n, tps)


@pytest.mark.parametrize("n_cores", [2, 16, 128])
def test_the_threads_field_holds_this_machine_s_widest_counts(qtbot, monkeypatch, n_cores):
    """On a machine with more cores, auto's counts have more digits ("16+16→15+15"): the
    field is as wide as they are from the start, so a change of count neither widens it nor
    re-lays out the bar."""
    from types import SimpleNamespace

    import specscope.app.stats_bar as stats_bar
    monkeypatch.setattr(stats_bar, "cores", lambda: n_cores)
    bar = stats_bar.StatsBar()
    qtbot.addWidget(bar)
    bar.resize(1300, 40)
    bar.show()
    qtbot.waitExposed(bar)
    label = bar.values["threads"]
    first = label.width()
    widest = ((0, n_cores, n_cores), (7, n_cores - 1 or 1, n_cores - 1 or 1))
    stats = SimpleNamespace(n_tokens=8, n_rounds=2, n_drafted=6, n_accept=4, acceptance_rate=2 / 3,
                            mean_accepted_length=3.0, n_draft_rounds=2, tokens_per_s=99.0,
                            t_total=1.0, threads=widest, synthetic=False)
    bar.update_stats(stats, None)
    qtbot.wait(1)
    assert label.text() == f"{n_cores}+{n_cores}→{n_cores - 1 or 1}+{n_cores - 1 or 1}"
    assert label.width() == first
    assert label.fontMetrics().horizontalAdvance(label.text()) <= label.width()
