"""A tree's round (llama-speculative's; a suffix tree's with -np > 1) in step mode: the token
tree and the round in words.

The picture has one column per position from the seed on, one row per branch and a row for the
target's samples:

    position     n_past   n_past+1   n_past+2 ...
    branch 0     seed ─── d0 (p) ─── d1 (p) ...      each branch's own tokens, from where it
    branch 1        └──── e0 (p) ─── e1 (p) ...      split off its parent (the line)
    target       -        sample     sample ...      ✓ the kept path, then the target's own

A token the target accepted has the drafter's colour; where the target took another token, the
branch's token there is struck through in red; a token after that point was never checked (grey).
Hovering a token shows its id, its piece, the draft's probability and the branches that hold it.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPen

from specscope.core.engine.drafters.registry import MODEL, spec_type

from .drafter_style import drafter_colors
from .token_view import COLORS, REJECTED, TARGET, UNCHECKED

ACCEPTED_NODE, REJECTED_NODE, UNCHECKED_NODE = "accepted", "rejected", "unchecked"


def by_model(ev) -> bool:
    """The round's tree was drafted by a draft model (llama-speculative's), not from counts."""
    return spec_type(ev.drafter).source == MODEL


def node_state(branch, depth: int, emitted, n_accepted: int) -> str:
    """Whether the target took the token at ``depth`` of ``branch`` (accepted), took another there
    (rejected), or never got there along this branch (unchecked)."""
    if list(branch[:depth]) != list(emitted[:depth]):
        return UNCHECKED_NODE
    if depth < n_accepted and branch[depth] == emitted[depth]:
        return ACCEPTED_NODE
    return REJECTED_NODE if depth <= n_accepted else UNCHECKED_NODE


POS_H, ROW_H = 22, 36      # the positions' row and each token row: a tree is taller than a chain


def rows(ev) -> int:
    """The picture's rows: the positions, one per branch, the target's samples."""
    return len(ev.tree.branches) + 2


def row_top(row: int, gap: float) -> float:
    return gap if row == 0 else gap + POS_H + gap + (row - 1) * (ROW_H + gap)


def height(ev, gap: float) -> int:
    return int(row_top(rows(ev), gap))


def columns(ev) -> int:
    return 2 + max((len(b) for b in ev.tree.branches), default=0)


def paint_tree(c, ev, short_of, label_w: float, cell_w: float, cell_h: float, gap: float) -> None:
    """Paint ``ev``'s tree with the round picture's cell painter ``c`` (round_view._Cells);
    ``short_of(token)``: a token's short text."""
    tree, p = ev.tree, c.p
    n_rows = rows(ev)

    def rect(col, row):
        return QRectF(label_w + col * (cell_w + gap), row_top(row, gap), cell_w, POS_H if row == 0 else ROW_H)

    def center(col, row, side):
        r = rect(col, row)
        return QPointF(r.left() if side < 0 else r.right(), r.center().y())

    names = ["position", *(f"branch {i}" + (" (kept)" if i == tree.kept else "")
                           for i in range(len(tree.branches))), "target samples"]
    for r, name in enumerate(names):
        p.setPen(QColor("#444444"))
        p.drawText(QRectF(4, row_top(r, gap), label_w - 8, POS_H if r == 0 else ROW_H),
                   Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, name)
    for col in range(columns(ev)):
        c.cell(col, 0, f"{ev.n_past + col}" + ("  n_past" if col == 0 else ""), bg="#ffffff",
               rect=rect(col, 0))
    c.cell(0, 1, short_of(ev.seed), sub="seed (root)", bg="#ececec", border="#888888", token=ev.seed,
           rect=rect(0, 1))
    accepted_fg, accepted_bg = drafter_colors(ev.drafter)[:2]

    for j, (start, parent) in enumerate(tree.origins()):
        branch, probs = tree.branches[j], tree.probs[j]
        row = 1 + j
        # the line from where it splits off: the parent's token before ``start`` (or the seed)
        p.setPen(QPen(QColor("#9a9a9a"), 1.4))
        src_row = 1 if parent < 0 or start == 0 else 1 + parent
        a, b = center(start, src_row, +1), center(start + 1, row, -1)
        if src_row == row:
            p.drawLine(a, b)
        else:
            mid = QPointF(a.x() + gap / 2, a.y())
            p.drawLine(a, mid)
            p.drawLine(mid, QPointF(mid.x(), b.y()))
            p.drawLine(QPointF(mid.x(), b.y()), b)
        for d in range(start, len(branch)):
            if d > start:
                p.setPen(QPen(QColor("#9a9a9a"), 1.4))
                p.drawLine(center(d, row, +1), center(d + 1, row, -1))
            state = node_state(branch, d, ev.emitted, ev.n_accepted)
            fg, bg = {ACCEPTED_NODE: (accepted_fg, accepted_bg),
                      REJECTED_NODE: COLORS[REJECTED]}.get(state, (COLORS[UNCHECKED][0], "#f7efee"))
            c.cell(1 + d, row, short_of(branch[d]), fg=fg, bg=bg, sub=f"q {probs[d]:.2f}",
                   strike=state != ACCEPTED_NODE, token=branch[d], rect=rect(1 + d, row))
    target_row = n_rows - 1
    fg, bg = COLORS[TARGET]
    for i, t in enumerate(ev.emitted):
        if i < ev.n_accepted:
            c.cell(1 + i, target_row, short_of(t), fg=accepted_fg, bg=accepted_bg, sub="✓ same", token=t,
                   rect=rect(1 + i, target_row))
        else:
            bonus = all(len(b) <= i for b in tree.branches if list(b[:i]) == list(ev.emitted[:i]))
            c.cell(1 + i, target_row, short_of(t), fg=fg, bg=bg, sub="bonus" if bonus else "✗ its own",
                   border=None if bonus else COLORS[REJECTED][0], token=t, rect=rect(1 + i, target_row))
    x = label_w + columns(ev) * (cell_w + gap) + 8
    p.setFont(c.small)
    p.setPen(QColor("#444444"))
    p.drawText(QRectF(x, row_top(1, gap), 260, 3 * ROW_H),
               Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft,
               f"{len(tree.branches)} branch{'es' if len(tree.branches) != 1 else ''}, "
               f"{tree.nodes} tokens,\n"
               + (f"{tree.steps} draft decodes;" if by_model(ev) else "from the suffix trees' counts;")
               + f"\nthe target verified them in one batch\nand kept branch {tree.kept}")


