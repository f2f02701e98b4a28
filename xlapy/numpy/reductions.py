"""Reductions with numpy's axis (int / tuple / None) and keepdims, and JAX's result dtypes: sum/prod of bools
and small ints accumulate in the default int (uint32 for small unsigned), mean/var/std are floating, argmax is
int32. Also cumulative sums/products, nan-ignoring variants, median, count_nonzero, average."""
from __future__ import annotations

import builtins

import numpy as np

from ..frontend.lax_reduce import reduction_identity
from ._util import arr, as_bool, aval, axes_of, canon_axis, dtypes, error, lax, to_inexact


def _keep(out, shape, axes):
    return lax.reshape(out, tuple(1 if i in axes else s for i, s in enumerate(shape)))


def _accumulator_dtype(dt: np.dtype) -> np.dtype:
    """JAX's sum/prod dtype: bool and narrow ints widen to the default (unsigned) int."""
    if dt == np.bool_ or (dt.kind == "i" and dt.itemsize < dtypes.default_int().itemsize):
        return dtypes.default_int()
    if dt.kind == "u" and dt.itemsize < 4:
        return dtypes.canonicalize(np.uint64 if dtypes.config.enable_x64 else np.uint32)
    return dt


def _where_fill(x, where, value):
    if where is None:
        return x
    from .shape_ops import broadcast_to
    mask = broadcast_to(as_bool(where), aval(x).shape)
    return lax.select(mask, x, lax.full(aval(x).shape, value, aval(x).dtype))


def _monoid(kind: str, name: str, a, axis, dtype, keepdims, initial, where):
    x = arr(a)
    av = aval(x)
    if dtype is not None:
        x = lax.convert_element_type(x, dtype)
    elif kind in ("sum", "prod"):
        acc = _accumulator_dtype(av.dtype)
        if acc != av.dtype:
            x = lax.convert_element_type(x, acc)
    axes = axes_of(axis, av.ndim, name)
    dt = aval(x).dtype
    if kind in ("max", "min"):
        if where is not None and initial is None:
            raise error(name, "reducing with where= needs an initial value")
        if initial is None and builtins.any(av.shape[i] == 0 for i in axes):
            raise error(name, f"zero-size array {av} has no identity; pass initial=")
        ident = reduction_identity(kind, dt)
    else:
        ident = 0 if kind == "sum" else 1
    x = _where_fill(x, where, ident)
    if kind == "sum" and dt == np.bool_:
        out = lax.reduce_or(x, axes)
    elif kind == "prod" and dt == np.bool_:
        out = lax.reduce_and(x, axes)
    elif kind in ("max", "min") and np.issubdtype(dt, np.complexfloating):     # JAX's lexicographic reducer
        from .elementwise import complex_pick
        compare = lax.gt if kind == "max" else lax.lt
        out = lax.reduce(x, ident, lambda acc, v: complex_pick(acc, v, compare), axes)
    else:
        out = {"sum": lax.reduce_sum, "prod": lax.reduce_prod, "max": lax.reduce_max,
               "min": lax.reduce_min}[kind](x, axes)
    if initial is not None:
        from .elementwise import add, maximum, minimum, multiply
        combine = {"sum": add, "prod": multiply, "max": maximum, "min": minimum}[kind]
        out = lax.convert_element_type(combine(out, initial), dt)
    return _keep(out, av.shape, axes) if keepdims else out


