"""Threads "auto": the governor that moves a context's thread count with the machine's load
(core/models/threads.py). Its decisions are checked on a simulated machine (decode times
from a table, a clock that advances by them), and in real runs of the demo pair whose decode
times jump as they do when another process takes a core."""

import math

import pytest

from specscope.core.models.demo import demo_pair
from specscope.core.models.threads import ThreadGovernor, candidates, shape


def test_candidates_and_shapes():
    assert candidates(1) == (1,)
    assert candidates(2) == (2, 1)
    assert candidates(8) == (8, 7, 4)
    assert [shape(n) for n in (1, 4, 8, 9, 16, 17, 512)] == [1, 4, 8, 16, 16, 64, 1 << 30]


class Machine:
    """Seconds per decode token by thread count, idle and loaded (another process on a core:
    all cores stall at llama.cpp's barriers), and the clock those decodes advance."""

    def __init__(self):
        self.now, self.loaded = 0.0, False

    def clock(self) -> float:
        return self.now

    def seconds(self, count: int, n_tokens: int) -> float:
        per_token = {2: 0.5e-3, 1: 0.8e-3}[count]          # idle: both cores are faster
        if self.loaded and count == 2:
            per_token *= 40
        return per_token * (1 + 0.3 * (n_tokens - 1))

    def run(self, g: ThreadGovernor, decodes: int, shapes=(1, 1, 1, 4)) -> list[int]:
        """Decode as a round does (draft steps, then a verification batch); the counts used."""
        used = []
        for i in range(decodes):
            n = shapes[i % len(shapes)]
            g.before()
            t = self.seconds(g.running, n)
            self.now += t
            g.after(n, t)
            used.append(g.running)
        return used


@pytest.fixture(autouse=True)
def quiet(monkeypatch):
    """No other runnable threads seen when a governor starts with nothing remembered."""
    monkeypatch.setattr("specscope.core.models.threads.runnable_others", lambda samples=5: 0.0)


@pytest.fixture
def two_cores(monkeypatch):
    """The simulated machine's 2 cores, whatever this one has (trials of more threads are
    tried only where the cores are free)."""
    import os

    from specscope.core.models import threads
    monkeypatch.setattr(threads, "_affinity", lambda: 2)
    monkeypatch.setattr(threads, "cpu_quota", lambda: None)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def governor(m: Machine) -> ThreadGovernor:
    return ThreadGovernor((2, 1), clock=m.clock)


def test_idle_keeps_all_cores_and_tries_the_others_rarely():
    m = Machine()
    g = governor(m)
    used = m.run(g, 20_000)                     # about 14 s of decodes
    assert g.current == 2 and not g.changes
    assert used.count(1) < 0.01 * len(used)     # the trials of 1 thread are few and short
    assert 2 <= g.trials <= 10                  # the interval doubles while 2 keeps winning


def test_load_moves_to_one_thread_and_back_when_it_goes():
    m = Machine()
    g = governor(m)
    m.run(g, 500)
    assert g.current == 2
    m.loaded = True
    used = m.run(g, 200)
    assert g.current == 1 and len(g.changes) == 1
    change = g.changes[0]
    assert (change.old, change.new) == (2, 1) and "ms per decode against" in change.why
    assert used.index(1) < 20                   # within a few rounds of the load arriving
    assert "2 → 1 threads after decode" in change.describe()
    m.run(g, 20_000)                            # under load: 1 thread stays, trials of 2 end at once
    assert g.current == 1 and len(g.changes) == 1
    m.loaded = False
    m.run(g, 30_000)                            # the load went: back to 2 at the next trial
    assert g.current == 2 and [(c.old, c.new) for c in g.changes] == [(2, 1), (1, 2)]


