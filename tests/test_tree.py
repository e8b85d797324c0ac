"""draft-tree: llama-speculative's tree of drafts (core/engine/drafters/tree.py, tree_round.py).

tests/data/tree_golden.json holds what ``llama-speculative``, built from llama-cpp-python
0.3.36's source with ``params.kv_unified = true`` (tests/conformance/speculative_tree.py, which
wrote it), did round by round: the demo pair and SmolLM2-135M-Instruct as its own draft, -np 1,
2 and 4, greedy on four prompts and at temperature 0.8 with seeds 1-3: every branch, the kept
one, the accepted tokens and the target's own token. SpecScope must do the same.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conformance.speculative_tree import compare, ours
from specscope.core.engine.cxx_random import MinstdRand0
from specscope.core.engine.drafters.tree import TreeParams
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.engine.tree_round import _residual
from specscope.core.errors import ConfigError
from specscope.core.measure.command_line import command_line
from specscope.core.models.demo import demo_pair
from helpers.lossless import assert_targets_output

GOLDEN = json.loads((Path(__file__).parent / "data" / "tree_golden.json").read_text())["cases"]
TREE = ("draft-tree",)


def _engine(target, draft, n_seq: int) -> Engine:
    return Engine(target, draft, EngineSettings(n_seq=n_seq, n_ctx=2048, target_threads=1,
                                                draft_threads=1, repack="off"))


@pytest.fixture(scope="module")
def pairs(request) -> dict:
    paths = {"demo": demo_pair()}
    sm = request.getfixturevalue("smollm2")
    paths["smollm2"] = (sm, sm)
    return paths


@pytest.mark.parametrize("pair", ["demo", "smollm2"])
@pytest.mark.parametrize("np_", [1, 2, 4])
def test_tree_rounds_equal_llama_speculative(pairs, pair, np_):
    cases = [c for c in GOLDEN if c["pair"] == pair and c["np"] == np_]
    assert len(cases) == 7          # 4 prompts greedy, 3 seeds at temperature
    failures, compared = [], 0
    with _engine(*pairs[pair], np_) as engine:
        for c in cases:
            events = ours(engine, c["prompt"], c["n"], c["temp"], c["seed"], 3)
            n, same, first = compare(c["rounds"], events)
            compared += n
            if same != n:
                failures.append(f"{c['prompt'][:20]!r} temp {c['temp']} seed {c['seed']}: {first}")
    assert not failures, "\n".join(failures)
    assert compared >= 60


def test_the_golden_trees_branch_where_llama_speculative_branched():
    """Greedy never branches; at temperature with -np > 1 it does, often: the golden data
    proves the tree where it splits, not only where it is a chain."""
    def widths(c):
        return [len(r["branches"]) for r in c["rounds"]]
    assert all(w <= 1 for c in GOLDEN if c["temp"] == 0 for w in widths(c))
    split = [w for c in GOLDEN if c["temp"] > 0 and c["np"] > 1 for w in widths(c) if w > 1]
    assert len(split) >= 100
    assert max(w for c in GOLDEN if c["np"] == 4 for w in widths(c)) == 4
    kept_split = sum(r["kept"] > 0 for c in GOLDEN for r in c["rounds"])
    assert kept_split >= 30


@pytest.fixture(scope="module")
def demo4():
    with _engine(*demo_pair(), 4) as engine:
        yield engine


def test_greedy_tree_emits_the_targets_own_output_and_never_splits(demo4):
    prompt = "def parse_args(argv):"
    run = demo4.speculative(prompt, SpecSettings(types=TREE, n_max=4), n_predict=64)
    events = list(run)
    base = demo4.baseline(prompt, n_predict=64)
    list(base)
    assert_targets_output(demo4, run, events, base)
    assert all(len(e.tree.branches) == 1 for e in events if e.tree)
    assert sum(e.n_accepted for e in events) > 20


def test_a_tree_at_temperature_splits_only_where_a_runner_up_holds_more_than_p_split(demo4):
    spec = SpecSettings(types=TREE, n_max=5, own={"draft-tree": TreeParams(0.15)})
    events = list(demo4.speculative("class Queue:\n", spec, SamplerSettings(temperature=0.8, seed=3),
                                    n_predict=96))
    trees = [e.tree for e in events if e.tree]
    assert any(len(t.branches) > 1 for t in trees)
    for t in trees:
        assert len(t.branches) <= 4
        assert all(len(b) == t.steps for b in t.branches)      # every branch as deep as the tree
        assert t.nodes == len({b[:d + 1] for b in t.branches for d in range(len(b))})
        assert t.nodes <= spec.n_max + 4
        for j, (depth, parent) in enumerate(t.origins()[1:], 1):
            assert parent < j and t.branches[j][:depth] == t.branches[parent][:depth]
            assert t.probs[j][depth] > spec.params("draft-tree").p_split   # the runner-up it split off with
    # llama-speculative's n_drafted: the draft's decodes (the kept branch is as long)
    assert sum(len(e.drafted) for e in events) == sum(t.steps for t in trees)


def test_p_split_1_keeps_the_tree_a_chain(demo4):
    spec = SpecSettings(types=TREE, own={"draft-tree": TreeParams(1.0)})
    events = list(demo4.speculative("class Queue:\n", spec,
                                    SamplerSettings(temperature=0.8, seed=3), n_predict=48))
    assert all(len(e.tree.branches) == 1 for e in events if e.tree)


def test_tree_events_survive_a_session_file(demo4):
    events = list(demo4.speculative("def f(x):", SpecSettings(types=TREE), SamplerSettings(
        temperature=0.8, seed=2), n_predict=24))
    tree_events = [e for e in events if e.tree]
    assert tree_events
    for e in events:
        assert RoundEvent.from_dict(json.loads(json.dumps(e.to_dict(exact=True)))) == e


def test_draft_tree_drafts_alone_and_needs_a_sequence():
    with pytest.raises(ConfigError, match="draft-tree is llama-speculative's own loop"):
        SpecSettings(types=("ngram-mod", "draft-tree")).validate()
    with pytest.raises(ConfigError, match="-np must be at least 1"):
        EngineSettings(n_seq=0)
    with pytest.raises(ConfigError, match="p_split"):
        SpecSettings(types=TREE, own={"draft-tree": TreeParams(1.5)}).validate()


def test_its_llama_cpp_command_is_llama_speculative():
    spec = SpecSettings(types=TREE, n_max=5, own={"draft-tree": TreeParams(0.2)})
    line = command_line("llama-server", "t.gguf", spec, "d.gguf", parallel=4)
    assert line == "llama-speculative -m t.gguf -md d.gguf -np 4 --spec-draft-n-max 5 --spec-draft-p-split 0.2"


def test_the_residual_subtracts_index_by_index_as_llama_speculative():
    """Both lists sorted by token id, q subtracted from p position by position: token 5 loses
    token 7's probability and token 9 keeps its own (speculative.cpp; module docs)."""
    ids, p = np.array([9, 5], np.int32), np.array([0.4, 0.6], np.float32)
    q_ids, q = np.array([7, 9], np.int32), np.array([0.5, 0.5], np.float32)
    out_ids, out_p = _residual(ids, p, q_ids, q)
    assert out_ids.tolist() == [5, 9] and out_p.tolist() == [1.0, 0.0]


