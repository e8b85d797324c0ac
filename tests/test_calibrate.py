"""Calibration: the prediction formulas on plain numbers, and c(k), f measured on real models."""

import json
from dataclasses import replace

import pytest

from specscope.core.measure.cost import calibrate as cb
from specscope.core.measure.cost import timing
from specscope.core.measure.cost import cache as cc
from specscope.core.measure.cost import model as cm
from specscope.core.measure.cost.model import Calibration, calibrated_speedup, round_cost
from specscope.core.measure.cpuload import LoadMeter, LoadReading
from specscope.core.engine.engine import Engine, EngineSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.model import (expected_accepted, textbook_from_accepted,
                                               textbook_speedup)

# one thread each: quick and steady even while other processes load the CPU
ONE_THREAD = dict(target_threads=1, draft_threads=1)
SETTINGS = EngineSettings(n_ctx=256, **ONE_THREAD)


def cal_of(c, f=0.0, f_batch=None, s=0.0, o_base=0.0, o0=0.0, o1=0.0):
    c = tuple(float(x) for x in c)
    return Calibration(k_max=len(c), n_past=0, t1=1e-3, c_raw=c, c=c, f=f,
                       f_batch=tuple(f_batch if f_batch is not None else [f] * len(c)),
                       s=s, o_base=o_base, o0=o0, o1=o1)


# ============================================================================ formulas

def test_textbook_from_accepted_is_seed_003s_formula():
    for alpha in (0.3, 0.7, 1.0):
        for n in (1, 4, 8):
            e = expected_accepted(alpha, n)
            assert textbook_from_accepted(e, n, 0.1) == pytest.approx(textbook_speedup(alpha, n, 0.1))
            assert cm.textbook_prediction(n, 0.1, alpha=alpha) == pytest.approx(textbook_speedup(alpha, n, 0.1))
            from_acceptance = cm.textbook_prediction(n, 0.1, acceptance=cm.alpha_acceptance(alpha, n))
            assert from_acceptance == pytest.approx(textbook_speedup(alpha, n, 0.1))
    # (E + 1) / (n f + 1): E = 2, n = 4, f = 0.25 -> 3 / 2
    assert textbook_from_accepted(2.0, 4, 0.25) == pytest.approx(1.5)


def test_calibrated_equals_textbook_when_a_batch_costs_one_pass():
    """c(k) = 1, draft decodes only (no sync, sampling or overhead): the textbook model."""
    cal = cal_of([1.0] * 9, f=0.1, f_batch=[0.0] * 9)
    for alpha in (0.5, 0.9):
        for n in (1, 3, 8):
            assert calibrated_speedup(cal, n, alpha=alpha) == pytest.approx(textbook_speedup(alpha, n, 0.1))


