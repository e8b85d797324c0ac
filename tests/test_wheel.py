"""SpecScope as a wheel installs it (pip install ., pipx install): `pip wheel .`, installed with no
dependencies into a fresh virtual environment that reuses the installed ones, must hold every
module of core/ and app/ (imported from that environment, not from this checkout), every file of
resources/ (the demo pair, the prompts, the icons), and a `specscope` whose `run -n 8` runs on the
demo pair. A package list written by hand once left specscope.core.drafters out of the wheel."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"core": "specscope.core", "app": "specscope.app", "resources": "specscope.resources"}

# run in the new environment: where each module comes from, and the files of its resources
LOOK = """
import importlib, json, sys
from pathlib import Path
found = {name: importlib.import_module(name).__file__ for name in json.loads(sys.argv[1])}
import specscope.resources
res = Path(specscope.resources.__file__).parent
files = [p.relative_to(res).as_posix() for p in res.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
print(json.dumps({"modules": found, "resources": sorted(files)}))
"""


def checkout_modules() -> list[str]:
    """Every module of the checkout's core/ and app/ (and resources/' package), by its name when
    installed; not the __main__ modules, which run the program when imported."""
    names = []
    for folder, package in FOLDERS.items():
        for p in sorted((ROOT / folder).rglob("*.py")):
            parts = p.relative_to(ROOT / folder).with_suffix("").parts
            if "__pycache__" in parts or parts[-1] == "__main__":
                continue
            names.append(".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts))))
    return names


def checkout_resources() -> list[str]:
    folder = ROOT / "resources"
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc"))


def build_wheel(tmp: Path) -> Path:
    """`pip wheel . --no-deps` on a copy of the checkout without its build outputs: setuptools
    puts a stale build/lib of an earlier build into the wheel too, which would hide a package the
    configuration leaves out."""
    src = tmp / "src"
    outputs = {".git", "build", "dist", ".pytest_cache", "tests"}
    shutil.copytree(ROOT, src, ignore=lambda d, names: [
        n for n in names if n == "__pycache__" or n.endswith(".egg-info")
        or (Path(d) == ROOT and n in outputs)])
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q",
                          "-w", str(tmp / "wheel")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (wheel,) = (tmp / "wheel").glob("specscope-*.whl")
    return wheel


def fresh_env(tmp: Path, wheel: Path) -> Path:
    """A virtual environment that sees the installed dependencies (the system's, and this
    interpreter's own where it is a virtual environment itself), with the wheel installed."""
    env = tmp / "venv"
    venv.create(env, system_site_packages=True, with_pip=True)
    python = env / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # after the environment's own site-packages, so that its copy of specscope comes first
    (Path(purelib) / "outer-site-packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    out = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return env


def test_the_wheel_installs_a_whole_specscope(tmp_path):
    env = fresh_env(tmp_path, build_wheel(tmp_path))
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    modules = checkout_modules()
    assert "specscope.core.engine.drafters.ngram_mod" in modules
    out = subprocess.run([env / "bin" / "python", "-c", LOOK, json.dumps(modules)], cwd=tmp_path,
                         env=environ, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout)
    elsewhere = {m: f for m, f in found["modules"].items() if not Path(f).is_relative_to(env)}
    assert not elsewhere, f"imported from outside the environment {env}: {elsewhere}"
    assert found["resources"] == checkout_resources()

    run = subprocess.run([env / "bin" / "specscope", "run", "-n", "8"], cwd=tmp_path, env=environ,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "generated: 8 tokens" in run.stdout, run.stdout
