"""TokenView and the round explainer on hand-made round events (no model needed)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from specscope.app.round_view import RoundExplainer  # noqa: E402
from specscope.app.round_words import explain  # noqa: E402
from specscope.app.token_view import (ACCEPTED, PROMPT, REJECTED, TARGET, UNCHECKED,  # noqa: E402
                                      TokenView, expected_kinds)
from specscope.core.models.tokentext import TokenTable  # noqa: E402
from specscope.core.engine.events import RoundEvent  # noqa: E402

# a toy vocabulary: token i is the letter chr(97 + i % 26); 99 is end-of-text; 50 is "\n"
VOCAB = TokenTable.from_pieces([b"\n" if i == 50 else (b"" if i == 99 else bytes([97 + i % 26]))
                                 for i in range(100)], eog={99})


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
    checked = set()
    for s in view.spans:
        if s.end <= s.start or doc.characterAt(s.start) == "\u2029":   # empty, or a newline
            continue
        checked.add(s.kind)
        c = QTextCursor(doc)
        c.setPosition(s.start + 1)       # the format of the character before the cursor
        fmt = c.charFormat()
        assert fmt.fontStrikeOut() == (s.kind in (REJECTED, UNCHECKED)), s
        if s.kind in (ACCEPTED, TARGET, REJECTED):
            from specscope.app.token_view import COLORS
            assert fmt.background().color().name() == COLORS[s.kind][1], s
    assert checked >= {ACCEPTED, TARGET, REJECTED, UNCHECKED}, checked


def test_hover_text(view):
    view.append_events(ROUNDS[:2])
    spans = {(s.kind, s.token): s for s in view.spans}
    assert "round 1</b>" in spans[(ACCEPTED, 2)].tooltip and "0.500" in spans[(ACCEPTED, 2)].tooltip
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
    assert "Round 2</b>" in text and "n_past</i> = 8" in text
    assert "first mismatch" in text and "draft position 2" in text
    assert "id_last = <code>k</code> at n_past = 10" in text     # next seed: the replacement
    full = explain(ROUNDS[0], VOCAB)
    assert "bonus" in full and "n_past = 8" in full
    plain = explain(ROUNDS[3], VOCAB)
    assert "n_min" in plain


def test_the_words_show_whitespace_tokens_as_the_picture_does(qtbot):
    """Issue 20 item 9: a drafted space read "proposed <code> </code>" (nothing to see) where
    the picture shows ␣; both write ␣ for spaces, ↵ for a line break, ⇥ for a tab."""
    from specscope.app.round_words import round_labels, short
    vocab = TokenTable.from_pieces((b"x", b" ", b"    ", b"\n", b"\t", b" \n"))
    round_ = ev(0, 3, 0, (1, 2, 4), 0, (3,))           # drafted " ", "    ", "\t"; sampled "\n"
    text = explain(round_, vocab)
    assert "proposed <code>␣</code>, the target sampled <code>↵</code>" in text
    assert "[<code>x</code> <code>␣</code> <code>␣␣␣␣</code> <code>⇥</code>]" in text   # the batch
    batch, emitted = round_labels(round_, vocab)
    assert [short(t) for t in batch] == ["x", "␣", "␣␣␣␣", "⇥"] and short(emitted[0]) == "↵"
    assert "<code>␣↵</code>" in explain(ev(1, 4, 3, (5,), 1, (5, 0)), vocab)   # " \n" drafted


# ---------------------------------------------------------------------------- real vocabularies
# SentencePiece pieces (▁), byte tokens (<0x0A>) and UTF-8 characters split over tokens, in
# vocabularies llama.cpp loads from generated GGUF files.

TEXT = "hello world\n中文 😀 the end"


@pytest.fixture(scope="module")
def real_vocabs(tmp_path_factory):
    from helpers import ggufgen
    from specscope.core.models.llama import Model
    d = tmp_path_factory.mktemp("vocabs")
    files = {"spm": ggufgen.write_llama(d / "spm.gguf", model="llama", tokens=ggufgen.spm_vocab(),
                                        bos=1, eos=2, n_layer=1),
             "bpe": ggufgen.write_llama(d / "bpe.gguf", n_layer=1)}
    out = {}
    for name, path in files.items():
        m = Model(path, vocab_only=True)
        try:
            out[name] = (TokenTable.of(m), m.tokenize(TEXT, add_special=False))
        finally:
            m.close()
    return out


def baseline_rounds(tokens, n_past=0):
    return [ev(i, n_past + i, tokens[i - 1] if i else 0, (), 0, (t,), "baseline")
            for i, t in enumerate(tokens)]


def ids_of(vocab, raw: bytes) -> int:
    return min(t for t, (_, text, _) in vocab.entries.items() if text == raw)


def span_text(view, span) -> str:
    """The document's text of a span (positions count UTF-16 units: 😀 is two)."""
    from PySide6.QtGui import QTextCursor
    c = QTextCursor(view.document())
    c.setPosition(span.start)
    c.setPosition(span.end, QTextCursor.MoveMode.KeepAnchor)
    return c.selectedText().replace("\u2029", "\n")


