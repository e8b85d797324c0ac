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

__all__ = ["Workload", "CATEGORIES", "load_workloads"]

CATEGORIES = ("multi-turn", "translation", "summarization", "question-answering",
              "math-reasoning", "retrieval", "code-completion", "code-editing")


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
