"""SpecScope's plot style and the base of its live plots: white, titled, labelled axes, a faint y
grid; the axes, title and legend cached as pixmaps; count labels made once and reused; and
:class:`LivePlot`, a plot whose y range runs from 0 to the top of its data with room above it
for labels or a legend."""

from __future__ import annotations

import html
from pathlib import Path

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtSvg, QtWidgets

__all__ = ["cache_static_parts", "styled_plot", "LivePlot", "ACCEPTED_COLOR", "TARGET_COLOR",
           "REJECTED_COLOR", "TEXT_COLOR", "AXIS_COLOR", "CALIBRATED_COLOR", "MEASURED_COLOR"]

# token colours shared with the window's token view
ACCEPTED_COLOR = "#2e9d4b"   # a drafted token the target kept
TARGET_COLOR = "#3b6fd8"     # the target's own token
REJECTED_COLOR = "#d64545"   # a drafted token the target did not keep

TEXT_COLOR = "#222222"
CALIBRATED_COLOR = "#009e73"    # the calibrated prediction, in the cost tab and the synthetic sweep
MEASURED_COLOR = "#d64545"      # a measured point beside predictions
AXIS_COLOR = "#555555"
LABEL_COLOR = "#333333"
LABEL_POINT_SIZE = 8.0


def cache_static_parts(plot: pg.PlotItem) -> None:
    """Let Qt keep the axes, title and legend as pixmaps: a live update then repaints the data,
    not every tick label (text was most of a plot's paint: 17-24 ms for the four plots per
    update, 6-9 ms cached). pyqtgraph invalidates an axis when its range changes."""
    cache = QtWidgets.QGraphicsItem.CacheMode.DeviceCoordinateCache
    for name in ("left", "bottom", "top", "right"):
        plot.getAxis(name).setCacheMode(cache)
    plot.titleLabel.setCacheMode(cache)
    if plot.legend is not None:
        plot.legend.setCacheMode(cache)


FONT_SCALE = [1.0]         # the plots' titles and labels, times this (presenter mode)


class FittedPlot(pg.PlotWidget):
    """A PlotWidget whose title and axis labels are elided to the room it has (the whole text
    in the tooltip and in exports) instead of being clipped mid-word."""
    full_title: str | None = None          # (pyqtgraph resizes it before __init__ sets these)
    full_labels: dict = {}
    keys: tuple = ()                       # (plain, html) keys for the x axis's label, widest first
    key_shown = False                      # the plot's legend is hidden: a key takes the x label

    def __init__(self, title: str, labels: dict[str, str], **kw):
        super().__init__(**kw)
        self.full_title, self.full_labels = title, labels

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.fit_text()

    def fit_text(self, force: bool = False) -> None:
        """Elide the title and labels to the room (``force``: set them again, in FONT_SCALE)."""
        if self.full_title is None:
            return
        p, k = self.getPlotItem(), FONT_SCALE[0]
        if p is None:                   # being deleted
            return
        title_font = QtGui.QFont(p.titleLabel.item.font())     # the font it is drawn in
        title_font.setPointSizeF(11 * k)
        # the title starts over the plot's left edge, right of the y axis, and is cut at the
        # widget's right edge
        axis = p.getAxis("left")
        title = _elided(self.full_title, title_font,
                        self.width() - (axis.width() if axis.isVisible() else 0) - 16)
        if force or title != p.titleLabel.text:
            p.setTitle(title, color=TEXT_COLOR, size=f"{11 * k:g}pt")
        label_font = QtGui.QFont(p.getAxis("bottom").label.font())
        label_font.setPointSizeF(9 * k)
        room = {"bottom": self.width() - 70, "left": self.height() - 60}
        key_font = QtGui.QFont(label_font)
        key_font.setPointSizeF(8 * k)
        for name, text in self.full_labels.items():
            shown, size = _elided(text, label_font, room[name]), 9 * k
            if name == "bottom" and self.key_shown:     # the widest key that fits, else the label
                fits = QtGui.QFontMetrics(key_font)
                key = next((html for plain, html in self.keys
                            if fits.horizontalAdvance(plain) <= room[name]), None)
                shown, size = (key, 8 * k) if key else (shown, size)
            ax = p.getAxis(name)
            if force or shown != ax.labelText:
                p.setLabel(name, shown, color=LABEL_COLOR, **{"font-size": f"{size:g}pt"})

    def show_key(self, on: bool) -> None:
        """The legend was hidden (``on``) or shown again: the key in the x label, or the label."""
        if on != self.key_shown:
            self.key_shown = on
            self.fit_text(force=True)


