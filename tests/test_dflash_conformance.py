"""draft-dflash and draft-dspark against llama.cpp's own llama-speculative-simple, round for round.

tests/data/dflash_golden.json and tests/data/dspark_golden.json hold llama-speculative-simple's
rounds ("accepted A/D draft tokens"), built from llama-cpp-python 0.3.36's source, with
``--spec-type draft-dflash`` and ``--spec-type draft-dspark`` on generated target + DFlash head
pairs (tests/helpers/ggufgen.py ``write_dflash_pair``; the DSpark heads carry a Markov head, one
a confidence head too), greedy, on the code prompts to 128 tokens: n_max 1, 3 and 8 (clamped to
the head's block where it is smaller), n_max 4 with p_min 0.3, and chained after ngram-simple
and after ngram-mod (tests/conformance/speculative_simple.py --suite dflash and --suite dspark,
which wrote the files). The rounds compared are those while both runs are inside SpecScope's
budget (llama.cpp emits one token more)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conformance.speculative_simple import (DFLASH_PAIRS, DSPARK_PAIRS, golden_failures,
                                            rounds_of, write_dflash_pairs)
from specscope.core.models.dflash import DFlashHead

SUITES = {"draft-dflash": ("dflash", DFLASH_PAIRS), "draft-dspark": ("dspark", DSPARK_PAIRS)}
DATA = {t: json.loads((Path(__file__).parent / "data" / f"{name}_golden.json").read_text())
        for t, (name, _) in SUITES.items()}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict:
    return write_dflash_pairs(tmp_path_factory.mktemp("dflash"), {**DFLASH_PAIRS, **DSPARK_PAIRS})


@pytest.mark.parametrize("spec_type, pair", [(t, p) for t, (_, ps) in SUITES.items() for p in ps])
def test_a_dflash_head_drafts_as_llamacpp_round_for_round(pairs, spec_type, pair):
    cases = [c for c in DATA[spec_type]["cases"] if c["pair"] == pair]
    failures, compared, kept = golden_failures(pairs[pair], cases)
    assert not failures, "\n".join(failures)
    assert compared > 1000 and kept > 0


@pytest.mark.parametrize("spec_type", sorted(SUITES))
def test_the_golden_cases_cover_n_max_1_3_8_chained_and_kept_drafts(spec_type):
    """n_max 1, 3 and 8 on at least 3 prompts x 128 tokens, the type after an n-gram type, on
    the pairs the generator writes now; drafts both accepted and rejected."""
    data = DATA[spec_type]
    golden = data["cases"]
    for n in (1, 3, 8):
        cases = [c for c in golden if c["label"] == f"{spec_type} n_max {n}"]
        assert len({c["prompt"] for c in cases}) >= 3 and all(c["n_predict"] == 128 for c in cases)
    assert any(c["label"].startswith("ngram-") and spec_type in c["label"] for c in golden)
    assert data["pairs"] == SUITES[spec_type][1]
    accepted = {a for c in golden for _, a, d in rounds_of(c["llama_cpp"]) if d}
    assert {0, 1} <= accepted


def test_the_golden_rounds_tell_misplaced_features_apart(pairs, monkeypatch):
    """The generated heads' drafts depend on the target's features: with each batch's features
    moved one row down (every position injected with its neighbour's), SpecScope's rounds no
    longer match llama.cpp's."""
    features = DFlashHead.features
    monkeypatch.setattr(DFlashHead, "features", lambda head, n: np.roll(features(head, n), 1, axis=0))
    cases = [c for c in DATA["draft-dflash"]["cases"]
             if c["pair"] == "dflash-b" and c["label"] == "draft-dflash n_max 3"]
    failures, _, _ = golden_failures(pairs["dflash-b"], cases)
    assert len(failures) >= len(cases) // 2, failures
