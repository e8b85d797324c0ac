"""``specscope`` with no arguments: open the window.

``main(model, draft)`` is what ``specscope.core.cli`` calls. The window shows
before any model loads; the pair is checked and loaded on worker threads.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "SpecScope"
ORG_NAME = "SpecScope"

# for tests and the smoke test: quit after this many milliseconds
QUIT_AFTER_ENV = "SPECSCOPE_QUIT_AFTER_MS"
# for the benchmark: time.time() when the process was started; the window prints how long it took
STARTUP_T0_ENV = "SPECSCOPE_STARTUP_T0"


GIL_SWITCH_INTERVAL_S = 0.0001


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
    app.setApplicationDisplayName(APP_NAME)
    return app


def main(model: Path | None = None, draft: Path | None = None) -> int:
    app = make_app()
    from PySide6.QtCore import QTimer
    from .errors import ExceptHook, close_logging
    from .window import MainWindow

    window = MainWindow(model=Path(model) if model else None, draft=Path(draft) if draft else None)
    hook = ExceptHook()
    hook.caught.connect(lambda exc, tb: window.banner.show_error(exc, tb))
    hook.install()
    window.show()
    t0 = os.environ.get(STARTUP_T0_ENV)
    if t0:
        import time
        QTimer.singleShot(0, lambda: print(f"specscope: window shown after "
                                           f"{(time.time() - float(t0)) * 1e3:.0f} ms",
                                           file=sys.stderr, flush=True))
    quit_after = os.environ.get(QUIT_AFTER_ENV)
    if quit_after:
        QTimer.singleShot(int(quit_after), window.close)
    try:
        return app.exec()
    finally:
        hook.uninstall()
        window.shutdown()
        close_logging()


if __name__ == "__main__":
    sys.exit(main())
