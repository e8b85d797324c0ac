"""The Advisor workspace (app/advise_view.py) on the demo pair with real llama.cpp: a short run
fills the table, the measured chart and the break-even plot; Stop keeps what was measured; an
advice saved opens again without its models; Copy puts the exact command on the clipboard. And the
Run workspace's Copy command (app/copy_command.py): the advisor's spelling, flags llama.cpp has."""

from __future__ import annotations

import json
from types import SimpleNamespace
from dataclasses import replace

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402

from helpers.llama_args import unknown_flags  # noqa: E402
from specscope.app.advise_view import AdvisorView  # noqa: E402
from specscope.core.engine.engine import EngineSettings  # noqa: E402
from specscope.core.measure.advise.advice import (MIN_PASSES, Advice, AdviseSettings,  # noqa: E402
                                                  Candidate, MeasuredCandidate)
from specscope.core.measure.advise.advisor import advise  # noqa: E402
from specscope.core.measure.advise.report import llama_command, to_dict  # noqa: E402
from specscope.core.models.demo import demo_pair  # noqa: E402

RUN_MS = 240_000
CATS = ("translation", "code-editing")

pytestmark = pytest.mark.usefixtures("quiet_machine")


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def view(qtbot):
    v = AdvisorView()
    qtbot.addWidget(v)
    v.resize(1366, 740)
    v.show()
    target, draft = demo_pair()
    v.set_pair(target, draft)
    v.form.set_categories(CATS[:1])
    v.form.n_predict.setValue(12)
    v.form.top.setValue(2)
    v.form.passes.setValue(MIN_PASSES)          # the fewest with an interval
    v.form.threads.setValue(1)
    yield v
    assert v.shutdown()


@pytest.fixture(scope="module")
def advice() -> Advice:
    """A real advice on the demo pair (two categories), computed once without the window."""
    target, draft = demo_pair()
    return advise(AdviseSettings(target, (draft,), CATS, budget_s=900, n_predict=12, top=2,
                                 passes=MIN_PASSES, engine=EngineSettings(target_threads=1, draft_threads=1)))


def cells(v: AdvisorView) -> list[list[str]]:
    t = v.table
    return [[t.item(i, j).text() for j in range(t.columnCount() - 1)] for i in range(t.rowCount())]


def test_a_short_run_fills_the_table_the_chart_and_the_break_even_plot(view, qtbot):
    with qtbot.waitSignal(view.sweep_finished, timeout=RUN_MS) as done:
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        assert view.running and view.stop_button.isEnabled() and not view.run_button.isEnabled()
    a = done.args[0]
    assert not a.stopped and [c.category for c in a.categories] == ["translation"]
    assert view.advice is a and not view.running and view.run_button.isEnabled()
    row = cells(view)[0]
    d = a.categories[0].decision()
    assert row[0] == "translation" and row[1] == d.verdict
    assert row[3] == (d.runner_up.candidate.name if d.runner_up else "–")
    assert "×" in row[2] + row[4] and row[5].endswith("×")        # an interval, and the ceiling
    assert [len(m.pass_speedups()) for m in a.categories[0].measured] == [MIN_PASSES] * 2   # top 2
    assert len(view.chart.items) >= 2                                # points, interval bars
    assert [(c, d) for c, d, _ in view.points] == [("translation", "demo-draft.gguf")]
    point = view.points[0][2]
    assert 0 < point.alpha <= 1 and point.f == a.calibrations["demo-draft.gguf"].f
    assert view.break_even.items                                     # curves and the draft's point
    caption = view.caption.text()
    assert "beats the target alone here" in caption and "translation — draft-simple n=" in caption
    assert "measuring ✓" in view.phase_label.text()
    assert "done in" in view.status.text()


def test_stop_midway_keeps_what_was_measured_and_shows_it(view, qtbot):
    view.form.set_categories(CATS)
    view.form.passes.setValue(8)
    assert view.start()

    def measured_some():
        a = view.advice
        return a is not None and any(m.pairs for c in a.categories for m in c.measured)
    qtbot.waitUntil(measured_some, timeout=RUN_MS)
    assert "budget left" in view.phase_label.text() and "<b>3. measuring</b>" in view.phase_label.text()
    with qtbot.waitSignal(view.sweep_finished, timeout=RUN_MS) as done:
        qtbot.mouseClick(view.stop_button, Qt.MouseButton.LeftButton)
    a = done.args[0]
    assert a.stopped and a.phase == "measure"
    pairs = sum(m.pairs for c in a.categories for m in c.measured)
    assert 0 < pairs < 2 * 2 * 6 * 8                                 # far from every planned pair
    assert [r[0] for r in cells(view)] == list(CATS)
    assert view.advice is a and "stopped" in view.status.text()
    assert "what was measured" in view.phase_label.text()


