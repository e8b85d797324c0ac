"""Human-speed playback: the views follow the recorded round events at a
chosen pace while the engine runs at full speed, and a scrubber jumps to any round.

``Playback`` sits between whatever produces events (the worker's batches during a live run,
or a session file's rounds) and the views. Events are ``feed``-ed in as fast as they come;
``released`` hands them on:

- ``fast``: at once, as they come (what the window did before);
- ``rate``: ``rounds_per_s`` of them per second, evenly, from a timer — a 0.2 s run is
  watched over as many seconds as it has rounds / rate, and its recorded timings (each
  event's own t_draft, t_verify, …) stay what the engine measured;
- ``step``: one round per ``step()`` (shown as "Manual": the toolbar's Step is another thing).

Switching to ``fast`` releases the backlog at once. ``PaceControl`` is the toolbar widget
that picks the pace; ``Scrubber`` is the slider over the rounds released so far, whose
``seek(k)`` asks the window to show the run as it was after k rounds.
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from PySide6 import QtCore, QtWidgets

from .desktop import SteadyLabel

PACES = ("fast", "rate", "step")
# the key "step" stays (what callers and tests pass); its label is not "Step": the toolbar's Step
# runs one round of the engine, this only paces the views
PACE_LABELS = {"fast": "Full speed", "rate": "Rounds/s", "step": "Manual"}
PACE_TIPS = {
    "fast": "The views show the rounds as the engine runs them",
    "rate": "The views show the chosen number of rounds per second",
    "step": "The views show one more round each time Next ▸ is pressed (the engine runs on at full "
            "speed; Step in the toolbar instead runs one round of the engine and explains it)",
}
DEFAULT_RATE = 4.0
RATE_RANGE = (0.25, 200.0)


class Playback(QtCore.QObject):
    """Releases fed events at the chosen pace (module docs)."""

    released = QtCore.Signal(list)          # the events now due, in order
    backlog_changed = QtCore.Signal(int)    # events fed but not released yet

    def __init__(self, parent=None):
        super().__init__(parent)
        self.pace = "fast"
        self.rounds_per_s = DEFAULT_RATE
        self._queue: deque = deque()
        self._timer = QtCore.QTimer(self)
        self._timer.timeout.connect(self._tick)

    @property
    def backlog(self) -> int:
        return len(self._queue)

    def set_pace(self, pace: str, rounds_per_s: float | None = None) -> None:
        if pace not in PACES:
            raise ValueError(f"pace must be one of {', '.join(PACES)}, not {pace!r}")
        if rounds_per_s is not None:
            lo, hi = RATE_RANGE
            self.rounds_per_s = min(max(float(rounds_per_s), lo), hi)
        self.pace = pace
        self._timer.stop()
        if pace == "fast":
            self._release(len(self._queue))
        elif pace == "rate":
            self._timer.start(max(1, round(1000.0 / self.rounds_per_s)))

    def feed(self, events: Sequence) -> None:
        """Events as the producer has them; in ``fast`` pace they go straight on."""
        if not events:
            return
        self._queue.extend(events)
        if self.pace == "fast":
            self._release(len(self._queue))
        else:
            self.backlog_changed.emit(len(self._queue))

    def step(self) -> bool:
        """Release one round (any pace); False when none is waiting."""
        return self._release(1) > 0

    def flush(self) -> None:
        """Release everything waiting at once (Stop, or the run's end in a hurry)."""
        self._release(len(self._queue))

    def clear(self) -> None:
        """Drop what was not shown yet (a new run or session)."""
        self._queue.clear()
        self.backlog_changed.emit(0)

    def _tick(self) -> None:
        self._release(1)

    def _release(self, n: int) -> int:
        out = [self._queue.popleft() for _ in range(min(n, len(self._queue)))]
        if out:
            self.released.emit(out)
            self.backlog_changed.emit(len(self._queue))
        return len(out)


class PaceControl(QtWidgets.QWidget):
    """Pace: a combo (fast / rounds per second / step) and the rate; drives a Playback."""

    def __init__(self, playback: Playback, parent=None):
        super().__init__(parent)
        self.playback = playback
        self.mode = QtWidgets.QComboBox()
        for i, pace in enumerate(PACES):
            self.mode.addItem(PACE_LABELS[pace], pace)
            self.mode.setItemData(i, PACE_TIPS[pace], QtCore.Qt.ItemDataRole.ToolTipRole)
        self.mode.setToolTip("How fast the views follow the run: full speed, a number of rounds per "
                             "second, or manually, one round per Next. The engine always runs at full "
                             "speed and its timings are what it measured; only the display is "
                             "paced.")
        self.rate = QtWidgets.QDoubleSpinBox()
        self.rate.setRange(*RATE_RANGE)
        self.rate.setDecimals(2)
        self.rate.setValue(DEFAULT_RATE)
        self.rate.setToolTip("Rounds shown per second")
        self.next = QtWidgets.QToolButton()
        self.next.setText("Next ▸")
        self.next.setToolTip("Show the next recorded round")
        self.waiting = QtWidgets.QLabel()
        self._backlog = 0
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QtWidgets.QLabel("Pace"))
        for w in (self.mode, self.rate, self.next, self.waiting):
            lay.addWidget(w)
        self.mode.currentIndexChanged.connect(self._changed)
        self.rate.valueChanged.connect(self._changed)
        self.next.clicked.connect(playback.step)
        playback.backlog_changed.connect(self._show_backlog)
        self._changed()

    def set_pace(self, pace: str, rounds_per_s: float | None = None) -> None:
        if rounds_per_s is not None:
            self.rate.setValue(rounds_per_s)
        self.mode.setCurrentIndex(PACES.index(pace))
        self._changed()

    def _changed(self, *_args) -> None:
        pace = self.mode.currentData()
        # shown only where they act: at full speed the toolbar has their room (presenter mode's
        # larger text at 1.5x pushed Replay behind the toolbar's » on a 1280-pixel projector)
        self.rate.setVisible(pace == "rate")
        self.next.setVisible(pace != "fast")
        self.playback.set_pace(pace, self.rate.value())

    def _show_backlog(self, n: int) -> None:
        if n == self._backlog:          # told after every batch of a live run: mostly 0 again
            return
        self._backlog = n
        self.waiting.setText(f"{n} waiting" if n else "")
        self.waiting.setToolTip(f"{n} round{'s' if n != 1 else ''} the engine ran that the views "
                                "have not shown yet" if n else "")


