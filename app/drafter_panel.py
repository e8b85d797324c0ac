"""The drafter picker: what proposes each round's draft (llama.cpp's ``--spec-type``).

One row per speculative type, in llama.cpp's priority order (core.drafters.TYPES): the
draftless n-gram types, then the model drafters (core's registry says what each drafts with):
``draft-simple`` and the head types draft with the model in the Models box's draft slot (for a
head it is labelled the head slot); the target's own MTP (nextn) blocks need no draft file and
are offered when the target's header has them.
Checking several makes a chain; llama.cpp tries the checked types in this order and the first
non-empty draft wins the round. Each type's parameters sit under it, with llama.cpp's defaults
and ranges, and its flag name in the tooltip; a type that is not checked has its parameters
greyed out (n_max, n_min and p_min, under draft-simple, serve the heads and draft-mtp too).

Bad settings (a cross-field error, a missing lookup-cache file, draft-simple without a
usable draft model or with a head, a head type with an ordinary model or another kind of head,
draft-mtp on a target without MTP blocks) are one line under the rows, naming the file, updated
as the user edits.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QGridLayout,
                               QGroupBox, QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QSpinBox,
                               QVBoxLayout, QWidget)

from specscope.core.engine.draft_policy import POLICY_DESCRIPTIONS
from specscope.core.engine.drafters import DESCRIPTIONS, DRAFT_MODEL, TYPES
from specscope.core.engine.drafters.registry import MODEL, TARGET, names
from specscope.core.engine.flag import read, with_values
from specscope.core.engine.settings import earlier_field
from specscope.core.engine.spec_flags import FLAGS, flag

from .drafter_style import swatch_html
from .synth_box import SynthBox

MAX_NP = 16             # the most sequences -np offers
CHAIN_NOTE = ("Check one type, or several for a chain: llama.cpp tries the n-gram types first, "
              "in this order, then the draft model or a head, then the target's MTP layers, then "
              "a DFlash head; the first non-empty draft wins the round.")
CHECK_LABELS = {name: f"{name} ({t.what})" for name, t in TYPES.items() if t.what}
# the heads in the draft slot: each head type's architecture and what it is called
HEADS = {name: (t.head, t.what) for name, t in TYPES.items() if t.head}
MTP_TYPES = names(lambda t: t.source == TARGET)    # draft with the target's own MTP blocks
VOCAB_TIPS = {
    "auto": "a draft llama.cpp accepts reads the target's own tokens; one it refuses (another "
            "vocabulary) drafts in translate mode (intersect under the ratio rule)",
    "translate": "the draft drafts in its own vocabulary; its text is re-tokenized with the "
                 "target's tokenizer (Hugging Face's universal assisted decoding)",
    "intersect": "the draft samples only tokens whose text both vocabularies have; ids map one "
                 "for one (vLLM's token-level intersection)"}
SYNC_TIPS = {"reuse": "keep the draft's own KV rows for the accepted prefix (about half the draft "
                      "cost)",
             "replay": "llama.cpp's way: roll the draft back and re-decode the verification batch"}
HEAD_NOTE = ("Drafts with the head in the Models box's head slot, from the target's own "
             "hidden states; n_max, n_min and p_min above apply to it.")
BLOCK_NOTE = ("Drafts a whole block in one decode with the DFlash head in the Models box's head "
              "slot, from the target's own hidden states; n_max (at most the head's block), n_min "
              "and p_min above apply to it.")
SPARK_NOTE = ("The same with a DSpark head (a DFlash head with a Markov head): each position "
              "biased by the token drafted before it; p_min reads its confidence head.")
NO_MTP = "this target has no MTP (nextn) blocks"


def mtp_note(blocks: int | None) -> str:
    """draft-mtp's line under its check box, for a target with ``blocks`` MTP blocks (None: not
    read yet)."""
    what = ("the target's own MTP (nextn) blocks" if blocks is None else
            f"the target's {blocks} MTP block{'s' if blocks != 1 else ''}")
    chain = (f" (chained: one per draft step, so a draft is at most {blocks} tokens)"
             if blocks and blocks > 1 else "")
    return (f"Drafts with {what}{chain}, no draft model needed; n_max, n_min and p_min above "
            "apply to it.") if blocks != 0 else (
        f"Not offered: {NO_MTP}; a model converted with its MTP layers carries them.")


MODEL_NOTE = (f"sync, n policy and vocab apply to {DRAFT_MODEL} only; n_max, n_min and p_min to "
              "the heads and the target's MTP blocks too.")


def type_note(name: str) -> str:
    """The line under a type's check box (its registry note; "" for an n-gram type)."""
    t = TYPES[name]
    if t.note or t.ngram:
        return t.note
    if t.source == MODEL:
        return MODEL_NOTE
    if t.source == TARGET:
        return mtp_note(None)
    return SPARK_NOTE if t.markov else BLOCK_NOTE if t.block else HEAD_NOTE


