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

from specscope.core.engine.drafters import DESCRIPTIONS, DRAFT_MODEL, MODEL_TYPES, TYPES
from specscope.core.engine.drafters.lookahead import LookaheadParams
from specscope.core.engine.drafters.registry import MODEL, SELF, TARGET, names
from specscope.core.engine.drafters.base import NgramCacheParams, NgramMapParams, NgramModParams
from specscope.core.engine.drafters.suffix import SuffixParams
from specscope.core.engine.spec_flags import flag

from .drafter_style import swatch_html
from .synth_box import SynthBox

MAP_TYPES = ("ngram-simple", "ngram-map-k", "ngram-map-k4v")
TREE = "draft-tree"
SUFFIX = "suffix"
LOOKAHEAD = "lookahead"
LOOKAHEAD_NOTE = ("Drafts with nothing but the target: beside each token it decodes a window of W "
                  "guesses and verifies up to G n-grams of N tokens from them in the same batch "
                  "(W + G + 1 sequences: changing W or G reloads the target).")
SUFFIX_KNOBS = ("max_depth", "max_spec_tokens", "max_spec_factor", "min_token_prob")
SUFFIX_NOTE = ("SpecScope only (vLLM has it, llama.cpp does not). Leaves 1: one path, as vLLM "
               "verifies it; more: a tree of continuations in one batch (reloads the target).")
MAX_BRANCHES = 16
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
    """The line under a model drafter's check box ("" for an n-gram type)."""
    t = TYPES[name]
    if name == SUFFIX:
        return SUFFIX_NOTE
    if t.source == SELF:
        return LOOKAHEAD_NOTE
    if t.ngram:
        return ""
    if t.source == MODEL:
        return MODEL_NOTE
    if t.source == TARGET:
        return mtp_note(None)
    return SPARK_NOTE if t.markov else BLOCK_NOTE if t.block else HEAD_NOTE


def head_slot(types) -> str:
    """What the draft slot holds for the checked ``types``: "EAGLE-3 head", "DFlash head",
    "DSpark head", or "" (a draft model)."""
    return next((HEADS[t][1].split(" ", 1)[1] for t in types if t in HEADS), "")


def _flag_spin(field: str) -> QSpinBox:
    """A spin box for a SpecSettings field: its flag's range, default and tooltip
    (core/engine/spec_flags.py)."""
    f = flag(field)
    s = QSpinBox(minimum=int(f.lo), maximum=int(f.hi), value=f.default)
    s.setToolTip(f.tooltip())
    s.setMinimumWidth(58)
    return s


