"""A run's settings: what drafts and how (SpecSettings: llama.cpp's speculative flags, the
table in core/engine/spec_flags.py), and how the engine opens its models (EngineSettings)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from specscope.core.engine.accept_rules import ACCEPT_RULES
from specscope.core.engine.draft_policy import check_policy
from specscope.core.engine.drafters import DRAFT_MODEL, MD_TYPES, parse_types, type_label
from specscope.core.engine.drafters.model import SYNC_MODES
from specscope.core.engine.drafters.registry import TYPES
from specscope.core.engine.drafters.xvocab import VOCAB_MODES
from specscope.core.engine.synth import conditional_probs, is_synthetic, resolve_rates
from specscope.core.errors import ConfigError
from specscope.core.models.llama import ContextSettings
from specscope.core.plain import PlainError, from_plain, to_plain

# where an earlier SpecSettings kept a type's own parameters (session files and the window's
# saved knobs still read them): a field per type, named as the type with underscores, and
# draft-simple's neighbours that belong to one type alone
EARLIER_FIELDS = {n.replace("-", "_"): n for n, t in TYPES.items() if t.params_class is not None}
EARLIER_SINGLE = ("p_split",)


def _owner(field: str) -> str:
    """The type whose own parameters hold ``field`` (one of EARLIER_SINGLE)."""
    return next(n for n, t in TYPES.items()
                if t.params_class and field in t.params_class.__dataclass_fields__)


_DEFAULTS: dict = {}


def _default(name: str):
    """``name``'s default parameters (its PARAMS()); KeyError: no type of that name has any."""
    if name not in _DEFAULTS:
        if name not in TYPES or TYPES[name].params_class is None:
            raise KeyError(f"{name!r} is no speculative type with parameters of its own")
        _DEFAULTS[name] = TYPES[name].params_class()
    return _DEFAULTS[name]


class TypeParams:
    """Each type's own parameters (its drafter module's ``PARAMS``: registry.SpecType.params_class)
    by type name: those given, the type's defaults for the rest. A value, compared and hashed by
    what differs from the defaults."""
    __slots__ = ("_given",)

    def __init__(self, given=()):
        given = dict(given)
        for name, p in given.items():
            if type(p) is not type(_default(name)):
                raise ConfigError(f"{name}'s parameters are a {type(_default(name)).__name__}, "
                                  f"not a {type(p).__name__}")
        self._given = {n: given[n] for n in sorted(given) if given[n] != _default(n)}

    def __getitem__(self, name: str):
        p = self._given.get(name)
        return _default(name) if p is None else p

    def given(self) -> dict:
        """The parameters that differ from their types' defaults."""
        return dict(self._given)

    def with_(self, given: dict) -> "TypeParams":
        return TypeParams({**self._given, **given})

    def __eq__(self, other) -> bool:
        return isinstance(other, TypeParams) and self._given == other._given

    def __hash__(self) -> int:
        return hash(tuple(self._given.items()))

    def __repr__(self) -> str:
        return f"TypeParams({self._given!r})"

    def to_plain(self) -> dict:
        """Every type's parameters, defaults included (a session file says what ran)."""
        return {n: to_plain(self[n]) for n, t in TYPES.items() if t.params_class is not None}

    @classmethod
    def from_plain(cls, d, what: str = "own") -> "TypeParams":
        if not isinstance(d, dict):
            raise PlainError(f"{what} is not a JSON object")
        unknown = [n for n in d if n not in TYPES or TYPES[n].params_class is None]
        if unknown:
            raise PlainError(f"{what} has an unknown type {unknown[0]!r}")
        return cls({n: from_plain(TYPES[n].params_class, v, f"{what}.{n}") for n, v in d.items()})


def earlier_field(path: str) -> str:
    """A flag's field as an earlier version spelled it ("ngram_mod.n_match", "p_split") in
    today's form ("ngram-mod.n_match", p_split under its type's name): the window's saved knobs."""
    if path in EARLIER_SINGLE:
        return f"{_owner(path)}.{path}"
    name, dot, rest = path.partition(".")
    return f"{EARLIER_FIELDS.get(name, name) if dot else name}{dot}{rest}"


