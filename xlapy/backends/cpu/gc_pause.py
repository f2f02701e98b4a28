"""Python's cyclic garbage collector paused while a compile builds its objects (compiler.emit_llvm: the HLO
passes and the emission).

Why: a training step's compile allocates millions of objects that live until it ends (HLO instructions, llvmlite
IR), and CPython runs a full collection each time the heap grew by a quarter, walking all of them again: on
vit/train that was a third of the emission's time (4.1-4.6 s against 2.8-3.1 s of thread time with the collector
off) and ~2 s of the whole compile's calling thread (14.3 -> 12.1 s; process CPU 21.2 -> 18.2 s), for 5 MB more
peak memory (244 -> 249 MB): the compile's cycles are few and are collected once the pause ends. (resnet50/train:
no change either way, 19.2 s; its peak 316 -> 319 MB.)

Compiles on several threads share one pause: the collector comes back when the last one ends, and only if it was
on when the first began (a user who turned it off keeps it off).
"""
from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused():
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


__all__ = ["paused"]
