"""reduce-window shaped as a prefix scan (JAX's cumsum, cumprod, cummax, ...) as an O(n) running accumulator.

JAX lowers `cumsum(x, axis)` to a reduce-window whose window spans the whole axis (size n, stride 1, padding
low n-1 high 0) and is 1 everywhere else. Output i then reduces x[0..i] in order, which is exactly
acc_i = f(acc_{i-1}, x_i) with acc_{-1} = init: a running accumulator computes every output of the row in one
pass, in the same order as the window loop (so for ANY reducer, variadic ones included, the result is the same
as elemental_window's O(n^2) loop, and as numpy.cumsum's sequential order).

The reverse scan (padding low 0 high n-1, `cumsum(reverse=True)`) reduces x[i..n-1]. A running accumulator
walks the row backwards: s_i = f(s_{i+1}, x_i), out_i = f(init, s_i). That reorders the reduction, so it is
used only for the recognised commutative, associative combiners (add, multiply, maximum, minimum, and, or,
xor); for floats it is numpy's flip(cumsum(flip(x))) order, the same as the interpreter's (XLA leaves the
order of a window reduction unspecified). Other reverse reducers keep the elemental path.

Anything that is not a scan falls back to the elemental reduce-window generator (elemental_window.py).
"""
from __future__ import annotations

from ...hlo.attrs import window_of
from ...hlo.shape import primitive_type
from .buffers import leaves
from .indexing import linear_index, major_to_minor, placed
from .irhelpers import alloca_once, for_range, i64, loop_nest
from .types import round_value, store_element, value_type


COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})


def scan_axis(inst) -> tuple[int, bool] | None:
    """(axis, reverse) when inst's window is a prefix (reverse: suffix) scan along one axis, else None."""
    dims = inst.operands[0].shape.dims
    window = window_of(inst).dims
    if len(window) != len(dims):
        return None
    found = None
    for axis, (n, w) in enumerate(zip(dims, window)):
        if w.stride != 1 or w.base_dilation != 1 or w.window_dilation != 1:
            return None
        if w.size == 1 and w.padding_low == 0 and w.padding_high == 0:
            continue
        if found is not None or n < 2 or w.size != n:
            return None
        if (w.padding_low, w.padding_high) == (n - 1, 0):
            found = (axis, False)
        elif (w.padding_low, w.padding_high) == (0, n - 1):
            found = (axis, True)
        else:
            return None
    return found


def reduce_window(em, inst, operands):
    """HANDLERS entry for reduce-window: the O(n) scan when the window is one, else the elemental loop."""
    from .elemental import accumulation, simple_reducer      # elemental imports elemental_window
    gens = [em.generator_of(v) for v in operands]
    scan = scan_axis(inst)
    if scan is not None:
        axis, reverse = scan
        out_shapes, reducer, wide_rule = accumulation(inst)
        if not reverse or (len(out_shapes) == 1 and simple_reducer(reducer) in COMMUTATIVE):
            out = em.new_tree(inst.shape, inst)
            _emit_scan(em, inst, gens, leaves(out), axis, reverse, reducer, wide_rule)
            return out
    return em.materialize(inst, em.elemental.generator(inst, gens))


def _emit_scan(em, inst, gens, outs, axis, reverse, reducer, wide_rule) -> None:
    b = em.b
    count = len(gens) // 2
    inputs, inits = gens[:count], gens[count:]
    in_shape = inst.operands[0].shape
    n = in_shape.dims[axis]
    outer = [d for d in major_to_minor(outs[0].shape) if d != axis]
    f32 = primitive_type("f32")

    def combine(old: list, values: list) -> list:
        if wide_rule is not None:      # a narrow float: accumulate in f32, round each output once
            return [wide_rule(b, f32, old[0], values[0])]
        new = em.elemental.emit_scalar(reducer, old + values)
        return list(new) if isinstance(new, tuple) else [new]

    with loop_nest(b, [in_shape.dims[d] for d in outer], name="scan.o") as ivs:
        accs = [alloca_once(b, value_type(o.shape.ptype), name="scan.acc") for o in outs]
        init_values = [g([]) for g in inits]
        if not reverse:
            for acc, v in zip(accs, init_values):
                b.store(v, acc)
        with for_range(b, n, name="scan") as k:
            position = b.sub(i64(n - 1), k) if reverse else k
            index = placed(outer, ivs, in_shape.rank)
            index[axis] = position
            values = [g(index) for g in inputs]
            old = [b.load(a) for a in accs]
            new = combine(old, values)
            if reverse:       # s = x[n-1] first, then s = f(s, x[i]); the output is f(init, s)
                first = b.icmp_unsigned("==", k, i64(0))
                new = [b.select(first, v, c) for v, c in zip(values, new)]
            for acc, v in zip(accs, new):
                b.store(v, acc)
            results = combine(init_values, new) if reverse else new
            for o, r in zip(outs, results):
                if wide_rule is not None:
                    r = round_value(b, o.shape.ptype, r)
                store_element(b, o.pointer, o.shape.ptype, linear_index(b, index, o.shape), r)


__all__ = ["reduce_window", "scan_axis"]
