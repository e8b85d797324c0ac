"""The live token view: text as it is emitted, coloured by who produced each token.

Each round appends: the drafted tokens the target accepted, then (if the
draft was cut) the rejected drafted tokens struck through, then the target's
own token (the replacement at the first mismatch, or the bonus token after a
full acceptance). Appending is incremental: one cursor insert per token,
nothing already in the document is touched. Hiding the rejected tokens is the
only thing that rebuilds the document, once, when the user flips the toggle.
Line breaks in generated tokens are drawn as "↵" before the break, so their
colour shows; the text that is copied or saved is the plain text.

Tokens show the text they make (core/models/tokentext.py): a UTF-8 character split
over several tokens appears with the token that completes it, whose tooltip
names the tokens that held its first bytes; struck-through drafted tokens show
their share of such a character. The prompt is shown token by token as the
target was given it (with a chat template: the template's tokens). Hovering
any token shows its id and its piece as the vocabulary writes it.
"""

from __future__ import annotations

import bisect
import html
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QToolTip

from specscope.core.engine.drafters import DRAFT_MODEL, TYPES, spec_type
from specscope.core.models.tokentext import TokenText, hex_bytes, shares

from .drafter_style import drafter_colors, drafter_html
from .palette import TOKEN_COLORS, active_name

PROMPT, ACCEPTED, TARGET, REJECTED, UNCHECKED = "prompt", "accepted", "target", "rejected", "unchecked"
BOS_MARK = "⟨BOS⟩"        # the start-of-text token llama.cpp adds before a prompt, as shown
MESSAGE = "message"      # a conversation's user message (the chat template's tokens hidden)

COLORS = TOKEN_COLORS   # kind -> (foreground, background), the palette's (app/palette.py); the legend's too
# hovering an n-gram draft's token highlights where it came from
# (saturated, white text: unlike any token colour)
MATCH_COLORS = ("#ffffff", "#c2410c")     # the matched n-gram, earlier and now (fg, bg)
SOURCE_COLORS = ("#ffffff", "#3b82f6")    # the tokens the draft was copied from
COPIED_COLORS = ("#ffffff", "#172554")    # the one the hovered token was copied from
@dataclass(slots=True, eq=False)
class TokenSpan:
    """One token as the view shows it: who made it, its text, and where that text is in the
    document, [start, end) (-1 while it is hidden: a rejected token with rejected tokens
    hidden). The view keeps one per token it was given, shown or not, and places them again
    when the rejected tokens are shown or hidden (a live run appends thousands a second, so
    this is one plain object per token)."""
    kind: str            # prompt | message | accepted | target | rejected | unchecked
    token: int           # -1 for the prompt
    round: int           # -1 for the prompt
    position: int        # KV position the token has (or would have had)
    text: str
    describe: Callable[[], str] = field(repr=False)     # its tooltip, written on demand
    drafter: str = ""    # drafted tokens: the llama.cpp type that proposed them
    event: object = field(default=None, repr=False)   # its round's RoundEvent
    start: int = -1
    end: int = -1

    @property
    def tooltip(self) -> str:
        """What hovering the token shows (HTML), written on demand."""
        return self.describe()


def visible(text: str) -> str:
    """Whitespace made visible, for tokens shown outside the flowing text."""
    return text.replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")


def pieces_html(texts, mark: int | None = None) -> str:
    """Tokens' texts side by side, split by │, spaces as ␣ (token ``mark`` in bold)."""
    cells = [html.escape(visible(t).replace(" ", "␣")) or "∅" for t in texts]
    if mark is not None and 0 <= mark < len(cells):
        cells[mark] = f"<b><u>{cells[mark]}</u></b>"
    return "<code>" + "│".join(cells) + "</code>"


