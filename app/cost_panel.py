"""The cost panel: measured α and f, the textbook speed-up curve and what-if sliders,
and this machine's calibrated curve beside it.

The textbook model: a speculative step drafting n tokens costs ``n·f + 1`` target passes and yields
``E + 1`` tokens with ``E = α + α² + … + αⁿ``, so the speed-up is ``(E + 1) / (n·f + 1)``.
The formulas, and how α (fitted to the run's drafts: not the acceptance rate) and f (draft
time per drafted token ÷ target time per token) are read from a run, live in
:mod:`specscope.core.measure.cost.model` (``textbook_speedup``, ``best_n``, ``fit_alpha``,
``measure``); this module draws them.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from specscope.app.plot_base import (CALIBRATED_COLOR, MEASURED_COLOR, cache_static_parts,
                                     coloured_key, styled_plot, with_caption)
from specscope.core.measure.cost.model import (Measured, best_n, calibrated_speedup, measure,
                                               textbook_speedup)
from specscope.core.measure.stats import Stats, speedup_of

from .cost_words import measured_sentence

__all__ = ["CostPanel", "N_PLOT_MAX", "ALPHA_DEFAULT", "F_DEFAULT"]

N_PLOT_MAX = 8                # the curve covers n = 1..max(N_PLOT_MAX, n_max)
ALPHA_DEFAULT = 0.7           # slider values before anything is measured
F_DEFAULT = 0.1
SLIDER_STEPS = 1000
WIDE_MIN_WIDTH_PX = 760       # at least this wide: the plot beside the values (the tab is a
                              # scroll page as tall as what is below the panel: its height says
                              # nothing of the room on screen, and beside is what fits 768 pixels)
WIDE_COLUMN_PX = 400
_NO_MAX_PX = 16777215         # QWIDGETSIZE_MAX

CURVE_COLOR = "#0072b2"
BEST_COLOR = "#e69f00"

TARGET_TIME_TIP_BASELINE = (
    "Target time per token = baseline run's target time ÷ its tokens "
    "(t_verify / n_tokens of the target-only run).")
TARGET_TIME_TIP_ESTIMATE = (
    "No baseline run yet, so the target time per token is estimated from this run: "
    "verify time ÷ rounds (t_verify / n_rounds), the time of one verification batch of "
    "1 + the mean draft length tokens, taken to cost one target token as the textbook model "
    "assumes. A batch costs more than one token, so this overstates the target's token and "
    "understates f. Run a baseline with the same prompt and settings for a real measurement.")
F_TIP = (
    "f = cost of one draft token ÷ cost of one target token.\n"
    "Draft time per token = draft time ÷ drafted tokens (t_draft / n_drafted).\n"
    "Target time per token: from the baseline run if there is one (t_verify / n_tokens), "
    "else verify time ÷ rounds of this run (t_verify / n_rounds).")
BASELINE_TIP = (
    "When the baseline run (the target alone, same prompt and settings) was measured, and how "
    "much of the CPU other processes took meanwhile. More than 5 minutes from the run, or under "
    "other processes' load half a core apart, it is stale: the speed-up is marked and f comes "
    "from the run itself (core/session/baseline_check.py). ↻ after the speed-up in the stats bar "
    "measures it again.")
ALPHA_TIP = (
    "α = probability that the target keeps a drafted token, given it kept the ones before.\n"
    "Fitted so that the textbook model's expected accepted tokens, summed over this run's "
    "drafts, equals the accepted count. It is higher than the acceptance rate "
    "(accepted ÷ drafted) because a rejection discards the rest of the draft.")


KEY_TIP = ("Blue circles: the textbook model (E + 1)/(n·f + 1) at the sliders' α and f. Green "
           "squares: the speed-up calibrated on this machine (Calibrate), at the slider's α.")


def key_html(calibrated: bool) -> str:
    """The curves' names in their colours (the calibrated one where it is drawn)."""
    parts = [(CURVE_COLOR, "━●━", "textbook (E + 1)/(n·f + 1)")]
    if calibrated:
        parts.append((CALIBRATED_COLOR, "━■━", "calibrated on this machine"))
    return coloured_key(parts)


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"


# ============================================================================ the widget

