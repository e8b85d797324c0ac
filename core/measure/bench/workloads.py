"""The workload suite (resources/prompts/workloads.json): prompts by kind of work, for asking
which drafter wins on which workload. Spec-Bench's six categories (multi-turn conversation,
translation, summarization, question answering, math reasoning, retrieval-augmented answers)
plus code completion and code editing, six prompts each, written for this project.

A chat prompt goes through the target's chat template where it has one (``messages``, a whole
conversation for multi-turn); ``text`` is the same as one plain prompt, for targets without a
template and for ``bench --prompts workloads.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from specscope.core.errors import ConfigError
from specscope.core.models.demo import prompts_dir

__all__ = ["Workload", "CATEGORIES", "YOURS", "load_workloads", "load_user_prompts"]

CATEGORIES = ("multi-turn", "translation", "summarization", "question-answering",
              "math-reasoning", "retrieval", "code-completion", "code-editing")
YOURS = "your prompts"      # the category of a user's own prompts (advise --prompts FILE)


@dataclass(frozen=True)
class Workload:
    name: str
    category: str
    text: str                       # the prompt as plain text
    chat: bool                      # send in the target's chat template where it has one
    messages: tuple[dict, ...]      # the conversation (chat prompts); one user message by default


def load_workloads(categories: Sequence[str] | None = None,
                   path: str | Path | None = None) -> list[Workload]:
    """The suite's prompts, in file order; ``categories`` keeps only those (unknown ones are
    an error that lists the known)."""
    path = Path(path) if path is not None else prompts_dir() / "workloads.json"
    unknown = sorted(set(categories or ()) - set(CATEGORIES))
    if unknown:
        raise ConfigError(f"unknown workload categor{'ies' if len(unknown) > 1 else 'y'}: "
                          f"{', '.join(unknown)} (known: {', '.join(CATEGORIES)})")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        items = doc["prompts"]
        out = [Workload(p["name"], p["category"], p["text"], bool(p["chat"]),
                        tuple(p.get("messages") or ({"role": "user", "content": p["text"]},)))
               for p in items]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a workload suite ({type(exc).__name__}: {exc})") from None
    return [w for w in out if not categories or w.category in categories]


def load_user_prompts(path: str | Path) -> list[Workload]:
    """A user's prompts as one category (YOURS): a text file with one prompt per line, or JSON
    Lines where each line is a chat conversation (a list of ``{"role", "content"}`` messages, or
    an object with such a ``messages`` list). Each goes in the target's chat template where it
    has one. A file that is neither is a ConfigError naming the file and the line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the prompts ({getattr(exc, 'strerror', None) or exc})") from None
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        messages = _messages(line)
        if messages is None:
            if line.lstrip().startswith(("[", "{")):
                raise ConfigError(f"{path}: line {i} is JSON but not a chat conversation (a list of "
                                  "{\"role\", \"content\"} messages, or an object with one as "
                                  "\"messages\")")
            messages = ({"role": "user", "content": line},)
        text = "\n\n".join(m["content"] for m in messages)
        out.append(Workload(f"line {i}", YOURS, text, True, messages))
    if not out:
        raise ConfigError(f"{path}: no prompt in the file (one per line, or JSON Lines of chat "
                          "messages)")
    return out


def _messages(line: str) -> tuple[dict, ...] | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    if isinstance(doc, dict):
        doc = doc.get("messages")
    if isinstance(doc, list) and doc and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in doc):
        return tuple({"role": m["role"], "content": m["content"]} for m in doc)
    return None
