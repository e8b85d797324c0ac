"""core/session/controller.py without Qt: the run lifecycle's states and transitions, the
refusals, round events in the session at once whatever the pace of the views, the run in
progress and the run shown, request building, and which task holds the cores."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from specscope.core.engine.engine import EngineSettings, SpecSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.stats import fold
from specscope.core.session.controller import (TRANSITIONS, Controls, RunController, RunState,
                                               TransitionError)
from specscope.core.session.run_state import MEASURING, RUN_IN_PROGRESS, SWEEP_RUNNING, SWEEPING_IN
from specscope.core.session.session import TokenTable

S = RunState


def ev(i: int, drafted=(5, 6), n_acc=1, emitted=(5, 7), finish="") -> RoundEvent:
    return RoundEvent(i, 10 + 2 * i, 4, tuple(drafted), (0.5,) * len(drafted), n_acc, tuple(emitted),
                      "spec", t_draft=0.001, t_verify=0.002, t_round=0.004, finish=finish)


def controls(**kw) -> Controls:
    base = dict(target=Path("t.gguf"), draft=Path("d.gguf"), prompt="def f(x):", spec=SpecSettings(n_max=3),
                sampler=SamplerSettings(), n_predict=8, engine=EngineSettings(n_ctx=256))
    return Controls(**{**base, **kw})


class Heard(list):
    """What the controller told its listener, in order: (what, payload)."""

    def __call__(self, what, payload):
        self.append((what, payload))

    def said(self, what) -> list:
        return [p for w, p in self if w == what]


def started(c: RunController, req, kind="spec"):
    """The worker's RunStarted for ``req`` (the fields the controller reads)."""
    vocab = TokenTable({t: (b"x%d" % t, b"x%d" % t, False) for t in range(20)})
    c.on_started(SimpleNamespace(run_id=req.run_id, kind=kind, prompt_text="def f(x):",
                                 prompt_tokens=(1, 2, 3), vocab=vocab))


@pytest.fixture
def c():
    controller = RunController()
    controller.heard = Heard()
    controller.subscribe(controller.heard)
    return controller


# ------------------------------------------------------------------ states and transitions
def test_the_transitions_are_written_down_and_everything_returns_to_idle():
    assert set(TRANSITIONS) == set(RunState)
    assert TRANSITIONS[S.IDLE] == {S.RUNNING, S.STEPPING, S.REPLAYING, S.MEASURING, S.SWEEPING}
    for state in (S.RUNNING, S.MEASURING, S.SWEEPING):          # one holder of the cores at a time
        assert TRANSITIONS[state] == {S.IDLE}
    assert TRANSITIONS[S.STEPPING] == {S.PAUSED, S.IDLE}
    assert TRANSITIONS[S.PAUSED] == {S.STEPPING, S.RUNNING, S.IDLE}
    assert S.MEASURING in TRANSITIONS[S.REPLAYING]              # a replay gives way
    for state in RunState:                                      # nothing is a dead end
        seen, todo = set(), [state]
        while todo:
            s = todo.pop()
            seen.add(s)
            todo += [t for t in TRANSITIONS[s] if t not in seen]
        assert S.IDLE in seen


def test_an_illegal_transition_raises_and_changes_nothing(c):
    with pytest.raises(TransitionError, match="from idle to running"):
        c.resume()                                  # Continue without a paused run
    c.start(c.request("spec", controls()))
    with pytest.raises(TransitionError, match="from running to measuring"):
        c.measure_started(object())                 # a measurement under a run
    with pytest.raises(TransitionError):
        c.step()
    assert c.state is S.RUNNING and [p for p in c.heard.said("state")] == [(S.IDLE, S.RUNNING)]


# ------------------------------------------------------------------ the cores
def test_which_task_holds_the_cores_and_the_refusals(c):
    calibration, distance = object(), object()
    assert c.refusal("run") == c.refusal("sweep") == c.refusal(calibration) == ""
    c.measure_started(calibration)
    assert c.state is S.MEASURING and c.holder is calibration
    assert c.refusal("run") == MEASURING.format("a run") and "Cost model tab" in c.refusal("run")
    assert c.refusal("sweep") == MEASURING.format("a sweep")
    assert c.refusal(calibration) == ""             # the holder may ask again (its view refreshes)
    with pytest.raises(ConfigError, match="share the cores"):
        c.require_cores(distance)
    c.measure_ended(distance)                       # not the holder: nothing changes
    assert c.state is S.MEASURING
    c.measure_ended(calibration)
    assert c.state is S.IDLE and c.holder is None
    c.sweep_started()
    assert c.refusal("run") == SWEEP_RUNNING and c.sweeping
    with pytest.raises(ConfigError, match="share the cores"):
        c.require_cores(calibration)
    c.sweep_ended()
    c.sweep_started("The advisor", "Advisor")       # the Advisor holds the cores as a sweep does
    assert c.refusal("run") == SWEEPING_IN.format("The advisor", "Advisor", "a run")
    assert c.refusal("sweep").startswith("The advisor is running in the Advisor tab")
    c.sweep_ended()
    c.start(c.request("spec", controls()))
    assert c.refusal("sweep") == RUN_IN_PROGRESS.format("a sweep")
    assert c.refusal(calibration) != ""


