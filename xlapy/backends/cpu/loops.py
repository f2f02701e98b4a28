"""The loop emitter: a generator wrapped in a loop nest over an output shape, storing every element.

Loops run in the layout order of the output (minor-most dimension innermost), so stores are contiguous and
LLVM's loop vectorizer sees unit-stride inner loops.

With tasks > 1 the loop is split over threads (parallel.py): each task runs a contiguous chunk of the loop's
iterations, as row segments (the minor-most loop stays a unit-stride loop over part of a row). A reduction
whose output is too small to split is split over its reduced dimensions instead (`split_reduction`): each
task reduces its chunk into partials, combined afterwards in task order. A long float sum splits its leaves
(blocked_sum.py): each task adds its range of leaves in f64, the f64 partials are added in task order, and
the total is rounded once.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator, Sequence

from llvmlite import ir

from ...hlo import Instruction
from ...hlo.shape import Shape
from .buffers import BufferRef, ValueTree
from .blocked_sum import WIDE, LeafSummer, is_blocked_sum, reducer_steps
from .elemental import Generator, simple_reducer
from .indexing import linear_index, major_to_minor, placed
from .irhelpers import alloca_once, for_range, i64, loop_nest
from .parallel import (CHUNK_QUANTUM, CHUNKS_PER_TASK, chunk_bounds, in_caller_region, parallel_for,
                       splittable_reduction, task_count)
from .types import is_narrow_float, store_element, value_type


# A loop run on its caller (a small while body's kernel, run every iteration: loop_state.runs_on_caller) computes the
# two halves of each row in one iteration of its minor-most loop: two independent chains of vector code, so a
# long one (a GRU's gates: two sigmoids and a tanh, ~130 vector instructions per 8 elements) does not wait on its
# own latencies (gru/fwd's 32 x 128 gate fusion: 18.1 -> 15.4-16.1 us median per call, one thread). Rows split so
# that each half is whole vectors of the widest registers:
HALF_ROW_QUANTUM = 16


def emit_loop(b: ir.IRBuilder, shape: Shape, gen: Generator, targets: Sequence[BufferRef], tasks: int = 1,
              order: Sequence[int] | None = None) -> None:
    """for every index of `shape` (layout order, or the dims `order` lists, major to minor): v = gen(index); store
    v (or its tuple parts) to targets. tasks > 1 splits the iterations over that many threads (when the loop has
    enough of them)."""
    order = major_to_minor(shape) if order is None else list(order)
    counts = [shape.dims[d] for d in order]

    def store(ivs):
        index = placed(order, ivs, shape.rank)
        value = gen(index)
        values = value if isinstance(value, tuple) else (value,)
        for target, v in zip(targets, values):
            store_element(b, target.pointer, target.shape.ptype, linear_index(b, index, target.shape), v)

    total = math.prod(counts)
    if tasks > 1 and counts and total >= tasks:
        rows = total // counts[-1]
        whole_rows = len(counts) > 1 and rows >= tasks * CHUNKS_PER_TASK

        def chunk(b: ir.IRBuilder, start, end, task) -> None:
            nest = row_chunk_nest if whole_rows else chunk_nest
            with nest(b, counts, start, end) as ivs:
                store(ivs)
        quantum = counts[-1] if whole_rows else CHUNK_QUANTUM
        if parallel_for(b, chunk_bounds(total, tasks, quantum), chunk, quantum=quantum):
            return
    halves = 2 if in_caller_region() and counts and counts[-1] % (2 * HALF_ROW_QUANTUM) == 0 else 1
    if halves > 1:       # two independent chains per vectorized iteration (see HALF_ROW_QUANTUM)
        half = counts[-1] // 2
        with loop_nest(b, counts[:-1] + [half], name="i") as ivs:
            store(ivs)
            store(ivs[:-1] + [b.add(ivs[-1], i64(half), flags=["nsw", "nuw"])])
        return
    with loop_nest(b, counts, name="i") as ivs:
        store(ivs)


def _outer_indices(b: ir.IRBuilder, row: ir.Value, outer: Sequence[int]) -> list[ir.Value]:
    """The indices of the dims before the minor-most one, from the row number (row-major over `outer`)."""
    ivs: list = [None] * len(outer)
    rest = row
    for k in reversed(range(len(outer))):
        if k == 0:
            ivs[k] = rest
        elif outer[k] == 1:
            ivs[k] = i64(0)
        else:
            ivs[k] = b.urem(rest, i64(outer[k]))
            rest = b.udiv(rest, i64(outer[k]))
    return ivs


@contextmanager
def chunk_nest(b: ir.IRBuilder, counts: Sequence[int], start: ir.Value, end: ir.Value,
               name: str = "c") -> Iterator[list[ir.Value]]:
    """Iterations [start, end) of loop_nest(counts) (numbered row-major, first count outermost), row by row:
    the outer indices are recovered once per row, the minor-most loop covers the row's part of the chunk."""
    *outer, width = counts
    w = i64(width)
    first_row = b.udiv(start, w)
    last_row = b.udiv(b.add(end, i64(width - 1)), w)
    with for_range(b, last_row, f"{name}.row", start=first_row) as row:
        row_start = b.mul(row, w, flags=["nsw", "nuw"])
        lo = b.select(b.icmp_signed(">", start, row_start), b.sub(start, row_start), i64(0))
        left = b.sub(end, row_start)
        hi = b.select(b.icmp_signed("<", left, w), left, w)
        ivs = _outer_indices(b, row, outer)
        with for_range(b, hi, f"{name}.col", start=lo) as col:
            yield ivs + [col]


