"""The Compare view: a sweep on the worker thread, its table, heatmap, plot, export and Stop."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import replace

import pytest

pytest.importorskip("pytestqt")

from helpers import ggufgen  # noqa: E402
from specscope.app.compare_table import TABLE_COLUMNS, speedup_color  # noqa: E402
from specscope.app.compare_view import CompareView  # noqa: E402
from specscope.core.engine.engine import EngineSettings, SpecSettings  # noqa: E402
from specscope.core.engine.sampling import SamplerSettings  # noqa: E402
from specscope.core.measure.bench.rows import CSV_COLUMNS  # noqa: E402

EOT = len(ggufgen.bpe_vocab()[0]) - 1
QUICK = dict(engine=EngineSettings(n_ctx=256, target_threads=1, draft_threads=1), n_predict=8,
             sampler=SamplerSettings(logit_bias=((EOT, -math.inf),)), calibration_s=0.3, repeats=1)
COL = {head: j for j, (head, _, _) in enumerate(TABLE_COLUMNS)}


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


pytestmark = pytest.mark.usefixtures("quiet_machine")


@pytest.fixture
def view(qtbot, tiny_models, tmp_path):
    v = CompareView()
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.set_pair(tiny_models["target"], tiny_models["draft"], [tiny_models["random_draft"]])
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"name": "code", "text": "def f(x):"},
                                               {"name": "words", "text": "The cat"}]}), encoding="utf-8")
    v.set_prompt_file(prompts)
    v.n_values.setText("1,2")
    yield v
    assert v.shutdown()


def one_line(label: str) -> str:
    """A heatmap row's name as the table writes it (the heatmap breaks it into lines)."""
    return label.replace(">\n", ">").replace("\n(", " (")


def run(view, qtbot, timeout=120_000, **kw):
    settings = replace(view.settings(), **{**QUICK, **kw})
    with qtbot.waitSignal(view.sweep_finished, timeout=timeout) as blocker:
        assert view.start(settings)
        assert view.running and not view.run_button.isEnabled() and view.stop_button.isEnabled()
    return blocker.args[0]


def test_settings_from_the_controls(view, tiny_models):
    s = view.settings()
    assert s.target == tiny_models["target"]
    assert [p.name for p in s.drafts] == ["draft.gguf", "random-draft.gguf"]
    assert s.n_values == (1, 2)
    assert [name for name, _ in s.prompts] == ["code", "words"]
    assert s.ignore_eos and not s.sampler.logit_bias     # the sweep reads the EOG tokens itself
    assert s.engine.target_threads == s.engine.draft_threads == view.threads.value() >= 1
    view.deterministic.setChecked(True)
    view.alpha_on.setChecked(True)
    s = view.settings()
    assert s.engine.kv_type == "f32" and s.engine.flash_attn == "off" and s.alpha == pytest.approx(0.7)
    assert s.sampler.greedy and s.spec.accept_rule == "match" and s.lossless
    assert s.p_mins == (0.0,)
    view.p_min_values.setText("0.5,0")
    assert view.settings().p_mins == (0.0, 0.5)
    view.p_min_values.setText("0")
    assert not view.accept_rule.isEnabled()              # a rule only matters at temperature
    view.temperature.setValue(0.8)
    view.accept_rule.setCurrentText("ratio")
    s = view.settings()
    assert s.sampler.temperature == pytest.approx(0.8) and s.spec.accept_rule == "ratio"
    assert not s.lossless                  # ratio draws other tokens than the baseline


def test_the_other_rules_column_shows_at_temperature(view, qtbot):
    from specscope.app.compare_table import CF_COLUMN
    run(view, qtbot)
    assert view.table.isColumnHidden(CF_COLUMN)                      # greedy: no other rule
    run(view, qtbot, n_values=(2,), sampler=replace(QUICK["sampler"], temperature=0.8))
    assert not view.table.isColumnHidden(CF_COLUMN)
    assert view.table.item(0, CF_COLUMN).text().startswith("ratio ")


