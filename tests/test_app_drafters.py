"""The window's drafters (issue 11): the picker, n-gram runs without a draft model, the token
view's per-drafter marks and hover, per-drafter plots, step mode's words for an n-gram draft,
and the pair panel's n-gram suggestion when no draft fits."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QPoint, QSettings  # noqa: E402
from PySide6.QtGui import QHelpEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from specscope.app.drafter_panel import DrafterPanel  # noqa: E402
from specscope.app.drafter_style import drafter_colors  # noqa: E402
from specscope.app.token_view import (ACCEPTED, COPIED_COLORS, MATCH_COLORS,  # noqa: E402
                                      SOURCE_COLORS)
from specscope.app.window import MainWindow  # noqa: E402
from specscope.core.engine.drafters import TYPES  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

from helpers.window import RUN_TIMEOUT_MS, open_window, run_and_wait, step_to_a_draft  # noqa: E402
# a text that repeats itself: ngram-simple (n 2, m 6) drafts from its earlier lines
REPEATING = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef sub(a, b):\n"


# ------------------------------------------------------------------ the picker alone
@pytest.fixture
def picker(qtbot):
    p = DrafterPanel()
    qtbot.addWidget(p)
    return p


def test_the_picker_lists_every_type_in_llama_cpps_priority_order(picker):
    assert list(picker.checks) == list(TYPES)
    assert picker.types() == ("draft-simple",)             # today's default: the draft model
    for t, check in picker.checks.items():
        assert f"--spec-type {t}" in check.toolTip()
    assert "first non-empty draft wins" in picker.note.text()
    assert "--spec-ngram-mod-n-match" in picker.knobs["ngram-mod.n_match"].toolTip()
    assert "default 24" in picker.knobs["ngram-mod.n_match"].toolTip()
    assert "--spec-ngram-map-k4v-size-n" in picker.knobs["ngram-map-k4v.size_n"].toolTip()


def test_the_picker_builds_the_spec_settings(picker):
    picker.checks["draft-simple"].setChecked(False)
    picker.checks["ngram-mod"].setChecked(True)             # checked in another order than
    picker.checks["ngram-simple"].setChecked(True)          # llama.cpp tries them
    picker.knobs["ngram-simple.size_n"].setValue(3)
    picker.knobs["ngram-simple.size_m"].setValue(7)
    picker.knobs["ngram-mod.n_match"].setValue(16)
    picker.knobs["ngram-mod.n_min"].setValue(2)
    picker.knobs["ngram-mod.n_max"].setValue(32)
    spec = picker.spec_settings()
    assert spec.types == ("ngram-simple", "ngram-mod")
    mod = spec.params("ngram-mod")
    assert (spec.params("ngram-simple").size_n, spec.params("ngram-simple").size_m) == (3, 7)
    assert (mod.n_match, mod.n_min, mod.n_max) == (16, 2, 32)
    assert not spec.uses_draft_model
    spec.validate()
    assert not picker.message.isVisible() and picker.problem() == ""


def test_draft_model_settings_are_greyed_unless_draft_simple_is_checked(picker):
    draft_widgets = (picker.n_max, picker.n_min, picker.p_min, picker.sync)
    assert all(w.isEnabled() for w in draft_widgets)
    assert not picker.knobs["ngram-mod.n_match"].isEnabled()                 # ngram-mod is not checked
    picker.checks["draft-simple"].setChecked(False)
    picker.checks["ngram-mod"].setChecked(True)
    assert not any(w.isEnabled() for w in draft_widgets)
    assert picker.knobs["ngram-mod.n_match"].isEnabled()
    assert "draft-simple only" in picker.draft_note.text() and not picker.draft_note.isEnabled()


def test_bad_settings_get_one_inline_line(picker, qtbot, tmp_path):
    picker.show()
    picker.n_max.setValue(2)
    picker.n_min.setValue(4)
    assert picker.message.isVisible() and "n_min (4) must not exceed n_max (2)" in picker.message.text()
    picker.n_min.setValue(1)
    assert not picker.message.isVisible()
    picker.checks["ngram-cache"].setChecked(True)
    missing = tmp_path / "nope.bin"
    picker.knobs["ngram-cache.lookup_cache_static"].setText(str(missing))
    picker.knobs["ngram-cache.lookup_cache_static"].editingFinished.emit()
    assert str(missing) in picker.message.text() and "no such file" in picker.message.text()
    picker.knobs["ngram-cache.lookup_cache_static"].setText("")
    picker.knobs["ngram-cache.lookup_cache_static"].editingFinished.emit()
    assert not picker.message.isVisible()
    picker.set_draft(None)                                  # no model in the draft slot
    assert "needs a draft model" in picker.message.text()
    picker.checks["draft-simple"].setChecked(False)         # the n-gram types alone: fine
    assert not picker.message.isVisible()
    picker.checks["ngram-cache"].setChecked(False)
    assert "at least one drafter" in picker.message.text()


def test_the_picker_settings_round_trip(picker, qtbot):
    picker.set_types(["ngram-map-k4v", "draft-simple"])
    picker.knobs["ngram-map-k4v.min_hits"].setValue(3)
    picker.knobs["ngram-map-k4v.size_m"].setValue(9)
    picker.knobs["ngram-cache.lookup_cache_dynamic"].setText("/somewhere/dyn.bin")
    saved = picker.to_dict()
    again = DrafterPanel()
    qtbot.addWidget(again)
    again.from_dict(saved)
    assert again.to_dict() == saved
    assert again.spec_settings().params("ngram-map-k4v").min_hits == 3
    again.from_dict({"types": ["nonsense"], "mod": "x", "size_n": {"ngram-simple": "y"}})
    assert again.to_dict() == saved                         # malformed: nothing changes


def test_settings_saved_by_the_earlier_panel_are_restored(picker):
    """A window saved before the knobs were kept by field restores them (nothing lost on upgrade)."""
    picker.from_dict({"types": ["ngram-simple", "draft-tree"], "size_n": {"ngram-simple": 2},
                      "size_m": {"ngram-simple": 6}, "min_hits": 3, "mod": [16, 2, 32],
                      "cache": ["/a/static.bin", ""], "policy": "cost", "vocab": "translate",
                      "branches": 6, "p_split": 0.3,
                      "suffix": {"max_depth": 32, "max_spec_factor": 2.0, "corpus": "", "np": 3},
                      "lookahead": {"w": 7, "n": 4, "g": 5}})
    spec = picker.spec_settings()
    simple, mod, suffix, look = (spec.params(t) for t in ("ngram-simple", "ngram-mod", "suffix", "lookahead"))
    assert (simple.size_n, simple.size_m, spec.params("ngram-map-k4v").min_hits) == (2, 6, 3)
    assert (mod.n_match, mod.n_min, mod.n_max) == (16, 2, 32)
    assert spec.params("ngram-cache").lookup_cache_static == "/a/static.bin"
    assert (spec.draft_policy, spec.vocab, spec.params("draft-tree").p_split) == ("cost", "translate", 0.3)
    assert (suffix.max_depth, suffix.max_spec_factor) == (32, 2.0)
    assert (look.w, look.n, look.g) == (7, 4, 5)
    assert picker.np["draft-tree"].value() == 6 and picker.np["suffix"].value() == 3


def test_knobs_saved_under_their_earlier_field_names_are_restored(picker):
    """A window saved while each type's parameters were fields of their own ("ngram_simple.size_n",
    "p_split" beside n_max) restores them under today's names."""
    picker.from_dict({"types": ["ngram-simple", "draft-simple"], "np": {},
                      "knobs": {"ngram_simple.size_n": 3, "ngram_mod.n_match": 9, "p_split": 0.4,
                                "suffix.max_depth": 30, "lookahead.w": 6, "n_max": 5}})
    spec = picker.spec_settings()
    assert (spec.params("ngram-simple").size_n, spec.params("ngram-mod").n_match) == (3, 9)
    assert (spec.params("draft-tree").p_split, spec.params("suffix").max_depth) == (0.4, 30)
    assert (spec.params("lookahead").w, spec.n_max) == (6, 5)


