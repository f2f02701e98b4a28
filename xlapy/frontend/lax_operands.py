"""lax's operand rules, which every lax op applies before it binds: errors that name the op, axes, dtype
conversion, and the dtype and weak-type rule for operands that must agree.

lax does not promote dtypes and does not broadcast (except rank-0 operands): `lax.add(x_f32, y_i32)` is an error.
The one exception is weak typing, as in JAX: a weakly typed value (a Python scalar) takes the dtype of the strongly
typed operands, so `lax.add(x_f32, 1)` is f32, unless that would lose its value (`lax.add(x_i32, 1.5)` is an
error). numpy's rule, promotion and broadcasting, is in operators.py.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..errors import XlapyError
from ..hlo import Shape, type_name_of_dtype
from . import dtypes
from .array import with_weak_type
from .tracer import ShapedArray, Tracer, aval, bind, concrete_value, user_frame


def lax_error(name: str, message: str) -> XlapyError:
    """An XlapyError naming `lax.<name>` and the user's source line."""
    return XlapyError(f"lax.{name}: {message} (at {user_frame()})")


def canonical_axis(axis: int, ndim: int, name: str = "op") -> int:
    """`axis` in [0, ndim) (negative axes count from the end); out of range is an error naming lax.<name>."""
    if not -ndim <= axis < builtins.max(ndim, 1):
        raise lax_error(name, f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0


def hlo_shape(dtype, dims: Sequence[int]) -> Shape:
    """The HLO array shape of numpy `dtype` and `dims` (for ops whose result shape bind cannot infer)."""
    return Shape.array(type_name_of_dtype(np.dtype(dtype)), dims)


def convert_element_type(operand, new_dtype, weak_type: bool = False):
    """Convert to `new_dtype` (canonicalized: float64 -> float32 unless enable_x64)."""
    new_dtype = dtypes.canonicalize(new_dtype)
    a = aval(operand)
    if a.dtype == new_dtype and a.weak_type == weak_type and hasattr(operand, "aval"):
        return operand
    if not hasattr(operand, "aval"):
        operand = concrete_value(operand)
    if a.dtype == new_dtype:
        return with_weak_type(operand, weak_type)
    return bind("convert", [operand], shape=hlo_shape(new_dtype, a.shape), name="convert_element_type",
                weak_type=weak_type)


def convert(x: Any, dtype, weak: bool = False) -> Any:
    """`x` as `dtype`: a constant (numpy value, Python scalar) is converted in numpy, an array by
    convert_element_type."""
    if not isinstance(x, Tracer) and not hasattr(x, "aval"):
        return np.asarray(concrete_value(x), dtype=dtype)
    return convert_element_type(x, dtype, weak_type=weak)


def _strong_dtype(name: str, avals: Sequence[ShapedArray]) -> np.dtype:
    """The dtype the operands share: the strongly typed operands' (they must agree), else weak promotion's."""
    strong = [a.dtype for a in avals if not a.weak_type]
    if not strong:
        return dtypes.promote(*(dtypes.DType(a.dtype, True) for a in avals)).dtype
    target = strong[0]
    if any(d != target for d in strong):
        raise lax_error(name, "requires arguments to have the same dtypes, got "
                        + ", ".join(str(a.dtype) for a in avals))
    for a in avals:
        if a.weak_type and dtypes.promote(dtypes.DType(target), dtypes.DType(a.dtype, True)).dtype != target:
            raise lax_error(name, f"cannot combine a weakly typed {a.dtype} operand with {target} "
                                  f"(convert it explicitly)")
    return target


def coerce_same(name: str, *xs: Any) -> tuple[list[Any], bool]:
    """lax's operand rule: equal dtypes, except weakly typed operands take the strong dtype; rank-0 operands
    broadcast to the common shape. Returns (operands, result is weak)."""
    avs = [aval(x) for x in xs]
    if len(avs) == 2 and avs[0].dtype == avs[1].dtype and avs[0].shape == avs[1].shape:     # nothing to do
        return list(xs), avs[0].weak_type and avs[1].weak_type
    target = _strong_dtype(name, avs)
    shapes = {a.shape for a in avs if a.shape != ()}
    if len(shapes) > 1:
        raise lax_error(name, "shapes must be equal (lax does not broadcast), got "
                        + ", ".join(str(aval(x)) for x in xs))
    shape = shapes.pop() if shapes else ()
    out = []
    for x, a in zip(xs, avs):
        if a.dtype != target:
            x = convert(x, target, a.weak_type)
        if a.shape != shape:
            x = bind("broadcast", [x], {"dimensions": ()}, shape=Shape.array(type_name_of_dtype(target), shape),
                     name="broadcast", weak_type=a.weak_type)
        out.append(x)
    return out, all(a.weak_type for a in avs)


def coerce_same_dtype(name: str, xs: Sequence[Any]) -> tuple[list[Any], bool]:
    """Like coerce_same but without the shape check (for concatenate, dot_general, convolution)."""
    avs = [aval(x) for x in xs]
    strong = {a.dtype for a in avs if not a.weak_type}
    if len(strong) > 1:
        raise lax_error(name, "requires arguments to have the same dtypes, got "
                        + ", ".join(str(a.dtype) for a in avs))
    target = strong.pop() if strong else dtypes.promote(*(dtypes.DType(a.dtype, True) for a in avs)).dtype
    return [x if a.dtype == target else convert(x, target, a.weak_type) for x, a in zip(xs, avs)], \
        all(a.weak_type for a in avs)
