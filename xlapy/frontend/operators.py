"""numpy semantics for the Python operators of Array and Tracer: JAX's promotion, numpy broadcasting,
Python's floor division and modulo. xlapy.numpy can build on these."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import XlapyError
from .. import lax
from ..lax import aval
from . import dtypes
from .tracer import user_frame


def _is_operand(x: Any) -> bool:
    return hasattr(x, "aval") or dtypes.is_python_scalar(x) or isinstance(x, (np.ndarray, np.generic, list))


def promote_broadcast(name: str, *xs: Any) -> list[Any]:
    """Operands converted to their JAX-promoted dtype and broadcast (numpy rules) to one shape."""
    xs = [np.asarray(x) if isinstance(x, list) else x for x in xs]
    types = [dtypes.type_of(x) for x in xs]
    target = dtypes.promote(*types)
    try:
        shape = np.broadcast_shapes(*(aval(x).shape for x in xs))
    except ValueError:
        raise XlapyError(f"{name}: shapes {', '.join(str(aval(x)) for x in xs)} do not broadcast "
                         f"(at {user_frame()})") from None
    out = []
    for x, t in zip(xs, types):
        if t.dtype != target.dtype:
            x = _convert_keeping_weak(x, target)
        a = aval(x)
        if a.shape != shape:
            x = lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - a.ndim, len(shape))))
        out.append(x)
    return out


def _convert_keeping_weak(x: Any, target: dtypes.DType) -> Any:
    """`x` converted to target's dtype. When every operand is weak (all Python scalars: `add(1, 2.0)`) the
    result is weak (JAX's weak f32), so a Python scalar stays a weakly typed value, not a numpy constant."""
    if not target.weak:
        return lax._convert(x, target.dtype)
    if dtypes.is_python_scalar(x):
        from .array import Array
        return Array(np.asarray(x, target.dtype), weak_type=True)
    return lax.convert_element_type(x, target.dtype, weak_type=True)


def _numpy_binary(name: str, fn):
    def op(x, y):
        if not (_is_operand(x) and _is_operand(y)):
            return NotImplemented
        return fn(*promote_broadcast(name, x, y))
    op.__name__ = name
    return op


add = _numpy_binary("add", lax.add)
subtract = _numpy_binary("subtract", lax.sub)
multiply = _numpy_binary("multiply", lax.mul)
bitwise_and = _numpy_binary("bitwise_and", lax.bitwise_and)
bitwise_or = _numpy_binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _numpy_binary("bitwise_xor", lax.bitwise_xor)
less = _numpy_binary("less", lax.lt)
less_equal = _numpy_binary("less_equal", lax.le)
greater = _numpy_binary("greater", lax.gt)
greater_equal = _numpy_binary("greater_equal", lax.ge)
equal = _numpy_binary("equal", lax.eq)
not_equal = _numpy_binary("not_equal", lax.ne)
maximum = _numpy_binary("maximum", lax.max)
minimum = _numpy_binary("minimum", lax.min)
left_shift = _numpy_binary("left_shift", lax.shift_left)


def _right_shift(x, y):
    if aval(x).dtype.kind == "u":
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


right_shift = _numpy_binary("right_shift", _right_shift)


def _to_inexact(x):
    dt = aval(x).dtype
    if dtypes.is_inexact(dt):
        return x
    return lax.convert_element_type(x, dtypes.default_float(), weak_type=aval(x).weak_type)


def _true_divide(x, y):
    return lax.div(_to_inexact(x), _to_inexact(y))


true_divide = _numpy_binary("true_divide", _true_divide)


def _zero(x):
    return np.zeros((), aval(x).dtype)


def _floor_divide(x, y):
    dt = aval(x).dtype
    if dtypes.is_inexact(dt):
        return lax.floor(lax.div(x, y))
    if dt.kind == "u" or dt == np.bool_:
        return lax.div(x, y)
    q, r = lax.div(x, y), lax.rem(x, y)
    # round toward -inf: subtract one where the remainder is nonzero and the signs differ
    fix = lax.bitwise_and(lax.ne(r, _zero(r)), lax.ne(lax.lt(r, _zero(r)), lax.lt(y, _zero(y))))
    return lax.select(fix, lax.sub(q, np.ones((), dt)), q)


floor_divide = _numpy_binary("floor_divide", _floor_divide)


def _mod(x, y):
    dt = aval(x).dtype
    r = lax.rem(x, y)
    if dt.kind == "u":
        return r
    fix = lax.bitwise_and(lax.ne(r, _zero(r)), lax.ne(lax.lt(r, _zero(r)), lax.lt(y, _zero(y))))
    return lax.select(fix, lax.add(r, y), r)


mod = _numpy_binary("mod", _mod)


def power(x, y):
    if not (_is_operand(x) and _is_operand(y)):
        return NotImplemented
    if isinstance(y, int) and not isinstance(y, bool) and hasattr(x, "aval"):
        return lax.integer_pow(x, y)
    return lax.pow(*promote_broadcast("power", x, y))


def matmul(x, y):
    if not (_is_operand(x) and _is_operand(y)):
        return NotImplemented
    x, y = (np.asarray(v) if isinstance(v, list) else v for v in (x, y))
    t = dtypes.promote(dtypes.type_of(x), dtypes.type_of(y)).dtype
    x, y = (v if aval(v).dtype == t else lax._convert(v, t) for v in (x, y))
    xa, ya = aval(x), aval(y)
    if xa.ndim == 0 or ya.ndim == 0:
        raise XlapyError(f"matmul: operands must not be scalars, got {xa} and {ya} (at {user_frame()})")
    if xa.ndim <= 2 and ya.ndim <= 2:
        if xa.shape[-1] != ya.shape[0 if ya.ndim == 1 else -2]:
            raise XlapyError(f"matmul: contracting dimensions differ: {xa} @ {ya} (at {user_frame()})")
        return lax.dot(x, y)
    if xa.ndim == 1:
        return matmul(lax.expand_dims(x, (0,)), y)[..., 0, :]
    if ya.ndim == 1:
        return matmul(x, lax.expand_dims(y, (1,)))[..., 0]
    batch = np.broadcast_shapes(xa.shape[:-2], ya.shape[:-2])
    x = lax.broadcast_in_dim(x, batch + xa.shape[-2:], tuple(range(len(batch) + 2 - xa.ndim, len(batch) + 2)))
    y = lax.broadcast_in_dim(y, batch + ya.shape[-2:], tuple(range(len(batch) + 2 - ya.ndim, len(batch) + 2)))
    nb = len(batch)
    b = tuple(range(nb))
    return lax.dot_general(x, y, (((nb + 1,), (nb,)), (b, b)))


def negative(x):
    return lax.neg(x)


def absolute(x):
    return x if aval(x).dtype.kind in "ub" else lax.abs(x)


def invert(x):
    return lax.bitwise_not(x)


def transpose(x, axes: Sequence[int] | None = None):
    nd = aval(x).ndim
    return lax.transpose(x, tuple(reversed(range(nd))) if axes is None else tuple(a % nd for a in axes))


def astype(x, dtype):
    return lax.convert_element_type(x, dtype)


def reshape(x, shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return lax.reshape(x, shape)


def squeeze(x, axis=None):
    a = aval(x)
    if axis is None:
        axis = tuple(i for i, s in enumerate(a.shape) if s == 1)
    elif isinstance(axis, int):
        axis = (axis,)
    return lax.squeeze(x, axis)


def _axes(x, axis) -> tuple[int, ...]:
    nd = aval(x).ndim
    if axis is None:
        return tuple(range(nd))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % nd if nd else 0 for a in axis))


