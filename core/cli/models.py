"""``specscope models``: the GGUF files you already have (LM Studio, Ollama, the Hugging Face
cache, llama.cpp's cache, Jan, GPT4All and folders you add; core/models/library.py), and with
``--for TARGET`` what can draft for that target among them, ranked as the pair doctor ranks a
folder (``doctor --scan``), with its MTP blocks and the draftless n-gram types beside them.

    specscope models [--folder DIR ...] [--json]
    specscope models --for TARGET [--folder DIR ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specscope.core.measure.doctor.draft_choice import rank_for
from specscope.core.models.demo import demo_pair
from specscope.core.models.library import Library, params_text, scan_library, size_text


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("models", help="the GGUF models you already have, and what can draft for one",
                       description="List the GGUF files you already have (LM Studio, Ollama, the "
                                   "Hugging Face cache, llama.cpp's cache, Jan, GPT4All and the "
                                   "folders you add) and, with --for TARGET, rank what can draft "
                                   "for that target among them, as the pair doctor does.")
    p.add_argument("--folder", type=Path, action="append", default=[], metavar="DIR",
                   help="also look in this folder (and its subfolders); repeatable")
    p.add_argument("--for", dest="target", type=Path, metavar="TARGET",
                   help="rank what can draft for this target among the models found")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    return p


def run(args) -> int:
    lib = scan_library(args.folder)
    doc = lib.to_dict()
    text = format_library(lib)
    if args.target is not None:
        ranking = rank_for(args.target, lib)
        doc["for"] = ranking
        text += "\n" + "\n".join(ranking["lines"]) + "\n"
    if args.json:
        json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text)
    return 0


def format_library(lib: Library) -> str:
    if not lib.searched:
        out = ["No model store found (LM Studio, Ollama, Hugging Face, llama.cpp, Jan, GPT4All); "
               "add a folder with --folder DIR"]
    else:
        out = ["Looked in: " + "; ".join(f"{s} {f}" for s, f in lib.searched)]
    if lib.models:
        out += ["", f"{'name':44} {'store':12} {'arch':10} {'params':>6} {'quant':8} {'size':>9} "
                    f"{'ctx':>7} chat  drafts with"]
        for m in lib.models:
            out.append(f"{_middle(m.name, 44):44} {m.store:12} {_cut(m.architecture, 10):10} "
                       f"{params_text(m.params):>6} {_cut(m.quantization, 8):8} {size_text(m.size):>9} "
                       f"{m.context_length or '?':>7} {'yes ' if m.chat_template else 'no  '}  "
                       f"{m.drafts_with}")
    else:
        target, draft = demo_pair()
        out += ["", "No GGUF model found. SpecScope's own demo pair (what `specscope run` and the "
                    "window use without -m) is", f"  {target}", f"  {draft}"]
    if lib.problems:
        out += ["", f"Problems ({len(lib.problems)}):"] + [f"  {p}" for p in lib.problems]
    return "\n".join(out) + "\n"


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def _middle(name: str, n: int) -> str:
    """A long name cut in its middle: a store's folder names start it and the file's own name
    (the quantization, the variant) ends it."""
    if len(name) <= n:
        return name
    tail = (n - 1) // 2
    return name[:n - 1 - tail] + "…" + name[-tail:]