def test_sweep_fills_table_heatmap_plot_and_exports(view, qtbot, tmp_path):
    result = run(view, qtbot)
    assert not result.stopped
    assert not view.running and view.run_button.isEnabled() and not view.stop_button.isEnabled()
    assert view.progress.value() == view.progress.maximum()
    # table: pooled rows (2 drafts × 2 n), then every row per prompt
    assert view.table.rowCount() == 4
    assert view.table.columnCount() == len(TABLE_COLUMNS)
    texts = [view.table.item(0, j).text() for j in range(len(TABLE_COLUMNS))]
    assert texts[:2] == ["draft-simple (draft.gguf)", "1"]           # two draft files: named
    assert texts[COL["Measured (spread)"]].endswith("×")             # one repetition: no spread
    assert texts[-2:] == ["", ""]          # lookup and rounds won: n-gram drafters only
    assert texts[-3] == ""                 # the other rule: at temperature only
    view.per_prompt.setChecked(True)
    assert view.table.rowCount() == 12
    # heatmap: drafts × n
    assert (view.heatmap.rowCount(), view.heatmap.columnCount()) == (2, 2)
    assert [one_line(view.heatmap.verticalHeaderItem(i).text()) for i in range(2)] == [
        "draft-simple (draft.gguf)", "draft-simple (random-draft.gguf)"]
    assert all(float(view.heatmap.item(i, j).text()) > 0 for i in range(2) for j in range(2))
    assert sum(view.heatmap.item(i, j).font().bold() for i in range(2) for j in range(2)) == 2
    # plot: measured, calibrated and textbook per draft
    assert len(view.chart.curves) == 6
    assert "draft.gguf" in view.best_label.text() and "calibrated" in view.best_label.text()
    assert "Lossless" in view.lossless_label.text()
    assert "draft.gguf" in view.calibration_label.text() and "c(k)" in view.calibration_label.text()
    # export
    assert view.csv_button.isEnabled() and view.json_button.isEnabled()
    rows = list(csv.reader(io.StringIO(view.export(tmp_path / "out.csv").read_text())))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 13
    doc = json.loads(view.export(tmp_path / "out.json").read_text())
    assert len(doc["rows"]) == 12
    assert set(doc["best_n"]) == {"draft-simple (draft.gguf)", "draft-simple (random-draft.gguf)"}
    # a second run uses the cached calibration
    run(view, qtbot)
    assert "(cached)" in view.calibration_label.text()


def test_a_calibration_under_load_is_flagged_in_the_view(view, qtbot, monkeypatch):
    from test_calibrate import FixedLoad
    from specscope.core.measure.cost import calibrate as cb
    monkeypatch.setattr(cb, "LoadMeter", lambda: FixedLoad(0.9))     # others used 90% of the CPU
    result = run(view, qtbot, drafts=(view.settings().drafts[0],), n_values=(1,))
    assert all(cal.under_load for cal in result.calibrations.values())
    assert "TAKEN UNDER LOAD, not cached" in view.calibration_label.text()
    assert "taken under load" in view.banner.message and "not cached" in view.banner.message


def test_stop_ends_the_sweep_between_runs(view, qtbot):
    from specscope.core.measure.bench.settings import sweep_steps
    settings = replace(view.settings(), **{**QUICK, "n_values": (1, 2, 3, 4), "n_predict": 24})
    total = sweep_steps(settings)

    def on_progress(fraction, what):
        if round(fraction * total) >= 3:
            view.request_stop()
    view.task.progressed.connect(on_progress)
    with qtbot.waitSignal(view.sweep_finished, timeout=120_000) as blocker:
        view.start(settings)
    result = blocker.args[0]
    assert result.stopped
    assert "stopped" in view.status.text()
    assert len(result.rows) < 2 * 4 * 3
    assert view.run_button.isEnabled()
    # the summary says which n never ran (its "best measured n" was the only one measured)
    summary = view.best_label.text()
    done = {r.n_max for r in result.rows}
    assert "never ran: the sweep was stopped" in summary and done < {1, 2, 3, 4}, summary
    assert summary.startswith("Measured: ")


def test_the_results_say_which_pair_they_were_measured_on(view, qtbot, tiny_models):
    run(view, qtbot)
    assert view.best_label.text().startswith(f"Measured: {tiny_models['target'].name} drafted by")
    view.set_pair(tiny_models["draft"], tiny_models["draft"])          # the window's pair changed
    assert "not the pair chosen now" in view.best_label.text()


