"""Frames into an animated GIF (Pillow: Qt writes no GIF), each at the size asked: what
``specscope export`` (app/export.py) and the window's File ▸ Export the rounds write; and a
widget as an SVG picture (``--frames DIR --format svg``); and the walk over a shown session's
rounds both draw from (``each_round``)."""

from __future__ import annotations

from pathlib import Path


def fit(img, size: tuple[int, int]):
    """``img`` at exactly ``size``: the window cannot be smaller than its layout's minimum, so a
    smaller frame is the window scaled down (its aspect kept, white around it)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QImage, QPainter
    if (img.width(), img.height()) == size:
        return img
    scaled = img.scaled(*size, Qt.AspectRatioMode.KeepAspectRatio,
                        Qt.TransformationMode.SmoothTransformation)
    out = QImage(*size, QImage.Format.Format_RGB32)
    out.fill(QColor("white"))
    p = QPainter(out)
    p.drawImage((size[0] - scaled.width()) // 2, (size[1] - scaled.height()) // 2, scaled)
    p.end()
    return out


def each_round(w, settle: int = 1):
    """Show the window's session at each of its rounds in turn, as the Round slider does (the
    Round tab shown), letting it paint ``settle`` times; yields (round from 1, rounds)."""
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication
    w.tabs.setCurrentWidget(w.round_view)
    n = len(w.controller.session.run.events)
    for k in range(1, n + 1):
        w.shown.seek(k)
        for _ in range(settle):
            QApplication.processEvents(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents, 50)
        yield k, n


def rgb_bytes(img) -> bytes:
    """A QImage's pixels as packed RGB rows (Qt pads each row to 4 bytes): what the GIF and
    MP4 writers take."""
    import numpy as np
    rgb = img.convertToFormat(img.Format.Format_RGB888)
    w, h, line = rgb.width(), rgb.height(), rgb.bytesPerLine()
    rows = np.frombuffer(rgb.constBits(), np.uint8, count=line * h).reshape(h, line)
    return rows[:, :w * 3].tobytes()


def write_gif(images, path: Path, pace_ms: int) -> int:
    """The frames as an animated GIF (Pillow), each shown ``pace_ms``; how many were written."""
    from PIL import Image
    pictures = [Image.frombytes("RGB", (img.width(), img.height()), rgb_bytes(img)) for img in images]
    if not pictures:
        return 0
    pictures[0].save(path, save_all=True, append_images=pictures[1:], duration=pace_ms, loop=0,
                     optimize=False)
    return len(pictures)


def write_svg(widget, path: Path, title: str = "") -> None:
    """``widget`` as it is drawn now, as an SVG picture (Qt's SVG generator: text stays text)."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtGui import QPainter
    from PySide6.QtSvg import QSvgGenerator
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(widget.size())
    gen.setViewBox(QRect(0, 0, widget.width(), widget.height()))
    gen.setTitle(title)
    gen.setResolution(widget.logicalDpiX())     # (its default 72 dpi draws the type at 3/4 size)
    p = QPainter(gen)
    widget.render(p, QPoint(0, 0))
    p.end()


__all__ = ["each_round", "fit", "rgb_bytes", "write_gif", "write_svg"]
