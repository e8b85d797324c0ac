"""The run controller: what one window does with the machine, without Qt.

A :class:`RunController` owns

- the run lifecycle, a :class:`RunState` whose allowed transitions are written down in
  ``TRANSITIONS`` (core/session/run_state.py; ``_go`` raises :class:`TransitionError` on any
  other);
- the run in progress (``active``, the session it writes to ``live``) and the run shown
  (``session`` with its request ``shown_request``; None for a recording), and the building of
  requests from the controls (``request``) or from a recording (``request_of``);
- which task holds the cores: a run, a measurement of the cost tab (``holder``) or a Compare
  sweep. ``refusal(asking)`` is the sentence that keeps the others out.

The engine's round events go into the session the moment they arrive (``on_events``): the
session, its statistics and speed-up are exact whatever the pace of the views. How far the
views show the session is ``shown_upto``; the pace moves it (``reveal``), the scrubber sets it
(``seek``). A run is over for the window (its buttons, ``finished``) once the engine has ended
and the views have shown its last round.

The window wires the worker's signals to the ``on_*`` methods and listens (``subscribe``) to
what changed, to redraw. A listener is a plain callable ``fn(what, payload)``:

=============  ==========================================================================
``state``      (old, new): every transition
``started``    the worker's RunStarted: a run the views show began (``session`` is its)
``beside``     the baseline session a run measures beside the speculative run shown
``events``     a batch of rounds appended to the session shown
``session``    the session shown changed (``show``: a recording, or none)
``finishing``  the engine ended (its finish); the views still have rounds to show
``paused``     the run id: a step-mode run showed its round and waits
``finished``   :class:`Ended`: the run is over (the views have shown all of it)
``failed``     (request, exception, traceback): the run failed
=============  ==========================================================================
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from specscope.core.errors import ConfigError
from specscope.core.session.run_state import (FREE, MEASURING, RUN_IN_PROGRESS, RUNS, SHARED_CORES,
                                              SWEEPING_IN, TRANSITIONS, RunState, TransitionError)
from specscope.core.session.session import RunSettings, Session
from specscope.core.session.workbench import Workbench

__all__ = ["RunController", "RunRequest", "Controls", "Ended", "RunState", "TRANSITIONS",
           "TransitionError", "rerun_verdict"]

@dataclass(frozen=True)
class RunRequest:
    """Everything one generation needs; the controller builds it from the controls."""

    run_id: int
    kind: str                         # "spec" | "baseline"
    target: Path
    draft: Path | None
    engine_settings: object           # specscope.core.engine.engine.EngineSettings
    prompt: str
    spec: object | None               # SpecSettings (spec runs)
    sampler: object                   # SamplerSettings
    n_predict: int
    step: bool = False                # one round per step() request
    chat: bool = False                # give the target the prompt in its own chat template
    system: str = ""                  # with chat: a system message ("" = none)
    # a conversation's later turn: the turns before as (message, reply) texts (the engine is
    # given the whole conversation and keeps what the turn before left in its caches), and as
    # the sessions that made them (the views colour their replies)
    history: tuple[tuple[str, str], ...] = ()
    turns: tuple = field(default=(), compare=False)
    stop: threading.Event = field(default_factory=threading.Event, compare=False)
    # set by the window once it has painted the new run's empty panels: the first rounds then
    # do not compete with those paints for the GIL (pyqtgraph paints hold it for ms at a time)
    ui_ready: threading.Event = field(default_factory=threading.Event, compare=False)

    def settings(self) -> RunSettings:
        return RunSettings(str(self.target), str(self.draft) if self.draft else None,
                           self.engine_settings, self.spec, self.sampler, self.n_predict,
                           self.prompt, self.chat, self.system, self.history)


@dataclass(frozen=True)
class Controls:
    """What the window's controls ask for, read from them as they are."""

    target: Path | None
    draft: Path | None
    prompt: str
    spec: object                      # the drafter box's SpecSettings (not validated)
    sampler: object                   # SamplerSettings
    n_predict: int
    engine: object                    # EngineSettings
    chat: bool = False
    system: str = ""
    drafter_problem: str = ""         # why the drafter box cannot run as set ("" when it can)
    draft_refused: bool = False       # the pair doctor found the draft incompatible


@dataclass(frozen=True)
class Ended:
    """A run that is over: its request, its session (None when it stopped before its first
    round), the finish, whether it was a baseline measured beside the run shown, and a
    re-run's verdict (``rerun_verdict``; None for any other run)."""

    request: RunRequest
    session: Session | None
    finish: str
    beside: bool
    verdict: tuple[bool, str] | None = None


