"""core/ must stay usable without Qt: import every specscope.core module with PySide6 blocked."""

import subprocess
import sys
import textwrap
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"


def test_every_core_module_imports_without_qt():
    modules = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
    assert "engine" in modules and len(modules) >= 8
    script = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6"):
                    raise ImportError("Qt is blocked in core: " + name)
        sys.meta_path.insert(0, Block())
        for m in {modules!r}:
            importlib.import_module("specscope.core." + m)
        leaked = [m for m in sys.modules if m.split(".")[0] in ("PySide6", "pyqtgraph")]
        assert not leaked, leaked
        print("ok", len({modules!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok")
