"""A sweep's settings: the prompt sets, the draft lengths and p_min values as written, the
configurations (a chain of llama.cpp's speculative types, a draft model, n, p_min) and the
engines they are grouped in. What a sweep measures and how: docs/sweep.md."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from specscope.core.engine.drafters import DRAFT_MODEL, MODEL_TYPES, parse_types, type_label
from specscope.core.engine.drafters.registry import HEAD_KINDS, LOOKUP, MODEL, SELF, TARGET, alone, names
from specscope.core.engine.engine import SpecSettings
from specscope.core.errors import ConfigError, ModelFileError
from specscope.core.measure.cost.calibrate import TIME_BUDGET_S
from specscope.core.models.chat import render_chat
from specscope.core.models.demo import prompts_dir
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.llama import Model
from specscope.core.models.mtp import require_nextn

DRAFT_SIMPLE = (DRAFT_MODEL,)
MODEL_FILE = names(lambda t: t.source == MODEL)  # the types a draft model drafts for
# the -md files by their GGUF architecture: the types that draft with one, and what it is
HEADS = {arch: (names(lambda t, a=arch: t.head == a), what) for arch, what in HEAD_KINDS.items()}
MTP_TYPES = names(lambda t: t.source == TARGET)   # draft with the target's own MTP blocks
# the types that need a model to draft with (-md, MTP blocks), not the target's own guesses
DRAFTS_WITH_A_MODEL = names(lambda t: t.source not in (LOOKUP, SELF))
FILE_KINDS = ((MODEL_FILE, "a draft model"), *HEADS.values())


# ============================================================================ prompt sets

def default_prompt_file() -> Path:
    return prompts_dir() / "bench_prompts.json"


def load_prompts(path: str | Path | None = None) -> list[tuple[str, str]]:
    """(name, text) pairs from a prompt-set file.

    A bare file name that is not a file here names a shipped set (resources/prompts:
    ``bench_prompts.json``, ``drafter_prompts.json``).

    ``.json``: ``{"prompts": [{"name": ..., "text": ...}, ...]}`` (or a bare list);
    anything else: plain text, prompts separated by lines holding only ``---``
    (named p1, p2, ...)."""
    path = Path(path) if path is not None else default_prompt_file()
    if not path.exists() and len(path.parts) == 1:     # a shipped set by name: drafter_prompts.json
        shipped = prompts_dir() / path
        path = shipped if shipped.exists() else path
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the prompt set ({getattr(exc, 'strerror', None) or exc})")
    prompts: list[tuple[str, str]] = []
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc})")
        items = doc.get("prompts") if isinstance(doc, dict) else doc
        if not isinstance(items, list):
            raise ConfigError(f"{path}: expected a list of prompts under \"prompts\"")
        for i, item in enumerate(items, 1):
            if isinstance(item, str):
                prompts.append((f"p{i}", item))
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                prompts.append((str(item.get("name") or f"p{i}"), item["text"]))
            else:
                raise ConfigError(f"{path}: prompt {i} has no \"text\"")
    else:
        parts, cur = [], []
        for line in raw.splitlines(keepends=True):
            if line.strip() == "---":
                parts.append("".join(cur))
                cur = []
            else:
                cur.append(line)
        parts.append("".join(cur))
        prompts = [(f"p{i}", p) for i, p in enumerate((p for p in parts if p.strip()), 1)]
    prompts = [(name, text) for name, text in prompts if text.strip()]
    if not prompts:
        raise ConfigError(f"{path}: the prompt set is empty")
    return prompts


def parse_n_values(text: str) -> tuple[int, ...]:
    """'1,2,4,8' or '1-8' (or a mix) → sorted unique draft lengths ≥ 1."""
    values: set[int] = set()
    try:
        for part in str(text).split(","):
            part = part.strip()
            if not part:
                continue
            if "-" in part:
                lo, hi = part.split("-", 1)
                if int(lo) > int(hi):
                    raise ConfigError(f"the range {part} of draft lengths runs backwards: "
                                      f"write {int(hi)}-{int(lo)}")
                values.update(range(int(lo), int(hi) + 1))
            else:
                values.add(int(part))
    except ValueError:
        raise ConfigError(f"draft lengths must look like 1,2,4,8 or 1-8, not {text!r}")
    if not values or min(values) < 1:
        raise ConfigError(f"draft lengths must be >= 1, not {text!r}")
    if max(values) > 64:
        raise ConfigError(f"draft lengths above 64 are not supported ({max(values)})")
    return tuple(sorted(values))


def parse_p_values(text: str) -> tuple[float, ...]:
    """'0,0.5,0.75' → sorted unique draft-simple p_min values in [0, 1]."""
    try:
        values = {float(part) for part in str(text).split(",") if part.strip()}
    except ValueError:
        raise ConfigError(f"p_min values must look like 0,0.5,0.75, not {text!r}")
    if not values or min(values) < 0.0 or max(values) > 1.0:
        raise ConfigError(f"p_min values must lie in [0, 1], not {text!r}")
    return tuple(sorted(values))


# ============================================================================ settings

@dataclass(frozen=True)
class SweepSettings:
    target: Path
    drafts: tuple[Path, ...]
    n_values: tuple[int, ...] = (1, 2, 4, 8)
    prompts: tuple[tuple[str, str], ...] = ()
    n_predict: int = 64
    sampler: object = None             # SamplerSettings (default greedy)
    engine: object = None              # EngineSettings (default EngineSettings())
    sync: str = "reuse"
    p_min: float = 0.0
    p_min_values: tuple[float, ...] = ()   # draft-simple's p_min values to sweep (empty: p_min)
    repeats: int = 1
    alpha: float | None = None         # also predict with an assumed per-token acceptance
    lossless: bool = True
    recalibrate: bool = False
    use_cache: bool = True
    calibration_s: float = TIME_BUDGET_S  # time budget of the repeated decode timings
    chains: tuple[tuple[str, ...], ...] = (DRAFT_SIMPLE,)   # --spec-type chains, priority order
    spec: object = None                # SpecSettings: the n-gram types' parameters, n_min
    chat: bool = False                 # render each prompt in the target's chat template
    system: str | None = None          # with chat: a system message
    ignore_eos: bool = False           # never sample end-of-generation tokens (a logit bias
                                       # from the target's vocabulary, read when the sweep runs)

    def draft_types(self) -> dict[Path, tuple[str, ...]]:
        """Each draft file and the types that draft with it (:func:`file_types`)."""
        return {Path(d): file_types(d) for d in self.drafts}

    @property
    def p_mins(self) -> tuple[float, ...]:
        return tuple(self.p_min_values) or (self.p_min,)

    def validate(self) -> None:
        if not self.chains:
            raise ConfigError("a sweep needs at least one speculative type")
        for path in (self.target, *self.drafts):     # a bad file: one line before anything runs
            check_gguf(path)                          # (not after the other drafts were measured)
        for chain in self.chains:
            if parse_types(chain) != tuple(chain):
                raise ConfigError(f"{type_label(chain)}: types must be given in llama.cpp's "
                                  f"priority order: {type_label(parse_types(chain))}")
            models = [t for t in chain if t in MODEL_TYPES]
            if len(models) > 1:
                what = ("the -md model (a draft model, an EAGLE-3 head, a DFlash head)"
                        if not set(MTP_TYPES) & set(models) else
                        "a model of its own (the -md model, the target's MTP blocks)")
                raise ConfigError(f"{type_label(chain)}: {' and '.join(models)} each draft with {what}: "
                                  f"give them as separate chains (--spec-type {' '.join(models)})")
        kinds = self.draft_types()
        uses = {types: [t for t in types if any(t in c for c in self.chains)] for types, _ in FILE_KINDS}
        for types, what in FILE_KINDS:             # a type without its kind of file
            if uses[types] and types not in kinds.values() and types == MODEL_FILE:
                raise ConfigError("draft-simple needs a draft model (-md) that is not a head; the "
                                  "n-gram types (--spec-type ngram-...) draft without one")
            if uses[types] and types not in kinds.values():
                others = [d.name for d in kinds]
                raise ConfigError(f"{' and '.join(uses[types])} needs {what} (-md HEAD.gguf)"
                                  + (f"; {', '.join(others)} {'is' if len(others) == 1 else 'are'} "
                                     "not one" if others else ""))
        for types, what in FILE_KINDS[1:]:         # a head no chain drafts with
            files = [d for d, k in kinds.items() if k == types]
            if files and not uses[types]:
                raise ConfigError(f"{files[0]}: {what} drafts with --spec-type {' or '.join(types)}, "
                                  f"not draft-simple (add {types[0]} to --spec-type)")
        if any(set(MTP_TYPES) & set(c) for c in self.chains):      # the target's own MTP blocks
            require_nextn(check_gguf(self.target), self.target)
        if not self.n_values or min(self.n_values) < 1:
            raise ConfigError("a sweep needs draft lengths >= 1")
        if not self.prompts:
            raise ConfigError("a sweep needs at least one prompt")
        if self.n_predict < 2:
            raise ConfigError(f"n_predict must be >= 2 for a sweep, not {self.n_predict}")
        if self.repeats < 1:
            raise ConfigError(f"repeats must be >= 1, not {self.repeats}")
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"α must be in [0, 1], not {self.alpha}")
        if not all(0.0 <= p <= 1.0 for p in self.p_mins):
            raise ConfigError(f"p_min must be in [0, 1], not {self.p_mins}")


@dataclass(frozen=True)
class Config:
    """One configuration of a sweep: a chain of types, the name of the draft its model drafter
    drafts with (a -md file's, or the target's MTP blocks' :func:`mtp_name`; "" when the chain
    has no model drafter) and its draft length n (0 when it has none); ``vocab``, how
    draft-simple drafts across vocabularies (translate, intersect; "" in the target's own)."""
    draft: str
    types: tuple[str, ...]
    n: int
    p_min: float = 0.0
    vocab: str = ""

    @property
    def drafter(self) -> str:
        return type_label(self.types)

    @property
    def name(self) -> str:
        return config_name(self.draft, self.drafter, self.p_min, vocab=self.vocab)


def config_name(draft: str, drafter: str, p_min: float = 0.0, with_draft: bool = True,
                vocab: str = "") -> str:
    """The one name of a configuration, in the tables, the heatmap, the chart's legend and the
    JSON: the drafter (llama.cpp's type, or a chain) with its draft model's file in brackets
    ("draft-simple (demo-draft.gguf)", "ngram-simple>draft-simple (demo-draft.gguf)",
    "ngram-simple"); a p_min above 0 and a vocabulary mode are part of the name (a sweep over
    p_min compares them as configurations; "draft-simple (foreign.gguf) · translate"). Without
    ``with_draft`` the file is left out (the Compare view, when the sweep has one draft file:
    its list of drafts names it)."""
    name = f"{drafter} ({draft})" if draft and with_draft else drafter
    name = f"{name} · p_min {p_min:g}" if p_min > 0 else name
    return f"{name} · {vocab}" if vocab else name


def vocab_modes(spec, refused: bool) -> tuple[str, ...]:
    """The vocabulary modes a sweep runs draft-simple in with one draft (docs/cross-vocab.md):
    a mode named by hand (--spec-vocab translate|intersect) with any draft; with auto, both
    with a draft llama.cpp refuses (intersect alone under the ratio rule: translate drafts text,
    not a distribution) and none with one it accepts (the target's own vocabulary); none with
    off (the sweep skips a refused draft)."""
    mode = spec.vocab if spec is not None else "auto"
    if mode in ("translate", "intersect"):
        return (mode,)
    if mode == "auto" and refused:
        return ("intersect",) if spec is not None and spec.accept_rule == "ratio" else ("translate", "intersect")
    return ()


# ============================================================================ the engines and runs

def groups(s: SweepSettings) -> list[tuple[Path | None, str, list[Config]]]:
    """(draft path or None, draft name or "", configurations) per engine the sweep opens: one
    per draft file for the chains whose model drafter drafts with it (draft-simple with a draft
    model, a head's types with a head of their kind) (× n × p_min), one for the chains with a
    type drafting with the target's own MTP blocks (named
    :func:`mtp_name`; × n × p_min), one without a draft model for the n-gram-only chains (once
    each: n does not apply to them)."""
    def configs(name: str, chains) -> list[Config]:
        return [Config(name, tuple(c), n, p) for c in chains for p in s.p_mins for n in s.n_values]
    ngram_chains = [c for c in s.chains if not set(c) & set(DRAFTS_WITH_A_MODEL)]
    out: list[tuple[Path | None, str, list[Config]]] = []
    if ngram_chains:
        out.append((None, "", [Config("", tuple(c), 0) for c in ngram_chains]))
    kinds = s.draft_types()
    for path, name in zip(s.drafts, _draft_names(s.drafts)):
        chains = [c for c in s.chains if set(kinds[Path(path)]) & set(c)]
        if chains:
            out.append((Path(path), name, configs(name, chains)))
    mtp_chains = [c for c in s.chains if set(MTP_TYPES) & set(c)]
    if mtp_chains:
        out.append((None, mtp_name(s.target), configs(mtp_name(s.target), mtp_chains)))
    return out


def mtp_name(target: Path) -> str:
    """draft-mtp's "draft" in the tables: the target's own MTP blocks ("mimo.gguf MTP")."""
    return f"{Path(target).name} MTP"


def file_types(path) -> tuple[str, ...]:
    """The types that draft with a draft file, by its GGUF header (``HEADS``): a head's types
    with a head of their kind, draft-simple with any other model (or a file that cannot be read: loading it says why, in one line)."""
    try:
        arch = check_gguf(path).architecture
    except ModelFileError:
        arch = None
    return HEADS.get(arch, (MODEL_FILE, ""))[0]


def spec_for(s: SweepSettings, config: Config):
    """The SpecSettings of one configuration: the template's n-gram parameters and n_min
    (capped at n), the configuration's types, n and vocabulary mode."""
    base = s.spec if s.spec is not None else SpecSettings()
    n = config.n or base.n_max
    return replace(base, types=config.types, n_max=n, n_min=min(base.n_min, n),
                   p_min=config.p_min if set(config.types) & set(MODEL_TYPES) else s.p_min,
                   sync=s.sync, vocab=config.vocab or base.vocab)


def longest_draft(s: SweepSettings, config: Config) -> int:
    """The longest draft a configuration can verify in these runs (the draft model's n, an
    n-gram type's size, at most n_predict − 1: the round's budget)."""
    own = alone(config.types)
    if own is not None and own.batch is not None:       # a tree's nodes, a window's guesses
        return own.batch(spec_for(s, config), s.engine.n_seq if s.engine is not None else 1)
    if len(config.types) == 1 and config.types[0] in MODEL_TYPES:
        return config.n
    return max(1, min(spec_for(s, config).max_draft(), s.n_predict - 1))


def sweep_steps(s: SweepSettings) -> int:
    """Progress steps: one calibration per engine, one per baseline and speculative run."""
    return sum(1 + len(s.prompts) * s.repeats * (2 + len(configs)) for _, _, configs in groups(s))


def model_prompts(s: SweepSettings, engine) -> list[tuple[str, str]]:
    """The prompts as the target is given them: with ``chat``, each as a user message in the
    target's own template (core/models/chat.py; ChatTemplateError names the file)."""
    if not s.chat:
        return list(s.prompts)
    return [(name, render_chat(engine.target, text, s.system)) for name, text in s.prompts]


def eog_bias(target: str | Path) -> tuple[tuple[int, float], ...]:
    """A logit bias of −inf on every end-of-generation token of ``target``'s vocabulary (reads
    the vocabulary only)."""
    with Model(Path(target), vocab_only=True) as model:
        return tuple((t, -math.inf) for t in range(model.n_vocab) if model.is_eog(t))


def typical_position(engine, s: SweepSettings) -> int:
    """Where a typical round of the sweep sits: the mean prompt length plus half the
    generation, rounded to 16 (attention makes a decode's cost depend on its position)."""
    lengths = [len(engine.tokenize(text)) for _, text in model_prompts(s, engine)]
    mid = sum(lengths) / len(lengths) + s.n_predict / 2
    return max(16, int(round(mid / 16.0)) * 16)


def _draft_names(paths: Sequence[Path]) -> list[str]:
    """File names, made unique with their folder where two share a name."""
    names = [Path(p).name for p in paths]
    out = []
    for p, n in zip(paths, names):
        out.append(n if names.count(n) == 1 else f"{Path(p).parent.name}/{n}")
    seen: dict[str, int] = {}
    for i, n in enumerate(out):
        if n in seen:
            seen[n] += 1
            out[i] = f"{n}#{seen[n]}"
        else:
            seen[n] = 1
    return out