def test_calibrated_prediction_on_plain_numbers():
    # linear verification cost c(k) = k, f = 0.1, a = (0.8, 0.6), reuse sync f_batch(1) = 0.05,
    # sampling 0.01 per row, overheads o_base 0.02, o0 0.03, o1 0.01
    cal = cal_of([1, 2, 3, 4], f=0.1, f_batch=[0.05, 0.2, 0.3, 0.4], s=0.01, o_base=0.02, o0=0.03, o1=0.01)
    a = (0.8, 0.6)
    rc = round_cost(cal, 2, a, "reuse")
    e = 1.4
    assert rc.tokens == pytest.approx(1 + e)
    assert rc.draft == pytest.approx(0.2)                 # n·f
    assert rc.verify == pytest.approx(3.0)                # c(n + 1)
    assert rc.sampling == pytest.approx(0.01 * (1 + e))
    assert rc.sync == pytest.approx(0.05 * 0.6)           # f_batch(1) · P(full acceptance) = a_n
    assert rc.overhead == pytest.approx(0.03 + 0.01 * 2)
    assert rc.baseline == pytest.approx(1.03)
    total = 0.2 + 3.0 + 0.024 + 0.03 + 0.05
    assert rc.total == pytest.approx(total)
    assert rc.speedup == pytest.approx(2.4 * 1.03 / total)
    assert calibrated_speedup(cal, 2, acceptance=a) == pytest.approx(rc.speedup)
    # replay sync: the draft re-decodes the n + 1 verification batch
    assert round_cost(cal, 2, a, "replay").sync == pytest.approx(0.3)
    # the rollback (seq_rm) cost is paid every round, in both sync modes
    with_r = Calibration(**{**cal.__dict__, "r": 0.02})
    assert round_cost(with_r, 2, a, "reuse").sync == pytest.approx(0.02 + 0.05 * 0.6)
    # the target alone, measured as a stream of single-token decodes (b: decode and sampling)
    streamed = Calibration(**{**cal.__dict__, "b": 0.7})
    assert round_cost(streamed, 2, a).baseline == pytest.approx(0.7 + 0.02)
    assert round_cost(streamed, 2, a).speedup == pytest.approx(2.4 * 0.72 / total)
    assert round_cost(with_r, 2, a, "replay").sync == pytest.approx(0.02 + 0.3)
    # a given share of full acceptances replaces a_n; a fractional draft length interpolates c
    assert round_cost(cal, 2, a, "reuse", p_full=0.5).sync == pytest.approx(0.025)
    assert round_cost(cal, 2, a, "reuse", n_draft=1.5).verify == pytest.approx(2.5)
    # linear verification: the speed-up can never beat 1 with these figures
    assert calibrated_speedup(cal, 3, alpha=1.0) < 1.0


def test_prediction_errors():
    cal = cal_of([1, 2, 3])
    with pytest.raises(ConfigError):
        calibrated_speedup(cal, 3, alpha=0.5)          # c(4) was not calibrated
    with pytest.raises(ConfigError):
        calibrated_speedup(cal, 1)                     # neither acceptance nor α
    with pytest.raises(ConfigError):
        round_cost(cal, 1, (0.5,), "sideways")
    with pytest.raises(ConfigError):
        round_cost(cal, 0, ())


def test_cost_fit_is_non_decreasing_and_at_least_one():
    assert cm.monotone_fit([1, 3, 2, 4]) == pytest.approx((1, 2.5, 2.5, 4))
    assert cm.cost_fit([1.0, 0.9, 1.8, 1.6, 2.5]) == pytest.approx((1.0, 1.0, 1.7, 1.7, 2.5))
    fit = cm.cost_fit([1.0, 1.4, 1.3, 2.0, 1.9, 3.0])
    assert fit[0] == 1.0
    assert all(b >= a for a, b in zip(fit, fit[1:]))


def test_calibration_round_trips_through_json():
    cal = cal_of([1, 1.5, 2], f=0.2, s=0.01)
    again = Calibration.from_dict(cal.to_dict())
    assert again == cal
    assert "c(k)" in "\n".join(cal.lines())


# ============================================================================ measured

def quick_calibrate(engine, k_max=4, **kw):
    return cb.calibrate(engine, k_max, reps=6, time_budget_s=1.0, n_past=32, **kw)


def test_calibrate_on_tiny_models(tiny_models):
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        cal = quick_calibrate(engine)
        assert cal.k_max == 4 and len(cal.c) == len(cal.c_raw) == len(cal.f_batch) == 4
        assert cal.c_raw[0] == 1.0 and cal.c[0] == 1.0
        assert all(x >= 1.0 for x in cal.c)
        assert all(b >= a for a, b in zip(cal.c, cal.c[1:]))
        assert cal.t1 > 0 and cal.f > 0 and cal.s >= 0
        assert cal.o_base >= 0 and cal.o0 >= 0 and cal.o1 >= 0
        assert cal.b > cal.s and cal.baseline_token == pytest.approx(cal.b + cal.o_base)
        assert cal.reps >= cb.MIN_REPS
        # the engine still works afterwards
        from specscope.core.engine.engine import SpecSettings
        run = engine.speculative("def f(x):", SpecSettings(n_max=2), n_predict=4)
        list(run)
        assert len(run.tokens) >= 1


