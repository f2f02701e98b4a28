"""What the vectorized convolution kernels share (conv_depthwise.py, conv_depthwise_forward.py, conv_vector.py,
conv_filter_gradient.py):
SIMD vectors of one float type, channel tiles, the taps of a window that read inside the input (`valid_range`, and
`outer_taps` for the dims outside the innermost), the index of a flattened row, and a reduction over rows split
over threads with partial results (`split_rows`).
"""
from __future__ import annotations

from llvmlite import ir

from .conv_taps import scratch
from .dot_loops import _vector_bytes
from .irhelpers import i64, loop_nest
from .parallel import chunk_bounds, parallel_for
from .types import storage_type

FLOAT_TYPES = ("f32", "f64")
PARTIALS_PER_TASK = 2       # a split reduction's chunks per thread: a busy core holds up half as much


def valid_range(first: int, step: int, size: int, taps: int) -> tuple[int, int]:
    """[lo, hi): the taps t in [0, taps) at which p = first + t*step (step > 0) lies inside [0, size)."""
    lo = max(0, -(first // step))
    hi = min(taps, (size - 1 - first) // step + 1) if size - 1 - first >= 0 else 0
    return lo, max(lo, hi)


def outer_taps(b: ir.IRBuilder, g, o_outer, k_outer, lbase: ir.Value, rbase: ir.Value, ssp, rsp) -> tuple:
    """The spatial dims but the last, for output position o_outer and kernel tap k_outer: whether the input
    position read is inside the input (None when there is no such dim), and the input and filter base offsets
    advanced to it (ssp, rsp: their element strides per spatial dim)."""
    ok = None
    for d, (o, k) in enumerate(zip(o_outer, k_outer)):
        w = g.window[d]
        p = b.sub(b.add(b.mul(o, i64(w.stride)), b.mul(k, i64(w.window_dilation))), i64(w.padding_low))
        inside = b.and_(b.icmp_signed(">=", p, i64(0)), b.icmp_signed("<", p, i64(g.in_sizes[d])))
        ok = inside if ok is None else b.and_(ok, inside)
        lbase = b.add(lbase, b.mul(p, i64(ssp[d])))
        rbase = b.add(rbase, b.mul(k, i64(rsp[d])))
    return ok, lbase, rbase


class Vectors:
    """Typed pointers and SIMD vectors of one float type: `width` lanes (a scalar when 1)."""

    def __init__(self, b: ir.IRBuilder, pt):
        self.b = b
        self.st = storage_type(pt)
        self.elem_bytes = 4 if pt.name == "f32" else 8
        self.lanes = max(1, _vector_bytes() // self.elem_bytes)

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


def split_rows(em, v: Vectors, out: ir.Value, numel: int, rows: int, tasks: int, emit_rows) -> None:
    """A result summed over `rows` rows: emit_rows(start, end, acc) adds rows [start, end) into acc (a typed
    pointer to numel elements in the result's layout). On `tasks` threads, chunks of rows each sum into their own
    zeroed partial result, and the partials are added in chunk order (the same order whatever the threads)."""
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

        if parallel_for(b, chunk_bounds(rows, chunks, 1), chunk, threads=tasks):
            with loop_nest(b, [numel], name="srs") as (j,):
                value = b.load(b.gep(partials, [j], inbounds=True))
                for t in range(1, chunks):
                    value = b.fadd(value, b.load(b.gep(partials, [b.add(j, i64(t * numel))], inbounds=True)))
                b.store(value, b.gep(out, [j], inbounds=True))
            return
    with loop_nest(b, [numel], name="srz") as (j,):
        b.store(zero, b.gep(out, [j], inbounds=True))
    emit_rows(i64(0), i64(rows), out)
