"""Corpus for the demo model pair: the CPython standard library's Python source.

Rule (documented in resources/models/README.md):

* Root: ``sysconfig.get_paths()["stdlib"]`` of the Python that runs the build.
* Files: every ``*.py`` below the root, as POSIX paths relative to it, sorted
  by that string, excluding anything under ``site-packages/`` (third-party),
  any directory named ``test``, ``tests`` or ``idle_test`` (CPython's own test
  suites, large and repetitive), and any ``__pycache__``. Files that are not
  valid UTF-8 are skipped.
* Held-out split: a file is held out for evaluation when
  ``int(sha256(relpath).hexdigest()[:8], 16) % 100 < 5`` (about 5% of files,
  independent of file order and of the machine).

Only the standard library is needed here: tests and the evaluator import this
module by file path.
"""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

EXCLUDED_DIRS = {"site-packages", "test", "tests", "idle_test", "__pycache__"}
HELD_OUT_PERCENT = 5


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def is_held_out(relpath: str) -> bool:
    """True when ``relpath`` (POSIX, relative to the stdlib root) is held out."""
    h = int(hashlib.sha256(relpath.encode("utf-8")).hexdigest()[:8], 16)
    return h % 100 < HELD_OUT_PERCENT


def list_files(root: Path | None = None) -> list[str]:
    """Sorted relative POSIX paths of the corpus files (before the split)."""
    root = Path(root) if root is not None else stdlib_root()
    out = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root)
        if any(part in EXCLUDED_DIRS for part in rel.parts[:-1]):
            continue
        if not p.is_file():
            continue
        out.append(rel.as_posix())
    out.sort()
    return out


def read_text(root: Path, relpath: str) -> str | None:
    try:
        return (Path(root) / relpath).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None


def load_split(root: Path | None = None) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Return (train, held_out) as lists of (relpath, text), in sorted order."""
    root = Path(root) if root is not None else stdlib_root()
    train, held = [], []
    for rel in list_files(root):
        text = read_text(root, rel)
        if text is None or not text.strip():
            continue
        (held if is_held_out(rel) else train).append((rel, text))
    return train, held


if __name__ == "__main__":
    tr, ho = load_split()
    print(f"root {stdlib_root()}")
    print(f"train files {len(tr)}  chars {sum(len(t) for _, t in tr)}")
    print(f"held-out files {len(ho)}  chars {sum(len(t) for _, t in ho)}")
    for rel, _ in ho:
        print("  held out:", rel)
