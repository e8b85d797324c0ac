"""The runs of one window or process, and which baseline each speculative run is measured
against (core/session/session.py holds a run and its session)."""

from __future__ import annotations

from specscope.core.session.session import RunRecord, RunSettings, Session


class Workbench:
    """The runs of one window or process: the baseline sessions by run key, the latest
    speculative session; a speculative session gets the baseline with its key, now or when
    it comes. A finished session keeps only the token pieces it uses (``freeze_tokens``)."""

    def __init__(self):
        self.baselines: dict[tuple, Session] = {}
        self.last_spec: Session | None = None

    def start(self, settings: RunSettings, kind: str, **kw) -> Session:
        session = Session.start(settings, kind, **kw)
        if kind == "spec" and settings.key in self.baselines:
            session.attach_baseline(self.baselines[settings.key])
        return session

    def finished(self, session: Session) -> None:
        session.freeze_tokens()
        if session.kind == "baseline":
            self.baselines[session.key] = session
            if self.last_spec is not None and self.last_spec.key == session.key:
                self.last_spec.attach_baseline(session)
        else:
            if session.baseline is not None:    # attached while live: its pieces too
                session.attach_baseline(self.baselines.get(session.key, session))
            self.last_spec = session

    def adopt(self, session: Session) -> None:
        """A session opened from a file: its baseline serves runs with its key."""
        if session.baseline is not None:
            self.baselines.setdefault(session.key, session)
        if session.spec is not None:
            self.last_spec = session

    def baseline_for(self, settings: RunSettings) -> RunRecord | None:
        s = self.baselines.get(settings.key)
        return s.baseline if s is not None else None
