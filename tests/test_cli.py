"""`specscope run` / `specscope baseline` on real llama.cpp with tiny models."""

import json
import subprocess
import sys

import pytest

from specscope.core.cli.main import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def models(tiny_models):
    return ["-m", str(tiny_models["target"]), "-md", str(tiny_models["draft"])]


def test_run_prints_text_and_a_summary(capsys, models):
    code, out, err = run_cli(capsys, "run", *models, "-p", "def f(x):", "-n", "24", "--ignore-eos")
    assert code == 0, err
    assert out.startswith("def f(x):")
    assert "generated: 24 tokens" in out
    assert "n_drafted:" in out and "accept:" in out


def test_json_document_holds_rounds_and_stats_that_agree(capsys, models):
    code, out, _ = run_cli(capsys, "run", *models, "-p", "import os", "-n", "30", "--ignore-eos",
                           "--spec-draft-n-max", "4", "--json", "--deterministic", "--sync", "replay")
    assert code == 0
    doc = json.loads(out)
    assert doc["draft"].endswith("draft.gguf") and doc["target"].endswith("target.gguf")
    assert len(doc["tokens"]) == 30 and doc["finish"] == "n_predict"
    rounds = doc["rounds"]
    assert [t for r in rounds for t in r["emitted"]] == doc["tokens"]
    assert doc["stats"]["n_drafted"] == sum(len(r["drafted"]) for r in rounds)
    assert doc["stats"]["n_accept"] == sum(r["n_accepted"] for r in rounds)
    assert all(len(r["drafted"]) <= 4 for r in rounds)
    assert doc["settings"]["sync"] == "replay"


def test_baseline_json_matches_speculative_tokens(capsys, models):
    common = ["-p", "class A:", "-n", "25", "--ignore-eos", "--json", "--deterministic"]
    _, spec, _ = run_cli(capsys, "run", *models, *common)
    _, base, _ = run_cli(capsys, "baseline", "-m", models[1], *common)
    assert json.loads(spec)["tokens"] == json.loads(base)["tokens"]
    assert json.loads(base)["draft"] is None


def test_stream_prints_the_same_text(capsys, models):
    _, streamed, _ = run_cli(capsys, "run", *models, "-p", "x", "-n", "20", "--ignore-eos", "--stream")
    _, plain, _ = run_cli(capsys, "run", *models, "-p", "x", "-n", "20", "--ignore-eos")
    assert streamed.split("\n\n")[0] == plain.split("\n\n")[0]


def test_prompt_from_file(capsys, models, tmp_path):
    prompt = tmp_path / "p.txt"
    prompt.write_text("def main():\n")
    code, out, _ = run_cli(capsys, "run", *models, "-f", str(prompt), "-n", "5", "--ignore-eos")
    assert code == 0 and out.startswith("def main():\n")


def bad_inputs(tmp_path, tiny_models):
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    cut = tmp_path / "cut.gguf"
    data = tiny_models["target"].read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    return {
        "missing": ["-m", str(tmp_path / "missing.gguf")],
        "not GGUF": ["-m", str(text)],
        "truncated": ["-m", str(cut)],
        "directory": ["-m", str(tmp_path)],
        "incompatible": ["-m", str(tiny_models["target"]), "-md", str(tiny_models["foreign"]),
                         "--spec-vocab", "off"],
        "prompt too long": ["-m", str(tiny_models["target"]), "-c", "256", "-p", "x = 1\n" * 300],
        "missing prompt file": ["-m", str(tiny_models["target"]), "-f", str(tmp_path / "none.txt")],
    }


def test_bad_input_exits_2_with_one_line(capsys, tmp_path, tiny_models):
    for what, args in bad_inputs(tmp_path, tiny_models).items():
        if "-md" not in args:
            args = args + ["-md", str(tiny_models["draft"])]
        code, out, err = run_cli(capsys, "run", *args, "-n", "4")
        assert code == 2, what
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("specscope: error: "), (what, err)
        if what not in ("prompt too long",):
            named = [a for a in args if a.endswith((".gguf", ".txt")) or a == str(tmp_path)]
            assert any(n in lines[0] or n.split("/")[-1] in lines[0] for n in named), (what, err)


def test_a_bad_target_without_a_draft_is_named_before_the_missing_draft(capsys, tmp_path,
                                                                       tiny_models):
    """A target file that is missing or broken is the first problem, not the -md left out."""
    for what, args in bad_inputs(tmp_path, tiny_models).items():
        if what in ("missing", "not GGUF", "truncated", "directory"):
            for command in ("run", "chat"):
                code, _, err = run_cli(capsys, command, *args, "-n", "4")
                assert code == 2 and "needs a draft model" not in err, (what, command, err)
                assert err.startswith(f"specscope: error: {args[1]}: "), (what, command, err)


