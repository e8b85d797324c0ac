"""Models on llama.cpp's rpc-server (core/models/devices.py, --rpc / --device / -devd).

The first tests need no RPC build: endpoint parsing, the handshake's clear errors, and how a
llama.cpp built without GGML_RPC refuses. The loopback tests use an RPC-enabled build of the
same llama.cpp source (tests/helpers/rpc_build.py, built once and cached) in child processes
(LLAMA_CPP_LIB_PATH) and a ggml-rpc-server on 127.0.0.1: the demo pair with its target (and
both models) on it must emit what the local run emits, token for token, round for round.
"""

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from specscope.core.cli.devices import placement_kwargs
from specscope.core.models.devices import (greet, is_remote, parse_devices, parse_endpoints, placement,
                                           rpc_supported)
from specscope.core.errors import ConfigError


def test_endpoints_parse_as_llama_cpp_takes_them():
    assert parse_endpoints("10.0.0.2:50052, 127.0.0.1:50053,10.0.0.2:50052") == \
        ("10.0.0.2:50052", "127.0.0.1:50053")
    assert parse_endpoints("") == ()
    for bad in ("10.0.0.2", "host:", ":50052", "host:port", "host:70000"):
        with pytest.raises(ConfigError, match="RPC endpoint .*HOST:PORT"):
            parse_endpoints(f"127.0.0.1:1,{bad}")


def test_placement_flags():
    class Args:
        rpc = "127.0.0.1:50052"
        device, gpu_layers, device_draft, gpu_layers_draft = "RPC0", None, "none", None
    kw = placement_kwargs(Args)
    assert kw == {"rpc": ("127.0.0.1:50052",), "target_devices": ("RPC0",), "target_gpu_layers": -1,
                  "draft_devices": (), "draft_gpu_layers": 0}
    Args.gpu_layers, Args.device_draft, Args.gpu_layers_draft = 3, None, None
    kw = placement_kwargs(Args)
    assert (kw["target_gpu_layers"], kw["draft_devices"], kw["draft_gpu_layers"]) == (3, None, 0)
    assert is_remote(("RPC0",), -1) and not is_remote(("RPC0",), 0) and not is_remote((), -1)
    assert is_remote(None, -1, ("h:1",)) and not is_remote(None, -1)
    assert parse_devices("none") == () and parse_devices(None) is None
    assert placement(("RPC0",), -1, ("h:1",)) == "all layers on RPC0 (RPC h:1)"
    assert placement(None, 0) == "local CPU"


def test_refused_endpoint_is_named():
    with socket.socket() as s:          # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match=f"RPC endpoint 127.0.0.1:{port} refused the connection"):
        greet(f"127.0.0.1:{port}", timeout_s=2)


