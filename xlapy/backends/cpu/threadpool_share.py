"""Whether a parallel loop shares its tasks with the pool's workers or runs them on the calling thread, as LLVM IR
routines of the pool's module (threadpool_ir.py builds the rest, with the same PoolModule helpers).

Sharing pays when a worker is awake to take tasks. When other processes want the cores, a worker that was
asleep is scheduled late (the caller has taken most tasks by then) and may be descheduled while it holds a task,
and the caller then waits for it, for up to a scheduler time slice (milliseconds, for a loop of microseconds). So
the pool keeps a running measure of how much help its jobs got, and runs a job on the calling thread while that
measure is low (issue 11: degrade gracefully when cores are shared):

| rule | what |
|---|---|
| help | the share of a job's tasks its workers took, over what full help would be (helpers / (helpers + 1) of them), in 1/HELP_ONE units: HELP_ONE is full help |
| judged jobs | a published job whose caller spent at least `help.judge` (JUDGE_US) draining tasks: a shorter one ends before an awake worker could join, and says nothing |
| a late join | a caller that waited for its workers longer than it worked itself: help 0 for that job |
| the measure | an exponential average of the judged jobs' help, weight 1 / 2**EMA_SHIFT; threads may race on it (any stored value is a valid measure) |
| inline | a job runs on its caller while the measure is below HELP_LOW, but every SAMPLE_EVERY-th job is published anyway, so the measure follows the machine back when the cores free up |

Without a clock (not x86) nothing is judged and every job is shared, as before this rule.

Off by default (XLAPY_POOL_ADAPT=1 turns it on): against sharing every job, in interleaved rounds of one process
(benchmarks/contention.py --pool-ab) on the 2-core machine under other processes' load (load average 10-11),
adapting took 1.23x the time of gpt2/train, 1.22x of resnet50/fwd and 1.24x of lstm/train; with one more busy
process 1.07x, 1.06x and 0.95x. On a loaded machine each of our threads gets its share of the cores, so a job
kept on its caller gives up the worker's share; the rule also judged help from jobs that small-loop bodies no
longer publish (loop_state.runs_on_caller keeps those on their callers).
Routines: should_share(), judge(count, helpers, mine, t0, t1, t2); exported for tests and diagnostics:
xlapy_pool_help() -> the measure, xlapy_pool_set_help(v) (which also restarts the sample count),
xlapy_pool_set_judge(cycles) (1 << 62: never judge, so every job is shared) and xlapy_pool_published() -> jobs
published so far.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .irhelpers import I1, I64, VOID, i64

if TYPE_CHECKING:
    from .threadpool_ir import PoolModule

HELP_ONE = 1024
HELP_LOW = HELP_ONE // 8      # measured under heavy load (load average 8 on 2 cores): 24-50
SAMPLE_EVERY = 16               # a power of two
EMA_SHIFT = 3
JUDGE_US = 20
GLOBALS = ("help", "help.jobs", "help.published", "help.judge")


def define_sharing(p: PoolModule) -> None:
    for routine in (_should_share, _judge, _accessors):
        routine(p)


def _should_share(p: PoolModule) -> None:
    """should_share(): publish this job (the measure is high enough, or the job is a sample)?"""
    _, b = p.define("should_share", I1, [])
    help_ = b.load_atomic(p.globals["help"], "monotonic", 8)
    n = b.atomic_rmw("add", p.globals["help.jobs"], i64(1), "monotonic")
    sample = b.icmp_unsigned("==", b.and_(n, i64(SAMPLE_EVERY - 1)), i64(0))
    share = b.or_(b.icmp_signed(">=", help_, i64(HELP_LOW)), sample)
    with b.if_then(share):
        b.atomic_rmw("add", p.globals["help.published"], i64(1), "monotonic")
    b.ret(share)


def _judge(p: PoolModule) -> None:
    """judge(count, helpers, mine, t0, t1, t2): a published job of `count` tasks, `mine` of them run by its
    caller, which drained from t0 to t1 and had joined its workers at t2 (now() readings), updates the measure."""
    fn, b = p.define("judge", VOID, [I64] * 6)
    count, helpers, mine, t0, t1, t2 = fn.args
    worked, waited = b.sub(t1, t0), b.sub(t2, t1)
    judged = b.icmp_unsigned(">=", worked, p.load(b, "help.judge"))
    with b.if_then(b.and_(judged, b.icmp_signed(">", helpers, i64(0)))):
        # help = (count - mine) / count over helpers / (helpers + 1), at most full; 0 after a late join
        helped = b.mul(b.mul(b.sub(count, mine), b.add(helpers, i64(1))), i64(HELP_ONE))
        share = b.sdiv(helped, b.mul(count, helpers))
        share = b.select(b.icmp_signed(">", share, i64(HELP_ONE)), i64(HELP_ONE), share)
        share = b.select(b.icmp_unsigned(">", waited, worked), i64(0), share)
        old = b.load_atomic(p.globals["help"], "monotonic", 8)
        new = b.add(old, b.ashr(b.sub(share, old), i64(EMA_SHIFT)))
        b.store_atomic(new, p.globals["help"], "monotonic", 8)
    b.ret_void()


def _accessors(p: PoolModule) -> None:
    _, b = p.define("xlapy_pool_help", I64, [], internal=False)
    b.ret(b.load_atomic(p.globals["help"], "monotonic", 8))
    fn, b = p.define("xlapy_pool_set_help", VOID, [I64], internal=False)
    b.store_atomic(fn.args[0], p.globals["help"], "monotonic", 8)
    b.store_atomic(i64(1), p.globals["help.jobs"], "monotonic", 8)
    b.ret_void()
    fn, b = p.define("xlapy_pool_set_judge", VOID, [I64], internal=False)
    b.store_atomic(fn.args[0], p.globals["help.judge"], "monotonic", 8)
    b.ret_void()
    _, b = p.define("xlapy_pool_published", I64, [], internal=False)
    b.ret(b.load_atomic(p.globals["help.published"], "monotonic", 8))
