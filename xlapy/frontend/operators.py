"""numpy semantics for the Python operators of Array and Tracer: JAX's promotion, numpy broadcasting,
Python's floor division and modulo. xlapy.numpy builds on these and attaches them to Array and Tracer
(xlapy/numpy/array_methods.py).

These are numpy-level functions over lax, many of the same name (`add` here promotes and broadcasts, lax's
`add` does not), so lax's ops are imported as `lax_<name>`."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import XlapyError
from . import dtypes
from .array import Array
from .lax_dot_conv import dot as lax_dot, dot_general as lax_dot_general
from .lax_elementwise import (abs as lax_abs, add as lax_add, bitwise_and as lax_bitwise_and,
                              bitwise_not as lax_bitwise_not, bitwise_or as lax_bitwise_or,
                              bitwise_xor as lax_bitwise_xor, div as lax_div, eq as lax_eq, floor as lax_floor,
                              ge as lax_ge, gt as lax_gt, integer_pow as lax_integer_pow, le as lax_le, lt as lax_lt,
                              max as lax_max, min as lax_min, mul as lax_mul, ne as lax_ne, neg as lax_neg,
                              pow as lax_pow, rem as lax_rem, round as lax_round, select as lax_select,
                              shift_left as lax_shift_left, sign as lax_sign,
                              shift_right_arithmetic as lax_shift_right_arithmetic,
                              shift_right_logical as lax_shift_right_logical, sub as lax_sub)
from .lax_operands import convert, convert_element_type as lax_convert_element_type
from .lax_reduce import (argmax as lax_argmax, argmin as lax_argmin, reduce_max as lax_reduce_max,
                         reduce_min as lax_reduce_min, reduce_prod as lax_reduce_prod, reduce_sum as lax_reduce_sum)
from .lax_shapes import (broadcast_in_dim as lax_broadcast_in_dim, expand_dims as lax_expand_dims, full as lax_full,
                         reshape as lax_reshape, squeeze as lax_squeeze, transpose as lax_transpose)
from .tracer import aval, user_frame


def _is_operand(x: Any) -> bool:
    return hasattr(x, "aval") or dtypes.is_python_scalar(x) or isinstance(x, (np.ndarray, np.generic, list))


_BROADCAST_SHAPES: dict[tuple, tuple] = {}      # operand shapes -> numpy's broadcast shape (cached: tens per step)


def _broadcast_shapes(shapes: tuple) -> tuple:
    shape = _BROADCAST_SHAPES.get(shapes)
    if shape is None:
        shape = np.broadcast_shapes(*shapes)
        if len(_BROADCAST_SHAPES) < 4096:
            _BROADCAST_SHAPES[shapes] = shape
    return shape


def promote_broadcast(name: str, *xs: Any) -> list[Any]:
    """Operands converted to their JAX-promoted dtype and broadcast (numpy rules) to one shape."""
    if len(xs) == 2:        # the common case first: two arrays of one canonical dtype and one shape
        a, b = getattr(xs[0], "aval", None), getattr(xs[1], "aval", None)
        if a is not None and b is not None and a.dtype == b.dtype and a.shape == b.shape and \
                dtypes.canonicalize(a.dtype) == a.dtype:
            return list(xs)
    xs = [np.asarray(x) if isinstance(x, list) else x for x in xs]
    types = [dtypes.type_of(x) for x in xs]
    target = dtypes.promote(*types)
    try:
        shape = _broadcast_shapes(tuple(aval(x).shape for x in xs))
    except ValueError:
        raise XlapyError(f"{name}: shapes {', '.join(str(aval(x)) for x in xs)} do not broadcast "
                         f"(at {user_frame()})") from None
    out = []
    for x, t in zip(xs, types):
        if t.dtype != target.dtype:
            x = _convert_keeping_weak(x, target)
        a = aval(x)
        if a.shape != shape:
            x = lax_broadcast_in_dim(x, shape, tuple(range(len(shape) - a.ndim, len(shape))))
        out.append(x)
    return out


def _convert_keeping_weak(x: Any, target: dtypes.DType) -> Any:
    """`x` converted to target's dtype. When every operand is weak (all Python scalars: `add(1, 2.0)`) the
    result is weak (JAX's weak f32), so a Python scalar stays a weakly typed value, not a numpy constant."""
    if not target.weak:
        return convert(x, target.dtype)
    if dtypes.is_python_scalar(x):
        return Array(np.asarray(x, target.dtype), weak_type=True)
    return lax_convert_element_type(x, target.dtype, weak_type=True)


def _numpy_binary(name: str, fn):
    def op(x, y):
        if not (_is_operand(x) and _is_operand(y)):
            return NotImplemented
        return fn(*promote_broadcast(name, x, y))
    op.__name__ = name
    return op


add = _numpy_binary("add", lax_add)
subtract = _numpy_binary("subtract", lax_sub)
multiply = _numpy_binary("multiply", lax_mul)
bitwise_and = _numpy_binary("bitwise_and", lax_bitwise_and)
bitwise_or = _numpy_binary("bitwise_or", lax_bitwise_or)
bitwise_xor = _numpy_binary("bitwise_xor", lax_bitwise_xor)
less = _numpy_binary("less", lax_lt)
less_equal = _numpy_binary("less_equal", lax_le)
greater = _numpy_binary("greater", lax_gt)
greater_equal = _numpy_binary("greater_equal", lax_ge)
equal = _numpy_binary("equal", lax_eq)
not_equal = _numpy_binary("not_equal", lax_ne)
maximum = _numpy_binary("maximum", lax_max)
minimum = _numpy_binary("minimum", lax_min)
left_shift = _numpy_binary("left_shift", lax_shift_left)


# The *_promoted functions take operands already promoted to one dtype and shape (xlapy.numpy's ufuncs use
# them after their own promotion); the operators wrap them with _numpy_binary.

def right_shift_promoted(x, y):
    """x >> y: logical for unsigned integers, arithmetic for signed ones."""
    if aval(x).dtype.kind == "u":
        return lax_shift_right_logical(x, y)
    return lax_shift_right_arithmetic(x, y)


right_shift = _numpy_binary("right_shift", right_shift_promoted)


def _to_inexact(x):
    dt = aval(x).dtype
    if dtypes.is_inexact(dt):
        return x
    return lax_convert_element_type(x, dtypes.default_float(), weak_type=aval(x).weak_type)


def _true_divide(x, y):
    return lax_div(_to_inexact(x), _to_inexact(y))


true_divide = _numpy_binary("true_divide", _true_divide)


def _zero(x):
    return np.zeros((), aval(x).dtype)


def _nonzero_divisor(y):
    """y with its zeros replaced by ones: JAX's integer `%` and fmod by zero are then 0, not XLA's x."""
    return lax_add(y, lax_convert_element_type(lax_eq(y, _zero(y)), aval(y).dtype))


def _float_floor_divide(x, y):
    """x // y for floats as CPython's float_divmod computes it (and JAX): `1.0 // 0.1` is 9, not
    floor(1.0 / 0.1) = 10."""
    r = lax_rem(x, y)
    corrected = lax_select(lax_eq(y, _zero(y)), x, lax_sub(x, r))
    q = lax_div(corrected, y)
    fix = lax_bitwise_and(lax_ne(r, _zero(r)), lax_ne(lax_sign(y), lax_sign(r)))
    return lax_round(lax_select(fix, lax_sub(q, np.ones((), aval(x).dtype)), q))


def floor_divide_promoted(x, y):
    """Python's x // y as JAX computes it. Signed ints round toward -inf: the quotient less one where the signs
    differ and the remainder is nonzero, so x // 0 is XLA's -1 less (x != 0): 7 // 0 == -2. Unsigned ints are
    XLA's division (x // 0 is all ones); floats follow CPython (_float_floor_divide)."""
    dt = aval(x).dtype
    if dt.kind == "c":
        raise XlapyError(f"floor_divide does not support complex-valued inputs (at {user_frame()})")
    if dtypes.is_inexact(dt):
        return _float_floor_divide(x, y)
    if dt.kind == "u" or dt == np.bool_:
        return lax_div(x, y)
    q = lax_div(x, y)
    fix = lax_bitwise_and(lax_ne(lax_sign(x), lax_sign(y)), lax_ne(lax_rem(x, y), _zero(x)))
    return lax_select(fix, lax_sub(q, np.ones((), dt)), q)


floor_divide = _numpy_binary("floor_divide", floor_divide_promoted)


def mod_promoted(x, y):
    """Python's x % y as JAX computes it: the remainder takes the sign of y; an integer x % 0 is 0."""
    dt = aval(x).dtype
    if dt.kind in "iu":
        y = _nonzero_divisor(y)
    r = lax_rem(x, y)
    if dt.kind == "u":
        return r
    fix = lax_bitwise_and(lax_ne(r, _zero(r)), lax_ne(lax_lt(r, _zero(r)), lax_lt(y, _zero(y))))
    return lax_select(fix, lax_add(r, y), r)


mod = _numpy_binary("mod", mod_promoted)


def fmod_promoted(x, y):
    """C's fmod (the remainder takes the sign of x); an integer fmod(x, 0) is 0, as in JAX."""
    return lax_rem(x, _nonzero_divisor(y) if aval(x).dtype.kind in "iu" else y)


# JAX raises integer powers by square-and-multiply over the exponent's low 6 bits (more would overflow any base
# but 0 and +-1), as unsigned bits: so a negative exponent gives JAX's answers, (-1) ** -3 == -1, 2 ** -1 == 0
_POW_BITS = 6


def int_power(x, y):
    """x ** y for integer (or bool) x and y of one dtype, bit for bit as JAX's jnp.power with a traced exponent."""
    dt = aval(x).dtype
    zero, one = np.zeros((), dt), np.ones((), dt)
    shape = aval(x).shape
    acc = lax_select(lax_bitwise_and(lax_eq(x, zero), lax_ne(y, zero)), lax_full(shape, 0, dt), lax_full(shape, 1, dt))
    for _ in range(_POW_BITS):
        acc = lax_select(lax_ne(lax_bitwise_and(y, one), zero), lax_mul(acc, x), acc)
        x = lax_mul(x, x)
        y = lax_shift_right_logical(y, one)
    return acc


def power_promoted(x, y):
    """x ** y on promoted, broadcast operands: integers as JAX (int_power), others lax.pow."""
    if aval(x).dtype.kind in "iu":
        return int_power(x, y)
    return lax_pow(x, y)


def power(x, y):
    if not (_is_operand(x) and _is_operand(y)):
        return NotImplemented
    if isinstance(y, int) and not isinstance(y, bool) and hasattr(x, "aval"):
        return static_power(x, y)
    return power_promoted(*promote_broadcast("power", x, y))


def static_power(x, y: int):
    """x ** y for a Python int y: repeated multiplication (lax.integer_pow), as JAX; an integer x cannot take a
    negative y (JAX raises too)."""
    if y < 0 and aval(x).dtype.kind in "iub":
        raise XlapyError(f"integers cannot be raised to negative powers: {aval(x)} ** {y} (at {user_frame()})")
    return lax_integer_pow(x, y)


def matmul(x, y):
    if not (_is_operand(x) and _is_operand(y)):
        return NotImplemented
    x, y = (np.asarray(v) if isinstance(v, list) else v for v in (x, y))
    t = dtypes.promote(dtypes.type_of(x), dtypes.type_of(y)).dtype
    x, y = (v if aval(v).dtype == t else convert(v, t) for v in (x, y))
    xa, ya = aval(x), aval(y)
    if xa.ndim == 0 or ya.ndim == 0:
        raise XlapyError(f"matmul: operands must not be scalars, got {xa} and {ya} (at {user_frame()})")
    if xa.ndim <= 2 and ya.ndim <= 2:
        if xa.shape[-1] != ya.shape[0 if ya.ndim == 1 else -2]:
            raise XlapyError(f"matmul: contracting dimensions differ: {xa} @ {ya} (at {user_frame()})")
        return lax_dot(x, y)
    if xa.ndim == 1:
        return matmul(lax_expand_dims(x, (0,)), y)[..., 0, :]
    if ya.ndim == 1:
        return matmul(x, lax_expand_dims(y, (1,)))[..., 0]
    if ya.ndim == 2:
        # a stack of matrices times one matrix: x's leading dims are free dims of one dot, as in JAX (numpy/products.py)
        if xa.shape[-1] != ya.shape[0]:
            raise XlapyError(f"matmul: contracting dimensions differ: {xa} @ {ya} (at {user_frame()})")
        return lax_dot_general(x, y, (((xa.ndim - 1,), (0,)), ((), ())))
    batch = np.broadcast_shapes(xa.shape[:-2], ya.shape[:-2])
    x = lax_broadcast_in_dim(x, batch + xa.shape[-2:], tuple(range(len(batch) + 2 - xa.ndim, len(batch) + 2)))
    y = lax_broadcast_in_dim(y, batch + ya.shape[-2:], tuple(range(len(batch) + 2 - ya.ndim, len(batch) + 2)))
    nb = len(batch)
    b = tuple(range(nb))
    return lax_dot_general(x, y, (((nb + 1,), (nb,)), (b, b)))


def negative(x):
    return lax_neg(x)


def absolute(x):
    return x if aval(x).dtype.kind in "ub" else lax_abs(x)


def invert(x):
    return lax_bitwise_not(x)


def transpose(x, axes: Sequence[int] | None = None):
    nd = aval(x).ndim
    return lax_transpose(x, tuple(reversed(range(nd))) if axes is None else tuple(a % nd for a in axes))


def astype(x, dtype):
    return lax_convert_element_type(x, dtype)


def reshape(x, shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return lax_reshape(x, shape)


def squeeze(x, axis=None):
    a = aval(x)
    if axis is None:
        axis = tuple(i for i, s in enumerate(a.shape) if s == 1)
    elif isinstance(axis, int):
        axis = (axis,)
    return lax_squeeze(x, axis)


def _axes(x, axis) -> tuple[int, ...]:
    nd = aval(x).ndim
    if axis is None:
        return tuple(range(nd))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % nd if nd else 0 for a in axis))


