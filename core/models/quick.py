"""llama.cpp's quick calls, made holding the GIL: ``quick.llama_memory_seq_rm(...)`` is
``llama_cpp.llama_cpp.llama_memory_seq_rm(...)`` without letting go of the GIL.

ctypes lets go of the GIL around every call into a CDLL and takes it back after. Beside another
thread that runs Python (the window's UI thread: text, numbers, plots), taking it back waits for
that thread to give it up, a handoff between two threads on two cores each time. A round makes
about twenty calls that return in microseconds (a cache trim, a sampler over a row, a vocabulary
lookup, the logits' address) beside its few decodes; these keep the GIL (``ctypes.PyDLL``: the
same library, the same argument types), while decodes, synchronisation and loads, which can
take milliseconds, still let it go. On the demo pair, beside a thread that ran Python 15 % of
the time, the engine kept 90.3 % of its speed alone before and 92.7 % with these (medians over
6 processes of 6 paired runs of 1,024 tokens each; single runs ranged 89.8-95.1 %).
"""

from __future__ import annotations

import ctypes

import llama_cpp.llama_cpp as ll


class _Quick:
    """The functions of llama_cpp.llama_cpp by name, each bound through ``ctypes.PyDLL``."""

    def __init__(self):
        self._lib = ctypes.PyDLL(ll._lib._name, handle=ll._lib._handle)

    def __getattr__(self, name: str):
        declared = getattr(ll, name)
        fn = getattr(self._lib, name)
        fn.argtypes, fn.restype = declared.argtypes, declared.restype
        setattr(self, name, fn)              # looked up once
        return fn


quick = _Quick()