def _flag_dspin(field: str, step: float = 0.05) -> QDoubleSpinBox:
    """A spin box for a float SpecSettings field, as ``_flag_spin``."""
    f = flag(field)
    s = QDoubleSpinBox(minimum=f.lo, maximum=f.hi, singleStep=step, decimals=2, value=f.default)
    s.setToolTip(f.tooltip())
    s.setMinimumWidth(58)
    return s


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
        self._make_ngram_params()
        self._make_model_params()
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

    def _make_ngram_params(self) -> None:
        """The n-gram types' parameters: the map types' sizes N and M (min hits for
        ngram-map-k4v only: the others ignore it), ngram-mod's, ngram-cache's files; suffix's."""
        self.size_n = {t: _flag_spin(f"{t.replace('-', '_')}.size_n") for t in MAP_TYPES}
        self.size_m = {t: _flag_spin(f"{t.replace('-', '_')}.size_m") for t in MAP_TYPES}
        self.min_hits = _flag_spin("ngram_map_k4v.min_hits")
        self.mod_match = _flag_spin("ngram_mod.n_match")
        self.mod_min = _flag_spin("ngram_mod.n_min")
        self.mod_max = _flag_spin("ngram_mod.n_max")
        self.cache_static = self._path_edit("optional file (-lcs)",
                                            flag("ngram_cache.lookup_cache_static").tooltip())
        self.cache_dynamic = self._path_edit("optional file (-lcd)",
                                             flag("ngram_cache.lookup_cache_dynamic").tooltip())
        # suffix (vLLM's suffix decoding): its knobs, its corpus and its tree's leaves (-np)
        self.suffix = {"max_depth": _flag_spin("suffix.max_depth"),
                       "max_spec_tokens": _flag_spin("suffix.max_spec_tokens"),
                       "max_spec_factor": _flag_dspin("suffix.max_spec_factor", 0.25),
                       "min_token_prob": _flag_dspin("suffix.min_token_prob")}
        self.suffix_corpus = self._path_edit("optional text file", flag("suffix.corpus").tooltip(),
                                             "a corpus text")
        self.lookahead = {k: _flag_spin(f"lookahead.{k}") for k in ("w", "n", "g")}
        self.suffix_np = QSpinBox(minimum=1, maximum=MAX_BRANCHES, value=1)
        self.suffix_np.setToolTip("suffix: the most leaves of its tree, llama.cpp's -np: each is a "
                                  "sequence of the target's cache, so changing it reloads the "
                                  "target (1: one path, as vLLM verifies it)")

    def _make_model_params(self) -> None:
        """draft-simple's parameters: n_max, n_min and p_min (shared with the heads and
        draft-mtp), its cache sync, its draft-length policy and its vocabulary mode."""
        self.n_max = _flag_spin("n_max")
        self.n_min = _flag_spin("n_min")
        f = flag("p_min")
        self.p_min = QDoubleSpinBox(minimum=f.lo, maximum=f.hi, singleStep=0.05, decimals=2,
                                    value=f.default)
        self.p_min.setToolTip(f.tooltip())
        from specscope.core.engine.draft_policy import POLICY_DESCRIPTIONS
        self.sync = _combo({m: SYNC_TIPS[m] for m in flag("sync").choices}, flag("sync").tooltip())
        self.policy = _combo({m: POLICY_DESCRIPTIONS[m] for m in flag("draft_policy").choices},
                             flag("draft_policy").tooltip())
        self.vocab = _combo({m: VOCAB_TIPS[m] for m in flag("vocab").choices if m in VOCAB_TIPS},
                            flag("vocab").tooltip())
        # draft-tree (llama-speculative): its branches are sequences of both contexts (-np, an
        # engine setting: changing it reloads the pair) and its split threshold
        self.branches = QSpinBox(minimum=1, maximum=MAX_BRANCHES, value=4)
        self.branches.setToolTip("draft-tree: the most branches a tree holds, llama.cpp's -np "
                                 "(--parallel): each is a sequence of both models' caches, so "
                                 "changing it reloads the pair (1: a chain)")
        f = flag("p_split")
        self.p_split = QDoubleSpinBox(minimum=f.lo, maximum=f.hi, singleStep=0.05, decimals=2,
                                      value=f.default)
        self.p_split.setToolTip(f.tooltip())

    def _rows(self) -> dict[str, list[list[tuple[str, QWidget]]]]:
        """Each type's parameter lines under its check box: (label, widget) pairs."""
        def sizes(t):
            return [("n", self.size_n[t]), ("m", self.size_m[t])]
        return {
            "ngram-simple": [sizes("ngram-simple")],
            "ngram-map-k": [sizes("ngram-map-k")],
            "ngram-map-k4v": [sizes("ngram-map-k4v") + [("min hits", self.min_hits)]],
            "ngram-mod": [[("match", self.mod_match), ("min", self.mod_min), ("max", self.mod_max)]],
            "ngram-cache": [[("static", self.cache_static)], [("dynamic", self.cache_dynamic)]],
            LOOKAHEAD: [[(k.upper(), w) for k, w in self.lookahead.items()]],
            SUFFIX: [[("depth", self.suffix["max_depth"]), ("tokens", self.suffix["max_spec_tokens"])],
                     [("factor", self.suffix["max_spec_factor"]),
                      ("min p", self.suffix["min_token_prob"])],
                     [("leaves (-np)", self.suffix_np), ("corpus", self.suffix_corpus)]],
            DRAFT_MODEL: [[("n_max", self.n_max), ("n_min", self.n_min)],
                          [("p_min", self.p_min), ("sync", self.sync)],
                          [("n policy", self.policy), ("vocab", self.vocab)]],
            TREE: [[("branches (-np)", self.branches), ("p_split", self.p_split)]],
        }

    def _type_grid(self) -> QGridLayout:
        """One check box per type, its parameter lines and its note under it; ``checks``,
        ``params`` (each type's widgets, greyed out while it is not checked) and
        ``model_params`` (draft-simple's shared lengths, enabled for any model drafter)."""
        self.checks: dict[str, QCheckBox] = {}
        self.params: dict[str, list[QWidget]] = {}
        self.model_params: list[QWidget] = []
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
                    self.model_params.append(note)
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
        """One line of (label, widget) pairs; its labels and widgets are added to ``widgets``
        (and the shared lengths to ``model_params``)."""
        shared = (self.n_max, self.n_min, self.p_min)
        box = QHBoxLayout()
        box.setSpacing(4)
        for label, w in line:
            lab = QLabel(label)
            lab.setToolTip(w.toolTip())
            lab.setStyleSheet("color:#444")
            box.addWidget(lab)
            box.addWidget(w, 1 if w.property("path") else 0)
            box.addSpacing(8)
            widgets += [lab, w]
            if w in shared:
                self.model_params += [lab, w]
        if not any(w.property("path") for _, w in line):
            box.addStretch(1)
        return box

    def _connect(self) -> None:
        """Every edit re-checks the settings (``_edited``)."""
        for c in self.checks.values():
            c.toggled.connect(self._edited)
        for w in (*self.size_n.values(), *self.size_m.values(), self.min_hits, self.mod_match,
                  self.mod_min, self.mod_max, self.n_max, self.n_min, self.p_min, self.branches,
                  self.p_split, *self.suffix.values(), self.suffix_np, *self.lookahead.values()):
            w.valueChanged.connect(self._edited)
        for combo in (self.sync, self.policy, self.vocab):
            combo.currentIndexChanged.connect(self._edited)
        for e in (self.cache_static, self.cache_dynamic, self.suffix_corpus):
            e.editingFinished.connect(self._edited)
        self.synth.changed.connect(self._edited)

    def _path_edit(self, placeholder: str, tip: str, what: str = "a lookup cache") -> QLineEdit:
        e = QLineEdit()
        e.setPlaceholderText(placeholder)
        e.setToolTip(tip)
        e.setClearButtonEnabled(True)
        e.setProperty("path", True)
        e.setMinimumWidth(80)
        browse = e.addAction(self.style().standardIcon(self.style().StandardPixmap.SP_DirOpenIcon),
                             QLineEdit.ActionPosition.TrailingPosition)
        browse.setToolTip(f"Choose {what} file")
        browse.triggered.connect(lambda: self._browse(e, what))
        return e

    def _browse(self, edit: QLineEdit, what: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, f"Choose {what}", edit.text() or str(Path.home()))
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
        maps = {t: NgramMapParams(self.size_n[t].value(), self.size_m[t].value(),
                                  self.min_hits.value() if t == "ngram-map-k4v" else 1)
                for t in MAP_TYPES}
        return SpecSettings(
            n_max=self.n_max.value(), n_min=self.n_min.value(), p_min=round(self.p_min.value(), 4),
            sync=self.sync.currentData(), types=self.types(), draft_policy=self.policy.currentData(),
            vocab=self.vocab.currentData(), p_split=round(self.p_split.value(), 4),
            ngram_simple=maps["ngram-simple"], ngram_map_k=maps["ngram-map-k"],
            ngram_map_k4v=maps["ngram-map-k4v"],
            ngram_mod=NgramModParams(self.mod_match.value(), self.mod_min.value(), self.mod_max.value()),
            ngram_cache=NgramCacheParams(self.cache_static.text().strip(), self.cache_dynamic.text().strip()),
            lookahead=LookaheadParams(**{k: w.value() for k, w in self.lookahead.items()}),
            suffix=SuffixParams(**{k: round(w.value(), 4) for k, w in self.suffix.items()},
                                corpus=self.suffix_corpus.text().strip()),
            **self.synth.fields())

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
        """The sequences each context needs (EngineSettings.n_seq): draft-tree's branches, else 1."""
        types = self.types()
        if LOOKAHEAD in types:                 # llama-lookahead's W + G + 1
            return self.spec_settings().sequences()
        if types == (SUFFIX,):                 # its tree's leaves (1: a path, the chain's)
            return self.suffix_np.value()
        return self.branches.value() if TREE in types else 1

    def draft_problem(self) -> str:
        """Why the checked model drafter cannot draft with the draft slot's model (or, draft-mtp,
        with the target's own layers), or ""."""
        types = self.types()
        path, blocks = self._mtp
        for t in (t for t in types if t in MTP_TYPES and blocks == 0):
            return (f"{t}: {path.name if path else 'the target'} has no MTP (nextn) blocks "
                    "to draft with: choose a target converted with its MTP layers, or uncheck "
                    f"{t}.")
        slot = [t for t in types if t in (DRAFT_MODEL, TREE) or t in HEADS]  # the draft slot's
        if len({HEADS.get(t, ("",))[0] for t in slot}) > 1:
            listed = ", ".join(slot[:-1]) + " and " + slot[-1]
            return (f"{listed} {'both' if len(slot) == 2 else 'all'} draft with the model in the "
                    "draft slot: check one of them.")
        if self._draft is None:
            return ""
        path, arch, refused = self._draft
        name = path.name if path is not None else ""
        for t in (t for t in types if t in (DRAFT_MODEL, TREE)):
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
        model = bool(chosen & set(MODEL_TYPES))
        for t, widgets in self.params.items():
            for w in widgets:
                w.setEnabled(t in chosen or (model and w in self.model_params))
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
                "size_n": {t: s.value() for t, s in self.size_n.items()},
                "size_m": {t: s.value() for t, s in self.size_m.items()},
                "min_hits": self.min_hits.value(),
                "mod": [self.mod_match.value(), self.mod_min.value(), self.mod_max.value()],
                "cache": [self.cache_static.text(), self.cache_dynamic.text()],
                "policy": self.policy.currentData(), "vocab": self.vocab.currentData(),
                "branches": self.branches.value(), "p_split": self.p_split.value(),
                "suffix": {**{k: w.value() for k, w in self.suffix.items()},
                           "corpus": self.suffix_corpus.text(), "np": self.suffix_np.value()},
                "lookahead": {k: w.value() for k, w in self.lookahead.items()}}

    @staticmethod
    def dict_of(spec) -> dict:
        """``to_dict``'s form of a SpecSettings (what a recorded run drafted with)."""
        return {"types": list(spec.types),
                "size_n": {t: spec.params(t).size_n for t in MAP_TYPES},
                "size_m": {t: spec.params(t).size_m for t in MAP_TYPES},
                "min_hits": spec.ngram_map_k4v.min_hits,
                "mod": [spec.ngram_mod.n_match, spec.ngram_mod.n_min, spec.ngram_mod.n_max],
                "cache": [spec.ngram_cache.lookup_cache_static, spec.ngram_cache.lookup_cache_dynamic],
                "policy": spec.draft_policy, "vocab": spec.vocab, "p_split": spec.p_split,
                "suffix": {k: getattr(spec.suffix, k) for k in (*SUFFIX_KNOBS, "corpus")},
                "lookahead": {k: getattr(spec.lookahead, k) for k in ("w", "n", "g")}}

    def from_dict(self, d: dict) -> None:
        """Restore what ``to_dict`` saved; anything malformed keeps its current value."""
        def num(widget, value):
            try:
                widget.setValue(int(value))
            except (TypeError, ValueError):
                pass
        types = d.get("types")
        if isinstance(types, list) and any(t in TYPES for t in types):
            self.set_types([t for t in types if t in TYPES])
        for key, spins in (("size_n", self.size_n), ("size_m", self.size_m)):
            if isinstance(d.get(key), dict):
                for t, v in d[key].items():
                    if t in spins:
                        num(spins[t], v)
        if "min_hits" in d:
            num(self.min_hits, d["min_hits"])
        if "branches" in d:
            num(self.branches, d["branches"])
        if isinstance(d.get("p_split"), (int, float)):
            self.p_split.setValue(float(d["p_split"]))
        mod = d.get("mod")
        if isinstance(mod, list) and len(mod) == 3:
            for w, v in zip((self.mod_match, self.mod_min, self.mod_max), mod):
                num(w, v)
        cache = d.get("cache")
        if isinstance(cache, list) and len(cache) == 2 and all(isinstance(x, str) for x in cache):
            self.cache_static.setText(cache[0])
            self.cache_dynamic.setText(cache[1])
        if isinstance(d.get("lookahead"), dict):
            for k, v in d["lookahead"].items():
                if k in self.lookahead:
                    num(self.lookahead[k], v)
        suffix = d.get("suffix")
        if isinstance(suffix, dict):
            for k, w in self.suffix.items():
                if isinstance(suffix.get(k), (int, float)):
                    w.setValue(type(w.value())(suffix[k]))
            if isinstance(suffix.get("corpus"), str):
                self.suffix_corpus.setText(suffix["corpus"])
            if "np" in suffix:
                num(self.suffix_np, suffix["np"])
        for combo, key in ((self.policy, "policy"), (self.vocab, "vocab")):
            i = combo.findData(d.get(key))
            if i >= 0:
                combo.setCurrentIndex(i)
        self._edited()
