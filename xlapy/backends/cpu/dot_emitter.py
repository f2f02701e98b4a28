"""Emitting an HLO dot as LLVM IR: BLAS calls for big f32/f64 products, loop nests for the rest.

Result dims are the batch dims, then the lhs free dims (M), then the rhs free dims (N), each in operand
order; the contracting dims (K) pair up in the order the dimension numbers list them. Every operand is read
through its element strides (from its layout), so transposed operands cost nothing when BLAS can take them:

  gemm   f32/f64, every operand viewed as a strided matrix with one unit stride (lhs M x K, rhs K x N,
         out M x N); a unit stride on the other side folds into the call's transpose flag. One call per
         batch element, batch dims looped in IR.
  gemv   the same when M or N is 1 (matrix-vector, vector-vector).
  loops  small products, and every other element type: i-k-j order (the inner loop runs over N with unit
         stride, so LLVM vectorizes it), accumulating in the result type (integers wrap around) or, for
         bf16/f16/pred, in an f32/i1 row that is rounded once at the end. N == 1 uses k-innermost form.

When an operand's M/K (or K/N) dims cannot be viewed as one strided matrix (the contracting dim sits
between free dims), it is first copied into [batch, M, K] / [batch, K, N] order ("transpose copy"); the
result likewise goes through a [batch, M, N] temporary. `plan_dot` says which copies a dot needs and how
many scratch bytes they take; `emit_dot` takes an i8* to that many bytes or mallocs them itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo.shape import PrimitiveType, Shape, primitive_type
from . import runtime, scalar_ops
from .indexing import strides as layout_strides
from .irhelpers import F16, I8, I8P, I16, I32, I64, VOID, alloca_once, i64, intrinsic, loop_nest
from .types import load_element, storage_type, store_element, value_type

GEMM_MIN_FLOPS = 64 * 64 * 64     # M*N*K below this: the emitted register-blocked kernel beats a BLAS call
GEMV_MIN_ELEMENTS = 128 * 128     # matrix elements below this: emitted loops
ACC_ROW_MAX = 16384               # largest f32 accumulator row kept on the stack (narrow-float results)
ALIGN = 64


@dataclass(frozen=True)
class DotDims:
    lhs_batch: tuple[int, ...] = ()
    lhs_contracting: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()
    rhs_contracting: tuple[int, ...] = ()

    @staticmethod
    def of(dnums) -> "DotDims":
        """From a DotDims, an HLO attribute mapping (lhs_batch_dims, ...) or anything with such `.attrs`."""
        if isinstance(dnums, DotDims):
            return dnums
        a: Mapping = dnums if isinstance(dnums, Mapping) else dnums.attrs
        get = lambda key: tuple(int(d) for d in a.get(key, ()))
        return DotDims(get("lhs_batch_dims"), get("lhs_contracting_dims"), get("rhs_batch_dims"),
                       get("rhs_contracting_dims"))


@dataclass(frozen=True)
class Operand:
    """An array as the dot reads it: logical dims, element strides per dim, element type."""
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    ptype: PrimitiveType

    @staticmethod
    def of(shape: Shape | Sequence[int], ptype: PrimitiveType) -> "Operand":
        if isinstance(shape, Shape):
            return Operand(tuple(shape.dims), tuple(layout_strides(shape)), shape.ptype)
        dims = tuple(int(d) for d in shape)
        return Operand(dims, _row_major(dims, range(len(dims))), ptype)


@dataclass(frozen=True)
class Matrix:
    """A 2-D strided view (element strides) as BLAS takes it: trans 'N' = row-major with leading dim ld,
    'T' = the transpose of a row-major matrix with leading dim ld."""
    rows: int
    cols: int
    trans: str
    ld: int


@dataclass(frozen=True)
class DotPlan:
    strategy: str                       # "gemm" | "gemv" | "loops"
    batch: int
    m: int
    n: int
    k: int
    copies: tuple[str, ...] = ()        # operands that need a transpose copy: "lhs", "rhs", "out"
    scratch_bytes: int = 0
    symbol: str | None = None           # the BLAS routine called
    reason: str = ""


def _row_major(dims: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """Strides of an array of `dims` stored with dims `order` major to minor, densely."""
    out = [0] * len(dims)
    step = 1
    for d in reversed(list(order)):
        out[d] = step
        step *= dims[d]
    return tuple(out)


def _group(op: Operand, dims: Sequence[int]) -> tuple[int, int] | None:
    """(size, stride) of dims viewed as one strided dimension (size-1 dims drop out), or None."""
    live = [d for d in dims if op.dims[d] != 1]
    size = math.prod(op.dims[d] for d in live)
    for a, b in zip(live, live[1:]):
        if op.strides[a] != op.strides[b] * op.dims[b]:
            return None
    return size, (op.strides[live[-1]] if live else 1)


def _matrix(rows: tuple[int, int] | None, cols: tuple[int, int] | None) -> Matrix | None:
    """The BLAS view of a matrix with (size, stride) rows and cols, or None if BLAS cannot take it. The stride
    of a size-1 side is free, so vectors always fit."""
    if rows is None or cols is None:
        return None
    (r, rs), (c, cs) = rows, cols
    if r == 1:
        return Matrix(r, c, "N", max(c, 1)) if cs == 1 or c == 1 else Matrix(r, c, "T", cs)
    if c == 1:
        return Matrix(r, c, "N", rs)
    if cs == 1 and rs >= c:
        return Matrix(r, c, "N", rs)
    if rs == 1 and cs >= r:
        return Matrix(r, c, "T", cs)
    return None


def _transposed(m: Matrix) -> Matrix:
    return Matrix(m.cols, m.rows, "T" if m.trans == "N" else "N", m.ld)


class _Dot:
    """One dot's dimension bookkeeping: which dims of each operand play batch/M/N/K."""

    def __init__(self, lhs: Operand, rhs: Operand, out: Operand, dd: DotDims):
        self.lhs, self.rhs, self.out, self.dd = lhs, rhs, out, dd
        lb, lc, rb, rc = dd.lhs_batch, dd.lhs_contracting, dd.rhs_batch, dd.rhs_contracting
        if len(lb) != len(rb) or len(lc) != len(rc):
            raise UnimplementedError(f"dot: dimension numbers {dd} pair up unequal numbers of dims")
        self.lf = [d for d in range(len(lhs.dims)) if d not in lb and d not in lc]
        self.rf = [d for d in range(len(rhs.dims)) if d not in rb and d not in rc]
        want = tuple([lhs.dims[d] for d in lb] + [lhs.dims[d] for d in self.lf] + [rhs.dims[d] for d in self.rf])
        if want != out.dims or any(lhs.dims[x] != rhs.dims[y] for x, y in zip(lb + lc, rb + rc)):
            raise UnimplementedError(f"dot: shapes {list(lhs.dims)} x {list(rhs.dims)} -> {list(out.dims)} "
                                     f"do not agree with dimension numbers {dd}")
        nb, nm = len(lb), len(self.lf)
        self.ob = list(range(nb))
        self.om = list(range(nb, nb + nm))
        self.on = list(range(nb + nm, len(out.dims)))
        self.batch = math.prod(lhs.dims[d] for d in lb)
        self.m = math.prod(lhs.dims[d] for d in self.lf)
        self.n = math.prod(rhs.dims[d] for d in self.rf)
        self.k = math.prod(lhs.dims[d] for d in lc)

    # BLAS views of each operand (None: needs a transpose copy first)
    def lhs_matrix(self, op: Operand) -> Matrix | None:
        return _matrix(_group(op, self.lf), _group(op, self.dd.lhs_contracting))

    def rhs_matrix(self, op: Operand) -> Matrix | None:
        return _matrix(_group(op, self.dd.rhs_contracting), _group(op, self.rf))

    def out_matrix(self, op: Operand) -> Matrix | None:
        return _matrix(_group(op, self.om), _group(op, self.on))

    def canonical(self, which: str) -> Operand:
        """The operand copied densely into [batch, M, K] / [batch, K, N] / [batch, M, N] order."""
        dd = self.dd
        op, order = {"lhs": (self.lhs, list(dd.lhs_batch) + self.lf + list(dd.lhs_contracting)),
                     "rhs": (self.rhs, list(dd.rhs_batch) + list(dd.rhs_contracting) + self.rf),
                     "out": (self.out, self.ob + self.om + self.on)}[which]
        return Operand(op.dims, _row_major(op.dims, order), op.ptype)


