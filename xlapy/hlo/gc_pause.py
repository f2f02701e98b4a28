"""Python's cyclic garbage collector paused while a compile builds its objects: the HLO passes
(passes/optimize.py), the CPU backend's emission (backends/cpu/compiler.emit_llvm), the parser (parser.parse) and
Module.clone. In the hlo layer so that every layer shares the one pause.

Why: a training step's compile allocates millions of objects that live until it ends (HLO instructions, llvmlite
IR), and CPython runs a full collection each time the heap grew by a quarter, walking all of them again: on
vit/train that was a third of the emission's time (4.1-4.6 s against 2.8-3.1 s of thread time with the collector
off) and ~2 s of the whole compile's calling thread (14.3 -> 12.1 s; process CPU 21.2 -> 18.2 s), for 5 MB more
peak memory (244 -> 249 MB): the compile's cycles are few and are collected once the pause ends. (resnet50/train:
no change either way, 19.2 s; its peak 316 -> 319 MB.)

The passes alone: on the 32-layer scaling step the collections were 1.9 s of the pipeline's 15 s wall (3 full
collections), against 0.02 s at 4 layers, so compile time grew faster than the module. The parser and the clone
likewise: parsing resnet50/train (7,400 instructions) spent 92-124 ms of 410-420 ms of thread time in collections
(one full, 9 of generation 1), vit/train 36-102 of 210-300 ms, against 4 of 33-50 ms for vit/fwd; cloning the
32-layer step 27-41 us per instruction of 40-54 (one full collection), against 2-3 of 13-16 at 8 layers.

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
