"""``specscope advise`` (core/measure/advise/advisor.py): the decision rule on constructed numbers, the
emitted llama.cpp flags against the vendored arg.cpp, and real runs on the demo pair: a report
with every requested category, a stop that keeps what was measured, one-line errors."""

import json
import re
from types import SimpleNamespace
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from helpers.llama_args import unknown_flags
from specscope.core.cli.main import main as cli_main
from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.engine import EngineSettings, SpecSettings
from specscope.core.measure.advise.advice import (MIN_PASSES, AdviseSettings, Candidate, CategoryAdvice,
                                                  MeasuredCandidate, Pair, Prompt, bench_figure, decide)
from specscope.core.measure.advise.advisor import Advisor, advise, schedule
from specscope.core.measure.advise.report import (TOOLS, from_dict, llama_command, markdown,
                                                  summary_lines, to_dict, write_report)
from specscope.core.measure.cost.break_even import summary as break_even_summary, verdict
from specscope.core.measure.cost.model import Calibration, extended, fit_alpha
from specscope.core.measure.bench.rows import robust_time
from specscope.core.measure.whatif.ngram import configurations
from specscope.core.measure.bench.workloads import load_workloads
from specscope.core.models.chat import render_chat, render_messages
from specscope.core.models.demo import demo_pair
from specscope.core.models.llama import Model

CATS = ("code-editing", "translation")


def candidate(name: str) -> Candidate:
    return Candidate("", SpecSettings(types=("ngram-simple",)), name, 1.2, 0.5, 2.0)


def measured(name: str, *ratios: float) -> MeasuredCandidate:
    """One pass per ratio, over a category of one prompt."""
    return MeasuredCandidate(candidate(name), [Pair(i, 10, 1.0 / r, 10, 1.0) for i, r in enumerate(ratios)])


def test_a_pass_is_pooled_over_its_prompts_and_counts_once_complete():
    # pass 0: 3 prompts, tokens over time (not the mean of the ratios); pass 1: 2 of 3 prompts
    runs = [Pair(0, 10, 1.0, 10, 2.0), Pair(0, 30, 1.0, 30, 1.0), Pair(0, 20, 2.0, 20, 2.0),
            Pair(1, 10, 1.0, 10, 1.0), Pair(1, 10, 1.0, 10, 1.0)]
    m = MeasuredCandidate(candidate("c"), runs, prompts=3)
    assert m.pass_speedups() == [pytest.approx((60 / 4.0) / (60 / 5.0))]      # 1.25, not 1.33
    assert m.pairs == 5 and m.interval() is None


def test_every_categorys_best_gets_its_interval_before_the_second_best_is_measured():
    cats = []
    for name in ("a", "b"):
        cat = CategoryAdvice(name, [Prompt(None, "", [1], [2]), Prompt(None, "", [1], [2])])
        cat.measured = [MeasuredCandidate(candidate(f"{name}{r}"), prompts=2) for r in (1, 2)]
        cats.append(cat)
    order = [(rep, m.candidate.name) for rep, _, m, i, _ in schedule(cats, 8) if i == 0]
    firsts = [name for _, name in order[:2 * MIN_PASSES]]
    assert MIN_PASSES == 6 and firsts == ["a1", "b1"] * MIN_PASSES
    assert order[2 * MIN_PASSES:4 * MIN_PASSES] == [(r, n) for r in range(MIN_PASSES) for n in ("a2", "b2")]
    assert order[4 * MIN_PASSES:] == [(r, n) for r in (6, 7) for n in ("a1", "b1", "a2", "b2")]


def test_the_estimate_is_benchs_own_figure_with_each_pass_a_repetition():
    # two prompts, five passes: per prompt the median seconds per token, weighted by tokens
    rng = np.random.default_rng(1)
    runs = [Pair(rep, tok, tok * t * rng.uniform(0.8, 1.6), tok, tok * 0.3 * rng.uniform(0.8, 1.6))
            for rep in range(MIN_PASSES) for tok, t in ((40, 0.2), (64, 0.25))]
    m = MeasuredCandidate(candidate("c"), runs, prompts=2)
    groups = lambda kind, tokens: [[SimpleNamespace(stats=SimpleNamespace(
        t_total=getattr(r, kind), n_tokens=getattr(r, tokens))) for r in runs[i::2]] for i in (0, 1)]
    spec, base = robust_time(groups("spec_s", "tokens")), robust_time(groups("base_s", "base_tokens"))
    tokens = MIN_PASSES * 104
    assert m.interval()[0] == pytest.approx((tokens / spec) / (tokens / base))   # sweep_rows' own
    assert measured("five", 1.5, 1.6, 1.4, 1.5, 1.7).interval() is None       # < MIN_PASSES


