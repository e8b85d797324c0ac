"""``specscope export SESSION --gif FILE`` (and ``--mp4 FILE``, ``--frames DIR``): a recorded session's rounds
for slides, drawn as the window draws them (the generated text up to the round, and the round's
step picture and words below it), one frame per round at a chosen size and pace.

The window is built off screen on the session (no model is loaded), its settings panel hidden and
the Round tab shown; for each round it seeks there (as the Round slider does) and grabs itself.
GIF frames are written with Pillow (Qt writes no GIF), an MP4 by ffmpeg (app/video.py);
``--frames`` writes one PNG (or, ``--format svg``, one SVG) per round.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from specscope.core.cli.args import output_path, write_or_say
from specscope.core.errors import SpecScopeError

from .gif import each_round, fit, write_gif, write_svg

SIZE = (1280, 720)


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size {text}: write it as WIDTHxHEIGHT, e.g. 1280x720") from None
    if not (320 <= w <= 7680 and 240 <= h <= 4320):
        raise ValueError(f"--size {text}: between 320x240 and 7680x4320")
    return w, h


def walk(session: Path, size: tuple[int, int] = SIZE):
    """An off-screen window on the session, shown at each of its rounds in turn (yields it, the
    round number from 1 and the number of rounds); ValueError saying why the file cannot be
    shown."""
    from PySide6.QtCore import QSettings

    from .window import MainWindow
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "export.ini"), QSettings.Format.IniFormat)
        w = MainWindow(None, None, settings=settings, preload=False)
        try:
            w.resize(*size)
            w.set_left_panel_shown(False)
            slide(w)
            w.show()
            said: list[str] = []
            w.files.message.connect(lambda _level, text: said.append(text))
            if not w.files.open_session(session):
                raise ValueError(said[-1] if said else f"{session}: the session cannot be opened")
            if not w.controller.session.run.events:
                raise ValueError(f"{session}: the session holds no rounds")
            for k, n in each_round(w, settle=3):
                fit_words(w)
                yield w, k, n
        finally:
            w.close()
            w.shutdown()


TEXT_MIN_PX = 150      # a slide keeps this much for the generated text


def slide(w) -> None:
    """A frame for a slide: the text, the round's picture and its words, the stats; not the
    window's menus, toolbar, workspace tabs, the chat bar nor the title's hover hint (nothing
    to click on a slide), whose room the words need."""
    for part in (w.menuBar(), w.run_toolbar, w.workspace.tabBar(), w.chat_bar):
        part.hide()
    w.shown.set_presenting(True)


def fit_words(w) -> None:
    """The tabs as tall as the round's picture and all its words (a slide cannot scroll; the
    last lines were cut), the text the rest (at least TEXT_MIN_PX)."""
    from PySide6.QtWidgets import QApplication
    rv, split = w.round_view, w.right_split
    words = rv.text.heightForWidth(max(rv.text.width(), 200)) + 16
    need = w.tabs.tabBar().height() + rv.diagram_scroll.maximumHeight() + words
    total = sum(split.sizes())
    tabs = min(need, total - TEXT_MIN_PX)
    if split.sizes()[1] != tabs:
        split.setSizes([total - tabs, tabs])
        QApplication.processEvents()


def frames(session: Path, size: tuple[int, int] = SIZE):
    """The session's rounds as QImages of ``size``, one per round."""
    for w, _k, _n in walk(session, size):
        yield fit(w.grab().toImage(), size)


OFFSCREEN_NOISE = "This plugin does not support propagateSizeHints()"


def quiet_offscreen() -> None:
    """Qt's offscreen platform says each time a window is shown that it passes no size hints
    to a window system (there is none): noise in a command's output. Every other Qt message is
    written as Qt writes it."""
    from PySide6.QtCore import qFormatLogMessage, qInstallMessageHandler

    def handler(mode, context, message):
        if message != OFFSCREEN_NOISE:
            sys.stderr.write(qFormatLogMessage(mode, context, message) + "\n")
    qInstallMessageHandler(handler)


def _fail(text: str) -> int:
    print(f"specscope: error: {text}", file=sys.stderr)
    return 2


def export(args) -> int:
    """The ``export`` subcommand (core/cli/main.py hands it to app/main.py, which makes the
    application off screen and calls this: core never imports the app)."""
    if not (args.gif or args.mp4 or args.frames):
        return _fail("export: say where: --gif FILE, --mp4 FILE and/or --frames DIR")
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        return _fail(str(exc))
    if args.pace_ms <= 0:
        return _fail(f"--pace-ms {args.pace_ms}: a frame shows for more than 0 ms")
    try:        # every output checked before the rounds are drawn
        output_path(args.gif, "the GIF", (".gif",))
        output_path(args.mp4, "the video", (".mp4",))
        output_path(args.frames, "the frames", folder=True)
    except SpecScopeError as exc:
        return _fail(str(exc))
    if args.mp4:
        from .video import NO_FFMPEG, ffmpeg_exe
        if ffmpeg_exe() is None:
            return _fail(f"--mp4: {NO_FFMPEG}")
    out = Path(args.frames) if args.frames else None
    images = []
    try:
        if out is not None:
            write_or_say(out, "the frames", lambda p: p.mkdir(parents=True, exist_ok=True))
        for w, k, n in walk(Path(args.session), size):
            if args.gif or args.mp4 or args.format == "png":
                images.append(fit(w.grab().toImage(), size))
            if out is not None and args.format == "svg":
                write_svg(w, out / f"round_{k:04d}.svg", f"round {k} of {n}")
            elif out is not None and not images[-1].save(str(out / f"round_{k:04d}.png")):
                return _fail(f"{out / f'round_{k:04d}.png'}: cannot write the frame")
    except (ValueError, SpecScopeError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{out}: cannot write the frames ({exc.strerror or exc})")
    n = len(images) or k
    if out is not None:
        print(f"{n} frames: {out}/round_0001.{args.format} …")
    if args.gif:
        try:
            write_or_say(Path(args.gif), "the GIF", lambda p: write_gif(images, p, args.pace_ms))
        except SpecScopeError as exc:
            return _fail(str(exc))
        print(f"{args.gif}: {n} frames, {size[0]}x{size[1]}, {args.pace_ms} ms each")
    if args.mp4:
        from .video import write_mp4
        try:
            write_mp4(images, Path(args.mp4), args.pace_ms)
        except ValueError as exc:
            return _fail(str(exc))
        print(f"{args.mp4}: {n} rounds, {size[0]}x{size[1]}, {args.pace_ms} ms each (H.264)")
    return 0


__all__ = ["export", "frames", "walk", "parse_size"]