def test_a_blip_that_moved_to_fewer_threads_is_undone_soon():
    """A stall of a few decodes (the window painting, a blip on the host) moves down as a load
    does; while moves up hold, more threads are tried again BACK_UP_S later, not a full interval."""
    m = Machine()
    g = governor(m)
    m.run(g, 500)
    m.loaded = True
    for _ in range(400):                        # until it moves down (within a few rounds)
        if g.current == 1:
            break
        m.run(g, 1)
    assert g.current == 1
    m.loaded = False
    moved_at = m.now
    while g.current == 1 and m.now - moved_at < 5:
        m.run(g, 1)
    assert g.current == 2 and m.now - moved_at < 2 * g.BACK_UP_S < g.FIRST_TRIAL_S, m.now - moved_at


def test_a_new_run_tries_more_threads_soon_whatever_the_interval_had_grown_to(two_cores):
    """Moves up that did not hold made trials of more threads rare (up to MAX_UP_S apart); a run
    that starts on an idle machine must not spend itself at fewer threads waiting for one."""
    m = Machine()
    g = governor(m)
    m.run(g, 500)
    for cycle in range(4):              # the load comes and goes: moves up do not hold
        m.loaded = True
        m.run(g, 3_000)
        m.loaded = False
        m.run(g, 1_000)
    m.loaded = True
    m.run(g, 3_000)
    assert g.current == 1 and g._interval["up"] >= 8
    m.loaded = False                    # idle from here; a new run begins
    g.run_starts()
    started = m.now
    while g.current == 1 and m.now - started < 5:
        m.run(g, 1)
    assert g.current == 2 and m.now - started < 2 * g.BACK_UP_S, m.now - started
    g.run_starts()                      # at the most threads already: nothing to try
    assert g._next["up"] == math.inf or g._next["up"] > m.now + g.BACK_UP_S


class Rounds(Machine):
    """The demo pair idle as measured: one more thread does not speed up a single-token decode
    (a draft step: slower), it speeds up the round's 4-token verification batch, and the first
    decode after more threads were set wakes the ones that slept (~40 % slower)."""
    TABLE = {1: {2: 0.42e-3, 1: 0.39e-3}, 4: {2: 0.9e-3, 1: 1.6e-3}}

    def __init__(self):
        super().__init__()
        self.last = None

    def seconds(self, count: int, n_tokens: int) -> float:
        t = self.TABLE[n_tokens][count] * (1.4 if self.last is not None and count > self.last else 1.0)
        self.last = count
        return t


def test_a_trial_of_more_threads_is_judged_over_whole_rounds_not_its_first_draft_steps(two_cores):
    m = Rounds()
    g = governor(m)
    g.current = 1                       # moved down by a blip during the run before
    m.run(g, 400)
    assert g.current == 1 and not g.changes
    g.run_starts()
    trials = g.trials
    for _ in range(1_000):              # rounds, until the first trial of more threads has ended
        if g.trials > trials and not g._trial:
            break
        m.run(g, 4)
    assert g.current == 2 and [(c.old, c.new) for c in g.changes] == [(1, 2)]
    m.run(g, 4_000)                     # and 2 threads stay: a round costs 2.16 ms against 2.77
    assert g.current == 2 and len(g.changes) == 1


def test_a_trial_does_not_judge_a_round_by_the_decodes_it_can_compare_alone():
    """Early in a run the current count has run some shapes only: a trial of one thread compared
    the draft's steps (one thread as fast as two) and not the verification batch of a size not
    seen yet (two threads twice as fast), and moved an idle run to fewer threads."""
    m = Machine()
    table = {(1, 1): {2: 0.1e-3, 1: 0.075e-3},          # the draft's steps (tag 1)
             (0, 5): {2: 0.8e-3, 1: 1.6e-3}, (0, 4): {2: 0.7e-3, 1: 1.4e-3}}
    g = governor(m)

    def rounds(n: int, verify: int) -> None:
        for _ in range(n):
            for tag, k in [(1, 1)] * (verify - 1) + [(0, verify)]:
                g.before()
                t = table[(tag, k)][g.running]
                m.now += t
                g.after(k, t, tag=tag)
    rounds(4, 5)            # the first rounds verify 5 tokens: a trial of one thread starts in
    rounds(1_500, 4)        # them and meets 4, a size two threads have not run: no verdict; the
    assert g.trials >= 2    # trials after it (1.3 s of rounds) compare whole rounds, and lose
    assert g.current == 2 and not g.changes, [c.describe() for c in g.changes]


