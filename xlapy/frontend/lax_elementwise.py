"""lax's elementwise ops: unary math, binary arithmetic and bitwise ops, comparisons, select and clamp, and the
bit-level conversions (bitcast_convert_type, reduce_precision). convert_element_type is in lax_operands.py.

Each op binds one HLO opcode, named as JAX names it (`lax.sub` binds `subtract`). Binary ops and comparisons
apply lax's operand rule (`coerce_same`: equal dtypes and shapes, weak Python scalars adapt); unary ops keep
their operand's weak type.
"""
from __future__ import annotations

import builtins

import numpy as np

from .lax_operands import coerce_same, convert, hlo_shape, lax_error
from .lax_shapes import broadcast, full_like
from .tracer import aval, bind


def _unary(name: str, opcode: str, attrs: dict | None = None):
    def op(x):
        return bind(opcode, [x], attrs, name=name, weak_type=aval(x).weak_type)
    op.__name__ = name
    op.__doc__ = f"Elementwise `{opcode}` (lax.{name})."
    return op


def _binary(name: str, opcode: str, attrs: dict | None = None):
    def op(x, y):
        (x, y), weak = coerce_same(name, x, y)
        return bind(opcode, [x, y], attrs, name=name, weak_type=weak)
    op.__name__ = name
    op.__doc__ = f"Elementwise `{opcode}` (lax.{name}); operands share dtype and shape."
    return op


def _compare(name: str, direction: str):
    def op(x, y):
        (x, y), _ = coerce_same(name, x, y)
        return bind("compare", [x, y], {"direction": direction}, name=name)
    op.__name__ = name
    op.__doc__ = f"Elementwise comparison {direction} (lax.{name}) -> bool."
    return op


neg = _unary("neg", "negate")
abs = _unary("abs", "abs")
sign = _unary("sign", "sign")
floor = _unary("floor", "floor")
ceil = _unary("ceil", "ceil")
exp = _unary("exp", "exponential")
expm1 = _unary("expm1", "exponential-minus-one")
log = _unary("log", "log")
log1p = _unary("log1p", "log-plus-one")
logistic = _unary("logistic", "logistic")
tanh = _unary("tanh", "tanh")
sin = _unary("sin", "sine")
cos = _unary("cos", "cosine")
tan = _unary("tan", "tan")
sqrt = _unary("sqrt", "sqrt")
rsqrt = _unary("rsqrt", "rsqrt")
cbrt = _unary("cbrt", "cbrt")
erf = _unary("erf", "erf")
bitwise_not = _unary("not", "not")
population_count = _unary("population_count", "popcnt")
clz = _unary("clz", "count-leading-zeros")
real = _unary("real", "real")
imag = _unary("imag", "imag")


def is_finite(x):
    """Elementwise is-finite -> bool."""
    return bind("is-finite", [x], name="is_finite")


class RoundingMethod:
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO):
    opcode = "round-nearest-even" if int(rounding_method) == RoundingMethod.TO_NEAREST_EVEN else "round-nearest-afz"
    return bind(opcode, [x], name="round", weak_type=aval(x).weak_type)


add = _binary("add", "add")
sub = _binary("sub", "subtract")
mul = _binary("mul", "multiply")
div = _binary("div", "divide")
rem = _binary("rem", "remainder")
pow = _binary("pow", "power")
_max_real = _binary("max", "maximum")
_min_real = _binary("min", "minimum")
atan2 = _binary("atan2", "atan2")
bitwise_and = _binary("and", "and")
bitwise_or = _binary("or", "or")
bitwise_xor = _binary("xor", "xor")
shift_left = _binary("shift_left", "shift-left")
shift_right_arithmetic = _binary("shift_right_arithmetic", "shift-right-arithmetic")
shift_right_logical = _binary("shift_right_logical", "shift-right-logical")
complex = _binary("complex", "complex")
eq = _compare("eq", "EQ")
ne = _compare("ne", "NE")
lt = _compare("lt", "LT")
le = _compare("le", "LE")
gt = _compare("gt", "GT")
ge = _compare("ge", "GE")


def _lexicographic(name: str, real_op, direction: str):
    """lax.max / lax.min: the HLO op on real values; on complex values JAX's lowering (neither backend defines
    maximum on complex): x where compare(x, y) holds on the real parts, or on the imaginary parts where the real
    parts are equal, else y (so a NaN real part in x, or in y, picks y)."""
    def op(x, y):
        (x, y), _ = coerce_same(name, x, y)
        if aval(x).dtype.kind != "c":
            return real_op(x, y)
        compare = gt if direction == "GT" else lt
        rx, ry = real(x), real(y)
        return select(select(eq(rx, ry), compare(imag(x), imag(y)), compare(rx, ry)), x, y)
    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (lax.{name}); on complex values lexicographic (real, then imaginary), as JAX."
    return op


max = _lexicographic("max", _max_real, "GT")
min = _lexicographic("min", _min_real, "LT")


def integer_pow(x, y: int):
    """x ** y for a static Python int y, by repeated multiplication (as JAX lowers it)."""
    if y == 0:
        return full_like(x, 1)
    acc, base, n = None, x, builtins.abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return div(full_like(x, 1), acc) if y < 0 else acc


def select(pred, on_true, on_false):
    """Elementwise pred ? on_true : on_false (HLO select; JAX names it select_n)."""
    (on_true, on_false), weak = coerce_same("select", on_true, on_false)
    shape = aval(on_true).shape
    if aval(pred).dtype != np.bool_:
        raise lax_error("select", f"pred must be bool, got {aval(pred).dtype}")
    if aval(pred).shape != shape and aval(pred).shape == ():
        pred = broadcast(pred, shape)
    return bind("select", [pred, on_true, on_false], name="select_n", weak_type=weak)


def clamp(min, x, max):
    """Elementwise min(max(x, min), max); min and max may be scalars."""
    dt = aval(x).dtype
    lo = convert(min, dt) if aval(min).dtype != dt else min
    hi = convert(max, dt) if aval(max).dtype != dt else max
    return bind("clamp", [lo, x, hi], name="clamp", weak_type=aval(x).weak_type)


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits; a narrower type adds a trailing dimension, a wider one consumes it."""
    a = aval(operand)
    new_dtype = np.dtype(new_dtype)
    old_bits, new_bits = a.dtype.itemsize, new_dtype.itemsize
    if new_bits == old_bits:
        dims = a.shape
    elif new_bits < old_bits:
        dims = a.shape + (old_bits // new_bits,)
    else:
        if not a.shape or a.shape[-1] != new_bits // old_bits:
            raise lax_error("bitcast_convert_type", f"cannot bitcast {a} to {new_dtype}: the last dimension must "
                                                    f"be {new_bits // old_bits}")
        dims = a.shape[:-1]
    return bind("bitcast-convert", [operand], shape=hlo_shape(new_dtype, dims), name="bitcast_convert_type")


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    return bind("reduce-precision", [operand], {"exponent_bits": int(exponent_bits),
                                                "mantissa_bits": int(mantissa_bits)}, name="reduce_precision",
                weak_type=aval(operand).weak_type)
