"""draft-mtp in the window: the drafter picker offers it when the target carries MTP (nextn)
blocks and says why not when it does not, the pair panel offers it without a draft model, its
tokens take their own colour, hover and step mode say the target's MTP block drafted them (the
token at p and the target's hidden state at p - 1, which block of a chain), the plots count it,
and a target it cannot draft for is one line while the window keeps working. On generated
mimo2 targets (tests/helpers/ggufgen.py write_mtp)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from helpers import ggufgen  # noqa: E402
from helpers.window import (RUN_TIMEOUT_MS, chain_after_ngram_simple, check_drafted_by,  # noqa: E402
                            check_shared_lengths, for_short_runs, run_and_wait, step_to_a_draft)
from specscope.app.drafter_panel import DrafterPanel  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

PROMPT = "def parse_args(argv=None):\n"
NO_MTP = "has no MTP (nextn) blocks"


@pytest.fixture(scope="module")
def targets(tmp_path_factory, tiny_models):
    d = tmp_path_factory.mktemp("mtpui")
    n_vocab = len(ggufgen.bpe_vocab()[0])
    return {"one": ggufgen.write_mtp(d / "mtp.gguf"),
            "two": ggufgen.write_mtp(d / "mtp2.gguf", n_nextn=2, seed=1),
            "plain": tiny_models["target"],
            "hybrid": ggufgen.write_lfm2(d / "lfm2.gguf", ggufgen.lfm2_weights(n_vocab, "cac", seed=1))}


def open_target(qtbot, target, settings):
    """The window on ``target`` alone (no draft model), set for short runs, its MTP blocks read."""
    from specscope.app.window import MainWindow
    w = MainWindow(Path(target), None, settings=settings, preload=False)
    w.resize(1440, 900)
    w.show()
    qtbot.waitUntil(lambda: w.panels_ready, timeout=10_000)
    assert w.pair_panel.pair() == (Path(target), None)   # a target alone stays alone
    for_short_runs(w, n_predict=48, n_ctx=256, prompt=PROMPT)
    w.prompt.chat.setChecked(False)
    qtbot.waitUntil(lambda: w.pair_panel.target_mtp_blocks() is not None, timeout=30_000)
    return w


@pytest.fixture
def window(qtbot, targets, settings):
    w = open_target(qtbot, targets["one"], settings)
    yield w
    w.close()


# ------------------------------------------------------------------ the picker alone
def test_the_picker_offers_draft_mtp_with_the_draft_model_s_lengths(qtbot):
    picker = check_shared_lengths(qtbot, "draft-mtp")
    check = picker.checks["draft-mtp"]
    assert check.text() == "draft-mtp (the target's MTP blocks)" and check.isEnabled()
    picker.set_types(["draft-mtp"])
    assert not picker.spec_settings().needs_draft                 # no draft model


def test_the_picker_says_when_the_target_has_no_mtp_blocks(qtbot, tmp_path):
    picker = DrafterPanel()
    qtbot.addWidget(picker)
    picker.show()
    target = tmp_path / "plain-target.gguf"
    check = picker.checks["draft-mtp"]
    picker.set_types(["draft-simple"])
    picker.set_target_mtp(target, 0)
    assert not check.isEnabled() and "this target has no MTP (nextn) blocks" in check.toolTip()
    assert not picker.message.isVisible()                         # nobody asked for draft-mtp
    picker.set_types(["draft-mtp"])                               # restored settings ask for it
    assert check.isChecked() and check.isEnabled()                # nothing lost: it can be unchecked
    assert f"plain-target.gguf {NO_MTP}" in picker.message.text()
    picker.set_target_mtp(target, 2)
    assert picker.problem() == "" and check.isEnabled() and "2 MTP blocks" in picker.mtp_note.text()
    picker.set_types(["draft-simple"])
    picker.set_target_mtp(None, None)                             # not known: offered
    assert check.isEnabled()


# ------------------------------------------------------------------ the window on a generated MTP target
def test_an_mtp_run_without_a_draft_model_colours_its_tokens_and_its_plots(qtbot, window):
    panel = window.pair_panel
    assert panel.target_mtp_blocks() == 1
    line = panel.mtp_line.text()
    assert "MTP blocks: 1" in line and "no draft model needed" in line
    assert "draft with its own MTP layers" in line and "href='draft-mtp'" in line
    panel.mtp_line.linkActivated.emit("draft-mtp")                # the offer, taken
    assert window.params.drafter.types() == ("draft-mtp",)
    assert window.params.drafter.problem() == ""
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert "draft" not in window.pairs.facts                      # the target alone was loaded
    span = check_drafted_by(window, "draft-mtp")
    assert "drafted by the target's own <b>MTP block(s)</b>" in span.tooltip


def test_a_chain_of_ngram_simple_and_draft_mtp_draws_a_curve_for_each(qtbot, window):
    chain_after_ngram_simple(qtbot, window, "draft-mtp")


@pytest.mark.parametrize("model", ["one", "two"])
def test_step_mode_tells_an_mtp_draft_in_words(qtbot, targets, settings, model):
    w = open_target(qtbot, targets[model], settings)
    try:
        w.params.drafter.set_types(["draft-mtp"])
        ev = step_to_a_draft(qtbot, w)
        assert ev is not None and ev.drafter == "draft-mtp"
        text = w.round_view.text.text()
        assert "the target's own <b>MTP block" in text and "not a draft model" in text
        assert f"the target's last hidden state at position {ev.n_past - 1}" in text
        assert f"the seed at position {ev.n_past}" in text
        for p in ev.draft_probs:
            assert (f"(p {p:.2f})" in text or f"(q {p:.2f}, the target" in text)   # step mode: q beside p
        if model == "two":                                        # chained: one block per step
            assert "2 MTP blocks, chained" in text and "block 1" in text
        else:
            assert "chained" not in text
        assert "the MTP context's cache" in text and "the draft cache" not in text
        w.stop_clicked()
        qtbot.waitUntil(lambda: w.controller.state is RunState.IDLE, timeout=RUN_TIMEOUT_MS)
    finally:
        w.close()


@pytest.mark.parametrize("target", ["plain", "hybrid"])
def test_draft_mtp_on_a_target_without_mtp_blocks_is_one_line_and_the_window_keeps_working(
        qtbot, window, targets, target):
    window.params.drafter.set_types(["draft-mtp"])
    window.pair_panel.set_pair(targets[target], None)
    qtbot.waitUntil(lambda: window.pair_panel.target_mtp_blocks() == 0, timeout=30_000)
    assert not window.pair_panel.mtp_line.isVisible()
    window.run_clicked()
    assert window.controller.state is RunState.IDLE and window.banner.level == "error"
    message = window.banner.message
    assert "\n" not in message and f"{targets[target].name} {NO_MTP}" in message, message
    assert window.prompt.text() == PROMPT and window.params.drafter.types() == ("draft-mtp",)
    window.pair_panel.set_pair(targets["one"], None)              # the window goes on
    qtbot.waitUntil(lambda: window.pair_panel.target_mtp_blocks() == 1, timeout=30_000)
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    assert {e.drafter for e in window.shown.events if e.drafted} == {"draft-mtp"}


def test_the_demo_draft_joins_only_the_demo_target(qtbot, settings, targets):
    """specscope -m TARGET: the demo draft is filled in for the demo target only; another target
    stays alone (the demo draft would not fit it: a red verdict above the MTP offer)."""
    from specscope.app.window import MainWindow
    from specscope.core.models.demo import demo_pair
    demo_target, demo_draft = demo_pair()
    for model, draft, want in ((demo_target, None, (demo_target, demo_draft)),
                               (None, demo_draft, (demo_target, demo_draft))):
        w = MainWindow(model, draft, settings=settings, preload=False)
        assert w.pair_panel.pair() == want
        w.close()
