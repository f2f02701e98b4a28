"""The thread pool's runtime routines (threadpool.py says what the pool does) as LLVM IR, one builder function per
routine.

Why llvmlite builder code and not a `.ll` resource file: the rest of the backend emits IR with the builder
(DESIGN: never IR strings), so this code reads and is checked like it: names of fields and globals instead of
numbered GEP operands, Python helpers for the repeated lock / unlock / field patterns, the counted loop of
irhelpers, and one Python switch for the two timing variants (x86 cycles, or iterations elsewhere) where a text
file needed two files or string splicing. A resource file would also need package data in every install.

Shared state, all internal globals:

    mutex, work, done   the pool's pthread mutex and its two condition variables (a job was published, a job's
                        last task finished); 128 bytes each (glibc needs 40/48), set up by pthread_*_init
    head                the published jobs, linked through job.link (changed under the mutex; spinners read it
                        atomically)
    sleepers            workers waiting on `work` (under the mutex)
    workers, target     workers started and workers wanted (atomic)
    spin                how long to spin before sleeping: cycles on x86, loop iterations elsewhere
    blas.*              the BLAS thread-count control of xlapy_blas_serial (under blas.mutex)

A job lives on its caller's stack: { fn, base, stride, count, next, remaining, link }. next (the next task to
hand out) and link are guarded by the mutex, remaining (tasks not finished yet) is atomic.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from llvmlite import ir

from .irhelpers import I1, I8, I8P, I32, I64, VOID, for_range, i64, intrinsic, is_x86

RUN_SYMBOL = "xlapy_pool_run"                    # what compiled code calls (parallel.py, dot_blas.py)
SERIAL_BLAS_SYMBOL = "xlapy_blas_serial"
TASK_FN = ir.FunctionType(I8P, [I8P]).as_pointer()          # i8* task(i8* arg)
_SYNC = ir.ArrayType(I8, 128)                                # room for a pthread mutex or condition variable
_BLAS_SET = ir.FunctionType(VOID, [I32]).as_pointer()        # the BLAS provider's set_num_threads(int)
_BLAS_GET = ir.FunctionType(I32, []).as_pointer()            # and get_num_threads()
_JOB_FIELDS = ("fn", "base", "stride", "count", "next", "remaining", "link")

_PTHREAD = {
    "pthread_mutex_init": (I32, [I8P, I8P]),
    "pthread_cond_init": (I32, [I8P, I8P]),
    "pthread_mutex_lock": (I32, [I8P]),
    "pthread_mutex_unlock": (I32, [I8P]),
    "pthread_cond_wait": (I32, [I8P, I8P]),
    "pthread_cond_broadcast": (I32, [I8P]),
    "pthread_create": (I32, [I64.as_pointer(), I8P, TASK_FN, I8P]),
    "pthread_detach": (I32, [I64]),
}


class PoolModule:
    """The module being built: its job type, globals and functions, and the helpers the routines share."""

    def __init__(self, triple: str):
        self.module = ir.Module("xlapy_pool", context=ir.Context())
        self.module.triple = triple
        self.job = self.module.context.get_identified_type("job")
        self.job.set_body(TASK_FN, I8P, I64, I64, I64, I64, self.job.as_pointer())
        self.job_ptr = self.job.as_pointer()
        self.globals: dict[str, ir.GlobalVariable] = {}
        for name in ("mutex", "work", "done"):
            self._global(name, _SYNC, None, align=64)
        self._global("head", self.job_ptr, None, align=64)
        for name in ("sleepers", "workers", "target", "spin"):
            self._global(name, I64, 0, align=64)
        self._global("blas.mutex", _SYNC, None, align=64)
        self._global("blas.set", _BLAS_SET, None)
        self._global("blas.get", _BLAS_GET, None)
        self._global("blas.users", I64, 0)
        self._global("blas.saved", I32, 1)
        self.functions = {name: ir.Function(self.module, ir.FunctionType(ret, args), name)
                          for name, (ret, args) in _PTHREAD.items()}

    def _global(self, name: str, ty: ir.Type, value, align: int | None = None) -> None:
        g = ir.GlobalVariable(self.module, ty, name)
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, value)
        if align is not None:
            g.align = align
        self.globals[name] = g

    def define(self, name: str, ret: ir.Type, params: list, internal: bool = True) -> tuple[ir.Function, ir.IRBuilder]:
        """A new nounwind function (internal unless exported) and a builder at its entry block."""
        fn = ir.Function(self.module, ir.FunctionType(ret, params), name)
        fn.attributes.add("nounwind")
        if internal:
            fn.linkage = "internal"
        self.functions[name] = fn
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    def call(self, b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
        return b.call(self.functions[name], list(args))

    @contextmanager
    def locked(self, b: ir.IRBuilder, mutex: ir.Value) -> Iterator[None]:
        """The code emitted inside the `with` runs with `mutex` held."""
        self.call(b, "pthread_mutex_lock", mutex)
        yield
        self.call(b, "pthread_mutex_unlock", mutex)

    def sync(self, b: ir.IRBuilder, name: str) -> ir.Value:
        """The i8* of a mutex or condition variable global."""
        return b.gep(self.globals[name], [i64(0), i64(0)])

    def field(self, b: ir.IRBuilder, job: ir.Value, name: str) -> ir.Value:
        """A pointer to a field of a job."""
        return b.gep(job, [ir.Constant(I32, 0), ir.Constant(I32, _JOB_FIELDS.index(name))])

    def load(self, b: ir.IRBuilder, name: str) -> ir.Value:
        return b.load(self.globals[name])

    def store(self, b: ir.IRBuilder, value: ir.Value, name: str) -> None:
        b.store(value, self.globals[name])


def _null(ty: ir.Type) -> ir.Constant:
    return ir.Constant(ty, None)


def build_pool_module(triple: str) -> ir.Module:
    """The pool's module: xlapy_pool_{reset,init,blas_control,set_target,run,ticks} and xlapy_blas_serial."""
    p = PoolModule(triple)
    timing = _x86_timing if is_x86(p.module) else _iteration_timing
    for routine in (timing, _ticks, _reset, _init, _blas_control, _blas_serial, _set_target, _spin_wait, _take,
                    _finish, _task_arg, _worker, _grow, _run):
        routine(p)
    return p.module


