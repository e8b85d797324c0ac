"""Placement flags, named as llama.cpp names them (common/arg.cpp), and ``specscope devices``.

    specscope devices [--rpc HOST:PORT,...] [--json]   the devices llama.cpp sees, with memory
    specscope run --rpc 192.168.1.20:50052 --device RPC0          the target on that host
    specscope run --rpc 127.0.0.1:50052 -dev RPC0 -devd RPC0      both models there

``-ngl``/``-ngld`` take a number of layers or ``all``; when ``--device``/``-devd`` names
devices and no layer count is given, every layer goes there. Without either a model stays on
the local CPU (``--rpc`` alone only registers the endpoints).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from specscope.core.models.devices import (NO_RPC_REASON, SECURITY_WARNING, add_rpc_servers,
                                           list_devices, parse_devices, parse_endpoints,
                                           rpc_supported)


def _layers(text: str) -> int:
    if text == "all":
        return -1
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of layers or 'all', not {text!r}")
    if n < 0:
        raise argparse.ArgumentTypeError("a number of layers must be >= 0 (or 'all')")
    return n


def add_placement_args(g) -> None:
    g.add_argument("-ngl", "--gpu-layers", type=_layers, default=None, metavar="N|all",
                   help="target layers offloaded to its devices (default 0; all when --device is given)")
    g.add_argument("-ngld", "--gpu-layers-draft", type=_layers, default=None, metavar="N|all",
                   help="draft layers offloaded to its devices (default 0; all when -devd is given)")
    g.add_argument("--rpc", metavar="HOST:PORT[,...]", default=None,
                   help="llama.cpp rpc-server endpoints to register as devices RPC0, RPC1 ... "
                        "(needs llama.cpp built with GGML_RPC; see docs/rpc.md). " + SECURITY_WARNING)
    g.add_argument("-dev", "--device", metavar="DEV[,DEV...]", default=None,
                   help="devices for the target's offloaded layers, as `specscope devices` lists "
                        "them (none = keep it local; default: llama.cpp's choice)")
    g.add_argument("-devd", "--device-draft", metavar="DEV[,DEV...]", default=None,
                   help="devices for the draft's offloaded layers (none = keep it local)")


def placement_kwargs(args) -> dict:
    """EngineSettings' placement fields from the flags."""
    kw = {"rpc": parse_endpoints(getattr(args, "rpc", None))}
    for role, dev_flag, ngl_flag in (("target", "device", "gpu_layers"),
                                      ("draft", "device_draft", "gpu_layers_draft")):
        names = parse_devices(getattr(args, dev_flag, None))
        layers = getattr(args, ngl_flag, None)
        kw[f"{role}_devices"] = names
        kw[f"{role}_gpu_layers"] = (-1 if names else 0) if layers is None else layers
    return kw


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("devices", help="list the devices llama.cpp sees (and RPC endpoints)",
                              description="List the devices llama.cpp sees: name (what --device "
                                          "takes), type, free/total memory, description.")
    p.add_argument("--rpc", metavar="HOST:PORT[,...]", default=None,
                   help="also register these rpc-server endpoints. " + SECURITY_WARNING)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    return p


def run(args) -> int:
    endpoints = parse_endpoints(args.rpc)
    supported = rpc_supported()
    if endpoints:
        add_rpc_servers(endpoints)
    devices = list_devices()
    if args.json:
        json.dump({"rpc_supported": supported, "rpc": list(endpoints),
                   "devices": [asdict(d) for d in devices]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(f"{'name':<8} {'type':<11} {'free / total MiB':>23}  description")
    for d in devices:
        print(d.line())
    print("RPC: " + ("supported (--rpc HOST:PORT adds rpc-server endpoints as devices)"
                     if supported else NO_RPC_REASON))
    return 0
