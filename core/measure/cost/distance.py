"""The cost of distance: the same pair calibrated under several placements (local, the target
on an rpc-server, both there), side by side in milliseconds.

Every placement's calibration (core/measure/cost/calibrate.py) times real decodes where the models run, so
a remote target's ``t1·c(k)`` holds the round trip: sending the batch, computing there, and
bringing the k rows of logits back. Against the local calibration of the same pair the
difference per k is what the network costs a verification of k tokens; ``f·t1`` is a draft
token where the draft runs; a round with a draft of n tokens costs about
``n·f·t1 + t1·c(n + 1)`` (drafting, then verifying seed and draft; sync and Python left out).

``specscope bench --rpc HOST:PORT --placements local,target-remote,both-remote`` prints this.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from specscope.core.errors import ConfigError
from specscope.core.measure.cost.calibrate import calibrate_pair
from specscope.core.measure.cost.model import round_cost
from specscope.core.measure.progress import Progress, quiet, share
from specscope.core.models.devices import add_rpc_servers

PLACEMENTS = ("local", "target-remote", "draft-remote", "both-remote")


def placement_settings(engine, name: str, rpc_devices: tuple[str, ...]):
    """EngineSettings for a named placement: the models' layers all on ``rpc_devices``
    (the devices of one endpoint) or kept on the local CPU."""
    if name not in PLACEMENTS:
        raise ConfigError(f"placement {name!r}: expected one of {', '.join(PLACEMENTS)}")
    remote = {"target": name in ("target-remote", "both-remote"),
              "draft": name in ("draft-remote", "both-remote")}
    if any(remote.values()) and not rpc_devices:
        raise ConfigError(f"placement {name} needs an rpc-server: give --rpc HOST:PORT")
    kw = {}
    for role, there in remote.items():
        kw[f"{role}_devices"] = rpc_devices if there else ()
        kw[f"{role}_gpu_layers"] = -1 if there else 0
    return replace(engine, **kw)


def cost_lines(cals: dict) -> list[str]:
    """Per placement (name -> Calibration), in ms: the target token t1, a verification of k
    tokens t1·c(k) and, against the first placement, what distance adds to it; the draft token
    f·t1; the round n·f·t1 + t1·c(n + 1) for n = k − 1."""
    if not cals:
        return []
    names = list(cals)
    base = cals[names[0]]
    k_max = min(c.k_max for c in cals.values())
    ks = range(1, k_max + 1)
    width = max(17, *(len(n) + 5 for n in names))
    head = "".join(f"{'k=' + str(k):>9}" for k in ks)
    lines = [f"cost of distance (ms; each placement calibrated where its models run; "
             f"differences against {names[0]}):",
             f"{'verify k tokens':<{width}}{head}"]
    for name in names:
        cal = cals[name]
        lines.append(f"{name:<{width}}" + "".join(f"{cal.t1 * cal.cost(k) * 1e3:9.2f}" for k in ks))
    for name in names[1:]:
        cal = cals[name]
        lines.append(f"{'  + ' + name:<{width}}" + "".join(
            f"{(cal.t1 * cal.cost(k) - base.t1 * base.cost(k)) * 1e3:+9.2f}" for k in ks))
    lines.append(f"{'draft token f·t1':<{width}}" + "".join(
        f"  {n}: {cals[n].f * cals[n].t1 * 1e3:.2f}" for n in names if cals[n].has_draft))
    lines.append(f"{'round, n = k-1':<{width}}" + "".join(f"{'n=' + str(k - 1):>9}" for k in ks))
    for name in names:
        cal = cals[name]
        f = cal.f if cal.has_draft else 0.0
        lines.append(f"{name:<{width}}" + "".join(
            f"{((k - 1) * f + cal.cost(k)) * cal.t1 * 1e3:9.2f}" for k in ks))
    return lines


# ============================================================================ the window's account

@dataclass(frozen=True)
class RoundAccount:
    """One round of the calibrated model (core/measure/cost/model.py's ``round_cost``) in seconds, where
    the models run: drafting, the verification batch, and the rest (sampling, the draft's
    sync, the rollback, Python); ``token`` is what the target alone pays per token there."""

    draft: float
    verify: float
    rest: float
    token: float
    tokens: float            # tokens a round yields, 1 + E

    @property
    def total(self) -> float:
        return self.draft + self.verify + self.rest

    @property
    def speedup(self) -> float:
        return self.tokens * self.token / self.total if self.total > 0 else 0.0


def round_account(cal, n: int, acceptance, sync: str = "reuse",
                  n_draft: float | None = None) -> RoundAccount:
    """The calibrated round of draft length ``n`` (``acceptance``: a_1..a_n, unconditional;
    ``n_draft``: the mean number of draft decodes when it is not n) in seconds."""
    c = round_cost(cal, n, acceptance, sync, n_draft=n_draft)
    t1 = cal.t1
    return RoundAccount(draft=c.draft * t1, verify=c.verify * t1,
                        rest=(c.sampling + c.sync + c.overhead) * t1,
                        token=c.baseline * t1, tokens=c.tokens)


@dataclass(frozen=True)
class Distance:
    """The pair calibrated twice: on this machine's CPU and where the settings place it."""

    placement: dict          # role -> where it computes, in words (core/devices.placement)
    local: object            # Calibration
    placed: object           # Calibration
    from_cache: tuple[bool, bool] = (False, False)

    @property
    def k_max(self) -> int:
        return min(self.local.k_max, self.placed.k_max)

    def verify_s(self, k: int) -> tuple[float, float]:
        """A verification batch of k tokens, (this machine, as placed), in seconds."""
        return tuple(c.t1 * c.cost(k) for c in (self.local, self.placed))

    def rounds(self, n: int, acceptance, sync: str = "reuse",
               n_draft: float | None = None) -> tuple[RoundAccount, RoundAccount]:
        """The same round, (this machine, as placed); needs a draft model."""
        return tuple(round_account(c, n, acceptance, sync, n_draft) for c in (self.local, self.placed))


def measure_distance(target, draft, engine_settings, *, k_max: int, sampler=None,
                     n_past: int | None = None, refresh: bool = False,
                     progress: Progress | None = None, stop=None, **calibration) -> Distance:
    """Calibrate the pair on this machine's CPU, then as ``engine_settings`` place it (each
    cached like any calibration, core/measure/cost/calibrate.py ``get_calibration``); raises
    CalibrationStopped when ``stop`` is set; ``calibration``: more of ``get_calibration``'s
    keywords (reps, time_budget_s)."""
    say = progress or quiet
    add_rpc_servers(engine_settings.rpc)      # a dead endpoint fails now, not after the first half
    placements = (("this machine", replace(placement_settings(engine_settings, "local", ()), rpc=())),
                  ("as placed", engine_settings))
    cals, cached, where = [], [], {}
    for i, (name, settings) in enumerate(placements):
        cal, hit, where = calibrate_pair(
            target, draft, settings, k_max, sampler=sampler, n_past=n_past, refresh=refresh,
            stop=stop, **calibration,
            progress=lambda d, t, what, _i=i, _n=name: say(_i + share(d, t), 2, f"{_n}: {what}"))
        cals.append(cal)
        cached.append(hit)
    say(1, 1, "done")
    return Distance(placement=where, local=cals[0], placed=cals[1], from_cache=tuple(cached))