def test_calibrate_without_a_draft_times_the_target_only_and_stops(tiny_models):
    import threading
    with Engine(tiny_models["target"], None, SETTINGS) as engine:
        cal = cb.calibrate(engine, 12, reps=5, time_budget_s=0.5, n_past=32)
    assert not cal.has_draft and cal.k_draft == 0
    assert cal.f == cal.f_first == 0.0 and cal.f_batch == (0.0,) * 12
    assert cal.c[0] == 1.0 and all(b >= a for a, b in zip(cal.c, cal.c[1:]))
    assert len(cal.c) == 12 and cal.o0 > 0          # ngram-simple runs gave the Python per round
    assert "no draft model" in cal.lines()[0] and not any("f_batch" in ln for ln in cal.lines())
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        stop = threading.Event()
        stop.set()
        with pytest.raises(cb.CalibrationStopped):
            cb.calibrate(engine, 3, stop=stop)


class FixedLoad:
    """A load meter whose reading is given: the load a calibration was taken under, injected."""

    def __init__(self, others: float, cores: int = 2):
        self.value = LoadReading(others=others, cores=cores, seconds=1.0, loadavg=(0.5, 0.5, 0.5))

    def reading(self) -> LoadReading:
        return self.value


@pytest.fixture
def steady(monkeypatch):
    """A quiet machine as far as caching goes: no drift check fails on timing noise (tests that
    are about which key or file is used); a calibration's load is injected with ``FixedLoad``."""
    monkeypatch.setattr(cc, "DRIFT_TOLERANCE", float("inf"))


def test_calibration_is_cached_per_pair_and_settings(tiny_models, tmp_path, monkeypatch, steady):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        first, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        assert not cached and first.key
        again, cached = cb.get_calibration(engine, 3)
        assert cached and again == first
        smaller, cached = cb.get_calibration(engine, 2, meter=FixedLoad(0.0))   # another k_max: another key
        assert not cached
        fresh, cached = cb.get_calibration(engine, 3, refresh=True, reps=5, time_budget_s=0.5,
                                           meter=FixedLoad(0.0))
        assert not cached and fresh.created >= first.created
    assert len(list((tmp_path / "calibration").glob("*.json"))) == 2
    with Engine(tiny_models["target"], tiny_models["draft"],
                EngineSettings(n_ctx=256, kv_type="f32", **ONE_THREAD)) as engine:
        key_f32, _ = cc.calibration_key(engine, 3)
    assert key_f32 != first.key


def test_on_threads_auto_a_calibration_is_kept_per_thread_count(tiny_models, tmp_path, monkeypatch):
    """Threads auto moves 2+2 to 1+1 when the load comes: a calibration taken at one count
    prices nothing of a run at the other, so each count has its own key (the drift check alone
    let a 2+2 calibration price 1+1 runs under load, when one 1-thread decode under load took
    about as long as a 2-thread one idle). A pinned count's key does not move."""
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Engine(tiny_models["target"], tiny_models["draft"], EngineSettings(n_ctx=256)) as engine:
        governor = engine.tgt.governor
        assert governor is not None and engine.dft.governor is governor
        governor.current = 2
        two, desc = cc.calibration_key(engine, 3)
        governor.current = 1
        one, desc1 = cc.calibration_key(engine, 3)
        assert two != one and desc["threads_now"] == [2, 2] and desc1["threads_now"] == [1, 1]
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        pinned, desc = cc.calibration_key(engine, 3)
        assert desc["threads_now"] == [1, 1] and cc.calibration_key(engine, 3)[0] == pinned


