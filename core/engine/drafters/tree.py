"""draft-tree: the draft model drafts a tree of branches, as llama.cpp's ``llama-speculative``
(examples/speculative/speculative.cpp) does; the rounds that verify it are
core/engine/tree_round.py.

Each branch is a sequence of the draft's context (and of the target's, as it verifies them):
up to ``-np`` of them. Every step, each branch still drafting takes the draft's most probable
candidate after the run's sampler chain (at temperature: top-k, top-p, min-p, temperature; a
clone of the target's chain, random state included, as llama.cpp clones it each round); where
the next candidates (ranks 1 to 7) hold more than ``--spec-draft-p-split`` of the probability
and sequences are free, the branch splits: each such candidate starts a new branch, a copy of
this one so far (its cells, its sampler), that takes its first step at the next. Drafting stops
once the tree holds more than ``n_max`` tokens with its root (the nodes, not the depth: a wider
tree is shallower), and every drafted token, the last step's too, is decoded on the draft.

Greedy, the chain keeps only the argmax (probability 1, the others 0), so the tree never
branches: it is draft-simple without p_min, drafting n_max tokens every round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specscope.core.engine.drafters.base import Drafter
from specscope.core.engine.flag import SPEC_TOOLS, Flag, fmt
from specscope.core.errors import ConfigError
from specscope.core.models.sampler_chain import SamplerChain
from specscope.core.models.seqs import SeqBatch, candidates, row_logits, seq_cp, seq_keep, seq_rm

SPLIT_RANKS = 8      # llama-speculative looks at candidates 1..7 for a split
NAME = "draft-tree"


@dataclass(frozen=True)
class TreeParams:
    """draft-tree's own setting (llama-speculative's ``p_split``)."""
    p_split: float = 0.1      # --spec-draft-p-split: a branch splits where a runner-up holds more

    def validate(self, type_name: str = NAME) -> None:
        if not 0.0 <= self.p_split <= 1.0:
            raise ConfigError(f"p_split must be in [0, 1], not {self.p_split}")


PARAMS = TreeParams
FLAGS = (Flag(f"{NAME}.p_split", ("--spec-draft-p-split", "--draft-p-split"),
              f"{NAME}: a branch splits where a runner-up candidate holds more than this "
              "probability (up to -np branches; greedy, the draft keeps one candidate and never splits)",
              0.0, 1.0, types=(NAME,), tools=SPEC_TOOLS, metavar="P", write=fmt, label="p_split"),)


@dataclass
class Branch:
    """One sequence of the tree (llama-speculative's ``seq_draft``): its tokens (the root first,
    until the target has decoded them), each one's candidates (ids, p) as drafted, where its last
    token sits in the draft's batch and where each token sits in the target's batch."""
    active: bool = False
    drafting: bool = False
    skip: bool = False
    i_batch_dft: int = 0
    i_batch_tgt: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    dists: list = field(default_factory=list)
    smpl: SamplerChain | None = None


class TreeDrafter(Drafter):
    """The draft model's side of draft-tree: its cache (one sequence per branch), the branches
    and the target's batch they make."""
    name = NAME
    resumes = False      # a conversation's next turn starts the tree's caches afresh

    def __init__(self, engine, spec):
        self.ctx = engine.dft
        self.n_seq = engine.dft.n_seq
        if engine.tgt.n_seq < self.n_seq:
            raise ConfigError(f"{NAME}: the target's context has fewer sequences than the draft's")
        self.p_split = spec.params(NAME).p_split
        self.dbatch = SeqBatch(max(self.n_seq, 1) * 2, self.n_seq)
        self.tbatch = SeqBatch(engine.tgt.n_batch, self.n_seq)
        self.prefill_batch = engine.dbatch
        self.branches = [Branch() for _ in range(self.n_seq)]
        self.n_past = 0          # rows of sequence 0 in the draft's cache (llama's n_past_dft)
        self.steps = 0           # this round's draft decodes (llama-speculative's n_drafted)
        self.n_branches = 0      # this round's branches (sequences 0 .. n_branches - 1)

    def begin(self, prompt: np.ndarray) -> None:
        """The whole prompt, its last token too, in one batch (llama-speculative's draft
        prefill); ``prompt`` here is every prompt token."""
        self.ctx.prefill(prompt, self.prefill_batch, "the prompt on the draft model")
        self.n_past = len(prompt)

    def root(self, token: int, pos: int) -> None:
        """The token the target emitted last, decoded at ``pos`` on sequence 0 (its rows after
        it dropped): the draft's logits to draft from."""
        seq_rm(self.ctx, 0, pos, -1)
        self.dbatch.clear()
        self.dbatch.add(token, pos, 0)
        self.ctx.decode(self.dbatch, "the tree's root on the draft model")
        self.n_past = pos + 1

    def first(self, root: int, n_past: int) -> SeqBatch:
        """The first round's batch: the prompt's last token alone, nothing drafted (llama-speculative
        samples the first token before its loop drafts)."""
        for b in self.branches:
            self._reset(b)
        self.branches[0].i_batch_tgt = [0]
        self.n_branches = self.steps = 0
        self.tbatch.clear()
        self.tbatch.add(root, n_past, 0)
        return self.tbatch

    def _candidates(self, b: Branch, greedy: bool):
        if greedy:        # the chain at temperature 0 keeps the argmax alone, at probability 1
            top = int(np.argmax(row_logits(self.ctx, b.i_batch_dft)))
            return np.array([top], np.int32), np.array([1.0], np.float32)
        return candidates(b.smpl, self.ctx, b.i_batch_dft)

    def grow(self, root: int, n_past: int, n_draft: int, smpl: SamplerChain, greedy: bool) -> SeqBatch:
        """Draft the tree after ``root`` (at ``n_past`` in the target; the draft has decoded it)
        with up to ``n_draft`` tokens and returns the target's batch: the root in every
        sequence, each branch's tokens in its own (speculative.cpp's drafting loop)."""
        br, tb, db = self.branches, self.tbatch, self.dbatch
        for b in br:
            self._reset(b)
        b0 = br[0]
        b0.tokens, b0.dists, b0.i_batch_tgt = [root], [None], [0]
        if not greedy:               # llama.cpp clones the target's sampler every round
            if b0.smpl is not None:
                b0.smpl.close()
            b0.smpl = smpl.clone()
        b0.active = b0.drafting = True
        tb.clear()
        tb.add(root, n_past, 0)
        n_seq_cur, pos, self.steps = 1, self.n_past, 0
        for i in range(n_draft):
            db.clear()
            for b in br:
                b.skip = False
            for s, b in enumerate(br):
                if not b.drafting or b.skip:
                    continue
                ids, ps = self._candidates(b, greedy)
                sa = [s]
                # split where a runner-up candidate holds more than p_split (beyond the chain's
                # candidates llama.cpp reads stale memory; SpecScope stops there)
                for f in range(1, min(SPLIT_RANKS, len(ps))):
                    if not (n_seq_cur < self.n_seq and ps[f] > self.p_split):
                        break
                    new = br[n_seq_cur]
                    seq_rm(self.ctx, n_seq_cur)
                    seq_cp(self.ctx, s, n_seq_cur)
                    for t in b.i_batch_tgt:            # the branch so far is the new one's too
                        tb.add_seq(t, n_seq_cur)
                    new.active = new.drafting = new.skip = True
                    new.tokens, new.dists = list(b.tokens), list(b.dists)
                    new.i_batch_dft, new.i_batch_tgt = b.i_batch_dft, list(b.i_batch_tgt)
                    if new.smpl is not None:
                        new.smpl.close()
                    new.smpl = b.smpl.clone() if b.smpl is not None else None
                    sa.append(n_seq_cur)
                    n_seq_cur += 1
                for rank, s2 in enumerate(sa):
                    token, b2 = int(ids[rank]), br[s2]
                    if b2.smpl is not None:
                        b2.smpl.accept(token)
                    b2.tokens.append(token)
                    b2.dists.append((ids, ps))
                    b2.i_batch_tgt.append(tb.add(token, n_past + i + 1, s2))
                    b2.i_batch_dft = db.add(token, pos, s2)
                    if tb.size > n_draft:
                        b2.drafting = False
            if db.size == 0:
                break
            self.ctx.decode(db, f"draft step {i + 1} of the tree")
            pos += 1
            self.steps += 1
            if tb.size > n_draft:
                break
        self.n_branches = n_seq_cur
        return tb

    def keep(self, s_keep: int, n_past: int) -> None:
        """Branch ``s_keep`` becomes sequence 0, the others' cells are dropped; ``n_past``: the
        rows the draft keeps (its rows after them go when the next root is decoded)."""
        seq_keep(self.ctx, s_keep)
        seq_cp(self.ctx, s_keep, 0)
        seq_keep(self.ctx, 0)
        self.n_past = n_past

    @staticmethod
    def _reset(b: Branch) -> None:
        b.active = b.drafting = b.skip = False
        b.tokens, b.dists, b.i_batch_tgt = [], [], []

    def close(self) -> None:
        for b in self.branches:
            if b.smpl is not None:
                b.smpl.close()
                b.smpl = None
        self.dbatch.close()
        self.tbatch.close()
