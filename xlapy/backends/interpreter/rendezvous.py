"""Where the devices of one run meet: the per-thread device context and the in-process rendezvous.

Each instance of a replicated module runs on its own thread (backends/spmd.py starts them); the thread first
enters a `DeviceContext` (which device it is, the run's replica and partition counts, the device assignment,
and the run's communicator). Collective handlers (interpreter/collectives.py, and the CPU backend's trampoline
in cpu/collectives_runtime.py) read it with `current()`. Outside any run the context is the single device 0 of
a 1 x 1 run, so a collective over one device is the identity, as in XLA.

A rendezvous is keyed by (op key, group, occurrence): every participant deposits its operands, waits until
all of the group has, computes its own result from everyone's operands (reading them in place: shared memory,
no copies), and waits again until all have read before any of them returns (the operand buffers may then be
reused). A participant that never arrives ends the wait after `timeout()` seconds ($XLAPY_COLLECTIVE_TIMEOUT,
default 60) with an ExecutionError naming the op, the group and the devices missing; a device that fails
aborts the run, so its peers raise at once instead of waiting.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import ExecutionError

DEFAULT_TIMEOUT_S = 60.0


def timeout() -> float:
    """Seconds a participant waits for its peers ($XLAPY_COLLECTIVE_TIMEOUT, default 60)."""
    text = os.environ.get("XLAPY_COLLECTIVE_TIMEOUT", "")
    try:
        return float(text) if text.strip() else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ExecutionError(f"XLAPY_COLLECTIVE_TIMEOUT={text!r} is not a number of seconds") from None


class _Slot:
    """One meeting: the operands deposited so far, and how many participants have left."""

    def __init__(self, size: int):
        self.values: dict[int, Any] = {}
        self.left = 0
        self.size = size
        self.shared: dict[str, Any] = {"lock": threading.Lock()}


class Rendezvous:
    """The meeting place of the devices of one process (one per run; `abort` wakes every waiter)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._slots: dict[tuple, _Slot] = {}
        self._aborted: str | None = None

    def abort(self, why: str) -> None:
        with self._cond:
            if self._aborted is None:
                self._aborted = why
            self._cond.notify_all()

    def _wait(self, ready: Callable[[], bool], what: str, missing: Callable[[], list]) -> None:
        limit = timeout()
        deadline = time.monotonic() + limit
        while not ready():
            if self._aborted is not None:
                raise ExecutionError(f"{what}: the run was aborted: {self._aborted}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise ExecutionError(f"{what}: timed out after {limit:g} s waiting for devices {missing()} "
                                     f"(set XLAPY_COLLECTIVE_TIMEOUT to wait longer)")
            self._cond.wait(min(left, 1.0))

    def meet(self, key: tuple, group: Sequence[int], device: int, value: Any,
             compute: Callable[[list, int, dict], Any], what: str,
             after: Callable[[Any, dict], Any] | None = None) -> Any:
        """Deposit `value` for `device`; once the whole group has, run compute(values in group order, rank,
        shared) (shared: one dict per meeting, with a "lock", for participants that split the work); once every
        participant has computed, return after(that result, shared), or the result itself."""
        if len(group) == 1:            # nobody to wait for
            if group[0] != device:
                raise ExecutionError(f"{what}: device {device} is not in its group {list(group)}")
            shared = {"lock": threading.Lock()}
            result = compute([value], 0, shared)
            return result if after is None else after(result, shared)
        rank = group.index(device)
        full = (key, tuple(group))
        with self._cond:
            slot = self._slots.get(full)
            if slot is None:
                slot = self._slots[full] = _Slot(len(group))
            if rank in slot.values:
                raise ExecutionError(f"{what}: device {device} arrived twice at one meeting")
            slot.values[rank] = value
            if len(slot.values) == slot.size:
                self._cond.notify_all()
            self._wait(lambda: len(slot.values) == slot.size, what,
                       lambda: [g for i, g in enumerate(group) if i not in slot.values])
        values = [slot.values[i] for i in range(slot.size)]
        try:
            result = compute(values, rank, slot.shared)
        except BaseException as e:
            self.abort(f"device {device} failed in {what}: {type(e).__name__}: {e}")
            raise
        with self._cond:
            slot.left += 1
            if slot.left == slot.size:
                del self._slots[full]
                self._cond.notify_all()
            else:
                self._wait(lambda: slot.left == slot.size, what,
                           lambda: [f"{g} (still reading)" for g in group])
        return result if after is None else after(result, slot.shared)


@dataclass
class DeviceContext:
    """The device a thread runs as, and its run."""
    device: int = 0
    replica: int = 0
    partition: int = 0
    num_replicas: int = 1
    num_partitions: int = 1
    assignment: np.ndarray | None = None
    communicator: Any = None             # a Rendezvous (one process) or distributed's communicator (MPI)
    run_id: int = 0
    counts: dict = field(default_factory=dict)     # occurrences of each collective so far (its meeting key)

    @property
    def assignment_key(self) -> bytes | None:
        """The device assignment as bytes (a cache key), computed once."""
        key = self.__dict__.get("_assignment_key", False)
        if key is False:
            key = None if self.assignment is None else np.ascontiguousarray(self.assignment, np.int64).tobytes()
            self.__dict__["_assignment_key"] = key
        return key

    def next_key(self, op_key: Any) -> tuple:
        n = self.counts.get(op_key, 0)
        self.counts[op_key] = n + 1
        return (self.run_id, op_key, n)


_LOCAL = threading.local()
_SINGLE = DeviceContext()


def current() -> DeviceContext:
    ctx = getattr(_LOCAL, "ctx", None)
    return _SINGLE if ctx is None else ctx


class entered:
    """`with entered(ctx):` runs the block as ctx's device on this thread."""

    def __init__(self, ctx: DeviceContext):
        self.ctx = ctx

    def __enter__(self) -> DeviceContext:
        self.previous = getattr(_LOCAL, "ctx", None)
        _LOCAL.ctx = self.ctx
        return self.ctx

    def __exit__(self, *exc) -> None:
        _LOCAL.ctx = self.previous


__all__ = ["DEFAULT_TIMEOUT_S", "DeviceContext", "Rendezvous", "current", "entered", "timeout"]