def test_the_range_holds_95_percent_of_fresh_three_repetition_re_measurements():
    """Simulated machine: every run's time is a true cost times heavy-tailed noise. Advise-like
    measurements (12 passes) give a range; fresh bench-like figures (3 repetitions, from the
    same machine) land inside it about 95 % of the time."""
    rng = np.random.default_rng(7)
    noise = lambda *shape: np.exp(rng.normal(0, 0.08, shape)) * (1 + 0.6 * (rng.random(shape) < 0.05))
    tokens = np.full(6, 64.0)
    cost_spec, cost_base = rng.uniform(0.15, 0.25, 6), rng.uniform(0.25, 0.35, 6)
    hits = total = 0
    for trial in range(60):
        spec, base = cost_spec * noise(12, 6), cost_base * noise(12, 6)
        runs = [Pair(rep, 64, 64 * spec[rep, p], 64, 64 * base[rep, p]) for rep in range(12) for p in range(6)]
        _, low, high = MeasuredCandidate(candidate("c"), runs, prompts=6).interval()
        fresh = bench_figure(cost_spec * noise(120, 6), cost_base * noise(120, 6), tokens, tokens,
                             np.arange(120).reshape(40, 3))
        hits += int(((fresh >= low) & (fresh <= high)).sum())
        total += len(fresh)
    assert 0.88 <= hits / total <= 0.99


def test_each_kind_of_drafter_has_its_best_measured_before_a_kinds_runner_up():
    ngram = SpecSettings(types=("ngram-simple",))
    chain = SpecSettings(types=("ngram-simple", DRAFT_MODEL))
    alone = SpecSettings(types=(DRAFT_MODEL,))
    cands = [Candidate("d.gguf", replace(chain, n_max=4), "chain a", 1.4, 0.8, 3.0),
             Candidate("d.gguf", replace(chain, types=("ngram-mod", DRAFT_MODEL)), "chain b", 1.3, 0.8, 3.0),
             Candidate("", replace(ngram, types=("ngram-mod",)), "mod", 1.2, 0.8, 3.0),
             Candidate("d.gguf", alone, "draft", 1.1, 0.8, 3.0),
             Candidate("", ngram, "simple", 1.0, 0.8, 3.0)]
    cat = CategoryAdvice("c", candidates=cands)
    assert [c.name for c in cat.to_measure(3)] == ["chain a", "mod", "draft"]
    assert [c.name for c in cat.to_measure(4)] == ["chain a", "chain b", "mod", "draft"]
    assert [c.name for c in cat.to_measure(2)] == ["chain a", "mod"]


def test_a_clear_gain_is_recommended():
    d = decide([measured("clear", 1.30, 1.25, 1.35, 1.28, 1.31, 1.27),
                measured("slow", 0.8, 0.85, 0.9, 0.82, 0.88, 0.86)])
    assert d.best.candidate.name == "clear" and d.runner_up.candidate.name == "slow"


def test_nothing_beyond_its_interval_means_dont_speculate():
    d = decide([measured("noisy", 1.6, 0.7, 1.7, 0.8, 1.5, 1.9),
                measured("loses", 0.9, 0.92, 0.88, 0.95, 0.91, 0.93)])
    assert d.best is None and d.runner_up.candidate.name == "noisy"
    assert "does not beat 1.0x" in d.why
    assert d.judged and d.verdict == "don't speculate"
    few = decide([measured("few", 3.0, 2.9, 3.1)])              # too few pairs for an interval
    assert few.best is None and not few.judged and few.verdict.startswith("no advice")


def test_a_surer_gain_beats_a_higher_but_uncertain_one():
    d = decide([measured("high", 2.5, 0.9, 2.8, 1.0, 2.6, 2.7),
                measured("sure", 1.20, 1.22, 1.19, 1.21, 1.23, 1.18)])
    assert d.best.candidate.name == "sure" and d.runner_up.candidate.name == "high"


