"""ngram-mod and ngram-cache against llama.cpp's answers.

Each expected round below was reasoned from llama.cpp's source (common/speculative.cpp,
common/ngram-mod.cpp, common/ngram-cache.cpp) and checked against llama.cpp itself: the same
prompt and continuation through tests/reference/drafter_oracle.cpp (llama.cpp's own chain)
gave the same rounds. The orders of std::unordered_map written out here were printed by
tests/reference/umap_order.cpp (g++ 12, libstdc++, as the reference was built); the last test
compiles that program and compares when g++ is at hand. The reference cannot load lookup
cache files (-lcs/-lcd are not llama-speculative-simple's flags): those expectations come from
the source alone.
"""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conformance.drafter_oracle import oracle_rounds
from specscope.core.engine.drafters import Chain
from specscope.core.engine.drafters.ngram_cache import Followers, NgramCache, NgramCacheParams
from specscope.core.engine.drafters.ngram_mod import NgramMod, NgramModParams
from specscope.core.errors import ConfigError

H = np.int32


def mod(n_match, n_min, n_max):
    return Chain([NgramMod(NgramModParams(n_match, n_min, n_max))])


def cache(static="", dynamic=""):
    return Chain([NgramCache(NgramCacheParams(str(static), str(dynamic)))])


# ------------------------------------------------------------------------------- ngram-mod
def test_mod_n_min_is_all_or_nothing():
    # n-match 2: the table holds (1,2)->3, (2,3)->4, (3,4)->1 (begin adds the n-grams followed
    # by a prompt token). The lookups from (1, id_last 2) find 3, 4, 1, then (4,1) is empty:
    # 3 tokens, a draft when n-min <= 3, nothing at all when n-min is 4.
    prompt, cont = [1, 2, 3, 4, 1, 2], [3, 4, 1, 5, 6]
    assert oracle_rounds(mod(2, 3, 8), prompt, cont) == [(3, 3, (3, 4, 1)), (0, 0, ())]
    assert oracle_rounds(mod(2, 4, 8), prompt, cont) == [(0, 0, ())] * 5
    d = NgramMod(NgramModParams(2, 4, 8))
    hist = np.array(prompt[:-1], H)
    d.begin(hist)
    p = d.draft(hist, prompt[-1], 64)
    assert p.tokens == () and p.stop == "n_min" and p.dropped == 3 and "only 3 tokens" in p.note


def test_mod_adds_generated_ngrams_in_chunks_of_more_than_32():
    # begin (history 100 101 102) leaves i_last = 1; generated n-grams enter the table only
    # when i_last + 32 < len(history). (5,6)->7 is generated at once, but the lookup of (5,6)
    # finds it only if the history has reached 34 tokens: with 25 fillers it holds 33 (no
    # draft; the next round, at 34, the chunk goes in and (6,7) drafts filler 200), with 26
    # it holds 34 and 7 is drafted.
    flags = (2, 1, 1)
    for fillers, expect in ((25, [(0, 0, ())] * 31 + [(0, 1, (200,))]),
                            (26, [(0, 0, ())] * 31 + [(1, 1, (7,))])):
        cont = [5, 6, 7, *range(200, 200 + fillers), 5, 6, 7, 8, 9]
        rounds = oracle_rounds(mod(*flags), [100, 101, 102, 103], cont)
        assert rounds[:32] == expect


def test_mod_resets_after_five_low_acceptance_rounds():
    # n-match 1: the prompt's 1 2 .. 9 makes 1 draft 2..9; the target says 60, 61, .. after
    # each 1 instead. Five drafts that kept nothing (< 25%) empty the table and set i_last to
    # 0, so the next lookup re-adds the whole history at once: 1 is now followed by 63 (its
    # last occurrence) and the draft after 1 becomes 63 1 63 1 .. instead of 2..9.
    prompt = [*range(100, 124), 1, 2, 3, 4, 5, 6, 7, 8, 9, 1]
    cont = [60, 1, 61, 1, 62, 1, 63, 1, 64, 1, 63, 1, 63, 1, 70, 71]
    miss = [(0, 8, (2, 3, 4, 5, 6, 7, 8, 9)), (0, 0, ())]
    assert oracle_rounds(mod(1, 1, 8), prompt, cont) == (
        miss * 5 + [(4, 8, (63, 1, 63, 1, 63, 1, 63, 1)), (0, 0, ())])


