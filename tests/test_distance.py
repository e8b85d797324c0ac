"""The cost of distance in the window's terms (core/measure/cost/distance.py, app/distance_view.py): two real
calibrations of the demo pair, the round they account for, and the view's states. The view's
measurement with a model on a loopback rpc-server runs in tests/helpers/rpc_window_check.py."""

import pytest

from specscope.core.measure.cost.model import calibrated_speedup, round_cost
from specscope.core.models.demo import demo_pair
from specscope.core.measure.cost.distance import measure_distance
from specscope.core.engine.engine import EngineSettings


@pytest.fixture(scope="module")
def demo_paths():
    return demo_pair()


@pytest.fixture(scope="module")
def distance(demo_paths):
    t, d = demo_paths
    seen = []
    result = measure_distance(t, d, EngineSettings(target_threads=1, draft_threads=1), k_max=4,
                              reps=5, time_budget_s=0.5,
                              progress=lambda done, total, w: seen.append((done / total, w)))
    return result, seen


def test_both_placements_are_calibrated_and_accounted(distance):
    result, seen = distance
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(w.startswith("this machine:") for _, w in seen) and any(w.startswith("as placed:") for _, w in seen)
    assert result.placement == {"target": "local CPU", "draft": "local CPU"}
    assert result.local.key != result.placed.key          # two calibrations, each cached by placement
    a = (0.6, 0.4, 0.3)
    for cal, acct in zip((result.local, result.placed), result.rounds(3, a)):
        cost = round_cost(cal, 3, a)
        assert acct.total == pytest.approx(cost.total * cal.t1)
        assert acct.verify == pytest.approx(cal.t1 * cal.cost(4))
        assert acct.speedup == pytest.approx(calibrated_speedup(cal, 3, acceptance=a))
    assert result.verify_s(4) == pytest.approx((result.local.t1 * result.local.cost(4),
                                                result.placed.t1 * result.placed.cost(4)))


def test_a_stop_ends_the_measurement(demo_paths):
    import threading

    from specscope.core.measure.cost.calibrate import CalibrationStopped
    stop = threading.Event()
    stop.set()
    with pytest.raises(CalibrationStopped):
        measure_distance(*demo_paths, EngineSettings(), k_max=2, stop=stop, refresh=True)


def test_the_view_explains_an_all_local_pair_and_shows_a_measurement(qtbot, distance, demo_paths):
    pytest.importorskip("pytestqt")
    from specscope.app.distance_view import ALL_LOCAL, DistanceRequest, DistanceView, RoundShape
    view = DistanceView()
    qtbot.addWidget(view)
    t, d = demo_paths
    shape = RoundShape(n=3, acceptance=(0.6, 0.4, 0.3), source="a test", run_rounds=40, run_seconds=0.2)
    local = DistanceRequest(str(t), str(d), EngineSettings(), None, 128, shape)
    view.source = lambda: local
    view.refresh()
    assert view.where.text() == ALL_LOCAL and not view.measure.isEnabled()
    assert not view.start() and "no distance to measure" in view.status.text()
    placed = DistanceRequest(str(t), str(d), EngineSettings(rpc=("127.0.0.1:50052",), target_devices=("RPC0",),
                                                            target_gpu_layers=-1), None, 128, shape)
    assert placed.remote and "RPC0" in placed.where
    view.source = lambda: placed
    view.refresh()
    assert view.measure.isEnabled()
    view._on_finished(placed, distance[0])      # as the worker hands a measurement over
    text = view.shown_text()
    here, there = distance[0].rounds(3, shape.acceptance)
    assert f"{'round, n = 3':<26}{here.total * 1e3:>13.2f}{there.total * 1e3:>11.2f}" in text
    assert "Over the last run (40 rounds, 200 ms)" in text
    assert not view.plot.isHidden()


def test_measure_runs_on_its_own_thread_and_stops_or_fails_cleanly(qtbot, demo_paths):
    """The view's real path: an endpoint nobody serves fails at once with one line naming it
    (or, on a llama.cpp without RPC, the missing backend), before any calibration; Stop during
    a calibration ends the task with nothing measured; the threads are gone either way
    (no_leftover_threads)."""
    pytest.importorskip("pytestqt")
    from specscope.app.distance_view import DistanceRequest, DistanceView, RoundShape, measure
    from specscope.app.task import BackgroundTask
    view = DistanceView()
    qtbot.addWidget(view)
    t, d = demo_paths
    shape = RoundShape(n=2, acceptance=(0.5, 0.3))
    dead = DistanceRequest(str(t), str(d), EngineSettings(rpc=("127.0.0.1:1",), target_devices=("RPC0",),
                                                          target_gpu_layers=-1), None, 64, shape)
    view.source = lambda: dead
    assert view.start()
    qtbot.waitUntil(lambda: not view.running, timeout=60_000)
    text = view.status.text()
    assert view.result is None and "⚠" in text
    assert "127.0.0.1:1 refused the connection" in text or "without llama.cpp's RPC backend" in text, text
    assert view.measure.isEnabled() and not view.stop.isEnabled()
    task = BackgroundTask(measure, "test-distance")
    seen = []
    task.progressed.connect(lambda frac, what: seen.append(what))
    local = DistanceRequest(str(t), str(d), EngineSettings(), None, 64, shape)
    with qtbot.waitSignal(task.failed, timeout=60_000) as failed:
        task.start(local)
        qtbot.waitUntil(lambda: bool(seen), timeout=30_000)
        task.request_stop()
    assert failed.args[0] is None and not task.running
