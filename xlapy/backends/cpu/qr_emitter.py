"""XLA's QR custom-calls on the CPU backend, as LAPACK calls: Qr is geqrf, ProductOfElementaryHouseholderReflectors
is orgqr (ungqr for complex types). XLA's QrExpander builds the same compact form with the same reflector
convention (backends/interpreter/decompositions.py has the definition), so only rounding differs.

Why calls and not an expansion into HLO (XLA's QrExpander: loops of masked matmuls): a blocked LAPACK QR runs
at BLAS-3 speed, and these targets only come from TF's unoptimized HLO (XLA expands them before it optimizes),
which xlapy compiles with its JIT; AOT objects reject custom-calls anyway.

Each batch element is copied into a column-major work matrix (LAPACK's order), factored or expanded in place,
and copied back into the row-major (or whatever layout) result; f16/bf16 compute in f32. Without LAPACK
(XLAPY_BLAS=none) the targets are unsupported on the CPU; the interpreter runs them.
"""
from __future__ import annotations

import math

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from .buffers import BufferRef
from . import lapack
from .indexing import linear_index
from .irhelpers import for_range, i64, loop_nest
from .linalg_emitter import (COMPUTE_TYPES, is_work, lapack_threads, result_work, scratch_buffer, stage_in,
                             stage_out)
from .linalg_loops import Field
from .types import load_element, store_element

WORK_PER_COLUMN = 64     # LAPACK workspace: n * 64 elements covers the blocked algorithms' n * nb


def _routine(inst: Instruction, routine: str, element_type: str) -> tuple[str, lapack.LapackFunction]:
    cpt = COMPUTE_TYPES.get(element_type)
    if cpt is None:
        raise UnimplementedError(f"cpu backend: custom-call {inst.name} ({_target(inst)}) on {element_type}")
    fn = lapack.lapack_function(routine, cpt)
    if fn is None:
        raise UnimplementedError(f"cpu backend: custom-call {inst.name} ({_target(inst)}) needs LAPACK, and no "
                                 f"BLAS provider with LAPACK is in use (XLAPY_BLAS)")
    return cpt, fn


def _target(inst: Instruction) -> str:
    return str(inst.attrs.get("custom_call_target"))


def _column_offset(b: ir.IRBuilder, index: list, dims: tuple) -> ir.Value:
    """Offset of a [..., m, n] index in batched column-major m x n matrices."""
    m, n = dims[-2:]
    batch = i64(0)
    for i, d in zip(index[:-2], dims[:-2]):
        batch = b.add(b.mul(batch, i64(d)), i)
    return b.add(b.mul(batch, i64(m * n)), b.add(b.mul(index[-1], i64(m)), index[-2]))


def _to_columns(em, src: BufferRef, work: ir.Value, f: Field) -> None:
    b = em.b
    with loop_nest(b, list(src.shape.dims), "qr.in") as index:
        value = load_element(b, src.pointer, src.shape.ptype, linear_index(b, index, src.shape))
        f.store(work, _column_offset(b, index, src.shape.dims), value)


def _from_columns(em, work: ir.Value, out: BufferRef, f: Field) -> None:
    b = em.b
    with loop_nest(b, list(out.shape.dims), "qr.out") as index:
        value = f.load(work, _column_offset(b, index, out.shape.dims))
        store_element(b, out.pointer, out.shape.ptype, linear_index(b, index, out.shape), value)


def _lapack_loop(em, f: Field, fn: lapack.LapackFunction, dims: tuple, work: ir.Value, taus: ir.Value,
                 k: int, extra: list) -> None:
    """Call fn per batch element: (m, n, [k,] a, lda, tau, work, lwork, info) with `extra` = [k] or []."""
    b = em.b
    m, n = dims[-2:]
    lwork = max(1, n) * WORK_PER_COLUMN
    scratch = scratch_buffer(em, f.name, lwork)
    info = lapack.ref(b, fn.int_type, 0)
    batch = math.prod(dims[:-2])
    with lapack_threads(em, 2 * batch * m * n * min(m, n)), for_range(b, batch, "qr.batch") as bi:
        a = f.pointer(work, b.mul(bi, i64(m * n)))
        tau = f.pointer(taus, b.mul(bi, i64(k)))
        ints = [lapack.integer(b, fn, v) for v in [m, n] + extra]
        lapack.call(b, fn, ints + [a, lapack.integer(b, fn, m), tau, scratch, lapack.integer(b, fn, lwork), info])


def qr(em, inst: Instruction, operands: list) -> tuple:
    """Qr(a[..., m, n]) -> (h[..., m, n], taus[..., min(m, n)])."""
    (a,) = operands
    cpt, fn = _routine(inst, "geqrf", a.shape.element_type)
    h_out, taus_out = em.new_tree(inst.shape, inst)
    if a.shape.numel == 0:
        return h_out, taus_out
    f = Field(em.b, cpt)
    dims = a.shape.dims
    work = scratch_buffer(em, cpt, a.shape.numel)
    taus = result_work(em, taus_out, cpt)
    _to_columns(em, a, work, f)
    _lapack_loop(em, f, fn, dims, work, taus, min(dims[-2:]), [])
    _from_columns(em, work, h_out, f)
    if taus is not taus_out.pointer:
        stage_out(em, taus, taus_out, cpt)
    return h_out, taus_out


def householder_product(em, inst: Instruction, operands: list) -> BufferRef:
    """ProductOfElementaryHouseholderReflectors(h[..., m, n], taus[..., k]) -> q[..., m, n] (m >= n >= k)."""
    h, taus_in = operands
    cpt, fn = _routine(inst, "orgqr", h.shape.element_type)
    m, n = h.shape.dims[-2:]
    k = taus_in.shape.dims[-1]
    if m < n or k > n:
        raise UnimplementedError(f"cpu backend: custom-call {inst.name} ({_target(inst)}) needs m >= n >= k, "
                                 f"got {h.shape} and {taus_in.shape}")
    out = em.new_buffer(inst.shape, inst)
    if out.shape.numel == 0:
        return out
    f = Field(em.b, cpt)
    work = scratch_buffer(em, cpt, h.shape.numel)
    if is_work(taus_in, cpt):
        taus = taus_in.pointer
    else:
        taus = scratch_buffer(em, cpt, taus_in.shape.numel)
        stage_in(em, taus_in, taus, cpt)
    _to_columns(em, h, work, f)
    _lapack_loop(em, f, fn, h.shape.dims, work, taus, k, [k])
    _from_columns(em, work, out, f)
    return out


__all__ = ["qr", "householder_product"]
