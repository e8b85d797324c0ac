"""``specscope doctor``: does a draft fit a target, why not, and what could it buy?

    specscope doctor TARGET DRAFT [--json]
    specscope doctor TARGET --scan DIR [--json]

Exit status: 0 the pair is compatible (with --scan: at least one draft is),
1 it is not (no draft is), 2 bad input (one sentence naming the file on
stderr, never a traceback). When no draft fits, the doctor says that llama.cpp's
draftless n-gram drafters need none (doctor.pair.NGRAM_SUGGESTION).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.drafters.registry import listing
from specscope.core.errors import SpecScopeError
from specscope.core.measure.doctor import pair as pairing
from specscope.core.measure.doctor.estimate import NO_CALIBRATION, RANK_ALPHA
from specscope.core.measure.doctor.pair import NGRAM_SUGGESTION
from specscope.core.measure.doctor.scan import scan
from specscope.core.models.llama import resolve_repack

EXIT_COMPATIBLE = 0
EXIT_INCOMPATIBLE = 1
EXIT_BAD_INPUT = 2

PROG = "specscope doctor"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "doctor",
        help="does a draft fit a target? (vocabulary rules, memory, cost estimate)",
        description="Check, before loading any weights, whether a draft model can draft for a "
                    "target under llama.cpp's rules, why not, and what it could buy. "
                    "Exit status: 0 compatible, 1 incompatible, 2 bad input.",
    )
    p.add_argument("target", type=Path, help="target model (GGUF)")
    p.add_argument("draft", type=Path, nargs="?", help="draft model (GGUF)")
    p.add_argument("--scan", type=Path, metavar="DIR",
                   help="check every .gguf in DIR as a draft, ranked by estimated cost")
    p.add_argument("--repack", choices=("auto", "on", "off"), default="auto",
                   help="the weight-repacking setting to report on (default auto, as run and the window)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("-v", "--verbose", action="store_true", help="show llama.cpp's log")
    return p


def repack_note(mode: str) -> dict:
    """Which weight repacking ``mode`` gives on this CPU, and why (a doctor line)."""
    on, why = resolve_repack(mode)
    return {"setting": mode, "on": on, "reason": why}


def run(args) -> int:
    """Run the doctor for parsed ``args``; returns the exit status."""
    if getattr(args, "verbose", False):
        logging.getLogger("specscope.llama").setLevel(logging.INFO)
    if args.draft is not None and args.scan is not None:
        return _bad_input(args, "give either a DRAFT model or --scan DIR (not both, not neither)")
    if args.draft is None and args.scan is None:
        return _bad_input(args, "give either a DRAFT model or --scan DIR (not both, not neither); "
                                f"no draft at hand? {NGRAM_SUGGESTION}")
    try:
        if args.scan is not None:
            report = scan(args.target, args.scan)
            doc = report.to_dict()
            if not report.compatible:
                doc["suggestion"] = pairing.NGRAM_SUGGESTION
            _emit(args, doc, format_scan(report))
            return EXIT_COMPATIBLE if report.compatible else EXIT_INCOMPATIBLE
        report = pairing.check_pair(args.target, args.draft)
        repack = repack_note(args.repack)
        text = format_pair(report).rstrip("\n").split("\n")
        text.insert(-1, f"Weight repacking on this CPU (--repack {repack['setting']}): {repack['reason']}")
        text.insert(-1, "")
        doc = {**report.to_dict(), "repack": repack}
        if not report.compatible:
            doc["suggestion"] = pairing.NGRAM_SUGGESTION
        _emit(args, doc, "\n".join(text) + "\n")
        return EXIT_COMPATIBLE if report.compatible else EXIT_INCOMPATIBLE
    except SpecScopeError as exc:
        return _bad_input(args, str(exc))
    except Exception as exc:  # never a traceback on the terminal
        if os.environ.get("SPECSCOPE_DEBUG"):
            raise
        return _bad_input(args, f"unexpected error ({type(exc).__name__}: {exc}); "
                                "set SPECSCOPE_DEBUG=1 for a traceback")


def _emit(args, doc: dict, text: str) -> None:
    if args.json:
        json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text)
    sys.stdout.flush()


def _bad_input(args, message: str) -> int:
    message = " ".join(message.split())  # one line
    print(f"{PROG}: error: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        json.dump({"error": message}, sys.stdout)
        sys.stdout.write("\n")
    return EXIT_BAD_INPUT


# ----------------------------------------------------------------------------- text

def _size(n: int) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n} B"


def _params(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f}B params"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M params"
    if n >= 1e3:
        return f"{n / 1e3:.1f}k params"
    return f"{n} params"


def _model_lines(role: str, m) -> list[str]:
    parts = [m.architecture or "unknown architecture"]
    if m.head:
        parts[0] += f" ({head_words(m)})"
    if m.nextn_layers:
        parts[0] += f" ({m.nextn_layers} nextn (MTP) layers)"
    if m.n_tensors:
        parts.append(_params(m.n_params))
        types = ", ".join(f"{k} {v['bits_per_weight']:.2f} bpw" for k, v in list(m.tensor_types.items())[:3])
        parts.append((m.file_type + ": " if m.file_type else "") + f"{m.bits_per_weight:.2f} bits/weight ({types})")
    else:
        parts.append("no weights (vocabulary only)")
    parts.append(_size(m.file_size))
    if m.vocab is not None:
        parts.append(f"{m.vocab.type_name} vocabulary of {m.vocab.n_tokens:,}")
    return [f"{role:<7}{m.display_name}", f"{'':7}{m.path}", f"{'':7}" + " · ".join(parts)]


def head_words(m) -> str:
    """A head's needs in a few words: "an EAGLE-3 head: target layers [0, 1, 3], ..."."""
    h = m.head
    if m.kind != "dflash":
        return (f"an EAGLE-3 head: target layers {h['target_layers']}, target hidden size "
                f"{h['target_hidden_size']}, draft vocabulary {h['n_draft_vocab']:,}")
    markov = (", a Markov head" + (" and a confidence head" if h["confidence_head"] else "")
              if h["markov_head"] else "")
    return (f"{'a DSpark' if h['markov_head'] else 'a DFlash'} head: target layers "
            f"{h['target_layers']}, hidden size {h['target_hidden_size']}, block size "
            f"{h['block_size']}, mask token {h['mask_token']}{markov}")


