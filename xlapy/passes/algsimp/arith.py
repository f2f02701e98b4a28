"""Arithmetic identities. IEEE-strict: a float rule is here only when it is exact for every input, NaN, Inf
and signed zeros included (A + 0 is not A when A = -0; A + -0 is). Rules that are only approximately true
for floats sit in FAST_MATH_RULES, used when fast math is asked for."""
from __future__ import annotations

import numpy as np

from ..build import make, make_full_like
from ..pattern import FLOATS, INTS, PRED, REAL, ConstantScalar, Op
from ..rewrite import RuleSet, rule
from .util import INTS_OR_PRED, A, is_zero, scalar_value


@rule(Op("add", A, ConstantScalar(0), dtype=INTS))
def add_zero(inst, a):
    # A + 0 => A (integers)
    return a


@rule(Op("add", A, ConstantScalar(-0.0), dtype=FLOATS))
def add_negative_zero(inst, a):
    # A + -0.0 => A (floats: -0.0 is the additive identity, +0.0 is not)
    return a


@rule(Op("subtract", A, ConstantScalar(0), dtype=REAL))
def sub_zero(inst, a):
    # A - 0 => A (integers; floats with +0.0: x - (+0) == x for every x)
    return a


@rule(Op("subtract", A, A, dtype=INTS_OR_PRED))
def sub_self(inst, a):
    # A - A => 0 (integers only: inf - inf is NaN)
    return make_full_like(inst, 0)


@rule(Op("subtract", ConstantScalar(0), A, dtype=INTS_OR_PRED))
def zero_minus(inst, a):
    # 0 - A => -A (integers)
    return make("negate", [a])


@rule(Op("subtract", ConstantScalar(-0.0), A, dtype=FLOATS))
def negative_zero_minus(inst, a):
    # -0.0 - A => -A (floats: exact for every A, signed zeros included)
    return make("negate", [a])


@rule(Op("multiply", A, ConstantScalar(1), dtype=REAL))
def mul_one(inst, a):
    # A * 1 => A
    return a


@rule(Op("multiply", A, ConstantScalar(0), dtype=INTS_OR_PRED))
def mul_zero(inst, a):
    # A * 0 => 0 (integers only: NaN * 0 is NaN, -1 * 0 is -0)
    return make_full_like(inst, 0)


@rule(Op("divide", A, ConstantScalar(1), dtype=REAL))
def div_one(inst, a):
    # A / 1 => A
    return a


@rule(Op("divide", A, ConstantScalar(name="k"), dtype=FLOATS))
def div_power_of_two(inst, a, k):
    # A / 2^k => A * 2^-k (floats; exact because 2^-k is representable and scaling by it is exact)
    v = scalar_value(k)
    f = float(v) if v is not None else 0.0
    if f == 0 or not np.isfinite(f):
        return None
    mant, exp = np.frexp(abs(f))
    if mant != 0.5:
        return None
    inv = np.asarray(1.0 / f).astype(inst.shape.dtype)
    if float(inv) == 0 or not np.isfinite(float(inv)) or float(inv) * f != 1.0:
        return None
    return make("multiply", [a, make_full_like(inst, inv)])


@rule(Op("negate", Op("negate", A)))
def neg_neg(inst, a):
    # -(-A) => A
    return a


@rule(Op("not", Op("not", A)))
def not_not(inst, a):
    # not(not(A)) => A
    return a


@rule(Op({"maximum", "minimum", "and", "or"}, A, A))
def idempotent_self(inst, a):
    # max(A, A) => A;  min(A, A) => A;  and(A, A) => A;  or(A, A) => A
    return a


@rule(Op("abs", Op("abs", name="inner")))
def abs_abs(inst, inner):
    # abs(abs(A)) => abs(A)
    return inner


@rule(Op("power", A, ConstantScalar(1), dtype=REAL))
def pow_one(inst, a):
    # A ^ 1 => A
    return a