def sum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    return _monoid("sum", "sum", a, axis, dtype, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    return _monoid("prod", "prod", a, axis, dtype, keepdims, initial, where)


def max(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    x = arr(a)
    if aval(x).dtype == np.bool_:
        return any(x, axis, keepdims=keepdims, where=where)
    return _monoid("max", "max", x, axis, None, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    x = arr(a)
    if aval(x).dtype == np.bool_:
        return all(x, axis, keepdims=keepdims, where=where)
    return _monoid("min", "min", x, axis, None, keepdims, initial, where)


amax, amin = max, min


def any(a, axis=None, out=None, keepdims: bool = False, *, where=None):
    x = _where_fill(as_bool(a), where, False)
    axes = axes_of(axis, aval(x).ndim, "any")
    out = lax.reduce_or(x, axes)
    return _keep(out, aval(x).shape, axes) if keepdims else out


def all(a, axis=None, out=None, keepdims: bool = False, *, where=None):
    x = _where_fill(as_bool(a), where, True)
    axes = axes_of(axis, aval(x).ndim, "all")
    out = lax.reduce_and(x, axes)
    return _keep(out, aval(x).shape, axes) if keepdims else out


def _count(shape, axes) -> int:
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


def _float_compute(x, dtype):
    """The dtype mean/var compute in: the requested one, or x's promoted to inexact; bf16/f16 use f32."""
    x = to_inexact(x) if dtype is None else lax.convert_element_type(x, dtype)
    out_dt = aval(x).dtype
    if out_dt.itemsize < 4 and out_dt.kind == "f" or out_dt == dtypes.bfloat16:
        x = lax.convert_element_type(x, np.float32)
    return x, out_dt


def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    x0 = arr(a)
    av = aval(x0)
    axes = axes_of(axis, av.ndim, "mean")
    x, out_dt = _float_compute(x0, dtype)
    if where is None:
        total = lax.reduce_sum(x, axes)
        count = np.asarray(_count(av.shape, axes), aval(total).dtype)
    else:
        total = lax.reduce_sum(_where_fill(x, where, 0), axes)
        from .shape_ops import broadcast_to
        mask = lax.convert_element_type(broadcast_to(as_bool(where), av.shape), aval(x).dtype)
        count = lax.reduce_sum(mask, axes)
    res = lax.convert_element_type(lax.div(total, count), out_dt)
    return _keep(res, av.shape, axes) if keepdims else res


def var(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
        correction=None):
    """Variance sum(|x - mean|^2) / (N - ddof), computed in floating point."""
    if correction is not None:
        ddof = correction
    x0 = arr(a)
    av = aval(x0)
    axes = axes_of(axis, av.ndim, "var")
    x, out_dt = _float_compute(x0, dtype)
    if where is not None:
        raise error("var", "where= is not supported")
    m = _keep(lax.div(lax.reduce_sum(x, axes), np.asarray(_count(av.shape, axes), aval(x).dtype)), av.shape, axes)
    m = lax.broadcast_in_dim(m, av.shape, tuple(range(av.ndim)))
    centered = lax.sub(x, m)
    sq = lax.reduce_sum(lax.mul(centered, centered), axes)
    denom = np.asarray(_count(av.shape, axes) - ddof, aval(x).dtype)
    res = lax.convert_element_type(lax.div(sq, denom), out_dt)
    return _keep(res, av.shape, axes) if keepdims else res


def std(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
        correction=None):
    return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


def _arg(kind: str, a, axis, keepdims: bool):
    x = arr(a)
    av = aval(x)
    if av.size == 0:
        raise error(kind, f"attempt to get {kind} of an empty sequence {av}")
    if axis is None:
        flat = lax.reshape(x, (av.size,))
        out = (lax.argmax if kind == "argmax" else lax.argmin)(flat, 0, dtypes.default_int())
        return lax.reshape(out, (1,) * av.ndim) if keepdims else out
    ax = canon_axis(axis, av.ndim, kind)
    if av.dtype == np.bool_:
        x = lax.convert_element_type(x, np.int32)
    out = (lax.argmax if kind == "argmax" else lax.argmin)(x, ax, dtypes.default_int())
    return _keep(out, av.shape, (ax,)) if keepdims else out


def argmax(a, axis=None, out=None, keepdims: bool = False):
    """Index of the first maximum (NaN counts as the maximum)."""
    x = arr(a)
    if aval(x).dtype == np.bool_:
        x = lax.convert_element_type(x, np.int32)
    return _arg("argmax", x, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims: bool = False):
    x = arr(a)
    if aval(x).dtype == np.bool_:
        x = lax.convert_element_type(x, np.int32)
    return _arg("argmin", x, axis, keepdims)


def _cumulative(kind: str, a, axis, dtype):
    x = arr(a)
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    av = aval(x)
    if dtype is not None:
        x = lax.convert_element_type(x, dtype)
    elif av.dtype == np.bool_:
        x = lax.convert_element_type(x, dtypes.default_int())
    ax = canon_axis(axis, av.ndim, kind)
    return {"cumsum": lax.cumsum, "cumprod": lax.cumprod}[kind](x, ax)


def cumsum(a, axis=None, dtype=None, out=None):
    return _cumulative("cumsum", a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    return _cumulative("cumprod", a, axis, dtype)


cumulative_sum, cumulative_prod = cumsum, cumprod


def _nan_to(a, value):
    x = arr(a)
    if not dtypes.is_inexact(aval(x).dtype):
        return x
    return lax.select(lax.ne(x, x), lax.full(aval(x).shape, value, aval(x).dtype), x)


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False):
    return sum(_nan_to(a, 0), axis, dtype, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False):
    return prod(_nan_to(a, 1), axis, dtype, keepdims=keepdims)


def nanmax(a, axis=None, out=None, keepdims: bool = False):
    """The maximum ignoring NaN (NaN where a slice is all NaN)."""
    x = arr(a)
    if not dtypes.is_inexact(aval(x).dtype):
        return max(x, axis, keepdims=keepdims)
    res = max(_nan_to(x, -np.inf), axis, keepdims=keepdims)
    all_nan = all(lax.ne(x, x), axis, keepdims=keepdims)
    return lax.select(all_nan, lax.full_like(res, np.nan), res)


def nanmin(a, axis=None, out=None, keepdims: bool = False):
    x = arr(a)
    if not dtypes.is_inexact(aval(x).dtype):
        return min(x, axis, keepdims=keepdims)
    res = min(_nan_to(x, np.inf), axis, keepdims=keepdims)
    all_nan = all(lax.ne(x, x), axis, keepdims=keepdims)
    return lax.select(all_nan, lax.full_like(res, np.nan), res)


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False):
    x = to_inexact(arr(a))
    valid = lax.eq(x, x)
    return mean(_nan_to(x, 0), axis, dtype, keepdims=keepdims, where=valid)


def count_nonzero(a, axis=None, keepdims: bool = False):
    return sum(as_bool(a), axis, dtype=dtypes.default_int(), keepdims=keepdims)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """The middle value (mean of the two middle values) along the axis; NaN if the slice has a NaN."""
    x = to_inexact(arr(a))
    av = aval(x)
    if axis is None:
        x = lax.reshape(x, (av.size,))
        ax = 0
    else:
        ax = canon_axis(axis, av.ndim, "median")
    s = lax.sort(x, ax)
    n = aval(s).shape[ax]
    if n == 0:
        raise error("median", f"median of an empty axis of {av}")
    from .indexing_ops import take
    lo = take(s, np.array([(n - 1) // 2], np.int32), axis=ax)
    hi = take(s, np.array([n // 2], np.int32), axis=ax)
    res = lax.div(lax.add(lo, hi), np.asarray(2, av.dtype))
    has_nan = any(lax.ne(s, s), ax, keepdims=True)
    res = lax.select(has_nan, lax.full_like(res, np.nan), res)
    if keepdims:
        if axis is None:
            return lax.reshape(res, (1,) * av.ndim)
        return res
    return lax.reshape(res, tuple(d for i, d in enumerate(aval(res).shape) if i != ax))


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        total = lax.full_like(avg, _count(aval(arr(a)).shape, axes_of(axis, aval(arr(a)).ndim, "average")))
        return (avg, total) if returned else avg
    from .elementwise import multiply, true_divide
    from .shape_ops import broadcast_to
    x = arr(a)
    w = arr(weights)
    if aval(w).shape != aval(x).shape:
        if axis is None or aval(w).ndim != 1:
            raise error("average", f"weights {aval(w)} must have the shape of a {aval(x)} or be 1-D along axis")
        ax = canon_axis(axis, aval(x).ndim, "average")
        w = lax.broadcast_in_dim(w, aval(x).shape, (ax,))
    w = broadcast_to(w, aval(x).shape)
    total = sum(w, axis, keepdims=keepdims)
    avg = true_divide(sum(multiply(x, w), axis, keepdims=keepdims), total)
    return (avg, lax.convert_element_type(total, aval(avg).dtype)) if returned else avg


def ptp(a, axis=None, out=None, keepdims: bool = False):
    from .elementwise import subtract
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))
