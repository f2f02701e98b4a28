"""Gathers and data-dependent selections: take, take_along_axis, nonzero/argwhere/flatnonzero (static `size=`
under jit), unique, select, tril/triu_indices, unravel_index.

Functions whose output shape depends on the data (nonzero, unique, ...) compute on concrete values outside jit;
under jit they need `size=` and otherwise raise ConcretizationError naming the caller's line."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..frontend.lazy.host import host_op
from ._util import (Array, arr, as_bool, aval, broadcast_all, canon_axis, concretization_error, dtypes, error,
                    is_traced, lax)


def _wrap_negative(idx, n: int):
    idx = arr(idx)
    ia = aval(idx)
    if ia.dtype.kind not in "iu":
        raise error("take", f"indices must be integers, got {ia.dtype}")
    idx = lax.convert_element_type(idx, np.int32)
    if ia.dtype.kind == "u":
        return idx
    return lax.select(lax.lt(idx, lax.full(ia.shape, 0, np.int32)), lax.add(idx, lax.full(ia.shape, n, np.int32)),
                      idx)


def _apply_mode(idx, n: int, mode: str | None):
    """Indices after numpy/JAX's out-of-bounds handling, and the lax gather mode to use."""
    mode = mode or "fill"
    if mode == "wrap":
        ia = aval(arr(idx))
        i = lax.convert_element_type(arr(idx), np.int32)
        r = lax.rem(i, lax.full(ia.shape, max(n, 1), np.int32))
        return lax.select(lax.lt(r, lax.full(ia.shape, 0, np.int32)), lax.add(r, lax.full(ia.shape, n, np.int32)),
                          r), "clip"
    if mode not in ("fill", "clip", "promise_in_bounds"):
        raise error("take", f"unknown mode {mode!r} (use 'fill', 'clip', 'wrap' or 'promise_in_bounds')")
    idx = _wrap_negative(idx, n)
    if mode == "clip":
        idx = lax.clamp(np.int32(0), idx, np.int32(max(n - 1, 0)))
    return idx, mode


def take(a, indices, axis: int | None = None, out=None, mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value=None) -> Any:
    """a's entries at `indices` along `axis` (flattened when None). Negative indices count from the end; out of
    bounds gives `fill_value` (NaN for floats) by default, as in JAX, or clamps with mode='clip'."""
    x = arr(a)
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    xa = aval(x)
    ax = canon_axis(axis, xa.ndim, "take")
    n = xa.shape[ax]
    if aval(arr(indices)).ndim == 0:
        # a scalar index: gather with one index and drop the axis (the interpreter mis-shapes rank-0 gathers)
        one = take(x, lax.reshape(arr(indices), (1,)), ax, mode=mode, fill_value=fill_value)
        return lax.reshape(one, xa.shape[:ax] + xa.shape[ax + 1:])
    idx, gmode = _apply_mode(indices, n, mode)
    ishape = aval(idx).shape
    offset_dims = tuple(range(ax)) + tuple(range(ax + len(ishape), xa.ndim - 1 + len(ishape)))
    dn = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(ax,), start_index_map=(ax,))
    sizes = tuple(1 if d == ax else s for d, s in enumerate(xa.shape))
    if n == 0 and ishape and aval(idx).size:
        raise error("take", f"cannot take from the empty axis {ax} of {xa}")
    return lax.gather(x, lax.reshape(idx, ishape + (1,)), dn, sizes, mode=gmode, fill_value=fill_value)


def take_along_axis(arr_, indices, axis: int | None, mode: str | None = None, fill_value=None) -> Any:
    """out[..., i, ...] = arr[..., indices[..., i, ...], ...] along `axis` (the other dims broadcast)."""
    x = arr(arr_)
    idx = arr(indices)
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        idx = lax.reshape(idx, (aval(idx).size,))
        axis = 0
    xa, ia = aval(x), aval(idx)
    if xa.ndim != ia.ndim:
        raise error("take_along_axis", f"indices {ia} and array {xa} must have the same rank")
    ax = canon_axis(axis, xa.ndim, "take_along_axis")
    try:
        shape = tuple(np.broadcast_shapes(xa.shape[:ax] + xa.shape[ax + 1:], ia.shape[:ax] + ia.shape[ax + 1:]))
    except ValueError:
        raise error("take_along_axis", f"shapes of {xa} and indices {ia} do not broadcast") from None
    x = lax.broadcast_in_dim(x, shape[:ax] + (xa.shape[ax],) + shape[ax:], tuple(range(xa.ndim)))
    out_shape = shape[:ax] + (ia.shape[ax],) + shape[ax:]
    idx = lax.broadcast_in_dim(idx, out_shape, tuple(range(ia.ndim)))
    idx, gmode = _apply_mode(idx, xa.shape[ax], mode)
    cols = []
    for d in range(xa.ndim):
        col = idx if d == ax else lax.broadcasted_iota(np.int32, out_shape, d)
        cols.append(lax.reshape(col, out_shape + (1,)))
    full_idx = lax.concatenate(cols, len(out_shape)) if len(cols) > 1 else cols[0]
    dims = tuple(range(xa.ndim))
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=dims, start_index_map=dims)
    return lax.gather(x, full_idx, dn, (1,) * xa.ndim, mode=gmode, fill_value=fill_value)