def test_minstd_rand0_draws_what_libstdcxx_draws():
    """Recorded from g++ 12 (libstdc++): std::default_random_engine rng(seed), then
    uniform_real_distribution<>, uniform_int_distribution<unsigned>(0, n-1) for n = 1, 2, 3, 4,
    7, discrete_distribution<> over {0.5, 0.25, 0.125, 0.1, 0.025} four times, one over {1}
    (no draw) and one more real."""
    want = {
        1: "0.13153778773876065 0.4586501320232198 0.21895918621247895 0 1 2 3 2 2 0 1 0 0 "
           "0.41748597421767852",
        42: "0.52458710179175383 0.26330554078427826 0.19628582558072902 0 1 1 1 0 3 0 0 0 0 "
            "0.53441092738704565",
    }
    for seed, line in want.items():
        r = MinstdRand0(seed)
        got = [repr_(r.uniform_real()) for _ in range(3)] + [str(r.uniform_int(0, n - 1)) for n in (1, 2, 3, 4, 7)]
        probs = np.array([0.5, 0.25, 0.125, 0.1, 0.025], np.float32)
        got += [str(r.discrete(probs)) for _ in range(4)] + [str(r.discrete([1.0])), repr_(r.uniform_real())]
        assert " ".join(got) == line


def repr_(x: float) -> str:
    return f"{x:.17g}"
