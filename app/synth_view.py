"""Speed-up against acceptance, measured on this machine (the cost panel's lower half).

Measure runs :func:`specscope.core.measure.bench.synth_sweep.run_synth_sweep` off the UI thread (in the
window, in its loaded engine on the engine's thread: app/task.py's EngineTask): the chosen
pair at several synthetic mean accepted lengths (llama.cpp's benchmark-only
``--spec-synth-len``: the draft model drafts and the target verifies, every timing is real,
but draft tokens are kept at random), each against the target alone. The plot puts the
measured speed-ups (points, at the per-token acceptance the runs showed) beside the
calibrated model's curve (this machine's c(k), f, sampling and overheads) and the textbook
textbook curve (E + 1)/(n·f + 1) with the same f; the table lists every level.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSizePolicy

from .plot_base import CALIBRATED_COLOR, MEASURED_COLOR, cache_static_parts, styled_plot
from .task import BackgroundTask, MeasureView, table_label

TEXTBOOK_COLOR = "#0072b2"
NOTE = ("Measured with synthetic acceptance (llama.cpp's --spec-synth-len, benchmark only): the "
        "pair really drafts and verifies, so the timings are real, but draft tokens are kept at "
        "random — the text of these runs is NOT valid output and is not shown.")


def sweep(settings, progress, stop, engine=None):
    """The task: the sweep (core/measure/bench/synth_sweep.py) in ``engine`` or models of its own."""
    from specscope.core.measure.bench.synth_sweep import run_synth_sweep
    return run_synth_sweep(settings, stop=stop, engine=engine, progress=progress)


class SynthCurveView(MeasureView):
    """The measured curve, its two predictions, the table, and Measure / Stop."""

    measured = Signal(object)            # SynthCurve (also after Stop)

    def __init__(self, parent=None):
        # the window gives it its EngineTask (use_task): the sweep then runs in its loaded pair
        super().__init__("Speed-up against acceptance, measured on this machine",
                         BackgroundTask(sweep, "specscope-synth-sweep"),
                         "Run the pair (draft-simple, your n_max, sync and prompt; at most 64 "
                         "tokens) at 6 synthetic mean accepted lengths from 1 to n_max + 1, "
                         "each against the target alone", "stopping after the current run…", parent)
        self.curve = None
        lay = self.body
        note = QLabel(NOTE)
        note.setWordWrap(True)
        note.setStyleSheet("color:#b42318")
        note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(note)
        self.plot = styled_plot("Speed-up against per-token acceptance α", "Speed-up (×)",
                                "Per-token acceptance α", antialias=True)
        self.plot.setMinimumHeight(240)
        p = self.plot.getPlotItem()
        p.getViewBox().setMouseEnabled(x=False, y=False)
        p.addLegend(offset=(10, 10))
        p.addItem(pg.InfiniteLine(pos=1.0, angle=0, movable=False,
                                  pen=pg.mkPen("#777777", width=1, style=Qt.PenStyle.DashLine)))
        self.textbook_line = p.plot([], [], name="textbook (E + 1)/(n·f + 1)",
                                    pen=pg.mkPen(TEXTBOOK_COLOR, width=2, style=Qt.PenStyle.DashLine))
        self.calibrated_line = p.plot([], [], name="calibrated on this machine",
                                      pen=pg.mkPen(CALIBRATED_COLOR, width=2))
        self.points = pg.ScatterPlotItem(size=11, symbol="d", brush=pg.mkBrush(MEASURED_COLOR),
                                         pen=pg.mkPen("#7a1f1f"), name="measured")
        p.addItem(self.points)                      # named: the legend lists it
        p.setXRange(0.0, 1.0, padding=0.02)
        p.setLimits(yMin=0.0)
        cache_static_parts(p)
        lay.addWidget(self.plot, 1)
        self.table = table_label("Press Measure to run the pair at several synthetic acceptance levels.")
        self.table.setWordWrap(True)          # the sentence wraps on a narrow tab; the table won't
        lay.addWidget(self.table)
        lay.addWidget(self.row)

    def check(self, settings) -> None:
        settings.validate()

    def _on_finished(self, _settings, curve) -> None:
        self.show_curve(curve)
        self.measured.emit(curve)

    # ------------------------------------------------------------------ drawing
    def show_curve(self, curve) -> None:
        """Draw a SynthCurve: both predictions over α in [0, 1] and the measured points."""
        self.curve = curve
        if curve.calibration is None:
            self.status.setText("stopped before the calibration ended: nothing measured")
            return
        alpha = np.linspace(0.0, 1.0, 101)
        textbook = np.array([curve.textbook(a) for a in alpha])
        calibrated = np.array([curve.calibrated(a) for a in alpha])
        self.textbook_line.setData(alpha, textbook)
        self.calibrated_line.setData(alpha, calibrated)
        xs = [p.alpha_measured for p in curve.points]
        ys = [p.row.measured_speedup for p in curve.points]
        self.points.setData(xs, ys)
        top = max([1.0, *textbook, *calibrated, *ys])
        self.plot.getPlotItem().setYRange(0.0, top * 1.12, padding=0)
        self.plot.getPlotItem().setTitle(
            f"Speed-up against per-token acceptance α (n = {curve.n}, f = {curve.calibration.f:.3f})")
        self.table.setWordWrap(False)
        self.table.setText("\n".join(curve.lines()[2:]))
        busy = curve.others_cpu
        self.status.setText(("stopped: the points measured so far" if curve.stopped else
                             f"done in {curve.seconds:.0f} s")
                            + (f"; other processes used {100 * busy:.0f}% of the CPU meanwhile"
                               if busy is not None and busy >= 0.1 else ""))
