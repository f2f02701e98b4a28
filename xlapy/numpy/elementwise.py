"""Elementwise ufuncs with JAX's semantics: numpy broadcasting, JAX's promotion (weak Python scalars, ints ->
the default float for transcendental functions and true division), lowered to lax ops."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..frontend import operators
from ._util import (arr, as_bool, aval, broadcast_all, dtypes, error, lax, promote, promote_inexact, to_inexact)


def _is_int(x) -> bool:
    return aval(x).dtype.kind in "iub"


def _const(x, value):
    """A scalar constant of x's dtype."""
    return np.asarray(value, dtype=aval(x).dtype)


def _unary_inexact(name: str, fn):
    def op(x):
        return fn(to_inexact(arr(x)))
    op.__name__ = name
    op.__doc__ = f"numpy.{name} (integers are promoted to the default float)."
    return op


def _binary(name: str, fn, inexact: bool = False):
    def op(x, y):
        xs = promote_inexact(name, x, y) if inexact else promote(name, x, y)
        return fn(*xs)
    op.__name__ = name
    op.__doc__ = f"numpy.{name} with numpy broadcasting and JAX's dtype promotion."
    return op


def _bool_to_int(x):
    return lax.convert_element_type(x, dtypes.default_int()) if aval(x).dtype == np.bool_ else x


# -- arithmetic -------------------------------------------------------------------------------------------

add = _binary("add", lambda x, y: lax.bitwise_or(x, y) if aval(x).dtype == np.bool_ else lax.add(x, y))
subtract = _binary("subtract", lax.sub)
multiply = _binary("multiply", lambda x, y: lax.bitwise_and(x, y) if aval(x).dtype == np.bool_ else lax.mul(x, y))
true_divide = _binary("true_divide", lax.div, inexact=True)
divide = true_divide
floor_divide = _binary("floor_divide", lambda x, y: operators.floor_divide_promoted(_bool_to_int(x), _bool_to_int(y)))
remainder = _binary("remainder", lambda x, y: operators.mod_promoted(_bool_to_int(x), _bool_to_int(y)))
mod = remainder
fmod = _binary("fmod", lambda x, y: operators.fmod_promoted(_bool_to_int(x), _bool_to_int(y)))
arctan2 = _binary("arctan2", lax.atan2, inexact=True)
atan2 = arctan2


def divmod(x, y):
    return floor_divide(x, y), remainder(x, y)


def power(x, y):
    """x ** y as in JAX: a static Python int exponent is repeated multiplication (lax.integer_pow; an integer base
    cannot take a negative one); integer powers otherwise follow JAX bit for bit (operators.int_power:
    (-1) ** -3 == -1, 2 ** -1 == 0); floats are lax.pow."""
    if isinstance(y, int) and not isinstance(y, bool):
        return operators.static_power(_bool_to_int(arr(x)), y)
    x, y = promote("power", x, y)
    return operators.power_promoted(_bool_to_int(x), _bool_to_int(y))


pow = power


def negative(x):
    return lax.neg(arr(x))


def positive(x):
    return arr(x)


def absolute(x):
    return operators.absolute(arr(x))


abs = absolute


def fabs(x):
    return lax.abs(to_inexact(arr(x)))


def sign(x):
    return lax.sign(arr(x))


def square(x):
    x = _bool_to_int(arr(x))
    return lax.mul(x, x)


def reciprocal(x):
    x = to_inexact(arr(x))
    return lax.div(_const(x, 1), x)


def _int_passthrough(name: str, fn):
    def op(x):
        x = arr(x)
        return x if _is_int(x) else fn(x)
    op.__name__ = name
    op.__doc__ = f"numpy.{name} (integers are returned unchanged, as in JAX)."
    return op


floor = _int_passthrough("floor", lax.floor)
ceil = _int_passthrough("ceil", lax.ceil)
trunc = _int_passthrough("trunc", lambda x: lax.select(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x)))
fix = trunc


