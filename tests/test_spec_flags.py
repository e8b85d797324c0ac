"""The flag table (core/engine/spec_flags.py): the llama.cpp command written for a setting reads
back as the same setting, every flag it writes is one the program takes in the vendored
common/arg.cpp, and the window's spin boxes take their ranges from the table."""

import random
import shlex
from dataclasses import fields, is_dataclass, replace

import pytest

from helpers.llama_args import EXAMPLES, flags_of, unknown_flags
from specscope.core.cli.spec import spec_from_flags
from specscope.core.engine.drafters import SPEC_TYPES
from specscope.core.engine.drafters.registry import LLAMA_TYPES
from specscope.core.engine.engine import SpecSettings
from specscope.core.engine.spec_flags import FLAGS, not_carried, read, settings_fields, with_values
from specscope.core.errors import ConfigError
from specscope.core.measure.command_line import command_line

TOOLS = ("llama-server", "llama-cli", "llama-speculative-simple")   # the table's columns


def test_the_table_sets_every_field_of_the_settings_once():
    assert sorted(f.field for f in FLAGS) == sorted(settings_fields())
    names = [n for f in FLAGS for n in f.names]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("tool", TOOLS)
def test_the_table_says_which_programs_take_each_flag_as_arg_cpp_does(tool):
    taken = flags_of(tool)
    for f in FLAGS:
        assert (f.flag in taken) == (tool in f.tools), (f.flag, tool)
        assert all(n in taken for n in f.names if tool in f.tools), f.names


def _draw(rng: random.Random, files: list[str]) -> SpecSettings:
    values = {}
    for f in FLAGS:
        default = f.default
        if f.choices:
            values[f.field] = rng.choice(f.choices)
        elif isinstance(default, bool):
            continue
        elif isinstance(default, int):
            values[f.field] = rng.randint(int(f.lo), min(int(f.hi), 200))
        elif isinstance(default, float) and f.lo is not None:
            values[f.field] = round(rng.uniform(f.lo, f.hi), 3)
        elif f.field == "synth_len":
            values[f.field] = rng.choice([-1.0, round(rng.uniform(1.0, 4.0), 2)])
        elif f.field == "synth_rates":
            values[f.field] = rng.choice([(), tuple(round(rng.random(), 2) for _ in range(3))])
        elif isinstance(default, str):
            values[f.field] = rng.choice(["", *files])
    # llama.cpp's --spec-type values (draft-tree and lookahead are programs of their own,
    # written as such: tests/test_tree.py, tests/test_lookahead.py)
    types = tuple(t for t in LLAMA_TYPES if rng.random() < 0.3) or ("draft-simple",)
    values["n_min"] = min(values["n_min"], values["n_max"])
    if values["synth_len"] != -1.0:
        values["synth_rates"] = ()        # llama.cpp takes one or the other
    return with_values(SpecSettings(types=types), values)


def _carried(spec: SpecSettings, tool: str) -> SpecSettings:
    """``spec`` with what ``tool``'s command cannot carry (not_carried) and what steers none of
    its types back at their defaults."""
    reset = [*not_carried(spec, tool), *(f for f in FLAGS if not f.applies(spec))]
    return with_values(spec, {f.field: f.default for f in reset})


def test_a_setting_written_for_llama_cpp_reads_back_as_the_same_setting(tmp_path):
    files = []
    for name in ("cache a.bin", "b.bin"):          # lookup caches must exist; one name has a space
        (tmp_path / name).write_bytes(b"")
        files.append(str(tmp_path / name))
    rng, checked = random.Random(32), 0
    for _ in range(400):
        spec = _draw(rng, files)
        try:
            spec.validate()
        except ConfigError:
            continue
        for tool in TOOLS:
            line = command_line(tool, "target.gguf", spec, "draft.gguf", 2, 1)
            assert not unknown_flags(line), (tool, unknown_flags(line))
            words = shlex.split(line)[3:]
            flags = []
            while words:
                word, value = words.pop(0), words.pop(0)
                if word not in ("-md", "-t", "-td"):
                    flags += [word, value]
            back = spec_from_flags(flags)
            assert back == _carried(spec, tool), (tool, line)
            checked += 1
    assert checked > 300          # the draws are mostly valid settings


