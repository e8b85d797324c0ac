"""The words for a round whose type's own loop verified a batch of several sequences, by its
shape (``RoundEvent.shape``): step mode's steps and the timeline's batch. A type with a shape
of its own adds its view's two functions here."""

from __future__ import annotations

from specscope.core.engine.events import LookaheadShape, TreeShape

from . import lookahead_words, tree_view

WORDS = {TreeShape: (tree_view.tree_words, tree_view.batch_words),
         LookaheadShape: (lookahead_words.lookahead_words, lookahead_words.batch_words)}


def round_words(ev, tok, piece) -> list[str]:
    """Steps 1 to 4 (a tree: 1 and 3) of the round in words; ``tok(token, i)``: the i-th emitted
    token as HTML, ``piece(token)``: any token as HTML."""
    return WORDS[type(ev.shape)][0](ev, tok, piece)


def batch_words(ev) -> str:
    """Its verification batch in words."""
    return WORDS[type(ev.shape)][1](ev)


__all__ = ["WORDS", "round_words", "batch_words"]
