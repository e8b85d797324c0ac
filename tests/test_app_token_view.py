"""TokenView and the round explainer on hand-made round events (no model needed)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from specscope.app.round_view import RoundExplainer, explain  # noqa: E402
from specscope.app.token_view import (ACCEPTED, PROMPT, REJECTED, TARGET, UNCHECKED,  # noqa: E402
                                      TokenView, expected_kinds)
from specscope.app.worker import Vocab  # noqa: E402
from specscope.core.events import RoundEvent  # noqa: E402

# a toy vocabulary: token i is the letter chr(97 + i % 26); 99 is end-of-text; 50 is "\n"
VOCAB = Vocab(tuple(b"\n" if i == 50 else (b"" if i == 99 else bytes([97 + i % 26]))
                    for i in range(100)), frozenset({99}))


def ev(index, n_past, seed, drafted, n_accepted, emitted, mode="spec", **kw):
    return RoundEvent(index, n_past, seed, tuple(drafted), tuple(0.5 for _ in drafted), n_accepted,
                      tuple(emitted), mode, **kw)


ROUNDS = [
    ev(0, 4, 1, (2, 3, 4), 3, (2, 3, 4, 5)),          # full acceptance + bonus
    ev(1, 8, 5, (6, 7, 8), 1, (6, 10)),               # 7 rejected (replaced by 10), 8 never checked
    ev(2, 10, 10, (11, 12), 0, (13,)),                # first drafted token rejected
    ev(3, 11, 13, (), 0, (50,), "plain", draft_stop="n_min", dropped_draft=1),
    ev(4, 12, 50, (14,), 1, (14, 99), finish="eog"),  # bonus is end-of-text
]


@pytest.fixture
def view(qtbot):
    v = TokenView()
    qtbot.addWidget(v)
    v.begin("ab", VOCAB)
    return v


def kinds(view):
    return [(s.kind, s.token) for s in view.spans if s.kind != PROMPT]


def test_spans_follow_the_rounds(view):
    for e in ROUNDS:
        view.append_events([e])
    assert kinds(view) == [
        (ACCEPTED, 2), (ACCEPTED, 3), (ACCEPTED, 4), (TARGET, 5),
        (ACCEPTED, 6), (REJECTED, 7), (UNCHECKED, 8), (TARGET, 10),
        (REJECTED, 11), (UNCHECKED, 12), (TARGET, 13),
        (TARGET, 50),
        (ACCEPTED, 14), (TARGET, 99),
    ]
    assert [(k, t) for k, t, *_ in expected_kinds(ROUNDS)] == kinds(view)
    # the text: emitted tokens only, end-of-text left out
    assert view.generated_text() == "cde" + "f" + "g" + "k" + "n" + "\n" + "o"
    assert view.full_text() == "ab" + view.generated_text()
    # positions: emitted[i] of a round sits at n_past + 1 + i
    spans = [s for s in view.spans if s.kind != PROMPT]
    assert [s.position for s in spans[:4]] == [5, 6, 7, 8]
    assert spans[5].position == 10 and spans[7].position == 10   # rejected 7 and its replacement


def test_document_formats_match_spans(view):
    view.append_events(ROUNDS)
    doc = view.document()
    from PySide6.QtGui import QTextCursor
    for s in view.spans:
        if s.end <= s.start or doc.characterAt(s.start) == "\u2029":   # empty, or a newline
            continue
        c = QTextCursor(doc)
        c.setPosition(s.start + 1)       # the format of the character before the cursor
        fmt = c.charFormat()
        assert fmt.fontStrikeOut() == (s.kind in (REJECTED, UNCHECKED)), s
        if s.kind in (ACCEPTED, TARGET, REJECTED):
            from specscope.app.token_view import COLORS
            assert fmt.background().color().name() == COLORS[s.kind][1], s


def test_hover_text(view):
    view.append_events(ROUNDS[:2])
    spans = {(s.kind, s.token): s for s in view.spans}
    assert "round 0" in spans[(ACCEPTED, 2)].tooltip and "0.500" in spans[(ACCEPTED, 2)].tooltip
    assert "bonus" in spans[(TARGET, 5)].tooltip
    rep = spans[(TARGET, 10)].tooltip
    assert "replacement" in rep and "proposed <code>h</code>" in rep    # token 7 is "h"
    assert "rejected" in spans[(REJECTED, 7)].tooltip
    assert "never checked" in spans[(UNCHECKED, 8)].tooltip
    # span_at maps document positions back to tokens
    s = spans[(TARGET, 10)]
    assert view.span_at(s.start) == s


def test_hiding_rejected_rebuilds_once_and_keeps_text(view):
    view.append_events(ROUNDS)
    assert view.toPlainText() == "abcdefghikl" + "mn↵\no⟨end of text⟩"
    text = view.generated_text()
    view.set_show_rejected(False)
    assert all(s.kind not in (REJECTED, UNCHECKED) for s in view.spans)
    assert view.toPlainText() == "abcdefgkn↵\no⟨end of text⟩"
    assert view.generated_text() == text
    # appending keeps working while hidden
    view.append_events([ev(5, 14, 99, (1, 2), 0, (3,))])
    assert [s.kind for s in view.spans][-1] == TARGET
    view.set_show_rejected(True)
    assert (REJECTED, 1) in kinds(view)


def test_append_is_incremental(view):
    view.append_events(ROUNDS[:1])
    first = view.document().firstBlock()
    before = view.document().characterCount()
    view.append_events(ROUNDS[1:2])
    assert view.document().firstBlock() == first         # same document, only appended to
    assert view.document().characterCount() > before


def test_explainer_words(qtbot):
    w = RoundExplainer()
    qtbot.addWidget(w)
    w.show_round(ROUNDS[1], VOCAB)
    text = explain(ROUNDS[1], VOCAB)
    assert "Round 1" in text and "n_past</i> = 8" in text
    assert "first mismatch" in text and "draft position 2" in text
    assert "id_last = <code>k</code> at n_past = 10" in text     # next seed: the replacement
    full = explain(ROUNDS[0], VOCAB)
    assert "bonus" in full and "n_past = 8" in full
    plain = explain(ROUNDS[3], VOCAB)
    assert "n_min" in plain
