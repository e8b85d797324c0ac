"""lookahead: llama.cpp's ``llama-lookahead`` (examples/lookahead/lookahead.cpp), draftless
Jacobi decoding; its rounds are core/engine/lookahead_round.py.

Beside the token it decodes, the target decodes a *window* of W guesses for the positions after
it, in N - 1 levels (Jacobi iterations: each level's guesses were computed one iteration after the
level before). Every round the window moves one iteration on: its last level is sampled from the
target's rows, and the n-grams it produced (a guess of the oldest level and the N - 1 guesses
after it along the diagonal) go into a *pool*: for each token, a ring of up to G distinct
n-grams of N - 1 tokens that followed it. Up to G of them that follow the token decoded now are
verified in the same batch, each in its own sequence.

Sequences, as llama-lookahead numbers them: 0 the token decoded now (in every sequence), 1..W
the window's columns, W + 1 .. W + G the verified n-grams; the context needs W + G + 1 of them in
one unified KV cache. llama.cpp fixes W, N and G at 15, 5 and 15 in its source; SpecScope makes
them flags (``--lookahead-w``, ``--lookahead-n``, ``--lookahead-g``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specscope.core.engine.drafters.base import Drafter
from specscope.core.engine.flag import Flag
from specscope.core.errors import ConfigError
from specscope.core.models.seqs import SeqBatch, draw, row_logits

WINDOW_START = 100     # llama-lookahead fills the window with 100, 101, ... before its first round
NAME = "lookahead"


@dataclass(frozen=True)
class LookaheadParams:
    """W, N and G (llama-lookahead's constants)."""
    w: int = 15           # the window: positions guessed ahead
    n: int = 5            # the n-gram size (the window's levels + 1)
    g: int = 15           # the most n-grams verified per round (and kept per token in the pool)

    def validate(self, type_name: str = "lookahead") -> None:
        for name, value, lo in (("w", self.w, 1), ("n", self.n, 2), ("g", self.g, 1)):
            if not lo <= value <= 64:
                raise ConfigError(f"{type_name} {name.upper()} must be between {lo} and 64, not {value}")

    @property
    def n_seq(self) -> int:
        """The sequences its context needs: W + G + 1."""
        return self.w + self.g + 1

    @property
    def beside(self) -> int:
        """The batch rows beside the token: its n-grams and its window, N - 1 tokens each."""
        return (self.n - 1) * (self.w + self.g)


PARAMS = LookaheadParams
FLAGS = tuple(Flag(f"{NAME}.{k}", (f"--lookahead-{k}",),
                   f"{NAME}: {what} (llama-lookahead fixes it at {getattr(LookaheadParams(), k)})",
                   lo, 64, types=(NAME,), metavar=k.upper(), label=k.upper())
              for k, what, lo in (("w", "the window, W positions guessed ahead", 1),
                                  ("n", "the n-gram size N (the window's levels + 1)", 2),
                                  ("g", "the most n-grams verified per round, G", 1)))


class NgramPool:
    """llama-lookahead's ``ngram_container``: for each token, a ring of up to G n-grams of N - 1
    tokens seen after it, newest written at the ring's head; a repeated n-gram is not added."""

    def __init__(self, g: int):
        self.g = g
        self.rings: dict[int, list[tuple[int, ...]]] = {}
        self.head: dict[int, int] = {}
        self.n_total = 0

    def candidates(self, token: int) -> list[tuple[int, ...]]:
        """The n-grams after ``token``, in ring order (slot 0 first)."""
        return list(self.rings.get(token, ()))

    def add(self, first: int, ngram: tuple[int, ...]) -> None:
        ring = self.rings.setdefault(first, [])
        if ngram in ring:
            return
        head = self.head.get(first, 0)
        if head < len(ring):
            ring[head] = ngram
        else:
            ring.append(ngram)
        self.head[first] = (head + 1) % self.g
        self.n_total += 1


class Lookahead(Drafter):
    """The window and the pool of one run, and the batch they make each round."""
    name = "lookahead"
    resumes = False

    def __init__(self, engine, spec):
        p = spec.params(NAME)
        self.p, self.ctx = p, engine.tgt
        if self.ctx.n_seq < p.n_seq:
            raise ConfigError(f"lookahead with W = {p.w} and G = {p.g} needs {p.n_seq} sequences "
                              f"in the target's context, not {self.ctx.n_seq}")
        self.pool = NgramPool(p.g)
        # the window: N - 1 levels of W guesses, and the oldest level as it was before a move
        self.levels = [[WINDOW_START + i for i in range(p.w)] for _ in range(p.n - 1)]
        self.before = [0] * p.w
        self.batch = SeqBatch(1 + p.beside, p.n_seq)
        self.verified: list[tuple[int, ...]] = []      # this round's n-grams (after the token)
        self.rows: list[list[int]] = []                # and the batch rows of their tokens

    def fill(self, token: int, n_past: int) -> SeqBatch:
        """The round's batch (lookahead.cpp's layout): the token at ``n_past`` in every sequence,
        the pool's n-grams after it (queued first, level by level), then the window."""
        p, b = self.p, self.batch
        b.clear()
        b.add(token, n_past, range(p.n_seq))
        self.verified = self.pool.candidates(token)
        self.rows = [[0] for _ in self.verified]
        for j in range(p.n - 1):
            for g, ngram in enumerate(self.verified):
                self.rows[g].append(b.add(ngram[j], n_past + j + 1, p.w + 1 + g))
        for i in range(1, p.w):                         # the first level: columns i .. W see it
            b.add(self.levels[0][i], n_past + i, range(i + 1, p.w + 1), logits=False)
        for j in range(1, p.n - 1):                     # the others: column i + 1 alone
            for i in range(p.w):
                b.add(self.levels[j][i], n_past + j + i, i + 1, logits=j == p.n - 2)
        return b

    def move(self, first_step: bool, smpl, greedy: bool) -> None:
        """After each token the round emits: the levels move one iteration on. After the first,
        the new last level is the target's guess from the batch's last level (sampled, not
        accepted: the sampler's history is the output's) and the pool learns the window's
        n-grams; after the others, the last level repeats the (moved) first."""
        p = self.p
        self.before = list(self.levels[0])
        for j in range(p.n - 2):
            self.levels[j] = list(self.levels[j + 1])
        if first_step:
            row0 = len(self.verified) * (p.n - 1) + p.w * (p.n - 2)
            self.levels[p.n - 2] = [self._guess(smpl, row0 + i, greedy) for i in range(p.w)]
            for f in range(p.w):
                self.pool.add(self.before[f], tuple(self.levels[j][f] for j in range(p.n - 1)))
        else:
            self.levels[p.n - 2] = list(self.levels[0])

    def _guess(self, smpl, row: int, greedy: bool) -> int:
        if greedy:
            return int(np.argmax(row_logits(self.ctx, row)))
        return draw(smpl, self.ctx, row)

    def close(self) -> None:
        self.batch.close()
