"""A persistent thread pool for the JIT's parallel loops (XLA:CPU's intra-op thread pool), in LLVM IR built by
threadpool_ir.py (which says why it is builder code) and threadpool_wait.py, JIT-compiled once per process.

Compiled code calls

    void xlapy_pool_run(i8* (i8*)* fn, i8* tasks, i64 stride, i64 count, i64 threads)

to run fn(tasks + i*stride) for every i in [0, count) on at most `threads` threads: the calling thread
publishes the job, works on it itself, and returns once every task has finished. The caller and the workers
take tasks one at a time from an atomic counter, so a loop split into more tasks than threads (parallel.py)
balances itself: a thread that is slow, or descheduled because other processes want the cores, holds up at
most the task it is running. Which thread runs which task varies; what a task computes does not (its chunk
bounds are compile-time constants, parallel.py), so results are fixed for a given thread count. Jobs from
several callers (executables called from several Python threads) share the workers; a caller always works on
its own job, so every job completes even with no worker free (or none at all, e.g. in a forked child).

Workers are created once (pthread_create, detached) when a module that needs them is compiled
(`ensure_workers`), and live until the process exits. Waiting follows the passive policy of good runtimes
(OpenMP's OMP_WAIT_POLICY=passive after a short spin, Eigen's and TBB's pools), because cores may be shared:

| who waits | for what | how |
|---|---|---|
| an idle worker | the next job | spins (only one worker at a time), then sleeps on a condition variable (futex) |
| a caller | its workers' last tasks | spins, then sleeps until the last worker to leave wakes it |
| a publishing caller | nothing | wakes at most as many sleeping workers as the job can use |

Every job is published. With XLAPY_POOL_ADAPT=1 a job is published only while the workers' help has been
paying (threadpool_share.py), running on its caller otherwise; that measured slower (its figures are there), so
it is off. What keeps small work off the pool is the cost rules (parallel.task_count, dot_blas.gemm_tasks) and
a small while loop's body running on its caller (loop_state.runs_on_caller).

A spin reads with `pause` between reads (rdtsc times it on x86; elsewhere it counts reads) and calls
sched_yield every few microseconds: with no other thread wanting the core that returns at once; when it
returns late (LATE_US), the core was wanted (another process, or our own thread kept off it) and the spinner
sleeps at once. The budget adapts per kind of wait between SPIN_US/64 and SPIN_US (threadpool_wait.py has
the rules). So back-to-back parallel loops (the kernels of one executable) find a worker awake, an idle
process burns no CPU after a fraction of a millisecond, and on a busy machine the pool stops spinning.

GEMMs that the JIT splits over the pool (dot_blas.py) run the BLAS single-threaded: `xlapy_blas_serial(1)` /
`(0)` around such a GEMM set the provider's thread count to 1 while any is running and restore it afterwards
(numpy's matmul shares numpy's OpenBLAS, so one running meanwhile on another thread is single-threaded too).

The pool lives in this process only: its code is JIT-compiled once (MCJIT) and registered as a symbol, like the
BLAS routines (runtime.py). AOT objects (aot.py) are compiled single-threaded and never reference it.
A fork from Python (os.register_at_fork) resets the pool in the child, which starts its own workers lazily, on
the next call that finds fewer workers than wanted.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

import llvmlite.binding as llvm

from .irhelpers import X86_TRIPLES
from .cache_entry import cached_object
from .llvm_jit import init_llvm, load_objects, new_target_machine, shared_target_machine
from .threadpool_ir import RUN_SYMBOL, SERIAL_BLAS_SYMBOL, build_pool_module
from .threadpool_share import HELP_ONE, JUDGE_US

SPIN_US = int(os.environ.get("XLAPY_POOL_SPIN_US", "200"))      # the longest an idle thread spins before sleeping
LATE_US = 50                    # a sched_yield in a spin that returns this late was descheduled
# XLAPY_POOL_ADAPT=1: a job runs on its caller while the workers' help has not been paying (threadpool_share.py).
# Off by default: measured against sharing every job it cost time, loaded or not (threadpool_share.py's figures)
ADAPT = os.environ.get("XLAPY_POOL_ADAPT", "0") == "1"

_lock = threading.Lock()
_code = None                    # keeps the pool's machine code alive (llvm_jit.OwnCode)
_engine = None                  # its engine
_set_target = None              # ctypes: xlapy_pool_set_target(i64)
_target = 0
_judge = 1 << 62                # help.judge when adapting (threadpool_share.py)


def _tsc_hz() -> float:
    """rdtsc ticks per second (the TSC runs at a constant rate on every x86 this targets)."""
    import time
    rdtsc = _engine_function("xlapy_pool_ticks", ctypes.c_uint64)
    t0, c0 = time.perf_counter(), rdtsc()
    time.sleep(0.002)
    t1, c1 = time.perf_counter(), rdtsc()
    return max((c1 - c0) / (t1 - t0), 1e8)


def _engine_function(name, restype, *argtypes):
    return ctypes.CFUNCTYPE(restype, *argtypes)(_engine.get_function_address(name))


def _load_threads() -> None:
    """MCJIT resolves external symbols in libraries loaded permanently; pthread_* live in libc (glibc >= 2.34)
    or libpthread."""
    for lib in ("pthread", "c"):
        path = ctypes.util.find_library(lib)
        if path:
            llvm.load_library_permanently(path)


def _build() -> None:
    global _code, _engine, _set_target
    init_llvm()
    _load_threads()
    triple = llvm.get_process_triple()
    x86 = triple.startswith(X86_TRIPLES)

    def make() -> bytes:
        mod = llvm.parse_assembly(str(build_pool_module(triple)))
        mod.verify()
        return new_target_machine(3).emit_object(mod)
    # building the IR and LLVM's O3 are the pool's setup time; the IR is a function of xlapy's sources and the
    # machine, which the cache key holds, so a later process loads the object without building either
    obj = cached_object("thread pool", triple, make)
    _code, _ = load_objects([obj], RUN_SYMBOL, triple, str(shared_target_machine().target_data))
    _engine = _code.engine
    hz = _tsc_hz() if x86 else 0.0
    spin = int(SPIN_US * 1e-6 * hz) if x86 else SPIN_US * 200     # cycles, or loop iterations
    late = int(LATE_US * 1e-6 * hz) if x86 else 1 << 62           # cycles; never, without a clock
    global _judge
    _judge = int(JUDGE_US * 1e-6 * hz) if x86 else 1 << 62                # cycles; never, without a clock
    judge = _judge if ADAPT else 1 << 62
    _engine_function("xlapy_pool_init", None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(spin, late, judge)
    _set_target = _engine_function("xlapy_pool_set_target", None, ctypes.c_int64)
    reset = _engine_function("xlapy_pool_reset", None)
    os.register_at_fork(after_in_child=reset)       # the child has no workers (and maybe a held mutex)
    llvm.add_symbol(RUN_SYMBOL, _engine.get_function_address(RUN_SYMBOL))
    llvm.add_symbol(SERIAL_BLAS_SYMBOL, _engine.get_function_address(SERIAL_BLAS_SYMBOL))


def ensure_workers(n: int) -> None:
    """Make the pool (once) and ask for at least n worker threads; the JIT calls this for a module whose
    parallel loops use up to n+1 tasks. Workers start on the next xlapy_pool_run."""
    global _target
    with _lock:
        if _engine is None:
            _build()
        if n > _target:
            _target = n
            _set_target(n)


def serial_blas_available() -> bool:
    """Make the pool (once) and point `xlapy_blas_serial` at the current BLAS provider's thread control;
    False when the provider has none (then split GEMMs would oversubscribe, so none are emitted)."""
    from . import runtime
    with _lock:
        if _engine is None:
            _build()
        p = runtime.provider()
        addresses = (None, None) if p is None else (p.set_threads_address, p.get_threads_address)
        _engine_function("xlapy_pool_blas_control", None, ctypes.c_void_p, ctypes.c_void_p)(*addresses)
        return None not in addresses


def workers_wanted() -> int:
    return _target


def helper_share() -> int:
    """How much help the pool's jobs have been getting (threadpool_share.py), in 1/HELP_ONE units of full help."""
    ensure_workers(0)
    return _engine_function("xlapy_pool_help", ctypes.c_int64)()


def set_helper_share(value: int) -> None:
    """Set that measure (tests and comparisons): the next SAMPLE_EVERY - 1 jobs follow it."""
    ensure_workers(0)
    _engine_function("xlapy_pool_set_help", None, ctypes.c_int64)(value)


def set_adapt(on: bool) -> None:
    """Adapt to the help jobs get (XLAPY_POOL_ADAPT=1), or share every job (the default)."""
    ensure_workers(0)
    _engine_function("xlapy_pool_set_judge", None, ctypes.c_int64)(_judge if on else 1 << 62)
    set_helper_share(HELP_ONE)


def jobs_published() -> int:
    """Parallel loops handed to the workers so far (the others ran on their callers)."""
    ensure_workers(0)
    return _engine_function("xlapy_pool_published", ctypes.c_int64)()


__all__ = ["ensure_workers", "serial_blas_available", "workers_wanted", "helper_share", "set_helper_share",
           "jobs_published", "set_adapt", "HELP_ONE", "RUN_SYMBOL", "SERIAL_BLAS_SYMBOL", "SPIN_US"]
