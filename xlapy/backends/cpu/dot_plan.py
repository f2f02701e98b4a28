"""How a dot is computed (dot_emitter.py emits it): the dimension bookkeeping, the BLAS views of the operands
and the plan.

Result dims are the batch dims, then the lhs free dims (M), then the rhs free dims (N), each in operand
order; the contracting dims (K) pair up in the order the dimension numbers list them. Every operand is read
through its element strides (from its layout), so transposed operands cost nothing when BLAS can take them:

  gemm   f32/f64, every operand viewed as a strided matrix with one unit stride (lhs M x K, rhs K x N,
         out M x N); a unit stride on the other side folds into the call's transpose flag. One call per
         batch element, batch dims looped in IR (dot_blas.py).
  gemv   the same when M or N is 1 (matrix-vector, vector-vector).
  loops  small products, and every other element type (dot_loops.py).
  panels an f32 GEMM whose rhs BLAS would read transposed (out = lhs . W^T, W [N, K]) within an L2-sized window:
         W packed by register transposes into column panels, an emitted register-blocked kernel (dot_panels.py).
  packed a GEMM with few rows in a small while body whose rhs the body passes through unchanged (an RNN step's
         weight): the rhs copied once per run of the loop into column tiles that the vector kernel reads in
         every iteration (loop_state.py registers such dots in PACKED_RHS, dot_loops.emit_packed emits them).

When an operand's M/K (or K/N) dims cannot be viewed as one strided matrix (the contracting dim sits
between free dims), it is first copied into [batch, M, K] / [batch, K, N] order ("transpose copy"); the
result likewise goes through a [batch, M, N] temporary. `plan_dot` says which copies a dot needs and how
many scratch bytes they take.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Mapping, Sequence

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo.shape import PrimitiveType, Shape, primitive_type
from . import runtime
from .indexing import strides as layout_strides
from .irhelpers import for_range, i64, loop_nest
from .types import storage_type

GEMM_MIN_FLOPS = 64 * 64 * 64     # M*N*K below this: the emitted register-blocked kernel beats a BLAS call
GEMV_MIN_ELEMENTS = 128 * 128     # matrix elements below this: emitted loops
# An f32 GEMM this narrow (N up to NARROW_N, rhs K x N within NARROW_RHS_BYTES: it stays in L1) runs faster as the
# emitted vector kernel than as OpenBLAS's sgemm, one thread, thread time, min of 20: gnn/fwd's 16384x128x64 4.6
# vs 5.7 ms, 4096x64x64 0.57 vs 0.66 ms, 1024x64x64 0.10 vs 0.12 ms; not 4096x128x128 (64 KiB: 2.9 vs 2.7 ms) nor
# 4096x512x64 (6.5 vs 6.2 ms). dot_emitter.py shares its rows out over the thread pool.
NARROW_N = 64
NARROW_RHS_BYTES = 32 << 10
ALIGN = 64
# A loop-invariant rhs (a weight a while body passes through unchanged, loop_state.py) of an f32 GEMM with few
# rows is copied once per run of the loop into column tiles ("packed", below) and read from there by the vector
# kernel in every iteration, instead of a BLAS call that packs the whole weight again each time (an RNN step's
# 32 x 128 x 384 or 16 x 128 x 512: the weight is 6-32 times the rows' bytes).
PACKED_MAX_M = 64
PACKED_MAX_RHS_BYTES = 1 << 20
PACKED_MIN_MNK = 1 << 17
PACKED_HEADER = 64                  # bytes before the tiles: the address the copy was made from, 0 for none
# dot instruction id -> its packed copy's scratch slice (an i8*, in the function that runs the loop): loop_state.py
# fills it while it emits the loop
PACKED_RHS: dict[int, object] = {}


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
        return Operand(dims, row_major(dims, range(len(dims))), ptype)


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
    strategy: str                       # "gemm" | "gemv" | "loops" | "packed" | "panels"
    batch: int
    m: int
    n: int
    k: int
    copies: tuple[str, ...] = ()        # operands that need a transpose copy: "lhs", "rhs", "out"
    scratch_bytes: int = 0
    symbol: str | None = None           # the BLAS routine called
    reason: str = ""


def row_major(dims: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """Strides of an array of `dims` stored with dims `order` major to minor, densely."""
    out = [0] * len(dims)
    step = 1
    for d in reversed(list(order)):
        out[d] = step
        step *= dims[d]
    return tuple(out)


def group(op: Operand, dims: Sequence[int]) -> tuple[int, int] | None:
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


def transposed(m: Matrix) -> Matrix:
    return Matrix(m.cols, m.rows, "T" if m.trans == "N" else "N", m.ld)


class DotShape:
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
        return _matrix(group(op, self.lf), group(op, self.dd.lhs_contracting))

    def rhs_matrix(self, op: Operand) -> Matrix | None:
        return _matrix(group(op, self.dd.rhs_contracting), group(op, self.rf))

    def out_matrix(self, op: Operand) -> Matrix | None:
        return _matrix(group(op, self.om), group(op, self.on))

    def canonical(self, which: str) -> Operand:
        """The operand copied densely into [batch, M, K] / [batch, K, N] / [batch, M, N] order."""
        dd = self.dd
        op, order = {"lhs": (self.lhs, list(dd.lhs_batch) + self.lf + list(dd.lhs_contracting)),
                     "rhs": (self.rhs, list(dd.rhs_batch) + list(dd.rhs_contracting) + self.rf),
                     "out": (self.out, self.ob + self.om + self.on)}[which]
        return Operand(op.dims, row_major(op.dims, order), op.ptype)


def elem_bytes(pt: PrimitiveType) -> int:
    ty = storage_type(pt)
    width = ty.width if isinstance(ty, ir.IntType) else {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]
    return max(1, width // 8)


def operand_bytes(op: Operand) -> int:
    return math.prod(op.dims) * elem_bytes(op.ptype)


def operands_of(lhs_shape, rhs_shape, out_shape, element_type, lhs_type=None, rhs_type=None):
    pt = element_type if isinstance(element_type, PrimitiveType) else primitive_type(str(element_type))
    as_pt = lambda t: pt if t is None else (t if isinstance(t, PrimitiveType) else primitive_type(str(t)))
    return (Operand.of(lhs_shape, as_pt(lhs_type)), Operand.of(rhs_shape, as_pt(rhs_type)),
            Operand.of(out_shape, pt))


def compute_type(pt: PrimitiveType) -> PrimitiveType:
    """What emitted dot loops accumulate in: bf16/f16 in f32, every other type in itself (integers wrap)."""
    return primitive_type("f32") if pt.name in ("f16", "bf16") else pt


def vector_kernel_types(d: DotShape) -> bool:
    """Whether dot_loops' vector kernel can take these element types: rhs convertible to the compute type lane
    by lane, and results stored in it or rounded once to bf16/f16."""
    ct, src, out = compute_type(d.out.ptype), d.rhs.ptype, d.out.ptype
    if not (out.name == ct.name or out.name in ("bf16", "f16")):
        return False
    if ct.kind == "float":
        return src.name == ct.name or (ct.name == "f32" and src.name in ("bf16", "f16"))
    return ct.kind in ("int", "uint") and src.kind in ("int", "uint")


def _loop_plan(d: DotShape, reason: str) -> DotPlan:
    """Emitted loops; when N is not one unit-stride run of rhs or of the result (a transposed weight, say),
    they first copy rhs (K x N, cheap next to the M x N x K products) and write the result through a temporary
    in [batch, M, N] order, so the vector kernel applies instead of scalar loops over strided columns."""
    dims = dict(batch=d.batch, m=d.m, n=d.n, k=d.k)
    copies = []
    if d.n > 1 and d.m >= 2 and d.k and d.batch and vector_kernel_types(d):
        if group(d.rhs, d.rf) != (d.n, 1):
            copies.append("rhs")
        if group(d.out, d.on) != (d.n, 1):
            copies.append("out")
    if not copies:
        return DotPlan("loops", **dims, reason=reason)
    scratch = sum(-(-operand_bytes(getattr(d, which)) // ALIGN) * ALIGN for which in copies)
    return DotPlan("loops", **dims, copies=tuple(copies), scratch_bytes=scratch,
                   reason=f"{reason}; transpose copy of {', '.join(copies)} for the vector kernel")


NARROW_REASON = "narrow f32 GEMM: the vector kernel keeps rhs in L1"


def narrow(d: DotShape) -> bool:
    """An f32 GEMM the emitted vector kernel runs faster than BLAS: N <= NARROW_N, rhs within NARROW_RHS_BYTES,
    N one unit-stride run of rhs and of the result, K one strided run of lhs."""
    return d.n <= NARROW_N and d.k * d.n * 4 <= NARROW_RHS_BYTES and _vector_kernel_reads(d)


SHORT_REASON = "short f32 GEMM: BLAS would pack all of rhs for a few rows"
SHORT_M = 8


def short(d: DotShape) -> bool:
    """An f32 GEMM of at most SHORT_M rows (a classifier head on a batch of 8, a sampling step's logits): BLAS
    packs the whole rhs for them; the vector kernel reads it once per ROWS rows, as fast or faster (one thread,
    thread time, min of 7: 8x512x100 9.5 vs 8-11 us, 8x2048x1000 0.73-0.86 vs 0.82-0.89 ms, 4x192x2048 38-53 vs
    106 us; 16x768x2048 was 1.6 vs 0.9 ms, hence 8), and sums K in blocks (dot_loops.k_block): ResNet-50's head
    [8,512]x[512,100] had 1.27x XLA's rms error through OpenBLAS's one run of K."""
    return d.m <= SHORT_M and _vector_kernel_reads(d)


def _vector_kernel_reads(d: DotShape) -> bool:
    """f32, N one unit-stride run of rhs and of the result, K one strided run of lhs: the vector kernel reads the
    operands in place."""
    return (d.out.ptype.name == "f32" and group(d.rhs, d.rf) == (d.n, 1) and group(d.out, d.on) == (d.n, 1)
            and group(d.lhs, d.dd.lhs_contracting) is not None and vector_kernel_types(d))


PANELS_REASON = "f32 GEMM over W in column panels, emitted kernel (dot_panels.py)"
# The window where dot_panels' kernel (pack included) beats OpenBLAS's sgemm (M x N x K), one thread, thread time,
# in-process A/B with the rule off, min of 25 interleaved rounds (AVX-512, emeraldrapids). W stored [N, K] (BLAS 'T':
# its pack transposes; here 16x16 register transposes):
#   M >= 16   16x128x128 0.52x, 16x512x512 0.65x, 32x128x512 0.54x, 32x112x1280 0.54x, 64x64x64 0.78x,
#             128x256x128 0.73x, 128x256x512 0.87-0.95x, 512x128x256 0.84x, 520x256x128 0.83x, 256x768x192 0.93x
#   M < 16    mixed: 8x256x256 0.38x, 4x512x512 0.47x, but 8x128x256 1.35x and 4x256x512 1.9x (OpenBLAS's
#             small-matrix path), hence PANELS_MIN_M
#   larger    about even where lhs or W outgrow L2's share (prototype: 512x512x512 0.97x, 2048x192x256 0.97x,
#             4096x256x256 0.95x), hence the bounds on both
# W stored [K, N] with N <= 64, dense (one panel already: read in place, or copied where it is not 64-byte aligned:
# a W 16 bytes off a cache line ran ~25% slower), M >= 16: 128x64x576 0.80x (the 3x3 64->64 convolutions'),
# 128x64x256 0.83x, 256x64x256 0.82x. Wider [K, N] Ws stay with BLAS: copied into panels they won 0.79-0.97x from
# 64 rows up, but lost 1.14-1.19x below and 1.6x with two threads at 64x1024x256 (the copy is serial).
PANELS_MIN_M = 16
PANELS_MAX_LHS_BYTES = 512 << 10
PANELS_MAX_RHS_BYTES = 1 << 20


def panels(d: DotShape) -> bool:
    """An f32 GEMM for dot_panels: no batch, lhs M x K and the result M x N read row-major, W stored [N, K] (BLAS's
    'T': its packing transposes) or [K, N] as one dense panel (N <= 64), N and K multiples of the 16 lanes of AVX-512
    (the pack's register transposes), M, lhs and W within the measured window (above)."""
    from .vector_width import loop_vector_bytes
    if loop_vector_bytes() != 64 or d.dd.lhs_batch or not d.out.ptype.name == d.lhs.ptype.name == d.rhs.ptype.name \
            == "f32" or d.n % 16 or d.k % 16:
        return False
    a, w, c = d.lhs_matrix(d.lhs), d.rhs_matrix(d.rhs), d.out_matrix(d.out)
    return (a is not None and w is not None and c is not None and a.trans == c.trans == "N"
            and (w.trans == "T" or d.n <= 64 and w.ld == d.n) and d.m >= PANELS_MIN_M and d.m * d.k * 4 <= PANELS_MAX_LHS_BYTES and d.n * d.k * 4 <= PANELS_MAX_RHS_BYTES)


def packed_lanes() -> int:
    from .vector_width import loop_vector_bytes
    return loop_vector_bytes() // 4


def packed_bytes(dot) -> int:
    """Scratch bytes of the packed copy of dot instruction `dot`'s rhs (header and tiles), 0 when the packed plan
    does not apply to it."""
    d = DotShape(*operands_of(dot.operands[0].shape, dot.operands[1].shape, dot.shape, dot.shape.ptype),
                 DotDims.of(dot))
    if not packed_applies(d):
        return 0
    from .dot_loops import packed_floats
    return PACKED_HEADER + packed_floats(d.k, d.n) * 4


def packed_applies(d: DotShape) -> bool:
    """An f32 GEMM [M..., K] x [K, N] -> [M..., N] with few rows whose rhs the vector kernel can read packed: N a
    multiple of the tile, one strided run of rhs (the copy reads it in any order: an RNN's backward step reads
    its weight as [N, K]) and one unit-stride run of the result, K one dim and one run of lhs."""
    dd = d.dd
    return (d.out.ptype.name == d.lhs.ptype.name == d.rhs.ptype.name == "f32" and not dd.lhs_batch
            and len(dd.lhs_contracting) == 1 and len(d.rhs.dims) == 2 and 2 <= d.m <= PACKED_MAX_M
            and d.n % packed_lanes() == 0 and d.k * d.n * 4 <= PACKED_MAX_RHS_BYTES
            and d.m * d.n * d.k >= PACKED_MIN_MNK and group(d.rhs, d.rf) is not None
            and group(d.out, d.on) == (d.n, 1) and group(d.lhs, d.lf) is not None)


def make_plan(d: DotShape, invariant_rhs: bool = False) -> DotPlan:
    lhs, rhs, out = d.lhs, d.rhs, d.out
    dims = dict(batch=d.batch, m=d.m, n=d.n, k=d.k)
    names = {lhs.ptype.name, rhs.ptype.name, out.ptype.name}
    if len(names) != 1 or out.ptype.name not in ("f32", "f64"):
        return _loop_plan(d, f"element types {lhs.ptype.name} x {rhs.ptype.name} -> {out.ptype.name} have no "
                             f"BLAS routine")
    if d.k == 0 or d.m == 0 or d.n == 0 or d.batch == 0:
        return DotPlan("loops", **dims, reason="empty dot")
    if invariant_rhs and packed_applies(d):
        return DotPlan("packed", **dims, reason="loop-invariant rhs packed once per run of the loop")
    vector = d.m == 1 or d.n == 1
    if vector and d.m * d.n * d.k < GEMV_MIN_ELEMENTS or not vector and d.m * d.n * d.k < GEMM_MIN_FLOPS:
        return _loop_plan(d, "small enough for emitted loops")
    if not vector and narrow(d):
        return DotPlan("loops", **dims, reason=NARROW_REASON)
    if not vector and short(d):
        return DotPlan("loops", **dims, reason=SHORT_REASON)
    if not vector and panels(d):
        return DotPlan("panels", **dims, scratch_bytes=d.n * d.k * 4, reason=PANELS_REASON)
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
            scratch += -(-operand_bytes(getattr(d, which)) // ALIGN) * ALIGN
    return DotPlan(routine, **dims, copies=tuple(copies), scratch_bytes=scratch, symbol=fn.name,
                   reason="transpose copy of " + ", ".join(copies) if copies else "")


def plan_dot(lhs_shape, rhs_shape, out_shape, dnums, element_type, lhs_type=None, rhs_type=None) -> DotPlan:
    """How `emit_dot` will compute this dot (same arguments, without the IR values): strategy, transpose
    copies, scratch bytes."""
    return make_plan(DotShape(*operands_of(lhs_shape, rhs_shape, out_shape, element_type, lhs_type, rhs_type),
                      DotDims.of(dnums)), id(dnums) in PACKED_RHS)


def dot_scratch_bytes(lhs_shape, rhs_shape, out_shape, dnums, element_type, lhs_type=None, rhs_type=None) -> int:
    return plan_dot(lhs_shape, rhs_shape, out_shape, dnums, element_type, lhs_type, rhs_type).scratch_bytes


def offset_of(b: ir.IRBuilder, index: Sequence[ir.Value | None], strides: Sequence[int]) -> ir.Value:
    total = None
    for i, s in zip(index, strides):
        if i is None or s == 0:
            continue
        term = i if s == 1 else b.mul(i, i64(s), flags=["nsw", "nuw"])
        total = term if total is None else b.add(total, term, flags=["nsw", "nuw"])
    return total if total is not None else i64(0)


def batch_loop(b: ir.IRBuilder, d: DotShape, span: tuple[ir.Value, ir.Value] | None = None):
    """Loop nest over the batch dims (lhs order); yields their induction variables. `span` (start, end), i64
    values: only the batch elements of flat (row-major) index in [start, end), a pool task's share."""
    dims = [d.lhs.dims[x] for x in d.dd.lhs_batch]
    if span is None:
        return loop_nest(b, dims, name="batch")
    return _batch_span(b, dims, *span)


@contextmanager
def _batch_span(b: ir.IRBuilder, dims: Sequence[int], start: ir.Value, end: ir.Value):
    with for_range(b, end, "batch", start=start) as flat:
        ivs, rest = [], flat
        for size in reversed(dims):
            ivs.append(b.urem(rest, i64(size)))
            rest = b.udiv(rest, i64(size))
        yield list(reversed(ivs))


__all__ = ["DotDims", "DotPlan", "Operand", "Matrix", "plan_dot", "dot_scratch_bytes", "GEMM_MIN_FLOPS",
           "GEMV_MIN_ELEMENTS", "ALIGN", "NARROW_N", "NARROW_RHS_BYTES", "narrow", "short", "SHORT_M", "PACKED_RHS",
           "packed_applies", "packed_bytes"]