def test_a_calibration_extended_past_its_batches_goes_on_in_a_line():
    c = (1.0, 1.5, 2.0, 2.5, 3.0)
    cal = Calibration(k_max=5, n_past=64, t1=1e-3, c_raw=c, c=c, f=0.0, f_batch=())
    assert extended(cal, 5) is cal
    longer = extended(cal, 8)
    assert longer.k_max == 8 and [longer.cost(k) for k in (6, 7, 8)] == [3.5, 4.0, 4.5]
    pair = replace(cal, f=0.2, f_batch=(0.2, 0.25, 0.3, 0.35), k_draft=4)     # a draft's batches too
    assert [round(extended(pair, 7).draft_batch(k), 9) for k in (5, 6, 7)] == [0.4, 0.45, 0.5]


def test_every_emitted_flag_exists_in_the_vendored_llama_cpp():
    target, draft = demo_pair()
    s = AdviseSettings(target, (draft,), engine=EngineSettings(target_threads=2, draft_threads=1))
    a = Advisor(s).result
    model = SpecSettings(types=(DRAFT_MODEL,), n_max=6, n_min=2, p_min=0.5)
    specs = [("", c) for c in configurations()] + [(draft.name, model),
                                                   (draft.name, replace(model, types=("ngram-simple", DRAFT_MODEL)))]
    used = set()
    for name, spec in specs:
        for tool in (*TOOLS, "llama-cli"):
            line = llama_command(a, MeasuredCandidate(Candidate(name, spec, spec.label, 1.0, 0, 0)), tool)
            if "suffix" in spec.types:        # no llama.cpp program runs it: it says so instead
                assert line.startswith("specscope run -m ") and line.endswith(
                    "# SpecScope only: no llama.cpp program runs suffix (vLLM (Arctic Inference) has it)")
                continue
            words = line.split()
            used |= {w for w in words if w.startswith("-")}
            assert "--spec-type" in words and ",".join(spec.types) in words
            assert not unknown_flags(line), (tool, unknown_flags(line))     # this program takes each
    assert {"-m", "-md", "--spec-draft-n-max", "--spec-draft-p-min", "--spec-draft-n-min",
            "--spec-ngram-mod-n-match", "--spec-ngram-simple-size-n", "-t", "-td"} <= used
    assert llama_command(a, None).split() == ["llama-server", "-m", str(target), "-t", "2"]


@pytest.fixture(scope="module")
def advice():
    target, draft = demo_pair()
    # a budget it does not reach: the passes end it, whatever the machine's speed
    s = AdviseSettings(target, (draft,), CATS, budget_s=900, n_predict=32, top=2, passes=1)
    lines = []
    return advise(s, lines.append), lines


def test_advise_reports_every_category_with_measured_candidates(advice, tmp_path):
    a, lines = advice
    assert [c.category for c in a.categories] == list(CATS) and not a.stopped and not a.out_of_time
    assert any(ln.split("] ", 1)[1].startswith("baseline") for ln in lines)
    assert any("teacher-forced pass" in ln for ln in lines)
    for cat in a.categories:
        assert len(cat.prompts) == 6 and all(p.cont for p in cat.prompts)
        assert cat.candidates[0].predicted is not None and cat.ceilings
        assert [m.pairs for m in cat.measured] == [6, 6]          # top 2, one pass over 6 prompts
        assert all(len(m.pass_speedups()) == 1 and m.interval() is None for m in cat.measured)
        d = cat.decision()
        assert d.best is None or d.best.interval()[1] > 1.0
    doc = to_dict(a)
    assert [c["category"] for c in doc["categories"]] == list(CATS)
    md = markdown(a)
    assert all(f"## {c}" in md for c in CATS) and "llama-server -m" in md
    assert "hindsight ceiling" in md
    summary = "\n".join(summary_lines(a))
    assert all(c in summary for c in CATS) and "hindsight ceiling" in summary
    # no chain one of whose types drafted no round on the category's prompts (its command would
    # carry a flag that does nothing); chains whose types each drafted are still candidates
    for cat in a.categories:
        assert all(not c.silent for c in cat.candidates)
    assert any(len(c.spec.types) > 1 for cat in a.categories for c in cat.candidates)


SVG = "{http://www.w3.org/2000/svg}"


def _ticks(svg, axis: str) -> tuple[float, float]:
    """(slope, offset) mapping data to pixels on ``axis``, read off the drawn tick labels."""
    ticks = [(float(t.text.rstrip("×%")), float(t.get(axis))) for t in svg.iter(SVG + "text")
             if t.get("class") == f"{axis}tick"]
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    slope = (p1 - p0) / (v1 - v0)
    return slope, p0 - slope * v0


@pytest.fixture(scope="module")
def judged():
    """An advice whose candidates have intervals (MIN_PASSES passes over one category)."""
    target, draft = demo_pair()
    return advise(AdviseSettings(target, (draft,), ("translation",), budget_s=900, n_predict=24,
                                 top=2, passes=MIN_PASSES))


