"""What the vectorized convolution kernels share (conv_depthwise.py, conv_depthwise_forward.py, conv_vector.py,
conv_filter_gradient.py):
SIMD vectors of one float type, channel tiles, the taps of a window that read inside the input (`valid_range`, its
run-time twin `valid_range_at`, and `outer_taps` for the dims outside the innermost), the loops over a row's
outputs (`row_outputs`: `interior_blocks`, `edge_outputs`), the index of a flattened row, and a reduction over rows split over
threads with partial results (`split_rows`).

Code size: a kernel's body is emitted once per shape of work, not once per output. The edge outputs on both sides
(and an interior output left over after whole blocks: `blocked_end`) run in one loop with their taps' range
computed at run time (`edge_outputs`, `valid_range_at`): one copy, not one per edge output with its taps unrolled.
conv_vector goes further: `block_size` (a divisor of the row's outputs: no remainder block), its edge blocks read
strips of their own, and `padded_input` (a zero-padded copy of the input) where strips do not fit, so one copy of
the block code serves every output; `outer_positions` loops over the outer dims' taps that read inside.
"""
from __future__ import annotations

import dataclasses
import math
from contextlib import ExitStack, contextmanager
from typing import Iterator

from llvmlite import ir

from .conv_taps import ConvGeometry, scratch
from .vector_width import loop_vector_bytes
from .irhelpers import I1, VOID, for_range, i64, intrinsic, loop_nest
from .parallel import chunk_bounds, parallel_for
from .types import storage_type

FLOAT_TYPES = ("f32", "f64")
PARTIALS_PER_TASK = 2       # a split reduction's chunks per thread: a busy core holds up half as much