def earlier_spec(d: dict) -> dict:
    """A SpecSettings' plain form as an earlier version wrote it (each type's parameters a field
    of their own, EARLIER_FIELDS and EARLIER_SINGLE) in today's form."""
    if not isinstance(d, dict) or "own" in d:
        return d
    d = dict(d)
    own = {t: d.pop(k) for k, t in EARLIER_FIELDS.items() if k in d}
    for k in EARLIER_SINGLE:
        if k in d:
            own.setdefault(_owner(k), {})[k] = d.pop(k)
    return {**d, "own": own} if own else d


def spec_from_plain(d, what: str) -> "SpecSettings":
    """The SpecSettings a file holds (a session's, an advice's), in today's form or an earlier
    one (``earlier_spec``); ``plain.PlainError`` names what does not fit."""
    return from_plain(SpecSettings, earlier_spec(d), what)


@dataclass(frozen=True)
class SpecSettings:
    """What drafts, and how. ``types`` are llama.cpp's ``--spec-type`` names (drafters.TYPES),
    run in llama.cpp's priority order whatever order they are given in; n_max, n_min, p_min
    and sync belong to draft-simple (the draft model; draft-eagle3 and draft-mtp read n_max,
    n_min and p_min too); a type's own parameters are in ``own``, by its name."""
    n_max: int = 3            # --spec-draft-n-max (llama.cpp's default 3)
    n_min: int = 0            # --spec-draft-n-min: shorter drafts are dropped
    p_min: float = 0.0        # --spec-draft-p-min: stop when the argmax holds less of the top-10 mass
    sync: str = "reuse"       # reuse | replay, see the module docs
    accept_rule: str = "match"  # match (llama.cpp) | ratio (speculative sampling): accept_rules
    types: tuple[str, ...] = ("draft-simple",)
    synth_len: float = -1.0   # --spec-synth-len: benchmark-only synthetic acceptance (core/engine/synth.py)
    synth_rates: tuple[float, ...] = ()   # --spec-synth-rates: its unconditional rates per position
    draft_policy: str = "fixed"  # draft-simple's draft length per round: fixed | hf | cost (draft_policy)
    vocab: str = "auto"       # --spec-vocab: auto | translate | intersect | off (drafters/xvocab.py)
    own: TypeParams = TypeParams()   # each type's own parameters by name (params(name); or a dict)

    def __post_init__(self):
        if not isinstance(self.own, TypeParams):
            object.__setattr__(self, "own", TypeParams(self.own))

    def validate(self) -> None:
        if parse_types(self.types) != tuple(self.types):
            raise ConfigError(f"speculative types must be given in llama.cpp's priority order: "
                              f"{', '.join(parse_types(self.types))}")
        if self.n_max < 0 or self.n_min < 0:
            raise ConfigError("draft lengths must be >= 0")
        if self.n_min > self.n_max:
            raise ConfigError(f"n_min ({self.n_min}) must not exceed n_max ({self.n_max})")
        if not 0.0 <= self.p_min <= 1.0:
            raise ConfigError(f"p_min must be in [0, 1], not {self.p_min}")
        check_policy(self.draft_policy)
        if self.vocab not in VOCAB_MODES:
            raise ConfigError(f"--spec-vocab must be one of {', '.join(VOCAB_MODES)}, not {self.vocab!r}")
        if self.sync not in SYNC_MODES:
            raise ConfigError(f"sync mode must be one of {', '.join(SYNC_MODES)}, not {self.sync!r}")
        if self.accept_rule not in ACCEPT_RULES:
            raise ConfigError(f"the acceptance rule must be one of {', '.join(ACCEPT_RULES)}, "
                              f"not {self.accept_rule!r}")
        for type_name, params in self.own.given().items():
            params.validate(type_name)
        self.synth_probs()
        for t in self.types:
            if TYPES[t].program and len(self.types) > 1:
                raise ConfigError(f"{t} is {TYPES[t].program}'s own loop: it drafts alone, "
                                  "not chained with other --spec-type values")
        if self.synthetic and self.accept_rule != "match":
            raise ConfigError("synthetic acceptance replaces the acceptance rule: "
                              "it cannot be combined with --accept-rule ratio")

    @property
    def uses_draft_model(self) -> bool:
        return DRAFT_MODEL in self.types

    @property
    def needs_draft(self) -> bool:
        """A type that drafts with the -md model: draft-simple or draft-eagle3 (its head);
        draft-mtp drafts with the target's own MTP blocks."""
        return any(t in MD_TYPES for t in self.types)

    @property
    def head_kind(self) -> str:
        """The head kind (registry.HEAD_KINDS) the -md model must be for these types; "": none."""
        return next((TYPES[t].head for t in self.types if TYPES[t].head), "")

    @property
    def synthetic(self) -> bool:
        """Benchmark-only synthetic acceptance: the text is not valid output (core/engine/synth.py)."""
        return is_synthetic(self.synth_len, self.synth_rates)

    def synth_rates_resolved(self) -> tuple[float, ...]:
        """llama.cpp's unconditional synthetic rates for the longest possible draft (empty: off)."""
        return resolve_rates(self.synth_len, self.synth_rates, self.max_draft())

    def synth_probs(self) -> tuple[float, ...]:
        """The conditional acceptance probability of each draft position (empty: off)."""
        return conditional_probs(self.synth_rates_resolved())

    @property
    def label(self) -> str:
        """The chain's name in tables: its types joined by '>' (drafters.type_label)."""
        return type_label(self.types)

    def params(self, type_name: str):
        """A type's own parameters (``ngram-map-k``'s NgramMapParams: SpecType.params_class)."""
        return self.own[type_name]

    def own_params(self) -> dict:
        """The enabled types' own parameters, for JSON output."""
        return {t: asdict(self.own[t]) for t in self.types if TYPES[t].params_class is not None}

    def sequences(self) -> int:
        """The sequences a context needs for these types beside -np (registry.SpecType.seqs)."""
        return max((TYPES[t].sequences(self) for t in self.types), default=1)

    def max_draft(self) -> int:
        """The longest draft the enabled types can propose (``common_speculative_n_max``)."""
        return max((TYPES[t].length(self) for t in self.types), default=0)


