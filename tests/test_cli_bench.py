"""`specscope bench`: table, JSON, CSV, progress line and bad input."""

import csv
import io
import json

import pytest

from specscope.core import cli
from specscope.core.cli_bench import ProgressLine
from specscope.core.errors import ConfigError
from specscope.core.sweep import CSV_COLUMNS


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


def bench(tiny_models, *extra):
    return ["bench", "-m", str(tiny_models["target"]), "-md", str(tiny_models["draft"]),
            "-c", "256", "-t", "1", "-td", "1", "-n", "8", "--ignore-eos",
            "--calibration-seconds", "0.3", "-p", "def f(x):", *extra]


def test_bench_prints_the_table(tiny_models, capsys):
    rc = cli.main(bench(tiny_models, "-md", str(tiny_models["random_draft"]), "--spec-draft-n-max", "1,2",
                        "--alpha", "0.6", "--per-prompt"))
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "calibration of draft.gguf (measured now)" in out
    assert "calibration of random-draft.gguf" in out
    assert "c(k)" in out and "f_batch(k)" in out
    assert "measured" in out and "textbook" in out and "calibrated" in out and "α-model" in out
    assert "best n for draft.gguf" in out and "best n for random-draft.gguf" in out
    assert "drafts × n (* = best n)" in out and out.count("x*") == 2
    assert "lossless:" in out
    assert "per prompt:" in out
    assert "[#" in err and "done" in err          # the progress line
    # the second run takes the calibration from the cache
    rc = cli.main(bench(tiny_models, "--spec-draft-n-max", "1,2", "-q"))
    out, err = capsys.readouterr()
    assert rc == 0 and "(cached, measured" in out and err == ""


def test_bench_json_and_csv(tiny_models, tmp_path, capsys):
    out_csv, out_json = tmp_path / "t.csv", tmp_path / "t.json"
    rc = cli.main(bench(tiny_models, "--spec-draft-n-max", "1-2", "--json", "-q", "--deterministic",
                        "--csv", str(out_csv), "--out-json", str(out_json)))
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc = json.loads(out)
    assert doc == json.loads(out_json.read_text())
    assert doc["settings"]["n_values"] == [1, 2]
    assert doc["settings"]["engine"]["kv_type"] == "f32"
    assert len(doc["rows"]) == 4                       # 2 n × (1 prompt + ALL)
    assert all(r["lossless"] == "identical" for r in doc["rows"])  # deterministic numerics
    assert set(doc["best_n"]) == {"draft.gguf"}
    rows = list(csv.reader(io.StringIO(out_csv.read_text())))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 5


@pytest.mark.parametrize("extra, words", [
    (("--spec-draft-n-max", "0"), "draft lengths"),
    (("--spec-draft-n-max", "x"), "draft lengths"),
    (("--prompts", "/nonexistent/prompts.json"), "prompt set"),
    (("-n", "1"), "-n"),
    (("--repeats", "0"), "repeats"),
])
def test_bench_bad_input_exits_2_with_one_line(tiny_models, capsys, extra, words):
    argv = bench(tiny_models, *extra)
    if extra[0] == "--prompts":
        argv = [a for a in argv if a not in ("-p", "def f(x):")]
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specscope: error:") and words in lines[0]


def test_bench_missing_model_exits_2(tmp_path, capsys):
    rc = cli.main(["bench", "-m", str(tmp_path / "nope.gguf"), "-md", str(tmp_path / "nope2.gguf"), "-q"])
    assert rc == 2
    assert capsys.readouterr().err.strip().startswith("specscope: error:")


def test_progress_line():
    buf = io.StringIO()
    bar = ProgressLine(buf)
    bar(0, 4, "start")
    bar(4, 4, "done")
    bar.close()
    text = buf.getvalue()
    assert text.startswith("\r[") and "4/4" in text and text.endswith("\n")


def test_bench_on_the_demo_pair(capsys):
    from specscope.core.demo import demo_pair
    try:
        demo_pair()
    except ConfigError as exc:
        pytest.skip(f"the demo pair is not installed: {exc}")
    rc = cli.main(["bench", "--spec-draft-n-max", "1,3", "-n", "16", "--ignore-eos", "-q", "-t", "1", "-td", "1",
                   "--calibration-seconds", "1",
                   "-p", "def parse_args(argv):\n"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "demo-draft.gguf" in out and "calibrated" in out