# -- timing: now(), relax(), elapsed(t0, iterations) for the spin budget -----------------------------------
def _x86_timing(p: PoolModule) -> None:
    """Cycles of the time-stamp counter; relax is the pause instruction."""
    _, b = p.define("now", I64, [])
    b.ret(intrinsic(b, "llvm.readcyclecounter", I64, []))
    _, b = p.define("relax", VOID, [])
    intrinsic(b, "llvm.x86.sse2.pause", VOID, [])
    b.ret_void()
    fn, b = p.define("elapsed", I64, [I64, I64])
    b.ret(b.sub(intrinsic(b, "llvm.readcyclecounter", I64, []), fn.args[0]))


def _iteration_timing(p: PoolModule) -> None:
    """Elsewhere the budget counts spin iterations."""
    _, b = p.define("now", I64, [])
    b.ret(i64(0))
    _, b = p.define("relax", VOID, [])
    b.ret_void()
    fn, b = p.define("elapsed", I64, [I64, I64])
    b.ret(fn.args[1])


def _ticks(p: PoolModule) -> None:
    """xlapy_pool_ticks(): now(), for threadpool.py to measure the time-stamp counter's rate."""
    _, b = p.define("xlapy_pool_ticks", I64, [], internal=False)
    b.ret(p.call(b, "now"))


# -- set-up, and the BLAS thread count --------------------------------------------------------------------
def _reset(p: PoolModule) -> None:
    """xlapy_pool_reset(): fresh mutex and condition variables, no jobs, no workers (also a forked child's)."""
    _, b = p.define("xlapy_pool_reset", VOID, [], internal=False)
    m, w, d = p.sync(b, "mutex"), p.sync(b, "work"), p.sync(b, "done")
    p.call(b, "pthread_mutex_init", m, _null(I8P))
    p.call(b, "pthread_cond_init", w, _null(I8P))
    p.call(b, "pthread_cond_init", d, _null(I8P))
    p.store(b, _null(p.job_ptr), "head")
    p.store(b, i64(0), "sleepers")
    p.store(b, i64(0), "workers")
    b.ret_void()


def _init(p: PoolModule) -> None:
    """xlapy_pool_init(spin): once per process."""
    fn, b = p.define("xlapy_pool_init", VOID, [I64], internal=False)
    p.store(b, fn.args[0], "spin")
    p.call(b, "pthread_mutex_init", p.sync(b, "blas.mutex"), _null(I8P))
    p.call(b, "xlapy_pool_reset")
    b.ret_void()


def _blas_control(p: PoolModule) -> None:
    """xlapy_pool_blas_control(set, get): the BLAS's thread-count setter and getter (null: no control)."""
    fn, b = p.define("xlapy_pool_blas_control", VOID, [_BLAS_SET, _BLAS_GET], internal=False)
    with p.locked(b, p.sync(b, "blas.mutex")):
        p.store(b, fn.args[0], "blas.set")
        p.store(b, fn.args[1], "blas.get")
    b.ret_void()