def _round_even(x):
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def round(a, decimals: int = 0):
    """Round half to even; `decimals` scales by 10**decimals first (integers with decimals >= 0 unchanged)."""
    x = arr(a)
    if _is_int(x):
        if decimals < 0:
            raise error("round", "integer rounding with decimals < 0 is not implemented (as in JAX)")
        return x
    if decimals == 0:
        return _round_even(x)
    factor = _const(x, 10.0 ** decimals)
    return lax.div(_round_even(lax.mul(x, factor)), factor)


around = round
round_ = round


def rint(x):
    return _round_even(to_inexact(arr(x)))


def complex_pick(x, y, compare):
    """x where compare(x, y) holds lexicographically (real parts, then imaginary parts where the real parts are
    equal), else y: JAX's lowering of lax.max / lax.min (compare = gt / lt) on complex values, and its reducer."""
    rx, ry = lax.real(x), lax.real(y)
    pick_x = lax.select(lax.eq(rx, ry), compare(lax.imag(x), lax.imag(y)), compare(rx, ry))
    return lax.select(pick_x, x, y)


def maximum(x, y):
    x, y = promote("maximum", x, y)
    dt = aval(x).dtype
    if np.issubdtype(dt, np.complexfloating):
        return complex_pick(x, y, lax.gt)
    return lax.bitwise_or(x, y) if dt == np.bool_ else lax.max(x, y)


def minimum(x, y):
    x, y = promote("minimum", x, y)
    dt = aval(x).dtype
    if np.issubdtype(dt, np.complexfloating):
        return complex_pick(x, y, lax.lt)
    return lax.bitwise_and(x, y) if dt == np.bool_ else lax.min(x, y)


def fmax(x, y):
    """The maximum ignoring NaN (NaN only when both are NaN)."""
    x, y = promote("fmax", x, y)
    if not dtypes.is_inexact(aval(x).dtype):
        return maximum(x, y)
    return lax.select(isnan(x), y, lax.select(isnan(y), x, maximum(x, y)))


def fmin(x, y):
    x, y = promote("fmin", x, y)
    if not dtypes.is_inexact(aval(x).dtype):
        return minimum(x, y)
    return lax.select(isnan(x), y, lax.select(isnan(y), x, minimum(x, y)))


