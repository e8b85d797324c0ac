"""suffix's rounds with a tree (``-np`` > 1): the suffix trees draft a speculation tree (Arctic
Inference's ``use_tree_spec``, best first), its root-to-leaf paths become sequences of the
target's context, and the target verifies every node in one batch, as llama-speculative
verifies a draft model's branches (core/engine/tree_round.py). With ``-np 1`` suffix drafts one
path and the engine's chain verifies it, as vLLM does (core/engine/engine.py).

Each round, with the target's cache holding [0, n_past) and the token emitted last (the root) not
yet in it:

    1. draft:   the tree (drafters/suffix.py), cut to ``-np`` leaves: nodes are taken best first
                while the leaves they make are no more than the sequences;
    2. verify:  sequence 0 is copied into every other leaf's sequence; the root and every node go
                in one batch, each node in the sequences of the leaves under it;
    3. walk:    the target samples the root's row; while a child of the node reached has the
                token it sampled, that child is accepted and its row sampled next (greedy or at
                temperature: a deterministic draft is accepted exactly where the target's own
                sample agrees, so the output is the target's distribution);
    4. keep:    the cells of a leaf under the last accepted node become sequence 0.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from specscope.core.engine.drafters.build import make_drafter
from specscope.core.engine.events import TreeShape
from specscope.core.engine.round_record import Recorder
from specscope.core.models.seqs import SeqBatch, keep_branch, seq_cp, seq_keep


def leaves(parents, n_leaves: int) -> tuple[list[int], list[list[int]]]:
    """The nodes kept (best first: ``parents`` is in that order, each parent before its children)
    so that they make at most ``n_leaves`` leaves, and each leaf's path of node indices."""
    kept: list[int] = []
    has_child: set[int] = set()
    n = 0                                        # leaves so far
    for i, parent in enumerate(parents):
        if parent != -1 and parent not in kept:
            continue                             # under a node left out
        grows = parent in has_child or (parent == -1 and -1 in has_child)
        if grows and n >= n_leaves:
            continue
        n += 1 if grows or parent == -1 else 0
        has_child.add(parent)
        kept.append(i)
    paths = []
    for i in kept:
        if i not in has_child:
            path, at = [], i
            while at != -1:
                path.append(at)
                at = parents[at]
            paths.append(path[::-1])
    return kept, sorted(paths)          # the best path first


def suffix_rounds(run, smpl):
    """The rounds of ``run`` (an engine.Run drafting suffix alone with -np > 1): its RoundEvents."""
    e, spec = run.engine, run.spec
    name = run.spec.types[0]            # the type whose loop this is: it drafts alone
    drafter = make_drafter(name, spec, e)
    n_seq = e.tgt.n_seq
    batch = SeqBatch(spec.params(name).max_spec_tokens + 1, n_seq)
    try:
        t0 = time.perf_counter()
        stream = list(run.prompt_tokens)
        drafter.begin(np.asarray(stream[:-1], np.int32))
        run.prefill = replace(run.prefill, seconds=run.prefill.seconds + time.perf_counter() - t0)
        n_past, index = len(stream) - 1, 0
        while not run._stopped():
            rec = Recorder(e.target.piece)
            root = stream[-1]
            budget = min(e.tgt.n_ctx - n_past - 2, run.n_predict - len(run.tokens) - 1)
            # 1. draft: the tree, cut to the sequences
            with rec.phase("draft"):
                d = drafter.best(np.asarray(stream[:-1], np.int32), root, budget, tree=True) \
                    if budget > 0 else None
                nodes, paths = leaves(d.parents, n_seq) if d else ([], [])
            rec.time.lookup += rec.time.draft       # a lookup, priced as the n-gram types' (bench)
            # 2. verify: the root and every node in one batch
            with rec.phase("verify"):
                seq_keep(e.tgt, 0)
                for s in range(1, len(paths)):
                    seq_cp(e.tgt, 0, s)
                batch.clear()
                batch.add(root, n_past, range(max(1, len(paths))))
                depth, row = {-1: 0}, {-1: 0}
                for i in nodes:
                    depth[i] = depth[d.parents[i]] + 1
                    row[i] = batch.add(d.tokens[i], n_past + depth[i],
                                       [s for s, p in enumerate(paths) if i in p])
                e.tgt.decode(batch, f"the suffix tree of {batch.size} tokens")
                # 3. walk down the tree as far as the target's samples agree
                at, accepted = -1, []
                kids = {i: [j for j in nodes if d.parents[j] == i] for i in (-1, *nodes)}
                while True:
                    token = smpl.sample(e.tgt, row[at])
                    child = next((j for j in kids[at] if d.tokens[j] == token), None)
                    if child is None:
                        break
                    accepted.append(token)
                    at = child
            # 4. keep a leaf under the last accepted node
            with rec.phase("sync"):
                kept = next((s for s, p in enumerate(paths) if at in p), 0) if at != -1 else 0
                after = n_past + 1 + len(accepted)
                keep_branch(e.tgt, kept, after)
            emitted, discarded = run._through_eog((*accepted, token))
            run.tokens.extend(emitted)
            stream.extend(emitted)
            run.finish = run._finish_after(emitted, after)
            branches = tuple(tuple(d.tokens[i] for i in p) for p in paths)
            probs = tuple(tuple(d.probs[i] for i in p) for p in paths)
            drafted = branches[kept] if branches else ()
            yield run._event(rec, index=index, n_past=n_past, seed=root, drafted=drafted,
                             draft_probs=probs[kept] if branches else (),
                             n_accepted=len(accepted), emitted=emitted,
                             mode="spec" if drafted else "plain",
                             drafter=name if drafted else "",
                             draft_stop="lookup" if drafted else "no match",
                             draft_note=drafter.note if drafted else "",
                             kv_dropped_target=len(nodes) - len(accepted), discarded=discarded,
                             shape=TreeShape(branches, probs, kept, len(nodes), 0,
                                            batch.rows(n_past)) if drafted else None)
            if run.finish:
                return
            n_past, index = after, index + 1
    finally:
        batch.close()


__all__ = ["suffix_rounds", "leaves"]
