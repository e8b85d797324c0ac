"""The cost of distance: the same pair calibrated under several placements (local, the target
on an rpc-server, both there), side by side in milliseconds.

Every placement's calibration (core/calibrate.py) times real decodes where the models run, so
a remote target's ``t1·c(k)`` holds the round trip: sending the batch, computing there, and
bringing the k rows of logits back. Against the local calibration of the same pair the
difference per k is what the network costs a verification of k tokens; ``f·t1`` is a draft
token where the draft runs; a round with a draft of n tokens costs about
``n·f·t1 + t1·c(n + 1)`` (drafting, then verifying seed and draft; sync and Python left out).

``specscope bench --rpc HOST:PORT --placements local,target-remote,both-remote`` prints this.
"""

from __future__ import annotations

from dataclasses import replace

PLACEMENTS = ("local", "target-remote", "draft-remote", "both-remote")


def placement_settings(engine, name: str, rpc_devices: tuple[str, ...]):
    """EngineSettings for a named placement: the models' layers all on ``rpc_devices``
    (the devices of one endpoint) or kept on the local CPU."""
    from .errors import ConfigError
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
