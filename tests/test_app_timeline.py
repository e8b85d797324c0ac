"""The draft/verify timeline: each round's phases on one time axis, linked to the token view."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QPoint, QPointF  # noqa: E402
from PySide6.QtGui import QHelpEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from specscope.app.timeline_view import LANES, TimelineView, phase_spans  # noqa: E402
from specscope.app.token_view import TokenView  # noqa: E402
from specscope.core.engine.events import RoundEvent  # noqa: E402

from test_app_token_view import ROUNDS, VOCAB  # noqa: E402


def timed(i, t_draft, t_verify, t_sync, t_round):
    return RoundEvent(i, 10 + i, 1, (5,), (0.5,), 1, (5, 6), "spec", t_draft=t_draft,
                      t_verify=t_verify, t_sync=t_sync, t_round=t_round)


EVENTS = [timed(0, 0.002, 0.010, 0.001, 0.015), timed(1, 0.001, 0.020, 0.0005, 0.022),
          timed(2, 0.0, 0.005, 0.0, 0.004)]      # a round whose parts exceed its wall time


def test_phases_follow_each_other_inside_their_round():
    s = phase_spans(EVENTS)
    assert np.allclose(s["start"], [0.0, 0.015, 0.037])
    assert np.allclose(s["draft_x0"], s["start"])
    assert np.allclose(s["verify_x0"], s["start"] + [0.002, 0.001, 0.0])
    assert np.allclose(s["sync_x0"], s["verify_x0"] + [0.010, 0.020, 0.005])
    assert np.allclose(s["overhead_w"], [0.002, 0.0005, 0.0])      # never negative
    assert np.allclose(s["end"], [0.015, 0.037, 0.041])


@pytest.fixture
def timeline(qtbot):
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 300)
    view.show()
    view.update_events(EVENTS)
    return view


def test_the_bars_hold_each_phase_in_milliseconds(timeline):
    for i, lane in enumerate(LANES):
        opts = timeline.bars[lane].opts
        assert np.allclose(opts["x0"], 1e3 * timeline.spans[lane + "_x0"])
        assert np.allclose(opts["width"], 1e3 * timeline.spans[lane + "_w"])
        assert set(np.asarray(opts["y"]).tolist()) == {len(LANES) - 1 - i}
    assert "3 rounds in 41.0 ms" in timeline.summary.text()
    assert "verify 35.0 ms (85%)" in timeline.summary.text()


def test_clicking_a_bar_selects_its_round(qtbot, timeline):
    vb = timeline.plot.getPlotItem().getViewBox()
    assert timeline.round_at(20.0) == 1 and timeline.round_at(41.5) is None
    scene = vb.mapViewToScene(QPointF(1e3 * (0.015 + 0.001 + 0.010), 2.0))   # round 1's verify

    class Click:
        def scenePos(self):
            return scene
    with qtbot.waitSignal(timeline.round_clicked) as got:
        timeline._clicked(Click())
    assert got.args == [1] and timeline.selected == 1
    lo, hi = timeline.selected_shade.getRegion()
    assert (lo, hi) == pytest.approx((15.0, 37.0))
    timeline.highlight_round(2)
    assert timeline.shade.isVisible() and timeline.shade.getRegion() == pytest.approx((37.0, 41.0))
    timeline.highlight_round(None)
    assert not timeline.shade.isVisible()


def test_the_token_view_selects_a_round_and_reports_the_hovered_one(qtbot):
    view = TokenView()
    qtbot.addWidget(view)
    view.resize(600, 300)
    view.show()
    view.begin("ab", VOCAB)
    view.append_events(ROUNDS)
    assert view.select_round(1)
    spans = [s for s in view.spans if s.round == 1]
    cursor = view.textCursor()
    assert (cursor.selectionStart(), cursor.selectionEnd()) == (spans[0].start, spans[-1].end)
    assert not view.select_round(42)
    target = spans[-1]
    c = view.textCursor()
    c.setPosition(target.start)
    rect = view.cursorRect(c)
    point = QPoint(rect.x() + 2, rect.center().y())
    with qtbot.waitSignal(view.round_hovered) as got:
        QApplication.sendEvent(view.viewport(), QHelpEvent(QEvent.Type.ToolTip, point,
                                                           view.viewport().mapToGlobal(point)))
    assert got.args == [1]
    with qtbot.waitSignal(view.round_hovered) as got:
        QApplication.sendEvent(view.viewport(), QEvent(QEvent.Type.Leave))
    assert got.args == [-1]


def test_hovering_a_round_names_its_verification_batch(qtbot):
    """A tree round verifies one wide batch (the seed and every node): the hover says so."""
    from dataclasses import replace
    from specscope.core.engine.events import TreeShape
    tree = TreeShape(((5, 7), (6,)), ((0.5, 0.4), (0.3,)), 0, 3, 0)
    events = [EVENTS[0], replace(EVENTS[1], shape=tree)]
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 300)
    view.show()
    view.update_events(events)
    assert "mean 4.0 tokens" in view.summary.text()
    vb = view.plot.getPlotItem().getViewBox()
    for i, words in ((0, "a batch of 2 tokens: the seed and 1 drafted"),
                     (1, "a batch of 4 tokens: the seed and a tree of 3 in 2 branches (branch 0 kept)")):
        mid = (view.spans["start"][i] + view.spans["end"][i]) / 2 * 1e3
        view._hovered(vb.mapViewToScene(QPointF(mid, 2.0)))
        assert f"Round {i + 1}:" in view.plot.toolTip() and words in view.plot.toolTip()
