"""Build llama.cpp's RPC-enabled libraries and its ggml-rpc-server from the same source as
the installed llama-cpp-python (0.3.36), once, cached under ~/.cache/specscope/llama-rpc/.

The installed wheel is built without GGML_RPC. llama_cpp.llama_cpp loads its library from
LLAMA_CPP_LIB_PATH when that is set at import time, so the tests run a subprocess with
LLAMA_CPP_LIB_PATH=<build>/bin to get the same llama.cpp with RPC, and start
<build>/bin/ggml-rpc-server on 127.0.0.1.

Source, first found: $SPECSCOPE_LLAMA_SRC (a vendor/llama.cpp folder), the cached unpacked
sdist, else `pip download --no-binary llama-cpp-python llama-cpp-python==VERSION` (an sdist from the
package registry; it holds vendor/llama.cpp). Only the targets needed are built (llama, the
ggml libraries, ggml-rpc-server), with llama.cpp's default CPU flags as llama-cpp-python's own
default build uses them.

    python tests/helpers/rpc_build.py        # build (or find) it and print the folder

The pytest fixtures (tests/conftest.py: ``rpc_build``, ``rpc_server``) use ``ensure`` and
``start_server``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:
        return "0.3.36"


VERSION = _installed_version()     # the same llama.cpp as the installed binding
# not core.cache.cache_root(): the tests point that at a fresh folder every session
CACHE = Path(os.environ.get("SPECSCOPE_RPC_BUILD") or Path.home() / ".cache" / "specscope" / "llama-rpc" / VERSION)
CMAKE_ARGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DGGML_RPC=ON",
    "-DLLAMA_BUILD_COMMON=ON", "-DLLAMA_BUILD_TOOLS=ON",  # tools/rpc sits under tools/
    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
]
TARGETS = ["llama", "ggml-rpc-server"]


class BuildUnavailable(RuntimeError):
    """The RPC build cannot be made here; str() says why."""


def bin_dir() -> Path:
    return CACHE / "build" / "bin"


# x86 flags a native build may compile for (not the kernel's mitigations, which change with it)
ISA_PREFIXES = ("avx", "amx", "sse", "ssse", "fma", "f16c", "bmi", "popcnt", "movbe", "adx",
                "abm", "lzcnt", "gfni", "vaes", "vpclmul", "sha_ni", "aes", "pclmul")


def cpu_signature() -> str:
    """This CPU's instruction sets, hashed: llama.cpp's default build is native (-march=
    native), so a build made on another CPU (a cache shared between machines) may hold
    instructions this one lacks (AMX, AVX-512) and die of SIGILL."""
    import hashlib
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            line = next((line for line in f if line.startswith(("flags", "Features"))), "")
    except OSError:
        line = ""
    flags = line.split(":")[-1].split()
    if line.startswith("flags"):                          # x86: the instruction sets only
        flags = [f for f in flags if f.startswith(ISA_PREFIXES)]
    return hashlib.sha1(" ".join(sorted(flags)).encode()).hexdigest()[:12]


def _stamp() -> str:
    return f"{VERSION} {cpu_signature()}\n"


def built() -> bool:
    """Built here, on this CPU (the stamp names both)."""
    b = bin_dir()
    ok = CACHE / "ok"
    return ((b / "libllama.so").exists() and (b / "ggml-rpc-server").exists() and ok.exists()
            and ok.read_text() == _stamp())


def _run(cmd: list[str], log, cwd=None) -> None:
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    r = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise BuildUnavailable(f"{cmd[0]} {cmd[1]} failed (exit {r.returncode}); see {log.name}")


def _source(log) -> Path:
    env = os.environ.get("SPECSCOPE_LLAMA_SRC")
    if env:
        if not (Path(env) / "CMakeLists.txt").exists():
            raise BuildUnavailable(f"SPECSCOPE_LLAMA_SRC={env} holds no llama.cpp CMakeLists.txt")
        return Path(env)
    src = CACHE / "src" / f"llama_cpp_python-{VERSION}" / "vendor" / "llama.cpp"
    if (src / "CMakeLists.txt").exists():
        return src
    dl = CACHE / "sdist"
    dl.mkdir(parents=True, exist_ok=True)
    # the sdist only: build dependencies (cmake, scikit-build-core) as wheels, since
    # ``--no-binary :all:`` would compile them from source too (cmake alone takes many minutes)
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-python",
          "-d", str(dl), f"llama-cpp-python=={VERSION}"], log)
    tars = sorted(dl.glob("llama_cpp_python-*.tar.gz"))
    if not tars:
        raise BuildUnavailable(f"pip download left no llama_cpp_python sdist in {dl}")
    with tarfile.open(tars[-1]) as t:
        kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        t.extractall(CACHE / "src", **kw)
    if not (src / "CMakeLists.txt").exists():
        raise BuildUnavailable(f"the sdist {tars[-1].name} holds no vendor/llama.cpp")
    return src


def ensure(jobs: int | None = None) -> Path:
    """The folder holding libllama.so, the ggml libraries and ggml-rpc-server; builds them once
    (a lock file makes a second caller wait for the first; an interrupted build resumes)."""
    if built():
        return bin_dir()
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildUnavailable("cmake is not installed (pip install cmake)")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        raise BuildUnavailable("no C++ compiler (c++/g++) found")
    import fcntl
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built():
            return bin_dir()
        with open(CACHE / "build.log", "a") as log:
            build = CACHE / "build"
            began = build / "stamp"          # the CPU a build (finished or not) began on
            if build.exists() and (not began.exists() or began.read_text() != _stamp()):
                shutil.rmtree(build, ignore_errors=True)           # another CPU's: again
                (CACHE / "ok").unlink(missing_ok=True)
            if not (build / "CMakeCache.txt").exists():
                src = _source(log)
                gen = ["-G", "Ninja"] if shutil.which("ninja") else []
                _run([cmake, "-S", str(src), "-B", str(build), *gen, *CMAKE_ARGS], log)
                began.write_text(_stamp())
            _run([cmake, "--build", str(build), "--target", *TARGETS,
                  "-j", str(jobs or os.cpu_count() or 2)], log)
        (CACHE / "ok").write_text(_stamp())
    return bin_dir()


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(bin_path: Path, port: int | None = None, threads: int = 1):
    """(process, "127.0.0.1:PORT"): ggml-rpc-server listening on loopback only, greeted once
    (so it is ready). The caller terminates the process."""
    import time
    from specscope.core.models.devices import greet
    from specscope.core.errors import ConfigError
    port = port or free_port()
    endpoint = f"127.0.0.1:{port}"
    env = {**os.environ, "LD_LIBRARY_PATH": str(bin_path)}
    proc = subprocess.Popen([str(bin_path / "ggml-rpc-server"), "-H", "127.0.0.1", "-p", str(port),
                             "-t", str(threads)], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        try:
            greet(endpoint, timeout_s=2)
            return proc, endpoint
        except ConfigError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                err = proc.communicate()[1].decode("utf-8", "replace").strip().splitlines()[-3:]
                raise BuildUnavailable(f"ggml-rpc-server did not start on {endpoint}: {' '.join(err)}")
            time.sleep(0.1)


if __name__ == "__main__":
    try:
        print(ensure())
    except BuildUnavailable as e:
        sys.exit(f"rpc build: {e}")
