"""The lessons' panel (Help ▸ Lessons, ``specscope --lesson N``): a dock beside the window that
shows one lesson of app/lessons.py at a time, sets the window up for it, points at what to look
at, checks the exercise, and keeps which lessons were solved (QSettings ``lessons/done``,
``lessons/current``).

While a lesson is open the panel notes each run that ends (``RunNote``): the exercises that
compare two runs read those notes.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (QComboBox, QDockWidget, QHBoxLayout, QLabel, QPushButton, QScrollArea,
                               QStackedWidget, QTabWidget, QTextBrowser, QVBoxLayout, QWidget)

from .lessons import LESSONS, RunNote

DONE_KEY = "lessons/done"
CURRENT_KEY = "lessons/current"
POINTER_COLOR = "#e69f00"        # Okabe–Ito orange: seen by every vision the palette check covers
POINTER_BLINKS = 6               # on/off halves, 400 ms each
SOLVED_STYLE = "color:#1b5e20; background:#e8f5e9; border-radius:4px; padding:6px"
NOT_YET_STYLE = "color:#6d4c00; background:#fff8e1; border-radius:4px; padding:6px"
PANEL_WIDTH = 340
ROOM_PX = 1500        # narrower, the settings panel makes way for the lessons (unless pointed at)


def reveal(widget: QWidget) -> None:
    """Bring ``widget`` into view: the tab pages that hold it become current, the scroll areas
    around it scroll to it."""
    child, parent = widget, widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QStackedWidget):
            tabs = parent.parentWidget()
            if isinstance(tabs, QTabWidget):
                tabs.setCurrentWidget(child)
            else:
                parent.setCurrentWidget(child)
        child, parent = parent, parent.parentWidget()
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):      # from the top, as little as it takes: what is
            parent.verticalScrollBar().setValue(0)     # above it (the plot a lesson talks of)
            parent.ensureWidgetVisible(widget, 20, 20)     # stays in view where it can
        parent = parent.parentWidget()


class Pointer(QWidget):
    """An orange frame over the window around one of its widgets, blinking for a few seconds;
    it lets the mouse through."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.target: QWidget | None = None
        self._left = 0
        self._timer = QTimer(self, interval=400)
        self._timer.timeout.connect(self._blink)
        self.hide()

    def point_at(self, widget: QWidget | None) -> bool:
        """Frame ``widget`` (brought into view first); False when it cannot be seen."""
        self.target = widget
        if widget is None:
            self.hide()
            return False
        reveal(widget)
        QTimer.singleShot(0, self._place)        # after the tabs and scroll areas moved
        # once more when the page shown has laid itself out for its room (the cost panel puts
        # its plot beside the sliders when wide): scrolled for its tall layout, the plot's top
        # stayed hidden
        QTimer.singleShot(100, lambda: self.target is widget and (reveal(widget), self._place()))
        self._left = POINTER_BLINKS
        self._timer.start()
        return True

    def _place(self) -> None:
        w = self.target
        if w is None or not w.isVisible():
            self.hide()
            return
        top_left = w.mapTo(self.parentWidget(), QPoint(0, 0))
        self.setGeometry(QRect(top_left, w.size()).adjusted(-5, -5, 5, 5))
        self.raise_()
        self.show()

    def _blink(self) -> None:
        self._left -= 1
        if self._left <= 0:
            self._timer.stop()
            self.hide()
        elif self._left % 2:
            self.hide()
        else:
            self._place()

    def paintEvent(self, _event):  # noqa: N802 - Qt override
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(QPen(QColor(POINTER_COLOR), 4))
        p.drawRoundedRect(self.rect().adjusted(2, 2, -2, -2), 6, 6)


