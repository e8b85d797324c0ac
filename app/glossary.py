"""The words step mode uses, in plain words: shown when the pointer rests on them in the round's
picture (app/round_view.py), so that a student who does not know the algorithm yet can read it."""

from __future__ import annotations

TERMS = {
    "position": "Where each token sits in the text, counted from 0: the model's cache keeps one "
                "row (its keys and values) per position.",
    "n_past": "n_past: how many positions the caches held before this round. The round's first "
              "token, the seed, goes at this position.",
    "batch / draft": "What the target reads this round in one batch: the seed, then the tokens the "
                     "drafter proposed. One pass over the batch costs about as much as one token "
                     "on a GPU, and less than the tokens one at a time on a CPU.",
    "seed (id_last)": "The seed, llama.cpp's id_last: the token chosen last round (the prompt's "
                      "last token in the first round). It is not in the caches yet, so this "
                      "round's batch starts with it.",
    "replayed": "A token decided last round but undone by a checkpoint restore: the target reads "
                "it again before the new draft.",
    "p": "p: how sure the drafter was of this token (the draft model's probability among its top "
         "10; an n-gram type's count, suffix's estimate).",
    "q": "q: the drafter's probability of this token; p: the target's, read from its row of the "
         "verification batch (before the sampler's settings). Greedy, a token is accepted when it "
         "is the target's top choice; sampling, the ratio rule keeps it with probability "
         "min(1, p/q).",
    "H": "H: the entropy of the target's distribution at this batch row (what it predicts for the "
         "next position), in bits: 0 when it is sure of one token, higher the more tokens it "
         "spreads over. A drafter rarely guesses right where H is high.",
    "target samples": "What the target itself chose at each batch row, reading everything before "
                      "it. A drafted token is accepted while it is the same; the first that is "
                      "not is replaced by the target's choice.",
    "✓ same": "The target chose this token too: the drafted token is accepted, and the target "
              "got it without a pass of its own.",
    "✗ replacement": "The target chose another token here: the drafted one is rejected, the "
                     "target's goes into the text, and every drafted token after it is dropped "
                     "unread.",
    "bonus": "The bonus token: every drafted token was accepted, so the last batch row's choice "
             "is one more token for free.",
    "target": "The target's own token: nothing was drafted, so this round is an ordinary decode.",
    "target KV after": "KV rows: the cache keeps one row of keys and values per position. After "
                       "verifying, the rows of accepted tokens are kept and those of rejected "
                       "tokens are dropped (llama_memory_seq_rm), so the cache holds the text.",
    "kept": "This position's row stays in the cache: its token is in the text.",
    "dropped": "This position's row is removed from the cache: its drafted token was rejected.",
    "next seed": "The target's own token, chosen this round, is the next round's seed: it is read "
                 "at this position next round.",
}


def term(key: str) -> str:
    """The plain words for ``key`` (a row label or a cell's small print), or ""."""
    if key.startswith("H "):                      # a batch row's entropy (a run that teaches)
        return TERMS["H"]
    if key in TERMS:
        return TERMS[key]
    if key.startswith("q "):
        return TERMS["q"]
    if key.startswith("p "):
        return TERMS["p"]
    if key.endswith("n_past"):
        return TERMS["n_past"]
    if key.startswith("next seed"):
        return TERMS["next seed"]
    return ""


__all__ = ["TERMS", "term"]
