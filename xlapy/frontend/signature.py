"""What jit specializes on: a call's Signature, its cache key.

A Signature is (the pytree structure of the dynamic arguments, each leaf's abstract value, the static argument
values, the backend, jax_enable_x64, whether the profiler is recording). Two calls with equal signatures share one trace and one executable; jit.py
builds it on a cold call, and warm_call.py generates a check that a later call has the same one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import XlapyError
from . import dtypes
from .pytree import PyTreeDef
from .ref_threading import is_ref, live_value
from .tracer import ShapedArray


@dataclass(frozen=True)
class Signature:
    tree: PyTreeDef
    avals: tuple[ShapedArray, ...]
    static: tuple[tuple[Any, Any], ...]
    backend: str
    x64: bool = False       # jax_enable_x64 at trace time: it changes what the function traces to, as in JAX
    profiled: bool = False  # compiled while a profiler trace ran: its kernels log their times (xlapy.profiler)


@dataclass(frozen=True)
class RefAval:
    """A Ref argument's entry in a Signature: never equal to an array's of the same aval (jit threads a Ref: its
    value is a parameter, its last value an extra output written back into it)."""
    aval: ShapedArray

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)


def abstractify(value: Any, path: str = "") -> ShapedArray | RefAval:
    """The aval jit specializes on: shape, canonical dtype and weak type."""
    aval = getattr(value, "aval", None)
    if aval is not None:
        return aval
    if dtypes.is_python_scalar(value):
        t = dtypes.python_scalar_type(value)
        return ShapedArray((), t.dtype, t.weak)
    if isinstance(value, (np.ndarray, np.generic)):
        return ShapedArray(tuple(value.shape), dtypes.canonicalize(value.dtype), False)
    if is_ref(value):
        return RefAval(abstractify(live_value(value), path))
    raise XlapyError(f"jit: argument{path} of type {type(value).__name__} is not an array, scalar or pytree of "
                     f"them; pass it with static_argnums / static_argnames")
