"""A conversation: turns on one engine that keep both caches between them, as llama-server
keeps a slot's.

Each turn gives the target the whole conversation so far: rendered in the target's own chat
template (core/models/chat.py) with the new user message and the generation prompt, or, for a
target without a chat template, as one document (each user text appended to the text so far,
each reply after it). The run (``Engine.speculative``/``baseline`` with ``resume``) keeps the
rows the turn before left in both caches up to the first token that differs from the new
prompt (``llama_memory_seq_rm`` from there, as the server cuts a slot's memory) and prefills
only the rest: ``Turn.prefill.reused`` rows kept, ``Turn.prefill.decoded`` tokens decoded.
Regenerating or editing the last turn renders a conversation that differs from the cached one
where that turn's reply (or message) starts, so both caches are cut back there.

What the drafters keep between turns, per type, beside what llama.cpp's server keeps across
a slot's requests (common/speculative.cpp, tools/server/server-context.cpp):

* draft-simple: its cache, cut where the target's is (the server's slot memory holds both).
  Across vocabularies (--spec-vocab translate/intersect) its cache holds the draft's own
  tokens: the turn starts afresh (both caches prefilled again);
* the types that read the target's hidden states (the heads', the MTP blocks'; the registry's
  ``SpecType.reads_target``): llama.cpp keeps their caches, filled
  from the target's batches; SpecScope's heads fill theirs from the target's prefill, so the
  turn starts afresh (both caches prefilled again, ``reused`` 0);
* ngram-simple, ngram-map-k, ngram-map-k4v: they read the history, which holds the turns
  before; SpecScope indexes the prompt again each turn (llama.cpp's map keeps its index and
  cleans it from where the history shrank): the same drafts;
* ngram-mod: llama.cpp's hash pool outlives a request (``begin`` adds the prompt's n-grams and
  empties it past a quarter full); SpecScope's table holds positions in one run's history and
  is rebuilt from the whole conversation each turn: the same entries while the conversation
  only grows; after a regenerate or an edit llama.cpp's pool still holds the dropped reply's
  n-grams and SpecScope's does not;
* ngram-cache: its context cache outlives a request and counts only the tokens past those it
  counted (``sinfo.cache_size``): the turn takes it over (``NgramCache.resume``).

A conversation that would overflow the context raises ``ContextFullError`` in one line before
anything runs, and keeps every turn. A turn stopped part way is kept with finish "stopped"; a
turn that failed is dropped and the next one starts with both caches afresh.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from specscope.core.engine.events import Prefill, RoundEvent
from specscope.core.errors import ContextFullError, SpecScopeError
from specscope.core.measure.stats import fold
from specscope.core.models.chat import chat_template, messages_for, render_messages
from specscope.core.session.session import RunSettings, Session


@dataclass
class Turn:
    """One user message and the reply the engine gave it."""
    user: str
    session: Session              # the turn's run: prompt (the whole conversation), events, stats
    prefill: Prefill
    regenerated: int = 0          # how many times this turn was generated again

    @property
    def reply(self) -> str:
        """The reply's text (end-of-generation tokens left out)."""
        return self.session.text()

    @property
    def tokens(self) -> list[int]:
        return self.session.run.tokens

    @property
    def finish(self) -> str:
        return self.session.run.finish


