"""The ``specscope`` command.

    specscope                      open the window on the demo pair
    specscope run      [options]   speculative decoding, headless
    specscope baseline [options]   the target alone, same sampler and stop rules
    specscope replay FILE [--json] print a recorded session (run/baseline --record FILE)
    specscope FILE.jsonl           open the window on a recorded session
    specscope doctor   ...         does a draft fit a target? (see cli_doctor)

Flag names follow llama.cpp's where one exists. Exit status: 0 success,
2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from .errors import SpecScopeError

SUBCOMMANDS = {}   # name -> module with add_parser(subparsers) and run(args) -> int


def add_model_args(p: argparse.ArgumentParser, *, draft: bool = True) -> None:
    g = p.add_argument_group("models (default: the bundled demo pair)")
    g.add_argument("-m", "--model", type=Path, help="target model (GGUF)")
    if draft:
        g.add_argument("-md", "--model-draft", type=Path, help="draft model (GGUF)")
    g.add_argument("-c", "--ctx-size", type=int, default=2048, help="context size of both models (default 2048)")
    g.add_argument("-b", "--batch-size", type=int, default=512, help="logical batch size (default 512)")
    g.add_argument("-t", "--threads", type=int, default=0, help="target threads (default: all cores)")
    g.add_argument("-td", "--threads-draft", type=int, default=0, help="draft threads (default: all cores)")
    from .cli_devices import add_placement_args
    add_placement_args(g)
    g.add_argument("-fa", "--flash-attn", choices=("auto", "on", "off"), default="auto")
    g.add_argument("--kv-type", choices=("f16", "f32"), default="f16", help="KV cache type (default f16)")
    rp = g.add_mutually_exclusive_group()
    rp.add_argument("--repack", choices=("auto", "on", "off"), default="auto",
                    help="let llama.cpp repack quantized weights for this CPU (default auto: off "
                         "where the CPU reports AMX, whose repacked kernels crash; on elsewhere)")
    rp.add_argument("--no-repack", dest="repack", action="store_const", const="off",
                    help="llama.cpp's --no-repack: same as --repack off")
    g.add_argument("--no-probe", action="store_true",
                   help="skip the crash probe (each model is first tried in a child process, "
                        "verdicts cached): a model that crashes llama.cpp then ends specscope")
    from .compare import DETERMINISTIC_GUARANTEE
    g.add_argument("--deterministic", action="store_true", help=DETERMINISTIC_GUARANTEE.replace("%", "%%"))


def add_generation_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("prompt and sampling")
    src = g.add_mutually_exclusive_group()
    src.add_argument("-p", "--prompt", help="prompt text")
    src.add_argument("-f", "--file", type=Path, help="read the prompt from a file")
    g.add_argument("--chat", action="store_true",
                   help="format the prompt as a user message with the target's own chat template "
                        "(rendered in Jinja2's sandbox) and add the generation prompt")
    g.add_argument("--system", metavar="TEXT", help="with --chat: a system message before the prompt")
    g.add_argument("-n", "--n-predict", type=int, default=128, help="tokens to generate (default 128)")
    g.add_argument("--temp", type=float, default=0.0, help="temperature; 0 = greedy (default)")
    g.add_argument("--top-k", type=int, default=40)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--min-p", type=float, default=0.05)
    g.add_argument("-s", "--seed", type=int, default=42)
    g.add_argument("--repeat-penalty", type=float, default=1.0, help="1.0 = off")
    g.add_argument("--repeat-last-n", type=int, default=64)
    g.add_argument("--grammar", default="", help="GBNF grammar (root rule 'root')")
    g.add_argument("--grammar-file", type=Path, help="read the GBNF grammar from a file")
    g.add_argument("--ignore-eos", action="store_true", help="never sample end-of-generation tokens")
    o = p.add_argument_group("output")
    mode = o.add_mutually_exclusive_group()
    mode.add_argument("--stream", action="store_true", help="print text as it is produced")
    mode.add_argument("--json", action="store_true", help="print one JSON document")
    o.add_argument("-v", "--verbose", action="store_true", help="show llama.cpp's log")


def build_parser() -> argparse.ArgumentParser:
    from . import cli_bench, cli_devices, cli_doctor, cli_quantize
    SUBCOMMANDS.update(doctor=cli_doctor, bench=cli_bench, quantize=cli_quantize, devices=cli_devices)
    parser = argparse.ArgumentParser(prog="specscope", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="speculative decoding, headless")
    add_model_args(run)
    from .cli_spec import add_spec_args
    add_spec_args(run)
    add_generation_args(run)
    base = sub.add_parser("baseline", help="the target alone, same sampler and stop rules")
    add_model_args(base, draft=False)
    add_generation_args(base)
    for p in (run, base):
        p.add_argument("--record", type=Path, metavar="FILE",
                       help="save the run as a session file (JSON Lines; see core/session.py)")
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
    for module in SUBCOMMANDS.values():
        module.add_parser(sub)
    return parser


# ----------------------------------------------------------------------------- helpers

def resolve_models(args, *, draft: bool = True) -> tuple[Path, Path | None]:
    """The target and, when ``draft``, the draft model: the demo pair fills in what is not
    given, except a draft for a target of the user's own (the demo draft would not fit it)."""
    from .demo import demo_pair
    target = args.model
    dft = getattr(args, "model_draft", None) if draft else None
    if draft and dft is None and target is not None:
        raise SpecScopeError(f"{target}: draft-simple needs a draft model for this target: give "
                             "-md FILE, or draft without one with an n-gram type "
                             "(--spec-type ngram-mod, ngram-simple, ...)")
    if target is None or (draft and dft is None):
        demo_target, demo_draft = demo_pair()
        target = target or demo_target
        dft = (dft or demo_draft) if draft else None
    return target, dft


