"""Canonicalization, select, compare and convert rules."""
from __future__ import annotations

from ..build import make, make_full_like
from ..pattern import Any, ConstantScalar, Op
from ..rewrite import RuleSet, rule
from .util import INTS_OR_PRED, A, B, is_constant_like

_FLIPPED = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}
_COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "and", "or", "xor"}

C = Any("c", pred=is_constant_like)
NOT_CONSTANT = Any("a", pred=lambda inst: not is_constant_like(inst))


@rule(Op(_COMMUTATIVE, Any(), Any()))
def constant_to_right(inst):
    # C op A => A op C (commutative op; canonical form so that later rules look only on the right)
    # (the operand order is read here, not matched: the pattern of a commutative op matches either order)
    a, b = inst.operands
    if is_constant_like(a) and not is_constant_like(b):
        return make(inst.opcode, [b, a], dict(inst.attrs), shape=inst.shape)
    return None


@rule(Op("compare", C, NOT_CONSTANT))
def compare_constant_to_right(inst, c, a):
    # compare(C, A), direction=D => compare(A, C), direction=flip(D)
    attrs = dict(inst.attrs)
    attrs["direction"] = _FLIPPED[attrs["direction"]]
    return make("compare", [a, c], attrs, shape=inst.shape)


@rule(Op("compare", Any("a", dtype=INTS_OR_PRED), A))
def compare_self(inst, a):
    # compare(A, A) => true for EQ/LE/GE, false for NE/LT/GT (integers only: NaN != NaN)
    return make_full_like(inst, inst.attrs["direction"] in ("EQ", "LE", "GE"))


@rule(Op("select", ConstantScalar(True), A, B))
def select_true(inst, a, b):
    # select(true, A, B) => A
    return a


@rule(Op("select", ConstantScalar(False), A, B))
def select_false(inst, a, b):
    # select(false, A, B) => B
    return b


@rule(Op("select", Any(), A, A))
def select_same(inst, a):
    # select(P, A, A) => A
    return a


@rule(Op("select", Op("not", Any("p")), A, B))
def select_not(inst, p, a, b):
    # select(not(P), A, B) => select(P, B, A)
    return make("select", [p, b, a], shape=inst.shape)


@rule(Op("convert", A))
def convert_same_type(inst, a):
    # convert(A) => A when A already has the result's element type
    return a if a.shape.element_type == inst.shape.element_type else None


@rule(Op("convert", Op("convert", A, name="mid")))
def convert_convert_widening(inst, a, mid):
    # convert(convert(A)) => convert(A) when the middle type holds every value of A exactly (A itself when
    # the outer type is A's)
    src, via, dst = a.shape.ptype, mid.shape.ptype, inst.shape.ptype
    exact = ((src.is_float and via.is_float and via.bits > src.bits and src.name in ("f16", "bf16", "f32")
              and via.name in ("f32", "f64") and not (src.name == "bf16" and via.name == "f16"))
             or (src.is_integral and via.is_integral and via.bits > src.bits
                 and (src.is_signed == via.is_signed or (src.is_unsigned and via.is_signed))))
    if not exact:
        return None
    if dst.name == src.name:
        return a
    return make("convert", [a], shape=inst.shape)


@rule(Op("bitcast-convert", A))
def bitcast_convert_same_type(inst, a):
    # bitcast-convert(A) => A when the types agree
    return a if a.shape.compatible(inst.shape) else None


RULES = RuleSet([
    constant_to_right, compare_constant_to_right, compare_self, select_true, select_false, select_same, select_not,
    convert_same_type, convert_convert_widening, bitcast_convert_same_type,
])
