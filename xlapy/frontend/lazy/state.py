"""The lazy-mode switch and each thread's pending graph.

Lazy mode is off unless switched on (README, "Three ways to run"): `XLAPY_LAZY=1` in the environment at import,
`xlapy.config_lazy(True)` for the process, or `with xlapy.lazy():` for a block (per thread, and it nests). The
switch only matters outside a trace: under jit, grad's trace, vmap or a control-flow body, ops are traced as ever.

Each thread records into its own `PendingGraph` (threads run ops independently, as eager ops do); a LazyArray
remembers the graph that owes it its value, so a value read from another thread is still computed by the graph
that recorded it, under that graph's lock.
"""
from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any, Iterator

_PROCESS = [os.environ.get("XLAPY_LAZY", "").lower() in ("1", "true", "on")]


class _ThreadSwitch(threading.local):
    def __init__(self):
        self.override: list[bool] = []      # the open `lazy(...)` blocks of this thread, innermost last
        self.graph: "PendingGraph | None" = None


_THREAD = _ThreadSwitch()


def enabled() -> bool:
    """Whether ops outside a trace record lazily in the calling thread."""
    override = _THREAD.override
    return override[-1] if override else _PROCESS[0]


def set_lazy(on: bool = True) -> bool:
    """Switch lazy mode for the whole process (threads without a `lazy()` block of their own); returns the
    previous setting. Switching it off first computes what the calling thread has pending."""
    previous = _PROCESS[0]
    if previous and not on:
        from .cut import sync
        sync("switch off")
    _PROCESS[0] = bool(on)
    return previous


@contextlib.contextmanager
def lazy(on: bool = True) -> Iterator[None]:
    """Inside this block the calling thread's ops outside a trace record lazily (`on=False`: run eagerly).
    Leaving a lazy block computes every value still pending, so nothing recorded in it outlives it unrun."""
    _THREAD.override.append(bool(on))
    try:
        yield
    finally:
        _THREAD.override.pop()
        if on and not enabled():
            from .cut import sync
            sync("end of lazy block")


class PendingGraph:
    """The ops recorded since the last cut: the pending arrays (weak references, in creation order) and the
    count of nodes recorded, which the size limit reads. `sinks` receive each cut's record (autojit's report)."""

    def __init__(self, abstract: bool = False):
        self.abstract = abstract    # a gradient's recording (grad.py): a cut means "trace it instead"
        self.lock = threading.RLock()
        self.pending: list[weakref.ref] = []
        self.nodes = 0
        self.seq = 0
        self.sinks: list[Any] = []
        self.tape: Any = None       # the autojit call being recorded on this thread (tape.py), if any

    def add(self, array: Any) -> None:
        self.pending.append(weakref.ref(array))


def graph() -> PendingGraph:
    """The calling thread's pending graph."""
    g = _THREAD.graph
    if g is None:
        g = _THREAD.graph = PendingGraph()
    return g


def thread_graph_or_none() -> PendingGraph | None:
    return _THREAD.graph


@contextlib.contextmanager
def recording_into(g: PendingGraph) -> Iterator[PendingGraph]:
    """Record the calling thread's ops into `g` (lazily, whatever the switch says) inside this block."""
    previous = _THREAD.graph
    _THREAD.graph = g
    _THREAD.override.append(True)
    try:
        yield g
    finally:
        _THREAD.override.pop()
        _THREAD.graph = previous


MAX_NODES = [int(os.environ.get("XLAPY_LAZY_MAX_NODES", "1000"))]   # a cut once this many ops are pending
# a structure is compiled at its COMPILE_AT-th cut; the cuts before run its ops one by one as eager mode does,
# so a script that runs once costs what eager costs, and a loop compiles its body on its second round
COMPILE_AT = [int(os.environ.get("XLAPY_LAZY_COMPILE_AT", "2"))]


@contextlib.contextmanager
def eager_block() -> Iterator[None]:
    """Run the calling thread's ops eagerly inside this block (a cut running its ops one by one)."""
    _THREAD.override.append(False)
    try:
        yield
    finally:
        _THREAD.override.pop()
