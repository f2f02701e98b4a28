"""A convolution with few output features, vectorized over them: no patch matrix and no BLAS packing.

For ungrouped f32/f64 convolutions whose input features are the unit-stride dim of the input and whose output
features are that of the kernel and the output (canonical b01f_01io->b01f), at most MAX_FEATURES of them (or
WIDE_FEATURES when each output sums at most SHORT_SUM products), and windows of at most MAX_TAPS taps (forward
convolutions and input gradients, not filter gradients):

    out[n, o, f] = sum over taps k and input features c of lhs[n, p(o, k), c] * rhs[k, c, f]

The loops: for each row (n and every output dim but the last), each tile of output features (VECS SIMD vectors,
then narrower ones), each block of up to O_BLOCK consecutive outputs of the last dim:

    acc[j][v] = 0; for each tap k and input feature c: w[v] = rhs[k, c, tile v];  x = lhs[n, p(o_j, k), c]
                   acc[j][v] += broadcast(x) * w[v]   for the block's outputs j and the tile's vectors v

The im2col + GEMM path copies every window into a patch matrix that BLAS then packs again; with 16 output
features each patch element serves 16 multiply-adds, so both copies cost more than the multiplies (ResNet-50's
stem: 2.0 ms, 64% of it in the copies; 0.54 ms here). Fewer features than a vector's lanes still win: the stem's
input gradient (phases with 3 output features, which BLAS runs as an N = 3 GEMM) went from 3.9 to 2.6 ms, and a
1x1 input gradient's K = 16 GEMM (MobileNetV2's pointwise 48->16: 48 features) from 0.31 to 0.25 ms. Here
the input is read in place, and the kernel tile stays in L1. The interior outputs (every tap inside the input)
run in blocks (conv_simd.interior_blocks), the edges (and one leftover interior output) one at a time in one loop
over the taps of the last dim that read inside (computed at run time: conv_simd.edge_outputs, valid_range_at); rows
loop over the outer taps that read inside (conv_simd.outer_taps). Rows are split over threads.
"""
from __future__ import annotations

import math

from .buffers import BufferRef
from .conv_simd import (FLOAT_TYPES, Vectors, outer_taps, plus, row_outputs, scaled, tiles, unflatten,
                        valid_range)
from .conv_taps import ConvGeometry
from .irhelpers import alloca_once, for_range, i64, if_then
from .parallel import chunk_bounds, parallel_for, task_count

MAX_FEATURES = 32    # more output features: BLAS's blocking wins
WIDE_FEATURES = 64   # ... unless the sums are short (3x3 64->64, 576 products each: the GEMM is 1.3x faster)
SHORT_SUM = 32
MAX_TAPS = 64        # larger windows (a filter gradient's, as large as the image): few outputs, long sums, GEMM
O_BLOCK = 4          # outputs per block: O_BLOCK x VECS accumulators, VECS kernel vectors and a broadcast
VECS = 2
UNROLLED_TAPS = 8    # a last kernel dim this small is unrolled (constant offsets)


