"""Batching rules of the elementwise ops (every opcode with the E trait: unary, binary, compare, select, clamp,
convert, copy, reduce-precision, map, ...) and bitcast-convert.

An elementwise op keeps the batch axis where its first full-rank batched operand has it: every other operand
is moved (or, unbatched, broadcast) to the same place. Scalar operands of an op with array operands (clamp's
bounds, select's predicate) are broadcast to the full batched shape when batched, and left alone otherwise.
bitcast-convert between types of different widths adds or drops a trailing dimension, so it batches at 0.
"""
from __future__ import annotations

from ...hlo import Shape
from ...hlo.opcodes import OPCODES
from .common import Batcher, batched_dims


def _elementwise(b: Batcher, inst, operands, dims):
    """The op on operands aligned at one batch axis (the first full-rank batched operand's)."""
    rank = inst.shape.rank
    d = next((x for o, x in zip(operands, dims) if x is not None and o.shape.rank == rank + 1), 0)
    full = batched_dims(inst.shape.dims, d, b.size)
    ops = []
    for o, x in zip(operands, dims):
        if x is None and (o.shape.rank == 0 and rank > 0 and inst.opcode in ("clamp", "select")):
            ops.append(o)                       # an unbatched scalar bound / predicate stays a scalar
        elif x is None:
            ops.append(b.broadcast(o, [k for k in range(len(full)) if k != d][:o.shape.rank] if o.shape.rank
                                   else [], Shape.array(o.shape.element_type, full)))
        elif o.shape.rank == 1 and rank > 0:    # a batched scalar operand of an array op
            ops.append(b.broadcast(o, [d], Shape.array(o.shape.element_type, full)))
        else:
            ops.append(b.moveaxis(o, x, d))
    attrs = dict(inst.attrs)
    if inst.opcode == "map":
        attrs["dimensions"] = tuple(range(len(full)))
    out = b.emit(inst.opcode, ops, attrs, shape=Shape.array(inst.shape.element_type, full))
    return out, d


def _bitcast_convert(b: Batcher, inst, operands, dims):
    """At batch dim 0: a width change adds or removes the last dimension."""
    x = b.front(operands[0], dims[0])
    shape = Shape.array(inst.shape.element_type, (b.size,) + tuple(inst.shape.dims))
    return b.emit("bitcast-convert", [x], dict(inst.attrs), shape=shape), 0


RULES = {
    **{name: _elementwise for name, info in OPCODES.items() if info.is_elementwise},
    "bitcast-convert": _bitcast_convert,
}