def test_a_trial_of_more_threads_far_slower_stops_after_three_decodes(two_cores):
    m = Machine()
    g = governor(m)
    g.current = 1
    m.run(g, 400)
    m.loaded = True                     # 2 threads 40× slower (ABORT ends that at once): 1.6×
    m.seconds = lambda count, n: {2: 1.6e-3, 1: 1.0e-3}[count] * (1 + 0.3 * (n - 1))
    g.run_starts()
    used = m.run(g, 400)
    assert g.current == 1 and 3 <= used.count(2) <= 4, used.count(2)   # its wake-up decode and three


def test_a_load_present_from_the_start_is_left_within_the_first_decodes():
    m = Machine()
    m.loaded = True
    g = governor(m)
    used = m.run(g, 100)
    assert used[:4] == [2, 2, 2, 2] and g.current == 1 and set(used[10:]) == {1}, used[:12]


def test_a_hold_tries_nothing_and_says_when_the_load_changed():
    m = Machine()
    g = governor(m)
    m.run(g, 100)
    with g.hold():
        m.run(g, 5_000)
        assert not g.slow_while_held
        m.loaded = True
        used = m.run(g, 50)
        assert set(used) == {2} and g.slow_while_held and g.current == 2
    m.run(g, 50)                                 # released: the governor acts again
    assert g.current == 1


def test_a_new_context_starts_at_the_count_the_free_cores_can_run(monkeypatch):
    import os

    from specscope.core.models import threads
    monkeypatch.setattr(threads, "_affinity", lambda: 4)      # a 4-core machine, whatever this is
    monkeypatch.setattr(threads, "cpu_quota", lambda: None)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    for busy, start in ((0.0, 4), (0.6, 4), (0.9, 3), (1.2, 3), (2.0, 2), (3.4, 2)):
        monkeypatch.setattr(threads, "runnable_others", lambda samples=5, busy=busy: busy)
        assert ThreadGovernor((4, 3, 2)).current == start
    assert threads.runnable_others.__name__ == "<lambda>"
    monkeypatch.undo()
    assert threads.runnable_others() >= 0.0            # Linux /proc/loadavg, or 0 elsewhere


@pytest.mark.parametrize("cgroup, files, quota", [
    ("0::/", {"cpu.max": "200000 100000"}, 2),
    ("0::/", {"cpu.max": "150000 100000"}, 1),                 # 1.5 CPUs: one thread, not two
    ("0::/", {"cpu.max": "max 100000"}, None),
    ("0::/system.slice/x.service", {"system.slice/cpu.max": "400000 100000",
                                    "system.slice/x.service/cpu.max": "max 100000"}, 4),
    ("4:cpu,cpuacct:/docker/abc", {"cpu,cpuacct/cpu.cfs_quota_us": "300000",
                                   "cpu,cpuacct/cpu.cfs_period_us": "100000"}, 3),
    ("4:cpu,cpuacct:/docker/abc", {"cpu,cpuacct/cpu.cfs_quota_us": "-1",
                                   "cpu,cpuacct/cpu.cfs_period_us": "100000"}, None),
    ("", {}, None)])