def test_bad_input_is_shown_not_raised(view, qtbot):
    view.n_values.setText("0")
    assert not view.start()
    assert not view.banner.isHidden() and "draft lengths" in view.banner.message
    assert not view.running


def test_run_needs_a_pair(qtbot):
    v = CompareView()
    qtbot.addWidget(v)
    assert not v.run_button.isEnabled()
    assert not v.start()
    assert not v.banner.isHidden()
    assert v.shutdown()


def test_a_bad_draft_file_is_refused_before_anything_runs(view, qtbot, tmp_path, tiny_models):
    """A corrupt draft after a good one: the sweep measured the good one, then failed on it and
    kept no result (nothing to export). Every file is checked first."""
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00garbage" * 10)
    settings = replace(view.settings(), **QUICK, drafts=(tiny_models["draft"], bad))
    assert not view.start(settings)
    assert "broken.gguf" in view.banner.message and not view.running and not view.rows


def test_failure_reaches_the_banner(view, qtbot, tmp_path):
    from helpers import ggufgen
    bad = ggufgen.write_llama(tmp_path / "novocab.gguf", n_layer=1, model="no_vocab")  # loads: fails
    settings = replace(view.settings(), **QUICK, drafts=(bad,))
    with qtbot.waitSignal(view.sweep_failed, timeout=60_000):
        view.start(settings)
    assert not view.banner.isHidden() and not view.running and view.run_button.isEnabled()


def test_speedup_colors():
    assert speedup_color(1.0).name() == "#ffffff"
    faster, slower = speedup_color(2.0), speedup_color(0.5)
    assert faster.blue() > faster.red() and slower.red() > slower.blue()
    assert speedup_color(None).name() == "#eeeeee"


def test_an_incompatible_draft_drafts_across_vocabularies_or_is_skipped_with_a_warning(view, qtbot, tiny_models):
    drafts = (tiny_models["draft"], tiny_models["foreign"])
    result = run(view, qtbot, drafts=drafts, n_values=(1,))
    assert not result.skipped and view.heatmap.rowCount() == 3      # foreign: translate, intersect
    assert [r.vocab for r in result.pooled()] == ["", "translate", "intersect"]
    off = replace(view.settings().spec or SpecSettings(), vocab="off")    # llama.cpp's refusal stands
    result = run(view, qtbot, drafts=drafts, n_values=(1,), spec=off)
    assert "foreign.gguf" in result.skipped
    assert not view.banner.isHidden() and view.banner.level == "warning"
    assert view.heatmap.rowCount() == 1



def test_drafters_checklist_and_chains_make_the_configurations(view):
    from specscope.core.engine.drafters import SPEC_TYPES
    assert [view.drafters.item(i).text() for i in range(view.drafters.count())] == list(SPEC_TYPES)
    assert view.settings().chains == (("draft-simple",),)          # the default: as before
    view.set_drafters("ngram-simple", "draft-simple,ngram-simple")
    assert view.chains.text() == "draft-simple,ngram-simple"
    s = view.settings()
    assert s.chains == (("ngram-simple",), ("ngram-simple", "draft-simple"))   # priority order
    assert s.drafts                                                  # the chain loads the draft
    view.set_drafters("ngram-simple")
    assert view.settings().drafts == ()                              # n-gram only: no draft model
    view.drafts.clear()
    view._update_buttons()
    assert view.run_button.isEnabled()                               # ... so none is needed
    view.set_drafters("draft-simple")
    assert not view.run_button.isEnabled()
    view.set_drafters("ngram-bogus,draft-simple")
    assert not view.start()
    assert "unknown speculative type: ngram-bogus" in view.banner.message
    view.set_drafters()
    assert not view.start() and "tick at least one drafter" in view.banner.message


def test_the_shipped_drafter_prompts_are_offered(view):
    from specscope.core.models.demo import prompts_dir
    view.form._prompts_chosen(1)
    assert view.prompt_file == prompts_dir() / "drafter_prompts.json"
    assert [name for name, _ in view.settings().prompts][:2] == ["repeat_quote", "repeat_copy"]
    view.form._prompts_chosen(0)
    assert view.prompt_file is None and view.prompts.currentIndex() == 0


