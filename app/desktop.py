"""What a desktop window is expected to do: open on the screen it is given, whatever its size,
leave the settings alone when the mouse wheel scrolls past them, elide a line of text that
would otherwise widen it, and wrap a row of fields onto a second line on a narrow screen."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication
from PySide6.QtWidgets import (QAbstractSpinBox, QComboBox, QLabel, QLayout, QScrollArea, QSlider,
                               QWidget)

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
    for area in root.findChildren(QScrollArea):   # a panel's frame: no Tab stop of its own (Tab
        area.setFocusPolicy(Qt.FocusPolicy.NoFocus)   # stopped on it and showed no focus)


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


class SteadyLabel(QLabel):
    """A label at least as wide as the widest text it shows while a run goes on (``sample``:
    "00000" for a count), so that a new number repaints the label and nothing else. Qt takes any
    other label's new text as a request to lay out again every widget around it, up to the
    window, and repaint them (during a run: the tab bars, the chat bar, the scroll bars, 18
    times in 2,048 tokens); a widget of fixed size stops that request. A text wider than the
    sample ("– (no baseline yet)") widens it, and a narrow one brings it back to the sample's
    width: one re-layout each, where a state changes, not at each refresh. Its size follows its
    font (presenter mode)."""

    def __init__(self, text: str, sample: str):
        super().__init__(text)
        self._sample = sample
        self._measure()

    def _width(self, text: str) -> int:
        m = self.contentsMargins()
        return QFontMetrics(self.font()).horizontalAdvance(text) + 4 + m.left() + m.right()

    def _measure(self) -> None:
        """The sample's size in the label's font (one line), then the size for the text."""
        self._least = QSize(self._width(self._sample), QLabel.sizeHint(self).height())
        self._fit(self.text())

    def _fit(self, text: str) -> None:
        size = QSize(max(self._least.width(), self._width(text)), self._least.height())
        if self.minimumSize() != size or self.maximumSize() != size:
            self.setFixedSize(size)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self._fit(text)

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._measure()


class FlowLayout(QLayout):
    """Widgets in a row that wraps onto further lines when the width is short (Qt's flow-layout
    example), so a bar of fields fits a 1024-pixel screen without overlapping. The ``filler``
    (one widget, e.g. an ElidedLabel) is placed at its minimum width and then takes what its
    line leaves: where the lines break does not depend on its text, so a changing text never
    re-lays out the window."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 10, line_spacing: int = 2):
        super().__init__(parent)
        self._items = []
        self._spacing, self._line_spacing = spacing, line_spacing
        self.filler: QWidget | None = None

    def addItem(self, item) -> None:  # noqa: N802 - Qt override
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):  # noqa: N802 - Qt override
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):  # noqa: N802 - Qt override
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt override
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt override
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """Everything on one line."""
        shown = [i for i in self._items if not i.isEmpty()]
        width = sum(self._width(i) for i in shown) + self._spacing * max(0, len(shown) - 1)
        height = max((i.sizeHint().height() for i in shown), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt override
        """The widest single item: every other one can go to a line of its own."""
        size = QSize()
        for item in self._items:
            if not item.isEmpty():
                size = size.expandedTo(QSize(self._width(item), item.minimumSize().height()))
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _width(self, item) -> int:
        return item.minimumSize().width() if item.widget() is self.filler else item.sizeHint().width()

    def _place(self, rect: QRect, move: bool) -> int:
        """Lay the items out in ``rect`` (when ``move``); the height the lines take."""
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        lines, line = [], []
        x = 0
        for item in self._items:
            if item.isEmpty():
                continue
            width = self._width(item)
            if line and x + self._spacing + width > area.width():
                lines.append(line)
                line, x = [], 0
            x += (self._spacing if line else 0) + width
            line.append((item, width))
        if line:
            lines.append(line)
        y = area.y()
        for line in lines:
            height = max(item.sizeHint().height() for item, _ in line)
            spare = area.width() - sum(w for _, w in line) - self._spacing * (len(line) - 1)
            x = area.x()
            for item, width in line:
                if item.widget() is self.filler:
                    width = min(width + max(0, spare), max(width, item.sizeHint().width()))
                if move:
                    item.setGeometry(QRect(x, y + (height - item.sizeHint().height()) // 2, width,
                                           item.sizeHint().height()))
                x += width + self._spacing
            y += height + self._line_spacing
        return y - self._line_spacing - area.y() + m.top() + m.bottom() if lines else 0