def test_a_cpu_quota_caps_the_cores(tmp_path, monkeypatch, cgroup, files, quota):
    """docker --cpus=2 on a bigger host: the affinity mask shows every core, the cgroup's
    quota (its own or a parent's, v2 or v1) allows two; auto's counts are cut to them."""
    import specscope.core.models.threads as th
    (tmp_path / "self-cgroup").write_text(cgroup + "\n")
    for name, text in files.items():
        (tmp_path / "fs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fs" / name).write_text(text + "\n")
    monkeypatch.setattr(th, "CGROUP_ROOT", str(tmp_path / "fs"))
    monkeypatch.setattr(th, "PROC_CGROUP", str(tmp_path / "self-cgroup"))
    monkeypatch.setattr(th, "_affinity", lambda: 16)
    assert th.cpu_quota() == quota
    assert th.cores() == (quota or 16)
    expected = {1: (1,), 2: (2, 1), 3: (3, 2, 1), 4: (4, 3, 2), None: (16, 15, 8)}[quota]
    assert th.candidates() == expected


def test_the_free_cores_count_this_process_s_share_of_the_machine_s_runnable_threads(monkeypatch):
    """Linux counts runnable threads machine-wide: 12 on a 16-core host leave a process whose
    affinity mask holds 4 of the cores about 3 of them busy, not all. Under a quota its
    threads may run on any idle core: 8 busy of 16 leave its 2 free."""
    import os

    import specscope.core.models.threads as th
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(th, "cpu_quota", lambda: None)
    monkeypatch.setattr(th, "_affinity", lambda: 4)
    monkeypatch.setattr(th, "runnable_others", lambda samples=5: 12.0)
    assert th.fitting((4, 3, 2)) == 2           # 12 × 4/16 = 3 busy: one free, at least 2
    monkeypatch.setattr(th, "runnable_others", lambda samples=5: 4.0)
    assert th.fitting((4, 3, 2)) == 3           # one busy: three free
    monkeypatch.setattr(th, "_affinity", lambda: 16)
    assert th.fitting((16, 15, 8)) == 8         # the whole machine: 4 busy, 12 free
    monkeypatch.setattr(th, "cpu_quota", lambda: 2)
    monkeypatch.setattr(th, "runnable_others", lambda samples=5: 8.0)
    assert th.fitting((2, 1)) == 2              # --cpus=2: 8 busy, 8 idle cores for its 2


def test_more_threads_are_tried_ever_more_rarely_while_the_load_comes_and_goes():
    m = Machine()
    g = governor(m)
    g.MAX_UP_S = 1e9
    m.run(g, 500)
    ups = []
    for cycle in range(4):              # 3 s of load, 1 s without: moves up do not hold
        m.loaded = True
        m.run(g, 3_000)
        assert g.current == 1
        m.loaded = False
        m.run(g, 1_000)
        ups.append(g._interval["up"])
    assert ups == sorted(ups) and ups[-1] >= 4 * ups[0]


def test_more_threads_are_not_tried_while_other_processes_hold_the_cores(monkeypatch):
    import os

    from specscope.core.models import threads
    monkeypatch.setattr(threads, "_affinity", lambda: 2)      # the table's 2-core machine
    monkeypatch.setattr(threads, "cpu_quota", lambda: None)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    m = Machine()
    m.loaded = True
    monkeypatch.setattr(threads, "runnable_others", lambda samples=5: 1.0)
    g = governor(m)
    assert g.current == 1                       # started at what the free core runs
    used = m.run(g, 20_000)
    assert set(used) == {1} and not g.changes   # no trial of 2 (each would have stalled)
    monkeypatch.setattr(threads, "runnable_others", lambda samples=5: 0.0)
    m.loaded = False
    m.run(g, 40_000)
    assert g.current == 2 and [(c.old, c.new) for c in g.changes] == [(1, 2)]


def test_one_count_only_never_trials():
    m = Machine()
    g = ThreadGovernor((1,), clock=m.clock)
    m.loaded = True
    assert set(m.run(g, 1000)) == {1} and g.trials == 0


# ---------------------------------------------------------------------------- real runs

