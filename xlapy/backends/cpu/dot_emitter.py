"""Emitting an HLO dot as LLVM IR: BLAS calls for big f32/f64 products, loop nests for the rest.

The plan (strategy, transpose copies, scratch) is dot_plan.py's; the BLAS calls are dot_blas.py's; the emitted
loops dot_loops.py's. This module puts them together: transpose copies into scratch, the call or the loops
(a batched dot's batch elements shared out over the thread pool when dot_blas.batch_tasks says so), and the
copy back of a result that needed one.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .dot_blas import batch_tasks, emit_blas, set_serial_blas
from .dot_loops import emit_loops, emit_packed
from .dot_panels import emit_panels
from .dot_plan import (ALIGN, GEMM_MIN_FLOPS, GEMV_MIN_ELEMENTS, NARROW_REASON, PACKED_RHS, DotDims, DotPlan,
                       DotShape, Matrix, Operand, dot_scratch_bytes, group, make_plan, offset_of, operand_bytes,
                       operands_of, plan_dot)
from .irhelpers import I8P, I64, VOID, intrinsic, i64, loop_nest
from .parallel import chunk_bounds, parallel_for
from .types import load_element, store_element


# -- emission ----------------------------------------------------------------------------------------------
def emit_dot(builder: ir.IRBuilder, module: ir.Module | None, lhs_ptr: ir.Value, rhs_ptr: ir.Value,
             out_ptr: ir.Value, lhs_shape, rhs_shape, out_shape, dnums, element_type,
             lhs_type=None, rhs_type=None, scratch: ir.Value | None = None, num_threads: int = 1) -> DotPlan:
    """Emit IR at `builder` computing out = dot(lhs, rhs) over the buffers behind the three pointers.

    Shapes are `Shape`s (their layouts are honored) or dim sequences (row-major); dnums is a DotDims, the
    dot's attribute mapping or the dot instruction; element_type is the result type, lhs_type/rhs_type the
    operand types where they differ (a Shape's own type wins). `scratch`, when given, is an i8* to at least
    `plan.scratch_bytes` 64-byte-aligned bytes; without it a dot needing transpose copies mallocs them.
    `module` is accepted for symmetry with other emitters; BLAS routines are declared in builder.module.
    num_threads > 1 lets a large GEMM be split over the thread pool (dot_blas.py). Returns the plan that was
    emitted."""
    b = builder
    d = DotShape(*operands_of(lhs_shape, rhs_shape, out_shape, element_type, lhs_type, rhs_type), DotDims.of(dnums))
    packed = PACKED_RHS.get(id(dnums))
    plan = make_plan(d, packed is not None)
    if math.prod(d.out.dims) == 0:
        return plan
    if plan.strategy == "packed":
        emit_packed(b, d, lhs_ptr, rhs_ptr, out_ptr, packed)
        return plan
    ptrs = {"lhs": b.bitcast(lhs_ptr, I8P), "rhs": b.bitcast(rhs_ptr, I8P), "out": b.bitcast(out_ptr, I8P)}
    ops = {"lhs": d.lhs, "rhs": d.rhs, "out": d.out}
    owned = None
    if plan.strategy == "panels":
        owned = None if scratch is not None else intrinsic(b, "malloc", I8P, [i64(plan.scratch_bytes)], [I64])
        emit_panels(b, d, ops, ptrs, scratch if owned is None else owned, num_threads)
        if owned is not None:
            intrinsic(b, "free", VOID, [owned], [I8P])
        return plan
    if plan.copies:
        if scratch is None:
            owned = intrinsic(b, "malloc", I8P, [i64(plan.scratch_bytes)], [I64])
            scratch = owned
        offset = 0
        for which in plan.copies:
            canon = d.canonical(which)
            tmp = b.gep(b.bitcast(scratch, I8P), [i64(offset)], inbounds=True)
            offset += -(-operand_bytes(canon) // ALIGN) * ALIGN
            if which != "out":
                _emit_copy(b, ops[which], ptrs[which], canon, tmp)
            ops[which], ptrs[which] = canon, tmp
    rows = _rows_as_batch(d, num_threads) if plan.reason == NARROW_REASON and not plan.copies else None
    split = rows is not None and _emit_batch_tasks(b, rows, plan, {"lhs": rows.lhs, "rhs": rows.rhs, "out": rows.out},
                                                   ptrs, num_threads)
    if not split and not _emit_batch_tasks(b, d, plan, ops, ptrs, num_threads):
        _emit_products(b, d, plan, ops, ptrs, num_threads)
    if "out" in plan.copies:
        _emit_copy(b, ops["out"], ptrs["out"], d.out, b.bitcast(out_ptr, I8P))
    if owned is not None:
        intrinsic(b, "free", VOID, [owned], [I8P])
    return plan


def _emit_products(b: ir.IRBuilder, d: DotShape, plan: DotPlan, ops: dict, ptrs: dict, num_threads: int,
                   span=None) -> None:
    """The products over the operands as they are after any transpose copies: all batch elements, or `span`."""
    if plan.strategy == "loops":
        emit_loops(b, DotShape(ops["lhs"], ops["rhs"], ops["out"], d.dd), ptrs["lhs"], ptrs["rhs"], ptrs["out"],
                   span)
    else:
        emit_blas(b, d, plan, ops, ptrs, num_threads, span)


def _emit_batch_tasks(b: ir.IRBuilder, d: DotShape, plan: DotPlan, ops: dict, ptrs: dict, num_threads: int) -> bool:
    """The batch elements shared out over the thread pool (dot_blas.batch_tasks says how many tasks); False,
    having emitted nothing, when the batch stays on this thread."""
    tasks = batch_tasks(d, plan, num_threads)
    if tasks < 2:
        return False
    serial = plan.strategy != "loops"
    if serial:
        set_serial_blas(b, True)
    done = parallel_for(b, chunk_bounds(d.batch, tasks, 1),
                        lambda b, start, end, task: _emit_products(b, d, plan, ops, ptrs, 1, (start, end)),
                        quantum=1)
    if serial:
        set_serial_blas(b, False)
    return done


def _rows_as_batch(d: DotShape, num_threads: int) -> DotShape | None:
    """A dot without batch dims whose M dims collapse to one strided run of lhs and of the result (a plain
    GEMM's one dim, or a convolution's [o..., n] rows: conv_gemm.py), viewed as `parts` batch elements of
    M / parts rows each (rhs read by every one: batch stride 0), so _emit_batch_tasks shares the rows out over
    the pool as it does a batch; None when there is no batch to make (one thread, M not one run, or not
    divisible)."""
    if num_threads < 2 or d.dd.lhs_batch:
        return None
    lm, om = group(d.lhs, d.lf), group(d.out, d.om)
    if lm is None or om is None:
        return None
    m = d.m
    # many small parts: the pool's threads take them one at a time, so a descheduled thread holds back little
    parts = next((p for p in (8 * num_threads, 4 * num_threads, 2 * num_threads, num_threads)
                  if m % p == 0 and m // p >= 16), None)
    if parts is None:
        return None
    rows, lc, rc = m // parts, d.dd.lhs_contracting, d.dd.rhs_contracting

    def split(op: Operand, run: tuple[int, int], rest: list[int] | tuple[int, ...]) -> Operand:
        """op as [parts, rows, *rest]: the M run cut into parts, then its `rest` dims as they are."""
        return Operand((parts, rows, *(op.dims[k] for k in rest)), (rows * run[1], run[1],
                                                                    *(op.strides[k] for k in rest)), op.ptype)
    rhs = Operand((parts, *d.rhs.dims), (0, *d.rhs.strides), d.rhs.ptype)
    dims = DotDims((0,), tuple(range(2, 2 + len(lc))), (0,), tuple(c + 1 for c in rc))
    return DotShape(split(d.lhs, lm, lc), rhs, split(d.out, om, d.on), dims)


def _emit_copy(b: ir.IRBuilder, src: Operand, src_ptr: ir.Value, dst: Operand, dst_ptr: ir.Value) -> None:
    """dst[i] = src[i] for every index, walking dst's memory in order."""
    order = sorted(range(len(dst.dims)), key=lambda k: -dst.strides[k])
    with loop_nest(b, [dst.dims[k] for k in order], name="tc") as ivs:
        idx = [None] * len(order)
        for k, iv in zip(order, ivs):
            idx[k] = iv
        v = load_element(b, src_ptr, src.ptype, offset_of(b, idx, src.strides))
        store_element(b, dst_ptr, dst.ptype, offset_of(b, idx, dst.strides), v)


__all__ = ["DotDims", "DotPlan", "Operand", "Matrix", "plan_dot", "dot_scratch_bytes", "emit_dot",
           "GEMM_MIN_FLOPS", "GEMV_MIN_ELEMENTS"]
