"""Dots as emitted loops: small products, and every element type without a BLAS routine.

  vector kernel  N one unit-stride run in rhs and out: ROWS output rows x VECS SIMD vectors of N accumulate in
                 registers over k, then are stored (converted once for bf16/f16 results). Floats accumulate
                 with fused multiply-adds, K in blocks of k_block(K) (each block's sum added to the total;
                 a shorter last block runs in the same loop, its length known at run time). The last rows and
                 columns, when M or N is not a multiple of the block, are a last block that overlaps the one
                 before (_last_at) rather than code of their own.
  scalar loops   every other case: i-k-j order (the inner loop runs over N with unit stride, so LLVM vectorizes
                 it), accumulating in the result type (integers wrap around) or, for bf16/f16/pred, in an
                 f32/i1 row that is rounded once at the end. N == 1 uses k-innermost form.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo.shape import PrimitiveType
from . import scalar_ops
from .dot_plan import (PACKED_HEADER, DotDims, Operand, batch_loop, DotShape, compute_type, elem_bytes, group,
                       offset_of, row_major, vector_kernel_types)
from .irhelpers import F16, F32, I8P, I16, I32, I64, alloca_once, for_range, i64, if_then, loop_nest
from .types import call_math, load_element, storage_type, store_element, value_type
from .vector_width import loop_vector_bytes

ACC_ROW_MAX = 16384               # largest f32 accumulator row kept on the stack (narrow-float results)


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


ROWS = 4          # register block of the vector kernel: ROWS output rows x VECS vectors of N
VECS = 2
PACKED_ROWS = 4
PACKED_VECS = 3


def emit_loops(b: ir.IRBuilder, d: DotShape, lhs_ptr, rhs_ptr, out_ptr, span=None) -> None:
    """The loops of out = dot(lhs, rhs); `span` (start, end): only those flat batch elements (dot_plan.batch_loop)."""
    ct = compute_type(d.out.ptype)
    if d.n > 1 and _vector_kernel_applies(d, ct):
        _emit_vector_kernel(b, d, ct, lhs_ptr, rhs_ptr, out_ptr, span)
    else:
        _emit_scalar_loops(b, d, ct, lhs_ptr, rhs_ptr, out_ptr, span)


def _indices(d: DotShape, bivs, mivs, kivs, nivs):
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
    v = load_element(b, ptr, op.ptype, offset_of(b, idx, op.strides))
    return scalar_ops.convert(b, op.ptype, ct, v, flush=False)


# -- the vector kernel: ROWS x (VECS vectors) accumulators in registers, k innermost ------------------------
def _vector_kernel_applies(d: DotShape, ct: PrimitiveType) -> bool:
    """N must be one unit-stride run in rhs and out (dot_plan copies them into that order when it pays), and
    the element types must suit the kernel (dot_plan.vector_kernel_types)."""
    return group(d.rhs, d.rf) == (d.n, 1) and group(d.out, d.on) == (d.n, 1) and vector_kernel_types(d)


def _vector_load(b: ir.IRBuilder, op: Operand, ptr, offset: ir.Value, lanes: int, ct: PrimitiveType) -> ir.Value:
    """`lanes` consecutive elements of op from element `offset`, converted to ct (a scalar when lanes == 1)."""
    if lanes == 1:
        return _load_linear(b, op, ptr, offset, ct)
    st = storage_type(op.ptype)
    vty = ir.VectorType(st, lanes)
    p = b.gep(b.bitcast(ptr, st.as_pointer()), [offset], inbounds=True)
    v = b.load(b.bitcast(p, vty.as_pointer()), align=elem_bytes(op.ptype))
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
    b.store(value, b.bitcast(p, value.type.as_pointer()), align=elem_bytes(op.ptype))


def _load_linear(b, op: Operand, ptr, offset, ct):
    return scalar_ops.convert(b, op.ptype, ct, load_element(b, ptr, op.ptype, offset), flush=False)


def _splat(b: ir.IRBuilder, x: ir.Value, lanes: int) -> ir.Value:
    if lanes == 1:
        return x
    vty = ir.VectorType(x.type, lanes)
    v = b.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(I32, 0))
    return b.shuffle_vector(v, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(I32, lanes), None))


def _emit_vector_kernel(b: ir.IRBuilder, d: DotShape, ct: PrimitiveType, lhs_ptr, rhs_ptr, out_ptr, span,
                        packed: bool = False) -> None:
    """for each block of rows and of columns: acc[r][c] = 0; for k: acc[r][c] += lhs[row r, k] * rhs[k, cols c];
    store. Columns come in chunks of full vectors, then a scalar tail; everything is unrolled at compile time
    except the loops over row blocks, column tiles and k."""
    lanes = max(1, loop_vector_bytes() // elem_bytes(ct))
    vecs = PACKED_VECS if packed else VECS
    tile = lanes * vecs
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
    prows = min(PACKED_ROWS, d.m)

    def block(bivs, row_ivs, n0, chunks, r0=None):
        """One register block: output rows given by their M index lists, columns n0 + chunk offsets (read from rhs
        at its offset of k plus r0, n0 by default)."""
        mul, add = _arith(ct, reassoc=False)
        if ct.kind == "float":      # one rounding per term at every LLVM level (contract fuses only at O3)
            def mul_add(acc, x, y):
                return call_math(b, "fmuladd", x, y, acc)
        else:
            def mul_add(acc, x, y):
                return add(b, acc, mul(b, x, y))

        def slots():
            out = [[alloca_once(b, ir.VectorType(value_type(ct), w) if w > 1 else value_type(ct)) for _, w in chunks]
                   for _ in row_ivs]
            for row in out:
                for slot, (_, w) in zip(row, chunks):
                    b.store(ir.Constant(slot.type.pointee, None) if w > 1 else _zero(ct), slot)
            return out

        def accumulate(accs, k_loops):
            with k_loops as kivs:
                _, ri, _ = _indices(d, bivs, [], kivs, [])
                rbase = b.add(offset_of(b, ri, d.rhs.strides), n0 if r0 is None else r0)
                rvals = [_vector_load(b, d.rhs, rhs_ptr, b.add(rbase, i64(off)), w, ct) for off, w in chunks]
                for mivs, row in zip(row_ivs, accs):
                    li, _, _ = _indices(d, bivs, mivs, kivs, [])
                    a = _load(b, d.lhs, lhs_ptr, li, ct)
                    splats = {}
                    for slot, (off, w), r in zip(row, chunks, rvals):
                        if w not in splats:
                            splats[w] = _splat(b, a, w)
                        b.store(mul_add(b.load(slot), splats[w], r), slot)

        accs = slots()
        k_sizes = [d.lhs.dims[x] for x in d.dd.lhs_contracting]
        kb = k_block(d.k) if ct.kind == "float" and len(k_sizes) == 1 else None
        if kb is None:
            accumulate(accs, loop_nest(b, k_sizes, name="k"))
        else:           # K in blocks of kb: each block's sum in fresh registers, then added to the total
            full, rest = divmod(d.k, kb)
            with loop_nest(b, [full + (rest > 0)], name="kb") as (q,):     # the last block may be shorter
                first = b.mul(q, i64(kb))
                parts = slots()
                accumulate(parts, _k_range(b, first, kb) if not rest
                           else _k_span(b, first, _at_most(b, b.add(first, i64(kb)), d.k)))
                for row, prow in zip(accs, parts):
                    for slot, part in zip(row, prow):
                        b.store(add(b, b.load(slot), b.load(part)), slot)
        for mivs, row in zip(row_ivs, accs):
            _, _, oi = _indices(d, bivs, mivs, [], [])
            obase = b.add(offset_of(b, oi, d.out.strides), n0)
            for slot, (off, w) in zip(row, chunks):
                _vector_store(b, d.out, out_ptr, b.add(obase, i64(off)), b.load(slot), ct)

    def columns(bivs, row_ivs):
        if full_tiles and rest:         # a last tile overlapping the one before: no tail code
            with loop_nest(b, [full_tiles + 1], name="nt") as (t,):
                block(bivs, row_ivs, _last_at(b, t, tile, d.n), [(c * lanes, lanes) for c in range(VECS)])
            return
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

    def row_blocks(bivs, n0, chunks, r0=None):
        if packed:          # ROWS-row blocks, then the rows left as one block
            blocks, left = divmod(d.m, prows)
            if blocks:
                with loop_nest(b, [blocks], name="mb") as (mb,):
                    first = b.mul(mb, i64(prows))
                    block(bivs, [unflatten(b.add(first, i64(r))) for r in range(prows)], n0, chunks, r0)
            if left:
                block(bivs, [unflatten(i64(blocks * prows + r)) for r in range(left)], n0, chunks, r0)
            return
        if rows == 1:
            with loop_nest(b, m_dims, name="m") as mivs:
                block(bivs, [mivs], n0, chunks, r0)
            return
        blocks, left = divmod(d.m, rows)
        with loop_nest(b, [blocks], name="mb") as (mb,):
            first = b.mul(mb, i64(rows))
            block(bivs, [unflatten(b.add(first, i64(r))) for r in range(rows)], n0, chunks, r0)
        if left:
            with loop_nest(b, [left], name="mr") as (r,):
                block(bivs, [unflatten(b.add(r, i64(blocks * rows)))], n0, chunks, r0)

    if packed:          # rhs is the packed copy: tile t's K x tile block at t * K * tile, row k at k * tile
        with batch_loop(b, d, span) as bivs:
            if full_tiles:
                with loop_nest(b, [full_tiles], name="nt") as (t,):
                    row_blocks(bivs, b.mul(t, i64(tile)), [(c * lanes, lanes) for c in range(vecs)],
                               b.mul(t, i64(d.k * tile)))
            if rest:        # the last columns: a tile of its own, as wide as the others in the copy
                row_blocks(bivs, i64(full_tiles * tile), [(c * lanes, lanes) for c in range(rest // lanes)],
                           i64(full_tiles * d.k * tile))
        return

    with batch_loop(b, d, span) as bivs:
        if rows == 1:
            with loop_nest(b, m_dims, name="m") as mivs:
                columns(bivs, [mivs])
            return
        blocks, left = divmod(d.m, rows)
        with loop_nest(b, [blocks + (left > 0)], name="mb") as (mb,):    # the last block overlapping
            first = _last_at(b, mb, rows, d.m)
            columns(bivs, [unflatten(b.add(first, i64(r))) for r in range(rows)])


def _last_at(b: ir.IRBuilder, i: ir.Value, size: int, total: int) -> ir.Value:
    """The first index of block i of `size` along a dim of `total`: i * size, but at most total - size, so a last
    block that would run past the end overlaps the one before instead (its overlapping outputs are computed
    again, with the same operations in the same order: the same values). Why: the remainder's own code (a block
    of one row, columns in ever narrower vectors down to scalars, each with its own K loops) was a third of
    vit/fwd's attention kernels' LLVM time (task bodies of 562 and 624 lines: 32 -> 18.5 and 28.7 -> 19.9 ms of
    thread CPU compiled alone), and it ran no faster per k than a full block (latency-bound short chains)."""
    return _at_most(b, b.mul(i, i64(size)), total - size)


def _at_most(b: ir.IRBuilder, x: ir.Value, limit: int) -> ir.Value:
    return b.select(b.icmp_unsigned("<", x, i64(limit)), x, i64(limit))


def k_block(k: int) -> int | None:
    """The length of the K blocks a float register block sums on its own before adding to its total (None: K in
    one run). One run of K fused multiply-adds rounds its partial sum K times in a row, so its error grows like
    K; blocks of kb grow like kb + K/kb, least near sqrt(K): the power of two nearest it, at least 8. XLA:CPU's
    GEMMs keep several partial sums too ([128,144]x[144,24]: rms error 8.7e-8 against exact, one run 1.5e-7,
    blocks of 16 7.9e-8)."""
    if k <= K_BLOCK_MIN:
        return None
    return max(K_BLOCK_MIN, 1 << round(math.log2(math.sqrt(k))))


K_BLOCK_MIN = 8


@contextmanager
def _k_range(b: ir.IRBuilder, first: ir.Value, count: int):
    """A loop over k = first .. first + count - 1, yielding [k] as loop_nest yields its induction variables."""
    with loop_nest(b, [count], name="k") as (j,):
        yield [b.add(first, j)]


@contextmanager
def _k_span(b: ir.IRBuilder, first: ir.Value, end: ir.Value):
    """A loop over k = first .. end - 1 (a K block whose length is known at run time: the last one shorter, in
    the same loop as the others rather than a copy of the block's code; vit/fwd's [32,65] x [65,65] task body
    415 -> 285 lines, 27.7 -> 24.0 ms of thread CPU compiled alone)."""
    with for_range(b, end, name="k", start=first) as k:
        yield [k]


# -- scalar loops: every other case --------------------------------------------------------------------------
def _emit_scalar_loops(b: ir.IRBuilder, d: DotShape, ct: PrimitiveType, lhs_ptr, rhs_ptr, out_ptr, span) -> None:
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
            return b.gep(acc_row, [i64(0), offset_of(b, nivs, row_major(n_dims, range(len(n_dims))))], inbounds=True)
        return b.gep(b.bitcast(out_ptr, out_elem), [offset_of(b, oi, out.strides)], inbounds=True)

    lanes_sum = _partial_sums(d, ct) if not ikj else None
    with batch_loop(b, d, span) as bivs, loop_nest(b, [lhs.dims[x] for x in d.lf], name="m") as mivs:
        if lanes_sum is not None:     # k innermost, as vector partial sums (_partial_sums)
            with loop_nest(b, n_dims, name="n") as nivs:
                total = _emit_partial_sums(b, d, ct, lhs_ptr, rhs_ptr, bivs, mivs, nivs, *lanes_sum)
                _, _, oi = _indices(d, bivs, mivs, [], nivs)
                store_element(b, out_ptr, out.ptype, offset_of(b, oi, out.strides),
                              scalar_ops.convert(b, ct, out.ptype, total, flush=False))
        elif not ikj:    # k innermost: one accumulator per output element
            with loop_nest(b, n_dims, name="n") as nivs:
                b.store(_zero(ct), acc)
                with loop_nest(b, k_dims, name="k") as kivs:
                    li, ri, _ = _indices(d, bivs, mivs, kivs, nivs)
                    b.store(add(b, b.load(acc), mul(b, _load(b, lhs, lhs_ptr, li, ct), _load(b, rhs, rhs_ptr, ri, ct))),
                            acc)
                _, _, oi = _indices(d, bivs, mivs, [], nivs)
                store_element(b, out_ptr, out.ptype, offset_of(b, oi, out.strides),
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
                    store_element(b, out_ptr, out.ptype, offset_of(b, oi, out.strides),
                                  scalar_ops.convert(b, ct, out.ptype, b.load(row_slot(oi, nivs)), flush=False))


# -- k innermost as partial sums -----------------------------------------------------------------------------
# A dot whose every output is one long inner product (a matrix-vector product, N == 1) sums its K products with
# fused multiply-adds into `chains` vector accumulators of SIMD width (one per CHAIN_VECTORS vectors of K, at most
# SUM_CHAINS), each lane a partial sum of every (lanes * chains)-th product; the last K mod lanes products go into
# the first lanes of the next chain; the chains are added pairwise, then the halves of the lanes. Left to LLVM (a
# scalar `reassoc` sum), the association depended on the kernel's tier: vectorized at O3, one sequential sum at O1
# (opt_levels.py's light kernels, small modules' quick level), whose error grows with K (gnn's 16 x 64 x 1 readout:
# 2.6x XLA's rms error against f64). Against XLA:CPU's matrix-vector products (rms error over 800-1500 rows of
# N(0.3, 1) data against f64, simulated order): K = 29: 1.17e-5 vs 1.27e-5, 127: 3.73e-5 vs 4.59e-5, 500: 8.6e-5
# vs 13.7e-5. More chains shorten the sums (long K) but round each product once more (short K): hence the rule.
SUM_CHAINS = 4
CHAIN_VECTORS = 4


def _partial_sums(d: DotShape, ct: PrimitiveType) -> tuple[int, int] | None:
    """(lanes, chains) when the partial-sum loop applies: a float compute type, one contracting dim, both operands
    of one element type that the vector loads convert (vector_kernel_types), K at least one vector. A K stride
    other than 1 is read element by element into the vectors."""
    if ct.kind != "float" or len(d.dd.lhs_contracting) != 1 or not vector_kernel_types(d):
        return None
    (lk,) = d.dd.lhs_contracting
    if d.lhs.ptype.name != d.rhs.ptype.name:
        return None
    lanes = max(1, loop_vector_bytes() // elem_bytes(ct))
    k = d.lhs.dims[lk]
    if lanes == 1 or k < lanes:
        return None
    return lanes, max(1, min(SUM_CHAINS, k // (CHAIN_VECTORS * lanes)))


def _emit_partial_sums(b: ir.IRBuilder, d: DotShape, ct: PrimitiveType, lhs_ptr, rhs_ptr, bivs, mivs, nivs,
                       lanes: int, chains: int) -> ir.Value:
    """The inner product of one output element (batch, M and N indices given), as _partial_sums describes."""
    (lk,), (rk,) = d.dd.lhs_contracting, d.dd.rhs_contracting
    k = d.lhs.dims[lk]
    vty = ir.VectorType(value_type(ct), lanes)
    _, add = _arith(ct, reassoc=False)
    li, ri, _ = _indices(d, bivs, mivs, [i64(0)], nivs)
    lbase, rbase = offset_of(b, li, d.lhs.strides), offset_of(b, ri, d.rhs.strides)
    operands = ((d.lhs, lhs_ptr, lbase, d.lhs.strides[lk]), (d.rhs, rhs_ptr, rbase, d.rhs.strides[rk]))

    def vector(op: Operand, ptr, base, stride: int, at: ir.Value, count: int) -> ir.Value:
        """`count` elements of op along K from k = at (0 <= at), in the first lanes of a vector (zeros after)."""
        if stride == 1 and count == lanes:
            return _vector_load(b, op, ptr, b.add(base, at), lanes, ct)
        v = ir.Constant(vty, None)
        for j in range(count):
            offset = b.add(base, b.mul(b.add(at, i64(j)), i64(stride)))
            v = b.insert_element(v, _load_linear(b, op, ptr, offset, ct), ir.Constant(I32, j))
        return v

    def muladd(at: ir.Value, count: int, acc: ir.Value) -> ir.Value:
        """acc + lhs[k..k+count) * rhs[k..k+count) lane by lane, fused where the target has FMA at every
        optimization level (llvm.fmuladd; fmul/fadd `contract` fuse only in the optimizing instruction selector)."""
        x, y = (vector(*operand, at, count) for operand in operands)
        return call_math(b, "fmuladd", x, y, acc)
    accs = [alloca_once(b, vty) for _ in range(chains)]
    for acc in accs:
        b.store(ir.Constant(vty, None), acc)
    step = lanes * chains
    blocks, left = divmod(k, step)
    with loop_nest(b, [blocks], name="kb") as (kb,):
        first = b.mul(kb, i64(step))
        for c, acc in enumerate(accs):
            b.store(muladd(b.add(first, i64(c * lanes)), lanes, b.load(acc)), acc)
    for j in range(left // lanes):          # whole vectors left: into the chains in turn
        acc = accs[j % chains]
        b.store(muladd(i64(blocks * step + j * lanes), lanes, b.load(acc)), acc)
    if k % lanes:                            # the last products in the first lanes of the next chain (zeros after)
        acc = accs[(left // lanes) % chains]
        b.store(muladd(i64(k - k % lanes), k % lanes, b.load(acc)), acc)
    vals = [b.load(acc) for acc in accs]
    while len(vals) > 1:                     # the chains pairwise
        vals = [add(b, vals[i], vals[i + 1]) if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
    v, width = vals[0], lanes
    while width > 2:                         # the lanes: low half + high half
        width //= 2
        halves = [b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, width), list(range(at, at + width))))
                  for at in (0, width)]
        v = add(b, *halves)
    return add(b, b.extract_element(v, ir.Constant(I32, 0)), b.extract_element(v, ir.Constant(I32, 1)))


# -- a loop-invariant rhs, packed once per run of its loop ---------------------------------------------------
def packed_tile() -> int:
    """Columns per tile of a packed rhs: the width of the packed kernel's register block."""
    return loop_vector_bytes() // 4 * PACKED_VECS


