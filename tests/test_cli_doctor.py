"""``specscope doctor``: readable text, --json, --scan, and exit status 0 / 1 / 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from specscope.core.cli.main import main

from helpers.vocab_gguf import write_no_byte_tokens, write_vocab_gguf


@pytest.fixture
def files(tmp_path):
    good = write_vocab_gguf(tmp_path / "target.gguf", name="Tiny Instruct", finetune="Instruct")
    draft = write_vocab_gguf(tmp_path / "draft.gguf", pad=64, name="Tiny Draft Instruct", finetune="Instruct")
    wrong = write_vocab_gguf(tmp_path / "wrong.gguf", rename={7: "seven"})
    return good, draft, wrong


def test_compatible_pair_exits_0(files, capsys):
    target, draft, _ = files
    assert main(["doctor", str(target), str(draft)]) == 0
    out = capsys.readouterr().out
    assert "COMPATIBLE" in out
    for rule in ("vocabulary type", "BOS/EOS", "vocabulary size", "token text"):
        assert rule in out
    assert "pass  vocabulary size" in out and "differ by 64 tokens" in out
    assert "Cost estimate" in out and "α=0.7" in out and "n=8" in out
    assert "training context" in out and "chat template" in out and "tuning" in out


def test_incompatible_pair_exits_1(files, capsys):
    target, _, wrong = files
    assert main(["doctor", str(target), str(wrong)]) == 1
    out = capsys.readouterr().out
    assert "INCOMPATIBLE" in out
    assert "FAIL  token text" in out and "token 7 differs" in out and '"seven"' in out


def test_json(files, capsys):
    target, draft, wrong = files
    assert main(["doctor", str(target), str(wrong), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["compatible"] is False
    assert [r["passed"] for r in doc["rules"]] == [True, True, True, False]
    assert doc["rules"][3]["values"]["first_different_id"] == 7
    assert set(doc["cost"]["speedups"]) == {"0.5", "0.7", "0.9"}
    assert main(["doctor", str(target), str(draft), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["compatible"] is True


def test_scan(files, tmp_path, capsys):
    target, _, _ = files
    (tmp_path / "junk.gguf").write_text("junk")
    assert main(["doctor", str(target), "--scan", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Compatible drafts (1)" in out and "draft.gguf" in out
    # llama.cpp refuses wrong.gguf; SpecScope drafts with it across vocabularies, ranked after
    cross = out.split("SpecScope can draft with them across vocabularies (1)")[1]
    assert "translate / intersect (auto: translate)" in cross and "wrong.gguf" in cross
    assert "llama.cpp refuses it: token 7 differs" in cross
    assert "junk.gguf: not a GGUF file" in out
    assert main(["doctor", str(target), "--scan", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["path"] for e in doc["compatible"]] == [str(tmp_path / "draft.gguf")]


def test_scan_without_compatible_draft_exits_1(files, tmp_path, capsys):
    target, _, wrong = files
    folder = tmp_path / "only_wrong"
    folder.mkdir()
    wrong.rename(folder / "wrong.gguf")
    assert main(["doctor", str(target), "--scan", str(folder)]) == 1
    assert "No compatible draft" in capsys.readouterr().out


def _make_bad(tmp_path, kind):
    p = tmp_path / f"bad_{kind.replace(' ', '_')}.gguf"
    if kind == "missing":
        pass
    elif kind == "directory":
        p.mkdir()
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "not GGUF":
        p.write_text("hello")
    elif kind == "truncated":
        data = write_vocab_gguf(tmp_path / "whole.gguf", n_base=3000).read_bytes()
        p.write_bytes(data[: len(data) // 3])
    elif kind == "no tokenizer":
        write_vocab_gguf(p, tokenizer=False)
    return p


BAD = ["missing", "directory", "empty", "not GGUF", "truncated", "no tokenizer"]


@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("side", ["target", "draft"])
def test_bad_input_exits_2_with_one_line(files, tmp_path, capsys, kind, side):
    good, _, _ = files
    bad = _make_bad(tmp_path, kind)
    argv = [str(bad), str(good)] if side == "target" else [str(good), str(bad)]
    assert main(["doctor", *argv]) == 2
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1, cap.err
    assert str(bad) in lines[0]
    assert "Traceback" not in cap.err
    assert cap.out == ""


def test_a_head_as_the_target_is_one_line(capsys):
    """An EAGLE-3 head makes no text: as the target it is refused, not called compatible."""
    from specscope.core.models.demo import demo_eagle3_head, demo_pair
    head, draft = demo_eagle3_head(), demo_pair()[1]
    assert main(["doctor", str(head), str(draft)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1, cap.err
    assert f"{head}: this is an EAGLE-3 head" in cap.err and "-md" in cap.err


def test_bad_input_with_json_still_exits_2(tmp_path, files, capsys):
    good, _, _ = files
    assert main(["doctor", str(tmp_path / "nope.gguf"), str(good), "--json"]) == 2
    cap = capsys.readouterr()
    assert "nope.gguf" in json.loads(cap.out)["error"]


def test_bad_scan_target_and_folder(files, tmp_path, capsys):
    good, _, _ = files
    assert main(["doctor", str(good), "--scan", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such folder" in capsys.readouterr().err
    assert main(["doctor", str(tmp_path / "nope.gguf"), "--scan", str(tmp_path)]) == 2
    assert "nope.gguf: no such file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["--scan", "."]])
def test_draft_xor_scan(files, capsys, argv):
    good, draft, _ = files
    extra = [str(draft)] + argv if argv else []
    assert main(["doctor", str(good), *extra]) == 2
    assert "either a DRAFT model or --scan DIR" in capsys.readouterr().err


def test_subprocess_no_traceback(tmp_path):
    """The installed entry point, in a fresh interpreter: bad input is one line and exit 2."""
    good = write_vocab_gguf(tmp_path / "good.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\0\0\0" + b"\xff" * 16)
    for argv, code in (([str(good), str(bad)], 2), ([str(good), str(tmp_path / "no.gguf")], 2),
                       ([str(good), str(good)], 0)):
        proc = subprocess.run([sys.executable, "-m", "specscope.core.cli.main", "doctor", *argv],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr
        if code == 2:
            assert len(proc.stderr.strip().splitlines()) == 1
            assert argv[1] in proc.stderr
        else:
            assert proc.stderr == ""
            assert "COMPATIBLE" in proc.stdout


def test_unreadable_file_exits_2(files, monkeypatch, capsys):
    """An unreadable file (simulated: the tests may run as root, who reads anything)."""
    from specscope.core.models import gguf_file

    good, draft, _ = files
    real_open = open

    def deny(path, *a, **k):
        if str(path) == str(draft):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(gguf_file, "open", deny, raising=False)
    assert main(["doctor", str(good), str(draft)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"specscope doctor: error: {draft}: the file cannot be read (permission denied)"


def test_no_draft_fits_suggests_the_ngram_types(files, tmp_path, capsys):
    """A pair nothing can draft with, a folder without a fitting draft, or no draft at all: the
    doctor points to the draftless n-gram drafters instead of a dead end."""
    target, _, wrong = files
    spm = write_no_byte_tokens(tmp_path / "spm.gguf")
    assert main(["doctor", str(target), str(spm)]) == 1
    out = capsys.readouterr().out
    assert "--spec-type ngram-mod" in out and "needs no draft model" in out
    assert "SpecScope cannot draft with it either" in out and "no byte token for 256" in out
    assert main(["doctor", str(target), str(wrong)]) == 1          # llama.cpp's rule: refused
    out = capsys.readouterr().out
    assert "SpecScope can still draft with it: translate / intersect" in out
    assert "needs no draft model" not in out
    assert main(["doctor", str(target), str(wrong), "--json"]) == 1
    assert "ngram-mod" in json.loads(capsys.readouterr().out)["suggestion"]
    folder = tmp_path / "only_wrong"
    folder.mkdir()
    wrong.rename(folder / "wrong.gguf")
    assert main(["doctor", str(target), "--scan", str(folder)]) == 1
    assert "--spec-type ngram-mod" in capsys.readouterr().out
    assert main(["doctor", str(target)]) == 2
    err = capsys.readouterr().err
    assert "--spec-type ngram-mod" in err and len(err.strip().splitlines()) == 1


def test_a_refused_pair_says_what_specscope_can_draft_with(files, capsys):
    """llama.cpp's verdict, and beside it the overlap, the special tokens that differ, each mode
    with its measured re-tokenization cost, and which one --spec-vocab auto takes."""
    target, _, wrong = files
    assert main(["doctor", str(target), str(wrong)]) == 1
    out = capsys.readouterr().out
    assert ("INCOMPATIBLE for llama.cpp: it will refuse this draft (token text rule failed). "
            "SpecScope can still draft with it: translate / intersect") in out
    assert "overlap: 599 tokens have the same text in both: 99.8% of the target's tokens" in out
    assert "translate  applies (--spec-vocab auto drafts with it)" in out
    assert "intersect  applies (--spec-vocab auto drafts with it under --accept-rule ratio)" in out
    assert out.count("µs per round, measured on this pair") == 2
    assert main(["doctor", str(target), str(wrong), "--json"]) == 1
    cross = json.loads(capsys.readouterr().out)["cross"]
    assert cross["n_shared"] == 599 and cross["refusals"] == {"translate": "", "intersect": ""}
    assert set(cross["per_round_s"]) == {"translate", "intersect"}
    assert all(v > 0 for v in cross["per_round_s"].values())


def test_a_compatible_pair_gets_no_suggestion(files, capsys):
    target, draft, _ = files
    assert main(["doctor", str(target), str(draft)]) == 0
    assert "ngram" not in capsys.readouterr().out
