"""The demo model pair shipped in resources/models (see its README.md)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from specscope.core.errors import ConfigError

DEMO_TARGET = "demo-target.gguf"
DEMO_DRAFT = "demo-draft.gguf"
DEMO_FOREIGN_DRAFT = "demo-draft-foreign-vocab.gguf"   # another tokenizer: the gate refuses it
DEMO_EAGLE3_HEAD = "demo-eagle3-head.gguf"     # an EAGLE-3 head for the target (draft-eagle3)


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


def demo_eagle3_head() -> Path:
    """The demo target's EAGLE-3 head, or a ConfigError saying it is not installed."""
    head = models_dir() / DEMO_EAGLE3_HEAD
    if not head.is_file():
        raise ConfigError(f"no demo EAGLE-3 head is installed ({DEMO_EAGLE3_HEAD} missing in "
                          f"{head.parent}); pass -md HEAD.gguf")
    return head
