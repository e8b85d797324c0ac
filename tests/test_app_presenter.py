"""Presenter mode (app/presenter.py, View ▸ Presenter, F11): full screen, larger type in the
window, the text and the plots, the settings panel hidden; leaving puts everything back."""

from __future__ import annotations

import pyqtgraph as pg
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QApplication  # noqa: E402

from helpers.window import open_window  # noqa: E402


def _tick_size(w) -> float:
    plot = w.findChildren(pg.PlotWidget)[0].getPlotItem()
    font = plot.getAxis("bottom").style.get("tickFont")
    return font.pointSizeF() if font is not None else plot.getAxis("bottom").font().pointSizeF()


def test_presenter_mode_scales_the_type_and_hides_the_panel_then_restores(qtbot, pair, settings):
    w = open_window(qtbot, pair, settings, preload=False)
    app_font = QApplication.font()
    try:
        text, tick = w.token_view.font().pointSizeF(), _tick_size(w)
        picture = w.round_view.diagram.sizeHint()
        w.set_presenter_scale(2.0)
        w.act_presenter.trigger()                         # F11
        assert w.presenter.on and w.isFullScreen() and not w.left_panel_shown()
        # the round picture zooms whole, cells with their type
        assert w.round_view.diagram.sizeHint().height() == pytest.approx(2 * picture.height(), abs=1)
        # shown, its whole height where there is room, else a share of the screen's: the
        # window's minimum stays within the screen (a taller one overlapped its parts); another
        # tab shown, it claims no room (the Plots tab at 1.5x drew the slider over the text)
        from specscope.app.round_view import DIAGRAM_MIN_PX, PRESENTER_SHARE, PRESENTER_WHOLE
        w.tabs.setCurrentWidget(w.plots)
        qtbot.waitUntil(lambda: w.round_view.diagram_scroll.minimumHeight() == DIAGRAM_MIN_PX)
        w.tabs.setCurrentWidget(w.round_view)
        screen = w.screen().availableGeometry().height()
        whole = w.round_view.diagram.sizeHint().height() + \
            w.round_view.diagram_scroll.horizontalScrollBar().sizeHint().height()
        assert w.round_view.diagram_scroll.minimumHeight() == (
            whole if whole <= PRESENTER_WHOLE * screen else int(PRESENTER_SHARE * screen))
        # the title's hover hint and the chat bar's figures line give the pictures their room
        assert "hover" not in w.shown.title.text() and w.chat_bar.compact
        assert w.round_view.diagram_scroll.maximumHeight() >= whole
        assert w.minimumSizeHint().height() <= screen
        assert QApplication.font().pointSizeF() == pytest.approx(app_font.pointSizeF() * 2)
        assert w.token_view.font().pointSizeF() == pytest.approx(text * 2)
        assert _tick_size(w) == pytest.approx(tick * 2, rel=0.01)
        w.set_presenter_scale(1.25)                       # another scale, applied at once
        assert w.token_view.font().pointSizeF() == pytest.approx(text * 1.25)
        assert float(settings.value("view/presenter_scale")) == 1.25
        w.act_presenter.trigger()                         # F11 again
        assert not w.presenter.on and not w.isFullScreen() and w.left_panel_shown()
        assert "hover" in w.shown.title.text() and not w.chat_bar.compact
        assert w.round_view.diagram.sizeHint() == picture
        assert QApplication.font().pointSizeF() == pytest.approx(app_font.pointSizeF())
        assert w.token_view.font().pointSizeF() == pytest.approx(text)
        assert _tick_size(w) == pytest.approx(tick, rel=0.01)
    finally:
        QApplication.setFont(app_font)
        w.close()


def test_presenter_mode_scales_the_legends_and_value_labels_too(qtbot, pair, settings):
    from helpers.window import for_short_runs, run_and_wait
    w = for_short_runs(open_window(qtbot, pair, settings))
    app_font = QApplication.font()
    try:
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        w.tabs.setCurrentWidget(w.plots)
        w.shown.refresh_panels()
        legend = w.plots.speed.legend
        values = [t for t in w.plots.acceptance.labels if t.textItem.toPlainText()]
        star = w.cost_panel._best_label
        before = (float(legend.opts["labelTextSize"].rstrip("pt")), values[0].textItem.font().pointSizeF(),
                  star.textItem.font().pointSizeF(), float(legend.items[0][1].opts["size"].rstrip("pt")))
        w.set_presenter_scale(2.0)
        w.act_presenter.trigger()
        after = (float(legend.opts["labelTextSize"].rstrip("pt")), values[0].textItem.font().pointSizeF(),
                 star.textItem.font().pointSizeF(), float(legend.items[0][1].opts["size"].rstrip("pt")))
        assert after == pytest.approx(tuple(2 * x for x in before), rel=0.02)
        w.act_presenter.trigger()                         # and back
        back = (float(legend.opts["labelTextSize"].rstrip("pt")), values[0].textItem.font().pointSizeF(),
                star.textItem.font().pointSizeF(), float(legend.items[0][1].opts["size"].rstrip("pt")))
        assert back == pytest.approx(before, rel=0.02)
    finally:
        QApplication.setFont(app_font)
        w.close()


def test_presenter_mode_at_1_5x_keeps_every_toolbar_button_on_a_1280_pixel_screen(qtbot, pair, settings):
    """Replay went behind the toolbar's » at 1.5× on a 1280×720 projector; at full speed the
    pace's rate and Next ▸ (which act only at another pace) now leave it their room."""
    from PySide6.QtWidgets import QToolButton
    w = open_window(qtbot, pair, settings, preload=False)
    app_font = QApplication.font()
    try:
        w.set_presenter_scale(1.5)
        w.act_presenter.trigger()
        w.showNormal()                                    # the projector's width, not this screen's
        w.resize(1280, 720)
        qtbot.waitUntil(lambda: w.run_toolbar.width() <= 1280)
        qtbot.wait(50)
        more = w.run_toolbar.findChild(QToolButton, "qt_toolbar_ext_button")
        assert more is None or not more.isVisible()
        assert w.run_toolbar.widgetForAction(w.act_replay).isVisible()
        w.act_presenter.trigger()                         # out again: the picture's zoom too
    finally:
        QApplication.setFont(app_font)
        w.close()
