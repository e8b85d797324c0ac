"""The devices llama.cpp computes on, and remote ones through its RPC backend.

llama.cpp keeps a registry of backends and their devices (ggml-backend-reg): the CPU, any
GPU it was built for and, when built with ``GGML_RPC=ON``, ``rpc-server`` endpoints added
with ``ggml_backend_rpc_add_server`` (llama.cpp's ``--rpc HOST:PORT,...``; each endpoint
becomes devices named ``RPC0``, ``RPC1`` ... with the endpoint as their description). A model
is placed with ``llama_model_params.devices`` (``--device``/``-devd``: the devices its
offloaded layers may use, ``none`` for none) and ``n_gpu_layers`` (``-ngl``/``-ngld``: how
many layers leave the CPU; negative = all). This module reaches the registry through ctypes
against the ggml library that ``llama_cpp`` loaded, as llama.cpp's common/arg.cpp does.

Two things llama.cpp does not do gently, done here first:

* an endpoint that cannot be reached, refuses, or is not an rpc-server of a compatible
  protocol makes llama.cpp abort the whole process (``GGML_ABORT("Failed to connect ...")``).
  So every endpoint is first greeted from Python (a TCP connection and the protocol's HELLO,
  ``ggml-rpc.cpp``'s ``negotiate_hello``) and one clear error names the one that failed;
* rpc-server has no authentication and no encryption: llama.cpp warns never to expose it on
  an open network. :data:`SECURITY_WARNING` says so where an endpoint is entered.
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import socket
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import llama_cpp.llama_cpp as ll

from specscope.core.errors import ConfigError
from specscope.core.models.llama import ensure_backend

log = logging.getLogger("specscope.devices")

SECURITY_WARNING = ("rpc-server has no authentication and no encryption: anyone who can reach "
                    "its port can use it (its memory, its compute) and read what it computes. Never "
                    "expose it on an open network; use it on a trusted LAN, or through an SSH "
                    "tunnel to 127.0.0.1")
# --no-cache-dir: pip's wheel cache does not know CMAKE_ARGS and would reinstall the old build
RPC_INSTALL_STEP = ('CMAKE_ARGS="-DGGML_RPC=ON" pip install --force-reinstall --no-cache-dir '
                    '--no-deps --no-binary llama-cpp-python llama-cpp-python==0.3.36')
NO_RPC_REASON = ("this llama-cpp-python was built without llama.cpp's RPC backend "
                 f"(GGML_RPC); to place models on rpc-server hosts, rebuild it: {RPC_INSTALL_STEP}")
CONNECT_TIMEOUT_S = 3.0

# ggml-rpc.cpp's protocol: | cmd (1 byte) | request size (u64) | request | -> | size (u64) | response |
_RPC_CMD_HELLO = 14
_RPC_CONN_CAPS = 24
_RPC_PROTO_MAJOR, _RPC_PROTO_MINOR = 7, 0     # ggml-rpc.h RPC_PROTO_*_VERSION of llama.cpp 0.3.36

DEVICE_TYPES = {0: "CPU", 1: "GPU", 2: "iGPU", 3: "accelerator", 4: "meta"}
CPU_NOTE = ("not a --device: the CPU holds every layer that is not offloaded "
            "(-ngl 0, the default, keeps them all there)")


def rpc_supported() -> bool:
    """Whether the loaded llama.cpp was built with its RPC backend (``llama_supports_rpc``)."""
    ensure_backend()
    return bool(ll.llama_supports_rpc())


# ---------------------------------------------------------------------------- the ggml library

class _Ggml:
    """The ggml-backend registry functions of the libggml next to the loaded libllama."""

    def __init__(self):
        lib = ctypes.CDLL(str(Path(ll._lib._name).parent / "libggml.so"))
        p, s, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
        for name, res, args in (
                ("ggml_backend_dev_count", sz, []), ("ggml_backend_dev_get", p, [sz]),
                ("ggml_backend_dev_by_name", p, [s]), ("ggml_backend_dev_name", s, [p]),
                ("ggml_backend_dev_description", s, [p]), ("ggml_backend_dev_type", ctypes.c_int, [p]),
                ("ggml_backend_dev_memory", None, [p, ctypes.POINTER(sz), ctypes.POINTER(sz)]),
                ("ggml_backend_reg_by_name", p, [s]), ("ggml_backend_register", None, [p]),
                ("ggml_backend_reg_get_proc_address", p, [p, s])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.lib = lib


_ggml: _Ggml | None = None
_lock = threading.Lock()
_endpoints: dict[str, int] = {}   # endpoint -> first device index (registered in this process)
_held: dict[str, int] = {}        # endpoint -> models computing there now (hold/release)


def ggml() -> ctypes.CDLL:
    global _ggml
    if _ggml is None:
        ensure_backend()
        _ggml = _Ggml()
    return _ggml.lib


# ---------------------------------------------------------------------------- endpoints

def parse_endpoints(text: str | None) -> tuple[str, ...]:
    """``HOST:PORT[,HOST:PORT...]`` as llama.cpp's --rpc takes it, checked: ConfigError names
    the first malformed one."""
    if not text or not text.strip():
        return ()
    out = []
    for item in text.split(","):
        ep = item.strip()
        host, sep, port = ep.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"RPC endpoint {ep!r}: expected HOST:PORT (e.g. 192.168.1.20:50052)")
        if ep not in out:
            out.append(ep)
    return tuple(out)


def greet(endpoint: str, timeout_s: float = CONNECT_TIMEOUT_S) -> tuple[int, int, int]:
    """Connect to an rpc-server and exchange HELLO, as llama.cpp would; the server's protocol
    version. ConfigError, naming the endpoint, when it cannot be reached, refuses, answers
    nothing (busy with another client: rpc-server serves one at a time) or speaks another
    protocol. Nothing stays connected."""
    host, _, port = endpoint.rpartition(":")
    where = f"RPC endpoint {endpoint}"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(struct.pack("<BQ", _RPC_CMD_HELLO, _RPC_CONN_CAPS) + bytes(_RPC_CONN_CAPS))
            head = _recv(sock, 8)
            (size,) = struct.unpack("<Q", head)
            if size != 4 + _RPC_CONN_CAPS:
                raise ConfigError(f"{where} answered, but not as llama.cpp's rpc-server does")
            major, minor, patch = _recv(sock, size)[:3]
    except ConfigError:
        raise
    except socket.timeout:
        raise ConfigError(f"{where} did not answer within {timeout_s:.0f} s (a firewall, a wrong "
                          "address, or an rpc-server busy with another client)") from None
    except ConnectionRefusedError:
        raise ConfigError(f"{where} refused the connection: is rpc-server running there "
                          "(and listening on that address, not only on 127.0.0.1)?") from None
    except socket.gaierror as exc:
        raise ConfigError(f"{where}: unknown host ({exc.strerror})") from None
    except OSError as exc:
        raise ConfigError(f"{where} cannot be reached ({exc.strerror or exc})") from None
    if major != _RPC_PROTO_MAJOR or minor > _RPC_PROTO_MINOR:
        raise ConfigError(f"{where} runs RPC protocol {major}.{minor}.{patch}; this llama.cpp "
                          f"speaks {_RPC_PROTO_MAJOR}.{_RPC_PROTO_MINOR}: use an rpc-server "
                          "built from the same llama.cpp version")
    return major, minor, patch


def _recv(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConfigError(f"RPC endpoint {sock.getpeername()[0]}:{sock.getpeername()[1]} "
                              "closed the connection during the handshake (not an rpc-server, "
                              "or one of another llama.cpp version)")
        data += chunk
    return data


def add_rpc_servers(endpoints) -> None:
    """Register endpoints as llama.cpp's ``--rpc`` does (``ggml_backend_rpc_add_server`` and
    ``ggml_backend_register``), each once per process, after greeting it (``greet``)."""
    endpoints = parse_endpoints(endpoints) if isinstance(endpoints, str) else tuple(endpoints)
    if not endpoints:
        return
    if not rpc_supported():
        raise ConfigError(NO_RPC_REASON)
    lib = ggml()
    with _lock:
        for ep in endpoints:      # every time: a server may have gone since it was registered
            if not _held.get(ep):
                greet(ep)
        new = [ep for ep in endpoints if ep not in _endpoints]
        if not new:
            return
        reg = lib.ggml_backend_reg_by_name(b"RPC")
        add = lib.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_rpc_add_server") if reg else None
        if not add:
            raise ConfigError("llama.cpp's RPC backend is missing from its device registry")
        add_server = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)(add)
        for ep in new:
            if not is_loopback(ep):
                log.warning("%s: %s", ep, SECURITY_WARNING)
            first = lib.ggml_backend_dev_count()
            server_reg = add_server(ep.encode())
            if not server_reg:
                raise ConfigError(f"RPC endpoint {ep} offers no devices")
            lib.ggml_backend_register(server_reg)
            _endpoints[ep] = first


def is_loopback(endpoint: str) -> bool:
    host = endpoint.rpartition(":")[0].strip("[]")
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def rpc_device_names(endpoint: str) -> tuple[str, ...]:
    """The device names (RPC0 ...) llama.cpp gave a registered endpoint's devices."""
    lib = ggml()
    devs = (lib.ggml_backend_dev_get(i) for i in range(lib.ggml_backend_dev_count()))
    return tuple(lib.ggml_backend_dev_name(d).decode() for d in devs
                 if (lib.ggml_backend_dev_description(d) or b"").decode() == endpoint)


