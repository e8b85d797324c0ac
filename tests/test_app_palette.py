"""The colour-blind safe palette (app/palette.py) and its check (app/colour_check.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from specscope.app import palette  # noqa: E402
from specscope.app.colour_check import CVD, ciede2000, closest_pair, lab  # noqa: E402


def test_ciede2000_gives_sharma_s_reference_differences():
    # Sharma, Wu and Dalal (2005), pairs 1, 7 and 17 of their test data
    assert ciede2000(np.array([50, 2.6772, -79.7751]), np.array([50, 0, -82.7485])) == pytest.approx(2.0425, abs=1e-4)
    assert ciede2000(np.array([50, 0, 0]), np.array([50, -1, 2])) == pytest.approx(2.3669, abs=1e-4)
    assert ciede2000(np.array([50, 2.5, 0]), np.array([73, 25, -18])) == pytest.approx(27.1492, abs=1e-4)


def test_the_simulations_confuse_what_they_should():
    # red and green: far apart seen normally, close with deuteranopia; blue and yellow stay apart
    red, green = "#d64545", "#2e9d4b"
    assert ciede2000(lab(red), lab(green)) > 50
    assert ciede2000(lab(red, "deuteranopia"), lab(green, "deuteranopia")) < 15
    assert min(ciede2000(lab("#0072b2", v), lab("#e69f00", v)) for v in CVD) > 30


@pytest.mark.parametrize("vision", list(CVD))
def test_the_safe_palette_keeps_every_pair_of_token_classes_20_apart(vision):
    safe = palette.PALETTES[palette.SAFE]
    assert closest_pair(palette.token_classes(safe), vision)[0] >= 20
    assert closest_pair(dict(safe.plots), vision)[0] >= 20
    if vision == "deuteranopia":      # the standard palette is the reason for the switch
        assert closest_pair(palette.token_classes(palette.PALETTES[palette.STANDARD]), vision)[0] < 10


def test_switching_recolours_the_tokens_the_drafters_and_the_legend():
    from specscope.app.drafter_style import drafter_colors
    from specscope.app.legend import legend_html
    from specscope.app.token_view import COLORS
    try:
        palette.use(palette.SAFE)
        assert COLORS["accepted"] == ("#0b3954", "#8fd0f7") and COLORS["rejected"][1] is None
        assert drafter_colors("ngram-mod")[:2] == drafter_colors("draft-simple")[:2] == COLORS["accepted"]
        assert palette.plot_colour("accepted") == "#0072b2" and palette.plot_colour("rejected") == "#999999"
        legend = legend_html(("ngram-mod", "draft-simple"))          # one entry for both drafters
        assert legend.count("#8fd0f7") == 1 and "mod or draft" in legend
    finally:
        palette.use(palette.STANDARD)
    assert COLORS["accepted"] == ("#14532d", "#bbf0c6") and drafter_colors("ngram-mod")[1] != COLORS["accepted"][1]


def test_a_switch_after_a_run_recolours_the_text_shown_at_once(qtbot, window):
    """View ▸ Colour-blind safe palette after a run: the text's tokens take the palette's colours
    at once, as the legend does (the view once kept the formats it was made with)."""
    from PySide6.QtGui import QTextCursor
    from helpers.window import run_and_wait

    def backgrounds(kind: str) -> set[str]:
        view = window.shown.token_view
        out = set()
        for span in view.spans:
            if span.kind == kind and span.end > span.start:
                cursor = QTextCursor(view.document())
                cursor.setPosition(span.start + 1)
                out.add(cursor.charFormat().background().color().name())
        return out

    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert backgrounds("accepted") == {"#bbf0c6"} and backgrounds("target") == {"#c9dcff"}
    try:
        window.act_safe_palette.setChecked(True)
        qtbot.waitUntil(lambda: backgrounds("accepted") == {"#8fd0f7"}, timeout=5_000)
        assert backgrounds("target") == {"#f7d46a"}
        assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
        assert backgrounds("accepted") == {"#8fd0f7"}          # a new run's text too
    finally:
        window.act_safe_palette.setChecked(False)
    qtbot.waitUntil(lambda: backgrounds("accepted") == {"#bbf0c6"}, timeout=5_000)


def test_the_step_picture_s_rejected_cell_is_not_black_in_the_safe_palette(qtbot):
    """The safe palette gives a rejected token no background (struck through in orange, as
    the legend shows); the step picture filled its cell with QColor(None): black."""
    from PySide6.QtGui import QColor

    from specscope.app.round_view import RoundExplainer
    from specscope.core.engine.events import RoundEvent
    from test_app_token_view import VOCAB
    palette.use(palette.SAFE)
    try:
        w = RoundExplainer()
        qtbot.addWidget(w)
        w.resize(900, 400)
        w.show()
        ev = RoundEvent(1, 8, 5, (6, 7, 8), (0.5, 0.5, 0.5), 1, (6, 10), "spec")
        w.show_round(ev, VOCAB)
        qtbot.waitUntil(lambda: bool(w.diagram._cells))
        rejected = next(rect for rect, tok in w.diagram._cells if tok == 7)
        image = w.diagram.grab().toImage()
        inside = rejected.adjusted(4, 4, -4, -4).topLeft().toPoint()
        assert QColor(image.pixel(inside)).lightness() > 200      # a light cell, not black
    finally:
        palette.use(palette.STANDARD)


def test_the_guide_and_the_plot_tips_name_the_colours_of_the_palette_in_use():
    """In the safe palette the Guide said "kept (green) or not (pale red)" beside blue and grey
    bars."""
    from specscope.app.guide import guide_html
    from specscope.app.plot_drafts import tips
    assert "kept (green) or not (pale red)" in guide_html() and "(green)" in tips()["acceptance"]
    palette.use(palette.SAFE)
    try:
        text, tip = guide_html(), tips()
        assert "kept (blue) or not (light grey)" in text and "(grey: the first drafted" in text
        assert "green" not in tip["acceptance"] + tip["tree"] and "Grey: the target" in tip["accepted_length"]
    finally:
        palette.use(palette.STANDARD)