def translation_html(ev, target_texts, mark: int | None = None) -> str:
    """A round drafted across vocabularies (RoundEvent.xvocab): the draft's own pieces
    against the target's pieces they became (``target_texts``: the drafted target tokens'
    texts; ``mark``: the one to stress), and what a difference in the text means."""
    own, mode = list(ev.xvocab.text), ev.xvocab.mode
    how = ("re-tokenized with the target's tokenizer" if mode == "translate" else
           "mapped one for one (the tokens both vocabularies share)")
    out = (f"<i>{html.escape(mode)}:</i> the draft's {len(own)} piece{'s' if len(own) != 1 else ''} "
           f"{pieces_html(own)} → {how} → the target's {len(target_texts)} "
           f"{pieces_html(target_texts, mark)}")
    mine, theirs = "".join(own), "".join(target_texts)
    if mine == theirs and len(own) != len(target_texts):
        out += "<br>the same text, split at other token boundaries"
    elif mine != theirs and mine.startswith(theirs):
        out += (f"<br>the draft's text past the last whole target token, "
                f"<code>{html.escape(visible(mine[len(theirs):]))}</code>, was not drafted "
                "(cut to the round's draft length, or it made no whole target token)")
    elif mine != theirs and mode == "translate":
        out += ("<br>a target token straddled the end of the target's text, so it and its share "
                "of the drafted text were dropped (a mismatch at a token boundary)")
    return out


