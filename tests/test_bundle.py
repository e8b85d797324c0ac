"""The one-folder bundle (packaging/specscope.spec): PyInstaller builds it into a temporary
folder, then the bundled ``specscope run -n 8`` generates on the bundled demo pair and the
bundled window starts offscreen, draws itself and quits cleanly. A build takes minutes:
marked slow (CI runs it; ``-m 'not slow'`` leaves it out)."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PyInstaller")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    if shutil.which("objdump") is None:
        why = "PyInstaller needs objdump (binutils) on Linux"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    out = tmp_path_factory.mktemp("bundle")
    proc = subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
         "--distpath", str(out / "dist"), "--workpath", str(out / "build"),
         str(ROOT / "packaging" / "specscope.spec")],
        capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out / "dist" / "specscope"


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> dict:
    """A fresh user for the bundled program: its own home, settings, cache and logs."""
    home = tmp_path_factory.mktemp("home")
    return dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
                XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"),
                SPECSCOPE_CACHE_DIR=str(home / "cache" / "specscope"),
                SPECSCOPE_DATA_DIR=str(home / "data"), SPECSCOPE_LOG_DIR=str(home / "log"),
                QT_QPA_PLATFORM="offscreen")


def test_bundle_carries_licences_libraries_and_desktop_entry(bundle):
    for name in ("specscope", "LICENSE", "specscope.desktop", "specscope.svg", "specscope.png",
                 "licenses/THIRD_PARTY_NOTICES.md", "licenses/LGPL-3.0.txt",
                 "licenses/llama.cpp-LICENSE.txt", "licenses/Python-LICENSE.txt",
                 "licenses/system/README.txt"):
        assert (bundle / name).is_file(), name
    internal = bundle / "_internal"
    models = internal / "specscope" / "resources" / "models"
    assert {"demo-target.gguf", "demo-draft.gguf"} <= {p.name for p in models.iterdir()}
    assert (internal / "specscope" / "resources" / "icons" / "specscope.png").is_file()   # the window's
    assert (internal / "llama_cpp" / "lib" / "libllama.so").is_file()
    # Qt stays a set of separate, replaceable shared libraries (LGPL), only the modules used
    qt = {p.name for p in (internal / "PySide6" / "Qt" / "lib").iterdir()}
    assert {"libQt6Core.so.6", "libQt6Gui.so.6", "libQt6Widgets.so.6", "libQt6Svg.so.6"} <= qt
    assert not [n for n in qt if n.startswith(("libQt6WebEngine", "libQt63D", "libQt6Multimedia",
                                               "libQt6Quick", "libQt6Qml", "libQt6Network"))]
    platforms = {p.name for p in (internal / "PySide6" / "Qt" / "plugins" / "platforms").iterdir()}
    assert platforms == {"libqxcb.so", "libqoffscreen.so"}
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(bundle / "specscope.desktop", encoding="utf-8")
    assert entry["Desktop Entry"]["Exec"].split()[0] == "specscope"
    assert entry["Desktop Entry"]["Icon"] == "specscope"


def test_bundled_run_generates_8_tokens(bundle, user):
    proc = subprocess.run([str(bundle / "specscope"), "run", "-n", "8"], env=user,
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert "generated: 8 tokens" in proc.stdout, proc.stdout
    # the crash probe ran each model in a child process: the bundle's executable again, as
    # `specscope -m specscope.core.models.probe` (its report names the repacking it used)
    verdicts = list(Path(user["SPECSCOPE_CACHE_DIR"]).rglob("probes/*.json"))
    assert len(verdicts) == 2
    for path in verdicts:
        text = path.read_text()
        assert '"status": "ok"' in text and '"repack_used"' in text, text


def test_bundle_runs_only_its_own_modules(bundle, user):
    proc = subprocess.run([str(bundle / "specscope"), "-m", "os"], env=user,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "only SpecScope's own modules" in proc.stderr


def test_bundled_window_starts_offscreen_and_quits(bundle, user, tmp_path):
    shot = tmp_path / "window.png"
    env = dict(user, SPECSCOPE_QUIT_AFTER_MS="8000", SPECSCOPE_SCREENSHOT=str(shot))
    proc = subprocess.run([str(bundle / "specscope")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert list(Path(user["XDG_CONFIG_HOME"]).rglob("*.conf")), "no settings written on quit"
    from PySide6.QtGui import QImage
    image = QImage(str(shot))
    assert not image.isNull(), "no screenshot of the window"
    assert image.width() >= 800 and image.height() >= 500, image.size()