# ------------------------------------------------------------------ requests
def test_requests_from_the_controls_and_their_refusals(c):
    with pytest.raises(ConfigError, match="choose a target model"):
        c.request("spec", controls(target=None))
    with pytest.raises(ConfigError, match="the prompt is empty"):
        c.request("spec", controls(prompt="  \n"))
    with pytest.raises(ConfigError, match="check a drafter"):
        c.request("spec", controls(drafter_problem="check a drafter"))
    assert c.request("baseline", controls(drafter_problem="check a drafter")).spec is None
    a, b = c.request("spec", controls()), c.request("spec", controls(), step=True)
    assert b.run_id == a.run_id + 1 and b.step and not a.step and a.draft == Path("d.gguf")
    # the doctor refused the draft: a run that drafts without it does not load it
    ngram = SpecSettings(types=("ngram-simple",))
    assert c.request("spec", controls(spec=ngram, draft_refused=True)).draft is None
    assert c.request("baseline", controls(draft_refused=True)).draft is None
    assert c.request("spec", controls(draft_refused=True)).draft == Path("d.gguf")
    settings = a.settings()
    assert (settings.target, settings.draft, settings.prompt) == ("t.gguf", "d.gguf", "def f(x):")


# ------------------------------------------------------------------ a run
def test_events_go_into_the_session_at_once_the_views_follow_the_pace(c):
    req = c.request("spec", controls())
    c.start(req)
    assert c.active is req and c.shown_request is None and c.session is None
    started(c, req)
    assert c.shown_request is req and c.session is c.live and c.shown_upto == 0
    events = [ev(i) for i in range(6)]
    c.on_events(req.run_id, events[:4])
    c.on_events(req.run_id + 99, [ev(9)])           # another run's: ignored
    assert c.session.run.events == events[:4]       # at once, before any round is shown
    assert c.shown_upto == 0 and c.shown_events == []
    assert c.session.run.stats == fold(events[:4])  # exact whatever the pace
    c.reveal(1)
    assert c.shown_upto == 1 and c.shown_events == events[:1]
    c.on_events(req.run_id, events[4:])
    assert c.session.run.stats == fold(events) and c.shown_upto == 1
    assert [len(b) for b in c.heard.said("events")] == [4, 2]


def test_a_run_is_over_once_the_views_have_shown_its_last_round(c):
    req = c.request("spec", controls())
    c.start(req)
    started(c, req)
    events = [ev(i) for i in range(5)] + [ev(5, finish="n_predict")]
    c.on_events(req.run_id, events)
    c.reveal(2)
    c.on_finished(req.run_id, "n_predict")
    # the engine is done: the session is final now, the run goes on until the views catch up
    assert c.state is S.RUNNING and c.finishing == "n_predict" and c.busy
    assert c.session.run.finish == "n_predict" and c.workbench.last_spec is c.session
    assert c.heard.said("finishing") == ["n_predict"] and not c.heard.said("finished")
    c.reveal(3)
    assert c.state is S.RUNNING
    c.reveal(1)
    assert c.state is S.IDLE and c.active is None and c.finishing is None
    [ended] = c.heard.said("finished")
    assert (ended.request, ended.session, ended.finish, ended.beside) == (req, c.session, "n_predict", False)
    assert c.shown_request is req                   # still shown: a stepped run shows no speed-up


def test_a_run_the_views_have_shown_ends_with_the_engine(c):
    req = c.request("baseline", controls())
    c.start(req)
    started(c, req, "baseline")
    c.on_events(req.run_id, [ev(0, (), 0, (3,), finish="eog")])
    c.reveal(1)
    c.on_finished(req.run_id, "eog")
    assert c.state is S.IDLE and c.heard.said("finished")[0].finish == "eog"
    assert c.workbench.baselines[c.session.key] is c.session


def test_stopped_before_its_first_round_there_is_no_session(c):
    req = c.request("spec", controls())
    c.start(req)
    assert c.stop() is False and req.stop.is_set() and req.ui_ready.is_set()
    c.on_finished(req.run_id, "stopped")
    [ended] = c.heard.said("finished")
    assert ended.session is None and c.state is S.IDLE and c.session is None


