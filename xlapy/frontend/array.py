"""xlapy.Array: a concrete value (a numpy array) with JAX's array API. Operations on Arrays outside jit run
eagerly, one small compiled module per op (see eager.py); inside jit, Arrays are constants.

As `jax.Array`, `xlapy.Array` (= `xlapy.numpy.ndarray`) is also the abstract array type: a Tracer is an instance
(`isinstance(tracer, xlapy.Array)` is True, so JAX code that checks for arrays works under jit). Code that needs
a *concrete* Array tests `is_concrete_array(x)`.

An Array donated to a jitted call (`jit(f, donate_argnums=...)`) is deleted afterwards, as in JAX: its buffer may
have been reused, so reading it raises XlapyError; its shape and dtype stay readable."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import XlapyError
from . import dtypes
from .ops_mixin import ArrayOps
from .tracer import ShapedArray, Tracer, concrete_value


class _ArrayMeta(type):
    """Makes `isinstance(tracer, Array)` True (jax.Array is the type of traced and concrete arrays alike)."""

    def __instancecheck__(cls, obj) -> bool:
        return type.__instancecheck__(cls, obj) or (cls is Array and isinstance(obj, Tracer))

    def __subclasscheck__(cls, sub) -> bool:
        return type.__subclasscheck__(cls, sub) or (cls is Array and issubclass(sub, Tracer))


_AVALS: dict[tuple, ShapedArray] = {}
_MAX_AVALS = 1 << 14


def interned_aval(shape: tuple, dtype: np.dtype, weak_type: bool = False) -> ShapedArray:
    """The shared ShapedArray for (shape, dtype, weak_type). Concrete Arrays hold these, so a jitted call can
    recognize an argument's signature by identity (`a.aval is expected`) instead of comparing fields. Past
    _MAX_AVALS distinct signatures new ones are no longer kept (the result is then a fresh, equal aval)."""
    key = (shape, dtype, weak_type)
    aval = _AVALS.get(key)
    if aval is None:
        aval = ShapedArray(shape, dtype, weak_type)
        if len(_AVALS) < _MAX_AVALS:
            _AVALS[key] = aval
    return aval


def clear_interned_avals() -> None:
    """Forget the interned avals (xlapy.clear_caches: they are a cache too, and the thousands made by a run over
    many shapes would keep the memory of everything allocated around them). Arrays keep the avals they hold."""
    _AVALS.clear()


def is_concrete_array(x: Any) -> bool:
    """True for an xlapy.Array holding a value (not a Tracer, which also passes isinstance(x, Array))."""
    return type.__instancecheck__(Array, x)


class Array(ArrayOps, metaclass=_ArrayMeta):
    __slots__ = ("_value", "aval")
    __array_priority__ = 100

    def __init__(self, value: Any, dtype=None, weak_type: bool = False):
        if is_concrete_array(value):
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
        self.aval = interned_aval(arr.shape, arr.dtype, bool(weak_type))

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __getattr__(self, name: str):
        # only reached when normal lookup fails: `_value` is unset once the Array was deleted (donated)
        if name == "_value":
            raise XlapyError(f"Array has been deleted (donated to a jitted call): {self.aval} can no longer be "
                             f"read; use the jitted function's result instead")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def delete(self) -> None:
        """Release the value (as jax.Array.delete); later reads raise XlapyError."""
        if self.is_deleted():
            return
        del self._value

    def is_deleted(self) -> bool:
        try:
            object.__getattribute__(self, "_value")
        except AttributeError:
            return True
        return False

    def __array__(self, dtype=None, copy=None):
        arr = self._value
        return arr if dtype is None else arr.astype(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack capsule of the value (host memory; xlapy.dlpack has the import side)."""
        if stream is not None:
            raise BufferError("xlapy arrays live in host memory: a DLPack stream does not apply")
        try:
            return self._value.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)
        except (BufferError, TypeError) as e:
            raise BufferError(f"cannot export {self.aval} through DLPack: {e}") from None

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)       # kDLCPU, device 0

    @property
    def sharding(self):
        """jax.Array.sharding: one device (sharded jit and device_put make ShardedArrays: parallel/sharded_array.py)."""
        from .parallel.sharded_array import default_sharding
        return default_sharding()

    @property
    def addressable_shards(self) -> list:
        from .parallel.sharded_array import Shard
        return [Shard(self.sharding.device, tuple(slice(None) for _ in self.shape), 0, self)]

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
        if self.is_deleted():
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype.name})"
        body = np.array2string(self._value, separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Array({body}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return repr(self) if self.is_deleted() else str(self._value)

    def __format__(self, spec: str) -> str:
        return format(self._value.item(), spec) if self.ndim == 0 else format(str(self), spec)

    def __reduce__(self):
        return (Array, (self._value,))


def asarray(value: Any, dtype=None) -> Array:
    """An Array of `value` (a no-op for Arrays of that dtype)."""
    if is_concrete_array(value) and (dtype is None or np.dtype(dtype) == value.dtype):
        return value
    return Array(np.asarray(value, dtype=dtype) if dtype is not None else value)


def host_value(x: Any) -> np.ndarray:
    """The numpy value of a concrete operand: an Array's own buffer (not copied), else `concrete_value(x)`."""
    return x._value if is_concrete_array(x) else concrete_value(x)


def with_weak_type(x: Any, weak_type: bool) -> Any:
    """The same value with a different weak-type flag (no HLO): a Tracer of the same instruction, or an Array."""
    if isinstance(x, Tracer):
        return Tracer(x.trace, x.inst, weak_type)
    if type(x) is not Array and hasattr(x, "with_weak_type"):      # a LazyArray (lazy/graph.py) stays pending
        return x.with_weak_type(weak_type)
    return Array(np.asarray(x), weak_type=weak_type)
