"""The Compare view's controls: the pair and its drafts, the drafters (a checklist of llama.cpp's
types and a line of chains written as on the command line: ``ngram-simple,draft-simple
ngram-mod,draft-simple``), draft lengths, p_min, prompts, tokens, repetitions, sync, threads,
temperature and the acceptance rule; :meth:`SweepForm.settings` is the SweepSettings they
describe."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QFileDialog,
                               QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
                               QListWidget, QListWidgetItem)

from specscope.core.engine.drafters.registry import drafts_with
from specscope.core.measure.bench.lossless import DETERMINISTIC_GUARANTEE
from specscope.core.measure.bench.sweep import DEFAULT_REPEATS

from .form_parts import PairRows, combo, double_spin, row, spin, with_tip

__all__ = ["SweepForm"]

DEFAULT_N_VALUES = "1,2,4,8"
DEFAULT_N_PREDICT = 64
SHIPPED_PROMPTS = "Shipped benchmark prompts"
SHIPPED_DRAFTER_PROMPTS = "Shipped n-gram prompts (repeating and free-form)"
DRAFTER_PROMPT_FILE = "drafter_prompts.json"
CHOOSE_FILE = "Choose a file…"


class SweepForm(PairRows, QGroupBox):
    """The "Sweep" box: every control of a sweep. ``changed`` when what can run changes."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__("Sweep", parent)
        self.target: Path | None = None
        self.prompt_file: Path | None = None     # None: the shipped set
        grid = QGridLayout(self)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        self._pair_rows(grid, "Draft models to compare (each is paired with the target)")
        self._drafters_column(grid)
        grid.addLayout(self._run_form(), 0, 2, 5, 2)
        grid.addLayout(self._checks(), 5, 0, 1, 4)

    # ------------------------------------------------------------------ building
    def _drafters_column(self, grid: QGridLayout) -> None:
        from specscope.core.engine.drafters import DESCRIPTIONS, SPEC_TYPES
        self.drafters = with_tip(QListWidget(), "Each ticked type is one configuration (llama.cpp's --spec-type); "
                                            "the model drafters run once per n, each with each file "
                                            f"of its kind ({drafts_with()}); the n-gram types once")
        row_h = self.drafters.fontMetrics().height() + 8
        self.drafters.setMaximumHeight(2 * row_h + 2 * self.drafters.frameWidth())   # 2 rows if it wraps
        self.drafters.setFlow(QListWidget.Flow.LeftToRight)
        self.drafters.setWrapping(True)
        self.drafters.setResizeMode(QListWidget.ResizeMode.Adjust)   # re-wraps when the window narrows
        self.drafters.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        for name in SPEC_TYPES:
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name == "draft-simple" else Qt.CheckState.Unchecked)
            item.setToolTip(f"{name}: {DESCRIPTIONS[name]}")
            self.drafters.addItem(item)
        self.drafters.itemChanged.connect(lambda _item: self.changed.emit())
        grid.addWidget(QLabel("Drafters"), 4, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.drafters, 4, 1)
        self.chains = with_tip(QLineEdit(), "More configurations: chains of types joined by commas, separated by "
                                        "spaces (as --spec-type on the command line). A chain runs its types "
                                        "in llama.cpp's priority order, n-gram types first; the first non-empty "
                                        "draft wins the round")
        self.chains.setPlaceholderText("chains, e.g. ngram-simple,draft-simple ngram-mod,draft-simple")
        self.chains.textChanged.connect(lambda _text: self.changed.emit())

    def _run_form(self) -> QFormLayout:
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        self.n_values = with_tip(QLineEdit(DEFAULT_N_VALUES), "draft-simple's draft lengths to try: a list like "
                             "1,2,4,8 or a range like 1-8 (chains of n-gram types alone run once)")
        self.p_min_values = with_tip(QLineEdit("0"), "draft-simple's confidence cut-off (llama.cpp's --draft-p-min): "
                                 "stop drafting when the draft's top token holds less than this "
                                 "share of its top-10. A list like 0,0.5,0.75 sweeps it: each "
                                 "value is a configuration of its own (rows, heatmap, curves)")
        lengths = QHBoxLayout()
        lengths.addWidget(self.n_values, 3)
        lengths.addWidget(QLabel("p_min"))
        lengths.addWidget(self.p_min_values, 1)
        form.addRow("Draft lengths n", lengths)
        form.addRow("Chains", self.chains)
        self.prompts = QComboBox()
        self.prompts.addItems([SHIPPED_PROMPTS, SHIPPED_DRAFTER_PROMPTS, CHOOSE_FILE])
        self.prompts.activated.connect(self._prompts_chosen)
        prompts_row = QHBoxLayout()
        prompts_row.addWidget(self.prompts, 1)
        form.addRow("Prompts", prompts_row)
        cores = max(1, os.cpu_count() or 1)
        self.n_predict = spin(2, 4096, DEFAULT_N_PREDICT, "tokens generated by every run")
        self.repeats = spin(1, 20, DEFAULT_REPEATS, "runs per cell, each with its own baselines: the table "
                             "shows the speed-up's spread over them and flags a figure the spread does not "
                             "tell from 1× (1: no spread)")
        self.sync = combo(["reuse", "replay"], "draft cache sync: reuse its own rows, or replay the "
                           "verification batch as llama.cpp does")
        self.threads = spin(1, cores, cores, "CPU threads for each model (default: all cores, as in the "
                             "command line; on a machine busy with other work fewer can be faster)")
        form.addRow("Tokens per run", row(self.n_predict, "repeats", self.repeats, "sync", self.sync,
                                           "threads", self.threads))
        form.addRow("Temperature", self._sampling())
        return form

    def _sampling(self) -> QHBoxLayout:
        self.temperature = double_spin(0.0, 2.0, 0.0, 0.1, "0 (greedy): the target's argmax, llama.cpp's "
                                       "lossless case. Above 0: llama.cpp's sampler chain (top-k 40, top-p "
                                       "0.95, min-p 0.05, seed 42) at this temperature")
        self.temperature.setSpecialValueText("greedy")
        self.accept_rule = combo(["match", "ratio"], "match: llama.cpp's rule, the target samples and keeps "
                                  "the drafted token when it drew the same one (lossless against the "
                                  "baseline); ratio: speculative sampling, kept with probability min(1, p/q) "
                                  "(the same distribution, other tokens). At temperature the table adds what "
                                  "the other rule would expect on the same drafts")
        self.accept_rule.setEnabled(False)
        self.temperature.valueChanged.connect(lambda t: self.accept_rule.setEnabled(t > 0))
        return row(self.temperature, "acceptance rule", self.accept_rule)

    def _checks(self) -> QHBoxLayout:
        self.deterministic = with_tip(QCheckBox("Deterministic numerics"), DETERMINISTIC_GUARANTEE)
        self.ignore_eos = with_tip(QCheckBox("Ignore EOS"), "never sample end-of-generation tokens, so every "
                               "run has the same length")
        self.ignore_eos.setChecked(True)
        self.recalibrate = with_tip(QCheckBox("Recalibrate"), "measure c(k) and f again instead of using the "
                                "cached figures")
        self.alpha_on = QCheckBox("Assumed α")
        self.alpha = double_spin(0.0, 1.0, 0.7, 0.05, "also predict with this assumed per-token acceptance")
        self.alpha.setEnabled(False)
        self.alpha_on.toggled.connect(self.alpha.setEnabled)
        return row(self.deterministic, self.ignore_eos, self.recalibrate, self.alpha_on, self.alpha)

    # ------------------------------------------------------------------ the pair
    def can_run(self) -> bool:
        """A target, and a draft unless no configuration needs one."""
        return self.target is not None and (self.drafts.count() > 0 or not self._needs_draft())

    def _needs_draft(self) -> bool:
        """A ticked or written type that drafts with a file (a draft model or a head:
        registry.SpecType.uses_md)."""
        from specscope.core.engine.drafters import MD_TYPES
        words = self._ticked() + self.chains.text().replace(",", " ").split()
        return any(w in MD_TYPES for w in words)

    # ------------------------------------------------------------------ what the controls say
    def settings(self):
        """The SweepSettings the controls describe (raises ConfigError on bad input)."""
        from specscope.core.engine.engine import EngineSettings, SpecSettings
        from specscope.core.engine.sampling import SamplerSettings
        from specscope.core.errors import ConfigError
        from specscope.core.measure.bench.settings import (SweepSettings, load_prompts, parse_n_values,
                                                           parse_p_values)
        if self.target is None:
            raise ConfigError("choose a target model first")
        chains = self.chosen_chains()
        drafts = self.draft_paths() if self._needs_draft() else []
        if self._needs_draft() and not drafts:
            raise ConfigError(f"the ticked types draft with a file ({drafts_with()}): add one, or "
                              "pick drafters that need no file (the n-gram types, the target's MTP "
                              "blocks)")
        # the sequences each chain's types need (registry.SpecType.seqs; most need one)
        threads = dict(target_threads=self.threads.value(), draft_threads=self.threads.value(),
                       n_seq=max(SpecSettings(types=c).sequences() for c in chains))
        temp = self.temperature.value()
        rule = self.accept_rule.currentText() if temp > 0 else "match"
        engine = EngineSettings.deterministic(**threads) if self.deterministic.isChecked() \
            else EngineSettings(**threads)
        return SweepSettings(
            target=self.target, drafts=tuple(Path(d) for d in drafts),
            n_values=parse_n_values(self.n_values.text()),
            p_min_values=parse_p_values(self.p_min_values.text()),
            prompts=tuple(load_prompts(self.prompt_file)), n_predict=self.n_predict.value(),
            sampler=SamplerSettings(temperature=temp), ignore_eos=self.ignore_eos.isChecked(),
            engine=engine, sync=self.sync.currentText(), spec=SpecSettings(accept_rule=rule),
            lossless=rule == "match",      # ratio draws other tokens than the baseline (same distribution)
            repeats=self.repeats.value(),
            alpha=self.alpha.value() if self.alpha_on.isChecked() else None,
            recalibrate=self.recalibrate.isChecked(), chains=chains)

    def chosen_chains(self) -> tuple[tuple[str, ...], ...]:
        """The ticked types (one configuration each), then the chains typed in; ConfigError on a
        bad name, or when nothing is chosen."""
        from specscope.core.engine.drafters import parse_types
        from specscope.core.errors import ConfigError
        chains: list[tuple[str, ...]] = []
        words = self._ticked() + self.chains.text().split()
        for word in words:
            chain = parse_types(word)
            if chain not in chains:
                chains.append(chain)
        if not chains:
            raise ConfigError("tick at least one drafter, or write a chain")
        return tuple(chains)

    def _ticked(self) -> list[str]:
        return [self.drafters.item(i).text() for i in range(self.drafters.count())
                if self.drafters.item(i).checkState() == Qt.CheckState.Checked]

    def set_drafters(self, *words: str) -> None:
        """Tick these single types; the rest (multi-type words) go to the chains line."""
        singles = {w for w in words if "," not in w}
        for i in range(self.drafters.count()):
            item = self.drafters.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.text() in singles else Qt.CheckState.Unchecked)
        self.chains.setText(" ".join(w for w in words if "," in w))

    def set_idle(self, idle: bool) -> None:
        """Every control usable while no sweep runs, none while one does."""
        for w in (self.add_draft_button, self.remove_draft_button, self.n_values, self.p_min_values,
                  self.prompts, self.drafters, self.chains, self.n_predict, self.repeats, self.sync,
                  self.threads, self.deterministic, self.ignore_eos, self.recalibrate, self.alpha_on,
                  self.temperature):
            w.setEnabled(idle)
        self.alpha.setEnabled(idle and self.alpha_on.isChecked())
        self.accept_rule.setEnabled(idle and self.temperature.value() > 0)

    # ------------------------------------------------------------------ saved and restored
    def to_dict(self) -> dict:
        """The controls, for the window's settings (not the pair: the window owns it)."""
        return {"n_values": self.n_values.text(), "p_min_values": self.p_min_values.text(),
                "drafters": self._ticked(), "chains": self.chains.text(),
                "prompt_file": str(self.prompt_file) if self.prompt_file else None,
                "n_predict": self.n_predict.value(), "repeats": self.repeats.value(),
                "sync": self.sync.currentText(), "threads": self.threads.value(),
                "temperature": self.temperature.value(), "accept_rule": self.accept_rule.currentText(),
                "deterministic": self.deterministic.isChecked(), "ignore_eos": self.ignore_eos.isChecked(),
                "alpha_on": self.alpha_on.isChecked(), "alpha": self.alpha.value()}

    def from_dict(self, d: dict) -> None:
        """Put saved controls back; a value that no longer fits (a prompt file gone, a thread
        count above this machine's cores) keeps the default."""
        for key, edit in (("n_values", self.n_values), ("p_min_values", self.p_min_values),
                          ("chains", self.chains)):
            if isinstance(d.get(key), str):
                edit.setText(d[key])
        if isinstance(d.get("drafters"), list):
            for i in range(self.drafters.count()):
                item = self.drafters.item(i)
                item.setCheckState(Qt.CheckState.Checked if item.text() in d["drafters"]
                                   else Qt.CheckState.Unchecked)
        prompt_file = d.get("prompt_file")
        if isinstance(prompt_file, str) and Path(prompt_file).is_file():
            self.set_prompt_file(prompt_file)
        for key, box in (("n_predict", self.n_predict), ("repeats", self.repeats),
                         ("threads", self.threads), ("temperature", self.temperature),
                         ("alpha", self.alpha)):
            if isinstance(d.get(key), (int, float)) and not isinstance(d.get(key), bool):
                box.setValue(d[key])
        for key, box in (("sync", self.sync), ("accept_rule", self.accept_rule)):
            if isinstance(d.get(key), str) and box.findText(d[key]) >= 0:
                box.setCurrentText(d[key])
        for key, check in (("deterministic", self.deterministic), ("ignore_eos", self.ignore_eos),
                           ("alpha_on", self.alpha_on)):
            if isinstance(d.get(key), bool):
                check.setChecked(d[key])

    # ------------------------------------------------------------------ prompts and drafts
    def set_prompt_file(self, path) -> None:
        """None: the shipped benchmark set; the shipped drafter set is item 1; any other file is
        added after "Choose a file…"."""
        self.prompt_file = Path(path) if path else None
        while self.prompts.count() > 3:
            self.prompts.removeItem(3)
        if self.prompt_file is None:
            self.prompts.setCurrentIndex(0)
        elif self.prompt_file.name == DRAFTER_PROMPT_FILE and self.prompt_file.parent.name == "prompts":
            self.prompts.setCurrentIndex(1)
        else:
            self.prompts.addItem(self.prompt_file.name)
            self.prompts.setCurrentIndex(3)

    def _prompts_chosen(self, index: int) -> None:
        if index == 0:
            self.set_prompt_file(None)
        elif index == 1:
            from specscope.core.models.demo import prompts_dir
            self.set_prompt_file(prompts_dir() / DRAFTER_PROMPT_FILE)
        elif index == 2:
            path, _ = QFileDialog.getOpenFileName(self, "Prompt set", "", "Prompt sets (*.json *.txt)")
            self.set_prompt_file(path or self.prompt_file)      # cancelled: back to what was chosen