def node_tooltip(ev, token: int, vocab) -> str:
    """Hovering a tree token: its id and piece, and for each branch holding it, where."""
    where = [f"branch {j} at depth {d + 1}, q {ev.tree.probs[j][d]:.3f}"
             for j, b in enumerate(ev.tree.branches) for d, t in enumerate(b) if t == token]
    return (f"token {token} · vocabulary piece <code>{html.escape(vocab.text(token))}</code>"
            + "".join(f"<br>{w}" for w in where[:6]))


def mismatch(ev) -> int:
    """The first depth where the kept branch's token differs from the one the round emitted
    there (-1: none). At temperature llama-speculative can keep a branch whose earlier token
    was not the one taken (docs/tree.md), and SpecScope mirrors it."""
    kept = ev.tree.branches[ev.tree.kept]
    depth = min(ev.n_accepted, len(kept), len(ev.emitted))      # (an accepted ⟨end⟩ cuts emitted)
    return next((d for d in range(depth) if kept[d] != ev.emitted[d]), -1)


def batch_words(ev) -> str:
    """The round's verification batch in words (the timeline's)."""
    n, k = ev.batch_size, len(ev.tree.branches)
    return (f"a batch of {n} tokens: the seed and a tree of {n - 1} in {k} "
            f"branch{'es' if k != 1 else ''} (branch {ev.tree.kept} kept)")


def tree_words(ev, tok, piece=None) -> list[str]:
    """Steps 1 and 3 of the round's words for a tree; ``tok(token, i)``: the i-th emitted
    (or -1: the seed's) token as HTML (``piece``: unused, as the other shapes' words take it)."""
    tree = ev.tree
    k, a = len(tree.branches), ev.n_accepted
    split = (f"where a runner-up candidate held more than <i>p_split</i>, a new branch split off "
             f"with it ({k - 1} split{'s' if k != 2 else ''} this round)" if k > 1 else
             "no runner-up held more than <i>p_split</i> (or the sampler is greedy, which keeps "
             "one candidate), so the tree is one branch")
    kept = tree.branches[tree.kept]
    own = tok(ev.emitted[-1], len(ev.emitted) - 1) if len(ev.emitted) > a else ""
    taken = " ".join(tok(t, i) for i, t in enumerate(ev.emitted[:a]))
    result = (f"<b>3. Result:</b> the target walked the tree position by position and kept "
              f"branch {tree.kept}: ")
    if a == len(kept) and own:
        result += f"all {a} of its tokens ({taken}), then its bonus token {own}."
    elif a:
        result += f"{a} token{'s' if a != 1 else ''} ({taken}); at depth {a + 1} no branch held " \
                  f"the token it took, {own}, its own."
    else:
        result += f"none: at depth 1 no branch held the token it took, {own}, its own."
    off = mismatch(ev)
    if off >= 0:
        result += (f" <b>llama-speculative's slip:</b> at depth {off + 1} the text took "
                   f"{tok(ev.emitted[off], off)} from another branch, but branch {tree.kept} holds "
                   f"another token there, so the caches now hold a token the text does not "
                   f"(docs/tree.md).")
    if not by_model(ev):
        draft = (f"<b>1. Draft:</b> <b>{ev.drafter}</b> looked the latest tokens up in its suffix trees "
                 f"and grew a <b>tree</b> of the continuations seen after them, most frequent "
                 f"first, while each one's estimate (how often it followed, times its parent's) "
                 f"held <i>min p</i>, cut to {k} leaf branch{'es' if k != 1 else ''} (-np): "
                 f"{tree.nodes} tokens, no model decoded. {html.escape(ev.draft_note[:1].upper() + ev.draft_note[1:])} "
                 f"({ev.t_draft * 1e3:.2f} ms)")
    else:
        draft = (f"<b>1. Draft:</b> the draft model decoded the seed and drafted a <b>tree</b> "
                 f"(llama-speculative): each step, every branch took its most probable candidate; "
                 f"{split}. {tree.nodes} tokens in {k} branch{'es' if k != 1 else ''}, {tree.steps} "
                 f"draft decodes (what llama.cpp counts as drafted). ({ev.t_draft * 1e3:.1f} ms)")
    caches = "both caches" if by_model(ev) else "the target's cache"
    return [draft,
            f"<b>2. Verify:</b> the target decoded the seed and all {tree.nodes} tree tokens in "
            f"<b>one batch</b>, each token in the sequences of the branches that hold it, so every "
            f"branch is read with its own past. ({ev.t_verify * 1e3:.1f} ms)",
            result,
            f"<b>4. Keep:</b> the kept branch became sequence 0 of {caches} and every other "
            f"branch's rows were dropped (the target dropped {ev.kv_dropped_target} rows). "
            f"({ev.t_sync * 1e3:.1f} ms sync)"]