def applies(g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    types = {lhs.shape.ptype.name, rhs.shape.ptype.name, out.shape.ptype.name}
    short = math.prod(g.kernel_sizes) * g.kernel_in <= SHORT_SUM
    return (g.groups == 1 and g.out_features <= (WIDE_FEATURES if short else MAX_FEATURES) and len(types) == 1
            and types <= set(FLOAT_TYPES) and g.lhs_strides[1] == 1 and g.rhs_strides[1] == 1 and g.out_strides[1] == 1
            and len(g.out_sizes) >= 1 and math.prod(g.kernel_sizes) <= MAX_TAPS
            and all(w.base_dilation == 1 and not w.window_reversal for w in g.window))


def _interior(g: ConvGeometry) -> tuple[int, int]:
    """[lo, hi): the outputs of the last dim whose every tap reads inside the input (an interval)."""
    w, size, taps, outs = g.window[-1], g.in_sizes[-1], g.kernel_sizes[-1], g.out_sizes[-1]
    inside = [o for o in range(outs)
              if valid_range(o * w.stride - w.padding_low, w.window_dilation, size, taps) == (0, taps)]
    return (inside[0], inside[-1] + 1) if inside else (0, 0)


def emit(em, inst, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> None:
    b = em.b
    v = Vectors(b, out.shape.ptype)
    lp, rp, op = v.typed(lhs.pointer), v.typed(rhs.pointer), v.typed(out.pointer)
    sb, sf, *ssp = g.lhs_strides
    rc, _, *rsp = g.rhs_strides
    ob, _, *osp = g.out_strides
    last = len(g.out_sizes) - 1
    wl = g.window[last]
    row_sizes = [g.batch, *g.out_sizes[:-1]]
    lo, hi = _interior(g)
    tile_width = v.lanes * VECS
    x_step, x_tap, w_tap = wl.stride * ssp[last], wl.window_dilation * ssp[last], rsp[last]

    def pixels(n, o_outer, f0, widths, o0, count: int, taps: tuple) -> None:
        """`count` consecutive outputs of the last dim from o0, every one reading inside the input at the last
        dim's taps [taps[0], taps[1]) (ints, or i64 values known at run time); output features f0 + the chunks
        `widths`."""
        chunks, at = [], 0
        for w in widths:
            chunks.append((at, w))
            at += w
        slots = [[alloca_once(b, v.ty(w), "cvv.acc") for _, w in chunks] for _ in range(count)]
        for row in slots:
            for slot, (_, w) in zip(row, chunks):
                b.store(v.zero(w), slot)
        with outer_taps(b, g, o_outer, b.mul(n, i64(sb)), f0, ssp, rsp, "cvk") as (lbase, rbase):
            xo = b.add(lbase, scaled(b, plus(b, scaled(b, o0, wl.stride), -wl.padding_low), ssp[last]))

            def tap(xk, wk) -> None:
                """One tap and input feature: the input at element offset xk (+ each output's step), the
                kernel at wk."""
                ws = [v.load(rp, plus(b, wk, off), w) for off, w in chunks]
                for j, row in enumerate(slots):
                    x = v.load(lp, plus(b, xk, j * x_step), 1)
                    splats = {}
                    for slot, (_, w), wv in zip(row, chunks, ws):
                        xs = splats.setdefault(w, v.splat(x, w))
                        b.store(v.mul_add(b.load(slot), xs, wv), slot)

            first, end = taps
            ksize = g.kernel_sizes[last]
            if isinstance(first, int) and end - first <= UNROLLED_TAPS:   # c outermost, the taps unrolled
                with for_range(b, g.kernel_in, "cvc") as c:
                    xc, wc = b.add(xo, scaled(b, c, sf)), b.add(rbase, scaled(b, c, rc))
                    for k in range(first, end):
                        tap(plus(b, xc, k * x_tap), plus(b, wc, k * w_tap))
            elif not isinstance(first, int) and ksize <= UNROLLED_TAPS:
                # run-time taps: still c outermost and the taps unrolled, each under a check that is the same for
                # every c (predicted), so an edge output's one FMA chain has no short loop exits to mispredict
                inside = [b.and_(b.icmp_signed("<=", first, i64(k)), b.icmp_signed(">", end, i64(k)))
                          for k in range(ksize)]
                with for_range(b, g.kernel_in, "cvc") as c:
                    xc, wc = b.add(xo, scaled(b, c, sf)), b.add(rbase, scaled(b, c, rc))
                    for k in range(ksize):
                        with if_then(b, inside[k], "cvv.in"):
                            tap(plus(b, xc, k * x_tap), plus(b, wc, k * w_tap))
            elif not isinstance(first, int) or end > first:                # k outermost
                with for_range(b, end, "cvt", start=first) as k:
                    xk, wk = b.add(xo, scaled(b, k, x_tap)), b.add(rbase, scaled(b, k, w_tap))
                    with for_range(b, g.kernel_in, "cvc") as c:
                        tap(b.add(xk, scaled(b, c, sf)), b.add(wk, scaled(b, c, rc)))
        obase = b.add(b.mul(n, i64(ob)), f0)
        for o, s in zip(o_outer, osp):
            obase = b.add(obase, b.mul(o, i64(s)))
        obase = b.add(obase, b.mul(o0, i64(osp[last])))
        for j, row in enumerate(slots):
            for slot, (off, w) in zip(row, chunks):
                v.store(op, plus(b, obase, j * osp[last] + off), b.load(slot), w)

    def tile(n, o_outer, f0, widths) -> None:
        row_outputs(b, lo, hi, O_BLOCK, wl, g.in_sizes[last], g.kernel_sizes[last], g.out_sizes[last],
                    lambda o0, count, taps: pixels(n, o_outer, f0, widths, o0, count, taps), "cvv")

    def rows(b_, start, end, task=None) -> None:
        with for_range(b, end, "cvvr", start=start) as row:
            n, *o_outer = unflatten(b, row, row_sizes)
            full = g.out_features // tile_width
            if full:
                with for_range(b, full, "cvvf") as t:
                    tile(n, o_outer, b.mul(t, i64(tile_width)), [v.lanes] * VECS)
            tail = [w for _, w in tiles(g.out_features - full * tile_width, v.lanes)]
            if tail:
                tile(n, o_outer, i64(full * tile_width), tail)

    total = math.prod(row_sizes)
    tasks = min(task_count(inst, em.num_threads), total)
    if not (tasks > 1 and parallel_for(b, chunk_bounds(total, tasks, 1), rows, quantum=1)):
        rows(b, i64(0), i64(total))