def packed_floats(k: int, n: int) -> int:
    """Floats of the packed copy of a K x N rhs: every tile as wide as a full one."""
    tile = packed_tile()
    return k * -(-n // tile) * tile


def emit_packed(b: ir.IRBuilder, d: DotShape, lhs_ptr, rhs_ptr, out_ptr, region) -> None:
    """out = dot(lhs, rhs) for a rhs that stays the same while the loop around the dot runs (dot_plan's "packed"
    plan). `region` (dot_plan.packed_bytes of scratch, which the loop sets to 0 before its first iteration) holds
    the address the copy was made from, then rhs as column tiles of K x tile elements, each contiguous. The copy
    is made when that address is not rhs's, so once per run of the loop; every iteration's product reads the
    tiles in order (the vector kernel, columns outermost, PACKED_ROWS x PACKED_VECS registers)."""
    tile = packed_tile()
    key = b.bitcast(region, I64.as_pointer())
    tiles = b.bitcast(b.gep(b.bitcast(region, I8P), [i64(PACKED_HEADER)], inbounds=True), F32.as_pointer())
    address = b.ptrtoint(rhs_ptr, I64)
    with if_then(b, b.icmp_unsigned("!=", b.load(key), address), "pack"):
        (kd,), (nd,) = d.dd.rhs_contracting, d.rf
        ks, ns = d.rhs.strides[kd], d.rhs.strides[nd]
        src = b.bitcast(rhs_ptr, F32.as_pointer())
        full, rest = divmod(d.n, tile)
        for first, count, width in ((0, full, tile), (full, 1 if rest else 0, rest)):
            if not count:
                continue
            with loop_nest(b, [count, d.k, width], name="pack") as (t, k, j):
                t = b.add(t, i64(first))
                col = b.add(b.mul(t, i64(tile)), j)
                v = b.load(b.gep(src, [b.add(b.mul(k, i64(ks)), b.mul(col, i64(ns)))], inbounds=True))
                at = b.add(b.mul(b.add(b.mul(t, i64(d.k)), k), i64(tile)), j)
                b.store(v, b.gep(tiles, [at], inbounds=True))
        b.store(address, key)
    view = Operand((d.k, d.n), (tile, 1), d.rhs.ptype)
    dims = DotDims(d.dd.lhs_batch, d.dd.lhs_contracting, (), (0,))
    _emit_vector_kernel(b, DotShape(d.lhs, view, d.out, dims), compute_type(d.out.ptype), lhs_ptr, tiles, out_ptr,
                        None, packed=True)
