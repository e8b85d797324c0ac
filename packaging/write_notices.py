"""Write packaging/licenses/: the licence texts the SpecScope bundle carries, copied from the
installed distributions' metadata (each dist-info's License-File entries), llama.cpp's
source, Python's own LICENSE.txt and the system's FSF copies of the (L)GPL; and its index,
THIRD_PARTY_NOTICES.md. The bundle (packaging/specscope.spec) copies the folder as licenses/.

    python packaging/write_notices.py --llama-cpp PATH/TO/llama.cpp   (the vendored source)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "licenses"
FSF = Path("/usr/share/common-licenses")     # Debian's copies of the FSF licence texts

# distribution -> (what it is in the bundle, SPDX licence, where its source is)
DISTRIBUTIONS = {
    "llama_cpp_python": ("the Python bindings SpecScope's engine calls (llama_cpp)", "MIT",
                         "https://github.com/abetlen/llama-cpp-python"),
    "PySide6_Essentials": ("Qt for Python: the window (with the Qt 6 libraries it ships)",
                           "LGPL-3.0-only", "https://code.qt.io/cgit/pyside/pyside-setup.git/"),
    "shiboken6": ("Qt for Python's binding runtime", "LGPL-3.0-only",
                  "https://code.qt.io/cgit/pyside/pyside-setup.git/"),
    "pyqtgraph": ("the plots", "MIT", "https://github.com/pyqtgraph/pyqtgraph"),
    "numpy": ("arrays (with OpenBLAS, LAPACK and the GCC Fortran runtime in numpy.libs)",
              "BSD-3-Clause AND others (see numpy/LICENSE.txt)", "https://github.com/numpy/numpy"),
    "Jinja2": ("chat templates", "BSD-3-Clause", "https://github.com/pallets/jinja/"),
    "MarkupSafe": ("Jinja2's string escaping", "BSD-3-Clause",
                   "https://github.com/pallets/markupsafe/"),
    "diskcache": ("imported by llama_cpp", "Apache-2.0",
                  "https://github.com/grantjenks/python-diskcache"),
    "gguf": ("a SpecScope dependency for its tests and tools; not in the bundle", "MIT",
             "https://github.com/ggml-org/llama.cpp/tree/master/gguf-py"),
}

LGPL_NOTE = """\
## Qt for Python and Qt (LGPL-3.0)

PySide6 and shiboken6 (Qt for Python) and the Qt 6 libraries they ship
(libQt6Core, libQt6Gui, libQt6Widgets, libQt6Svg, libQt6OpenGL, libQt6OpenGLWidgets,
libQt6DBus, libQt6XcbQpa, the ICU libraries and the Qt plugins) are used under the GNU Lesser
General Public License version 3 (`LGPL-3.0.txt`, which adds to the GNU General Public License
version 3, `GPL-3.0.txt`). SpecScope does not modify them. The one-folder bundle keeps every one
of them as a separate shared library, unmodified, under `_internal/PySide6/` (`Qt/lib/`,
`Qt/plugins/`) and `_internal/shiboken6/`: replace any of them with a compatible build of your
own (the same Qt 6 minor version or newer; the Python modules `PySide6/Qt*.abi3.so` load them by
their sonames) and SpecScope uses yours. The bundle is built from the PyPI wheels
PySide6-Essentials {pyside} and shiboken6 {shiboken}, which ship Qt {qt}; their complete source
is the `pyside-setup` source archive of that version at
https://download.qt.io/official_releases/QtForPython/pyside6/ and Qt's
(`qt-everywhere-src-{qt}`) at https://download.qt.io/official_releases/qt/, also in the
repositories https://code.qt.io/cgit/pyside/pyside-setup.git/ and https://code.qt.io/cgit/qt/. On request
the SpecScope contributors will point you to the exact source they used.
"""

MODELS_NOTE = """\
## The demo models (PSF-2.0)