def test_an_output_that_cannot_be_written_is_one_line_before_the_run(capsys, models, tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    for argv, says in [(["run", *models, "--record", str(tmp_path)], "this is a folder; the session"),
                       (["baseline", "--record", str(a_file / "x.jsonl")], f"({a_file} is not a folder)"),
                       (["chat", *models, "-p", "hi", "--save", str(tmp_path)], "the conversation"),
                       (["bench", *models, "--csv", str(tmp_path)], "this is a folder; the table"),
                       (["advise", *models, "--report", str(a_file / "y.md")], "the report")]:
        code, out, err = run_cli(capsys, *argv, "-n", "4")
        assert code == 2 and out == "", (argv, out)
        assert err.count("\n") == 1 and says in err and str(tmp_path) in err, (argv, err)


def test_a_session_that_fails_to_save_keeps_the_results_shown(capsys, models, tmp_path, monkeypatch):
    from specscope.core.session.session import Session

    def full_disk(self, path):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Session, "save", full_disk)
    code, out, err = run_cli(capsys, "run", *models, "-n", "4", "--record", str(tmp_path / "r.jsonl"))
    assert code == 2 and "accept" in out, out
    assert err == f"specscope: error: {tmp_path / 'r.jsonl'}: cannot write the session (No space left on device)\n"