@dataclass(frozen=True)
class EngineSettings:
    n_ctx: int = 2048                      # both contexts get the same n_ctx
    n_batch: int = 512
    flash_attn: str = "auto"               # auto | on | off
    kv_type: str = "f16"                   # f16 | f32
    target_threads: int = 0                # 0: auto, the count fastest under the load now
    draft_threads: int = 0
    target_gpu_layers: int = 0
    draft_gpu_layers: int = 0
    repack: str = "auto"                   # auto | on | off: llama.cpp's weight repacking (--repack)
    # placement (core/models/devices.py): rpc-server endpoints to register (--rpc), and the devices
    # each model's offloaded layers may use (--device/-devd; None: llama.cpp's default, every
    # GPU and RPC device; (): none); *_gpu_layers < 0 offloads every layer (-ngl all)
    rpc: tuple[str, ...] = ()
    target_devices: tuple[str, ...] | None = None
    draft_devices: tuple[str, ...] | None = None
    n_seq: int = 1                         # -np: sequences per context (a tree's branches)

    def __post_init__(self):
        if self.n_seq < 1:
            raise ConfigError(f"-np must be at least 1, not {self.n_seq}")

    @classmethod
    def deterministic(cls, **kw) -> "EngineSettings":
        """F32 KV cache and no flash attention: batched and single-token decodes agree as far as
        llama.cpp's kernels allow (``compare.DETERMINISTIC_GUARANTEE`` says how far)."""
        return cls(flash_attn="off", kv_type="f32", **kw)

    def context(self, threads: int) -> ContextSettings:
        return ContextSettings(n_ctx=self.n_ctx, n_batch=self.n_batch, n_threads=threads,
                               flash_attn=self.flash_attn, kv_type=self.kv_type, n_seq=self.n_seq)


__all__ = ["SpecSettings", "EngineSettings"]