def test_save_and_reopen_restore_the_table_chart_and_plot(qtbot, advice, tmp_path):
    first = AdvisorView()
    qtbot.addWidget(first)
    first.show_advice(advice)
    path = first.save(tmp_path / "advice.json")
    again = AdvisorView()
    qtbot.addWidget(again)
    assert again.open(path)
    assert cells(again) == cells(first) and len(cells(again)) == 2
    assert len(again.chart.items) == len(first.chart.items)
    assert again.points == first.points and again.break_even.curves == first.break_even.curves
    for cat in CATS:
        for tool in ("llama-server", "llama-cli"):
            assert again.table.command(cat, tool) == first.table.command(cat, tool)
    assert to_dict(again.advice) | {"cpus": 0} == to_dict(advice) | {"cpus": 0}
    assert first.shutdown() and again.shutdown()


def test_an_advice_from_before_the_format_had_a_version_still_opens(qtbot, advice, tmp_path):
    """`advise --json` before the version: no calibration figures, whole settings, threads or
    baselines' tokens, and (earlier still) each pair's ratio only, judged pair by pair."""
    doc = to_dict(advice)
    for key in ("format", "version", "engine", "top", "passes"):
        del doc[key]
    for cal in doc["calibrations"].values():
        del cal["figures"]
    for c in doc["categories"]:
        del c["continuations"]
        for m in [*c["measured"], *c["predicted_top"], c["best"], c["runner_up"],
                  *(x for p in c["policies"].values() for x in p.values())]:
            for key in ("spec", "drafted_at", "accepted_at", "runs", "pass_speedups"):
                (m or {}).pop(key, None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc), encoding="utf-8")
    v = AdvisorView()
    qtbot.addWidget(v)
    assert v.open(old)
    assert [r[0] for r in cells(v)] == list(CATS) and v.pair is None and not v.points
    assert "no calibration" in v.break_even.note.toPlainText()
    now = AdvisorView()
    qtbot.addWidget(now)
    now.show_advice(advice)
    for cat, then, saved in zip(v.advice.categories, advice.categories, doc["categories"]):
        for m, n in zip(cat.measured, then.measured):        # judged pair by pair, as it was then
            assert m.ratios == pytest.approx(n.ratios) and len(m.pass_speedups()) == n.pairs
        name = cat.measured[0].candidate.name
        for tool in ("llama-server", "llama-cli"):      # the same setups (the threads were not saved)
            line = llama_command(v.advice, cat.measured[0], tool)
            assert line == llama_command(advice, then.measured[0], tool).replace(" -t 1", "").replace(" -td 1", "")
        assert name == saved["measured"][0]["name"]
    assert v.shutdown() and now.shutdown()


def test_a_bad_file_is_one_banner_line_and_the_advice_shown_stays(qtbot, advice, tmp_path):
    v = AdvisorView()
    qtbot.addWidget(v)
    v.show()
    v.show_advice(advice)
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    assert not v.open(bad)
    assert v.banner.isVisible() and str(bad) in v.banner.message and "advice" in v.banner.message
    assert v.advice is advice and len(cells(v)) == 2
    assert v.shutdown()


def test_copy_puts_the_exact_command_on_the_clipboard(qtbot, advice):
    v = AdvisorView()
    qtbot.addWidget(v)
    v.show()
    v.show_advice(advice)
    for cat in advice.categories:
        for tool in ("llama-server", "llama-cli"):
            qtbot.mouseClick(v.table.copy_button(cat.category, tool), Qt.MouseButton.LeftButton)
            line = QGuiApplication.clipboard().text()
            assert line == llama_command(advice, cat.decision().best, tool)
            if "--spec-type suffix" in line:       # SpecScope only: its own command, and why
                assert line.startswith("specscope run -m ") and "# SpecScope only" in line
            else:
                assert line.startswith(f"{tool} -m ") and not unknown_flags(line)
            assert f"copied the {tool} command for {cat.category}" in v.status.text()
    assert v.shutdown()


