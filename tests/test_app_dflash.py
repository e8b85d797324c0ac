"""draft-dflash and draft-dspark in the window: the drafter picker offers them and reads the draft
slot as the head's, their tokens take their own colours, hover and step mode tell a block draft
in words (the target layers that fed it, the block drafted in one decode, each position's
probability, for a DSpark head the Markov head's bias by the token drafted before), the plots
count them, and a head that does not fit (another target's, a DFlash2 head, a corrupt file) is one
line in the banner while the window keeps working. On generated heads (tests/helpers/ggufgen.py
write_dflash_pair)."""

from __future__ import annotations

import html

import pytest

pytest.importorskip("pytestqt")

from helpers import ggufgen  # noqa: E402
from helpers.llama_args import unknown_flags  # noqa: E402
from helpers.window import (RUN_TIMEOUT_MS, chain_after_ngram_simple, check_drafted_by,  # noqa: E402
                            check_shared_lengths, for_short_runs, open_window, run_and_wait,
                            step_to_a_draft)
from specscope.app.drafter_panel import DrafterPanel  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

PROMPT = "def parse_args(argv=None):\n"
FED = "fed by the inputs of the target's layers 0, 1 and 3"


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    d = tmp_path_factory.mktemp("dflashui")
    heads = ggufgen.write_dflash_heads(d)
    corrupt = d / "corrupt-head.gguf"
    corrupt.write_bytes(heads["head"].read_bytes()[:5000])
    return {**heads,
            "selector": ggufgen.write_dflash_pair(d, prefix="selector",
                                                  extra_kv={"dflash.selector_top_k": 4})[1],
            "corrupt": corrupt,
            "eagle3": ggufgen.write_eagle3_pair(d, prefix="eagle3")[1]}


def _open(qtbot, heads, settings, target, head, types):
    w = for_short_runs(open_window(qtbot, (heads[target], heads[head]), settings, preload=False),
                       n_predict=48, n_ctx=256, prompt=PROMPT)
    w.prompt.chat.setChecked(False)
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=30_000)
    w.params.drafter.set_types(types)
    return w


@pytest.fixture
def window(qtbot, heads, settings):
    w = _open(qtbot, heads, settings, "target", "head", ["draft-dflash"])
    yield w
    w.close()


@pytest.fixture
def spark_window(qtbot, heads, settings):
    w = _open(qtbot, heads, settings, "spark_target", "spark", ["draft-dspark"])
    yield w
    w.close()


# ------------------------------------------------------------------ the picker alone
@pytest.mark.parametrize("drafter, label", [("draft-dflash", "a DFlash head"),
                                            ("draft-dspark", "a DSpark head")])
def test_the_picker_offers_the_block_types_with_the_draft_model_s_lengths(qtbot, drafter, label):
    picker = check_shared_lengths(qtbot, drafter)
    assert label in picker.checks[drafter].text()


def test_the_picker_says_when_the_draft_slot_does_not_fit_a_block_drafter(qtbot, tmp_path):
    picker = DrafterPanel()
    qtbot.addWidget(picker)
    picker.show()
    head, model = tmp_path / "my-head.gguf", tmp_path / "my-draft.gguf"
    picker.set_types(["draft-simple"])
    picker.set_draft(head, "dflash")                              # a DFlash head for draft-simple
    assert ("my-head.gguf is a DFlash head, which drafts with draft-dflash or draft-dspark"
            in picker.message.text())
    picker.set_types(["draft-dflash"])
    assert not picker.message.isVisible()
    picker.set_types(["draft-eagle3"])                            # a DFlash head for draft-eagle3
    assert "my-head.gguf is not an EAGLE-3 head (it is a dflash model)" in picker.message.text()
    picker.set_types(["draft-dspark"])
    picker.set_draft(model, "llama")                              # an ordinary model for draft-dspark
    assert "my-draft.gguf is not a DSpark head (it is a llama model)" in picker.message.text()
    picker.set_draft(None)
    assert "draft-dspark needs a DSpark head" in picker.message.text()
    picker.set_types(["draft-eagle3", "draft-dflash"])
    assert "draft-eagle3 and draft-dflash both draft with the model in the draft slot" in picker.problem()


# ------------------------------------------------------------------ the window on generated heads
def test_a_dflash_run_colours_its_tokens_and_its_plots(qtbot, window):
    panel = window.pair_panel
    assert panel.draft_label.text() == "Head" and "DFlash head" in panel.draft_edit.placeholderText()
    verdict = panel.verdict.text().replace("\u200b", "")      # (the panel's break points)
    assert "a DFlash head for this target: run it with --spec-type draft-dflash" in verdict
    assert "head rules pass" in verdict and "head size ÷ target size" in verdict
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    span = check_drafted_by(window, "draft-dflash")
    tip, ev = html.unescape(span.tooltip), span.event
    i = span.position - (ev.n_past + 1)
    assert "drafted by the <b>DFlash head</b>" in tip and FED in tip and "drafted in one decode" in tip
    assert f"block position {i + 1}: its logits came with the others' from that one decode<" in tip
    assert "(d2t)" not in tip                       # no reduced vocabulary: the target's own ids
    assert f"draft probability {ev.draft_probs[i]:.3f}" in tip
    window.params.drafter.set_types(["draft-simple"])            # the head for draft-simple
    assert panel.draft_label.text() == "Draft"
    window.run_clicked()
    assert window.controller.state is RunState.IDLE and window.banner.level == "error"
    assert "good-head.gguf is a DFlash head" in window.banner.message


