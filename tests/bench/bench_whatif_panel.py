"""Benchmark (prints figures, asserts nothing): how fast the What-if tab follows its sliders.

    python tests/bench/bench_whatif_panel.py [-m TARGET -md DRAFT] [-n 256] [--sweeps 3]

The window runs ``-n`` greedy tokens with draft-simple (n_max 3) on the demo pair, the What-if
tab is shown and the draft's pass over the run made; then the n_max slider moves over 1..8 and
back, ``--sweeps`` times, and ngram-simple's n slider over 1..16 once. A move's latency is from
the slider's new value to the tab's views drawn (the replay, the curves, the table and the bars
updated, and the paint events the move posted handled), in wall time and in the UI thread's CPU
time (which other processes' load disturbs less). The first visit of a setting replays it; a
setting visited again comes from the tab's cache: both are printed (median and max, ms).
Goal: every n_max move within 100 ms on a 256-token run. Offscreen unless QT_QPA_PLATFORM says
otherwise; the window is 1366×768.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PROMPT = ("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
          "def mul(a, b):\n")


def figures(name: str, moves: list[tuple[float, float]]) -> str:
    """One line: the moves' wall and CPU milliseconds, median and max."""
    if not moves:
        return f"{name:38} -"
    wall, cpu = [m[0] for m in moves], [m[1] for m in moves]
    return (f"{name:38} {len(moves):3d} moves  wall median {statistics.median(wall):5.1f} ms, "
            f"max {max(wall):5.1f} ms  |  CPU median {statistics.median(cpu):5.1f} ms, "
            f"max {max(cpu):5.1f} ms")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", type=Path)
    p.add_argument("-md", "--model-draft", type=Path)
    p.add_argument("-n", "--n-predict", type=int, default=256)
    p.add_argument("--sweeps", type=int, default=3)
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="specscope-bench-whatif-"))
    os.environ.setdefault("SPECSCOPE_LOG_DIR", str(tmp / "log"))

    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from specscope.app.main import make_app
    from specscope.app.window import MainWindow
    from specscope.core.models.demo import demo_pair

    target, draft = (args.model, args.model_draft) if args.model else demo_pair()
    app = make_app()
    w = MainWindow(target, draft, settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat))
    w.resize(1366, 768)
    w.show()

    idle = QEventLoop()

    def wait(cond, timeout=300.0) -> bool:
        """Let the window work until ``cond()``, asleep between its events (a loop of
        processEvents returns at once when none is pending and keeps a core busy: a load on the
        run it waits for, as app/screenshots.py found)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and not cond():
            QTimer.singleShot(10, idle.quit)
            idle.exec()
        return cond()

    wait(lambda: w.panels_ready and w.pairs.report is not None, 60)
    done = []
    w.run_done.connect(lambda *a: done.append(a))
    w.prompt.set_text(PROMPT)
    w.params.n_predict.setValue(args.n_predict)
    w.params.n_ctx.setValue(max(1024, 2 * args.n_predict))
    w.params.drafter.set_types(["draft-simple"])
    w.params.n_max.setValue(3)
    w.run_clicked()
    if not wait(lambda: done):
        print("the run did not end", file=sys.stderr)
        return 1
    panel = w.whatif
    w.tabs.setCurrentWidget(panel)
    if not wait(lambda: panel.whatifs is not None and panel.whatifs.trace is not None):
        print(f"no draft trace: {panel.shown()['trace']}", file=sys.stderr)
        return 1
    wait(lambda: False, 0.5)
    tokens = len(panel.whatifs.cont)

    def move(slider, value) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.thread_time()
        slider.setValue(value)              # the tab replays and redraws at once
        app.processEvents()                 # ... and the paints the move posted
        return (time.perf_counter() - t0) * 1e3, (time.thread_time() - c0) * 1e3

    first, again, seen = [], [], set()
    n_slider = panel.controls.knobs["n_max"].slider
    path = list(range(1, 9)) + list(range(7, 0, -1))
    for _ in range(args.sweeps):
        for n in path:
            if n == n_slider.value():
                continue
            (again if n in seen else first).append(move(n_slider, n))
            seen.add(n)
    panel.controls.checks["ngram-simple"].setChecked(True)
    ngram = [move(panel.controls.knobs["ngram-simple n"].slider, n) for n in range(1, 17)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"What-if tab, {tokens}-token greedy run of {Path(target).name} + {Path(draft).name}; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    print(figures("n_max slider, first visit (replayed)", first))
    print(figures("n_max slider, visited again (cached)", again))
    print(figures("n_max slider, all moves", first + again))
    print(figures("ngram-simple n slider (replayed)", ngram))
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
