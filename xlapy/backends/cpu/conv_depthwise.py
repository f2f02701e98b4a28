"""The filter gradient of a depthwise convolution, vectorized over channels.

It is a convolution with batch_group_count = G: one input batch element (a forward channel) and one output
feature per group, in the filter-gradient form (conv_canonicalization: f01b_i01o->01bf), where the group is the
unit-stride dim of the input, of the kernel (the output gradient) and of the result:

    out[q, g] = sum over c, t of lhs[c, p(q, t), g] * rhs[c, t, g],   p = q*stride + t*window_dilation - pad_low

c: kernel input features (the forward batch), t: kernel taps (the forward output positions), q: result
positions (the forward kernel taps, a handful). The loops:

    for each row (c and every t dim but the last), each block of up to Q_BLOCK positions q, each tile of channels
    (whole SIMD vectors, then narrower ones for the rest):
        load the block's accumulators (one vector per q), then over the last t dim:
            r = rhs[c, t, tile];  acc[q] += lhs[c, p(q, t), tile] * r  for every q of the block
        store them back

One rhs vector serves every q, and a row's input (a few rows of the forward input) stays in L1 across tiles. The
last t dim runs unchecked over the range where every q of the block reads inside the input, and with a check per
q at the edges (padding reads nothing). Rows are split over threads, each chunk summing into its own partial
result, added in chunk order (conv_simd.split_rows). Anything else (other groupings, narrow floats, integers,
base dilation) takes conv_emitter's direct loops.
"""
from __future__ import annotations

import itertools
import math
from contextlib import nullcontext

from llvmlite import ir

from .buffers import BufferRef
from .conv_simd import FLOAT_TYPES, Vectors, split_rows, tiles, unflatten, valid_range
from .conv_taps import ConvGeometry
from .irhelpers import alloca_once, for_range, i64, if_then
from .parallel import task_count

Q_BLOCK = 12         # accumulators per tile: with the rhs vector and a load, within AVX2's 16 registers


