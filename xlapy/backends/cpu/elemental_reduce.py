"""A reduce whose reducer is one associative op (add, multiply, max, min, and, or, xor) runs LANES interleaved
accumulators over its minor-most reduced dimension, then combines them as a tree, then with the init value:

    acc[l] = identity                              for l < LANES
    for j in range(0, n - n % LANES, LANES):       # LANES independent chains: no loop-carried latency
        acc[l] = op(acc[l], x[j + l])              # LLVM's SLP vectorizer packs the lanes into one vector
    acc[l] = op(acc[l], x[j + l])                  for the static tail
    result = op(init, tree(acc))

A single accumulator makes every element wait for the previous op (a NaN-propagating max is ~10 cycles
deep), and LLVM's loop vectorizer only recognises plain fadd/fmul/min/max reductions. The result differs
from the sequential loop only by reassociation, which XLA allows a reduction (the order is fixed for a given
shape). IDENTITY holds each op's exact identity (-0.0 for a float sum, so signed zeros come out right).
"""
from __future__ import annotations

import math

from llvmlite import ir

from ...hlo.shape import primitive_type
from .irhelpers import alloca_once, for_range, i64, loop_nest
from .types import round_value, value_type

LANES = 8
# Only the reductions LLVM's loop vectorizer cannot vectorize itself: NaN-propagating float max/min (it does
# vectorize a reassociable fadd/fmul and integer ops, better than lanes would).
INTERLEAVED = {"maximum", "minimum"}
MIN_LENGTH = 2 * LANES

_INF = math.inf
IDENTITY = {   # (op, kind) -> identity: a number, or a function of the bit width for integers
    ("add", "float"): -0.0, ("multiply", "float"): 1.0, ("maximum", "float"): -_INF, ("minimum", "float"): _INF,
    ("add", "int"): 0, ("multiply", "int"): 1, ("maximum", "int"): lambda w: -(1 << (w - 1)),
    ("minimum", "int"): lambda w: (1 << (w - 1)) - 1, ("and", "int"): -1, ("or", "int"): 0, ("xor", "int"): 0,
    ("add", "uint"): 0, ("multiply", "uint"): 1, ("maximum", "uint"): 0, ("minimum", "uint"): lambda w: -1,
    ("and", "uint"): -1, ("or", "uint"): 0, ("xor", "uint"): 0,
    ("maximum", "pred"): 0, ("minimum", "pred"): 1, ("and", "pred"): 1, ("or", "pred"): 0, ("xor", "pred"): 0,
}


def _identity(op: str, pt, ty: ir.Type) -> ir.Constant | None:
    value = IDENTITY.get((op, pt.kind))
    if value is None:
        return None
    if callable(value):
        value = value(ty.width)
    return ir.Constant(ty, value)


def interleaved_reduce(em, inst, gens, op: str | None, wide_rule):
    """A generator for reduce `inst` with LANES accumulators, or None when it does not apply (tuple results,
    a reducer that is not one op, a short minor-most reduced dimension)."""
    from .indexing import major_to_minor
    if op not in INTERLEAVED or inst.shape.is_tuple or len(inst.operands) != 2:
        return None
    in_shape = inst.operands[0].shape
    reduced = set(int(d) for d in inst.attrs["dimensions"])
    order = [d for d in major_to_minor(in_shape) if d in reduced]
    if not order or in_shape.dims[order[-1]] < MIN_LENGTH:
        return None
    pt = inst.shape.ptype
    if pt.kind != "float":
        return None
    acc_pt = primitive_type("f32") if wide_rule is not None else pt
    from . import scalar_ops
    rule = wide_rule or scalar_ops.BINARY.get(op, {}).get(pt.kind)
    ty = value_type(acc_pt)
    ident = _identity(op, acc_pt, ty)
    if rule is None or ident is None:
        return None
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    inner = order[-1]
    n = in_shape.dims[inner]
    source, init = gens
    b = em.b

    reducer = inst.attrs["to_apply"]

    def combine(x, y):
        if wide_rule is None:        # the reducer itself, with the elemental emitter's flushing and flags
            return em.emit_scalar(reducer, [x, y], reassoc=True)
        v = wide_rule(b, acc_pt, x, y)
        if isinstance(v, ir.Instruction):
            v.flags.append("reassoc")
        return v

    def gen(index):
        accs = [alloca_once(b, ty, name=f"acc.lane{l}") for l in range(LANES)]
        for acc in accs:
            b.store(ident, acc)
        with loop_nest(b, [in_shape.dims[d] for d in order[:-1]], name="r") as ivs:
            full: list = [None] * in_shape.rank
            for d, i in zip(kept, index):
                full[d] = i
            for d, i in zip(order, ivs):
                full[d] = i

            def step(base, lanes):
                for l in range(lanes):
                    full[inner] = b.add(base, i64(l), flags=["nsw", "nuw"])
                    b.store(combine(b.load(accs[l]), source(list(full))), accs[l])
            with for_range(b, n // LANES, "lanes") as chunk:
                step(b.mul(chunk, i64(LANES), flags=["nsw", "nuw"]), LANES)
            if n % LANES:
                step(i64(n - n % LANES), n % LANES)
        values = [b.load(a) for a in accs]
        while len(values) > 1:
            values = [combine(values[i], values[i + 1]) for i in range(0, len(values), 2)]
        result = combine(init([]), values[0])     # narrow floats live in f32 registers: no conversion
        return round_value(b, pt, result) if wide_rule is not None else result
    return gen