def demo_pair_or_skip():
    from specscope.core.models.demo import demo_pair
    try:
        return demo_pair()
    except ConfigError as exc:
        pytest.skip(f"the demo pair is not installed: {exc}")


@pytest.mark.slow
def test_demo_pair_c_is_at_least_one_and_non_decreasing():
    target, draft = demo_pair_or_skip()
    with Engine(target, draft, EngineSettings(n_ctx=512, **ONE_THREAD)) as engine:
        cal = cb.calibrate(engine, 9, time_budget_s=3.0)
    assert cal.c[0] == 1.0
    assert all(x >= 1.0 for x in cal.c)
    assert all(b >= a for a, b in zip(cal.c, cal.c[1:]))
    # the raw medians agree with the fit up to timing noise, and a batch of 9 costs more than 1
    assert all(x >= 0.8 for x in cal.c_raw)
    assert cal.c_raw[-1] > 1.0
    assert 0.0 < cal.f < 1.0


def test_timed_batches_are_dense_up_to_the_draft_then_spaced():
    assert cb.timed_batches(5, 5) == [1, 2, 3, 4, 5]
    ks = cb.timed_batches(49, 4)
    assert ks[:9] == list(range(1, 10)) and ks[-1] == 49 and len(ks) < 20
    assert all(b > a for a, b in zip(ks, ks[1:]))
    assert cb.timed_batches(40, 20)[:20] == list(range(1, 21))
    # the sizes between two timed ones are interpolated
    assert timing._fill_between([1.0, None, 3.0, None]) == (1.0, 2.0, 3.0, 3.0)


def test_chain_round_cost_on_plain_numbers():
    """An n-gram drafter: no draft decodes; the lookup time is the draft cost."""
    from specscope.core.measure.stats import DrafterStats
    cal = cal_of([1, 2, 3, 4, 5], f=0.1, f_batch=[0.05, 0.1, 0.2, 0.3, 0.4], s=0.01, o_base=0.02,
                 o0=0.03, o1=0.01)
    cal = Calibration(**{**cal.__dict__, "r": 0.02})
    # 4 rounds: two drafts by ngram-simple, of 2 and 3 tokens, 1 and 2 accepted; two rounds without
    ngram = DrafterStats("ngram-simple", n_draft_rounds=2, n_drafted=5, n_accept=3,
                         drafted_at=(2, 2, 1), accepted_at=(2, 1, 0), accepted_hist=(0, 1, 1))
    rc = cm.chain_round_cost(cal, [ngram], 4, n_max=0, lookup=0.05)
    assert rc.tokens == pytest.approx(0.5 * 2.5 + 0.5 * 1)
    assert rc.draft == pytest.approx(0.05)                        # the lookup, nothing else
    assert rc.verify == pytest.approx(0.5 * (3 + 4) / 2 + 0.5 * 1)  # c(L + 1) per length, c(1)
    assert rc.sampling == pytest.approx(0.5 * 0.01 * 2.5 + 0.5 * 0.01)
    assert rc.sync == pytest.approx(0.02)
    assert rc.overhead == pytest.approx(0.5 * (0.03 + 0.01 * 2.5) + 0.5 * 0.03)
    assert rc.speedup == pytest.approx(1.75 * 1.03 / 2.38)
    assert cm.chain_round_cost(cal, [ngram], 4, n_max=0, lookup=0.0).speedup > rc.speedup
    # with the draft model in the chain, reuse sync decodes the 1 + accepted kept rows on the draft
    chained = cm.chain_round_cost(cal, [ngram], 4, n_max=3, lookup=0.05, draft_model=True)
    assert chained.sync == pytest.approx(0.02 + 0.5 * (0.1 + 0.2) / 2)
    # draft-simple winning every round: the calibrated model of round_cost, unchanged
    model = DrafterStats("draft-simple", n_draft_rounds=4, n_drafted=8, n_accept=5,
                         drafted_at=(4, 4), accepted_at=(3, 2), accepted_hist=(1, 1, 2))
    alone = round_cost(cal, 2, (0.75, 0.5), "reuse")
    both = cm.chain_round_cost(cal, [model], 4, n_max=2, lookup=0.0, draft_model=True)
    assert both.speedup == pytest.approx(alone.speedup) and both.draft == pytest.approx(alone.draft)
    with pytest.raises(ConfigError):
        cm.chain_round_cost(cal, [ngram], 0, n_max=0, lookup=0.0)
    # a round without a draft decodes one token as the target-alone stream does (b less its
    # sampling): a drafter that never drafts costs the target's token and the round's own time
    streamed = Calibration(**{**cal.__dict__, "b": 1.2})
    idle = cm.chain_round_cost(streamed, [DrafterStats("ngram-simple")], 4, n_max=0, lookup=0.0)
    assert idle.verify == pytest.approx(1.2 - 0.01) and streamed.stream_decode == pytest.approx(1.19)
    assert idle.speedup == pytest.approx((1.2 + 0.02) / (1.19 + 0.01 + 0.02 + 0.03))
    assert cal.stream_decode == 1.0                                 # b not measured: c(1)


