"""A lookahead round (llama-lookahead) in step mode's words: the pool's n-grams verified beside
the seed, the window riding along in the same batch, which n-gram the target followed."""

from __future__ import annotations

SHOWN = 6          # n-grams listed by their tokens; the rest are counted


def lookahead_words(ev, tok, piece) -> list[str]:
    """Steps 1 to 4 for a lookahead round. ``tok(token, i)``: the i-th emitted token as HTML;
    ``piece(token)``: any token as HTML."""
    la, a = ev.shape, ev.n_accepted
    ngrams = la.verified
    size = ev.kv_dropped_target + len(ev.emitted)             # the batch: dropped rows + kept ones
    listed = "; ".join(f"{'<b>' if g == la.followed else ''}n-gram {g}: "
                       f"{' '.join(piece(t) for t in ngram)}{'</b>' if g == la.followed else ''}"
                       for g, ngram in enumerate(ngrams[:SHOWN]))
    more = f" and {len(ngrams) - SHOWN} more" if len(ngrams) > SHOWN else ""
    pool = (f"{len(ngrams)} of them follow the seed and were verified in this batch: {listed}{more}"
            if ngrams else "none of them follows the seed, so only the window rides along")
    own = tok(ev.emitted[-1], len(ev.emitted) - 1)
    taken = " ".join(tok(t, i) for i, t in enumerate(ev.emitted[:a]))
    if la.followed >= 0 and a:
        result = (f"the target's samples agreed with n-gram {la.followed} for {a} token"
                  f"{'s' if a != 1 else ''} ({taken}), then it took {own}, its own")
    else:
        result = f"no verified n-gram began with the token the target sampled: it emitted {own}"
    kept = (f"; n-gram {la.followed}'s sequence became sequence 0 and was copied into every other"
            if la.followed >= 0 and a else "")
    return [f"<b>1. Draft:</b> no draft model. The target keeps a <b>window</b> of guesses for the "
            f"positions after the seed (each level one Jacobi iteration of its own predictions) "
            f"and a <b>pool</b> of the n-grams those guesses formed ({la.pool} so far); {pool}.",
            f"<b>2. Verify:</b> the target decoded the seed, the n-grams and the window's guesses "
            f"in <b>one batch</b> of {size} tokens, each n-gram and each window column in a "
            f"sequence of its own. ({ev.t_verify * 1e3:.1f} ms)",
            f"<b>3. Result:</b> {result}; the window moved one iteration on per emitted token. "
            f"Emitted {len(ev.emitted)} token{'s' if len(ev.emitted) != 1 else ''}.",
            f"<b>4. Keep:</b> every row from the new n_past on was dropped "
            f"({ev.kv_dropped_target}){kept}. ({ev.t_sync * 1e3:.1f} ms)"]


def batch_words(ev) -> str:
    """The round's verification batch in words (the timeline's)."""
    return (f"a batch of {ev.batch_size} tokens: the seed, {len(ev.shape.verified)} n-grams "
            "and the lookahead window")


__all__ = ["lookahead_words", "batch_words"]