def coloured_key(parts, sep: str = "&nbsp;&nbsp; ", gap: str = "&nbsp;") -> str:
    """A key in HTML, for a line under or beside a plot: each (colour, mark, name) of ``parts``
    as its mark in its colour, then its name."""
    return sep.join(f"<span style='color:{c}'>{m}</span>{gap}{html.escape(n)}" for c, m, n in parts)


def key_variants(label: str, parts: list[tuple[str, str, str]]) -> tuple:
    """(plain, html) keys for an x label, widest first: the label and the parts, the parts,
    the parts packed closer; ``parts``: (colour, mark, name)."""
    def key(gap: str, sep: str, html_gap: str, html_sep: str):
        return sep.join(f"{m}{gap}{n}" for _c, m, n in parts), coloured_key(parts, html_sep, html_gap)
    plain, marked = key(" ", "  ", "&nbsp;", "&nbsp; ")
    return ((f"{label} · {plain}", f"{label} · {marked}"), (plain, marked), key("", " ", "", " "))


def _elided(text: str, font: QtGui.QFont, width: int) -> str:
    return QtGui.QFontMetrics(font).elidedText(text, QtCore.Qt.TextElideMode.ElideRight, max(40, width))


def styled_plot(title: str, left: str, bottom: str, tip: str = "",
                antialias: bool = False) -> pg.PlotWidget:
    """A plot in SpecScope's style: white, titled, labelled axes, a faint y grid, no menu; its
    title and labels elided to its room (:class:`FittedPlot`)."""
    w = FittedPlot(title, {"left": left, "bottom": bottom}, background="w")
    w.setAntialiasing(antialias)     # only lines need it; bars are axis-aligned rectangles
    if tip:
        w.setToolTip(tip)
    p = w.getPlotItem()
    p.setTitle(title, color=TEXT_COLOR, size="11pt")
    for name, text in (("left", left), ("bottom", bottom)):
        ax = p.getAxis(name)
        ax.setPen(pg.mkPen(AXIS_COLOR))
        ax.setTextPen(pg.mkPen(TEXT_COLOR))
        ax.enableAutoSIPrefix(False)
        p.setLabel(name, text, color=LABEL_COLOR, **{"font-size": "9pt"})
    p.showGrid(x=False, y=True, alpha=0.15)
    p.setMenuEnabled(False)
    p.hideButtons()
    return w


def with_caption(plot: QtWidgets.QWidget, caption: QtWidgets.QWidget) -> QtWidgets.QWidget:
    """``plot`` over ``caption`` (a key, a few figures) in one widget, the plot taking the
    height: under the plot, not drawn over its data."""
    box = QtWidgets.QWidget()
    lay = QtWidgets.QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(2)
    lay.addWidget(plot, 1)
    lay.addWidget(caption)
    return box


def empty_note(plot: pg.PlotItem) -> pg.TextItem:
    """A grey note in the middle of a plot (while it has nothing to show), its lines centred
    (``wrap_note`` fits them to the plot's width)."""
    t = pg.TextItem("", color="#888888", anchor=(0.5, 0.5))
    option = QtGui.QTextOption(QtCore.Qt.AlignmentFlag.AlignHCenter)
    option.setWrapMode(QtGui.QTextOption.WrapMode.WordWrap)
    t.textItem.document().setDefaultTextOption(option)
    plot.addItem(t, ignoreBounds=True)
    return t


def wrap_note(note: pg.TextItem, view: pg.ViewBox) -> None:
    """Wrap ``note`` to the width of ``view`` (a narrow plot's note in two or three lines,
    not cut at both ends)."""
    width = view.width()
    if width > 1:       # 20 px spare each side: the note is centred on a data x, not the pixels
        note.setTextWidth(max(60.0, width - 40.0))


def set_text(label: pg.TextItem, text: str) -> None:
    if getattr(label, "_shown_text", None) != text:   # setText re-lays the text out: only on change
        label.setText(text)
        label._shown_text = text