def rerun_verdict(recorded, rerun) -> tuple[bool, str]:
    """Did ``rerun`` (a Run) reproduce ``recorded``: the same tokens, the same per-round
    counts (drafted, accepted, emitted, mode)? And a sentence saying so."""
    a, b = recorded.tokens, rerun.tokens
    counts = [(len(e.drafted), e.n_accepted, len(e.emitted), e.mode) for e in recorded.events]
    again = [(len(e.drafted), e.n_accepted, len(e.emitted), e.mode) for e in rerun.events]
    if a == b and counts == again:
        return True, (f"The re-run matched the recording: the same {len(a)} tokens and the same "
                      f"counts in each of its {len(counts)} rounds.")
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return False, (f"The re-run differs from the recording: the tokens part at generated "
                       f"token {at + 1} ({len(a)} recorded, {len(b)} now).")
    r = next((i for i, (x, y) in enumerate(zip(counts, again)) if x != y), min(len(counts), len(again)))
    was = counts[r] if r < len(counts) else None
    now = again[r] if r < len(again) else None

    def words(c):
        return "no round" if c is None else f"{c[0]} drafted, {c[1]} accepted"
    return False, (f"The re-run made the same {len(a)} tokens, but its rounds differ from round "
                   f"{r + 1} on (recorded: {words(was)}; now: {words(now)}).")


