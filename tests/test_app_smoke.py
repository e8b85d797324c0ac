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
    cmd = [exe] if exe else [sys.executable, "-m", "specscope.app"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    # the settings were written on quit
    conf = list((tmp_path / "config").rglob("*.conf"))
    assert conf, "no settings file was written"


def test_the_window_has_the_shipped_icon_and_names_its_desktop_entry(qtbot, tmp_path):
    """The desktop matches the window to packaging/specscope.desktop by the desktop file name,
    and shows the icon the app sets, which is package data (installed and bundled alike)."""
    import configparser
    import fnmatch
    import tomllib
    from pathlib import Path

    from PySide6.QtCore import QSettings
    from PySide6.QtGui import QIcon

    import specscope.resources
    from specscope.app.main import DESKTOP_FILE, icon_path, make_app
    from specscope.app.window import MainWindow

    root = Path(__file__).resolve().parent.parent
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(root / "packaging" / f"{DESKTOP_FILE}.desktop", encoding="utf-8")
    assert entry["Desktop Entry"]["Icon"] == DESKTOP_FILE == icon_path().stem
    package = Path(specscope.resources.__file__).parent
    shipped = icon_path().relative_to(package).as_posix()
    patterns = tomllib.loads((root / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-data"]["specscope.resources"]
    assert any(fnmatch.fnmatch(shipped, p) for p in patterns), (shipped, patterns)

    app = make_app()
    before = (app.applicationName(), app.organizationName(), app.applicationDisplayName(),
              app.desktopFileName(), app.windowIcon())
    try:
        w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
                       preload=False)
        qtbot.addWidget(w)
        w.show()
        assert app.desktopFileName() == "specscope"
        assert not w.windowIcon().isNull()
        assert w.windowIcon().pixmap(64, 64).toImage() == QIcon(str(icon_path())).pixmap(64, 64).toImage()
    finally:      # the test session's QApplication as it was (QSettings() reads these names)
        app.setApplicationName(before[0])
        app.setOrganizationName(before[1])
        app.setApplicationDisplayName(before[2])
        app.setDesktopFileName(before[3])
        app.setWindowIcon(before[4])


def test_settling_the_heap_takes_the_startup_objects_out_of_the_collectors_reach():
    """What the window made at startup no longer costs a full collection (main() settles it once
    the panels are built): gc.freeze moves every tracked object to the permanent generation."""
    import gc

    from specscope.app.main import settle_heap
    gc.unfreeze()
    try:
        settle_heap()
        left = len(gc.get_objects())          # what a collection still walks: made since
        assert gc.get_freeze_count() > 10 * left, (gc.get_freeze_count(), left)
    finally:
        gc.unfreeze()               # the test process keeps collecting what it made