def loaded_after(ctx, load):
    """Time ``ctx``'s decodes on the simulated :class:`Machine` (its table and its clock, in
    place of the real decode's seconds and ``perf_counter``), loaded while ``load()`` is true:
    the run is real, the governor's decisions do not hang on how busy the test's machine is
    (a CI machine with a core taken would otherwise decide for itself)."""
    g, m = ctx.governor, Machine()
    real = g.after
    g.clock = m.clock

    def after(n_tokens, seconds, tag=0, outputs=True):
        m.loaded = load()
        t = m.seconds(g.running, n_tokens)
        m.now += t
        real(n_tokens, t, tag, outputs)
    g.after = after


@pytest.fixture
def engine():
    from specscope.core.engine.engine import Engine, EngineSettings
    e = Engine(*demo_pair(), EngineSettings(n_ctx=1024))
    e.tgt.governor = e.dft.governor = ThreadGovernor((2, 1))   # two counts on any machine, shared
    try:
        yield e
    finally:
        e.close()

@pytest.mark.slow
def test_a_run_whose_decodes_slow_down_changes_its_threads_and_says_so(engine):
    from specscope.core.engine.engine import SpecSettings
    from specscope.core.engine.sampling import SamplerSettings
    from specscope.core.measure.stats import fold
    rounds = []
    load = lambda: 20 <= len(rounds) < 80             # noqa: E731
    loaded_after(engine.tgt, load)           # the governor both contexts share
    g = engine.tgt.governor
    g.FIRST_TRIAL_S = g.MAX_TRIAL_S = g.MAX_UP_S = 0.05   # the load's end seen soon
    for ev in engine.speculative("def parse_args(argv):", SpecSettings(n_max=4), SamplerSettings(),
                                 n_predict=1000):
        rounds.append(ev)
    assert len(rounds) > 200 and all(len(ev.threads) == 2 for ev in rounds)
    assert rounds[0].threads == (2, 2)
    assert all(ev.threads == (1, 1) for ev in rounds[50:80]), [ev.threads for ev in rounds[:80]]
    assert rounds[-1].threads == (2, 2), [(ev.index, ev.threads_note) for ev in rounds if ev.threads_note]
    notes = [ev.threads_note for ev in rounds if ev.threads_note]
    assert any(n.startswith("target+draft 2 → 1 threads") for n in notes), notes
    assert any(n.startswith("target+draft 1 → 2 threads") for n in notes), notes
    stats = fold(rounds)
    assert len(stats.threads) >= 3 and stats.threads[0] == (0, 2, 2)
    assert "1+1 from round" in stats.threads_text and stats.to_dict()["threads"][0] == [0, 2, 2]


@pytest.mark.slow
def test_the_baseline_follows_the_load_too(engine):
    from specscope.core.engine.sampling import SamplerSettings
    rounds = []
    loaded_after(engine.tgt, lambda: len(rounds) >= 30)
    for ev in engine.baseline("def parse_args(argv):", SamplerSettings(), n_predict=200):
        rounds.append(ev)
    assert rounds[0].threads == (2, 0) and rounds[-1].threads == (1, 0)


def test_pinned_threads_never_change():
    from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
    from specscope.core.engine.sampling import SamplerSettings
    with Engine(*demo_pair(), EngineSettings(n_ctx=512, target_threads=1, draft_threads=2)) as e:
        assert e.tgt.governor is None and e.dft.governor is None
        events = list(e.speculative("import os", SpecSettings(), SamplerSettings(), n_predict=64))
    assert {ev.threads for ev in events} == {(1, 2)} and not any(ev.threads_note for ev in events)