# -- data-dependent shapes ------------------------------------------------------------------------------

def _compact(mask_flat, values, size: int, fill):
    """The `values` at the True positions of the 1-D `mask_flat`, in order, padded with `fill` (static size)."""
    n = aval(mask_flat).shape[0]
    m32 = lax.convert_element_type(mask_flat, np.int32)
    pos = lax.sub(lax.cumsum(m32, 0), lax.full((n,), 1, np.int32))
    target = lax.select(mask_flat, pos, lax.full((n,), size, np.int32))     # size = out of bounds: dropped
    va = aval(values)
    out = lax.full((size,), fill, va.dtype)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    return lax.scatter(out, lax.reshape(target, (n, 1)), values, dn)


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple[Any, ...]:
    """The indices of the nonzero entries, one int32 array per dimension. Under jit `size` is required."""
    x = arr(a)
    xa = aval(x)
    if size is None:
        if is_traced(x):
            raise concretization_error("nonzero", "nonzero()")
        return host_op(_np_nonzero, x)
    size = int(size)
    if xa.ndim == 0:
        x = lax.reshape(x, (1,))
        xa = aval(x)
    mask = lax.reshape(as_bool(x), (xa.size,))
    flat_ids = lax.iota(dtypes.default_int(), xa.size)
    flat = _compact(mask, flat_ids, size, 0)
    valid = lax.lt(lax.iota(np.int32, size), lax.full((size,), lax.reduce_sum(lax.convert_element_type(mask, np.int32),
                                                                         None), np.int32))
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * xa.ndim
    out = []
    stride = xa.size
    for d, n in enumerate(xa.shape):
        stride //= max(n, 1)
        coord = lax.div(flat, lax.full((size,), max(stride, 1), aval(flat).dtype))
        if d:
            coord = lax.rem(coord, lax.full((size,), max(n, 1), aval(flat).dtype))
        if fills[d] is not None:
            coord = lax.select(valid, coord, lax.full((size,), fills[d], aval(flat).dtype))
        out.append(coord)
    return tuple(out)