class Conversation:
    """Turns on one engine (see the module docs). ``spec`` None: the target alone (the turns a
    speculative conversation is checked against, ``specscope chat --baseline``)."""

    def __init__(self, engine, settings: RunSettings, *, calibration=None):
        self.engine = engine
        self.settings = settings                    # the prompt field is each turn's user text
        self.calibration = calibration
        self.chat = chat_template(engine.target) is not None
        self.turns: list[Turn] = []
        self.runs: list[Turn] = []                  # every turn run, in order (regenerated ones too)
        self._held = None                           # what the last turn left in the caches

    @property
    def document(self) -> bool:
        """The target has no chat template: the conversation is one document, continued."""
        return not self.chat

    def prompt_text(self, turns: list[Turn], user: str) -> str:
        """What the target is given for a turn after ``turns`` (:func:`conversation_prompt`)."""
        return conversation_prompt(self.engine.target, self.chat, self.settings.system,
                                   history_of(turns), user)

    # -- turns ----------------------------------------------------------------
    def say(self, user: str, stop=None) -> "TurnRun":
        """A new turn: iterate the returned run for its round events; the turn joins the
        conversation when the run ends. Raises (one line, nothing changed) when the
        conversation does not fit the context or the engine cannot start."""
        if not user.strip():
            raise SpecScopeError("the message is empty")
        return self._start(list(self.turns), user, 0, stop)

    def regenerate(self, stop=None) -> "TurnRun":
        """The last turn generated again (at temperature > 0 with the next seed)."""
        last = self._last("regenerate")
        return self._start(self.turns[:-1], last.user, last.regenerated + 1, stop)

    def edit(self, user: str, stop=None) -> "TurnRun":
        """The last turn's message replaced by ``user``, and its reply generated again."""
        self._last("edit")
        if not user.strip():
            raise SpecScopeError("the message is empty")
        return self._start(self.turns[:-1], user, 0, stop)

    def reset(self) -> None:
        """A new conversation on the same engine (the caches start afresh)."""
        self.turns, self._held = [], None

    def _last(self, what: str) -> Turn:
        if not self.turns:
            raise SpecScopeError(f"nothing to {what}: the conversation has no turn yet")
        return self.turns[-1]

    def _start(self, before: list[Turn], user: str, regenerated: int, stop) -> "TurnRun":
        s, e = self.settings, self.engine
        text = self.prompt_text(before, user)
        tokens = turn_tokens(e, text)
        sampler = replace(s.sampler, seed=s.sampler.seed + regenerated) if regenerated else s.sampler
        if s.spec is None:
            run = e.baseline(tokens, sampler, s.n_predict, stop, resume=self._held)
        else:
            run = e.speculative(tokens, s.spec, sampler, s.n_predict, stop,
                                calibration=self.calibration, resume=self._held)
        settings = replace(s, prompt=user, chat=self.chat, sampler=sampler,
                           history=history_of(before))
        session = Session.start(settings, "baseline" if s.spec is None else "spec", text,
                                run.prompt_tokens, e.target)
        return TurnRun(self, before, Turn(user, session, None, regenerated), run)

    def _ended(self, turn_run: "TurnRun", ok: bool) -> None:
        run, turn = turn_run.run, turn_run.turn
        self._held = run.held if ok else None
        if not ok:
            return
        turn.prefill = run.prefill
        turn.session.run.prefill_s = run.prefill.seconds
        turn.session.run.reused = run.prefill.reused
        turn.session.run.end(run.finish)
        self.turns = [*turn_run.before, turn]
        self.runs.append(turn)


class TurnRun:
    """A turn being generated: iterate it for the round events (``Run``'s); when the iteration
    ends (the run finished, was stopped, or the caller stopped iterating) the turn joins the
    conversation."""

    def __init__(self, conversation: Conversation, before: list[Turn], turn: Turn, run):
        self.conversation, self.before, self.turn, self.run = conversation, before, turn, run

    def stop(self) -> None:
        self.run.stop()

    def __iter__(self) -> Iterator[RoundEvent]:
        ok, events = False, iter(self.run)
        try:
            for event in events:
                self.turn.session.run.append([event])
                yield event
            ok = True
        except GeneratorExit:
            ok = True
            raise
        finally:
            events.close()          # the run records what it left in the caches (Run.held)
            if ok and not self.run.finish:
                self.run.finish = "stopped"
            self.conversation._ended(self, ok)

    def play(self) -> Turn:
        """Run the turn to its end; the turn."""
        for _ in self:
            pass
        return self.turn


def history_of(turns: list[Turn]) -> tuple[tuple[str, str], ...]:
    """The turns as (user message, reply) texts (``RunSettings.history``)."""
    return tuple((t.user, t.reply) for t in turns)


