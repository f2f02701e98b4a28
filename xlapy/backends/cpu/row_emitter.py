"""The emitter of a row fusion (passes/fusion/row_fusion.py): one loop over the rows, split over threads; per
row, each member of the fusion's computation in order computes its row.

    for r in rows (a chunk per thread):                    # r: index of the k outer dims
        for m in members:                                  # post order
            for j in inner index space of m:               # m's dims after the k outer ones
                row_m[j] = generator_m([r] + j)            # fused members: their fused generators

A member read only by other members keeps its row in a per-thread row buffer (an alloca of the inner shape,
cache resident); a member the fusion returns writes its row straight into its output buffer. A generator reads
a member through its row buffer (ignoring the outer index, which is always the current row) and reads the
fusion's parameters (full arrays) at the full index. A kCustom fusion the analysis does not accept runs its
computation as a call: correct, just not row by row.
"""
from __future__ import annotations

import math

from llvmlite import ir

from ...hlo import Instruction
from ...hlo.shape import Shape
from ...passes.fusion.row_fusion import row_plan
from .buffers import ValueTree, byte_size, leaves
from .indexing import delinearize, linear_index
from .irhelpers import I8, I8P, alloca_once, for_range, loop_nest
from .parallel import MIN_BYTES_PER_TASK, chunk_bounds, parallel_for, task_count
from .types import load_element, store_element


def row_fusion(em, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
    comp = inst.attrs["calls"]
    plan = row_plan(inst)
    if plan is None:
        return em.emit_computation(comp, operands)
    k, outer = plan
    members = [m for m in comp.post_order() if m.opcode not in ("parameter", "tuple")]
    out = em.new_tree(inst.shape, inst)
    results = [comp.root] if comp.root.opcode != "tuple" else list(comp.root.operands)
    outputs = dict(zip((id(m) for m in results), leaves(out) if isinstance(out, tuple) else [out]))
    rows = math.prod(outer)
    b = em.b

    def one_row(row: ir.Value) -> None:
        index = delinearize(b, row, list(outer), list(range(k)))
        gens: dict[int, object] = {}
        for position, m in enumerate(members):
            operand_gens = [gens[id(o)] if id(o) in gens else em.generator_of(operands[o.parameter_number])
                            for o in m.operands]
            gen = _member_generator(em, m, operand_gens)
            inner = Shape.array(m.shape.element_type, m.shape.dims[k:])
            if id(m) in outputs:
                target = outputs[id(m)]
                gens[id(m)] = em.generator_of(target)
                _store_row(b, gen, index, inner, lambda j, t=target: (t.pointer, linear_index(b, index + j, t.shape)),
                           m.shape.ptype)
            else:
                buf = b.bitcast(_row_buffer(b, inner, f"{m.opcode}{position}"), I8P)
                gens[id(m)] = lambda full, buf=buf, inner=inner, pt=m.shape.ptype: \
                    load_element(b, buf, pt, linear_index(b, list(full[k:]), inner))
                _store_row(b, gen, index, inner, lambda j, buf=buf, inner=inner: (buf, linear_index(b, j, inner)),
                           m.shape.ptype)

    def chunk(b_: ir.IRBuilder, start, end, task) -> None:
        with for_range(b, end, "row", start=start) as row:
            one_row(row)

    tasks = min(task_count(inst, em.num_threads), _tasks_by_rows(members, rows))
    if not (tasks > 1 and rows >= tasks and parallel_for(b, chunk_bounds(rows, tasks), chunk)):
        with loop_nest(b, [rows], name="row") as (row,):
            one_row(row)
    return out


def _tasks_by_rows(members: list[Instruction], rows: int) -> int:
    """Threads the row loop's own work is worth: the bytes its members evaluate (each member's value, or the
    operand of a reduce inside it when larger; a value only sliced counts its window) over MIN_BYTES_PER_TASK.
    parallel.task_count charges the fusion's parameters whole, and a layernorm of a ViT's class tokens (8 rows
    of 128, sliced from [8, 65, 128] arrays) was split over two threads: a pool dispatch and two more functions
    for LLVM for ~3,000 elements."""
    total = 0
    for m in members:
        inner = m.attrs["calls"].instructions if m.opcode == "fusion" else [m]
        reduced = [byte_size(r.operands[0].shape) for r in inner if r.opcode == "reduce" and r.operands[0].shape.is_array]
        total += max([sum(byte_size(x) for x in m.shape.leaves() if x.is_array)] + reduced)
    return max(1, total // MIN_BYTES_PER_TASK)


def _member_generator(em, m: Instruction, operand_gens: list):
    if m.opcode != "fusion":
        return em.elemental.generator(m, operand_gens)
    comp = m.attrs["calls"]
    return em.fused_generators(comp, None, operand_gens)[id(comp.root)]


def _row_buffer(b: ir.IRBuilder, inner: Shape, name: str) -> ir.Value:
    """A row's buffer for a member the row reads back; `name` says the member by its opcode and place, never by
    its HLO name, so fusions of one structure emit equal kernels (KernelCache, kernel_replay's check mode)."""
    buf = alloca_once(b, ir.ArrayType(I8, max(1, byte_size(inner))), f"row.{name}")
    buf.align = 64
    return buf


def _store_row(b: ir.IRBuilder, gen, outer_index: list, inner: Shape, where, pt) -> None:
    """for j in inner's index space (row-major): store gen(outer_index + j) at where(j) = (base, linear)."""
    with loop_nest(b, list(inner.dims), name="j") as ivs:
        base, linear = where(list(ivs))
        store_element(b, base, pt, linear, gen(list(outer_index) + list(ivs)))