def _elem_bytes(pt: PrimitiveType) -> int:
    ty = storage_type(pt)
    width = ty.width if isinstance(ty, ir.IntType) else {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]
    return max(1, width // 8)


def _byte_size(op: Operand) -> int:
    return math.prod(op.dims) * _elem_bytes(op.ptype)


def _operands(lhs_shape, rhs_shape, out_shape, element_type, lhs_type=None, rhs_type=None):
    pt = element_type if isinstance(element_type, PrimitiveType) else primitive_type(str(element_type))
    as_pt = lambda t: pt if t is None else (t if isinstance(t, PrimitiveType) else primitive_type(str(t)))
    return (Operand.of(lhs_shape, as_pt(lhs_type)), Operand.of(rhs_shape, as_pt(rhs_type)),
            Operand.of(out_shape, pt))


def _plan(d: _Dot) -> DotPlan:
    lhs, rhs, out = d.lhs, d.rhs, d.out
    dims = dict(batch=d.batch, m=d.m, n=d.n, k=d.k)
    names = {lhs.ptype.name, rhs.ptype.name, out.ptype.name}
    if len(names) != 1 or out.ptype.name not in ("f32", "f64"):
        return DotPlan("loops", **dims, reason=f"element types {lhs.ptype.name} x {rhs.ptype.name} -> "
                                               f"{out.ptype.name} have no BLAS routine")
    if d.k == 0 or d.m == 0 or d.n == 0 or d.batch == 0:
        return DotPlan("loops", **dims, reason="empty dot")
    vector = d.m == 1 or d.n == 1
    if vector and d.m * d.n * d.k < GEMV_MIN_ELEMENTS or not vector and d.m * d.n * d.k < GEMM_MIN_FLOPS:
        return DotPlan("loops", **dims, reason="small enough for emitted loops")
    routine = "gemv" if vector else "gemm"
    fn = runtime.blas_function(routine, out.ptype.name)
    if fn is None:
        return DotPlan("loops", **dims, reason=f"no BLAS {routine} for {out.ptype.name} in this process")
    if fn.int_bits == 32 and max(map(abs, lhs.strides + rhs.strides + out.strides + (d.m, d.n, d.k))) >= 2**31:
        return DotPlan("loops", **dims, reason="sizes exceed the 32-bit BLAS interface")
    copies, scratch = [], 0
    for which, view in (("lhs", d.lhs_matrix(lhs)), ("rhs", d.rhs_matrix(rhs)), ("out", d.out_matrix(out))):
        if view is None:
            copies.append(which)
            scratch += -(-_byte_size(getattr(d, which)) // ALIGN) * ALIGN
    return DotPlan(routine, **dims, copies=tuple(copies), scratch_bytes=scratch, symbol=fn.name,
                   reason="transpose copy of " + ", ".join(copies) if copies else "")


def plan_dot(lhs_shape, rhs_shape, out_shape, dnums, element_type, lhs_type=None, rhs_type=None) -> DotPlan:
    """How `emit_dot` will compute this dot (same arguments, without the IR values): strategy, transpose
    copies, scratch bytes."""
    return _plan(_Dot(*_operands(lhs_shape, rhs_shape, out_shape, element_type, lhs_type, rhs_type),
                      DotDims.of(dnums)))


def dot_scratch_bytes(lhs_shape, rhs_shape, out_shape, dnums, element_type, lhs_type=None, rhs_type=None) -> int:
    return plan_dot(lhs_shape, rhs_shape, out_shape, dnums, element_type, lhs_type, rhs_type).scratch_bytes


# -- emission ----------------------------------------------------------------------------------------------
def emit_dot(builder: ir.IRBuilder, module: ir.Module | None, lhs_ptr: ir.Value, rhs_ptr: ir.Value,
             out_ptr: ir.Value, lhs_shape, rhs_shape, out_shape, dnums, element_type,
             lhs_type=None, rhs_type=None, scratch: ir.Value | None = None) -> DotPlan:
    """Emit IR at `builder` computing out = dot(lhs, rhs) over the buffers behind the three pointers.

    Shapes are `Shape`s (their layouts are honored) or dim sequences (row-major); dnums is a DotDims, the
    dot's attribute mapping or the dot instruction; element_type is the result type, lhs_type/rhs_type the
    operand types where they differ (a Shape's own type wins). `scratch`, when given, is an i8* to at least
    `plan.scratch_bytes` 64-byte-aligned bytes; without it a dot needing transpose copies mallocs them.
    `module` is accepted for symmetry with other emitters; BLAS routines are declared in builder.module.
    Returns the plan that was emitted."""
    b = builder
    d = _Dot(*_operands(lhs_shape, rhs_shape, out_shape, element_type, lhs_type, rhs_type), DotDims.of(dnums))
    plan = _plan(d)
    if math.prod(d.out.dims) == 0:
        return plan
    ptrs = {"lhs": b.bitcast(lhs_ptr, I8P), "rhs": b.bitcast(rhs_ptr, I8P), "out": b.bitcast(out_ptr, I8P)}
    if plan.strategy == "loops":
        _emit_loops(b, d, ptrs["lhs"], ptrs["rhs"], ptrs["out"])
        return plan
    ops = {"lhs": d.lhs, "rhs": d.rhs, "out": d.out}
    owned = None
    if plan.copies:
        if scratch is None:
            owned = intrinsic(b, "malloc", I8P, [i64(plan.scratch_bytes)], [I64])
            scratch = owned
        offset = 0
        for which in plan.copies:
            canon = d.canonical(which)
            tmp = b.gep(b.bitcast(scratch, I8P), [i64(offset)], inbounds=True)
            offset += -(-_byte_size(canon) // ALIGN) * ALIGN
            if which != "out":
                _emit_copy(b, ops[which], ptrs[which], canon, tmp)
            ops[which], ptrs[which] = canon, tmp
    _emit_blas(b, d, plan, ops, ptrs)
    if "out" in plan.copies:
        _emit_copy(b, ops["out"], ptrs["out"], d.out, b.bitcast(out_ptr, I8P))
    if owned is not None:
        intrinsic(b, "free", VOID, [owned], [I8P])
    return plan


def _emit_copy(b: ir.IRBuilder, src: Operand, src_ptr: ir.Value, dst: Operand, dst_ptr: ir.Value) -> None:
    """dst[i] = src[i] for every index, walking dst's memory in order."""
    order = sorted(range(len(dst.dims)), key=lambda k: -dst.strides[k])
    with loop_nest(b, [dst.dims[k] for k in order], name="tc") as ivs:
        idx = [None] * len(order)
        for k, iv in zip(order, ivs):
            idx[k] = iv
        v = load_element(b, src_ptr, src.ptype, _offset(b, idx, src.strides))
        store_element(b, dst_ptr, dst.ptype, _offset(b, idx, dst.strides), v)


def _offset(b: ir.IRBuilder, index: Sequence[ir.Value | None], strides: Sequence[int]) -> ir.Value:
    total = None
    for i, s in zip(index, strides):
        if i is None or s == 0:
            continue
        term = i if s == 1 else b.mul(i, i64(s), flags=["nsw", "nuw"])
        total = term if total is None else b.add(total, term, flags=["nsw", "nuw"])
    return total if total is not None else i64(0)


def _batch_loop(b: ir.IRBuilder, d: _Dot):
    """Loop nest over the batch dims (lhs order); yields their induction variables."""
    return loop_nest(b, [d.lhs.dims[x] for x in d.dd.lhs_batch], name="batch")


def _emit_blas(b: ir.IRBuilder, d: _Dot, plan: DotPlan, ops: dict[str, Operand], ptrs: dict[str, ir.Value]):
    fn = runtime.blas_function(plan.strategy, d.out.ptype.name)
    elem = storage_type(d.out.ptype)
    dd = d.dd
    with _batch_loop(b, d) as bivs:
        base = {}
        for which, dims in (("lhs", dd.lhs_batch), ("rhs", dd.rhs_batch), ("out", d.ob)):
            idx = [None] * len(ops[which].dims)
            for x, iv in zip(dims, bivs):
                idx[x] = iv
            typed = b.bitcast(ptrs[which], elem.as_pointer())
            base[which] = b.gep(typed, [_offset(b, idx, ops[which].strides)], inbounds=True)
        a = d.lhs_matrix(ops["lhs"])
        bm = d.rhs_matrix(ops["rhs"])
        c = d.out_matrix(ops["out"])
        if plan.strategy == "gemm":
            _call_gemm(b, fn, elem, a, base["lhs"], bm, base["rhs"], c, base["out"])
        elif d.n == 1:     # out[M] = A[M,K] . x[K]
            x_inc = _group(ops["rhs"], dd.rhs_contracting)[1]
            y_inc = _group(ops["out"], d.om)[1]
            _call_gemv(b, fn, elem, a, base["lhs"], x_inc, base["rhs"], y_inc, base["out"])
        else:              # out[N] = B[K,N]^T . x[K]
            x_inc = _group(ops["lhs"], dd.lhs_contracting)[1]
            y_inc = _group(ops["out"], d.on)[1]
            _call_gemv(b, fn, elem, _transposed(bm), base["rhs"], x_inc, base["lhs"], y_inc, base["out"])


def _declare(b: ir.IRBuilder, name: str, args: list[ir.Type]) -> ir.Function:
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(VOID, args), name)
        fn.attributes.add("nounwind")
    return fn


def _call_gemm(b, fn: runtime.BlasFunction, elem, a: Matrix, pa, bm: Matrix, pb, c: Matrix, pc) -> None:
    """C = op(A) op(B) with C row-major ('N'). A column-major C is computed as C^T = B^T A^T."""
    if c.trans == "T":
        a, bm, pa, pb, c = _transposed(bm), _transposed(a), pb, pa, _transposed(c)
    m, n, k = c.rows, c.cols, a.cols
    one, zero = ir.Constant(elem, 1.0), ir.Constant(elem, 0.0)
    ep = elem.as_pointer()
    if fn.abi == "cblas":
        it = ir.IntType(fn.int_bits)
        callee = _declare(b, fn.name, [I32, I32, I32, it, it, it, elem, ep, it, ep, it, elem, ep, it])
        flag = lambda t: ir.Constant(I32, runtime.CBLAS_NO_TRANS if t == "N" else runtime.CBLAS_TRANS)
        ic = lambda v: ir.Constant(it, v)
        b.call(callee, [ir.Constant(I32, runtime.CBLAS_ROW_MAJOR), flag(a.trans), flag(bm.trans), ic(m), ic(n),
                        ic(k), one, pa, ic(a.ld), pb, ic(bm.ld), zero, pc, ic(c.ld)])
        return
    # Fortran, column-major: the row-major C^T = B^T A^T, i.e. the same flags with the operands swapped
    ip = I32.as_pointer()
    callee = _declare(b, fn.name, [I8P, I8P, ip, ip, ip, ep, ep, ip, ep, ip, ep, ep, ip])
    args = [_ref(b, I8, ord(bm.trans)), _ref(b, I8, ord(a.trans)), _ref(b, I32, n), _ref(b, I32, m),
            _ref(b, I32, k), _ref(b, elem, 1.0), pb, _ref(b, I32, bm.ld), pa, _ref(b, I32, a.ld),
            _ref(b, elem, 0.0), pc, _ref(b, I32, c.ld)]
    b.call(callee, args)


def _call_gemv(b, fn: runtime.BlasFunction, elem, a: Matrix, pa, x_inc: int, px, y_inc: int, py) -> None:
    """y = op(A) x for the M x K view A."""
    rows, cols = (a.rows, a.cols) if a.trans == "N" else (a.cols, a.rows)      # the stored row-major matrix
    ep = elem.as_pointer()
    if fn.abi == "cblas":
        it = ir.IntType(fn.int_bits)
        callee = _declare(b, fn.name, [I32, I32, it, it, elem, ep, it, ep, it, elem, ep, it])
        ic = lambda v: ir.Constant(it, v)
        trans = runtime.CBLAS_NO_TRANS if a.trans == "N" else runtime.CBLAS_TRANS
        b.call(callee, [ir.Constant(I32, runtime.CBLAS_ROW_MAJOR), ir.Constant(I32, trans), ic(rows), ic(cols),
                        ir.Constant(elem, 1.0), pa, ic(a.ld), px, ic(x_inc), ir.Constant(elem, 0.0), py, ic(y_inc)])
        return
    # Fortran: the stored row-major rows x cols matrix is a column-major cols x rows one, transpose flipped
    ip = I32.as_pointer()
    callee = _declare(b, fn.name, [I8P, ip, ip, ep, ep, ip, ep, ip, ep, ep, ip])
    flag = "T" if a.trans == "N" else "N"
    b.call(callee, [_ref(b, I8, ord(flag)), _ref(b, I32, cols), _ref(b, I32, rows), _ref(b, elem, 1.0), pa,
                    _ref(b, I32, a.ld), px, _ref(b, I32, x_inc), _ref(b, elem, 0.0), py, _ref(b, I32, y_inc)])


def _ref(b: ir.IRBuilder, ty: ir.Type, value) -> ir.Value:
    """A pointer to a fresh entry-block slot holding `value` (Fortran passes everything by reference)."""
    slot = alloca_once(b, ty)
    b.store(ir.Constant(ty, value), slot)
    return slot


# -- loops -------------------------------------------------------------------------------------------------
def _compute_type(pt: PrimitiveType) -> PrimitiveType:
    """bf16/f16 accumulate in f32; every other type in itself (integers wrap around)."""
    return primitive_type("f32") if pt.name in ("f16", "bf16") else pt


def _arith(ct: PrimitiveType, reassoc: bool):
    """(multiply, add) on compute-type registers. Float ones may contract to FMA; `reassoc` lets a k-innermost
    sum vectorize (the i-k-j form must not have it, or LLVM vectorizes over k with gathers instead of over n)."""
    if ct.kind == "pred":
        return (lambda b, x, y: b.and_(x, y)), (lambda b, x, y: b.or_(x, y))
    if ct.kind == "float":
        fl = ["contract", "reassoc"] if reassoc else ["contract"]
        return (lambda b, x, y: b.fmul(x, y, flags=fl)), (lambda b, x, y: b.fadd(x, y, flags=fl))
    if ct.kind in ("int", "uint"):
        return (lambda b, x, y: b.mul(x, y)), (lambda b, x, y: b.add(x, y))
    raise UnimplementedError(f"cpu backend: dot on {ct.name} not supported yet")


def _zero(ct: PrimitiveType) -> ir.Constant:
    ty = value_type(ct)
    return ir.Constant(ty, 0.0 if ct.kind == "float" else 0)


def _vector_bytes() -> int:
    """The widest SIMD register of this CPU (the JIT compiles for the host)."""
    global _VECTOR_BYTES
    if _VECTOR_BYTES is None:
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        features = llvm.get_host_cpu_features()
        _VECTOR_BYTES = 64 if features.get("avx512f") else 32 if features.get("avx") else 16
    return _VECTOR_BYTES


_VECTOR_BYTES: int | None = None
ROWS = 4          # register block of the vector kernel: ROWS output rows x VECS vectors of N
VECS = 2


def _emit_loops(b: ir.IRBuilder, d: _Dot, lhs_ptr, rhs_ptr, out_ptr) -> None:
    ct = _compute_type(d.out.ptype)
    if d.n > 1 and _vector_kernel_applies(d, ct):
        _emit_vector_kernel(b, d, ct, lhs_ptr, rhs_ptr, out_ptr)
    else:
        _emit_scalar_loops(b, d, ct, lhs_ptr, rhs_ptr, out_ptr)


def _indices(d: _Dot, bivs, mivs, kivs, nivs):
    """Per-operand index lists (None where a dim is not bound yet) for batch/M/K/N induction variables."""
    dd = d.dd
    li, ri, oi = [None] * len(d.lhs.dims), [None] * len(d.rhs.dims), [None] * len(d.out.dims)
    for x, y, o, iv in zip(dd.lhs_batch, dd.rhs_batch, d.ob, bivs):
        li[x] = ri[y] = oi[o] = iv
    for x, o, iv in zip(d.lf, d.om, mivs):
        li[x] = oi[o] = iv
    for y, o, iv in zip(d.rf, d.on, nivs):
        ri[y] = oi[o] = iv
    for x, y, iv in zip(dd.lhs_contracting, dd.rhs_contracting, kivs):
        li[x] = ri[y] = iv
    return li, ri, oi


def _load(b, op: Operand, ptr, idx, ct: PrimitiveType) -> ir.Value:
    v = load_element(b, ptr, op.ptype, _offset(b, idx, op.strides))
    return scalar_ops.convert(b, op.ptype, ct, v, flush=False)


# -- the vector kernel: ROWS x (VECS vectors) accumulators in registers, k innermost ------------------------
def _vector_kernel_applies(d: _Dot, ct: PrimitiveType) -> bool:
    """N must be one unit-stride run in rhs and out, and rhs convertible to ct lane-wise."""
    if _group(d.rhs, d.rf) != (d.n, 1) or _group(d.out, d.on) != (d.n, 1) or not _vector_kernel_stores(d.out, ct):
        return False
    src = d.rhs.ptype
    if ct.kind == "float":
        return src.name == ct.name or (ct.name == "f32" and src.name in ("bf16", "f16"))
    return ct.kind in ("int", "uint") and src.kind in ("int", "uint")


def _vector_load(b: ir.IRBuilder, op: Operand, ptr, offset: ir.Value, lanes: int, ct: PrimitiveType) -> ir.Value:
    """`lanes` consecutive elements of op from element `offset`, converted to ct (a scalar when lanes == 1)."""
    if lanes == 1:
        return _load_linear(b, op, ptr, offset, ct)
    st = storage_type(op.ptype)
    vty = ir.VectorType(st, lanes)
    p = b.gep(b.bitcast(ptr, st.as_pointer()), [offset], inbounds=True)
    v = b.load(b.bitcast(p, vty.as_pointer()), align=_elem_bytes(op.ptype))
    if op.ptype.name == ct.name:
        return v
    cty = ir.VectorType(value_type(ct), lanes)
    if op.ptype.name == "bf16":
        wide = b.shl(b.zext(v, ir.VectorType(I32, lanes)), ir.Constant(ir.VectorType(I32, lanes), 16))
        return b.bitcast(wide, cty)
    if op.ptype.name == "f16":
        return b.fpext(v, cty)
    sw, dw = st.width, value_type(ct).width          # integer -> integer, as scalar_ops.convert
    if sw == dw:
        return v
    if sw > dw:
        return b.trunc(v, cty)
    return b.sext(v, cty) if op.ptype.kind == "int" else b.zext(v, cty)


def _vector_store(b: ir.IRBuilder, op: Operand, ptr, offset: ir.Value, value: ir.Value, ct: PrimitiveType) -> None:
    """Store the ct lanes of `value` (or a scalar) as consecutive op elements from element `offset`."""
    if not isinstance(value.type, ir.VectorType):
        store_element(b, ptr, op.ptype, offset, scalar_ops.convert(b, ct, op.ptype, value, flush=False))
        return
    lanes = value.type.count
    if op.ptype.name == "bf16":          # round to nearest even, NaN kept quiet (types.bf16_round_bits, lane-wise)
        i32v = ir.VectorType(I32, lanes)
        c = lambda v: ir.Constant(i32v, [v] * lanes)
        bits = b.bitcast(value, i32v)
        rounded = b.add(b.add(bits, c(0x7FFF)), b.and_(b.lshr(bits, c(16)), c(1)))
        nan = b.fcmp_unordered("uno", value, value)
        value = b.trunc(b.lshr(b.select(nan, b.or_(bits, c(0x00400000)), rounded), c(16)), ir.VectorType(I16, lanes))
    elif op.ptype.name == "f16":
        value = b.fptrunc(value, ir.VectorType(F16, lanes))
    st = storage_type(op.ptype)
    p = b.gep(b.bitcast(ptr, st.as_pointer()), [offset], inbounds=True)
    b.store(value, b.bitcast(p, value.type.as_pointer()), align=_elem_bytes(op.ptype))


def _vector_kernel_stores(out: Operand, ct: PrimitiveType) -> bool:
    return out.ptype.name == ct.name or out.ptype.name in ("bf16", "f16")


def _load_linear(b, op: Operand, ptr, offset, ct):
    return scalar_ops.convert(b, op.ptype, ct, load_element(b, ptr, op.ptype, offset), flush=False)


def _splat(b: ir.IRBuilder, x: ir.Value, lanes: int) -> ir.Value:
    if lanes == 1:
        return x
    vty = ir.VectorType(x.type, lanes)
    v = b.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(I32, 0))
    return b.shuffle_vector(v, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(I32, lanes), None))