def test_suffix_has_its_knobs_its_corpus_and_its_leaves(picker, qtbot, tmp_path):
    picker.show()
    picker.set_types(["suffix"])
    picker.knobs["suffix.max_spec_factor"].setValue(2.0)
    picker.knobs["suffix.min_token_prob"].setValue(0.05)
    picker.knobs["suffix.max_depth"].setValue(32)
    picker.np["suffix"].setValue(4)
    spec = picker.spec_settings()
    assert spec.types == ("suffix",)
    suffix = spec.params("suffix")
    assert (suffix.max_spec_factor, suffix.min_token_prob, suffix.max_depth) == (2.0, 0.05, 32)
    assert picker.n_seq() == 4 and not picker.message.isVisible()
    assert "--spec-suffix-max-spec-factor" in picker.knobs["suffix.max_spec_factor"].toolTip()
    again = DrafterPanel()
    qtbot.addWidget(again)
    again.from_dict(picker.to_dict())
    assert again.to_dict() == picker.to_dict() and again.n_seq() == 4
    missing = tmp_path / "corpus.txt"
    picker.knobs["suffix.corpus"].setText(str(missing))
    picker.knobs["suffix.corpus"].editingFinished.emit()
    assert str(missing) in picker.message.text() and "--spec-suffix-corpus" in picker.message.text()
    picker.set_types(["suffix", "draft-simple"])          # chained: one path, the chain's
    assert picker.n_seq() == 1