def test_sweep_of_ngram_drafters_and_a_chain_shows_them(view, qtbot):
    view.set_drafters("ngram-simple", "ngram-simple,draft-simple")
    result = run(view, qtbot, drafts=(view.settings().drafts[0],), n_predict=24)
    assert not result.stopped
    col = COL
    shown = {(view.table.item(i, col["Configuration"]).text(), view.table.item(i, col["n"]).text())
             for i in range(view.table.rowCount())}
    # the n-gram chain once (no n), the chain with the draft model per n
    assert shown == {("ngram-simple", "–"), ("ngram-simple>draft-simple", "1"),
                     ("ngram-simple>draft-simple", "2")}
    i = next(i for i in range(view.table.rowCount())
             if view.table.item(i, col["Configuration"]).text() == "ngram-simple")
    assert view.table.item(i, col["Configuration"]).toolTip() == "ngram-simple, no draft model"
    assert view.table.item(i, col["Lookup/round"]).text().endswith(")")
    assert view.table.item(i, col["Rounds won"]).text().startswith("ngram-simple ")
    j = next(i for i in range(view.table.rowCount())
             if view.table.item(i, col["Configuration"]).text() == "ngram-simple>draft-simple")
    assert " · draft-simple " in view.table.item(j, col["Rounds won"]).text()
    # heatmap: a row per configuration, the n-gram one in the "no n" column
    labels = [one_line(view.heatmap.verticalHeaderItem(r).text()) for r in range(view.heatmap.rowCount())]
    assert labels == ["ngram-simple", "ngram-simple>draft-simple"]     # one draft file: not repeated
    assert view.heatmap.horizontalHeaderItem(0).text() == "no n"
    assert view.heatmap.item(0, 0) is not None and view.heatmap.item(1, 0) is None
    assert len(view.chart.curves) == 6               # measured, calibrated, textbook × 2
    assert "no draft model" in view.calibration_label.text()
    assert "ngram-simple</b> (n-gram drafters, no n)" in view.best_label.text()


def test_the_table_shows_each_rows_spread_under_the_heatmaps_names(view, qtbot):
    """Issue 20, 7 and 8: three repetitions by default; the Spread column and the measured
    figure's tooltip give each row's spread, a row within noise or that never drafted says so,
    and the table names each configuration as the heatmap and the chart's legend do."""
    assert view.repeats.value() == 3
    view.set_drafters("draft-simple", "ngram-simple")
    result = run(view, qtbot, drafts=(view.settings().drafts[0],), n_values=(2,), repeats=view.repeats.value())
    names = [view.table.item(i, COL["Configuration"]).text() for i in range(view.table.rowCount())]
    labels = [one_line(view.heatmap.verticalHeaderItem(r).text()) for r in range(view.heatmap.rowCount())]
    legend = [label.text for _, label in view.legend.items]
    assert names == labels == legend == ["ngram-simple", "draft-simple"]     # one draft file
    # the chart's key under it names them in their colours (no legend over the curves)
    assert [n for n, _ in view.chart.named] == names and not view.legend.isVisible()
    assert all(f"■</span>&nbsp;{n}" in view.key.text() for n in names)
    view.per_prompt.setChecked(True)
    assert view.table.rowCount() == len(result.rows) == 6
    for i, row in enumerate(result.rows):
        assert row.repeats == 3 and row.speedup_min <= row.measured_speedup <= row.speedup_max
        measured = view.table.item(i, COL["Measured (spread)"])
        assert f"spread over 3 repetitions {row.spread_text('×')}" in measured.toolTip()
        assert measured.text() == ("never drafted" if row.never_drafted else
                                   ("≈" if row.within_noise else "") + f"{row.measured_speedup:.2f}× "
                                   f"({row.speedup_min:.2f}–{row.speedup_max:.2f})")
        assert (row.within_noise or row.never_drafted) == (measured.background().color().name() == "#eeeeee")
    item = view.heatmap.item(labels.index("draft-simple"), view.heatmap.columnCount() - 1)     # n = 2
    assert "spread over 3 repetitions" in item.toolTip() and item.toolTip().startswith("draft-simple, n = 2")
    # the figures the repetitions cannot back, in words under the table
    said = next((ln for ln in view.best_label.text().split("<br>") if ln.startswith("<span")), "")
    for r in result.pooled():
        name = r.drafter + (f" n={r.n_max}" if r.n_max else "")
        flagged = r.within_noise or r.never_drafted or r.prompts_drafted < r.prompts
        assert bool(re.search(rf"[:,] {re.escape(name)}[,.;( ]", said)) == flagged, said
    pooled = next(r for r in result.pooled() if r.drafter == "draft-simple")
    assert item.font().italic() == pooled.within_noise
    # the chart draws the spread around the measured point
    import pyqtgraph as pg
    [bars] = [it for it in view.plot.getPlotItem().items if isinstance(it, pg.ErrorBarItem)]
    assert bars.opts["top"][0] == pytest.approx(pooled.speedup_max - pooled.measured_speedup)


