"""Arithmetic identities. IEEE-strict: a float rule is here only when it is exact for every input, NaN, Inf
and signed zeros included (A + 0 is not A when A = -0; A + -0 is). Rules that are only approximately true
for floats sit in FAST_MATH_RULES, used when fast math is asked for."""
from __future__ import annotations

import numpy as np

from ..build import make
from ..pattern import Any, ConstantScalar, Op
from .util import equals, full_like, is_float, is_integral, is_negative_zero, scalar_value

A, B = Any("a"), Any("b")


def _a(inst, c):
    return c["a"]


def add_zero(inst, c):
    # A + 0 => A (integers);  A + -0.0 => A (floats: -0.0 is the additive identity)
    v = scalar_value(c["z"])
    if is_integral(inst) and v == 0 and not inst.shape.ptype.is_pred:
        return c["a"]
    if is_float(inst) and is_negative_zero(v):
        return c["a"]
    return None


def sub_zero(inst, c):
    # A - 0 => A (integers, and floats with +0.0: x - (+0) == x for every x)
    v = scalar_value(c["z"])
    if is_integral(inst) and v == 0:
        return c["a"]
    if is_float(inst) and equals(v, 0.0):
        return c["a"]
    return None


def sub_self(inst, c):
    # A - A => 0 (integers only: inf - inf is NaN)
    return full_like(inst, 0) if is_integral(inst) else None


def zero_minus(inst, c):
    # 0 - A => -A (integers);  -0.0 - A => -A (floats)
    v = scalar_value(c["z"])
    if (is_integral(inst) and v == 0) or (is_float(inst) and is_negative_zero(v)):
        return make("negate", [c["a"]])
    return None


def mul_one(inst, c):
    # A * 1 => A
    return c["a"] if equals(scalar_value(c["one"]), 1.0) and not inst.shape.ptype.is_complex else None


def mul_zero(inst, c):
    # A * 0 => 0 (integers only: NaN * 0 is NaN, -1 * 0 is -0)
    return full_like(inst, 0) if is_integral(inst) and scalar_value(c["z"]) == 0 else None


def div_one(inst, c):
    # A / 1 => A
    return c["a"] if equals(scalar_value(c["one"]), 1.0) and not inst.shape.ptype.is_complex else None


def div_power_of_two(inst, c):
    # A / 2^k => A * 2^-k (floats; exact because 2^-k is representable and scaling by it is exact)
    if not is_float(inst):
        return None
    v = scalar_value(c["k"])
    f = float(v) if v is not None else 0.0
    if f == 0 or not np.isfinite(f):
        return None
    mant, exp = np.frexp(abs(f))
    if mant != 0.5:
        return None
    inv = np.asarray(1.0 / f).astype(inst.shape.dtype)
    if float(inv) == 0 or not np.isfinite(float(inv)) or float(inv) * f != 1.0:
        return None
    return make("multiply", [c["a"], full_like(inst, inv)])


def neg_neg(inst, c):
    # -(-A) => A
    return c["a"]


def not_not(inst, c):
    # not(not(A)) => A
    return c["a"]


def idempotent_self(inst, c):
    # max(A, A) => A;  min(A, A) => A;  and(A, A) => A;  or(A, A) => A
    return c["a"]


def abs_abs(inst, c):
    # abs(abs(A)) => abs(A)
    return c["inner"]


def pow_one(inst, c):
    # A ^ 1 => A
    return c["a"] if equals(scalar_value(c["e"]), 1.0) and not inst.shape.ptype.is_complex else None


def pow_zero(inst, c):
    # A ^ 0 => 1 (IEEE pow(x, 0) is 1 for every x, NaN included)
    v = scalar_value(c["e"])
    return full_like(inst, 1) if v is not None and equals(v, 0.0) and not inst.shape.ptype.is_complex else None


def pow_two(inst, c):
    # A ^ 2 => A * A (floats: both round the exact square once)
    return make("multiply", [c["a"], c["a"]]) if is_float(inst) and equals(scalar_value(c["e"]), 2.0) else None


def pow_minus_one(inst, c):
    # A ^ -1 => 1 / A (floats)
    if is_float(inst) and equals(scalar_value(c["e"]), -1.0):
        return make("divide", [full_like(inst, 1), c["a"]])
    return None


