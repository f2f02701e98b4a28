"""cholesky and triangular-solve on the CPU backend: a LAPACK call per matrix (potrf, trsm), or loops of our
own for small matrices and for builds without LAPACK.

Why emit calls instead of expanding the ops into HLO, as XLA:CPU does (CholeskyExpander and
TriangularSolveExpander turn each op into while loops of masked, blocked matmuls): speed and size. potrf and
trsm from the OpenBLAS that numpy ships run at BLAS-3 speed; the expansions do O(n) loop iterations of
full-size matmuls (O(n^4) work inside a 128-block). Measured on the same HLO (2 busy cores, best of 10):
a 64 x 64 f32 Cholesky takes 11 us here and 450 us on XLA:CPU (jaxlib 0.10.2), 256 x 256 0.3 ms against
28-48 ms, a batch of 1000 4 x 4 ones 31 us against 1.9 ms; 64 x 64 solves 12 us against 40 us. The same
loops on xlapy's HLO while loops would be slower again. Emitting also covers the modules
whose pipeline xlapy skips (XLA-optimized dumps) with no pass to run. Small matrices (SMALL_CHOLESKY,
SMALL_SOLVE) skip the call overhead with inline loops (linalg_loops.py), which also serve when no LAPACK
was found (XLAPY_BLAS=none, AOT objects without BLAS). lapack.py says where the routines come from.

Semantics are the interpreter's (backends/interpreter/decompositions.py), which matches XLA's: per batch
element, a failed Cholesky is NaN everywhere; the other triangle of the result is zero; a complex diagonal
keeps XLA's imaginary part. Element types: f32, f64, c64, c128, and f16/bf16 computed in f32 and rounded
once, as XLA computes them after float-normalization.

LAPACK is column-major and the buffers are row-major, so each call runs on the transposed view: a row-major
lower triangle is a column-major upper one (potrf uplo flips), and op(T) X = B on row-major buffers is
X^T op(T)^T = B^T on column-major ones (trsm's side and uplo flip, the transpose flag stays).
"""
from __future__ import annotations

import math
from contextlib import contextmanager

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from .buffers import BufferRef, byte_size
from .indexing import is_row_major, linear_index, row_major_linear
from .irhelpers import for_range, i64, if_then, loop_nest, memcpy
from . import lapack, threadpool
from .dot_blas import BLAS_OWN_THREADS_MNK
from .irhelpers import I32, VOID
from .lapack import lapack_function
from .linalg_loops import Field, Substitution, cholesky as cholesky_loops, fill, substitute, zero_triangle
from .types import load_element, storage_type, store_element

# At most this much work, inline loops beat a LAPACK call (measured per matrix on a batch of 64, LLVM O3: a
# 16 x 16 Cholesky 0.35 us in loops, 0.63 us through potrf; the two cross near n = 24; trsm's loops, a
# vectorized row update, stay ahead up to about 32 x 32 with 32 right-hand sides)
SMALL_CHOLESKY = 16      # n
SMALL_SOLVE = 1 << 15    # m * m * right-hand sides

COMPUTE_TYPES = {"f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64", "c64": "c64", "c128": "c128"}
_TRANSPOSE = {"NO_TRANSPOSE": "N", "TRANSPOSE": "T", "ADJOINT": "C"}


def compute_type(inst: Instruction) -> str:
    name = inst.shape.element_type
    if name not in COMPUTE_TYPES:
        raise UnimplementedError(f"cpu backend: {inst.opcode} {inst.name} on {name} (float and complex types only)")
    return COMPUTE_TYPES[name]


def _flag(inst: Instruction, name: str) -> bool:
    return inst.attrs.get(name) in (True, "true")


# -- work buffers: row-major matrices of the compute type ----------------------------------------------------
def scratch_buffer(em, cpt: str, count: int) -> ir.Value:
    size = max(count, 1) * byte_size_of(cpt)
    return em.b.gep(em.scratch_arg, [i64(em.scratch.allocate(size))], inbounds=True)


def byte_size_of(cpt: str) -> int:
    return {"f32": 4, "f64": 8, "c64": 8, "c128": 16}[cpt]


def is_work(buf: BufferRef, cpt: str) -> bool:
    """Can `buf` itself serve as a row-major compute-type work buffer?"""
    return buf.shape.element_type == cpt and is_row_major(buf.shape)