def read_prompt(args) -> str:
    if args.file is not None:
        try:
            return args.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecScopeError(f"{args.file}: cannot read the prompt file ({exc.strerror or exc})")
    if args.prompt is not None:
        return args.prompt
    return "def fibonacci(n):\n"


def chat_prompt(args, model, prompt: str) -> str | None:
    """With --chat: the prompt in the target's chat template (see core/chat.py), else None."""
    if not args.chat:
        return None
    from .chat import render_chat
    return render_chat(model, prompt, args.system)


def engine_settings(args):
    from .engine import EngineSettings
    from .cli_devices import placement_kwargs
    kw = dict(n_ctx=args.ctx_size, n_batch=args.batch_size, flash_attn=args.flash_attn,
              kv_type=args.kv_type, target_threads=args.threads,
              draft_threads=args.threads_draft, repack=args.repack, **placement_kwargs(args))
    if args.deterministic:
        kw.update(flash_attn="off", kv_type="f32")
    return EngineSettings(**kw)


def sampler_settings(args, engine):
    from .sampling import SamplerSettings
    grammar = args.grammar
    if args.grammar_file is not None:
        try:
            grammar = args.grammar_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecScopeError(f"{args.grammar_file}: cannot read the grammar ({exc.strerror})")
    bias = ()
    if args.ignore_eos:
        vocab = engine.target
        bias = tuple((t, float("-inf")) for t in range(vocab.n_vocab) if vocab.is_eog(t))
    return SamplerSettings(temperature=args.temp, top_k=args.top_k, top_p=args.top_p,
                           min_p=args.min_p, seed=args.seed, repeat_penalty=args.repeat_penalty,
                           repeat_last_n=args.repeat_last_n, grammar=grammar, logit_bias=bias)


class TextStream:
    """Turns emitted tokens into text incrementally, leaving out EOG tokens: a character
    split over tokens is written once its last byte arrives (see core/tokentext.py)."""

    def __init__(self, model):
        from .tokentext import TokenText
        self.model = model
        self.text = TokenText()

    def feed(self, tokens) -> str:
        return "".join(self.text.feed(t, self.model.piece(t))[0]
                       for t in tokens if not self.model.is_eog(t))

    def flush(self) -> str:
        return self.text.flush()


