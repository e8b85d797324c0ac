"""Small, clean SVG charts without a plotting library (the advise report's plots).

A :class:`Chart` maps data coordinates onto a plot area; its methods add marks (axes, lines,
points, horizontal bars, error bars, labels, a legend) and :meth:`Chart.svg` gives one
self-contained ``<svg>`` element, valid XML. Tick labels carry their value as text and their
place as ``x``/``y``, so a reader (or a test) can map data onto pixels from the drawing alone.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence
from xml.sax.saxutils import escape, quoteattr

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
INK, GRID, MUTED = "#222", "#e4e4e4", "#777"
FONT = "font-family='Helvetica, Arial, sans-serif'"
CHAR_W = 6.6          # about how wide a 12 px character is (for margins sized to labels)


def _n(v: float) -> str:
    return f"{v:.1f}"


class Chart:
    """A plot of ``x_range`` × ``y_range`` (data units) in a ``width`` × ``height`` picture;
    ``left`` etc. are the margins around the plot area in pixels."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], *,
                 width: int = 640, height: int = 360, title: str = "", x_label: str = "",
                 y_label: str = "", left: int = 58, right: int = 18, top: int = 34, bottom: int = 46,
                 name: str = "chart"):
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = left, width - right, top, height - bottom
        self.title, self.x_label, self.y_label = title, x_label, y_label
        self.name = name              # the svg's class; its clip path's id (unique in a page)
        self.parts: list[str] = []

    def px(self, x: float) -> float:
        return self.left + (x - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def py(self, y: float) -> float:
        return self.bottom - (y - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)

    def _add(self, tag: str, text: str | None = None, **attrs) -> None:
        a = " ".join(f"{k.rstrip('_').replace('_', '-')}={quoteattr(str(v))}"
                     for k, v in attrs.items() if v is not None)
        self.parts.append(f"<{tag} {a}/>" if text is None else f"<{tag} {a}>{escape(text)}</{tag}>")

    def text(self, x: float, y: float, s: str, *, anchor: str = "start", size: int = 12,
             color: str = INK, class_: str | None = None, dx: float = 0, dy: float = 0) -> None:
        """``s`` at data point (x, y), shifted by (dx, dy) pixels."""
        self._add("text", s, x=_n(self.px(x) + dx), y=_n(self.py(y) + dy), text_anchor=anchor,
                  font_size=size, fill=color, class_=class_)

    def axes(self, x_ticks: Iterable[float | tuple[float, str]],
             y_ticks: Iterable[float | tuple[float, str]], *, x_fmt: str = "{:g}",
             y_fmt: str = "{:g}", x_grid: bool = True, y_grid: bool = True) -> None:
        """The frame, grid lines and tick labels (a tick is a value or (value, label)), the
        axis labels and the title."""
        for tick in x_ticks:
            v, label = tick if isinstance(tick, tuple) else (tick, x_fmt.format(tick))
            if x_grid:
                self._add("line", x1=_n(self.px(v)), x2=_n(self.px(v)), y1=self.top, y2=self.bottom,
                          stroke=GRID)
            self._add("text", label, x=_n(self.px(v)), y=self.bottom + 16, text_anchor="middle",
                      font_size=11, fill=MUTED, class_="xtick")
        for tick in y_ticks:
            v, label = tick if isinstance(tick, tuple) else (tick, y_fmt.format(tick))
            if y_grid:
                self._add("line", x1=self.left, x2=self.right, y1=_n(self.py(v)), y2=_n(self.py(v)),
                          stroke=GRID)
            self._add("text", label, x=self.left - 6, y=_n(self.py(v)), dy="0.35em", text_anchor="end",
                      font_size=11, fill=MUTED, class_="ytick")
        self._add("rect", x=self.left, y=self.top, width=self.right - self.left,
                  height=self.bottom - self.top, fill="none", stroke=MUTED)
        if self.x_label:
            self._add("text", self.x_label, x=_n((self.left + self.right) / 2), y=self.height - 8,
                      text_anchor="middle", font_size=12, fill=INK)
        if self.y_label:
            x, y = 14, (self.top + self.bottom) / 2
            self._add("text", self.y_label, x=x, y=_n(y), text_anchor="middle", font_size=12,
                      fill=INK, transform=f"rotate(-90 {x} {_n(y)})")
        if self.title:
            self._add("text", self.title, x=self.left, y=20, font_size=14, fill=INK, font_weight="bold")

    def line(self, pts: Sequence[tuple[float, float | None]], color: str, *, width: float = 2,
             dash: str | None = None, class_: str = "line") -> None:
        """A polyline through ``pts``; a point whose y is None breaks it."""
        run: list[str] = []
        for x, y in [*pts, (None, None)]:
            if y is None:
                if len(run) > 1:
                    self._add("polyline", points=" ".join(run), fill="none", stroke=color,
                              stroke_width=width, stroke_dasharray=dash, class_=class_,
                              clip_path=f"url(#{self.name}-clip)")
                run = []
            else:
                run.append(f"{_n(self.px(x))},{_n(self.py(y))}")

    def points(self, pts: Sequence[tuple[float, float]], color: str, *, r: float = 4,
               titles: Sequence[str] = (), class_: str = "point") -> None:
        """Dots at ``pts``; ``titles``, one per point, are their tooltips (and names)."""
        for i, (x, y) in enumerate(pts):
            title = f"<title>{escape(titles[i])}</title>" if i < len(titles) else ""
            self.parts.append(f"<circle cx='{_n(self.px(x))}' cy='{_n(self.py(y))}' r='{r}' "
                              f"fill='{color}' stroke='white' class='{class_}'>{title}</circle>")

    def bars(self, rows: Sequence[tuple[float, float]], color: str, *, thickness: float = 0.6,
             base: float = 0.0) -> None:
        """Horizontal bars: for each (y, x) one from x = ``base`` to x, ``thickness`` high (data
        units of y)."""
        for y, x in rows:
            x_lo, x_hi = sorted((self.px(base), self.px(x)))
            self._add("rect", x=_n(x_lo), y=_n(self.py(y + thickness / 2)), width=_n(x_hi - x_lo),
                      height=_n(self.py(y - thickness / 2) - self.py(y + thickness / 2)), fill=color,
                      class_="bar")

    def error_bars(self, rows: Sequence[tuple[float, float, float]], color: str = INK, *,
                   cap: float = 0.25) -> None:
        """Horizontal error bars: for each (y, low, high) a whisker from low to high with caps
        ``cap`` high (data units of y)."""
        for y, lo, hi in rows:
            self._add("line", x1=_n(self.px(lo)), x2=_n(self.px(hi)), y1=_n(self.py(y)),
                      y2=_n(self.py(y)), stroke=color, stroke_width=1.5, class_="whisker")
            for x in (lo, hi):
                self._add("line", x1=_n(self.px(x)), x2=_n(self.px(x)), y1=_n(self.py(y - cap / 2)),
                          y2=_n(self.py(y + cap / 2)), stroke=color, stroke_width=1.5)

    def vline(self, x: float, color: str = INK, *, dash: str | None = "5 4", label: str = "") -> None:
        self._add("line", x1=_n(self.px(x)), x2=_n(self.px(x)), y1=self.top, y2=self.bottom,
                  stroke=color, stroke_dasharray=dash)
        if label:
            self._add("text", label, x=_n(self.px(x)), y=self.top - 5, text_anchor="middle",
                      font_size=11, fill=color)

    def area(self, pts: Sequence[tuple[float, float | None]], color: str, *, opacity: float = 0.12,
             label: str = "") -> None:
        """The region between y = y0 and the curve through ``pts`` (points whose y is None left
        out), lightly filled; ``label`` sits inside it, near its right end."""
        pts = [(x, y) for x, y in pts if y is not None]
        if len(pts) < 2:
            return
        outline = [(pts[0][0], self.y0), *pts, (pts[-1][0], self.y0)]
        self._add("polygon", points=" ".join(f"{_n(self.px(x))},{_n(self.py(y))}" for x, y in outline),
                  fill=color, fill_opacity=opacity, stroke="none", clip_path=f"url(#{self.name}-clip)")
        if label:
            self._add("text", label, x=self.right - 8, y=self.bottom - 8, text_anchor="end",
                      font_size=11, fill=color)

    def legend(self, items: Sequence[tuple[str, str, str | None]], *, corner: str = "top-left") -> None:
        """(label, colour, dash) per item (dash "dot": a dot, not a line), in a box in a corner
        of the plot area ("top-left", "bottom-right", ...) or right of it ("outside": leave a
        wide enough right margin)."""
        if not items:
            return
        w = 34 + CHAR_W * max(len(label) for label, _, _ in items)
        h = 8 + 16 * len(items)
        x = self.left + 8 if corner.endswith("left") else self.right - 8 - w
        y = self.top + 8 if corner.startswith("top") else self.bottom - 8 - h
        if corner == "outside":
            x, y = self.right + 8, self.top
        self._add("rect", x=_n(x), y=_n(y), width=_n(w), height=h, fill="white", stroke=GRID,
                  fill_opacity=0.9)
        for i, (label, color, dash) in enumerate(items):
            yy = y + 12 + 16 * i
            if dash == "dot":
                self._add("circle", cx=_n(x + 16), cy=_n(yy), r=4, fill=color)
            else:
                self._add("line", x1=_n(x + 6), x2=_n(x + 26), y1=_n(yy), y2=_n(yy), stroke=color,
                          stroke_width=2.5, stroke_dasharray=dash)
            self._add("text", label, x=_n(x + 30), y=_n(yy + 4), font_size=11, fill=INK)

    def svg(self) -> str:
        clip = (f"<clipPath id='{self.name}-clip'><rect x='{self.left}' y='{self.top}' "
                f"width='{self.right - self.left}' height='{self.bottom - self.top}'/></clipPath>")
        return (f"<svg xmlns='http://www.w3.org/2000/svg' class='{self.name}' width='{self.width}' "
                f"height='{self.height}' viewBox='0 0 {self.width} {self.height}' {FONT}>"
                f"<defs>{clip}</defs><rect width='100%' height='100%' fill='white'/>"
                + "".join(self.parts) + "</svg>")


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values covering [lo, hi], about ``count`` of them (steps 1, 2 or 5 × 10^k)."""
    span = max(hi - lo, 1e-12)
    raw = span / max(count - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = step * math.ceil(lo / step - 1e-9)
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]
