"""PlotsPanel: the four live plots hold what the events say, incrementally, and export."""

from __future__ import annotations

import random
import xml.dom.minidom

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore, QtGui, QtSvg  # noqa: E402

from specscope.app.plot_rounds import SPLIT_PARTS, TIME_SPLIT_ROUNDS  # noqa: E402
from specscope.app.plots import PlotsPanel  # noqa: E402
from specscope.core.engine.events import RoundEvent  # noqa: E402
from specscope.core.measure.stats import fold  # noqa: E402


def spec_round(index: int, n_drafted: int, n_accepted: int, *, t_draft=0.004, t_verify=0.030,
               t_sync=0.001, t_overhead=0.002) -> RoundEvent:
    drafted = tuple(range(100, 100 + n_drafted))
    emitted = drafted[:n_accepted] + (7,)
    return RoundEvent(index, 10 + index, 1, drafted, (0.5,) * n_drafted, n_accepted, emitted,
                      "spec" if drafted else "plain", t_draft=t_draft, t_verify=t_verify,
                      t_sync=t_sync, t_round=t_draft + t_verify + t_sync + t_overhead)


def random_run(n_rounds: int, n_max: int = 4, alpha: float = 0.7, seed: int = 0) -> list[RoundEvent]:
    rng = random.Random(seed)
    events = []
    for i in range(n_rounds):
        n = n_max if rng.random() > 0.1 else rng.randrange(0, n_max)  # some short or no drafts
        acc = 0
        while acc < n and rng.random() < alpha:
            acc += 1
        events.append(spec_round(i, n, acc, t_draft=0.002 * n * rng.uniform(0.8, 1.2),
                                 t_verify=0.03 * rng.uniform(0.9, 1.1),
                                 t_sync=0.0005 * rng.random(), t_overhead=0.001 * rng.random()))
    return events


class CountingList(list):
    """A list that remembers which items were read (to check the panel reads only new events)."""

    def __init__(self, *a):
        super().__init__(*a)
        self.read: set[int] = set()

    def __getitem__(self, key):
        if isinstance(key, slice):
            self.read.update(range(*key.indices(len(self))))
        else:
            self.read.add(key if key >= 0 else len(self) + key)
        return super().__getitem__(key)


@pytest.fixture
def panel(qtbot):
    p = PlotsPanel()
    qtbot.addWidget(p)
    p.resize(900, 600)
    return p


def test_plot_names_are_the_five_titles(panel):
    assert panel.plot_names() == ["Acceptance by draft position", "Accepted per round",
                                  "Generation speed", "Time per round", "Tree headroom"]
    for name in panel.plot_names():
        assert panel.plot_widget(name).getPlotItem().titleLabel.text == name


def test_bars_hold_position_acceptance_and_counts(panel):
    # 4 rounds drafting 3: accepted 3, 1, 0, 2 -> position 1: 3/4, position 2: 2/4, position 3: 1/4
    events = [spec_round(0, 3, 3), spec_round(1, 3, 1), spec_round(2, 3, 0), spec_round(3, 3, 2)]
    stats = fold(events)
    panel.update_stats(stats, events)
    shown = panel.shown()
    np.testing.assert_allclose(shown["acceptance"]["x"], [1, 2, 3])
    np.testing.assert_allclose(shown["acceptance"]["height"], [0.75, 0.5, 0.25])
    np.testing.assert_allclose(shown["acceptance"]["height"], stats.position_acceptance)
    assert shown["acceptance"]["labels"] == ["3/4", "2/4", "1/4"]
    # each count over its bar (they sat at (0, 0), out of view, and were never drawn)
    placed = [(t.pos().x(), t.pos().y()) for t in panel.acceptance.labels if t.isVisible()]
    assert [x for x, _ in placed] == [1.0, 2.0, 3.0] and all(y >= 0.98 for _, y in placed)
    # histogram: one round each accepted 0, 1, 2 and 3 drafted tokens
    np.testing.assert_allclose(shown["accepted_length"]["x"], [0, 1, 2, 3])
    np.testing.assert_allclose(shown["accepted_length"]["height"], [1, 1, 1, 1])
    assert shown["accepted_length"]["labels"][0].startswith("1 (25%)")


def test_histogram_counts_match_the_fold(panel):
    events = random_run(300, n_max=5, alpha=0.6, seed=3)
    stats = fold(events)
    panel.update_stats(stats, events)
    shown = panel.shown()
    np.testing.assert_allclose(shown["accepted_length"]["height"], stats.accepted_hist)
    np.testing.assert_allclose(shown["acceptance"]["height"], stats.position_acceptance)
    assert shown["acceptance"]["labels"] == [f"{a}/{d}" for a, d in zip(stats.accepted_at, stats.drafted_at)]


