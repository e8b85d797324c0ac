"""Typed exceptions whose messages are sentences a user can act on."""

from __future__ import annotations

import unicodedata
from pathlib import Path


class SpecScopeError(Exception):
    """Base class: every error SpecScope expects to show a user.

    Its text is one line: control and invisible characters that reached the message from a
    file (a corrupted key name, llama.cpp's log) are shown escaped, never printed raw."""

    def __str__(self) -> str:
        return printable(super().__str__())


class ModelFileError(SpecScopeError):
    """A model file is missing, unreadable, not GGUF, truncated or unusable."""

    def __init__(self, path: str | Path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class IncompatiblePairError(SpecScopeError):
    """The draft model cannot draft for the target (vocabulary gate)."""

    def __init__(self, message: str, rules=()):
        self.rules = tuple(rules)
        super().__init__(message)


class ContextFullError(SpecScopeError):
    """The prompt does not leave room in the context to generate."""


class DecodeError(SpecScopeError):
    """llama_decode returned a non-zero status."""

    def __init__(self, what: str, status: int):
        self.status = status
        reason = {
            1: "no KV cache slot was free for the batch (the context is full)",
            2: "the computation was aborted",
            -1: "the batch was invalid",
        }.get(status, "llama.cpp reported an internal error")
        super().__init__(f"decoding {what} failed with status {status}: {reason}")


class ConfigError(SpecScopeError):
    """A setting is out of range or inconsistent."""


class ModelCrashError(ModelFileError):
    """llama.cpp crashed (a signal or an abort) running a model in the crash probe's child process."""

    def __init__(self, path: str | Path, message: str, verdict=None):
        self.verdict = verdict
        SpecScopeError.__init__(self, message)
        self.path = str(path)
        self.problem = message


class SessionFileError(SpecScopeError):
    """A session file cannot be read: truncated, corrupted, of a newer version or not a session.
    One line: the file, the line number and the problem."""

    def __init__(self, path: str | Path, line: int, problem: str):
        self.path, self.line, self.problem = str(path), line, problem
        super().__init__(f"{self.path}, line {line}: {problem}" if line else f"{self.path}: {problem}")


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def printable(text: str, also: str = "") -> str:
    """``text`` with control, invisible and undecodable characters escaped (``\\n``,
    ``\\x1b``, ``\\u200b``; bytes decoded with ``surrogateescape`` as ``\\xNN``), so that
    whatever a file holds prints as one line that shows what is there. Characters in
    ``also`` get a backslash too (a quote and the backslash itself, for quoted text)."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch in also:
            out.append("\\" + ch)
        elif 0xDC80 <= o <= 0xDCFF:  # an invalid UTF-8 byte
            out.append(f"\\x{o - 0xDC00:02x}")
        elif ch == " " or (ch.isprintable() and unicodedata.category(ch) not in ("Zs", "Cf")):
            out.append(ch)
        elif o <= 0xFF:
            out.append(f"\\x{o:02x}")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return "".join(out)
