"""The states of a window's run controller (core/session/controller.py), the transitions
allowed between them, and the sentences that refuse a second holder of the cores: what one
window does with the machine at a time."""

from __future__ import annotations

from enum import Enum


class RunState(Enum):
    IDLE = "idle"               # nothing holds the cores
    RUNNING = "running"         # a run generates (Run, Baseline, Re-run, Continue)
    STEPPING = "stepping"       # a step-mode run computes its next round
    PAUSED = "paused"           # a step-mode run waits for Step (the next round) or Continue
    REPLAYING = "replaying"     # the views play the session shown again (no model runs)
    MEASURING = "measuring"     # a measurement of the cost tab holds the cores
    SWEEPING = "sweeping"       # a Compare sweep holds the cores


S = RunState
RUNS = frozenset({S.RUNNING, S.STEPPING, S.PAUSED})      # a run is in progress
FREE = frozenset({S.IDLE, S.REPLAYING})                  # the cores are free (a replay needs none)
# A replay gives way to whatever starts (the views stay at the round it reached); the cores
# serve one of a run, a measurement and a sweep at a time.
TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    S.IDLE: frozenset({S.RUNNING, S.STEPPING, S.REPLAYING, S.MEASURING, S.SWEEPING}),
    S.REPLAYING: frozenset({S.IDLE, S.REPLAYING, S.RUNNING, S.STEPPING, S.MEASURING, S.SWEEPING}),
    S.RUNNING: frozenset({S.IDLE}),                      # finished, stopped or failed
    S.STEPPING: frozenset({S.PAUSED, S.IDLE}),           # the round shown, or the run's end
    S.PAUSED: frozenset({S.STEPPING, S.RUNNING, S.IDLE}),    # Step, Continue, Stop
    S.MEASURING: frozenset({S.IDLE}),
    S.SWEEPING: frozenset({S.IDLE}),
}

# the sentences that refuse the cores (RunController.refusal)
SWEEPING_IN = "{} is running in the {} tab: stop it there (or let it finish) before starting {}."
SWEEP_RUNNING = SWEEPING_IN.format("A sweep", "Compare", "a run")
MEASURING = ("A measurement is running in the Cost model tab (a calibration, the distance or the "
             "synthetic sweep): let it finish or stop it before starting {}.")
RUN_IN_PROGRESS = ("A run is in progress in the Run tab: stop it there (Esc) or let it finish "
                   "before starting {}.")
SHARED_CORES = ("wait until the run, the Compare sweep, the advisor or the other measurement ends: "
                "both would share the cores")


class TransitionError(RuntimeError):
    """A transition ``TRANSITIONS`` does not allow (a bug in the caller, not the user's doing)."""
