"""`specscope bench`: table, JSON, CSV, progress line and bad input."""

import csv
import io
import json

import pytest

from specscope.core.cli import main as cli
from specscope.core.cli.bench import ProgressLine
from specscope.core.errors import ConfigError
from specscope.core.measure.bench.rows import CSV_COLUMNS


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


pytestmark = pytest.mark.usefixtures("quiet_machine")


def bench(tiny_models, *extra):
    return ["bench", "-m", str(tiny_models["target"]), "-md", str(tiny_models["draft"]),
            "-c", "256", "-t", "1", "-td", "1", "-n", "8", "--ignore-eos",
            "--calibration-seconds", "0.3", "-p", "def f(x):", *extra]


def test_bench_prints_the_table(tiny_models, capsys):
    rc = cli.main(bench(tiny_models, "-md", str(tiny_models["random_draft"]), "--spec-draft-n-max", "1,2",
                        "--alpha", "0.6", "--per-prompt"))
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "calibration of draft.gguf:\n  measured now (other processes used 0% of the CPU" in out
    assert "calibration of random-draft.gguf" in out
    assert "c(k)" in out and "f_batch(k)" in out
    assert "measured" in out and "textbook" in out and "calibrated" in out and "α-model" in out
    assert "best n for draft-simple (draft.gguf)" in out and "best n for draft-simple (random-draft.gguf)" in out
    assert "configurations × n (* = best n" in out and out.count("x*") + out.count("x~*") == 2
    assert "lossless:" in out
    assert "per prompt:" in out
    # the two drafts side by side: f, then acceptance and measured speed-up per n
    block = out.split("drafts side by side")[1].split("\n\n")[0].splitlines()
    assert block[1].split() == ["draft", "f", "n=1", "n=2"]
    for name, line in zip(("draft.gguf", "random-draft.gguf"), block[2:4]):
        cells = line.split()
        assert cells[0] == name and 0 < float(cells[1]) and len(cells) == 6
        assert cells[2].endswith("%") and cells[3].endswith("x")
    assert "[#" in err and "done" in err          # the progress line
    # the second run takes the calibration from the cache
    rc = cli.main(bench(tiny_models, "--spec-draft-n-max", "1,2", "-q"))
    out, err = capsys.readouterr()
    assert rc == 0 and "\n  cached, measured" in out and err == ""
    assert "side by side" not in out              # one draft: nothing to compare


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
    assert set(doc["best_n"]) == {"draft-simple (draft.gguf)"}
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


def test_a_bad_draft_among_good_ones_is_refused_before_anything_is_measured(tiny_models, tmp_path, capsys):
    """The window's sweep measured the good draft for minutes, then failed on the bad one and
    kept no result: every file is checked first."""
    bad = tmp_path / "broken-draft.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00garbage" * 10)
    rc = cli.main(["bench", "-m", str(tiny_models["target"]), "-md", str(tiny_models["draft"]),
                   "-md", str(bad), "--spec-draft-n-max", "1", "-n", "8", "-q"])
    out, err = capsys.readouterr()
    assert rc == 2 and "broken-draft.gguf" in err and len(err.strip().splitlines()) == 1, err
    assert "draft-simple" not in out                      # no row was measured


def test_progress_line():
    buf = io.StringIO()
    bar = ProgressLine(buf)
    bar(0, 4, "start")
    bar(4, 4, "done")
    bar.close()
    text = buf.getvalue()
    assert text.startswith("\r[") and "4/4" in text and text.endswith("\n")


def test_bench_on_the_demo_pair(capsys):
    from specscope.core.models.demo import demo_pair
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


def demo_or_skip():
    from specscope.core.models.demo import demo_pair
    try:
        return demo_pair()
    except ConfigError as exc:
        pytest.skip(f"the demo pair is not installed: {exc}")


def shipped_prompt(name):
    from specscope.core.measure.bench.settings import load_prompts
    return dict(load_prompts("drafter_prompts.json"))[name]


