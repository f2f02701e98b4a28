"""A depthwise convolution (and its input gradient, the same with the kernel reversed), vectorized over channels.

feature_group_count = the input features = the output features (one channel per group, multiplier 1), the
channels the unit-stride dim of the input, kernel and output (canonical b01f_01io->b01f):

    out[n, o, g] = sum over taps k of lhs[n, p(o, k), g] * rhs[k, g],   p = o*stride + k*window_dilation - pad_low

The loops: for each row (n and every output dim but the last), each tile of channels (one SIMD vector, then
narrower ones for the rest), each block of up to O_BLOCK consecutive outputs of the last dim:

    acc[j] = 0 for the block's outputs j; for each tap k: w = rhs[k, tile]; acc[j] += lhs[n, p(o_j, k), tile] * w

so the accumulators stay in registers and a kernel vector serves the whole block. The outputs whose every tap
reads inside the input (the interior) run in blocks without checks (conv_simd.interior_blocks); the edges one at
a time in one loop over the taps that read inside (computed at run time: conv_simd.edge_outputs,
valid_range_at). Rows are split over threads. conv_emitter's direct loops take the rest (multipliers,
base dilation, window reversal, narrow floats, integers).
"""
from __future__ import annotations

import math

from llvmlite import ir

from .buffers import BufferRef
from .conv_simd import (FLOAT_TYPES, Vectors, outer_taps, plus, row_outputs, scaled, tiles, unflatten,
                        valid_range)
from .conv_taps import ConvGeometry
from .irhelpers import alloca_once, for_range, i64, if_then
from .parallel import chunk_bounds, parallel_for, task_count

O_BLOCK = 6          # accumulators per tile and block (with the kernel vector and a load: registers to spare)
EXACT_BLOCK = 7      # the most when that many make whole blocks (_block): 9 vector registers of AVX2's 16
UNROLLED_TAPS = 8    # a last kernel dim this small is unrolled (the loads' offsets become constants)


