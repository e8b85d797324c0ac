"""One shape for the progress of a long measurement (a calibration, a sweep, the distance check):
``progress(done, total, what)`` says that ``done`` of ``total`` steps are done (a fraction when
``total`` is 1) and what runs now. The CLI's progress line prints the steps, the window's bars the
share (:func:`share`)."""

from __future__ import annotations

from typing import Callable

Progress = Callable[[float, float, str], None]   # (done, total, what now)


def quiet(done: float, total: float, what: str) -> None:
    """Progress that nobody watches."""


def share(done: float, total: float) -> float:
    """done ÷ total, between 0 and 1 (1 when there are no steps)."""
    return min(max(done / total, 0.0), 1.0) if total else 1.0


def within(progress: Progress, done: float, total: float, prefix: str) -> Progress:
    """A part's progress told as the whole's: the whole stays at step ``done`` of ``total``, the
    words say the part's own share ("demo-draft.gguf: timing decodes (40%)")."""
    return lambda d, t, what: progress(done, total, f"{prefix}: {what} ({100 * share(d, t):.0f}%)")
