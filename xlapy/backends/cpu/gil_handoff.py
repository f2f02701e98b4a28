"""A short GIL switch interval while llvm_parallel's second thread compiles parts.

Thread 2 spends nearly all its time inside LLVM with the GIL released, but it returns to Python between its calls
(a part is about 20 calls: make a context, parse, verify, make a target machine and a pass builder, run the
pipeline, emit, copy the object, dispose ...), and each return waits for the GIL. The calling thread holds the GIL
while it emits the rest of the module in Python, and CPython hands the GIL to a waiting thread only after the
switch interval, 5 ms by default: so each call cost thread 2 up to 5 ms of waiting, and a part of 35 ms of CPU
took 105-140 ms of wall time while the calling thread emitted (0.5 ms interval: 40 ms). Thread 2 did a third of
the LLVM work it could during emission, and the rest landed at the end of the compile.

`acquire()` sets the interval to SWITCH_INTERVAL until the matching `release()`; while several callers hold it
(sessions of compiles on several threads) it stays short, and the last `release` restores the interval the first
found. The calling thread pays a GIL handoff per call of thread 2 (microseconds); nothing else changes. Code that sets the interval itself while a compile
runs has its value replaced at the end of that compile by the one found before.
"""
from __future__ import annotations

import sys
import threading

SWITCH_INTERVAL = 0.0002      # seconds (CPython's default: 0.005)

_lock = threading.Lock()
_holders = 0
_saved = 0.005


def acquire() -> None:
    """Start a short-interval stretch (paired with `release`)."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = sys.getswitchinterval()
            if _saved > SWITCH_INTERVAL:
                sys.setswitchinterval(SWITCH_INTERVAL)
        _holders += 1


def release() -> None:
    """End one stretch; the last one restores the interval found by the first."""
    global _holders
    with _lock:
        _holders -= 1
        if _holders == 0 and _saved > SWITCH_INTERVAL:
            sys.setswitchinterval(_saved)
