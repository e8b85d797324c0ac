"""The ``specscope`` command (``cli``): with no headless command it opens the window.

``cli`` hands the window to the command line of specscope.core.cli, which never imports the
app. The window shows before any model loads; the pair is checked and loaded on worker
threads.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "SpecScope"
ORG_NAME = "SpecScope"
DESKTOP_FILE = "specscope"       # packaging/specscope.desktop: the desktop matches windows to it

# for tests and the smoke test: quit after this many milliseconds
QUIT_AFTER_ENV = "SPECSCOPE_QUIT_AFTER_MS"
# with it: save the window as a PNG to this file just before quitting (the bundle's test)
SCREENSHOT_ENV = "SPECSCOPE_SCREENSHOT"
# for the benchmark: time.time() when the process was started; the window prints how long it took
STARTUP_T0_ENV = "SPECSCOPE_STARTUP_T0"


GIL_SWITCH_INTERVAL_S = 0.0001

# System libraries that PySide6's Qt loads on Linux but does not ship (readelf -d: the NEEDED
# entries of libQt6Core/Gui/Widgets/DBus and of the xcb and wayland platform plugins), with
# the Debian/Ubuntu package of each. Qt aborts (SIGABRT, exit 134) when one is missing; fresh
# installs often lack the xcb utility libraries (libxcb-cursor0 since Qt 6.5, libxcb-icccm4,
# libxcb-keysyms1) and libxkbcommon-x11-0. tests/test_app_first_start.py checks that this list
# covers what the installed PySide6 needs.
QT_LIBRARIES = {
    "libEGL.so.1": "libegl1", "libGL.so.1": "libgl1", "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6", "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0", "libxkbcommon.so.0": "libxkbcommon0",
    "libX11.so.6": "libx11-6", "libdbus-1.so.3": "libdbus-1-3", "libz.so.1": "zlib1g",
    "libzstd.so.1": "libzstd1",
}
XCB_LIBRARIES = {
    "libxcb.so.1": "libxcb1", "libX11-xcb.so.1": "libx11-xcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0", "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4", "libxcb-util.so.1": "libxcb-util1",
    "libxcb-image.so.0": "libxcb-image0", "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0", "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0", "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0", "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0", "libxcb-xkb.so.1": "libxcb-xkb1",
}
WAYLAND_LIBRARIES = {"libwayland-client.so.0": "libwayland-client0",
                     "libwayland-cursor.so.0": "libwayland-cursor0"}
HEADLESS = "or use the headless 'specscope run' / 'specscope baseline'"


def _missing(libraries: dict[str, str]) -> list[str]:
    """The libraries of ``libraries`` the dynamic loader cannot find (it searches as it will
    for Qt's own libraries: LD_LIBRARY_PATH, the ld.so cache, the system folders)."""
    import ctypes
    missing = []
    for name in libraries:
        try:
            ctypes.CDLL(name)
        except OSError:
            missing.append(name)
    return missing


def _install_hint(libraries: dict[str, str], missing: list[str]) -> str:
    packages = " ".join(dict.fromkeys(libraries[m] for m in missing))
    return (f"the window needs {', '.join(missing)}, which this system lacks: install "
            f"{'it' if len(missing) == 1 else 'them'} (Debian/Ubuntu: sudo apt install {packages}), "
            f"{HEADLESS}")


def _x_display_error() -> str | None:
    """Can we reach the X server that DISPLAY names? (Qt aborts when it cannot.)"""
    import ctypes
    xcb = ctypes.CDLL("libxcb.so.1")
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = (ctypes.c_char_p, ctypes.c_void_p)
    xcb.xcb_connection_has_error.argtypes = (ctypes.c_void_p,)
    xcb.xcb_disconnect.argtypes = (ctypes.c_void_p,)
    conn = xcb.xcb_connect(None, None)
    failed = xcb.xcb_connection_has_error(conn)
    xcb.xcb_disconnect(conn)
    if failed:
        return (f"cannot connect to the X display DISPLAY={os.environ.get('DISPLAY')!r} (is the "
                f"desktop session still running? over SSH use ssh -X), {HEADLESS}")
    return None


def display_problem() -> str | None:
    """Why Qt could not open a window here, in one line (None: it can, as far as we can tell).

    Checked before the QApplication exists: without a display, or with a system library
    missing, Qt prints its own lines and aborts the process. An explicit QT_QPA_PLATFORM
    (offscreen, vnc, ...) is the user's choice and is not second-guessed."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return ("no display: DISPLAY and WAYLAND_DISPLAY are unset (an SSH session?); start "
                f"SpecScope from a desktop session (over SSH: ssh -X), {HEADLESS}")
    missing = _missing(QT_LIBRARIES)
    if missing:
        return _install_hint(QT_LIBRARIES, missing)
    if os.environ.get("WAYLAND_DISPLAY") and not _missing(WAYLAND_LIBRARIES):
        return None                  # Qt tries Wayland first when WAYLAND_DISPLAY is set
    if not os.environ.get("DISPLAY"):
        return _install_hint(WAYLAND_LIBRARIES, _missing(WAYLAND_LIBRARIES))
    missing = _missing(XCB_LIBRARIES)
    if missing:
        return _install_hint(XCB_LIBRARIES, missing)
    return _x_display_error()


def make_app(argv=None):
    from PySide6.QtWidgets import QApplication
    # The engine's worker thread needs the GIL for a moment between llama.cpp calls; with the
    # default 5 ms switch interval it can wait that long behind the UI thread's Python
    # (pyqtgraph painting) every time. bench_gui.py: at 0.5 ms the window reached 75-86% of the
    # headless CLI's tokens/s on the demo pair, at 0.1 ms 86-102% (noisy 1-s runs, 2 cores).
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    app = QApplication.instance()
    if app is None:
        app = QApplication(list(argv) if argv is not None else [sys.argv[0]])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(ORG_NAME)
    # no setApplicationDisplayName: Qt appends a display name to every window title
    # ("SpecScope — speculative decoding, live — SpecScope"); the titles name SpecScope
    app.setDesktopFileName(DESKTOP_FILE)
    from PySide6.QtGui import QIcon
    app.setWindowIcon(QIcon(str(icon_path())))
    follow_ui_thread()
    return app


def follow_ui_thread() -> None:
    """Threads auto reads this (the UI) thread's CPU time around each decode, so that decodes
    which shared a core with it do not count as load (``threads.Foreground``)."""
    from specscope.core.models.threads import FOREGROUND
    FOREGROUND.follow()


def icon_path() -> Path:
    """The window's icon: package data (resources/icons), so in an installed package and in
    the bundle alike."""
    from importlib import resources
    return Path(str(resources.files("specscope.resources") / "icons" / "specscope.png"))


def cli(argv: list[str] | None = None) -> int:
    """The ``specscope`` command: the window when no headless command is named, else the command
    line of specscope.core.cli (which never imports the app: the window is handed to it)."""
    from specscope.core.cli.main import main as cli_main
    return cli_main(argv, gui=_open)


def _open(args) -> int:
    if getattr(args, "command", None) == "export":      # a session's rounds as pictures
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")   # no window is shown
        make_app()
        from .export import export, quiet_offscreen
        quiet_offscreen()
        return export(args)
    try:
        import pyqtgraph  # noqa: F401  (the window's plots)
        import PySide6  # noqa: F401
    except ImportError as exc:
        from specscope.core.errors import SpecScopeError
        raise SpecScopeError(f"the window needs PySide6 and pyqtgraph ({exc}); "
                             "the headless commands are 'specscope run' and 'specscope baseline'")
    lesson = getattr(args, "lesson", None)
    if lesson is not None:
        from .lessons import LESSONS
        if not 1 <= lesson <= len(LESSONS):
            from specscope.core.errors import SpecScopeError
            raise SpecScopeError(f"--lesson {lesson}: there are {len(LESSONS)} lessons, 1 to {len(LESSONS)}")
    return main(model=getattr(args, "model", None), draft=getattr(args, "model_draft", None),
                session=getattr(args, "session", None), lesson=lesson)


def settle_heap() -> None:
    """Take what the window made at startup (its widgets' wrappers, the plots, the modules: about
    96,000 objects) out of the cyclic garbage collector's reach (``gc.freeze``, after one last
    collection). They live as long as the window, and a full collection over them held the GIL
    for 40-55 ms about once every five 1,024-token runs, stalling the engine's thread and the
    UI alike. Refcounting still frees them; a cycle among them is never collected."""
    import gc
    gc.collect()
    gc.freeze()


def main(model: Path | None = None, draft: Path | None = None, session: Path | None = None,
         lesson: int | None = None) -> int:
    problem = display_problem()
    if problem:
        print(f"specscope: error: {problem}", file=sys.stderr)
        return 2
    app = make_app()
    from PySide6.QtCore import QTimer
    from .errors import close_logging, report_uncaught
    from .window import MainWindow

    window = MainWindow(model=Path(model) if model else None, draft=Path(draft) if draft else None)
    if session is not None:
        window.files.open_session(Path(session))      # a bad file: one banner line, the window opens
    if lesson is not None:
        window.show_lessons(lesson - 1)               # once the plots exist
    hook = report_uncaught(window.banner)
    window.show()
    QTimer.singleShot(0, settle_heap)                 # after the panels it builds once shown
    t0 = os.environ.get(STARTUP_T0_ENV)
    if t0:
        import time
        QTimer.singleShot(0, lambda: print(f"specscope: window shown after "
                                           f"{(time.time() - float(t0)) * 1e3:.0f} ms",
                                           file=sys.stderr, flush=True))
    quit_after = os.environ.get(QUIT_AFTER_ENV)
    if quit_after:
        def quit_() -> None:
            shot = os.environ.get(SCREENSHOT_ENV)
            if shot:
                window.grab().save(shot)
            window.close()
        QTimer.singleShot(int(quit_after), quit_)
    try:
        return app.exec()
    finally:
        hook.uninstall()
        window.shutdown()
        close_logging()


if __name__ == "__main__":
    sys.exit(main())
