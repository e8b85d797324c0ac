"""ngram-map-k and ngram-map-k4v (core/engine/drafters/ngram_map.py) against llama.cpp's
common_ngram_map_* semantics, on hand-built token sequences.

Every expected draft below was reasoned out from common/ngram-map.cpp and then confirmed
against llama.cpp itself: the round-loop cases with /work/ref/drafter_oracle (llama.cpp's
own chain, tests/reference/drafter_oracle.cpp), the direct-call cases with
tests/reference/ngram_map_driver.cpp (common_ngram_map_begin/_draft/_accept on the same
histories). Tokens of a history are written with their positions in the comments.
"""

import numpy as np
import pytest

from conformance.drafter_oracle import oracle_rounds
from specscope.core.engine.drafters import Chain
from specscope.core.engine.drafters.ngram_map import (KEY_MAP_SIZE, LCG_FACTOR, NgramMap,
                                                       NgramMapParams, WindowHashes)
from specscope.core.engine.drafters.ngram_simple import NgramSimple
from specscope.core.errors import ConfigError


def drafter(n, m, key_only=True, min_hits=1, prompt=()):
    d = NgramMap(NgramMapParams(n, m, min_hits), key_only=key_only)
    d.begin(np.array(prompt, np.int32))
    return d


def draft(d, history, id_last):
    return d.draft(np.array(history, np.int32), id_last, 1000)


def lcg_hash(tokens):
    """common_ngram_map_hash, literally: hash = hash * 2654435761 + token, in uint32."""
    h = 0
    for t in tokens:
        h = (h * LCG_FACTOR + t) % 2**32
    return h


def test_window_hashes_are_llama_cpps_lcg_hashes_however_the_history_grows():
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 12):
        tokens = rng.integers(-3, 2**31 - 1, 400).astype(np.int32)   # wraps at every step
        hashes, size = WindowHashes(n), 0
        for step in (1, 3, 200, 2, 70, 1, 40, 83):   # a round's few tokens and long stretches
            size += step
            hashes.update(tokens[:size])
        assert size == 400
        assert hashes.h == [lcg_hash(tokens[j:j + n].tolist()) for j in range(400 - n + 1)]
        assert hashes.span(10, n) == lcg_hash(tokens[10:10 + n].tolist())
        x = lcg_hash(tokens[37:37 + n].tolist())
        assert 37 in hashes.starts(x, 30, 40) and 37 not in hashes.starts(x, 38, 400)


def test_no_draft_before_the_history_holds_2n_plus_m_tokens():
    # n=3, m=2: the key (1, 2, 3) sits at position 1, which llama.cpp's bound (a match before
    # len - n - m - 1) would already allow in a history of 7 tokens, were it not for 2n + m
    d = drafter(3, 2)
    assert draft(d, [5, 1, 2, 3, 7, 1, 2], 3).tokens == ()        # 7 tokens < 2n + m
    p = draft(drafter(3, 2), [5, 1, 2, 3, 7, 8, 1, 2], 3)         # 8 tokens
    assert p.tokens == (7, 8)
    assert (p.detail.key, p.detail.key_len, p.detail.source) == (1, 3, 4)
    assert "position 1" in p.note and "2 tokens" in p.note


def test_the_hash_map_keeps_an_older_occurrence_than_the_latest():
    # n=1, m=2. The first draft indexes the prompt: slot(7) -> position 1. Position 7 (another
    # 7, followed by 5 6) never replaces it: a filled slot is never overwritten.
    prompt = [0, 7, 1, 2, 3, 4]
    d = drafter(1, 2, prompt=prompt)
    assert draft(d, prompt, 9).tokens == ()
    history = prompt + [9, 7, 5, 6, 8, 8, 8]
    p = draft(d, history, 7)
    assert (p.tokens, p.detail.key, p.detail.source) == ((1, 2), 1, 2)
    assert "hash map" in p.note
    assert draft(d, history + [8, 8], 7).tokens == (1, 2)          # position 7 is indexed now
    # ngram-simple, searching backwards, copies after the latest 7
    simple = NgramSimple(NgramMapParams(1, 2))
    assert simple.draft(np.array(history, np.int32), 7, 1000).tokens == (5, 6)


