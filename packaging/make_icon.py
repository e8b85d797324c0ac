"""Render resources/icons/specscope.svg as the 256 px PNG beside it (Qt's SVG renderer; the
window's icon, package data, and the desktop entry's icon in the bundle).

    python packaging/make_icon.py
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

HERE = Path(__file__).resolve().parent.parent / "resources" / "icons"
SIZE = 256


def main() -> int:
    app = QGuiApplication(sys.argv[:1])         # painting needs one
    renderer = QSvgRenderer(str(HERE / "specscope.svg"))
    if not renderer.isValid():
        print(f"{HERE / 'specscope.svg'}: not a valid SVG", file=sys.stderr)
        return 2
    image = QImage(SIZE, SIZE, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    out = HERE / "specscope.png"
    image.save(str(out))
    print(out)
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
