"""One round in a small picture (step mode), beside its words (app/round_words.py).

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

from specscope.core.engine.drafters import spec_type

from . import tree_view
from .glossary import term
from .drafter_style import drafter_colors, drafter_who
from .round_words import explain, round_labels, short, token_tooltip
from .token_view import COLORS, REJECTED, TARGET, UNCHECKED

CELL_W, CELL_H, LABEL_W, GAP = 92, 40, 124, 6
ZOOM = [1.0]           # the round picture's scale (presenter mode's; RoundDiagram.zoom)
DIAGRAM_MIN_PX = 110      # the round's diagram scrolls below this height (a 600-pixel screen)
PRESENTER_WHOLE = 0.37    # in presenter mode its minimum is its whole height up to this share of the screen's,
PRESENTER_SHARE = 0.22    # and this share where it must scroll anyway (the text and words keep theirs)
ROWS = ("position", "batch / draft", "target samples", "target KV after")


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
            prob = (f"q {ev.draft_probs[i]:.2f}" if i < len(ev.draft_probs) else
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
        p.setBrush(QColor(bg or "#f2f2f2"))     # a palette's token with no background: a plain cell
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

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.fit_diagram()

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().hideEvent(event)
        self.fit_diagram()

    def fit_diagram(self) -> None:
        """The picture's whole height where there is room (on a short screen it scrolls); in
        presenter mode all of it, the words below scrolling instead, up to PRESENTER_SHARE of
        the screen's height: a taller minimum made the window taller than a 720-pixel
        projector at 1.5x, and the text above it overlapped."""
        h = self.diagram.sizeHint().height() + self.diagram_scroll.horizontalScrollBar().sizeHint().height()
        self.diagram_scroll.setMaximumHeight(h)
        if self.diagram.zoom() > 1 and self.isVisible():   # another tab shown: no claim on the room
            screen = self.screen().availableGeometry().height()
            low = h if h <= PRESENTER_WHOLE * screen else max(DIAGRAM_MIN_PX, int(PRESENTER_SHARE * screen))
        else:
            low = DIAGRAM_MIN_PX
        self.diagram_scroll.setMinimumHeight(low)

    def rezoom(self) -> None:
        """Presenter mode's scale changed: the picture takes its new size."""
        self.diagram.rezoom()
        self.fit_diagram()