# ============================================================================ load and drift

def test_under_load_threshold_counts_the_cores_llama_cpp_needs():
    quiet = LoadReading(others=0.05, cores=2, seconds=1.0)          # 0.1 core elsewhere
    busy = LoadReading(others=0.5, cores=2, seconds=1.0)            # a whole core elsewhere
    assert not cc.is_under_load(quiet, threads=2)
    assert cc.is_under_load(busy, threads=2)
    # one thread on two cores: a core's worth of other work goes to the other core
    assert not cc.is_under_load(busy, threads=1)
    assert cc.is_under_load(LoadReading(others=0.7, cores=2, seconds=1.0), threads=1)
    assert not cc.is_under_load(LoadReading(others=None, cores=2, seconds=1.0), threads=2)


def test_load_is_measured_and_stored_with_the_calibration(tiny_models, tmp_path, monkeypatch, steady):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        cal = quick_calibrate(engine)                     # the real meter
        assert cal.version == cc.CALIBRATION_VERSION and cal.check_t > 0
        assert 0.0 <= cal.shape < cal.c[-1]           # a graph rebuild: less than the largest batch
        reading = cal.load_reading
        assert reading is not None and reading.cores >= 1 and reading.seconds > 0
        assert reading.others is None or 0.0 <= reading.others <= 1.0
        assert cal.under_load == cc.is_under_load(reading, cc.threads_used(engine))
        stored, _ = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.02))
    doc = json.loads((tmp_path / "calibration" / f"{stored.key}.json").read_text())
    assert doc["load"]["others"] == 0.02 and doc["under_load"] is False and doc["check_t"] > 0
    assert "other processes used 2% of the CPU" in stored.status(False)


def test_a_calibration_under_load_is_used_but_not_cached(tiny_models, tmp_path, monkeypatch, steady):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        busy, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.9))
        assert not cached and busy.under_load and busy.t1 > 0
        assert "TAKEN UNDER LOAD" in busy.status(False) and "not cached" in busy.status(False)
        assert not list((tmp_path / "calibration").glob("*.json"))
        again, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        assert not cached and not again.under_load          # measured again, and now cached
        assert len(list((tmp_path / "calibration").glob("*.json"))) == 1


