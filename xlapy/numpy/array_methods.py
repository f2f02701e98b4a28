"""The operators and methods of xlapy arrays (Array and Tracer), attached to their base class
frontend/ops_mixin.ArrayOps as jax/_src/numpy/array_methods.py attaches jax.Array's.

The core that defines Array and Tracer sits below the numpy semantics these need, so it only declares the names;
xlapy/numpy/__init__.py calls `attach()` once the functions below exist. The tables say what each one calls:
  * Python operators call frontend/operators.py (JAX's promotion, numpy broadcasting, Python's // and %);
  * indexing calls frontend/indexing.py (`x[i]`, `x.at[i].set(v)`), through numpy/dslice.py for ds() Slices;
  * the methods that are numpy functions (`x.var()`, `x.cumsum()`, `x.clip()` ...) call the xlapy.numpy function
    of the same name.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..frontend import operators
from ..frontend.ops_mixin import attach_array_methods
from . import dslice, elementwise, indexing_ops, products, reductions, shape_ops, sorting

# operator -> (frontend/operators.py function, whether it is reflected: `2 - x` calls x.__rsub__(2))
_BINARY_OPERATORS = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", True),
    "__truediv__": ("true_divide", False), "__rtruediv__": ("true_divide", True),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__mod__": ("mod", False), "__rmod__": ("mod", True),
    "__pow__": ("power", False), "__rpow__": ("power", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", True),
    "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True),
    "__xor__": ("bitwise_xor", False), "__rxor__": ("bitwise_xor", True),
    "__lshift__": ("left_shift", False), "__rlshift__": ("left_shift", True),
    "__rshift__": ("right_shift", False), "__rrshift__": ("right_shift", True),
    "__lt__": ("less", False), "__le__": ("less_equal", False),
    "__gt__": ("greater", False), "__ge__": ("greater_equal", False),
    "__eq__": ("equal", False), "__ne__": ("not_equal", False),
}

# method -> (xlapy.numpy module, function): `x.var(...)` is `xlapy.numpy.var(x, ...)`
_NUMPY_METHODS = {
    "any": (reductions, "any"), "all": (reductions, "all"), "prod": (reductions, "prod"),
    "var": (reductions, "var"), "std": (reductions, "std"), "cumsum": (reductions, "cumsum"),
    "cumprod": (reductions, "cumprod"), "argmax": (reductions, "argmax"), "argmin": (reductions, "argmin"),
    "sort": (sorting, "sort"), "argsort": (sorting, "argsort"), "clip": (elementwise, "clip"),
    "round": (elementwise, "round"), "take": (indexing_ops, "take"), "dot": (products, "dot"),
    "swapaxes": (shape_ops, "swapaxes"), "conj": (elementwise, "conjugate"), "conjugate": (elementwise, "conjugate"),
}


def _binary(name: str, fn: Callable, reflected: bool) -> Callable:
    if reflected:
        def method(self, other):
            return fn(other, self)
    else:
        def method(self, other):
            return fn(self, other)
    method.__name__ = name
    return method


def _numpy_method(name: str, module, numpy_name: str) -> Callable:
    fn = getattr(module, numpy_name)

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"`xlapy.numpy.{numpy_name}(x, ...)` (as jax.Array.{name})."
    return method


# -- the methods with arguments of their own ------------------------------------------------------------------

def _reshape(self, *shape, order: str = "C"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return operators.reshape(self, shape)


def _transpose(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return operators.transpose(self, axes or None)


def _sum(self, axis=None, keepdims: bool = False, dtype=None):
    return operators.reduction("sum", self, axis, keepdims, dtype)


def _mean(self, axis=None, keepdims: bool = False, dtype=None):
    return operators.mean(self, axis, keepdims, dtype)


def _max(self, axis=None, keepdims: bool = False):
    if np.issubdtype(self.dtype, np.complexfloating):      # JAX's lexicographic reducer (numpy/reductions.py)
        return reductions.max(self, axis, keepdims=keepdims)
    return operators.reduction("max", self, axis, keepdims)


def _min(self, axis=None, keepdims: bool = False):
    if np.issubdtype(self.dtype, np.complexfloating):
        return reductions.min(self, axis, keepdims=keepdims)
    return operators.reduction("min", self, axis, keepdims)


def _ravel(self, order: str = "C"):
    return operators.reshape(self, (self.size,))


def _squeeze(self, axis=None):
    return operators.squeeze(self, axis)


def _methods() -> dict[str, Callable]:
    methods = {name: _binary(name, getattr(operators, fn), reflected)
               for name, (fn, reflected) in _BINARY_OPERATORS.items()}
    methods.update({name: _numpy_method(name, *where) for name, where in _NUMPY_METHODS.items()})
    methods.update({
        "__neg__": operators.negative, "__abs__": operators.absolute, "__invert__": operators.invert,
        "__getitem__": dslice.getitem, "astype": operators.astype, "reshape": _reshape, "transpose": _transpose,
        "ravel": _ravel, "squeeze": _squeeze, "sum": _sum, "mean": _mean, "max": _max, "min": _min,
    })
    return methods


_PROPERTIES = {
    "at": dslice.IndexUpdateHelper,
    "T": operators.transpose,
    "real": elementwise.real,
    "imag": elementwise.imag,
}


def attach() -> None:
    """Attach every operator, method and property to Array and Tracer (through their base class ArrayOps)."""
    attach_array_methods(_methods(), _PROPERTIES)