def summary_lines(stats, prefill, finish: str, speculative: bool) -> list[str]:
    lines = [f"prompt:    {len(prefill.tokens)} tokens in {prefill.seconds * 1e3:.1f} ms",
             f"generated: {stats.n_tokens} tokens in {stats.t_total:.3f} s = "
             f"{stats.tokens_per_s:.1f} tokens/s ({stats.n_rounds} rounds, stopped by {finish})"]
    if speculative:
        per_pos = "  ".join(f"{p:.2f}" for p in stats.position_acceptance) or "-"
        lines += [f"n_drafted: {stats.n_drafted}",
                  f"n_accept:  {stats.n_accept}",
                  f"accept:    {100 * stats.acceptance_rate:.1f}%",
                  f"mean accepted length: {stats.mean_accepted_length:.2f} tokens per round",
                  f"acceptance by draft position: {per_pos}",
                  *counterfactual_lines(stats),
                  *tree_lines(stats.tree),
                  *drafter_lines(stats),
                  *([f"n-gram lookups: {stats.t_lookup * 1e3:.2f} ms "
                     f"({1e6 * stats.t_lookup / max(1, stats.n_rounds):.0f} µs per round)"]
                    if stats.t_lookup and any(d.name != "draft-simple" for d in stats.by_drafter)
                    else []),
                  f"time: draft {stats.t_draft:.3f} s, verify {stats.t_verify:.3f} s, "
                  f"sync {stats.t_sync:.3f} s, outside llama.cpp {stats.t_overhead:.3f} s "
                  f"({100 * stats.overhead_share:.1f}%)"]
    return lines


def counterfactual_lines(stats) -> list[str]:
    """At temperature: the other acceptance rule's expected acceptance on the same drafts."""
    if not stats.cf_rule:
        return []
    per_pos = "  ".join(f"{p:.2f}" for p in stats.counterfactual_acceptance)
    what = ("speculative sampling's (--accept-rule ratio)" if stats.cf_rule == "ratio"
            else "llama.cpp's (--accept-rule match)")
    return [f"counterfactual: {what} expected acceptance by draft position on the same "
            f"drafts: {per_pos}"]


def tree_lines(tree) -> list[str]:
    """Tree headroom (core/stats.py): the rank histogram and the width-w acceptance."""
    if not tree.n_drafted:
        return []
    from .stats import TREE_WIDTHS
    hist = " ".join(f"{r + 1}:{c}" for r, c in enumerate(tree.rank_hist[:-1]))
    widths = ", ".join(f"w={w} {100 * tree.acceptance(w):.1f}%"
                       + (f" (measured {100 * tree.floor(w):.1f}%)" if w > 1 else "")
                       for w in TREE_WIDTHS)
    return [f"target's token as the draft's k-th choice (up to the first rejection): {hist} "
            f">10:{tree.rank_hist[-1]}",
            f"a width-w draft tree would accept: {widths}"]


def policy_lines(session) -> list[str]:
    """The draft lengths an adaptive draft-length policy chose (core/draft_policy.py)."""
    spec = session.settings.spec
    if spec is None or spec.draft_policy == "fixed" or not spec.uses_draft_model:
        return []
    from collections import Counter
    chosen = Counter(e.draft_limit for e in session.run.events if e.draft_limit)
    return [f"draft policy {spec.draft_policy}: rounds per draft length "
            + " ".join(f"{n}:{c}" for n, c in sorted(chosen.items()))]


def drafter_lines(stats) -> list[str]:
    """One line per drafter that drafted (only when there were several, or an n-gram type)."""
    if not stats.by_drafter or [d.name for d in stats.by_drafter] == ["draft-simple"]:
        return []
    lines = []
    for d in stats.by_drafter:
        per_pos = " ".join(f"{p:.2f}" for p in d.position_acceptance[:12])
        more = " ..." if len(d.position_acceptance) > 12 else ""
        lines.append(f"  {d.name:<14} {d.n_draft_rounds} drafts, {d.n_accept}/{d.n_drafted} "
                     f"accepted ({100 * d.acceptance_rate:.1f}%), mean accepted length "
                     f"{d.mean_accepted_length:.2f}; by position {per_pos}{more}")
    return lines


