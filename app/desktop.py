"""What a desktop window is expected to do: open on the screen it is given, whatever its size,
leave the settings alone when the mouse wheel scrolls past them, and elide a line of text that
would otherwise widen it."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QLabel, QSlider, QWidget

PREFERRED_SIZE = QSize(1440, 900)     # the window's size where the screen has room for it
WHEEL_INPUTS = (QComboBox, QAbstractSpinBox, QSlider)
NO_WINDOW_MANAGER = ("offscreen", "minimal")     # Qt platforms where nothing maximizes a window


def fit_rect(rect: QRect, available: QRect) -> QRect:
    """``rect`` shrunk to fit in ``available`` and moved inside it."""
    size = rect.size().boundedTo(available.size())
    x = min(max(rect.left(), available.left()), available.right() + 1 - size.width())
    y = min(max(rect.top(), available.top()), available.bottom() + 1 - size.height())
    return QRect(QPoint(x, y), size)


def place_window(window: QWidget, saved_geometry=None) -> None:
    """Give a window about to be shown a geometry inside its screen's available area: the saved
    one when there is one (moved and shrunk into the screen it opens on, which may be smaller
    than the one it was saved on), else PREFERRED_SIZE centred. A window that had to shrink
    opens maximized where a window manager can fit its frame (title bar, borders) to the
    screen; the frame is known before the window is shown only where there is none."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    window.winId()                              # the native window, and its frame where known
    area = screen.availableGeometry().marginsRemoved(window.windowHandle().frameMargins())
    if saved_geometry is None or not window.restoreGeometry(saved_geometry):
        wanted = QRect(QPoint(0, 0), PREFERRED_SIZE)
        wanted.moveCenter(area.center())
    elif window.isMaximized() or window.isFullScreen():
        return
    else:
        wanted = window.geometry()
    fitted = fit_rect(wanted, area)
    window.setGeometry(fitted)
    if fitted.size() != wanted.size() and QGuiApplication.platformName() not in NO_WINDOW_MANAGER:
        window.setWindowState(window.windowState() | Qt.WindowState.WindowMaximized)


class WheelGuard(QObject):
    """An event filter for inputs that a scrolling mouse wheel passes over: without the focus,
    a combo box, spin box or slider lets the wheel event go to its parent (the panel scrolls)
    instead of changing its value. A click or Tab gives it the focus; then the wheel changes it."""

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Wheel and not obj.hasFocus():
            event.ignore()          # ignored and filtered: QApplication offers it to the parent
            return True
        return False


def guard_wheel(root: QWidget) -> None:
    """Give every combo box, spin box and slider under ``root`` the WheelGuard (once each) and
    the focus policy that lets a click focus it."""
    guard = root.findChild(WheelGuard)
    if guard is None:
        guard = WheelGuard(root)
    for kind in WHEEL_INPUTS:
        for widget in root.findChildren(kind):
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            widget.installEventFilter(guard)


class ElidedLabel(QLabel):
    """One line of text elided to the width the layout gives it (``full``: the whole text), so
    that a long text never widens the window. ``MIN_PX``: the least it elides to."""
    MIN_PX = 0

    def __init__(self, text: str = ""):
        super().__init__(text)
        self.full = ""

    def set_full(self, text: str) -> None:
        self.full = text
        self._elide()
        self.updateGeometry()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        self.setText(QFontMetrics(self.font()).elidedText(self.full, Qt.TextElideMode.ElideRight,
                                                          max(self.MIN_PX, self.width())))