def stage_in(em, src: BufferRef, dst: ir.Value, cpt: str) -> None:
    """Copy src (any layout, any float type) into the row-major compute-type buffer dst."""
    b = em.b
    if is_work(src, cpt):
        memcpy(b, dst, src.pointer, byte_size(src.shape))
        return
    typed = b.bitcast(dst, storage_type(cpt).as_pointer())
    with loop_nest(b, list(src.shape.dims), "stage.in") as index:
        value = load_element(b, src.pointer, src.shape.ptype, linear_index(b, index, src.shape))
        b.store(value, b.gep(typed, [row_major_linear(b, index, src.shape.dims)], inbounds=True))


def stage_out(em, src: ir.Value, out: BufferRef, cpt: str) -> None:
    """Copy the row-major compute-type buffer src into out (its layout, its type, rounded)."""
    b = em.b
    typed = b.bitcast(src, storage_type(cpt).as_pointer())
    with loop_nest(b, list(out.shape.dims), "stage.out") as index:
        value = b.load(b.gep(typed, [row_major_linear(b, index, out.shape.dims)], inbounds=True))
        store_element(b, out.pointer, out.shape.ptype, linear_index(b, index, out.shape), value)


def result_work(em, out: BufferRef, cpt: str) -> ir.Value:
    """Where the result is computed: out itself, or scratch that stage_out copies into out."""
    return out.pointer if is_work(out, cpt) else scratch_buffer(em, cpt, out.shape.numel)


@contextmanager
def lapack_threads(em, flops: float):
    """The calls emitted inside run with a single-threaded BLAS when the JIT owns the threads (num_threads > 1)
    and the work is below dot_blas's threshold for the BLAS's own threads: dot_blas's policy, for the same reason
    (a BLAS thread waiting for a core the pool holds stalls for a whole time slice when cores are shared)."""
    serial = em.num_threads > 1 and 0 < flops < BLAS_OWN_THREADS_MNK and threadpool.serial_blas_available()
    if serial:
        _serial_blas(em.b, 1)
    yield
    if serial:
        _serial_blas(em.b, 0)


def _serial_blas(b: ir.IRBuilder, on: int) -> None:
    fn = b.module.globals.get(threadpool.SERIAL_BLAS_SYMBOL)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(VOID, [I32]), threadpool.SERIAL_BLAS_SYMBOL)
        fn.attributes.add("nounwind")
    b.call(fn, [ir.Constant(I32, on)])


def matrix(f: Field, base: ir.Value, batch_index: ir.Value, size: int) -> ir.Value:
    """The batch_index-th matrix of `size` elements in a work buffer."""
    return f.pointer(base, f.b.mul(batch_index, i64(size)))


# -- cholesky -----------------------------------------------------------------------------------------------
def cholesky(em, inst: Instruction, operands: list) -> BufferRef:
    """HANDLERS entry for cholesky."""
    (a,) = operands
    cpt = compute_type(inst)
    out = em.new_buffer(inst.shape, inst)
    if inst.shape.numel == 0:
        return out
    b = em.b
    f = Field(b, cpt)
    n = inst.shape.dims[-1]
    lower = _flag(inst, "lower")
    work = result_work(em, out, cpt)
    stage_in(em, a, work, cpt)
    fn = lapack_function("potrf", cpt) if n > SMALL_CHOLESKY else None
    diagonal = scratch_buffer(em, cpt, n) if fn is not None and f.complex else None

    def at(i, j):        # L(i, j): row-major for lower; upper computes L = U^T on the transposed view
        return b.add(b.mul(i, i64(n)), j) if lower else b.add(b.mul(j, i64(n)), i)

    batch = math.prod(inst.shape.dims[:-2])
    flops = batch * n ** 3 // 3 if fn is not None else 0
    with lapack_threads(em, flops), for_range(b, batch, "chol.batch") as bi:
        mat = matrix(f, work, bi, n * n)
        if fn is None:
            failed = cholesky_loops(f, mat, n, at)
        else:
            failed = _potrf(f, fn, mat, n, lower, at, diagonal)
        with if_then(b, failed, "chol.failed"):
            fill(f, mat, n * n, f.constant(math.nan))
    if work is not out.pointer:
        stage_out(em, work, out, cpt)
    return out