@contextmanager
def row_chunk_nest(b: ir.IRBuilder, counts: Sequence[int], start: ir.Value, end: ir.Value,
                   name: str = "c") -> Iterator[list[ir.Value]]:
    """chunk_nest for chunks of whole rows (start and end multiples of the minor-most count): the minor-most loop
    has the constant bounds loop_nest gives it, so LLVM vectorizes it and folds the index arithmetic of the
    generators (a reshape's division by the row length) as in the loop run on one thread. With a chunk ending
    mid-row, the row's part (chunk_nest) hides the bound and the division stays, element by element: a GELU over
    f32[520,256] behind a reshape ran 3-6x slower on two threads than on one."""
    *outer, width = counts
    w = i64(width)
    with for_range(b, b.udiv(end, w), f"{name}.row", start=b.udiv(start, w)) as row:
        ivs = _outer_indices(b, row, outer)
        with for_range(b, w, f"{name}.col") as col:
            yield ivs + [col]


def split_reduction(em, inst: Instruction, reduce: Instruction, gens: Sequence[Generator]) -> ValueTree | None:
    """`inst` (a reduce, or a fusion rooted at `reduce`, whose operands' generators are `gens`) split over the
    reduced dimensions when its output has fewer elements than it gets threads: task t reduces chunk t of the
    reduction (starting from the init value) into partial t, and the partials are combined in task order, so
    the result differs from the sequential loop only by reassociation and is fixed for a given thread count.
    None when that does not apply (the caller then splits the output loop, or runs sequentially)."""
    tasks = task_count(inst, em.num_threads)
    out_shape = inst.shape
    if tasks < 2 or out_shape.is_tuple or out_shape.numel >= tasks or is_narrow_float(out_shape.ptype):
        return None
    reducer = reduce.attrs["to_apply"]
    if is_blocked_sum(reduce, simple_reducer(reducer)):
        return _split_leaf_sum(em, inst, reduce, gens, tasks)
    if not splittable_reduction(inst, reduce, simple_reducer(reducer)):
        return None
    in_shape = reduce.operands[0].shape
    reduced = set(int(d) for d in reduce.attrs["dimensions"])
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    order = [d for d in major_to_minor(in_shape) if d in reduced]
    counts = [in_shape.dims[d] for d in order]
    total = math.prod(counts)
    if not counts or total < tasks:
        return None
    b = em.b
    vt = value_type(out_shape.ptype)
    outputs = out_shape.numel
    out_order = major_to_minor(out_shape)
    out_counts = [out_shape.dims[d] for d in out_order]
    partials = alloca_once(b, ir.ArrayType(vt, tasks * outputs), "reduce.partials")
    source, init = gens

    def out_index(ivs) -> list:
        return placed(out_order, ivs, out_shape.rank)

    def partial(b: ir.IRBuilder, task, k) -> ir.Value:
        return b.gep(partials, [i64(0), b.add(b.mul(task, i64(outputs)), k)])

    def chunk(b: ir.IRBuilder, start, end, task) -> None:
        acc = alloca_once(b, vt, "reduce.acc")
        with loop_nest(b, out_counts, name="o") as ovs:
            index = out_index(ovs)
            b.store(init([]), acc)
            with chunk_nest(b, counts, start, end, "r") as rvs:
                full: list = [None] * in_shape.rank
                for d, i in zip(kept, index):
                    full[d] = i
                for d, i in zip(order, rvs):
                    full[d] = i
                b.store(em.elemental.emit_scalar(reducer, [b.load(acc), source(full)], reassoc=True), acc)
            b.store(b.load(acc), partial(b, task, linear_index(b, index, out_shape)))

    if not parallel_for(b, chunk_bounds(total, tasks), chunk, shared=[partials]):
        return None
    out = em.new_tree(out_shape, inst)
    with loop_nest(b, out_counts, name="o") as ovs:
        k = linear_index(b, out_index(ovs), out_shape)
        value = b.load(partial(b, i64(0), k))
        for t in range(1, tasks):
            value = em.elemental.emit_scalar(reducer, [value, b.load(partial(b, i64(t), k))], reassoc=True)
        store_element(b, out.pointer, out_shape.ptype, k, value)
    return out


