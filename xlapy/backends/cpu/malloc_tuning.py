"""glibc's malloc kept from handing result memory back to the kernel between calls (issue 11, run time).

A training step returns tens of megabytes of new arrays per call (gpt2/train: 302 results, 26-43 MB) and the
caller drops the previous step's. glibc serves blocks above its mmap threshold with fresh mappings and trims the
heap's free top above its trim threshold, so each call's results were faulted in page by page again: about
9,700 minor page faults and 20-40 ms of system time per gpt2/train call, where XLA:CPU's runtime takes none
after the first call. Raising the two thresholds once keeps that memory in the process for the next call:

| mallopt parameter | glibc default | here |
|---|---|---|
| M_MMAP_THRESHOLD | 128 KiB, rising with freed mappings up to 32 MiB | 32 MiB (fixed) |
| M_TRIM_THRESHOLD | 128 KiB, twice the mmap threshold as it rises | 256 MiB |

The cost: up to 256 MiB of freed memory may stay mapped in the process. XLAPY_MALLOC_TUNING=0 leaves malloc as
it is. Applied on the first CPU executable (executable.py), only where the C library is glibc.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3          # glibc's <malloc.h>
SETTINGS = ((M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 256 << 20))

_lock = threading.Lock()
_state: dict[str, object] = {"applied": None}        # None: not tried; True/False: what the first try gave


def enabled() -> bool:
    return os.environ.get("XLAPY_MALLOC_TUNING", "1") != "0"


def apply_once() -> bool:
    """Set SETTINGS through mallopt once per process; True when they are in effect."""
    if _state["applied"] is not None:
        return bool(_state["applied"])
    with _lock:
        if _state["applied"] is None:
            _state["applied"] = enabled() and _apply()
    return bool(_state["applied"])


def _apply() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        gnu_get_libc_version = libc.gnu_get_libc_version      # glibc only: musl and others have no such call
    except (OSError, AttributeError):
        return False
    del gnu_get_libc_version
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(mallopt(param, value) == 1 for param, value in SETTINGS)
