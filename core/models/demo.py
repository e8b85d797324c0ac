"""The demo model pair shipped in resources/models (see its README.md)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from specscope.core.errors import ConfigError

DEMO_TARGET = "demo-target.gguf"
DEMO_DRAFT = "demo-draft.gguf"
DEMO_FOREIGN_DRAFT = "demo-draft-foreign-vocab.gguf"   # another tokenizer: the gate refuses it


def models_dir() -> Path:
    return Path(str(resources.files("specscope.resources") / "models"))


def prompts_dir() -> Path:
    return Path(str(resources.files("specscope.resources") / "prompts"))


def demo_pair() -> tuple[Path, Path]:
    """(target, draft) of the bundled demo pair, or a ConfigError saying none is installed."""
    folder = models_dir()
    target, draft = folder / DEMO_TARGET, folder / DEMO_DRAFT
    missing = [p.name for p in (target, draft) if not p.is_file()]
    if missing:
        raise ConfigError(f"no demo model pair is installed ({', '.join(missing)} missing in {folder}); "
                          "pass -m TARGET.gguf -md DRAFT.gguf")
    return target, draft