def spinners(count: int) -> list:
    import subprocess
    import sys
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def test_a_busy_process_beside_the_calibration_is_seen_as_load(tiny_models, tmp_path, monkeypatch, steady):
    """Real load: twice as many spinning processes as cores while a one-thread calibration
    runs. The scheduler gives each of the 2N + 1 runnable processes about N/(2N + 1) of a core,
    so the spinners take about N − 1/2 cores, more than the N − 1 a one-thread decode leaves
    free plus the slack."""
    import os
    import time
    if LoadMeter().others_share() is None:
        pytest.skip("no /proc/stat: the load cannot be read here")
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    procs = spinners(2 * cores)                            # the cores this process may use
    try:
        # spinning before the calibration starts: a calibration of 0.5 s ran beside spinners
        # still starting up once in a full suite, and saw no load
        for _ in range(50):
            meter = LoadMeter()
            time.sleep(0.1)
            if (meter.others_share() or 0.0) * cores > cores - 0.5:
                break
        with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
            cal, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert cal.under_load and not cached
    assert cal.load_reading.others_cores > cal.load_reading.cores - 1
    assert not list((tmp_path / "calibration").glob("*.json"))


AFFINITY_PROBE = """
import json, os, subprocess, sys, time
from specscope.core.measure.cpuload import LoadMeter
os.sched_setaffinity(0, {0})
def spin(cpu):                      # at most 10 s, should this probe die before it kills it
    return subprocess.Popen([sys.executable, "-c",
                             f"import os, time; os.sched_setaffinity(0, {{{cpu}}}); end = time.time() + 10"
                             "\\nwhile time.time() < end: pass"])
out = {}
for where in (1, 0):
    p = spin(where)
    try:
        time.sleep(0.3)
        meter = LoadMeter()
        time.sleep(1.0)
        reading = meter.reading()
    finally:
        p.kill(); p.wait()
    out[where] = (reading.others, reading.cores)
print(json.dumps(out))
"""


def test_load_is_read_on_the_cores_this_process_may_use():
    """In a process limited to CPU 0 (a container given some of a host's cores), a busy process
    on CPU 1 is not load: it takes nothing from llama.cpp's threads. One on CPU 0 is."""
    import json
    import os
    import subprocess
    import sys
    if LoadMeter().others_share() is None or not hasattr(os, "sched_setaffinity"):
        pytest.skip("no /proc/stat or affinity masks: the load cannot be read per core here")
    if not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    p = subprocess.run([sys.executable, "-c", AFFINITY_PROBE], capture_output=True, text=True,
                       timeout=60, check=True)
    out = json.loads(p.stdout)
    (elsewhere, cores1), (beside, cores0) = out["1"], out["0"]
    assert cores1 == cores0 == 1
    assert elsewhere < 0.3 and beside > 0.7, out


def test_a_cached_calibration_whose_check_drifted_is_measured_again(tiny_models, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        first, _ = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        path = tmp_path / "calibration" / f"{first.key}.json"
        doc = json.loads(path.read_text())
        doc["check_t"] = first.check_t * 1000          # as if this machine had been 1000× slower
        path.write_text(json.dumps(doc))
        fresh, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        assert not cached and fresh.note.startswith("recalibrated: a target token took")
        assert "measured now" in fresh.status(False) and fresh.note in fresh.status(False)
        # the fresh figures replaced the drifted ones in the cache, without the note
        stored = json.loads(path.read_text())
        assert stored["check_t"] == fresh.check_t and stored["note"] == ""
        monkeypatch.setattr(cc, "DRIFT_TOLERANCE", float("inf"))   # the check passes: the cache is used
        again, cached = cb.get_calibration(engine, 3)
        assert cached and again.check_t == fresh.check_t
        # a token in a stream as fast as ever, one after a batch 1000× faster: measured again too
        # (a tolerance of 10×, far above a tiny model's timing noise)
        monkeypatch.setattr(cc, "DRIFT_TOLERANCE", 10.0)
        monkeypatch.setattr(cc, "DRIFT_FLOOR_S", 0.0)     # however fast this CPU runs the model
        doc = json.loads(path.read_text())
        doc["check_switch"] = fresh.check_switch / 1000
        path.write_text(json.dumps(doc))
        third, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        assert not cached and third.note.startswith("recalibrated: a target token after a batch took")
        assert json.loads(path.read_text())["check_switch"] == third.check_switch > 0


def test_a_calibration_taken_beside_other_work_serves_until_the_machine_is_quiet(tiny_models, tmp_path,
                                                                             monkeypatch, steady):
    """One busy core of two is no load for one thread per model, yet a calibration taken beside it
    priced the demo pair's batches up to 75 % higher; cached, it priced idle runs later."""
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        first, _ = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.5))
        assert not first.under_load                                    # cached
        monkeypatch.setattr(cb, "_load_now", lambda: FixedLoad(0.5).reading())   # busy still
        again, cached = cb.get_calibration(engine, 3)
        assert cached and again.created == first.created
        monkeypatch.setattr(cb, "_load_now", lambda: FixedLoad(0.02).reading())  # quiet now
        fresh, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        assert not cached and fresh.note == ("recalibrated: the cached calibration was taken while "
                                             "other processes used 1.00 of 2 cores; the machine is quiet now")
        # the quiet one replaced it and is trusted without a look at the load
        monkeypatch.setattr(cb, "_load_now", lambda: pytest.fail("looked at the load"))
        last, cached = cb.get_calibration(engine, 3)
        assert cached and last.created == fresh.created


