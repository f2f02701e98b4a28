"""A persistent thread pool for the JIT's parallel loops (XLA:CPU's intra-op thread pool), in LLVM IR.

Compiled code calls

    void xlapy_pool_run(i8* (i8*)* fn, i8* tasks, i64 stride, i64 count)

to run fn(tasks + i*stride) for every i in [0, count): the calling thread publishes the job, works on it
itself, and returns once every task has finished. Idle workers take tasks one at a time from the published
jobs. Which thread runs which task varies; what a task computes does not (its chunk bounds are compile-time
constants, parallel.py), so results are fixed for a given thread count. Jobs from several callers (executables
called from several Python threads) share the workers; a caller always works on its own job, so every job
completes even with no worker free (or none at all, e.g. in a forked child).

Workers are created once (pthread_create, detached) when a module that needs them is compiled
(`ensure_workers`), and live until the process exits. After finishing a task a worker spins for SPIN_US
microseconds (rdtsc + pause on x86, a fixed count elsewhere) looking for the next job, then sleeps on a
condition variable; a caller likewise spins before sleeping while it waits for the last tasks. So back-to-back
parallel loops (the kernels of one executable) find the workers awake, and an idle process burns no CPU.

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

from .llvm_jit import init_llvm

SPIN_US = int(os.environ.get("XLAPY_POOL_SPIN_US", "200"))      # how long idle threads spin before sleeping
RUN_SYMBOL = "xlapy_pool_run"
SERIAL_BLAS_SYMBOL = "xlapy_blas_serial"

_lock = threading.Lock()
_engine = None                  # keeps the pool's machine code alive
_set_target = None              # ctypes: xlapy_pool_set_target(i64)
_target = 0

# %job = { fn, base, stride, count, next, remaining, link }; next/link are guarded by the mutex, remaining is
# atomic. Mutexes and condition variables get 128 bytes each (glibc needs 40/48) and are initialized by
# pthread_*_init, so no platform initializer constant is assumed.
_IR = r"""
%job = type { i8* (i8*)*, i8*, i64, i64, i64, i64, %job* }

@mutex = internal global [128 x i8] zeroinitializer, align 64
@work = internal global [128 x i8] zeroinitializer, align 64
@done = internal global [128 x i8] zeroinitializer, align 64
@head = internal global %job* null, align 64
@sleepers = internal global i64 0, align 64
@workers = internal global i64 0, align 64
@target = internal global i64 0, align 64
@spin = internal global i64 0, align 64               ; set by xlapy_pool_init
@blas.mutex = internal global [128 x i8] zeroinitializer, align 64
@blas.set = internal global void (i32)* null
@blas.get = internal global i32 ()* null
@blas.users = internal global i64 0
@blas.saved = internal global i32 1

declare i32 @pthread_mutex_init(i8*, i8*)
declare i32 @pthread_cond_init(i8*, i8*)
declare i32 @pthread_mutex_lock(i8*)
declare i32 @pthread_mutex_unlock(i8*)
declare i32 @pthread_cond_wait(i8*, i8*)
declare i32 @pthread_cond_broadcast(i8*)
declare i32 @pthread_create(i64*, i8*, i8* (i8*)*, i8*)
declare i32 @pthread_detach(i64)

define void @xlapy_pool_reset() nounwind {
  %m = getelementptr [128 x i8], [128 x i8]* @mutex, i64 0, i64 0
  %w = getelementptr [128 x i8], [128 x i8]* @work, i64 0, i64 0
  %d = getelementptr [128 x i8], [128 x i8]* @done, i64 0, i64 0
  call i32 @pthread_mutex_init(i8* %m, i8* null)
  call i32 @pthread_cond_init(i8* %w, i8* null)
  call i32 @pthread_cond_init(i8* %d, i8* null)
  store %job* null, %job** @head
  store i64 0, i64* @sleepers
  store i64 0, i64* @workers
  ret void
}

define void @xlapy_pool_init(i64 %spin) nounwind {
  store i64 %spin, i64* @spin
  %bm = getelementptr [128 x i8], [128 x i8]* @blas.mutex, i64 0, i64 0
  call i32 @pthread_mutex_init(i8* %bm, i8* null)
  call void @xlapy_pool_reset()
  ret void
}

; the BLAS's thread-count setter and getter (null: no control)
define void @xlapy_pool_blas_control(void (i32)* %set, i32 ()* %get) nounwind {
  %bm = getelementptr [128 x i8], [128 x i8]* @blas.mutex, i64 0, i64 0
  call i32 @pthread_mutex_lock(i8* %bm)
  store void (i32)* %set, void (i32)** @blas.set
  store i32 ()* %get, i32 ()** @blas.get
  call i32 @pthread_mutex_unlock(i8* %bm)
  ret void
}