def test_time_split_stacks_the_latest_rounds(panel):
    events = random_run(TIME_SPLIT_ROUNDS + 57, seed=1)
    panel.update_stats(fold(events), events)
    split = panel.shown()["time_split"]
    latest = events[-TIME_SPLIT_ROUNDS:]
    for part in SPLIT_PARTS:
        np.testing.assert_allclose(split[part]["x"], [e.index + 1 for e in latest])
    np.testing.assert_allclose(split["draft"]["height"], [e.t_draft * 1e3 for e in latest])
    np.testing.assert_allclose(split["verify"]["height"], [e.t_verify * 1e3 for e in latest])
    # stacked: each part starts where the one below ends, and the stack is the round's time
    np.testing.assert_allclose(split["verify"]["y0"], split["draft"]["height"])
    top = split["overhead"]["y0"] + split["overhead"]["height"]
    np.testing.assert_allclose(top, [e.t_round * 1e3 for e in latest])


def test_speed_is_rolling_tokens_per_second(panel):
    # every round: 2 tokens in 0.1 s -> 20 tokens/s throughout
    events = [spec_round(i, 2, 1, t_draft=0.02, t_verify=0.07, t_sync=0.0, t_overhead=0.01)
              for i in range(100)]
    stats = fold(events)
    panel.update_stats(stats, events)
    speed = panel.shown()["speed"]
    np.testing.assert_allclose(speed["x"], np.arange(1, 101) * 0.1)
    np.testing.assert_allclose(speed["y"], 20.0)
    assert speed["mean"] == pytest.approx(stats.tokens_per_s)


def test_only_new_events_are_read_and_chunks_add_up(panel, qtbot):
    events = random_run(250, seed=2)
    whole = PlotsPanel()
    qtbot.addWidget(whole)
    whole.update_stats(fold(events), events)

    feed = CountingList()
    for start in range(0, 250, 40):
        feed.read.clear()
        new = events[start:start + 40]
        feed.extend(new)
        panel.update_stats(fold(feed), feed)
        assert feed.read <= set(range(start - 1, start + len(new)))  # the new ones (+ the last seen)
    a, b = panel.shown(), whole.shown()
    np.testing.assert_allclose(a["speed"]["x"], b["speed"]["x"])
    np.testing.assert_allclose(a["speed"]["y"], b["speed"]["y"])
    for part in SPLIT_PARTS:
        np.testing.assert_allclose(a["time_split"][part]["height"], b["time_split"][part]["height"])

    # the same call again reads nothing new
    feed.read.clear()
    panel.update_stats(fold(feed), feed)
    assert feed.read <= {len(feed) - 1}


def test_another_runs_events_start_over(panel):
    first = random_run(120, seed=4)
    panel.update_stats(fold(first), first)
    second = random_run(30, seed=5)
    panel.update_stats(fold(second), second)
    assert len(panel.shown()["speed"]["x"]) == 30
    np.testing.assert_allclose(panel.shown()["time_split"]["draft"]["x"], range(1, 31))      # rounds counted from 1


def test_clear_empties_every_plot(panel):
    events = random_run(50)
    panel.update_stats(fold(events), events)
    panel.clear()
    shown = panel.shown()
    assert len(shown["acceptance"]["height"]) == 0
    assert shown["acceptance"]["labels"] == []
    assert len(shown["accepted_length"]["height"]) == 0
    assert len(shown["speed"]["x"]) == 0
    assert all(len(shown["time_split"][p]["height"]) == 0 for p in SPLIT_PARTS)
    # and it fills again from the start
    panel.update_stats(fold(events[:10]), events[:10])
    assert len(panel.shown()["speed"]["x"]) == 10


def test_empty_run_is_fine(panel):
    panel.update_stats(fold([]), [])
    assert len(panel.shown()["speed"]["x"]) == 0


@pytest.mark.parametrize("name", ["Acceptance by draft position", "Accepted per round",
                                  "Generation speed", "Time per round"])
