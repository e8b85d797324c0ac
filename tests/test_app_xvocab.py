"""A draft of another vocabulary in the window: the pair panel keeps llama.cpp's refusal and says
what SpecScope drafts with, the Drafter box lets draft-simple draft with it (the mode a small
combo under draft-simple), the run drafts across vocabularies, the hover and step mode show the
draft's pieces against the target's, the per-drafter table names the mode, the translation is
its own phase in the time plots, and a draft no mode can take keeps the window running. On the
demo target with the shipped foreign-vocabulary draft."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from helpers.vocab_gguf import write_no_byte_tokens  # noqa: E402
from helpers.window import (RUN_TIMEOUT_MS, for_short_runs, open_window, run_and_wait,  # noqa: E402
                            step_to_a_draft)
from specscope.app.token_view import ACCEPTED, REJECTED, UNCHECKED  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

PROMPT = "def add(a, b):\n    "


@pytest.fixture
def window(qtbot, pair, settings):
    """The window on the demo target and the foreign-vocabulary draft, its check shown."""
    w = for_short_runs(open_window(qtbot, (pair[0], pair[2]), settings), n_predict=32, prompt=PROMPT)
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=30_000)
    yield w
    w.close()


def test_the_verdict_keeps_llama_cpp_s_refusal_and_names_the_mode(window):
    report = window.pairs.report
    assert not report.compatible and report.cross_modes == ("translate", "intersect")
    verdict = window.pair_panel.verdict.text()
    assert "INCOMPATIBLE for llama.cpp" in verdict
    assert "SpecScope can still draft with it: translate / intersect" in verdict
    assert "auto: translate" in verdict and "Shared tokens: 50.0% of the target's" in verdict
    assert "needs no draft model" not in verdict          # not a dead end: no n-gram offer
    d = window.params.drafter
    assert d.problem() == "" and not d.message.isVisible()
    assert [d.vocab.itemText(i) for i in range(d.vocab.count())] == ["auto", "translate", "intersect"]
    assert d.vocab.isEnabled()


def test_a_run_drafts_in_translate_mode_and_shows_the_pieces(qtbot, window):
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert window.banner.level != "error", window.banner.message
    drafted = [e for e in window.shown.events if e.drafted]
    assert drafted and {e.xvocab.mode for e in drafted} == {"translate"}
    assert all(e.xvocab.own and len(e.xvocab.text) == len(e.xvocab.own) for e in drafted)
    # hovering a drafted token: the draft's pieces against the target's, this one marked
    spans = [s for s in window.token_view.spans if s.kind in (ACCEPTED, REJECTED, UNCHECKED)
             and s.event is not None and s.event.xvocab.mode]
    assert spans
    tip = spans[0].tooltip
    assert "<i>translate:</i> the draft's" in tip and "re-tokenized with the target's tokenizer" in tip
    assert "<b><u>" in tip                                # the hovered target token
    # the per-drafter table says which mode drafted; the translation is a phase of its own
    window.tabs.setCurrentWidget(window.tabs.widget(0))
    window.shown.refresh_panels()
    shown = window.plots.shown()
    assert [row[0] for row in shown["by_drafter"]["table"]] == ["draft-simple (translate)"]
    assert sum(shown["time_split"]["translate"]["height"]) > 0


def test_step_mode_explains_a_translated_round(qtbot, window):
    ev = step_to_a_draft(qtbot, window)
    assert ev is not None and ev.xvocab.mode == "translate"
    text = window.round_view.text.text()
    assert "whose vocabulary is not the target's" in text and "translate mode" in text
    assert "the draft's" in text and "the target's" in text and "ms translating" in text
    window.stop_clicked()
    qtbot.waitUntil(lambda: window.controller.state is RunState.IDLE, timeout=RUN_TIMEOUT_MS)


def test_intersect_is_a_choice_under_draft_simple(qtbot, window):
    window.params.drafter.vocab.setCurrentText("intersect")
    assert window.params.drafter.spec_settings().vocab == "intersect"
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    drafted = [e for e in window.shown.events if e.drafted]
    assert drafted and {e.xvocab.mode for e in drafted} == {"intersect"}


def test_a_draft_no_mode_takes_is_one_line_and_the_window_runs_on(qtbot, window, pair, tmp_path):
    spm = write_no_byte_tokens(tmp_path / "spm.gguf")
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
        window.pair_panel.set_pair(Path(pair[0]), spm)
    verdict = window.pair_panel.verdict.text()
    assert "INCOMPATIBLE for llama.cpp" in verdict and "SpecScope cannot draft with it either" in verdict
    assert "needs no draft model" in verdict              # the n-gram offer is back
    d = window.params.drafter
    assert d.message.isVisible() and "cannot draft for this target" in d.message.text()
    window.run_clicked()                                  # refused before it starts
    assert window.controller.state is RunState.IDLE and window.banner.level == "error"
    assert "spm.gguf" in window.banner.message
    assert run_and_wait(qtbot, window, window.baseline_clicked) in ("n_predict", "eog")
