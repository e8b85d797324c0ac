"""What a new user hit in ten minutes (issue 31, item 7), each where a test can see it."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from helpers.window import run_and_wait  # noqa: E402


def test_changing_the_target_says_what_happened_to_the_run_shown(qtbot, window, pair, tiny_models):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    assert w.controller.session is not None
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(tiny_models["target"], tiny_models["draft"])
    assert w.controller.session is None
    assert w.banner.isVisible() and "the run shown was cleared" in w.banner.message
    assert "last-session.jsonl" in w.banner.message
    assert not w.stats_bar.values["state"].full.startswith("Recording")


def test_after_opening_a_recording_another_pair_closes_it_and_says_so(qtbot, window, tiny_models, tmp_path):
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    path = tmp_path / "run.jsonl"
    w.controller.session.save(path)
    assert w.files.open_session(path)
    assert w.stats_bar.values["state"].full.startswith("Recording")
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(tiny_models["target"], tiny_models["draft"])
    assert "the recording run.jsonl was closed" in w.banner.message
    assert w.stats_bar.values["state"].full == "Idle"
    assert w.width() <= 1440            # opening it did not widen the window


def test_the_what_if_table_says_when_its_measured_speed_up_rests_on_a_stale_baseline(qtbot, window):
    w = window
    for role in ("target", "draft"):     # pinned: on threads auto a tiny model's baseline (single
        w.pair_panel.threads[role].setValue(1)   # tokens) may rightly run on another count than its
    w.params.drafter.set_types(["draft-simple"])  # run, a stale baseline too (its own test)
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    assert run_and_wait(qtbot, w, w.baseline_clicked) in ("n_predict", "eog")
    s = w.controller.session
    w.tabs.setCurrentWidget(w.whatif)
    qtbot.waitUntil(lambda: w.whatif.session is s, timeout=30_000)
    assert s.speedup is not None and "stale" not in w.whatif._readout()
    base = s.baseline                         # measured ten minutes before the run, say
    base.started_at -= 600
    base.ended_at -= 600
    assert s.baseline_check().stale
    readout = w.whatif._readout()
    assert f"{s.speedup:.2f}× measured" in readout and "⚠ stale baseline" in readout
    # the cost panel, told again, says the baseline is stale, not that there is none
    w.shown.show_measured()
    text = w.cost_panel._values["target"].text()
    assert "its baseline is stale" in text and "no baseline yet" not in text, text


def test_sixty_four_draft_positions_get_a_readable_axis(qtbot, window):
    """ngram-mod drafts up to 64 tokens (ngram-simple 48): the acceptance-by-position and
    histogram axes label a dozen positions at most, the histogram shows its last bar whole."""
    from specscope.app.plot_drafts import count_ticks
    assert [t for _, t in count_ticks(1, 64)] == ["1", "8", "16", "24", "32", "40", "48", "56", "64"]
    assert [t for _, t in count_ticks(1, 3)] == ["1", "2", "3"]
    w = window
    w.params.drafter.set_types(["ngram-simple"])
    w.params.n_predict.setValue(96)
    w.prompt.set_text("def add(a, b):\n    return a + b\n\n" * 6)
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    stats = w.shown.stats
    assert len(stats.position_acceptance) > 16, stats.drafted_at
    plots = w.plots
    for plot in (plots.acceptance, plots.histogram):
        ticks = plot.plot.getAxis("bottom")._tickLevels[0]
        assert len(ticks) <= 13
    hist = plots.histogram
    x_lo, x_hi = hist.plot.viewRange()[0]
    assert x_hi >= len(stats.accepted_hist) - 1 + 0.35     # the last bar's right edge is in view


def test_a_legend_never_covers_the_bars_it_names(qtbot, window):
    """Time per round and Generation speed at 1280×720: a plot too short for its legend and its
    data hides the legend (its tooltip names the parts) instead of drawing it over the bars."""
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    plot = w.plots.time_split
    for height, shown in ((120, False), (420, True)):
        plot.widget.setFixedHeight(height)
        qtbot.wait(30)
        plot.refit(force=True)
        assert plot.legend.isVisible() is shown, height
        # hidden, the parts' colours are named in the x axis's label instead (where they fit)
        label = plot.plot.getAxis("bottom").labelText
        assert ("verify" in label and "overhead" in label) is not shown, (height, label)
        if shown:       # the data's top lies below the legend
            top_px = plot.view.height() * (1 - plot.top / plot.view.viewRange()[1][1])
            assert top_px >= plot.legend.boundingRect().height()
