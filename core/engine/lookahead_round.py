"""lookahead's rounds, as llama.cpp's ``llama-lookahead`` (examples/lookahead/lookahead.cpp) runs
them; the window and the pool are core/engine/drafters/lookahead.py.

The first round samples the first token from the prompt's last row (llama-lookahead samples it
before its loop), and the prompt's cells are then copied into every sequence. Every later round,
with the target's cache holding [0, n_past) and the token emitted last not yet in it:

    1. the batch: that token in every sequence, the pool's n-grams that follow it (each in its
       own sequence), the window's levels (each column in its own);
    2. one decode;
    3. the walk: the target samples the token's row; while an n-gram is still in step with what
       it sampled, the first such n-gram's next row is sampled too (each an accepted token), and
       after every token the window moves one iteration on (the first move samples its new
       level from the batch and fills the pool);
    4. the cache: every row from the new n_past on is dropped; where an n-gram was followed,
       its sequence becomes sequence 0 and is copied into every other.

``RoundEvent.drafted`` is the n-gram the round followed (the first one when none was: every
n-gram verified is in ``RoundEvent.shape``), so ``n_drafted`` counts N - 1 per round that
verified one. Differences from llama-lookahead, as for the other types (core/engine/engine.py):
``n_predict`` is exact and a round stops at its first end-of-generation token.
"""

from __future__ import annotations

from specscope.core.engine.drafters.build import make_drafter
from specscope.core.engine.events import LookaheadShape
from specscope.core.engine.round_record import Recorder
from specscope.core.models.seqs import seq_cp, seq_keep, seq_rm


def lookahead_rounds(run, smpl):
    """The rounds of ``run`` (an engine.Run whose spec is lookahead): its RoundEvents."""
    e, greedy = run.engine, run.sampler_settings.greedy
    name = run.spec.types[0]            # the type whose loop this is: it drafts alone
    la = make_drafter(name, run.spec, e)
    p = la.p
    try:
        n_past, token, index = len(run.prompt_tokens) - 1, run.prompt_tokens[-1], 0
        while not run._stopped():
            rec = Recorder(e.target.piece)
            with rec.phase("verify"):
                if index:                     # 1-2. the batch, one decode
                    batch = la.fill(token, n_past)
                    e.tgt.decode(batch, f"the lookahead batch of {batch.size} tokens")
                else:                         # the prompt's last token alone
                    la.batch.clear()
                    la.verified = []
                    la.batch.add(token, n_past, 0)
                    e.tgt.decode(la.batch, "the prompt's last token")
                    for s in range(1, p.n_seq):
                        seq_cp(e.tgt, 0, s)
                # 3. the walk along the n-grams
                emitted, followed = _walk(run, la, smpl, greedy, bool(index))
            accepted = len(emitted) - 1
            seed, n_past = token, n_past + len(emitted)
            token = emitted[-1]
            with rec.phase("sync"):           # 4. the cache
                seq_rm(e.tgt, -1, n_past, -1)
                if followed >= 0:
                    best = p.w + 1 + followed
                    seq_keep(e.tgt, best)
                    seq_cp(e.tgt, best, 0)
                    seq_rm(e.tgt, best, -1, -1)
                    for s in range(1, p.n_seq):
                        seq_cp(e.tgt, 0, s)
            out, discarded = run._through_eog(tuple(emitted))
            run.tokens.extend(out)
            run.finish = run._finish_after(out, n_past)
            shown = followed if followed >= 0 else 0
            drafted = la.verified[shown] if la.verified else ()
            yield run._event(rec, index=index, n_past=seed_pos(n_past, emitted), seed=seed,
                             drafted=tuple(drafted), n_accepted=accepted, emitted=out,
                             mode="spec" if drafted else "plain",
                             drafter=name if drafted else "",
                             draft_stop="lookup" if drafted else "no match",
                             kv_dropped_target=max(0, la.batch.size - len(emitted)),
                             discarded=discarded,
                             shape=LookaheadShape(tuple(la.verified), followed, la.pool.n_total,
                                                      la.batch.rows(seed_pos(n_past, emitted)))
                             if index else None)
            if run.finish:
                return
            index += 1
    finally:
        la.close()


def seed_pos(n_past_after: int, emitted) -> int:
    """The position of the round's seed: the round emitted ``emitted`` after it."""
    return n_past_after - len(emitted)


def _walk(run, la, smpl, greedy: bool, window: bool) -> tuple[list[int], int]:
    """(the tokens the round emits, the n-gram followed; -1: none). As lookahead.cpp: at step v
    the first n-gram still in step gives the row; it stops where none is, at n_predict or at an
    end-of-generation token."""
    p, active = la.p, [True] * len(la.verified)
    emitted, followed = [], -1
    for v in range(p.n):
        row = 0
        if v > 0:
            g = next((g for g, on in enumerate(active) if on), -1)
            if g < 0:
                break
            row, followed = la.rows[g][v], g
        token = smpl.sample(la.ctx, row)
        emitted.append(token)
        if (len(run.tokens) + len(emitted) >= run.n_predict or run.engine.target.is_eog(token)
                or not window):
            break
        for g, ngram in enumerate(la.verified):
            if active[g] and (v == p.n - 1 or token != ngram[v]):
                active[g] = False
        la.move(v == 0, smpl, greedy)
    return emitted, followed
