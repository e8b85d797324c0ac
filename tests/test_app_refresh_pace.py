"""A live run's refresh pace (app/shown_run.py): the views take at most their cadence's share of
the UI thread's time, and follow at BUSY_CADENCE where no core is spare, so that on a small or
busy machine the window leaves llama.cpp its cores."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

import specscope.app.shown_run as shown_run  # noqa: E402
from specscope.app.shown_run import (BUSY_CADENCE, CADENCE, REFRESH_PERIOD_MS,  # noqa: E402
                                     SPARE_CORE_MIN, cadence_for, refresh_due)
from specscope.core.measure import cpuload  # noqa: E402

from helpers.window import run_and_wait  # noqa: E402


def test_the_first_refresh_of_a_run_is_due_at_once():
    assert refresh_due(None, 10.0, 1.0)


def test_a_cheap_refresh_keeps_the_timer_s_pace():
    # 1 ms of UI time since the last began, one timer period ago: due
    assert refresh_due((10.0, 1.0), 10.0 + REFRESH_PERIOD_MS / 1e3, 1.001)


@pytest.mark.parametrize("cadence", [CADENCE, BUSY_CADENCE], ids=["spare core", "no spare core"])
def test_a_costly_refresh_waits_its_cost_over_the_share(cadence):
    cost = 0.004                                   # a refresh and its repaint: 4 ms of UI time
    wait = cost / cadence.share                    # 80 ms at 5 %, 200 ms at 2 %
    assert wait < cadence.text_s
    assert not refresh_due((10.0, 1.0), 10.0 + 0.05, 1.0 + cost, cadence)
    assert not refresh_due((10.0, 1.0), 10.0 + wait * 0.9, 1.0 + cost, cadence)
    assert refresh_due((10.0, 1.0), 10.0 + wait * 1.01, 1.0 + cost, cadence)


@pytest.mark.parametrize("cadence", [CADENCE, BUSY_CADENCE], ids=["spare core", "no spare core"])
def test_the_text_never_waits_longer_than_its_cadence(cadence):
    assert not refresh_due((10.0, 1.0), 10.0 + cadence.text_s * 0.9, 1.1, cadence)   # 100 ms of UI time
    assert refresh_due((10.0, 1.0), 10.0 + cadence.text_s, 1.1, cadence)


def test_where_no_core_is_spare_every_view_follows_less_often():
    assert cadence_for(None) is CADENCE                       # no /proc/stat: as before
    assert cadence_for(SPARE_CORE_MIN) is CADENCE
    assert cadence_for(SPARE_CORE_MIN * 0.9) is BUSY_CADENCE
    assert cadence_for(0.0) is BUSY_CADENCE
    for part in ("text_s", "stats_s", "panels_s"):
        assert getattr(BUSY_CADENCE, part) > getattr(CADENCE, part)
    assert BUSY_CADENCE.share < CADENCE.share


def test_spare_cores_are_what_no_process_used_between_two_looks(monkeypatch):
    clock, busy = [100.0], [50.0]
    monkeypatch.setattr(cpuload.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(cpuload, "_busy_seconds", lambda cpus=None: busy[0])
    watch = cpuload.SpareCores()
    clock[0], busy[0] = 102.0, 50.0 + 2.0 * (watch.cores - 0.25)     # 2 s, all but a quarter core busy
    assert watch.look() == pytest.approx(0.25)
    clock[0], busy[0] = 103.0, busy[0] + 0.5                         # the next second: half a core
    assert watch.look() == pytest.approx(watch.cores - 0.5)
    monkeypatch.setattr(cpuload, "_busy_seconds", lambda cpus=None: None)
    assert watch.look() is None


def test_a_live_run_on_a_machine_with_no_spare_core_follows_at_the_busy_cadence(qtbot, window, monkeypatch):
    """The window looks at the cores during a run; where none was spare it refreshes at
    BUSY_CADENCE (and a run on a machine with a core spare goes back to CADENCE)."""
    monkeypatch.setattr(shown_run, "LOOK_PERIOD_S", 0.0)
    monkeypatch.setattr(shown_run, "FIRST_REFRESH_S", 0.0)     # a fast machine's run is short
    cadences = []
    real_due = shown_run.refresh_due

    def due(last, wall, cpu, cadence=CADENCE):
        cadences.append(cadence)
        return real_due(last, wall, cpu, cadence)
    monkeypatch.setattr(shown_run, "refresh_due", due)
    window.params.n_predict.setValue(400)
    wakes = []
    window.shown.wakes_changed.connect(wakes.append)
    batch_periods = []
    real_tick = window.shown.tick

    def tick():
        real_tick()
        if window.controller.busy:
            batch_periods.append((window.worker.batch_period_s, window.shown.timer.interval()))
    window.shown.timer.timeout.disconnect()
    window.shown.timer.timeout.connect(tick)
    # runs long enough for a look at the cores (two, 0.25 s apart at the busy cadence: the
    # second run starts at the first's) and then refreshes at 4 batches a second
    window.params.n_ctx.setValue(2048)
    for spare, expected, n in ((0.1, BUSY_CADENCE, 1500), (1.5, CADENCE, 1500)):
        monkeypatch.setattr(shown_run.SpareCores, "look", lambda self, spare=spare: spare)
        window.params.n_predict.setValue(n)
        cadences.clear()
        batch_periods.clear()
        assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
        assert window.shown.spare_cores == spare and window.shown.cadence is expected
        assert expected in cadences
        # the timer and the engine's batches at the cadence's wake period, while the run went on
        assert (expected.wake_s, round(expected.wake_s * 1000)) in batch_periods
    # the busy run's wake, then back; a timer tick between the runs may already go back to
    # CADENCE, and the second run then starts at the first's cadence until its own look
    assert wakes[0] == BUSY_CADENCE.wake_s and wakes[-1] == CADENCE.wake_s
    assert set(wakes) == {BUSY_CADENCE.wake_s, CADENCE.wake_s}
    qtbot.waitUntil(lambda: window.shown.timer.interval() == REFRESH_PERIOD_MS)
    assert window.worker.batch_period_s == CADENCE.wake_s


def test_a_run_shorter_than_the_first_refresh_s_wait_is_shown_at_its_end(qtbot, window, monkeypatch):
    """A live run's first refresh waits FIRST_REFRESH_S after its first rounds came, so a short
    run (the demo pair's 128 tokens take 70 ms) has no refresh taking a core from it; its end
    shows every round."""
    monkeypatch.setattr(shown_run, "FIRST_REFRESH_S", 3600.0)
    window.params.n_predict.setValue(400)
    before = window.shown.refresh_count
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    shown = window.shown
    assert shown.refresh_count == before
    assert shown.drawn == len(shown.session.run.events) > 0
    prompt = len(shown.session.prompt_tokens)
    assert len(shown.token_view.history) - prompt == shown.stats.n_tokens > 0     # all the text


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


def test_a_live_refresh_does_not_ask_the_window_to_lay_out_again(qtbot):
    """Qt passes a label's new text up as a request to lay out every widget around it, up to
    the window, which then repaints them (during a run: the tab bars, the chat bar, the scroll
    bars, 18 times in a 2,048-token run). The scrubber's count and the stats bar's numbers are
    of fixed size, so a refresh repaints them and asks nothing of the widget that holds them;
    a text wider than the sample widens its label once."""
    from types import SimpleNamespace

    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from specscope.app.playback import Scrubber
    from specscope.app.stats_bar import StatsBar
    holder = QWidget()
    qtbot.addWidget(holder)
    scrubber, bar = Scrubber(), StatsBar()
    lay = QVBoxLayout(holder)
    lay.addWidget(scrubber)
    lay.addWidget(bar)
    holder.resize(1300, 120)
    holder.show()
    qtbot.waitExposed(holder)

    class Requests(QObject):
        n = 0

        def eventFilter(self, obj, event):  # noqa: N802 - Qt override
            self.n += event.type() == QEvent.Type.LayoutRequest
            return False
    requests = Requests()
    holder.installEventFilter(requests)

    def show(n: int, tps: float, speedup=None):
        scrubber.show_at(n, n)
        stats = SimpleNamespace(n_tokens=4 * n, n_rounds=n, n_drafted=3 * n, n_accept=2 * n,
                                acceptance_rate=n / (n + 1), mean_accepted_length=1 + 1 / n,
                                n_draft_rounds=n, tokens_per_s=tps, t_total=1.0,
                                threads=((0, 2, 2),), synthetic=False)
        bar.update_stats(stats, speedup)
        qtbot.wait(5)

    show(1, 9.5, speedup=0.0095)
    requests.n = 0
    for n, tps in ((43, 123.4), (193, 1963.4), (2400, 3456.7)):
        show(n, tps, speedup=tps / 1000)
    assert requests.n == 0
    label, speedup = bar.values["tokens"], bar.values["speedup"]
    width, speedup_width = label.width(), speedup.width()
    bar.update_stats(SimpleNamespace(n_tokens=1234567, n_rounds=654321, n_drafted=0, n_accept=0,
                                     acceptance_rate=0.0, mean_accepted_length=0.0,
                                     n_draft_rounds=0, tokens_per_s=1.0, t_total=1.0,
                                     threads=(), synthetic=False), None)
    qtbot.wait(5)
    assert label.width() > width and speedup.width() > speedup_width    # "– (no baseline yet)"
    for w in (label, speedup):
        assert w.fontMetrics().horizontalAdvance(w.text()) < w.width()
    show(2400, 3456.7, speedup=3.4567)         # back to a number: back to the sample's width
    assert (label.width(), speedup.width()) == (width, speedup_width)
    font = label.font()                      # presenter mode: a larger font, a larger label
    font.setPointSizeF(font.pointSizeF() * 2)
    wide, high = label.width(), label.height()
    label.setFont(font)
    assert label.width() > wide and label.height() > high


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