HEAD_TITLES = {"eagle3": "EAGLE-3 head: what llama.cpp's draft-eagle3 checks or aborts on "
                         "(common/speculative.cpp)",
               "dflash": f"DFlash head: what llama.cpp's {listing(lambda t: t.head == 'dflash')} "
                         "check or abort on, and the DFlash2 heads SpecScope does not run "
                         "(common/speculative.cpp)"}


def format_pair(r) -> str:
    out = ["SpecScope pair doctor", ""]
    out += _model_lines("target", r.target)
    out += _model_lines("draft", r.draft)
    head = r.draft.head is not None
    out += ["", HEAD_TITLES[r.draft.kind] if head else
            "Vocabulary: llama.cpp's rules (common_speculative_are_compatible)"]
    for rule in r.rules:
        out.append(f"  {'pass' if rule.passed else 'FAIL'}  {rule.name:<16} {rule.message}")
    out += ["", r.verdict]
    if r.cross is not None:
        out += ["", *format_cross(r.cross)]
    if not r.compatible and not r.cross_modes:
        out.append(f"This draft does not fit this target; {_suggestion()}.")
    out += ["", "The head" if head else "Beyond the vocabulary"]
    out += [f"  - {n}" for n in r.notes]
    out += ["", *format_cost(r.cost)]
    out.append(f"\n(checked in {r.elapsed_s:.2f} s without loading weights)")
    return "\n".join(out) + "\n"


def _suggestion() -> str:
    return NGRAM_SUGGESTION


MODE_WHAT = {"translate": "the draft drafts in its own vocabulary, its text re-tokenized for the target",
             "intersect": "the draft samples only the shared tokens, their ids mapped one for one"}


def format_cross(c) -> list[str]:
    """What SpecScope can do across vocabularies (docs/cross-vocab.md)."""
    out = ["Across vocabularies: what draft-simple can still do (--spec-vocab, docs/cross-vocab.md)",
           f"  overlap: {c.n_shared:,} tokens have the same text in both: {c.target_share:.1%} of the "
           f"target's tokens, {c.draft_share:.1%} of the draft's"]
    out += [f"  special: {line}" for line in c.specials]
    for mode in ("translate", "intersect"):
        if c.refusals[mode]:
            out.append(f"  {mode:<9}  refused: {c.refusals[mode]}")
            continue
        auto = ("--spec-vocab auto drafts with it" if mode == c.mode else
                "--spec-vocab auto drafts with it under --accept-rule ratio")
        out.append(f"  {mode:<9}  applies ({auto}): {MODE_WHAT[mode]}; re-tokenization "
                   f"≈ {c.per_round_s[mode] * 1e6:.0f} µs per round, measured on this pair")
    if c.modes:
        out.append(f"  llama.cpp's own programs refuse this draft; `specscope run` drafts with it "
                   f"({c.mode} unless --spec-vocab says otherwise).")
    return out


