"""draft-mtp against llama.cpp's own llama-speculative-simple, round for round.

tests/data/mtp_golden.json holds llama-speculative-simple's rounds ("accepted A/D draft
tokens"), built from llama-cpp-python 0.3.36's source, with ``--spec-type draft-mtp`` on two
generated targets with MTP blocks (tests/helpers/ggufgen.py ``write_mtp``: one block, and two,
which llama.cpp chains one per draft step), greedy, on the code prompts to 128 tokens: n_max 1,
3 and 8, n_max 4 with p_min 0.3, and draft-mtp chained after ngram-simple and after ngram-mod
(tests/conformance/speculative_simple.py --suite mtp, which wrote the file). The rounds compared
are those while both runs are inside SpecScope's budget (llama.cpp emits one token more)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.speculative_simple import (MTP_MODELS, golden_failures, rounds_of,
                                            write_mtp_models)

DATA = json.loads((Path(__file__).parent / "data" / "mtp_golden.json").read_text())
GOLDEN = DATA["cases"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    return write_mtp_models(tmp_path_factory.mktemp("mtp"))


@pytest.mark.parametrize("model", sorted(MTP_MODELS))
def test_draft_mtp_equals_llamacpp_round_for_round(models, model):
    failures, compared, _ = golden_failures(models[model], [c for c in GOLDEN if c["pair"] == model])
    assert not failures, "\n".join(failures)
    assert compared > 1000


def test_the_golden_cases_cover_n_max_1_3_8_chained_and_kept_drafts():
    """n_max 1, 3 and 8 on at least 3 prompts x 128 tokens, draft-mtp after an n-gram type, on
    the models the generator writes now; drafts both accepted and rejected, up to 8."""
    labels = {c["label"] for c in GOLDEN}
    for n in (1, 3, 8):
        cases = [c for c in GOLDEN if c["label"] == f"draft-mtp n_max {n}"]
        assert len({c["prompt"] for c in cases}) >= 3 and all(c["n_predict"] == 128 for c in cases)
    assert any(label.startswith("ngram-") and "draft-mtp" in label for label in labels)
    assert DATA["pairs"] == MTP_MODELS
    accepted = {a for c in GOLDEN for _, a, d in rounds_of(c["llama_cpp"]) if d}
    assert {0, 1, 8} <= accepted
