"""What distance costs per round: the pair calibrated on this machine's CPU and where
the placement puts it (a model on an rpc-server), side by side in the cost tab.

Measure runs :func:`specscope.core.measure.cost.distance.measure_distance` on its own thread: two
calibrations (cached like every calibration), each timing real decodes where the models run, so
the placed one holds the round trip. The view then shows

- a plot of a verification of k tokens against k, here and as placed, the gap shaded: what the
  network adds is paid per decode, nearly flat in k;
- a table of one round at the run's draft length, in its parts (drafting, verifying, the rest),
  here and as placed, and the target alone per token;
- one sentence: what the network adds per round and what that does to the predicted speed-up
  (the target alone pays the round trip every token, a round once per verification), and, after
  a run under this placement, about how much of that run's time went to the network.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy

from .plot_base import cache_static_parts, styled_plot
from .task import ERROR_STYLE, BackgroundTask, MeasureView, table_label

__all__ = ["DistanceView", "DistanceRequest", "RoundShape"]

LOCAL_COLOR = "#009e73"
PLACED_COLOR = "#d55e00"
GAP_COLOR = (213, 94, 0, 50)
ALL_LOCAL = ("Both models run on this machine: a round crosses no network. Put the target (or "
             "the draft) on an rpc-server under Models ▸ Advanced, then Measure here to see what "
             "the distance costs per round.")


@dataclass(frozen=True)
class RoundShape:
    """The round to account for: draft length n, unconditional per-position acceptance a_1..a_n,
    the sync mode, the mean draft decodes per round (None: n) and where it comes from."""

    n: int
    acceptance: tuple[float, ...]
    sync: str = "reuse"
    n_draft: float | None = None
    source: str = ""
    run_rounds: int = 0            # the run it came from, when it ran under this placement
    run_seconds: float = 0.0


@dataclass(frozen=True)
class DistanceRequest:
    """What Measure calibrates (the window's controls) and the round it accounts for."""

    target: str
    draft: str | None
    engine: object                 # EngineSettings as the controls place the pair
    sampler: object
    n_past: int
    shape: RoundShape

    @property
    def remote(self) -> bool:
        from specscope.core.models.devices import is_remote
        e = self.engine
        return is_remote(e.target_devices, e.target_gpu_layers, e.rpc) or (
            self.draft is not None and is_remote(e.draft_devices, e.draft_gpu_layers, e.rpc))

    @property
    def where(self) -> str:
        from specscope.core.models.devices import placement
        e = self.engine
        text = f"target: {placement(e.target_devices, e.target_gpu_layers, e.rpc)}"
        if self.draft is not None:
            text += f"; draft: {placement(e.draft_devices, e.draft_gpu_layers, e.rpc)}"
        return text

    @property
    def k_max(self) -> int:
        return self.shape.n + 1


def measure(req: DistanceRequest, progress, stop):
    """The background task: both calibrations (core/measure/cost/distance.py)."""
    from specscope.core.measure.cost.distance import measure_distance
    return measure_distance(req.target, req.draft, req.engine, k_max=req.k_max, sampler=req.sampler,
                            n_past=req.n_past, stop=stop, progress=progress)


class DistanceView(MeasureView):
    """Verify cost over k here and as placed, one round's parts, Measure / Stop."""

    def __init__(self, parent=None):
        super().__init__("What distance costs per round (rpc-server)",
                         BackgroundTask(measure, "specscope-distance"),
                         "Calibrate the pair on this machine's CPU and where Models ▸ "
                         "Advanced places it (each cached afterwards; the first time takes "
                         "about ten seconds per placement on the demo pair)", parent=parent)
        self.result = None           # (DistanceRequest, Distance) of the last Measure
        lay = self.body
        self.where = QLabel(ALL_LOCAL)
        self.where.setWordWrap(True)
        self.where.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.where)
        self.plot = styled_plot("Verifying k tokens: here and as placed", "Time (ms)",
                                "Tokens in the verification batch, k", antialias=True,
                                tip="A verification batch of k tokens (a draft of k − 1 and the "
                                    "seed), calibrated on this machine's CPU and where the "
                                    "placement runs the target; the shaded gap is what the "
                                    "distance adds")
        self.plot.setMinimumHeight(200)
        p = self.plot.getPlotItem()
        p.getViewBox().setMouseEnabled(x=False, y=False)
        p.addLegend(offset=(10, 10))
        self.local_line = p.plot([], [], name="this machine's CPU", pen=pg.mkPen(LOCAL_COLOR, width=2),
                                 symbol="o", symbolSize=5, symbolBrush=LOCAL_COLOR, symbolPen=None)
        self.placed_line = p.plot([], [], name="as placed", pen=pg.mkPen(PLACED_COLOR, width=2),
                                  symbol="o", symbolSize=5, symbolBrush=PLACED_COLOR, symbolPen=None)
        self.gap = pg.FillBetweenItem(self.local_line, self.placed_line, brush=pg.mkBrush(*GAP_COLOR))
        p.addItem(self.gap)
        p.setLimits(yMin=0.0)
        cache_static_parts(p)
        self.plot.setVisible(False)
        lay.addWidget(self.plot, 1)
        self.table = table_label()
        self.table.setVisible(False)
        lay.addWidget(self.table)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.summary.setVisible(False)
        lay.addWidget(self.summary)
        lay.addWidget(self.row)
        self.row.ended.connect(self.refresh)        # Measure enabled as the placement allows

    # ------------------------------------------------------------------ the placement
    def refresh(self) -> None:
        """Say where the controls place the pair now; the last result stays until replaced, and
        its sentence follows the latest run when that ran under the measured placement."""
        from specscope.core.errors import SpecScopeError
        if self.running:
            return
        try:
            req = self.request()
        except SpecScopeError as exc:
            self.where.setText(str(exc))
            self.measure.setEnabled(False)
            return
        self.measure.setEnabled(req.remote)
        self.where.setText(f"As placed now — {req.where}." if req.remote else ALL_LOCAL)
        if self.result is not None:
            old, distance = self.result
            if old.engine == req.engine and old.target == req.target and old.draft == req.draft:
                self.result = (req, distance)
                self._show(req, distance)

    def showEvent(self, event) -> None:  # noqa: N802
        self.refresh()
        super().showEvent(event)

    # ------------------------------------------------------------------ running
    def check(self, req: DistanceRequest) -> None:
        from specscope.core.errors import ConfigError
        if not req.remote:
            raise ConfigError("both models run on this machine: there is no distance to measure")

    def _on_finished(self, req: DistanceRequest, distance) -> None:
        self.result = (req, distance)
        self.status.setText(self._calibration_status(req, distance))
        self._show(req, distance)

    @staticmethod
    def _calibration_status(req: DistanceRequest, distance) -> str:
        from specscope.core.models.devices import is_loopback
        parts = []
        for name, cal, cached in (("this machine", distance.local, distance.from_cache[0]),
                                  ("as placed", distance.placed, distance.from_cache[1])):
            if cal.under_load and name == "as placed" and all(map(is_loopback, req.engine.rpc)):
                parts.append(f"{name}: measured now (the rpc-server on this machine counts as "
                             "other load)")
            elif cal.under_load:
                parts.append(f"<span style='{ERROR_STYLE}'>⚠ {name}: taken under load, "
                             "figures may be off</span>")
            else:
                parts.append(f"{name}: {'cached' if cached else 'measured now'}")
        return "; ".join(parts)

    # ------------------------------------------------------------------ drawing
    def _show(self, req: DistanceRequest, distance) -> None:
        ks = np.arange(1, distance.k_max + 1)
        here, there = np.array([distance.verify_s(int(k)) for k in ks]).T * 1e3
        self.local_line.setData(ks.astype(float), here)
        self.placed_line.setData(ks.astype(float), there)
        p = self.plot.getPlotItem()
        p.setXRange(0.5, distance.k_max + 0.5, padding=0)
        p.setYRange(0.0, float(there.max(initial=0.0)) * 1.25 or 1.0, padding=0)
        p.getAxis("bottom").setTicks([[(float(k), str(k)) for k in ks]])
        self.plot.setVisible(True)
        self.table.setText(table_text(req, distance))
        self.table.setVisible(True)
        self.summary.setText(summary_text(req, distance))
        self.summary.setVisible(True)

    def shown_text(self) -> str:
        """The table and the sentence as shown (tests)."""
        return (self.table.text() + "\n" + self.summary.text()) if not self.table.isHidden() else ""


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def table_text(req: DistanceRequest, distance) -> str:
    """One round at the request's draft length in its parts, here and as placed (ms)."""
    s = req.shape
    head = f"{'ms':<26}{'this machine':>13}{'as placed':>11}{'distance adds':>15}"
    rows = [head]

    def row(name: str, a: float, b: float, extra: str = "") -> None:
        rows.append(f"{name:<26}{_ms(a):>13}{_ms(b):>11}{(b - a) * 1e3:>+15.2f}{extra}")

    if distance.local.has_draft and distance.placed.has_draft:
        here, there = distance.rounds(s.n, s.acceptance, s.sync, s.n_draft)
        n_text = f"{s.n_draft:.2f}" if s.n_draft is not None else str(s.n)
        row(f"draft {n_text} tokens", here.draft, there.draft)
        row(f"verify {s.n + 1} tokens", here.verify, there.verify)
        row("sampling, sync, Python", here.rest, there.rest)
        share = (there.total - here.total) / there.total if there.total > 0 else 0.0
        row(f"round, n = {s.n}", here.total, there.total, f"  ({100 * share:.0f}% of it)")
        row("target alone, per token", here.token, there.token)
        rows.append(f"{'predicted speed-up':<26}{here.speedup:>12.2f}×{there.speedup:>10.2f}×")
    else:
        for k in sorted({1, s.n + 1}):
            row(f"verify {k} token{'s' if k > 1 else ''}", *distance.verify_s(k))
    return "\n".join(rows)