def _potrf(f: Field, fn: lapack.LapackFunction, mat: ir.Value, n: int, lower: bool, at, diagonal) -> ir.Value:
    """potrf on one matrix; zeroes the other triangle and sets XLA's complex diagonal. Returns i1 failed."""
    b = f.b
    if diagonal is not None:        # keep the imaginary part of the diagonal that potrf drops
        with for_range(b, n, "chol.diag.in") as j:
            f.store(diagonal, j, f.load(mat, at(j, j)))
    info = lapack.ref(b, fn.int_type, 0)
    # row-major lower triangle = column-major upper triangle
    lapack.call(b, fn, [lapack.char(b, "U" if lower else "L"), lapack.integer(b, fn, n), mat,
                        lapack.integer(b, fn, n), info])
    zero_triangle(f, mat, n, at)
    if diagonal is not None:        # L[j,j] = p / sqrt(real(p)): the real part potrf gives, imag(p) / it
        with for_range(b, n, "chol.diag.out") as j:
            root = f.real(f.load(mat, at(j, j)))
            f.store(mat, at(j, j), f.make(root, b.fdiv(f.imag(f.load(diagonal, j)), root)))
    return b.icmp_signed("!=", b.load(info), ir.Constant(fn.int_type, 0))


# -- triangular-solve ----------------------------------------------------------------------------------------
def triangular_solve(em, inst: Instruction, operands: list) -> BufferRef:
    """HANDLERS entry for triangular-solve."""
    a, rhs = operands
    cpt = compute_type(inst)
    out = em.new_buffer(inst.shape, inst)
    if inst.shape.numel == 0:
        return out
    b = em.b
    f = Field(b, cpt)
    m = a.shape.dims[-1]
    rows, cols = inst.shape.dims[-2:]
    left = _flag(inst, "left_side")
    work = result_work(em, out, cpt)
    stage_in(em, rhs, work, cpt)
    if is_work(a, cpt):
        t = a.pointer
    else:
        t = scratch_buffer(em, cpt, a.shape.numel)
        stage_in(em, a, t, cpt)
    fn = lapack_function("trsm", cpt) if m * m * (cols if left else rows) > SMALL_SOLVE else None
    batch = math.prod(inst.shape.dims[:-2])
    flops = batch * m * m * (cols if left else rows) if fn is not None else 0
    with lapack_threads(em, flops), for_range(b, batch, "trsm.batch") as bi:
        tri, x = matrix(f, t, bi, m * m), matrix(f, work, bi, rows * cols)
        if fn is None:
            substitute(f, x, _substitution(f, inst, tri, m, rows, cols))
        else:
            _trsm(f, fn, inst, tri, x, m, rows, cols)
    if work is not out.pointer:
        stage_out(em, work, out, cpt)
    return out


def _substitution(f: Field, inst: Instruction, tri: ir.Value, m: int, rows: int, cols: int) -> Substitution:
    """The solve as one forward or backward substitution E x = y (see linalg_loops.Substitution)."""
    b = f.b
    trans = str(inst.attrs.get("transpose_a", "NO_TRANSPOSE"))
    lower, unit, left = _flag(inst, "lower"), _flag(inst, "unit_diagonal"), _flag(inst, "left_side")

    def op(i, k):        # op(T)(i, k)
        if trans == "NO_TRANSPOSE":
            return f.load(tri, b.add(b.mul(i, i64(m)), k))
        v = f.load(tri, b.add(b.mul(k, i64(m)), i))
        return f.conj(v) if trans == "ADJOINT" else v
    op_lower = lower != (trans != "NO_TRANSPOSE")
    if left:             # op(T) X = B: rows of X in order
        return Substitution(m, cols, op, lambda i, c: b.add(b.mul(i, i64(cols)), c), op_lower, unit)
    # X op(T) = B  <=>  op(T)^T X^T = B^T: X^T(i, c) is X(c, i)
    return Substitution(m, rows, lambda i, k: op(k, i), lambda i, c: b.add(b.mul(c, i64(cols)), i),
                        not op_lower, unit)


def _trsm(f: Field, fn: lapack.LapackFunction, inst: Instruction, tri: ir.Value, x: ir.Value, m: int,
          rows: int, cols: int) -> None:
    b = f.b
    left, lower = _flag(inst, "left_side"), _flag(inst, "lower")
    trans = _TRANSPOSE[str(inst.attrs.get("transpose_a", "NO_TRANSPOSE"))]
    diag = "U" if _flag(inst, "unit_diagonal") else "N"
    # column-major view: X^T is cols x rows, T^T is T's other triangle; the side flips
    lapack.call(b, fn, [lapack.char(b, "R" if left else "L"), lapack.char(b, "U" if lower else "L"),
                        lapack.char(b, trans), lapack.char(b, diag), lapack.integer(b, fn, cols),
                        lapack.integer(b, fn, rows), lapack.ref(b, f.elem, f.constant(1.0)), tri,
                        lapack.integer(b, fn, m), x, lapack.integer(b, fn, cols)])


__all__ = ["cholesky", "triangular_solve", "compute_type", "stage_in", "stage_out", "result_work",
           "lapack_threads", "SMALL_CHOLESKY", "SMALL_SOLVE"]
