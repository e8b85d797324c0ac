"""A run that teaches (step mode): each round keeps the target's probability p of the drafted
tokens and the entropy of each row it verified, and step mode shows them beside the draft's q."""

from __future__ import annotations

import json
import math

import pytest

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.models.demo import demo_pair

PROMPT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"


@pytest.fixture(scope="module")
def demo():
    with Engine(*demo_pair()[:2], EngineSettings(target_threads=1, draft_threads=1, repack="off")) as e:
        yield e


def test_a_teaching_run_keeps_p_and_the_entropy_and_emits_the_same(demo):
    taught = demo.speculative(PROMPT, SpecSettings(n_max=3), n_predict=32, teach=True)
    events = list(taught)
    plain = demo.speculative(PROMPT, SpecSettings(n_max=3), n_predict=32)
    plain_events = list(plain)
    assert taught.tokens == plain.tokens
    assert all(not e.target_p and not e.entropy for e in plain_events)
    for e in events:
        assert len(e.target_p) == len(e.drafted) and len(e.entropy) == 1 + len(e.drafted)
        assert all(0.0 <= p <= 1.0 for p in e.target_p)
        assert all(0.0 <= h <= math.log2(demo.target.n_vocab) + 1e-6 for h in e.entropy)
        # greedy: an accepted token is the target's top choice, so it holds at least 1/n of it
        assert all(p > 0 for p in e.target_p[:e.n_accepted])
        assert RoundEvent.from_dict(json.loads(json.dumps(e.to_dict(exact=True)))) == e
    assert any(e.n_accepted for e in events)


def test_step_mode_shows_q_and_p_and_h_with_their_words(qtbot):
    pytest.importorskip("pytestqt")
    from PySide6.QtCore import QPointF

    from specscope.app.glossary import TERMS
    from specscope.app.round_view import CELL_H, CELL_W, GAP, LABEL_W, RoundExplainer
    from specscope.core.models.tokentext import TokenTable
    vocab = TokenTable.from_pieces([bytes([97 + i % 26]) for i in range(100)], eog=set())
    ev = RoundEvent(2, 10, 1, (4, 6), (0.9, 0.8), 1, (4, 7), "spec", drafter="draft-simple",
                    draft_stop="n_max", target_p=(0.7, 0.1), entropy=(0.5, 1.5, 2.0))
    w = RoundExplainer()
    qtbot.addWidget(w)
    w.resize(1000, 400)
    w.show()
    w.show_round(ev, vocab)
    w.diagram.grab()

    def at(col, row):
        return QPointF(LABEL_W + col * (CELL_W + GAP) + CELL_W / 2, GAP + row * (CELL_H + GAP) + CELL_H / 2)
    assert "the target&#x27;s, read from its row" in w.diagram.tooltip_at(at(1, 1))    # q · p
    assert "entropy" in w.diagram.tooltip_at(at(1, 0))                              # H 1.5 bits
    first = w.diagram.tooltip_at(at(0, 0))                                         # n_past and H
    assert "n_past" in first and "entropy" in first
    assert "(q 0.90, the target&#x27;s p 0.70)" in w.text.text() or "(q 0.90, the target's p 0.70)" in w.text.text()
    assert TERMS["H"].split(":")[0] == "H"