@pytest.mark.parametrize("name", ["spm", "bpe"])
def test_real_tokens_show_the_text_they_make(qtbot, real_vocabs, name):
    vocab, tokens = real_vocabs[name]
    view = TokenView()
    qtbot.addWidget(view)
    view.begin("", vocab)
    view.append_events(baseline_rounds(tokens))
    shown = view.generated_text()
    # SentencePiece writes a space before the first word (its ▁ prefix); nothing else differs
    assert shown == (" " + TEXT if name == "spm" else TEXT)
    assert "▁" not in view.toPlainText() and "<0x" not in view.toPlainText() and "�" not in shown
    # 中 is three byte tokens: the first two show nothing, the third the character, and its
    # tooltip names the two before it
    e4, b8, ad = (next(t for t in tokens if vocab.piece(t) == bytes([b])) for b in (0xE4, 0xB8, 0xAD))
    spans = {s.token: s for s in view.spans}
    assert spans[e4].start == spans[e4].end and spans[b8].start == spans[b8].end
    tip = spans[ad].tooltip
    assert span_text(view, spans[ad]) == "中"
    assert f"token {ad}" in tip and f"completes <code>中</code>" in tip and f"({e4}, {b8})" in tip
    raw = "&lt;0xAD&gt;" if name == "spm" else "Ń"           # the vocabulary's own piece
    assert f"vocabulary piece <code>{raw}</code>" in tip and "bytes <code>⟨AD⟩</code>" in tip


def test_spm_pieces_and_byte_tokens_on_hover(qtbot, real_vocabs):
    vocab, tokens = real_vocabs["spm"]
    view = TokenView()
    qtbot.addWidget(view)
    view.begin("", vocab)
    view.append_events(baseline_rounds(tokens))
    newline = ids_of(vocab, b"<0x0A>")
    word = next(t for t in tokens if vocab.text(t).startswith("▁") and len(vocab.text(t)) > 1)
    spans = {s.token: s for s in view.spans}
    assert "vocabulary piece <code>&lt;0x0A&gt;</code>" in spans[newline].tooltip
    assert span_text(view, spans[newline]) == "↵\n"
    assert f"vocabulary piece <code>{vocab.text(word)}</code>" in spans[word].tooltip
    assert span_text(view, spans[word]) == " " + vocab.text(word)[1:]


def test_rejected_tokens_show_their_share_of_a_split_character(qtbot, real_vocabs):
    vocab, tokens = real_vocabs["bpe"]
    emoji = [t for t in tokens if vocab.piece(t)[:1] in (b"\xf0", b"\x9f", b"\x98", b"\x80")]
    assert len(emoji) == 4                                     # 😀 = F0 9F 98 80, one byte each
    view = TokenView()
    qtbot.addWidget(view)
    view.begin("", vocab)
    x = ids_of(vocab, b"x")
    # the draft proposed the whole emoji; the target kept its first byte, then said "x"
    view.append_events([ev(0, 3, x, emoji, 1, (emoji[0], x))])
    rejected = [s for s in view.spans if s.kind in (REJECTED, UNCHECKED)]
    shown = [span_text(view, s) for s in rejected]
    assert shown == ["😀 (2/4)", "😀 (3/4)", "😀 (4/4)"]
    assert view.generated_text() == "\ufffdx"        # F0 then "x" really is not valid UTF-8


def test_prompt_is_shown_token_by_token(qtbot, real_vocabs):
    vocab, tokens = real_vocabs["spm"]
    view = TokenView()
    qtbot.addWidget(view)
    view.begin(TEXT, vocab, [1, *tokens])          # <s> and the prompt's tokens
    prompt = [s for s in view.spans if s.kind == PROMPT]
    assert [s.token for s in prompt] == [1, *tokens]
    # the BOS llama.cpp adds is not text the user typed: a mark, its tooltip says what it is
    assert view.toPlainText() == "⟨BOS⟩ " + TEXT
    assert "prompt</b> token 1 of" in prompt[0].tooltip and "&lt;s&gt;" in prompt[0].tooltip
    assert "start-of-text token (BOS)" in prompt[0].tooltip
    assert "prompt</b> token 2 of" in prompt[1].tooltip and "BOS" not in prompt[1].tooltip
    assert view.full_text() == TEXT                # what the target was given, as text


def test_step_mode_shows_split_characters_and_hover(qtbot, real_vocabs):
    from specscope.app.round_words import labels, token_tooltip
    vocab, tokens = real_vocabs["spm"]
    han = [t for t in tokens if vocab.text(t) in ("<0xE4>", "<0xB8>", "<0xAD>")]
    newline = ids_of(vocab, b"<0x0A>")
    e = ev(0, 5, newline, han, 3, (*han, newline))
    assert labels([newline, *han], vocab) == ["\n", "中 (1/3)", "中 (2/3)", "中 (3/3)"]
    # the draft row and the target's samples read the same where the draft was accepted, even
    # when the character is finished only by the bonus token (which the batch does not hold)
    from specscope.app.round_words import round_labels
    cut = ev(1, 5, newline, han[:2], 2, (*han, newline))
    assert round_labels(cut, vocab) == (["\n", "中 (1/3)", "中 (2/3)"], ["中 (1/3)", "中 (2/3)", "中 (3/3)", "\n"])
    # kept: 0xE4 then a line break (no character: its byte shows); the rejected drafts would
    # have completed 中
    rejected = ev(2, 5, newline, han, 1, (han[0], newline))
    assert round_labels(rejected, vocab) == (["\n", "⟨E4⟩", "中 (2/3)", "中 (3/3)"], ["⟨E4⟩", "\n"])
    text = explain(e, vocab)
    assert "<code>中 (1/3)</code> (q 0.50)" in text and "<code>↵</code>" in text
    w = RoundExplainer()
    qtbot.addWidget(w)
    w.resize(900, 400)
    w.show()
    w.show_round(e, vocab)
    qtbot.waitUntil(lambda: bool(w.diagram._cells))          # painted: token cells recorded
    rect, tok = w.diagram._cells[1]                          # the first drafted token
    assert w.diagram.token_at(rect.center()) == han[0]
    assert "vocabulary piece <code>&lt;0xE4&gt;</code>" in token_tooltip(han[0], vocab)
