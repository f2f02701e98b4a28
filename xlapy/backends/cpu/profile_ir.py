"""Kernel timestamps in the generated code: the device side of the profiler (xlapy/profiler.py).

A module compiled while a profiler trace runs (or with XLA_FLAGS=--xla_hlo_profile) carries, around every kernel
of its entry computation and of its loop bodies, around every while-loop iteration and inside every thread-pool
task, two reads of CLOCK_MONOTONIC and a call that appends one event to a log in the scratch buffer:

    struct event { i64 kernel; i64 thread; i64 start_ns; i64 end_ns; }     log = { i64 count; event[CAPACITY] }

`kernel` indexes the executable's kernel table (KernelTimer.kernels: HLO name, kind, cost), `thread` is
pthread_self() (on Linux the same number as Python's threading.get_ident() for the calling thread). The slot is
taken with an atomic add, so pool workers log concurrently; events past CAPACITY are counted, not written.
clock_gettime(CLOCK_MONOTONIC) goes through the vDSO (about 20 ns) and is the clock Python's time.monotonic_ns()
reads, so kernels and host spans share one time line. A module compiled without a trace has none of this code.
"""
from __future__ import annotations

import contextvars
import ctypes
import itertools
import threading
import time
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from ... import trace_events
from ...hlo import Instruction
from ...hlo.cost import FREE_OPCODES, instruction_bytes, instruction_flops
from .irhelpers import I8P, I32, I64, VOID, i64

CAPACITY = 1 << 14
EVENT_FIELDS = 4
LOG_BYTES = 8 * (1 + EVENT_FIELDS * CAPACITY)
CLOCK_MONOTONIC = 1                    # Linux's clockid_t value
_TIMESPEC = ir.LiteralStructType([I64, I64])
_FUSION_KINDS = {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion",
                 "kCustom": "row fusion"}
_CONTROL = frozenset({"while", "conditional", "call"})
_uid = itertools.count()


@dataclass(frozen=True)
class Kernel:
    """One timed region: an HLO instruction (or a loop iteration / pool task of one) and its static cost."""
    name: str
    kind: str
    category: str          # "kernel", "iteration" or "task"
    flops: float
    bytes: float
    top: bool              # an instruction of the entry computation


def kind_of(inst: Instruction) -> str:
    if inst.opcode == "fusion":
        return _FUSION_KINDS.get(inst.attrs.get("kind", ""), "fusion")
    return inst.opcode


def is_timed(inst: Instruction) -> bool:
    """Instructions that run code of their own (parameters, tuples, bitcasts ... emit none)."""
    return inst.opcode not in FREE_OPCODES


class KernelTimer:
    """The instrumentation of one LLVM module: its kernel table and the two runtime functions it calls."""

    def __init__(self, module: ir.Module):
        tag = f"xlapy.prof.{next(_uid)}"
        self.kernels: list[Kernel] = []
        self._ids: dict[tuple[int, str], int] = {}
        self.current: int | None = None          # the kernel being emitted (its pool tasks are logged under it)
        self.log_offset: int | None = None       # where the log sits in the scratch buffer (set by the compiler)
        self._log = ir.GlobalVariable(module, I8P, f"{tag}.log")
        self._log.linkage = "internal"
        self._log.initializer = ir.Constant(I8P, None)
        self._now = _define_now(module, f"{tag}.now")
        self._record = _define_record(module, f"{tag}.record", self._log, self._now)

    # -- the kernel table -------------------------------------------------------------------------------
    def kernel_id(self, inst: Instruction, category: str = "kernel", top: bool = False) -> int:
        key = (id(inst), category)
        k = self._ids.get(key)
        if k is None:
            flops, _ = instruction_flops(inst) if category == "kernel" and inst.opcode not in _CONTROL else (0.0, 0)
            moved = instruction_bytes(inst) if category == "kernel" and inst.opcode not in _CONTROL else 0
            label = inst.name if category == "kernel" else f"{inst.name} {category}"
            self.kernels.append(Kernel(label, kind_of(inst), category, flops, float(moved), top))
            k = self._ids[key] = len(self.kernels) - 1
        return k

    # -- emission ----------------------------------------------------------------------------------------
    def set_log(self, b: ir.IRBuilder, scratch: ir.Value) -> None:
        """At the entry function's start: point the log global at the log's slice of this call's scratch."""
        b.store(b.gep(scratch, [i64(self.log_offset)], inbounds=True), self._log)

    def start(self, b: ir.IRBuilder) -> ir.Value:
        return b.call(self._now, [], name="prof.t0")

    def stop(self, b: ir.IRBuilder, kernel: int, t0: ir.Value) -> None:
        b.call(self._record, [i64(kernel), t0])


