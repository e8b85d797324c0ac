"""Smoke test: start ``specscope`` (no arguments) as a process, offscreen; a timer
quits it. Fails on a non-zero exit or any traceback on stderr."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")


@pytest.mark.parametrize("quit_after_ms", [1200, 4000])   # while the pair loads; once it is ready
def test_specscope_starts_and_quits(tmp_path, quit_after_ms):
    env = dict(os.environ,
               QT_QPA_PLATFORM="offscreen",
               SPECSCOPE_QUIT_AFTER_MS=str(quit_after_ms),
               SPECSCOPE_LOG_DIR=str(tmp_path / "log"),
               XDG_CONFIG_HOME=str(tmp_path / "config"),   # QSettings: a fresh user
               XDG_STATE_HOME=str(tmp_path / "state"),
               HOME=str(tmp_path))
    exe = shutil.which("specscope")
    cmd = [exe] if exe else [sys.executable, "-m", "specscope.core.cli"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    # the settings were written on quit
    conf = list((tmp_path / "config").rglob("*.conf"))
    assert conf, "no settings file was written"
