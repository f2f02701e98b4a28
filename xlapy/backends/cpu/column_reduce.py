"""Column reductions: a reduce whose reduced dimensions are all more major than its kept ones (the sum over the
rows of a [rows, cols] array, a bias gradient, BatchNorm's mean over N, H, W) runs with the output as the
accumulator, kept dims innermost:

    out[c] = init                          for every c
    for r in rows:                         # reduced dims, layout order
        for c in cols:                     # kept dims: contiguous in the input and in out
            out[c] = reducer(out[c], x[r, c])

The inner loop reads and writes unit-stride rows, so LLVM vectorizes it across outputs without reassociating
anything: every output element sees init, x[0], x[1], ... in the same order as the one-element-at-a-time loop,
so the result is bit-identical to it for any reducer. The element-at-a-time loop instead walks a column with a
stride of a whole row per step, one dependent op after another.

A float sum over more than LEAF_ROWS rows adds in leaves instead, in the interpreter's reference order
(interpreter/summation.py), so the two still agree bit for bit; one at a time, 50,000 rows near 1 leave an f32
sum off by tens of units in the last place:

    wide[c] = -0.0                         # f64, a scratch row
    for each leaf of LEAF_ROWS rows:       # the last one may be shorter
        out[c] = -0.0
        for r in the leaf's rows:  for c in cols:  out[c] = out[c] + x[r, c]
        for c in cols:  wide[c] = wide[c] + fpext(out[c])
    for c in cols:  out[c] = init + fptrunc(wide[c])

An f64 sum adds its leaf sums pairwise instead, one cascade.py stream per column (its slots: more scratch rows).

With several threads the outputs are split into contiguous chunks, one per task (each task runs the whole
loop above over its chunk), so results do not depend on the thread count.

Applies to single-output reduces of types held in their own register type (narrow floats accumulate in f32
elsewhere) with at least MIN_COLUMNS outputs.
"""
from __future__ import annotations

import math

from llvmlite import ir

from ...hlo import Instruction
from ..interpreter.summation import LEAF as LEAF_ROWS
from .buffers import BufferRef
from .cascade import WIDE, ColumnCascade
from .elemental import simple_reducer
from .indexing import delinearize, linear_index, major_to_minor, placed
from .irhelpers import element_pointer, for_range, i64, loop_nest
from .loops import chunk_nest
from .parallel import chunk_bounds, parallel_for, task_count
from .types import is_narrow_float, load_element, store_element, value_type

MIN_COLUMNS = 8


def is_column_reduction(reduce: Instruction) -> bool:
    if reduce.opcode != "reduce" or reduce.shape.is_tuple or len(reduce.operands) != 2:
        return False
    in_shape, out_shape = reduce.operands[0].shape, reduce.shape
    if is_narrow_float(out_shape.ptype) or out_shape.ptype.kind == "complex" or out_shape.numel < MIN_COLUMNS:
        return False
    reduced = {int(d) for d in reduce.attrs["dimensions"]}
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    order = major_to_minor(in_shape)
    split = len(reduced)
    if not reduced or set(order[:split]) != reduced:
        return False
    # the output's layout must walk the kept dims in the input's layout order (so both are unit stride)
    return [kept[d] for d in major_to_minor(out_shape)] == order[split:] and \
        math.prod(in_shape.dims[d] for d in reduced) > 1


def _in_leaves(reduce: Instruction, rows: int) -> bool:
    """A float sum over more than LEAF_ROWS rows."""
    return simple_reducer(reduce.attrs["to_apply"]) == "add" and reduce.shape.ptype.kind == "float" \
        and rows > LEAF_ROWS


