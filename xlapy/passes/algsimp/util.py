"""Patterns and predicates shared by the algebraic simplifier's rule files."""
from __future__ import annotations

import numpy as np

from ...hlo import Instruction
from ..pattern import INTS, PRED, Any, literal_scalar

A, B = Any("a"), Any("b")
INTS_OR_PRED = INTS | PRED      # exact arithmetic: no NaN, no Inf, no signed zero


def is_constant_like(inst: Instruction) -> bool:
    """A constant, or a broadcast/iota of one: canonicalization moves these to the right."""
    return inst.opcode in ("constant", "iota") or (
        inst.opcode == "broadcast" and inst.operands[0].opcode == "constant")


def scalar_value(inst: Instruction):
    return literal_scalar(inst)


def is_zero(inst: Instruction) -> bool:
    """A uniform constant equal to zero of either sign (a float rule that does not care about the sign)."""
    v = literal_scalar(inst)
    if v is None or np.iscomplexobj(v):
        return False
    try:
        return float(v) == 0.0
    except (TypeError, ValueError):
        return False