def _blas_serial(p: PoolModule) -> None:
    """xlapy_blas_serial(on): on = 1, one more caller needs the BLAS single-threaded (the first one saves its
    thread count and sets 1); on = 0, one fewer (the last one restores the saved count)."""
    fn, b = p.define(SERIAL_BLAS_SYMBOL, VOID, [I32], internal=False)
    one = ir.Constant(I32, 1)
    with p.locked(b, p.sync(b, "blas.mutex")):
        set_threads = p.load(b, "blas.set")
        with b.if_then(b.icmp_unsigned("!=", set_threads, _null(_BLAS_SET))):
            users = p.load(b, "blas.users")
            with b.if_else(b.icmp_unsigned("!=", fn.args[0], ir.Constant(I32, 0))) as (enter, leave):
                with enter:
                    p.store(b, b.add(users, i64(1)), "blas.users")
                    with b.if_then(b.icmp_unsigned("==", users, i64(0))):
                        saved = b.call(p.load(b, "blas.get"), [])
                        p.store(b, saved, "blas.saved")
                        with b.if_then(b.icmp_unsigned("!=", saved, one)):
                            b.call(set_threads, [one])
                with leave:
                    left = b.sub(users, i64(1))
                    p.store(b, left, "blas.users")
                    with b.if_then(b.icmp_unsigned("==", left, i64(0))):
                        old = p.load(b, "blas.saved")
                        with b.if_then(b.icmp_unsigned("!=", old, one)):
                            b.call(set_threads, [old])
    b.ret_void()


def _set_target(p: PoolModule) -> None:
    """xlapy_pool_set_target(n): how many workers the next xlapy_pool_run should find."""
    fn, b = p.define("xlapy_pool_set_target", VOID, [I64], internal=False)
    b.store_atomic(fn.args[0], p.globals["target"], "monotonic", 8)
    b.ret_void()


# -- jobs and tasks ---------------------------------------------------------------------------------------
def _spin_wait(p: PoolModule) -> None:
    """spin_wait(word, want_zero): spin until the i64 *word is zero (want_zero) or nonzero, or the spin budget
    runs out; returns 1 when it saw what it wanted."""
    fn, b = p.define("spin_wait", I1, [I64.as_pointer(), I1])
    word, want_zero = fn.args
    loop, check, relax, yes, no = (fn.append_basic_block(n) for n in ("loop", "check", "relax", "yes", "no"))
    entry = b.block
    budget = p.load(b, "spin")
    t0 = p.call(b, "now")
    b.branch(loop)
    b.position_at_end(loop)
    n = b.phi(I64)
    n.add_incoming(i64(0), entry)
    is_zero = b.icmp_unsigned("==", b.load_atomic(word, "acquire", 8), i64(0))
    b.cbranch(b.icmp_unsigned("==", is_zero, want_zero), yes, check)
    b.position_at_end(check)
    over = b.icmp_unsigned(">=", p.call(b, "elapsed", t0, n), budget)
    b.cbranch(over, no, relax)
    b.position_at_end(relax)
    p.call(b, "relax")
    n.add_incoming(b.add(n, i64(1)), relax)
    b.branch(loop)
    b.position_at_end(yes)
    b.ret(ir.Constant(I1, 1))
    b.position_at_end(no)
    b.ret(ir.Constant(I1, 0))


def _take(p: PoolModule) -> None:
    """take(job), with the mutex held: claim the job's next task, -1 when none is left. The job is unlinked
    when its last task is claimed, so every job on the list has tasks to hand out."""
    fn, b = p.define("take", I64, [p.job_ptr])
    job = fn.args[0]
    empty, claim = fn.append_basic_block("empty"), fn.append_basic_block("claim")
    pnext = p.field(b, job, "next")
    i = b.load(pnext)
    count = b.load(p.field(b, job, "count"))
    b.cbranch(b.icmp_signed(">=", i, count), empty, claim)
    b.position_at_end(empty)
    b.ret(i64(-1))
    b.position_at_end(claim)
    claimed = b.add(i, i64(1))
    b.store(claimed, pnext)
    with b.if_then(b.icmp_signed("==", claimed, count)):
        _unlink(p, b, job)
    b.ret(i)