def test_export_png_and_svg(panel, qtbot, tmp_path, name):
    panel.show()
    qtbot.waitExposed(panel)
    events = random_run(80)
    panel.update_stats(fold(events), events)
    png = panel.export(name, tmp_path / "plot.png")
    svg = panel.export(name, tmp_path / "plot.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 1000
    assert svg.stat().st_size > 1000
    doc = xml.dom.minidom.parse(str(svg))
    assert doc.documentElement.tagName == "svg"
    # the SVG draws what the PNG shows (not, say, bars rescaled past the axes)
    png_image = QtGui.QImage(str(png))
    assert np.abs(_gray(png_image) - _gray(_render(svg, png_image.size()))).mean() < 2.5


def _render(svg, size) -> QtGui.QImage:
    image = QtGui.QImage(size, QtGui.QImage.Format.Format_ARGB32)
    image.fill(QtGui.QColor("white"))
    painter = QtGui.QPainter(image)
    QtSvg.QSvgRenderer(str(svg)).render(painter)
    painter.end()
    return image


def _gray(image: QtGui.QImage) -> np.ndarray:
    """A 90×60 grey-level thumbnail as floats."""
    small = image.convertToFormat(QtGui.QImage.Format.Format_Grayscale8).scaled(
        90, 60, QtCore.Qt.AspectRatioMode.IgnoreAspectRatio,
        QtCore.Qt.TransformationMode.SmoothTransformation)
    rows = np.frombuffer(small.constBits(), np.uint8, small.bytesPerLine() * small.height())
    return rows.reshape(small.height(), small.bytesPerLine())[:, :small.width()].astype(float)


def test_export_refuses_unknown_names_and_extensions(panel, tmp_path):
    with pytest.raises(ValueError, match=".png or .svg"):
        panel.export("Generation speed", tmp_path / "plot.jpg")
    with pytest.raises(KeyError, match="no plot named"):
        panel.export("Nope", tmp_path / "plot.png")
    assert panel.export("speed", tmp_path / "by-key.png").exists()  # keys work too


def test_count_labels_turn_upright_when_bars_are_narrow(panel, qtbot):
    panel.show()
    qtbot.waitExposed(panel)
    few = random_run(60, n_max=4, seed=6)
    panel.update_stats(fold(few), few)
    visible = [t for t in panel.acceptance.labels if t.isVisible()]
    assert len(visible) == 4 and all(t.angle == 0 for t in visible)
    panel.clear()
    many = random_run(3000, n_max=16, alpha=0.9, seed=7)
    panel.update_stats(fold(many), many)
    visible = [t for t in panel.acceptance.labels if t.isVisible()]
    assert len(visible) == 16 and all(t.angle == 90 for t in visible)


def test_a_long_note_wraps_inside_a_narrow_plot(panel, qtbot):
    """The running note ("Run in progress: the plots update every 1 s ...") is wider than a
    draft plot on a 1280x720 screen: it wraps to the plot's width instead of being cut at
    both ends."""
    from specscope.app.shown_run import PLOTS_NOTE
    panel.resize(700, 500)
    panel.show()
    qtbot.waitExposed(panel)
    panel.clear(running_note=PLOTS_NOTE)
    for plot in (panel.acceptance, panel.histogram):
        qtbot.waitUntil(lambda plot=plot: plot.view.width() > 1)
        view = plot.view.width()
        note = plot.note.textItem
        assert note.toPlainText() == PLOTS_NOTE
        assert note.boundingRect().width() <= view
        assert note.boundingRect().height() > 1.5 * QtGui.QFontMetrics(note.font()).lineSpacing()
        assert QtGui.QFontMetrics(note.font()).horizontalAdvance(PLOTS_NOTE) > view   # it had to


def test_notes_while_there_is_no_draft(panel):
    assert panel.acceptance.note.isVisible() and panel.acceptance.note.toPlainText() == "No run yet"
    baseline = [RoundEvent(i, 10 + i, 1, (), (), 0, (5,), "baseline", t_verify=0.01, t_round=0.01)
                for i in range(20)]
    panel.update_stats(fold(baseline), baseline)
    assert panel.histogram.note.toPlainText() == "A target-only run drafts nothing"
    assert len(panel.shown()["speed"]["x"]) == 20   # the time series still show the run
    panel.clear()
    events = random_run(20)
    panel.update_stats(fold(events), events)
    assert not panel.acceptance.note.isVisible() and not panel.histogram.note.isVisible()


def test_the_counterfactual_is_a_labelled_dashed_curve_until_a_run_without_one(panel):
    from dataclasses import replace
    events = [replace(ev, counterfactual=(0.8, 0.5, 0.5, 0.5)[:len(ev.drafted)],
                      counterfactual_rule="ratio") for ev in random_run(40)]
    stats = fold(events)
    panel.update_stats(stats, events)
    shown = panel.shown()["counterfactual"]
    assert shown["label"].startswith("ratio rule") and np.allclose(
        shown["y"], stats.counterfactual_acceptance)
    assert np.allclose(stats.counterfactual_acceptance[:2], (0.8, 0.4))
    greedy = random_run(10, seed=1)
    panel.update_stats(fold(greedy), greedy)
    assert panel.shown()["counterfactual"]["label"] == ""
def test_tree_headroom_shows_the_rank_histogram_and_the_width_numbers(panel):
    def ranked(index, drafted, accepted, ranks):
        ev = spec_round(index, drafted, accepted)
        from dataclasses import replace
        return replace(ev, drafter="draft-simple", draft_ranks=ranks)
    events = [ranked(0, 3, 3, (0, 0, 0)), ranked(1, 3, 1, (0, 1)), ranked(2, 3, 0, (-1,))]
    stats = fold(events)
    panel.update_stats(stats, events)
    tree = panel.shown()["tree"]
    np.testing.assert_allclose(tree["height"], [4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    assert "w=1</b>: 44%" in tree["numbers"]                    # 4 accepted of 9 drafted
    assert f"w=2</b>: {5 / 9:.0%} measured" in tree["numbers"]
    panel.clear()
    assert panel.shown()["tree"]["numbers"] == "" and not panel.shown()["tree"]["height"].any()


def test_a_run_that_starts_after_another_leaves_the_plots_where_they_are(panel, qtbot):
    """A new run clears the plots before its first rounds: the drafter table and the tree's
    numbers keep their room, so the plots are not laid out (and repainted) again at every run's
    start and end (each pyqtgraph relayout repaints every plot, several ms on the UI thread)."""
    from dataclasses import replace
    events = [replace(spec_round(i, 3, i % 4), drafter="draft-simple", draft_ranks=(0, 1))
              for i in range(6)]
    panel.show()
    panel.update_stats(fold(events), events)
    qtbot.waitUntil(panel.drafter_table.isVisible)
    qtbot.wait(20)
    sizes = {name: panel.plot_widget(name).size() for name in panel.plot_names()}
    assert panel.shown()["tree"]["numbers"]
    panel.clear(running_note="Run in progress")                  # the next run starts
    qtbot.wait(20)
    assert not panel.drafter_table.isVisible() and panel.shown()["tree"]["numbers"] == ""
    assert {name: panel.plot_widget(name).size() for name in panel.plot_names()} == sizes
    panel.update_stats(fold(events[:2]), events[:2])  # its first rounds
    qtbot.wait(20)
    assert panel.drafter_table.isVisible()
    assert {name: panel.plot_widget(name).size() for name in panel.plot_names()} == sizes


def test_clear_gives_the_speed_and_time_plots_empty_axes_and_the_next_run_its_own(panel, qtbot):
    """After Reset the speed and time plots showed the last run's axes (2,000 tokens/s over
    0.07 s) around no data; the next run's data sets them again."""
    events = random_run(300, seed=3)
    panel.update_stats(fold(events), events)
    for plot in (panel.speed, panel.time_split):
        (x0, x1), (_, y1) = plot.view.viewRange()
        assert x1 > 50 or plot is panel.speed and y1 > 10
    panel.clear()
    assert panel.speed.view.viewRange() == [[0.0, 1.0], [0.0, 1.0]]
    assert panel.time_split.view.viewRange() == [[0.4, 10.6], [0.0, 1.0]]
    short = random_run(5, seed=4)
    panel.update_stats(fold(short), short)
    panel.show()                                    # x follows the data when the plots paint
    qtbot.waitUntil(lambda: panel.time_split.view.viewRange()[0][1] < 10)
    (_, x1), (_, y1) = panel.time_split.view.viewRange()
    assert x1 < 10 and y1 > 1.0                    # five rounds of 30-odd ms each
    (_, x1), (_, y1) = panel.speed.view.viewRange()
    assert x1 < 1.0 and y1 > 10                     # 0.2 s of tokens at some 100 tokens/s


def test_a_narrow_plots_title_is_elided_to_the_room_right_of_its_y_axis(qtbot):
    """The title starts over the plot, right of the y axis, and Qt cuts it at the widget's edge:
    the What-if tab's "Acceptance by position" at 1280×720 read "Acceptance by positic"."""
    from specscope.app.plot_base import styled_plot
    w = styled_plot("Acceptance by position", "Share kept", "Draft position")
    qtbot.addWidget(w)
    w.resize(220, 180)
    w.show()
    qtbot.waitExposed(w)
    item = w.getPlotItem()
    qtbot.waitUntil(lambda: item.titleLabel.text.endswith("…"))
    label = item.titleLabel.item
    margin = label.document().documentMargin()
    right = label.mapToScene(label.boundingRect().topRight()).x() - margin
    assert right <= w.width()                                   # drawn whole, not cut
    w.resize(480, 180)
    qtbot.waitUntil(lambda: item.titleLabel.text == "Acceptance by position")
