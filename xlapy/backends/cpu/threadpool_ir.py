"""The thread pool's runtime routines (threadpool.py says what the pool does) as LLVM IR, one builder function per
routine.

How threads wait (spin, yield, sleep, and the adaptive spin budget) is threadpool_wait.py.

Why llvmlite builder code and not a `.ll` resource file: the rest of the backend emits IR with the builder
(DESIGN: never IR strings), so this code reads and is checked like it: names of fields and globals instead of
numbered GEP operands, Python helpers for the repeated lock / unlock / field patterns, the counted loop of
irhelpers, and one Python switch for the two timing variants (x86 cycles, or iterations elsewhere) where a text
file needed two files or string splicing. A resource file would also need package data in every install.

Shared state, all internal globals:

    mutex, work, done   the pool's pthread mutex and its two condition variables (a job was published, a job's
                        last worker left); 128 bytes each (glibc needs 40/48), set up by pthread_*_init
    head                the published jobs, linked through job.link (changed under the mutex)
    epoch               jobs published so far (written under the mutex): a spinning worker watches it change
    sleepers            workers waiting on `work` (under the mutex)
    spinning            1 while a worker spins for the next job: at most one spins at a time (atomic)
    joiners             callers waiting on `done` (atomic, changed under the mutex)
    workers, target     workers started and workers wanted (atomic)
    spin.idle, spin.join  how long an idle worker / a caller waiting for its workers spins before it sleeps
                        (cycles on x86, loop iterations elsewhere), adapted between spin.floor and spin.max
    late                a sched_yield that returns this much later was descheduled: the core is wanted
    blas.*              the BLAS thread-count control of xlapy_blas_serial (under blas.mutex)

A job lives on its caller's stack: { fn, base, stride, count, helpers, next, users, link }. helpers is how many
workers it can use (threads - 1); next (the next task to hand out) is an atomic counter every thread takes
tasks from without the mutex; users (workers attached to the job) is atomic; link is guarded by the mutex. A
worker attaches (users += 1, taking its first task) under the mutex while the job is on the list, and touches
the job only until it detaches: its caller unlinks the job once every task is taken, then waits for users to
reach 0, so no worker can reach a job whose stack frame is gone.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from llvmlite import ir

from .irhelpers import I1, I8, I8P, I32, I64, VOID, for_range, i64
from .threadpool_share import GLOBALS as SHARE_GLOBALS, HELP_ONE, define_sharing
from .threadpool_wait import RAN_OUT, SAW, SPIN_FLOOR_DIVISOR, define_waiting

RUN_SYMBOL = "xlapy_pool_run"                    # what compiled code calls (parallel.py)
SERIAL_BLAS_SYMBOL = "xlapy_blas_serial"
TASK_FN = ir.FunctionType(I8P, [I8P]).as_pointer()          # i8* task(i8* arg)
_SYNC = ir.ArrayType(I8, 128)                                # room for a pthread mutex or condition variable
_BLAS_SET = ir.FunctionType(VOID, [I32]).as_pointer()        # the BLAS provider's set_num_threads(int)
_BLAS_GET = ir.FunctionType(I32, []).as_pointer()            # and get_num_threads()
_JOB_FIELDS = ("fn", "base", "stride", "count", "helpers", "next", "users", "link")

_LIBC = {                                       # what the routines call: pthreads and sched_yield
    "pthread_mutex_init": (I32, [I8P, I8P]),
    "pthread_cond_init": (I32, [I8P, I8P]),
    "pthread_mutex_lock": (I32, [I8P]),
    "pthread_mutex_unlock": (I32, [I8P]),
    "pthread_cond_wait": (I32, [I8P, I8P]),
    "pthread_cond_broadcast": (I32, [I8P]),
    "pthread_cond_signal": (I32, [I8P]),
    "pthread_create": (I32, [I64.as_pointer(), I8P, TASK_FN, I8P]),
    "pthread_detach": (I32, [I64]),
    "sched_yield": (I32, []),
}


class PoolModule:
    """The module being built: its job type, globals and functions, and the helpers the routines share."""

    def __init__(self, triple: str):
        self.module = ir.Module("xlapy_pool", context=ir.Context())
        self.module.triple = triple
        self.job = self.module.context.get_identified_type("job")
        self.job.set_body(TASK_FN, I8P, I64, I64, I64, I64, I64, self.job.as_pointer())
        self.job_ptr = self.job.as_pointer()
        self.globals: dict[str, ir.GlobalVariable] = {}
        for name in ("mutex", "work", "done"):
            self._global(name, _SYNC, None, align=64)
        self._global("head", self.job_ptr, None, align=64)
        for name in ("epoch", "sleepers", "spinning", "joiners", "workers", "target", "spin.idle", "spin.join",
                     "spin.floor", "spin.max", "late") + SHARE_GLOBALS:
            self._global(name, I64, 0, align=64)
        self._global("blas.mutex", _SYNC, None, align=64)
        self._global("blas.set", _BLAS_SET, None)
        self._global("blas.get", _BLAS_GET, None)
        self._global("blas.users", I64, 0)
        self._global("blas.saved", I32, 1)
        self.functions = {name: ir.Function(self.module, ir.FunctionType(ret, args), name)
                          for name, (ret, args) in _LIBC.items()}

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
    define_waiting(p)
    define_sharing(p)
    for routine in (_reset, _init, _blas_control, _blas_serial, _set_target, _task_arg, _serve, _find, _worker,
                    _grow, _run):
        routine(p)
    return p.module


# -- set-up, and the BLAS thread count --------------------------------------------------------------------
def _reset(p: PoolModule) -> None:
    """xlapy_pool_reset(): fresh mutex and condition variables, no jobs, no workers (also a forked child's)."""
    _, b = p.define("xlapy_pool_reset", VOID, [], internal=False)
    m, w, d = p.sync(b, "mutex"), p.sync(b, "work"), p.sync(b, "done")
    p.call(b, "pthread_mutex_init", m, _null(I8P))
    p.call(b, "pthread_cond_init", w, _null(I8P))
    p.call(b, "pthread_cond_init", d, _null(I8P))
    p.store(b, _null(p.job_ptr), "head")
    for name in ("epoch", "sleepers", "spinning", "joiners", "workers"):
        p.store(b, i64(0), name)
    b.ret_void()


def _init(p: PoolModule) -> None:
    """xlapy_pool_init(spin, late, judge): once per process; spin is the longest spin (spin.max), late says when
    a sched_yield came back late, judge how long a job must keep its caller busy to tell how much help it got
    (threadpool_share.py)."""
    fn, b = p.define("xlapy_pool_init", VOID, [I64, I64, I64], internal=False)
    spin, late, judge = fn.args
    p.store(b, judge, "help.judge")
    p.store(b, i64(HELP_ONE), "help")
    for name in ("spin.max", "spin.idle", "spin.join"):
        p.store(b, spin, name)
    floor = b.udiv(spin, i64(SPIN_FLOOR_DIVISOR))
    p.store(b, b.select(b.icmp_unsigned("<", floor, i64(1)), i64(1), floor), "spin.floor")
    p.store(b, late, "late")
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


# -- taking tasks -------------------------------------------------------------------------------------------
def _task_arg(p: PoolModule) -> None:
    """task_arg(job, i) = job.base + i * job.stride."""
    fn, b = p.define("task_arg", I8P, [p.job_ptr, I64])
    job, i = fn.args
    base = b.load(p.field(b, job, "base"))
    stride = b.load(p.field(b, job, "stride"))
    b.ret(b.gep(base, [b.mul(i, stride)]))


def _drain(p: PoolModule, b: ir.IRBuilder, job: ir.Value) -> ir.Value:
    """Run the job's tasks that are left, each taken from the atomic counter job.next, until none is left: the
    caller and its workers share out the tasks as they come, so none waits for a task another thread has not
    started. Returns how many this thread ran."""
    fn = b.function
    take, run, out = (fn.append_basic_block(n) for n in ("take", "run", "drained"))
    task = b.load(p.field(b, job, "fn"))
    count = b.load(p.field(b, job, "count"))
    pnext = p.field(b, job, "next")
    before = b.block
    b.branch(take)
    b.position_at_end(take)
    ran = b.phi(I64)
    ran.add_incoming(i64(0), before)
    i = b.atomic_rmw("add", pnext, i64(1), "monotonic")
    b.cbranch(b.icmp_signed("<", i, count), run, out)
    b.position_at_end(run)
    b.call(task, [p.call(b, "task_arg", job, i)])
    ran.add_incoming(b.add(ran, i64(1)), run)
    b.branch(take)
    b.position_at_end(out)
    return ran


def _serve(p: PoolModule) -> None:
    """serve(job, first): a worker attached to job runs task `first` (taken when it attached) and the tasks
    left, then detaches; when it was the last worker and a caller sleeps on `done`, it wakes the callers.
    After the detach it never reads the job again (its caller may have returned)."""
    fn, b = p.define("serve", VOID, [p.job_ptr, I64])
    job, first = fn.args
    b.call(b.load(p.field(b, job, "fn")), [p.call(b, "task_arg", job, first)])
    _drain(p, b, job)
    before = b.atomic_rmw("sub", p.field(b, job, "users"), i64(1), "seq_cst")
    with b.if_then(b.icmp_unsigned("==", before, i64(1))):
        joiners = b.load_atomic(p.globals["joiners"], "seq_cst", 8)
        with b.if_then(b.icmp_signed(">", joiners, i64(0))):
            with p.locked(b, p.sync(b, "mutex")):
                p.call(b, "pthread_cond_broadcast", p.sync(b, "done"))
    b.ret_void()


def _find(p: PoolModule) -> None:
    """find(first), with the mutex held: the first job on the list with room for another worker (users <
    helpers) and a task left, which it takes (into *first) and attaches to (users += 1); null when there is
    none. Taking the task when attaching means an attached worker always holds work: its caller never waits
    for a worker that has nothing to do."""
    fn, b = p.define("find", p.job_ptr, [I64.as_pointer()])
    walk, room, take, attach, step, none = (
        fn.append_basic_block(n) for n in ("walk", "room", "take", "attach", "step", "none"))
    entry = b.block
    first = p.load(b, "head")
    b.branch(walk)
    b.position_at_end(walk)
    job = b.phi(p.job_ptr)
    job.add_incoming(first, entry)
    b.cbranch(b.icmp_unsigned("==", job, _null(p.job_ptr)), none, room)
    b.position_at_end(room)
    users = p.field(b, job, "users")
    b.cbranch(b.icmp_signed("<", b.load_atomic(users, "monotonic", 8), b.load(p.field(b, job, "helpers"))),
              take, step)
    b.position_at_end(take)
    i = b.atomic_rmw("add", p.field(b, job, "next"), i64(1), "monotonic")
    b.cbranch(b.icmp_signed("<", i, b.load(p.field(b, job, "count"))), attach, step)
    b.position_at_end(attach)
    b.atomic_rmw("add", users, i64(1), "monotonic")
    b.store(i, fn.args[0])
    b.ret(job)
    b.position_at_end(step)
    job.add_incoming(b.load(p.field(b, job, "link")), step)
    b.branch(walk)
    b.position_at_end(none)
    b.ret(_null(p.job_ptr))


def _unlink(p: PoolModule, b: ir.IRBuilder, job: ir.Value) -> None:
    """With the mutex held, remove `job` from the list at head (it is on it): walk the links to the one that
    points at it."""
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
    b.store(b.load(p.field(b, job, "link")), link)


# -- workers --------------------------------------------------------------------------------------------------
def _worker(p: PoolModule) -> None:
    """worker(), forever: attach to a job with tasks left and serve it; with none, spin for the next one (only
    when no other worker spins, and for the spin budget at most), then sleep on `work`. Between jobs the worker
    holds the mutex only to look for one. The next job tells how long the spin should have been (adapt)."""
    fn, b = p.define("worker", I8P, [I8P])
    look, found, empty, try_spin, spin, sleep = (
        fn.append_basic_block(n) for n in ("look", "found", "empty", "try_spin", "spin", "sleep"))
    m, w = p.sync(b, "mutex"), p.sync(b, "work")
    yes, no = ir.Constant(I1, 1), ir.Constant(I1, 0)
    first = b.alloca(I64)
    ran_out_at = b.alloca(I64)                       # when this worker's last spin ran out (0: it did not)
    b.store(i64(0), ran_out_at)
    idle_budget = p.globals["spin.idle"]
    entry = b.block
    p.call(b, "pthread_mutex_lock", m)
    b.branch(look)
    b.position_at_end(look)                          # the mutex is held here
    may_spin = b.phi(I1)
    may_spin.add_incoming(yes, entry)
    job = p.call(b, "find", first)
    b.cbranch(b.icmp_unsigned("!=", job, _null(p.job_ptr)), found, empty)
    b.position_at_end(found)
    p.call(b, "pthread_mutex_unlock", m)
    p.call(b, "adapt", idle_budget, b.load(ran_out_at))
    b.store(i64(0), ran_out_at)
    p.call(b, "serve", job, b.load(first))
    p.call(b, "pthread_mutex_lock", m)
    may_spin.add_incoming(yes, found)
    b.branch(look)
    b.position_at_end(empty)
    b.cbranch(may_spin, try_spin, sleep)
    b.position_at_end(try_spin)                      # become the one spinning worker, or sleep
    claimed = b.cmpxchg(p.globals["spinning"], i64(0), i64(1), "acq_rel", "monotonic")
    b.cbranch(b.extract_value(claimed, 1), spin, sleep)
    b.position_at_end(spin)
    epoch = p.globals["epoch"]
    seen = b.load_atomic(epoch, "monotonic", 8)
    p.call(b, "pthread_mutex_unlock", m)
    outcome = p.call(b, "spin_until", epoch, seen, no, idle_budget)
    b.store(b.select(b.icmp_unsigned("==", outcome, i64(RAN_OUT)), p.call(b, "now"), i64(0)), ran_out_at)
    b.store_atomic(i64(0), p.globals["spinning"], "release", 8)
    p.call(b, "pthread_mutex_lock", m)
    may_spin.add_incoming(no, spin)
    b.branch(look)
    b.position_at_end(sleep)
    p.store(b, b.add(p.load(b, "sleepers"), i64(1)), "sleepers")
    p.call(b, "pthread_cond_wait", w, m)
    p.store(b, b.sub(p.load(b, "sleepers"), i64(1)), "sleepers")
    may_spin.add_incoming(yes, sleep)
    b.branch(look)


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
    """xlapy_pool_run(fn, base, stride, count, threads): run fn(base + i*stride) for i in [0, count) on this
    thread and up to threads-1 workers; returns when all have finished. With one task, one thread, no workers
    wanted, or while the jobs get too little help to pay (threadpool_share.py), all run here."""
    fn, b = p.define(RUN_SYMBOL, VOID, [TASK_FN, I8P, I64, I64, I64], internal=False)
    task, base, stride, count, threads = fn.args
    consider, inline, publish, grow, push, done = (
        fn.append_basic_block(n) for n in ("consider", "inline", "publish", "grow", "push", "exit"))
    job = b.alloca(p.job)
    m = p.sync(b, "mutex")
    helpers = b.sub(threads, i64(1))
    for name, value in zip(_JOB_FIELDS, (task, base, stride, count, helpers, i64(0), i64(0))):
        b.store(value, p.field(b, job, name))
    workers = b.load_atomic(p.globals["workers"], "monotonic", 8)
    target = b.load_atomic(p.globals["target"], "monotonic", 8)
    too_few = b.icmp_signed("<", workers, target)
    share = b.and_(b.and_(b.icmp_signed(">", count, i64(1)), b.icmp_signed(">", helpers, i64(0))),
                   b.icmp_signed(">", target, i64(0)))
    b.cbranch(share, consider, inline)
    b.position_at_end(consider)
    b.cbranch(p.call(b, "should_share"), publish, inline)
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
    p.store(b, job, "head")
    b.store_atomic(b.add(p.load(b, "epoch"), i64(1)), p.globals["epoch"], "release", 8)
    _wake(p, b, helpers, count)
    p.call(b, "pthread_mutex_unlock", m)
    t0 = p.call(b, "now")
    mine = _drain(p, b, job)
    t1 = p.call(b, "now")
    with p.locked(b, m):                             # every task is taken: no worker may attach any more
        _unlink(p, b, job)
    _join(p, b, job, m)
    usable = b.select(b.icmp_signed("<", helpers, target), helpers, target)
    p.call(b, "judge", count, usable, mine, t0, t1, p.call(b, "now"))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()


def _wake(p: PoolModule, b: ir.IRBuilder, helpers: ir.Value, count: ir.Value) -> None:
    """With the mutex held: wake as many sleeping workers as the job can use, min(sleepers, helpers - the
    spinning worker, count - 1), one signal each (never the whole pool for a job that wants two threads)."""
    def smaller(x, y):
        return b.select(b.icmp_signed("<", x, y), x, y)
    spinning = b.load_atomic(p.globals["spinning"], "monotonic", 8)
    wanted = smaller(smaller(p.load(b, "sleepers"), b.sub(helpers, spinning)), b.sub(count, i64(1)))
    with for_range(b, wanted, "wake"):
        p.call(b, "pthread_cond_signal", p.sync(b, "work"))


def _join(p: PoolModule, b: ir.IRBuilder, job: ir.Value, m: ir.Value) -> None:
    """Wait for the workers attached to the job to finish their tasks and detach: spin on job.users, then sleep
    on `done` (as a joiner, so that the last worker to detach knows to wake it) until it is 0."""
    fn = b.function
    block, check, wait, woken, joined = (
        fn.append_basic_block(n) for n in ("block", "block.check", "block.wait", "block.out", "joined"))
    users = p.field(b, job, "users")
    budget = p.globals["spin.join"]
    outcome = p.call(b, "spin_until", users, i64(0), ir.Constant(I1, 1), budget)
    b.cbranch(b.icmp_unsigned("==", outcome, i64(SAW)), joined, block)
    b.position_at_end(block)
    ran_out_at = b.select(b.icmp_unsigned("==", outcome, i64(RAN_OUT)), p.call(b, "now"), i64(0))
    p.call(b, "pthread_mutex_lock", m)
    b.atomic_rmw("add", p.globals["joiners"], i64(1), "seq_cst")
    b.branch(check)
    b.position_at_end(check)
    finished = b.icmp_unsigned("==", b.load_atomic(users, "seq_cst", 8), i64(0))
    b.cbranch(finished, woken, wait)
    b.position_at_end(wait)
    p.call(b, "pthread_cond_wait", p.sync(b, "done"), m)
    b.branch(check)
    b.position_at_end(woken)
    b.atomic_rmw("sub", p.globals["joiners"], i64(1), "seq_cst")
    p.call(b, "pthread_mutex_unlock", m)
    p.call(b, "adapt", budget, ran_out_at)
    b.branch(joined)
    b.position_at_end(joined)