def test_the_drift_check_times_the_count_threads_auto_runs_now(tiny_models):
    """The check's decodes go through the governor: a trial of another count due meanwhile would
    time that count instead (and move it on a batch of 5)."""
    with Engine(tiny_models["target"], tiny_models["draft"], EngineSettings(n_ctx=256)) as engine:
        g = engine.tgt.governor
        assert g is not None
        g._schedule(down=0.0, up=0.0)                     # every kind of trial due now
        trials = g.trials
        cb.check_timing(engine)
        assert g.trials == trials and not g.held


def test_the_drift_check_compares_both_timings_with_the_calibrations():
    """A VM state that slows llama.cpp's decodes after a batch of another size (the demo pair's c(2)
    3.2 target tokens against 1.1, its stream decodes unchanged) must not pass the check."""
    cal = Calibration(k_max=2, n_past=16, t1=1e-3, c_raw=(1.0, 1.2), c=(1.0, 1.2), f=0.2,
                      f_batch=(0.2, 0.3), check_t=350e-6, check_switch=595e-6)
    assert cc.drift_of(cal, cc.CheckTiming(stream=355e-6, switch=600e-6)) is None
    assert cc.drift_of(cal, cc.CheckTiming(stream=355e-6, switch=383e-6)) == (
        "recalibrated: a target token after a batch took 0.60 ms when the calibration was cached, "
        "0.38 ms now (-36%, beyond ±15%)")
    assert cc.drift_of(cal, cc.CheckTiming(stream=500e-6, switch=600e-6)).startswith(
        "recalibrated: a target token took 0.35 ms when the calibration was cached, 0.50 ms now")
    # a calibration cached before the check timed a token after a batch: measured again
    assert cc.drift_of(replace(cal, check_switch=0.0), cc.CheckTiming(355e-6, 600e-6)) == \
        "the cached calibration has no drift-check timing: measured again"


def test_an_old_version_cache_is_measured_again(tiny_models, tmp_path, monkeypatch, steady):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Engine(tiny_models["target"], tiny_models["draft"], SETTINGS) as engine:
        first, _ = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        path = tmp_path / "calibration" / f"{first.key}.json"
        old = {k: v for k, v in first.to_dict().items()
               if k not in ("version", "load", "under_load", "check_t", "note")}   # version 7's fields
        path.write_text(json.dumps(old))
        fresh, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        assert not cached and fresh.version == cc.CALIBRATION_VERSION
        assert json.loads(path.read_text())["version"] == cc.CALIBRATION_VERSION
        path.write_text('{"version": 8, "k_max": "three"}')    # garbage: measured again, no crash
        _, cached = cb.get_calibration(engine, 3, reps=5, time_budget_s=0.5, meter=FixedLoad(0.0))
        assert not cached