def test_a_hash_collision_hides_the_key():
    # n=1: a 1-gram's hash is its token, so X = 5 + 2^18 shares slot 5 with token 5. Position 3
    # (token 5) fills the slot before position 1 (X), the prompt being indexed downwards; the
    # lookup of X then finds a 5 there, and the search covers only positions not indexed yet.
    x = 5 + KEY_MAP_SIZE
    for between, expected in ((5, ()), (6, (1,))):                # colliding, then not
        prompt = [0, x, 1, between, 2, 3, 3, 3, 3]
        d = drafter(1, 1, prompt=prompt)
        assert draft(d, prompt, 9).tokens == ()
        assert draft(d, prompt + [9], x).tokens == expected


def test_the_prompts_last_n_plus_m_positions_are_never_found():
    # n=1, m=1, a prompt of 5: the first draft indexes positions [1, 5 - n - m - 1] = [1, 2]
    # and later drafts search and index only positions after 5, so the 7 at 3 is never found
    prompt = [0, 5, 5, 7, 1]
    d = drafter(1, 1, prompt=prompt)
    assert draft(d, prompt, 9).tokens == ()
    assert draft(d, prompt + [9], 7).tokens == ()
    assert draft(d, prompt + [9, 4, 4, 4], 7).tokens == ()
    simple = NgramSimple(NgramMapParams(1, 1))
    assert simple.draft(np.array(prompt + [9, 4, 4, 4], np.int32), 7, 1000).tokens == (1,)


def test_the_accepted_count_sets_the_next_draft_length_and_zero_empties_it_for_good():
    # n=1, m=3: slot(7) -> position 1, followed by 1 2 3 4
    prompt = [0, 7, 1, 2, 3, 4, 5, 6]
    d = drafter(1, 3, prompt=prompt)
    history = list(prompt)
    assert draft(d, history, 9).tokens == ()
    history += [9]
    assert draft(d, history, 7).tokens == (1, 2, 3)
    d.accept(2, True)
    history += [0, 0, 0]
    p = draft(d, history, 7)
    assert p.tokens == (1, 2)                                      # min(m, 2 accepted)
    assert "as many as were accepted" in p.note
    d.accept(3, False)                                             # another drafter's round
    d.accept(0, True)
    history += [0]
    p = draft(d, history, 7)
    assert p.tokens == () and p.detail.key == 1 and "none of" in p.note
    d.accept(0, True)      # llama.cpp's last winner is told 0 again when nobody drafted
    history += [0, 0]
    assert draft(d, history, 7).tokens == ()
    history += [0]
    assert draft(d, history, 1).tokens == (2, 3, 4)                # other keys draft in full


def test_k4v_declines_an_even_split_and_counts_the_last_occurrence_again():
    # n=1, m=1: 7 is followed by 1 (position 1) and by 2 (position 3); the hash map gives 3
    prompt = [0, 7, 1, 7, 2, 5, 5, 5, 5]
    d = drafter(1, 1, key_only=False, prompt=prompt)
    assert draft(d, prompt, 9).tokens == ()
    p = draft(d, prompt + [9], 7)                                  # 1 against 1: no draft
    assert p.tokens == () and "not twice as often" in p.note
    # stat_idx stays at the match (3) and the next count starts there, inclusive: the
    # continuation 2 is counted again, 2 against 1, and drafted
    p = draft(d, prompt + [9, 0], 7)
    assert (p.tokens, p.detail.key, p.detail.source) == ((2,), 3, 4)
    assert "2 times" in p.note and "others 1 time" in p.note


def test_k4v_copies_after_the_match_not_the_most_frequent_continuation():
    # 7 -> 1 three times (positions 1, 3, 5), 7 -> 2 once (position 7, the hash map's entry)
    prompt = [0, 7, 1, 7, 1, 7, 1, 7, 2, 5, 5, 5, 5]
    d = drafter(1, 1, key_only=False, prompt=prompt)
    assert draft(d, prompt, 9).tokens == ()
    p = draft(d, prompt + [9], 7)
    assert (p.tokens, p.detail.source) == ((2,), 8)                       # 3 against 1, yet 2
    assert "3 times" in p.note


def test_k4v_waits_for_min_hits():
    prompt = [0, 7, 1, 7, 1, 7, 1, 7, 2, 5, 5, 5, 5]
    d = drafter(1, 1, key_only=False, min_hits=2, prompt=prompt)
    assert draft(d, prompt, 9).tokens == ()
    p = draft(d, prompt + [9], 7)
    assert p.tokens == () and "hit 1 of the 2" in p.note
    assert draft(d, prompt + [9, 0], 7).tokens == (2,)
    d = drafter(1, 1, key_only=False, min_hits=3, prompt=prompt)
    draft(d, prompt, 9)
    assert [draft(d, prompt + [9] + [0] * k, 7).tokens for k in range(3)] == [(), (), (2,)]