def test_a_dspark_run_says_the_markov_head_biased_each_position(qtbot, spark_window):
    w = spark_window
    assert "DSpark head" in w.pair_panel.draft_edit.placeholderText()
    assert "run it with --spec-type draft-dspark" in w.pair_panel.verdict.text().replace("\u200b", "")
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    span = check_drafted_by(w, "draft-dspark")
    tip, ev = html.unescape(span.tooltip), span.event
    i = span.position - (ev.n_past + 1)
    assert "drafted by the <b>DSpark head</b>" in tip and FED in tip
    assert (f"block position {i + 1}: its logits came with the others' from that one decode, "
            "biased by the Markov head by the token drafted before it") in tip
    assert "(the seed)" in tip if i == 0 else "(the seed)" not in tip


@pytest.mark.parametrize("which", ["draft-dflash", "draft-dspark"])
def test_step_mode_tells_a_block_draft_in_words(qtbot, window, spark_window, which):
    w = window if which == "draft-dflash" else spark_window
    ev = step_to_a_draft(qtbot, w)
    assert ev is not None and ev.drafter == which
    text = w.round_view.text.text()
    who = "DFlash head" if which == "draft-dflash" else "DSpark head"
    assert f"the <b>{who}</b> ({which})" in text and FED in text
    assert "drafted in one decode" in text and "mask tokens after it <b>together</b>" in text
    for p in ev.draft_probs:
        assert (f"(p {p:.2f})" in text or f"(q {p:.2f}, the target" in text)   # step mode: q beside p
    assert not ev.head_ids and "draft id" not in text      # the target's own ids: no d2t
    assert ("Its Markov head biased each position's logits" in text) == (which == "draft-dspark")
    assert f"the {who}'s cache" in text
    w.stop_clicked()
    qtbot.waitUntil(lambda: w.controller.state is RunState.IDLE, timeout=RUN_TIMEOUT_MS)


@pytest.mark.parametrize("draft, types, words", [
    ("layers", ["draft-dflash"], "its target layer id 7 (dflash.target_layers [0, 1, 7]) is not one"),
    ("selector", ["draft-dflash"], "it is a DFlash2 head (a selector lattice"),
    ("corrupt", ["draft-dflash"], "corrupt-head.gguf"),
    ("eagle3", ["draft-dspark"], "eagle3-head.gguf is not a DSpark head (it is a eagle3 model)"),
])
def test_a_head_that_does_not_fit_is_one_line_and_the_window_keeps_working(
        qtbot, window, heads, draft, types, words):
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
        window.pair_panel.set_pair(heads["target"], heads[draft])
    window.params.drafter.set_types(types)
    window.run_clicked()
    qtbot.waitUntil(lambda: window.banner.level == "error" and words in window.banner.message,
                    timeout=RUN_TIMEOUT_MS)
    assert "\n" not in window.banner.message and heads[draft].name in window.banner.message
    qtbot.waitUntil(lambda: window.controller.state is RunState.IDLE, timeout=RUN_TIMEOUT_MS)
    assert window.prompt.text() == PROMPT and window.params.drafter.types() == tuple(types)
    window.params.drafter.set_types(["draft-dflash"])
    window.pair_panel.set_pair(heads["target"], heads["head"])   # the window goes on
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")


def test_a_chain_of_ngram_simple_and_the_dflash_head_draws_a_curve_for_each(qtbot, window):
    chain_after_ngram_simple(qtbot, window, "draft-dflash")


def test_the_copy_command_spells_a_block_drafter_s_lengths(window, heads):
    """llama.cpp's draft-dflash and draft-dspark read --spec-draft-n-max/-p-min/-n-min as the
    other model drafters do."""
    d = window.params.drafter
    d.n_max.setValue(6)
    d.n_min.setValue(2)
    d.p_min.setValue(0.25)
    for types in (["draft-dflash"], ["draft-dspark"]):
        d.set_types(types)
        words = window.copy_command.copy().split()
        for flag, value in (("-md", str(heads["head"])), ("--spec-type", types[0]),
                            ("--spec-draft-n-max", "6"), ("--spec-draft-n-min", "2"),
                            ("--spec-draft-p-min", "0.25")):
            assert words[words.index(flag) + 1] == value, (flag, words)
        assert not unknown_flags(" ".join(words))
