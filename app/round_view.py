"""One round, explained in words and a small picture (step mode).

The picture has one column per KV position from ``n_past`` (the seed) to
one past the last drafted token, and four rows:

    position   n_past   n_past+1 ...
    draft      seed     d0 (p)   d1 (p) ...       what went into the verification batch
    target     -        sample0  sample1 ...      the target's sample for that slot (✓ / ✗ / bonus)
    KV cache   kept     kept     dropped ...      rows each cache holds after the round

An EAGLE-3 head's drafted tokens show their probability and their id in the head's reduced
vocabulary beside the target id its d2t table maps it to ("p 0.83 · 17→1234"); the words say
what fed it, and for draft-mtp what the target's MTP block read (the token at p and the
target's hidden state at p - 1) and which block of a chain drafted which token.
Tokens show the text they make, read along their row (core/models/tokentext.py): a
character split over tokens appears on each of them with its share, "中 (1/3)".
Hovering a token cell shows its id and its piece as the vocabulary writes it.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QLabel, QScrollArea, QSizePolicy, QToolTip, QVBoxLayout, QWidget

from specscope.core.engine.drafters import DESCRIPTIONS, TYPES, spec_type
from specscope.core.engine.drafters.registry import LOOKUP, MODEL, SELF, TARGET as OWN_LAYERS
from specscope.core.models.tokentext import shares

from . import shape_words, tree_view
from .glossary import term
from .drafter_style import drafter_colors, drafter_html, drafter_who
from .token_view import COLORS, REJECTED, TARGET, UNCHECKED, translation_html, visible

CELL_W, CELL_H, LABEL_W, GAP = 92, 40, 124, 6
ZOOM = [1.0]           # the round picture's scale (presenter mode's; RoundDiagram.zoom)
DIAGRAM_MIN_PX = 110      # the round's diagram scrolls below this height (a 600-pixel screen)
ROWS = ("position", "batch / draft", "target samples", "target KV after")


def cache_owner(name: str) -> str:
    """Whose cache a model drafter's rows live in, in words ("the EAGLE-3 head's")."""
    t = spec_type(name)
    if t.source == MODEL:
        return "the draft"
    return f"the {t.who[1] if t.cache == 'head' else t.cache}'s"


def labels(tokens, vocab) -> list[str]:
    """What each token of a row shows: the text it makes read along the row (a split
    character's share included), ⟨end⟩ for an end-of-generation token."""
    texts = shares([b"" if vocab.is_eog(t) else vocab.piece(t) for t in tokens])
    return ["⟨end⟩" if vocab.is_eog(t) else x for t, x in zip(tokens, texts)]


def round_labels(ev, vocab) -> tuple[list[str], list[str]]:
    """(verification batch, emitted) labels of a round. Tokens are read along what the round
    kept (seed, replayed, emitted), so an accepted drafted token and its sample show the same;
    drafted tokens from the first rejection on are read along the draft."""
    r, a = 1 + len(ev.replayed), ev.n_accepted
    kept = labels([ev.seed, *ev.replayed, *ev.emitted], vocab)
    drafted = labels([ev.seed, *ev.replayed, *ev.drafted], vocab)
    return kept[:r + a] + drafted[r + a:], kept[r:]


def token_tooltip(token: int, vocab) -> str:
    """Hovering a token: its id and its piece as the vocabulary writes it."""
    return f"token {token} · vocabulary piece <code>{html.escape(vocab.text(token))}</code>"


def token_text(text: str) -> str:
    """A token's text as step mode writes it, in the picture and in the words alike: line
    breaks, tabs and returns as ↵ ⇥ ␍, and the spaces of a token of whitespace alone as ␣ (an
    HTML paragraph would swallow them)."""
    return visible(text.replace(" ", "␣") if text.strip() == "" else text)


def short(text: str, n: int = 10) -> str:
    text = token_text(text) or "␣"
    return text if len(text) <= n else text[: n - 1] + "…"