def char_format(kind: str, base: QFont | None = None, drafter: str = "") -> QTextCharFormat:
    """A token's format; an accepted draft token takes its drafter's colours."""
    fmt = QTextCharFormat()
    fg, bg = drafter_colors(drafter)[:2] if kind == ACCEPTED and drafter else COLORS[kind]
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
    round_hovered = Signal(int)           # the hovered token's round (-1: none; the timeline)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        # a caret where it has the focus: a Tab stop that shows it (and keyboard selection)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(font.pointSizeF(), 10.5))
        self.setFont(font)
        self.viewport().installEventFilter(self)
        self.setPlaceholderText("Generated text appears here, token by token. Press Run (Ctrl+R) "
                                "or Step (F10).")
        self._styles: dict[str, tuple[dict, dict]] = {}   # palette -> its token formats
        self._history: list[int] = []       # the token at each position (prompt, then emitted)
        self._pos_span: dict[int, TokenSpan] = {}    # position -> its shown prompt/kept token
        self.highlighted: TokenSpan | None = None    # the hovered n-gram token, highlighted
        self._show_rejected = True
        self._pieces: list[TokenSpan] = []     # every token given, shown or not (spans: the shown)
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
        self._history.clear()
        self._pos_span.clear()
        self.highlight(None)
        self._stream = TokenText()
        self._prompt = ""

    def begin_conversation(self, prompt: str, vocab, prompt_tokens, turns, history, message: str,
                           document: bool) -> None:
        """A conversation's turn with the chat template's tokens hidden: each turn before it
        (``turns``: (message, Session) pairs, else ``history``: their texts) as its message and
        its reply, coloured by that turn's own rounds (hover works on them), then this turn's
        message; the reply follows as ``append_events`` brings it. ``document``: the target
        has no chat template, so the messages continue one document."""
        self.clear_tokens()
        self._vocab, self._prompt = vocab, prompt
        pieces = []
        turns = turns or [(m, reply) for m, reply in history]
        for k, (text, made) in enumerate(turns, 1):
            pieces.append(self._message(text, k, document, pieces))
            if isinstance(made, str):           # only its text is known (a session file)
                pieces.append(TokenSpan(PROMPT, -1, -1, -1, made, lambda k=k: f"the reply of turn {k}"))
            else:
                pieces += self._earlier_reply(made, k)
        pieces.append(self._message(message, len(turns) + 1, document, pieces))
        self._history.extend(prompt_tokens)
        self._stream = TokenText()
        self._append(pieces)

    def _message(self, text: str, turn: int, document: bool, before: list) -> "TokenSpan":
        shown = next((p.text for p in reversed(before) if p.text), "")    # what the text ends with
        if document:        # the document goes on: a new line unless it ends with one
            sep = "" if not shown or shown.endswith(("\n", " ")) else "\n"
            return TokenSpan(PROMPT, -1, -1, -1, sep + text,
                             lambda: f"your text of turn {turn}: this target has no chat template, "
                                     "so each message continues one document")
        sep = "" if not shown else ("\n" if shown.endswith("\n") else "\n\n")
        return TokenSpan(MESSAGE, -1, -1, -1, f"{sep}You: {text}\n",
                         lambda: f"your message of turn {turn} (the chat template's tokens around "
                                 "it are hidden: <i>show template</i> shows them)")

    def _earlier_reply(self, session, turn: int) -> list["TokenSpan"]:
        """An earlier turn's reply, from its own rounds and vocabulary (its rounds are not
        this session's: they take no round number)."""
        vocab, history = self._vocab, self._history
        self._vocab, self._history, self._stream = session.vocab, [], TokenText()
        try:
            pieces = [p for ev in session.run.events for p in self._round_pieces(ev)]
        finally:
            self._vocab, self._history = vocab, history
        return [replace(p, round=-1) for p in pieces]

    def begin(self, prompt: str, vocab, prompt_tokens=()) -> None:
        """A new run: show the prompt (its tokens, when given), remember the vocabulary."""
        self.clear_tokens()
        self._vocab = vocab
        self._prompt = prompt
        if not prompt_tokens:
            self._append([TokenSpan(PROMPT, -1, -1, -1, prompt, lambda: "the prompt")])
            return
        pieces = []
        n = len(prompt_tokens)
        self._history.extend(prompt_tokens)
        for i, tok in enumerate(prompt_tokens):
            text, joined = self._stream.feed(tok, vocab.piece(tok))
            if i == 0 and text and not prompt.startswith(text):     # not typed: llama.cpp's BOS
                pieces.append(TokenSpan(PROMPT, tok, -1, i, BOS_MARK,
                                        partial(self._describe_bos, n, tok)))
                continue
            pieces.append(TokenSpan(PROMPT, tok, -1, i, text,
                                    partial(self._describe_prompt, i, n, tok, (joined, text[:1]))))
        self._append(pieces)

    @property
    def history(self) -> list[int]:
        """The token at each position: the prompt's, then every emitted one."""
        return self._history

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
        """The text an emitted token shows, and the earlier tokens its first character joins
        (an end of generation shows as a mark and adds nothing to the text)."""
        if self._vocab.is_eog(token):
            return "⟨end of text⟩", ()
        return self._stream.feed(token, self._vocab.piece(token))

    def _piece_text(self, token: int) -> str:
        """A token shown on its own (in a tooltip): its text, or its bytes where they make none."""
        piece = self._vocab.piece(token)
        try:
            return piece.decode("utf-8")
        except UnicodeDecodeError:
            return hex_bytes(piece)

    def _round_pieces(self, ev) -> list[TokenSpan]:
        out = []
        k, a = len(ev.drafted), ev.n_accepted
        pos0 = ev.n_past + len(ev.replayed) + 1      # position of emitted[0]
        drafter = (ev.drafter or DRAFT_MODEL) if ev.drafted else ""
        self._history.extend(ev.emitted)
        for i, tok in enumerate(ev.emitted):
            if i < a and ev.drafted:
                text, joined = self._text(tok)
                out.append(TokenSpan(ACCEPTED, tok, ev.index, pos0 + i, text,
                                 partial(self._describe, ev, ACCEPTED, i, (joined, text[:1])),
                                 drafter, ev))
                continue
            # the target's own token: replacement, bonus, or a plain/baseline token;
            # the rejected drafted tokens come first, struck through, each with its share
            # of the text they would have made after what was accepted (an end of generation
            # that was drafted too is not a rejection: ``RoundEvent.eog_ends_draft``)
            first = a + ev.eog_ends_draft
            rejected = ev.drafted[first:k] if ev.drafted else ()
            labels = (shares([self._vocab.piece(t) for t in rejected], self._stream.pending)
                      if rejected else ())
            for j, (tok_j, label) in enumerate(zip(rejected, labels), start=first):
                kind = REJECTED if j == a else UNCHECKED
                out.append(TokenSpan(kind, tok_j, ev.index, pos0 + j, visible(label),
                                 partial(self._describe, ev, kind, j), drafter, ev))
            text, joined = self._text(tok)
            out.append(TokenSpan(TARGET, tok, ev.index, pos0 + i, text,
                                 partial(self._describe, ev, TARGET, i, (joined, text[:1])), "", ev))
        return out

    def _describe_prompt(self, i: int, n: int, token: int, split=((), "")) -> str:
        return f"<b>prompt</b> token {i + 1} of {n}, position {i}" + self._tok_line(token, split)

    def _describe_bos(self, n: int, token: int) -> str:
        return (f"<b>prompt</b> token 1 of {n}, position 0: the start-of-text token (BOS) that "
                "llama.cpp puts before the prompt for this vocabulary" + self._tok_line(token))

    def _describe(self, ev, kind: str, i: int, split=((), "")) -> str:
        """``split``: (earlier tokens, character) when this token completes a character
        whose first bytes those tokens held."""
        """A token's tooltip (HTML), written when it is first hovered: ``i`` indexes
        ``ev.emitted`` (accepted, target) or ``ev.drafted`` (rejected, unchecked)."""
        k, a = len(ev.drafted), ev.n_accepted
        pos = ev.n_past + len(ev.replayed) + 1 + i
        head = f"<b>round {ev.index + 1}</b>, position {pos}<br>"
        p = ev.draft_probs[i] if kind != TARGET and i < len(ev.draft_probs) else None
        by = f"by {drafter_html(ev.drafter)} " if ev.drafted else ""
        if kind == ACCEPTED:
            tok = ev.emitted[i]
            tip = head + f"drafted {by}at draft position {i + 1}, accepted" + (
                f"<br>draft probability {p:.3f}" if p is not None else "") + self._why(ev, i)
            if ev.discarded and i == len(ev.emitted) - 1:
                tip += (f"<br>generation ends here: the token the target sampled after it, "
                        f"<code>{self._esc(ev.discarded[0])}</code>, is not output")
        elif kind in (REJECTED, UNCHECKED):
            tok = ev.drafted[i]
            ptxt = f"draft probability {p:.3f}<br>" if p is not None else ""
            if kind == REJECTED and ev.synthetic and self._vocab.is_eog(tok):
                tip = head + (f"drafted {by}at draft position {i + 1}, <b>not kept</b>: synthetic "
                              "acceptance never keeps a drafted end of generation (llama-server's "
                              f"rule)<br>{ptxt}")
            elif kind == REJECTED:
                tip = head + (f"drafted {by}at draft position {i + 1}, <b>rejected</b>: the target "
                              f"sampled <code>{self._esc(ev.emitted[a])}</code> instead<br>{ptxt}")
            elif ev.eog_ends_draft:
                tip = head + (f"drafted {by}at draft position {i + 1}; never checked (it follows "
                              f"the end of generation)<br>{ptxt}")
            else:
                tip = head + (f"drafted {by}at draft position {i + 1}; never checked (it follows "
                              f"the first mismatch)<br>{ptxt}")
            tip += self._why(ev, i)
        else:
            tok = ev.emitted[i]
            if ev.eog_ends_draft:
                tip = head + (f"<b>end of generation</b>, drafted {by}at draft position {a + 1} and "
                              "sampled by the target too; llama.cpp keeps no drafted token after "
                              "an end of generation (it would stay in the context), so the round "
                              "ends here and counts it as the target's own token, not as accepted")
            elif ev.drafted and a < k:
                d = ev.drafted[a]
                pd = f" (q {ev.draft_probs[a]:.3f})" if a < len(ev.draft_probs) else ""
                tip = head + (f"<b>replacement</b>: the target's own token at the first mismatch<br>"
                              f"{drafter_html(ev.drafter)} had proposed "
                              f"<code>{self._esc(d)}</code>{pd}")
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
                       "budget": "no room left to draft",
                       "no match": "no n-gram drafter found a match"}.get(ev.draft_stop, "no draft")
                tip = head + f"target token, no draft this round ({why})"
        return tip + self._tok_line(tok, split)

    def _why(self, ev, i: int) -> str:
        """For an n-gram draft's i-th token: why it matched, and where it was copied from
        (the same colours as the hover's highlight)."""
        m = ev.ngram
        if not ev.draft_note and m is None:
            return ""
        def tag(colors, text):
            return f"<span style='background:{colors[1]}; color:{colors[0]}'>&nbsp;{text}&nbsp;</span>"
        lines = [html.escape(ev.draft_note)] if ev.draft_note else []
        if ev.xvocab:                             # another vocabulary: its pieces against ours
            lines.append(translation_html(ev, [self._piece_text(t) for t in ev.drafted], i))
        if i < len(ev.head_ids):                  # an EAGLE-3 head's reduced vocabulary
            lines.append(f"the head's draft id {ev.head_ids[i]} → target id {ev.drafted[i]} (d2t)")
        if spec_type(ev.drafter).block:           # a DFlash head's block, drafted at once
            before = ev.drafted[i - 1] if i else ev.seed
            lines.append(f"block position {i + 1}: its logits came with the others' from that "
                         "one decode" + (f", biased by the Markov head by the token drafted before "
                            f"it, <code>{self._esc(before)}</code>{'' if i else ' (the seed)'}"
                            if spec_type(ev.drafter).markov else ""))
        if m is not None and m.key >= 0 and m.key_len:
            lo, n = m.key, m.key_len
            now = ev.n_past - n + 1
            lines.append(f"{tag(MATCH_COLORS, 'matched n-gram')} positions {lo}–{lo + n - 1} "
                         f"<code>{self._span_text(lo, lo + n)}</code>, the same as the latest "
                         f"{n} tokens (positions {now}–{ev.n_past})")
        if m is not None and m.source >= 0:
            lo, k, src = m.source, len(ev.drafted), m.source + i
            lines.append(f"{tag(SOURCE_COLORS, 'copied from')} positions {lo}–{lo + k - 1} "
                         f"<code>{self._span_text(lo, lo + k)}</code>; this token from "
                         f"{tag(COPIED_COLORS, f'position {src}')} <code>{self._span_text(src, src + 1)}</code>")
        return "<br><i>why:</i> " + "<br>".join(lines)

    def _span_text(self, lo: int, hi: int) -> str:
        """The text of the tokens at positions [lo, hi), escaped, whitespace made visible."""
        toks = self._history[max(lo, 0):hi]
        return html.escape(visible("".join(self._piece_text(t) for t in toks))) or "&nbsp;"

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
    def _append(self, pieces: list[TokenSpan], record: bool = True) -> None:
        if not pieces:
            return
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        formats = self._formats()
        for p in pieces:
            if record:
                self._pieces.append(p)
                if p.kind in (ACCEPTED, TARGET) and p.round >= 0 and p.text \
                        and not self._vocab.is_eog(p.token):
                    self._generated.append(p.text)
            self._insert(cursor, p, formats)
        cursor.endEditBlock()
        if at_end:
            bar.setValue(bar.maximum())

    def _formats(self) -> tuple[dict, dict]:
        """(kind -> format, drafter -> an accepted token's format) in the palette in use now
        (View ▸ Colour-blind safe palette switches it at any time), made once per palette."""
        name = active_name()
        if name not in self._styles:
            self._styles[name] = ({k: char_format(k) for k in COLORS},
                                  {t: char_format(ACCEPTED, drafter=t) for t in TYPES})
        return self._styles[name]

    def _insert(self, cursor: QTextCursor, p: TokenSpan, formats: tuple[dict, dict]) -> None:
        if p.kind in (REJECTED, UNCHECKED) and not self._show_rejected:
            p.start = p.end = -1
            return
        p.start = start = cursor.position()
        if p.text:
            text = p.text
            if p.kind in (ACCEPTED, TARGET) and "\n" in text:
                text = text.replace("\n", "↵\n")      # a line break shows whose token it was
            kinds, drafters = formats
            fmt = drafters.get(p.drafter) if p.kind == ACCEPTED else None
            cursor.insertText(text, fmt or kinds[p.kind])
            p.end = cursor.position()
        else:
            p.end = start
        self.spans.append(p)
        self._starts.append(start)
        if p.kind in (PROMPT, ACCEPTED, TARGET) and p.position >= 0:
            self._pos_span[p.position] = p

    def _rebuild(self) -> None:
        self.clear()
        self.spans.clear()
        self._starts.clear()
        self._pos_span.clear()
        self.highlight(None)
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
            self.round_hovered.emit(span.round if span is not None else -1)
            if span is not None and (span.kind != PROMPT or span.token >= 0):
                self.highlight(span)
                QToolTip.showText(event.globalPos(), span.tooltip, self.viewport())
            else:
                self.highlight(None)
                QToolTip.hideText()
            return True
        if obj is self.viewport() and event.type() == QEvent.Type.Leave:
            self.highlight(None)
            self.round_hovered.emit(-1)
        return False

    def highlight(self, span: TokenSpan | None) -> None:
        """Hovering a token an n-gram drafter proposed: mark the n-gram that matched (earlier
        and now) and the tokens the draft was copied from, the hovered one's source darker."""
        ev = span.event if span is not None and span.kind != TARGET else None
        m = ev.ngram if ev is not None else None
        if m is None:
            if self.highlighted is not None:
                self.highlighted = None
                self.setExtraSelections([])
            return
        if span is self.highlighted:
            return
        self.highlighted = span
        i = span.position - (ev.n_past + len(ev.replayed) + 1)     # its index in the draft
        marks: list[tuple[int, tuple[str, str]]] = []
        if m.key >= 0 and m.key_len:
            now = ev.n_past - m.key_len + 1            # the latest n-gram ends with the seed
            for lo in (m.key, now):
                marks += [(p, MATCH_COLORS) for p in range(lo, lo + m.key_len)]
        if m.source >= 0:
            marks += [(p, SOURCE_COLORS) for p in range(m.source, m.source + len(ev.drafted))]
            marks.append((m.source + i, COPIED_COLORS))
        selections = []
        for pos, (fg, bg) in marks:
            s = self._pos_span.get(pos)
            if s is None or s.end <= s.start:
                continue
            sel = QTextEdit.ExtraSelection()
            cursor = QTextCursor(self.document())
            cursor.setPosition(s.start)
            cursor.setPosition(s.end, QTextCursor.MoveMode.KeepAnchor)
            sel.cursor = cursor
            sel.format.setBackground(QColor(bg))
            sel.format.setForeground(QColor(fg))
            selections.append(sel)
        self.setExtraSelections(selections)

    def select_round(self, index: int) -> bool:
        """Select round ``index``'s tokens in the text (a timeline bar was clicked) and scroll
        to them; False when the round shows no tokens."""
        spans = [s for s in self.spans if s.round == index]
        if not spans:
            return False
        cursor = QTextCursor(self.document())
        cursor.setPosition(min(s.start for s in spans))
        cursor.setPosition(max(s.end for s in spans), QTextCursor.MoveMode.KeepAnchor)
        self.setTextCursor(cursor)
        self.ensureCursorVisible()
        return True

    def highlighted_positions(self) -> dict[int, str]:
        """Position -> background colour of what the hover highlights now (for tests)."""
        by_start = {s.start: s.position for s in self._pos_span.values()}
        return {by_start.get(sel.cursor.selectionStart(), -1): sel.format.background().color().name()
                for sel in self.extraSelections()}


def expected_kinds(events) -> list[tuple[str, int, int]]:
    """(kind, token, round) of the spans the view shows for ``events``, in order: the
    accepted drafted tokens, the rejected one and those after it, then the target's token."""
    out = []
    for ev in events:
        a, k = ev.n_accepted, len(ev.drafted)
        if ev.drafted:
            out += [(ACCEPTED, t, ev.index) for t in ev.emitted[:a]]
            if a < k and not ev.eog_ends_draft:
                out.append((REJECTED, ev.drafted[a], ev.index))
            out += [(UNCHECKED, t, ev.index) for t in ev.drafted[a + 1:]]
        if ev.own is not None:
            out.append((TARGET, ev.own, ev.index))
    return out
