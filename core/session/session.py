"""A session: what one run is, Qt-free, and its file (record once, replay anywhere).

A ``Session`` owns the run's settings (``RunSettings``: models, engine, drafters with their
parameters, sampler, n_predict, prompt, chat/system), the identities of its models, the
prompt text and tokens, the token pieces of every token the run used (``TokenTable``: the
text can be rebuilt without the model), the ordered round events of the speculative run
and of its matching baseline (``RunRecord``, each with its incremental stats fold), and the
measured speed-up. A live run appends events to it (the window's worker, the CLI); a
replay loads it from a file; the views read it. ``Workbench`` keeps the baselines of one
window or process by run key and pairs each speculative session with its baseline.

The session file (JSON Lines, UTF-8, one JSON value per line)
--------------------------------------------------------------
Line 1, the header, an object:

    format    "specscope-session"
    version   4 (a reader refuses a newer version; reads version 1, whose rounds kept their
              shape under "tree" or "lookahead", versions 1 and 2, whose rounds kept their
              detail as fields of their own: events.V2_DETAILS, and versions 1 to 3, whose
              spec kept each type's parameters as a field of their own: settings.earlier_spec)
    settings  {"target": path, "draft": path | null, "engine": EngineSettings,
               "spec": SpecSettings | null (types, n_max, n_min, p_min, sync, "own": every
               type's own parameters by type name, synth_len and synth_rates: synthetic
               acceptance, absent in older files), "sampler": SamplerSettings (logit_bias as
               [token, bias] pairs; a bias of -inf is written -Infinity, as Python's json
               does), "n_predict": int, "prompt": str, "chat": bool, "system": str | null}
    models    {"target": identity, "draft": identity | null}; an identity is
               {"path", "name", "architecture", "file_size", "n_params",
                "header_sha256"}: the SHA-256 of the GGUF header (bytes 0 up to where the
               tensor data starts: metadata and tensor infos, not the weights)
    prompt    {"text": what the target was given (with chat: the rendered template),
               "tokens": [int, ...]}
    tokens    [[id, piece, vocabulary text, is_eog], ...] for every token the file uses;
               piece and vocabulary text are strings when their bytes are UTF-8, else
               {"hex": "e4b8"} (a character can be split over tokens)
    runs      {"spec" | "baseline": {"rounds": int, "finish": str, "prefill_s": float,
               "started_at": float, "ended_at": float, "load": LoadReading | null}}:
               the runs recorded and how many round lines each has; when each ran (Unix
               time) and what other processes took of the CPU meanwhile (core/measure/cpuload.py:
               {"others", "cores", "seconds", "loadavg"}): the baseline's age and load beside
               the speed-up (core/session/baseline_check.py). The last three are optional (absent in
               older files and for runs not timed live); readers of version 1 ignored them

Then one line per round event, the runs one after the other in the order of ``runs``:
``{"run": "spec" | "baseline", "event": RoundEvent}`` with every field of
``core.events.RoundEvent`` (``t_overhead``, derived, may be present and is ignored).
Floats are written with ``repr``, so a replay folds to exactly the recorded statistics.

Reading is strict: a truncated, corrupted (bad JSON, a missing or unknown field, a wrong
type), newer-version or foreign file raises ``SessionFileError``, one line naming the file
and the line; nothing the caller holds is touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from specscope.core.engine.engine import EngineSettings
from specscope.core.engine.settings import spec_from_plain
from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.engine.synth import WARNING
from specscope.core.errors import SessionFileError, SpecScopeError
from specscope.core.measure.cpuload import LoadMeter, LoadReading
from specscope.core.measure.stats import Stats, fold, speedup_of
from specscope.core.models.devices import placement
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.tokentext import TokenTable, text_of
from specscope.core.plain import PlainError, from_plain, to_plain
from specscope.core.session.baseline_check import check_baseline

FORMAT = "specscope-session"
VERSION = 4             # 4: spec.own; 3: a drafter's additions are a round's "detail"; 2: its "shape"
RUN_KINDS = ("spec", "baseline")


# ----------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class RunSettings:
    """Everything a generation was asked for. Runs whose ``key`` is equal are comparable."""
    target: str
    draft: str | None
    engine: object            # EngineSettings
    spec: object | None       # SpecSettings (None: the target alone)
    sampler: object           # SamplerSettings
    n_predict: int
    prompt: str
    chat: bool = False
    system: str | None = None
    # a conversation's later turn: the turns before it, (user message, reply) texts; ``prompt``
    # is then this turn's message (core/session/conversation.py)
    history: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> tuple:
        """A speculative run and a baseline with equal keys are measured against each other."""
        return (str(self.target), self.prompt, self.chat, self.system or "", self.sampler,
                self.n_predict, self.engine, self.history)

    def to_plain(self) -> dict:
        d = {"target": str(self.target), "draft": str(self.draft) if self.draft else None,
             "engine": to_plain(self.engine), "spec": to_plain(self.spec),
             "sampler": to_plain(self.sampler), "n_predict": self.n_predict,
             "prompt": self.prompt, "chat": self.chat, "system": self.system}
        if self.history:                   # (absent for a first turn: older readers take it)
            d["history"] = [list(turn) for turn in self.history]
        return d

    @classmethod
    def from_plain(cls, d: dict) -> "RunSettings":

        if not isinstance(d, dict):
            raise PlainError("settings is not a JSON object")
        fields = ("target", "draft", "engine", "spec", "sampler", "n_predict", "prompt", "chat", "system")
        unknown = sorted(set(d) - set(fields) - {"history"})
        missing = [f for f in fields if f not in d]
        if unknown or missing:
            raise PlainError(f"settings has an unknown field {unknown[0]!r}" if unknown
                             else f"settings lacks the field {missing[0]!r}")
        checks = (("target", str), ("draft", (str, type(None))), ("n_predict", int),
                  ("prompt", str), ("chat", bool), ("system", (str, type(None))))
        for name, tp in checks:
            if not isinstance(d[name], tp) or (tp is int and isinstance(d[name], bool)):
                raise PlainError(f"settings.{name} has the wrong type ({type(d[name]).__name__})")
        history = d.get("history", [])
        if not (isinstance(history, list) and all(
                isinstance(t, list) and len(t) == 2 and all(isinstance(x, str) for x in t)
                for t in history)):
            raise PlainError("settings.history is not a list of [message, reply] pairs")
        try:
            # fields added since a file was written (synthetic acceptance, placement ...) take
            # their defaults (plain.from_plain)
            spec = None if d["spec"] is None else spec_from_plain(d["spec"], "settings.spec")
            return cls(d["target"], d["draft"], from_plain(EngineSettings, d["engine"], "settings.engine"),
                       spec, from_plain(SamplerSettings, d["sampler"], "settings.sampler"),
                       d["n_predict"], d["prompt"], d["chat"], d["system"],
                       tuple(tuple(t) for t in history))
        except TypeError as exc:      # a dataclass refused its values
            raise PlainError(f"settings: {exc}") from None

    def describe(self) -> dict:
        """The settings as the CLI's --json and the window's export write them."""
        d = {"n_ctx": self.engine.n_ctx, "n_predict": self.n_predict,
             "sampler": self.sampler.describe()}
        if self.history:
            d["turn"] = len(self.history) + 1
        if self.spec is not None:
            d.update(spec_type=list(self.spec.types), n_max=self.spec.n_max, n_min=self.spec.n_min,
                     p_min=self.spec.p_min, sync=self.spec.sync, params=self.spec.own_params(),
                     draft_policy=self.spec.draft_policy)
            if self.spec.synthetic:
                d.update(synthetic_rates=list(self.spec.synth_rates_resolved()), warning=WARNING)
        e = self.engine
        if e.rpc or e.target_devices is not None or e.draft_devices is not None:
            d["placement"] = {"rpc": list(e.rpc),
                              "target": placement(e.target_devices, e.target_gpu_layers, e.rpc),
                              "draft": placement(e.draft_devices, e.draft_gpu_layers, e.rpc)}
        return d


# ----------------------------------------------------------------------------- models
@dataclass(frozen=True)
class ModelIdentity:
    path: str
    name: str
    architecture: str
    file_size: int
    n_params: int
    header_sha256: str

    @classmethod
    def of(cls, path: str | Path) -> "ModelIdentity":
        """Read ``path``'s GGUF header (ModelFileError when it is not a usable GGUF file);
        remembered while the file keeps its size and modification time."""
        try:
            st = os.stat(path)
            stamp = (str(path), st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        if stamp is not None and stamp in _IDENTITIES:
            return _IDENTITIES[stamp]
        info = check_gguf(path)
        ident = cls(str(path), info.name or Path(path).stem, info.architecture or "",
                    info.file_size, info.n_params, header_sha256(path, info.data_offset or info.file_size))
        if stamp is not None:
            _IDENTITIES[stamp] = ident
        return ident

    def present(self, path: str | Path | None = None) -> bool:
        """Is this model at ``path`` (default: where it was recorded), same header?"""
        p = Path(path or self.path)
        try:
            return p.is_file() and p.stat().st_size == self.file_size and \
                ModelIdentity.of(p).header_sha256 == self.header_sha256
        except (SpecScopeError, OSError):
            return False


_IDENTITIES: dict[tuple, "ModelIdentity"] = {}     # (path, size, mtime_ns) -> identity


def header_sha256(path: str | Path, n_bytes: int) -> str:
    """SHA-256 of the first ``n_bytes`` of ``path`` (a GGUF file's metadata and tensor infos)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        left = n_bytes
        while left > 0:
            chunk = fh.read(min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------- runs
class RunRecord:
    """The ordered round events of one generation and their stats fold (folded lazily,
    incrementally: reading ``stats`` folds only the events appended since)."""

    def __init__(self, kind: str, prefill_s: float = 0.0):
        assert kind in RUN_KINDS, kind
        self.kind = kind
        self.prefill_s = prefill_s
        self.reused = 0                         # prompt tokens the caches held from the turn before
        self.events: list[RoundEvent] = []
        self.finish = ""              # eog | n_predict | context | stopped ("" while running)
        self._stats = Stats()
        self._prefix = Stats()                  # stats_upto's last prefix
        self.started_at: float | None = None    # Unix time at its start and end (timed live)
        self.ended_at: float | None = None
        self.load = None                        # cpuload.LoadReading: others' CPU use meanwhile
        self._meter = None

    def begin(self) -> None:
        """A live run starts: note the time and read other processes' CPU use until ``end``."""
        self.started_at, self._meter = time.time(), LoadMeter()

    def end(self, finish: str) -> None:
        """The run ended with ``finish``: note when, and the load it ran under."""
        self.finish, self.ended_at = finish, time.time()
        if self._meter is not None:
            self.load, self._meter = self._meter.reading(), None

    def append(self, events: Iterable[RoundEvent]) -> None:
        self.events.extend(events)

    @property
    def stats(self) -> Stats:
        if self._stats.n_rounds < len(self.events):
            self._stats = fold(self.events[self._stats.n_rounds:], self._stats)
        return self._stats

    def stats_upto(self, k: int) -> Stats:
        """The stats of the first ``k`` rounds (all of them: ``stats``): a view that shows the
        run up to a round. Folded on from the last prefix asked for when ``k`` moved forward."""
        if k >= len(self.events):
            return self.stats
        start = self._prefix if self._prefix.n_rounds <= k else Stats()
        self._prefix = fold(self.events[start.n_rounds:k], start)
        return self._prefix

    @property
    def tokens(self) -> list[int]:
        """The generated tokens (each round's emitted tokens, in order)."""
        return [t for ev in self.events for t in ev.emitted]


@dataclass
class Session:
    """One run (speculative or baseline) with its settings, models, tokens and, for a
    speculative run, the baseline measured with the same key. See the module docs."""
    settings: RunSettings
    prompt_text: str = ""                     # what the target was given
    prompt_tokens: tuple[int, ...] = ()
    models: dict = field(default_factory=dict)    # "target" | "draft" -> ModelIdentity
    vocab: object = None                      # a TokenTable (the model's, live), or a model
    spec: RunRecord | None = None
    baseline: RunRecord | None = None
    path: str = ""                            # the file it was loaded from ("" when live)
    # a conversation's later turn: the sessions of the turns before, (message, Session) pairs
    # (in memory only: the file keeps their texts, settings.history)
    turns: tuple = ()

    @classmethod
    def start(cls, settings: RunSettings, kind: str, prompt_text: str = "",
              prompt_tokens=(), vocab=None, prefill_s: float = 0.0) -> "Session":
        s = cls(settings, prompt_text, tuple(prompt_tokens), vocab=vocab)
        setattr(s, kind, RunRecord(kind, prefill_s))
        s.run.begin()
        return s

    # -- what it is ------------------------------------------------------------
    @property
    def kind(self) -> str:
        return "spec" if self.spec is not None else "baseline"

    @property
    def run(self) -> RunRecord:
        """The run the session is about: the speculative one, else the baseline."""
        return self.spec if self.spec is not None else self.baseline

    @property
    def key(self) -> tuple:
        return self.settings.key

    @property
    def is_recording(self) -> bool:
        return bool(self.path)

    def baseline_check(self, baseline: RunRecord | None = None):
        """How the baseline (``baseline``, else this session's) stands to the speculative run:
        its age and load, and whether it is stale (core/session/baseline_check.py); None without both."""
        return check_baseline(self.spec, baseline or self.baseline)

    @property
    def speedup(self) -> float | None:
        """Measured: the speculative run's tokens/s over the baseline's (None without both)."""
        if self.spec is None or self.baseline is None:
            return None
        return speedup_of(self.spec.stats.tokens_per_s, self.baseline.stats.tokens_per_s)

    def freeze_tokens(self) -> None:
        """Keep only the pieces of the tokens the session uses (a TokenTable): the live
        model or vocabulary copy is no longer needed to show or save it."""
        if self.vocab is not None:
            self.vocab = TokenTable.collect(self.vocab, self.token_ids())

    def takes_baseline(self, other: "Session") -> bool:
        """``other`` is a baseline for this finished speculative run (the same key): measured
        beside it (a window keeps showing this run), it becomes this run's baseline."""
        return self.kind == "spec" and bool(self.run.finish) and other.kind == "baseline" \
            and other.key == self.key

    def attach_baseline(self, other: "Session") -> None:
        """Measure against ``other``'s baseline run (same key), with its token pieces."""
        self.baseline = other.baseline
        if isinstance(self.vocab, TokenTable) and isinstance(other.vocab, TokenTable) \
                and other.vocab is not self.vocab:
            self.vocab = TokenTable({**other.vocab.entries, **self.vocab.entries})

    def token_ids(self) -> set[int]:
        ids = set(self.prompt_tokens)
        for _, before in self.turns:       # the earlier turns' replies are shown with this one
            ids |= before.token_ids()
        for run in (self.spec, self.baseline):
            for ev in (run.events if run else ()):
                ids.add(ev.seed)
                ids.update(ev.drafted, ev.emitted, ev.replayed)
        return ids

    def text(self, run: RunRecord | None = None) -> str:
        """The generated text (end-of-generation tokens left out), from the token pieces."""
        return text_of(self.vocab, (run or self.run).tokens)

    def document(self) -> dict:
        """The run as one JSON document (``specscope run --json``, ``replay --json``, the
        window's stats export)."""
        s, run = self.settings, self.run
        draft = s.draft if self.kind == "spec" else None
        prompt_tokens = list(self.prompt_tokens)
        doc = {"command": "run" if self.kind == "spec" else "baseline",
               "target": str(s.target), "draft": str(draft) if draft else None,
               "settings": s.describe(),
               "prompt": s.prompt, "chat": s.chat, "system": s.system,
               "chat_prompt": self.prompt_text if s.chat else None,
               "prompt_tokens": prompt_tokens, "prefill_s": run.prefill_s,
               "text": self.text(), "tokens": run.tokens, "finish": run.finish,
               "rounds": [e.to_dict() for e in run.events],
               "stats": run.stats.to_dict()}
        if self.kind == "spec" and self.baseline is not None:
            doc["baseline_stats"] = self.baseline.stats.to_dict()
            doc["speedup"] = self.speedup
        return doc

    def stats_document(self) -> dict:
        """The window's statistics export: the run's settings, its stats and rounds, and
        with a baseline the baseline's stats and the measured speed-up."""
        s, run = self.settings, self.run
        draft = s.draft if self.kind == "spec" else None
        doc = {"run": {"kind": self.kind, "target": str(s.target),
                       "draft": str(draft) if draft else None, "prompt": s.prompt,
                       "chat": s.chat, "system": s.system, **s.describe()},
               "stats": run.stats.to_dict(), "rounds": [e.to_dict() for e in run.events]}
        if self.kind == "spec" and self.baseline is not None:
            doc["baseline_stats"] = self.baseline.stats.to_dict()
            doc["speedup"] = self.speedup
        return doc

    # -- the file --------------------------------------------------------------
    def identify_models(self) -> None:
        """Read the models' identities (header hash) unless already known: the target, and
        the draft when a speculative run drafted with it."""
        spec = self.settings.spec
        draft = self.settings.draft if self.kind == "spec" and spec.needs_draft else None
        for role, path in (("target", self.settings.target), ("draft", draft)):
            if path and role not in self.models:
                self.models[role] = ModelIdentity.of(path)

    def models_present(self) -> dict[str, bool]:
        """For each recorded model: is it at its recorded path again, with the same header?"""
        return {role: m.present() for role, m in self.models.items()}

    def lines(self) -> list[str]:
        """The session file's lines (see the module docs)."""
        self.identify_models()
        if self.vocab is None:
            raise SpecScopeError("the session has no token pieces to save")
        tokens = TokenTable.collect(self.vocab, self.token_ids())
        runs = [r for r in (self.spec, self.baseline) if r is not None]
        header = {"format": FORMAT, "version": VERSION, "settings": self.settings.to_plain(),
                  "models": {role: to_plain(self.models.get(role)) for role in ("target", "draft")},
                  "prompt": {"text": self.prompt_text, "tokens": list(self.prompt_tokens)},
                  "tokens": tokens.to_plain(),
                  "runs": {r.kind: _run_header(r) for r in runs}}
        out = [json.dumps(header, ensure_ascii=False)]
        for r in runs:
            out += [json.dumps({"run": r.kind, "event": e.to_dict(exact=True)}, ensure_ascii=False)
                    for e in r.events]
        return out

    def save(self, path: str | Path) -> Path:
        """Write the session file atomically (a partial file never replaces a good one)."""
        path = Path(path)
        text = "\n".join(self.lines()) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".part", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Session":
        return _load(Path(path))


def _run_header(run: RunRecord) -> dict:
    info = {"rounds": len(run.events), "finish": run.finish, "prefill_s": run.prefill_s}
    if run.started_at is not None and run.ended_at is not None:
        info.update(started_at=run.started_at, ended_at=run.ended_at,
                    load=run.load.to_dict() if run.load is not None else None)
    return info


def _timing_in(run: RunRecord, info: dict) -> None:
    """A run header's optional timing (started_at, ended_at, load) onto ``run``."""
    times = [info.get(k) for k in ("started_at", "ended_at")]
    if times == [None, None]:
        return
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in times):
        raise PlainError(f"runs.{run.kind}: started_at and ended_at must be numbers")
    run.started_at, run.ended_at = map(float, times)
    if info.get("load") is not None:
        try:
            run.load = LoadReading.from_dict(info["load"])
        except (KeyError, TypeError, ValueError, AttributeError):
            raise PlainError(f"runs.{run.kind}.load is malformed") from None


def _header(head: dict):
    """The header's parts, checked: (settings, models, prompt, token table, runs as the header
    lists them, a RunRecord per run); ``PlainError`` names what is wrong."""
    for key in ("settings", "models", "prompt", "tokens", "runs"):
        if key not in head:
            raise PlainError(f"the header lacks {key!r}")
    settings = RunSettings.from_plain(head["settings"])
    models = head["models"]
    if not isinstance(models, dict) or set(models) != {"target", "draft"}:
        raise PlainError("models must name \"target\" and \"draft\"")
    models = {role: from_plain(ModelIdentity, m, f"models.{role}")
              for role, m in models.items() if m is not None}
    if "target" not in models:
        raise PlainError("models.target is missing")
    prompt = head["prompt"]
    if not (isinstance(prompt, dict) and isinstance(prompt.get("text"), str)
            and isinstance(prompt.get("tokens"), list)
            and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt["tokens"])):
        raise PlainError("prompt must be {\"text\": str, \"tokens\": [int, ...]}")
    tokens = TokenTable.from_plain(head["tokens"])
    runs_info = head["runs"]
    if not isinstance(runs_info, dict) or not runs_info or set(runs_info) - set(RUN_KINDS):
        raise PlainError(f"runs must name one or both of {', '.join(RUN_KINDS)}")
    runs = {}
    for kind, info in runs_info.items():
        if not (isinstance(info, dict) and isinstance(info.get("rounds"), int)
                and isinstance(info.get("finish"), str)
                and isinstance(info.get("prefill_s"), (int, float))):
            raise PlainError(f"runs.{kind} must be {{\"rounds\": int, \"finish\": str, "
                             "\"prefill_s\": float}")
        runs[kind] = RunRecord(kind, float(info["prefill_s"]))
        runs[kind].finish = info["finish"]
        _timing_in(runs[kind], info)
    if "spec" in runs and settings.spec is None:
        raise PlainError("a speculative run is recorded but settings.spec is null")
    return settings, models, prompt, tokens, runs_info, runs


