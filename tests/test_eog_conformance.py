"""Runs that end by end of generation, against llama.cpp's own llama-speculative-simple.

tests/data/eog_golden.json holds what llama-speculative-simple (built from llama-cpp-python
0.3.36's source) did on each case: every round ("accepted A/D draft tokens", "partial
acceptance: A < D"), the text it printed and its totals (n_predict, n_drafted, n_accept).
The cases (tests/conformance/speculative_simple.py --suite eog, which wrote the file): SmolLM2-135M-
Instruct as its own draft on chat prompts (draft-simple at n_max 1, 3, 8 and every n-gram type),
the demo pair on prompts that reach <|endoftext|>, and generated hybrid LFM2 and Mamba pairs, whose
rounds checkpoint and replay. SpecScope must emit nothing after the first end-of-generation token,
count an accepted drafted one as llama.cpp does, and end where llama.cpp ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.speculative_simple import (Outcome, case_prompt, differences, our_run, rounds_of,
                                            write_hybrid_pair, write_recurrent_pair)
from specscope.core.models.demo import demo_pair
from specscope.core.engine.engine import Engine, EngineSettings

GOLDEN = json.loads((Path(__file__).parent / "data" / "eog_golden.json").read_text())["cases"]
PAIRS = sorted({(c["model"], c["draft"] or "") for c in GOLDEN})


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory, request) -> dict:
    t, d = demo_pair()
    paths = {"demo-target": t, "demo-draft": d}
    paths["lfm2"], paths["lfm2-draft"] = write_hybrid_pair(tmp_path_factory.mktemp("eog-hybrid"))
    paths["mamba"], paths["mamba-draft"] = write_recurrent_pair(tmp_path_factory.mktemp("eog-mamba"))
    if any(c["model"] == "smollm2" for c in GOLDEN):
        paths["smollm2"] = request.getfixturevalue("smollm2")
    return paths


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(filter(None, p)) for p in PAIRS])
def test_runs_that_end_equal_llamacpp_round_for_round(model_paths, pair):
    model, draft = pair
    cases = [c for c in GOLDEN if (c["model"], c["draft"] or "") == pair]
    c0 = cases[0]
    settings = EngineSettings(n_ctx=c0["n_ctx"], target_threads=c0["threads"],
                              draft_threads=c0["threads"])
    failures = []
    with Engine(model_paths[model], model_paths[draft] if draft else None, settings) as engine:
        for case in cases:
            bias = tuple(tuple(b) for b in case.get("bias", ()))
            ours, events = our_run(engine, case_prompt(engine, case), case["flags"], case["n_predict"],
                                   bias)
            ref = Outcome(**{**case["llama_cpp"], "rounds": rounds_of(case["llama_cpp"]["rounds"])})
            diff = differences(ours, ref, whole=True)
            assert events[-1].finish == "eog", case["label"]
            if diff:
                failures.append(f"{case['label']}, {case['prompt'][1][:30]!r}: {'; '.join(diff)}")
    assert not failures, "\n".join(failures)


def test_the_golden_cases_cover_what_issue_20_asks():
    """Chat prompts on SmolLM2, the demo pair reaching <|endoftext|>, n_max 1, 3 and 8, every
    n-gram type, the checkpoint path (the three ways a round can end there are checked on
    SmolLM2 in test_real_smollm2.py)."""
    labels = " | ".join(c["label"] for c in GOLDEN)
    for part in ("smollm2 chat", "demo <|endoftext|>", "hybrid lfm2 checkpoints",
                 "recurrent mamba checkpoints", "n_max 1 ",
                 "n_max 3", "n_max 8", "ngram-simple", "ngram-map-k ", "ngram-map-k4v", "ngram-mod",
                 "ngram-cache"):
        assert part in labels + " ", part
    assert any("<" in c["llama_cpp"]["rounds"] for c in GOLDEN)       # partial acceptances