# ------------------------------------------------------------------ the window on the demo pair
@pytest.fixture
def window(qtbot, pair, settings):  # noqa: F811 - the fixtures of test_app_window
    w = open_window(qtbot, pair, settings, preload=False)
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=30_000)
    w.params.n_predict.setValue(64)
    w.params.n_ctx.setValue(512)
    w.prompt.chat.setChecked(False)
    w.prompt.set_text(REPEATING)
    d = w.params.drafter
    d.set_types(["ngram-simple"])
    d.knobs["ngram-simple.size_n"].setValue(2)
    d.knobs["ngram-simple.size_m"].setValue(6)
    yield w
    w.close()


def test_an_ngram_run_needs_no_draft_model_and_marks_its_tokens(qtbot, window, pair):
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
        window.pair_panel.set_pair(pair[0], None)           # a target alone
    assert "ngram-mod" in window.pair_panel.verdict.text()  # not a dead end
    assert window.pairs.report is None                            # no pair verdict for a lone target
    assert window.pair_panel.facts.item(0, 0).text() == "llama"          # but its facts
    assert window.pair_panel.facts.item(0, 1).text() == "–"
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert not window.banner.isVisible() or window.banner.level != "error"
    assert window.worker.engine.draft is None               # no draft model was loaded
    drafted = [e for e in window.shown.events if e.drafted]
    assert drafted and {e.drafter for e in drafted} == {"ngram-simple"}
    tv = window.token_view
    accepted = [s for s in tv.spans if s.kind == ACCEPTED]
    assert accepted and {s.drafter for s in accepted} == {"ngram-simple"}
    # the text has the drafter's colour where its accepted tokens are
    fg, bg, _ = drafter_colors("ngram-simple")
    for s in accepted[:5]:
        cursor = tv.textCursor()
        cursor.setPosition(s.start + 1)
        assert cursor.charFormat().background().color().name() == bg
    assert "accepted,&nbsp;drafted&nbsp;by&nbsp;ngram\u2011simple" in window.legend.text()

    # hovering an accepted n-gram token names the drafter and highlights where it came from
    span = accepted[0]
    ev = span.event
    n = ev.ngram.key_len
    tip = span.tooltip
    assert "by <b>ngram-simple</b>" in tip
    assert f"positions {ev.ngram.key}–{ev.ngram.key + n - 1}" in tip
    i = span.position - (ev.n_past + 1)
    assert f"position {ev.ngram.source + i}" in tip
    tv.ensureCursorVisible()
    rect = tv.cursorRect(_cursor_at(tv, span.start))
    point = QPoint(rect.x() + 2, rect.center().y())
    QApplication.sendEvent(tv.viewport(), QHelpEvent(QEvent.Type.ToolTip, point,
                                                     tv.viewport().mapToGlobal(point)))
    assert tv.highlighted is span
    marks = tv.highlighted_positions()
    for p in range(ev.ngram.key, ev.ngram.key + n):             # the earlier n-gram
        assert marks[p] == MATCH_COLORS[1]
    for p in range(ev.n_past - n + 1, ev.n_past + 1):           # the latest one
        assert marks[p] == MATCH_COLORS[1]
    assert marks[ev.ngram.source + i] == COPIED_COLORS[1]       # this token's source
    others = [p for p in range(ev.ngram.source, ev.ngram.source + len(ev.drafted))
              if p != ev.ngram.source + i]
    assert all(marks[p] == SOURCE_COLORS[1] for p in others)
    QApplication.sendEvent(tv.viewport(), QEvent(QEvent.Type.Leave))
    assert tv.highlighted is None and not tv.extraSelections()

    run = window.controller.stats_document()["run"]                    # the export says what drafted
    assert run["spec_type"] == ["ngram-simple"] and run["params"]["ngram-simple"]["size_n"] == 2
    assert run["draft"] is None

    # the plots' per-drafter table reads the fold
    window.tabs.setCurrentWidget(window.tabs.widget(0))
    window.shown.refresh_panels()
    table = window.plots.shown()["by_drafter"]["table"]
    ds = window.shown.stats.drafter("ngram-simple")
    assert table == [["ngram-simple", str(ds.n_draft_rounds), f"{ds.n_accept} / {ds.n_drafted}",
                      f"{ds.n_accept / ds.n_drafted:.0%}", f"{ds.mean_accepted_length:.2f}"]]