def _unlink(p: PoolModule, b: ir.IRBuilder, job: ir.Value) -> None:
    """Remove `job` from the list at head (it is on it): walk the links to the one that points at it."""
    fn = b.function
    walk, step, remove = (fn.append_basic_block(n) for n in ("walk", "step", "remove"))
    before = b.block
    b.branch(walk)
    b.position_at_end(walk)
    link = b.phi(p.job_ptr.as_pointer())
    link.add_incoming(p.globals["head"], before)
    current = b.load(link)
    b.cbranch(b.icmp_unsigned("==", current, job), remove, step)
    b.position_at_end(step)
    link.add_incoming(p.field(b, current, "link"), step)
    b.branch(walk)
    b.position_at_end(remove)
    b.store_atomic(b.load(p.field(b, job, "link")), link, "monotonic", 8)


def _finish(p: PoolModule) -> None:
    """finish(job, fn, arg): run a task (fn and arg read by its claimer under the mutex), then count it done;
    the last one wakes the callers waiting on `done`."""
    fn, b = p.define("finish", VOID, [p.job_ptr, TASK_FN, I8P])
    job, task, arg = fn.args
    b.call(task, [arg])
    before = b.atomic_rmw("sub", p.field(b, job, "remaining"), i64(1), "acq_rel")
    with b.if_then(b.icmp_unsigned("==", before, i64(1))):
        m, d = p.sync(b, "mutex"), p.sync(b, "done")
        with p.locked(b, m):
            p.call(b, "pthread_cond_broadcast", d)
    b.ret_void()


def _task_arg(p: PoolModule) -> None:
    """task_arg(job, i) = job.base + i * job.stride."""
    fn, b = p.define("task_arg", I8P, [p.job_ptr, I64])
    job, i = fn.args
    base = b.load(p.field(b, job, "base"))
    stride = b.load(p.field(b, job, "stride"))
    b.ret(b.gep(base, [b.mul(i, stride)]))


# -- workers --------------------------------------------------------------------------------------------------
def _worker(p: PoolModule) -> None:
    """worker(): forever: spin for a published job (then sleep on `work` until there is one), claim a task
    under the mutex, run it outside."""
    fn, b = p.define("worker", I8P, [I8P])
    idle, sleep, wait, locked, unlock_idle, claim = (
        fn.append_basic_block(n) for n in ("idle", "sleep", "wait", "locked", "unlock_idle", "claim"))
    m, w = p.sync(b, "mutex"), p.sync(b, "work")
    head_word = b.bitcast(p.globals["head"], I64.as_pointer())
    b.branch(idle)
    b.position_at_end(idle)
    found = p.call(b, "spin_wait", head_word, ir.Constant(I1, 0))
    p.call(b, "pthread_mutex_lock", m)
    b.cbranch(found, locked, sleep)
    b.position_at_end(sleep)                        # nothing found while spinning: sleep until there is a job
    b.cbranch(b.icmp_unsigned("==", p.load(b, "head"), _null(p.job_ptr)), wait, locked)
    b.position_at_end(wait)
    p.store(b, b.add(p.load(b, "sleepers"), i64(1)), "sleepers")
    p.call(b, "pthread_cond_wait", w, m)
    p.store(b, b.sub(p.load(b, "sleepers"), i64(1)), "sleepers")
    b.branch(sleep)
    b.position_at_end(locked)
    job = p.load(b, "head")
    b.cbranch(b.icmp_unsigned("==", job, _null(p.job_ptr)), unlock_idle, claim)
    b.position_at_end(unlock_idle)                  # another thread took it
    p.call(b, "pthread_mutex_unlock", m)
    b.branch(idle)
    b.position_at_end(claim)
    i = p.call(b, "take", job)
    task = b.load(p.field(b, job, "fn"))
    arg = p.call(b, "task_arg", job, i)
    p.call(b, "pthread_mutex_unlock", m)
    p.call(b, "finish", job, task, arg)
    b.branch(idle)


def _grow(p: PoolModule) -> None:
    """grow(), with the mutex held: start workers until there are `target` of them; where pthread_create
    fails, lower the target to what there is and run with that."""
    fn, b = p.define("grow", VOID, [])
    loop, create, started, failed, out = (
        fn.append_basic_block(n) for n in ("loop", "create", "started", "failed", "out"))
    tid = b.alloca(I64)
    b.branch(loop)
    b.position_at_end(loop)
    n = p.load(b, "workers")
    target = b.load_atomic(p.globals["target"], "monotonic", 8)
    b.cbranch(b.icmp_signed("<", n, target), create, out)
    b.position_at_end(create)
    rc = p.call(b, "pthread_create", tid, _null(I8P), p.functions["worker"], _null(I8P))
    b.cbranch(b.icmp_unsigned("==", rc, ir.Constant(I32, 0)), started, failed)
    b.position_at_end(started)
    p.call(b, "pthread_detach", b.load(tid))
    b.store_atomic(b.add(n, i64(1)), p.globals["workers"], "monotonic", 8)
    b.branch(loop)
    b.position_at_end(failed)
    b.store_atomic(n, p.globals["target"], "monotonic", 8)
    b.branch(out)
    b.position_at_end(out)
    b.ret_void()