def test_mod_low_acceptance_counts_the_draft_before_truncation_and_ignores_others():
    # llama.cpp records n_draft_last before common_speculative_draft cuts the draft to the
    # round's budget: 1 kept of 8 drafted is 12.5%, low, even though all of the 1 verified
    # token was kept. Accepts flagged as another drafter's (is_other) change nothing.
    d = NgramMod(NgramModParams(1, 1, 8))
    hist = np.array([*range(100, 124), 1, 2, 3, 4, 5, 6, 7, 8, 9], H)
    chain = Chain([d])
    chain.begin(hist)
    for k in range(5):
        assert chain.draft(hist, 1, 1).tokens == (2,)
        assert d.n_draft_last == 8
        d.accept(0, False)
        assert d.table and d.n_low == k
        chain.accept(1)
    assert not d.table and d.i_last == 0 and d.n_low == 0


def test_mod_hash_slots_are_shared_by_colliding_ngrams():
    # n-match 1: the slot of token t is t mod 2^22, so 4194309 overwrites 5's slot: the
    # lookup after 5 drafts 7, what followed 4194309.
    prompt = [5, 6, 4194309, 7, 5]
    assert oracle_rounds(mod(1, 1, 1), prompt, [7, 8]) == [(1, 1, (7,))]
    d = NgramMod(NgramModParams(1, 1, 1))
    hist = np.array(prompt[:-1], H)
    d.begin(hist)
    p = d.draft(hist, 5, 8)
    assert (p.detail.source, p.detail.key, p.detail.key_len) == (3, 2, 1)
    assert "different n-gram with the same hash" in p.note


@pytest.mark.parametrize("length, kept", [(1048577, True), (1048578, False)])
def test_mod_begin_empties_a_table_more_than_a_quarter_full(length, kept):
    # n-match 1 over distinct tokens: begin adds length - 1 n-grams to distinct slots; more
    # than 4M / 4 = 1048576 used slots and the table is emptied (no draft after 5 then).
    d = NgramMod(NgramModParams(1, 1, 1))
    hist = np.arange(length, dtype=H)
    d.begin(hist)
    assert len(d.table) == (length - 1 if kept else 0)
    assert d.draft(hist, 5, 8).tokens == ((6,) if kept else ())


def test_mod_note_and_positions():
    d = NgramMod(NgramModParams(2, 1, 3))
    hist = np.array([1, 2, 3, 4, 5, 9, 1], H)
    d.begin(hist)
    p = d.draft(hist, 2, 8)
    assert p.tokens == (3, 4, 5) and p.stop == "n_max"
    assert (p.detail.source, p.detail.key, p.detail.key_len) == (2, 0, 2)
    assert p.note.startswith("each token is the hash table's entry for the 2 tokens before it "
                             "(3 found")
    assert "different n-gram" not in p.note


@pytest.mark.parametrize("params, word", [(NgramModParams(0, 1, 1), "n-match"),
                                          (NgramModParams(1025, 1, 1), "n-match"),
                                          (NgramModParams(4, -1, 1), "n-min"),
                                          (NgramModParams(4, 1, 1025), "n-max")])
def test_mod_parameters_out_of_range(params, word):
    with pytest.raises(ConfigError, match=word):
        NgramMod(params)


# ----------------------------------------------------------------------------- ngram-cache
def test_cache_counts_each_calls_tokens_as_a_sequence_of_its_own():
    # One segment (the prompt and id_last): the 3-grams of 7 8 9 7 8 9 chain into 8 tokens,
    # llama.cpp's fixed draft length.
    assert oracle_rounds(cache(), [7, 8, 9, 7, 8, 9], [7, 8, 9, 7, 8, 9, 7, 8, 1]) == [
        (8, 8, (7, 8, 9, 7, 8, 9, 7, 8))]
    # The same tokens generated one per round (nothing drafted, nothing kept): each call
    # counts only [id_last], so no n-gram spanning two calls is ever counted and nothing is
    # drafted, although 7 8 9 repeats.
    assert oracle_rounds(cache(), [1, 2], [7, 8, 9] * 4 + [5]) == [(0, 0, ())] * 13