def test_the_html_report_has_the_table_and_one_svg_per_plot(judged, tmp_path):
    a = judged
    assert all(m.interval() for c in a.categories for m in c.measured)
    path = tmp_path / "advice.html"
    write_report(a, path)
    root = ET.fromstring(path.read_text(encoding="utf-8"))          # well-formed: parses as XML
    svgs = list(root.iter(SVG + "svg"))
    drafted = [c.category for c in a.categories if any(m.candidate.drafted_at for m in c.measured)]
    assert sorted(s.get("class") for s in svgs) == sorted(
        ["speedups", "break-even"] + [f"acceptance-{c}" for c in drafted])
    doc = to_dict(a)
    rows = [[td.text for td in tr] for tr in root.find(".//table").findall("tr")[1:]]
    for row, cat in zip(rows, doc["categories"], strict=True):
        best, runner = cat["best"], cat["runner_up"]
        iv = lambda m: (f"{m['measured_speedup']:.2f}x ({m['interval'][0]:.2f}-{m['interval'][1]:.2f})"
                        if m and m["interval"] else "-")
        assert row == [cat["category"], best["name"] if best else "don't speculate", iv(best),
                       f"{best['predicted_speedup']:.2f}x" if best else "-",
                       runner["name"] if runner else "-", iv(runner)]
    plot = next(s for s in svgs if s.get("class") == "break-even")
    (sx, ox), (sy, oy) = _ticks(plot, "x"), _ticks(plot, "y")
    dots = {c.find(SVG + "title").text: c for c in plot.iter(SVG + "circle") if c.get("class") == "point"}
    points = a.draft_points()
    assert len(dots) == len(points) == len(a.categories)
    for category, draft, p in points:
        dot = next(d for title, d in dots.items() if title.startswith(f"{category}: {p.name} (α"))
        assert float(dot.get("cx")) == pytest.approx(sx * p.alpha + ox, abs=0.1)
        assert float(dot.get("cy")) == pytest.approx(sy * p.f + oy, abs=0.1)
        assert p.f == a.calibrations[draft].f and draft == Path(demo_pair()[1]).name
    figure = next(f for f in root.iter("figure") if f.find(SVG + "svg") is plot)
    notes = [li.text for li in figure.iter("li")]
    assert all(f"{category}: {verdict(a.calibrations[draft], p)}" in notes for category, draft, p in points)


def test_the_markdown_report_links_its_plots_as_svg_files_beside_it(advice, tmp_path):
    a, _ = advice
    path = tmp_path / "advice.md"
    written = write_report(a, path)
    md = path.read_text(encoding="utf-8")
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", md)
    assert sorted(links) == sorted(p.name for p in written[1:]) and len(links) >= 3
    for p in written[1:]:
        assert ET.parse(p).getroot().tag == SVG + "svg"
    assert "a draft must cost ≤ " in md


def test_the_summary_says_what_a_draft_must_cost_and_where_the_draft_sits(advice):
    a, _ = advice
    name, cal = a.pair_calibration()
    assert cal.has_draft and name == Path(demo_pair()[1]).name
    summary = summary_lines(a)
    line = next(ln for ln in summary if ln.startswith("break-even on this machine"))
    assert line.startswith(f"break-even on this machine, priced with {name}'s pair calibration")
    assert line.endswith(f": {break_even_summary(cal)}") and ("taken under load" in line) == cal.under_load
    for category, _, p in a.draft_points():
        assert f"{category}: {verdict(cal, p)}" in summary
        fixed = next(c for c in a.categories if c.category == category).policies(name)["fixed n"]
        assert p.alpha == fit_alpha(fixed.drafted_at, sum(fixed.accepted_at)) and 0 < p.alpha < 1


def test_a_stop_midway_keeps_what_was_measured():
    target, draft = demo_pair()
    s = AdviseSettings(target, (draft,), CATS[:1], budget_s=900, n_predict=32, top=2, passes=1)
    seen = []

    def say(line):
        seen.append(line)
        if sum("measuring" in ln for ln in seen) == 4:
            raise KeyboardInterrupt        # what Ctrl-C raises in the measuring loop
    a = advise(s, say)
    assert a.stopped and a.phase == "measure"
    assert sum(m.pairs for c in a.categories for m in c.measured) == 3
    assert "STOPPED" in summary_lines(a)[0] and "partial results" in markdown(a)
    # the category says it was stopped and how far it got, not that the budget ran out before
    # it was measured (also once saved and opened again)
    for cat in (a.categories[0], from_dict(json.loads(json.dumps(to_dict(a)))).categories[0]):
        d = cat.decision()
        assert not d.judged and d.why.startswith("stopped "), d.why
        assert "budget" not in d.why and d.verdict == "no advice (not measured on 6 passes)"


