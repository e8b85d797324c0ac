"""suffix: Suffix Decoding as Arctic Inference implements it and vLLM runs it
(core/engine/drafters/suffix.py). Its semantics pinned on crafted inputs, then real runs on the
demo pair: greedy, the output is the target's own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specscope.core.engine.drafters.suffix import Suffix, SuffixParams, SuffixTree
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.errors import ConfigError
from specscope.core.models.demo import demo_pair
from helpers.lossless import assert_targets_output

SUFFIX = ("suffix",)


def _tree(*seqs, depth: int = 24) -> SuffixTree:
    t = SuffixTree(depth)
    for s in seqs:
        t.add(s)
    return t


def test_counts_are_occurrences_and_their_ratio_the_estimate():
    # "A B" occurred twice, once followed by C; the current occurrence has no continuation
    # yet, so it dilutes the estimate (Arctic counts it too): p(C | A B) = 1/2
    A, B, C, X = 1, 2, 3, 9
    t = _tree([A, B, C, X, A, B])
    d = t.speculate([X, A, B], max_spec_tokens=8)
    assert d.tokens[0] == C and d.probs[0] == pytest.approx(0.5)
    assert d.match_len == 2 and d.count == 2
    # factor 1: at most one drafted token per matched token
    assert len(d.tokens) <= d.match_len


def test_a_text_never_seen_drafts_nothing():
    t = _tree([5, 6, 7, 8, 9, 10, 11])
    assert t.speculate([1, 2, 3, 4], 16).tokens == ()
    d = Suffix()
    d.begin(np.array([20, 21, 22, 23, 24, 25], np.int32))
    assert d.draft(np.array([20, 21, 22, 23, 24, 25], np.int32), 26, 16).tokens == ()


def test_a_repeated_edit_drafts_the_rest_of_it():
    # an edit applied to one block, then the same edit begun on the next: the rest of it is drafted
    old = [100, 101, 102, 103, 104, 105, 106, 107]
    new = [100, 101, 102, 200, 201, 202, 104, 105, 106, 107]
    other = [300, 301, 302]
    ctx = [*other, *old, 400, *new, 401, *other, *old, 400, *new[:4]]
    d = Suffix(SuffixParams(max_spec_factor=4.0))
    d.begin(np.array(ctx[:-1], np.int32))
    p = d.draft(np.array(ctx[:-1], np.int32), ctx[-1], 64)
    assert p.tokens[:6] == tuple(new[4:])
    assert "occurred" in p.note


def test_min_token_prob_stops_where_the_continuations_disagree():
    # after "1 2 3" came 4 three times and 5 once (p(4) = 3/5, the current occurrence counted);
    # after "7 1 2 3" 4 twice and 5 once (2/4), but that longer match drafts four tokens at 0.5,
    # score 2.0, against three at 0.6, 0.6 and then 0.4, below the bound (score 1.2)
    seq = [1, 2, 3, 4, 7, 1, 2, 3, 4, 7, 1, 2, 3, 4, 7, 1, 2, 3, 5, 7, 1, 2, 3]
    t = _tree(seq)
    d = t.speculate(seq[-24:], 8, min_token_prob=0.5)
    assert d.tokens == (4, 7, 1, 2) and d.match_len == 4
    assert d.probs == pytest.approx((0.5,) * 4) and d.score == pytest.approx(2.0)
    assert t.speculate(seq[-24:], 8, min_token_prob=0.7).tokens == ()   # nothing holds 0.7


def test_tree_mode_keeps_both_continuations_best_first():
    seq = [1, 2, 3, 4, 7, 1, 2, 3, 4, 8, 1, 2, 3, 5, 9, 1, 2, 3]
    t = _tree(seq)
    path = t.speculate(seq[-24:], 6, max_spec_factor=3.0, min_token_prob=0.05)
    tree = t.speculate(seq[-24:], 6, max_spec_factor=3.0, min_token_prob=0.05, tree=True)
    assert path.parents == tuple(range(-1, len(path.tokens) - 1))      # a chain
    assert tree.tokens[0] == 4 and 5 in tree.tokens                     # both branches after 3
    assert tree.parents[tree.tokens.index(5)] == -1
    assert list(tree.probs) == sorted(tree.probs, reverse=True)         # best first
    assert tree.score >= path.score


def test_depth_bounds_match_and_draft_together():
    seq = list(range(50)) * 2
    t = _tree(seq, depth=8)
    d = t.speculate(seq[-8:], 64, max_spec_factor=8.0)
    assert d.match_len + len(d.tokens) <= 8


def test_the_corpus_is_the_global_tree_and_drafts_where_the_prompt_cannot():
    corpus = [(10, 11, 12, 13, 14, 15, 16, 17, 18)]
    d = Suffix(SuffixParams(max_spec_factor=2.0), corpus)
    prompt = np.array([1, 2, 10, 11, 12], np.int32)
    d.begin(prompt)
    p = d.draft(prompt, 13, 16)
    assert p.tokens[:4] == (14, 15, 16, 17) and "corpus" in p.note


def test_bad_settings_are_refused_with_their_flag(tmp_path):
    with pytest.raises(ConfigError, match="min token prob"):
        SuffixParams(min_token_prob=1.5).validate()
    with pytest.raises(ConfigError, match="--spec-suffix-corpus: no such file"):
        SuffixParams(corpus=str(tmp_path / "missing.txt")).validate()


# --------------------------------------------------------------------------- real runs
@pytest.fixture(scope="module")
def demo():
    with Engine(*demo_pair()[:2], EngineSettings(target_threads=1, draft_threads=1,
                                                 repack="off")) as engine:
        yield engine


PROMPT = ("def area(w, h):\n    return w * h\n\n\ndef volume(w, h, d):\n    return w * h * d\n\n\n"
          "def area(w, h):\n    return w * h\n\n\ndef volume(")


def test_greedy_suffix_decoding_emits_the_targets_own_output(demo):
    spec = SpecSettings(types=SUFFIX)
    run = demo.speculative(PROMPT, spec, n_predict=96)
    events = list(run)
    base = demo.baseline(PROMPT, n_predict=96)
    list(base)
    assert_targets_output(demo, run, events, base)
    drafted = [e for e in events if e.drafter == "suffix"]
    assert drafted and sum(e.n_accepted for e in drafted) >= 10
    for e in events:
        assert RoundEvent.from_dict(json.loads(json.dumps(e.to_dict(exact=True)))) == e


def test_a_corpus_file_drafts_its_text(demo, tmp_path):
    text = ("The quick brown fox jumps over the lazy dog near the quiet river bank.\n\n"
            "An unrelated second document.")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text)
    with_corpus = SpecSettings(types=SUFFIX,
                               own={"suffix": SuffixParams(corpus=str(corpus), max_spec_factor=4.0)})
    prompt = "Repeat: The quick brown fox"
    run = demo.speculative(prompt, with_corpus, n_predict=24)
    events = list(run)
    notes = [e.draft_note for e in events if e.drafter == "suffix"]
    plain = list(demo.speculative(prompt, SpecSettings(types=SUFFIX), n_predict=24))
    assert sum(len(e.drafted) for e in events) > sum(len(e.drafted) for e in plain)
    assert any("corpus" in n for n in notes)


@pytest.fixture(scope="module")
def demo4():
    settings = EngineSettings.deterministic(target_threads=1, repack="off", n_seq=4)
    with Engine(demo_pair()[0], None, settings) as engine:
        yield engine


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_suffix_trees_verified_in_one_batch_emit_the_targets_own_output(demo4, temperature):
    """-np 4: a tree of continuations, every node in one batch. A deterministic draft is kept
    exactly where the target's own sample agrees, so even at temperature the tokens are the
    target-alone run's with the same seed (F32 KV cache, no flash attention: the batch's rows and
    single-token decodes agree; with F16 a temperature run parts from the baseline where rounding
    tips a sample, as any batched verification does)."""
    from specscope.core.engine.sampling import SamplerSettings
    sampler = SamplerSettings(temperature=temperature, seed=7)
    spec = SpecSettings(types=SUFFIX, own={"suffix": SuffixParams(max_spec_factor=2.0, min_token_prob=0.05)})
    run = demo4.speculative(PROMPT, spec, sampler, n_predict=96)
    events = list(run)
    base = demo4.baseline(PROMPT, sampler, n_predict=96)
    list(base)
    assert run.tokens == base.tokens
    trees = [e.tree for e in events if e.tree is not None]
    assert trees and all(len(t.branches) <= 4 for t in trees)
    assert any(len(t.branches) > 1 for t in trees)                    # it branched
    for e in events:
        if e.tree is not None:
            assert e.drafted == e.tree.branches[e.tree.kept]
            assert e.tree.nodes >= len(e.drafted)
            assert list(e.emitted[:e.n_accepted]) == list(e.drafted[:e.n_accepted])
        assert RoundEvent.from_dict(json.loads(json.dumps(e.to_dict(exact=True)))) == e


def test_leaves_cut_a_best_first_tree_to_the_sequences():
    from specscope.core.engine.suffix_round import leaves
    # 0 and 1 under the root, 2 under 0, 3 under 1, 4 under 0 (a third leaf), 5 under 2
    parents = (-1, -1, 0, 1, 0, 2)
    kept, paths = leaves(parents, 2)
    assert kept == [0, 1, 2, 3, 5] and paths == [[0, 2, 5], [1, 3]]
    kept, paths = leaves(parents, 1)
    assert kept == [0, 2, 5] and paths == [[0, 2, 5]]
    assert leaves(parents, 4)[1] == [[0, 2, 5], [0, 4], [1, 3]]        # best first


def test_a_conversations_next_turn_keeps_the_earlier_replies_in_the_global_tree(demo):
    spec = SpecSettings(types=SUFFIX)
    first = demo.speculative(PROMPT, spec, n_predict=32)
    list(first)
    old = first._chain.drafters[0]
    prompt = [*first.prompt_tokens, *first.tokens, *demo.target.tokenize("\n\ndef area(", add_special=False)]
    second = demo.speculative(prompt, spec, n_predict=32, resume=first.held)
    list(second)
    new = second._chain.drafters[0]
    assert new.corpus is old.corpus and new.reply != old.reply        # one global tree, a new reply
    assert new.corpus.active[old.reply]                              # the first reply is in it
    alone = demo.baseline(prompt, n_predict=32)
    list(alone)
    assert second.tokens == alone.tokens


def test_a_suffix_tree_is_priced_as_one_batch_of_its_nodes_and_its_lookups():
    """cost.model.tree_speedup without a draft model: each tree round pays the lookup and one
    verification batch of its nodes and the root; a round without a tree, one target token."""
    from specscope.core.measure.cost.model import Calibration, tree_speedup
    c = (1.0, 1.5, 2.0, 2.5, 3.0)
    cal = Calibration(k_max=5, n_past=64, t1=1e-3, c_raw=c, c=c, f=0.0, f_batch=(), k_draft=0)
    # 10 trees of 3 nodes each (a 4-token batch: 2.5), 15 tokens accepted, 0.1 of lookup a round
    priced = tree_speedup(cal, 10, 30, 0, 15, 0, model=False, lookup=0.1)
    assert priced == pytest.approx(10 * 2.5 / (10 * (0.1 + 2.5)))
    assert tree_speedup(cal, 10, 30, 0, 15, 0, model=False) > priced        # lookups cost
    assert tree_speedup(cal, 10, 30, 0, 25, 0, model=False, lookup=0.1) > priced   # accepting pays


def test_a_lossless_check_decodes_a_trees_batch_again_as_it_was(demo4):
    """bench's lossless check replays a run's verification batches: a tree's as its rows were
    (the same order, the same sequences, then its branch kept), so that every row it decodes
    again picks the token the run emitted (greedy)."""
    from specscope.core.measure.bench.lossless import spec_logits_at
    spec = SpecSettings(types=SUFFIX, own={"suffix": SuffixParams(max_spec_factor=2.0, min_token_prob=0.05)})
    run = demo4.speculative(PROMPT, spec, n_predict=96)
    events = list(run)
    trees = [e.tree for e in events if e.tree is not None]
    assert any(len({s for r in t.rows for s in r[3:]}) > 1 for t in trees)     # several sequences
    assert all(t.rows[0][:3] == (e.seed, 0, 1) for e, t in ((e, e.tree) for e in events if e.tree))
    for i, token in enumerate(run.tokens):
        logits = spec_logits_at(demo4, run.prompt_tokens, events, i)
        assert int(np.argmax(logits)) == token, i


def test_the_whatifs_replay_suffix_and_say_why_lookahead_and_trees_cannot_be():
    from specscope.core.measure.whatif.run import spec_problem
    assert spec_problem(SpecSettings(types=SUFFIX), cal=False) == ""
    assert "the target's rows there are not in the run" in spec_problem(
        SpecSettings(types=("lookahead",)), cal=True)
    assert "runner-up candidates" in spec_problem(SpecSettings(types=("draft-tree",)), cal=True)