def valid_range(first: int, step: int, size: int, taps: int) -> tuple[int, int]:
    """[lo, hi): the taps t in [0, taps) at which p = first + t*step (step > 0) lies inside [0, size)."""
    lo = max(0, -(first // step))
    hi = min(taps, (size - 1 - first) // step + 1) if size - 1 - first >= 0 else 0
    return lo, max(lo, hi)


def plus(b: ir.IRBuilder, x: ir.Value, k: int) -> ir.Value:
    """x + k (x itself when k is 0): offsets known when the code is emitted cost no instruction."""
    return b.add(x, i64(k)) if k else x


def scaled(b: ir.IRBuilder, x: ir.Value, k: int) -> ir.Value:
    """x * k, without the multiply when k is 1."""
    return x if k == 1 else b.mul(x, i64(k))


def valid_range_at(b: ir.IRBuilder, first: ir.Value, step: int, size: int, taps: int) -> tuple[ir.Value, ir.Value]:
    """valid_range for a first position known at run time: [lo, hi) as i64 values (no taps when hi <= lo)."""
    lo = b.select(b.icmp_signed("<", first, i64(0)), b.udiv(b.sub(i64(step - 1), first), i64(step)), i64(0))
    rest = b.sub(i64(size - 1), first)
    count = b.add(b.udiv(rest, i64(step)), i64(1))
    hi = b.select(b.icmp_unsigned("<", count, i64(taps)), count, i64(taps))
    return lo, b.select(b.icmp_signed("<", rest, i64(0)), i64(0), hi)


def blocked_end(lo: int, hi: int, block: int) -> int:
    """The end of the interior [lo, hi) that interior_blocks covers: hi, or hi - 1 when one output is left over
    after whole blocks (it joins the edge outputs' loop, which costs what a block of one output did)."""
    return hi - 1 if hi - lo > block and (hi - lo) % block == 1 else hi


def block_size(outs: int, most: int) -> int:
    """Outputs per block for a row of `outs` outputs: the largest divisor of outs above most // 2 and at most
    `most` (no remainder block: one copy of the block code), else `most` (whole blocks and a remainder block)."""
    return next((k for k in range(min(most, outs), most // 2, -1) if outs % k == 0), min(most, outs))


def interior_blocks(b: ir.IRBuilder, lo: int, hi: int, block: int, name: str) -> Iterator[tuple[ir.Value, int]]:
    """The outputs [lo, hi) in blocks of `block` (of hi - lo when fewer): yields (first output, block size) for the
    caller to emit that block's code, in a loop when there are several, then for the remainder block when some
    outputs are left over. (The last block moved back over them instead, no remainder code but some outputs
    computed twice, ran 5-30% slower: 3x3 16->16 and the depthwise 3x3/2 96 of benchmarks/conv.py.)"""
    size = min(block, hi - lo)
    count, rest = divmod(hi - lo, size)
    if count == 1:
        yield i64(lo), size
    else:
        with for_range(b, count, name) as blk:
            yield b.add(i64(lo), b.mul(blk, i64(size))), size
    if rest:
        yield i64(hi - rest), rest


@contextmanager
def edge_outputs(b: ir.IRBuilder, lo: int, hi: int, outs: int, name: str) -> Iterator[ir.Value]:
    """One loop over the outputs [0, lo) and [hi, outs) (those outside the interior [lo, hi)): yields the output."""
    with for_range(b, lo + outs - hi, name) as j:
        yield j if hi == lo else b.add(j, b.select(b.icmp_signed("<", j, i64(lo)), i64(0), i64(hi - lo)))


def row_outputs(b: ir.IRBuilder, lo: int, hi: int, block: int, window, in_size: int, taps: int, outs: int,
                emit, name: str) -> None:
    """Every output of a row's last dim, given its interior [lo, hi) (the outputs whose taps all read inside):
    emit(first output, count, (first tap, end tap)) for whole blocks of the interior with every tap, then for the
    edge outputs (and a leftover interior one: blocked_end) one at a time in one loop with their taps' range
    computed at run time. `window` is the last dim's window (stride, padding_low, window_dilation)."""
    end = blocked_end(lo, hi, block)
    if end > lo:
        for o0, count in interior_blocks(b, lo, end, block, name + "b"):
            emit(o0, count, (0, taps))
    if end - lo < outs:
        with edge_outputs(b, lo, end, outs, name + "e") as o:
            first = b.sub(b.mul(o, i64(window.stride)), i64(window.padding_low))
            emit(o, 1, valid_range_at(b, first, window.window_dilation, in_size, taps))


def reads_outside(g: ConvGeometry) -> bool:
    """Whether some output's tap reads outside the input (padding) in some spatial dim."""
    for o, k, size, w in zip(g.out_sizes, g.kernel_sizes, g.in_sizes, g.window):
        if w.padding_low > 0 or (o - 1) * w.stride + (k - 1) * w.window_dilation - w.padding_low >= size:
            return True
    return False


def padded_input(em, g: ConvGeometry, pointer: ir.Value, elem_bytes: int) -> tuple[ir.Value, ConvGeometry]:
    """A copy of the input with its padding as zeros (PaddedInput), copied here: (i8* to the copy, the
    convolution's geometry over it, no padding)."""
    padded = PaddedInput(em, g, pointer, elem_bytes)
    padded.emit_copy(i64(0), i64(padded.outer))
    return padded.pointer, padded.geometry


class PaddedInput:
    """A copy of the input with its padding as zeros (in scratch, dense: the other of batch and features, the
    spatial dims, then the unit-stride one of them), exactly as large as the taps read, so that every output's taps
    read inside it: `pointer` (i8* to the copy) and `geometry` (the convolution's over it, no padding). The copy is
    one flat loop over its rows (the outer dim and every spatial position but the last): a memset, one memcpy of
    the positions inside the input (one per position when they are not contiguous there) and a memset; a row in
    another dim's padding is a memset. Needs the input's features (or its batch) unit-stride and no base dilation
    or window reversal. Kernels over the copy have no edge code: every output takes the interior's code.

    The scratch is taken here (in the caller of any parallel loop); emit_copy(lo, hi) copies the outer dim's
    [lo, hi) (`outer` of them; `outer_dim` 0 for the batch, 1 for the features), so threads whose work reads only
    some of them can each copy their own (conv_filter_gradient: a chunk's rows are whole forward images)."""

    def __init__(self, em, g: ConvGeometry, pointer: ir.Value, elem_bytes: int):
        b = self.b = em.b
        self.g, self.elem_bytes = g, elem_bytes
        self.run_dim = run_dim = 1 if g.lhs_strides[1] == 1 else 0
        self.channels = g.in_features if run_dim == 1 else g.batch      # the unit-stride dim: copied in runs
        self.outer_dim = 1 - run_dim
        self.outer = g.batch if run_dim == 1 else g.in_features
        self.outer_stride = g.lhs_strides[self.outer_dim]
        last = len(g.out_sizes) - 1
        self.extents = extents = [(o - 1) * w.stride + (k - 1) * w.window_dilation + 1
                                  for o, k, w in zip(g.out_sizes, g.kernel_sizes, g.window)]
        strides, at = [], self.channels
        for e in reversed(extents):
            strides.insert(0, at)
            at *= e
        self.pointer = b.bitcast(scratch(em, self.outer * at * elem_bytes), ir.IntType(8).as_pointer())
        self.source = b.bitcast(pointer, ir.IntType(8).as_pointer())
        window = tuple(dataclasses.replace(w, padding_low=0, padding_high=0) for w in g.window)
        outer_strides = (at, 1) if run_dim == 1 else (1, at)
        self.geometry = dataclasses.replace(g, in_sizes=tuple(extents), window=window,
                                            lhs_strides=(*outer_strides, *strides))
        self.rows_per_outer = math.prod(extents[:last])

    def emit_copy(self, lo: ir.Value, hi: ir.Value) -> None:
        """The copy of the outer dim's [lo, hi)."""
        b, g, elem_bytes, channels, extents = self.b, self.g, self.elem_bytes, self.channels, self.extents
        outer_stride = self.outer_stride
        ssp, last = g.lhs_strides[2:], len(g.out_sizes) - 1
        w = g.window[last]
        first = min(max(w.padding_low, 0), extents[last])                 # the last dim's positions inside the input
        end = max(first, min(w.padding_low + g.in_sizes[last], extents[last]))
        run, row = channels * elem_bytes, extents[last] * channels * elem_bytes
        row_sizes = [self.outer, *extents[:last]]
        per = self.rows_per_outer
        with for_range(b, scaled(b, hi, per), "pad", start=scaled(b, lo, per)) as r:
            n, *pos = unflatten(b, r, row_sizes)
            src, inside = b.mul(n, i64(outer_stride)), None
            for d, p in enumerate(pos):
                q = b.sub(p, i64(g.window[d].padding_low))
                src = b.add(src, scaled(b, q, ssp[d]))
                ok = b.icmp_unsigned("<", q, i64(g.in_sizes[d]))
                inside = ok if inside is None else b.and_(inside, ok)
            src = plus(b, src, (first - w.padding_low) * ssp[last])
            dst = b.gep(self.pointer, [b.mul(r, i64(row))])
            count = i64(end - first) if inside is None else b.select(inside, i64(end - first), i64(0))
            left = i64(first * run) if inside is None else b.select(inside, i64(first * run), i64(row))
            zero_bytes(b, dst, left)
            dst = b.gep(dst, [left])
            if ssp[last] == channels:
                nbytes = b.mul(count, i64(run))
                copy_bytes(b, dst, b.gep(self.source, [b.mul(src, i64(elem_bytes))]), nbytes)
            else:
                with for_range(b, count, "padp") as t:
                    at_src = b.add(src, scaled(b, t, ssp[last]))
                    copy_bytes(b, b.gep(dst, [b.mul(t, i64(run))]),
                               b.gep(self.source, [b.mul(at_src, i64(elem_bytes))]), i64(run))
                nbytes = b.mul(count, i64(run))
            zero_bytes(b, b.gep(dst, [nbytes]), b.sub(b.sub(i64(row), left), nbytes))


def zero_bytes(b: ir.IRBuilder, dst: ir.Value, nbytes: ir.Value) -> None:
    """memset(dst, 0, nbytes): i8* dst, i64 nbytes."""
    intrinsic(b, "llvm.memset.p0.i64", VOID, [dst, ir.Constant(ir.IntType(8), 0), nbytes, ir.Constant(I1, 0)])


def copy_bytes(b: ir.IRBuilder, dst: ir.Value, src: ir.Value, nbytes: ir.Value) -> None:
    """memcpy(dst, src, nbytes): i8* dst and src, i64 nbytes."""
    intrinsic(b, "llvm.memcpy.p0.p0.i64", VOID, [dst, src, nbytes, ir.Constant(I1, 0)])


@contextmanager
def outer_positions(b: ir.IRBuilder, g, o_outer, name: str) -> Iterator[list[ir.Value]]:
    """Loops over the taps of the spatial dims but the last that read inside the input at output position o_outer
    (their range computed at run time unless every output's taps read inside; no loop for a dim of one such tap):
    yields the taps."""
    with ExitStack() as loops:
        ks = []
        for d, o in enumerate(o_outer):
            w, size, taps = g.window[d], g.in_sizes[d], g.kernel_sizes[d]
            highest = (g.out_sizes[d] - 1) * w.stride + (taps - 1) * w.window_dilation - w.padding_low
            inside = w.padding_low <= 0 and highest < size
            if inside and taps == 1:
                ks.append(i64(0))
                continue
            first = plus(b, scaled(b, o, w.stride), -w.padding_low)
            lo, hi = (i64(0), i64(taps)) if inside else valid_range_at(b, first, w.window_dilation, size, taps)
            ks.append(loops.enter_context(for_range(b, hi, f"{name}{d}", start=lo)))
        yield ks


@contextmanager
def outer_taps(b: ir.IRBuilder, g, o_outer, lbase: ir.Value, rbase: ir.Value, ssp, rsp,
               name: str) -> Iterator[tuple[ir.Value, ir.Value]]:
    """Loops over the taps of the spatial dims but the last that read inside the input at output position o_outer
    (their range computed at run time, unless every output's taps read inside; no loop for a dim of one such tap),
    yielding the input and filter base offsets advanced to the tap (ssp, rsp: their element strides per dim)."""
    with ExitStack() as loops:
        for d, o in enumerate(o_outer):
            w, size, taps = g.window[d], g.in_sizes[d], g.kernel_sizes[d]
            first = plus(b, scaled(b, o, w.stride), -w.padding_low)
            highest = (g.out_sizes[d] - 1) * w.stride + (taps - 1) * w.window_dilation - w.padding_low
            inside = w.padding_low <= 0 and highest < size
            if inside and taps == 1:
                k = i64(0)
            else:
                lo, hi = (i64(0), i64(taps)) if inside else valid_range_at(b, first, w.window_dilation, size, taps)
                k = loops.enter_context(for_range(b, hi, f"{name}{d}", start=lo))
            lbase = b.add(lbase, scaled(b, b.add(first, scaled(b, k, w.window_dilation)), ssp[d]))
            rbase = b.add(rbase, scaled(b, k, rsp[d]))
        yield lbase, rbase


class Vectors:
    """Typed pointers and SIMD vectors of one float type: `width` lanes (a scalar when 1)."""

    def __init__(self, b: ir.IRBuilder, pt):
        self.b = b
        self.st = storage_type(pt)
        self.elem_bytes = 4 if pt.name == "f32" else 8
        self.lanes = max(1, loop_vector_bytes() // self.elem_bytes)

    def typed(self, pointer: ir.Value) -> ir.Value:
        return self.b.bitcast(pointer, self.st.as_pointer())

    def ty(self, width: int) -> ir.Type:
        return self.st if width == 1 else ir.VectorType(self.st, width)

    def zero(self, width: int) -> ir.Constant:
        return ir.Constant(self.ty(width), None if width > 1 else 0.0)

    def _at(self, base: ir.Value, at: ir.Value, width: int) -> ir.Value:
        p = self.b.gep(base, [at], inbounds=True)
        return self.b.bitcast(p, self.ty(width).as_pointer()) if width > 1 else p

    def load(self, base: ir.Value, at: ir.Value, width: int) -> ir.Value:
        return self.b.load(self._at(base, at, width), align=self.elem_bytes)

    def store(self, base: ir.Value, at: ir.Value, value: ir.Value, width: int) -> None:
        self.b.store(value, self._at(base, at, width), align=self.elem_bytes)

    def mul_add(self, acc: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.fadd(acc, self.b.fmul(x, y, flags=["contract"]), flags=["contract"])

    def copy(self, dst: ir.Value, src: ir.Value, count: int) -> None:
        """count elements from typed pointer src to typed pointer dst (memcpy)."""
        i8p = ir.IntType(8).as_pointer()
        copy_bytes(self.b, self.b.bitcast(dst, i8p), self.b.bitcast(src, i8p), i64(count * self.elem_bytes))

    def zero_fill(self, dst: ir.Value, count: int) -> None:
        """count zero elements at typed pointer dst (memset)."""
        zero_bytes(self.b, self.b.bitcast(dst, ir.IntType(8).as_pointer()), i64(count * self.elem_bytes))

    def splat(self, x: ir.Value, width: int) -> ir.Value:
        """The scalar x in every one of `width` lanes."""
        if width == 1:
            return x
        vty = self.ty(width)
        one = self.b.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
        return self.b.shuffle_vector(one, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), width), None))


def tiles(count: int, lanes: int) -> list[tuple[int, int]]:
    """(first channel, width) of each tile: whole vectors, then ever narrower ones (7 = 4 + 2 + 1)."""
    out, start = [(v * lanes, lanes) for v in range(count // lanes)], count // lanes * lanes
    width = lanes
    while start < count:
        while width > count - start:
            width //= 2
        out.append((start, width))
        start += width
    return out


def unflatten(b: ir.IRBuilder, flat: ir.Value, sizes) -> list[ir.Value]:
    """The row-major index list over `sizes` of flat index `flat`."""
    ivs, rest = [], flat
    for size in reversed(sizes):
        ivs.append(b.urem(rest, i64(size)))
        rest = b.udiv(rest, i64(size))
    return list(reversed(ivs))


def split_rows(em, v: Vectors, out: ir.Value, numel: int, rows: int, tasks: int, emit_rows,
               quantum: int = 1) -> None:
    """A result summed over `rows` rows: emit_rows(start, end, acc) adds rows [start, end) into acc (a typed
    pointer to numel elements in the result's layout). On `tasks` threads, chunks of rows each sum into their own
    zeroed partial result, and the partials are added in chunk order (the same order whatever the threads); the
    chunks' bounds are multiples of `quantum`."""
    b = em.b
    zero = v.zero(1)
    chunks = min(rows, tasks * PARTIALS_PER_TASK)
    if tasks > 1 and chunks > 1:
        partials = b.bitcast(scratch(em, chunks * numel * v.elem_bytes), v.st.as_pointer())

        def chunk(b_, start, end, task):
            mine = b.gep(partials, [b.mul(task, i64(numel))], inbounds=True)
            with loop_nest(b, [numel], name="srz") as (j,):
                b.store(zero, b.gep(mine, [j], inbounds=True))
            emit_rows(start, end, mine)

        if parallel_for(b, chunk_bounds(rows, chunks, quantum), chunk, threads=tasks):
            with loop_nest(b, [numel], name="srs") as (j,):
                value = b.load(b.gep(partials, [j], inbounds=True))
                for t in range(1, chunks):
                    value = b.fadd(value, b.load(b.gep(partials, [b.add(j, i64(t * numel))], inbounds=True)))
                b.store(value, b.gep(out, [j], inbounds=True))
            return
    with loop_nest(b, [numel], name="srz") as (j,):
        b.store(zero, b.gep(out, [j], inbounds=True))
    emit_rows(i64(0), i64(rows), out)
