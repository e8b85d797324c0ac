"""How far to trust a sweep's figures (issue 20, 7): the spread of the measured speed-up over
the repetitions, rows within noise, drafters that never drafted, and why a calibrated
prediction may be far off. Plain numbers: runs of known tokens and seconds."""

from dataclasses import replace

import pytest

from specscope.core.measure.bench import report as sp
from specscope.core.measure.bench import rows as sr
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.bench.lossless import RunResult
from specscope.core.measure.stats import Stats


def run(tokens, seconds, drafted=0):
    """A run of ``tokens`` in ``seconds``; ``drafted`` > 0: rounds that verified a one-token draft."""
    stats = Stats(n_tokens=tokens, t_total=seconds, n_rounds=max(1, tokens - drafted),
                  n_draft_rounds=drafted, n_drafted=drafted, n_accept=drafted)
    return RunResult("spec" if drafted else "baseline", tuple(range(tokens)), stats, 0.0, "n_predict")


def cell(prompt, reps, drafted=5, drafter="draft-simple"):
    """reps: (speculative seconds, (baseline seconds, ...)) per repetition, 10 tokens each."""
    c = sr.Cell("d.gguf" if "draft-simple" in drafter else "", 4 if "draft-simple" in drafter else 0,
                prompt, drafter)
    for spec_s, base_s in reps:
        c.add(run(10, spec_s, drafted), *(run(10, s) for s in base_s))
    return c


def test_each_repetition_is_measured_against_its_own_baselines():
    # repetition 2's baselines ran on a loaded machine (5x slower), and so did its spec run:
    # paired, every repetition says 2x
    c = cell("p", [(0.5, (1.0, 1.0)), (2.5, (5.0, 5.0)), (0.5, (1.0, 1.0))])
    assert sr.repeat_speedups([c]) == pytest.approx([2.0, 2.0, 2.0])
    assert c.baseline == [b for bases in c.bases for b in bases] and len(c.baseline) == 6
    # pooled over prompts: per repetition, tokens and seconds summed over the prompts
    other = cell("q", [(1.0, (1.0, 1.0)), (1.0, (1.0, 1.0)), (1.0, (1.0, 1.0))])
    assert sr.repeat_speedups([c, other]) == pytest.approx([(20 / 1.5) / (40 / 4), (20 / 3.5) / (40 / 12),
                                                           (20 / 1.5) / (40 / 4)])
    # a cell stopped short adds to the repetitions it reached
    short = cell("r", [(1.0, (1.0,))])
    assert len(sr.repeat_speedups([c, short])) == 3


def test_spread_and_within_noise():
    assert sr.spread_of([1.2]) is None and sr.spread_of([]) is None
    assert sr.spread_of([1.1, 0.9, 1.3]) == (0.9, 1.3)
    assert sr.within_noise(1.05, (0.9, 1.3))            # 0.4 wide, 0.05 from 1x
    assert not sr.within_noise(1.5, (1.4, 1.6))         # 0.2 wide, 0.5 from 1x
    assert not sr.within_noise(0.5, (0.45, 0.6))        # slower, and surely so
    assert not sr.within_noise(1.05, None)              # one repetition: unknown, not flagged
    assert sr.within_noise(0.05, (0.03, 0.83))          # runs stalled by load: 28x apart
    assert not sr.within_noise(0.2, (0.18, 0.22))       # surely 5x slower
    assert sr.within_noise(2.0, (1.5, 4.0))             # 2.7x apart, 2x from 1x


def test_rows_carry_the_spread_and_say_what_the_figures_cannot():
    steady = sr.make_row("d.gguf", 4, "p", [cell("p", [(0.5, (1.0, 1.0)), (0.6, (1.0, 1.2)), (0.5, (1.0, 1.0))])],
                         None, "reuse")
    assert (steady.speedup_min, steady.speedup_max) == pytest.approx((11 / 6, 2.0))
    assert steady.repeats == 3 and steady.spread_text("×") == "1.83×–2.00×"
    assert steady.speedup_min <= steady.measured_speedup <= steady.speedup_max   # the median of them
    assert steady.note == "" and not steady.within_noise
    noisy = sr.make_row("d.gguf", 4, "p", [cell("p", [(1.0, (1.0, 1.0)), (0.5, (1.0, 1.0)), (2.0, (1.0, 1.0))])],
                        None, "reuse")
    assert noisy.within_noise and noisy.note == "within noise"        # 0.5x to 2x around 1x
    # n-gram lookups that found nothing on one of two prompts, and on both
    found = cell("a", [(1.0, (1.0, 1.0))] * 3, drafter="ngram-simple")
    nothing = cell("b", [(1.1, (1.0, 1.0)), (1.0, (1.0, 1.0)), (1.05, (1.0, 1.0))], drafted=0,
                   drafter="ngram-simple")
    pooled = sr.make_row("", 0, sr.ALL, [found, nothing], None, "reuse")
    assert pooled.prompts == 2 and pooled.prompts_drafted == 1
    assert pooled.note.startswith("drafted on 1 of 2 prompts")
    alone = sr.make_row("", 0, "b", [nothing], None, "reuse")
    assert alone.never_drafted and alone.note.startswith("never drafted")
    doc = alone.to_dict()
    assert doc["never_drafted"] and doc["note"] == alone.note and doc["speedup_min"] == alone.speedup_min
    # one repetition: no spread, nothing flagged
    once = sr.make_row("d.gguf", 4, "p", [cell("p", [(1.0, (1.0, 1.0))])], None, "reuse")
    assert once.spread is None and once.repeats == 1 and once.spread_text() == "" and not once.within_noise
    line = dict(zip(sr.CSV_COLUMNS, once.csv_values()))
    assert line["speedup_min"] == "" and line["repeats"] == 1