def head_slot(types) -> str:
    """What the draft slot holds for the checked ``types``: "EAGLE-3 head", "DFlash head",
    "DSpark head", or "" (a draft model)."""
    return next((HEADS[t][1].split(" ", 1)[1] for t in types if t in HEADS), "")


# the combos' items, with a tooltip each, by field
ITEM_TIPS = {"sync": SYNC_TIPS, "draft_policy": POLICY_DESCRIPTIONS, "vocab": VOCAB_TIPS}
WIDTHS = (1.0, 1.5, 3.0)     # a line's share taken by a spin box, a combo, a file (a line holds 3)


def _spin(f) -> QSpinBox | QDoubleSpinBox:
    """A spin box for a flag's field: its range, default and tooltip (core/engine/spec_flags.py)."""
    if isinstance(f.default, float):
        s = QDoubleSpinBox(minimum=f.lo, maximum=f.hi, singleStep=f.step, decimals=2, value=f.default)
    else:
        s = QSpinBox(minimum=int(f.lo), maximum=int(f.hi), value=f.default)
    s.setToolTip(f.tooltip())
    s.setMinimumWidth(58)
    return s


def _value(w):
    """A knob's value: a spin box's (floats to 4 digits), a combo's data, a file's path."""
    if isinstance(w, QComboBox):
        return w.currentData()
    if isinstance(w, QLineEdit):
        return w.text().strip()
    return round(w.value(), 4) if isinstance(w, QDoubleSpinBox) else w.value()


