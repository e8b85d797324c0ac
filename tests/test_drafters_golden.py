"""Every n-gram drafter and chain against llama.cpp's own drafts, recorded.

tests/data/drafter_golden.json holds llama.cpp's rounds (accepted, drafted, draft tokens) for
token sequences run through llama-speculative-simple's loop with an oracle target (see
tests/conformance/drafters.py, which wrote it from llama.cpp built from llama-cpp-python
0.3.36's source, and tests/reference/drafter_oracle.cpp). CI has no reference build; this
replays those sequences through SpecScope's drafters and requires the same drafts."""

import json
import pathlib

import pytest

from conformance.drafters import chain_from_flags
from conformance.drafter_oracle import oracle_rounds

GOLDEN = json.loads((pathlib.Path(__file__).parent / "data" / "drafter_golden.json").read_text())
CASES = GOLDEN["cases"]


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split()]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['case']}-{i}" for i, c in enumerate(CASES)])
def test_drafts_equal_llamacpp(case):
    ours = oracle_rounds(chain_from_flags(case["flags"]), _ints(case["prompt"]), _ints(case["cont"]),
                         case["n_ctx"], case["n_predict"])
    ref = []
    for line in case["rounds"]:
        head, _, toks = line.partition(":")
        acc, n = map(int, head.split())
        ref.append((acc, n, tuple(_ints(toks))))
    assert len(ours) <= len(ref)          # SpecScope stops at a budget of 0 (engine docs)
    first = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), None)
    assert first is None, f"round {first}: ours {ours[first]}, llama.cpp {ref[first]}"


def test_the_recorded_cases_draft():
    """Each case drafts in some of its recorded runs (else it would check nothing); llama.cpp's
    defaults (12-token n-grams) seldom match in these short random sequences."""
    drafted = {}
    for case in CASES:
        n = sum(1 for line in case["rounds"] if int(line.split()[1]) > 0)
        drafted[case["case"]] = drafted.get(case["case"], 0) + n
    quiet = [c for c, n in drafted.items() if n == 0 and not c.endswith("defaults")]
    assert not quiet and len(drafted) >= 20, quiet
