"""An advice in a file: the JSON document of advise_report.to_dict (what ``specscope advise
--json`` prints), saved and opened again without its models (advise.report.from_dict)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from specscope.core.errors import ConfigError
from specscope.core.measure.advise.advice import Advice
from specscope.core.measure.advise.report import from_dict, to_dict


def save_advice(a: Advice, path: str | Path) -> Path:
    """Write ``a`` to ``path`` atomically (a partial file never replaces a good one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        tmp.write_text(json.dumps(to_dict(a), indent=1), encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def load_advice(path: str | Path) -> Advice:
    """The advice saved at ``path``; ConfigError naming the file and what is wrong with it."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: not a SpecScope advice document (not a JSON object)")
    try:
        return from_dict(doc)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