def format_cost(c) -> list[str]:
    out = [f"Cost estimate (textbook): f ≈ {c.f:.4f}  ({c.basis})"]
    if c.warning:
        out.append(f"  note: {c.warning}")
    out.append("  textbook speed-up (E+1)/(f+1), the block drafted in one decode, E = α+α²+…+αⁿ, "
               "n = draft length:" if c.block else
               "  textbook speed-up (E+1)/(n·f+1), E = α+α²+…+αⁿ, n = draft length:")
    out += _speedup_table(c.alphas, c.n_max, c.speedups, c.best)
    k = c.calibrated
    if k is None:
        return out + ["", f"Cost estimate (calibrated on this machine): none: {NO_CALIBRATION}."]
    upto = f" with n ≤ {k.n_max}" if k.n_max < c.n_max else ""
    needed = "; ".join(f"{s}× needs α ≥ {a:.3f}" if a is not None and a > 0.995 else    # not "1.00"
                       f"{s}× needs α ≥ {a:.2f}" if a is not None else f"{s}× is out of reach at any α{upto}"
                       for s, a in k.alpha_needed.items())
    short = ([f"  (n ≤ {k.n_max} only: the calibration timed batches up to {k.n_max + 1}; "
              f"`specscope bench --spec-draft-n-max 1,2,4,{c.n_max}` or Calibrate in the window times "
              "longer drafts)"] if upto else [])
    return out + ["", f"Cost estimate (calibrated on this machine): f ≈ {k.f:.4f}  ({k.f_basis})",
                  f"  priced with {k.source}: the calibrated round (docs/calibration.md):",
                  *_speedup_table(c.alphas, k.n_max, k.speedups, k.best), *short,
                  f"  break-even here: {k.break_even}",
                  f"  this draft: {needed}; at α = {RANK_ALPHA}: {k.verdict}"]


def _speedup_table(alphas, n_max: int, speedups: dict, best: dict) -> list[str]:
    out = ["           " + "".join(f"{'n=' + str(n):>7}" for n in range(1, n_max + 1)) + "   best"]
    for a in alphas:
        b = best[str(a)]
        out.append(f"    α={a:<4} " + "".join(f"{x:7.2f}" for x in speedups[str(a)])
                   + f"   n={b['n']} ({b['speedup']:.2f}x)")
    return out


def format_scan(s) -> str:
    out = ["SpecScope pair doctor: scan", ""]
    out += _model_lines("target", s.target)
    out += ["", f"Folder: {s.folder}", ""]
    if s.calibration:
        out += ["Calibrated on this machine:", *(f"  {line}" for line in s.calibration), ""]
    if s.compatible:
        out.append(f"Compatible drafts ({len(s.compatible)}), {s.ranking}:")
        for i, e in enumerate(s.compatible, 1):
            out.append(f"  {i}. {_scan_figures(e.report.cost)}  {e.path}")
            if e.report.spec_type != DRAFT_MODEL:
                out.append(f"       note: {e.report.notes[0].removeprefix('draft: ')}; run it with "
                           f"--spec-type {e.report.spec_type}")
            warn = e.report.cost.warning
            if warn:
                out.append(f"       note: {warn}")
    else:
        out.append(f"No compatible draft in this folder: no draft fits this target; {_suggestion()}.")
    if s.cross:
        out += ["", f"Incompatible for llama.cpp, but SpecScope can draft with them across "
                    f"vocabularies ({len(s.cross)}), ranked by estimated f:"]
        for i, e in enumerate(s.cross, 1):
            c = e.report.cross
            out.append(f"  {i}. f ≈ {e.f:.4f}  {c.summary()} (auto: {c.mode}), overlap "
                       f"{c.target_share:.1%} of the target's tokens  {e.path}")
            out.append(f"       llama.cpp refuses it: {e.report.reason}")
    if s.incompatible:
        out += ["", f"Incompatible or unusable ({len(s.incompatible)}):"]
        for e in s.incompatible:
            out.append(f"  {e.path}: {e.reason}")
    if s.skipped:
        out += ["", "Skipped (the target itself, or later parts of split models):"]
        out += [f"  {p}" for p in s.skipped]
    out.append(f"\n(scanned in {s.elapsed_s:.2f} s without loading weights)")
    return "\n".join(out) + "\n"


def _scan_figures(c) -> str:
    """"f ≈ 0.1482  textbook best 1.33x at α=0.7 (n=2)", and the calibrated figure first when
    there is one."""
    a = str(RANK_ALPHA)
    text = f"textbook best {c.best[a]['speedup']:.2f}x at α={a} (n={c.best[a]['n']})"
    k = c.calibrated
    if k is None:
        return f"f ≈ {c.f:.4f}  {text}"
    return (f"calibrated best {k.best[a]['speedup']:.2f}x at α={a} (n={k.best[a]['n']}), f ≈ {k.f:.4f} "
            f"here; {text}, f ≈ {c.f:.4f}")


def main(argv: list[str] | None = None) -> int:
    """``python -m specscope.core.cli.doctor TARGET DRAFT``: the doctor on its own."""
    from specscope.core.cli.args import Parser
    parser = Parser(prog="specscope")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["doctor", *(sys.argv[1:] if argv is None else argv)])
    logging.getLogger("specscope.llama").setLevel(logging.CRITICAL)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