def _more(seconds: float) -> str:
    """+1.03 ms → "1.03 ms more"; −0.2 ms → "0.20 ms less"."""
    return f"{abs(seconds) * 1e3:.2f} ms {'more' if seconds >= 0 else 'less'}"


def summary_text(req: DistanceRequest, distance) -> str:
    """Plain sentences: what the placement adds to a verification and whether that is a cost
    per decode (the round trip) or per token (a slower or faster device there); what it does
    to a round and to the predicted speed-up; how much of the latest run under this placement
    it took."""
    s = req.shape
    k_top = distance.k_max
    d1 = distance.verify_s(1)
    dk = distance.verify_s(k_top)
    a, b = d1[1] - d1[0], dk[1] - dk[0]
    text = (f"As placed, verifying 1 token takes {_more(a)} than on this machine's CPU, "
            f"{k_top} tokens {_more(b)}")
    if a > 0 and abs(b - a) <= 0.25 * a:
        text += (": nearly the same for every batch, a cost per decode (the round trip), so it "
                 "favours fewer, longer verifications.")
    elif b < a:
        text += ": the device there computes a batch faster than this CPU, which offsets the round trip."
    else:
        text += ": the device there computes a batch slower than this CPU, on top of the round trip."
    if not (distance.local.has_draft and distance.placed.has_draft):
        return text
    here, there = distance.rounds(s.n, s.acceptance, s.sync, s.n_draft)
    added = there.total - here.total
    text += (f" A round at n = {s.n} ({s.source}) takes {there.total * 1e3:.2f} ms instead of "
             f"{here.total * 1e3:.2f} ms ({_more(added)}); the target alone pays "
             f"{_more(there.token - here.token)} per token, so the predicted speed-up goes from "
             f"{here.speedup:.2f}× here to {there.speedup:.2f}× as placed.")
    if s.run_rounds and s.run_seconds > 0:
        spent = s.run_rounds * added
        text += (f" Over the last run ({s.run_rounds} rounds, {s.run_seconds * 1e3:.0f} ms) the "
                 f"placement {'cost' if spent >= 0 else 'saved'} about {abs(spent) * 1e3:.0f} ms "
                 f"({100 * abs(spent) / s.run_seconds:.0f}% of it).")
    return text