def grow_labels(labels: list[pg.TextItem], n: int, plot: pg.PlotItem) -> list[pg.TextItem]:
    """Make sure there are n count labels (made once, reused)."""
    while len(labels) < n:
        t = pg.TextItem("", color=LABEL_COLOR, anchor=(0.5, 1.0))
        f = t.textItem.font()
        f.setPointSizeF(LABEL_POINT_SIZE * FONT_SCALE[0])
        t.setFont(f)
        plot.addItem(t, ignoreBounds=True)
        labels.append(t)
    return labels


def small_legend(plot: pg.PlotItem, offset=(-6, 2), **kw) -> pg.LegendItem:
    """A legend in the top right corner (``offset``: another), on a light background."""
    legend = plot.addLegend(offset=offset, labelTextColor=TEXT_COLOR,
                            labelTextSize=f"{8 * FONT_SCALE[0]:.1f}pt", **kw)
    legend.setBrush(pg.mkBrush(255, 255, 255, 215))
    legend.setPen(pg.mkPen("#cccccc"))
    return legend


def rgba(hex_color: str, alpha: int) -> QtGui.QColor:
    c = QtGui.QColor(hex_color)
    c.setAlpha(alpha)
    return c


def render_svg(widget: pg.PlotWidget, path: Path) -> None:
    """The plot item's part of the scene, painted by Qt's own SVG generator."""
    source = widget.getPlotItem().sceneBoundingRect()
    gen = QtSvg.QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(source.size().toSize())
    target = QtCore.QRectF(0.0, 0.0, source.width(), source.height())
    gen.setViewBox(target)
    gen.setTitle(getattr(widget, "full_title", None) or widget.getPlotItem().titleLabel.text)
    # the bar items replay QPictures, which Qt rescales for a device of another resolution
    gen.setResolution(QtGui.QPicture().logicalDpiX())
    painter = QtGui.QPainter(gen)
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        painter.fillRect(target, QtGui.QColor("white"))
        widget.scene().render(painter, target, source)
    finally:
        painter.end()


class LivePlot:
    """One live plot of the run (``widget``, a styled PlotWidget): y from 0 to the top of its
    data (``top``; None: nothing to fit yet) plus :meth:`reserve_px` pixels for labels or a
    legend. ``exact``: the range is set to that (a share, topped at 1); else with some slack, so
    that a growing top does not move the axis every update."""

    exact = False

    def __init__(self, widget: pg.PlotWidget):
        self.widget = widget
        self.plot = widget.getPlotItem()
        self.top: float | None = None

    @property
    def view(self) -> pg.ViewBox:
        return self.plot.getViewBox()

    def reserve_px(self) -> float:
        """Pixels to keep free above the data."""
        return 0.0

    def empty_axes(self, x_range: tuple[float, float]) -> None:
        """No data any more: the axes of an empty plot, not the last run's ranges (x follows
        the next run's data again)."""
        self.top = None
        self.plot.setXRange(*x_range, padding=0)
        self.plot.setYRange(0.0, 1.0, padding=0)
        self.plot.enableAutoRange(axis="x")

    def px_per_unit(self) -> float | None:
        """Pixels per x unit, or None before the plot has been laid out."""
        (x0, x1), _ = self.view.viewRange()
        width = self.view.width()
        return width / (x1 - x0) if width > 1 and x1 > x0 else None

    def refit(self, force: bool = False) -> None:
        """y from 0 to the data's top plus the reserved pixels."""
        if self.top is None:
            return
        height = self.view.height()
        frac = min(self.reserve_px() / height, 0.5) if height > 1 else 0.2
        need = self.top / (1.0 - frac)
        current = self.view.viewRange()[1][1]
        if self.exact:
            if force or abs(current - need) > 1e-3:
                self.plot.setYRange(0.0, need, padding=0)
        elif force or current < need or current > 1.5 * need:
            self.plot.setYRange(0.0, need * 1.08, padding=0)

    def resized(self) -> None:
        """The plot was laid out anew: fit again, labels as the room allows."""
        self.refit(force=True)
        self.layout_labels()

    def layout_labels(self) -> None:
        """Place the count labels for the room there is (none by default)."""