def test_cache_longest_ngram_first():
    # (2,3,4) was followed by 5 once and 6 twice, but the 4-gram (1,2,3,4) saw only 5, and
    # the longest n-gram that passes its thresholds decides: 5 (then 70 9 2 3 4, where the
    # 3-gram's majority 6 takes over, and 72 after (3,4,6)'s later insert).
    prompt = [1, 2, 3, 4, 5, 70, 9, 2, 3, 4, 6, 71, 8, 2, 3, 4, 6, 72, 1, 2, 3, 4]
    assert oracle_rounds(cache(), prompt, [5, 6, 1]) == [(1, 8, (5, 70, 9, 2, 3, 4, 6, 72)),
                                                          (0, 0, ())]


def test_cache_tie_goes_to_the_first_in_unordered_map_order():
    # (5,6) was followed by 7, then by 20: one each, 50% each, a tie under the strict '>'.
    # In a 2-element std::unordered_map the later insert is iterated first: 20.
    rounds = oracle_rounds(cache(), [5, 6, 7, 9, 5, 6, 20, 8, 5, 6], [20, 1, 2])
    assert rounds == [(1, 8, (20, 8, 5, 6, 20, 8, 5, 6)), (0, 0, ())]


# (5,6)'s 2-gram part after tokens 3, 4, 4, 16 or 3, 16, 4, 4: umap_order prints 4 16 3 both
# times (13 buckets; 3 and 16 share bucket 3; 4 arrived in an empty bucket or went to the front
# of the list). Static weights 100 x {4: 1, 16: 2} make 4 (2 x 100) and 16 (1 x 200) tie.
def _write(path: Path, entries) -> Path:
    """llama.cpp's lookup cache format: [4 x int32 n-gram][int32 n][n x (token, count)]."""
    out = b""
    for ngram, followers in entries:
        out += struct.pack("<4i", *ngram, *[-1] * (4 - len(ngram)))
        out += struct.pack("<i", len(followers))
        for token, count in followers:
            out += struct.pack("<2i", token, count)
    path.write_bytes(out)
    return path


@pytest.mark.parametrize("followers", [[3, 4, 4, 16], [3, 16, 4, 4]])
def test_cache_static_weights_tie_follows_libstdcxx_order(tmp_path, followers):
    # The context's (50,51) part: 3 x1, 4 x2, 16 x1 (total 4). Weighted: 4 and 16 score 200,
    # iterated 4 first, so 4 wins and passes (2 of 4 is 50%). Had 16 come first (reverse
    # insertion order for the first list, insertion order for the second), it would fail
    # (1 of 4), the 1-gram (51) would fail the same way, and the static cache would draft 16.
    static = _write(tmp_path / "static.bin", [((50, 51), [(4, 1), (16, 2)])])
    d = NgramCache(NgramCacheParams(str(static)))
    prompt = []
    for sep, t in zip((60, 61, 62, 63), followers):
        prompt += [50, 51, t, sep]
    hist = np.array([*prompt, 77, 50], H)
    d.begin(hist)
    assert d.context[(50, 51)].order() == [4, 16, 3]
    p = d.draft(hist, 51, 8)
    assert p.tokens[0] == 4
    assert p.note.startswith("each token is the most frequent follower of the n-gram before "
                             "it: ")


def test_cache_static_counts_weigh_the_candidates(tmp_path):
    # (50,51) was followed by 6, 5, 5, 6: a tie, and 5, inserted later, is iterated first.
    # A static cache that saw 6 after (50,51) weighs 6 by 100: 6 wins.
    hist = np.array([50, 51, 6, 60, 50, 51, 5, 61, 50, 51, 5, 62, 50, 51, 6, 63, 77, 50], H)
    static = _write(tmp_path / "static.bin", [((50, 51), [(6, 1)])])
    for params, first in ((NgramCacheParams(), 5), (NgramCacheParams(str(static)), 6)):
        d = NgramCache(params)
        d.begin(hist)
        assert d.draft(hist, 51, 8).tokens[0] == first


