"""The cost draft policy's calibration in the window, on the real demo pair (or the tiny
generated one): a run that has to calibrate first says so with its progress, Stop ends it
cleanly, and the cost panel says where the calibration stands (under load, cached)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QObject, Slot  # noqa: E402

from specscope.core.session.controller import RunState  # noqa: E402

from helpers.window import RUN_TIMEOUT_MS, open_window, run_and_wait  # noqa: E402
from test_calibrate import FixedLoad  # noqa: E402

CALIBRATING = "Calibrating the pair for the cost policy… "


class Seen(QObject):
    """What the worker reported, in order, with the window's state line at each progress
    report (its slot runs after the window's, which was connected first)."""

    def __init__(self, w):
        super().__init__()
        self.w, self.log = w, []
        w.worker.calibration_progressed.connect(self.progress)
        w.worker.events_ready.connect(self.rounds)

    @Slot(int, float)
    def progress(self, run_id: int, fraction: float) -> None:
        self.log.append(("progress", fraction, self.w.stats_bar.text("state")))

    @Slot(int, list)
    def rounds(self, run_id: int, batch: list) -> None:
        self.log.append(("rounds", len(batch), ""))

    def take(self) -> list:
        out, self.log = self.log, []
        return out


@pytest.fixture
def cost_window(qtbot, pair, settings, tmp_path, monkeypatch):
    """A window set for short cost-policy runs, with an empty calibration cache of its own."""
    from specscope.core.measure.cost import cache as cc
    monkeypatch.setattr(cc, "cache_dir", lambda: tmp_path / "calibration")
    monkeypatch.setattr(cc, "DRIFT_TOLERANCE", float("inf"))   # a cached one passes its check
    # the load is what FixedLoad says: decodes slowing down meanwhile (threads auto's evidence
    # of load, core/models/threads.py) do not count here
    monkeypatch.setattr("specscope.core.models.threads.ThreadGovernor.SLOW", float("inf"))
    w = open_window(qtbot, pair, settings)
    w.params.n_predict.setValue(8)
    w.params.n_ctx.setValue(512)
    w.params.n_max.setValue(2)          # k_max 3: the shortest calibration that can tell n apart
    w.prompt.set_text("def add(a, b):\n    ")
    d = w.params.drafter
    d.policy.setCurrentIndex(d.policy.findData("cost"))
    yield w
    w.close()


def test_stop_while_calibrating_leaves_the_window_idle(qtbot, cost_window, tmp_path):
    w = cost_window
    with qtbot.waitSignal(w.run_done, timeout=RUN_TIMEOUT_MS) as done:
        w.run_clicked()
        qtbot.waitUntil(lambda: w.stats_bar.text("state").startswith(CALIBRATING), timeout=RUN_TIMEOUT_MS)
        assert w.stats_bar.text("state").endswith("%")
        w.stop_clicked()
    assert done.args[1] == "stopped"
    assert w.controller.state is RunState.IDLE and w.controller.active is None and w.controller.session is None
    assert w.act_run.isEnabled() and not w.act_stop.isEnabled() and w.params.isEnabled()
    assert w.banner.level != "error" and w.stats_bar.text("state").startswith("Stopped while calibrating")
    assert w.params.drafter.spec_settings().draft_policy == "cost"
    assert not list((tmp_path / "calibration").glob("*.json"))      # nothing half-measured cached


def test_a_cost_run_shows_its_calibration_then_uses_the_cached_one(qtbot, cost_window, monkeypatch):
    from specscope.core.measure.cost import calibrate as cb
    w = cost_window
    seen = Seen(w)
    # 1. taken under load: progress before the first round, and the cost panel warns
    monkeypatch.setattr(cb, "LoadMeter", lambda: FixedLoad(0.9))
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    log = seen.take()
    first_round = next(i for i, e in enumerate(log) if e[0] == "rounds")
    progress = [e for e in log[:first_round] if e[0] == "progress"]
    assert progress and progress[-1][1] == 1.0
    assert all(state == f"{CALIBRATING}{100 * f:.0f}%" for _, f, state in progress)
    assert w.controller.session.settings.spec.draft_policy == "cost" and w.controller.session.run.events
    assert "TAKEN UNDER LOAD" in w.cost_panel.calibration_text()
    # 2. not cached (taken under load): measured again, on a quiet machine now, and cached
    monkeypatch.setattr(cb, "LoadMeter", lambda: FixedLoad(0.0))
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    assert any(e[0] == "progress" for e in seen.take())
    assert "measured now" in w.cost_panel.calibration_text()
    # 3. cached (its drift check passes): no calibrating state at all
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"
    log = seen.take()
    assert log and not any(e[0] == "progress" for e in log)
    assert "cached" in w.cost_panel.calibration_text()


def test_the_cost_tab_draws_the_pair_s_cached_calibration_without_a_run(qtbot, cost_window, monkeypatch, pair):
    """A calibration of this pair cached on this machine is drawn as soon as the pair is chosen
    (the Cost model tab once waited for its button, while the pair panel and What-if used it)."""
    from pathlib import Path
    from specscope.core.measure.cost import calibrate as cb
    w = cost_window
    monkeypatch.setattr(cb, "LoadMeter", lambda: FixedLoad(0.0))
    assert run_and_wait(qtbot, w, w.run_clicked) == "n_predict"      # calibrates, and caches it
    w.pair_panel.set_pair(Path(pair[0]), None)                        # the target alone: none
    qtbot.waitUntil(lambda: w.cost_panel.calibrated is None, timeout=5_000)
    w.pair_panel.set_pair(Path(pair[0]), Path(pair[1]))               # back: the cached one, at once
    qtbot.waitUntil(lambda: w.cost_panel.calibrated is not None, timeout=5_000)
    assert "cached" in w.cost_panel.calibration_text()
