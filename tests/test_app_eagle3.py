"""draft-eagle3 in the window: the drafter picker offers it and reads the draft slot as the
EAGLE-3 head, its tokens take its own colour, step mode tells a feature-driven draft in words
(the target layers that fed it, each token's probability and its reduced-vocabulary id mapped
to the target id), the plots count it, and a head that does not fit is one line in the banner
while the window keeps working. On generated heads (tests/helpers/ggufgen.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from helpers import ggufgen  # noqa: E402
from helpers.window import (RUN_TIMEOUT_MS, chain_after_ngram_simple, check_drafted_by,  # noqa: E402
                            check_shared_lengths, for_short_runs, open_window, run_and_wait,
                            step_to_a_draft)
from specscope.app.drafter_panel import DrafterPanel  # noqa: E402
from specscope.core.engine.events import HeadIds, RoundEvent  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402

PROMPT = "def parse_args(argv=None):\n"


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    d = tmp_path_factory.mktemp("eagleui")
    target, head = ggufgen.write_eagle3_pair(d, prefix="good")
    n_vocab = len(ggufgen.bpe_vocab()[0])
    d2t = ggufgen.reduced_vocab(n_vocab, 200)
    d2t[5] = n_vocab + 100
    lfm2 = ggufgen.lfm2_weights(n_vocab, "cac", seed=1)
    return {"target": target, "head": head,
            "layers": ggufgen.write_eagle3_pair(d, prefix="layers", target_layers=(0, 1, 7))[1],
            "d2t": ggufgen.write_eagle3_pair(d, prefix="d2t", d2t=d2t)[1],
            "ordinary": ggufgen.write_eagle3_pair(d, prefix="other", seed=1)[0],   # a llama model
            "hybrid": ggufgen.write_lfm2(d / "lfm2.gguf", lfm2),
            "hybrid_head": ggufgen.write_eagle3_head(
                d / "lfm2-head.gguf", ggufgen.eagle3_head_weights(lfm2, ggufgen.reduced_vocab(n_vocab, 200)),
                target_layers=(0, 1, 2), target_hidden_size=64)}


@pytest.fixture
def window(qtbot, heads, settings):
    w = for_short_runs(open_window(qtbot, (heads["target"], heads["head"]), settings, preload=False),
                       n_predict=48, n_ctx=256, prompt=PROMPT)
    w.prompt.chat.setChecked(False)
    qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=30_000)
    w.params.drafter.set_types(["draft-eagle3"])
    yield w
    w.close()


# ------------------------------------------------------------------ the picker alone
def test_the_picker_offers_draft_eagle3_with_the_draft_model_s_lengths(qtbot):
    picker = check_shared_lengths(qtbot, "draft-eagle3")
    assert "EAGLE-3 head" in picker.checks["draft-eagle3"].text()


def test_the_picker_says_when_the_draft_slot_does_not_fit_the_drafter(qtbot, tmp_path):
    picker = DrafterPanel()
    qtbot.addWidget(picker)
    picker.show()
    head, model = tmp_path / "my-head.gguf", tmp_path / "my-draft.gguf"
    picker.set_types(["draft-simple"])
    picker.set_draft(head, "eagle3")                              # a head chosen for draft-simple
    assert "my-head.gguf is an EAGLE-3 head" in picker.message.text()
    picker.set_types(["draft-eagle3"])
    assert not picker.message.isVisible()
    picker.set_draft(model, "llama")                              # an ordinary model for draft-eagle3
    assert "my-draft.gguf is not an EAGLE-3 head (it is a llama model)" in picker.message.text()
    picker.set_draft(None)
    assert "draft-eagle3 needs an EAGLE-3 head" in picker.message.text()
    picker.set_types(["draft-simple", "draft-eagle3"])
    assert "check one of them" in picker.problem()


# ------------------------------------------------------------------ the window on a generated head
def test_a_head_run_colours_its_tokens_and_its_plots(qtbot, window):
    panel = window.pair_panel
    assert panel.draft_label.text() == "Head" and "EAGLE-3 head" in panel.draft_edit.placeholderText()
    verdict = panel.verdict.text()                    # the doctor's verdict reads as a head's
    assert "head rules pass" in verdict and "head size ÷ target size" in verdict
    assert "vocabulary rules" not in verdict
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")
    span = check_drafted_by(window, "draft-eagle3")
    tip, ev = span.tooltip, span.event
    i = span.position - (ev.n_past + 1)
    assert "drafted by the <b>EAGLE-3 head</b>" in tip
    assert f"draft id {ev.head_ids[i]} → target id {ev.drafted[i]}" in tip
    window.params.drafter.set_types(["draft-simple"])            # the head for draft-simple
    assert panel.draft_label.text() == "Draft"
    window.run_clicked()
    assert window.controller.state is RunState.IDLE and window.banner.level == "error"
    assert "good-head.gguf is an EAGLE-3 head" in window.banner.message


def test_step_mode_tells_a_head_s_draft_in_words(qtbot, window):
    ev = step_to_a_draft(qtbot, window)
    assert ev is not None and ev.drafter == "draft-eagle3" and len(ev.head_ids) == len(ev.drafted)
    text = window.round_view.text.text()
    assert "<b>EAGLE-3 head</b>" in text and "without a draft model" not in text
    assert "the inputs of the target's layers 0, 1 and 3" in text
    assert "reduced vocabulary of 200 tokens" in text
    for d, t, p in zip(ev.head_ids, ev.drafted, ev.draft_probs):
        assert f"draft id {d} → target id {t} <code>" in text and (f"(q {p:.2f})" in text or f"(q {p:.2f}, the target" in text)   # step mode: q beside p
    assert "the EAGLE-3 head's cache" in text
    window.stop_clicked()
    qtbot.waitUntil(lambda: window.controller.state is RunState.IDLE, timeout=RUN_TIMEOUT_MS)


def test_a_head_s_draft_ids_survive_a_session_file():
    ev = RoundEvent(3, 20, 7, (11, 12), (0.9, 0.4), 1, (11, 13), "spec", drafter="draft-eagle3",
                    detail=HeadIds((4, 5)))
    assert RoundEvent.from_dict(ev.to_dict(exact=True)) == ev
    old = ev.to_dict(exact=True)
    del old["detail"]                                             # a file written before them
    assert RoundEvent.from_dict(old).head_ids == ()
    old["draft_ids"] = [4, 5]                                     # session version 2's field
    assert RoundEvent.from_dict(old) == ev


@pytest.mark.parametrize("target, draft, types, words", [
    ("target", "layers", ["draft-eagle3"], "its target layer id 7"),
    ("target", "d2t", ["draft-eagle3"], "its d2t table maps draft token 5"),
    ("target", "ordinary", ["draft-eagle3"], "other-target.gguf is not an EAGLE-3 head"),
    ("hybrid", "hybrid_head", ["draft-eagle3"], "draft-eagle3 on a recurrent or hybrid target"),
])
def test_a_head_that_does_not_fit_is_one_line_and_the_window_keeps_working(
        qtbot, window, heads, target, draft, types, words):
    with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
        window.pair_panel.set_pair(heads[target], heads[draft])
    window.params.drafter.set_types(types)
    window.run_clicked()
    qtbot.waitUntil(lambda: window.banner.level == "error" and words in window.banner.message,
                    timeout=RUN_TIMEOUT_MS)
    message = window.banner.message
    assert "\n" not in message and (heads[target].name in message or heads[draft].name in message)
    qtbot.waitUntil(lambda: window.controller.state is RunState.IDLE, timeout=RUN_TIMEOUT_MS)
    assert window.prompt.text() == PROMPT and window.params.drafter.types() == ("draft-eagle3",)
    window.pair_panel.set_pair(heads["target"], heads["head"])   # the window goes on
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")


def test_a_chain_of_ngram_simple_and_the_head_draws_a_curve_for_each(qtbot, window):
    chain_after_ngram_simple(qtbot, window, "draft-eagle3")