def test_an_endpoint_that_is_not_an_rpc_server_is_named():
    """A server that accepts and hangs up (not rpc-server) is named, not an abort."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def serve():
        conn, _ = srv.accept()
        conn.recv(64)
        conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
        conn.close()
    t = threading.Thread(target=serve)
    t.start()
    try:
        with pytest.raises(ConfigError, match=f"RPC endpoint 127.0.0.1:{port} answered, but not as"):
            greet(f"127.0.0.1:{port}", timeout_s=2)
    finally:
        t.join(5)
        srv.close()


@pytest.mark.skipif(rpc_supported(), reason="this llama.cpp has RPC")
def test_without_rpc_the_cli_says_why_and_how(capsys):
    from specscope.core.cli.main import main
    assert main(["run", "-n", "2", "--no-probe", "--rpc", "127.0.0.1:50052"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "built without llama.cpp's RPC backend" in err[0] \
        and "GGML_RPC=ON" in err[0]


def test_an_unknown_device_is_named(capsys):
    from specscope.core.cli.main import main
    assert main(["run", "-n", "2", "--no-probe", "--device", "RPC7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "device 'RPC7' is not one llama.cpp offers" in err[0]


def test_the_cpu_as_a_device_says_why_not(capsys):
    """llama.cpp's --device refuses the CPU too; `specscope devices` lists it, and says so."""
    from specscope.core.cli.main import main
    assert main(["run", "-n", "2", "--no-probe", "-devd", "CPU"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the draft's device 'CPU' is not a --device: the CPU holds every " \
        "layer that is not offloaded" in err[0]
    assert main(["devices"]) == 0
    cpu = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("CPU "))
    assert cpu.endswith("not a --device: the CPU holds every layer that is not offloaded "
                        "(-ngl 0, the default, keeps them all there)")


# ---------------------------------------------------------------------------- on loopback

def _cli(lib, *args, timeout=300):
    """specscope's CLI in a child process running the RPC-enabled llama.cpp build."""
    env = {**os.environ, "LLAMA_CPP_LIB_PATH": str(lib), "GGML_NO_BACKTRACE": "1"}
    return subprocess.run([sys.executable, "-m", "specscope.core.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


RUN = ("run", "-n", "32", "--json", "--no-probe", "-t", "1", "-td", "1", "--spec-draft-n-max", "4")


def _rounds(doc):
    return [(len(r["drafted"]), r["n_accepted"]) for r in doc["rounds"]]


@pytest.mark.slow
def test_devices_lists_the_endpoint(rpc_build, rpc_server):
    out = _cli(rpc_build, "devices", "--rpc", rpc_server, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["rpc_supported"] is True
    rpc = [d for d in doc["devices"] if d["name"].startswith("RPC")]
    assert [d["description"] for d in rpc] == [rpc_server] and rpc[0]["total"] > 0


@pytest.mark.slow
def test_target_and_both_on_loopback_match_the_local_run(rpc_build, rpc_server):
    local = _cli(rpc_build, *RUN)
    assert local.returncode == 0, local.stderr
    local = json.loads(local.stdout)
    for placement_args in (("--device", "RPC0", "-devd", "none"), ("--device", "RPC0", "-devd", "RPC0")):
        remote = _cli(rpc_build, *RUN, "--rpc", rpc_server, *placement_args)
        assert remote.returncode == 0, remote.stderr
        remote = json.loads(remote.stdout)
        assert remote["tokens"] == local["tokens"], placement_args
        assert _rounds(remote) == _rounds(local), placement_args
        assert remote["settings"]["placement"]["target"] == f"all layers on RPC0 (RPC {rpc_server})"


@pytest.mark.slow
def test_a_dead_endpoint_gets_one_clear_line(rpc_build):
    from helpers import rpc_build as rb
    port = rb.free_port()
    out = _cli(rpc_build, *RUN, "--rpc", f"127.0.0.1:{port}", "--device", "RPC0", timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"RPC endpoint 127.0.0.1:{port} refused the connection" in lines[0]


def test_placements_and_the_cost_of_distance_in_ms():
    from specscope.core.measure.cost.model import Calibration
    from specscope.core.measure.cost.distance import cost_lines, placement_settings
    from specscope.core.engine.engine import EngineSettings
    both = placement_settings(EngineSettings(rpc=("h:1",)), "both-remote", ("RPC0",))
    assert (both.target_devices, both.target_gpu_layers, both.draft_devices) == (("RPC0",), -1, ("RPC0",))
    local = placement_settings(both, "local", ("RPC0",))
    assert (local.target_devices, local.target_gpu_layers, local.draft_gpu_layers) == ((), 0, 0)
    with pytest.raises(ConfigError, match="needs an rpc-server"):
        placement_settings(EngineSettings(), "target-remote", ())
    with pytest.raises(ConfigError, match="expected one of"):
        placement_settings(EngineSettings(), "far-away", ())

    def cal(t1, c, f):
        return Calibration(k_max=len(c), n_past=0, t1=t1, c_raw=c, c=c, f=f, f_batch=c)
    lines = cost_lines({"local": cal(1e-3, (1.0, 1.5), 0.2), "target-remote": cal(2e-3, (1.0, 1.0), 0.1)})
    text = "\n".join(lines)
    assert "local                  1.00     1.50" in text              # t1·c(k) in ms
    assert "  + target-remote     +1.00    +0.50" in text              # 2.00 − 1.00, 2.00 − 1.50
    assert "local: 0.20  target-remote: 0.20" in text                 # f·t1
    assert lines[-1].split()[-1] == "2.20"                            # n=1: (1·0.1 + 1.0)·2 ms


def test_the_window_greys_rpc_out_without_it(qtbot):
    pytest.importorskip("pytestqt")
    from specscope.app.pair_panel import PairPanel
    panel = PairPanel()
    qtbot.addWidget(panel)
    panel.set_engine_kwargs({"rpc": ["10.0.0.2:50052"], "target_devices": ["RPC0"],
                             "draft_devices": [], "target_gpu_layers": -1})
    kw = panel.engine_kwargs()
    assert (kw["rpc"], kw["target_devices"], kw["draft_devices"], kw["target_gpu_layers"]) == \
        (("10.0.0.2:50052",), ("RPC0",), (), -1)
    assert "no authentication" in panel.placement.warning.text()
    if rpc_supported():
        return
    panel.placement.rpc_edit.clear()
    with qtbot.waitSignal(panel.placement.answered, timeout=10000):
        panel.advanced_toggle.setChecked(True)
    assert not panel.placement.rpc_edit.isEnabled() and not panel.placement.connect_button.isEnabled()
    assert "GGML_RPC=ON" in panel.placement.status.text()
    assert "CPU" in panel.placement.table.text()


@pytest.mark.slow
def test_the_window_runs_its_target_on_loopback(rpc_build, rpc_server):
    """tests/helpers/rpc_window_check.py in a child with the RPC build: same output as local; a dead
    endpoint is one line in the banner and the window keeps running."""
    from pathlib import Path
    env = {**os.environ, "LLAMA_CPP_LIB_PATH": str(rpc_build), "SPECSCOPE_RPC_ENDPOINT": rpc_server,
           "GGML_NO_BACKTRACE": "1"}
    here = Path(__file__).parent
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(here / "helpers" / "rpc_window_check.py")], env=env, cwd=here.parent,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
