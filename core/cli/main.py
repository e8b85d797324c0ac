"""The ``specscope`` command.

    specscope                      open the window on the demo pair
    specscope run      [options]   speculative decoding, headless
    specscope baseline [options]   the target alone, same sampler and stop rules
    specscope chat     [options]   a conversation that keeps its cache between turns
    specscope models   [--for T]   the GGUF models you already have; what can draft for T
    specscope replay FILE [--json] print a recorded session (run/baseline --record FILE)
    specscope FILE.jsonl           open the window on a recorded session
    specscope doctor   ...         does a draft fit a target? (see cli_doctor)
    specscope whatif FILE          every n-gram drafter replayed against a recorded greedy run

Flag names follow llama.cpp's where one exists. Exit status: 0 success,
2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from specscope.core.cli import (advise as cli_advise, bench as cli_bench, chat as cli_chat,
                                devices as cli_devices, doctor as cli_doctor, models as cli_models,
                                quantize as cli_quantize, whatif as cli_whatif)
from specscope.core.cli.args import Parser, add_generation_args, add_model_args
from specscope.core.cli.generate import cmd_generate, cmd_replay
from specscope.core.cli.spec import add_spec_args
from specscope.core.errors import SpecScopeError

SUBCOMMANDS = {}   # name -> module with add_parser(subparsers) and run(args) -> int


def build_parser() -> argparse.ArgumentParser:
    SUBCOMMANDS.update(doctor=cli_doctor, bench=cli_bench, quantize=cli_quantize, devices=cli_devices,
                       whatif=cli_whatif, advise=cli_advise, chat=cli_chat,
                       models=cli_models)
    parser = Parser(prog="specscope", description=__doc__.split("\n\n")[0])
    lesson_help = "open the window on lesson N of Help ▸ Lessons (from 1)"
    parser.add_argument("--lesson", type=int, metavar="N", help=lesson_help)
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="speculative decoding, headless")
    add_model_args(run)
    add_spec_args(run)
    add_generation_args(run)
    base = sub.add_parser("baseline", help="the target alone, same sampler and stop rules")
    add_model_args(base)       # -md taken (and noted as unused), not read as -m d
    add_generation_args(base)
    for p in (run, base):
        p.add_argument("--record", type=Path, metavar="FILE",
                       help="save the run as a session file (JSON Lines; see core/session/session.py)")
    run.add_argument("--with-baseline", action="store_true",
                     help="then run the target alone with the same settings: the measured "
                          "speed-up (printed, and recorded with --record)")
    rep = sub.add_parser("replay", help="print a recorded session (no model needed)")
    rep.add_argument("session", type=Path, help="a session file (specscope run --record)")
    rep.add_argument("--json", action="store_true", help="print one JSON document")
    gui = sub.add_parser("gui", help="open the window (the default)")
    gui.add_argument("-m", "--model", type=Path)
    gui.add_argument("-md", "--model-draft", type=Path)
    gui.add_argument("--session", type=Path, help="open a session file")
    gui.add_argument("--lesson", type=int, metavar="N", default=argparse.SUPPRESS, help=lesson_help)
    exp = sub.add_parser("export", help="a recorded session's rounds as a GIF, an MP4 or frames, for "
                                        "slides (the window's text and step picture, drawn off screen)")
    exp.add_argument("session", type=Path, help="a session file (specscope run --record)")
    exp.add_argument("--gif", type=Path, metavar="FILE", help="write an animated GIF, a frame per round")
    exp.add_argument("--mp4", type=Path, metavar="FILE", help="write an H.264 MP4 video, a round per "
                                                            "--pace-ms (needs ffmpeg: specscope[video])")
    exp.add_argument("--frames", type=Path, metavar="DIR", help="write one picture per round into DIR")
    exp.add_argument("--format", choices=("png", "svg"), default="png",
                     help="the --frames pictures: PNG (default) or SVG (text stays text)")
    exp.add_argument("--size", default="1280x720", help="each frame's size, WIDTHxHEIGHT (default 1280x720)")
    exp.add_argument("--pace-ms", type=int, default=1500, help="how long each frame shows in the GIF "
                                                               "(default 1500 ms)")
    for module in SUBCOMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None, gui=None) -> int:
    """The ``specscope`` command line. ``gui(args)`` opens the window (``specscope`` alone, or
    ``specscope gui``) or draws a session's rounds (``specscope export``): the app hands it in
    (specscope.app.main.cli), since core never imports the app."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) == 1 and argv[0].endswith(".jsonl"):     # specscope FILE.jsonl: open the window on it
        argv = ["gui", "--session", argv[0]]
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("specscope.llama").setLevel(
        logging.INFO if getattr(args, "verbose", False) else logging.CRITICAL)
    try:
        session = getattr(args, "session", None)
        if args.command in ("gui", "export", "replay") and session is not None \
                and not Path(session).is_file():        # before the window or its display
            raise SpecScopeError(f"{session}: no such file")
        if args.command in (None, "gui", "export"):     # the window's, or its pictures
            if gui is None:
                raise SpecScopeError("the window is SpecScope's desktop app (the specscope command); "
                                     "the headless commands are 'specscope run' and 'specscope baseline'")
            return gui(args)
        if args.command in ("run", "baseline"):
            return cmd_generate(args)
        if args.command == "replay":
            return cmd_replay(args)
        return SUBCOMMANDS[args.command].run(args)
    except SpecScopeError as exc:
        print(f"specscope: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader left (``specscope run | head``): stop quietly, with the status of a program
        # that SIGPIPE ended, and keep Python from complaining as it flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