def cmd_generate(args) -> int:
    from .cli_spec import spec_from_args
    from .engine import Engine
    from .session import RunSettings, Session
    speculative = args.command == "run"
    spec = spec_from_args(args) if speculative else None
    if spec is not None and spec.synthetic:
        print(synth_banner(spec), file=sys.stderr)
    target, draft = resolve_models(args, draft=bool(spec and spec.uses_draft_model))
    prompt = read_prompt(args)
    if args.system is not None and not args.chat:
        raise SpecScopeError("--system needs --chat (it is a message in the chat template)")
    settings = engine_settings(args)
    if not args.no_probe:            # the crash probe (core/probe.py), before this process loads
        from .probe import guard
        guard(settings, target, draft)
    with Engine(target, draft, settings) as engine:
        chat = chat_prompt(args, engine.target, prompt)
        model_prompt = prompt if chat is None else chat     # what the target is given
        sampler = sampler_settings(args, engine)
        if speculative:
            calibration = None
            if spec.draft_policy == "cost" and spec.uses_draft_model:   # what the policy predicts with
                from .draft_policy import policy_calibration
                print("calibrating the pair for the cost draft policy (cached per pair and "
                      "settings)…", file=sys.stderr)
                calibration = policy_calibration(engine, spec, sampler)
            run = engine.speculative(model_prompt, spec, sampler, args.n_predict,
                                     calibration=calibration)
        else:
            run = engine.baseline(model_prompt, sampler, args.n_predict)
        session = Session.start(
            RunSettings(str(target), str(draft) if draft else None, settings, spec, sampler,
                        args.n_predict, prompt, args.chat, args.system),
            "spec" if speculative else "baseline", model_prompt, run.prompt_tokens, engine.target)
        stream = TextStream(engine.target)
        if args.stream:
            sys.stdout.write(model_prompt)
        for event in run:
            session.run.append([event])
            if args.stream:
                sys.stdout.write(stream.feed(event.emitted))
                sys.stdout.flush()
        session.run.prefill_s = run.prefill.seconds
        session.run.end(run.finish)
        if args.stream:
            sys.stdout.write(stream.flush())
        if getattr(args, "with_baseline", False):     # the target alone, same key: the speed-up
            from .session import Run
            base = engine.baseline(model_prompt, sampler, args.n_predict)
            session.baseline = Run("baseline")
            session.baseline.begin()
            session.baseline.append(base)
            session.baseline.prefill_s = base.prefill.seconds
            session.baseline.end(base.finish)
        if args.record is not None:
            session.save(args.record)
        print_session(session, args)
    return 0


def print_session(session, args) -> None:
    """What ``run``/``baseline`` print at the end, live or replayed: the JSON document, or
    the text and the summary."""
    if getattr(args, "json", False):
        json.dump(session.document(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    spec = session.settings.spec if session.kind == "spec" else None
    if getattr(args, "stream", False):
        sys.stdout.write("\n\n")
    else:
        if spec is not None and spec.synthetic:
            print(synth_banner(spec))
        sys.stdout.write(session.prompt_text + session.text() + "\n\n")
    if spec is not None and spec.synthetic:
        print(synth_banner(spec))
    from .events import Prefill
    run = session.run
    prefill = Prefill(session.prompt_tokens, run.prefill_s)
    print("\n".join(summary_lines(run.stats, prefill, run.finish, session.kind == "spec")
                    + (policy_lines(session) if session.kind == "spec" else [])))
    if session.speedup is not None:
        print(f"speed-up:  {session.speedup:.2f}x against the baseline "
              f"({session.baseline.stats.tokens_per_s:.1f} tokens/s)")


def synth_banner(spec) -> str:
    """The loud lines of a synthetic-acceptance run (core/synth.py)."""
    from .synth import WARNING, describe
    return f"!!! {WARNING} !!!\n!!! {describe(spec.synth_rates_resolved())} !!!"


def cmd_replay(args) -> int:
    """Print a recorded session as the live run printed it; no model is loaded."""
    from .session import Session
    session = Session.load(args.session)
    print_session(session, args)
    return 0


def cmd_gui(args) -> int:
    try:
        from specscope.app.main import main as gui_main
    except ImportError as exc:
        raise SpecScopeError(f"the window needs PySide6 and pyqtgraph ({exc}); "
                             "the headless commands are 'specscope run' and 'specscope baseline'")
    session = getattr(args, "session", None)
    kw = {"session": session} if session is not None else {}
    return gui_main(model=getattr(args, "model", None), draft=getattr(args, "model_draft", None), **kw)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) == 1 and argv[0].endswith(".jsonl"):     # specscope FILE.jsonl: open the window on it
        argv = ["gui", "--session", argv[0]]
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("specscope.llama").setLevel(
        logging.INFO if getattr(args, "verbose", False) else logging.CRITICAL)
    try:
        if args.command in (None, "gui"):
            return cmd_gui(args)
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


if __name__ == "__main__":
    sys.exit(main())