; %on = 1: one more caller needs the BLAS single-threaded (the first one saves its thread count and sets 1);
; %on = 0: one fewer (the last one restores the saved count)
define void @xlapy_blas_serial(i32 %on) nounwind {
entry:
  %bm = getelementptr [128 x i8], [128 x i8]* @blas.mutex, i64 0, i64 0
  call i32 @pthread_mutex_lock(i8* %bm)
  %set = load void (i32)*, void (i32)** @blas.set
  %none = icmp eq void (i32)* %set, null
  br i1 %none, label %out, label %count
count:
  %users = load i64, i64* @blas.users
  %enter = icmp ne i32 %on, 0
  br i1 %enter, label %begin, label %end
begin:
  %u1 = add i64 %users, 1
  store i64 %u1, i64* @blas.users
  %first = icmp eq i64 %users, 0
  br i1 %first, label %save, label %out
save:
  %get = load i32 ()*, i32 ()** @blas.get
  %saved = call i32 %get()
  store i32 %saved, i32* @blas.saved
  %multi = icmp ne i32 %saved, 1
  br i1 %multi, label %serial, label %out
serial:
  call void %set(i32 1)
  br label %out
end:
  %u2 = sub i64 %users, 1
  store i64 %u2, i64* @blas.users
  %last = icmp eq i64 %u2, 0
  br i1 %last, label %restore, label %out
restore:
  %old = load i32, i32* @blas.saved
  %was = icmp ne i32 %old, 1
  br i1 %was, label %reset, label %out
reset:
  call void %set(i32 %old)
  br label %out
out:
  call i32 @pthread_mutex_unlock(i8* %bm)
  ret void
}

define void @xlapy_pool_set_target(i64 %n) nounwind {
  store atomic i64 %n, i64* @target monotonic, align 8
  ret void
}

; spin until *word (an i64) satisfies the condition or the spin budget runs out; returns 1 when it did
define internal i1 @spin_wait(i64* %word, i1 %want_zero) nounwind {
entry:
  %budget = load i64, i64* @spin
  %t0 = call i64 @now()
  br label %loop
loop:
  %n = phi i64 [ 0, %entry ], [ %n1, %relax ]
  %v = load atomic i64, i64* %word acquire, align 8
  %z = icmp eq i64 %v, 0
  %ok = icmp eq i1 %z, %want_zero
  br i1 %ok, label %yes, label %check
check:
  %dt = call i64 @elapsed(i64 %t0, i64 %n)
  %over = icmp uge i64 %dt, %budget
  br i1 %over, label %no, label %relax
relax:
  call void @relax()
  %n1 = add i64 %n, 1
  br label %loop
yes:
  ret i1 1
no:
  ret i1 0
}

; with the mutex held: claim the next task of j (-1 when none is left); the job is unlinked when its last
; task is claimed, so every job on the list has tasks to hand out
define internal i64 @take(%job* %j) nounwind {
entry:
  %pnext = getelementptr %job, %job* %j, i32 0, i32 4
  %i = load i64, i64* %pnext
  %pcount = getelementptr %job, %job* %j, i32 0, i32 3
  %count = load i64, i64* %pcount
  %none = icmp sge i64 %i, %count
  br i1 %none, label %empty, label %claim
empty:
  ret i64 -1
claim:
  %i1 = add i64 %i, 1
  store i64 %i1, i64* %pnext
  %last = icmp eq i64 %i1, %count
  br i1 %last, label %unlink, label %out
unlink:
  br label %walk
walk:
  %pp = phi %job** [ @head, %unlink ], [ %plink, %step ]
  %cur = load %job*, %job** %pp
  %found = icmp eq %job* %cur, %j
  br i1 %found, label %remove, label %step
step:
  %plink = getelementptr %job, %job* %cur, i32 0, i32 6
  br label %walk
remove:
  %jl = getelementptr %job, %job* %j, i32 0, i32 6
  %nx = load %job*, %job** %jl
  store atomic %job* %nx, %job** %pp monotonic, align 8
  br label %out
out:
  ret i64 %i
}