def test_step_mode_shows_each_round_at_once_and_pauses(c):
    req = c.request("spec", controls(), step=True)
    c.start(req)
    assert c.state is S.STEPPING
    started(c, req)
    c.on_events(req.run_id, [ev(0)])
    assert c.shown_upto == 1                        # no pace: the round is shown at once
    c.on_paused(req.run_id)
    assert c.state is S.PAUSED and c.heard.said("paused") == [req.run_id]
    assert c.step() == req.run_id and c.state is S.STEPPING
    c.on_events(req.run_id, [ev(1)])
    c.on_paused(req.run_id)
    assert c.resume() == req.run_id and c.state is S.RUNNING
    c.on_events(req.run_id, [ev(2, finish="n_predict")])
    assert c.shown_upto == 3
    c.on_finished(req.run_id, "n_predict")
    assert c.state is S.IDLE
    assert c.stats_document()["stats"]["n_rounds"] == 3 and "speedup" not in c.stats_document()


def test_stop_while_paused_asks_the_worker_to_end_the_run(c):
    req = c.request("spec", controls(), step=True)
    c.start(req)
    started(c, req)
    c.on_events(req.run_id, [ev(0)])
    c.on_paused(req.run_id)
    assert c.stop() is True and req.stop.is_set()


def test_a_failed_run_shows_every_round_it_ran(c):
    req = c.request("spec", controls())
    c.start(req)
    started(c, req)
    c.on_events(req.run_id, [ev(0), ev(1)])
    c.on_failed(req.run_id, ValueError("boom"), "tb")
    assert c.state is S.IDLE and c.active is None and c.shown_upto == 2
    [(failed_req, exc, tb)] = c.heard.said("failed")
    assert failed_req is req and str(exc) == "boom" and tb == "tb"
    assert c.session.run.finish == ""               # not a finished run


def test_a_baseline_runs_beside_the_speculative_run_shown(c):
    spec_req = c.request("spec", controls())
    c.start(spec_req)
    started(c, spec_req)
    c.on_events(spec_req.run_id, [ev(0), ev(1, finish="n_predict")])
    c.reveal(2)
    c.on_finished(spec_req.run_id, "n_predict")
    shown = c.session
    base_req = c.request("baseline", controls())
    c.start(base_req)
    started(c, base_req, "baseline")
    assert c.session is shown and c.shown_request is spec_req and c.beside
    assert len(c.heard.said("beside")) == 1 and len(c.heard.said("started")) == 1
    c.on_events(base_req.run_id, [ev(0, (), 0, (3,)), ev(1, (), 0, (4,), finish="n_predict")])
    assert len(c.heard.said("events")) == 1          # the baseline's rounds are not shown
    assert c.shown_upto == 2
    c.on_finished(base_req.run_id, "n_predict")      # over at once: nothing to show
    [_, ended] = c.heard.said("finished")
    assert ended.beside and ended.session is not shown
    assert shown.baseline is ended.session.baseline and shown.speedup is not None


# ------------------------------------------------------------------ replay, seek, show
def test_a_replay_reveals_the_rounds_and_gives_way(c):
    assert not c.replay()                           # nothing to replay
    req = c.request("spec", controls())
    c.start(req)
    started(c, req)
    c.on_events(req.run_id, [ev(i) for i in range(4)])
    c.reveal(4)
    c.on_finished(req.run_id, "n_predict")
    assert c.replay() and c.state is S.REPLAYING and c.shown_upto == 0
    c.reveal(3)
    assert c.replaying and c.shown_upto == 3
    c.reveal(1)
    assert c.state is S.IDLE and c.shown_upto == 4
    assert c.replay()
    c.measure_started(object())                     # a measurement ends the replay
    assert c.state is S.MEASURING and c.shown_upto == 0
    assert not c.replay()                           # and none starts under it


def test_seeking_shows_a_prefix_and_ends_a_replay(c):
    req = c.request("spec", controls())
    c.start(req)
    started(c, req)
    c.on_events(req.run_id, [ev(i) for i in range(5)])
    assert not c.seek(2)                            # not while a run is in progress
    c.reveal(5)
    c.on_finished(req.run_id, "n_predict")
    assert c.seek(2) and c.shown_events == c.session.run.events[:2]
    assert c.seek(99) and c.shown_upto == 5
    c.replay()
    c.reveal(1)
    assert c.seek(3) and c.state is S.IDLE and c.shown_upto == 3


def test_showing_nothing_forgets_the_run_and_a_recording_is_adopted(c, tmp_path):
    req = c.request("spec", controls())
    c.start(req)
    started(c, req)
    c.on_events(req.run_id, [ev(0)])
    c.reveal(1)
    c.on_finished(req.run_id, "n_predict")
    c.show(None)
    assert c.session is None and c.workbench.last_spec is None and not c.has_rounds
    assert c.heard.said("session") == [None]


def test_the_stats_of_a_prefix_fold_on_and_start_over_going_back():
    from specscope.core.session.session import RunRecord
    run = RunRecord("spec")
    events = [ev(i, drafted=(5, 6, 7)[:1 + i % 3], n_acc=i % 2) for i in range(9)]
    run.append(events)
    for k in (0, 3, 4, 8, 2, 9, 5):
        assert run.stats_upto(k) == fold(events[:k])
    assert run.stats_upto(9) is run.stats
