"""The live plots of a run's rounds over time: generation speed (rolling and whole-run tokens per
second) and time per round (draft / verify / sync / overhead, stacked). They read only the
rounds added since the last update (:class:`RoundSeries`: preallocated arrays that grow by
doubling, following pyqtgraph's ``scrollingPlots`` example)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from specscope.core.engine.events import RoundEvent

from .palette import plot_colour
from .plot_base import LivePlot, key_variants, small_legend, styled_plot

__all__ = ["RoundSeries", "SpeedPlot", "TimeSplitPlot", "SPLIT_COLORS", "SPLIT_PARTS",
           "TIME_SPLIT_ROUNDS", "SPEED_WINDOW_S", "SPEED_WINDOW_MIN_ROUNDS"]

# time split: Okabe–Ito colours (distinguishable with the common colour-vision deficiencies)
SPLIT_PARTS = ("draft", "translate", "verify", "sync", "overhead")
SPLIT_COLORS = {
    "draft": "#e69f00",      # orange
    "translate": "#009e73",  # bluish green: between the vocabularies (Python)
    "verify": "#0072b2",     # blue: the target's work
    "sync": "#cc79a7",       # reddish purple
    "overhead": "#9a9a9a",   # grey: outside llama.cpp
}
SPLIT_TIPS = {
    "draft": "draft: proposing tokens (the draft model's decodes, the n-gram lookups)",
    "translate": ("translate: re-tokenizing between the draft's and the target's vocabularies "
                  "(a draft of another vocabulary; Python and llama.cpp's tokenizers)"),
    "verify": "verify: the target evaluating the seed and the draft in one batch, and sampling",
    "sync": "sync: removing rejected tokens from the caches (or restoring a checkpoint)",
    "overhead": "overhead: time outside llama.cpp calls (Python glue)",
}
TIME_SPLIT_ROUNDS = 200          # rounds shown in "Time per round"
SPEED_WINDOW_S = 2.0             # rolling window of "Generation speed"
SPEED_WINDOW_MIN_ROUNDS = 8      # … but never fewer rounds than this
_INITIAL_CAPACITY = 1024


class _Series:
    """Per-round values in preallocated arrays that grow by doubling."""

    def __init__(self, names: Sequence[str], capacity: int = _INITIAL_CAPACITY):
        self.names = tuple(names)
        self.n = 0
        self._a = {k: np.zeros(capacity) for k in self.names}

    def __getitem__(self, name: str) -> np.ndarray:
        return self._a[name][:self.n]

    def reserve(self, n_more: int) -> None:
        need = self.n + n_more
        cap = len(self._a[self.names[0]])
        if need > cap:
            while cap < need:
                cap *= 2
            for k, v in self._a.items():
                grown = np.zeros(cap)
                grown[:self.n] = v[:self.n]
                self._a[k] = grown

    def append(self, columns: dict[str, np.ndarray]) -> None:
        m = len(next(iter(columns.values())))
        self.reserve(m)
        for k, v in columns.items():
            self._a[k][self.n:self.n + m] = v
        self.n += m

    def clear(self) -> None:
        self.n = 0


class RoundSeries:
    """Per round: the tokens and generation time so far, the time split (ms) and the rolling
    speed: tokens over the last SPEED_WINDOW_S seconds, and at least SPEED_WINDOW_MIN_ROUNDS."""

    def __init__(self):
        self.series = _Series(("t_end", "tokens", *SPLIT_PARTS, "index"))
        self.cum_tokens = 0.0
        self.cum_time = 0.0
        self.roll = np.zeros(_INITIAL_CAPACITY)

    @property
    def n(self) -> int:
        return self.series.n

    def __getitem__(self, name: str) -> np.ndarray:
        return self.series[name]

    def clear(self) -> None:
        self.series.clear()
        self.cum_tokens = self.cum_time = 0.0

    def take(self, new: Sequence[RoundEvent]) -> None:
        m = len(new)
        tokens = np.fromiter((len(e.emitted) for e in new), float, m)
        t_round = np.fromiter((e.t_round for e in new), float, m)
        cols = {
            "tokens": self.cum_tokens + np.cumsum(tokens),
            "t_end": self.cum_time + np.cumsum(t_round),
            **{part: np.fromiter((getattr(e, "t_" + part) for e in new), float, m) * 1e3
               for part in SPLIT_PARTS},
            "index": np.fromiter((e.index for e in new), float, m),
        }
        self.cum_tokens = float(cols["tokens"][-1])
        self.cum_time = float(cols["t_end"][-1])
        start = self.series.n
        self.series.append(cols)
        # rolling speed for the new rounds (cumulative sums with a leading 0)
        if len(self.roll) < self.series.n:
            grown = np.zeros(len(self.series["t_end"]) * 2)
            grown[:start] = self.roll[:start]
            self.roll = grown
        t_end, cum = self.series["t_end"], self.series["tokens"]
        i = np.arange(start, self.series.n)
        j = np.searchsorted(t_end, t_end[i] - SPEED_WINDOW_S, side="right") - 1  # last round before the window
        j = np.minimum(j, i - SPEED_WINDOW_MIN_ROUNDS)
        j = np.maximum(j, -1)
        t0 = np.where(j >= 0, t_end[np.maximum(j, 0)], 0.0)
        c0 = np.where(j >= 0, cum[np.maximum(j, 0)], 0.0)
        dt = t_end[i] - t0
        self.roll[i] = np.divide(cum[i] - c0, dt, out=np.zeros(len(i)), where=dt > 0)


LEGEND_MAX_SHARE = 0.45    # a legend taller than this share of the plot is hidden: a key in the x
                           # label names the parts where it fits (the tooltip always does)


class _LegendPlot(LivePlot):
    """A time series whose legend sits above the data; where the plot is too short for both,
    the legend is hidden (the plot's tooltip names its parts) rather than drawn over the data."""

    def reserve_px(self) -> float:
        height = self.view.height()
        need = self.legend.boundingRect().height() + 8.0
        fits = height <= 1 or need <= LEGEND_MAX_SHARE * height
        if self.legend.isVisible() != fits:
            self.legend.setVisible(fits)
            self.widget.show_key(not fits)      # the parts' colours named under the plot instead
        return need if fits else 0.0


class SpeedPlot(_LegendPlot):
    """3. Tokens per second over generation time: rolling and whole-run."""

    def __init__(self, title: str):
        super().__init__(styled_plot(
            title, "Tokens/s", "Time (s, prompt excluded)",
            f"Tokens generated per second: over the last {SPEED_WINDOW_S:g} s (at least "
            f"{SPEED_WINDOW_MIN_ROUNDS} rounds), and over the whole run so far.", antialias=True))
        p = self.plot
        self.legend = small_legend(p, colCount=2)
        self.roll = p.plot([], [], pen=pg.mkPen(plot_colour("target"), width=2), name=f"last {SPEED_WINDOW_S:g} s")
        self.mean = p.plot([], [], pen=pg.mkPen("#444444", width=1.5, style=QtCore.Qt.PenStyle.DashLine),
                           name="whole run")
        self.widget.keys = key_variants("Time (s)", [(plot_colour("target"), "━", f"last {SPEED_WINDOW_S:g} s"),
                                                     ("#444444", "╌", "whole run")])
        for item in (self.roll, self.mean):
            item.setClipToView(True)
            item.setDownsampling(auto=True, method="peak")
        p.setLimits(yMin=0.0, xMin=0.0)
        p.enableAutoRange(axis="x")
        p.getViewBox().setMouseEnabled(x=True, y=False)

    def clear(self) -> None:
        self.roll.setData([], [])
        self.mean.setData([], [])
        self.empty_axes((0.0, 1.0))

    def show(self, rounds: RoundSeries) -> None:
        n = rounds.n
        t_end = rounds["t_end"]
        self.roll.setData(t_end, rounds.roll[:n])
        mean = rounds.cum_tokens / rounds.cum_time if rounds.cum_time > 0 else 0.0
        self.mean.setData([0.0, float(t_end[-1])], [mean, mean])
        self.top = max(float(rounds.roll[:n].max()), mean, 1e-9)
        self.refit()


class TimeSplitPlot(_LegendPlot):
    """4. Where each of the latest rounds spent its time, stacked (ms)."""

    def __init__(self, title: str):
        super().__init__(styled_plot(
            title, "Milliseconds", f"Round (latest {TIME_SPLIT_ROUNDS})",
            "Where each round's time went, stacked:\n" + "\n".join(SPLIT_TIPS[k] for k in SPLIT_PARTS)))
        p = self.plot
        self.legend = small_legend(p, colCount=len(SPLIT_PARTS))
        self.bars: dict[str, pg.BarGraphItem] = {}
        for part in SPLIT_PARTS:
            bar = pg.BarGraphItem(x=[], height=[], y0=[], width=0.85,
                                  brush=pg.mkBrush(SPLIT_COLORS[part]), pen=pg.mkPen(None))
            p.addItem(bar)
            self.legend.addItem(bar, part)
            self.bars[part] = bar
        p.setLimits(yMin=0.0)
        p.enableAutoRange(axis="x")
        p.getViewBox().setMouseEnabled(x=True, y=False)
        shown = [part for part in SPLIT_PARTS if part != "translate"]     # (a rare part: tooltip)
        self.widget.keys = key_variants("Round", [(SPLIT_COLORS[part], "■", part) for part in shown])

    def clear(self) -> None:
        for bar in self.bars.values():
            bar.setOpts(x=[], height=[], y0=[])
        self.empty_axes((0.4, 10.6))

    def show(self, rounds: RoundSeries) -> None:
        lo = max(0, rounds.n - TIME_SPLIT_ROUNDS)
        x = rounds["index"][lo:] + 1           # rounds counted from 1, as everywhere in the window
        y0 = np.zeros(len(x))
        for part in SPLIT_PARTS:
            h = rounds[part][lo:]
            self.bars[part].setOpts(x=x, y0=y0, height=h)
            y0 = y0 + h
        self.top = max(float(y0.max()) if len(y0) else 1.0, 1e-6)
        self.refit()

    def resized(self) -> None:
        """The legend's entries in a row when there is room, else three."""
        cols = len(SPLIT_PARTS) if self.view.width() >= 420 else 3
        if self.legend.columnCount != cols:
            self.legend.setColumnCount(cols)
        super().resized()
