"""numpy indexing for Array and Tracer: basic indexing (ints, slices, None, Ellipsis) becomes slice / reverse /
reshape; a traced scalar index becomes dynamic-slice; integer-array (advanced) indexing becomes gather.
`x.at[idx].set/add/multiply/min/max/get` scatter into the positions `x[idx]` reads."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import XlapyError
from .. import lax
from ..lax import aval
from . import dtypes
from .tracer import user_frame


def _is_int_scalar(i: Any) -> bool:
    if isinstance(i, (bool, np.bool_)):
        return False
    if isinstance(i, (int, np.integer)):
        return True
    return hasattr(i, "aval") and i.aval.ndim == 0 and i.aval.dtype.kind in "iu"


def _is_array_index(i: Any) -> bool:
    if isinstance(i, (list, np.ndarray)) or (hasattr(i, "aval") and i.aval.ndim > 0):
        arr_dtype = aval(np.asarray(i) if isinstance(i, list) else i).dtype
        if arr_dtype == np.bool_:
            raise XlapyError(f"boolean mask indexing has a data-dependent shape and is not supported "
                             f"(use xlapy.lax.select / where) (at {user_frame()})")
        if arr_dtype.kind not in "iu":
            raise XlapyError(f"array indices must be integers, got {arr_dtype} (at {user_frame()})")
        return True
    return False


def _expand(index: Any, ndim: int) -> list[Any]:
    idx = list(index) if isinstance(index, tuple) else [index]
    n_ellipsis = sum(1 for i in idx if i is Ellipsis)
    if n_ellipsis > 1:
        raise XlapyError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if consumed > ndim:
        raise XlapyError(f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed "
                         f"(at {user_frame()})")
    fill = [slice(None)] * (ndim - consumed)
    if n_ellipsis:
        k = idx.index(Ellipsis)
        return idx[:k] + fill + idx[k + 1:]
    return idx + fill


def getitem(x, index):
    a = aval(x)
    idx = _expand(index, a.ndim)
    advanced = any(_is_array_index(i) for i in idx)
    if advanced:
        return _advanced(x, idx)
    return _basic(x, idx)[0]


def _basic(x, idx: list[Any]):
    """Basic indexing; returns (result, list mapping each non-int index entry to its output dimension)."""
    a = aval(x)
    starts, limits, strides, reverse, squeeze, dynamic = [], [], [], [], [], []
    out_shape: list[int] = []
    d = 0
    for i in idx:
        if i is None:
            out_shape.append(1)
            continue
        n = a.shape[d]
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step > 0:
                count = max(0, -(-(stop - start) // step))
                starts.append(start), limits.append(start + (count - 1) * step + 1 if count else start)
                strides.append(step)
            else:
                count = max(0, -(-(start - stop) // -step))
                last = start + (count - 1) * step
                starts.append(last if count else 0), limits.append(start + 1 if count else 0)
                strides.append(-step)
                if count:
                    reverse.append(d)
            out_shape.append(count)
        elif _is_int_scalar(i):
            if hasattr(i, "aval") and not _is_concrete(i):
                dynamic.append((d, i))
                starts.append(0), limits.append(n), strides.append(1)
            else:
                k = int(i)
                if not -n <= k < n:
                    raise XlapyError(f"index {k} is out of bounds for axis {d} with size {n} (at {user_frame()})")
                k %= n
                starts.append(k), limits.append(k + 1), strides.append(1)
            squeeze.append(d)
        else:
            raise XlapyError(f"unsupported index {i!r} of type {type(i).__name__} (at {user_frame()})")
        d += 1
    y = x
    if (starts, limits, strides) != ([0] * a.ndim, list(a.shape), [1] * a.ndim):
        y = lax.slice(y, starts, limits, strides)
    if reverse:
        y = lax.rev(y, reverse)
    for dim, i in dynamic:
        n = a.shape[dim]
        i = lax.convert_element_type(i, np.int32)
        i = lax.select(lax.lt(i, np.int32(0)), lax.add(i, np.int32(n)), i)
        starts_d = [np.int32(0)] * a.ndim
        starts_d[dim] = i
        sizes = list(aval(y).shape)
        sizes[dim] = 1
        y = lax.dynamic_slice(y, starts_d, sizes)
    if tuple(out_shape) != aval(y).shape:
        y = lax.reshape(y, out_shape)
    return y, out_shape


def _is_concrete(i) -> bool:
    return not hasattr(i, "trace")


def _advanced(x, idx: list[Any]):
    """Integer-array indexing as one gather (numpy's placement rule for the broadcast index dims)."""
    # 1. basic-index everything else, keeping the advanced dims whole
    plain = [slice(None) if (_is_array_index(i) or _is_int_scalar(i)) else i for i in idx]
    y, _ = _basic(x, plain)
    ya = aval(y)
    positions, arrays, out_dim = [], [], 0
    for i in idx:
        if _is_array_index(i) or _is_int_scalar(i):
            positions.append(out_dim)
            arrays.append(np.asarray(i) if isinstance(i, (list, int, np.integer)) else i)
        out_dim += 1
    # 2. broadcast the index arrays, wrap negatives, stack into the index vector
    shapes = [aval(v).shape for v in arrays]
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise XlapyError(f"index arrays of shapes {shapes} do not broadcast (at {user_frame()})") from None
    cols = []
    for v, p in zip(arrays, positions):
        v = lax.convert_element_type(v, np.int32)
        v = lax.broadcast_in_dim(v, bshape, tuple(range(len(bshape) - aval(v).ndim, len(bshape))))
        n = np.int32(ya.shape[p])
        v = lax.select(lax.lt(v, lax.full(bshape, 0, np.int32)), lax.add(v, lax.full(bshape, n, np.int32)), v)
        cols.append(lax.reshape(v, bshape + (1,)))
    indices = cols[0] if len(cols) == 1 else lax.concatenate(cols, len(bshape))
    rest = [d for d in range(ya.ndim) if d not in positions]
    contiguous = positions == list(range(positions[0], positions[0] + len(positions)))
    nb = len(bshape)
    if contiguous:
        before = [d for d in rest if d < positions[0]]
        offset_dims = tuple(range(len(before))) + tuple(range(len(before) + nb, len(rest) + nb))
    else:
        offset_dims = tuple(range(nb, nb + len(rest)))
    dn = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(positions),
                                    start_index_map=tuple(positions))
    sizes = tuple(1 if d in positions else ya.shape[d] for d in range(ya.ndim))
    return lax.gather(y, indices, dn, sizes)