def test_the_ui_thread_loads_no_model_to_start_a_sweep(view, qtbot, monkeypatch):
    """Ignore EOS needs the target's end-of-generation tokens: the sweep's worker reads them, the
    UI thread never constructs a Model (a load there would freeze the window)."""
    import threading
    from specscope.core.models import llama
    threads = []
    real_init = llama.Model.__init__

    def spy(self, *args, **kw):
        threads.append((threading.current_thread() is threading.main_thread(), kw.get("vocab_only", False)))
        real_init(self, *args, **kw)

    monkeypatch.setattr(llama.Model, "__init__", spy)
    assert view.ignore_eos.isChecked()
    settings = replace(view.settings(), **{**QUICK, "sampler": SamplerSettings(), "n_values": (1,)})
    assert settings.ignore_eos
    with qtbot.waitSignal(view.sweep_finished, timeout=120_000) as blocker:
        assert view.start(settings)
    result = blocker.args[0]
    assert threads and not any(on_ui for on_ui, _ in threads)          # every load: the worker's
    assert (False, True) in threads                                     # the vocabulary, for the bias
    assert (EOT, -math.inf) in result.settings.sampler.logit_bias
    assert result.to_dict()["settings"]["ignore_eos"] is True


def test_a_sweep_refuses_to_start_while_something_else_runs(view):
    view.blocker = lambda: "A run is in progress in the Run tab: stop it there first."
    assert not view.start()
    assert not view.running and view.banner.level == "warning"
    assert view.banner.message == "A run is in progress in the Run tab: stop it there first."
    view.blocker = lambda: ""
    view.n_values.setText("0")          # (bad input: refused for that reason, not the blocker)
    assert not view.start() and "draft lengths" in view.banner.message


def test_a_sweep_puts_a_draft_model_and_an_eagle3_head_side_by_side(qtbot, tmp_path):
    """Compare sweeps draft-simple with the draft model and draft-eagle3 with the head among the
    drafts, on one target, each with its calibrated prediction."""
    target, head = ggufgen.write_eagle3_pair(tmp_path, prefix="cmp")
    v = CompareView()
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.set_pair(target, target, [head])                    # the target as its own draft, and a head
    v.n_values.setText("2")
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"name": "code", "text": "def f(x):"}]}), encoding="utf-8")
    v.set_prompt_file(prompts)
    v.set_drafters("draft-simple", "draft-eagle3")
    assert v.settings().drafts == (target, head)
    with qtbot.waitSignal(v.sweep_finished, timeout=180_000) as blocker:
        assert v.start(replace(v.settings(), **{**QUICK, "n_predict": 16}))
    assert not blocker.args[0].stopped
    rows = {v.table.item(i, COL["Configuration"]).text(): i for i in range(v.table.rowCount())}
    assert set(rows) == {"draft-simple (cmp-target.gguf)", "draft-eagle3 (cmp-head.gguf)"}
    for i in rows.values():
        assert v.table.item(i, COL["Calibrated (err)"]).text()[:1].isdigit()
    v.set_drafters("draft-eagle3")
    v.set_pair(target, target)                            # no head among the drafts
    assert not v.start()
    assert "draft-eagle3 needs an EAGLE-3 head" in v.banner.message and not v.running
    assert v.shutdown()