; run task i of j (fields read by the claimer under the mutex), then count it done
define internal void @finish(%job* %j, i8* (i8*)* %fn, i8* %arg) nounwind {
  call i8* %fn(i8* %arg)
  %prem = getelementptr %job, %job* %j, i32 0, i32 5
  %old = atomicrmw sub i64* %prem, i64 1 acq_rel
  %last = icmp eq i64 %old, 1
  br i1 %last, label %signal, label %out
signal:
  %m = getelementptr [128 x i8], [128 x i8]* @mutex, i64 0, i64 0
  %d = getelementptr [128 x i8], [128 x i8]* @done, i64 0, i64 0
  call i32 @pthread_mutex_lock(i8* %m)
  call i32 @pthread_cond_broadcast(i8* %d)
  call i32 @pthread_mutex_unlock(i8* %m)
  br label %out
out:
  ret void
}

define internal i8* @task_arg(%job* %j, i64 %i) nounwind {
  %pb = getelementptr %job, %job* %j, i32 0, i32 1
  %base = load i8*, i8** %pb
  %ps = getelementptr %job, %job* %j, i32 0, i32 2
  %stride = load i64, i64* %ps
  %off = mul i64 %i, %stride
  %arg = getelementptr i8, i8* %base, i64 %off
  ret i8* %arg
}

define internal i8* @worker(i8* %unused) nounwind {
entry:
  %m = getelementptr [128 x i8], [128 x i8]* @mutex, i64 0, i64 0
  %w = getelementptr [128 x i8], [128 x i8]* @work, i64 0, i64 0
  %headw = bitcast %job** @head to i64*
  br label %idle
idle:
  %found = call i1 @spin_wait(i64* %headw, i1 0)
  call i32 @pthread_mutex_lock(i8* %m)
  br i1 %found, label %locked, label %sleep
sleep:
  %h0 = load %job*, %job** @head
  %empty = icmp eq %job* %h0, null
  br i1 %empty, label %wait, label %locked
wait:
  %s = load i64, i64* @sleepers
  %s1 = add i64 %s, 1
  store i64 %s1, i64* @sleepers
  call i32 @pthread_cond_wait(i8* %w, i8* %m)
  %s2 = load i64, i64* @sleepers
  %s3 = sub i64 %s2, 1
  store i64 %s3, i64* @sleepers
  br label %sleep
locked:
  %j = load %job*, %job** @head
  %none = icmp eq %job* %j, null
  br i1 %none, label %unlock_idle, label %claim
unlock_idle:
  call i32 @pthread_mutex_unlock(i8* %m)
  br label %idle
claim:
  %i = call i64 @take(%job* %j)
  %pfn = getelementptr %job, %job* %j, i32 0, i32 0
  %fn = load i8* (i8*)*, i8* (i8*)** %pfn
  %arg = call i8* @task_arg(%job* %j, i64 %i)
  call i32 @pthread_mutex_unlock(i8* %m)
  call void @finish(%job* %j, i8* (i8*)* %fn, i8* %arg)
  br label %idle
}

; start workers until there are @target of them (called with the mutex held)
define internal void @grow() nounwind {
entry:
  %tid = alloca i64
  br label %loop
loop:
  %n = load i64, i64* @workers
  %t = load atomic i64, i64* @target monotonic, align 8
  %more = icmp slt i64 %n, %t
  br i1 %more, label %create, label %out
create:
  %rc = call i32 @pthread_create(i64* %tid, i8* null, i8* (i8*)* @worker, i8* null)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %started, label %failed
started:
  %id = load i64, i64* %tid
  call i32 @pthread_detach(i64 %id)
  %n1 = add i64 %n, 1
  store atomic i64 %n1, i64* @workers monotonic, align 8
  br label %loop
failed:                                  ; no more threads: run with what there is
  store atomic i64 %n, i64* @target monotonic, align 8
  br label %out
out:
  ret void
}