class IndexUpdateHelper:
    """`x.at[idx]` -> an IndexUpdateRef with set/add/multiply/min/max/get."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> "IndexUpdateRef":
        return IndexUpdateRef(self.array, index)


class IndexUpdateRef:
    """Functional updates of the positions `x[idx]` reads: a scatter into the flattened array at the flat
    positions obtained by indexing an iota of x's shape (so every index form getitem accepts works).
    Repeated indices accumulate for add/multiply/min/max; for set one of them wins."""
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, **_):
        return getitem(self.array, self.index)

    def _scatter(self, fn, values):
        x = self.array
        a = aval(x)
        flat_ids = lax.reshape(lax.iota(np.int32, a.size), a.shape) if a.ndim else lax.iota(np.int32, 1)
        sel = getitem(flat_ids, self.index) if a.ndim else getitem(lax.reshape(flat_ids, ()), self.index)
        sel_shape = aval(sel).shape
        vt = dtypes.type_of(values)
        if vt.dtype != a.dtype:
            values = lax._convert(values, a.dtype, vt.weak)
        va = aval(values)
        try:
            np.broadcast_shapes(va.shape, sel_shape)
            if len(va.shape) > len(sel_shape) or np.broadcast_shapes(va.shape, sel_shape) != tuple(sel_shape):
                raise ValueError
        except ValueError:
            raise XlapyError(f"at[...]: values of shape {va.shape} cannot be broadcast to the indexed shape "
                             f"{tuple(sel_shape)} (at {user_frame()})") from None
        values = lax.broadcast_in_dim(values, sel_shape, tuple(range(len(sel_shape) - va.ndim, len(sel_shape))))
        m = int(np.prod(sel_shape, dtype=np.int64))
        dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        out = fn(lax.reshape(x, (a.size,)), lax.reshape(sel, (m, 1)), lax.reshape(values, (m,)), dn)
        return lax.reshape(out, a.shape)

    def set(self, values, **_):
        return self._scatter(lax.scatter, values)

    def add(self, values, **_):
        return self._scatter(lax.scatter_add, values)

    def multiply(self, values, **_):
        return self._scatter(lax.scatter_mul, values)

    mul = multiply

    def min(self, values, **_):
        return self._scatter(lax.scatter_min, values)

    def max(self, values, **_):
        return self._scatter(lax.scatter_max, values)