@rule(Op("power", A, ConstantScalar(0), dtype=REAL))
def pow_zero(inst, a):
    # A ^ 0 => 1 (IEEE pow(x, 0) is 1 for every x, NaN included)
    return make_full_like(inst, 1)


@rule(Op("power", A, ConstantScalar(2), dtype=FLOATS))
def pow_two(inst, a):
    # A ^ 2 => A * A (floats: both round the exact square once)
    return make("multiply", [a, a])


@rule(Op("power", A, ConstantScalar(-1), dtype=FLOATS))
def pow_minus_one(inst, a):
    # A ^ -1 => 1 / A (floats)
    return make("divide", [make_full_like(inst, 1), a])


@rule(Op("and", A, ConstantScalar(0), dtype=INTS_OR_PRED))
def and_zero(inst, a):
    # and(A, 0) => 0  (and(A, false) => false)
    return make_full_like(inst, 0)


@rule(Op("and", A, ConstantScalar(name="k"), dtype=INTS_OR_PRED))
def and_true(inst, a, k):
    # and(A, -1) => A  (all ones; and(A, true) => A)
    dtype = inst.shape.dtype
    return a if np.asarray(scalar_value(k)).astype(dtype) == np.asarray(-1).astype(dtype) else None


@rule(Op("or", A, ConstantScalar(0), dtype=INTS_OR_PRED))
def or_false(inst, a):
    # or(A, 0) => A  (or(A, false) => A)
    return a


@rule(Op("or", A, ConstantScalar(True), dtype=PRED))
def or_true(inst, a):
    # or(A, true) => true
    return make_full_like(inst, True)


@rule(Op("xor", A, ConstantScalar(0), dtype=INTS_OR_PRED))
def xor_zero(inst, a):
    # xor(A, 0) => A
    return a


@rule(Op({"shift-left", "shift-right-logical", "shift-right-arithmetic"}, A, ConstantScalar(0), dtype=INTS))
def shift_zero(inst, a):
    # A << 0 => A;  A >> 0 => A
    return a


RULES = RuleSet([
    add_zero, add_negative_zero, sub_zero, sub_self, zero_minus, negative_zero_minus, mul_one, mul_zero, div_one,
    div_power_of_two, neg_neg, not_not, idempotent_self, abs_abs, pow_one, pow_zero, pow_two, pow_minus_one,
    and_zero, and_true, or_false, or_true, xor_zero, shift_zero,
])


# -- fast math: true for real numbers, not for every IEEE value ---------------------------------------------
@rule(Op("add", A, ConstantScalar(name="z"), dtype=FLOATS))
def fm_add_zero(inst, a, z):
    # A + 0 => A (floats; wrong for A = -0)
    return a if is_zero(z) else None


@rule(Op("multiply", A, ConstantScalar(name="z"), dtype=FLOATS))
def fm_mul_zero(inst, a, z):
    # A * 0 => 0 (floats; wrong for NaN, Inf, negative A)
    return make_full_like(inst, 0) if is_zero(z) else None


@rule(Op("subtract", A, A, dtype=FLOATS))
def fm_sub_self(inst, a):
    # A - A => 0 (floats; wrong for NaN and Inf)
    return make_full_like(inst, 0)


@rule(Op("log", Op("exponential", A)))
def fm_log_exp(inst, a):
    # log(exp(A)) => A (wrong where exp overflows)
    return a


@rule(Op("exponential", Op("log", A)))
def fm_exp_log(inst, a):
    # exp(log(A)) => A (wrong for negative A)
    return a


@rule(Op("divide", A, ConstantScalar(name="k"), dtype=FLOATS))
def fm_div_const(inst, a, k):
    # A / C => A * (1 / C)
    v = scalar_value(k)
    if float(v) == 0:
        return None
    return make("multiply", [a, make_full_like(inst, 1.0 / float(v))])


FAST_MATH_RULES = RuleSet([fm_add_zero, fm_mul_zero, fm_sub_self, fm_log_exp, fm_exp_log, fm_div_const])