class RunController:
    """The window's runs, the session shown and the cores (module docs)."""

    def __init__(self, workbench: Workbench | None = None):
        self.workbench = workbench if workbench is not None else Workbench()
        self.state = RunState.IDLE
        self.active: RunRequest | None = None       # the run in progress
        self.live: Session | None = None            # the session it writes to
        self.beside = False                         # it is a baseline beside the run shown
        self.finishing: str | None = None           # the engine's finish, while the views lag
        self.session: Session | None = None         # the session shown
        self.shown_request: RunRequest | None = None    # its request (None: a recording)
        self.shown_upto = 0                         # the views show its first rounds up to here
        self.holder = None                          # the measurement holding the cores
        self.sweeper = ("A sweep", "Compare")       # who sweeps (what, in which tab)
        self.present: dict[str, bool] = {}          # a recording's models: present again?
        self.rerun_of: Session | None = None        # the recording a re-run is checked against
        self.rerun_result: tuple[bool, str] | None = None
        self._last_id = 0
        self._listeners: list[Callable[[str, object], None]] = []

    # ------------------------------------------------------------------ state
    def subscribe(self, listener: Callable[[str, object], None]) -> None:
        self._listeners.append(listener)

    def _tell(self, what: str, payload=None) -> None:
        for listener in list(self._listeners):
            listener(what, payload)

    def _go(self, new: RunState, only_from: frozenset | None = None) -> None:
        """Go to ``new`` (``only_from``: and only from these states)."""
        old = self.state
        if new not in TRANSITIONS[old] or (only_from is not None and old not in only_from):
            raise TransitionError(f"the run controller cannot go from {old.value} to {new.value}")
        self.state = new
        self._tell("state", (old, new))

    @property
    def busy(self) -> bool:
        """A run is in progress (running, stepping or paused)."""
        return self.state in RUNS

    @property
    def paused(self) -> bool:
        return self.state is RunState.PAUSED

    @property
    def replaying(self) -> bool:
        return self.state is RunState.REPLAYING

    @property
    def sweeping(self) -> bool:
        return self.state is RunState.SWEEPING

    @property
    def has_rounds(self) -> bool:
        return self.session is not None and bool(self.session.run.events)

    @property
    def can_replay(self) -> bool:
        return self.state in FREE and self.has_rounds

    @property
    def shown_events(self) -> list:
        """The rounds of the session shown that the views are to show."""
        return [] if self.session is None else self.session.run.events[:self.shown_upto]

    # ------------------------------------------------------------------ the cores
    def refusal(self, asking="run") -> str:
        """Why ``asking`` cannot have the cores now, "" when it can. ``asking``: "run",
        "sweep", or the measurement task that would start (a measurement may ask again while
        it holds them)."""
        s = self.state
        if s in FREE or (s is RunState.MEASURING and self.holder is asking):
            return ""
        if s is RunState.SWEEPING and asking in ("run", "sweep"):
            return SWEEPING_IN.format(*self.sweeper, "a run" if asking == "run" else "another")
        if asking == "run":
            return MEASURING.format("a run") if s is RunState.MEASURING else RUN_IN_PROGRESS.format("another run")
        if asking == "sweep":
            return MEASURING.format("a sweep") if s is RunState.MEASURING else RUN_IN_PROGRESS.format("a sweep")
        return SHARED_CORES

    def require_cores(self, asking) -> None:
        """ConfigError with ``refusal(asking)`` when ``asking`` cannot have the cores now."""
        reason = self.refusal(asking)
        if reason:
            raise ConfigError(reason)

    def measure_started(self, task) -> None:
        self._go(RunState.MEASURING)
        self.holder = task

    def measure_ended(self, task) -> None:
        if self.holder is task and self.state is RunState.MEASURING:
            self.holder = None
            self._go(RunState.IDLE)

    def sweep_started(self, what: str = "A sweep", tab: str = "Compare") -> None:
        """``what`` (in the ``tab`` tab, as the refusals name it) holds the cores until it ends."""
        self.sweeper = (what, tab)
        self._go(RunState.SWEEPING)

    def sweep_ended(self) -> None:
        if self.state is RunState.SWEEPING:
            self._go(RunState.IDLE)

    # ------------------------------------------------------------------ requests
    def next_id(self) -> int:
        """A fresh id for a run or a measurement in the window's engine."""
        self._last_id += 1
        return self._last_id

    def request(self, kind: str, controls: Controls, step: bool = False) -> RunRequest:
        """A run of ``kind`` ("spec" | "baseline") as the controls ask; ConfigError saying what
        is missing or wrong."""
        c = controls
        if c.target is None:
            raise ConfigError("choose a target model first (File ▸ Open target, or drop a .gguf file)")
        if not c.prompt.strip():
            raise ConfigError("the prompt is empty: type one or choose an example")
        spec = c.spec if kind == "spec" else None
        if spec is not None:
            if c.drafter_problem:
                raise ConfigError(c.drafter_problem)
            spec.validate()
        c.sampler.validate()
        draft = c.draft
        if (spec is None or not spec.needs_draft) and c.draft_refused:
            draft = None             # no draft model needed: do not load a draft the gate refuses
        return RunRequest(self.next_id(), kind, c.target, draft, c.engine, c.prompt, spec,
                          c.sampler, c.n_predict, step=step, chat=c.chat, system=c.system)

    def request_of(self, session: Session, kind: str, recorded: bool = False) -> RunRequest:
        """A run of ``kind`` with ``session``'s settings (not the controls'). ``recorded``: on
        the models its file names (a re-run), else the paths in its settings."""
        st = session.settings
        target, draft = Path(st.target), Path(st.draft) if st.draft else None
        if recorded:
            target = Path(session.models["target"].path)
            draft = Path(session.models["draft"].path) if session.models.get("draft") else None
        return RunRequest(self.next_id(), kind, target, draft, st.engine, st.prompt,
                          st.spec if kind == "spec" else None, st.sampler, st.n_predict,
                          chat=st.chat, system=st.system or "", history=st.history,
                          turns=session.turns if session.turns and len(session.turns) ==
                          len(st.history) else ())

    @property
    def can_rerun(self) -> bool:
        """The session shown is a recording whose models were present when it was shown."""
        return self.state in FREE and self.session is not None and self.session.is_recording \
            and bool(self.present) and all(self.present.values())

    def stats_document(self) -> dict:
        """The statistics export of the run shown (a stepped run is no speed sample)."""
        if self.session is None:
            return {"run": None, "stats": None, "rounds": []}
        doc = self.session.stats_document()
        if self.shown_request is not None and self.shown_request.step:
            doc.pop("speedup", None)
        return doc

    # ------------------------------------------------------------------ the user's clicks
    def start(self, req: RunRequest, rerun_of: Session | None = None) -> None:
        """``req`` starts (the window sends it to the worker). ``rerun_of``: the recording it
        runs again, to be compared with it at the end."""
        self._go(RunState.STEPPING if req.step else RunState.RUNNING)
        self.active, self.live, self.beside, self.finishing = req, None, False, None
        self.rerun_of = rerun_of
        if rerun_of is not None:
            self.rerun_result = None

    def resume(self) -> int:
        """Continue a paused step-mode run to its end; its run id."""
        self._go(RunState.RUNNING, only_from=frozenset({RunState.PAUSED}))
        return self.active.run_id

    def step(self) -> int:
        """One more round of a paused step-mode run; its run id."""
        self._go(RunState.STEPPING, only_from=frozenset({RunState.PAUSED}))
        return self.active.run_id

    def stop(self) -> bool:
        """Stop the run in progress after its current round. True when it waits paused (the
        worker must be told to end it)."""
        if self.active is None:
            return False
        self.active.stop.set()
        self.active.ui_ready.set()
        return self.state is RunState.PAUSED

    def replay(self) -> bool:
        """Play the session shown again from its first round (the pace reveals the rest)."""
        if not self.can_replay:
            return False
        self._go(RunState.REPLAYING)
        self._show_at(0)
        return True

    def reveal(self, n: int) -> None:
        """The pace lets the views show ``n`` more rounds (of a live run, or a replay)."""
        if self.session is None:
            return
        total = len(self.session.run.events)
        self._show_at(self.shown_upto + n)
        if self.shown_upto < total:
            return
        if self.state is RunState.REPLAYING:
            self._go(RunState.IDLE)
        elif self.finishing is not None and self.live is self.session:
            self._end()

    def seek(self, k: int) -> bool:
        """Show the session as it was after its first ``k`` rounds (not while a run is in
        progress). Seeking ends a replay."""
        if self.session is None or self.busy:
            return False
        if self.replaying:
            self._go(RunState.IDLE)
        self._show_at(k)
        return True

    def show(self, session: Session | None) -> None:
        """Show ``session`` (a recording: the workbench adopts its runs) or nothing (the latest
        speculative run is forgotten too). A run in progress goes on unshown."""
        if self.replaying:
            self._go(RunState.IDLE)
        self.session, self.shown_request = session, None
        self.present = session.models_present() if session is not None and session.is_recording else {}
        if session is None:
            self.workbench.last_spec = None
        else:
            self.workbench.adopt(session)
        self._show_at(len(session.run.events) if session is not None else 0)
        self._tell("session", session)

    def _show_at(self, k: int) -> None:
        total = len(self.session.run.events) if self.session is not None else 0
        self.shown_upto = max(0, min(int(k), total))

    # ------------------------------------------------------------------ the worker's news
    def _mine(self, run_id: int) -> bool:
        return self.active is not None and run_id == self.active.run_id

    def on_started(self, info) -> None:
        """The worker's RunStarted: the run's session begins; the views show it unless it is a
        baseline for the speculative run shown (then it runs beside it)."""
        if not self._mine(info.run_id):
            return
        self.live = self.workbench.start(self.active.settings(), info.kind,
                                         prompt_text=info.prompt_text,
                                         prompt_tokens=info.prompt_tokens, vocab=info.vocab)
        self.live.turns = self.active.turns
        self.beside = self.session is not None and self.session.takes_baseline(self.live)
        if self.beside:
            self._tell("beside", self.live)
            return
        self.session, self.shown_request, self.shown_upto = self.live, self.active, 0
        self._tell("started", info)

    def on_events(self, run_id: int, batch: list) -> None:
        """Rounds as the engine ran them: into the run's session at once. A step-mode run's
        round is shown at once; a run's others when the pace reveals them."""
        if not self._mine(run_id) or self.live is None:
            return
        self.live.run.append(batch)
        if self.live is self.session:
            self._tell("events", batch)
            if self.active.step:
                self.reveal(len(batch))

    def on_prefill(self, run_id: int, prefill) -> None:
        if self._mine(run_id) and self.live is not None:
            self.live.run.prefill_s = prefill.seconds
            self.live.run.reused = prefill.reused

    def on_paused(self, run_id: int) -> None:
        if self._mine(run_id) and self.state is RunState.STEPPING:
            self._go(RunState.PAUSED)
            self._tell("paused", run_id)

    def on_finished(self, run_id: int, finish: str) -> None:
        """The engine ended the run: the session ends now (its statistics, the workbench's
        baselines and a re-run's verdict are final); the run is over once the views have
        shown its last round."""
        if not self._mine(run_id):
            return
        live = self.live
        if live is not None:
            live.run.end(finish)
            self.workbench.finished(live)
            if self.beside and self.session is not None:    # now the baseline of the run shown
                self.session.attach_baseline(live)
            if self.rerun_of is not None:
                self.rerun_result = rerun_verdict(self.rerun_of.run, live.run)
        self.finishing = finish
        if live is not None and live is self.session and self.shown_upto < len(live.run.events):
            self._tell("finishing", finish)
            return
        self._end()

    def on_failed(self, run_id: int, exc, tb: str) -> None:
        """The run failed: the rounds it ran stay shown (all of them)."""
        if not self._mine(run_id):
            return
        req = self.active
        self.active = self.live = self.rerun_of = self.finishing = None
        self._go(RunState.IDLE)
        if self.session is not None:
            self._show_at(len(self.session.run.events))
        self._tell("failed", (req, exc, tb))

    def _end(self) -> None:
        verdict = self.rerun_result if self.rerun_of is not None else None
        ended = Ended(self.active, self.live, self.finishing, self.beside, verdict)
        self.active = self.live = self.rerun_of = self.finishing = None
        self._go(RunState.IDLE)
        self._tell("finished", ended)
