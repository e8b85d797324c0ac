"""The quantize dialog: Start makes the copies and Add to Compare emits their paths; Stop."""

from specscope.app.quantize_dialog import QuantizeDialog
from specscope.core.models.demo import demo_pair
from specscope.core.models.gguf_file import check_gguf


def _choose(dialog, types):
    for t, box in dialog.checks.items():
        box.setChecked(t in types)


def test_start_makes_the_files_and_add_to_compare_emits_their_paths(qtbot, tmp_path):
    d = QuantizeDialog(demo_pair()[1], tmp_path)
    qtbot.addWidget(d)
    assert "F16" not in d.checks          # the demo draft is F16 already
    _choose(d, ["Q8_0", "Q4_0"])
    assert not d.compare_button.isEnabled()
    with qtbot.waitSignal(d.finished_run, timeout=60_000):
        assert d.start()
        assert d.stop_button.isEnabled() and not d.start_button.isEnabled()
    expected = [str(tmp_path / "demo-draft.Q8_0.gguf"), str(tmp_path / "demo-draft.Q4_0.gguf")]
    assert [d.files.topLevelItem(i).text(2) for i in range(2)] == ["done", "done"]
    assert d.progress.value() == d.progress.maximum()
    assert set(check_gguf(expected[0]).tensor_types) == {"Q8_0", "F32"}
    assert "Q4_0" in check_gguf(expected[1]).tensor_types
    assert d.compare_button.isEnabled()
    with qtbot.waitSignal(d.add_to_compare) as emitted:
        d.compare_button.click()
    assert emitted.args == [expected]
    # a second Start into the same folder refuses to overwrite, in one line
    assert not d.start()
    assert "already exists" in d.message.text() and "\n" not in d.message.text()


def test_stop_removes_the_partial_file(qtbot, tmp_path):
    d = QuantizeDialog(demo_pair()[1], tmp_path)
    qtbot.addWidget(d)
    _choose(d, ["Q8_0"])
    d._bridge.progressed.connect(lambda i, n, f, p: f > 0 and d.stop_button.click())
    with qtbot.waitSignal(d.finished_run, timeout=60_000) as done:
        d.start()
    assert [r.status for r in done.args[0]] == ["stopped"]
    assert list(tmp_path.iterdir()) == []
    assert "stopped" in d.message.text() and not d.compare_button.isEnabled()


def test_a_bad_folder_is_one_line(qtbot, tmp_path):
    afile = tmp_path / "plain-file"
    afile.write_text("x")
    d = QuantizeDialog(demo_pair()[1], afile)
    qtbot.addWidget(d)
    assert not d.start()
    assert d.message.text() == f"{afile}: is not a folder"


def test_add_to_compare_adds_the_copies_as_drafts_of_the_compare_view(qtbot, tmp_path):
    from specscope.app.compare_view import CompareView
    from specscope.app.quantize_dialog import open_quantize_dialog
    target, draft = demo_pair()
    compare = CompareView()
    qtbot.addWidget(compare)
    compare.set_pair(target, draft)
    d = open_quantize_dialog(None, draft, compare)
    d.folder.setText(str(tmp_path))
    _choose(d, ["Q8_0"])
    with qtbot.waitSignal(d.finished_run, timeout=60_000):
        d.start()
    d.compare_button.click()
    assert compare.draft_paths() == [str(draft), str(tmp_path / "demo-draft.Q8_0.gguf")]
    d.close()
    compare.shutdown()
