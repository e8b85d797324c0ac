"""The What-if tab's pickers and sliders (app/whatif_panel.py): which drafters are replayed (n-gram
types and draft-simple, checked together for a chain: llama.cpp tries the n-gram types first)
and the parameters SpecSettings carry for them, each type's sliders shown while it is
checked. ``changed`` on every move; :meth:`WhatIfControls.spec` is the setting they describe."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QGridLayout, QHBoxLayout, QLabel, QSlider,
                               QVBoxLayout, QWidget)

from specscope.core.engine.drafters import DRAFT_MODEL, NGRAM_TYPES
from specscope.core.engine.drafters.ngram_mod import NgramModParams

__all__ = ["WhatIfControls", "Knob"]

MAP_TYPES = ("ngram-simple", "ngram-map-k", "ngram-map-k4v")
# the knobs: key, label, type it belongs to, range, tooltip
KNOBS = [knob for t in MAP_TYPES for knob in (
            (f"{t} n", "n", t, 1, 24, f"{t}: length of the n-gram looked up (size N)"),
            (f"{t} m", "m", t, 1, 64, f"{t}: length of the m-gram drafted (size M)"))] \
    + [("ngram-map-k4v min hits", "min hits", "ngram-map-k4v", 1, 8,
        "ngram-map-k4v: hits a key needs before its values are drafted"),
       ("ngram-mod match", "match", "ngram-mod", 1, 32, "ngram-mod: lookup length (n-match)"),
       ("ngram-mod min", "min", "ngram-mod", 0, 64, "ngram-mod: fewer drafted tokens than this is no draft"),
       ("ngram-mod max", "max", "ngram-mod", 1, 64, "ngram-mod: most tokens drafted")]
P_MAX = 0.95                  # draft-simple's p_min slider ends here


def draft_knobs() -> list[tuple]:
    """draft-simple's knobs: n_max over the values its draft's pass covers, p_min in its steps
    (core/measure/whatif/run.py; imported when the tab is built, not with the window)."""
    from specscope.core.measure.whatif.run import N_VALUES, P_STEP
    return [("n_max", "n_max", DRAFT_MODEL, min(N_VALUES), max(N_VALUES), 1.0,
             "draft-simple: the most tokens drafted per round"),
            ("p_min", "p_min", DRAFT_MODEL, 0, round(P_MAX / P_STEP), P_STEP,
             "draft-simple: stop drafting when the draft's top token holds less than this share "
             "of its top-10 mass")]


class Knob(QWidget):
    """A slider and its value, in whole numbers or in steps of ``step`` (p_min)."""

    def __init__(self, label: str, lo: int, hi: int, tip: str, step: float = 1.0):
        super().__init__()
        self.step = step
        self.label = QLabel(label)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(lo, hi)
        self.slider.setPageStep(1)
        self.readout = QLabel()
        self.readout.setMinimumWidth(self.readout.fontMetrics().horizontalAdvance("0.00") + 4)
        for w in (self.label, self.slider, self.readout):
            w.setToolTip(tip)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.label)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.readout)
        self.slider.valueChanged.connect(self._show)
        self._show(self.slider.value())

    @property
    def value(self):
        v = self.slider.value()
        return round(v * self.step, 2) if self.step != 1.0 else v

    def set(self, value) -> None:
        """Show ``value`` without a change signal (the range grows to hold it)."""
        v = round(value / self.step)
        self.slider.blockSignals(True)
        self.slider.setMaximum(max(self.slider.maximum(), v))
        self.slider.setValue(v)
        self.slider.blockSignals(False)
        self._show(v)

    def _show(self, v: int) -> None:
        self.readout.setText(f"{v * self.step:.2f}" if self.step != 1.0 else str(v))


class WhatIfControls(QWidget):
    """The pickers and sliders (module docs)."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFixedWidth(262)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(1)
        checks = QGridLayout()
        checks.setHorizontalSpacing(4)
        checks.setVerticalSpacing(0)
        self.checks: dict[str, QCheckBox] = {}
        for i, t in enumerate((*NGRAM_TYPES, DRAFT_MODEL)):
            c = QCheckBox(t)
            c.setToolTip(f"{t}: check several for a chain (the n-gram types draft first, draft-simple "
                         "where none of them has a draft)")
            c.toggled.connect(self._checked)
            self.checks[t] = c
            checks.addWidget(c, i // 2, i % 2)
        lay.addLayout(checks)
        self.knobs: dict[str, Knob] = {}
        self.rows: dict[str, list[QWidget]] = {t: [] for t in self.checks}
        for key, label, t, lo, hi, step, tip in [(*k[:5], 1.0, k[5]) for k in KNOBS] + draft_knobs():
            knob = Knob(f"{t.removeprefix('ngram-')} {label}" if t != DRAFT_MODEL else label, lo, hi,
                        tip, step)
            knob.label.setMinimumWidth(84)
            knob.slider.valueChanged.connect(self.changed)
            self.knobs[key] = knob
            self.rows[t].append(knob)
            lay.addWidget(knob)
        self.policy = QComboBox()
        for name in ("fixed", "hf", "cost"):
            self.policy.addItem(name, name)
        self.policy.setToolTip("draft-simple's length per round: fixed n_max (llama.cpp), hf (+2 / −1, "
                               "Hugging Face) or cost (this machine's calibrated costs)")
        self.policy.currentIndexChanged.connect(self.changed)
        policy_row = QWidget()
        pl = QHBoxLayout(policy_row)
        pl.setContentsMargins(0, 0, 0, 0)
        label = QLabel("n policy")
        label.setMinimumWidth(84)
        pl.addWidget(label)
        pl.addWidget(self.policy, 1)
        self.rows[DRAFT_MODEL].append(policy_row)
        lay.addWidget(policy_row)
        lay.addStretch(1)

    def show_spec(self, spec) -> None:
        """Set the pickers and sliders to ``spec`` (no ``changed``)."""
        for t, c in self.checks.items():
            c.blockSignals(True)
            c.setChecked(t in spec.types)
            c.blockSignals(False)
        k = self.knobs
        for t in MAP_TYPES:
            k[f"{t} n"].set(spec.params(t).size_n)
            k[f"{t} m"].set(spec.params(t).size_m)
        k["ngram-map-k4v min hits"].set(spec.params("ngram-map-k4v").min_hits)
        mod = spec.params("ngram-mod")
        for key, value in (("match", mod.n_match), ("min", mod.n_min), ("max", mod.n_max)):
            k[f"ngram-mod {key}"].set(value)
        k["n_max"].set(max(1, spec.n_max))
        k["p_min"].set(spec.p_min)
        self.policy.blockSignals(True)
        self.policy.setCurrentIndex(max(0, self.policy.findData(spec.draft_policy)))
        self.policy.blockSignals(False)
        self._show_rows()

    def _show_rows(self) -> None:
        for t, widgets in self.rows.items():
            for w in widgets:
                w.setVisible(self.checks[t].isChecked())

    def _checked(self, _on: bool = False) -> None:
        self._show_rows()
        self.changed.emit()

    def spec(self, base):
        """The setting the controls describe: ``base`` (a SpecSettings: the run's own) with
        what they set."""
        k = self.knobs
        own = {t: replace(base.params(t), size_n=k[f"{t} n"].value, size_m=k[f"{t} m"].value)
               for t in MAP_TYPES}
        own["ngram-map-k4v"] = replace(own["ngram-map-k4v"], min_hits=k["ngram-map-k4v min hits"].value)
        own["ngram-mod"] = NgramModParams(k["ngram-mod match"].value, k["ngram-mod min"].value,
                                          k["ngram-mod max"].value)
        n_max = k["n_max"].value
        return replace(base, types=tuple(t for t, c in self.checks.items() if c.isChecked()),
                       n_max=n_max, n_min=min(base.n_min, n_max), p_min=k["p_min"].value,
                       draft_policy=self.policy.currentData(), synth_len=-1.0, synth_rates=(),
                       own=base.own.with_(own))