def _define_now(module: ir.Module, name: str) -> ir.Function:
    """i64 now(): CLOCK_MONOTONIC in nanoseconds."""
    clock = module.globals.get("clock_gettime") or ir.Function(
        module, ir.FunctionType(I32, [I32, _TIMESPEC.as_pointer()]), "clock_gettime")
    fn = ir.Function(module, ir.FunctionType(I64, []), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ts = b.alloca(_TIMESPEC, name="ts")
    b.call(clock, [ir.Constant(I32, CLOCK_MONOTONIC), ts])
    sec = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 0)]))
    nsec = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 1)]))
    b.ret(b.add(b.mul(sec, i64(1_000_000_000)), nsec))
    return fn


def _define_record(module: ir.Module, name: str, log: ir.GlobalVariable, now: ir.Function) -> ir.Function:
    """void record(i64 kernel, i64 t0): append (kernel, pthread_self(), t0, now()) to the log, if it has room."""
    self_fn = module.globals.get("pthread_self") or ir.Function(module, ir.FunctionType(I64, []), "pthread_self")
    fn = ir.Function(module, ir.FunctionType(VOID, [I64, I64]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    kernel, t0 = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    t1 = b.call(now, [])
    base = b.bitcast(b.load(log), I64.as_pointer())
    slot = b.atomic_rmw("add", base, i64(1), "monotonic")
    store, done = fn.append_basic_block("store"), fn.append_basic_block("done")
    b.cbranch(b.icmp_unsigned("<", slot, i64(CAPACITY)), store, done)
    b.position_at_end(store)
    first = b.add(i64(1), b.mul(slot, i64(EVENT_FIELDS)))
    for k, value in enumerate([kernel, b.call(self_fn, []), t0, t1]):
        b.store(value, b.gep(base, [b.add(first, i64(k))]))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


# -- the emitter's view: which timer is active while a module is emitted ------------------------------------
_ACTIVE: contextvars.ContextVar[KernelTimer | None] = contextvars.ContextVar("xlapy_kernel_timer", default=None)


def active() -> KernelTimer | None:
    return _ACTIVE.get()


def activate(timer: KernelTimer | None) -> contextvars.Token:
    return _ACTIVE.set(timer)


def deactivate(token: contextvars.Token) -> None:
    _ACTIVE.reset(token)


# -- the host's view: reading a call's log ----------------------------------------------------------------
def read_log(log: np.ndarray) -> tuple[np.ndarray, int]:
    """(events as an (n, 4) int64 array, events dropped) from a log (int64 view of its scratch slice); the log
    is emptied for the next call."""
    count = int(log[0])
    n = min(count, CAPACITY)
    events = log[1:1 + n * EVENT_FIELDS].reshape(n, EVENT_FIELDS).copy()
    log[0] = 0
    return events, count - n


class KernelLog:
    """An instrumented executable's log: runs a call, turns what its kernels logged into profiler events (when a
    trace is running) and keeps per-kernel totals across calls (`totals()`, for --xla_hlo_profile)."""

    def __init__(self, module_name: str, kernels: list[Kernel], address: int):
        self.module_name = module_name
        self.kernels = kernels
        self.log = np.ctypeslib.as_array((ctypes.c_int64 * (LOG_BYTES // 8)).from_address(address))
        self.log[0] = 0
        self.calls = 0
        self.dropped = 0
        self.count = np.zeros(len(kernels), np.int64)
        self.total_ns = np.zeros(len(kernels), np.int64)

    def run(self, fn, *args) -> None:
        t0 = time.monotonic_ns()
        fn(*args)
        t1 = time.monotonic_ns()
        events, dropped = read_log(self.log)
        self.calls += 1
        self.dropped += dropped
        np.add.at(self.count, events[:, 0], 1)
        np.add.at(self.total_ns, events[:, 0], events[:, 3] - events[:, 2])
        session = trace_events.session()
        if session is not None:
            session.extend(self._events(events, t0, t1), dropped)

    def _events(self, events: np.ndarray, t0: int, t1: int) -> list[trace_events.Event]:
        caller = threading.get_ident()
        out = [trace_events.Event(self.module_name, "call", t0, t1, ("cpu", caller), {"module": self.module_name})]
        for k, thread, start, end in events.tolist():
            kernel = self.kernels[k]
            out.append(trace_events.Event(kernel.name, kernel.category, start, end, ("cpu", thread),
                                          {"module": self.module_name, "kind": kernel.kind, "flops": kernel.flops,
                                           "bytes": kernel.bytes, "top": kernel.top}))
        return out

    def totals(self) -> list[tuple[Kernel, int, int]]:
        """(kernel, times run, total ns) of every kernel that ran, over all calls so far."""
        return [(k, int(n), int(t)) for k, n, t in zip(self.kernels, self.count, self.total_ns) if n]