class CostPanel(QtWidgets.QWidget):
    """Measured α and f, the textbook speed-up over n, and what-if sliders."""

    calibrate_requested = QtCore.Signal()      # Calibrate (or, while calibrating, its Stop) pressed

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._measured: Measured | None = None
        self._baseline = None              # how the baseline stands to the run (BaselineCheck)
        self._stale_speedup: float | None = None
        self._n_max = 0
        self._alpha = ALPHA_DEFAULT
        self._f = F_DEFAULT
        self._follow = True   # sliders follow the measurement until the user moves one
        self._view: tuple[int, float] | None = None
        self._break_even_right: bool | None = None
        self._cal = None                   # this pair's Calibration (show_calibrated), or None
        self._cal_sync = "reuse"

        self._layout = QtWidgets.QGridLayout(self)
        self._layout.setContentsMargins(6, 6, 6, 6)
        self._layout.setSpacing(6)
        self._wide: bool | None = None
        self._build_values()
        self._build_plot()
        self._build_sliders()
        self._build_text()
        self._arrange(wide=False)

        self._alpha_slider.valueChanged.connect(self._alpha_moved)
        self._f_slider.valueChanged.connect(self._f_moved)
        self._use_measured.clicked.connect(self.use_measured)
        self.calibrate_button.clicked.connect(self.calibrate_requested)
        self._set_sliders(ALPHA_DEFAULT, F_DEFAULT)
        self._redraw()

    def _build_values(self) -> None:
        """The run's measured values, one labelled row each (their tooltips say how)."""
        box = QtWidgets.QGroupBox("Measured in this run")
        form = QtWidgets.QFormLayout(box)
        form.setLabelAlignment(QtCore.Qt.AlignmentFlag.AlignLeft)
        form.setHorizontalSpacing(12)
        form.setVerticalSpacing(3)
        self._values: dict[str, QtWidgets.QLabel] = {}
        rows = (
            ("rate", "Acceptance rate", "Accepted ÷ drafted tokens (llama.cpp's accept%)."),
            ("alpha", "α, per token", ALPHA_TIP),
            ("length", "Mean accepted length", "Tokens a verified draft yields on average: "
             "1 + accepted drafted tokens per round (llama.cpp's definition)."),
            ("draft", "Draft time per token", "Draft time ÷ drafted tokens (t_draft / n_drafted)."),
            ("target", "Target time per token", TARGET_TIME_TIP_ESTIMATE),
            ("f", "f = draft ÷ target cost", F_TIP),
            ("speedup", "Measured speed-up", "Speculative tokens/s ÷ baseline tokens/s "
             "(needs a baseline run with the same prompt and settings)."),
            ("baseline", "Baseline", BASELINE_TIP),
        )
        for key, text, tip in rows:
            name = QtWidgets.QLabel(text)
            value = QtWidgets.QLabel("—")
            value.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setWordWrap(key == "baseline")        # a sentence: its age and load
            name.setToolTip(tip)
            value.setToolTip(tip)
            form.addRow(name, value)
            self._values[key] = value
        self._names = {key: form.labelForField(self._values[key]) for key, _, _ in rows}
        self._box = box

    def _build_plot(self) -> None:
        """The speed-up over n: textbook and calibrated curves, the best n, the measured point."""
        self._plot = styled_plot("Predicted speed-up", "Speed-up (×)",
                                 "Drafted tokens per round, n", antialias=True)
        self._plot.setMinimumHeight(200)
        policy = self._plot.sizePolicy()     # as tall as the values beside it (pyqtgraph asks
        policy.setVerticalPolicy(QtWidgets.QSizePolicy.Policy.Ignored)    # for 480 pixels)
        self._plot.setSizePolicy(policy)
        p = self._plot.getPlotItem()
        p.getViewBox().setMouseEnabled(x=False, y=False)
        self._break_even = pg.InfiniteLine(
            pos=1.0, angle=0, movable=False,
            pen=pg.mkPen("#777777", width=1, style=QtCore.Qt.PenStyle.DashLine),
            label="break-even", labelOpts={"position": 0.06, "color": "#555555", "anchors": [(0, 1), (0, 1)]})
        p.addItem(self._break_even)
        self._nmax_line = pg.InfiniteLine(
            pos=4, angle=90, movable=False,
            pen=pg.mkPen("#bbbbbb", width=1, style=QtCore.Qt.PenStyle.DotLine),
            label="n_max", labelOpts={"position": 0.03, "color": "#777777", "anchors": [(0, 1), (0, 1)]})
        p.addItem(self._nmax_line)
        self._nmax_line.setVisible(False)
        self._curve = p.plot([], [], pen=pg.mkPen(CURVE_COLOR, width=2), symbol="o", symbolSize=6,
                             symbolBrush=CURVE_COLOR, symbolPen=None)
        self._cal_curve = p.plot([], [], pen=pg.mkPen(CALIBRATED_COLOR, width=2), symbol="s",
                                 symbolSize=6, symbolBrush=CALIBRATED_COLOR, symbolPen=None)
        # the curves' names under the plot: a legend inside it covered its lower part, and
        # with it the n_max line's label
        self._key = QtWidgets.QLabel()
        self._key.setToolTip(KEY_TIP)
        self._chart = with_caption(self._plot, self._key)
        self._best = pg.ScatterPlotItem(size=16, symbol="star", brush=pg.mkBrush(BEST_COLOR),
                                        pen=pg.mkPen("#7a5200"))
        p.addItem(self._best)
        self._best_label = pg.TextItem("", color="#7a5200", anchor=(0.5, 1.3))
        p.addItem(self._best_label, ignoreBounds=True)
        self._measured_pt = pg.ScatterPlotItem(size=12, symbol="d", brush=pg.mkBrush(MEASURED_COLOR),
                                               pen=pg.mkPen("#7a1f1f"))
        p.addItem(self._measured_pt)
        self._measured_label = pg.TextItem("", color="#7a1f1f", anchor=(-0.15, 0.5))
        p.addItem(self._measured_label, ignoreBounds=True)
        self._measured_pt.setVisible(False)
        self._measured_label.setVisible(False)
        p.setLimits(yMin=0.0)
        cache_static_parts(p)

    def _build_sliders(self) -> None:
        """The α and f what-if sliders, Calibrate and Use measured."""
        self._controls = QtWidgets.QWidget()
        grid = QtWidgets.QGridLayout(self._controls)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        self._alpha_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self._f_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self._alpha_readout = QtWidgets.QLabel()
        self._f_readout = QtWidgets.QLabel()
        for row, (text, slider, readout, tip) in enumerate((
                ("α (acceptance per token)", self._alpha_slider, self._alpha_readout,
                 "What if the target kept each drafted token with this probability?"),
                ("f (draft ÷ target cost)", self._f_slider, self._f_readout,
                 "What if one draft token cost this fraction of a target token? "
                 "Finer steps near 0."))):
            slider.setRange(0, SLIDER_STEPS)
            slider.setToolTip(tip)
            label = QtWidgets.QLabel(text)
            label.setToolTip(tip)
            readout.setMinimumWidth(QtGui.QFontMetrics(readout.font()).horizontalAdvance("0.000 ") + 4)
            readout.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(label, row, 0)
            grid.addWidget(slider, row, 1)
            grid.addWidget(readout, row, 2)
        grid.setColumnStretch(1, 1)
        self._use_measured = QtWidgets.QPushButton("Use measured")
        self._use_measured.setToolTip("Set α and f back to this run's measured values.")
        self._use_measured.setEnabled(False)
        self.calibrate_button = QtWidgets.QPushButton("Calibrate on this machine")
        self.calibrate_button.setToolTip(
            "Time the pair's real decodes here (verifying k tokens, a draft token, the sync, "
            "sampling and the engine's Python) and draw the speed-up they predict beside the "
            "textbook curve. Cached per pair and settings; seconds on the demo pair, longer on "
            "big models; pressed again, it stops. Run, Step and Baseline wait until it ends.")
        buttons = QtWidgets.QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.calibrate_button)
        buttons.addWidget(self._use_measured)
        grid.addLayout(buttons, 2, 0, 1, 3)

    def _build_text(self) -> None:
        """One plain-language sentence, and where the calibrated figures stand (hidden until
        set_calibration)."""
        self._summary = QtWidgets.QLabel()
        self._summary.setWordWrap(True)
        self._summary.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._summary.setMinimumHeight(QtGui.QFontMetrics(self._summary.font()).lineSpacing() * 3)
        self._summary.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        self._calibration_note = QtWidgets.QLabel()
        self._calibration_note.setWordWrap(True)
        self._calibration_note.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._calibration_note.setVisible(False)

    # ------------------------------------------------------------------ layout
    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        self._arrange(wide=event.size().width() >= WIDE_MIN_WIDTH_PX)
        if event.size().width() != event.oldSize().width():
            self._fit_height()
        super().resizeEvent(event)

    def _arrange(self, wide: bool) -> None:
        """Tall (a narrow tab): values, plot, sliders, sentence in a column. Wide: values,
        sliders and sentence on the left, the plot beside them."""
        if wide == self._wide:
            return
        self._wide = wide
        lay = self._layout
        for w in (self._box, self._chart, self._controls, self._summary, self._calibration_note):
            lay.removeWidget(w)
        for i in range(5):
            lay.setRowStretch(i, 0)
        for i in range(2):
            lay.setColumnStretch(i, 0)
        if wide:
            lay.addWidget(self._box, 0, 0)
            lay.addWidget(self._controls, 1, 0)
            lay.addWidget(self._chart, 0, 1, 3, 1)
            # the sentence and the calibration's line under both, in as few lines as they can:
            # in the column they took 8 lines and pushed the plot's axis below a 768-pixel screen
            lay.addWidget(self._summary, 3, 0, 1, 2)
            lay.addWidget(self._calibration_note, 4, 0, 1, 2)
            lay.setRowStretch(2, 1)
            lay.setColumnStretch(1, 1)
            for w in (self._box, self._controls):
                w.setFixedWidth(WIDE_COLUMN_PX)
            for w in (self._summary, self._calibration_note):
                w.setMinimumWidth(0)
                w.setMaximumWidth(_NO_MAX_PX)
        else:
            lay.addWidget(self._box, 0, 0)
            lay.addWidget(self._chart, 1, 0)
            lay.addWidget(self._controls, 2, 0)
            lay.addWidget(self._summary, 3, 0)
            lay.addWidget(self._calibration_note, 4, 0)
            lay.setRowStretch(1, 1)
            lay.setColumnStretch(0, 1)
            for w in (self._box, self._controls, self._summary, self._calibration_note):
                w.setMinimumWidth(0)
                w.setMaximumWidth(_NO_MAX_PX)
        # The wrapped sentence gives the grid a height for each width, and Qt's grid leaves the
        # plot's fixed minimum out of it: in a column the panel was given less than its parts
        # need and they overlapped. A column's minimum height is therefore set outright.
        self._fit_height()

    def _fit_height(self) -> None:
        """In a column: the parts' minimum heights, the sentence's as wrapped at this width."""
        if self._wide is not False:
            self.setMinimumHeight(0)
            return
        s = self._summary
        extra = max(0, s.heightForWidth(max(s.width(), self.width() - 12)) - s.minimumSizeHint().height())
        self.setMinimumHeight(self._layout.totalMinimumSize().height() + extra)

    # ------------------------------------------------------------------ public API
    def update_measured(self, stats_spec: Stats, stats_baseline: Stats | None, n_max: int,
                        check=None) -> None:
        """Measure α and f from a speculative run (and a baseline run of the same prompt and
        settings, or None) drafting up to ``n_max`` tokens per round. ``check``: how the
        baseline stands to the run (core/session/baseline_check.py); a stale one gives only the speed-up,
        marked, and f comes from the run itself."""
        self._n_max = int(n_max)
        self._baseline = check if stats_baseline is not None else None
        stale = bool(check and check.stale)
        self._measured = measure(stats_spec, None if stale else stats_baseline, self._n_max)
        self._stale_speedup = None
        if stale and self._measured is not None:
            self._stale_speedup = speedup_of(stats_spec.tokens_per_s, stats_baseline.tokens_per_s)
        self._use_measured.setEnabled(self._measured is not None)
        self._show_values()
        if self._measured is not None and self._follow:
            self._set_sliders(self._measured.alpha, self._measured.f)
        self._redraw()

    def set_calibration(self, name: str, cal, from_cache: bool) -> None:
        """Say where the machine's calibrated figures (``specscope.core.measure.cost.calibrate``) of ``name``
        stand: one line, loud when they were taken under load (not cached, maybe off) or measured
        again because the cached ones drifted. ``cal`` None hides the line."""
        note = self._calibration_note
        if cal is None:
            note.setVisible(False)
            return
        warn = cal.under_load or bool(cal.note)
        note.setText(f"{'⚠ ' if warn else ''}Calibration of {name or 'the target alone'}: "
                     + cal.status(from_cache))
        note.setStyleSheet(f"color: {MEASURED_COLOR if cal.under_load else '#555555'}")
        note.setToolTip("\n".join(cal.lines()))
        note.setVisible(True)

    def show_calibrated(self, cal, sync: str = "reuse") -> None:
        """Draw the speed-up that ``cal`` (this pair's Calibration, core/measure/cost/calibrate.py) predicts
        at the slider's α, for n up to what it timed (k_max − 1); None removes it."""
        self._cal = cal if cal is not None and cal.has_draft and cal.k_max > 1 else None
        self._cal_sync = sync
        self._redraw()

    def set_calibrating(self, text: str | None) -> None:
        """While the window calibrates the pair the button says how far and stops it when
        pressed (None: done)."""
        self.calibrate_button.setText(text or "Calibrate on this machine")

    @property
    def calibrated(self):
        return self._cal

    def calibrated_curve(self) -> tuple[np.ndarray, np.ndarray]:
        x, y = self._cal_curve.xData, self._cal_curve.yData
        return (np.asarray(x if x is not None else []), np.asarray(y if y is not None else []))

    def calibration_text(self) -> str:
        return self._calibration_note.text() if self._calibration_note.isVisibleTo(self) else ""

    def clear(self) -> None:
        """Forget the measurement; the sliders go back to their defaults."""
        self._measured = self._baseline = self._stale_speedup = None
        self._n_max = 0
        self._follow = True
        self._use_measured.setEnabled(False)
        self._set_sliders(ALPHA_DEFAULT, F_DEFAULT)
        self._show_values()
        self._redraw()

    def use_measured(self) -> None:
        """Put the sliders back on the measured α and f, and keep them there as the run goes on."""
        self._follow = True
        if self._measured is not None:
            self._set_sliders(self._measured.alpha, self._measured.f)
        self._redraw()

    @property
    def alpha(self) -> float:
        return self._alpha

    @property
    def f(self) -> float:
        return self._f

    @property
    def measured(self) -> Measured | None:
        return self._measured

    def set_alpha(self, alpha: float) -> None:
        """As if the user moved the α slider (clamped to 0..1)."""
        self._alpha_slider.setValue(round(min(max(alpha, 0.0), 1.0) * SLIDER_STEPS))

    def set_f(self, f: float) -> None:
        """As if the user moved the f slider (clamped to 0..1)."""
        self._f_slider.setValue(_f_to_slider(f))

    @property
    def f_slider(self) -> QtWidgets.QSlider:
        return self._f_slider

    def calibrated_values(self) -> dict[int, float]:
        """n -> the calibrated curve's speed-up at the slider's α, as drawn ({}: none)."""
        return self._calibrated_values(max(N_PLOT_MAX, self._n_max))

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """The predicted speed-up curve: (n, speed-up)."""
        x, y = self._curve.xData, self._curve.yData
        return (np.asarray(x if x is not None else []), np.asarray(y if y is not None else []))

    def best_point(self) -> tuple[int, float]:
        x, y = self._best.getData()
        return int(x[0]), float(y[0])

    def measured_point(self) -> tuple[int, float] | None:
        """The measured speed-up as drawn, (n_max, speed-up), or None when not shown."""
        if not self._measured_pt.isVisible():
            return None
        x, y = self._measured_pt.getData()
        return int(x[0]), float(y[0])

    def summary_text(self) -> str:
        return self._summary.text()

    def baseline_text(self) -> str:
        """The Baseline line: when it was measured, under what load, and whether it is stale."""
        return self._values["baseline"].text()

    # ------------------------------------------------------------------ sliders
    def _set_sliders(self, alpha: float, f: float) -> None:
        """Programmatic: keep the exact values, move the handles, don't count as a user move."""
        self._alpha, self._f = float(alpha), float(f)
        for slider, v in ((self._alpha_slider, round(min(max(alpha, 0.0), 1.0) * SLIDER_STEPS)),
                          (self._f_slider, _f_to_slider(f))):
            slider.blockSignals(True)
            slider.setValue(v)
            slider.blockSignals(False)
        self._show_readouts()

    def _alpha_moved(self, v: int) -> None:
        self._alpha = v / SLIDER_STEPS
        self._follow = False
        self._show_readouts()
        self._redraw()

    def _f_moved(self, v: int) -> None:
        self._f = _slider_to_f(v)
        self._follow = False
        self._show_readouts()
        self._redraw()

    def _show_readouts(self) -> None:
        self._alpha_readout.setText(f"{self._alpha:.3f}")
        self._f_readout.setText(f"{self._f:.3f}" if self._f <= 1.0 else f"{self._f:.2f} (>1)")

    # ------------------------------------------------------------------ drawing
    def _show_values(self) -> None:
        m = self._measured
        v = self._values
        if m is None:
            for label in v.values():
                label.setText("—")
            v["speedup"].setText("— (run a baseline with the same prompt)")
            self._set_tip("target", TARGET_TIME_TIP_ESTIMATE)
            return
        v["rate"].setText(f"{m.acceptance_rate:.2f}")
        v["alpha"].setText(f"{m.alpha:.2f}   (fitted to the accepted count)")
        v["length"].setText(f"{m.mean_accepted_length:.2f} tokens per verified draft")
        v["draft"].setText(_ms(m.draft_s_per_token))
        if m.target_from_baseline:
            v["target"].setText(f"{_ms(m.target_s_per_token)}   (baseline run)")
            self._set_tip("target", TARGET_TIME_TIP_BASELINE)
        else:
            why = "its baseline is stale" if self._baseline is not None else "no baseline yet"
            v["target"].setText(f"{_ms(m.target_s_per_token)}   (a batch of {m.mean_batch:.1f} "
                                f"verified; {why})")
            self._set_tip("target", TARGET_TIME_TIP_ESTIMATE)
        v["f"].setText(f"{m.f:.3f}")
        b = self._baseline
        v["baseline"].setText(("⚠ " if b.stale else "") + b.describe() if b else "—")
        v["baseline"].setStyleSheet(f"color: {MEASURED_COLOR}" if b and b.stale else "")
        if self._stale_speedup is not None:
            v["speedup"].setText(f"{self._stale_speedup:.2f}×   ⚠ stale baseline")
        elif m.speedup is None:
            v["speedup"].setText("— (run a baseline with the same prompt)")
        else:
            v["speedup"].setText(f"{m.speedup:.2f}×   ({m.spec_tokens_per_s:.1f} vs "
                                 f"{m.baseline_tokens_per_s:.1f} tokens/s)")

    def _set_tip(self, key: str, tip: str) -> None:
        self._values[key].setToolTip(tip)
        name = self._names.get(key)
        if name is not None:
            name.setToolTip(tip)

    def _redraw(self) -> None:
        alpha, f = self._alpha, self._f
        n_top = max(N_PLOT_MAX, self._n_max)
        n = np.arange(1, n_top + 1)
        s = np.array([textbook_speedup(alpha, int(k), f) for k in n])
        self._curve.setData(n.astype(float), s)
        nb, sb = best_n(alpha, f, n_top)
        self._best.setData([float(nb)], [sb])
        self._best_label.setText(f"textbook best: n = {nb}, {sb:.2f}×")
        # centred above the star, but kept inside the plot at either end
        edge = (nb - 0.5) / n_top
        self._best_label.setAnchor((0.15 if edge < 0.2 else 0.85 if edge > 0.8 else 0.5, 1.3))
        self._best_label.setPos(float(nb), sb)

        right_end = abs(s[-1] - 1.0) > abs(s[0] - 1.0)  # "break-even" where the curve is away
        if right_end != self._break_even_right:
            self._break_even_right = right_end
            label = self._break_even.label
            label.anchors = [(1, 1), (1, 1)] if right_end else [(0, 1), (0, 1)]
            label.setPosition(0.98 if right_end else 0.02)

        m = self._measured
        top = max(float(s.max()), 1.0)
        cal_at = self._calibrated_values(n_top)
        if cal_at:
            self._cal_curve.setData([float(k) for k in cal_at], list(cal_at.values()))
            top = max(top, max(cal_at.values()))
        else:
            self._cal_curve.setData([], [])
        self._key.setText(key_html(bool(cal_at)))
        right_half = self._n_max > n_top / 2
        if self._n_max > 0:
            self._nmax_line.setVisible(True)   # first: a hidden label ignores a new format
            self._nmax_line.setPos(self._n_max)
            label = self._nmax_line.label
            label.setFormat(f"n_max = {self._n_max}")
            label.anchors = [(1, 1), (1, 1)] if right_half else [(0, 1), (0, 1)]  # text inside the plot
            label.updatePosition()
        else:
            self._nmax_line.setVisible(False)
        if m is not None and m.speedup is not None and self._n_max > 0:
            self._measured_pt.setData([float(self._n_max)], [m.speedup])
            self._measured_label.setText(f"measured {m.speedup:.2f}×")
            self._measured_label.setAnchor((1.12, 0.5) if right_half else (-0.12, 0.5))
            self._measured_label.setPos(float(self._n_max), m.speedup)
            self._measured_pt.setVisible(True)
            self._measured_label.setVisible(True)
            top = max(top, m.speedup)
        else:
            self._measured_pt.setVisible(False)
            self._measured_label.setVisible(False)
        p = self._plot.getPlotItem()
        view = (n_top, round(top * 1.22, 6))
        if view != self._view:  # axis work only when the extent changes
            self._view = view
            p.setXRange(0.5, n_top + 0.5, padding=0)
            p.setYRange(0.0, view[1], padding=0)
            p.getAxis("bottom").setTicks([[(float(k), str(k)) for k in n]])
        self._summary.setText(self._sentence(nb, sb, cal_at))
        self._fit_height()

    def _calibrated_values(self, n_top: int) -> dict[int, float]:
        """n -> the calibrated speed-up at the slider's α, for the n the calibration covers."""
        if self._cal is None:
            return {}
        return {k: calibrated_speedup(self._cal, k, alpha=self._alpha, sync=self._cal_sync)
                for k in range(1, min(n_top, self._cal.k_max - 1) + 1)}

    def _calibrated_sentence(self, values: dict[int, float]) -> str:
        if not values:
            return ""
        nb = max(values, key=values.get)
        at = (f"{values[self._n_max]:.2f}× at n = {self._n_max} (your n_max), "
              if self._n_max in values and self._n_max != nb else "")
        text = (f" Calibrated on this machine (its own decode costs and f = {self._cal.f:.2f}): "
                f"{at}{values[nb]:.2f}× at n = {nb} (best)")
        return text + (", so no draft length pays here." if values[nb] < 1.0 else ".")

    def _sentence(self, nb: int, sb: float, cal_at: dict[int, float]) -> str:
        """What the panel says: what was measured first (where a run was), then what the
        textbook model and the calibration predict."""
        model = self._model_sentence(nb, sb, cal_at)
        m = self._measured
        if m is None:
            return model + " Nothing measured yet: these are example values; run a draft to measure α and f."
        if m.speedup is None or self._n_max <= 0:
            return model
        return measured_sentence(m, self._n_max) + " " + model

    def _model_sentence(self, nb: int, sb: float, cal_at: dict[int, float]) -> str:
        alpha, f = self._alpha, self._f
        text = f"At α = {alpha:.2f} and f = {f:.2f} the textbook model predicts "
        s_nmax = textbook_speedup(alpha, self._n_max, f) if self._n_max > 0 else 0.0
        if self._n_max > 0 and self._n_max != nb and s_nmax < sb - 0.005:
            text += (f"{s_nmax:.2f}× at n = {self._n_max} (your n_max) and "
                     f"{sb:.2f}× at n = {nb} (best).")
        elif self._n_max > 0 and self._n_max != nb:
            text += (f"{s_nmax:.2f}× at n = {self._n_max} (your n_max), as good as "
                     f"the best, n = {nb}.")
        else:
            text += f"{sb:.2f}× at n = {nb} (best)."
        if sb < 1.0:
            text += " No draft length pays at these values."
        return text + (self._calibrated_sentence(cal_at) or (
            " (The textbook model takes a verification of n + 1 tokens to cost one target token; "
            "Calibrate on this machine draws what this CPU's measured costs predict.)"))


def _f_to_slider(f: float) -> int:
    """f = (v / steps)²: fine steps near 0 (0.01 at 10 %, 0.1 at 32 %, 0.25 at half way)."""
    return round(np.sqrt(min(max(f, 0.0), 1.0)) * SLIDER_STEPS)


def _slider_to_f(v: int) -> float:
    return (v / SLIDER_STEPS) ** 2