`resources/models/demo-target.gguf`, `demo-draft.gguf` and `demo-draft-foreign-vocab.gguf` were
trained for SpecScope on the Python source of the CPython 3.11.7 standard library (see the
models' card, `resources/models/README.md`, in the bundle at
`_internal/specscope/resources/models/README.md`). From the card: "the CPython standard library
is distributed under the Python Software Foundation License Version 2 (PSF License); the models
are derived from it. The weights themselves ship as part of SpecScope." The PSF License, with
PSF's notice of copyright, is in `Python-LICENSE.txt` (the section "PYTHON SOFTWARE FOUNDATION
LICENSE VERSION 2"). The summary of changes its clause 3 asks for: the models contain no Python
source; they are weights of small language models trained on that source (the card's "Corpus"
and "Training" say which files and how).
"""


def license_files(dist: metadata.Distribution) -> list[tuple[str, Path]]:
    """(name as the metadata gives it, installed path) of each licence file of ``dist``."""
    names = dist.metadata.get_all("License-File") or []
    files = {str(f): f for f in dist.files or ()}
    found = []
    for name in names:
        for candidate in (f"licenses/{name}", name):
            match = [f for key, f in files.items() if key.endswith(".dist-info/" + candidate)]
            if match:
                found.append((name, Path(match[0].locate())))
                break
        else:
            raise SystemExit(f"{dist.metadata['Name']}: its licence file {name} is not installed")
    if not found:          # an older wheel: the dist-info's LICENSE* files
        found = [(f.name, Path(f.locate())) for f in dist.files or ()
                 if ".dist-info/" in str(f) and f.name.upper().startswith(("LICEN", "COPYING"))]
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llama-cpp", type=Path, required=True,
                   help="llama.cpp's source (llama-cpp-python's sdist: vendor/llama.cpp)")
    args = p.parse_args(argv)
    from PySide6.QtCore import qVersion
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()

    rows = []
    llama_license = args.llama_cpp / "LICENSE"
    shutil.copy2(llama_license, OUT / "llama.cpp-LICENSE.txt")
    rows.append(("llama.cpp (libllama, libggml, libggml-base, libggml-cpu)",
                 metadata.version("llama_cpp_python") + " (vendored)",
                 "the inference engine, in `_internal/llama_cpp/lib/`", "MIT",
                 "`llama.cpp-LICENSE.txt`", "https://github.com/ggml-org/llama.cpp"))

    for name, (role, spdx, source) in DISTRIBUTIONS.items():
        dist = metadata.distribution(name)
        files = license_files(dist)
        for shown, path in files:
            dest = OUT / name / shown
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        where = ", ".join(f"`{name}/{shown}`" for shown, _ in files)
        if name == "numpy":
            where = "`numpy/LICENSE.txt` and, under `numpy/numpy/`, the licences of the code it bundles"
        elif name in ("PySide6_Essentials", "shiboken6"):
            where = "`LGPL-3.0.txt`, `GPL-3.0.txt` (the wheel ships no licence file)"
        rows.append((name, dist.version, role, spdx, where, source))

    shutil.copy2(FSF / "LGPL-3", OUT / "LGPL-3.0.txt")
    shutil.copy2(FSF / "GPL-3", OUT / "GPL-3.0.txt")
    python_license = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    shutil.copy2(python_license, OUT / "Python-LICENSE.txt")
    rows.append(("Python (the interpreter, libpython, the standard library)",
                 sys.version.split()[0], "runs SpecScope", "PSF-2.0", "`Python-LICENSE.txt`",
                 "https://www.python.org/downloads/source/"))

    lines = [
        "# Third-party notices",
        "",
        "SpecScope is MIT-licensed (`LICENSE`, Copyright (c) 2026 SpecScope contributors). Its",
        "one-folder bundle (`packaging/specscope.spec`) also contains the software below, each",
        "under its own licence; the texts are in this folder (`licenses/` beside the",
        "executable). Written by `packaging/write_notices.py` from the installed packages'",
        "metadata.",
        "",
        "| component | version | in SpecScope | licence | text | source |",
        "|---|---|---|---|---|---|",
        *(f"| {' | '.join(row)} |" for row in rows),
        "",
        LGPL_NOTE.format(pyside=metadata.version("PySide6_Essentials"),
                         shiboken=metadata.version("shiboken6"), qt=qVersion()),
        MODELS_NOTE,
        "## The rest of the bundle",
        "",
        "- PyInstaller's bootloader (the `specscope` executable's launcher) is GPL-2.0-or-later "
        "with an exception that lets a bundle it builds be distributed under any licence "
        "(https://github.com/pyinstaller/pyinstaller).",
        "- The C and C++ runtime libraries and the other system libraries the bundle copies from "
        "the build machine (libstdc++, libgcc_s and libgomp under GPL-3.0 with the GCC Runtime "
        "Library Exception; OpenSSL under Apache-2.0; SQLite, public domain; libffi, bzip2, xz, "
        "...): their licences are in `system/`, written when the bundle is built (the Debian "
        "`copyright` file of each library's package).",
        "- The desktop's own libraries (X11, xcb, OpenGL, fontconfig, freetype, GLib, D-Bus) are "
        "not in the bundle: they come from the system.",
        "",
    ]
    (OUT / "THIRD_PARTY_NOTICES.md").write_text("\n".join(lines), encoding="utf-8")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
