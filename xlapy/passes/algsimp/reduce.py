"""Reduce rules: reductions over nothing, over size-1 dimensions, and of broadcasts."""
from __future__ import annotations

from ...hlo import Computation, Instruction
from ..build import make, make_full_like
from ..pattern import Any, Op
from ..rewrite import RuleSet, rule
from .util import INTS_OR_PRED, A

_BINARY_REDUCERS = ("add", "multiply", "maximum", "minimum", "and", "or")
_IDEMPOTENT = ("maximum", "minimum", "and", "or")

INIT = Any("init")
OF_BROADCAST = Op("broadcast", Any("x"), name="bcast")


def reducer_opcode(comp: Computation) -> str | None:
    """'add' when comp is (x, y) -> add(x, y) (either operand order), likewise for max/min/mul/and/or."""
    root = comp.root
    params = comp.parameters
    if (len(params) == 2 and root.opcode in _BINARY_REDUCERS and len(comp.instructions) == 3
            and set(map(id, root.operands)) == set(map(id, params))):
        return root.opcode
    return None


@rule(Op("reduce", A, INIT))
def reduce_unit_dims(inst, a, init):
    # reduce(A, init) over dimensions of size 1 => op(reshape(A), broadcast(init))
    op = reducer_opcode(inst.attrs["to_apply"])
    if inst.shape.is_tuple or op is None or any(a.shape.dims[d] != 1 for d in inst.attrs["dimensions"]):
        return None
    flat = make("reshape", [a], shape=inst.shape.without_layout())
    if inst.shape.rank == 0:
        return make(op, [init, flat], shape=inst.shape.without_layout())
    init_b = make("broadcast", [init], {"dimensions": ()}, shape=inst.shape.without_layout())
    return make(op, [init_b, flat], shape=inst.shape.without_layout())


def _reduces_only_added_dims(inst: Instruction, bcast: Instruction) -> bool:
    """The reduce sums over some dimensions, all of them added by the broadcast."""
    added = set(range(bcast.shape.rank)) - set(bcast.attrs.get("dimensions", ()))
    reduced = set(inst.attrs["dimensions"])
    return not inst.shape.is_tuple and bool(reduced) and reduced <= added


def _in_result(inst: Instruction, bcast: Instruction, x: Instruction) -> Instruction:
    """x broadcast into the reduce's result: the broadcast's kept dimensions, mapped to result positions."""
    reduced = set(inst.attrs["dimensions"])
    keep = [d for d in range(bcast.shape.rank) if d not in reduced]
    pos = {d: i for i, d in enumerate(keep)}
    dims = tuple(pos[d] for d in bcast.attrs.get("dimensions", ()))
    shape = inst.shape.without_layout()
    return make("broadcast", [x], {"dimensions": dims}, shape=shape) if shape.rank else x


def _with_init(op: str, inst: Instruction, value: Instruction, init: Instruction) -> Instruction:
    shape = inst.shape.without_layout()
    init_b = make("broadcast", [init], {"dimensions": ()}, shape=shape) if shape.rank else init
    return make(op, [value, init_b], shape=shape)


@rule(Op("reduce", OF_BROADCAST, INIT))
def reduce_of_broadcast(inst, bcast, x, init):
    # reduce(broadcast(X), init) over only broadcast-added dims => op(X', init) for idempotent op (max/min/and/or)
    op = reducer_opcode(inst.attrs["to_apply"])
    if op not in _IDEMPOTENT or not _reduces_only_added_dims(inst, bcast):
        return None
    return _with_init(op, inst, _in_result(inst, bcast, x), init)


@rule(Op("reduce", OF_BROADCAST, INIT, dtype=INTS_OR_PRED))
def sum_of_broadcast(inst, bcast, x, init):
    # reduce-add(broadcast(X), init) over only broadcast-added dims => X' * count + init (integers)
    if reducer_opcode(inst.attrs["to_apply"]) != "add" or not _reduces_only_added_dims(inst, bcast):
        return None
    count = 1
    for d in inst.attrs["dimensions"]:
        count *= bcast.shape.dims[d]
    shape = inst.shape.without_layout()
    value = make("multiply", [_in_result(inst, bcast, x), make_full_like(inst, count)], shape=shape)
    return _with_init("add", inst, value, init)


RULES = RuleSet([reduce_unit_dims, reduce_of_broadcast, sum_of_broadcast])