@pytest.mark.slow
def test_a_calibration_holds_the_counts_and_calls_a_slow_down_meanwhile_load(engine):
    from specscope.core.measure.cost.calibrate import calibrate
    from test_calibrate import FixedLoad
    decodes = []
    g = engine.tgt.governor                  # shared by both contexts
    real = g.after

    def after(n_tokens, seconds, tag=0, outputs=True):
        decodes.append(g.running)
        real(n_tokens, seconds + (0.02 if len(decodes) > 60 else 0.0), tag, outputs)
    g.after = after
    cal = calibrate(engine, 3, reps=2, overhead_runs=False, meter=FixedLoad(0.0))
    assert set(decodes) == {2} and len(decodes) > 100       # no trial of another count meanwhile
    assert cal.under_load                                      # the slow-down is called load
    assert not g.held


def test_a_measurement_s_own_mix_of_decodes_is_not_load_but_a_slow_down_is():
    """A calibration mixes decodes of one token count on purpose: draft rows without logits
    (cheap: no output head), draft steps with them, and the first step after the draft's
    batch of another size (llama.cpp rebuilds its graph: dear). On an idle machine that mix
    is not load; every decode taking three times as long is. (Compared by token count alone,
    with the mean of three, the mix alone was called load: every calibration on threads auto.)"""
    def measure(slow_from: int) -> bool:
        clock = [0.0]
        g = ThreadGovernor((2, 1), start=2, clock=lambda: clock[0])
        with g.hold():
            for i in range(60):
                factor = 3.0 if i >= slow_from else 1.0
                draft = ([(1, False, 60e-6)] * 3 if i < 10 else          # rows without logits
                         [(1, True, 200e-6), (1, True, 100e-6), (1, True, 100e-6),
                          (4, False, 150e-6)])    # after its batch: a rebuild; steps; a batch
                for tag, (n, outputs, seconds) in [(0, (4, True, 600e-6))] + [(1, d) for d in draft]:
                    clock[0] += seconds * factor
                    g.after(n, seconds * factor, tag=tag, outputs=outputs)
            return g.slow_while_held

    assert not measure(slow_from=10**6)
    assert measure(slow_from=30)


def test_bench_says_when_threads_moved_during_its_runs():
    from specscope.core.cli.bench import thread_lines
    from specscope.core.measure.bench.lossless import RunResult
    from specscope.core.measure.stats import Stats
    from specscope.core.measure.bench.rows import Cell

    def run(*spans):
        return RunResult("spec", (), Stats(n_rounds=10, threads=spans), 0.0, "n_predict")
    steady = Cell("draft-simple", 3, "p")
    steady.add(run((0, 2, 2)), run((0, 2, 0)))
    assert thread_lines([steady]) == []
    moved = Cell("draft-simple", 4, "p")
    moved.add(run((0, 2, 2), (4, 1, 1)), run((0, 1, 0)))
    line = thread_lines([steady, moved])[1]
    assert line.startswith("threads auto changed during 1 of 4 runs (the target on 2 and 1 "
                           "threads, the draft on 2 and 1): the machine's load changed")
    # no run changed, but the runs started on different counts: not "changed during 0 of 4"
    between = Cell("draft-simple", 5, "p")
    between.add(run((0, 1, 1)), run((0, 1, 0)))
    line = thread_lines([steady, between])[1]
    assert line.startswith("threads auto started the runs on different counts (the target on 2 "
                           "and 1 threads, the draft on 2 and 1)"), line


def test_a_pair_on_auto_shares_one_governor_and_a_pinned_one_none():
    from specscope.core.engine.engine import Engine, EngineSettings
    with Engine(*demo_pair(), EngineSettings(n_ctx=256)) as e:
        assert e.tgt.governor is not None and e.dft.governor is e.tgt.governor
    with Engine(*demo_pair(), EngineSettings(n_ctx=256, draft_threads=1)) as e:
        assert e.tgt.governor is not None and e.dft.governor is None and e.dft.threads == 1