def applies(g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    types = {lhs.shape.ptype.name, rhs.shape.ptype.name, out.shape.ptype.name}
    return (g.by_batch and g.batch == 1 and g.per_group == 1 and len(types) == 1 and types <= set(FLOAT_TYPES)
            and g.lhs_strides[0] == 1 and g.rhs_strides[1] == 1 and g.out_strides[1] == 1 and len(g.out_sizes) >= 1
            and all(w.base_dilation == 1 and not w.window_reversal for w in g.window))


def _range_of(q: int, w, size: int, taps: int) -> tuple[int, int]:
    """valid_range of result position q in one spatial dim: p = q*stride - pad_low + t*window_dilation."""
    return valid_range(q * w.stride - w.padding_low, w.window_dilation, size, taps)


class _Kernel:
    """Emission state: the geometry, pointers and the IR types."""

    def __init__(self, em, inst, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef):
        self.em, self.b, self.g = em, em.b, g
        self.v = v = Vectors(em.b, out.shape.ptype)
        self.st, self.elem_bytes, self.lanes = v.st, v.elem_bytes, v.lanes
        self.lhs, self.rhs, self.out = v.typed(lhs.pointer), v.typed(rhs.pointer), v.typed(out.pointer)
        self.positions = list(itertools.product(*(range(n) for n in g.out_sizes)))
        self.channels = g.groups
        self.tasks = task_count(inst, em.num_threads)

    # -- the kernel ------------------------------------------------------------------------------------
    def rows(self) -> list[int]:
        """Sizes of the row dims: c, then every t dim but the last."""
        return [self.g.kernel_in, *self.g.kernel_sizes[:-1]]

    def emit_rows(self, start, end, acc: ir.Value, acc_offset) -> None:
        """Rows [start, end) summed into `acc` (element acc_offset(q) + channel holds position q's sums)."""
        b = self.b
        sizes = self.rows()
        with for_range(b, end, "dwr", start=start) as row:
            c, *t_outer = unflatten(b, row, sizes)
            for block_start in range(0, len(self.positions), Q_BLOCK):
                self._block(c, t_outer, self.positions[block_start:block_start + Q_BLOCK], acc, acc_offset)

    def _block(self, c, t_outer, block, acc, acc_offset) -> None:
        b, g = self.b, self.g
        sf, sp = g.lhs_strides[1], g.lhs_strides[2:]
        rf, rsp = g.rhs_strides[0], g.rhs_strides[2:]
        last = len(g.out_sizes) - 1
        wl, size_l, taps_l = g.window[last], g.in_sizes[last], g.kernel_sizes[last]
        # per q: validity over the outer t dims (None: always), the lhs offset at t_last = 0, the last dim's range
        valid, lhs_base, ranges = [], [], []
        row_lhs = b.mul(c, i64(sf))
        for d, t in enumerate(t_outer):
            row_lhs = b.add(row_lhs, b.mul(t, i64(g.window[d].window_dilation * sp[d])))
        row_rhs = b.mul(c, i64(rf))
        for d, t in enumerate(t_outer):
            row_rhs = b.add(row_rhs, b.mul(t, i64(rsp[d])))
        for q in block:
            ok = None
            for d, t in enumerate(t_outer):
                lo, hi = _range_of(q[d], g.window[d], g.in_sizes[d], g.kernel_sizes[d])
                if (lo, hi) == (0, g.kernel_sizes[d]):
                    continue
                inside = b.and_(b.icmp_signed(">=", t, i64(lo)), b.icmp_signed("<", t, i64(hi)))
                ok = inside if ok is None else b.and_(ok, inside)
            valid.append(ok)
            shift = sum((q[d] * g.window[d].stride - g.window[d].padding_low) * sp[d] for d in range(last + 1))
            lhs_base.append(b.add(row_lhs, i64(shift)))
            ranges.append(_range_of(q[last], wl, size_l, taps_l))
        outer_ok = None
        for v in valid:
            if v is not None:
                outer_ok = v if outer_ok is None else b.and_(outer_ok, v)
        t_step = wl.window_dilation * sp[last]
        full = self.channels // self.lanes
        if full:
            with for_range(b, i64(full), "dwc") as tile:
                self._tile(b.mul(tile, i64(self.lanes)), self.lanes, block, acc, acc_offset, row_rhs, lhs_base, valid,
                           ranges, outer_ok, t_step)
        for first, width in tiles(self.channels, self.lanes)[full:]:
            self._tile(i64(first), width, block, acc, acc_offset, row_rhs, lhs_base, valid, ranges, outer_ok, t_step)

    def _tile(self, first, width, block, acc, acc_offset, row_rhs, lhs_base, valid, ranges, outer_ok, t_step):
        """One tile of `width` channels from `first`: load the block's accumulators, sweep the last t dim, store."""
        b, g = self.b, self.g
        last = len(g.out_sizes) - 1
        rsp_last, taps_l = g.rhs_strides[2 + last], g.kernel_sizes[last]
        lo_all = max(lo for lo, _ in ranges)
        hi_all = max(lo_all, min(hi for _, hi in ranges))
        slots = [alloca_once(b, self.v.ty(width), "dw.acc") for _ in block]
        for slot, q in zip(slots, block):
            b.store(self.v.load(acc, b.add(acc_offset(q), first), width), slot)

        def sweep(t_lo, t_hi, checked):
            if t_lo >= t_hi:
                return
            with for_range(b, i64(t_hi), "dwt", start=i64(t_lo)) as t:
                r = self.v.load(self.rhs, b.add(b.add(row_rhs, b.mul(t, i64(rsp_last))), first), width)
                step = b.mul(t, i64(t_step))
                for slot, base, (lo, hi), ok in zip(slots, lhs_base, ranges, valid):
                    cond = ok if checked else None
                    if checked and (lo, hi) != (0, taps_l):
                        inside = b.and_(b.icmp_signed(">=", t, i64(lo)), b.icmp_signed("<", t, i64(hi)))
                        cond = inside if cond is None else b.and_(cond, inside)
                    with (if_then(b, cond, "dw.in") if cond is not None else nullcontext()):
                        x = self.v.load(self.lhs, b.add(b.add(base, step), first), width)
                        b.store(self.v.mul_add(b.load(slot), x, r), slot)

        def split_sweep():          # unchecked where every q of the block reads inside the input
            sweep(0, lo_all, True)
            sweep(lo_all, hi_all, False)
            sweep(hi_all, taps_l, True)

        if outer_ok is None:
            split_sweep()
        else:
            with b.if_else(outer_ok) as (inside, edge):
                with inside:
                    split_sweep()
                with edge:
                    sweep(0, taps_l, True)
        for slot, q in zip(slots, block):
            self.v.store(acc, b.add(acc_offset(q), first), b.load(slot), width)


def emit(em, inst, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> None:
    k = _Kernel(em, inst, g, lhs, rhs, out)
    osp = g.out_strides[2:]

    def out_offset(q) -> ir.Value:
        return i64(sum(i * s for i, s in zip(q, osp)))

    split_rows(em, k.v, k.out, out.shape.numel, math.prod(k.rows()), k.tasks,
               lambda start, end, acc: k.emit_rows(start, end, acc, out_offset))