def _load(path: Path) -> Session:

    def bad(line: int, problem: str):
        return SessionFileError(path, line, problem)

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionFileError(path, 0, f"cannot be read ({exc.strerror or exc})") from None
    if not raw:
        raise bad(1, "the file is empty, not a SpecScope session")
    lines = raw.split(b"\n")
    ends_with_newline = lines[-1] == b""
    if ends_with_newline:
        lines.pop()

    def parse(n: int) -> object:
        try:
            return json.loads(lines[n - 1].decode("utf-8"))
        except UnicodeDecodeError:
            raise bad(n, "not UTF-8 text (corrupted)") from None
        except json.JSONDecodeError as exc:
            what = "cut off (the file is truncated)" if n == len(lines) and not ends_with_newline \
                else "not valid JSON (corrupted)"
            raise bad(n, f"{what}: {exc.msg} at column {exc.colno}") from None

    head = parse(1)
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise bad(1, f"not a SpecScope session (the first line has no \"format\": \"{FORMAT}\")")
    version = head.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise bad(1, f"the session version {version!r} is not a version number")
    if version > VERSION:
        raise bad(1, f"written by a newer SpecScope (session version {version}; this one reads "
                     f"up to {VERSION}): update SpecScope to open it")
    try:
        settings, models, prompt, tokens, runs_info, runs = _header(head)
    except PlainError as exc:
        raise bad(1, f"a malformed header: {exc}") from None

    order = [k for k in runs_info]
    expected = [(k, i) for k in order for i in range(runs_info[k]["rounds"])]
    for n in range(2, len(lines) + 1):
        rec = parse(n)
        if n - 2 >= len(expected):
            raise bad(n, f"one line more than the header's {len(expected)} rounds (corrupted)")
        kind, index = expected[n - 2]
        if not isinstance(rec, dict) or set(rec) != {"run", "event"}:
            raise bad(n, "not a round line ({\"run\": ..., \"event\": {...}})")
        if rec["run"] != kind:
            raise bad(n, f"expected round {index} of the {kind} run, found run {rec['run']!r}")
        try:
            ev = RoundEvent.from_dict(rec["event"])
        except (PlainError, TypeError) as exc:
            raise bad(n, f"a malformed round: {exc}") from None
        if ev.index != index:
            raise bad(n, f"round {ev.index} where round {index} was expected")
        unknown = {ev.seed, *ev.drafted, *ev.emitted, *ev.replayed} - set(tokens.entries)
        if unknown:
            raise bad(n, f"token {min(unknown)} has no piece in the header (corrupted)")
        runs[kind].events.append(ev)
    if len(lines) - 1 < len(expected):
        kind, index = expected[len(lines) - 1]
        raise bad(len(lines) + 1, f"the file ends before round {index} of the {kind} run: "
                                  f"{len(lines) - 1} of {len(expected)} round lines (truncated)")
    session = Session(settings, prompt["text"], tuple(prompt["tokens"]), models, tokens,
                      runs.get("spec"), runs.get("baseline"), str(path))
    return session