class RoundDiagram(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self._ev = None
        self._vocab = None
        self._cells: list[tuple[QRectF, int]] = []     # painted token cells, for tooltips
        self._terms: list[tuple[QRectF, str]] = []     # painted step-mode words, for tooltips
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def show_round(self, ev, vocab) -> None:
        self._ev, self._vocab = ev, vocab
        self.rezoom()

    @staticmethod
    def zoom() -> float:
        """The picture's scale: presenter mode's (app/presenter.py sets ZOOM), 1 otherwise. The
        whole picture is drawn at it, cells and type alike, so a larger type never overflows a cell."""
        return ZOOM[0]

    def rezoom(self) -> None:
        """Take a new size (a round shown, or presenter mode's scale changed)."""
        self.updateGeometry()
        self.setMinimumWidth(self.sizeHint().width())
        self.update()

    def clear(self) -> None:
        self._ev = None
        self._cells = []
        self.update()

    def token_at(self, point: QPointF) -> int | None:
        point = point / self.zoom()
        return next((tok for rect, tok in self._cells if rect.contains(point)), None)

    def term_at(self, point: QPointF) -> str:
        """The plain words for the step-mode term under ``point`` (a row's name, a cell's small
        print: app/glossary.py), or ""."""
        point = point / self.zoom()
        return next((words for rect, words in self._terms if rect.contains(point)), "")

    def tooltip_at(self, point: QPointF) -> str:
        """A token's id and piece (and, for a tree, the branches holding it), with the words for
        the term it is shown with; a term alone over a row's name."""
        tok, words = self.token_at(point), self.term_at(point)
        tip = ""
        if tok is not None and self._vocab is not None:
            tip = (tree_view.node_tooltip(self._ev, tok, self._vocab) if self._ev.tree
                   else token_tooltip(tok, self._vocab))
        if words:
            tip += ("<br><br>" if tip else "") + html.escape(words)
        return tip

    def event(self, event) -> bool:  # noqa: D401 - Qt override
        if event.type() == QEvent.Type.ToolTip:
            tip = self.tooltip_at(QPointF(event.pos()))
            if tip:
                QToolTip.showText(event.globalPos(), tip, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)

    def _n_cols(self) -> int:
        if self._ev is None:
            return 0
        if self._ev.tree is not None:
            return tree_view.columns(self._ev)
        return len(self._ev.replayed) + len(self._ev.drafted) + 2

    def sizeHint(self) -> QSize:  # noqa: N802
        height = (tree_view.height(self._ev, GAP) if self._ev is not None and self._ev.tree
                  else len(ROWS) * (CELL_H + GAP) + GAP)
        k = self.zoom()
        return QSize(round((LABEL_W + max(self._n_cols(), 5) * (CELL_W + GAP) + 270) * k), round(height * k))

    def paintEvent(self, _event) -> None:  # noqa: N802
        c = _Cells(self)
        if self._ev is not None and self._ev.tree is not None:     # a tree's round
            tree_view.paint_tree(c, self._ev, lambda t: short(self._vocab.piece(t).decode("utf-8", "replace")),
                                 LABEL_W, CELL_W, CELL_H, GAP)
            c.p.end()
            self._cells, self._terms = c.cells, c.terms
            return
        for r, name in enumerate(ROWS):
            c.p.setPen(QColor("#444444"))
            label = QRectF(4, GAP + r * (CELL_H + GAP), LABEL_W - 8, CELL_H)
            c.p.drawText(label, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, name)
            c.terms.append((label, term(name)))
        ev = self._ev
        if ev is None:
            c.p.setPen(QColor("#888888"))
            c.p.drawText(QRectF(LABEL_W, 0, self.width() / c.zoom - LABEL_W, self.height() / c.zoom),
                         Qt.AlignmentFlag.AlignCenter, "Press Step (F10) to run one round")
            c.p.end()
            self._cells, self._terms = [], c.terms
            return
        batch_text, emitted_text = ([short(x) for x in row] for row in round_labels(ev, self._vocab))
        n_cols = 2 + len(ev.replayed) + len(ev.drafted)
        for col in range(n_cols):        # (a run that teaches: the entropy H of that batch row)
            c.cell(col, 0, f"{ev.n_past + col}" + ("  n_past" if col == 0 else ""), bg="#ffffff",
                   sub=f"H {ev.entropy[col]:.1f} bits" if col < len(ev.entropy) else None)
        self._paint_batch(c, ev, batch_text)
        self._paint_samples(c, ev, emitted_text)
        self._paint_kv(c, ev, n_cols)
        if ev.mode != "baseline":
            self._paint_notes(c, ev, LABEL_W + n_cols * (CELL_W + GAP) + 8)
        c.p.end()
        self._cells, self._terms = c.cells, c.terms

    @staticmethod
    def _paint_batch(c: "_Cells", ev, batch_text: list[str]) -> None:
        """Row 1: what went into the verification batch."""
        c.cell(0, 1, batch_text[0], sub="seed (id_last)", bg="#ececec", border="#888888", token=ev.seed)
        for i, t in enumerate(ev.replayed):
            c.cell(1 + i, 1, batch_text[1 + i], sub="replayed", bg="#ececec", token=t)
        off, a = 1 + len(ev.replayed), ev.n_accepted
        ends = ev.eog_ends_draft              # drafted ⟨end⟩, sampled too: the round stops there
        for i, t in enumerate(ev.drafted):
            prob = (f"p {ev.draft_probs[i]:.2f}" if i < len(ev.draft_probs) else
                    f"from pos {ev.ngram.source + i}" if ev.ngram and ev.ngram.source >= 0 else
                    "translated" if ev.xvocab and ev.xvocab.mode == "translate" else "drafted")
            if i < len(ev.target_p):                     # a run that teaches: q (the draft's) and p
                prob = (f"q {ev.draft_probs[i]:.2f} · " if i < len(ev.draft_probs) else "") + \
                    f"p {ev.target_p[i]:.2f}"
            if i < len(ev.head_ids):                      # an EAGLE-3 head: its id → the target's
                prob += f" · {ev.head_ids[i]}→{t}"
            if i < a:
                fg, bg = drafter_colors(ev.drafter)[:2]   # as the token view shows them
            elif i == a and ends:
                fg, bg = COLORS[TARGET]
            elif i == a:
                fg, bg = COLORS[REJECTED]
            else:
                fg, bg = COLORS[UNCHECKED][0], "#f7efee"
            c.cell(off + i, 1, batch_text[off + i], fg=fg, bg=bg, sub=prob,
                   strike=i > a or (i == a and not ends), token=t)

    def _paint_samples(self, c: "_Cells", ev, emitted_text: list[str]) -> None:
        """Row 2: the target's samples, one per batch row, written in the slot they predict."""
        off, a, drafted = 1 + len(ev.replayed), ev.n_accepted, bool(ev.drafted)
        for i, t in enumerate(ev.emitted):
            col, (fg, bg) = off + i, COLORS[TARGET]
            if i < a:
                fg, bg = drafter_colors(ev.drafter)[:2]
                c.cell(col, 2, emitted_text[i], fg=fg, bg=bg, sub="✓ same", token=t)
            elif drafted and i == a and ev.eog_ends_draft:
                c.cell(col, 2, emitted_text[i], fg=fg, bg=bg, sub="same: the end", token=t)
            elif drafted and i == a and a < len(ev.drafted):
                c.cell(col, 2, emitted_text[i], fg=fg, bg=bg, sub="✗ replacement",
                       border=COLORS[REJECTED][0], token=t)
            else:
                c.cell(col, 2, emitted_text[i], fg=fg, bg=bg, sub="bonus" if drafted else "target", token=t)
        for i, t in enumerate(ev.discarded):     # sampled after the end of generation: not output
            c.cell(off + len(ev.emitted) + i, 2, short(self._vocab.piece(t).decode("utf-8", "replace")),
                   fg=COLORS[UNCHECKED][0], bg="#ffffff", sub="not output", strike=True, token=t)

    @staticmethod
    def _paint_kv(c: "_Cells", ev, n_cols: int) -> None:
        """Row 3: the KV rows after the round."""
        n_batch, n_after = 1 + len(ev.replayed) + len(ev.drafted), ev.n_past_after
        for col in range(n_cols):
            pos = ev.n_past + col
            if col < n_batch:
                if pos < n_after:
                    c.cell(col, 3, "kept", fg="#333333", bg="#e8e8e8")
                elif pos == n_after and ev.mode != "checkpoint":
                    c.cell(col, 3, "dropped", fg=COLORS[REJECTED][0], bg="#ffffff",
                           sub="next seed here", border=COLORS[TARGET][0])
                else:
                    c.cell(col, 3, "dropped", fg=COLORS[REJECTED][0], bg="#ffffff")
            elif pos == n_after:
                c.cell(col, 3, "next seed", fg=COLORS[TARGET][0], bg="#ffffff", border=COLORS[TARGET][0])

    @staticmethod
    def _paint_notes(c: "_Cells", ev, x: float) -> None:
        """Beside the rows: who drafted and what its p means, and the rows each cache dropped."""
        p, left = c.p, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft
        p.setFont(c.small)
        p.setPen(QColor("#444444"))
        drafter = spec_type(ev.drafter)
        if drafter.p_note and ev.drafted:
            p.drawText(QRectF(x, GAP + CELL_H + GAP, 220, CELL_H), left,
                       f"drafted by {drafter_who(ev.drafter)}\n{drafter.p_note}")
        elif ev.xvocab and ev.drafted:               # another vocabulary: how many became how many
            own = "│".join(short(x, 6) for x in ev.xvocab.text)
            p.drawText(QRectF(x, GAP + CELL_H + GAP, 260, CELL_H), left,
                       f"{ev.xvocab.mode}: the draft's {len(ev.xvocab.own)} → {len(ev.drafted)} "
                       f"target tokens\n{own}")
        p.drawText(QRectF(x, GAP + 3 * (CELL_H + GAP), 220, CELL_H), left,
                   f"target dropped {ev.kv_dropped_target} row{'s' if ev.kv_dropped_target != 1 else ''}\n"
                   f"{drafter.cache or 'draft'} dropped {ev.kv_dropped_draft} "
                   f"row{'s' if ev.kv_dropped_draft != 1 else ''}")


class _Cells:
    """One paint of the round picture: its painter, fonts, and the cells drawn with a token
    (for the hover)."""

    def __init__(self, widget: QWidget):
        self.p = QPainter(widget)
        self.p.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.p.fillRect(widget.rect(), QColor("#ffffff"))
        self.zoom = RoundDiagram.zoom()
        self.p.scale(self.zoom, self.zoom)            # (the widget's type is already that large)
        self.font = QFont(widget.font())
        if self.font.pointSizeF() > 0:
            self.font.setPointSizeF(self.font.pointSizeF() / self.zoom)
        elif self.font.pixelSize() > 0:
            self.font.setPixelSize(max(1, round(self.font.pixelSize() / self.zoom)))
        self.small = QFont(self.font)
        self.small.setPointSizeF(max(7.0, self.font.pointSizeF() - 1.5))
        self.p.setFont(self.font)
        self.cells: list[tuple[QRectF, int]] = []
        self.terms: list[tuple[QRectF, str]] = []     # where a word of step mode is, and its words

    def cell(self, col, row, text, fg="#222222", bg="#f2f2f2", sub=None, strike=False, border=None,
             token=None, rect: QRectF | None = None) -> None:
        """A cell at (col, row) of the grid, or at ``rect``."""
        p = self.p
        rect = rect or QRectF(LABEL_W + col * (CELL_W + GAP), GAP + row * (CELL_H + GAP), CELL_W, CELL_H)
        if token is not None:
            self.cells.append((rect, token))
        words = " ".join(w for w in dict.fromkeys((term(text), term(sub or ""))) if w)
        if words:
            self.terms.append((rect, words))
        p.setPen(QPen(QColor(border or "#d0d0d0"), 1.5 if border else 1))
        p.setBrush(QColor(bg))
        p.drawRoundedRect(rect, 5, 5)
        f = QFont(self.font)
        f.setStrikeOut(strike)
        p.setFont(f)
        p.setPen(QColor(fg))
        if sub:
            h = rect.height()
            p.drawText(rect.adjusted(2, 2, -2, -h / 2 + 2), Qt.AlignmentFlag.AlignCenter, text)
            p.setFont(self.small)
            p.setPen(QColor("#555555"))
            p.drawText(rect.adjusted(2, h / 2 - 1, -2, -2), Qt.AlignmentFlag.AlignCenter, sub)
        else:
            p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


class RoundExplainer(QWidget):
    """The latest round in words, with the diagram above."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.diagram = RoundDiagram()
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # the diagram scrolls sideways on its own; the words wrap at the visible width
        self.diagram_scroll = QScrollArea()
        self.diagram_scroll.setWidgetResizable(True)
        self.diagram_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.diagram_scroll.setWidget(self.diagram)
        # its whole height where there is room; on a short screen (600 pixels) it scrolls
        self.fit_diagram()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        lay = QVBoxLayout(inner)
        lay.setContentsMargins(9, 4, 9, 9)
        lay.addWidget(self.text, 1)
        scroll.setWidget(inner)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(self.diagram_scroll)
        outer.addWidget(scroll, 1)
        self.shown_event = None         # the round shown ("event" is QWidget.event)
        self.clear()

    def clear(self) -> None:
        self.shown_event = None
        self.diagram.clear()
        self.text.setText("<p style='color:#666'>Step mode runs one round per press of <b>Step</b> "
                          "(F10) and explains it here: the seed token, the draft, the verification "
                          "batch, the first mismatch, the KV rows each cache dropped and the next "
                          "seed. During a free run this shows the latest round.</p>")

    def show_round(self, ev, vocab, history=(), types=()) -> None:
        """``history``: the token at each position so far (the prompt's, then the emitted
        ones), to quote the n-gram an n-gram drafter matched; ``types``: the run's chain."""
        self.shown_event = ev
        self.diagram.show_round(ev, vocab)
        self.fit_diagram()
        self.text.setText(explain(ev, vocab, history, types))

    def fit_diagram(self) -> None:
        """The picture's whole height where there is room (on a short screen it scrolls); in
        presenter mode all of it, the words below scrolling instead (a projector's screen is
        at least 720 pixels tall)."""
        h = self.diagram.sizeHint().height() + self.diagram_scroll.horizontalScrollBar().sizeHint().height()
        self.diagram_scroll.setMaximumHeight(h)
        self.diagram_scroll.setMinimumHeight(h if self.diagram.zoom() > 1 else DIAGRAM_MIN_PX)

    def rezoom(self) -> None:
        """Presenter mode's scale changed: the picture takes its new size."""
        self.diagram.rezoom()
        self.fit_diagram()


def chain_words(ev, types) -> str:
    """In a chain: which drafters came up empty before the winner, and which were not asked."""
    if len(types) < 2 or not ev.drafted or ev.drafter not in types:
        return ""
    i = types.index(ev.drafter)
    empty, unasked = types[:i], types[i + 1:]
    words = "The chain tries " + ", then ".join(types) + ": "
    if empty:
        words += f"{', '.join(empty)} had no draft, so {ev.drafter}'s was the first non-empty one"
    else:
        words += f"{ev.drafter} comes first and had a draft"
    if unasked:
        words += f"; {', '.join(unasked)} {'was' if len(unasked) == 1 else 'were'} not asked"
    return f"<br><span style='color:#555'>{html.escape(words, quote=False)}.</span>"


def _quote(history, lo: int, hi: int, vocab) -> str:
    """The text of positions [lo, hi) of ``history``, as code."""
    toks = list(history[max(lo, 0):hi])
    text = "".join(labels(toks, vocab)) if toks else ""
    return f"<code>{html.escape(visible(text)) or '&nbsp;'}</code>"


def ngram_draft_words(ev, vocab, history, drafted: str) -> str:
    """Step 1 for an n-gram drafter: which earlier n-gram matched where, and what it copied."""
    k, name = len(ev.drafted), ev.drafter
    text = (f"<b>1. Draft:</b> <b>{html.escape(name)}</b> ({html.escape(DESCRIPTIONS.get(name, ''))}) "
            f"proposed {k} token{'s' if k != 1 else ''} without a draft model")
    m = ev.ngram
    if m and m.key >= 0 and m.key_len:
        n, lo = m.key_len, m.key
        now = ev.n_past - n + 1
        text += (f": the latest {n} token{'s' if n != 1 else ''}, "
                 f"{_quote(history, now, ev.n_past + 1, vocab)} at positions {now}–{ev.n_past} "
                 f"(ending with the seed), occurred before at positions {lo}–{lo + n - 1}")
    if m and m.source >= 0:
        src = m.source
        text += (f"; it copied the {k} token{'s' if k != 1 else ''} that followed there, "
                 f"positions {src}–{src + k - 1}: {drafted}")
    else:
        text += f": {drafted}"
    text += f". ({ev.t_lookup * 1e3:.2f} ms of lookup)"
    if ev.draft_note and not m:                     # its own words, where ours had nothing to say
        text += f"<br><span style='color:#555'>{html.escape(name)}: {html.escape(ev.draft_note)}</span>"
    return text


def model_draft_words(ev, drafted: list[str], texts=()) -> str:
    """Step 1 for the draft model, an EAGLE-3 head or the target's MTP blocks: the tokens it
    proposed (``drafted``, as HTML; ``texts``, their texts), each with its probability (and the
    head's reduced-vocabulary id), and why it stopped; a draft of another vocabulary, its own
    pieces and the target's."""
    k = len(ev.drafted)
    why = {"n_max": "it reached n_max", "p_min": "the next token fell below p_min",
           "policy": f"it reached the draft-length policy's {ev.draft_limit} for this round"
                     if k == ev.draft_limit else "the cost policy judged one more token not worth "
                     "its cost here (calibrated costs, the draft's confidence)",
           "budget": "the per-round budget (context / n_predict) was reached",
           "eog": "it drafted an end-of-text token", "none": "the draft ended"}.get(
        ev.draft_stop, ev.draft_stop or "the draft ended")
    def prob(i: int, p: float) -> str:     # a run that teaches: the draft's q beside the target's p
        return f"q {p:.2f}, the target's p {ev.target_p[i]:.2f}" if i < len(ev.target_p) else f"p {p:.2f}"
    items = [f"draft id {ev.head_ids[i]} → target id {t} {text} ({prob(i, p)})" if i < len(ev.head_ids)
             else f"{text} ({prob(i, p)})"
             for i, (t, text, p) in enumerate(zip(ev.drafted, drafted, ev.draft_probs))]
    tokens = (f"{k} token{'s' if k != 1 else ''} greedily: {('; ' if ev.head_ids else ', ').join(items)}; "
              f"it stopped because {why}.")
    note = html.escape(ev.draft_note, quote=False)
    t = spec_type(ev.drafter)
    if t.head == "eagle3":
        fed = f"; {note}" if note else ""
        return (f"<b>1. Draft:</b> {drafter_html(ev.drafter)}, one layer beside the "
                f"target that drafts from the target's own hidden states, not a model of its own{fed}. "
                f"From the seed it proposed {tokens} ({ev.t_draft * 1e3:.1f} ms)")
    if t.block:
        markov = (" Its Markov head biased each position's logits, inside that decode, by the "
                  "token drafted before it (the first by the seed)." if t.markov else "")
        return (f"<b>1. Draft:</b> {drafter_html(ev.drafter)}, one layer beside the target that "
                f"drafts from the target's own hidden states, not a model of its own"
                f"{f' ({note})' if note else ''}. It decoded the seed at position {ev.n_past} "
                f"and mask tokens after it <b>together</b>, every position's logits read at once, "
                f"where the other drafters decode once per drafted token.{markov} It proposed "
                f"{tokens} ({ev.t_draft * 1e3:.1f} ms)")
    if t.source == OWN_LAYERS:
        p = ev.n_past
        return (f"<b>1. Draft:</b> {drafter_html(ev.drafter)}, a layer the target "
                f"carries for drafting, not a draft model{f' ({note})' if note else ''}. It read the "
                f"seed at position {p} with the target's last hidden state at position {p - 1} and "
                f"predicted the token at {p + 1}; each further step read the token just drafted "
                f"with the block's own hidden state of the step before. It proposed {tokens} "
                f"({ev.t_draft * 1e3:.1f} ms)")
    if ev.xvocab:
        probs = "" if ev.draft_probs else f"{k} token{'s' if k != 1 else ''}: {', '.join(drafted)}. "
        return (f"<b>1. Draft:</b> the draft model, whose vocabulary is not the target's, read the "
                f"target's text in its own tokens and drafted in its own vocabulary "
                f"({ev.t_draft * 1e3:.1f} ms); SpecScope turned that into target tokens "
                f"({ev.xvocab.mode} mode, {ev.t_translate * 1e3:.2f} ms translating), which the "
                f"target verifies as usual. {probs if ev.xvocab.mode == 'translate' else tokens}"
                f"<br>{translation_html(ev, list(texts))}")
    return (f"<b>1. Draft:</b> the draft model decoded the seed and proposed {tokens} "
            f"({ev.t_draft * 1e3:.1f} ms)")


def _caches(ev, types) -> str:
    """The target's cache alone where nothing drafts with a model (a baseline, lookups, a window)."""
    alone = ev.mode == "baseline" or bool(types) and all(spec_type(t).source in (LOOKUP, SELF) for t in types)
    return "The target's cache" if alone else "Both caches"


def explain(ev, vocab, history=(), types=()) -> str:
    """The round in words (HTML). Tokens are read along the verification batch and along
    what was emitted, so a character split over tokens shows as its shares. ``history``
    (token per position) lets an n-gram draft quote the n-gram it matched."""
    batch_text, emitted_text = round_labels(ev, vocab)
    r = 1 + len(ev.replayed)                      # the drafted tokens' offset in the batch

    def tok(t, text):
        if vocab.is_eog(t):
            return "<code>⟨end of text⟩</code>"
        return f"<code>{html.escape(token_text(text) or ' ')}</code>"

    seed = tok(ev.seed, batch_text[0])
    own = tok(ev.emitted[-1], emitted_text[-1])   # the target's own token (or an accepted ⟨end⟩)
    n_past, k, a = ev.n_past, len(ev.drafted), ev.n_accepted
    origin = ("the prompt's last token, left out of the prefill" if ev.index == 0
              else "sampled last round")
    lines = [f"<b>Round {ev.index}</b> ({ev.mode}). {_caches(ev, types)} held positions 0–{n_past - 1}; "
             f"the seed <i>id_last</i> = {seed} (id {ev.seed}) sits at "
             f"<i>n_past</i> = {n_past}: "
             f"{origin}, not yet evaluated."]
    if ev.mode == "baseline":
        lines.append(f"<b>Target only:</b> the target decoded the seed and sampled {own}.")
    elif ev.replayed:
        replayed = " ".join(tok(t, x) for t, x in zip(ev.replayed, batch_text[1:r]))
        lines.append(f"<b>Replay:</b> a checkpoint restore last round left {len(ev.replayed)} decided "
                     f"tokens ({replayed}); the target re-verifies them in this batch instead of a "
                     "draft.")
    elif ev.shape is not None:                             # its own loop's words (shape_words)
        emitted = lambda t, i: tok(t, emitted_text[i])         # noqa: E731
        lines += shape_words.round_words(ev, emitted,
                                         lambda t: tok(t, vocab.piece(t).decode("utf-8", "replace")))
        lines.append(f"<b>Next:</b> id_last = {own} at n_past = {ev.n_past_after}." if not ev.finish
                     else f"<b>The run ended</b> ({ev.finish}).")
        return "".join(f"<p style='margin:2px 0 6px 0'>{ln}</p>" for ln in lines)
    elif k and ev.drafter and spec_type(ev.drafter).ngram:
        drafted = " ".join(tok(t, x) for t, x in zip(ev.drafted, batch_text[r:]))
        lines.append(ngram_draft_words(ev, vocab, history, drafted) + chain_words(ev, types))
    elif k:
        lines.append(model_draft_words(ev, [tok(t, x) for t, x in zip(ev.drafted, batch_text[r:])],
                                       batch_text[r:]) + chain_words(ev, types))
    else:
        why = {"n_min": f"the draft had {ev.dropped_draft} tokens, fewer than n_min, and was dropped",
               "budget": "there was no room left to draft",
               "p_min": "the first token's probability fell below p_min",
               "policy": "the cost policy dropped the draft's first token: by this machine's "
                         "calibrated costs it was not worth drafting (a calibration taken under "
                         "load can say so of every token: recalibrate)",
               "no match": "no n-gram drafter found the latest tokens earlier in the text"
               }.get(ev.draft_stop, "nothing was drafted")
        lines.append(f"<b>1. Draft:</b> none — {why}; this round is plain decoding.")
    if ev.mode != "baseline":
        batch = [ev.seed, *ev.replayed, *ev.drafted]
        shown = " ".join(tok(t, x) for t, x in zip(batch, batch_text))
        lines.append(f"<b>2. Verify:</b> the target decoded the batch [{shown}] "
                     f"at positions {n_past}–{n_past + len(batch) - 1} in one pass, with logits on every "
                     f"row, and sampled each row. ({ev.t_verify * 1e3:.1f} ms)")
        if k and a == k and ev.discarded:
            lines.append(f"<b>3. Result:</b> all {k} drafted tokens matched, the last of them {own}, "
                         f"the end of generation: the bonus token the target sampled after it, "
                         f"{tok(ev.discarded[0], vocab.piece(ev.discarded[0]).decode('utf-8', 'replace'))}, is not output "
                         f"(llama.cpp stops at the first end-of-generation token). Emitted "
                         f"{len(ev.emitted)} tokens.")
        elif k and a == k:
            lines.append(f"<b>3. Result:</b> all {k} drafted tokens matched; the target added the bonus "
                         f"token {own}. Emitted {len(ev.emitted)} tokens.")
        elif ev.eog_ends_draft:
            lines.append(f"<b>3. Result:</b> the target agreed with the first {a + 1} of the {k} "
                         f"drafted tokens, the last of them {own}, the end of generation. llama.cpp "
                         f"keeps no drafted token after an end of generation (it would stay in the "
                         f"context), so it counts {a} as accepted and {own} as the target's own "
                         f"token, and the run ends. Emitted {len(ev.emitted)} "
                         f"token{'s' if len(ev.emitted) != 1 else ''}.")
        elif k:
            who = html.escape(drafter_who(ev.drafter))
            lines.append(f"<b>3. Result:</b> the target agreed with {a} of the {k} drafted "
                         f"token{'s' if k != 1 else ''}; "
                         f"the first mismatch was at position {n_past + len(ev.replayed) + a + 1} "
                         f"(draft position {a + 1}): {who} proposed "
                         f"{tok(ev.drafted[a], batch_text[r + a])}, the "
                         f"target sampled {own}, which replaces it. Emitted {len(ev.emitted)} "
                         f"token{'s' if len(ev.emitted) != 1 else ''}.")
        else:
            lines.append(f"<b>3. Result:</b> the target emitted {own}.")
        owner = next((cache_owner(t) for t in types if not TYPES[t].ngram),
                     cache_owner("") if not types else None)
        draft_cache = f", {owner} cache {ev.kv_dropped_draft}" if owner else " (no draft model runs)"
        lines.append(f"<b>4. Roll back:</b> the target cache dropped {ev.kv_dropped_target} KV row"
                     f"{'s' if ev.kv_dropped_target != 1 else ''}{draft_cache}. "
                     f"({ev.t_sync * 1e3:.1f} ms sync)")
        if ev.mode == "checkpoint":
            lines.append("The target's memory cannot drop part of a sequence, so both caches were "
                         "restored to the checkpoint taken before verifying; the decided tokens are "
                         "replayed next round.")
    if ev.finish:
        lines.append(f"<b>The run ended</b> ({ev.finish}).")
    else:
        nxt = seed if ev.mode == "checkpoint" else own      # the next round's seed
        lines.append(f"<b>Next:</b> id_last = {nxt} at n_past = {ev.n_past_after}.")
    return "".join(f"<p style='margin:2px 0 6px 0'>{ln}</p>" for ln in lines)
