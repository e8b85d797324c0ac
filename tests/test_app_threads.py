"""The window's llama.cpp threads: a Compare sweep leaves no OpenMP team behind.

This llama.cpp build runs its decodes on OpenMP (libgomp), which keeps a team of threads for
each thread that ran a parallel decode, as long as that thread lives; with more such threads
than cores every team sleeps at its barriers instead of spinning (see docs/threads.md).
The sweep's worker thread therefore ends after each sweep; this counts the process's OS
threads (Linux /proc), which is exact, instead of timing anything."""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from helpers import ggufgen  # noqa: E402
from specscope.app.compare_view import CompareView  # noqa: E402
from specscope.core.engine.engine import EngineSettings  # noqa: E402
from specscope.core.engine.sampling import SamplerSettings  # noqa: E402

TASKS = Path("/proc/self/task")
EOT = len(ggufgen.bpe_vocab()[0]) - 1


def os_threads() -> int:
    return len(os.listdir(TASKS))


def thread_ids() -> set[str]:
    return set(os.listdir(TASKS))


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
    settings = replace(view.settings(), engine=EngineSettings(n_ctx=256, target_threads=1, draft_threads=1),
                       n_predict=8, sampler=SamplerSettings(logit_bias=((EOT, -math.inf),)),
                       calibration_s=0.2)
    before = os_threads()
    with qtbot.waitSignal(view.sweep_finished, timeout=120_000):
        assert view.start(settings)
    # libgomp's threads leave after their master: a thread (and its OpenMP team) outliving the
    # sweep fails this
    qtbot.waitUntil(lambda: os_threads() <= before, timeout=5_000)
    assert view.task._thread is None            # the sweep's thread ended with it
    assert view.shutdown()


@pytest.mark.skipif(not TASKS.is_dir(), reason="needs Linux /proc")
def test_a_thread_that_decoded_keeps_its_openmp_team_until_it_ends(qtbot, tiny_models):
    """Why the sweep's thread must end: with llama.cpp built on libgomp, a thread that ran a
    2-thread decode keeps a team thread of its own for as long as it lives."""
    import threading
    from specscope.core.models.llama import Batch, Context, ContextSettings, Model
    model = Model(tiny_models["target"])
    if "libgomp" not in Path("/proc/self/maps").read_text():
        model.close()
        pytest.skip("llama.cpp is not built on libgomp here")
    decoded, release = threading.Event(), threading.Event()

    def body():
        ctx = Context(model, ContextSettings(n_ctx=64, n_threads=2))
        with Batch(1) as batch:
            batch.fill([1], 0)
            ctx.decode(batch, "test")
        ctx.close()
        decoded.set()
        release.wait(60)

    before = thread_ids()      # by id: another test's thread may end meanwhile
    t = threading.Thread(target=body)
    t.start()
    try:
        assert decoded.wait(60)
        started = thread_ids() - before
        assert str(t.native_id) in started
        assert len(started) == 2          # the Python thread and the one team thread it started
    finally:
        release.set()
        t.join()
        model.close()
    qtbot.waitUntil(lambda: not thread_ids() & started, timeout=5_000)     # both leave with it
