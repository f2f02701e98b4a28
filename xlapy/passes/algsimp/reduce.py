"""Reduce rules: reductions over nothing, over size-1 dimensions, and of broadcasts."""
from __future__ import annotations

from ...hlo import Computation
from ..build import make
from ..pattern import Any, Op
from .util import full_like, is_integral

A = Any("a")

_BINARY_REDUCERS = ("add", "multiply", "maximum", "minimum", "and", "or")


def reducer_opcode(comp: Computation) -> str | None:
    """'add' when comp is (x, y) -> add(x, y) (either operand order), likewise for max/min/mul/and/or."""
    root = comp.root
    params = comp.parameters
    if (len(params) == 2 and root.opcode in _BINARY_REDUCERS and len(comp.instructions) == 3
            and set(map(id, root.operands)) == set(map(id, params))):
        return root.opcode
    return None


def _single_input(inst) -> bool:
    return len(inst.operands) == 2 and not inst.shape.is_tuple


def reduce_unit_dims(inst, c):
    # reduce(A, init) over dimensions of size 1 => op(reshape(A), broadcast(init))
    if not _single_input(inst):
        return None
    op = reducer_opcode(inst.attrs["to_apply"])
    a, init = inst.operands
    if op is None or any(a.shape.dims[d] != 1 for d in inst.attrs["dimensions"]):
        return None
    flat = make("reshape", [a], shape=inst.shape.without_layout())
    if inst.shape.rank == 0:
        return make(op, [init, flat], shape=inst.shape.without_layout())
    init_b = make("broadcast", [init], {"dimensions": ()}, shape=inst.shape.without_layout())
    return make(op, [init_b, flat], shape=inst.shape.without_layout())


def reduce_of_broadcast(inst, c):
    # reduce(broadcast(X), dims) over only broadcast-added dims => op(X', init) for idempotent op (max/min/and/or)
    # and X' * count + init for integer add
    if not _single_input(inst):
        return None
    op = reducer_opcode(inst.attrs["to_apply"])
    bcast, init = inst.operands
    x = c["x"]
    added = set(range(bcast.shape.rank)) - set(bcast.attrs.get("dimensions", ()))
    reduced = set(inst.attrs["dimensions"])
    if op is None or not reduced or not reduced <= added:
        return None
    if op == "add" and not is_integral(inst):
        return None
    if op not in ("maximum", "minimum", "and", "or", "add"):
        return None
    # dimensions of the result: the broadcast dims that survive, mapped to result positions
    keep = [d for d in range(bcast.shape.rank) if d not in reduced]
    pos = {d: i for i, d in enumerate(keep)}
    dims = tuple(pos[d] for d in bcast.attrs.get("dimensions", ()))
    shape = inst.shape.without_layout()
    value = make("broadcast", [x], {"dimensions": dims}, shape=shape) if shape.rank else x
    if op == "add":
        count = 1
        for d in reduced:
            count *= bcast.shape.dims[d]
        value = make("multiply", [value, full_like(inst, count)], shape=shape)
    init_b = make("broadcast", [init], {"dimensions": ()}, shape=shape) if shape.rank else init
    return make(op, [value, init_b], shape=shape)


RULES = [
    (Op("reduce"), reduce_unit_dims),
    (Op("reduce", Op("broadcast", Any("x")), Any()), reduce_of_broadcast),
]