class LessonPanel(QDockWidget):
    """One lesson at a time: its text, Set up / Show me, its own buttons, Check, Hint, Answer,
    Previous / Next, and the lessons solved so far."""

    checked = Signal(int, bool, str)       # lesson index, solved, the sentence (tests)

    def __init__(self, window, settings):
        super().__init__("Lessons", window)
        self.setObjectName("lessons_dock")
        self.w, self.settings = window, settings
        self.pointer = Pointer(window)
        self.notes: list[RunNote] = []       # the runs since this lesson opened
        self.index = -1
        self.hid_settings = False            # the lessons hid the settings panel (shown on closing)
        self._build()
        window.controller.subscribe(self._heard)
        self.visibilityChanged.connect(self._visibility)

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(8, 6, 8, 8)
        self.picker = QComboBox()
        self.picker.setToolTip("Every lesson; ✓ marks those solved")
        self.picker.activated.connect(self.open)
        self.progress = QLabel()
        self.progress.setStyleSheet("color:#555")
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        self.text.setMinimumHeight(160)
        self.setup_button = QPushButton("Set up again")
        self.setup_button.setToolTip("Put the lesson's models, settings and tab back")
        self.setup_button.clicked.connect(self.set_up)
        self.show_button = QPushButton("Show me")
        self.show_button.setToolTip("Point at what this lesson is about")
        self.show_button.clicked.connect(self.point)
        self.actions_row = QVBoxLayout()
        self.check_button = QPushButton("Check")
        self.check_button.setStyleSheet("font-weight:600")
        self.check_button.clicked.connect(self.check)
        self.hint_button = QPushButton("Hint")
        self.hint_button.clicked.connect(lambda: self._say_extra("hint"))
        self.answer_button = QPushButton("Answer")
        self.answer_button.clicked.connect(lambda: self._say_extra("answer"))
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setVisible(False)
        self.extra = QLabel()
        self.extra.setWordWrap(True)
        self.extra.setStyleSheet("color:#333; background:#f2f4f7; border-radius:4px; padding:6px")
        self.extra.setVisible(False)
        self.prev_button = QPushButton("◀  Previous")
        self.prev_button.clicked.connect(lambda: self.open(self.index - 1))
        self.next_button = QPushButton("Next  ▶")
        self.next_button.clicked.connect(lambda: self.open(self.index + 1))
        lay.addWidget(self.picker)
        lay.addWidget(self.progress)
        lay.addWidget(self.text, 1)
        lay.addLayout(_row(self.setup_button, self.show_button))
        lay.addLayout(self.actions_row)
        lay.addLayout(_row(self.check_button, self.hint_button, self.answer_button))
        lay.addWidget(self.result)
        lay.addWidget(self.extra)
        lay.addLayout(_row(self.prev_button, self.next_button))
        page.setMinimumWidth(PANEL_WIDTH - 20)
        self.setWidget(page)
        self.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)

    # ------------------------------------------------------------------ progress
    def done(self) -> set[int]:
        raw = str(self.settings.value(DONE_KEY, "") or "")
        return {int(x) for x in raw.split(",") if x.strip().isdigit() and int(x) < len(LESSONS)}

    def _mark_done(self, index: int) -> None:
        self.settings.setValue(DONE_KEY, ",".join(str(i) for i in sorted(self.done() | {index})))

    def saved_index(self) -> int:
        try:
            return min(max(int(self.settings.value(CURRENT_KEY, 0)), 0), len(LESSONS) - 1)
        except (TypeError, ValueError):
            return 0

    def _fill_picker(self) -> None:
        done = self.done()
        self.picker.blockSignals(True)
        self.picker.clear()
        for i, lesson in enumerate(LESSONS):
            self.picker.addItem(f"{'✓' if i in done else '   '} {i + 1}. {lesson.title}")
        self.picker.setCurrentIndex(self.index)
        self.picker.blockSignals(False)
        self.progress.setText(f"{len(done)} of {len(LESSONS)} lessons solved")

    # ------------------------------------------------------------------ a lesson
    @property
    def lesson(self):
        return LESSONS[self.index]

    def open(self, index: int) -> None:
        """Show lesson ``index`` (from 0) and set the window up for it."""
        index = min(max(index, 0), len(LESSONS) - 1)
        self.index = index
        self.settings.setValue(CURRENT_KEY, index)
        self.notes = []
        lesson = self.lesson
        self._fill_picker()
        self.text.setHtml(f"<h3>{index + 1}. {lesson.title}</h3>{lesson.body}"
                          f"<p style='background:#eef4fb; padding:6px'><b>Exercise.</b> "
                          f"{lesson.exercise}</p>")
        self._fill_actions()
        self.result.setVisible(False)
        self.extra.setVisible(False)
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(LESSONS) - 1)
        self.show()
        self.raise_()
        self.set_up()

    def _fill_actions(self) -> None:
        while self.actions_row.count():
            item = self.actions_row.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        for label, act in self.lesson.actions:
            b = QPushButton(label)
            b.clicked.connect(lambda _=False, a=act: self._act(a))
            self.actions_row.addWidget(b)

    def _busy(self) -> bool:
        if self.w.controller.busy:
            self._say(False, "A run or a measurement is going: stop it (Esc) or let it end, then "
                             "press Set up again.")
            return True
        return False

    def _act(self, action) -> bool:
        """Run a lesson's change to the window unless a run is going; a missing demo model is
        said in the panel (the window stays as it was)."""
        from specscope.core.errors import SpecScopeError
        if self._busy():
            return False
        try:
            action(self.w)
        except SpecScopeError as exc:
            self._say(False, f"This lesson needs SpecScope's demo models: {exc}")
            return False
        return True

    def set_up(self) -> None:
        """The lesson's models, settings and tab; then point at what to look at."""
        if self._act(self.lesson.setup):
            QTimer.singleShot(300, self.point)

    def point(self) -> None:
        """Frame what the lesson is about: the settings panel comes back if it was hidden and
        holds it; on a window narrower than ROOM_PX it makes way otherwise (beside the lessons
        the text and the tabs had 500 pixels: the What-if tab hid behind the tab bar's arrows)."""
        if self.index < 0:
            return
        widget = self.lesson.point(self.w)
        if widget is not None and self.w.left_panel.isAncestorOf(widget):
            self.w.set_left_panel_shown(True)
        elif self.w.width() < ROOM_PX and self.w.left_panel_shown():
            self.w.set_left_panel_shown(False)
            self.hid_settings = True
        self.pointer.point_at(widget)

    def _visibility(self, shown: bool) -> None:
        """Closed: the settings panel the lessons hid comes back."""
        if not shown and self.hid_settings:
            self.hid_settings = False
            self.w.set_left_panel_shown(True)

    def check(self) -> bool:
        ok, sentence = self.lesson.check(self.w, list(self.notes))
        self._say(ok, ("✓ " if ok else "Not yet. ") + sentence)
        if ok:
            self._mark_done(self.index)
            self._fill_picker()
        self.checked.emit(self.index, ok, sentence)
        return ok

    def _say(self, ok: bool, text: str) -> None:
        self.result.setText(text)
        self.result.setStyleSheet(SOLVED_STYLE if ok else NOT_YET_STYLE)
        self.result.setVisible(True)

    def _say_extra(self, which: str) -> None:
        text = self.lesson.hint if which == "hint" else self.lesson.answer
        self.extra.setText(f"<b>{which.capitalize()}.</b> {text}")
        self.extra.setVisible(True)

    def _heard(self, what: str, payload) -> None:
        if what == "finished" and self.index >= 0 and self.isVisible() and payload.session is not None \
                and payload.finish != "stopped" and payload.session.run.events:
            self.notes.append(RunNote.of(payload.session, step=payload.request.step))


def _row(*widgets: QWidget) -> QHBoxLayout:
    row = QHBoxLayout()
    for w in widgets:
        row.addWidget(w)
    return row
