"""The prompt editor and the generation parameters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QGridLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QSpinBox, QVBoxLayout)

DEFAULT_PROMPT = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'


EXAMPLE_KINDS = {     # the word after a shipped prompt's number: NN_kind_title.txt
    "code": ("Code", "Python code the models continue (Chat off)"),
    "prose": ("Prose", "English text the models continue (Chat off)"),
    "chat": ("Chat", "A message: with a chat template the target answers it in that template "
                     "(Chat on); without one the models continue it as typed"),
}


@dataclass(frozen=True)
class Example:
    kind: str            # code | prose | chat (EXAMPLE_KINDS)
    title: str
    text: str

    @property
    def chat(self) -> bool:
        return self.kind == "chat"

    def label(self) -> str:
        return f"{EXAMPLE_KINDS[self.kind][0]}: {self.title}"


def example_prompts() -> list[Example]:
    """The prompts shipped in resources/prompts (NN_kind_title.txt), sorted by file name."""
    try:
        from specscope.core.models.demo import prompts_dir
        folder = prompts_dir()
    except Exception:  # noqa: BLE001 - no prompts is not an error
        return []
    out = []
    for path in sorted(Path(folder).glob("*.txt")):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        kind, _, title = path.stem.split("_", 1)[-1].partition("_")
        if kind not in EXAMPLE_KINDS:
            kind, title = "prose", f"{kind}_{title}".strip("_")
        out.append(Example(kind, title.replace("_", " "), text))
    return out


CHAT_TIPS = {
    True: "Chat: the prompt goes to the target as a user message in the target's own chat "
          "template (rendered in Jinja2's sandbox), with the assistant's turn opened",
    False: "The target has no chat template: the prompt goes to the models as typed",
    None: "Chat: available once the pair doctor has read the target and found a chat template",
}


class PromptEditor(QGroupBox):
    """The prompt, the example prompts and the Chat toggle (with an optional system message).

    Chat is on by default where the target has a chat template; the user's choice is kept
    (and saved). The toggle is off and disabled while the target has none, or while the
    pair doctor has not said yet, so it always shows what a run will do."""

    def __init__(self, parent=None):
        super().__init__("Prompt", parent)
        lay = QVBoxLayout(self)
        row = QHBoxLayout()
        row.addWidget(QLabel("Examples"))
        self.examples = QComboBox()
        self.examples.setToolTip("Code and prose are texts the models continue; a chat example is "
                                 "a message, sent in the target's chat template where it has one")
        self._chat_first: bool | None = None
        self.examples.activated.connect(self._example)
        row.addWidget(self.examples, 1)
        lay.addLayout(row)
        chat_row = QHBoxLayout()
        self.chat = QCheckBox("Chat")
        self.chat.setChecked(True)
        self.chat.toggled.connect(self._chat_toggled)
        chat_row.addWidget(self.chat)
        self.system = QLineEdit()
        self.system.setPlaceholderText("System message (optional)")
        self.system.setToolTip("With Chat: a system message before the prompt, in the chat template")
        self.system.setClearButtonEnabled(True)
        chat_row.addWidget(self.system, 1)
        chat_row.addStretch(0)
        lay.addLayout(chat_row)
        self.editor = QPlainTextEdit()
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.editor.setFont(font)
        self.editor.setTabChangesFocus(True)     # Tab moves on: it typed a tab and kept the focus,
                                                 # a trap for the keyboard (pasted tabs stay)
        self.editor.setMinimumHeight(80)
        self.editor.setMaximumHeight(130)
        lay.addWidget(self.editor)
        # the settings a first run changes most, next to the prompt (linked to the parameters
        # below: link_basics)
        basics = QHBoxLayout()
        self.max_tokens = QSpinBox(minimum=1, maximum=1_000_000, value=256, singleStep=64)
        self.max_tokens.setToolTip("Tokens to generate (n_predict; also under Parameters)")
        self.temp = QDoubleSpinBox(minimum=0.0, maximum=5.0, singleStep=0.1, decimals=2, value=0.0)
        self.temp.setSpecialValueText("greedy")
        self.temp.setToolTip("The target's temperature: greedy at 0 (also under Parameters, with "
                             "top-k, top-p, min-p and the seed)")
        for label, w in (("Max tokens", self.max_tokens), ("Temperature", self.temp)):
            basics.addWidget(QLabel(label))
            basics.addWidget(w)
        basics.addStretch(1)
        lay.addLayout(basics)
        self._chat_wanted = True      # the user's choice, kept while a target has no template
        self.has_template: bool | None = None
        self.set_template_available(None)

    # ------------------------------------------------------------------ chat
    def set_template_available(self, has: bool | None) -> None:
        """What the pair doctor says of the target: a template (True), none (False), not known yet."""
        self.has_template = has
        self.chat.blockSignals(True)
        self.chat.setChecked(self._chat_wanted and has is True)
        self.chat.blockSignals(False)
        self.chat.setEnabled(has is True)
        self.chat.setText("Chat" if has is not False else "Chat (no template)")
        self.chat.setToolTip(CHAT_TIPS[has])
        self._show_chat_state()
        self._list_examples(chat_first=has is True)

    def _list_examples(self, chat_first: bool) -> None:
        """The chat examples first for a target with a chat template; else code first (the demo
        pair is a code model)."""
        if chat_first == self._chat_first:
            return
        self._chat_first = chat_first
        order = ("chat", "prose", "code") if chat_first else ("code", "prose", "chat")
        examples = sorted(example_prompts(), key=lambda e: order.index(e.kind))
        self.examples.clear()
        self.examples.addItem("Choose an example prompt…")
        for i, example in enumerate(examples, 1):
            self.examples.addItem(example.label(), example)
            self.examples.setItemData(i, EXAMPLE_KINDS[example.kind][1], Qt.ItemDataRole.ToolTipRole)

    def _chat_toggled(self, on: bool) -> None:
        self._chat_wanted = on
        self._show_chat_state()

    def _show_chat_state(self) -> None:
        on = self.chat_enabled()
        self.system.setVisible(on)
        self.editor.setPlaceholderText("Type a message; the target answers it in its chat template."
                                       if on else "Type a prompt; the models continue it.")

    def chat_enabled(self) -> bool:
        """Whether a run gives the target the prompt in its chat template."""
        return self.chat.isChecked()      # (unchecked wherever the target has no template)

    def system_text(self) -> str:
        return self.system.text().strip() if self.chat_enabled() else ""

    def set_read_only(self, read_only: bool) -> None:
        """While a run is in progress the prompt and its chat settings stay as they were."""
        self.editor.setReadOnly(read_only)
        self.system.setReadOnly(read_only)
        self.max_tokens.setEnabled(not read_only)
        self.temp.setEnabled(not read_only)
        self.chat.setEnabled(not read_only and self.has_template is True)

    def to_dict(self) -> dict:
        return {"chat": self._chat_wanted, "system": self.system.text()}

    def show_run_settings(self, settings) -> None:
        """The prompt, Chat and system message a run had (a RunSettings)."""
        self.set_text(settings.prompt)
        self.from_dict({"chat": settings.chat, "system": settings.system or ""})

    def from_dict(self, d: dict) -> None:
        if isinstance(d.get("system"), str):
            self.system.setText(d["system"])
        if isinstance(d.get("chat"), bool):
            self._chat_wanted = d["chat"]
            self.set_template_available(self.has_template)

    def _example(self, index: int) -> None:
        """An example replaces the prompt; Chat follows it: on for a chat example, off for code
        and prose, which the models continue."""
        example = self.examples.itemData(index)
        if isinstance(example, Example):
            self.editor.setPlainText(example.text)
            self._chat_wanted = example.chat
            self.set_template_available(self.has_template)
        self.examples.setCurrentIndex(0)

    def text(self) -> str:
        return self.editor.toPlainText()

    def set_text(self, text: str) -> None:
        self.editor.setPlainText(text)


class ParamsPanel(QGroupBox):
    """n_predict, context size, the sampler; and the drafter picker (``drafter``), which the
    window lays out next to the pair panel: its draft-model settings are ``n_max``, ``n_min``,
    ``p_min``, ``sync`` here too."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__("Parameters", parent)
        grid = QGridLayout(self)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)

        # the draft settings live in the drafter picker (the window lays it out next to the pair)
        from .drafter_panel import DrafterPanel
        self.drafter = DrafterPanel()
        d = self.drafter
        self.n_max, self.n_min, self.p_min, self.sync = d.n_max, d.n_min, d.p_min, d.sync
        d.changed.connect(self.changed)

        self.sampler = QComboBox()
        self.sampler.addItem("greedy", "greedy")
        self.sampler.addItem("temperature", "temperature")
        self.sampler.setToolTip("The target's sampler chain; it verifies the drafts")
        self.temperature = QDoubleSpinBox(minimum=0.05, maximum=5.0, singleStep=0.1, decimals=2, value=0.8)
        self.top_k = QSpinBox(minimum=0, maximum=1000, value=40)
        self.top_k.setSpecialValueText("off")
        self.top_p = QDoubleSpinBox(minimum=0.01, maximum=1.0, singleStep=0.05, decimals=2, value=0.95)
        self.min_p = QDoubleSpinBox(minimum=0.0, maximum=0.99, singleStep=0.01, decimals=2, value=0.05)
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1, value=42)
        self.accept_rule = QComboBox()
        self.accept_rule.addItem("match (llama.cpp)", "match")
        self.accept_rule.addItem("ratio (speculative sampling)", "ratio")
        self.accept_rule.setToolTip(
            "How the target accepts a drafted token (--accept-rule). match: llama.cpp's rule, its "
            "sampler must draw the drafted token. ratio: the draft samples at the same temperature "
            "and the token is kept with probability min(1, p/q), else redrawn from max(0, p − q) "
            "(Leviathan et al. 2023). Both give the target's distribution; at temperature the "
            "acceptance plot adds the other rule's expected acceptance on the same drafts (dashed)")
        self.n_predict = QSpinBox(minimum=1, maximum=1_000_000, value=256, singleStep=64)
        self.n_predict.setToolTip("Tokens to generate")
        self.n_ctx = QSpinBox(minimum=256, maximum=1_048_576, value=2048, singleStep=512)
        self.n_ctx.setToolTip("Context size of both models (changing it reloads them; llama.cpp "
                              "uses at least 256)")

        def section(row, text):
            lab = QLabel(text)
            lab.setStyleSheet("color:#555; font-weight:600; margin-top:4px")
            grid.addWidget(lab, row, 0, 1, 4)

        def pair(row, col, label, widget, span=1):
            lab = QLabel(label)
            lab.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            lab.setToolTip(widget.toolTip())
            grid.addWidget(lab, row, col)
            grid.addWidget(widget, row, col + 1, 1, span)
            return lab

        section(0, "Generation")
        pair(1, 0, "n_predict", self.n_predict)
        pair(1, 2, "context", self.n_ctx)
        section(2, "Sampler (the target's; it verifies the drafts)")
        pair(3, 0, "sampler", self.sampler)
        self._t_label = pair(3, 2, "temp", self.temperature)
        self._sampling_labels = [pair(4, 0, "top-k", self.top_k), pair(4, 2, "top-p", self.top_p),
                                 pair(5, 0, "min-p", self.min_p), pair(5, 2, "seed", self.seed)]
        pair(6, 0, "accept", self.accept_rule, span=3)    # its long names span the row

        self.sampler.currentIndexChanged.connect(self._sampler_mode)
        self._sampler_mode()
        for w in (self.temperature, self.top_k, self.top_p, self.min_p, self.seed, self.n_predict,
                  self.n_ctx):
            w.valueChanged.connect(self.changed)
        self.sampler.currentIndexChanged.connect(self.changed)
        self.accept_rule.currentIndexChanged.connect(self.changed)

    def _sampler_mode(self) -> None:
        greedy = self.sampler.currentData() == "greedy"
        for w in (self.temperature, self.top_k, self.top_p, self.min_p, self.seed,
                  self._t_label, *self._sampling_labels):
            w.setEnabled(not greedy)

    # ------------------------------------------------------------------ settings
    def spec_settings(self):
        """What drafts, and how (the drafter picker's SpecSettings, with the acceptance rule)."""
        from dataclasses import replace
        return replace(self.drafter.spec_settings(), accept_rule=self.accept_rule.currentData())

    def sampler_settings(self):
        from specscope.core.engine.sampling import SamplerSettings
        if self.sampler.currentData() == "greedy":
            return SamplerSettings(temperature=0.0, seed=self.seed.value())
        return SamplerSettings(temperature=self.temperature.value(), top_k=self.top_k.value(),
                               top_p=self.top_p.value(), min_p=self.min_p.value(),
                               seed=self.seed.value())

    def to_dict(self) -> dict:
        return {"n_max": self.n_max.value(), "n_min": self.n_min.value(), "p_min": self.p_min.value(),
                "sync": self.sync.currentData(), "sampler": self.sampler.currentData(),
                "temperature": self.temperature.value(), "top_k": self.top_k.value(),
                "top_p": self.top_p.value(), "min_p": self.min_p.value(), "seed": self.seed.value(),
                "n_predict": self.n_predict.value(), "n_ctx": self.n_ctx.value(),
                "drafter": self.drafter.to_dict(), "accept_rule": self.accept_rule.currentData()}

    def from_dict(self, d: dict) -> None:
        def num(key, cast, widget):
            if key in d:
                try:
                    widget.setValue(cast(d[key]))
                except (TypeError, ValueError):
                    pass
        num("n_max", int, self.n_max)
        num("n_min", int, self.n_min)
        num("p_min", float, self.p_min)
        num("temperature", float, self.temperature)
        num("top_k", int, self.top_k)
        num("top_p", float, self.top_p)
        num("min_p", float, self.min_p)
        num("seed", int, self.seed)
        num("n_predict", int, self.n_predict)
        num("n_ctx", int, self.n_ctx)
        for key, combo in (("sync", self.sync), ("sampler", self.sampler),
                           ("accept_rule", self.accept_rule)):
            i = combo.findData(d.get(key))
            if i >= 0:
                combo.setCurrentIndex(i)
        if isinstance(d.get("drafter"), dict):
            self.drafter.from_dict(d["drafter"])

    def show_run_settings(self, settings) -> None:
        """The controls as a run had them (a RunSettings: a recording's): n_predict, context,
        the sampler and, for a speculative run, the drafter with its parameters."""
        sm, spec = settings.sampler, settings.spec
        d = {"n_predict": settings.n_predict, "n_ctx": settings.engine.n_ctx, "seed": sm.seed,
             "sampler": "greedy" if sm.greedy else "temperature"}
        if not sm.greedy:
            d.update(temperature=sm.temperature, top_k=sm.top_k, top_p=sm.top_p, min_p=sm.min_p)
        if spec is not None:
            d.update(n_max=spec.n_max, n_min=spec.n_min, p_min=spec.p_min, sync=spec.sync,
                     accept_rule=spec.accept_rule, drafter=self.drafter.dict_of(spec))
        self.from_dict(d)
        if spec is not None:
            self.drafter.synth.set_fields(spec.synth_len, spec.synth_rates)


