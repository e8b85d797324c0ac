"""Presenter mode (View ▸ Presenter, F11): for a lecture hall's projector. The window goes full
screen, the settings panel on the left is hidden (the toolbar's Run, Step, Pace and Next stay at
hand), and the type is scaled, the window's and the text's, and the plots' titles, axis labels,
tick labels, legends and value labels, and the round picture (cells and type together) by the factor chosen in View ▸ Presenter scale (1.25×, 1.5× or 2×). Leaving it
puts everything back as it was.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QWidget

from . import plot_base, round_view
from .plot_base import FittedPlot

SCALES = (1.25, 1.5, 2.0)
DEFAULT_SCALE = 1.5


def _scaled(font: QFont, factor: float) -> QFont:
    f = QFont(font)
    if f.pointSizeF() > 0:
        f.setPointSizeF(f.pointSizeF() * factor)
    else:
        f.setPixelSize(max(1, round(f.pixelSize() * factor)))
    return f


def scale_plots(root, factor: float) -> int:
    """Every plot under ``root``: its title, axis labels and tick labels ``factor`` times their
    size (a fitted plot's title and labels in plot_base.FONT_SCALE, which it keeps when it sets
    them again); how many plots."""
    plot_base.FONT_SCALE[0] *= factor
    fitted = root.findChildren(FittedPlot)
    for w in fitted:
        w.fit_text(force=True)
    items = [p for w in root.findChildren(pg.PlotWidget) for p in (w.getPlotItem(),)]
    items += [i for w in root.findChildren(pg.GraphicsLayoutWidget)
              for i in w.ci.items if isinstance(i, pg.PlotItem)]
    fitted_items = {w.getPlotItem() for w in fitted}
    for p in items:
        title = p.titleLabel
        if title.text and p not in fitted_items:
            size = float(str(title.opts.get("size", "11pt")).rstrip("pt") or 11)
            title.setText(title.text, size=f"{size * factor:.1f}pt")
        for name in ("left", "bottom", "right", "top"):
            axis = p.getAxis(name) if name in p.axes else None
            if axis is None:
                continue
            tick = axis.style.get("tickFont") or QFont(axis.font())
            axis.setStyle(tickFont=_scaled(tick, factor))
            style = dict(axis.labelStyle)           # a label's size is in its style (setLabel)
            if p in fitted_items and name in ("left", "bottom"):
                pass                                # (fit_text set it)
            elif str(style.get("font-size", "")).endswith("pt"):
                style["font-size"] = f"{float(style['font-size'][:-2]) * factor:.1f}pt"
                axis.setLabel(axis.labelText, axis.labelUnits, **style)
            else:
                axis.label.setFont(_scaled(axis.label.font(), factor))
            axis.setWidth() if name in ("left", "right") else axis.setHeight()
        scale_texts(p, factor)
    return len(items)


def scale_texts(p: pg.PlotItem, factor: float) -> None:
    """A plot's legend, its text items (bar values, notes, a star's label) and its lines' labels
    ``factor`` times their size; those made later take plot_base.FONT_SCALE."""
    legend = getattr(p, "legend", None)
    if legend is not None:
        size = float(str(legend.opts.get("labelTextSize") or "9pt").rstrip("pt")) * factor
        legend.opts["labelTextSize"] = f"{size:.1f}pt"
        for _sample, label in legend.items:
            label.setText(label.text, size=f"{size:.1f}pt")
        legend.updateSize()
    for item in p.getViewBox().childGroup.childItems():      # (text items ignore the bounds:
                                                              # not in addedItems)
        text = getattr(item, "label", None) if isinstance(item, pg.InfiniteLine) else item
        if isinstance(text, pg.TextItem):
            text.setFont(_scaled(text.textItem.font(), factor))


def _restyle(window) -> None:
    """Widgets with a style sheet of their own (the toolbar's buttons) keep the font they were
    polished with: setting their sheet again lets them take the application's new font."""
    for widget in window.findChildren(QWidget):
        sheet = widget.styleSheet()
        if sheet:
            widget.setStyleSheet(sheet)


class Presenter:
    """The window's presenter mode (module docs)."""

    def __init__(self, window):
        self.w = window
        self.scale = DEFAULT_SCALE
        self.saved: dict | None = None

    @property
    def on(self) -> bool:
        return self.saved is not None

    def enter(self, scale: float | None = None) -> None:
        if self.on:
            return
        w = self.w
        self.scale = scale or self.scale
        self.saved = {"maximized": w.isMaximized(), "geometry": w.saveGeometry(),
                      "left": w.left_panel_shown(), "app_font": QFont(QApplication.font()),
                      "text_font": QFont(w.token_view.font())}
        scale_plots(w, self.scale)                 # (before the window's font: theirs follow it)
        round_view.ZOOM[0] = self.scale
        w.round_view.rezoom()
        QApplication.setFont(_scaled(self.saved["app_font"], self.scale))
        _restyle(w)
        w.token_view.setFont(_scaled(self.saved["text_font"], self.scale))
        w.set_left_panel_shown(False)
        w.shown.set_presenting(True)
        w.showFullScreen()

    def leave(self) -> None:
        if not self.on:
            return
        w, saved = self.w, self.saved
        self.saved = None
        scale_plots(w, 1.0 / self.scale)          # (before the window's font, as enter())
        QApplication.setFont(saved["app_font"])
        _restyle(w)
        w.token_view.setFont(saved["text_font"])
        round_view.ZOOM[0] = 1.0
        w.round_view.rezoom()
        w.set_left_panel_shown(saved["left"])
        w.shown.set_presenting(False)
        w.showNormal()
        w.restoreGeometry(saved["geometry"])
        if saved["maximized"]:
            w.showMaximized()


__all__ = ["Presenter", "SCALES", "DEFAULT_SCALE", "scale_plots", "scale_texts"]