# -- xlapy_pool_run --------------------------------------------------------------------------------------------
def _run(p: PoolModule) -> None:
    """xlapy_pool_run(fn, base, stride, count): run fn(base + i*stride) for i in [0, count) on the workers and
    this thread; returns when all have finished. With one task, or no workers wanted, all run here."""
    fn, b = p.define(RUN_SYMBOL, VOID, [TASK_FN, I8P, I64, I64], internal=False)
    task, base, stride, count = fn.args
    inline, publish, grow, push, done = (
        fn.append_basic_block(n) for n in ("inline", "publish", "grow", "push", "exit"))
    job = b.alloca(p.job)
    m = p.sync(b, "mutex")
    for name, value in zip(_JOB_FIELDS, (task, base, stride, count, i64(0), count)):
        b.store(value, p.field(b, job, name))
    workers = b.load_atomic(p.globals["workers"], "monotonic", 8)
    target = b.load_atomic(p.globals["target"], "monotonic", 8)
    too_few = b.icmp_signed("<", workers, target)
    share = b.and_(b.icmp_signed(">", count, i64(1)), b.icmp_signed(">", target, i64(0)))
    b.cbranch(share, publish, inline)
    b.position_at_end(inline)                        # no workers wanted (or one task): run everything here
    with for_range(b, count, "inline") as k:
        b.call(task, [p.call(b, "task_arg", job, k)])
    b.branch(done)
    b.position_at_end(publish)                       # push the job on the list, start or wake workers
    p.call(b, "pthread_mutex_lock", m)
    b.cbranch(too_few, grow, push)
    b.position_at_end(grow)
    p.call(b, "grow")
    b.branch(push)
    b.position_at_end(push)
    b.store(p.load(b, "head"), p.field(b, job, "link"))
    b.store_atomic(job, p.globals["head"], "release", 8)
    with b.if_then(b.icmp_signed(">", p.load(b, "sleepers"), i64(0))):
        p.call(b, "pthread_cond_broadcast", p.sync(b, "work"))
    p.call(b, "pthread_mutex_unlock", m)
    _work_on(p, b, job, task, m)
    _join(p, b, job, m)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()


def _work_on(p: PoolModule, b: ir.IRBuilder, job: ir.Value, task: ir.Value, m: ir.Value) -> None:
    """The caller works on its own job too: claim its tasks under the mutex until none is left."""
    fn = b.function
    mine, run, after = (fn.append_basic_block(n) for n in ("mine", "run", "join"))
    b.branch(mine)
    b.position_at_end(mine)
    with p.locked(b, m):
        i = p.call(b, "take", job)
    b.cbranch(b.icmp_signed(">=", i, i64(0)), run, after)
    b.position_at_end(run)
    b.call(task, [p.call(b, "task_arg", job, i)])
    b.atomic_rmw("sub", p.field(b, job, "remaining"), i64(1), "acq_rel")
    b.branch(mine)
    b.position_at_end(after)


def _join(p: PoolModule, b: ir.IRBuilder, job: ir.Value, m: ir.Value) -> None:
    """Wait for the tasks the workers run: spin on job.remaining, then sleep on `done` until it is 0."""
    fn = b.function
    block, check, wait, woken, joined = (
        fn.append_basic_block(n) for n in ("block", "block.check", "block.wait", "block.out", "joined"))
    remaining = p.field(b, job, "remaining")
    b.cbranch(p.call(b, "spin_wait", remaining, ir.Constant(I1, 1)), joined, block)
    b.position_at_end(block)
    p.call(b, "pthread_mutex_lock", m)
    b.branch(check)
    b.position_at_end(check)
    finished = b.icmp_unsigned("==", b.load_atomic(remaining, "acquire", 8), i64(0))
    b.cbranch(finished, woken, wait)
    b.position_at_end(wait)
    p.call(b, "pthread_cond_wait", p.sync(b, "done"), m)
    b.branch(check)
    b.position_at_end(woken)
    p.call(b, "pthread_mutex_unlock", m)
    b.branch(joined)
    b.position_at_end(joined)