def test_the_budget_ends_the_run_without_calling_it_a_stop():
    target, draft = demo_pair()
    s = AdviseSettings(target, (draft,), CATS[:1], budget_s=0.001, n_predict=16, top=1, passes=1)
    a = advise(s)
    assert a.out_of_time and not a.stopped
    assert "the budget ended the run" in summary_lines(a)[0]
    assert f"## {CATS[0]}" in markdown(a)


def test_the_cli_writes_json_and_a_report(tmp_path, capsys):
    target, draft = demo_pair()
    report = tmp_path / "advice.md"
    assert cli_main(["advise", "-m", str(target), "-md", str(draft), "--categories", "translation",
                     "--budget", "8s", "-n", "24", "--top", "1", "--json", "-q", "--no-probe",
                     "--report", str(report)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["category"] for c in doc["categories"]] == ["translation"]
    command = doc["categories"][0]["commands"]["llama-server"]      # suffix has none: it says so
    assert command.startswith(("llama-server -m ", "specscope run -m "))
    assert "## translation" in report.read_text()


@pytest.mark.parametrize("argv, words", [
    (["--categories", "poetry"], ["poetry", "known:"]),
    (["-m", "/nonexistent/model.gguf"], ["/nonexistent/model.gguf", "no such model file"]),
    (["--budget", "soon"], ["soon", "duration"]),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys):
    assert cli_main(["advise", "-q", "--no-probe", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(w in err for w in words)


def test_a_multi_turn_workload_is_the_whole_conversation_in_the_chat_template(smollm2):
    conversation = next(w for w in load_workloads(["multi-turn"]) if len(w.messages) > 1)
    with Model(smollm2, vocab_only=True) as model:
        text = render_messages(model, list(conversation.messages))
        assert text.count("<|im_start|>user") == sum(m["role"] == "user" for m in conversation.messages)
        assert all(m["content"] in text for m in conversation.messages)
        assert text.endswith("<|im_start|>assistant\n")
        single = render_chat(model, conversation.messages[0]["content"])
        assert render_messages(model, [dict(conversation.messages[0])]) == single


def test_a_report_says_when_threads_auto_moved_while_it_measured(judged):
    from specscope.core.measure.advise.report import from_dict
    m = judged.categories[0].measured[0]
    moved = any(x.threads_moved for c in judged.categories for x in c.measured)
    assert ("Threads auto moved" in markdown(judged)) == moved
    m.threads_moved, was = 2, m.threads_moved
    try:
        md = markdown(judged)
        assert "Threads auto moved during 2 of" in md and "pin -t/-td" in md
        again = from_dict(to_dict(judged))
        assert again.categories[0].measured[0].threads_moved == 2
    finally:
        m.threads_moved = was


def test_advice_on_your_own_prompts_within_a_minute(tmp_path, capsys):
    """Issue 31 item 5: `advise --prompts FILE --budget 1m` on the demo pair judges the user's
    category (a recommendation, or "don't speculate") with a measured range; the file mixes
    plain lines and JSON Lines of chat messages."""
    target, draft = demo_pair()
    prompts = tmp_path / "mine.txt"
    prompts.write_text('def add(a, b):\n    return a + b\n\ndef sub(a, b):\n'
                       '[{"role": "user", "content": "Translate to French: the cat sleeps."}]\n'
                       '{"messages": [{"role": "user", "content": "Count from one to ten."}]}\n')
    assert cli_main(["advise", "-m", str(target), "-md", str(draft), "--prompts", str(prompts),
                     "--budget", "1m", "--json", "-q", "--no-probe"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [cat] = doc["categories"]
    assert cat["category"] == "your prompts" and cat["prompts"] == 5 and cat["judged"]
    judged = cat["best"] or cat["runner_up"]
    assert judged["interval"] is not None and judged["measured_speedup"] > 0
    assert doc["seconds"] <= 60 + 5 and doc["plan"].startswith("planned from the target's")


@pytest.mark.parametrize("text, words", [
    ("", ["no prompt"]), ('{"messages": "hello"}\n', ["line 1", "not a chat conversation"])])
def test_a_prompts_file_that_is_not_one_is_one_line(tmp_path, capsys, text, words):
    prompts = tmp_path / "bad.jsonl"
    prompts.write_text(text)
    assert cli_main(["advise", "-q", "--no-probe", "--prompts", str(prompts)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(prompts) in err and all(w in err for w in words)


def test_a_budget_too_short_for_every_category_plans_them_in_turn(smollm2):
    """SmolLM2 alone (n-gram types) and four categories in 90 s: the plan cuts prompts and
    tokens from the target's measured speed, measures the categories in turn (each finished one
    judged), stops on time, and says for the rest how much longer they need."""
    cats = ("multi-turn", "translation", "summarization", "question-answering")
    s = AdviseSettings(Path(smollm2), (), cats, budget_s=90, n_predict=64, top=2)
    log = []
    a = advise(s, log.append)
    assert a.plan.startswith("planned from the target's") and a.seconds <= 90 + 5, log
    assert a.settings.n_predict < 64 or all(len(c.prompts) < 6 for c in a.categories)
    judged = [c for c in a.categories if c.decision().judged]
    rest = [c for c in a.categories if not c.decision().judged]
    assert judged and judged == a.categories[:len(judged)], [x for x in log if "measuring" not in x]
    for c in rest:
        assert c.needs_s and c.needs_s > 0
        assert f"about {c.needs_s:.0f} s more would give it advice" in c.decision().why
    assert all(c.left_out == 6 - len(c.prompts) for c in a.categories)


def test_an_advice_saved_before_the_types_own_parameters_moved_opens_the_same(judged):
    """Version 2 kept each candidate's type parameters as fields of its spec ("ngram_mod",
    "suffix", ..., "p_split"); version 3 under "own". A version-2 document opens with the same
    candidates (the window's last advice and Open advice... read it)."""
    from specscope.core.measure.advise.report import VERSION, from_dict
    from specscope.core.plain import to_plain
    doc = to_dict(judged)
    assert doc["version"] == VERSION == 3
    specs = []

    def as_version_2(x):
        if isinstance(x, dict):
            if "own" in x and "types" in x:           # a candidate's spec
                specs.append(x)
                own = x.pop("own")
                x.update({t.replace("-", "_"): p for t, p in own.items() if t != "draft-tree"},
                         p_split=own["draft-tree"]["p_split"])
            for v in x.values():
                as_version_2(v)
        elif isinstance(x, list):
            for v in x:
                as_version_2(v)
    old = json.loads(json.dumps(doc))
    old["version"] = 2
    as_version_2(old)
    assert specs, "no candidate kept its spec"
    again, now = from_dict(old), from_dict(doc)
    assert [[to_plain(c.spec) for c in cat.candidates] for cat in again.categories] == \
           [[to_plain(c.spec) for c in cat.candidates] for cat in now.categories]


def test_the_time_a_category_still_needs_counts_the_calibrations_not_taken():
    """A budget that ended during the pair's calibration: "about N s more" includes it (the
    longest calibration of the run, at least what the stopped one had taken)."""
    from specscope.core.measure.advise.advisor import Advisor
    a = Advisor.__new__(Advisor)
    a.engines, a.cals, a.cal_s = {"": None, "draft.gguf": None}, {"": object()}, [25.0, 3.0]
    assert a.calibrations_left_s() == 25.0
    a.cals["draft.gguf"] = None                    # taken (or not calibratable): nothing left
    assert a.calibrations_left_s() == 0.0


def test_a_chain_member_that_never_drafts_is_named_silent():
    from specscope.core.engine.drafters import DRAFT_MODEL
    from specscope.core.engine.engine import SpecSettings
    from specscope.core.measure.advise.advice import pool
    from specscope.core.measure.stats import DrafterStats, Stats

    def whatif(*won):
        stats = Stats(n_rounds=10, n_tokens=30, by_drafter=tuple(DrafterStats(t, n_draft_rounds=5)
                                                                  for t in won))
        return SimpleNamespace(stats=stats, predicted=1.1)
    chain = SpecSettings(types=("ngram-mod", DRAFT_MODEL))
    assert pool("c", "d", chain, [whatif(DRAFT_MODEL), whatif(DRAFT_MODEL)]).silent == ("ngram-mod",)
    assert pool("c", "d", chain, [whatif(DRAFT_MODEL), whatif("ngram-mod")]).silent == ()
    alone = SpecSettings(types=(DRAFT_MODEL,))
    assert pool("a", "d", alone, [whatif()]).silent == ()            # one type: nothing to drop
