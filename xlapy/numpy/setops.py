"""Set operations: isin, union1d, intersect1d, setdiff1d, setxor1d, unique_all / unique_counts /
unique_inverse, and `unique` with `size=` and any of its return_* options.

Their results have data-dependent sizes: eagerly (concrete operands, no `size=`) they are computed exactly
as numpy does; under jit they need a static `size=` (the result is padded with `fill_value`, or truncated)
and raise ConcretizationError otherwise. The traced path sorts the flattened operand and compacts the chosen
sorted values (a cumsum of the mask gives each kept value its output slot, a scatter places it). Default
fills follow JAX: unique and union1d pad with the smallest value, intersect1d / setxor1d with the smallest
result (0 if none), setdiff1d with 0.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from ._util import Array, arr, aval, concretization_error, dtypes, is_traced, lax

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _flat(x):
    return lax.reshape(x, (aval(x).size,))


def _to_array(v: np.ndarray) -> Array:
    return Array(np.asarray(v).astype(dtypes.canonicalize(np.asarray(v).dtype)))


def _first_mask(s):
    """True where a sorted 1-D array starts a new value."""
    n = aval(s).shape[0]
    head = lax.full((1,), True, np.bool_)
    if n <= 1:
        return lax.full((n,), True, np.bool_)
    return lax.concatenate([head, lax.ne(lax.slice(s, (1,), (n,)), lax.slice(s, (0,), (n - 1,)))], 0)


def _compact(mask, values, size: int, fill):
    from .indexing_ops import _compact as compact
    return compact(mask, values, size, fill)


def _count(mask):
    return lax.reduce_sum(lax.convert_element_type(mask, np.int32), None)


def _valid(size: int, count):
    return lax.lt(lax.iota(np.int32, size), lax.full((size,), count, np.int32))


def _fill(vals, count, size: int, fill_value, default: str):
    """Pads `vals` (the first `count` entries are results): fill_value, or the default ('zero', or 'min': the
    smallest result, 0 if there is none)."""
    valid = _valid(size, count)
    dt = aval(vals).dtype
    if fill_value is not None:
        return lax.select(valid, vals, lax.full((size,), fill_value, dt))
    if default == "zero" or size == 0:
        return lax.select(valid, vals, lax.full((size,), 0, dt))
    first = lax.broadcast_in_dim(lax.reshape(lax.slice(vals, (0,), (1,)), ()), (size,), ())
    first = lax.select(lax.gt(lax.full((size,), count, np.int32), lax.full((size,), 0, np.int32)), first,
                       lax.full((size,), 0, dt))
    return lax.select(valid, vals, first)


def _in(values, test):
    """For each entry of `values`, whether it occurs in `test` (any shapes; compared flat)."""
    from .elementwise import equal
    v = arr(values)
    t = _flat(arr(test))
    va = aval(v)
    if aval(t).shape[0] == 0:
        return lax.full(va.shape, False, np.bool_)
    hits = equal(lax.reshape(v, va.shape + (1,)), lax.reshape(t, (1,) * va.ndim + aval(t).shape))
    return lax.reduce_or(hits, (va.ndim,))


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *, method: str = "auto"):
    """Whether each element of `element` occurs in `test_elements` (the shape of `element`)."""
    e, t = arr(element), arr(test_elements)
    out = _in(e, t)
    return lax.bitwise_not(out) if invert else out


def _static_size(name: str, size, *xs):
    if size is None:
        if is_traced(*xs):
            raise concretization_error(name, f"{name}()")
        return None
    return int(size)


def _pair(name: str, ar1, ar2):
    a, b = arr(ar1), arr(ar2)
    dt = dtypes.result_type(a, b)
    a, b = (x if aval(x).dtype == dt else lax.convert_element_type(x, dt) for x in (a, b))
    return _flat(a), _flat(b)


def _sized_unique(x, size: int, fill_value, *, return_index=False, return_inverse=False, return_counts=False):
    """unique of the flattened x with a static size: values (+ first indices, inverse, counts)."""
    flat = _flat(x)
    n = aval(flat).shape[0]
    it = dtypes.default_int()
    if n == 0:
        vals = lax.full((size,), 0 if fill_value is None else fill_value, aval(flat).dtype)
        extras = []
        if return_index:
            extras.append(lax.full((size,), 0, it))
        if return_inverse:
            extras.append(lax.full(aval(x).shape, 0, it))
        if return_counts:
            extras.append(lax.full((size,), 0, it))
        return (vals, *extras) if extras else vals
    s, perm = lax.sort((flat, lax.iota(np.int32, n)), 0, is_stable=True, num_keys=1)
    first = _first_mask(s)
    count = _count(first)
    vals = _fill(_compact(first, s, size, 0), count, size, fill_value, "min")
    out = [vals]
    if return_index:
        idx = _compact(first, perm, size, 0)
        # JAX pads with the position of the first (smallest) value, whatever fill_value is
        first_pos = lax.broadcast(lax.reshape(lax.slice(perm, (0,), (1,)), ()), (size,))
        out.append(lax.convert_element_type(lax.select(_valid(size, count), idx, first_pos), it))
    if return_inverse:
        gid = lax.sub(lax.cumsum(lax.convert_element_type(first, np.int32), 0), lax.full((n,), 1, np.int32))
        dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        inv = lax.scatter(lax.full((n,), 0, np.int32), lax.reshape(perm, (n, 1)), gid, dn)
        out.append(lax.convert_element_type(lax.reshape(inv, aval(x).shape), it))
    if return_counts:
        starts = _compact(first, lax.iota(np.int32, n), size + 1, n)
        starts = lax.select(_valid(size + 1, count), starts, lax.full((size + 1,), n, np.int32))
        counts = lax.sub(lax.slice(starts, (1,), (size + 1,)), lax.slice(starts, (0,), (size,)))
        out.append(lax.convert_element_type(counts, it))
    return out[0] if len(out) == 1 else tuple(out)


def _eager_unique(x, **kw):
    res = np.unique(np.asarray(x), **kw)
    return tuple(_to_array(v) for v in res) if isinstance(res, tuple) else _to_array(res)


def unique_all(x, /, *, size: int | None = None, fill_value=None) -> UniqueAllResult:
    x = arr(x)
    size = _static_size("unique_all", size, x)
    if size is None:
        v, i, inv, c = _eager_unique(x, return_index=True, return_inverse=True, return_counts=True)
        return UniqueAllResult(v, i, Array(np.asarray(inv).reshape(aval(x).shape)), c)
    return UniqueAllResult(*_sized_unique(x, size, fill_value, return_index=True, return_inverse=True,
                                          return_counts=True))


def unique_counts(x, /, *, size: int | None = None, fill_value=None) -> UniqueCountsResult:
    x = arr(x)
    size = _static_size("unique_counts", size, x)
    if size is None:
        return UniqueCountsResult(*_eager_unique(x, return_counts=True))
    return UniqueCountsResult(*_sized_unique(x, size, fill_value, return_counts=True))


def unique_inverse(x, /, *, size: int | None = None, fill_value=None) -> UniqueInverseResult:
    x = arr(x)
    size = _static_size("unique_inverse", size, x)
    if size is None:
        v, inv = _eager_unique(x, return_inverse=True)
        return UniqueInverseResult(v, Array(np.asarray(inv).reshape(aval(x).shape)))
    return UniqueInverseResult(*_sized_unique(x, size, fill_value, return_inverse=True))


def union1d(ar1, ar2, *, size: int | None = None, fill_value=None):
    a, b = _pair("union1d", ar1, ar2)
    size = _static_size("union1d", size, a, b)
    if size is None:
        return _to_array(np.union1d(np.asarray(a), np.asarray(b)))
    return _sized_unique(lax.concatenate([a, b], 0), size, fill_value)


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None):
    a, b = _pair("setdiff1d", ar1, ar2)
    size = _static_size("setdiff1d", size, a, b)
    if size is None:
        return _to_array(np.setdiff1d(np.asarray(a), np.asarray(b), assume_unique=assume_unique))
    if aval(a).shape[0] == 0:
        return lax.full((size,), 0 if fill_value is None else fill_value, aval(a).dtype)
    s = lax.sort(a, 0)
    mask = lax.bitwise_and(_first_mask(s), lax.bitwise_not(_in(s, b)))
    return _fill(_compact(mask, s, size, 0), _count(mask), size, fill_value, "zero")


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size: int | None = None, fill_value=None):
    a, b = _pair("intersect1d", ar1, ar2)
    size = _static_size("intersect1d", size, a, b)
    if size is None:
        res = np.intersect1d(np.asarray(a), np.asarray(b), assume_unique=assume_unique,
                             return_indices=return_indices)
        return tuple(_to_array(v) for v in res) if return_indices else _to_array(res)
    if aval(a).shape[0] == 0:
        vals = lax.full((size,), 0 if fill_value is None else fill_value, aval(a).dtype)
        if return_indices:
            z = lax.full((size,), 0, dtypes.default_int())
            return vals, z, z
        return vals
    n = aval(a).shape[0]
    s, perm = lax.sort((a, lax.iota(np.int32, n)), 0, is_stable=True, num_keys=1)
    mask = lax.bitwise_and(_first_mask(s), _in(s, b))
    count = _count(mask)
    vals = _fill(_compact(mask, s, size, 0), count, size, fill_value, "min")
    if not return_indices:
        return vals
    it = dtypes.default_int()
    i1 = lax.convert_element_type(_compact(mask, perm, size, 0), it)
    # the first index in ar2 of each value: argmax of equality over ar2
    from .elementwise import equal
    m = aval(b).shape[0]
    eqs = equal(lax.reshape(vals, (size, 1)), lax.reshape(b, (1, m)))
    i2 = lax.argmax(lax.convert_element_type(eqs, np.int32), 1, it)
    valid = _valid(size, count)      # padded indices are the operands' sizes, as in JAX
    return vals, lax.select(valid, i1, lax.full((size,), n, it)), lax.select(valid, i2, lax.full((size,), m, it))


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None):
    a, b = _pair("setxor1d", ar1, ar2)
    size = _static_size("setxor1d", size, a, b)
    if size is None:
        return _to_array(np.setxor1d(np.asarray(a), np.asarray(b), assume_unique=assume_unique))
    sa, sb = lax.sort(a, 0), lax.sort(b, 0)
    ma = lax.bitwise_and(_first_mask(sa), lax.bitwise_not(_in(sa, b)))
    mb = lax.bitwise_and(_first_mask(sb), lax.bitwise_not(_in(sb, a)))
    both = lax.concatenate([sa, sb], 0)
    mask = lax.concatenate([ma, mb], 0)
    if aval(both).shape[0] == 0:
        return lax.full((size,), 0 if fill_value is None else fill_value, aval(a).dtype)
    s, m = lax.sort((both, lax.convert_element_type(mask, np.int8)), 0, is_stable=True, num_keys=1)
    m = lax.ne(m, lax.full_like(m, 0))
    return _fill(_compact(m, s, size, 0), _count(m), size, fill_value, "min")


__all__ = ["isin", "union1d", "intersect1d", "setdiff1d", "setxor1d", "unique_all", "unique_counts",
           "unique_inverse"]
