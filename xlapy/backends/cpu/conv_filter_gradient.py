"""A filter gradient with few output features, vectorized over them: the reduction outermost, accumulators for a
block of result pixels kept in registers over a row of it, no patch matrix and no BLAS packing.

For ungrouped f32/f64 convolutions whose output features are the unit-stride dim of the kernel (the output
gradient) and of the result, at most MAX_FEATURES of them, and windows of more than conv_vector.MAX_TAPS taps
(a filter gradient's window is the forward output, as large as the image; conv_canonicalization's
filter-gradient form f01b_i01o->01bf):

    out[b, q, f] = sum over c, t of lhs[b, c, p(q, t)] * rhs[c, t, f],   p = q*stride + t*window_dilation - pad_low

b: result batch (the forward input features), c: kernel input features (the forward batch), t: kernel taps (the
forward output positions), q: result positions (the forward kernel taps, a handful), f: output features. As a
GEMM it is [b q] x [c t] times [c t] x [f] with a long K: ResNet-50's stem is 147 x 8192 x 16, which the GEMM
path ran as a 1.2 MB patch matrix packed again by BLAS for 16 columns. The loops:

    for each panel of rows (a row: c and every t dim but the last; PANEL_BYTES of rhs and lhs), each tile of features
    (VECS vectors, then narrower ones), each block of result pixels (b, q) (block_vectors() accumulators in all):
        load the block's accumulators, then for each row of the panel, over the last t dim:
            r[v] = rhs[c, t, tile v];  acc[j][v] += broadcast(lhs[b_j, c, p(q_j, t)]) * r[v]  for the block's j
        store them back

A panel of rhs serves every block from L1, and each lhs element loaded serves a tile's vectors. Blocks are
consecutive result pixels in a loop, aligned where they can be (aligned_block: each pixel at a constant offset from
the block's first, so one base register for the block's lhs reads), else any block (its pixels' offsets and ranges
computed once per block and panel), so the code stays one block's size whatever the result (ResNet-50's stem: 25 blocks; emitting each
block apart ran ~15% faster but compiled 3.7 s instead of 0.7 s). The last t dim runs unchecked where every
pixel of the block reads inside the input, with a check per pixel at the edges (both edges in one loop, which is
the whole row where some pixel reads outside; the full feature tiles in a loop: one copy of the code each).
When some tap reads the padding and the input's batch or features are unit-stride, the input is first copied
padded (conv_simd.padded_input: every tap then reads inside, so only the unchecked sweep is emitted; the copy is
one pass over an input each element of which serves a tile's vectors at every result position): unet/train's five
such filter gradients 0.55x the LLVM time (1107 -> 672 lines the largest) and 0.74-1.03x the run time.
Rows are split over threads, each chunk summing into its own partial result, added in chunk order
(conv_simd.split_rows); where the copy's outer dim is c (an NHWC input's images: the stem), the chunks are whole c
and each copies the images it reads (conv_simd.PaddedInput.emit_copy), so the threads share the copy (~16 of the
stem's ~250 us one thread) instead of one making it before the others start. The unchecked sweeps over a range of
taps known when emitted run UNROLL taps per iteration (_unroll: 0.83-0.91x the time).

ResNet-50's stem filter gradient, one thread: 1.4-1.7 ms through the forward form's GEMM, ~0.5 ms here; the
pointwise 48->16 0.27 -> 0.19 ms (time.thread_time, loaded machine).
"""
from __future__ import annotations

import math

from llvmlite import ir
from contextlib import nullcontext

from .buffers import BufferRef
from .conv_simd import (FLOAT_TYPES, PaddedInput, Vectors, plus, reads_outside, split_rows, tiles, unflatten,
                        valid_range)
from .conv_taps import ConvGeometry
from .conv_vector import MAX_TAPS
from .irhelpers import alloca_once, for_range, i64, if_then
from .parallel import task_count
from .vector_width import loop_vector_bytes

