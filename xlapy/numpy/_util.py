"""Helpers shared by the xlapy.numpy families: operand conversion, axes, errors, eager/traced constants."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ConcretizationError, XlapyError
from .. import lax
from ..frontend import dtypes
from ..frontend.array import Array
from ..frontend.operators import promote_broadcast
from ..frontend.tracer import Tracer, aval, current_trace, user_frame

__all__ = ["aval", "lax", "dtypes", "Array", "Tracer", "promote_broadcast", "error", "concretization_error",
           "is_traced", "arr", "arrays", "canon_axis", "axes_of", "full_const", "to_inexact", "promote",
           "promote_inexact", "as_bool", "shape_tuple", "is_array_like", "broadcast_to_shape", "broadcast_all"]


def error(name: str, message: str) -> XlapyError:
    """An XlapyError naming the numpy function and the user's source line."""
    return XlapyError(f"{name}: {message} (at {user_frame()})")


def concretization_error(name: str, what: str) -> ConcretizationError:
    return ConcretizationError(
        f"{name}: {what} has a data-dependent output shape, which cannot be traced (at {user_frame()}). "
        f"Pass a static `size=` (the result is padded with `fill_value` or truncated), or call it outside jit.")


def is_array_like(x: Any) -> bool:
    return hasattr(x, "aval") or isinstance(x, (np.ndarray, np.generic, list, tuple)) or dtypes.is_python_scalar(x)


def is_traced(*xs: Any) -> bool:
    """True when any operand (or any element of a list/tuple operand) is a Tracer."""
    for x in xs:
        if isinstance(x, Tracer):
            return True
        if isinstance(x, (list, tuple)) and is_traced(*x):
            return True
    return False


def arr(x: Any, dtype=None) -> Any:
    """`x` as an Array or Tracer: Python scalars become weakly typed Arrays, lists/numpy values canonical Arrays."""
    if isinstance(x, (list, tuple)) and is_traced(*x):
        from .creation import array
        x = array(x)
    if hasattr(x, "aval"):
        return x if dtype is None else lax.convert_element_type(x, dtype)
    if dtypes.is_python_scalar(x) and dtype is None:
        t = dtypes.python_scalar_type(x)
        return Array(np.asarray(x, t.dtype), weak_type=t.weak)
    value = np.asarray(x)
    if value.dtype == object:
        raise error("asarray", f"cannot convert {type(x).__name__} to an array")
    return Array(value.astype(dtypes.canonicalize(dtype if dtype is not None else value.dtype)))


def arrays(xs: Sequence[Any]) -> list[Any]:
    return [arr(x) for x in xs]


def canon_axis(axis: Any, ndim: int, name: str) -> int:
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise error(name, f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0


def axes_of(axis: Any, ndim: int, name: str) -> tuple[int, ...]:
    """None -> every axis; int or sequence -> sorted canonical axes (duplicates are an error)."""
    if axis is None:
        return tuple(range(ndim))
    seq = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = tuple(canon_axis(a, ndim, name) for a in seq)
    if len(set(out)) != len(out):
        raise error(name, f"repeated axis in {tuple(seq)}")
    return tuple(sorted(out))


def shape_tuple(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def full_const(shape: Sequence[int], value: Any, dtype) -> Any:
    """A filled array: a concrete Array outside jit, a broadcast constant (not a big literal) inside."""
    dtype = dtypes.canonicalize(dtype)
    shape = tuple(shape)
    if current_trace() is None and not hasattr(value, "aval"):
        return Array(np.full(shape, np.asarray(value).astype(dtype), dtype=dtype))
    return lax.full(shape, value, dtype)


def to_inexact(x: Any) -> Any:
    """Integers and bools become the default float (keeping the weak flag), as jnp's transcendental ops do."""
    a = aval(x)
    if dtypes.is_inexact(a.dtype):
        return x
    return lax.convert_element_type(x, dtypes.default_float(), weak_type=a.weak_type and a.dtype != np.bool_)


def promote(name: str, *xs: Any) -> list[Any]:
    """numpy promotion + broadcasting of the operands (lists and numpy values accepted)."""
    xs = [arr(x) if isinstance(x, (list, tuple)) else x for x in xs]
    for x in xs:
        if not is_array_like(x):
            raise error(name, f"unsupported operand of type {type(x).__name__}")
    out = promote_broadcast(name, *xs)
    return [arr(x) for x in out]


def promote_inexact(name: str, *xs: Any) -> list[Any]:
    return [to_inexact(x) for x in promote(name, *xs)]


def as_bool(x: Any) -> Any:
    x = arr(x)
    a = aval(x)
    if a.dtype == np.bool_:
        return x
    return lax.ne(x, np.zeros((), a.dtype))


def broadcast_to_shape(x: Any, shape: Sequence[int]) -> Any:
    a = aval(x)
    shape = tuple(shape)
    if a.shape == shape:
        return x
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - a.ndim, len(shape))))


def broadcast_all(name: str, *xs: Any) -> list[Any]:
    """Broadcast operands (dtypes unchanged) to their common numpy shape."""
    xs = [arr(x) for x in xs]
    try:
        shape = np.broadcast_shapes(*(aval(x).shape for x in xs))
    except ValueError:
        raise error(name, f"shapes {', '.join(str(aval(x)) for x in xs)} do not broadcast") from None
    return [broadcast_to_shape(x, shape) for x in xs]
