"""The live token view: text as it is emitted, coloured by who produced each token.

Each round appends: the drafted tokens the target accepted, then (if the
draft was cut) the rejected drafted tokens struck through, then the target's
own token (the replacement at the first mismatch, or the bonus token after a
full acceptance). Appending is incremental: one cursor insert per token,
nothing already in the document is touched. Hiding the rejected tokens is the
only thing that rebuilds the document, once, when the user flips the toggle.
Line breaks in generated tokens are drawn as "↵" before the break, so their
colour shows; the text that is copied or saved is the plain text.

Tokens show the text they make (core/tokentext.py): a UTF-8 character split
over several tokens appears with the token that completes it, whose tooltip
names the tokens that held its first bytes; struck-through drafted tokens show
their share of such a character. The prompt is shown token by token as the
target was given it (with a chat template: the template's tokens). Hovering
any token shows its id and its piece as the vocabulary writes it.
"""

from __future__ import annotations

import bisect
import html
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QToolTip

from specscope.core.tokentext import TokenText, hex_bytes, shares

PROMPT, ACCEPTED, TARGET, REJECTED, UNCHECKED = "prompt", "accepted", "target", "rejected", "unchecked"

COLORS = {   # kind -> (foreground, background); also used by the legend
    PROMPT: ("#6b6b6b", None),
    ACCEPTED: ("#14532d", "#bbf0c6"),
    TARGET: ("#1e3a8a", "#c9dcff"),
    REJECTED: ("#b42318", "#fde4e1"),
    UNCHECKED: ("#b0837d", None),
}
LEGEND = (
    (ACCEPTED, "draft token, accepted"),
    (TARGET, "target's own token (replacement or bonus)"),
    (REJECTED, "draft token, rejected"),
    (UNCHECKED, "draft token after a rejection (never checked)"),
)


@dataclass(frozen=True, slots=True)
class TokenSpan:
    kind: str            # prompt | accepted | target | rejected | unchecked
    token: int           # -1 for the prompt
    round: int           # -1 for the prompt
    position: int        # KV position the token has (or would have had)
    start: int           # document positions [start, end)
    end: int
    describe: Callable[[], str] = field(repr=False, compare=False)

    @property
    def tooltip(self) -> str:
        """What hovering the token shows (HTML), written on demand."""
        return self.describe()


@dataclass(frozen=True, slots=True)
class _Piece:
    kind: str
    token: int
    round: int
    position: int
    text: str
    describe: Callable[[], str]         # its tooltip, on demand


def visible(text: str) -> str:
    """Whitespace made visible, for tokens shown outside the flowing text."""
    return text.replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")


def char_format(kind: str, base: QFont | None = None) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fg, bg = COLORS[kind]
    fmt.setForeground(QColor(fg))
    if bg:
        fmt.setBackground(QColor(bg))
    if kind in (REJECTED, UNCHECKED):
        fmt.setFontStrikeOut(True)
    if kind == UNCHECKED:
        fmt.setFontItalic(True)
    return fmt


