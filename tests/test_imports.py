"""SpecScope's import graph, read from the source with ``ast`` (imports inside functions too):
no module imports itself back through others, core/ never imports app/ or Qt, and core/'s
packages import one way only: cli and session -> measure -> engine -> models."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"specscope.core": ROOT / "core", "specscope.app": ROOT / "app",
           "specscope.resources": ROOT / "resources"}
QT = ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6")
# a package may import the ones after it, never those before it (errors, plain and cache, at
# core's top, are imported by all)
LAYERS = ("cli", "session", "measure", "engine", "models")


def modules() -> dict[str, Path]:
    out = {}
    for pkg, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file, resolved to SpecScope's modules
    where it names one (``from pkg import module`` counts as importing the module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.append((sub if sub in known else mod, node.lineno))
    return out


def graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[str, int]]]]:
    mods = modules()
    known = set(mods)
    edges, raw = {}, {}
    for name, path in mods.items():
        raw[name] = imports_of(name, path, known)
        edges[name] = {m for m, _ in raw[name] if m in known and m != name}
    return edges, raw


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_the_source_has_all_its_modules():
    mods = modules()
    assert "specscope.core.engine.engine" in mods and "specscope.app.window" in mods
    assert len(mods) > 60


def test_no_module_imports_itself_back():
    edges, _ = graph()
    assert cycles(edges) == []


def test_core_never_imports_the_app_or_qt():
    _, raw = graph()
    bad = [f"{name} line {line}: {mod}" for name, imps in raw.items() if name.startswith("specscope.core")
           for mod, line in imps
           if mod.startswith("specscope.app") or mod.split(".")[0] in QT]
    assert bad == []


def test_cores_packages_import_one_way():
    edges, _ = graph()

    def layer(mod):
        parts = mod.split(".")
        return parts[2] if len(parts) > 3 and parts[:2] == ["specscope", "core"] and parts[2] in LAYERS \
            else None
    bad = sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets
                 if layer(a) and layer(b) and LAYERS.index(layer(b)) < LAYERS.index(layer(a)))
    assert bad == []


def test_the_graph_finds_what_it_looks_for(tmp_path):
    """The walker sees imports inside functions and relative imports, and finds a cycle."""
    src = tmp_path / "pkg"
    src.mkdir()
    (src / "__init__.py").write_text("")
    (src / "a.py").write_text("def f():\n    from . import b\n")
    (src / "b.py").write_text("from .a import f\nimport PySide6\n")
    saved = dict(SOURCES)
    SOURCES.clear()
    SOURCES["specscope.core"] = src
    try:
        edges, raw = graph()
    finally:
        SOURCES.clear()
        SOURCES.update(saved)
    assert cycles(edges) == [["specscope.core.a", "specscope.core.b"]]
    assert ("PySide6", 2) in raw["specscope.core.b"]


def test_every_core_module_imports_without_qt():
    """And at run time: every specscope.core module imports with PySide6 blocked."""
    names = sorted(m for m in modules() if m.startswith("specscope.core"))
    script = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {QT!r}:
                    raise ImportError("Qt is blocked in core: " + name)
        sys.meta_path.insert(0, Block())
        for m in {names!r}:
            importlib.import_module(m)
        leaked = [m for m in sys.modules if m.split(".")[0] in {QT!r}]
        assert not leaked, leaked
        print("ok", len({names!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok")
