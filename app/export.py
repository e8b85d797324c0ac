"""``specscope export SESSION --gif FILE`` (and ``--frames DIR``): a recorded session's rounds
for slides, drawn as the window draws them (the generated text up to the round, and the round's
step picture and words below it), one frame per round at a chosen size and pace.

The window is built off screen on the session (no model is loaded), its settings panel hidden and
the Round tab shown; for each round it seeks there (as the Round slider does) and grabs itself.
GIF frames are written with Pillow (Qt writes no GIF); ``--frames`` writes one PNG per round.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .gif import fit, write_gif

SIZE = (1280, 720)


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size {text}: write it as WIDTHxHEIGHT, e.g. 1280x720") from None
    if not (320 <= w <= 7680 and 240 <= h <= 4320):
        raise ValueError(f"--size {text}: between 320x240 and 7680x4320")
    return w, h


def frames(session: Path, size: tuple[int, int] = SIZE):
    """The session's rounds as QImages, one per round, drawn by an off-screen window;
    ValueError saying why the file cannot be shown."""
    from PySide6.QtCore import QEventLoop, QSettings
    from PySide6.QtWidgets import QApplication

    from .window import MainWindow
    app = QApplication.instance()
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "export.ini"), QSettings.Format.IniFormat)
        w = MainWindow(None, None, settings=settings, preload=False)
        try:
            w.resize(*size)
            w.set_left_panel_shown(False)
            w.show()
            said: list[str] = []
            w.files.message.connect(lambda _level, text: said.append(text))
            if not w.files.open_session(session):
                raise ValueError(said[-1] if said else f"{session}: the session cannot be opened")
            w.tabs.setCurrentWidget(w.round_view)
            n = len(w.controller.session.run.events)
            if not n:
                raise ValueError(f"{session}: the session holds no rounds")
            for k in range(1, n + 1):
                w.shown.seek(k)
                for _ in range(3):
                    app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
                yield fit(w.grab().toImage(), size)
        finally:
            w.close()
            w.shutdown()


def export(args) -> int:
    """The ``export`` subcommand (core/cli/main.py hands it to app/main.py, which makes the
    application off screen and calls this: core never imports the app)."""
    if not (args.gif or args.frames):
        print("specscope: error: export: say where: --gif FILE and/or --frames DIR", file=sys.stderr)
        return 2
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        print(f"specscope: error: {exc}", file=sys.stderr)
        return 2
    if not Path(args.session).is_file():
        print(f"specscope: error: {args.session}: no such file", file=sys.stderr)
        return 2
    try:
        images = list(frames(Path(args.session), size))
    except ValueError as exc:
        print(f"specscope: error: {exc}", file=sys.stderr)
        return 2
    if args.frames:
        out = Path(args.frames)
        out.mkdir(parents=True, exist_ok=True)
        for k, img in enumerate(images, 1):
            img.save(str(out / f"round_{k:04d}.png"))
        print(f"{len(images)} frames: {out}/round_0001.png …")
    if args.gif:
        n = write_gif(images, Path(args.gif), args.pace_ms)
        print(f"{args.gif}: {n} frames, {size[0]}x{size[1]}, {args.pace_ms} ms each")
    return 0


__all__ = ["export", "frames", "write_gif", "parse_size"]