def _head_view(qtbot, tmp_path, target, draft=None, extra=()):
    v = CompareView()
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.set_pair(target, draft, list(extra))
    v.n_values.setText("2")
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"name": "code", "text": "def f(x):"}]}), encoding="utf-8")
    v.set_prompt_file(prompts)
    return v


def _calibrated_rows(v, qtbot) -> set[str]:
    """Run the view's sweep; the configurations in its table, each with a calibrated figure."""
    with qtbot.waitSignal(v.sweep_finished, timeout=180_000) as blocker:
        assert v.start(replace(v.settings(), **{**QUICK, "n_predict": 16}))
    assert not blocker.args[0].stopped and not blocker.args[0].lossless_notes
    rows = {v.table.item(i, COL["Configuration"]).text(): i for i in range(v.table.rowCount())}
    for i in rows.values():
        assert v.table.item(i, COL["Calibrated (err)"]).text()[:1].isdigit()
    assert v.table.isColumnHidden(COL["Lookup/round"])     # model drafters only: no lookups
    return set(rows)


def test_compare_offers_draft_mtp_without_a_draft_file(qtbot, tmp_path, tiny_models):
    """draft-mtp drafts with the target's own MTP blocks: no draft in the list, a calibrated
    row; a target without MTP blocks is one line before anything runs."""
    v = _head_view(qtbot, tmp_path, ggufgen.write_mtp(tmp_path / "mtp.gguf", seed=5))
    v.set_drafters("draft-mtp")
    assert v.chosen_chains() == (("draft-mtp",),) and v.settings().drafts == ()
    assert _calibrated_rows(v, qtbot) == {"draft-mtp"}
    v.set_pair(tiny_models["target"], tiny_models["draft"])
    assert not v.start() and not v.running
    assert "draft-mtp drafts with the target's own MTP (nextn) blocks, and this model has none" \
        in v.banner.message and "\n" not in v.banner.message
    assert v.shutdown()


def test_compare_sweeps_dflash_heads_among_the_drafts(qtbot, tmp_path):
    """A DFlash head among the drafts drafts with draft-dflash and draft-dspark, beside
    draft-simple with a draft model, on one target, each calibrated."""
    target, head = ggufgen.write_dflash_pair(tmp_path, prefix="cmp")
    v = _head_view(qtbot, tmp_path, target, target, [head])
    v.set_drafters("draft-simple", "draft-dflash", "draft-dspark")
    assert v.settings().drafts == (target, head)
    assert _calibrated_rows(v, qtbot) == {"draft-simple (cmp-target.gguf)", "draft-dflash (cmp-head.gguf)",
                                          "draft-dspark (cmp-head.gguf)"}
    assert v.shutdown()


def test_the_draftless_programs_sweep_beside_the_others(view, qtbot):
    """suffix and lookahead need no draft file; lookahead's context gets its W + G + 1
    sequences; both rows come back, each run identical to the target alone."""
    view.set_drafters("suffix", "lookahead")
    s = view.settings()
    assert s.drafts == () and s.engine.n_seq == 31
    result = run(view, qtbot, engine=replace(QUICK["engine"], n_seq=31, n_ctx=512))
    pooled = {r.drafter: r for r in result.pooled()}
    assert set(pooled) == {"suffix", "lookahead"}
    assert all(r.lossless == "identical" for r in pooled.values())


def test_the_drafters_checklist_re_wraps_when_the_window_narrows(view, qtbot):
    """Opened at 1366 and narrowed to 1280, the list kept its rows: suffix was cut and
    lookahead hidden behind a sideways scroll bar."""
    view.resize(1366, 768)
    view.show()
    qtbot.waitExposed(view)
    view.resize(1280, 720)
    lst = view.form.drafters

    def all_in_view():
        port = lst.viewport().rect()
        return all(port.contains(lst.visualItemRect(lst.item(i))) for i in range(lst.count()))
    qtbot.waitUntil(all_in_view, timeout=3_000)