MAX_FEATURES = 32       # more output features: BLAS's blocking wins
VECS = 2                # vectors per feature tile
BLOCK_VECTORS = 12      # accumulators per block: with VECS rhs vectors and a broadcast, AVX2's 16 registers ...
WIDE_BLOCK_VECTORS = 24  # ... and AVX-512's 32 (block_vectors)
UNROLL = 4              # a sweep over a known range of taps runs this many (or 2) per iteration (_unroll)
PANEL_BYTES = 16 << 10  # rows of rhs and lhs a block's accumulators stay in registers over (half of L1)


def applies(g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    types = {lhs.shape.ptype.name, rhs.shape.ptype.name, out.shape.ptype.name}
    return (g.groups == 1 and g.out_features <= MAX_FEATURES and len(types) == 1 and types <= set(FLOAT_TYPES)
            and g.rhs_strides[1] == 1 and g.out_strides[1] == 1 and len(g.out_sizes) >= 1
            and math.prod(g.kernel_sizes) > MAX_TAPS
            and all(w.base_dilation == 1 and not w.window_reversal for w in g.window))


def block_vectors() -> int:
    """Accumulators per block. With AVX-512's 32 registers, 24 (a one-vector tile: 24 result pixels, each
    broadcast of lhs serving one FMA, so more chains and fewer sweeps of the panel): in-process A/B, one thread,
    thread time, both compile orders: MobileNetV2's pointwise 48 -> 16 0.82-0.85x, ResNet-50's 1x1 64 -> 16
    0.75-0.79x, 3x3 16 -> 16 0.92-0.96x, the stem 0.90-0.96x; 3x3/2 32 -> 32 (two-vector tiles, 12 pixels)
    1.01-1.04x."""
    return WIDE_BLOCK_VECTORS if loop_vector_bytes() >= 64 else BLOCK_VECTORS


class _Kernel:
    def __init__(self, em, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef):
        self.b = em.b
        self.v = v = Vectors(em.b, out.shape.ptype)
        source, self.copy = lhs.pointer, None
        if reads_outside(g) and 1 in g.lhs_strides[:2]:      # the checked sweeps' taps read a padded copy instead
            padded = PaddedInput(em, g, source, v.elem_bytes)
            if padded.outer_dim == 1:       # by kernel input features c, the rows' outer dim: each chunk its own
                self.copy = padded
            else:
                padded.emit_copy(i64(0), i64(padded.outer))
            source, g = padded.pointer, padded.geometry
        self.g = g
        self.lhs, self.rhs = v.typed(source), v.typed(rhs.pointer)
        self.pixel_sizes = [*g.out_sizes, g.batch]          # the result's order (01bf): n minor
        self.pixels = math.prod(self.pixel_sizes)
        # the spatial dims where some result position reads outside the input at some t (checked per row)
        self.edged = [d for d in range(len(g.out_sizes))
                      if any(_range_of(q, g.window[d], g.in_sizes[d], g.kernel_sizes[d]) != (0, g.kernel_sizes[d])
                             for q in range(g.out_sizes[d]))]

    def rows(self) -> list[int]:
        """Sizes of the row dims: c, then every t dim but the last."""
        return [self.g.kernel_in, *self.g.kernel_sizes[:-1]]

    def quantum(self) -> int:
        """Chunks of rows are whole c (kernel input features) where each chunk copies its own padded input."""
        return math.prod(self.rows()[1:]) if self.copy else 1

    def emit_rows(self, start, end, acc) -> None:
        """Rows [start, end) summed into `acc` (the result's layout), in panels of rows whose rhs and lhs fit in
        L1: each block's accumulators stay in registers over a panel. First the padded copy of the c these rows
        read, where each chunk copies its own (so threads share the copy: the stem's is ~16 us of ~270 one
        thread)."""
        b, g = self.b, self.g
        if self.copy:
            per = i64(self.quantum())
            self.copy.emit_copy(b.udiv(start, per), b.udiv(b.add(end, b.sub(per, i64(1))), per))
        t_step = g.window[-1].window_dilation * g.lhs_strides[-1]       # a row's lhs: about one element per t_step
        per_row = g.kernel_sizes[-1] * (g.out_features + t_step) * self.v.elem_bytes
        panel = max(1, PANEL_BYTES // per_row)
        count = b.udiv(b.add(b.sub(end, start), i64(panel - 1)), i64(panel))
        width = self.v.lanes * VECS
        full = g.out_features // width
        tail = [w for _, w in tiles(g.out_features - full * width, self.v.lanes)]

        def tile(f0, widths) -> None:
            per = max(1, block_vectors() // len(widths))
            aligned = aligned_block(self.pixel_sizes, per)
            if aligned:                         # blocks of pixels at constant offsets from the block's first
                with for_range(b, self.pixels // aligned, "fgb") as blk:
                    self._block(b.mul(blk, i64(aligned)), aligned, f0, widths, acc, first, stop, True)
                return
            blocks, rest = divmod(self.pixels, per)
            if blocks:
                with for_range(b, blocks, "fgb") as blk:
                    self._block(b.mul(blk, i64(per)), per, f0, widths, acc, first, stop)
            if rest:
                self._block(i64(blocks * per), rest, f0, widths, acc, first, stop)

        with for_range(b, count, "fgp") as p:
            first = b.add(start, b.mul(p, i64(panel)))
            limit = b.add(first, i64(panel))
            stop = b.select(b.icmp_signed("<", limit, end), limit, end)
            if full:                                    # the full tiles: one copy of the code, in a loop
                with for_range(b, full, "fgf") as f:
                    tile(b.mul(f, i64(width)), [self.v.lanes] * VECS)
            if tail:
                tile(i64(full * width), tail)

    def _pixel(self, index):
        """Result pixel number `index`: its result offset, lhs offset at t = 0 (row 0), per spatial dim the input
        position read at t = 0, and the last dim's range of t reading inside the input."""
        b, g = self.b, self.g
        ob, _, *osp = g.out_strides
        sb, _, *sp = g.lhs_strides
        *q, n = unflatten(b, index, self.pixel_sizes)
        out_at, shift, first = b.mul(n, i64(ob)), b.mul(n, i64(sb)), []
        for d, qd in enumerate(q):
            w = g.window[d]
            p0 = b.sub(b.mul(qd, i64(w.stride)), i64(w.padding_low))
            first.append(p0)
            out_at = b.add(out_at, b.mul(qd, i64(osp[d])))
            shift = b.add(shift, b.mul(p0, i64(sp[d])))
        return out_at, shift, first, self._span(first)

    def _moved(self, pixel, j: int):
        """Pixel `pixel` (a _pixel) moved by j in the result's order, where that moves no digit past its dim's
        end (an aligned block, aligned_block): offsets known when emitted, so one base register serves the
        block's lhs reads."""
        b, g = self.b, self.g
        out_at, shift, first, span = pixel
        *dq, dn = _digits(j, self.pixel_sizes)
        ob, _, *osp = g.out_strides
        sb, _, *sp = g.lhs_strides
        out_at = plus(b, out_at, dn * ob + sum(k * s for k, s in zip(dq, osp)))
        shift = plus(b, shift, dn * sb + sum(k * w.stride * s for k, w, s in zip(dq, g.window, sp)))
        if not any(dq):
            return out_at, shift, first, span
        first = [plus(b, f, k * w.stride) for f, k, w in zip(first, dq, g.window)]
        return out_at, shift, first, self._span(first) if dq[-1] else span

    def _span(self, first):
        """The last spatial dim's range of t reading inside the input, for input positions `first` at t = 0."""
        b, g = self.b, self.g
        last = len(first) - 1
        taps = g.kernel_sizes[last]
        if last not in self.edged:
            return i64(0), i64(taps)
        step = i64(g.window[last].window_dilation)
        neg = b.sub(i64(0), first[last])          # lo = ceil(-p0 / step) when p0 < 0
        lo = b.select(b.icmp_signed(">", neg, i64(0)), b.sdiv(b.add(neg, b.sub(step, i64(1))), step), i64(0))
        room = b.sub(i64(g.in_sizes[last] - 1), first[last])      # hi = floor(room / step) + 1 when room >= 0
        hi = b.select(b.icmp_signed(">=", room, i64(0)), b.add(b.sdiv(room, step), i64(1)), i64(0))
        lo = _min(b, lo, i64(taps))
        hi = _max(b, _min(b, hi, i64(taps)), lo)
        return lo, hi

    def _block(self, p0, count: int, f0, widths, acc, first_row, stop_row, aligned: bool = False) -> None:
        """`count` consecutive result pixels from p0, features f0 + widths, over rows [first_row, stop_row).
        aligned: an aligned block (aligned_block), so each pixel is the first one moved by a constant (one base
        register for the block's lhs reads, where 24 pointers spilled to the stack: the pointwise 48 -> 16 filter
        gradient reloaded 13 of them per FMA row, the stem 13 of its 24)."""
        b, g, v = self.b, self.g, self.v
        chunks, at = [], 0
        for w in widths:
            chunks.append((at, w))
            at += w
        if aligned:
            pixel = self._pixel(p0)
            pixels = [self._moved(pixel, j) for j in range(count)]
        else:
            pixels = [self._pixel(b.add(p0, i64(j))) for j in range(count)]
        ranges = [r for _, _, _, r in pixels]
        lo_all = ranges[0][0]
        hi_all = ranges[0][1]
        for lo, hi in ranges[1:]:
            lo_all, hi_all = _max(b, lo_all, lo), _min(b, hi_all, hi)
        hi_all = _max(b, hi_all, lo_all)
        slots = [[alloca_once(b, v.ty(w), "fg.acc") for _, w in chunks] for _ in pixels]
        for row, (out_at, _, _, _) in zip(slots, pixels):
            for slot, (off, w) in zip(row, chunks):
                b.store(v.load(acc, plus(b, b.add(out_at, f0), off), w), slot)
        with for_range(b, stop_row, "fgr", start=first_row) as r:
            sb, sf, *sp = g.lhs_strides
            rf, _, *rsp = g.rhs_strides
            c, *t_outer = unflatten(b, r, self.rows())
            row_lhs, row_rhs = b.mul(c, i64(sf)), b.mul(c, i64(rf))
            for d, t in enumerate(t_outer):
                row_lhs = b.add(row_lhs, b.mul(t, i64(g.window[d].window_dilation * sp[d])))
                row_rhs = b.add(row_rhs, b.mul(t, i64(rsp[d])))
            bases, valid = [], []
            for _, shift, first, _ in pixels:
                bases.append(b.add(row_lhs, shift))
                ok = None
                for d, t in enumerate(t_outer):
                    if d not in self.edged:
                        continue
                    p = b.add(first[d], b.mul(t, i64(g.window[d].window_dilation)))
                    inside = b.and_(b.icmp_signed(">=", p, i64(0)), b.icmp_signed("<", p, i64(g.in_sizes[d])))
                    ok = inside if ok is None else b.and_(ok, inside)
                valid.append(ok)
            self._sweeps(slots, chunks, ranges, row_rhs, bases, valid, f0, lo_all, hi_all)
        for row, (out_at, _, _, _) in zip(slots, pixels):
            for slot, (off, w) in zip(row, chunks):
                v.store(acc, plus(b, b.add(out_at, f0), off), b.load(slot), w)

    def _sweeps(self, slots, chunks, ranges, row_rhs, bases, valid, f0, lo_all, hi_all) -> None:
        """One row: the last t dim, unchecked where every pixel of the block reads inside the input."""
        b, g, v = self.b, self.g, self.v
        last = len(g.out_sizes) - 1
        taps_l = g.kernel_sizes[last]
        rsp_last, t_step = g.rhs_strides[2 + last], g.window[last].window_dilation * g.lhs_strides[2 + last]
        edged = last in self.edged

        def sweep(t_lo, t_hi, checked, skip=None):
            """t in [t_lo, t_hi), but for the taps [skip) when given."""
            count = t_hi if skip is None else b.sub(b.add(skip[0], t_hi), skip[1])
            unroll = _unroll(t_lo, t_hi) if skip is None else 1
            if unroll > 1:
                with for_range(b, t_hi.constant // unroll, "fgu", start=t_lo.constant // unroll) as tu:
                    for k in range(unroll):
                        tap(plus(b, b.mul(tu, i64(unroll)), k), checked, skip)
            else:
                with for_range(b, count, "fgt", start=t_lo) as t:
                    tap(t, checked, skip)

        def tap(t, checked, skip):
            """The block's products at tap t of the last dim."""
            if skip is not None:
                t = b.add(t, b.select(b.icmp_signed("<", t, skip[0]), i64(0), b.sub(skip[1], skip[0])))
            rbase = b.add(b.add(row_rhs, b.mul(t, i64(rsp_last))), f0)
            rs = [v.load(self.rhs, b.add(rbase, i64(off)), w) for off, w in chunks]
            step = b.mul(t, i64(t_step))
            for row, base, (lo, hi), ok in zip(slots, bases, ranges, valid):
                cond = ok if checked else None
                if checked and edged:
                    inside = b.and_(b.icmp_signed(">=", t, lo), b.icmp_signed("<", t, hi))
                    cond = inside if cond is None else b.and_(cond, inside)
                with (if_then(b, cond, "fg.in") if cond is not None else nullcontext()):
                    x = v.load(self.lhs, b.add(base, step), 1)
                    splats = {}
                    for slot, (_, w), r in zip(row, chunks, rs):
                        if w not in splats:
                            splats[w] = v.splat(x, w)
                        b.store(v.mul_add(b.load(slot), splats[w], r), slot)

        outer = None
        for ok in valid:
            if ok is not None:
                outer = ok if outer is None else b.and_(outer, ok)
        if outer is not None:           # a row where some pixel reads outside: every tap checked
            lo_all, hi_all = b.select(outer, lo_all, i64(0)), b.select(outer, hi_all, i64(0))
        if edged or outer is not None:  # the taps outside [lo_all, hi_all) checked, in one loop
            sweep(i64(0), i64(taps_l), True, skip=(lo_all, hi_all))
        sweep(lo_all, hi_all, False)


def aligned_block(sizes, budget: int) -> int:
    """The most pixels, at most `budget` and more than half of it, in a block of m consecutive positions of one
    dim of `sizes` (m dividing it) times every position of the dims inside it: blocks at multiples of it then
    never carry a digit past a dim's end, so each pixel sits at a constant offset from the block's first. 0 when
    none (the stem's 7x7 x 3 result pixels: 21, a row of 7 positions x 3; pointwise 1x1 x 48: 24 of the 48)."""
    best, inner = 0, 1
    for size in reversed(sizes):
        best = max([best] + [m * inner for m in range(1, size + 1) if size % m == 0 and m * inner <= budget])
        inner *= size
        if inner > budget:
            break
    return best if best > budget // 2 else 0


def _digits(j: int, sizes) -> list[int]:
    """The row-major index list over `sizes` of j (conv_simd.unflatten for a number known when emitted)."""
    out = []
    for size in reversed(sizes):
        j, k = divmod(j, size)
        out.append(k)
    return out[::-1]


def _unroll(t_lo, t_hi) -> int:
    """Taps per iteration of a sweep over [t_lo, t_hi): the most of UNROLL, 2 dividing both when they are known when
    emitted (the unchecked sweeps over a padded copy or an input read inside), else 1. One thread, thread time,
    in-process A/B, min of 60-80 rounds, 1 -> 4: the stem 275-298 -> 242-258 us, pointwise 48 -> 16 108 -> 89 us,
    1x1 64 -> 16 32 -> 29 us, 3x3 16 -> 16 121 -> 107 us, 3x3/2 32 -> 32 (8 taps) 101 -> 102 us; 8 about the same
    as 4 at twice the code (unet/train's IR +9% instead of +4%)."""
    if not (isinstance(t_lo, ir.Constant) and isinstance(t_hi, ir.Constant)):
        return 1
    return next((u for u in (UNROLL, 2) if t_lo.constant % u == 0 and t_hi.constant % u == 0), 1)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _max(b, x, y):
    return b.select(b.icmp_signed(">", x, y), x, y)


def _range_of(q: int, w, size: int, taps: int) -> tuple[int, int]:
    """valid_range of result position q in one spatial dim: p = q*stride - pad_low + t*window_dilation."""
    return valid_range(q * w.stride - w.padding_low, w.window_dilation, size, taps)


def emit(em, inst, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> None:
    k = _Kernel(em, g, lhs, rhs, out)
    split_rows(em, k.v, k.v.typed(out.pointer), out.shape.numel, math.prod(k.rows()),
               task_count(inst, em.num_threads), k.emit_rows, k.quantum())