def test_the_run_tabs_copy_command_spells_the_settings_as_the_advisor(window, qtbot, tmp_path):
    w = window
    target, draft = w.pair_panel.pair()
    d = w.params.drafter
    d.set_types(["ngram-simple", "ngram-cache", "draft-simple"])
    d.n_max.setValue(5)
    d.p_min.setValue(0.5)
    d.knobs["ngram-simple.size_n"].setValue(3)
    cache = tmp_path / "static.bin"
    cache.write_bytes(b"")
    d.knobs["ngram-cache.lookup_cache_static"].setText(str(cache))
    w.pair_panel.threads["target"].setValue(1)
    w.pair_panel.threads["draft"].setValue(1)
    spec = w.params.spec_settings()
    s = AdviseSettings(target, (draft,), engine=EngineSettings(target_threads=1, draft_threads=1))
    expected = {tool: llama_command(Advice(s, []), MeasuredCandidate(Candidate(draft.name, spec, "", None, 0, 0)), tool)
                for tool in ("llama-server", "llama-cli")}
    qtbot.mouseClick(w.copy_command.button, Qt.MouseButton.LeftButton)
    server = QGuiApplication.clipboard().text()
    assert server == expected["llama-server"]
    words = server.split()
    for flag, value in (("--spec-type", "ngram-simple,ngram-cache,draft-simple"), ("--spec-draft-n-max", "5"),
                        ("--spec-draft-p-min", "0.5"), ("--spec-ngram-simple-size-n", "3"),
                        ("-md", str(draft)), ("-lcs", str(cache)), ("-t", "1"), ("-td", "1")):
        assert words[words.index(flag) + 1] == value
    assert not unknown_flags(server)
    assert w.copy_command.copy("llama-cli") == expected["llama-cli"]
    cli = QGuiApplication.clipboard().text()
    assert cli == expected["llama-cli"] and "-lcs" not in cli and not unknown_flags(cli)
    assert "lookup-cache files" in w.copy_command.note.text()
    d.policy.setCurrentIndex(d.policy.findData("hf"))                # SpecScope's own: said, not spelled
    w.copy_command.copy()
    assert "hf draft-length policy" in w.copy_command.note.text()
    assert QGuiApplication.clipboard().text() == expected["llama-server"]
    d.set_types([])                                                  # nothing checked: the target alone
    assert w.copy_command.copy() == f"llama-server -m {target} -t 1"


def test_the_advisor_is_a_workspace_that_holds_the_cores(window, qtbot):
    w = window
    w.show_workspace("advisor")
    assert w.workspace.currentWidget().widget() is w.advisor
    assert w.advisor.form.target == w.pair_panel.pair()[0]
    assert w.advisor.form.draft_paths() == [str(w.pair_panel.pair()[1])]
    w.advisor.form.set_categories(CATS[:1])
    w.advisor.form.n_predict.setValue(16)
    w.advisor.form.threads.setValue(1)
    with qtbot.waitSignal(w.advisor.sweep_finished, timeout=RUN_MS):
        assert w.advisor.start(replace(w.advisor.settings(), top=1, passes=1))
        w.run_clicked()                                 # refused while the advisor holds the cores
        assert "The advisor is running in the Advisor tab" in w.banner.message
    assert not w.controller.sweeping and w.controller.refusal("run") == ""


def test_the_break_even_caption_stays_below_the_plot_on_a_small_screen(qtbot, advice):
    """Issue 31 item 7: at 1280×720 the break-even note was drawn over the plot's x axis; it
    now scrolls in its own area below the whole plot."""
    v = AdvisorView()
    qtbot.addWidget(v)
    v.resize(1280, 640)
    v.show()
    v.show_advice(advice)
    qtbot.wait(50)
    box = v.caption.box
    plot, area = box.plot.geometry(), box.area.geometry()
    assert plot.bottom() < area.top(), (plot, area)
    assert plot.height() >= box.plot.minimumHeight()
    # the key is under the plot, not a legend over its points and their labels
    assert v.caption.text().startswith("Key: ") and "demo-draft.gguf" in v.caption.text()
    assert getattr(v.break_even, "legend", None) is None


def test_the_measured_chart_names_a_chain_whole(qtbot):
    """A chain's point was keyed by its first type alone ("● ngram-simple" for
    ngram-simple>draft-simple)."""
    from specscope.app.advise_charts import MeasuredChart
    from specscope.core.engine.engine import SpecSettings
    from specscope.core.measure.advise.advice import CategoryAdvice, Pair
    chain = Candidate("d.gguf", SpecSettings(types=("ngram-simple", "draft-simple")), "chain", 1.1, 0.6, 2.0)
    alone = Candidate("", SpecSettings(types=("ngram-simple",)), "alone", 1.0, 0.3, 1.2)
    cat = CategoryAdvice("translation", measured=[
        MeasuredCandidate(chain, [Pair(0, 32, 0.01, 32, 0.012)]),
        MeasuredCandidate(alone, [Pair(0, 32, 0.011, 32, 0.012)])])
    chart = MeasuredChart()
    qtbot.addWidget(chart.widget)
    chart.fill(SimpleNamespace(categories=[cat]))
    key = chart.key_html()
    assert "ngram-simple&gt;draft-simple" in key or "ngram-simple>draft-simple" in key
    assert "◆" in key and "●" in key