def test_the_text_table_and_heatmap_show_spread_and_notes():
    rows = []
    for drafter, draft, n, reps, drafted in (
            ("draft-simple", "d.gguf", 4, [(0.5, (1.0, 1.0)), (0.6, (1.0, 1.2)), (0.5, (1.0, 1.0))], 5),
            ("draft-simple", "d.gguf", 8, [(1.0, (1.0, 1.0)), (0.5, (1.0, 1.0)), (2.0, (1.0, 1.0))], 5),
            ("ngram-simple", "", 0, [(1.1, (1.0, 1.0))] * 3, 0)):
        c = cell("p", reps, drafted, drafter)
        c.draft, c.n = draft, n
        rows += [sr.make_row(draft, n, p, [c], None, "reuse") for p in ("p", sr.ALL)]
    result = sp.SweepResult(settings=None, rows=rows)
    table = sp.format_table(result)
    head, *lines = table.splitlines()
    assert "spread" in head.split() and head.split()[-1] == "note"
    by = {ln.split("  ")[0].strip(): ln for ln in lines}
    assert set(by) == {"draft-simple (d.gguf)", "ngram-simple"}          # one name per configuration
    assert "1.83–2.00" in table and "within noise" in table and "never drafted" in by["ngram-simple"]
    grid = {ln.split("  ")[0]: ln for ln in sp.format_heatmap(result).splitlines()[1:]}
    assert "no drafts" in grid["ngram-simple"]
    assert "2.00x*" in grid["draft-simple (d.gguf)"] and "1.00x~" in grid["draft-simple (d.gguf)"]


def calibration(**kw):
    return Calibration(k_max=5, n_past=16, t1=1e-3, c_raw=(1.0,) * 5, c=(1.0,) * 5, f=0.1,
                       f_batch=(0.1,) * 5, **kw)


def test_a_far_off_prediction_says_why_it_may_be():
    c = cell("p", [(0.5, (1.0, 1.0)), (0.6, (1.0, 1.2)), (0.5, (1.0, 1.0))])
    row = sr.make_row("d.gguf", 4, sr.ALL, [c], None, "reuse")
    close = replace(row, calibrated_speedup=row.measured_speedup * 1.1, calibrated_error=0.1)
    far = replace(row, calibrated_speedup=row.measured_speedup * 1.94, calibrated_error=0.94)
    result = sp.SweepResult(settings=None, rows=[close], calibrations={"d.gguf": calibration()})
    assert sp.prediction_caveat(result) == ""
    result.rows = [far]
    result.others_cpu = 0.4
    result.from_cache = {"d.gguf": True}
    text = sp.prediction_caveat(result)
    assert "off by more than 25% on 1 of 1 rows (at most 94%)" in text
    assert "load: other processes used 40% of the CPU" in text
    assert "drift: the calibration of d.gguf is cached" in text and "--recalibrate" in text
    assert "noise: the repetitions of draft-simple (d.gguf) n=4 spread 1.83×–2.00×" in text
    assert "\n" not in text
    # a calibration taken under load; one repetition: the spread is unknown
    once = sr.make_row("d.gguf", 4, sr.ALL, [cell("p", [(1.0, (1.0, 1.0))])], None, "reuse")
    result = sp.SweepResult(settings=None, rows=[replace(once, calibrated_speedup=2.0, calibrated_error=1.0)],
                            calibrations={"d.gguf": calibration(under_load=True)})
    text = sp.prediction_caveat(result)
    assert "load: the calibration of d.gguf was taken under load" in text
    assert "one repetition" in text and "other processes" not in text