def column_reduction(em, inst: Instruction, reduce: Instruction, gens) -> BufferRef | None:
    """Emit reduce (the root of `inst`, or inst itself; `gens` the generators of its operands) as a column
    reduction into a new buffer for inst; None when it is not one."""
    if not is_column_reduction(reduce) or reduce.shape.dims != inst.shape.dims:
        return None
    source, init = gens
    b = em.b
    in_shape, out_shape = reduce.operands[0].shape, inst.shape
    reduced = {int(d) for d in reduce.attrs["dimensions"]}
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    order = major_to_minor(in_shape)
    out_order = major_to_minor(out_shape)
    out = em.new_buffer(out_shape, inst)
    pt, reducer = out_shape.ptype, reduce.attrs["to_apply"]
    counts = [out_shape.dims[d] for d in out_order]
    row_counts = [in_shape.dims[d] for d in order[:len(reduced)]]
    rows = math.prod(row_counts)
    leaves = -(-rows // LEAF_ROWS)
    pairwise = pt.name == "f64"           # f32 leaf sums add up in f64, f64 ones pairwise (cascade.py)
    wide = _scratch(em, 8 * out_shape.numel * (1 + (leaves.bit_length() if pairwise else 0))) \
        if _in_leaves(reduce, rows) else None

    def each_column(b, start, end, name: str, fn) -> None:
        """fn(slot, full) for the columns [start, end) (all when start is None) in layout order: slot is the
        column's offset in out, full its index in the input with the reduced dims still to fill in"""
        nest = loop_nest(b, counts, name=name) if start is None else chunk_nest(b, counts, start, end, name)
        with nest as ovs:
            index = placed(out_order, ovs, out_shape.rank)
            full: list = [None] * in_shape.rank
            for d, i in enumerate(index):
                full[kept[d]] = i
            fn(linear_index(b, index, out_shape), full)

    def set_out(b, start, end, value) -> None:
        each_column(b, start, end, "cinit", lambda slot, full: store_element(b, out.pointer, pt, slot, value))

    def add_row(b, start, end, rvs) -> None:
        """out[c] = reducer(out[c], x[row, c]) for every column; rvs: the row's reduced indices"""
        def accumulate(slot, full):
            for d, i in zip(order, rvs):
                full[d] = i
            acc = load_element(b, out.pointer, pt, slot)
            store_element(b, out.pointer, pt, slot, em.elemental.emit_scalar(reducer, [acc, source(full)]))
        each_column(b, start, end, "ccol", accumulate)

    def one_at_a_time(b, start=None, end=None, task=None) -> None:
        set_out(b, start, end, init([]))
        with loop_nest(b, row_counts, name="crow") as rvs:
            add_row(b, start, end, rvs)

    def in_leaves(b, start=None, end=None, task=None) -> None:
        def wide_at(slot):
            return element_pointer(b, wide, WIDE, slot)

        def carry(slot):
            return b.load(wide_at(slot))

        def set_carry(slot, value):
            b.store(value, wide_at(slot))

        def columns(name, fn):
            each_column(b, start, end, name, lambda slot, full: fn(slot))

        def finish(slot):
            total = _narrow(b, carry(slot), value_type(pt))
            store_element(b, out.pointer, pt, slot, em.elemental.emit_scalar(reducer, [init([]), total]))

        tree = ColumnCascade(b, b.gep(wide, [i64(8 * out_shape.numel)]), out_shape.numel, columns) if pairwise \
            else None
        if tree is None:
            columns("cwide0", lambda slot: set_carry(slot, ir.Constant(WIDE, -0.0)))
        with for_range(b, leaves, "cleaf") as leaf:
            set_out(b, start, end, ir.Constant(value_type(pt), -0.0))
            first = b.mul(leaf, i64(LEAF_ROWS), flags=["nsw", "nuw"])
            last = b.add(first, i64(LEAF_ROWS), flags=["nsw", "nuw"])
            if rows % LEAF_ROWS:
                last = b.select(b.icmp_signed("<", last, i64(rows)), last, i64(rows))
            with for_range(b, last, "crow", start=first) as row:
                add_row(b, start, end, delinearize(b, row, row_counts, list(range(len(row_counts)))))
            if tree is None:      # f32: wide[c] += fpext(leaf sum)
                columns("cwide", lambda slot: set_carry(slot, b.fadd(carry(slot), b.fpext(
                    load_element(b, out.pointer, pt, slot), WIDE))))
            else:                 # f64: pairwise
                columns("ccarry", lambda slot: set_carry(slot, load_element(b, out.pointer, pt, slot)))
                tree.push(leaf, carry, set_carry)
        if tree is not None:
            tree.total(leaves, carry, set_carry)
        columns("cdone", finish)

    body = one_at_a_time if wide is None else in_leaves
    total = math.prod(counts)
    tasks = task_count(inst, em.num_threads)
    if not (tasks > 1 and total >= 16 * tasks and parallel_for(b, chunk_bounds(total, tasks), body)):
        body(b)
    return out


def _scratch(em, nbytes: int) -> ir.Value:
    """An i8* to nbytes of scratch, internal to the instruction being emitted (released after it)."""
    return em.b.gep(em.scratch_arg, [i64(em.scratch.allocate(nbytes))], inbounds=True)


def _narrow(b: ir.IRBuilder, x: ir.Value, ty: ir.Type) -> ir.Value:
    return x if isinstance(ty, ir.DoubleType) else b.fptrunc(x, ty)
