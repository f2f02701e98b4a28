"""A convolution with few output features, vectorized over them: no patch matrix and no BLAS packing.

For ungrouped f32/f64 convolutions whose input features are the unit-stride dim of the input and whose output
features are that of the kernel and the output (canonical b01f_01io->b01f), at most MAX_FEATURES of them (or
WIDE_FEATURES when each output sums at most SHORT_SUM products), and windows of at most MAX_TAPS taps (forward
convolutions and input gradients, not filter gradients):

    out[n, o, f] = sum over taps k and input features c of lhs[n, p(o, k), c] * rhs[k, c, f]

The loops: for each row (n and every output dim but the last), each tile of output features (VECS SIMD vectors,
then narrower ones), each block of outputs_per_block() (or fewer) consecutive outputs of the last dim:

    acc[j][v] = 0; for each tap k and input feature c: w[v] = rhs[k, c, tile v];  x = lhs[n, p(o_j, k), c]
                   acc[j][v] += broadcast(x) * w[v]   for the block's outputs j and the tile's vectors v

The sum runs in blocks, one per position of the outer kernel dims (a 3x3 kernel's row: 3 taps x the input
features), each in fresh accumulators added to the block's total after it: one run of 288 products (3x3, 32
features) rounds its partial sum 288 times in a row, three runs of 96 and two adds about a third as often (unet/fwd's
32-feature 3x3 convolutions were 1.1-1.2x XLA:CPU's rms error).

The im2col + GEMM path copies every window into a patch matrix that BLAS then packs again; with 16 output
features each patch element serves 16 multiply-adds, so both copies cost more than the multiplies (ResNet-50's
stem: 2.0 ms, 64% of it in the copies; 0.54 ms here). Fewer features than a vector's lanes still win: the stem's
input gradient (phases with 3 output features, which BLAS runs as an N = 3 GEMM) went from 3.9 to 2.6 ms, and a
1x1 input gradient's K = 16 GEMM (MobileNetV2's pointwise 48->16: 48 features) from 0.31 to 0.25 ms. Here
the input is read in place, and the kernel tile stays in L1.

One copy of the block code serves every output: a row's last dim is whole blocks (conv_simd.block_size picks a
divisor of the row's outputs, so usually no remainder block), and a block some of whose taps read the padding
(an edge block) reads a strip instead of the input: the columns its taps read, zeros outside, copied for the
row's outer taps into a buffer of the thread's own (`_Strip`), so that its taps all read inside. The block's
source (pointer, offset, outer tap strides) is chosen by selects before its loops. The outer dims' taps loop over
the range that reads inside (conv_simd.outer_positions). More than MAX_STRIPS edge blocks (padding wider than
blocks), strips over STRIP_BYTES, or an input whose last dim is not directly outside its features: the whole input
is copied padded first (conv_simd.padded_input). Where the edges ran one output at a time with their taps checked at run time
(edge_outputs, a second and third copy of the block code that LLVM unswitched further), unet/fwd's five conv_vector
kernels take 0.58x the LLVM time, and run 0.77-1.03x the time (edge blocks at block speed; a strip costs a row's
worth of copies). Rows are split over threads.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .buffers import BufferRef
from .conv_simd import (FLOAT_TYPES, Vectors, block_size, interior_blocks, outer_positions, padded_input, plus, scaled,
                        tiles, unflatten)
from .conv_taps import ConvGeometry
from .irhelpers import alloca_once, for_range, i64
from .parallel import chunk_bounds, parallel_for, task_count
from .vector_width import loop_vector_bytes

MAX_FEATURES = 32    # more output features: BLAS's blocking wins
WIDE_FEATURES = 64   # ... unless the sums are short (3x3 64->64, 576 products each: the GEMM is 1.3x faster)
SHORT_SUM = 32
MAX_TAPS = 64        # larger windows (a filter gradient's, as large as the image): few outputs, long sums, GEMM
O_BLOCK = 4          # outputs per block: O_BLOCK x VECS accumulators, VECS kernel vectors and a broadcast ...
WIDE_O_BLOCK = 8     # ... 8 with AVX-512's 32 registers (below)
VECS = 2
UNROLLED_TAPS = 8    # a last kernel dim this small is unrolled (constant offsets)
MAX_STRIPS = 4       # edge blocks with a strip of their own; more (padding wider than blocks): the input padded whole
STRIP_BYTES = 1 << 18  # strips live on the thread's stack; larger (thousands of input features): the input padded


def applies(g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    types = {lhs.shape.ptype.name, rhs.shape.ptype.name, out.shape.ptype.name}
    short = math.prod(g.kernel_sizes) * g.kernel_in <= SHORT_SUM
    return (g.groups == 1 and g.out_features <= (WIDE_FEATURES if short else MAX_FEATURES) and len(types) == 1
            and types <= set(FLOAT_TYPES) and g.lhs_strides[1] == 1 and g.rhs_strides[1] == 1 and g.out_strides[1] == 1
            and len(g.out_sizes) >= 1 and math.prod(g.kernel_sizes) <= MAX_TAPS
            and all(w.base_dilation == 1 and not w.window_reversal for w in g.window))


def outputs_per_block() -> int:
    """Outputs per block. A feature tile of one vector keeps O_BLOCK accumulator chains, too few to hide the FMA's
    latency on two FMA ports; with AVX-512's 32 registers 8 outputs (16 accumulators for a 2-vector tile) fit:
    one thread, thread time, 16 features: MobileNetV2's pointwise 48 -> 16 137 -> 113 us, 1x1 64 -> 16 45 -> 32 us,
    3x3 16 -> 16 85 -> 64 us; 3x3 32 -> 32 245 -> 213 us (16 outputs per block: slower again, the stem 1.2-1.5x)."""
    return WIDE_O_BLOCK if loop_vector_bytes() >= 64 else O_BLOCK


def edge_blocks(g: ConvGeometry, block: int) -> list[tuple[int, int]]:
    """(first output, count) of each block of the last dim (whole blocks of `block`, then the rest) some of whose
    taps read outside the input."""
    w, size, taps, outs = g.window[-1], g.in_sizes[-1], g.kernel_sizes[-1], g.out_sizes[-1]
    blocks = [(o0, min(block, outs - o0)) for o0 in range(0, outs, block)]
    return [(o0, n) for o0, n in blocks if o0 * w.stride - w.padding_low < 0
            or (o0 + n - 1) * w.stride + (taps - 1) * w.window_dilation - w.padding_low >= size]


class _Strip:
    """An edge block's input: the columns its taps read (zeros outside the input), for every outer tap, in a
    buffer of its own, [outer taps, columns, input features]."""

    def __init__(self, g: ConvGeometry, o0: int, count: int):
        w, size, last = g.window[-1], g.in_sizes[-1], len(g.out_sizes) - 1
        self.o0, self.count = o0, count
        self.col = o0 * w.stride - w.padding_low                     # the input column of the strip's column 0
        self.cols = (count - 1) * w.stride + (g.kernel_sizes[-1] - 1) * w.window_dilation + 1
        lo = min(max(0, -self.col), self.cols)
        self.inside = (lo, max(lo, min(self.cols, size - self.col)))   # the columns [lo, hi) inside the input
        self.k_strides, at = [], self.cols * g.in_features
        for k in reversed(g.kernel_sizes[:last]):
            self.k_strides.insert(0, at)
            at *= k
        self.elements = at


def emit(em, inst, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> None:
    b = em.b
    v = Vectors(b, out.shape.ptype)
    last = len(g.out_sizes) - 1
    block = block_size(g.out_sizes[last], outputs_per_block())
    edges = edge_blocks(g, block)
    source = lhs.pointer
    strips = [_Strip(g, o0, count) for o0, count in edges]
    if len(edges) > MAX_STRIPS or (edges and g.lhs_strides[2 + last] != g.in_features) \
            or sum(strip.elements for strip in strips) * v.elem_bytes > STRIP_BYTES:
        source, g = padded_input(em, g, source, v.elem_bytes)          # every output's taps read inside the copy
        strips = []
    lp, rp, op = v.typed(source), v.typed(rhs.pointer), v.typed(out.pointer)
    sb, sf, *ssp = g.lhs_strides
    rc, _, *rsp = g.rhs_strides
    ob, _, *osp = g.out_strides
    wl = g.window[last]
    row_sizes = [g.batch, *g.out_sizes[:-1]]
    tile_width = v.lanes * VECS
    x_step, x_tap, w_tap = wl.stride * ssp[last], wl.window_dilation * ssp[last], rsp[last]
    k_strides = [w.window_dilation * s for w, s in zip(g.window, ssp)]

    def row_base(n, o_outer) -> ir.Value:
        """The input offset of output row (n, o_outer)'s outer taps 0 (before the last dim's)."""
        at = b.mul(n, i64(sb))
        for d, o in enumerate(o_outer):
            at = b.add(at, scaled(b, plus(b, scaled(b, o, g.window[d].stride), -g.window[d].padding_low), ssp[d]))
        return at

    def fill(n, o_outer, buffers) -> None:
        """Each strip's columns inside the input, for the outer taps that read inside, copied from row (n, o_outer)."""
        src = row_base(n, o_outer)
        with outer_positions(b, g, o_outer, "cvs") as ks:
            for k, step in zip(ks, k_strides):
                src = b.add(src, scaled(b, k, step))
            for strip, buffer in zip(strips, buffers):
                lo, hi = strip.inside
                if hi > lo:
                    at = i64(lo * g.in_features)
                    for k, step in zip(ks, strip.k_strides):
                        at = b.add(at, scaled(b, k, step))
                    v.copy(b.gep(buffer, [at]), b.gep(lp, [plus(b, src, (strip.col + lo) * ssp[last])]),
                           (hi - lo) * g.in_features)

    def source_of(o0, count: int, n, o_outer, buffers):
        """(pointer, offset of the block's outer taps 0, stride of each outer tap) of the block from output o0:
        its strip for an edge block, else the input."""
        at = b.add(row_base(n, o_outer), scaled(b, plus(b, scaled(b, o0, wl.stride), -wl.padding_low), ssp[last]))
        pointer, steps = lp, [i64(s) for s in k_strides]
        known = getattr(o0, "constant", None)
        for strip, buffer in zip(strips, buffers):
            if strip.count != count:
                continue
            if known is not None:
                if known == strip.o0:
                    return buffer, i64(0), [i64(s) for s in strip.k_strides]
                continue
            mine = b.icmp_unsigned("==", o0, i64(strip.o0))
            pointer, at = b.select(mine, buffer, pointer), b.select(mine, i64(0), at)
            steps = [b.select(mine, i64(t), s) for t, s in zip(strip.k_strides, steps)]
        return pointer, at, steps

    def pixels(n, o_outer, f0, widths, o0, count: int, source) -> None:
        """`count` consecutive outputs of the last dim from o0 (every tap reads inside `source`: pointer, offset of
        the outer taps 0, their strides); output features f0 + the chunks `widths`."""
        pointer, base, steps = source
        chunks, at = [], 0
        for w in widths:
            chunks.append((at, w))
            at += w
        def zeroed(name):
            out = [[alloca_once(b, v.ty(w), name) for _, w in chunks] for _ in range(count)]
            for row in out:
                for slot, (_, w) in zip(row, chunks):
                    b.store(v.zero(w), slot)
            return out
        totals = zeroed("cvv.acc")
        with outer_positions(b, g, o_outer, "cvk") as ks:
            slots = zeroed("cvv.part")      # this outer tap's sum, added to the total after it (K in blocks)
            xo = base
            rbase = f0
            for k, step, rs in zip(ks, steps, rsp):
                xo, rbase = b.add(xo, b.mul(k, step)), b.add(rbase, scaled(b, k, rs))

            def tap(xk, wk) -> None:
                """One tap and input feature: the input at element offset xk (+ each output's step), the
                kernel at wk."""
                ws = [v.load(rp, plus(b, wk, off), w) for off, w in chunks]
                for j, row in enumerate(slots):
                    x = v.load(pointer, plus(b, xk, j * x_step), 1)
                    splats = {}
                    for slot, (_, w), wv in zip(row, chunks, ws):
                        if w not in splats:
                            splats[w] = v.splat(x, w)
                        b.store(v.mul_add(b.load(slot), splats[w], wv), slot)

            ksize = g.kernel_sizes[last]
            if ksize <= UNROLLED_TAPS:                                      # c outermost, the taps unrolled
                with for_range(b, g.kernel_in, "cvc") as c:
                    xc, wc = b.add(xo, scaled(b, c, sf)), b.add(rbase, scaled(b, c, rc))
                    for k in range(ksize):
                        tap(plus(b, xc, k * x_tap), plus(b, wc, k * w_tap))
            else:                                                           # k outermost
                with for_range(b, ksize, "cvt") as k:
                    xk, wk = b.add(xo, scaled(b, k, x_tap)), b.add(rbase, scaled(b, k, w_tap))
                    with for_range(b, g.kernel_in, "cvc") as c:
                        tap(b.add(xk, scaled(b, c, sf)), b.add(wk, scaled(b, c, rc)))
            for row, parts in zip(totals, slots):
                for total, part in zip(row, parts):
                    b.store(b.fadd(b.load(total), b.load(part)), total)
        obase = b.add(b.mul(n, i64(ob)), f0)
        for o, s in zip(o_outer, osp):
            obase = b.add(obase, b.mul(o, i64(s)))
        obase = b.add(obase, b.mul(o0, i64(osp[last])))
        for j, row in enumerate(totals):
            for slot, (off, w) in zip(row, chunks):
                v.store(op, plus(b, obase, j * osp[last] + off), b.load(slot), w)

    def tile(n, o_outer, f0, widths, buffers) -> None:
        for o0, count in interior_blocks(b, 0, g.out_sizes[last], block, "cvvb"):
            pixels(n, o_outer, f0, widths, o0, count, source_of(o0, count, n, o_outer, buffers))

    def rows(b_, start, end, task=None) -> None:
        buffers = []
        for strip in strips:
            buffer = b.bitcast(alloca_once(b, ir.ArrayType(v.st, strip.elements), "cvv.strip"), v.st.as_pointer())
            v.zero_fill(buffer, strip.elements)                  # the columns outside the input stay zero
            buffers.append(buffer)
        with for_range(b, end, "cvvr", start=start) as row:
            n, *o_outer = unflatten(b, row, row_sizes)
            if strips:
                fill(n, o_outer, buffers)
            full = g.out_features // tile_width
            if full:
                with for_range(b, full, "cvvf") as t:
                    tile(n, o_outer, b.mul(t, i64(tile_width)), [v.lanes] * VECS, buffers)
            tail = [w for _, w in tiles(g.out_features - full * tile_width, v.lanes)]
            if tail:
                tile(n, o_outer, i64(full * tile_width), tail, buffers)

    total = math.prod(row_sizes)
    tasks = min(task_count(inst, em.num_threads), total)
    if not (tasks > 1 and parallel_for(b, chunk_bounds(total, tasks, 1), rows, quantum=1)):
        rows(b, i64(0), i64(total))
