"""``specscope chat``: a conversation, headless, that keeps both caches between turns
(core/session/conversation.py).

On a terminal it reads one message per line and prints the reply and one line of figures;
``/regen`` generates the last reply again, ``/edit TEXT`` replaces the last message,
``/reset`` starts a new conversation, ``/stats`` prints the whole conversation's figures,
``/quit`` (or end of input) ends it. From a pipe it reads the same lines; with ``--json`` it
prints one JSON object per turn. ``--baseline`` holds the same conversation with the target
alone: what each turn is checked against.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from specscope.core.cli.args import (add_generation_args, add_model_args, engine_settings,
                                     note_unused_flags, output_path, resolve_models,
                                     sampler_settings, write_or_say)
from specscope.core.cli.spec import add_spec_args, spec_from_args
from specscope.core.engine.engine import Engine
from specscope.core.errors import SpecScopeError
from specscope.core.measure.cost.calibrate import policy_calibration
from specscope.core.models.probe import guard
from specscope.core.models.tokentext import TextStream
from specscope.core.session.conversation import Conversation, summary
from specscope.core.session.session import RunSettings

COMMANDS = ("/regen", "/edit", "/reset", "/stats", "/quit")


def add_parser(sub) -> None:
    p = sub.add_parser("chat", help="a conversation that keeps its cache between turns",
                       description="A conversation with speculative decoding, headless: both "
                                   "models keep their caches between turns. Type one message "
                                   "per line; /regen generates the last reply again, /edit TEXT "
                                   "replaces the last message, /reset starts anew, /stats prints "
                                   "the figures, /quit ends.")
    add_model_args(p)
    add_spec_args(p)
    add_generation_args(p, json_help="print one JSON object per turn")
    p.add_argument("--baseline", action="store_true",
                   help="the same conversation with the target alone (what each turn is "
                        "checked against)")
    p.add_argument("--save", type=Path, metavar="FILE",
                   help="after each turn, save the conversation as a session file: the last "
                        "turn's rounds with the turns before it (the window opens and replays it)")
    p.set_defaults(chat=True)


def run(args) -> int:
    spec = None if args.baseline else spec_from_args(args)
    target, draft = resolve_models(args, draft=bool(spec and spec.needs_draft),
                                   head=bool(spec and spec.head_kind == "eagle3"))
    settings = engine_settings(args, spec)
    output_path(args.save, "the conversation")
    note_unused_flags(args, spec)
    if not args.no_probe:
        guard(settings, target, draft)
    out = sys.stdout
    with Engine(target, draft, settings) as engine:
        sampler = sampler_settings(args, engine)
        calibration = None
        if spec is not None and spec.draft_policy == "cost" and spec.uses_draft_model:
            print("calibrating the pair for the cost draft policy…", file=sys.stderr)
            calibration = policy_calibration(engine, spec, sampler)
        conv = Conversation(engine, RunSettings(str(target), str(draft) if draft else None, settings,
                                                spec, sampler, args.n_predict, "", True,
                                                args.system), calibration=calibration)
        interactive = sys.stdin.isatty() and not args.json
        if conv.document:
            print(f"specscope: {Path(target).name} has no chat template: each message continues "
                  "one document", file=sys.stderr)
        if interactive:
            print("type a message; /regen, /edit TEXT, /reset, /stats, /quit", file=sys.stderr)
        first = args.prompt if args.prompt is not None else None
        lines = _lines(first, interactive)
        for line in lines:
            try:
                turn_run = _command(conv, line, out, args)
            except SpecScopeError as exc:
                print(f"specscope: {exc}", file=sys.stderr)
                if not interactive:
                    return 2
                continue
            if turn_run is None:
                if line.strip() == "/quit":
                    break
                continue
            _play(turn_run, conv, out, args)
            if args.save is not None:
                write_or_say(args.save, "the conversation", conv.turns[-1].session.save)
    return 0


def _lines(first: str | None, interactive: bool):
    if first is not None:
        yield first
    while True:
        try:
            line = input("> ") if interactive else sys.stdin.readline()
        except EOFError:
            return
        if not interactive and not line:
            return
        line = line.rstrip("\n")
        if line.strip():
            yield line


def _command(conv: Conversation, line: str, out, args):
    """The turn a line starts (None for a command that starts none)."""
    word, _, rest = line.strip().partition(" ")
    if word == "/regen":
        return conv.regenerate()
    if word == "/edit":
        return conv.edit(rest)
    if word == "/reset":
        conv.reset()
        print("a new conversation", file=sys.stderr)
        return None
    if word == "/stats":
        print("\n".join(conversation_lines(conv)), file=sys.stderr if args.json else out)
        return None
    if word == "/quit":
        return None
    if word.startswith("/") and word[1:].isalpha():
        raise SpecScopeError(f"unknown command {word} (known: {', '.join(COMMANDS)})")
    return conv.say(line)


def _play(turn_run, conv: Conversation, out, args) -> None:
    stream = None if args.json else TextStream(conv.engine.target)
    for event in turn_run:
        if stream is not None:
            out.write(stream.feed(event.emitted))
            out.flush()
    turn = turn_run.turn
    index = len(conv.turns)
    if args.json:
        json.dump(turn_document(turn, index), out)
        out.write("\n")
    else:
        out.write(stream.flush() + "\n\n")          # a blank line between the replies
        print(turn_line(turn, index), file=sys.stderr)
    out.flush()


def turn_document(turn, index: int) -> dict:
    """One turn as ``chat --json`` prints it."""
    p, run = turn.prefill, turn.session.run
    return {"turn": index, "user": turn.user, "text": turn.reply, "tokens": turn.tokens,
            "finish": turn.finish, "regenerated": turn.regenerated,
            "prompt_tokens": list(p.tokens), "prefill_tokens": p.decoded,
            "reused_tokens": p.reused, "prefill_s": p.seconds,
            "stats": run.stats.to_dict(), "rounds": [e.to_dict() for e in run.events]}


def turn_line(turn, index: int) -> str:
    s, p = turn.session.run.stats, turn.prefill
    line = (f"[turn {index}: {s.n_tokens} tokens, {s.tokens_per_s:.1f} tokens/s, stopped by "
            f"{turn.finish}; prompt {len(p.tokens)} tokens, {p.reused} reused from the turn "
            f"before, {p.decoded} prefilled")
    if turn.session.kind == "spec":
        line += f"; accepted {s.n_accept}/{s.n_drafted} drafted"
    return line + "]"


def conversation_lines(conv: Conversation) -> list[str]:
    """The whole conversation's figures (conversation.summary), a line each."""
    lines = summary([t.session for t in conv.turns])
    return [f"conversation: {lines[0]}", *lines[1:]] if lines else ["no turn yet"]