define void @xlapy_pool_run(i8* (i8*)* %fn, i8* %base, i64 %stride, i64 %count) nounwind {
entry:
  %j = alloca %job
  %m = getelementptr [128 x i8], [128 x i8]* @mutex, i64 0, i64 0
  %w = getelementptr [128 x i8], [128 x i8]* @work, i64 0, i64 0
  %d = getelementptr [128 x i8], [128 x i8]* @done, i64 0, i64 0
  %f0 = getelementptr %job, %job* %j, i32 0, i32 0
  store i8* (i8*)* %fn, i8* (i8*)** %f0
  %f1 = getelementptr %job, %job* %j, i32 0, i32 1
  store i8* %base, i8** %f1
  %f2 = getelementptr %job, %job* %j, i32 0, i32 2
  store i64 %stride, i64* %f2
  %f3 = getelementptr %job, %job* %j, i32 0, i32 3
  store i64 %count, i64* %f3
  %f4 = getelementptr %job, %job* %j, i32 0, i32 4
  store i64 0, i64* %f4
  %f5 = getelementptr %job, %job* %j, i32 0, i32 5
  store i64 %count, i64* %f5
  %f6 = getelementptr %job, %job* %j, i32 0, i32 6
  %nw = load atomic i64, i64* @workers monotonic, align 8
  %tg = load atomic i64, i64* @target monotonic, align 8
  %few = icmp slt i64 %nw, %tg
  %several = icmp sgt i64 %count, 1
  %tg0 = icmp sgt i64 %tg, 0
  %go = and i1 %several, %tg0
  br i1 %go, label %publish, label %inline
inline:                                  ; no workers wanted (or one task): run everything here
  br label %inline.loop
inline.loop:
  %k = phi i64 [ 0, %inline ], [ %k1, %inline.body ]
  %more = icmp slt i64 %k, %count
  br i1 %more, label %inline.body, label %exit
inline.body:
  %a = call i8* @task_arg(%job* %j, i64 %k)
  call i8* %fn(i8* %a)
  %k1 = add i64 %k, 1
  br label %inline.loop
publish:
  call i32 @pthread_mutex_lock(i8* %m)
  br i1 %few, label %grow, label %push
grow:
  call void @grow()
  br label %push
push:
  %h = load %job*, %job** @head
  store %job* %h, %job** %f6
  store atomic %job* %j, %job** @head release, align 8
  %sl = load i64, i64* @sleepers
  %wake = icmp sgt i64 %sl, 0
  br i1 %wake, label %broadcast, label %own
broadcast:
  call i32 @pthread_cond_broadcast(i8* %w)
  br label %own
own:                                     ; the caller works on its own job too
  call i32 @pthread_mutex_unlock(i8* %m)
  br label %mine
mine:
  call i32 @pthread_mutex_lock(i8* %m)
  %i = call i64 @take(%job* %j)
  call i32 @pthread_mutex_unlock(i8* %m)
  %got = icmp sge i64 %i, 0
  br i1 %got, label %run, label %join
run:
  %arg = call i8* @task_arg(%job* %j, i64 %i)
  call i8* %fn(i8* %arg)
  %old = atomicrmw sub i64* %f5, i64 1 acq_rel
  br label %mine
join:
  %zero = call i1 @spin_wait(i64* %f5, i1 1)
  br i1 %zero, label %exit, label %block
block:
  call i32 @pthread_mutex_lock(i8* %m)
  br label %block.check
block.check:
  %r = load atomic i64, i64* %f5 acquire, align 8
  %finished = icmp eq i64 %r, 0
  br i1 %finished, label %block.out, label %block.wait
block.wait:
  call i32 @pthread_cond_wait(i8* %d, i8* %m)
  br label %block.check
block.out:
  call i32 @pthread_mutex_unlock(i8* %m)
  br label %exit
exit:
  ret void
}
"""

_X86_TIME = r"""
declare i64 @llvm.readcyclecounter()
declare void @llvm.x86.sse2.pause()
define internal i64 @now() nounwind {
  %t = call i64 @llvm.readcyclecounter()
  ret i64 %t
}
define internal void @relax() nounwind {
  call void @llvm.x86.sse2.pause()
  ret void
}
define internal i64 @elapsed(i64 %t0, i64 %iterations) nounwind {
  %t = call i64 @llvm.readcyclecounter()
  %dt = sub i64 %t, %t0
  ret i64 %dt
}
"""

# elsewhere: count iterations instead of cycles
_OTHER_TIME = r"""
define internal i64 @now() nounwind {
  ret i64 0
}
define internal void @relax() nounwind {
  ret void
}
define internal i64 @elapsed(i64 %t0, i64 %iterations) nounwind {
  ret i64 %iterations
}
"""


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
    global _engine, _set_target
    from .compiler import target_machine
    init_llvm()
    _load_threads()
    triple = llvm.get_process_triple()
    x86 = triple.startswith(("x86_64", "i686", "i386"))
    text = _IR + (_X86_TIME if x86 else _OTHER_TIME)
    text += "\ndefine i64 @xlapy_pool_ticks() nounwind {\n  %t = call i64 @now()\n  ret i64 %t\n}\n"
    mod = llvm.parse_assembly(f'target triple = "{triple}"\n' + text)
    mod.verify()
    tm = target_machine()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    _engine = engine
    spin = int(SPIN_US * 1e-6 * _tsc_hz()) if x86 else SPIN_US * 200     # cycles, or loop iterations
    _engine_function("xlapy_pool_init", None, ctypes.c_int64)(spin)
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


__all__ = ["ensure_workers", "serial_blas_available", "workers_wanted", "RUN_SYMBOL", "SERIAL_BLAS_SYMBOL",
           "SPIN_US"]