class PaintingMachine(Machine):
    """The simulated machine with a window's UI thread that works 50 ms of every 500 ms on a
    core (10 %; the window's was busy 6-9 % of a run): decodes on both cores stall meanwhile
    (5x), on one they do not; and its CPU clock."""

    def __init__(self, working_s: float = 0.05):
        super().__init__()
        self.ui_cpu, self.working_s = 0.0, working_s

    def seconds(self, count: int, n_tokens: int) -> float:
        t = super().seconds(count, n_tokens)
        if self.now % 0.5 < self.working_s:
            t *= 5 if count == 2 else 1
            self.ui_cpu += t
        return t


def test_decodes_that_shared_a_core_with_the_window_s_own_painting_are_not_a_load(two_cores):
    """Judged with the decodes the window's painting stalled, trials of one thread win and the
    window runs at one thread per model on an idle machine; with the UI thread's CPU time read
    after each decode (``Foreground``), those decodes are left out and two threads stay."""
    from types import SimpleNamespace

    from specscope.core.models.threads import Foreground
    moves = {}
    for seen in (True, False):
        m = PaintingMachine()
        ui = SimpleNamespace(SHARE=Foreground.SHARE, cpu=(lambda: m.ui_cpu) if seen else (lambda: None))
        g = ThreadGovernor((2, 1), clock=m.clock, foreground=ui)
        used = m.run(g, 30_000)
        moves[seen] = ([(c.old, c.new) for c in g.changes], used.count(2) / len(used), g.trials)
    assert moves[True][0] == [] and moves[True][1] > 0.99 and moves[True][2] <= 10, moves[True]
    # the same machine with the UI thread unseen: down to one thread, and mostly kept there
    assert (2, 1) in moves[False][0] and moves[False][1] < 0.5, moves[False]


def test_the_ui_thread_s_clock_reads_another_thread_s_time_and_not_its_own():
    import threading
    import time

    from specscope.core.models.threads import Foreground
    fg = Foreground()
    assert fg.cpu() is None                             # not following any thread yet
    fg.follow()                                         # this thread is the "UI thread"
    assert fg.cpu() is None                             # its own decodes: not read
    seen = []
    t0 = time.thread_time()
    while time.thread_time() - t0 < 0.02:               # the UI thread works 20 ms
        pass
    worker = threading.Thread(target=lambda: seen.append(fg.cpu()))
    worker.start()
    worker.join()
    assert seen[0] is not None and seen[0] >= time.thread_time() - 0.02 - 1e-3 >= 0.0


def test_a_ui_thread_that_works_all_the_time_is_a_load_like_any_other(two_cores):
    """Decodes that shared a core with the UI thread are left out only while they are few: where
    it works without pause (as another process would), fewer threads take over."""
    from types import SimpleNamespace

    from specscope.core.models.threads import Foreground
    m = PaintingMachine(working_s=0.5)
    g = ThreadGovernor((2, 1), clock=m.clock, foreground=SimpleNamespace(SHARE=Foreground.SHARE,
                                                                         cpu=lambda: m.ui_cpu))
    used = m.run(g, 5_000)
    assert (2, 1) in [(c.old, c.new) for c in g.changes] and used[-1000:].count(1) > 900


def test_a_trial_whose_decodes_all_shared_a_core_with_the_ui_thread_still_ends(two_cores):
    """Left-out decodes still count towards a trial's MAX_TRIAL_DECODES: a trial that meets the
    UI thread's work throughout ends without a verdict instead of running on."""
    from types import SimpleNamespace

    from specscope.core.models.threads import Foreground
    m = PaintingMachine(working_s=0.0)
    g = ThreadGovernor((2, 1), clock=m.clock, foreground=SimpleNamespace(SHARE=Foreground.SHARE,
                                                                         cpu=lambda: m.ui_cpu))
    m.run(g, 200)
    g._schedule(down=m.now)                      # a trial of one thread is due ...
    m.working_s = 0.5                            # ... and the UI thread works from now on
    used = m.run(g, g.MAX_TRIAL_DECODES + 2)
    assert used[0] == 1 and used[-1] == 2 and g.current == 2 and not g.changes
