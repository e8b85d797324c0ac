"""The drafter panel's synthetic-acceptance box (llama.cpp's --spec-synth-len and
--spec-synth-rates, core/engine/synth.py): benchmark only, the text is not valid output."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QSizePolicy,
                               QVBoxLayout, QWidget)

SYNTH_WARNING = ("⚠ SYNTHETIC ACCEPTANCE — benchmark only: draft tokens are accepted at random, "
                 "so the generated text is NOT valid output. Timings are real.")
SYNTH_RATE_SLIDERS = 8       # per-position sliders for drafts up to this long
SYNTH_STEPS = 100


class SynthBox(QGroupBox):
    """llama.cpp's benchmark-only synthetic acceptance (--spec-synth-len / --spec-synth-rates):
    a checkable box with a mean-length slider or one slider per draft position, and a loud
    warning while it is on. Off (unchecked) by default and never restored from saved settings."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__("Synthetic acceptance (benchmark only)", parent)
        self.setCheckable(True)
        self.setChecked(False)
        self.setToolTip("llama.cpp's --spec-synth-len / --spec-synth-rates: the drafter drafts and "
                        "the target verifies as usual (every timing is real), but each draft token "
                        "is kept at random with the chosen probability, except a drafted end of "
                        "generation, which is never kept (llama-server's rule; llama.cpp's own rule "
                        "keeps one the target samples too). The text is not valid output.")
        from PySide6.QtWidgets import QSlider
        lay = QVBoxLayout(self)
        lay.setSpacing(3)
        self.warning = QLabel(SYNTH_WARNING)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("color:#ffffff; background:#b42318; font-weight:bold; padding:4px")
        self.warning.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.warning)
        self.mode = QComboBox()
        self.mode.addItem("mean accepted length (--spec-synth-len)", "len")
        self.mode.addItem("per-position rates (--spec-synth-rates)", "rates")
        lay.addWidget(self.mode)
        row = QHBoxLayout()
        self.length = QSlider(Qt.Orientation.Horizontal)
        self.length.setToolTip("Mean accepted length L, the target's token included (1: nothing is "
                               "kept; n_max + 1: every draft token is kept); the per-position rates "
                               "are αⁱ with α found as llama.cpp finds it")
        self.length_readout = QLabel()
        self.length_readout.setMinimumWidth(120)
        row.addWidget(QLabel("L"))
        row.addWidget(self.length, 1)
        row.addWidget(self.length_readout)
        self.length_row = QWidget()
        self.length_row.setLayout(row)
        self.length_row.layout().setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.length_row)
        self.rates_box = QWidget()
        rates_grid = QGridLayout(self.rates_box)
        rates_grid.setContentsMargins(0, 0, 0, 0)
        rates_grid.setVerticalSpacing(0)
        self.rates: list = []
        self.rate_readouts: list[QLabel] = []
        for i in range(SYNTH_RATE_SLIDERS):
            slider = QSlider(Qt.Orientation.Horizontal)
            slider.setRange(0, SYNTH_STEPS)
            slider.setValue(round(SYNTH_STEPS * 0.8 ** (i + 1)))
            slider.setToolTip(f"a{i + 1}: the share of rounds that keep at least {i + 1} draft "
                              "token(s) (unconditional; must not increase with the position)")
            readout = QLabel()
            readout.setMinimumWidth(36)
            rates_grid.addWidget(QLabel(f"a{i + 1}"), i, 0)
            rates_grid.addWidget(slider, i, 1)
            rates_grid.addWidget(readout, i, 2)
            self.rates.append(slider)
            self.rate_readouts.append(readout)
            slider.valueChanged.connect(self._moved)
        lay.addWidget(self.rates_box)
        self.n_max = 3
        self.length.setRange(0, self.n_max * SYNTH_STEPS)
        self.length.setValue(round(1.5 * SYNTH_STEPS))
        self.toggled.connect(self._moved)
        self.mode.currentIndexChanged.connect(self._moved)
        self.length.valueChanged.connect(self._moved)
        self._moved()

    def set_n_max(self, n_max: int) -> None:
        """The longest draft the chosen drafters propose (llama.cpp's n_max for the rates)."""
        if n_max == self.n_max:
            return
        value = self.synth_len()
        self.n_max = n_max
        self.length.blockSignals(True)
        self.length.setRange(0, max(0, n_max) * SYNTH_STEPS)
        self.length.setValue(round((min(value, n_max + 1) - 1) * SYNTH_STEPS))
        self.length.blockSignals(False)
        self._show()

    def synth_len(self) -> float:
        return 1.0 + self.length.value() / SYNTH_STEPS

    def set_fields(self, synth_len: float, synth_rates: tuple[float, ...]) -> None:
        """As a run had it (SpecSettings' synth_len and synth_rates): off, a length or rates."""
        from specscope.core.engine.synth import is_synthetic
        if synth_rates:
            self.mode.setCurrentIndex(self.mode.findData("rates"))
            for slider, rate in zip(self.rates, synth_rates):
                slider.setValue(round(rate * SYNTH_STEPS))
        elif is_synthetic(synth_len, ()):
            self.mode.setCurrentIndex(self.mode.findData("len"))
            self.length.setValue(round((synth_len - 1.0) * SYNTH_STEPS))
        self.setChecked(is_synthetic(synth_len, synth_rates))

    def rate_values(self) -> tuple[float, ...]:
        return tuple(s.value() / SYNTH_STEPS for s in self.rates[:min(self.n_max, SYNTH_RATE_SLIDERS)])

    def fields(self) -> dict:
        """SpecSettings fields: off, a length or rates (with a draft longer than the sliders,
        rates of the wrong length: validation says so)."""
        if not self.isChecked():
            return {}
        if self.mode.currentData() == "len":
            return {"synth_len": self.synth_len()}
        return {"synth_rates": self.rate_values()}

    def _moved(self, *_args) -> None:
        self._show()
        self.changed.emit()

    def _show(self) -> None:
        on = self.isChecked()
        by_len = self.mode.currentData() == "len"
        self.warning.setVisible(on)
        self.length_row.setVisible(on and by_len)
        self.rates_box.setVisible(on and not by_len)
        for i, (slider, readout) in enumerate(zip(self.rates, self.rate_readouts)):
            shown = i < self.n_max
            slider.setVisible(shown)
            readout.setVisible(shown)
            self.rates_box.layout().itemAtPosition(i, 0).widget().setVisible(shown)
            readout.setText(f"{slider.value() / SYNTH_STEPS:.2f}")
        from specscope.core.errors import ConfigError
        from specscope.core.engine.synth import resolve_rates
        try:
            rates = resolve_rates(self.synth_len(), (), self.n_max)
            alpha = rates[1] / rates[0] if len(rates) > 1 and rates[0] > 0 else (rates[0] if rates else 0.0)
            self.length_readout.setText(f"{self.synth_len():.2f} (α = {alpha:.2f})")
        except ConfigError:
            self.length_readout.setText(f"{self.synth_len():.2f}")