def _set_value(w, value) -> None:
    """Set a knob from a saved value; one of the wrong kind leaves it as it is."""
    if isinstance(w, QComboBox):
        i = w.findData(value)
        if i >= 0:
            w.setCurrentIndex(i)
    elif isinstance(w, QLineEdit):
        if isinstance(value, str):
            w.setText(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        w.setValue(type(w.value())(value))


def _combo(items: dict[str, str], tip: str) -> QComboBox:
    """A combo of ``items`` (value: its tooltip)."""
    combo = QComboBox()
    for i, (name, item_tip) in enumerate(items.items()):
        combo.addItem(name, name)
        combo.setItemData(i, item_tip, Qt.ItemDataRole.ToolTipRole)
    combo.setToolTip(tip)
    return combo


def _wrapped(text: str, style: str) -> QLabel:
    """A label that wraps at the layout's width (not its text's)."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setStyleSheet(style)
    return label


class DrafterPanel(QGroupBox):
    """Checkboxes for the types, their parameters, and one line for bad settings."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__("Drafter", parent)
        lay = QVBoxLayout(self)
        lay.setSpacing(4)
        self.note = _wrapped(CHAIN_NOTE, "color:#555")
        lay.addWidget(self.note)
        self._make_knobs()
        lay.addLayout(self._type_grid())
        self.synth = SynthBox()
        lay.addWidget(self.synth)
        self.message = _wrapped("", "")
        self.message.setTextFormat(Qt.TextFormat.RichText)
        self.message.setVisible(False)
        lay.addWidget(self.message)
        # the draft slot's model: its path (None: none), its architecture ("" not known yet), and
        # why the pair doctor refused it for draft-simple ("" it did not); None: not told yet
        self._draft: tuple[Path | None, str, str] | None = None
        # the target's path and its MTP blocks, read from its header (None: not read yet)
        self._mtp: tuple[Path | None, int | None] = (None, None)
        self.checks[DRAFT_MODEL].setChecked(True)
        self._connect()
        self._edited()

    def _make_knobs(self) -> None:
        """A widget per flag the panel shows (``knobs``, by field), and -np for the types that
        offer it (``np``, by type): each type's knobs come from its flags and registry entry."""
        self.knobs: dict[str, QWidget] = {}
        for f in (f for f in FLAGS if f.label):
            if f.choices:
                tips = ITEM_TIPS.get(f.field)     # the window offers the choices it explains
                w = _combo({m: tips[m] if tips else "" for m in f.choices if not tips or m in tips},
                           f.tooltip())
            elif f.metavar == "FILE":
                short = next((n for n in f.names if not n.startswith("--")), "")
                w = self._path_edit(f"optional file{f' ({short})' if short else ''}", f.tooltip(),
                                    f.flag)
            else:
                w = _spin(f)
            self.knobs[f.field] = w
        self.np: dict[str, QSpinBox] = {}
        for name, t in TYPES.items():
            if t.np:
                label, default, tip = t.np
                self.np[name] = QSpinBox(minimum=1, maximum=MAX_NP, value=default)
                self.np[name].setToolTip(tip)
        # draft-simple's, shared with the other model drafters
        self.n_max, self.n_min, self.p_min = (self.knobs[k] for k in ("n_max", "n_min", "p_min"))
        self.sync, self.policy, self.vocab = (self.knobs[k] for k in ("sync", "draft_policy", "vocab"))

    def _rows(self) -> dict[str, list[list[tuple[str, QWidget, tuple]]]]:
        """Each type's parameter lines under its check box: (label, widget, the types it
        steers), -np first, then its flags in the table's order, three spin boxes a line."""
        rows: dict[str, list] = {}
        items = [(t, (TYPES[t].np[0], w, (t,))) for t, w in self.np.items()]
        items += [(f.types[0], (f.label, self.knobs[f.field], f.types)) for f in FLAGS if f.label]
        for t in TYPES:
            lines, used = [], 3.0
            for item in (item for owner, item in items if owner == t):
                w = item[1]
                width = WIDTHS[2 if w.property("path") else 1 if isinstance(w, QComboBox) else 0]
                if used + width > 3.0:
                    lines.append([])
                    used = 0.0
                lines[-1].append(item)
                used += width
            rows[t] = lines
        return rows

    def _type_grid(self) -> QGridLayout:
        """One check box per type, its parameter lines and its note under it; ``checks``,
        ``params`` (each type's widgets, greyed out while it is not checked) and
        ``shared`` (widgets that steer other types too, with those types: enabled when one of
        them is checked)."""
        self.checks: dict[str, QCheckBox] = {}
        self.params: dict[str, list[QWidget]] = {}
        self.shared: dict[QWidget, tuple[str, ...]] = {}
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(2)
        grid.setColumnMinimumWidth(0, 16)
        grid.setColumnStretch(2, 1)
        rows, r = self._rows(), 0
        for t in TYPES:
            grid.addLayout(self._type_check(t), r, 0, 1, 3)
            r += 1
            widgets: list[QWidget] = []
            for line in rows.get(t, []):
                grid.addLayout(self._param_line(line, widgets), r, 1, 1, 2)
                r += 1
            if type_note(t):
                note = _wrapped(type_note(t), "color:#777; font-size:small")
                grid.addWidget(note, r, 1, 1, 2)
                r += 1
                widgets.append(note)
                if t == DRAFT_MODEL:
                    self.draft_note = note
                    self.shared[note] = flag("n_max").types
                if t in MTP_TYPES:
                    self.mtp_note = note
            self.params[t] = widgets
        return grid

    def _type_check(self, t: str) -> QHBoxLayout:
        """A type's check box (``checks[t]``) and its colour's swatch."""
        check = QCheckBox(CHECK_LABELS.get(t, t))
        check.setToolTip(f"{t}: {DESCRIPTIONS[t]} (--spec-type {t})")
        self.checks[t] = check
        head = QHBoxLayout()
        head.setSpacing(6)
        head.addWidget(check)
        desc = QLabel(swatch_html(t))
        desc.setTextFormat(Qt.TextFormat.RichText)
        desc.setToolTip("its accepted tokens' colour in the text")
        head.addWidget(desc)
        head.addStretch(1)
        return head

    def _param_line(self, line, widgets: list[QWidget]) -> QHBoxLayout:
        """One line of (label, widget, types) items; its labels and widgets are added to
        ``widgets`` (and to ``shared`` where they steer more than one type)."""
        box = QHBoxLayout()
        box.setSpacing(4)
        for label, w, types in line:
            lab = QLabel(label)
            lab.setToolTip(w.toolTip())
            lab.setStyleSheet("color:#444")
            box.addWidget(lab)
            box.addWidget(w, 1 if w.property("path") else 0)
            box.addSpacing(8)
            widgets += [lab, w]
            if len(types) > 1:
                self.shared.update({lab: types, w: types})
        if not any(w.property("path") for _, w, _ in line):
            box.addStretch(1)
        return box

    def _connect(self) -> None:
        """Every edit re-checks the settings (``_edited``)."""
        for c in self.checks.values():
            c.toggled.connect(self._edited)
        for w in (*self.knobs.values(), *self.np.values()):
            if isinstance(w, QComboBox):
                w.currentIndexChanged.connect(self._edited)
            elif isinstance(w, QLineEdit):
                w.editingFinished.connect(self._edited)
            else:
                w.valueChanged.connect(self._edited)
        self.synth.changed.connect(self._edited)

    def _path_edit(self, placeholder: str, tip: str, what: str) -> QLineEdit:
        e = QLineEdit()
        e.setPlaceholderText(placeholder)
        e.setToolTip(tip)
        e.setClearButtonEnabled(True)
        e.setProperty("path", True)
        e.setMinimumWidth(80)
        browse = e.addAction(self.style().standardIcon(self.style().StandardPixmap.SP_DirOpenIcon),
                             QLineEdit.ActionPosition.TrailingPosition)
        browse.setToolTip(f"Choose the file for {what}")
        browse.triggered.connect(lambda: self._browse(e, what))
        return e

    def _browse(self, edit: QLineEdit, what: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, f"Choose the file for {what}",
                                              edit.text() or str(Path.home()))
        if path:
            edit.setText(path)
            self._edited()

    # ------------------------------------------------------------------ state
    def types(self) -> tuple[str, ...]:
        """The checked types, in llama.cpp's priority order."""
        return tuple(t for t in TYPES if self.checks[t].isChecked())

    def set_types(self, types) -> None:
        for t, c in self.checks.items():
            c.setChecked(t in types)

    def focus_type(self, name: str) -> None:
        """Give ``name``'s check box the keyboard focus."""
        self.checks[name].setFocus()

    def spec_settings(self):
        """The SpecSettings the rows describe (not validated: see ``problem``)."""
        from specscope.core.engine.engine import SpecSettings
        return with_values(SpecSettings(types=self.types(), **self.synth.fields()),
                           {field: _value(w) for field, w in self.knobs.items()})

    def set_draft(self, path: Path | None, architecture: str = "", refused: str = "") -> None:
        """The model in the draft slot: its path (None: none), its architecture ("eagle3": an
        EAGLE-3 head; "": not known yet) and why the pair doctor refused it ("": it did not)."""
        self._draft = (path, architecture, refused)
        self._edited()

    def set_target_mtp(self, path: Path | None, blocks: int | None) -> None:
        """The target's MTP (nextn) blocks, as its header counts them (None: not read yet):
        draft-mtp is offered only for a target that has some."""
        self._mtp = (path, blocks)
        for t in MTP_TYPES:
            self.checks[t].setToolTip(f"{t}: {DESCRIPTIONS[t]} (--spec-type {t})"
                                      + (f"\nNot offered: {NO_MTP}" if blocks == 0 else ""))
        self.mtp_note.setText(mtp_note(blocks))
        self._edited()

    def n_seq(self) -> int:
        """The sequences each context needs (EngineSettings.n_seq): what the checked types need
        (registry.SpecType.sequences), or the -np of the one type checked that offers it."""
        types = self.types()
        alone = self.np.get(types[0]) if len(types) == 1 else None
        return max(self.spec_settings().sequences(), alone.value() if alone else 1)

    def draft_problem(self) -> str:
        """Why the checked model drafter cannot draft with the draft slot's model (or, draft-mtp,
        with the target's own layers), or ""."""
        types = self.types()
        path, blocks = self._mtp
        for t in (t for t in types if t in MTP_TYPES and blocks == 0):
            return (f"{t}: {path.name if path else 'the target'} has no MTP (nextn) blocks "
                    "to draft with: choose a target converted with its MTP layers, or uncheck "
                    f"{t}.")
        slot = [t for t in types if TYPES[t].uses_md]        # the draft slot's
        if len({HEADS.get(t, ("",))[0] for t in slot}) > 1:
            listed = ", ".join(slot[:-1]) + " and " + slot[-1]
            return (f"{listed} {'both' if len(slot) == 2 else 'all'} draft with the model in the "
                    "draft slot: check one of them.")
        if self._draft is None:
            return ""
        path, arch, refused = self._draft
        name = path.name if path is not None else ""
        for t in (t for t in types if TYPES[t].source == MODEL):
            if path is None:
                return (f"{t} needs a draft model: choose one under Models, or uncheck "
                        f"{t} to draft with the n-gram types alone.")
            kinds = [k for k, (a, _) in HEADS.items() if a == arch]   # the head types it drafts with
            if kinds:
                spec = " or ".join(kinds)
                return (f"{t}: {name} is {HEADS[kinds[0]][1]}, which drafts with {spec}: "
                        f"check {spec} instead, or choose a draft model.")
            if refused:
                return (f"{t}: {name} cannot draft for this target ({refused}); "
                        f"choose another draft, or uncheck {t}.")
        for t in (t for t in types if t in HEADS):
            want, noun = HEADS[t]
            if path is None:
                return (f"{t} needs {noun}: choose one in the head slot under Models, or uncheck "
                        f"{t}.")
            if arch and arch != want:
                return (f"{t}: {name} is not {noun} (it is a {arch} model): choose a head under "
                        "Models, or draft with draft-simple.")
        return ""

    def problem(self) -> str:
        """One line: what is wrong with the settings, or ""."""
        from specscope.core.errors import ConfigError
        if not self.types():
            return "Check at least one drafter (or press Baseline to run the target alone)."
        try:
            self.spec_settings().validate()
        except ConfigError as exc:
            return str(exc)
        return self.draft_problem()

    def _edited(self, *_args) -> None:
        chosen = set(self.types())
        self.synth.set_n_max(self.spec_settings().max_draft())
        for t, widgets in self.params.items():
            for w in widgets:
                w.setEnabled(t in chosen or bool(chosen & set(self.shared.get(w, ()))))
        # a target without MTP blocks: draft-mtp is not offered (but can be unchecked)
        for t in MTP_TYPES:
            self.checks[t].setEnabled(self._mtp[1] != 0 or t in chosen)
        text = self.problem()
        self.message.setText(f"<span style='color:#b42318'>⚠ {html.escape(text)}</span>" if text else "")
        self.message.setVisible(bool(text))
        self.changed.emit()

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        return {"types": list(self.types()),
                "knobs": {field: _value(w) for field, w in self.knobs.items()},
                "np": {t: w.value() for t, w in self.np.items()}}

    @staticmethod
    def dict_of(spec) -> dict:
        """``to_dict``'s form of a SpecSettings (what a recorded run drafted with)."""
        return {"types": list(spec.types),
                "knobs": {f.field: read(spec, f.field) for f in FLAGS if f.label}}

    def from_dict(self, d: dict) -> None:
        """Restore what ``to_dict`` saved (or an earlier version's form of it); anything
        malformed keeps its current value."""
        types = d.get("types")
        if isinstance(types, list) and any(t in TYPES for t in types):
            self.set_types([t for t in types if t in TYPES])
        knobs, np_ = d.get("knobs"), d.get("np")
        if not isinstance(knobs, dict):
            knobs, np_ = _earlier_form(d)
        for field, value in ((earlier_field(k), v) for k, v in knobs.items()):
            if field in self.knobs:
                _set_value(self.knobs[field], value)
        for t, value in (np_ if isinstance(np_, dict) else {}).items():
            if t in self.np:
                _set_value(self.np[t], value)
        self._edited()


def _earlier_form(d: dict) -> tuple[dict, dict]:
    """The knobs and -np of a panel saved before they were kept by field (SpecScope 0.x's
    window settings): its per-type dicts, lists and keys read as fields."""
    knobs: dict = {}
    for key in ("size_n", "size_m"):
        for t, v in (d.get(key) if isinstance(d.get(key), dict) else {}).items():
            knobs[f"{t}.{key}"] = v
    for key, fields in (("mod", ("ngram-mod.n_match", "ngram-mod.n_min", "ngram-mod.n_max")),
                        ("cache", ("ngram-cache.lookup_cache_static",
                                   "ngram-cache.lookup_cache_dynamic"))):
        if isinstance(d.get(key), list) and len(d[key]) == len(fields):
            knobs.update(zip(fields, d[key]))
    renamed = {"min_hits": "ngram-map-k4v.min_hits", "policy": "draft_policy"}
    np_ = {}
    for key, v in d.items():
        if isinstance(v, dict) and key not in ("size_n", "size_m"):   # a type's parameters
            knobs.update({f"{key}.{k}": x for k, x in v.items()})
            if "np" in v:
                np_[key] = v["np"]
        elif not isinstance(v, list):
            knobs[renamed.get(key, key)] = v
    if "branches" in d:
        np_.update({t: d["branches"] for t, st in TYPES.items() if st.np and st.source == MODEL})
    return knobs, np_