def test_bench_sweeps_ngram_drafters_and_chains_on_the_demo_pair(capsys, tmp_path):
    """ngram-simple alone runs once (n does not apply), the chain once per n; rows name the
    chain and count what each member drafted; the calibrated prediction of the n-gram row is
    the chain model with the measured lookup time as its only draft cost."""
    from specscope.core.measure.cost.model import Calibration, chain_round_cost
    from specscope.core.measure.stats import DrafterStats
    demo_or_skip()
    out_csv = tmp_path / "d.csv"
    argv = ["bench", "--spec-type", "ngram-simple", "ngram-simple,draft-simple",
            "--spec-draft-n-max", "1,3", "-n", "24", "--ignore-eos", "-t", "1", "-td", "1",
            "--calibration-seconds", "0.3", "-p", shipped_prompt("repeat_copy")]
    rc = cli.main(argv + ["--json", "-q", "--csv", str(out_csv)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["settings"]["spec_types"] == ["ngram-simple", "ngram-simple>draft-simple"]
    rows = {(r["drafter"], r["n_max"], r["prompt"]): r for r in doc["rows"]}
    assert set(rows) == {("ngram-simple", 0, "p1"), ("ngram-simple", 0, "ALL"),
                         ("ngram-simple>draft-simple", 1, "p1"), ("ngram-simple>draft-simple", 1, "ALL"),
                         ("ngram-simple>draft-simple", 3, "p1"), ("ngram-simple>draft-simple", 3, "ALL")}
    assert set(doc["calibration"]) == {"", "demo-draft.gguf"}     # the n-gram group has no draft

    ngram = rows[("ngram-simple", 0, "ALL")]
    assert ngram["draft"] == ""
    [member] = ngram["drafters"]
    assert member["name"] == "ngram-simple" and member["n_draft_rounds"] >= 1
    assert member["n_accept"] > 0 and ngram["draft_rounds"] == member["n_draft_rounds"]
    assert ngram["by_drafter"] == (f"ngram-simple:{member['n_draft_rounds']}:{member['n_drafted']}:"
                                   f"{member['n_accept']}")
    for chain in (rows[("ngram-simple>draft-simple", n, "ALL")] for n in (1, 3)):
        assert chain["draft"] == "demo-draft.gguf"
        assert [d["name"] for d in chain["drafters"]] == ["ngram-simple", "draft-simple"]
        assert sum(d["n_draft_rounds"] for d in chain["drafters"]) == chain["draft_rounds"]
        assert chain["drafters"][0]["n_draft_rounds"] >= 1    # the prompt's spans come back

    # the prediction: lookup time per round (÷ t1) as the only draft cost
    cal = Calibration.from_dict(doc["calibration"][""])
    assert not cal.has_draft and cal.k_max == 24                  # n-gram drafts up to n - 1 tokens
    assert ngram["lookup_us"] > 0
    assert ngram["lookup_cost"] == pytest.approx(ngram["lookup_us"] * 1e-6 / cal.t1)
    fields = DrafterStats.__dataclass_fields__
    members = [DrafterStats(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()
                               if k in fields}) for d in ngram["drafters"]]
    cost = chain_round_cost(cal, members, ngram["rounds"], n_max=0, lookup=ngram["lookup_cost"])
    assert cost.draft == pytest.approx(ngram["lookup_cost"])
    assert ngram["calibrated_speedup"] == pytest.approx(cost.speedup)
    no_lookup = chain_round_cost(cal, members, ngram["rounds"], n_max=0, lookup=0.0)
    assert no_lookup.speedup > ngram["calibrated_speedup"]
    # the textbook for draftless drafting: tokens per round, nothing to pay for the draft
    assert ngram["textbook_speedup"] == pytest.approx(1 + member["n_accept"] / ngram["rounds"])

    table = list(csv.reader(io.StringIO(out_csv.read_text())))
    header = table[0]
    by = {(line[header.index("drafter")], line[header.index("n_max")], line[header.index("prompt")])
          for line in table[1:]}
    assert ("ngram-simple", "", "ALL") in by and ("ngram-simple>draft-simple", "3", "ALL") in by

    # the text report, from the cached calibrations
    rc = cli.main(argv + ["-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "drafters: ngram-simple, ngram-simple>draft-simple" in out
    assert "n applies to the model drafters only (draft-simple, draft-eagle3" in out
    assert "lookup/round" in out and "rounds won" in out
    assert "ngram-simple>draft-simple (demo-draft.gguf)" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("ngram-simple ") and " ALL " in ln)
    assert " - " in line and "ngram-simple " in line.split("µs")[1]


@pytest.mark.parametrize("types, words", [
    (("ngram-bogus",), "unknown speculative type: ngram-bogus"),
    (("none",), "--spec-type none"),
])
def test_bench_bad_spec_type_exits_2_with_one_line(capsys, types, words):
    demo_or_skip()
    rc = cli.main(["bench", "--spec-type", *types, "-q", "-n", "4", "-p", "x"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and words in err


def test_bench_runs_a_recurrent_pair_without_a_calibration(tiny_models, capsys):
    """A recurrent (or hybrid) memory cannot drop part of a sequence, which the calibration
    needs: bench says so in one line and still measures, with the textbook's f from the runs
    and a dash where the calibrated figures would be."""
    code = cli.main(["bench", "-m", str(tiny_models["mamba"]), "-md", str(tiny_models["mamba_draft"]),
                     "-n", "12", "--spec-draft-n-max", "2", "-p", "hello world", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    why = doc["uncalibrated"]["mamba-draft.gguf"]
    assert "recurrent or hybrid memory" in why and not doc["calibration"]
    row = next(r for r in doc["rows"] if r["prompt"] == "ALL")
    assert row["measured_speedup"] > 0 and row["textbook_speedup"] > 0 and row["f"] > 0
    assert row["calibrated_speedup"] != row["calibrated_speedup"]        # NaN: not calibrated
    assert doc["best_n"]["draft-simple (mamba-draft.gguf)"]["calibrated"] is None
    assert cli.main(["bench", "-m", str(tiny_models["mamba"]), "-md", str(tiny_models["mamba_draft"]),
                     "-n", "12", "--spec-draft-n-max", "2", "-p", "hello world"]) == 0
    text = capsys.readouterr().out
    assert "calibration of mamba-draft.gguf: not calibrated" in text and "not calibrated, textbook" in text


def test_bench_shows_each_rows_spread_and_what_its_figures_cannot_say(capsys, tmp_path):
    """Issue 20, 7: three repetitions by default; every row shows the spread of its speed-up
    over them and is flagged "within noise" when that spread is wider than its distance from
    1x; ngram-simple, which finds nothing to copy in free prose, says it never drafted there."""
    demo_or_skip()
    out_json = tmp_path / "b.json"
    argv = ["bench", "--spec-type", "draft-simple", "ngram-simple", "--spec-draft-n-max", "2", "-n", "12",
            "--ignore-eos", "-t", "1", "-td", "1", "--calibration-seconds", "0.3", "-q", "--per-prompt",
            "-p", shipped_prompt("repeat_copy"), "-p", shipped_prompt("free_prose"), "--out-json", str(out_json)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    doc = json.loads(out_json.read_text())
    assert doc["settings"]["repeats"] == 3 and "2 prompts × 3 repeat(s)" in out
    per_prompt = out.split("\nper prompt:\n")[1].splitlines()
    head = per_prompt[0].split()
    assert head[head.index("measured") + 1] == "spread" and head[-1] == "note"
    for row in doc["rows"]:
        assert row["repeats"] == 3 and row["speedup_min"] <= row["measured_speedup"] <= row["speedup_max"]
        wide = row["speedup_max"] - row["speedup_min"] > abs(row["measured_speedup"] - 1)
        assert row["within_noise"] == wide
        assert ("within noise" in row["note"]) == (wide and not row["never_drafted"])   # moot there
        [line] = [ln for ln in per_prompt if ln.startswith(row["drafter"]) and f"  {row['prompt']}  " in ln]
        assert f"{row['speedup_min']:.2f}–{row['speedup_max']:.2f}" in line
        assert line.endswith(row["note"]) if row["note"] else line.endswith(row["lossless"]) or "µs" in line
    rows = {(r["drafter"], r["prompt"]): r for r in doc["rows"]}
    assert rows[("ngram-simple", "p2")]["never_drafted"] and "never drafted" in rows[("ngram-simple", "p2")]["note"]
    assert not rows[("ngram-simple", "p1")]["never_drafted"]
    assert rows[("ngram-simple", "ALL")]["note"].startswith("drafted on 1 of 2 prompts")
    assert "draft-simple (demo-draft.gguf)  2  ALL" in out          # one name, in every table
    assert "best n for draft-simple (demo-draft.gguf)" in out
    far = any(abs(r["calibrated_error"]) > 0.25 for r in doc["rows"] if r["prompt"] == "ALL")
    assert ("so the gap may be" in out) == far == bool(doc["prediction_caveat"])
    # one repetition on request: no spread, nothing flagged as noise
    assert cli.main(argv[:-2] + ["-r", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 prompts × 1 repeat(s)" in out and "(spread: none with one repetition" in out
    assert not any(ln.endswith("within noise") for ln in out.splitlines())
    line = next(ln for ln in out.splitlines() if ln.startswith("draft-simple (demo-draft.gguf)  2  ALL"))
    assert line.split()[9] == "-"                                    # the spread column
