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
run in blocks, the edges one at a time over the taps of the last dim that read inside (known when the code is
emitted); rows skip the outer taps that fall outside. Rows are split over threads.
"""
from __future__ import annotations

import math
from contextlib import nullcontext

from .buffers import BufferRef
from .conv_simd import FLOAT_TYPES, Vectors, outer_taps, tiles, unflatten, valid_range
from .conv_taps import ConvGeometry
from .irhelpers import alloca_once, for_range, i64, if_then, loop_nest
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

    def pixels(n, o_outer, f0, widths, o0, count: int, taps: tuple[int, int]) -> None:
        """`count` consecutive outputs of the last dim from o0, every one reading inside the input at the last
        dim's taps [taps[0], taps[1]); output features f0 + the chunks `widths`."""
        chunks, at = [], 0
        for w in widths:
            chunks.append((at, w))
            at += w
        slots = [[alloca_once(b, v.ty(w), "cvv.acc") for _, w in chunks] for _ in range(count)]
        for row in slots:
            for slot, (_, w) in zip(row, chunks):
                b.store(v.zero(w), slot)
        with loop_nest(b, list(g.kernel_sizes[:-1]), name="cvk") as k_outer:
            ok, lbase, rbase = outer_taps(b, g, o_outer, k_outer, b.mul(n, i64(sb)), f0, ssp, rsp)
            with (if_then(b, ok, "cvv.row") if ok is not None else nullcontext()):

                def tap(k, c) -> None:
                    wbase = b.add(b.add(rbase, b.mul(k, i64(rsp[last]))), b.mul(c, i64(rc)))
                    ws = [v.load(rp, b.add(wbase, i64(off)), w) for off, w in chunks]
                    for j, row in enumerate(slots):
                        p = b.sub(b.add(b.mul(b.add(o0, i64(j)), i64(wl.stride)), b.mul(k, i64(wl.window_dilation))),
                                  i64(wl.padding_low))
                        x = v.load(lp, b.add(lbase, b.add(b.mul(p, i64(ssp[last])), b.mul(c, i64(sf)))), 1)
                        for slot, (_, w), wv in zip(row, chunks, ws):
                            b.store(v.mul_add(b.load(slot), v.splat(x, w), wv), slot)

                first, end = taps
                if end - first <= UNROLLED_TAPS:      # c outermost, the last dim's taps unrolled
                    with for_range(b, g.kernel_in, "cvc") as c:
                        for k in range(first, end):
                            tap(i64(k), c)
                elif end > first:
                    with loop_nest(b, [end - first, g.kernel_in], name="cvt") as (k, c):
                        tap(b.add(k, i64(first)), c)
        obase = b.add(b.mul(n, i64(ob)), f0)
        for o, s in zip(o_outer, osp):
            obase = b.add(obase, b.mul(o, i64(s)))
        for j, row in enumerate(slots):
            at = b.add(obase, b.mul(b.add(o0, i64(j)), i64(osp[last])))
            for slot, (off, w) in zip(row, chunks):
                v.store(op, b.add(at, i64(off)), b.load(slot), w)

    def tile(n, o_outer, f0, widths) -> None:
        every = (0, g.kernel_sizes[last])
        for o in [*range(lo), *range(max(hi, lo), g.out_sizes[last])]:     # edges: their taps known here
            pixels(n, o_outer, f0, widths, i64(o), 1,
                   valid_range(o * wl.stride - wl.padding_low, wl.window_dilation, g.in_sizes[last], every[1]))
        blocks, rest = divmod(hi - lo, O_BLOCK)
        if blocks:
            with for_range(b, blocks, "cvvb") as blk:
                pixels(n, o_outer, f0, widths, b.add(i64(lo), b.mul(blk, i64(O_BLOCK))), O_BLOCK, every)
        if rest:
            pixels(n, o_outer, f0, widths, i64(lo + blocks * O_BLOCK), rest, every)

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