def flatnonzero(a, *, size: int | None = None, fill_value=None) -> Any:
    x = arr(a)
    return nonzero(lax.reshape(x, (aval(x).size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size: int | None = None, fill_value=None) -> Any:
    x = arr(a)
    if aval(x).ndim == 0:
        x = lax.reshape(x, (1,))
    idx = nonzero(x, size=size, fill_value=fill_value)
    if size is None:
        return Array(np.stack([np.asarray(i) for i in idx], axis=-1).reshape(-1, len(idx)))
    return lax.concatenate([lax.reshape(i, (aval(i).shape[0], 1)) for i in idx], 1)


def _np_nonzero(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """nonzero on the host (lazy/host.py: autojit replays it)."""
    return tuple(i.astype(dtypes.default_int(), copy=False) for i in np.nonzero(x))


def _np_unique(x: np.ndarray, **options) -> Any:
    """unique on the host (lazy/host.py: autojit replays it)."""
    res = np.unique(x, **options)
    if isinstance(res, tuple):
        return tuple(v.astype(dtypes.canonicalize(v.dtype), copy=False) for v in res)
    return res.astype(dtypes.canonicalize(res.dtype), copy=False)


def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, size: int | None = None, fill_value=None):
    """Sorted unique values. Outside jit any numpy option works; under jit `size=` is required (flattened
    values, optionally counts; padded with `fill_value`, by default the smallest value)."""
    x = arr(ar)
    if not is_traced(x) and size is None:
        return host_op(_np_unique, x, return_index=return_index, return_inverse=return_inverse,
                       return_counts=return_counts, axis=axis)
    if size is None:
        raise concretization_error("unique", "unique()")
    if axis is not None:
        raise error("unique", "with size=, axis= is not supported (the values are flattened)")
    if return_index or return_inverse:
        from .setops import _sized_unique
        return _sized_unique(x, int(size), fill_value, return_index=return_index, return_inverse=return_inverse,
                             return_counts=return_counts)
    size = int(size)
    flat = lax.reshape(x, (aval(x).size,))
    n = aval(flat).shape[0]
    s = lax.sort(flat, 0)
    if n == 0:
        raise error("unique", "size= needs a non-empty input")
    first = lax.concatenate([lax.full((1,), True, np.bool_),
                             lax.ne(lax.slice(s, (1,), (n,)), lax.slice(s, (0,), (n - 1,)))], 0) if n > 1 \
        else lax.full((1,), True, np.bool_)
    fill = lax.slice(s, (0,), (1,)) if fill_value is None else None
    vals = _compact(first, s, size, 0 if fill_value is None else fill_value)
    count = lax.reduce_sum(lax.convert_element_type(first, np.int32), None)
    valid = lax.lt(lax.iota(np.int32, size), lax.full((size,), count, np.int32))
    if fill is not None:
        vals = lax.select(valid, vals, lax.broadcast_in_dim(lax.reshape(fill, ()), (size,), ()))
    if not return_counts:
        return vals
    starts = _compact(first, lax.iota(np.int32, n), size + 1, n)
    # count[i] = start[i+1] - start[i], where the start after the last group is n
    starts = lax.select(lax.lt(lax.iota(np.int32, size + 1), lax.full((size + 1,), count, np.int32)), starts,
                        lax.full((size + 1,), n, np.int32))
    counts = lax.sub(lax.slice(starts, (1,), (size + 1,)), lax.slice(starts, (0,), (size,)))
    return vals, lax.convert_element_type(counts, dtypes.default_int())


def unique_values(x, *, size: int | None = None, fill_value=None):
    return unique(x, size=size, fill_value=fill_value)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default=0) -> Any:
    """The first choice whose condition holds, elementwise; `default` where none does."""
    if len(condlist) != len(choicelist):
        raise error("select", f"condlist ({len(condlist)}) and choicelist ({len(choicelist)}) differ in length")
    from .elementwise import where
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, choice, out)
    return arr(out)


def extract(condition, arr_, *, size: int | None = None, fill_value=0) -> Any:
    c = as_bool(condition)
    x = arr(arr_)
    if size is None:
        if is_traced(c, x):
            raise concretization_error("extract", "extract()")
        return Array(np.extract(np.asarray(c), np.asarray(x)))
    c, x = broadcast_all("extract", c, x)
    n = aval(x).size
    return _compact(lax.reshape(c, (n,)), lax.reshape(x, (n,)), int(size), fill_value)



def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    return tuple(Array(v.astype(dtypes.default_int())) for v in np.tril_indices(n, k, m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    return tuple(Array(v.astype(dtypes.default_int())) for v in np.triu_indices(n, k, m))


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    return tuple(Array(v.astype(dtypes.default_int())) for v in np.diag_indices(n, ndim))


def indices(dimensions: Sequence[int], dtype=None, sparse: bool = False):
    dt = dtypes.canonicalize(dtype if dtype is not None else dtypes.default_int())
    dims = tuple(int(d) for d in dimensions)
    if sparse:
        return tuple(lax.reshape(lax.iota(dt, n), tuple(n if j == i else 1 for j in range(len(dims))))
                     for i, n in enumerate(dims))
    return lax.concatenate([lax.reshape(lax.broadcasted_iota(dt, dims, i), (1,) + dims)
                            for i in range(len(dims))], 0) if dims else Array(np.zeros((0,), dt))


def unravel_index(indices, shape: Sequence[int]) -> tuple[Any, ...]:
    idx = arr(indices)
    dt = aval(idx).dtype
    shape = tuple(int(s) for s in shape)
    out = []
    stride = int(np.prod(shape, dtype=np.int64))
    for d, n in enumerate(shape):
        stride //= max(n, 1)
        c = lax.div(idx, np.asarray(max(stride, 1), dt))
        if d:
            c = lax.rem(c, np.asarray(max(n, 1), dt))
        out.append(c)
    return tuple(out)


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise") -> Any:
    from .elementwise import add, multiply
    out = None
    stride = 1
    for idx, n in reversed(list(zip(multi_index, dims))):
        term = multiply(arr(idx), stride)
        out = term if out is None else add(out, term)
        stride *= int(n)
    return out
