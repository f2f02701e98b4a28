"""Small predicates and constructors shared by the algebraic simplifier's rule files."""
from __future__ import annotations

import numpy as np

from ...hlo import Instruction
from ..build import make
from ..pattern import literal_scalar


def is_integral(inst: Instruction) -> bool:
    return not inst.shape.is_tuple and (inst.shape.ptype.is_integral or inst.shape.ptype.is_pred)


def is_float(inst: Instruction) -> bool:
    return not inst.shape.is_tuple and inst.shape.ptype.is_float


def is_constant_like(inst: Instruction) -> bool:
    """A constant, or a broadcast/iota of one: canonicalization moves these to the right."""
    return inst.opcode in ("constant", "iota") or (
        inst.opcode == "broadcast" and inst.operands[0].opcode == "constant")


def scalar_value(inst: Instruction):
    return literal_scalar(inst)


def is_negative_zero(v) -> bool:
    """True for the float value -0.0 (the identity of IEEE addition)."""
    return v is not None and _as_float(v) == 0.0 and bool(np.signbit(_as_float(v)))


def equals(v, x) -> bool:
    """v (a literal scalar or None) equals x, with +0.0 and -0.0 told apart."""
    if v is None:
        return False
    f = _as_float(v)
    return f == x and bool(np.signbit(f)) == bool(np.signbit(float(x)))


def _as_float(v) -> float:
    if np.iscomplexobj(v):
        return float("nan")   # no complex rule looks at values
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def full_like(inst: Instruction, value) -> Instruction:
    """A detached constant (broadcast when inst is not a scalar) equal to `value` everywhere, typed like inst."""
    arr = np.asarray(value).astype(inst.shape.dtype)
    c = make("constant", [], shape=inst.shape.with_dims(()).without_layout(), literal=arr)
    if inst.shape.rank == 0:
        return c
    return make("broadcast", [c], {"dimensions": ()}, shape=inst.shape.without_layout())
