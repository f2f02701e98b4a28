"""reduce-window as a generator: for each output element an inner loop nest over the window, the reducer
emitted inline (variadic reducers carry a tuple of accumulators).

Window position w of output element o reads base position  p = o * stride + w * window_dilation - pad_low
in the base-dilated operand; positions in the padding or between dilated elements are skipped (they never
reach the reducer, as in XLA's evaluator). The skip is branch-free: the load reads a clamped, always valid
address and a select keeps the old accumulator, so LLVM can unroll and vectorize small windows.

Along a dimension without base dilation the window loop runs only over the positions that land inside the
operand (bounds computed per output element), so JAX's cumsum pattern (window = n, pad n-1) costs the
n(n+1)/2 useful steps rather than n^2. A top-level reduce-window of that shape never gets here: scan_emitter.py
runs it as an O(n) running accumulator; this loop remains for scans inside fusions and reverse scans with
reducers that are not commutative combiners. A dimension without padding or base dilation needs no bounds at
all (every window lies inside), and one whose window is 1 wide no loop either (NHWC pooling's batch and channel
dimensions).
"""
from __future__ import annotations

from llvmlite import ir

from ...hlo.attrs import window_of
from ...hlo.shape import primitive_type
from .irhelpers import I1, I64, for_range, i64


def _smax(b, x, y):
    return b.select(b.icmp_signed(">", x, y), x, y)


def _smin(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _floor_div(b, x: ir.Value, d: int) -> ir.Value:
    """floor(x / d) for a signed x and a positive constant d."""
    if d == 1:
        return x
    q = b.sdiv(x, i64(d))
    r = b.srem(x, i64(d))
    return b.sub(q, b.zext(b.icmp_signed("<", r, i64(0)), I64))


def reduce_window(em, inst, gens):
    from .elemental import accumulated, accumulation, start_accumulators      # elemental imports this module
    n = len(inst.operands) // 2
    inputs, inits = gens[:n], gens[n:]
    in_dims = inst.operands[0].shape.dims
    window = window_of(inst).dims
    out_shapes, reducer, wide_rule = accumulation(inst)
    b = em.b
    f32 = primitive_type("f32")

    def gen(index):
        accs = start_accumulators(b, out_shapes, inits, "rw.acc")
        _window_loops(b, index, in_dims, window, 0, [], ir.Constant(I1, 1),
                      lambda pos, ok: _step(em, reducer, accs, inputs, pos, ok, wide_rule, f32))
        return accumulated(b, inst, accs, out_shapes, wide_rule)
    return gen


def _step(em, reducer, accs, inputs, pos, ok, wide_rule, f32):
    b = em.b
    values = [g(pos) for g in inputs]
    old = [b.load(a) for a in accs]
    if wide_rule is not None:
        new = (wide_rule(b, f32, old[0], values[0]),)
    else:
        new = em.emit_scalar(reducer, old + values, reassoc=True)
        new = new if isinstance(new, tuple) else (new,)
    for acc, o, v in zip(accs, old, new):
        b.store(b.select(ok, v, o), acc)


def _window_loops(b, index, in_dims, window, d, pos, ok, body):
    """Loop over window dimension d (and, recursively, the later ones); body(pos, ok) at the innermost."""
    if d == len(window):
        body(pos, ok)
        return
    w = window[d]
    n = in_dims[d]
    o = index[d]
    unpadded = w.base_dilation == 1 and w.padding_low == 0 and w.padding_high == 0
    if unpadded and w.size == 1:        # position o * stride, always inside: no loop, no test
        p = b.mul(o, i64(w.stride)) if w.stride != 1 else o
        _window_loops(b, index, in_dims, window, d + 1, pos + [p], ok, body)
        return
    start = b.sub(b.mul(o, i64(w.stride)), i64(w.padding_low)) if w.stride != 1 else b.sub(o, i64(w.padding_low))
    if unpadded:                        # every position of every window is inside (the output's size says so)
        with for_range(b, w.size, name=f"w{d}") as k:
            p = b.add(start, b.mul(k, i64(w.window_dilation)))
            _window_loops(b, index, in_dims, window, d + 1, pos + [p], ok, body)
        return
    if w.base_dilation == 1 and w.size > 1:
        # only the w with 0 <= start + w * wd < n: w in [ceil(-start / wd), ceil((n - start) / wd))
        wd = w.window_dilation
        lo = _smax(b, i64(0), b.sub(i64(0), _floor_div(b, start, wd)))
        hi = _smin(b, i64(w.size), b.sub(i64(0), _floor_div(b, b.sub(start, i64(n)), wd)))
        count = _smax(b, b.sub(hi, lo), i64(0))
        with for_range(b, count, name=f"w{d}") as k:
            p = b.add(start, b.mul(b.add(k, lo), i64(wd)))
            _window_loops(b, index, in_dims, window, d + 1, pos + [p], ok, body)
        return
    with for_range(b, w.size, name=f"w{d}") as k:
        p = b.add(start, b.mul(k, i64(w.window_dilation))) if w.window_dilation != 1 else b.add(start, k)
        inside = b.icmp_signed(">=", p, i64(0))
        if w.base_dilation != 1:
            inside = b.and_(inside, b.icmp_signed("==", b.srem(p, i64(w.base_dilation)), i64(0)))
            p = b.sdiv(p, i64(w.base_dilation))
        inside = b.and_(inside, b.icmp_signed("<", p, i64(n)))
        safe = b.select(inside, p, i64(0)) if n > 0 else p
        _window_loops(b, index, in_dims, window, d + 1, pos + [safe], b.and_(ok, inside), body)
