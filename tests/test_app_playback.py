"""Playback: the views follow events at a chosen pace; the scrubber asks for any round."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from specscope.app.playback import Playback, PaceControl, Scrubber  # noqa: E402


def collect(pb):
    got = []
    pb.released.connect(lambda evs: got.append(list(evs)))
    return got


def test_fast_pace_passes_events_through_at_once(qtbot):
    pb = Playback()
    got = collect(pb)
    pb.feed([1, 2, 3])
    assert got == [[1, 2, 3]] and pb.backlog == 0


def test_step_pace_releases_one_round_per_step_and_fast_flushes(qtbot):
    pb = Playback()
    got = collect(pb)
    pb.set_pace("step")
    pb.feed([1, 2, 3])
    assert got == [] and pb.backlog == 3
    assert pb.step() and got == [[1]]
    assert pb.step() and got == [[1], [2]]
    pb.set_pace("fast")                      # the backlog goes at once
    assert got == [[1], [2], [3]] and pb.backlog == 0
    assert not pb.step()


def test_rate_pace_releases_evenly_from_a_timer(qtbot):
    pb = Playback()
    got = collect(pb)
    pb.set_pace("rate", 50.0)                # one every 20 ms
    pb.feed(list(range(5)))
    assert got == []                         # nothing before the first tick
    qtbot.waitUntil(lambda: sum(map(len, got)) == 5, timeout=3000)
    assert all(len(batch) == 1 for batch in got)
    assert [b[0] for b in got] == [0, 1, 2, 3, 4]
    pb.set_pace("rate", 1e6)                 # clamped to the control's range
    assert pb.rounds_per_s == 200.0


def test_the_pace_control_drives_the_playback_and_shows_the_backlog(qtbot):
    pb = Playback()
    control = PaceControl(pb)
    qtbot.addWidget(control)
    control.show()
    assert not control.rate.isVisible() and not control.next.isVisible()      # full speed
    control.set_pace("step")
    assert pb.pace == "step" and not control.rate.isVisible() and control.next.isVisible()
    pb.feed([7, 8])
    assert control.waiting.text() == "2 waiting"
    got = collect(pb)
    control.next.click()
    assert got == [[7]] and control.waiting.text() == "1 waiting"
    control.set_pace("rate", 3.0)
    assert pb.pace == "rate" and pb.rounds_per_s == 3.0 and control.rate.isVisible()
    control.set_pace("fast")
    assert got == [[7], [8]] and control.waiting.text() == "" and not control.next.isVisible()


def test_the_scrubber_follows_live_rounds_until_moved(qtbot):
    s = Scrubber()
    qtbot.addWidget(s)
    s.set_live(True)
    s.set_total(3)
    assert s.slider.value() == 3 and s.label.text() == "3 of 3 (live)"
    s.set_total(5)
    assert s.slider.value() == 5                 # at the end: it follows
    with qtbot.waitSignal(s.seek) as got:
        s.slider.setValue(2)
    assert got.args == [2] and s.label.text() == "2 of 5"
    s.set_total(9)
    assert s.slider.value() == 2 and s.label.text() == "2 of 9"   # moved away: it stays
    s.slider.setValue(9)
    s.set_live(False)                  # the run ended: its end is its last round, not live
    assert s.label.text() == "9 of 9"
