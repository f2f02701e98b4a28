"""Column reductions: a reduce whose reduced dimensions are all more major than its kept ones (the sum over the
rows of a [rows, cols] array, a bias gradient) runs with the output as the accumulator, kept dims innermost:

    out[c] = init                          for every c
    for r in rows:                         # reduced dims, layout order
        for c in cols:                     # kept dims: contiguous in the input and in out
            out[c] = reducer(out[c], x[r, c])

The inner loop reads and writes unit-stride rows, so LLVM vectorizes it across outputs without reassociating
anything: every output element sees init, x[0], x[1], ... in the same order as the one-element-at-a-time loop,
so the result is bit-identical to it for any reducer. The element-at-a-time loop instead walks a column with a
stride of a whole row per step, one dependent op after another.

With several threads the outputs are split into contiguous chunks, one per task (each task runs the whole
loop above over its chunk), so results do not depend on the thread count.

Applies to single-output reduces of types held in their own register type (narrow floats accumulate in f32
elsewhere) with at least MIN_COLUMNS outputs.
"""
from __future__ import annotations

import math

from ...hlo import Instruction
from .buffers import BufferRef
from .indexing import linear_index, major_to_minor, placed
from .irhelpers import loop_nest
from .loops import chunk_nest
from .parallel import chunk_bounds, parallel_for, task_count
from .types import is_narrow_float, load_element, store_element

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

    def columns(b, start, end, name):
        """the columns [start, end) in layout order; the whole range when start is None"""
        return loop_nest(b, counts, name=name) if start is None else chunk_nest(b, counts, start, end, name)

    def body(b, start=None, end=None, task=None) -> None:
        first = init([])
        with columns(b, start, end, "cinit") as ovs:
            index = placed(out_order, ovs, out_shape.rank)
            store_element(b, out.pointer, pt, linear_index(b, index, out_shape), first)
        with loop_nest(b, [in_shape.dims[d] for d in order[:len(reduced)]], name="crow") as rvs:
            with columns(b, start, end, "ccol") as ovs:
                index = placed(out_order, ovs, out_shape.rank)
                full = placed(order, rvs, in_shape.rank)
                for d, i in enumerate(index):
                    full[kept[d]] = i
                slot = linear_index(b, index, out_shape)
                acc = load_element(b, out.pointer, pt, slot)
                store_element(b, out.pointer, pt, slot, em.elemental.emit_scalar(reducer, [acc, source(full)]))

    total = math.prod(counts)
    tasks = task_count(inst, em.num_threads)
    if not (tasks > 1 and total >= 16 * tasks and parallel_for(b, chunk_bounds(total, tasks), body)):
        body(b)
    return out