def _split_leaf_sum(em, inst: Instruction, reduce: Instruction, gens: Sequence[Generator],
                    tasks: int) -> ValueTree | None:
    """split_reduction for a long float sum: task t adds leaves [bounds[t], bounds[t+1]) into an f64 partial
    (starting from -0.0, so any init value works); the partials are added in task order, rounded once, and
    the init value added last."""
    source, init = gens
    add, finish = reducer_steps(em.elemental, reduce, init)
    summer = LeafSummer(em.b, reduce, source, add)
    tasks = min(tasks, summer.leaves)
    bounds = [t * summer.leaves // tasks for t in range(tasks + 1)]
    b = em.b
    out_shape = inst.shape
    outputs = out_shape.numel
    out_order = major_to_minor(out_shape)
    out_counts = [out_shape.dims[d] for d in out_order]
    partials = alloca_once(b, ir.ArrayType(WIDE, tasks * outputs), "sum.partials")

    def partial(b: ir.IRBuilder, task, k) -> ir.Value:
        return b.gep(partials, [i64(0), b.add(b.mul(task, i64(outputs)), k)])

    def chunk(b: ir.IRBuilder, start, end, task) -> None:
        with loop_nest(b, out_counts, name="o") as ovs:
            index = placed(out_order, ovs, out_shape.rank)
            b.store(summer.wide_sum(index, start, end), partial(b, task, linear_index(b, index, out_shape)))

    if not parallel_for(b, bounds, chunk, shared=[partials]):
        return None
    out = em.new_tree(out_shape, inst)
    with loop_nest(b, out_counts, name="o") as ovs:
        k = linear_index(b, placed(out_order, ovs, out_shape.rank), out_shape)
        total = b.load(partial(b, i64(0), k))
        for t in range(1, tasks):
            total = b.fadd(total, b.load(partial(b, i64(t), k)))
        store_element(b, out.pointer, out_shape.ptype, k, finish(summer.narrow(total)))
    return out
