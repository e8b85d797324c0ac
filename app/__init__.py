"""SpecScope's desktop front end (PySide6 + pyqtgraph)."""

import sys


def _pin_singletons() -> None:
    """Work around PySide6 6.12 on Python 3.11: its wrappers return None, True and
    False without taking a new reference (fine on 3.12+, where PEP 683 made them
    immortal), so every call of a void Qt method drops one reference to None, and
    after a few thousand calls Python aborts with "none_dealloc: deallocating None".
    Adding 2**40 references makes them immortal in practice. No-op on 3.12+.
    """
    if sys.version_info >= (3, 12) or not hasattr(sys, "getrefcount"):
        return
    import ctypes
    for obj in (None, True, False, Ellipsis, NotImplemented):
        ref = ctypes.c_ssize_t.from_address(id(obj))   # ob_refcnt is PyObject's first field
        if ref.value < 1 << 40:
            ref.value += 1 << 40


_pin_singletons()