@pytest.mark.parametrize("argv, says", [
    (["-t", "-2"], "argument -t/--threads: must be at least 0, not -2 (0: auto)"),
    (["-td", "-1"], "argument -td/--threads-draft: must be at least 0"),
    (["-c", "0"], "argument -c/--ctx-size: must be at least 1, not 0 (llama.cpp's -c 0"),
    (["-c", "-10"], "argument -c/--ctx-size: must be at least 1, not -10"),
    (["-b", "0"], "argument -b/--batch-size: must be at least 1, not 0"),
    (["-np", "0"], "argument -np/--parallel: must be at least 1, not 0"),
    (["-b", "x"], "argument -b/--batch-size: 'x' is not a whole number"),
])
def test_a_count_out_of_range_is_refused_before_any_load(capsys, argv, says):
    with pytest.raises(SystemExit) as stop:
        main(["run", *argv, "-n", "4"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and says in err
    # one line, as the docs promise (argparse put its 40-line usage first)
    assert err.count("\n") == 1 and err.endswith("(see specscope run --help)\n"), err


def test_a_context_rounded_up_says_so(capsys, tiny_models):
    code, _, err = run_cli(capsys, "baseline", "-m", str(tiny_models["target"]), "-c", "64",
                           "-p", "x = 1\n" * 100)
    assert code == 2 and "but the context holds 256 (64 asked, rounded up by llama.cpp)" in err, err


def test_a_reader_that_leaves_ends_the_command_quietly(tiny_models):
    """``specscope run | head -1``: the pipe closes under the command; no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "specscope.core.cli.main", "run", "-m",
                             str(tiny_models["target"]), "-md", str(tiny_models["draft"]), "-n", "64",
                             "--stream"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()            # before the model has loaded: its first write finds no reader
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path, tiny_models):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    proc = subprocess.run([sys.executable, "-m", "specscope.core.cli.main", "run", "-m", str(bad),
                           "-md", str(tiny_models["draft"])], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr


# ----------------------------------------------------------------------------- files that used to kill the process

@pytest.fixture(scope="module")
def no_vocab_models(tmp_path_factory):
    from helpers import ggufgen
    d = tmp_path_factory.mktemp("novocab")
    return {kind: ggufgen.write_llama(d / f"{kind}.gguf", n_layer=1, model=kind)
            for kind in ("none", "no_vocab")}


def _cli_process(*argv):
    return subprocess.run([sys.executable, "-m", "specscope.core.cli.main", *map(str, argv)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("kind", ["none", "no_vocab"])
def test_a_model_without_vocabulary_is_one_line_not_an_abort(kind, no_vocab_models, tiny_models):
    # llama.cpp GGML_ASSERTs (SIGABRT) on any token-level call into such a vocabulary;
    # run in a child so that a regression fails this test instead of killing pytest
    bad, good = no_vocab_models[kind], tiny_models["target"]
    for argv in (("run", "-m", good, "-md", bad), ("run", "-m", bad, "-md", good), ("baseline", "-m", bad)):
        proc = _cli_process(*argv, "-n", "4", "-p", "x")
        assert proc.returncode == 2, (argv, proc.returncode, proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"specscope: error: {bad}: "), proc.stderr
        assert "has no tokenizer" in lines[0]


def test_a_corrupted_key_name_is_one_escaped_line(capsys, tiny_models, tmp_path):
    data = bytearray(tiny_models["target"].read_bytes())
    key = b"general.name"
    at = data.index(key)
    data[at:at + len(key)] = b"gen\0ra\n.\x1bame"
    data[at + len(key):at + len(key) + 4] = (77).to_bytes(4, "little")   # and its value type
    bad = tmp_path / "key.gguf"
    bad.write_bytes(bytes(data))
    for command in (("run", "-md", tiny_models["draft"]), ("baseline",), ("bench", "-q", "-md", tiny_models["draft"])):
        code, out, err = run_cli(capsys, command[0], "-m", str(bad), *map(str, command[1:]), "-n", "4")
        assert code == 2, (command, err)
        assert err.count("\n") == 1 and "\0" not in err and "\x1b" not in err, err
        assert err.startswith(f"specscope: error: {bad}: metadata key 'gen\\0ra\\n.\\x1bame' "
                              "has an invalid value type 77"), err


def test_a_tokenizer_that_does_not_fit_the_vocabulary_is_one_line_not_an_abort(tiny_models):
    # issue 20: llama.cpp's tokenizer threw std::out_of_range tokenizing the prompt (SIGABRT)
    bad = tiny_models["wrong_tokenizer"]
    for argv in (("run", "-m", bad, "-md", bad), ("baseline", "-m", bad), ("bench", "-q", "-m", bad, "-md", bad)):
        proc = _cli_process(*argv, "-n", "4", "-p", "hi")
        assert proc.returncode == 2, (argv, proc.returncode, proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"specscope: error: {bad}: "), proc.stderr
        assert "tokenizer.ggml.model = 'llama'" in lines[0]


def test_a_speed_up_measured_under_load_says_it_may_be_off():
    from types import SimpleNamespace

    from specscope.core.cli.generate import baseline_doubts
    from specscope.core.measure.cpuload import LoadReading

    def record(others):
        return SimpleNamespace(started_at=None, ended_at=None, load=LoadReading(others, 2, 0.6))
    busy = SimpleNamespace(run=record(0.45), baseline=record(0.0))
    assert baseline_doubts(busy) == [
        "other processes used 0.90 of 2 cores during the run (0.6 s): the speed-up may be off "
        "(specscope bench repeats the runs and says how far they agree)"]
    assert baseline_doubts(SimpleNamespace(run=record(0.1), baseline=record(0.0))) == []


def test_flags_the_run_does_not_use_are_named(capsys, tiny_models):
    t, d = str(tiny_models["target"]), str(tiny_models["draft"])
    for argv, note in [
        (["baseline", "-m", t, "-td", "3", "-ngld", "2"], "-td, -ngld not used: the target runs alone"),
        # -md was read as -m d, and the error named the draft file as a stray argument
        (["baseline", "-m", t, "-md", d], "-md not used: the target runs alone"),
        (["run", "-m", t, "-md", d, "--spec-type", "ngram-simple"],
         f"-md {d} not used: ngram-simple drafts without a draft model"),
        (["run", "-m", t, "-md", d, "-np", "4"], "-np 4 not used: only suffix and draft-tree draft"),
        (["run", "-m", t, "-md", d, "--spec-draft-n-max", "0"],
         "--spec-draft-n-max 0: draft-simple drafts nothing"),
        (["run", "-m", t, "-md", d], None),
    ]:
        code, _, err = run_cli(capsys, *argv, "-n", "4", "--no-probe")
        assert code == 0, (argv, err)
        assert (f"specscope: note: {note}" in err) if note else "note:" not in err, (argv, err)


def test_a_piped_chat_separates_its_replies_and_stops_at_a_line_it_cannot_take(capsys, monkeypatch):
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO("def add(a, b):\ndef sub(a, b):\n"))
    assert main(["chat", "-n", "6", "--no-probe", "--ignore-eos"]) == 0
    out, err = capsys.readouterr()
    assert out.endswith("\n\n") and len(out.rstrip("\n").split("\n\n")) >= 2, out
    assert err.count("[turn ") == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("def add(a, b):\n/foo\ndef sub(a, b):\n"))
    assert main(["chat", "-n", "6", "--no-probe"]) == 2
    assert "unknown command /foo" in capsys.readouterr().err


def test_a_missing_session_file_is_named_before_any_window(capsys):
    for argv in (["/nowhere/run.jsonl"], ["gui", "--session", "/nowhere/run.jsonl"],
                 ["replay", "/nowhere/run.jsonl"], ["export", "/nowhere/run.jsonl", "--gif", "x.gif"]):
        assert main(argv, gui=lambda args: pytest.fail("the window was opened")) == 2
        assert capsys.readouterr().err == "specscope: error: /nowhere/run.jsonl: no such file\n"


def test_a_table_or_document_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """`bench --out-json` on a disk that filled up left 8 KB of a JSON document behind."""
    from pathlib import Path

    from specscope.core.cli.args import write_text_whole
    out = tmp_path / "b.json"
    out.write_text("the earlier document")
    real = Path.write_text

    def full_disk(self, text, **kw):
        real(self, text[:5], **kw)
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError):
        write_text_whole(out, '{"a": 1}')
    monkeypatch.setattr(Path, "write_text", real)
    assert out.read_text() == "the earlier document" and sorted(tmp_path.iterdir()) == [out]
    write_text_whole(out, '{"a": 1}')
    assert out.read_text() == '{"a": 1}'