def turn_tokens(engine, text: str) -> list[int]:
    """The target's tokens for a turn after others (``text``: the turns before it and its
    message); a conversation that outgrew the context says so, not that "the prompt" is long."""
    try:
        return engine.tokenize(text)
    except ContextFullError:
        n = len(engine.target.tokenize(text))
        raise ContextFullError(f"the conversation no longer fits the context: it is {n} tokens "
                               f"and the context holds {engine.tgt.n_ctx}; start a new "
                               "conversation or raise the context size (every turn is kept)") from None


def conversation_prompt(model, chat: bool, system: str | None, history, user: str) -> str:
    """What the target is given for ``user``'s turn after ``history``: the chat template's
    rendering of the conversation (with the generation prompt), or for a target without one
    (``chat`` False) the document so far with ``user`` appended (the system message is a chat
    message: a document has none)."""
    if chat:
        return render_messages(model, messages_for(user, system, history))
    text = ""
    for message, reply in history:
        text = _joined(text, message) + reply
    return _joined(text, user)


def _joined(text: str, part: str) -> str:
    """A document turn's user text after the text so far: on a new line unless the text ends
    with a space or a new line (a reply continues the text as it was generated)."""
    if not text or not part or text.endswith(("\n", " ")):
        return text + part
    return text + "\n" + part


class ChatLog:
    """A window's conversation: its turns as the sessions that made them. A run from the prompt
    box begins a conversation; a reply, a regenerate or an edit is a run given the turns before
    it (``RunRequest.turns``); each run that ends becomes the turn after the turns it was given.
    Qt-free: the window's chat bar (app/chat_bar.py) shows it."""

    def __init__(self):
        self.turns: list[tuple[str, Session]] = []     # (message, the session of its reply)
        self.regenerations = 0                        # regenerates of the last turn so far

    def ended(self, session: Session) -> None:
        """``session``'s run ended: it is the turn after the ones it was given."""
        before = list(session.turns)
        again = len(self.turns) == len(before) + 1 and self.turns[-1][0] == session.settings.prompt \
            and all(a[1] is b[1] for a, b in zip(self.turns, before))
        self.regenerations = self.regenerations + 1 if again else 0
        self.turns = [*before, (session.settings.prompt, session)]

    def clear(self) -> None:
        self.turns, self.regenerations = [], 0

    def is_last(self, session) -> bool:
        """``session`` is the conversation's last turn (a reply continues it)."""
        return bool(self.turns) and self.turns[-1][1] is session

    def write_prompts(self, path) -> Path:
        """The conversation as advise --prompts reads it (JSON Lines): each turn's message with
        the turns before it, one chat conversation per line."""
        system = self.turns[0][1].settings.system if self.turns else None
        lines = []
        for k in range(len(self.turns)):
            messages = messages_for(self.turns[k][0], system, self.history(self.turns[:k]))
            lines.append(json.dumps(messages, ensure_ascii=False))
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    @staticmethod
    def history(turns) -> tuple[tuple[str, str], ...]:
        """(message, reply) texts of ``turns``."""
        return tuple((message, s.text()) for message, s in turns)

    def figures(self) -> str:
        """The conversation in one line (the window's chat bar)."""
        return "Conversation: " + "; ".join(summary([s for _, s in self.turns])) if self.turns else ""


def summary(sessions) -> list[str]:
    """A conversation's figures from its turns' sessions: turns, tokens and speed; acceptance,
    overall and by draft position, where it drafted; the prompt tokens the caches held from the
    turn before. ``specscope chat``'s /stats prints them a line each, the window on one line."""
    if not sessions:
        return []
    s = fold([e for x in sessions for e in x.run.events])
    n = len(sessions)
    out = [f"{n} turn{'s' if n != 1 else ''}, {s.n_tokens} tokens at {s.tokens_per_s:.1f} tokens/s"]
    if s.n_drafted:
        by_pos = " ".join(f"{p:.2f}" for p in s.position_acceptance)
        out.append(f"accepted {s.n_accept} of {s.n_drafted} drafted ({100 * s.acceptance_rate:.0f}%), "
                   f"by position {by_pos}")
    if n > 1:
        out.append(f"{sum(x.run.reused for x in sessions)} of "
                   f"{sum(len(x.prompt_tokens) for x in sessions)} prompt tokens held from the turn before")
    return out