def test_cache_static_weight_can_veto_the_majority(tmp_path):
    # (50,51) was followed by 5 eleven times and by 6 once; the static cache saw 6 once. 6
    # scores 1 x 100 against 5's 11 x 1 and wins, but with 1 of 12 it fails the 50% rule,
    # as does the 1-gram (51); the static cache alone has too few samples (1 < 2): no draft.
    # Without the static cache 5 is drafted.
    tokens = []
    for k in range(11):
        tokens += [50, 51, 5, 100 + k]
    hist = np.array([*tokens, 50, 51, 6, 99, 77, 50], H)
    static = _write(tmp_path / "static.bin", [((50, 51), [(6, 1)])])
    for params, expect in ((NgramCacheParams(), 5), (NgramCacheParams(str(static)), None)):
        d = NgramCache(params)
        d.begin(hist)
        assert d.draft(hist, 51, 8).tokens[:1] == ((expect,) if expect else ())


@pytest.mark.parametrize("counts, first", [({9: 2}, 9), ({9: 1}, None), ({9: 2, 8: 2}, 8)])
def test_cache_static_cache_alone_lax_thresholds(tmp_path, counts, first):
    # Nothing in the context follows (50,51); the static 2-gram drafts under the lax 2-gram
    # thresholds (>= 2 samples, >= 50%; the dynamic cache's strict ones would refuse all
    # three): 9 seen twice passes, once does not; 9 and 8 twice each tie, and 8, inserted
    # later, is iterated first.
    static = _write(tmp_path / "s.bin", [((50, 51), list(counts.items()))])
    d = NgramCache(NgramCacheParams(str(static)))
    hist = np.array([1, 2, 3, 50], H)
    d.begin(hist)
    p = d.draft(hist, 51, 8)
    assert p.tokens[:1] == ((first,) if first else ())
    if first:
        assert "1 by 2-gram in the static cache" in p.note


def test_cache_dynamic_cache_strict_thresholds(tmp_path):
    # Nothing in the context follows (50,51); the dynamic cache's 2-gram does, strictly:
    # 3 samples at 100% pass (>= 3, >= 66%), 2 samples do not.
    for count, expect in ((3, (9,)), (2, ())):
        dyn = _write(tmp_path / f"dyn{count}.bin", [((50, 51), [(9, count)])])
        d = NgramCache(NgramCacheParams("", str(dyn)))
        hist = np.array([1, 2, 3, 50], H)
        d.begin(hist)
        p = d.draft(hist, 51, 8)
        assert p.tokens == expect
        if expect:
            assert "1 by 2-gram in the dynamic cache" in p.note


def test_cache_file_loads_in_llama_cpp_order(tmp_path):
    # emplace keeps the first of a duplicate token or n-gram; the part's order is that of
    # unordered_map after inserting 5 18 31 2 44 (umap_order: 2 44 31 18 5).
    path = _write(tmp_path / "c.bin", [((1, 2, 3), [(5, 1), (18, 2), (31, 1), (2, 7), (44, 1),
                                                   (18, 9)]),
                                       ((1, 2, 3), [(8, 1)]),
                                       ((4,), [(6, 3)]),
                                       ((7, 8), [(t, 1 + t % 3) for t in UMAP_ORDERS[4][0]])])
    d = NgramCache(NgramCacheParams(str(path)))
    part = d.static[(1, 2, 3)]
    assert part.order() == [2, 44, 31, 18, 5] and part.count[18] == 2
    assert (part.best, part.max_count, part.total) == (2, 7, 12)
    assert d.static[(4,)].count == {6: 3}
    big = d.static[(7, 8)]                       # rehashed twice while loading
    assert big.bucket_count == 59 and big.order() == UMAP_ORDERS[4][2]
    assert big.best == next(t for t in big.order() if t % 3 == 2)


