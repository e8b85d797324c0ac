"""The window's tree headroom plot and draft-length policy (issue 13): a run on the demo pair
with the hf policy records the policy, drafts what it allows, and fills the tree plot."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from specscope.app.drafter_panel import DrafterPanel  # noqa: E402

from helpers.window import open_window, run_and_wait  # noqa: E402


def test_the_picker_offers_the_policies_and_keeps_the_choice(qtbot):
    picker = DrafterPanel()
    qtbot.addWidget(picker)
    assert [picker.policy.itemData(i) for i in range(picker.policy.count())] == ["fixed", "hf", "cost"]
    assert picker.spec_settings().draft_policy == "fixed"          # llama.cpp's, by default
    picker.policy.setCurrentIndex(picker.policy.findData("cost"))
    assert picker.spec_settings().draft_policy == "cost"
    again = DrafterPanel()
    qtbot.addWidget(again)
    again.from_dict(picker.to_dict())
    assert again.spec_settings().draft_policy == "cost"
    picker.set_types(["ngram-simple"])
    assert not picker.policy.isEnabled()                            # draft-simple's setting


def test_an_hf_run_records_the_policy_and_fills_the_tree_plot(qtbot, pair, settings):
    w = open_window(qtbot, pair, settings)
    try:
        w.params.n_predict.setValue(64)
        w.params.n_ctx.setValue(512)
        w.params.n_max.setValue(5)
        w.prompt.set_text("def _count_words(path, encoding=\"utf-8\"):\n")
        d = w.params.drafter
        d.policy.setCurrentIndex(d.policy.findData("hf"))
        assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
        assert w.controller.session.settings.spec.draft_policy == "hf"
        drafts = [e for e in w.controller.session.run.events if e.drafted]
        assert drafts[0].draft_limit == 5 and all(len(e.drafted) <= e.draft_limit for e in drafts)
        qtbot.waitUntil(lambda: "w=1</b>" in w.plots.shown()["tree"]["numbers"], timeout=10_000)
        stats = w.controller.session.run.stats
        assert w.plots.shown()["tree"]["height"].sum() == sum(stats.tree.rank_hist) > 0
    finally:
        w.close()