def applies(g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    types = {lhs.shape.ptype.name, rhs.shape.ptype.name, out.shape.ptype.name}
    return (g.depthwise and g.per_group == 1 and len(types) == 1 and types <= set(FLOAT_TYPES)
            and g.lhs_strides[1] == 1 and g.rhs_strides[1] == 1 and g.out_strides[1] == 1 and len(g.out_sizes) >= 1
            and all(w.base_dilation == 1 and not w.window_reversal for w in g.window))


def _interior(g: ConvGeometry) -> tuple[int, int]:
    """[lo, hi): the outputs of the last dim whose every tap reads inside the input."""
    w, size, taps, outs = g.window[-1], g.in_sizes[-1], g.kernel_sizes[-1], g.out_sizes[-1]
    inside = [o for o in range(outs) if valid_range(o * w.stride - w.padding_low, w.window_dilation, size, taps)
              == (0, taps)]
    if not inside:
        return 0, 0
    return inside[0], inside[-1] + 1       # an interval: p grows with o


def _block(interior: int) -> int:
    """Outputs per block for an interior of `interior` outputs: a divisor of it up to EXACT_BLOCK when there is one
    above O_BLOCK // 2 (whole blocks: one copy of the block code, no remainder block), else O_BLOCK. A remainder
    block was a second copy of the block code, the costliest part of the kernel for LLVM: mobilenetv2/fwd's
    depthwise 3x3/2 over 16 outputs (2 blocks of 6 and one of 4) 495 -> 278 lines as 4 blocks of 4."""
    exact = [k for k in range(min(EXACT_BLOCK, interior), O_BLOCK // 2, -1) if interior % k == 0]
    return exact[0] if exact else O_BLOCK


def emit(em, inst, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> None:
    b = em.b
    v = Vectors(b, out.shape.ptype)
    lp, rp, op = v.typed(lhs.pointer), v.typed(rhs.pointer), v.typed(out.pointer)
    sb, _, *ssp = g.lhs_strides
    rsp = g.rhs_strides[2:]
    ob, _, *osp = g.out_strides
    last = len(g.out_sizes) - 1
    wl = g.window[last]
    channels = g.out_features
    row_sizes = [g.batch, *g.out_sizes[:-1]]
    lo, hi = _interior(g)
    block = _block(hi - lo)
    x_step, x_tap, w_tap = wl.stride * ssp[last], wl.window_dilation * ssp[last], rsp[last]

    def pixels(n, o_outer, first_ch, width, o0, count: int, taps: tuple) -> None:
        """`count` consecutive outputs of the last dim from o0, one channel tile, every one reading inside the
        input at the last dim's taps [taps[0], taps[1]) (ints, or i64 values known at run time)."""
        slots = [alloca_once(b, v.ty(width), "dwf.acc") for _ in range(count)]
        for slot in slots:
            b.store(v.zero(width), slot)
        obase = b.add(first_ch, b.mul(n, i64(ob)))
        for o, s in zip(o_outer, osp):
            obase = b.add(obase, b.mul(o, i64(s)))
        lrow = b.add(b.mul(n, i64(sb)), first_ch)
        with outer_taps(b, g, o_outer, lrow, first_ch, ssp, rsp, "dwk") as (lbase, rbase):
            xo = b.add(lbase, scaled(b, plus(b, scaled(b, o0, wl.stride), -wl.padding_low), ssp[last]))

            def tap(xk, wk) -> None:
                """One tap: the input at element offset xk (+ each output's step), the kernel at wk."""
                wv = v.load(rp, wk, width)
                for j, slot in enumerate(slots):
                    x = v.load(lp, plus(b, xk, j * x_step), width)
                    b.store(v.mul_add(b.load(slot), x, wv), slot)

            first, end = taps
            if isinstance(first, int) and end - first <= UNROLLED_TAPS:   # constant offsets: an FMA each
                for k in range(first, end):
                    tap(plus(b, xo, k * x_tap), plus(b, rbase, k * w_tap))
            elif g.kernel_sizes[last] <= UNROLLED_TAPS:   # run-time taps: still unrolled, each checked (an edge
                for k in range(g.kernel_sizes[last]):    # output is one FMA chain: no loop exit to mispredict)
                    inside = b.and_(b.icmp_signed("<=", first, i64(k)), b.icmp_signed(">", end, i64(k)))
                    with if_then(b, inside, "dwf.in"):
                        tap(plus(b, xo, k * x_tap), plus(b, rbase, k * w_tap))
            else:
                with for_range(b, end, "dwkl", start=first) as k:
                    tap(b.add(xo, scaled(b, k, x_tap)), b.add(rbase, scaled(b, k, w_tap)))
        at = b.add(obase, b.mul(o0, i64(osp[last])))
        for j, slot in enumerate(slots):
            v.store(op, plus(b, at, j * osp[last]), b.load(slot), width)

    def tile(n, o_outer, first_ch, width) -> None:
        row_outputs(b, lo, hi, block, wl, g.in_sizes[last], g.kernel_sizes[last], g.out_sizes[last],
                    lambda o0, count, taps: pixels(n, o_outer, first_ch, width, o0, count, taps), "dwf")

    def rows(b_, start, end, task=None) -> None:
        with for_range(b, end, "dwfr", start=start) as row:
            n, *o_outer = unflatten(b, row, row_sizes)
            full = channels // v.lanes
            if full:
                with for_range(b, full, "dwfc") as t:
                    tile(n, o_outer, b.mul(t, i64(v.lanes)), v.lanes)
            for first, width in tiles(channels, v.lanes)[full:]:
                tile(n, o_outer, i64(first), width)

    total = math.prod(row_sizes)
    tasks = min(task_count(inst, em.num_threads), total)
    if not (tasks > 1 and parallel_for(b, chunk_bounds(total, tasks, 1), rows, quantum=1)):
        rows(b, i64(0), i64(total))