@pytest.mark.parametrize("data, problem", [
    (struct.pack("<4i", 1, 2, -1, -1) + struct.pack("<i", 2) + struct.pack("<2i", 5, 1),
     "lists 2 tokens but the file ends after 1"),
    (struct.pack("<4i", 1, 2, -1, -1), "ends inside an n-gram's header"),
    (struct.pack("<4i", 1, 2, -1, -1) + struct.pack("<i", 0), "an n-gram with 0 tokens"),
    (struct.pack("<4i", 1, 2, -1, -1) + struct.pack("<i", 1) + struct.pack("<2i", 5, 0),
     "token 5 with count 0"),
    (b"\x01\x02\x03", "its size, 3 bytes, is not a multiple of 4"),
])
def test_cache_corrupt_file_is_one_line_naming_it(tmp_path, data, problem):
    path = tmp_path / "bad.bin"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as e:
        NgramCache(NgramCacheParams(str(path)))
    msg = str(e.value)
    assert msg.startswith(f"{path}: --lookup-cache-static: not a llama.cpp lookup cache: ")
    assert problem in msg and "\n" not in msg


def test_cache_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="--lookup-cache-dynamic: no such file"):
        NgramCache(NgramCacheParams("", str(tmp_path / "none.bin")))


def test_cache_begin_matches_counting_at_the_first_draft():
    # begin counts the prompt ahead; a first draft on a different history recounts.
    rng = random.Random(3)
    seq = [rng.randrange(6) for _ in range(300)]
    hist = np.array(seq[:-1], H)
    a, b = NgramCache(), NgramCache()
    a.begin(hist)
    b.begin(hist[:50])
    assert a.draft(hist, seq[-1], 8) == b.draft(hist, seq[-1], 8)
    assert a.context.keys() == b.context.keys()
    assert all(a.context[k].order() == b.context[k].order() for k in a.context)


# ---------------------------------------------------------------- unordered_map emulation
# (keys inserted, bucket_count, iteration order) as tests/reference/umap_order.cpp printed
UMAP_ORDERS = [
    ([3, 4, 16], 13, [4, 16, 3]),
    ([3, 16, 4], 13, [4, 16, 3]),
    ([5, 18, 31, 2, 44], 13, [2, 44, 31, 18, 5]),
    (list(range(14)), 29, [13, *range(13)]),      # the rehash re-links the old order
    ([x * 7919 % 1000 for x in range(1, 31)], 59,
     [570, 28, 109, 190, 947, 271, 352, 433, 56, 514, 137, 595, 218, 676, 299, 757, 380, 838,
      461, 919, 542, 866, 785, 704, 623, 975, 894, 813, 732, 651]),
]


@pytest.mark.parametrize("keys, buckets, order", UMAP_ORDERS)
def test_followers_iterate_like_libstdcxx(keys, buckets, order):
    f = Followers()
    for k in keys:
        f.add(k)
    assert f.bucket_count == buckets and f.order() == order
    assert f.best == order[0]                  # all counts 1: the first in iteration order


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build umap_order.cpp")
def test_followers_against_real_unordered_map(tmp_path):
    exe = tmp_path / "umap_order"
    src = Path(__file__).parent / "reference" / "umap_order.cpp"
    subprocess.run(["g++", "-O1", "-std=c++17", str(src), "-o", str(exe)], check=True)
    rng = random.Random(11)
    seqs = [[rng.randrange(rng.choice((13, 40, 3000, 1 << 31))) - (1 << 30) * (k % 7 == 0)
             for _ in range(rng.choice((3, 20, 200, 1500)))] for k in range(120)]
    out = subprocess.run([str(exe)], input="".join(" ".join(map(str, s)) + "\n" for s in seqs),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    for s, line in zip(seqs, out, strict=True):
        head, _, rest = line.partition(" :")
        want = [tuple(map(int, kv.split("="))) for kv in rest.split()]
        f = Followers()
        for t in s:
            f.add(t)
        assert f.bucket_count == int(head)
        assert [(t, f.count[t]) for t in f.order()] == want
        top = max(c for _, c in want)
        assert f.best == next(t for t, c in want if c == top)
