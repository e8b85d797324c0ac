"""The pair doctor: llama.cpp's vocabulary rules, the notes beyond them, the cost model, scan."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from specscope.core.measure.doctor import pair as pairing
from specscope.core.models import vocab_gate
from specscope.core.errors import ModelFileError
from specscope.core.measure.cost.model import best_n, expected_accepted, speedup_table, textbook_speedup
from specscope.core.measure.doctor.pair import (check_pair, escape_token_text, memory_kind,
                                                tuning_lineage)
from specscope.core.measure.doctor.scan import scan

from helpers.vocab_gguf import write_no_byte_tokens, write_vocab_gguf


# ============================================================================ pure cost model

def test_expected_accepted_is_the_geometric_sum():
    assert expected_accepted(0.5, 1) == pytest.approx(0.5)
    assert expected_accepted(0.5, 3) == pytest.approx(0.5 + 0.25 + 0.125)
    assert expected_accepted(0.9, 8) == pytest.approx(sum(0.9 ** k for k in range(1, 9)))
    assert expected_accepted(1.0, 5) == 5.0
    assert expected_accepted(0.0, 5) == 0.0
    assert expected_accepted(0.7, 0) == 0.0


def test_textbook_speedup_matches_seed_003():
    # (E + 1) / (n·f + 1)
    a, n, f = 0.7, 4, 0.06
    e = 0.7 + 0.49 + 0.343 + 0.2401
    assert textbook_speedup(a, n, f) == pytest.approx((e + 1) / (n * f + 1))
    # seed 003: at f = 0.5, drafting 4 costs 3 target passes: break even needs E = 2
    assert 4 * 0.5 + 1 == 3
    assert textbook_speedup(1.0, 4, 0.5) == pytest.approx(5 / 3)
    # a free draft with perfect acceptance gives n + 1 tokens per pass
    assert textbook_speedup(1.0, 8, 0.0) == pytest.approx(9.0)


def test_best_n():
    assert best_n(0.9, 0.0) == (8, pytest.approx(textbook_speedup(0.9, 8, 0.0)))
    assert best_n(0.5, 1.0)[0] == 1  # an expensive draft: draft as little as possible
    n, s = best_n(0.7, 0.05)
    assert all(textbook_speedup(0.7, k, 0.05) <= s for k in range(1, 9))
    assert 1 <= n <= 8
    # higher acceptance never wants shorter drafts
    f = 0.1
    assert best_n(0.5, f)[0] <= best_n(0.7, f)[0] <= best_n(0.9, f)[0]


def test_speedup_table_shape():
    t = speedup_table(0.1)
    assert set(t) == {0.5, 0.7, 0.9}
    assert all(len(v) == 8 for v in t.values())
    assert t[0.9][3] == pytest.approx(textbook_speedup(0.9, 4, 0.1))


# ============================================================================ pure helpers

@pytest.mark.parametrize("raw, shown", [
    (b"hello", '"hello"'),
    ("\u0120the".encode(), '"\u0120the"'),
    (b"a\nb\tc", '"a\\nb\\tc"'),
    (b'q"uote\\', '"q\\"uote\\\\"'),
    (b"\xff\xfe", '"\\xff\\xfe"'),
    (b"\x01", '"\\x01"'),
    (" ".encode(), '" "'),
    ("\u200b".encode(), '"\\u200b"'),
    (b"", '""'),
])
def test_escape_token_text(raw, shown):
    assert escape_token_text(raw) == shown


def test_memory_kind_by_name():
    assert memory_kind("llama") == "attention"
    assert memory_kind("mamba") == "recurrent"
    assert memory_kind("rwkv7") == "recurrent"
    assert memory_kind("jamba") == "hybrid"
    assert memory_kind("qwen3next") == "hybrid"
    assert memory_kind("llama", recurrent=True) == "recurrent"  # llama.cpp's answer wins


@pytest.mark.parametrize("meta, kind", [
    ({"general.finetune": "Instruct"}, "instruct"),
    ({"general.finetune": "it"}, "instruct"),
    ({"general.name": "Qwen2.5 0.5B Chat"}, "instruct"),
    ({"general.name": "gemma-2-2b-it"}, "instruct"),
    ({"general.finetune": "base"}, "base"),
    ({"general.name": "Llama 3.2 1B"}, "base"),
    ({"general.finetune": "Coder"}, "fine-tuned"),
    ({"general.base_model.count": 1, "general.base_model.0.name": "Llama 3.2 1B"}, "fine-tuned"),
    ({}, "unknown"),
])
def test_tuning_lineage(meta, kind):
    assert tuning_lineage(meta)[0] == kind


# ============================================================================ check_pair on generated files

@pytest.fixture
def pair(tmp_path):
    """pair(target_kwargs, draft_kwargs) -> PairReport"""

    def make(target: dict | None = None, draft: dict | None = None):
        t = write_vocab_gguf(tmp_path / "target.gguf", **(target or {}))
        d = write_vocab_gguf(tmp_path / "draft.gguf", **(draft or {}))
        return check_pair(t, d)

    return make


def _rule(report, name):
    (r,) = [r for r in report.rules if r.name == name]
    return r


def test_identical_vocabularies(pair):
    r = pair()
    assert r.compatible
    assert [x.name for x in r.rules] == ["vocabulary type", "BOS/EOS", "vocabulary size", "token text"]
    assert all(x.passed for x in r.rules)
    assert _rule(r, "vocabulary type").values == {"target": "BPE", "draft": "BPE"}
    v = _rule(r, "BOS/EOS").values
    assert (v["target_add_bos"], v["draft_add_bos"], v["target_bos"], v["draft_bos"]) == (True, True, 1, 1)
    assert (v["target_add_eos"], v["draft_add_eos"], v["target_eos"], v["draft_eos"]) == (False, False, 2, 2)
    s = _rule(r, "vocabulary size").values
    assert (s["target"], s["draft"], s["difference"], s["allowed"]) == (600, 600, 0, 128)
    assert _rule(r, "token text").values["first_different_id"] is None
    assert r.verdict.startswith("COMPATIBLE")
    assert r.reason == "compatible"


def test_padded_by_64_is_compatible(pair):
    r = pair(draft={"pad": 64})
    assert r.compatible
    size = _rule(r, "vocabulary size")
    assert size.passed and size.values["difference"] == 64
    assert "64" in size.message


def test_padded_by_200_is_incompatible(pair):
    r = pair(draft={"pad": 200})
    assert not r.compatible
    size = _rule(r, "vocabulary size")
    assert not size.passed
    assert size.values == {"target": 600, "draft": 800, "difference": 200, "allowed": 128}
    assert size.message == ("vocabulary sizes differ by 200 tokens (target 600, draft 800); "
                            "llama.cpp allows at most 128")
    assert _rule(r, "token text").passed  # padding at the end leaves the shared ids equal
    assert r.verdict.startswith("INCOMPATIBLE")
    assert r.reason == size.message


def test_token_text_changed_at_id_7_is_incompatible(pair):
    r = pair(draft={"rename": {7: "changed\n"}})
    assert not r.compatible
    text = _rule(r, "token text")
    assert not text.passed
    assert text.values["first_different_id"] == 7
    target_text = escape_token_text(chr(0x100 + 2).encode())  # GPT-2's character for byte 0x02
    assert text.values["target_text"] == target_text
    assert text.values["draft_text"] == '"changed\\n"'
    assert "token 7" in text.message
    assert target_text in text.message and '"changed\\n"' in text.message
    assert all(x.passed for x in r.rules if x.name != "token text")


def test_token_text_changed_at_id_3_is_still_compatible(pair):
    r = pair(draft={"rename": {3: "<|something else|>"}})
    assert r.compatible
    assert _rule(r, "token text").values["checked_from"] == 5


def test_first_difference_is_reported(pair):
    r = pair(draft={"rename": {400: "x400", 300: "x300"}})
    assert _rule(r, "token text").values["first_different_id"] == 300


def test_spm_vs_bpe(pair):
    r = pair(target={"model": "llama"}, draft={"model": "gpt2"})
    assert not r.compatible
    t = _rule(r, "vocabulary type")
    assert not t.passed
    assert t.values == {"target": "SPM", "draft": "BPE"}
    assert "SPM" in t.message and "BPE" in t.message


def test_spm_pair_is_compatible(pair):
    r = pair(target={"model": "llama"}, draft={"model": "llama", "pad": 10})
    assert r.compatible
    assert _rule(r, "vocabulary type").values == {"target": "SPM", "draft": "SPM"}


def test_different_bos_id(pair):
    r = pair(draft={"bos": 3})
    assert not r.compatible
    b = _rule(r, "BOS/EOS")
    assert not b.passed
    assert (b.values["target_bos"], b.values["draft_bos"]) == (1, 3)
    assert "BOS ids differ (target 1, draft 3)" in b.message


def test_add_bos_differs(pair):
    r = pair(draft={"add_bos": False})
    assert not r.compatible
    b = _rule(r, "BOS/EOS")
    assert (b.values["target_add_bos"], b.values["draft_add_bos"]) == (True, False)
    assert "adds BOS" in b.message and "does not" in b.message


def test_bos_id_ignored_when_neither_adds_bos(pair):
    # llama.cpp compares the BOS ids only when BOS is added
    r = pair(target={"add_bos": False}, draft={"add_bos": False, "bos": 4})
    assert r.compatible


def test_eos_rules(pair):
    assert pair(draft={"eos": 4}).compatible  # EOS not added: ids may differ
    r = pair(target={"add_eos": True}, draft={"add_eos": True, "eos": 4})
    assert not r.compatible
    assert "EOS ids differ (target 2, draft 4)" in _rule(r, "BOS/EOS").message


def test_values_are_llama_cpps_not_the_files(pair):
    # an SPM vocabulary without add_bos/bos keys gets llama.cpp's defaults (add BOS, id 1)
    r = pair(target={"model": "llama"}, draft={"model": "llama", "add_bos": None, "bos": None})
    b = _rule(r, "BOS/EOS").values
    assert b["draft_bos"] == 1
    assert b["draft_add_bos"] is True
    assert r.compatible


def test_all_failures_are_listed(pair):
    r = pair(draft={"pad": 300, "rename": {10: "zz"}, "bos": 4})
    assert [x.name for x in r.failed_rules] == ["BOS/EOS", "vocabulary size", "token text"]
    assert "BOS/EOS, vocabulary size, token text" in r.verdict
    assert r.reason.startswith("BOS ids differ (target 1, draft 4)")
    assert r.reason.endswith("(and 2 more rules failed)")


def test_vocab_rules_on_loaded_pointers(tmp_path):
    from specscope.core.models.llama import Model

    t = Model(write_vocab_gguf(tmp_path / "t.gguf"), vocab_only=True)
    d = Model(write_vocab_gguf(tmp_path / "d.gguf", pad=200), vocab_only=True)
    try:
        rules = vocab_gate.vocab_rules(t.vocab, d.vocab)
    finally:
        d.close()
        t.close()
    assert [r.passed for r in rules] == [True, True, False, True]
    assert rules[2].message.startswith("vocabulary sizes differ by 200 tokens (target 600, draft 800)")


# ============================================================================ beyond the vocabulary

def test_memory_of_a_recurrent_draft(pair):
    r = pair(draft={"arch": "mamba"})
    assert r.target.memory == "attention" and r.target.can_remove_partial
    assert r.draft.memory == "recurrent" and not r.draft.can_remove_partial
    assert any("draft (mamba)" in n and "will use checkpoints" in n for n in r.notes)
    assert r.compatible  # memory is not one of llama.cpp's vocabulary rules


def test_hybrid_target(pair):
    r = pair(target={"arch": "jamba"})
    assert r.target.memory == "hybrid"
    assert any("target (jamba)" in n and "will use checkpoints" in n for n in r.notes)


def test_context_lengths(pair):
    r = pair(target={"context_length": 32768}, draft={"context_length": 2048})
    assert (r.target.context_length, r.draft.context_length) == (32768, 2048)
    assert any("training context: target 32,768, draft 2,048" in n for n in r.notes)


def test_chat_templates(pair):
    r = pair(target={"chat_template": "A"}, draft={"chat_template": "A"})
    assert r.target.has_chat_template and r.draft.has_chat_template
    assert any("identical" in n for n in r.notes if n.startswith("chat template"))
    r = pair(target={"chat_template": "A"}, draft={"chat_template": "B"})
    assert any("they differ" in n for n in r.notes)
    r = pair(target={"chat_template": "A"})
    assert not r.draft.has_chat_template
    assert any("only the target has one" in n for n in r.notes)


def test_base_draft_for_instruct_target_warns(pair):
    r = pair(target={"name": "Tiny 8M Instruct", "finetune": "Instruct"}, draft={"name": "Tiny 1M"})
    assert r.target.tuning == "instruct"
    assert r.draft.tuning == "base"
    (note,) = [n for n in r.notes if n.startswith("tuning")]
    assert "acceptance may disappoint" in note
    assert "general.finetune = 'Instruct'" in note
    r = pair(target={"finetune": "Instruct"}, draft={"finetune": "Instruct"})
    assert "both instruct (the same kind of tuning" in [n for n in r.notes if n.startswith("tuning")][0]


# ============================================================================ cost estimate

def _weights(n_rows: int, dtype=np.float32) -> dict:
    return {"token_embd.weight": np.zeros((n_rows, 64), dtype), "output_norm.weight": np.zeros(64, np.float32)}


def test_cost_estimate_from_file_sizes(tmp_path):
    t = write_vocab_gguf(tmp_path / "t.gguf", tensors=_weights(4000), file_type=0)
    d = write_vocab_gguf(tmp_path / "d.gguf", tensors=_weights(400, np.float16), file_type=1)
    r = check_pair(t, d)
    assert r.cost.f == pytest.approx(d.stat().st_size / t.stat().st_size)
    assert r.target.n_params == 4000 * 64 + 64
    assert r.draft.n_params == 400 * 64 + 64
    assert r.target.file_type == "F32" and r.draft.file_type == "F16"
    assert r.draft.tensor_types["F16"]["bits_per_weight"] == pytest.approx(16.0)
    assert 16 < r.draft.bits_per_weight < 16.2
    for a in ("0.5", "0.7", "0.9"):
        row = r.cost.speedups[a]
        assert len(row) == 8
        assert row[2] == pytest.approx(textbook_speedup(float(a), 3, r.cost.f), abs=1e-4)
        n, s = best_n(float(a), r.cost.f)
        assert r.cost.best[a] == {"n": n, "speedup": pytest.approx(s, abs=1e-4)}
    assert r.cost.warning is None
    assert "f ≈" in r.verdict


def test_cost_warnings(pair, tmp_path):
    assert "vocabulary only" in pair().cost.warning
    t = write_vocab_gguf(tmp_path / "t.gguf", tensors=_weights(100))
    d = write_vocab_gguf(tmp_path / "d.gguf", tensors=_weights(1000))
    r = check_pair(t, d)
    assert r.cost.f > 1
    assert "not smaller" in r.cost.warning
    assert "cannot speed it up" in r.verdict


def test_report_is_json_serialisable(pair):
    r = pair(draft={"rename": {7: "\x00\xff"}})
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["compatible"] is False
    assert doc["rules"][3]["values"]["first_different_id"] == 7
    assert doc["cost"]["f"] == pytest.approx(r.cost.f)
    assert doc["target"]["vocab"]["type_name"] == "BPE"


# ============================================================================ bad input

def _bad_files(tmp_path):
    good = write_vocab_gguf(tmp_path / "good.gguf")
    (tmp_path / "a_dir.gguf").mkdir()
    (tmp_path / "empty.gguf").write_bytes(b"")
    (tmp_path / "text.gguf").write_text("this is not a model\n")
    data = good.read_bytes()
    (tmp_path / "truncated.gguf").write_bytes(data[: len(data) // 2])
    write_vocab_gguf(tmp_path / "notok.gguf", tokenizer=False)
    write_vocab_gguf(tmp_path / "unknown_arch.gguf", arch="no-such-architecture")
    return {
        "missing": (tmp_path / "missing.gguf", "no such file"),
        "directory": (tmp_path / "a_dir.gguf", "directory"),
        "empty": (tmp_path / "empty.gguf", "empty"),
        "not GGUF": (tmp_path / "text.gguf", "not a GGUF file"),
        "truncated": (tmp_path / "truncated.gguf", "truncated"),
        "no tokenizer": (tmp_path / "notok.gguf", "no tokenizer"),
        "unknown architecture": (tmp_path / "unknown_arch.gguf", "llama.cpp could not load"),
    }


BAD = ["missing", "directory", "empty", "not GGUF", "truncated", "no tokenizer", "unknown architecture"]


@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("side", ["target", "draft"])
def test_bad_input_names_the_file(tmp_path, kind, side):
    good = write_vocab_gguf(tmp_path / "ok.gguf")
    bad, words = _bad_files(tmp_path)[kind]
    args = (bad, good) if side == "target" else (good, bad)
    with pytest.raises(ModelFileError) as exc:
        check_pair(*args)
    assert exc.value.path == str(bad)
    assert words in str(exc.value)
    assert "\n" not in str(exc.value)


# ============================================================================ scan

def test_scan_ranks_and_explains(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    target = write_vocab_gguf(folder / "target.gguf", tensors=_weights(4000))
    write_vocab_gguf(folder / "small.gguf", tensors=_weights(200))
    write_vocab_gguf(folder / "medium.gguf", tensors=_weights(800), pad=64)
    write_vocab_gguf(folder / "padded200.gguf", tensors=_weights(200), pad=200)
    write_vocab_gguf(folder / "spm.gguf", model="llama")
    write_vocab_gguf(folder / "renamed.gguf", rename={7: "seven"})
    (folder / "broken.gguf").write_text("<html>404</html>")
    (folder / "empty.gguf").write_bytes(b"")
    (folder / "readme.txt").write_text("not a model")

    s = scan(target, folder)
    assert [e.path.rsplit("/", 1)[-1] for e in s.compatible] == ["small.gguf", "medium.gguf"]
    assert s.compatible[0].f < s.compatible[1].f
    # llama.cpp refuses three, but SpecScope drafts with them across vocabularies: ranked by f
    # after the compatible ones, the mode named; the files it cannot use at all come last
    assert {e.path.rsplit("/", 1)[-1] for e in s.cross} == {"padded200.gguf", "renamed.gguf", "spm.gguf"}
    assert [e.f for e in s.cross] == sorted(e.f for e in s.cross)
    assert all(e.report.cross.mode == "translate" and "translate / intersect" in e.reason
               for e in s.cross)
    assert {e.path.rsplit("/", 1)[-1] for e in s.incompatible} == {"broken.gguf", "empty.gguf"}
    reasons = {e.path.rsplit("/", 1)[-1]: e.reason for e in s.incompatible + s.cross}
    assert "differ by 200 tokens" in reasons["padded200.gguf"]
    assert "SPM" in reasons["spm.gguf"]
    assert "token 7" in reasons["renamed.gguf"]
    assert "not a GGUF file" in reasons["broken.gguf"]
    assert "empty" in reasons["empty.gguf"]
    assert all("\n" not in r for r in reasons.values())
    assert s.skipped == (str(target),)
    json.dumps(s.to_dict())


def test_scan_bad_folder(tmp_path):
    t = write_vocab_gguf(tmp_path / "t.gguf")
    with pytest.raises(ModelFileError, match="no such folder"):
        scan(t, tmp_path / "nowhere")
    with pytest.raises(ModelFileError, match="not a folder"):
        scan(t, t)
    with pytest.raises(ModelFileError, match="empty"):
        (tmp_path / "e.gguf").write_bytes(b"")
        scan(tmp_path / "e.gguf", tmp_path)


def test_speedups_are_finite(pair):
    r = pair()
    assert all(math.isfinite(x) for row in r.cost.speedups.values() for x in row)


# ============================================================================ the token-text fast path

def test_identical_token_regions_skip_the_per_token_loop(pair, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("byte-identical vocabularies need no per-token calls")

    monkeypatch.setattr(pairing, "first_text_mismatch", boom)
    assert pair(draft={"pad": 100}).compatible


def test_texts_compared_as_llama_cpp_does(pair):
    # the files differ after a NUL byte; llama.cpp compares C strings (strcmp), so they match
    r = pair(target={"rename": {300: "ab\x00c"}}, draft={"rename": {300: "ab\x00d"}})
    assert _rule(r, "token text").passed
    r = pair(target={"rename": {300: "ab\x00c"}}, draft={"rename": {300: "ax\x00c"}})
    assert _rule(r, "token text").values["first_different_id"] == 300


# ============================================================================ across vocabularies

def test_a_refused_demo_draft_is_drafted_across_vocabularies():
    """The demo target with the foreign-vocabulary demo draft: llama.cpp's verdict stays, and the
    doctor says what SpecScope drafts with, on how much overlap, and at what cost per round."""
    from specscope.core.models.demo import DEMO_FOREIGN_DRAFT, demo_pair, models_dir
    target = demo_pair()[0]
    r = check_pair(target, models_dir() / DEMO_FOREIGN_DRAFT)
    assert not r.compatible and r.verdict.startswith("INCOMPATIBLE for llama.cpp")
    assert r.verdict.endswith("SpecScope can still draft with it: translate / intersect")
    c = r.cross
    assert (c.n_shared, c.modes, c.mode) == (2047, ("translate", "intersect"), "translate")
    assert round(c.target_share, 3) == 0.5 and c.draft_share > 0.999
    assert 'BOS, EOS, EOT: target "<|endoftext|>" (0), draft "<|endoftext|>" (1); the same text, ' \
           'another id' in c.specials
    assert 'control tokens only the draft has: 1 ("<|pad|>")' in c.specials
    assert c.per_round_s["translate"] > c.per_round_s["intersect"] > 0
    assert r.spec_type == "draft-simple"
    json.dumps(r.to_dict())


def test_a_vocabulary_without_byte_tokens_is_refused_in_one_line(tmp_path):
    """A SentencePiece draft without byte tokens: llama.cpp's tokenizer would abort on text it
    cannot spell, so neither mode runs (and none was timed); the one line names the file."""
    target = write_vocab_gguf(tmp_path / "t.gguf")
    draft = write_no_byte_tokens(tmp_path / "spm.gguf")
    r = check_pair(target, draft)
    assert r.cross.modes == () and r.spec_type == "" and r.cross.per_round_s == {}
    assert "SpecScope cannot draft with it either: --spec-vocab translate" in r.verdict
    assert "spm.gguf: its SentencePiece vocabulary has no byte token for 256" in r.cross.refusal
    assert "\n" not in r.verdict
    # the other way round the SentencePiece target tokenizes only in translate: intersect runs
    back = check_pair(draft, target)
    assert back.cross.modes == ("intersect",) and "t.gguf" not in back.cross.refusals["translate"]
    assert "spm.gguf" in back.cross.refusals["translate"]


def test_the_doctor_builds_the_token_map_the_run_reads(tmp_path, monkeypatch):
    """The doctor's overlap is the engine's map: it is cached for the pair, so the run (and the
    next check) read it instead of reading every token again."""
    from specscope.core.models.llama import Model
    from specscope.core.models.vocab_map import vocab_map
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    target = write_vocab_gguf(tmp_path / "t.gguf")
    draft = write_vocab_gguf(tmp_path / "d.gguf", rename={7: "seven", 9: "nine"})
    r = check_pair(target, draft)
    assert len(list((tmp_path / "cache" / "vocab-maps").glob("*.npz"))) == 1
    with Model(target, vocab_only=True) as t, Model(draft, vocab_only=True) as d:
        assert vocab_map(t, d).n_shared == r.cross.n_shared == 598
