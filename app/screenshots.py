"""Screenshots of the window's main states, for looking at it (a developer tool).

    python -m specscope.app.screenshots OUT_DIR [-m TARGET -md DRAFT] [-n 160]

Writes 1440×900 PNGs: 01 fresh window, 02 mid-run, 03 finished run with plots,
04 cost model after a baseline, 05 step mode (a round with a rejection when one
comes within a few steps), 06 an error. Offscreen unless QT_QPA_PLATFORM is set.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SIZE = (1440, 900)
PROMPT_FILE = "01_function_with_docstring.txt"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path)
    p.add_argument("-n", "--n-predict", type=int, default=160)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="specscope-shots-"))
    os.environ.setdefault("SPECSCOPE_LOG_DIR", str(tmp / "log"))

    from PySide6.QtCore import QEventLoop, QSettings
    from .main import make_app
    from .window import MainWindow

    app = make_app()
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(args.model, args.model_draft, settings=settings)
    w.resize(*SIZE)
    w.show()

    def wait(cond, timeout=120.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end and not cond():
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 30)
        return cond()

    def shot(name):
        wait(lambda: w.plots_painted, 2)     # plots repaint one per tick after an update
        app.processEvents()
        path = args.out / f"{name}.png"
        w.grab().save(str(path))
        print(path)

    wait(lambda: w.panels_ready and (w.report is not None or w.banner.isVisible()), 30)
    try:
        from specscope.core.demo import prompts_dir
        w.prompt.set_text((prompts_dir() / PROMPT_FILE).read_text(encoding="utf-8"))
    except OSError:
        pass
    shot("01_fresh")
    w.params.n_predict.setValue(args.n_predict)
    w.run_clicked()
    wait(lambda: len(w.events) >= 12 or w.mode == "idle")
    shot("02_mid_run")
    wait(lambda: w.mode == "idle", 600)
    w.tabs.setCurrentIndex(0)
    shot("03_finished_with_plots")
    w.baseline_clicked()
    wait(lambda: w.mode == "idle", 600)
    w.run_clicked()
    wait(lambda: w.mode == "idle", 600)
    w.tabs.setCurrentIndex(1)
    shot("04_cost_model")
    w.step_clicked()
    for _ in range(12):
        wait(lambda: w.mode in ("paused", "idle"))
        ev = w.round_view.event
        if w.mode != "paused" or (ev is not None and ev.drafted and ev.n_accepted < len(ev.drafted)):
            break
        w.step_clicked()
    shot("05_step_mode")
    w.stop_clicked()
    wait(lambda: w.mode == "idle")
    bad = tmp / "not-a-model.gguf"
    bad.write_bytes(b"hello, I am not a GGUF file")
    t, d = w.pair_panel.pair()
    w.pair_panel.set_pair(bad, d)
    wait(lambda: w.banner.isVisible() and w.banner.level == "error", 30)
    shot("06_error")
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
