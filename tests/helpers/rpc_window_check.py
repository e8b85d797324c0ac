"""The window with its target on an rpc-server: run by test_rpc.py in a child process whose
llama.cpp has RPC (LLAMA_CPP_LIB_PATH) and SPECSCOPE_RPC_ENDPOINT naming a loopback
ggml-rpc-server; skipped otherwise. Not collected on its own (no test_ prefix)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pytestqt")

from helpers.window import open_window, run_and_wait  # noqa: E402

ENDPOINT = os.environ.get("SPECSCOPE_RPC_ENDPOINT")


@pytest.mark.skipif(not ENDPOINT, reason="needs SPECSCOPE_RPC_ENDPOINT (see test_rpc.py)")
def test_window_target_on_rpc_server_matches_local(qtbot, pair, settings):
    w = open_window(qtbot, pair, settings)
    try:
        w.params.n_predict.setValue(24)
        w.params.n_ctx.setValue(512)
        w.prompt.set_text("def add(a, b):\n    ")
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        local = [(e.drafted, e.n_accepted, e.emitted) for e in w.shown.events]
        box = w.pair_panel.placement
        # a dead endpoint: one clear line in the banner, the window keeps running
        box.rpc_edit.setText("127.0.0.1:1")
        assert run_and_wait(qtbot, w, w.run_clicked) == "error"
        assert "RPC endpoint 127.0.0.1:1 refused the connection" in w.banner.message
        box.rpc_edit.setText(ENDPOINT)
        with qtbot.waitSignal(box.answered, timeout=30_000):
            box.refresh()
        assert box.devices["target"].findText("RPC0") >= 0, box.table.text()
        box.devices["target"].setCurrentText("RPC0")
        box.devices["draft"].setCurrentText("none (local CPU)")
        assert w.pair_panel.gpu_layers["target"].value() == -1      # all layers go there
        assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
        remote = [(e.drafted, e.n_accepted, e.emitted) for e in w.shown.events]
        assert remote == local
        # the cost tab: what the distance costs per round, calibrated here and on the server
        view = w.distance_view
        view.refresh()
        assert view.measure.isEnabled() and "RPC0" in view.where.text(), view.where.text()
        assert view.start()
        qtbot.waitUntil(lambda: not view.running, timeout=300_000)
        assert view.result is not None, view.status.text()
        distance = view.result[1]
        assert distance.placement["target"] == f"all layers on RPC0 (RPC {ENDPOINT})"
        assert distance.placement["draft"] == "local CPU"
        # each calibrated where it runs (the server's threads are its own: not always slower)
        assert distance.local.key != distance.placed.key
        assert distance.placed.describe["placement"]["target"] == distance.placement["target"]
        text = view.shown_text()
        assert "round, n = " in text and "Over the last run (" in text, text
    finally:
        w.close()
