"""The command line's shared arguments: the models, the generation, and what they become
(model paths, the prompt, engine and sampler settings)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from specscope.core.cli.devices import add_placement_args, placement_kwargs
from specscope.core.engine.drafters.registry import TYPES, listing, require_generating
from specscope.core.engine.engine import EngineSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.errors import SpecScopeError
from specscope.core.measure.bench.lossless import DETERMINISTIC_GUARANTEE
from specscope.core.models.chat import render_chat
from specscope.core.models.demo import demo_eagle3_head, demo_pair
from specscope.core.models.gguf_file import check_gguf


class Parser(argparse.ArgumentParser):
    """argparse, with bad input in one line: its usage block (41 lines for ``run``) is behind
    ``--help``, which the line names."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def at_least(low: int, why: str = ""):
    """An argparse type: an integer of at least ``low`` (argparse names the flag in its error)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}{why}")
        return value
    return parse


def add_model_args(p: argparse.ArgumentParser, *, draft: bool = True) -> None:
    g = p.add_argument_group("models (default: the bundled demo pair)")
    g.add_argument("-m", "--model", type=Path, help="target model (GGUF)")
    if draft:
        g.add_argument("-md", "--model-draft", type=Path, help="draft model (GGUF)")
    g.add_argument("-c", "--ctx-size", default=2048,
                   type=at_least(1, " (llama.cpp's -c 0, the model's own context length, is not "
                                    "taken: give the size)"), help="context size of both models (default 2048)")
    g.add_argument("-b", "--batch-size", type=at_least(1), default=512, help="logical batch size (default 512)")
    g.add_argument("-np", "--parallel", type=at_least(1), default=1,
                   help="sequences per context, llama.cpp's -np: the branches of --spec-type "
                        f"{listing(lambda t: bool(t.np), last=' or ')} (default 1: a chain)")
    g.add_argument("-t", "--threads", type=at_least(0, " (0: auto)"), default=0, help="target threads (default 0, auto: the count that is fastest now, "
                        "followed as the machine's load changes; N pins N)")
    g.add_argument("-td", "--threads-draft", type=at_least(0, " (0: auto)"), default=0, help="draft threads (default 0, auto, as -t)")
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
    g.add_argument("--deterministic", action="store_true", help=DETERMINISTIC_GUARANTEE.replace("%", "%%"))


def add_generation_args(p: argparse.ArgumentParser, json_help: str = "print one JSON document") -> None:
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
    mode.add_argument("--json", action="store_true", help=json_help)
    o.add_argument("-v", "--verbose", action="store_true", help="show llama.cpp's log")


def resolve_models(args, *, draft: bool = True, head: bool = False) -> tuple[Path, Path | None]:
    """The target and, when ``draft``, the draft model: the demo pair fills in what is not
    given (``head``, for draft-eagle3: the demo target's EAGLE-3 head), except a draft for a
    target of the user's own (the demo draft would not fit it)."""
    target = args.model
    dft = getattr(args, "model_draft", None) if draft else None
    if draft and dft is None and target is not None:
        require_generating(check_gguf(target))      # a bad target file is the first problem
        raise SpecScopeError(f"{target}: draft-simple (or draft-eagle3) needs a draft model for "
                             "this target: give -md FILE, or draft without one with an n-gram type "
                             "(--spec-type ngram-mod, ngram-simple, ...)")
    if target is None or (draft and dft is None):
        demo_target, demo_draft = demo_pair()
        target = target or demo_target
        dft = (dft or (demo_eagle3_head() if head else demo_draft)) if draft else None
    return target, dft


def output_path(path: Path | None, what: str, suffixes: tuple[str, ...] = (),
                folder: bool = False) -> Path | None:
    """``path`` checked before any work is done, for ``what`` to be written there (a file, or
    with ``folder`` a folder, made where missing): SpecScopeError, one line, where it is a
    folder (a file where ``folder``), its suffix is not one of ``suffixes``, or the nearest
    folder that exists above it is not one or cannot be written."""
    if path is None:
        return None
    if suffixes and path.suffix.lower() not in suffixes:
        raise SpecScopeError(f"{path}: {what} is written as a {' or '.join(suffixes)} file")
    if folder and path.exists() and not path.is_dir():
        raise SpecScopeError(f"{path}: this is a file; {what} need a folder")
    if not folder and path.is_dir():
        raise SpecScopeError(f"{path}: this is a folder; {what} needs a file name")
    above = path if folder and path.is_dir() else path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise SpecScopeError(f"{path}: cannot write {what} there ({above} is not a folder)")
    if not os.access(above, os.W_OK | os.X_OK) or (not folder and path.exists()
                                                    and not os.access(path, os.W_OK)):
        raise SpecScopeError(f"{path}: cannot write {what} there (permission denied)")
    return path


def note_unused_flags(args, spec) -> None:
    """A ``specscope: note:`` line on stderr for each flag given that the run does not use."""
    for note in unused_flags(args, spec):
        print(f"specscope: note: {note}", file=sys.stderr)


def unused_flags(args, spec) -> list[str]:
    """The flags given that this run does not use (``spec`` None: the target alone), each as a
    sentence saying why: a flag accepted and then ignored in silence misleads."""
    out = []
    if spec is None:
        given = [flag for flag, value in (("-md", getattr(args, "model_draft", None)),
                                          ("-td", args.threads_draft),
                                          ("-ngld", args.gpu_layers_draft),
                                          ("-devd", args.device_draft)) if value]
        if given:
            out.append(f"{', '.join(given)} not used: the target runs alone")
        return out
    if getattr(args, "model_draft", None) is not None and not spec.needs_draft:
        out.append(f"-md {args.model_draft} not used: {spec.label} drafts without a draft model")
    if spec.uses_draft_model and spec.n_max == 0 and not spec.synthetic:
        out.append("--spec-draft-n-max 0: draft-simple drafts nothing, so the draft model is "
                   "loaded and kept in step for no draft")
    if args.parallel > 1 and not any(TYPES[t].np for t in spec.types):
        out.append(f"-np {args.parallel} not used: only "
                   f"{listing(lambda t: bool(t.np), last=' and ')} draft in branches")
    return out


def write_or_say(path: Path, what: str, write) -> None:
    """``write(path)``, its folder made where missing, an OSError made one line naming the file
    (a check before the work cannot foresee every failure: a full disk, a file system that
    refuses)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    except OSError as exc:
        raise SpecScopeError(f"{path}: cannot write {what} ({exc.strerror or exc})") from None


def write_text_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all: through a file beside it, renamed over it
    (a disk that filled up mid-write left half a JSON document); a device such as /dev/null is
    written in place."""
    if path.exists() and not path.is_file():
        path.write_text(text, encoding="utf-8")
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


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
    """With --chat: the prompt in the target's chat template (see core/models/chat.py), else None."""
    if not args.chat:
        return None
    return render_chat(model, prompt, args.system)


def engine_settings(args, spec=None):
    """The engine's settings from the flags; ``spec`` (a SpecSettings): the sequences its types
    need beside -np (SpecSettings.sequences)."""
    n_seq = max(args.parallel, spec.sequences() if spec is not None else 1)
    kw = dict(n_ctx=args.ctx_size, n_batch=args.batch_size, flash_attn=args.flash_attn,
              kv_type=args.kv_type, target_threads=args.threads,
              draft_threads=args.threads_draft, repack=args.repack, n_seq=n_seq,
              **placement_kwargs(args))
    if args.deterministic:
        kw.update(flash_attn="off", kv_type="f32")
    return EngineSettings(**kw)


def sampler_settings(args, engine):
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
