"""The main window's conversation (a part of MainWindow, app/window.py): the chat bar under the
text continues the conversation shown, regenerates its last reply or starts a new one; the
Advisor can measure the conversation."""

from __future__ import annotations

from pathlib import Path


class WindowChat:
    """MainWindow's conversation: each turn a run given the turns before it."""

    _unsent = None               # (message, editing) of the turn sent last, until it has run

    def _turn_ended(self, ended) -> None:
        """A run ended: the conversation's turn (a Run: its first)."""
        self._unsent = None
        if ended.session is not None and not ended.beside:
            self.chat_log.ended(ended.session)
            self._update_chat()

    def _update_chat(self) -> None:
        c, log = self.controller, self.chat_log
        s = c.session
        turns = len(log.turns) if s is not None and log.is_last(s) else 0
        document = s is not None and not s.settings.chat
        figures = log.figures() if turns else ""
        if turns and document:
            figures = ("This target has no chat template: each message continues one document. "
                       + figures)
        self.chat_bar.show_state(turns, not c.busy and not c.refusal("run"), document, figures)

    def chat_send(self, message: str, editing: bool = False, step: bool = False) -> None:
        """Continue the conversation shown with ``message`` (``editing``: in place of the last)."""
        turns = self.chat_log.turns
        self._unsent = (message, editing)        # back in the box if its turn does not run
        if not self._chat_turn(message, turns[:-1] if editing else turns, step=step):
            self.put_back_unsent()

    def put_back_unsent(self) -> None:
        """The message sent last did not become a turn (refused, or its run failed): the
        chat bar gets it back, so nothing typed is lost."""
        if self._unsent is not None:
            self.chat_bar.put_back(*self._unsent)
            self._unsent = None

    def chat_regenerate(self) -> None:
        turns = self.chat_log.turns
        if turns:
            self._chat_turn(turns[-1][0], turns[:-1], regenerate=self.chat_log.regenerations + 1)

    def chat_new(self) -> None:
        self.chat_log.clear()
        self._update_chat()
        self.prompt.editor.setFocus()
        self.stats_bar.set_state("New conversation: type the first message in the prompt box "
                                 "and press Run")

    def _chat_turn(self, message: str, turns, regenerate: int = 0, step: bool = False) -> bool:
        """A run given the turns before (the engine keeps both caches from the turn before);
        a regenerate draws with the next seed. False when it was not started (the banner says
        why)."""
        from dataclasses import replace
        from specscope.core.session.conversation import ChatLog
        if self.controller.busy or self._refused():
            return False
        req = self.request("spec", step=step, prompt=message)
        if req is None:
            return False
        sampler = replace(req.sampler, seed=req.sampler.seed + regenerate) if regenerate else req.sampler
        req = replace(req, history=ChatLog.history(turns), turns=tuple(turns), sampler=sampler)
        if step:
            self.tabs.setCurrentWidget(self.round_view)
        self._start(req)
        return True

    def advise_on_conversation(self) -> None:
        """The Advisor measures the conversation (ChatLog.write_prompts: each turn's message with
        the turns before it), from a file in the app's data folder."""
        from PySide6.QtCore import QStandardPaths
        if not self.chat_log.turns:
            self.banner.show_message("info", "No conversation yet: run a prompt in the Run tab and "
                                             "reply to it; then the Advisor can measure it")
            return
        folder = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation))
        path = self.chat_log.write_prompts(folder / "conversation-prompts.jsonl")
        self.advisor.form.use_prompts(path, f"the conversation ({len(self.chat_log.turns)} turns)")