def test_the_model_drafters_length_flags_are_written_only_for_a_model_drafter():
    line = command_line("llama-server", "t.gguf", SpecSettings(types=("ngram-mod",), n_max=7))
    assert "--spec-draft-n-max" not in line and "--spec-ngram-mod-n-match 24" in line
    line = command_line("llama-server", "t.gguf", SpecSettings(types=("draft-mtp",), n_max=7))
    assert "--spec-draft-n-max 7" in line and "-md" not in line


def test_the_window_takes_its_ranges_and_tooltips_from_the_table(qtbot):
    """Every flag with a label is a knob under its first type, with the flag's range, default,
    choices and tooltip; each type that offers -np has its spin box, under it."""
    from PySide6.QtWidgets import QComboBox, QLineEdit
    from specscope.app.drafter_panel import DrafterPanel
    from specscope.core.engine.drafters.registry import TYPES
    from specscope.core.engine.spec_flags import FLAGS
    panel = DrafterPanel()
    qtbot.addWidget(panel)
    shown = [f for f in FLAGS if f.label]
    assert set(panel.knobs) == {f.field for f in shown}
    assert {"n_max", "ngram-mod.n_match", "suffix.max_depth", "draft-tree.p_split", "lookahead.w",
            "ngram-map-k4v.min_hits"} <= set(panel.knobs)
    assert "ngram-map-k.min_hits" not in panel.knobs          # llama.cpp ignores it there
    for f in shown:
        widget = panel.knobs[f.field]
        assert widget.toolTip() == f.tooltip() and widget in panel.params[f.types[0]]
        if isinstance(widget, QComboBox):
            offered = [widget.itemData(i) for i in range(widget.count())]
            assert offered == [c for c in f.choices if c in offered] and len(offered) >= 2
        elif not isinstance(widget, QLineEdit):
            assert (widget.minimum(), widget.maximum(), widget.value()) == (f.lo, f.hi, f.default)
    assert set(panel.np) == {n for n, t in TYPES.items() if t.np}
    for name, spin in panel.np.items():
        assert spin.value() == TYPES[name].np[1] and spin in panel.params[name]


def test_a_types_own_parameters_are_a_value_held_by_its_name():
    """SpecSettings.own holds each type's parameters (its drafter module's PARAMS) by type name:
    defaults where none were given, equal and hashed alike however they were given, and a
    parameter class that is not the type's is refused."""
    from specscope.core.engine.drafters.ngram_map import NgramMapParams
    from specscope.core.engine.drafters.ngram_mod import NgramModParams
    from specscope.core.engine.settings import TypeParams
    a = SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(3, 11)})
    b = with_values(SpecSettings(types=("ngram-simple",)), {"ngram-simple.size_n": 3,
                                                             "ngram-simple.size_m": 11})
    assert a == b and hash(a) == hash(b) and read(a, "ngram-simple.size_m") == 11
    assert a.params("ngram-map-k") == NgramMapParams()                   # another type: its default
    assert SpecSettings(own={"ngram-mod": NgramModParams()}) == SpecSettings()   # defaults: none given
    assert a.own.given() == {"ngram-simple": NgramMapParams(3, 11)}
    with pytest.raises(ConfigError, match="NgramMapParams, not a NgramModParams"):
        TypeParams({"ngram-simple": NgramModParams()})
    with pytest.raises(KeyError, match="no speculative type with parameters"):
        a.params("draft-simple")                                        # a programming error
    with pytest.raises(ConfigError, match="size N"):
        SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(0)}).validate()