def test_k4v_keeps_four_continuations_and_ignores_a_fifth():
    # 7 -> 1, 2, 3, 4 once each, then 6 three times: 6 finds no free slot and is never
    # counted, so the four remain evenly split and nothing is drafted
    prompt = [0, 7, 1, 7, 2, 7, 3, 7, 4, 7, 6, 7, 6, 7, 6, 5, 5, 5, 5]
    d = drafter(1, 1, key_only=False, prompt=prompt)
    assert draft(d, prompt, 9).tokens == ()
    p = draft(d, prompt + [9], 7)
    assert p.tokens == ()
    assert [(v.value_idx, v.value_num) for v in d.keys[0].values] == [(2, 1), (4, 1), (6, 1),
                                                                       (8, 1)]


# n=2, m=3 round by round (llama-speculative-simple's loop against an oracle target)
PROMPT = [10, 1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 1, 2]
CONT = [3, 4, 5, 17, 18, 1, 2, 3, 4, 9, 9, 1, 2, 3, 4, 5, 19, 1, 2, 3, 4, 9, 9, 0]
# (accepted, drafted, draft) per round, from /work/ref/drafter_oracle
MAP_K_ROUNDS = [(3, 3, (3, 4, 5)), (0, 0, ()), (0, 0, ()), (0, 0, ()), (2, 3, (3, 4, 5)),
                (0, 0, ()), (0, 0, ()), (0, 0, ()), (2, 2, (3, 4)), (0, 3, (11, 12, 13)),
                (0, 0, ()), (0, 0, ()), (2, 2, (3, 4)), (1, 3, (9, 1, 2))]


def test_rounds_against_an_oracle_target():
    rounds = oracle_rounds(Chain([NgramMap(NgramMapParams(2, 3))]), PROMPT, CONT)
    assert rounds == MAP_K_ROUNDS
    # round 9: (1, 2) drafts 2 tokens, as many as round 5 had accepted; round 10: (4, 5)
    # drafts what followed it in the prompt, its hash map entry, not what followed the
    # (4, 5) accepted in round 1, which ngram-simple copies
    simple = oracle_rounds(Chain([NgramSimple(NgramMapParams(2, 3))]), PROMPT, CONT)
    assert simple[8][2] == (3, 4, 9) and simple[9][2] == (17, 18, 1)
    # the same drafts in k4v: each key here has one continuation up to its match
    k4v = oracle_rounds(Chain([NgramMap(NgramMapParams(2, 3), key_only=False)]), PROMPT, CONT)
    assert k4v == MAP_K_ROUNDS


def test_a_chain_through_the_cli_flags():
    from specscope.core.cli.spec import spec_from_flags
    from specscope.core.engine.drafters.build import make_chain
    chain = make_chain(spec_from_flags(
        ["--spec-type", "ngram-map-k,ngram-simple", "--spec-ngram-simple-size-n", "3",
         "--spec-ngram-simple-size-m", "3", "--spec-ngram-map-k-size-n", "2",
         "--spec-ngram-map-k-size-m", "3"]))
    assert [d.name for d in chain.drafters] == ["ngram-simple", "ngram-map-k"]
    # ngram-simple (n=3) wins round 10 with (17, 18, 1); ngram-map-k drafts the rest
    assert oracle_rounds(chain, PROMPT, CONT) == [
        *MAP_K_ROUNDS[:9], (0, 3, (17, 18, 1)), *MAP_K_ROUNDS[10:]]
    k4v = make_chain(spec_from_flags(["--spec-type", "ngram-map-k4v",
                                      "--spec-ngram-map-k4v-min-hits", "2"])).drafters[0]
    assert (k4v.name, k4v.key_only, k4v.min_hits, k4v.n, k4v.m) == (
        "ngram-map-k4v", False, 2, 12, 48)


@pytest.mark.parametrize("params, key_only, message", [
    (NgramMapParams(0, 4), True, "ngram-map-k size N must be between 1 and 1024 inclusive, not 0"),
    (NgramMapParams(2, 1025), True,
     "ngram-map-k size M must be between 1 and 1024 inclusive, not 1025"),
    (NgramMapParams(2, 4, 0), False, "ngram-map-k4v min hits must be at least 1, not 0"),
])
def test_parameters_out_of_range_are_one_clear_line(params, key_only, message):
    with pytest.raises(ConfigError) as exc:
        NgramMap(params, key_only=key_only)
    assert str(exc.value) == message