def _keepdims(out, x, axes):
    shape = tuple(1 if i in axes else s for i, s in enumerate(aval(x).shape))
    return lax_reshape(out, shape)


_REDUCERS = {"sum": lax_reduce_sum, "prod": lax_reduce_prod, "max": lax_reduce_max, "min": lax_reduce_min}


def reduction(kind: str, x, axis=None, keepdims: bool = False, dtype=None):
    """x.sum/prod/max/min: bool and small integer sums accumulate in the default int (as jnp does)."""
    a = aval(x)
    if dtype is not None:
        x = lax_convert_element_type(x, dtype)
    elif kind in ("sum", "prod") and (a.dtype == np.bool_ or (a.dtype.kind in "iu" and a.dtype.itemsize < 4)):
        x = lax_convert_element_type(x, dtypes.default_int() if a.dtype.kind != "u" else np.uint32)
    axes = _axes(x, axis)
    if kind in ("max", "min") and any(a.shape[i] == 0 for i in axes):
        raise XlapyError(f"{kind}: zero-size array {a} has no identity (at {user_frame()})")
    out = _REDUCERS[kind](x, axes)
    return _keepdims(out, x, axes) if keepdims else out


def mean(x, axis=None, keepdims: bool = False, dtype=None):
    a = aval(x)
    axes = _axes(x, axis)
    count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    x = lax_convert_element_type(x, dtype) if dtype is not None else _to_inexact(x)
    total = reduction("sum", x, axes, keepdims)
    return lax_div(total, np.asarray(count, aval(total).dtype))


def arg_reduction(kind: str, x, axis=None):
    if axis is None:
        x = lax_reshape(x, (aval(x).size,))
        axis = 0
    fn = lax_argmax if kind == "argmax" else lax_argmin
    return fn(x, axis % max(aval(x).ndim, 1), dtypes.default_int())