class RunControls:
    """What the window's controls describe, read when asked: the pair (``pair_panel``), the
    drafter, sampler and engine settings (``params``, the pair panel's threads and placement)
    and the prompt (``prompt``). Helpers that measure the chosen pair take this, not the window."""

    def __init__(self, pair_panel, params: "ParamsPanel", prompt: PromptEditor):
        self.pair_panel, self.params, self.prompt = pair_panel, params, prompt

    def pair(self):
        return self.pair_panel.pair()

    def spec(self):
        return self.params.spec_settings()

    def sampler(self):
        return self.params.sampler_settings()

    def n_predict(self) -> int:
        return self.params.n_predict.value()

    def engine(self):
        from specscope.core.engine.settings import EngineSettings
        # threads 0 is "auto": each context follows the load, decode by decode (core/models/threads.py)
        return EngineSettings(n_ctx=self.params.n_ctx.value(), n_seq=self.params.drafter.n_seq(),
                              **self.pair_panel.engine_kwargs())


def link_basics(prompt: PromptEditor, params: "ParamsPanel") -> None:
    """The prompt's Max tokens and Temperature follow the parameters (n_predict; the sampler and
    its temperature) and set them: temperature 0 is the greedy sampler."""
    def from_params(*_):
        for w in (prompt.max_tokens, prompt.temp):
            w.blockSignals(True)
        prompt.max_tokens.setValue(params.n_predict.value())
        greedy = params.sampler.currentData() == "greedy"
        prompt.temp.setValue(0.0 if greedy else params.temperature.value())
        for w in (prompt.max_tokens, prompt.temp):
            w.blockSignals(False)

    def to_params(*_):
        params.n_predict.setValue(prompt.max_tokens.value())
        t = prompt.temp.value()
        params.sampler.setCurrentIndex(params.sampler.findData("greedy" if t <= 0 else "temperature"))
        if t > 0:
            params.temperature.setValue(max(t, params.temperature.minimum()))

    params.changed.connect(from_params)
    prompt.max_tokens.valueChanged.connect(to_params)
    prompt.temp.valueChanged.connect(to_params)
    from_params()
