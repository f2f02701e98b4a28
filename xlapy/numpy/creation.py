"""Array creation: array/asarray, zeros/ones/full/empty (and *_like), arange, linspace, eye, tri/tril/triu,
meshgrid. Static sizes; outside jit the results are concrete Arrays, inside jit broadcasts and iotas."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._util import (Array, Tracer, arr, aval, canon_axis, dtypes, error, full_const, is_traced, lax, promote,
                    shape_tuple)


def array(object: Any, dtype=None, copy: bool = True, order=None, ndmin: int = 0) -> Any:
    """An array of `object`: an array, a (nested) list of scalars/arrays/tracers, or a Python scalar.
    64-bit types are canonicalized (float64 -> float32 unless x64); lists of traced values are stacked."""
    if isinstance(object, (list, tuple)) and is_traced(*object):
        parts = [array(o) for o in object]
        if not parts:
            out = Array(np.zeros((0,), dtypes.default_float()))
        else:
            parts = promote("array", *parts)
            out = lax.concatenate([lax.expand_dims(p, (0,)) for p in parts], 0)
    elif dtypes.is_python_scalar(object) and dtype is None:
        out = arr(object)
    elif hasattr(object, "aval"):
        out = object
    else:
        value = np.asarray(object, dtype=dtype)
        if value.dtype == np.dtype("O"):
            raise error("array", f"cannot convert {type(object).__name__} to an array")
        out = Array(value.astype(dtypes.canonicalize(value.dtype)))
    if dtype is not None and aval(out).dtype != dtypes.canonicalize(dtype):
        out = lax.convert_element_type(out, dtype)
    if aval(out).ndim < ndmin:
        out = lax.reshape(out, (1,) * (ndmin - aval(out).ndim) + aval(out).shape)
    return out


def asarray(a: Any, dtype=None, order=None, copy=None) -> Any:
    return array(a, dtype=dtype)


def _dtype_or(dtype, default):
    return dtypes.canonicalize(dtype if dtype is not None else default)


def zeros(shape, dtype=None) -> Any:
    return full_const(shape_tuple(shape), 0, _dtype_or(dtype, dtypes.default_float()))


def ones(shape, dtype=None) -> Any:
    return full_const(shape_tuple(shape), 1, _dtype_or(dtype, dtypes.default_float()))


empty = zeros


def full(shape, fill_value, dtype=None) -> Any:
    """Filled with `fill_value` (which may be an array broadcast to `shape`); dtype defaults to its dtype."""
    shape = shape_tuple(shape)
    fill = arr(fill_value)
    fa = aval(fill)
    dtype = dtypes.canonicalize(dtype) if dtype is not None else fa.dtype
    if fa.ndim:
        fill = lax.convert_element_type(fill, dtype) if fa.dtype != dtype else fill
        return lax.broadcast_in_dim(fill, shape, tuple(range(len(shape) - fa.ndim, len(shape))))
    if hasattr(fill_value, "aval"):
        return lax.full(shape, fill, dtype)
    return full_const(shape, np.asarray(fill_value), dtype)


def zeros_like(a, dtype=None, shape=None) -> Any:
    av = aval(arr(a))
    return zeros(av.shape if shape is None else shape, _dtype_or(dtype, av.dtype))


def ones_like(a, dtype=None, shape=None) -> Any:
    av = aval(arr(a))
    return ones(av.shape if shape is None else shape, _dtype_or(dtype, av.dtype))


empty_like = zeros_like


def full_like(a, fill_value, dtype=None, shape=None) -> Any:
    av = aval(arr(a))
    return full(av.shape if shape is None else shape, fill_value, _dtype_or(dtype, av.dtype))


def _static_number(x, name: str):
    if isinstance(x, Tracer):     # (isinstance(tracer, Array) is True, as for jax.Array)
        raise error(name, "start/stop/step must be static (concrete) values under jit")
    return np.asarray(x).item()


def arange(start, stop=None, step=None, dtype=None) -> Any:
    """numpy.arange with static bounds; int32 for integer bounds and float32 for float ones (unless x64)."""
    values = [v for v in (start, stop, step) if v is not None]
    nums = [_static_number(v, "arange") for v in values]
    if dtype is None:
        dtype = dtypes.default_float() if any(isinstance(v, float) for v in nums) else dtypes.default_int()
    dtype = dtypes.canonicalize(dtype)
    lo, hi, st = (0, nums[0], 1) if stop is None else (nums[0], nums[1], nums[2] if step is not None else 1)
    if st == 0:
        raise error("arange", "step must not be zero")
    n = max(0, int(np.ceil((hi - lo) / st)))
    if lo == 0 and st == 1 and dtype.kind in "iuf":
        return lax.iota(dtype, n) if is_tracing() else Array(np.arange(n, dtype=dtype))
    return Array(np.arange(lo, hi, st).astype(dtype)[:n])


def is_tracing() -> bool:
    from ..frontend.tracer import current_trace
    return current_trace() is not None


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0):
    """`num` evenly spaced values from start to stop; start/stop may be (traced) arrays."""
    num = int(num)
    if num < 0:
        raise error("linspace", f"num must be non-negative, got {num}")
    start, stop = promote("linspace", start, stop)
    comp = dtypes.default_float() if not dtypes.is_inexact(aval(start).dtype) else aval(start).dtype
    start, stop = (lax.convert_element_type(v, comp) for v in (start, stop))
    bshape = aval(start).shape
    div = (num - 1) if endpoint else num
    delta = lax.sub(stop, start)
    step = lax.div(delta, np.asarray(max(div, 1), comp))
    out_shape = (num,) + bshape
    steps = lax.broadcasted_iota(comp, out_shape, 0)
    start_b = lax.broadcast_in_dim(start, out_shape, tuple(range(1, len(out_shape))))
    step_b = lax.broadcast_in_dim(step, out_shape, tuple(range(1, len(out_shape))))
    out = lax.add(start_b, lax.mul(steps, step_b))
    if endpoint and num > 1:     # the last value is exactly `stop`
        stop_b = lax.broadcast_in_dim(stop, out_shape, tuple(range(1, len(out_shape))))
        last = lax.eq(steps, np.asarray(num - 1, comp))
        out = lax.select(last, stop_b, out)
    axis = canon_axis(axis, len(out_shape), "linspace")
    if axis:
        perm = list(range(1, len(out_shape)))
        perm.insert(axis, 0)
        out = lax.transpose(out, perm)
    target = dtypes.canonicalize(dtype) if dtype is not None else comp
    if target != comp:
        out = lax.convert_element_type(lax.floor(out) if target.kind in "iu" else out, target)
    return (out, step) if retstep else out


def logspace(start, stop, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype=None, axis: int = 0):
    from .elementwise import power
    out = power(base, linspace(start, stop, num, endpoint, dtype=None, axis=axis))
    return out if dtype is None else lax.convert_element_type(out, dtype)


def _tri_mask(n: int, m: int, k: int):
    """bool[n, m]: column <= row + k."""
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    return lax.le(cols, lax.add(rows, np.int32(k)))


def eye(N: int, M: int | None = None, k: int = 0, dtype=None) -> Any:
    n, m = int(N), int(N if M is None else M)
    dt = _dtype_or(dtype, dtypes.default_float())
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    return lax.convert_element_type(lax.eq(cols, lax.add(rows, np.int32(k))), dt)


def identity(n: int, dtype=None) -> Any:
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None) -> Any:
    n, m = int(N), int(N if M is None else M)
    return lax.convert_element_type(_tri_mask(n, m, int(k)), _dtype_or(dtype, dtypes.default_float()))


def _tri_select(name: str, m, k: int, lower: bool):
    x = arr(m)
    a = aval(x)
    if a.ndim < 2:
        raise error(name, f"needs an array of rank >= 2, got {a}")
    n_, m_ = a.shape[-2:]
    mask = _tri_mask(n_, m_, k if lower else k - 1)
    if not lower:
        mask = lax.bitwise_not(mask)
    mask = lax.broadcast_in_dim(mask, a.shape, (a.ndim - 2, a.ndim - 1))
    return lax.select(mask, x, lax.full(a.shape, 0, a.dtype))


def tril(m, k: int = 0) -> Any:
    return _tri_select("tril", m, int(k), True)


def triu(m, k: int = 0) -> Any:
    return _tri_select("triu", m, int(k), False)


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list[Any]:
    """Coordinate matrices from 1-D coordinate vectors ('xy': the first two outputs' axes swapped)."""
    if indexing not in ("xy", "ij"):
        raise error("meshgrid", f"indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [lax.reshape(arr(x), (aval(arr(x)).size,)) for x in xi]
    shape = [aval(x).shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        dim = i
        if indexing == "xy" and len(xs) >= 2 and i < 2:
            dim = 1 - i
        if sparse:
            s = [1] * len(xs)
            s[dim] = shape[dim]
            out.append(lax.reshape(x, s))
        else:
            out.append(lax.broadcast_in_dim(x, tuple(shape), (dim,)))
    return out


def _shape_of(a) -> tuple[int, ...]:
    return aval(arr(a)).shape


def shape(a) -> tuple[int, ...]:
    return _shape_of(a)


def ndim(a) -> int:
    return len(_shape_of(a))


def size(a, axis: int | None = None) -> int:
    s = _shape_of(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


def copy(a) -> Any:
    return arr(a)


def diag(v, k: int = 0) -> Any:
    """A 1-D input becomes a 2-D array with v on diagonal k; a 2-D input gives its diagonal k."""
    x = arr(v)
    a = aval(x)
    if a.ndim == 1:
        n = a.shape[0] + abs(int(k))
        rows = lax.broadcasted_iota(np.int32, (n, n), 0)
        cols = lax.broadcasted_iota(np.int32, (n, n), 1)
        mask = lax.eq(cols, lax.add(rows, np.int32(k)))
        # out[r, c] = v[c - max(k, 0)] where c = r + k: pad v to length n and broadcast along rows
        padded = lax.pad(x, np.zeros((), a.dtype), [(max(0, int(k)), max(0, -int(k)), 0)])
        src = lax.broadcast_in_dim(padded, (n, n), (1,))
        return lax.select(mask, src, lax.full((n, n), 0, a.dtype))
    if a.ndim == 2:
        from .shape_ops import diagonal
        return diagonal(x, k)
    raise error("diag", f"input must be 1-D or 2-D, got {a}")
