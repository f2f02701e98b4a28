"""xlapy.Array: a concrete value (a numpy array) with JAX's array API. Operations on Arrays outside jit run
eagerly, one small compiled module per op (see eager.py); inside jit, Arrays are constants."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import XlapyError
from . import dtypes
from .ops_mixin import ArrayOps
from .tracer import ShapedArray


class Array(ArrayOps):
    __slots__ = ("_value", "aval")
    __array_priority__ = 100

    def __init__(self, value: Any, dtype=None, weak_type: bool = False):
        if isinstance(value, Array):
            arr = value._value
        else:
            arr = np.asarray(value, dtype=dtype)
            if dtype is None:
                canon = dtypes.canonicalize(arr.dtype)
                if canon != arr.dtype:
                    arr = arr.astype(canon)
        if arr.dtype == object:
            raise XlapyError(f"cannot make an Array from {type(value).__name__}")
        self._value = arr
        self.aval = ShapedArray(tuple(arr.shape), arr.dtype, weak_type)

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    @property
    def nbytes(self) -> int:
        return self._value.nbytes

    def __array__(self, dtype=None, copy=None):
        arr = self._value
        return arr if dtype is None else arr.astype(dtype)

    def block_until_ready(self) -> "Array":
        return self

    def tolist(self):
        return self._value.tolist()

    def item(self):
        return self._value.item()

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return int(self._value)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (Array(v) for v in self._value)

    __hash__ = None

    def __repr__(self) -> str:
        body = np.array2string(self._value, separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Array({body}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, spec: str) -> str:
        return format(self._value.item(), spec) if self.ndim == 0 else format(str(self), spec)

    def __reduce__(self):
        return (Array, (self._value,))


def asarray(value: Any, dtype=None) -> Array:
    """An Array of `value` (a no-op for Arrays of that dtype)."""
    if isinstance(value, Array) and (dtype is None or np.dtype(dtype) == value.dtype):
        return value
    return Array(np.asarray(value, dtype=dtype) if dtype is not None else value)
