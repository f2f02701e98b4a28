"""Independent while loops of the entry computation run at the same time, one on each of two pool threads, as
XLA:CPU's thunk executor runs independent thunks: a bidirectional RNN's two directions (lstm/fwd: two 64-step
loops of small kernels, each on one thread before). On a quiet machine the pair takes about the longer loop's time
instead of the sum (each loop runs 25-45% slower while both cores work: lstm/fwd 0.93x, lstm/train 0.67x of the
one-after-the-other build, interleaved in one process); on a shared one the process has two threads that want the
cores instead of one (issue 11: under load lstm/fwd ran 1.6x XLA's time, whose two loops run on two threads),
though a worker that wakes late leaves both loops to the caller.

    pair                  a while B later in the schedule than a while A, B not reading A's result (through any
                          path); the schedule moves what B reads (none of which depends on A) before A and B
                          right after A (ComputationAliasing's order, so liveness follows the new order)
    which loops           both bodies small enough to run on their calling thread (loop_state.runs_on_caller:
                          their kernels publish no pool jobs of their own), nothing with a side effect in
                          them (infeed, outfeed, collectives, rng) and no custom call (a host callback)
    how                   one pool job of two tasks (parallel.parallel_for), task 0 runs A, task 1 runs B;
                          both state trees are allocated before the job, in the entry function
    buffers               B is emitted with the scratch slices that were free at its start held back
                          (ScratchAllocator.apart): whatever A's loop uses, at any time, B does not; B's initial
                          state owns no buffer that A reads (copy insertion gives each loop its own init buffers,
                          so this is the guard, not the rule)
    release               the scratch both loops leave is released after both (BufferAssignment.end_group)

Results do not depend on which thread runs which loop, nor on whether the worker joined (the caller then runs
both, in order). XLAPY_CONCURRENT_LOOPS=0 turns pairing off.
"""
from __future__ import annotations

import os

from ...hlo import Instruction
from ...hlo.ir import dependencies
from . import loop_state
from .parallel import ENCLOSING, parallel_for
from .irhelpers import dominated_by, i64


def enabled() -> bool:
    return os.environ.get("XLAPY_CONCURRENT_LOOPS", "1") != "0"


def _side_effect_free(inst: Instruction, seen: set[int]) -> bool:
    for comp in inst.called_computations():
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        for x in comp.instructions:
            # a custom call may call back into Python (a pure_callback is not marked side-effecting): kept alone
            if x.has_side_effect or x.opcode == "custom-call" or not _side_effect_free(x, seen):
                return False
    return True


def _eligible(inst: Instruction, num_threads: int) -> bool:
    return (inst.opcode == "while" and loop_state.runs_on_caller(inst, num_threads)
            and _side_effect_free(inst, set()))


def _ancestors(inst: Instruction, memo: dict[int, frozenset]) -> frozenset:
    """ids of every instruction inst depends on (operands and control predecessors, transitively)."""
    if id(inst) not in memo:
        memo[id(inst)] = frozenset(dependencies([*inst.operands, *inst.control_predecessors]))
    return memo[id(inst)]


def schedule(order: list[Instruction], num_threads: int) -> tuple[list[Instruction], dict[int, Instruction]]:
    """`order` (the entry's emission order) with each pair's loops adjacent, and id(A) -> B for the pairs (B right
    after A). What B reads that was scheduled after A moves before A, in its order: none of it depends on A,
    since B does not."""
    if num_threads < 2 or not enabled():
        return order, {}
    loops = [x for x in order if _eligible(x, num_threads)]
    if len(loops) < 2:
        return order, {}
    memo: dict[int, frozenset] = {}
    pairs: dict[int, Instruction] = {}
    taken: set[int] = set()
    for i, a in enumerate(loops):
        if id(a) in taken:
            continue
        for b in loops[i + 1:]:
            if id(b) in taken or b.control_predecessors or id(a) in _ancestors(b, memo):
                continue
            position = {id(x): k for k, x in enumerate(order)}
            if position[id(b)] < position[id(a)]:
                continue
            needs = _ancestors(b, memo)
            moved = [x for x in order[position[id(a)] + 1:position[id(b)]] if id(x) in needs]
            out = {id(x) for x in moved} | {id(b)}
            rest = [x for x in order if id(x) not in out]
            at = rest.index(a)
            order = rest[:at] + moved + [a, b] + rest[at + 1:]
            pairs[id(a)] = b
            taken.update((id(a), id(b)))
            break
    return order, pairs


def emit_pair(em, first: Instruction, second: Instruction, values: dict, position: int) -> tuple:
    """Emit while loops `first` and `second` (right after it in the schedule) to run at once, at `position`
    (first's); returns their value trees."""
    from .emitter import run_while
    init_a = values[id(first.operands[0])]
    init_b = values[id(second.operands[0])]
    state_a, copies_a = loop_state.initial_state(em, first, init_a)
    em.partner_position[id(second)] = position           # first's position: second may not take what first reads
    try:
        state_b, copies_b = loop_state.initial_state(em, second, init_b)
    finally:
        del em.partner_position[id(second)]

    entry = em.b.function

    def body(b, start, end, task):
        # the loops' kernels return the state buffers, which are the entry's values (captured into the task)
        setattr(b.function, ENCLOSING, entry)
        then = b.append_basic_block("loops.first")
        other = b.append_basic_block("loops.second")
        done = b.append_basic_block("loops.end")
        dominated_by(b, b.block, then, other, done)
        b.cbranch(b.icmp_unsigned("==", task, i64(0)), then, other)
        b.position_at_end(then)
        run_while(em, first, state_a, copies_a)
        b.branch(done)
        b.position_at_end(other)
        with em.scratch.apart():
            run_while(em, second, state_b, copies_b)
        b.branch(done)
        b.position_at_end(done)

    if not parallel_for(em.b, [0, 1, 2], body, threads=2, name="xlapy_loops"):
        # not outlined (nothing was emitted into the entry): one after the other, on this thread. What the
        # attempt allocated was released by the loops' own frames or stays unused: only scratch is lost.
        run_while(em, first, state_a, copies_a)
        run_while(em, second, state_b, copies_b)
    return state_a, state_b


__all__ = ["enabled", "schedule", "emit_pair"]
