"""Canonicalization, select, compare and convert rules."""
from __future__ import annotations

from ..build import make
from ..pattern import Any, ConstantScalar, Op
from .util import full_like, is_constant_like, is_integral, scalar_value

A, B, P = Any("a"), Any("b"), Any("p")

_FLIPPED = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def constant_to_right(inst, c):
    # C op A => A op C (commutative op; canonical form so that later rules look only on the right)
    a, b = inst.operands
    if is_constant_like(a) and not is_constant_like(b):
        return make(inst.opcode, [b, a], dict(inst.attrs), shape=inst.shape)
    return None


def compare_constant_to_right(inst, c):
    # compare(C, A), direction=D => compare(A, C), direction=flip(D)
    a, b = inst.operands
    if not (is_constant_like(a) and not is_constant_like(b)):
        return None
    attrs = dict(inst.attrs)
    attrs["direction"] = _FLIPPED[attrs["direction"]]
    return make("compare", [b, a], attrs, shape=inst.shape)


def compare_self(inst, c):
    # compare(A, A) => true for EQ/LE/GE, false for NE/LT/GT (integers only: NaN != NaN)
    if not is_integral(c["a"]):
        return None
    return full_like(inst, inst.attrs["direction"] in ("EQ", "LE", "GE"))


def select_constant_pred(inst, c):
    # select(true, A, B) => A;  select(false, A, B) => B
    v = scalar_value(c["p"])
    if v is None:
        return None
    return inst.operands[1] if bool(v) else inst.operands[2]


def select_same(inst, c):
    # select(P, A, A) => A
    return c["a"]


def select_not(inst, c):
    # select(not(P), A, B) => select(P, B, A)
    return make("select", [c["p"], inst.operands[2], inst.operands[1]], shape=inst.shape)


def convert_same_type(inst, c):
    # convert(A) => A when A already has the result's element type
    return c["a"] if c["a"].shape.element_type == inst.shape.element_type else None


def convert_convert_widening(inst, c):
    # convert(convert(A)) => convert(A) when the middle type holds every value of A exactly
    a, mid = c["a"], c["mid"]
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


def bitcast_convert_same_type(inst, c):
    # bitcast-convert(A) => A when the types agree
    return c["a"] if c["a"].shape.compatible(inst.shape) else None


RULES = [
    (Op({"add", "multiply", "maximum", "minimum", "and", "or", "xor"}, Any(), Any()), constant_to_right),
    (Op("compare", Any(), Any()), compare_constant_to_right),
    (Op("compare", A, A), compare_self),
    (Op("select", ConstantScalar(name="p"), Any(), Any()), select_constant_pred),
    (Op("select", Any(), A, A), select_same),
    (Op("select", Op("not", P), Any(), Any()), select_not),
    (Op("convert", A), convert_same_type),
    (Op("convert", Op("convert", A, name="mid")), convert_convert_widening),
    (Op("bitcast-convert", A), bitcast_convert_same_type),
]
