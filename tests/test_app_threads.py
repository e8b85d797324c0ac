"""The window's llama.cpp threads: a Compare sweep leaves no OpenMP team behind.

This llama.cpp build runs its decodes on OpenMP (libgomp), which keeps a team of threads for
each thread that ran a parallel decode, as long as that thread lives; with more such threads
than cores every team sleeps at its barriers instead of spinning (see the README, "Threads").
The sweep's worker thread therefore ends after each sweep; this counts the process's OS
threads (Linux /proc), which is exact, instead of timing anything."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

import ggufgen  # noqa: E402
from specscope.app.compare_view import CompareView  # noqa: E402
from specscope.core.engine import EngineSettings  # noqa: E402
from specscope.core.sampling import SamplerSettings  # noqa: E402

TASKS = Path("/proc/self/task")
EOT = len(ggufgen.bpe_vocab()[0]) - 1


def os_threads() -> int:
    return len(os.listdir(TASKS))


@pytest.mark.skipif(not TASKS.is_dir(), reason="needs Linux /proc")
def test_a_sweep_leaves_no_thread_team_behind(qtbot, tiny_models, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    view = CompareView()
    qtbot.addWidget(view)
    view.set_pair(tiny_models["target"], tiny_models["draft"], [])
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"name": "code", "text": "def f(x):"}]}), encoding="utf-8")
    view.set_prompt_file(prompts)
    view.n_values.setText("1")
    settings = replace(view.settings(), engine=EngineSettings(n_ctx=256, target_threads=2, draft_threads=2),
                       n_predict=8, sampler=SamplerSettings(logit_bias=((EOT, -math.inf),)),
                       calibration_s=0.2)
    before = os_threads()
    with qtbot.waitSignal(view.sweep_finished, timeout=120_000):
        assert view.start(settings)
    deadline = time.monotonic() + 5          # libgomp's threads leave after their master
    while os_threads() > before and time.monotonic() < deadline:
        qtbot.wait(20)
    assert os_threads() <= before, "a thread (and its OpenMP team) outlived the sweep"
    assert view._thread is None
    assert view.shutdown()