def _cursor_at(tv, pos):
    c = tv.textCursor()
    c.setPosition(pos)
    return c


def test_step_mode_names_the_matched_ngram(qtbot, window):
    ev = step_to_a_draft(qtbot, window)
    assert ev is not None and ev.drafted and ev.drafter == "ngram-simple"
    text = window.round_view.text.text()
    n = ev.ngram.key_len
    assert "<b>ngram-simple</b>" in text
    assert f"occurred before at positions {ev.ngram.key}–{ev.ngram.key + n - 1}" in text
    assert f"positions {ev.ngram.source}–{ev.ngram.source + len(ev.drafted) - 1}" in text
    # the matched n-gram quoted as text: the tokens at those positions
    from specscope.app.round_words import labels
    hist = window.token_view.history
    quoted = "".join(labels(hist[ev.ngram.key:ev.ngram.key + n], window.controller.session.vocab))
    import html
    from specscope.app.token_view import visible
    assert html.escape(visible(quoted)) in text
    assert f"agreed with {ev.n_accepted} of the {len(ev.drafted)}" in text or ev.n_accepted == len(ev.drafted)
    window.stop_clicked()
    qtbot.waitUntil(lambda: window.controller.state is RunState.IDLE, timeout=RUN_TIMEOUT_MS)


def test_no_fitting_draft_offers_the_ngram_types(qtbot, window, pair, tmp_path):
    from helpers.vocab_gguf import write_no_byte_tokens
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):   # no mode takes it either
        window.pair_panel.set_pair(pair[0], write_no_byte_tokens(tmp_path / "spm.gguf"))
    assert not window.pairs.report.compatible
    verdict = window.pair_panel.verdict.text()
    assert "INCOMPATIBLE" in verdict and "needs no draft model" in verdict and "ngram-mod" in verdict
    d = window.params.drafter
    d.set_types(["ngram-simple", "draft-simple"])           # a chain with the refused draft
    assert d.message.isVisible() and "cannot draft for this target" in d.message.text()
    window.run_clicked()                                    # an inline message, no run
    assert window.controller.state is RunState.IDLE and window.banner.level == "error"
    assert "cannot draft for this target" in window.banner.message
    window.pair_panel.verdict.linkActivated.emit("ngram-mod")   # the suggestion's link
    assert d.types() == ("ngram-mod",) and not d.message.isVisible()


def test_plots_show_one_acceptance_curve_per_drafter(qtbot):
    from specscope.app.plots import PlotsPanel
    from specscope.core.engine.events import RoundEvent
    from specscope.core.measure.stats import fold

    def ev(i, drafter, drafted, acc):
        emitted = tuple(range(acc + 1))
        return RoundEvent(i, 10 + i, 1, tuple(range(drafted)), (), acc, emitted, "spec",
                          drafter=drafter)
    events = [ev(0, "ngram-simple", 4, 4), ev(1, "ngram-simple", 4, 1), ev(2, "draft-simple", 3, 2),
              ev(3, "draft-simple", 3, 0)]
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    stats = fold(events)
    panel.update_stats(stats, events)
    shown = panel.shown()["by_drafter"]
    assert set(shown["curves"]) == {"ngram-simple", "draft-simple"}
    assert list(shown["curves"]["ngram-simple"]) == [1.0, 0.5, 0.5, 0.5]
    assert list(shown["curves"]["draft-simple"]) == [0.5, 0.5, 0.0]
    assert shown["table"] == [["ngram-simple", "2", "5 / 8", "62%", "3.50"],
                              ["draft-simple", "2", "2 / 6", "33%", "2.00"]]
    one = events[:2]                                        # one drafter: bars only, no curves
    panel.update_stats(fold(one), one)
    shown = panel.shown()["by_drafter"]
    assert shown["curves"] == {} and len(shown["table"]) == 1


