"""core/session/baseline_check.py: a baseline's age and load beside the speculative run it measures,
and when it is stale; the session file keeps both."""

from __future__ import annotations

import json

import pytest

from specscope.core.session.baseline_check import (MAX_GAP_S, check_baseline, duration,
    load_gap_limit)
from specscope.core.measure.cpuload import LoadReading
from specscope.core.engine.engine import SpecSettings
from specscope.core.session.session import RunRecord, Session
from test_session import live_session, pair_copy  # noqa: F401 - a fixture


def timed(kind: str, start: float, end: float, others: float | None = 0.05, cores: int = 2) -> RunRecord:
    run = RunRecord(kind)
    run.started_at, run.ended_at = start, end
    run.load = None if others is None else LoadReading(others, cores, end - start)
    return run


def test_a_baseline_taken_right_before_under_the_same_load_is_fresh():
    base, spec = timed("baseline", 0, 10), timed("spec", 10.2, 20)
    check = check_baseline(spec, base)
    assert check.stale == "" and check.before and check.gap_s == pytest.approx(0.2)
    text = check.describe()
    assert text.startswith("baseline measured right before the run")
    assert "0.10 of 2 cores during it (0.10 during the run)" in text


def test_minutes_apart_is_stale_and_says_how_long():
    base, spec = timed("baseline", 0, 10), timed("spec", 10 + 15 * 60, 30 + 15 * 60)
    check = check_baseline(spec, base)
    assert "more than 5 min apart" in check.stale
    assert "15 min before the run" in check.describe() and check.describe().startswith("stale:")
    # the same gap the other way round: a baseline measured long after the run
    check = check_baseline(base, spec)
    assert check.stale and "after the run" in check.describe()
    assert not check_baseline(spec, timed("baseline", 0, 10 + 15 * 60 - MAX_GAP_S + 1)).stale


def test_other_processes_load_differing_by_half_a_core_is_stale():
    base, spec = timed("baseline", 0, 10, others=0.05), timed("spec", 11, 20, others=0.40)
    check = check_baseline(spec, base)
    assert "load differed by 0.70 cores" in check.stale
    assert not check_baseline(spec, timed("baseline", 0, 10, others=0.20)).stale  # 0.4 core apart
    assert load_gap_limit(2) == 0.5 and load_gap_limit(32) == pytest.approx(3.2)


def test_a_baseline_whose_target_ran_on_another_thread_count_is_stale():
    """Threads auto moved with the load: 2 threads in the baseline, 1 in most of the run."""
    from specscope.core.engine.events import RoundEvent

    def rounds(run, *counts):
        for i, n in enumerate(counts):
            run.append([RoundEvent(i, i, 1, (), (), 0, (2,), "baseline", threads=(n, 0))])
        return run
    base = rounds(timed("baseline", 0, 10), 2, 2, 2)
    spec = rounds(timed("spec", 11, 20), 2, 1, 1, 1)
    check = check_baseline(spec, base)
    assert check.stale == "the target ran on 2 threads in the baseline and on 1 in the run"
    assert not check_baseline(rounds(timed("spec", 11, 20), 2, 2, 1), base).stale
    assert not check_baseline(timed("spec", 11, 20), base).stale        # no counts: not judged


def test_a_run_too_short_to_read_the_load_is_judged_by_its_age_alone():
    base = timed("baseline", 0, 0.03, others=0.9)          # 30 ms: /proc/stat ticks, noise
    spec = timed("spec", 1, 3, others=0.0)
    check = check_baseline(spec, base)
    assert check.stale == "" and "too short (30 ms) to read the machine's load" in check.describe()


def test_a_run_without_timing_cannot_be_checked():
    assert check_baseline(timed("spec", 0, 1), None) is None
    check = check_baseline(timed("spec", 0, 1), RunRecord("baseline"))
    assert check.stale == "" and "not recorded" in check.describe()


def test_a_live_run_still_going_counts_as_ending_now():
    spec = RunRecord("spec")
    spec.started_at = 1000.0
    assert check_baseline(spec, timed("baseline", 0, 10), now=1010.0).stale
    assert not check_baseline(spec, timed("baseline", 990, 999), now=1010.0).stale


def test_duration():
    assert [duration(s) for s in (0.4, 12, 60, 125, 3 * 3600 + 120)] == \
        ["0 s", "12 s", "1 min", "2 min 5 s", "3 h 2 min"]


def test_begin_and_end_note_the_time_and_the_load():
    run = RunRecord("baseline")
    run.begin()
    run.end("n_predict")
    assert run.finish == "n_predict" and run.started_at <= run.ended_at
    assert run.load is not None and run.load.cores >= 1


def test_the_session_file_keeps_each_runs_time_and_load(tmp_path, pair_copy):
    session = live_session(*pair_copy, SpecSettings(), n_predict=8)
    session.spec.started_at, session.spec.ended_at = 2000.0, 2001.5
    session.spec.load = LoadReading(0.25, 2, 1.5, (1.0, 0.9, 0.8))
    path = session.save(tmp_path / "s.jsonl")
    again = Session.load(path)
    assert (again.spec.started_at, again.spec.ended_at, again.spec.load) == \
        (2000.0, 2001.5, session.spec.load)
    assert again.baseline.started_at is None and again.baseline.load is None   # not timed live
    assert again.baseline_check().describe().endswith("is not recorded")


def test_a_malformed_timing_names_the_file_and_the_run(tmp_path, pair_copy):
    session = live_session(*pair_copy, SpecSettings(), n_predict=8)
    session.spec.started_at, session.spec.ended_at = 2000.0, 2001.5
    lines = session.lines()
    head = json.loads(lines[0])
    head["runs"]["spec"]["ended_at"] = "soon"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    from specscope.core.errors import SessionFileError
    with pytest.raises(SessionFileError, match=r"bad.jsonl, line 1: .*runs.spec: started_at"):
        Session.load(path)