class TokenView(QPlainTextEdit):
    """Read-only text view that knows which token every character came from."""

    show_rejected_changed = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(font.pointSizeF(), 10.5))
        self.setFont(font)
        self.viewport().installEventFilter(self)
        self.setPlaceholderText("Generated text appears here, token by token. Press Run (Ctrl+R) "
                                "or Step (F10).")
        self._formats = {k: char_format(k) for k in COLORS}
        self._show_rejected = True
        self._pieces: list[_Piece] = []
        self.spans: list[TokenSpan] = []
        self._starts: list[int] = []
        self._vocab = None
        self._stream = TokenText()
        self._generated: list[str] = []
        self._prompt = ""

    # ------------------------------------------------------------------ state
    @property
    def show_rejected(self) -> bool:
        return self._show_rejected

    def set_show_rejected(self, show: bool) -> None:
        if show == self._show_rejected:
            return
        self._show_rejected = show
        self._rebuild()
        self.show_rejected_changed.emit(show)

    def clear_tokens(self) -> None:
        self.clear()
        self._pieces.clear()
        self.spans.clear()
        self._starts.clear()
        self._generated.clear()
        self._stream = TokenText()
        self._prompt = ""

    def begin(self, prompt: str, vocab, prompt_tokens=()) -> None:
        """A new run: show the prompt (its tokens, when given), remember the vocabulary."""
        self.clear_tokens()
        self._vocab = vocab
        self._prompt = prompt
        if not prompt_tokens:
            self._append([_Piece(PROMPT, -1, -1, -1, prompt, lambda: "the prompt")])
            return
        pieces = []
        n = len(prompt_tokens)
        for i, tok in enumerate(prompt_tokens):
            text, joined = self._stream.feed(tok, vocab.piece(tok))
            pieces.append(_Piece(PROMPT, tok, -1, i, text,
                                 partial(self._describe_prompt, i, n, tok, (joined, text[:1]))))
        self._append(pieces)

    def generated_text(self) -> str:
        return "".join(self._generated)

    def full_text(self) -> str:
        """The prompt the target was given and the generated text, without rejected tokens."""
        return self._prompt + self.generated_text()

    # ------------------------------------------------------------------ events
    def append_events(self, events) -> None:
        pieces = []
        for ev in events:
            pieces.extend(self._round_pieces(ev))
        self._append(pieces)

    def _text(self, token: int) -> tuple[str, tuple[int, ...]]:
        """The text an emitted token adds, and the earlier tokens its first character joins."""
        if self._vocab.is_eog(token):
            return "", ()
        return self._stream.feed(token, self._vocab.piece(token))

    def _piece_text(self, token: int) -> str:
        """A token shown on its own (in a tooltip): its text, or its bytes where they make none."""
        piece = self._vocab.piece(token)
        try:
            return piece.decode("utf-8")
        except UnicodeDecodeError:
            return hex_bytes(piece)

    def _round_pieces(self, ev) -> list[_Piece]:
        out = []
        k, a = len(ev.drafted), ev.n_accepted
        pos0 = ev.n_past + len(ev.replayed) + 1      # position of emitted[0]
        for i, tok in enumerate(ev.emitted):
            if i < a and ev.drafted:
                text, joined = self._text(tok)
                out.append(_Piece(ACCEPTED, tok, ev.index, pos0 + i, text,
                                  partial(self._describe, ev, ACCEPTED, i, (joined, text[:1]))))
                continue
            # the target's own token: replacement, bonus, or a plain/baseline token;
            # the rejected drafted tokens come first, struck through, each with its share
            # of the text they would have made after what was accepted
            rejected = ev.drafted[a:k] if ev.drafted else ()
            labels = shares([self._vocab.piece(t) for t in rejected], self._stream.pending)
            for j, (tok_j, label) in enumerate(zip(rejected, labels), start=a):
                kind = REJECTED if j == a else UNCHECKED
                out.append(_Piece(kind, tok_j, ev.index, pos0 + j, visible(label),
                                  partial(self._describe, ev, kind, j)))
            text, joined = ("⟨end of text⟩", ()) if self._vocab.is_eog(tok) else self._text(tok)
            out.append(_Piece(TARGET, tok, ev.index, pos0 + i, text,
                              partial(self._describe, ev, TARGET, i, (joined, text[:1]))))
        return out

    def _describe_prompt(self, i: int, n: int, token: int, split=((), "")) -> str:
        return f"<b>prompt</b> token {i + 1} of {n}, position {i}" + self._tok_line(token, split)

    def _describe(self, ev, kind: str, i: int, split=((), "")) -> str:
        """``split``: (earlier tokens, character) when this token completes a character
        whose first bytes those tokens held."""
        """A token's tooltip (HTML), written when it is first hovered: ``i`` indexes
        ``ev.emitted`` (accepted, target) or ``ev.drafted`` (rejected, unchecked)."""
        k, a = len(ev.drafted), ev.n_accepted
        pos = ev.n_past + len(ev.replayed) + 1 + i
        head = f"<b>round {ev.index}</b>, position {pos}<br>"
        p = ev.draft_probs[i] if kind != TARGET and i < len(ev.draft_probs) else None
        if kind == ACCEPTED:
            tok = ev.emitted[i]
            tip = head + f"drafted at draft position {i + 1}, accepted" + (
                f"<br>draft probability {p:.3f}" if p is not None else "")
        elif kind in (REJECTED, UNCHECKED):
            tok = ev.drafted[i]
            ptxt = f"draft probability {p:.3f}" if p is not None else ""
            if kind == REJECTED:
                tip = head + (f"drafted at draft position {i + 1}, <b>rejected</b>: the target sampled "
                              f"<code>{self._esc(ev.emitted[a])}</code> instead<br>{ptxt}")
            else:
                tip = head + (f"drafted at draft position {i + 1}; never checked (it follows the "
                              f"first mismatch)<br>{ptxt}")
        else:
            tok = ev.emitted[i]
            if ev.drafted and a < k:
                d = ev.drafted[a]
                pd = ev.draft_probs[a] if a < len(ev.draft_probs) else 0.0
                tip = head + (f"<b>replacement</b>: the target's own token at the first mismatch<br>"
                              f"the draft had proposed <code>{self._esc(d)}</code> (p {pd:.3f})")
            elif ev.drafted:
                tip = head + (f"<b>bonus</b> token: the target accepted all {k} drafted tokens and "
                              "added its own")
            elif ev.mode == "replay":
                tip = head + (f"after a checkpoint restore the target re-verified the "
                              f"{len(ev.replayed)} tokens decided last round; this one is its own "
                              "next token")
            elif ev.mode == "baseline":
                tip = head + "target-only (baseline) token"
            else:
                why = {"n_min": f"the draft ({ev.dropped_draft} tokens) was shorter than n_min",
                       "budget": "no room left to draft"}.get(ev.draft_stop, "no draft")
                tip = head + f"target token, no draft this round ({why})"
        return tip + self._tok_line(tok, split)

    def _esc(self, token: int) -> str:
        return html.escape(visible(self._piece_text(token)) or " ")

    def _tok_line(self, token: int, split=((), "")) -> str:
        """The token's id, its vocabulary piece, and the text or bytes it stands for."""
        line = f"token {token} · vocabulary piece <code>{html.escape(self._vocab.text(token))}</code>"
        shown = self._esc(token)
        line += f" · {'bytes' if shown.startswith('⟨') else 'text'} <code>{shown}</code>"
        joined, char = split
        if joined:
            ids = ", ".join(str(t) for t in joined)
            line += (f"<br>it completes <code>{html.escape(char)}</code>, whose first bytes are in the "
                     f"token{'s' if len(joined) > 1 else ''} before it ({ids})")
        return f"<br><span style='color:#666'>{line}</span>"

    # ------------------------------------------------------------------ document
    def _append(self, pieces: list[_Piece], record: bool = True) -> None:
        if not pieces:
            return
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        for p in pieces:
            if record:
                self._pieces.append(p)
                if p.kind in (ACCEPTED, TARGET) and p.text and not self._vocab.is_eog(p.token):
                    self._generated.append(p.text)
            self._insert(cursor, p)
        cursor.endEditBlock()
        if at_end:
            bar.setValue(bar.maximum())

    def _insert(self, cursor: QTextCursor, p: _Piece) -> None:
        if p.kind in (REJECTED, UNCHECKED) and not self._show_rejected:
            return
        start = cursor.position()
        if p.text:
            text = p.text
            if p.kind in (ACCEPTED, TARGET) and "\n" in text:
                text = text.replace("\n", "↵\n")      # a line break shows whose token it was
            cursor.insertText(text, self._formats[p.kind])
        span = TokenSpan(p.kind, p.token, p.round, p.position, start, cursor.position(), p.describe)
        self.spans.append(span)
        self._starts.append(start)

    def _rebuild(self) -> None:
        self.clear()
        self.spans.clear()
        self._starts.clear()
        self._append(self._pieces, record=False)

    # ------------------------------------------------------------------ hover
    def span_at(self, doc_pos: int) -> TokenSpan | None:
        i = bisect.bisect_right(self._starts, doc_pos) - 1
        while i >= 0:
            s = self.spans[i]
            if s.start <= doc_pos < s.end:
                return s
            if s.end <= doc_pos:
                return None
            i -= 1
        return None

    def span_at_point(self, point) -> TokenSpan | None:
        cursor = self.cursorForPosition(point)
        pos = cursor.position()
        rect = self.cursorRect(cursor)
        if point.x() < rect.x() and pos > 0:
            pos -= 1
        return self.span_at(pos)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        """Tooltips for tokens. A filter on the viewport, not a viewportEvent override: an
        override would run the text's painting inside a Python call, holding the GIL the
        engine's worker thread needs."""
        if obj is self.viewport() and event.type() == QEvent.Type.ToolTip:
            span = self.span_at_point(event.pos())
            if span is not None and (span.kind != PROMPT or span.token >= 0):
                QToolTip.showText(event.globalPos(), span.tooltip, self.viewport())
            else:
                QToolTip.hideText()
            return True
        return False


def expected_kinds(events) -> list[tuple[str, int, int]]:
    """(kind, token, round) of the spans the view shows for ``events``, in order: the
    accepted drafted tokens, the rejected one and those after it, then the target's token."""
    out = []
    for ev in events:
        a, k = ev.n_accepted, len(ev.drafted)
        if ev.drafted:
            out += [(ACCEPTED, t, ev.index) for t in ev.emitted[:a]]
            if a < k:
                out.append((REJECTED, ev.drafted[a], ev.index))
                out += [(UNCHECKED, t, ev.index) for t in ev.drafted[a + 1:]]
        out.append((TARGET, ev.emitted[-1], ev.index))
    return out


def legend_html() -> str:
    parts = []
    for kind, label in LEGEND:
        fg, bg = COLORS[kind]
        style = f"color:{fg};" + (f"background:{bg};" if bg else "")
        if kind in (REJECTED, UNCHECKED):
            style += "text-decoration:line-through;"
        parts.append(f"<span style='{style} padding:1px 4px;'>&nbsp;abc&nbsp;</span>&nbsp;{label}")
    return "&nbsp;&nbsp;&nbsp;".join(parts)
