"""A first start where Qt cannot open a window: one line and exit 2, never Qt's abort (134).

These run `specscope` (the window, the default command) in a subprocess with the display
variables changed; the libraries missing on a machine are whatever that machine lacks (no
library is faked)."""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.app.main import QT_LIBRARIES, WAYLAND_LIBRARIES, XCB_LIBRARIES

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux display checks")


def start_window(**env_changes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-m", "specscope.app"], env=env, capture_output=True,
                          text=True, timeout=120)


def loadable(name: str) -> bool:
    try:
        ctypes.CDLL(name)
        return True
    except OSError:
        return False


@linux_only
def test_no_display_is_one_line_and_exit_2():
    proc = start_window()
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("specscope: error: no display")
    assert "specscope run" in lines[0]


@linux_only
def test_unusable_x_display_is_one_line_and_exit_2():
    """DISPLAY names a server that does not exist. Where a library Qt's xcb plugin needs is
    missing (as on a fresh install), the line names its package; otherwise the display."""
    proc = start_window(DISPLAY=":97")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    missing = [lib for lib in {**QT_LIBRARIES, **XCB_LIBRARIES} if not loadable(lib)]
    if missing:
        packages = {**QT_LIBRARIES, **XCB_LIBRARIES}
        assert all(packages[lib] in lines[0] for lib in missing), lines[0]
        assert "apt install" in lines[0]
    else:
        assert "cannot connect to the X display" in lines[0] and ":97" in lines[0]


@linux_only
def test_an_explicit_platform_is_not_second_guessed(monkeypatch):
    from specscope.app.main import display_problem
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert display_problem() is None
    monkeypatch.delenv("QT_QPA_PLATFORM")
    assert display_problem().startswith("no display")


def needed(path: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


@linux_only
def test_the_library_list_covers_what_the_installed_qt_needs():
    """Every system library that PySide6's Qt (core, GUI, widgets, D-Bus, the xcb and wayland
    plugins) links to directly is in the lists display_problem() checks, except the C and C++
    runtimes and the ones PySide6 ships itself."""
    import shutil
    import PySide6
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    qt = Path(PySide6.__file__).parent / "Qt"
    files = [qt / "lib" / f"libQt6{m}.so.6" for m in ("Core", "Gui", "Widgets", "DBus", "XcbQpa")]
    files += [qt / "plugins" / "platforms" / p for p in ("libqxcb.so", "libqwayland.so")]
    runtime = ("libc.so", "libm.so", "libstdc++", "libgcc_s", "libpthread", "libdl.so", "librt",
               "ld-linux")
    listed = {**QT_LIBRARIES, **XCB_LIBRARIES, **WAYLAND_LIBRARIES}
    for f in files:
        if not f.exists():
            continue
        shipped = {p.name for p in (qt / "lib").iterdir()}
        unlisted = [n for n in needed(f) if n not in listed and n not in shipped
                    and not n.startswith(runtime)]
        assert not unlisted, f"{f.name} needs {unlisted}: add them (and their packages) to app/main.py"