def _keepdims(out, x, axes):
    shape = tuple(1 if i in axes else s for i, s in enumerate(aval(x).shape))
    return lax.reshape(out, shape)


_REDUCERS = {"sum": lax.reduce_sum, "prod": lax.reduce_prod, "max": lax.reduce_max, "min": lax.reduce_min}


def reduction(kind: str, x, axis=None, keepdims: bool = False, dtype=None):
    """x.sum/prod/max/min: bool and small integer sums accumulate in the default int (as jnp does)."""
    a = aval(x)
    if dtype is not None:
        x = lax.convert_element_type(x, dtype)
    elif kind in ("sum", "prod") and (a.dtype == np.bool_ or (a.dtype.kind in "iu" and a.dtype.itemsize < 4)):
        x = lax.convert_element_type(x, dtypes.default_int() if a.dtype.kind != "u" else np.uint32)
    axes = _axes(x, axis)
    if kind in ("max", "min") and any(a.shape[i] == 0 for i in axes):
        raise XlapyError(f"{kind}: zero-size array {a} has no identity (at {user_frame()})")
    out = _REDUCERS[kind](x, axes)
    return _keepdims(out, x, axes) if keepdims else out


def mean(x, axis=None, keepdims: bool = False, dtype=None):
    a = aval(x)
    axes = _axes(x, axis)
    count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    x = lax.convert_element_type(x, dtype) if dtype is not None else _to_inexact(x)
    total = reduction("sum", x, axes, keepdims)
    return lax.div(total, np.asarray(count, aval(total).dtype))


def arg_reduction(kind: str, x, axis=None):
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    fn = lax.argmax if kind == "argmax" else lax.argmin
    return fn(x, axis % max(aval(x).ndim, 1), dtypes.default_int())