LABEL_WIDEST = "00000 of 00000 (live)"     # the scrubber's label at its widest


class Scrubber(QtWidgets.QWidget):
    """A slider over the rounds shown so far; moving it asks to see the run after k rounds."""

    seek = QtCore.Signal(int)        # k rounds (0 = before the first)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setToolTip("Drag to see the text, the KV picture and the statistics as they "
                               "were after any round; the end is live again")
        # a fixed size: a count that grows during a run must not re-lay out (and repaint) the window
        self.label = SteadyLabel("no rounds", LABEL_WIDEST)
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QtWidgets.QLabel("Round"))
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.label)
        self.slider.valueChanged.connect(self._moved)
        self._total = 0
        self._live = False         # a run is going: the slider's end follows its rounds

    def set_live(self, live: bool) -> None:
        """Whether a run is going (its end is "live"); once it ended, its end is its last round."""
        self._live = live
        self._label()

    @property
    def at_end(self) -> bool:
        return self.slider.value() == self._total

    def set_total(self, n: int) -> None:
        """n rounds exist now; a slider at the end follows them (live), elsewhere it stays."""
        self.show_at(n if self.at_end else self.slider.value(), n)

    def show_at(self, k: int, total: int) -> None:
        """Show round k of ``total`` without asking for it (``seek`` is not emitted): the
        window moved there itself (a new run, an opened session, a replay)."""
        self._total = total
        self.slider.blockSignals(True)
        self.slider.setRange(0, total)
        self.slider.setValue(k)
        self.slider.blockSignals(False)
        self._label()

    def _moved(self, k: int) -> None:
        self._label()
        self.seek.emit(k)

    def _label(self) -> None:
        k = self.slider.value()
        self.label.setText("no rounds" if not self._total else
                           f"{k} of {self._total}" + (" (live)" if self._live and k == self._total else ""))
