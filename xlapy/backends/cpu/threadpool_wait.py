"""How the thread pool's threads wait (threadpool.py says when they do), as LLVM IR routines of the pool's
module (threadpool_ir.py builds the rest, with the same PoolModule helpers).

A thread waiting for something another thread will do soon spins first, then sleeps on a condition variable
(threadpool_ir.py): a spin costs a core, a sleep costs a futex wake and a trip through the scheduler. The
spin is bounded and polite, and its budget adapts to how long the waits turn out to be:

| event | budget (cycles on x86, spin reads elsewhere) |
|---|---|
| the spin saw what it waited for | kept |
| a sched_yield in the spin came back `late`: another thread wanted the core | halved, and the thread sleeps at once |
| the spin ran out, and what it waited for came within spin.max of that | doubled (a longer spin would have caught it) |
| the spin ran out, and it came later | halved (the spin was wasted) |

always within [spin.floor, spin.max]. There is one budget per kind of wait (spin.idle for workers waiting
for a job, spin.join for callers waiting for their workers), shared by the threads of that kind.

Routines: now() / relax() / elapsed(t0, reads) (two timing variants: the time-stamp counter and `pause` on
x86, counted reads elsewhere, where now() is 0 and budgets do not adapt), xlapy_pool_ticks() (for
threadpool.py to measure the counter's rate), spin_until(...) and adapt(...).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .irhelpers import I1, I64, VOID, i64, intrinsic, is_x86

if TYPE_CHECKING:
    from .threadpool_ir import PoolModule

SAW, RAN_OUT, PREEMPTED = 1, 0, 2               # what spin_until returns
YIELD_EVERY = 512                               # spin reads between two sched_yield calls (a power of two)
SPIN_FLOOR_DIVISOR = 64                         # the budget adapts down to spin.max / this


def define_waiting(p: PoolModule) -> None:
    """Define the timing variant for p's target, xlapy_pool_ticks, spin_until and adapt in p's module."""
    timing = _x86_timing if is_x86(p.module) else _iteration_timing
    for routine in (timing, _ticks, _spin_until, _adapt):
        routine(p)


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


# -- spinning --------------------------------------------------------------------------------------------------
def _spin_until(p: PoolModule) -> None:
    """spin_until(word, value, want_equal, budget): spin until (*word == value) == want_equal, for *budget at
    most (spin.idle or spin.join); returns SAW, RAN_OUT, or PREEMPTED. A caller spins until its job's users are
    0, an idle worker until epoch moves past the value it last saw. The spin is polite: pause between reads,
    and every YIELD_EVERY reads a sched_yield, which returns at once when no other thread wants this core; when
    it returns `late`, another thread did (another process, or our own thread the spinner was keeping off the
    core): the spinner stops, halves its budget and goes to sleep."""
    fn, b = p.define("spin_until", I64, [I64.as_pointer(), I64, I1, I64.as_pointer()])
    word, value, want_equal, budget_ptr = fn.args
    loop, check, polite, yielding, late, relax, yes, no = (
        fn.append_basic_block(n) for n in ("loop", "check", "polite", "yield", "late", "relax", "yes", "no"))
    entry = b.block
    budget = b.load_atomic(budget_ptr, "monotonic", 8)
    t0 = p.call(b, "now")
    b.branch(loop)
    b.position_at_end(loop)
    n = b.phi(I64)
    n.add_incoming(i64(0), entry)
    equal = b.icmp_unsigned("==", b.load_atomic(word, "acquire", 8), value)
    b.cbranch(b.icmp_unsigned("==", equal, want_equal), yes, check)
    b.position_at_end(check)
    over = b.icmp_unsigned(">=", p.call(b, "elapsed", t0, n), budget)
    b.cbranch(over, no, polite)
    b.position_at_end(polite)
    b.cbranch(b.icmp_unsigned("==", b.and_(n, i64(YIELD_EVERY - 1)), i64(YIELD_EVERY - 1)), yielding, relax)
    b.position_at_end(yielding)
    y0 = p.call(b, "now")
    p.call(b, "sched_yield")
    b.cbranch(b.icmp_unsigned(">=", p.call(b, "elapsed", y0, i64(0)), p.load(b, "late")), late, relax)
    b.position_at_end(late)
    _scale_budget(p, b, budget_ptr, grow=False)
    b.ret(i64(PREEMPTED))
    b.position_at_end(relax)
    p.call(b, "relax")
    n.add_incoming(b.add(n, i64(1)), relax)
    b.branch(loop)
    b.position_at_end(yes)
    b.ret(i64(SAW))
    b.position_at_end(no)
    b.ret(i64(RAN_OUT))


def _scale_budget(p: PoolModule, b: ir.IRBuilder, budget_ptr: ir.Value, grow: ir.Value | bool) -> None:
    """*budget doubled (grow) or halved, kept within [spin.floor, spin.max]. Threads may race on it: any value
    one of them stores is a valid budget."""
    old = b.load_atomic(budget_ptr, "monotonic", 8)
    grow = ir.Constant(I1, grow) if isinstance(grow, bool) else grow
    doubled, halved = b.shl(old, i64(1)), b.lshr(old, i64(1))
    top, floor = p.load(b, "spin.max"), p.load(b, "spin.floor")
    new = b.select(grow, b.select(b.icmp_unsigned(">", doubled, top), top, doubled),
                   b.select(b.icmp_unsigned("<", halved, floor), floor, halved))
    b.store_atomic(new, budget_ptr, "monotonic", 8)


def _adapt(p: PoolModule) -> None:
    """adapt(budget, ran_out_at): after a spin that RAN_OUT at time ran_out_at (0: none to judge), when the
    thing it waited for came: within spin.max of it, a longer spin would have caught it (double the budget);
    later, the spin was wasted (halve it). Without a clock (not x86) now() is 0 and the budget stays."""
    fn, b = p.define("adapt", VOID, [I64.as_pointer(), I64])
    budget_ptr, ran_out_at = fn.args
    with b.if_then(b.icmp_unsigned("!=", ran_out_at, i64(0))):
        waited = p.call(b, "elapsed", ran_out_at, i64(0))
        _scale_budget(p, b, budget_ptr, b.icmp_unsigned("<", waited, p.load(b, "spin.max")))
    b.ret_void()