def hold(endpoints) -> None:
    """A model now computes there: llama.cpp keeps a connection open while it lives (rpc-server
    serves one client at a time, so greeting it again would wait for ourselves)."""
    with _lock:
        for ep in endpoints:
            _held[ep] = _held.get(ep, 0) + 1


def release(endpoints) -> None:
    with _lock:
        for ep in endpoints:
            _held[ep] = max(0, _held.get(ep, 0) - 1)


def _endpoint_of(description: str) -> str | None:
    return description if description in _endpoints else None


# ---------------------------------------------------------------------------- devices

@dataclass(frozen=True)
class Device:
    name: str            # what --device takes: CPU, CUDA0, RPC0 ...
    description: str     # for an RPC device: its endpoint
    type: str            # CPU | GPU | iGPU | accelerator
    free: int            # bytes
    total: int

    def line(self) -> str:
        mib = 1024 * 1024
        return (f"{self.name:<8} {self.type:<11} {self.free // mib:>9} / {self.total // mib:>7} MiB  "
                f"{self.description}" + (f"; {CPU_NOTE}" if self.type == "CPU" else ""))


def list_devices() -> list[Device]:
    """Every device llama.cpp sees now (RPC endpoints once registered), with its memory."""
    lib = ggml()
    out = []
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        description = (lib.ggml_backend_dev_description(dev) or b"").decode()
        endpoint = _endpoint_of(description)
        free.value = total.value = 0
        reachable = True
        if endpoint and not _held.get(endpoint):
            try:           # llama.cpp would abort on a server gone since it was registered
                greet(endpoint)
            except ConfigError as exc:
                reachable, description = False, str(exc)
        if reachable:
            lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        out.append(Device((lib.ggml_backend_dev_name(dev) or b"").decode(), description,
                          DEVICE_TYPES.get(lib.ggml_backend_dev_type(dev), "?"),
                          free.value, total.value))
    return out


