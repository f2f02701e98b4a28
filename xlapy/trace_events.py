"""The profiler's recorder: one process-wide session that host code and compiled kernels report events to.

It sits at the bottom layer (beside errors.py and debug.py) so that every layer can record without importing
upward: the front end records tracing and jit calls, the pass pipeline each pass, the CPU backend LLVM and the
kernels its instrumented code timed. `xlapy.profiler` (the public API, at the top) starts and stops the session
and writes what it holds.

Every timestamp is CLOCK_MONOTONIC in nanoseconds: Python's time.monotonic_ns() on the host side, and
clock_gettime(CLOCK_MONOTONIC) read by the generated code, so host spans and kernels share one time line.

When no session is active, `span()` costs one global read and the compiled code carries no instrumentation
(a module is instrumented only when it is compiled while a session is active or XLA_FLAGS has
--xla_hlo_profile): the hot paths pay nothing.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator


@dataclass(frozen=True)
class Event:
    """One complete span: `lane` names the timeline (a Python thread or a native thread of the CPU device)."""
    name: str
    category: str        # "trace", "pass", "llvm", "compile", "call", "kernel", "task", "iteration", "annotation"
    start_ns: int
    end_ns: int
    lane: tuple[str, int]      # ("host", python thread id) or ("cpu", native thread id)
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


class Session:
    """The events of one trace, appended from any thread."""

    def __init__(self) -> None:
        self.start_ns = time.monotonic_ns()
        self.events: list[Event] = []
        self.dropped = 0               # kernel events lost because a call overflowed the kernel event buffer
        self._lock = threading.Lock()

    def add(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def extend(self, events: list[Event], dropped: int = 0) -> None:
        with self._lock:
            self.events.extend(events)
            self.dropped += dropped


_SESSION: Session | None = None
_LISTENERS: list[Callable[[], None]] = []     # told when a session starts or stops (jit forgets its warm calls)


def on_start_stop(listener: Callable[[], None]) -> None:
    _LISTENERS.append(listener)


def session() -> Session | None:
    """The active session, or None when nothing is being profiled."""
    return _SESSION


def start() -> Session:
    global _SESSION
    if _SESSION is not None:
        from .errors import XlapyError
        raise XlapyError("a profiler trace is already running (xlapy.profiler.stop_trace() ends it)")
    _SESSION = Session()
    for listener in _LISTENERS:
        listener()
    return _SESSION


def stop() -> Session | None:
    global _SESSION
    s, _SESSION = _SESSION, None
    for listener in _LISTENERS:
        listener()
    return s


def host_lane() -> tuple[str, int]:
    return ("host", threading.get_ident())


@contextmanager
def span(name: str, category: str, **args: Any) -> Iterator[None]:
    """Record the enclosed host-side work (a pass, LLVM, tracing) in the active session, if there is one."""
    s = _SESSION
    if s is None:
        yield
        return
    t0 = time.monotonic_ns()
    try:
        yield
    finally:
        s.add(Event(name, category, t0, time.monotonic_ns(), host_lane(), args))