def test_a_target_alone_and_the_drafter_survive_a_restart(qtbot, pair, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_LOG_DIR", str(tmp_path / "log"))
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(Path(pair[0]), Path(pair[1]), settings=settings, preload=False)
    w.pair_panel.set_pair(pair[0], None)
    d = w.params.drafter
    d.set_types(["ngram-map-k", "ngram-mod"])
    d.knobs["ngram-map-k.size_m"].setValue(20)
    d.knobs["ngram-mod.n_min"].setValue(8)
    saved = d.to_dict()
    w.close()
    again = MainWindow(settings=settings, preload=False)
    try:
        assert again.pair_panel.pair() == (Path(pair[0]), None)   # not replaced by the demo pair
        assert again.params.drafter.to_dict() == saved
        spec = again.params.spec_settings()
        assert spec.types == ("ngram-map-k", "ngram-mod") and spec.params("ngram-map-k").size_m == 20
        assert spec.params("ngram-mod").n_min == 8
    finally:
        again.close()


def test_step_mode_words_for_an_ngram_draft_in_a_chain():
    """Hand-made: history 'abcab' + seed 'c' repeats 'abc' at 0; ngram-simple (n 2) matched
    'bc' at 1-2 and copied 'ab' from 3-4; the target kept 1 of them."""
    from specscope.app.round_words import explain
    from specscope.core.models.tokentext import TokenTable
    from specscope.core.engine.events import NgramMatch, RoundEvent
    vocab = TokenTable.from_pieces([bytes([97 + i]) for i in range(26)])
    history = [0, 1, 2, 0, 1, 2]                          # a b c a b c (the seed c at 5)
    ev = RoundEvent(3, 5, 2, (0, 1), (), 1, (0, 7), "spec", draft_stop="lookup",
                    drafter="ngram-simple", detail=NgramMatch(1, 2, 3))
    text = explain(ev, vocab, history, ("ngram-simple", "draft-simple"))
    assert "<b>ngram-simple</b>" in text
    assert "the latest 2 tokens, <code>bc</code> at positions 4–5" in text
    assert "occurred before at positions 1–2" in text
    assert "positions 3–4: <code>a</code> <code>b</code>" in text
    assert "agreed with 1 of the 2 drafted tokens" in text and "ngram-simple proposed" in text
    assert "draft-simple was not asked" in text
    won = RoundEvent(4, 7, 7, (3,), (0.9,), 1, (3, 4), "spec", draft_stop="n_max",
                     drafter="draft-simple")
    text = explain(won, vocab, history, ("ngram-simple", "draft-simple"))
    assert "the draft model decoded the seed" in text
    assert "ngram-simple had no draft, so draft-simple's was the first non-empty one" in text
    assert "The chain" not in explain(won, vocab, history, ("draft-simple",))


@pytest.mark.parametrize("type_name", ["ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"])
def test_every_ngram_type_runs_in_the_window_and_marks_its_tokens(qtbot, window, type_name):
    d = window.params.drafter
    d.set_types([type_name, "draft-simple"])                 # a chain before the draft model
    if type_name.startswith("ngram-map"):
        d.knobs[f"{type_name}.size_n"].setValue(2)
        d.knobs[f"{type_name}.size_m"].setValue(6)
    if type_name == "ngram-mod":
        d.knobs["ngram-mod.n_match"].setValue(3)
        d.knobs["ngram-mod.n_min"].setValue(1)
        d.knobs["ngram-mod.n_max"].setValue(8)
    spec = d.spec_settings()
    assert spec.types == (type_name, "draft-simple")
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert not window.banner.isVisible() or window.banner.level != "error"
    won = {e.drafter for e in window.shown.events if e.drafted}
    assert won == {type_name, "draft-simple"}, won              # both drafted some rounds
    spans = [s for s in window.token_view.spans if s.kind == ACCEPTED]
    assert {s.drafter for s in spans} == {e.drafter for e in window.shown.events if e.n_accepted}


def test_step_mode_says_why_a_draft_length_policy_stopped_the_draft():
    """Hand-made: hf stops at its length for the round; cost stops short of it, while drafting."""
    from specscope.app.round_words import explain
    from specscope.core.models.tokentext import TokenTable
    from specscope.core.engine.events import NgramMatch, RoundEvent
    vocab = TokenTable.from_pieces([bytes([97 + i]) for i in range(26)])
    hf = RoundEvent(4, 7, 7, (3, 4), (0.9, 0.8), 2, (3, 4, 5), "spec", draft_stop="policy",
                    drafter="draft-simple", draft_limit=2)
    assert "it reached the draft-length policy's 2 for this round" in explain(hf, vocab)
    cost = RoundEvent(4, 7, 7, (3, 4), (0.9, 0.8), 2, (3, 4, 5), "spec", draft_stop="policy",
                      drafter="draft-simple", draft_limit=8)
    text = explain(cost, vocab)
    assert "judged one more token not worth its cost" in text and "policy's 8" not in text
    dropped = RoundEvent(5, 9, 7, (), (), 0, (3,), "plain", draft_stop="policy", draft_limit=8)
    assert "the cost policy dropped the draft's first token" in explain(dropped, vocab)