def and_true(inst, c):
    # and(A, true) => A  (pred);  and(A, -1) => A (integers: all ones)
    v = scalar_value(c["k"])
    if v is None:
        return None
    if inst.shape.ptype.is_pred:
        return c["a"] if bool(v) else full_like(inst, False)   # and(A, false) => false
    if is_integral(inst):
        if int(v) == 0:
            return full_like(inst, 0)                              # and(A, 0) => 0
        if np.asarray(v).astype(inst.shape.dtype) == np.asarray(-1).astype(inst.shape.dtype):
            return c["a"]
    return None


def or_false(inst, c):
    # or(A, false) => A;  or(A, true) => true  (pred);  or(A, 0) => A (integers)
    v = scalar_value(c["k"])
    if v is None:
        return None
    if inst.shape.ptype.is_pred:
        return full_like(inst, True) if bool(v) else c["a"]
    if is_integral(inst) and int(v) == 0:
        return c["a"]
    return None


def xor_zero(inst, c):
    # xor(A, 0) => A
    return c["a"] if is_integral(inst) and scalar_value(c["k"]) is not None and int(scalar_value(c["k"])) == 0 \
        else None


def shift_zero(inst, c):
    # A << 0 => A;  A >> 0 => A
    v = scalar_value(c["k"])
    return c["a"] if v is not None and int(v) == 0 else None


RULES = [
    (Op("add", A, ConstantScalar(name="z")), add_zero),
    (Op("subtract", A, ConstantScalar(name="z")), sub_zero),
    (Op("subtract", A, A), sub_self),
    (Op("subtract", ConstantScalar(name="z"), A), zero_minus),
    (Op("multiply", A, ConstantScalar(name="one")), mul_one),
    (Op("multiply", A, ConstantScalar(name="z")), mul_zero),
    (Op("divide", A, ConstantScalar(name="one")), div_one),
    (Op("divide", A, ConstantScalar(name="k")), div_power_of_two),
    (Op("negate", Op("negate", A)), neg_neg),
    (Op("not", Op("not", A)), not_not),
    (Op({"maximum", "minimum", "and", "or"}, A, A), idempotent_self),
    (Op("abs", Op("abs", A, name="inner")), abs_abs),
    (Op("power", A, ConstantScalar(name="e")), pow_one),
    (Op("power", A, ConstantScalar(name="e")), pow_zero),
    (Op("power", A, ConstantScalar(name="e")), pow_two),
    (Op("power", A, ConstantScalar(name="e")), pow_minus_one),
    (Op("and", A, ConstantScalar(name="k")), and_true),
    (Op("or", A, ConstantScalar(name="k")), or_false),
    (Op("xor", A, ConstantScalar(name="k")), xor_zero),
    (Op({"shift-left", "shift-right-logical", "shift-right-arithmetic"}, A, ConstantScalar(name="k")), shift_zero),
]


# -- fast math: true for real numbers, not for every IEEE value ---------------------------------------------
def fm_add_zero(inst, c):
    # A + 0 => A (floats; wrong for A = -0)
    v = scalar_value(c["z"])
    return c["a"] if is_float(inst) and v is not None and float(v) == 0.0 else None


def fm_mul_zero(inst, c):
    # A * 0 => 0 (floats; wrong for NaN, Inf, negative A)
    v = scalar_value(c["z"])
    return full_like(inst, 0) if is_float(inst) and v is not None and float(v) == 0.0 else None


def fm_sub_self(inst, c):
    # A - A => 0 (floats; wrong for NaN and Inf)
    return full_like(inst, 0) if is_float(inst) else None


def fm_log_exp(inst, c):
    # log(exp(A)) => A (wrong where exp overflows)
    return c["a"]


def fm_exp_log(inst, c):
    # exp(log(A)) => A (wrong for negative A)
    return c["a"]


def fm_div_const(inst, c):
    # A / C => A * (1 / C)
    v = scalar_value(c["k"])
    if not is_float(inst) or v is None or float(v) == 0:
        return None
    return make("multiply", [c["a"], full_like(inst, 1.0 / float(v))])


FAST_MATH_RULES = [
    (Op("add", A, ConstantScalar(name="z")), fm_add_zero),
    (Op("multiply", A, ConstantScalar(name="z")), fm_mul_zero),
    (Op("subtract", A, A), fm_sub_self),
    (Op("log", Op("exponential", A)), fm_log_exp),
    (Op("exponential", Op("log", A)), fm_exp_log),
    (Op("divide", A, ConstantScalar(name="k")), fm_div_const),
]