def _emit_vector_kernel(b: ir.IRBuilder, d: _Dot, ct: PrimitiveType, lhs_ptr, rhs_ptr, out_ptr) -> None:
    """for each block of rows and of columns: acc[r][c] = 0; for k: acc[r][c] += lhs[row r, k] * rhs[k, cols c];
    store. Columns come in chunks of full vectors, then a scalar tail; everything is unrolled at compile time
    except the loops over row blocks, column tiles and k."""
    lanes = max(1, _vector_bytes() // _elem_bytes(ct))
    tile = lanes * VECS
    full_tiles, rest = divmod(d.n, tile)
    tail_chunks, offset, width = [], 0, lanes     # the last columns in ever narrower vectors: 7 = 4 + 2 + 1
    while offset < rest:
        if rest - offset >= width:
            tail_chunks.append((offset, width))
            offset += width
        else:
            width //= 2
    m_dims = [d.lhs.dims[x] for x in d.lf]
    rows = ROWS if d.m >= ROWS else 1

    def block(bivs, row_ivs, n0, chunks):
        """One register block: output rows given by their M index lists, columns n0 + chunk offsets."""
        mul, add = _arith(ct, reassoc=False)
        accs = [[alloca_once(b, ir.VectorType(value_type(ct), w) if w > 1 else value_type(ct)) for _, w in chunks]
                for _ in row_ivs]
        for row in accs:
            for slot, (_, w) in zip(row, chunks):
                b.store(ir.Constant(slot.type.pointee, None) if w > 1 else _zero(ct), slot)
        with loop_nest(b, [d.lhs.dims[x] for x in d.dd.lhs_contracting], name="k") as kivs:
            _, ri, _ = _indices(d, bivs, [], kivs, [])
            rbase = b.add(_offset(b, ri, d.rhs.strides), n0)
            rvals = [_vector_load(b, d.rhs, rhs_ptr, b.add(rbase, i64(off)), w, ct) for off, w in chunks]
            for mivs, row in zip(row_ivs, accs):
                li, _, _ = _indices(d, bivs, mivs, kivs, [])
                a = _load(b, d.lhs, lhs_ptr, li, ct)
                splats = {}
                for slot, (off, w), r in zip(row, chunks, rvals):
                    if w not in splats:
                        splats[w] = _splat(b, a, w)
                    b.store(add(b, b.load(slot), mul(b, splats[w], r)), slot)
        for mivs, row in zip(row_ivs, accs):
            _, _, oi = _indices(d, bivs, mivs, [], [])
            obase = b.add(_offset(b, oi, d.out.strides), n0)
            for slot, (off, w) in zip(row, chunks):
                _vector_store(b, d.out, out_ptr, b.add(obase, i64(off)), b.load(slot), ct)

    def columns(bivs, row_ivs):
        if full_tiles:
            with loop_nest(b, [full_tiles], name="nt") as (t,):
                block(bivs, row_ivs, b.mul(t, i64(tile)), [(c * lanes, lanes) for c in range(VECS)])
        if tail_chunks:
            block(bivs, row_ivs, i64(0 if not full_tiles else full_tiles * tile), tail_chunks)

    def unflatten(m: ir.Value) -> list:
        """The M index list of flat row m."""
        if len(m_dims) == 1:
            return [m]
        out, rest = [], m
        for size in reversed(m_dims):
            out.append(b.urem(rest, i64(size)))
            rest = b.udiv(rest, i64(size))
        return list(reversed(out))

    with _batch_loop(b, d) as bivs:
        if rows == 1:
            with loop_nest(b, m_dims, name="m") as mivs:
                columns(bivs, [mivs])
            return
        blocks, left = divmod(d.m, rows)
        with loop_nest(b, [blocks], name="mb") as (mb,):
            first = b.mul(mb, i64(rows))
            columns(bivs, [unflatten(b.add(first, i64(r))) for r in range(rows)])
        if left:
            with loop_nest(b, [left], name="mr") as (r,):
                columns(bivs, [unflatten(b.add(r, i64(blocks * rows)))])


# -- scalar loops: every other case --------------------------------------------------------------------------
def _emit_scalar_loops(b: ir.IRBuilder, d: _Dot, ct: PrimitiveType, lhs_ptr, rhs_ptr, out_ptr) -> None:
    lhs, rhs, out, dd = d.lhs, d.rhs, d.out, d.dd
    in_place = value_type(out.ptype) == storage_type(out.ptype)     # accumulate straight into the output
    n_dims = [rhs.dims[x] for x in d.rf]
    k_dims = [lhs.dims[x] for x in dd.lhs_contracting]
    ikj = d.n > 1 and (in_place or d.n <= ACC_ROW_MAX)
    mul, add = _arith(ct, reassoc=not ikj)
    acc_row = None
    if ikj and not in_place:
        acc_row = alloca_once(b, ir.ArrayType(value_type(ct), d.n), name="dot.acc_row")
    acc = alloca_once(b, value_type(ct), name="dot.acc")
    out_elem = storage_type(out.ptype).as_pointer()

    def row_slot(oi, nivs):
        if acc_row is not None:
            return b.gep(acc_row, [i64(0), _offset(b, nivs, _row_major(n_dims, range(len(n_dims))))], inbounds=True)
        return b.gep(b.bitcast(out_ptr, out_elem), [_offset(b, oi, out.strides)], inbounds=True)

    with _batch_loop(b, d) as bivs, loop_nest(b, [lhs.dims[x] for x in d.lf], name="m") as mivs:
        if not ikj:      # k innermost: one accumulator per output element
            with loop_nest(b, n_dims, name="n") as nivs:
                b.store(_zero(ct), acc)
                with loop_nest(b, k_dims, name="k") as kivs:
                    li, ri, _ = _indices(d, bivs, mivs, kivs, nivs)
                    b.store(add(b, b.load(acc), mul(b, _load(b, lhs, lhs_ptr, li, ct), _load(b, rhs, rhs_ptr, ri, ct))),
                            acc)
                _, _, oi = _indices(d, bivs, mivs, [], nivs)
                store_element(b, out_ptr, out.ptype, _offset(b, oi, out.strides),
                              scalar_ops.convert(b, ct, out.ptype, b.load(acc), flush=False))
        else:            # i-k-j: broadcast lhs[m, k] against the row rhs[k, :]
            with loop_nest(b, n_dims, name="z") as nivs:
                _, _, oi = _indices(d, bivs, mivs, [], nivs)
                b.store(_zero(ct), row_slot(oi, nivs))
            with loop_nest(b, k_dims, name="k") as kivs:
                li, _, _ = _indices(d, bivs, mivs, kivs, [])
                a = _load(b, lhs, lhs_ptr, li, ct)
                with loop_nest(b, n_dims, name="n") as nivs:
                    _, ri, oi = _indices(d, bivs, mivs, kivs, nivs)
                    slot = row_slot(oi, nivs)
                    b.store(add(b, b.load(slot), mul(b, a, _load(b, rhs, rhs_ptr, ri, ct))), slot)
            if acc_row is not None:
                with loop_nest(b, n_dims, name="w") as nivs:
                    _, _, oi = _indices(d, bivs, mivs, [], nivs)
                    store_element(b, out_ptr, out.ptype, _offset(b, oi, out.strides),
                                  scalar_ops.convert(b, ct, out.ptype, b.load(row_slot(oi, nivs)), flush=False))


__all__ = ["DotDims", "DotPlan", "Operand", "Matrix", "plan_dot", "dot_scratch_bytes", "emit_dot",
           "GEMM_MIN_FLOPS", "GEMV_MIN_ELEMENTS"]