def clip(arr_=None, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """Clip to [min, max] (either may be None); promotes like maximum/minimum."""
    x = arr_ if arr_ is not None else a
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return arr(x)


def where(condition, x=None, y=None, *, size=None, fill_value=None):
    """where(c, x, y) selects elementwise; where(c) is nonzero(c) and needs `size=` under jit."""
    if x is None and y is None:
        from .indexing_ops import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise error("where", "takes either one argument or three (condition, x, y)")
    c = as_bool(condition)
    x, y = promote("where", x, y)
    c, x, y = broadcast_all("where", c, x, y)
    return lax.select(c, x, y)


# -- exponentials, logarithms, trigonometry ------------------------------------------------------------------

_LN2, _LN10 = math.log(2.0), math.log(10.0)

exp = _unary_inexact("exp", lax.exp)
expm1 = _unary_inexact("expm1", lax.expm1)
exp2 = _unary_inexact("exp2", lambda x: lax.exp(lax.mul(x, _const(x, _LN2))))
log = _unary_inexact("log", lax.log)
log1p = _unary_inexact("log1p", lax.log1p)
log2 = _unary_inexact("log2", lambda x: lax.div(lax.log(x), _const(x, _LN2)))
log10 = _unary_inexact("log10", lambda x: lax.div(lax.log(x), _const(x, _LN10)))
sqrt = _unary_inexact("sqrt", lax.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)
sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
tan = _unary_inexact("tan", lax.tan)
tanh = _unary_inexact("tanh", lax.tanh)
arctan = _unary_inexact("arctan", lambda x: lax.atan2(x, lax.full_like(x, 1)))


def _asin(x):
    # asin(x) = 2 atan2(x, 1 + sqrt(1 - x^2))   (JAX's lowering; NaN outside [-1, 1])
    one = _const(x, 1)
    return lax.mul(_const(x, 2), lax.atan2(x, lax.add(one, lax.sqrt(lax.sub(one, lax.mul(x, x))))))


def _acos(x):
    # acos(x) = 2 atan2(sqrt(1 - x^2), 1 + x), and pi at x = -1
    one = _const(x, 1)
    y = lax.mul(_const(x, 2), lax.atan2(lax.sqrt(lax.sub(one, lax.mul(x, x))), lax.add(one, x)))
    return lax.select(lax.eq(x, _const(x, -1)), lax.full_like(x, math.pi), y)


arcsin = _unary_inexact("arcsin", _asin)
arccos = _unary_inexact("arccos", _acos)
# the hyperbolics are lax's (frontend/lax_more.py: real formulas, and complex ones through the parts)
sinh = _unary_inexact("sinh", lax.sinh)
cosh = _unary_inexact("cosh", lax.cosh)
arcsinh = _unary_inexact("arcsinh", lax.asinh)
arccosh = _unary_inexact("arccosh", lax.acosh)
arctanh = _unary_inexact("arctanh", lax.atanh)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
deg2rad = _unary_inexact("deg2rad", lambda x: lax.mul(x, _const(x, math.pi / 180)))
rad2deg = _unary_inexact("rad2deg", lambda x: lax.mul(x, _const(x, 180 / math.pi)))
radians, degrees = deg2rad, rad2deg


def _sinc(x):
    px = lax.mul(x, _const(x, math.pi))
    zero = lax.eq(x, _const(x, 0))
    safe = lax.select(zero, lax.full_like(x, 1), px)
    return lax.select(zero, lax.full_like(x, 1), lax.div(lax.sin(safe), safe))


sinc = _unary_inexact("sinc", _sinc)


def hypot(x, y):
    x, y = promote_inexact("hypot", x, y)
    x, y = lax.abs(x), lax.abs(y)
    big, small = lax.max(x, y), lax.min(x, y)
    safe = lax.select(lax.eq(big, _const(big, 0)), lax.full_like(big, 1), big)
    ratio = lax.div(small, safe)
    out = lax.mul(big, lax.sqrt(lax.add(_const(big, 1), lax.mul(ratio, ratio))))
    return lax.select(lax.eq(big, _const(big, 0)), big, out)


def logaddexp(x, y):
    x, y = promote_inexact("logaddexp", x, y)
    big = lax.max(x, y)
    delta = lax.sub(x, y)
    out = lax.add(big, lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
    return lax.select(lax.ne(delta, delta), lax.add(x, y), out)


def heaviside(x1, x2):
    x1, x2 = promote_inexact("heaviside", x1, x2)
    zero, one = lax.full_like(x1, 0), lax.full_like(x1, 1)
    return lax.select(lax.lt(x1, _const(x1, 0)), zero, lax.select(lax.gt(x1, _const(x1, 0)), one, x2))


def signbit(x):
    x = arr(x)
    dt = aval(x).dtype
    if dt.kind == "u" or dt == np.bool_:
        return lax.full(aval(x).shape, False, np.bool_)
    if dt.kind == "i":
        return lax.lt(x, _const(x, 0))
    int_type = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
    bits = lax.bitcast_convert_type(x, int_type)
    return lax.lt(bits, np.zeros((), int_type))


def copysign(x1, x2):
    x1, x2 = promote_inexact("copysign", x1, x2)
    mag = lax.abs(x1)
    return lax.select(signbit(x2), lax.neg(mag), mag)


# -- predicates and comparisons ---------------------------------------------------------------------------

def isnan(x):
    x = arr(x)
    if not dtypes.is_inexact(aval(x).dtype):
        return lax.full(aval(x).shape, False, np.bool_)
    return lax.ne(x, x)


def isinf(x):
    x = arr(x)
    dt = aval(x).dtype
    if not dtypes.is_inexact(dt):
        return lax.full(aval(x).shape, False, np.bool_)
    if np.issubdtype(dt, np.complexfloating):      # JAX's: either part infinite
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return lax.eq(lax.abs(x), _const(x, np.inf))


def isfinite(x):
    x = arr(x)
    dt = aval(x).dtype
    if not dtypes.is_inexact(dt):
        return lax.full(aval(x).shape, True, np.bool_)
    if np.issubdtype(dt, np.complexfloating):      # JAX's: both parts finite
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


def _isposneginf(name: str, x, compare):
    x = arr(x)
    dt = aval(x).dtype
    if np.issubdtype(dt, np.complexfloating):
        raise ValueError(f"{name}: isposinf/isneginf are not well defined for complex types (got {dt})")
    return lax.bitwise_and(isinf(x), compare(x, _const(x, 0))) if dtypes.is_inexact(dt) else isinf(x)


def isposinf(x):
    return _isposneginf("isposinf", x, lax.gt)


def isneginf(x):
    return _isposneginf("isneginf", x, lax.lt)


equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
less = _binary("less", lax.lt)
less_equal = _binary("less_equal", lax.le)
greater = _binary("greater", lax.gt)
greater_equal = _binary("greater_equal", lax.ge)


def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """|a - b| <= atol + rtol |b|; infinities are close only to themselves; NaN only if equal_nan."""
    a, b = promote_inexact("isclose", a, b)
    close = lax.le(lax.abs(lax.sub(a, b)), lax.add(_const(a, atol), lax.mul(_const(a, rtol), lax.abs(b))))
    a_inf, b_inf = isinf(a), isinf(b)
    close = lax.bitwise_and(close, lax.bitwise_not(lax.bitwise_or(a_inf, b_inf)))
    close = lax.bitwise_or(close, lax.bitwise_and(lax.bitwise_and(a_inf, b_inf), lax.eq(a, b)))
    if equal_nan:
        close = lax.bitwise_or(close, lax.bitwise_and(isnan(a), isnan(b)))
    return close


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    return lax.reduce_and(isclose(a, b, rtol, atol, equal_nan), None)


def array_equal(a1, a2, equal_nan: bool = False) -> Any:
    a1, a2 = arr(a1), arr(a2)
    if aval(a1).shape != aval(a2).shape:
        return arr(False)
    eq = equal(a1, a2)
    if equal_nan:
        eq = lax.bitwise_or(eq, lax.bitwise_and(isnan(a1), isnan(a2)))
    return lax.reduce_and(eq, None)


# -- logical and bitwise ----------------------------------------------------------------------------------

def logical_and(x, y):
    return lax.bitwise_and(*promote("logical_and", as_bool(x), as_bool(y)))


def logical_or(x, y):
    return lax.bitwise_or(*promote("logical_or", as_bool(x), as_bool(y)))


def logical_xor(x, y):
    return lax.bitwise_xor(*promote("logical_xor", as_bool(x), as_bool(y)))


def logical_not(x):
    return lax.bitwise_not(as_bool(x))


bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)
left_shift = _binary("left_shift", lax.shift_left)
right_shift = _binary("right_shift", operators.right_shift_promoted)
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def invert(x):
    return lax.bitwise_not(arr(x))


bitwise_not = bitwise_invert = invert


# -- complex parts (real dtypes only need the trivial cases) ------------------------------------------------

def real(x):
    x = arr(x)
    return lax.real(x) if aval(x).dtype.kind == "c" else x


def imag(x):
    x = arr(x)
    return lax.imag(x) if aval(x).dtype.kind == "c" else lax.full_like(x, 0)


def conjugate(x):
    x = arr(x)
    if aval(x).dtype.kind != "c":
        return x
    return lax.complex(lax.real(x), lax.neg(lax.imag(x)))


conj = conjugate