def parse_devices(text: str | None) -> tuple[str, ...] | None:
    """``--device`` text to names: None for llama.cpp's default (every GPU and RPC device),
    () for ``none`` (no offload)."""
    if text is None or not text.strip():
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    return () if names == ("none",) else names


def device_array(names: tuple[str, ...] | None, role: str):
    """A NULL-terminated ``ggml_backend_dev_t`` array for ``llama_model_params.devices``
    (None: llama.cpp's default choice). ConfigError names an unknown device, or the CPU,
    which llama.cpp's --device refuses too (the CPU holds what is not offloaded)."""
    if names is None:
        return None
    lib = ggml()
    devs = []
    for name in names:
        dev = lib.ggml_backend_dev_by_name(name.encode())
        if dev and lib.ggml_backend_dev_type(dev) == 0:
            raise ConfigError(f"the {role}'s device {name!r} is {CPU_NOTE}; llama.cpp's --device "
                              "refuses it too")
        if not dev:
            known = ", ".join(d.name for d in list_devices() if d.type != "CPU") or "none"
            raise ConfigError(f"the {role}'s device {name!r} is not one llama.cpp offers "
                              f"(devices: {known}; RPC devices appear once --rpc names their "
                              "endpoint)")
        devs.append(dev)
    return (ctypes.c_void_p * (len(devs) + 1))(*devs, None)


def is_remote(names: tuple[str, ...] | None, gpu_layers: int, rpc=()) -> bool:
    """Whether a model placed so computes on an RPC device: named (RPC0 ...), or llama.cpp's
    default devices while endpoints are registered (it puts RPC devices first)."""
    if gpu_layers == 0 or names == ():
        return False
    return bool(rpc) if names is None else any(n.startswith("RPC") for n in names)


def placement(names: tuple[str, ...] | None, gpu_layers: int, rpc=()) -> str:
    """Where a model placed so computes, in words (the calibration's key and reports)."""
    if gpu_layers == 0 or names == ():
        return "local CPU"
    layers = "all layers" if gpu_layers < 0 else f"{gpu_layers} layers"
    if names is None:
        return f"{layers} on " + (", ".join(f"RPC {ep}" for ep in rpc) or "the local GPU(s)")
    return f"{layers} on {', '.join(names)}" + (f" (RPC {', '.join(rpc)})" if rpc else "")
