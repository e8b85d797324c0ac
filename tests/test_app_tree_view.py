"""Step mode on a draft-tree round (app/tree_view.py), a suffix tree and a lookahead round, on
hand-made rounds (no model needed)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from specscope.app.round_view import RoundExplainer  # noqa: E402
from specscope.app.round_words import explain  # noqa: E402
from specscope.app.tree_view import (ACCEPTED_NODE, REJECTED_NODE, UNCHECKED_NODE,  # noqa: E402
                                     node_state, node_tooltip)
from specscope.core.engine.events import RoundEvent, TreeShape  # noqa: E402
from specscope.core.models.tokentext import TokenTable  # noqa: E402

VOCAB = TokenTable.from_pieces([bytes([97 + i % 26]) for i in range(100)], eog=set())

# root 1; branch 0 drafts 2 3; branch 1 splits off at depth 1 with 4 5; branch 2 splits off
# branch 1 at depth 2 with 6. The target takes 4, then 6, then its bonus token 7.
TREE = TreeShape(branches=((2, 3), (4, 5), (4, 6)), probs=((0.5, 0.9), (0.3, 0.6), (0.3, 0.25)),
                 kept=2, nodes=5, steps=2)
ROUND = RoundEvent(1, 10, 1, (4, 6), (0.3, 0.25), 2, (4, 6, 7), "spec", drafter="draft-tree",
                   draft_stop="n_max", shape=TREE)


def test_each_branch_starts_where_it_split_off():
    assert TREE.origins() == ((0, -1), (0, 0), (1, 1))


def test_a_token_is_accepted_rejected_or_never_checked_along_its_own_branch():
    states = [[node_state(b, d, ROUND.emitted, ROUND.n_accepted) for d in range(len(b))]
              for b in TREE.branches]
    assert states == [[REJECTED_NODE, UNCHECKED_NODE],          # the target took 4, not 2
                      [ACCEPTED_NODE, REJECTED_NODE],          # then 6, not 5
                      [ACCEPTED_NODE, ACCEPTED_NODE]]


def test_step_mode_draws_every_tree_token_once_and_the_targets_samples(qtbot):
    w = RoundExplainer()
    qtbot.addWidget(w)
    w.show_round(ROUND, VOCAB)
    w.diagram.resize(w.diagram.sizeHint())
    w.diagram.grab()                                    # paints it
    tokens = [t for _rect, t in w.diagram._cells]
    assert tokens == [1, 2, 3, 4, 5, 6, 4, 6, 7]        # seed, 5 tree nodes, 3 samples
    assert w.diagram.sizeHint().height() > 4 * 36       # a row per branch
    text = explain(ROUND, VOCAB)
    assert "a <b>tree</b>" in text and "kept branch 2: all 2 of its tokens" in text
    assert "bonus token <code>h</code>" in text and "5 tree tokens in <b>one batch</b>" in text
    tip = node_tooltip(ROUND, 4, VOCAB)
    assert "branch 1 at depth 1, q 0.300" in tip and "branch 2 at depth 1" in tip


def test_a_kept_branch_that_is_not_the_path_taken_is_said(qtbot):
    """llama-speculative's slip at temperature (docs/tree.md): the text took 4 from branch 1,
    then 6; branch 0 (2, 6) was left in the draw and its 6 kept, so branch 0 is kept."""
    from dataclasses import replace
    from specscope.app.tree_view import mismatch
    tree = replace(TREE, branches=((2, 6), (4, 5)), probs=((0.5, 0.9), (0.3, 0.6)), kept=0, nodes=4)
    ev = replace(ROUND, drafted=(2, 6), shape=tree)
    assert mismatch(ev) == 0 and mismatch(ROUND) == -1
    text = explain(ev, VOCAB)
    assert "llama-speculative's slip" in text and "at depth 1 the text took <code>e</code>" in text
    assert "slip" not in explain(ROUND, VOCAB)


def test_a_suffix_tree_is_drawn_and_told_as_drafted_from_counts(qtbot):
    from dataclasses import replace
    ev = replace(ROUND, drafter="suffix", draft_note="the last 3 tokens occurred 2 times in this "
                 "prompt and reply", shape=replace(TREE, steps=0))
    text = explain(ev, VOCAB)
    assert "looked the latest tokens up in its suffix trees" in text and "no model decoded" in text
    assert "The last 3 tokens occurred 2 times" in text and "the target's cache" in text
    w = RoundExplainer()
    qtbot.addWidget(w)
    w.show_round(ev, VOCAB)


def test_a_lookahead_round_names_the_ngrams_it_verified_and_the_one_it_followed():
    from specscope.core.engine.events import LookaheadShape
    la = LookaheadShape(verified=((4, 6, 8, 9), (5, 5, 5, 5), (4, 7, 1, 1)), followed=0, pool=42)
    ev = RoundEvent(3, 20, 1, (4, 6, 8, 9), (), 2, (4, 6, 7), "spec", drafter="lookahead",
                    draft_stop="lookup", kv_dropped_target=118, shape=la)
    text = explain(ev, VOCAB)
    assert "3 of them follow the seed" in text and "42 so far" in text
    assert "<b>n-gram 0: " in text and "agreed with n-gram 0 for 2 tokens" in text
    assert "one batch</b> of 121 tokens" in text
    none = RoundEvent(3, 20, 1, (), (), 0, (7,), "plain", drafter="", draft_stop="no match",
                      kv_dropped_target=60, shape=LookaheadShape((), -1, 42))
    assert "only the window rides along" in explain(none, VOCAB)


def test_step_modes_words_are_explained_where_they_appear(qtbot):
    """Hovering a row's name or a cell's small print (n_past, seed (id_last), bonus, KV rows ...)
    gives its plain words (app/glossary.py), beside the token's own id and piece."""
    from PySide6.QtCore import QPointF
    from specscope.app.glossary import TERMS
    from specscope.app.round_view import CELL_H, CELL_W, GAP, LABEL_W
    ev = RoundEvent(2, 10, 1, (4, 6), (0.9, 0.8), 2, (4, 6, 7), "spec", drafter="draft-simple",
                    draft_stop="n_max")
    w = RoundExplainer()
    qtbot.addWidget(w)
    w.resize(1000, 400)
    w.show()
    w.show_round(ev, VOCAB)
    d = w.diagram
    d.grab()                                   # painted: its cells and words are known

    def at(col, row):
        return QPointF(LABEL_W + col * (CELL_W + GAP) + CELL_W / 2, GAP + row * (CELL_H + GAP) + CELL_H / 2)
    import html
    assert d.tooltip_at(QPointF(20, GAP + 3 * (CELL_H + GAP) + CELL_H / 2)) == html.escape(
        TERMS["target KV after"])                                                # a row's name
    seed = d.tooltip_at(at(0, 1))
    assert seed.startswith("token 1") and "id_last" in seed                      # the seed's cell
    assert "n_past" in d.tooltip_at(at(0, 0))
    assert "bonus token" in d.tooltip_at(at(3, 2))                               # all accepted: bonus
    assert "probability" in d.tooltip_at(at(1, 1))                               # p 0.90
