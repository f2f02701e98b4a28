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

    for c in cols:  wide[c] = -0.0;  out[c] = -0.0         # wide: f64, a scratch row
    for each leaf of LEAF_ROWS rows:                       # the last one may be shorter
        for r in the leaf's rows:  for c in cols:  out[c] = out[c] + x[r, c]
        for c in cols:  wide[c] = wide[c] + fpext(out[c]);  out[c] = -0.0
    for c in cols:  out[c] = init + fptrunc(wide[c])

The loops over the columns alone walk out's slots in one flat loop, and each leaf's end starts the next, so a
leaf costs one such loop besides its rows: every loop is one more for LLVM to vectorize (a BatchNorm gradient's
fusion of seven reductions was ~0.8 s of LLVM's time in resnet50/train).

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
    total = math.prod(counts)
    row_counts = [in_shape.dims[d] for d in order[:len(reduced)]]
    rows = math.prod(row_counts)
    leaves = -(-rows // LEAF_ROWS)
    pairwise = pt.name == "f64"           # f32 leaf sums add up in f64, f64 ones pairwise (cascade.py)
    wide = _scratch(em, 8 * out_shape.numel * (1 + (leaves.bit_length() if pairwise else 0))) \
        if _in_leaves(reduce, rows) else None

    def each_column(b, start, end, name: str, fn) -> None:
        """fn(slot, full) for the columns [start, end) (all when start is None) in layout order: slot is the
        column's offset in out, full its index in the input with the reduced dims still to fill in"""
        if len(counts) == 1:                  # one kept dim: the slot is its index
            with flat(b, start, end, name) as slot:
                full: list = [None] * in_shape.rank
                full[kept[0]] = slot
                fn(slot, full)
            return
        nest = loop_nest(b, counts, name=name) if start is None else chunk_nest(b, counts, start, end, name)
        with nest as ovs:
            index = placed(out_order, ovs, out_shape.rank)
            full = [None] * in_shape.rank
            for d, i in enumerate(index):
                full[kept[d]] = i
            fn(linear_index(b, index, out_shape), full)

    def flat(b, start, end, name: str):
        """the columns [start, end) (all when start is None) by slot alone: out's layout order is the slots'"""
        return for_range(b, total, name) if start is None else for_range(b, end, name, start=start)

    def set_out(b, start, end, value) -> None:
        with flat(b, start, end, "cinit") as slot:
            store_element(b, out.pointer, pt, slot, value)

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
            with flat(b, start, end, name) as slot:
                fn(slot)

        def finish(slot):
            wide_sum = _narrow(b, carry(slot), value_type(pt))
            store_element(b, out.pointer, pt, slot, em.elemental.emit_scalar(reducer, [init([]), wide_sum]))

        tree = ColumnCascade(b, b.gep(wide, [i64(8 * out_shape.numel)]), out_shape.numel, columns) if pairwise \
            else None
        zero = ir.Constant(value_type(pt), -0.0)

        def start_leaf(slot):             # out holds the next leaf's sum: it starts from -0.0
            store_element(b, out.pointer, pt, slot, zero)

        def first(slot):
            if tree is None:
                set_carry(slot, ir.Constant(WIDE, -0.0))
            start_leaf(slot)
        columns("cstart", first)
        with for_range(b, leaves, "cleaf") as leaf:
            first_row = b.mul(leaf, i64(LEAF_ROWS), flags=["nsw", "nuw"])
            last = b.add(first_row, i64(LEAF_ROWS), flags=["nsw", "nuw"])
            if rows % LEAF_ROWS:
                last = b.select(b.icmp_signed("<", last, i64(rows)), last, i64(rows))
            with for_range(b, last, "crow", start=first_row) as row:
                add_row(b, start, end, delinearize(b, row, row_counts, list(range(len(row_counts)))))

            def carry_leaf(slot):          # f32: wide[c] += fpext(leaf sum); f64: the carry for the cascade
                leaf_sum = load_element(b, out.pointer, pt, slot)
                set_carry(slot, b.fadd(carry(slot), b.fpext(leaf_sum, WIDE)) if tree is None else leaf_sum)
                start_leaf(slot)
            columns("cwide", carry_leaf)
            if tree is not None:
                tree.push(leaf, carry, set_carry)
        if tree is not None:
            tree.total(leaves, carry, set_carry)
        columns("cdone", finish)

    body = one_at_a_time if wide is None else in_leaves
    tasks = task_count(inst, em.num_threads)
    if not (tasks > 1 and total >= 16 * tasks and parallel_for(b, chunk_bounds(total, tasks), body)):
        body(b)
    return out


def _scratch(em, nbytes: int) -> ir.Value:
    """An i8* to nbytes of scratch, internal to the instruction being emitted (released after it)."""
    return em.b.gep(em.scratch_arg, [i64(em.scratch.allocate(nbytes))], inbounds=True)


def _narrow(b: ir.IRBuilder, x: ir.Value, ty: ir.Type) -> ir.Value:
    return x if isinstance(ty, ir.DoubleType) else b.fptrunc(x, ty)
