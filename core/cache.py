"""The user's cache folder and file identities (calibrations and crash-probe verdicts)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def cache_root() -> Path:
    """``$SPECSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/specscope``, else ``~/.cache/specscope``."""
    env = os.environ.get("SPECSCOPE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "specscope"


def file_id(path) -> dict:
    """What identifies a file's content cheaply: resolved path, size and modification time."""
    p = Path(path).resolve()
    try:
        st = p.stat()
        return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    except OSError:
        return {"path": str(p)}


def write_json(path: Path, doc) -> Path | None:
    """Write ``doc`` atomically; a cache that cannot be written is not an error (None)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
        tmp.replace(path)
        return path
    except OSError:
        return None


def read_json(path: Path):
    """The document at ``path``, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
