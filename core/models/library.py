"""The GGUF files a user already has: LM Studio's models folder, Ollama's store, the Hugging Face
hub cache, llama.cpp's download cache, Jan, GPT4All, and folders the user adds.

Where each store keeps them (Linux and macOS; a variable moves a store where its program reads
one):

=============  ==============================================================================
LM Studio      ``~/.lmstudio/models`` (and the older ``~/.cache/lm-studio/models``):
               publisher/repository/file.gguf
Ollama         ``$OLLAMA_MODELS`` or ``~/.ollama/models``: ``manifests/<registry>/<namespace>/
               <model>/<tag>`` are JSON manifests whose layer of media type
               ``application/vnd.ollama.image.model`` names a blob ``blobs/sha256-<hex>`` (a
               GGUF file without the extension); the name is ``model:tag`` (``namespace/
               model:tag`` outside the library namespace)
Hugging Face   ``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``, read with
               huggingface_hub's own cache scanner (``scan_cache_dir``): repositories,
               revisions, snapshot files linked to blobs; the name is ``repo/file``
llama.cpp      ``$LLAMA_CACHE`` or ``$XDG_CACHE_HOME/llama.cpp`` (``~/.cache/llama.cpp``;
               ``~/Library/Caches/llama.cpp`` on macOS): what ``-hf`` downloaded
Jan            ``~/jan/models`` and ``~/.local/share/Jan/data/llamacpp/models``
GPT4All        ``~/.local/share/nomic.ai/GPT4All`` (``~/Library/Application Support/nomic.ai/
               GPT4All`` on macOS)
=============  ==============================================================================

Each file's header is read (core/models/gguf_file.py; no weights, no llama.cpp) for its name,
architecture, parameters, quantization, size, context length, chat template and what it
drafts with: an EAGLE-3 or DFlash head, MTP blocks. A file that cannot be read, a broken
manifest or a dangling link is one line in ``Library.problems``, never an exception. The
second part of a split model (``-00002-of-00003.gguf``) is not listed: its first part is.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from specscope.core.errors import SpecScopeError
from specscope.core.models.gguf_file import check_gguf

STORES = ("LM Studio", "Ollama", "Hugging Face", "llama.cpp", "Jan", "GPT4All", "folder")
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class Found:
    """One GGUF file in a store, with what its header says."""
    path: str
    store: str                      # one of STORES
    name: str                       # the store's name for it
    size: int                       # bytes on disk
    architecture: str = ""
    params: int = 0                 # weights, as llama.cpp counts them
    quantization: str = ""          # general.file_type, else the type holding most bytes
    context_length: int | None = None
    chat_template: bool = False
    kind: str = "model"             # model | eagle3 head | dflash head
    mtp_blocks: int = 0             # MTP blocks (draft-mtp drafts with them)
    title: str = ""                 # general.name

    @property
    def drafts_with(self) -> str:
        """What this file brings to speculation, in a few words."""
        if self.kind != "model":
            return f"an {self.kind}" if self.kind.startswith("eagle") else f"a {self.kind}"
        return f"{self.mtp_blocks} MTP block{'s' if self.mtp_blocks != 1 else ''}" \
            if self.mtp_blocks else ""

    def to_dict(self) -> dict:
        return {"path": self.path, "store": self.store, "name": self.name, "size": self.size,
                "architecture": self.architecture, "params": self.params,
                "quantization": self.quantization, "context_length": self.context_length,
                "chat_template": self.chat_template, "kind": self.kind,
                "mtp_blocks": self.mtp_blocks, "title": self.title}


@dataclass
class Library:
    models: list[Found] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)     # one line each
    searched: list[tuple[str, str]] = field(default_factory=list)   # (store, folder) looked in

    def to_dict(self) -> dict:
        return {"models": [m.to_dict() for m in self.models], "problems": list(self.problems),
                "searched": [{"store": s, "folder": f} for s, f in self.searched]}


def store_folders(home: Path | None = None, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """(store, folder) for every store, where its program keeps models on this system."""
    home = Path(home) if home is not None else Path.home()
    env = os.environ if env is None else env
    mac = sys.platform == "darwin"
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else (
        home / "Library" / "Caches" if mac else home / ".cache")
    hf = Path(env["HF_HUB_CACHE"]) if env.get("HF_HUB_CACHE") else (
        Path(env["HF_HOME"]) / "hub" if env.get("HF_HOME") else home / ".cache" / "huggingface" / "hub")
    data = home / "Library" / "Application Support" if mac else home / ".local" / "share"
    return [("LM Studio", home / ".lmstudio" / "models"),
            ("LM Studio", home / ".cache" / "lm-studio" / "models"),
            ("Ollama", Path(env["OLLAMA_MODELS"]) if env.get("OLLAMA_MODELS") else home / ".ollama" / "models"),
            ("Hugging Face", hf),
            ("llama.cpp", Path(env["LLAMA_CACHE"]) if env.get("LLAMA_CACHE") else cache / "llama.cpp"),
            ("Jan", home / "jan" / "models"),
            ("Jan", data / "Jan" / "data" / "llamacpp" / "models"),
            ("GPT4All", data / "nomic.ai" / "GPT4All")]


def scan_library(folders: Iterable[str | os.PathLike] = (), home: Path | None = None,
                 env: Mapping[str, str] | None = None) -> Library:
    """Every GGUF file in the stores and in ``folders`` (searched recursively)."""
    lib = Library()
    seen: set[str] = set()
    places = [(s, f) for s, f in store_folders(home, env)] + [("folder", Path(f)) for f in folders]
    for store, folder in places:
        if store != "folder" and not folder.is_dir():
            continue
        lib.searched.append((store, str(folder)))
        if store == "folder" and not folder.is_dir():
            lib.problems.append(f"{folder}: no such folder")
            continue
        entries = {"Ollama": _ollama, "Hugging Face": _huggingface}.get(store, _walk)(folder, lib)
        for path, name in entries:
            _add(lib, seen, path, store, name)
    lib.models.sort(key=lambda m: (m.params == 0, -m.params, m.name.lower()))
    return lib


def _add(lib: Library, seen: set[str], path: Path, store: str, name: str) -> None:
    try:
        real = str(path.resolve(strict=True))
    except OSError:
        lib.problems.append(f"{path}: a dangling link (its file is gone)")
        return
    if real in seen:          # one file under two names (a link, a second store): listed once
        return
    m = _SPLIT.search(path.name)
    if m and int(m.group(1)) > 1:
        return
    seen.add(real)
    try:
        info = check_gguf(path)
    except SpecScopeError as exc:
        lib.problems.append(str(exc))
        return
    except OSError as exc:
        lib.problems.append(f"{path}: cannot be read ({exc.strerror or exc})")
        return
    from specscope.core.models.mtp import nextn_layers
    arch = info.architecture or ""
    kind = {"eagle3": "eagle3 head", "dflash": "dflash head"}.get(arch, "model")
    lib.models.append(Found(
        str(path), store, name, info.file_size, arch, info.n_params,
        info.file_type or info.main_tensor_type or "", info.context_length,
        info.chat_template is not None or "tokenizer.chat_template" in info.long_strings,
        kind, nextn_layers(info) if kind == "model" else 0, info.name or ""))


def _walk(folder: Path, lib: Library) -> list[tuple[Path, str]]:
    out = []
    for root, dirs, files in os.walk(folder, onerror=lambda e: lib.problems.append(
            f"{e.filename}: cannot be listed ({e.strerror})")):
        dirs.sort()
        for name in sorted(files):
            if name.lower().endswith(".gguf"):
                path = Path(root) / name
                out.append((path, str(path.relative_to(folder))))
    return out


def _ollama(folder: Path, lib: Library) -> list[tuple[Path, str]]:
    """Ollama's manifests: each names the blob holding its model layer."""
    out = []
    manifests = folder / "manifests"
    for path in sorted(p for p in manifests.rglob("*") if p.is_file()) if manifests.is_dir() else ():
        parts = path.relative_to(manifests).parts       # registry, namespace, model, tag
        if len(parts) < 4:
            continue
        namespace, model, tag = parts[-3], parts[-2], parts[-1]
        name = f"{model}:{tag}" if namespace == "library" else f"{namespace}/{model}:{tag}"
        try:
            layers = json.loads(path.read_text(encoding="utf-8"))["layers"]
            digest = next(layer["digest"] for layer in layers
                          if layer.get("mediaType") == OLLAMA_MODEL_LAYER)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, StopIteration):
            lib.problems.append(f"{path}: an Ollama manifest that names no model layer "
                                f"(Ollama {name})")
            continue
        blob = folder / "blobs" / str(digest).replace(":", "-")
        if not blob.is_file():
            lib.problems.append(f"{blob}: Ollama {name}'s model blob is missing")
            continue
        out.append((blob, name))
    return out


def _huggingface(folder: Path, lib: Library) -> list[tuple[Path, str]]:
    """The hub cache, read by huggingface_hub's scanner (corrupted repositories: a line each)."""
    try:
        from huggingface_hub import scan_cache_dir
        info = scan_cache_dir(folder)
    except ImportError:
        lib.problems.append(f"{folder}: the Hugging Face cache needs the huggingface_hub package")
        return []
    except Exception as exc:  # noqa: BLE001 - its CacheNotFound, or anything it raises: one line
        lib.problems.append(f"{folder}: the Hugging Face cache cannot be read ({exc})")
        return []
    lib.problems.extend(f"Hugging Face cache: {w}" for w in info.warnings)
    out = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        for rev in sorted(repo.revisions, key=lambda r: -r.last_modified):
            for f in sorted(rev.files, key=lambda f: f.file_name):
                if f.file_name.lower().endswith(".gguf"):
                    out.append((Path(f.file_path), f"{repo.repo_id}/{f.file_name}"))
    return out


def params_text(n: int) -> str:
    """1.5B, 135M, 0 -> '?'."""
    if n <= 0:
        return "?"
    for unit, div in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= div:
            v = n / div
            return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    return str(n)


def size_text(n: int) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"
