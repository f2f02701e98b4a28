"""numpy indexing for Array and Tracer, and JAX's `x.at[idx]` functional updates.

`x[idx]`: basic indexing (ints, slices, None, Ellipsis) becomes slice / reverse / reshape, a traced scalar index
dynamic-slice; integer-array (advanced) indexing becomes one gather. A concrete boolean mask is replaced by the
integer arrays of its nonzero positions (numpy's rule); a traced mask has a data-dependent shape and raises
ConcretizationError.

`x.at[idx].set/add/subtract/multiply/divide/power/min/max/get` are one HLO scatter (or gather for get) whose
dimension numbers come from the index expression (`IndexPlan`): a step-1 slice is a window dimension, an int or
an integer array is a collapsed dimension addressed by the index vector (several arrays broadcast together and
are placed by numpy's rule), a strided slice is a collapsed dimension addressed by an iota. Negative indices wrap
once (JAX's `wrap_negative_indices`); what is still out of bounds is then handled by `mode`, with JAX's defaults:
updates DROP out-of-bounds indices ("drop"/"fill"; "clip" clamps them), `get` CLAMPS them ("clip"; "fill" returns
`fill_value`).

This is numpy-level code over lax (like operators.py), so lax's ops are imported as `lax_<name>`."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConcretizationError, XlapyError
from . import dtypes, operators
from .lax_elementwise import add as lax_add, clamp as lax_clamp, lt as lax_lt, select as lax_select
from .lax_operands import convert, convert_element_type as lax_convert_element_type
from .lax_reduce import (GatherDimensionNumbers, ScatterDimensionNumbers, gather as lax_gather, scatter as lax_scatter,
                         scatter_add as lax_scatter_add, scatter_max as lax_scatter_max,
                         scatter_min as lax_scatter_min, scatter_mul as lax_scatter_mul)
from .lax_shapes import (broadcast_in_dim as lax_broadcast_in_dim, concatenate as lax_concatenate,
                         dynamic_slice as lax_dynamic_slice, full as lax_full, reshape as lax_reshape, rev as lax_rev,
                         slice as lax_slice)
from .lazy.graph import is_deferred
from .lazy.host import host_op
from .tracer import Tracer, aval, user_frame


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
            raise _mask_error(i)
        if arr_dtype.kind not in "iu":
            raise XlapyError(f"array indices must be integers, got {arr_dtype} (at {user_frame()})")
        return True
    return False


def _mask_error(mask) -> ConcretizationError:
    return ConcretizationError(
        f"boolean indices produce data-dependent shapes; use xnp.where(mask, x, y) or nonzero(size=) "
        f"(a traced boolean mask {aval(mask)} at {user_frame()})")


def _bool_mask(i: Any) -> bool:
    """True for a boolean index array (list, numpy, Array or Tracer) of rank >= 1."""
    if isinstance(i, list):
        return len(i) > 0 and np.asarray(i).dtype == np.bool_
    if isinstance(i, np.ndarray) or hasattr(i, "aval"):
        a = aval(i)
        return a.dtype == np.bool_ and a.ndim >= 1
    return False


def _expand(index: Any, shape: tuple[int, ...]) -> list[Any]:
    """The index as a list with Ellipsis expanded and boolean masks replaced by their nonzero index arrays."""
    ndim = len(shape)
    idx = list(index) if isinstance(index, tuple) else [index]
    n_ellipsis = sum(1 for i in idx if i is Ellipsis)
    if n_ellipsis > 1:
        raise XlapyError("an index can only have a single ellipsis ('...')")

    def consumes(i: Any) -> int:
        if i is None or i is Ellipsis:
            return 0
        return aval(np.asarray(i) if isinstance(i, list) else i).ndim if _bool_mask(i) else 1

    consumed = sum(consumes(i) for i in idx)
    if consumed > ndim:
        raise XlapyError(f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed "
                         f"(at {user_frame()})")
    fill = [slice(None)] * (ndim - consumed)
    if n_ellipsis:
        k = next(n for n, i in enumerate(idx) if i is Ellipsis)     # (list.index would compare arrays with ==)
        idx = idx[:k] + fill + idx[k + 1:]
    else:
        idx = idx + fill
    if not any(_bool_mask(i) for i in idx):
        return idx
    return _replace_masks(idx, consumes, shape)


def _replace_masks(idx: list[Any], consumes, shape: tuple[int, ...]) -> list[Any]:
    out: list[Any] = []
    d = 0
    for i in idx:
        if _bool_mask(i):
            if isinstance(i, Tracer):
                raise _mask_error(i)
            if is_deferred(i):      # lazy: its indices are a host op (autojit replays it on new masks)
                mask_shape = aval(i).shape
                if mask_shape != tuple(shape[d:d + len(mask_shape)]):
                    raise XlapyError(f"boolean index of shape {mask_shape} does not match the indexed dimensions "
                                     f"{tuple(shape[d:d + len(mask_shape)])} of an array of shape {tuple(shape)} "
                                     f"(at {user_frame()})")
                out.extend(host_op(_mask_indices, i))
                d += len(mask_shape)
                continue
            mask = np.asarray(i)
            if mask.shape != tuple(shape[d:d + mask.ndim]):     # numpy's rule: the mask covers the dims it indexes
                raise XlapyError(f"boolean index of shape {mask.shape} does not match the indexed dimensions "
                                 f"{tuple(shape[d:d + mask.ndim])} of an array of shape {tuple(shape)} "
                                 f"(at {user_frame()})")
            out.extend(np.nonzero(mask))
            d += mask.ndim
        else:
            out.append(i)
            d += consumes(i)
    return out


def _mask_indices(mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """A boolean mask's nonzero indices, one array per dimension (lazy/host.py's host op)."""
    return tuple(k.astype(dtypes.default_int(), copy=False) for k in np.nonzero(mask))


def getitem(x, index):
    a = aval(x)
    idx = _expand(index, a.shape)
    advanced = any(_is_array_index(i) for i in idx)
    if advanced:
        return IndexPlan(a, idx).gather(x, mode="clip")
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
                if n == 0:
                    raise XlapyError(f"index {k} is out of bounds for axis {d} with size 0 (at {user_frame()})")
                k = min(max(k + n if k < 0 else k, 0), n - 1)     # JAX clamps an out-of-bounds index
                starts.append(k), limits.append(k + 1), strides.append(1)
            squeeze.append(d)
        else:
            raise XlapyError(f"unsupported index {i!r} of type {type(i).__name__} (at {user_frame()})")
        d += 1
    y = x
    if (starts, limits, strides) != ([0] * a.ndim, list(a.shape), [1] * a.ndim):
        y = lax_slice(y, starts, limits, strides)
    if reverse:
        y = lax_rev(y, reverse)
    for dim, i in dynamic:          # lax.dynamic_slice counts a negative index from the end, then clamps
        starts_d = [np.int32(0)] * a.ndim
        starts_d[dim] = i
        sizes = list(aval(y).shape)
        sizes[dim] = 1
        y = lax_dynamic_slice(y, starts_d, sizes)
    if tuple(out_shape) != aval(y).shape:
        y = lax_reshape(y, out_shape)
    return y, out_shape


def _is_concrete(i) -> bool:
    return not isinstance(i, Tracer)


# -- x[idx] as gather / scatter dimension numbers ---------------------------------------------------------

_INT32 = np.iinfo(np.int32)


class IndexPlan:
    """How the positions `x[idx]` reads map onto one gather / scatter.

    shape        the shape of x[idx] (None entries included)
    slice_shape  that shape without the None dims: the gather's output, the scatter's updates
    offset_dims  positions in slice_shape of window dims (step-1 slices): gather offset_dims / scatter
                 update_window_dims
    collapsed    operand dims indexed by an int, an array or a strided slice (window size 1, removed)
    index_map    operand dims the index vector addresses, one column each (start_index_map /
                 scatter_dims_to_operand_dims); operand dims not in it start at 0
    slice_sizes  the window size per operand dim
    batch_shape  the sizes of the non-window dims of slice_shape, in order: the index array is
                 batch_shape + (len(index_map),)
    columns      per index_map entry: (value, batch dims value's dims map to)
    """

    def __init__(self, a, idx: list[Any], wrap_negative: bool = True):
        entries, d = [], 0
        adv_entries = []          # (operand dim, value) for ints and integer arrays
        for pos, i in enumerate(idx):
            if i is None:
                entries.append(("none",))
                continue
            if isinstance(i, slice):
                start, stop, step = i.indices(a.shape[d])
                count = len(range(start, stop, step))
                entries.append(("window", d, count, start) if step == 1 else ("iota", d, count, start, step))
            elif _is_array_index(i) or _is_int_scalar(i):
                adv_entries.append((pos, d, np.asarray(i) if isinstance(i, list) else i))
                entries.append(("adv",))
            else:
                raise XlapyError(f"unsupported index {i!r} of type {type(i).__name__} (at {user_frame()})")
            d += 1
        shapes = [aval(v).shape if hasattr(v, "aval") else np.shape(v) for _, _, v in adv_entries]
        try:
            bshape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        except ValueError:
            raise XlapyError(f"index arrays of shapes {shapes} do not broadcast (at {user_frame()})") from None
        # numpy's placement: the broadcast dims replace contiguous advanced indices, else they go first
        positions = [p for p, _, _ in adv_entries]
        contiguous = positions == list(range(positions[0], positions[0] + len(positions))) if positions else True
        first_adv = next((k for k, e in enumerate(entries) if e[0] == "adv"), 0) if contiguous else 0
        entries = [e for e in entries if e[0] != "adv"]
        entries[first_adv:first_adv] = [("bdim", j) for j in range(len(bshape))]

        sizes = {"none": lambda e: 1, "window": lambda e: e[2], "iota": lambda e: e[2], "bdim": lambda e: bshape[e[1]]}
        self.shape = tuple(sizes[e[0]](e) for e in entries)
        squeezed = [e for e in entries if e[0] != "none"]
        self.slice_shape = tuple(sizes[e[0]](e) for e in squeezed)
        self.offset_dims = tuple(k for k, e in enumerate(squeezed) if e[0] == "window")
        batch = [e for e in squeezed if e[0] != "window"]
        self.batch_shape = tuple(sizes[e[0]](e) for e in batch)
        bdim_pos = [k for k, e in enumerate(batch) if e[0] == "bdim"]

        self.slice_sizes = [1] * a.ndim
        columns: dict[int, tuple[Any, tuple[int, ...]]] = {}
        for e in squeezed:
            if e[0] == "window":
                self.slice_sizes[e[1]] = e[2]
                if e[3] != 0:
                    columns[e[1]] = (e[3], ())
            elif e[0] == "iota":
                _, dim, count, start, step = e
                columns[dim] = (np.arange(count, dtype=np.int64) * step + start, (batch.index(e),))
        for _, dim, v in adv_entries:
            nd = aval(v).ndim if hasattr(v, "aval") else np.ndim(v)
            columns[dim] = (_normalize(v, a.shape[dim], wrap_negative), tuple(bdim_pos[len(bdim_pos) - nd:]))
        if not columns and a.ndim:
            columns[0] = (0, ())          # a whole-array window still needs an index vector
        self.collapsed = tuple(sorted([dim for _, dim, _ in adv_entries] + [e[1] for e in squeezed if e[0] == "iota"]))
        self.index_map = tuple(sorted(columns))
        self.columns = [columns[dim] for dim in self.index_map]

    @property
    def empty(self) -> bool:
        return 0 in self.slice_shape

    def indices(self):
        """The index array: batch_shape + (len(index_map),), int32; numpy when every column is concrete."""
        bs = self.batch_shape
        if not any(isinstance(v, Tracer) or is_deferred(v) for v, _ in self.columns):
            cols = [np.broadcast_to(np.expand_dims(np.asarray(v), tuple(k for k in range(len(bs)) if k not in dims))
                                    if np.ndim(v) else v, bs) for v, dims in self.columns]
            return np.stack([np.asarray(c, np.int32) for c in cols], axis=-1) if cols else np.zeros(bs + (0,), np.int32)
        cols = []
        for v, dims in self.columns:
            v = lax_convert_element_type(v, np.int32) if hasattr(v, "aval") else np.asarray(v, np.int32)
            cols.append(lax_reshape(lax_broadcast_in_dim(v, bs, dims), bs + (1,)))
        return cols[0] if len(cols) == 1 else lax_concatenate(cols, len(bs))

    def gather(self, x, mode=None, fill_value=None, indices_are_sorted: bool = False, unique_indices: bool = False):
        a = aval(x)
        if self.empty:
            return lax_full(self.shape, 0, a.dtype)
        dn = GatherDimensionNumbers(offset_dims=self.offset_dims, collapsed_slice_dims=self.collapsed,
                                        start_index_map=self.index_map)
        out = lax_gather(x, self.indices(), dn, self.slice_sizes, mode=mode, fill_value=fill_value,
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
        return out if self.shape == self.slice_shape else lax_reshape(out, self.shape)

    def scatter(self, fn, x, updates, **kwargs):
        dn = ScatterDimensionNumbers(update_window_dims=self.offset_dims, inserted_window_dims=self.collapsed,
                                         scatter_dims_to_operand_dims=self.index_map)
        return fn(x, self.indices(), updates, dn, **kwargs)


def _normalize(v, n: int, wrap_negative: bool):
    """An int / integer-array index with negative values wrapped once (JAX's normalize_indices). Concrete values
    stay numpy, clamped into [-1, n] so that they fit int32 and stay out of bounds when they were. A lazy value
    (pending, or watched by autojit's recording) takes the traced path: reading it would cut or guard."""
    if not isinstance(v, Tracer) and not is_deferred(v):
        k = np.asarray(v).astype(np.int64)
        if wrap_negative:
            k = np.where(k < 0, k + n, k)
        return np.clip(k, -1, n) if k.ndim else int(np.clip(k, -1, n))
    dt, shape = aval(v).dtype, aval(v).shape
    if dt.kind == "i" and dt.itemsize < 4:
        v, dt = lax_convert_element_type(v, np.int32), np.dtype(np.int32)
    if wrap_negative and dt.kind == "i":
        v = lax_select(lax_lt(v, lax_full(shape, 0, dt)), lax_add(v, lax_full(shape, n, dt)), v)
    if dt.itemsize >= 4 and dt != np.int32:     # u32, 64-bit: clamp into [-1, n] first, so int32 cannot wrap them
        v = lax_clamp(lax_full(shape, -1 if dt.kind == "i" else 0, dt), v, lax_full(shape, n, dt))
    return v if dt == np.int32 else lax_convert_element_type(v, np.int32)


# -- x.at[idx] ------------------------------------------------------------------------------------------

_MODES = {None: None, "promise_in_bounds": None, "clip": "clip", "fill": "fill", "drop": "fill", "fill_or_drop": "fill"}


def _canonical_mode(mode) -> str | None:
    key = getattr(mode, "value", mode)
    key = key.lower() if isinstance(key, str) else key
    if key not in _MODES:
        raise XlapyError(f"at[...]: unknown mode {mode!r}; expected one of 'promise_in_bounds', 'clip', 'drop', "
                         f"'fill' (at {user_frame()})")
    return _MODES[key]


class IndexUpdateHelper:
    """`x.at[idx]` -> an IndexUpdateRef with set/add/subtract/multiply/divide/power/min/max/get."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> "IndexUpdateRef":
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """Functional updates of the positions `x[idx]` reads (JAX's `_IndexUpdateRef`). Repeated indices
    accumulate for add/multiply/min/max; for set one of them wins. Out-of-bounds updates are dropped unless
    mode='clip'; `get` clamps unless mode='fill'."""
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def __repr__(self) -> str:
        return f"IndexUpdateRef({self.array!r}, {self.index!r})"

    def _plan(self, x, wrap_negative: bool):
        a = aval(x)
        index = self.index
        if a.ndim == 0:           # index a rank-1 view: every scalar index form is None / Ellipsis / ()
            x = lax_reshape(x, (1,))
            idx = [0] + _expand(index, ())
            return x, IndexPlan(aval(x), idx, wrap_negative)
        return x, IndexPlan(a, _expand(index, a.shape), wrap_negative)

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None, fill_value=None,
            wrap_negative_indices: bool = True):
        """`x[idx]`; out-of-bounds indices clamp (mode None / 'clip') or read `fill_value` (mode 'fill')."""
        m = _canonical_mode(mode) or "clip"
        x, plan = self._plan(self.array, wrap_negative_indices)
        return plan.gather(x, mode=m, fill_value=fill_value, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices)

    def _scatter(self, fn, values, indices_are_sorted: bool, unique_indices: bool, mode, wrap_negative: bool):
        x0 = self.array
        a = aval(x0)
        m = _canonical_mode(mode)
        values = np.asarray(values) if isinstance(values, (list, tuple)) else values
        # JAX: promote (x, values), scatter in that type, convert back to x's type (and weak type)
        target = dtypes.promote(dtypes.type_of(x0), dtypes.type_of(values))
        x = x0 if target.dtype == a.dtype else lax_convert_element_type(x0, target.dtype)
        if dtypes.type_of(values).dtype != target.dtype:
            values = convert(values, target.dtype)
        x, plan = self._plan(x, wrap_negative)
        if plan.empty:
            return x0
        va = aval(values)
        try:
            if va.ndim > len(plan.shape) or np.broadcast_shapes(va.shape, plan.shape) != plan.shape:
                raise ValueError
        except ValueError:
            raise XlapyError(f"at[...]: values of shape {va.shape} cannot be broadcast to the indexed shape "
                             f"{plan.shape} (at {user_frame()})") from None
        if hasattr(values, "aval"):
            values = lax_broadcast_in_dim(values, plan.shape, tuple(range(len(plan.shape) - va.ndim, len(plan.shape))))
            if plan.shape != plan.slice_shape:
                values = lax_reshape(values, plan.slice_shape)
        else:
            values = np.broadcast_to(np.asarray(values, target.dtype), plan.shape).reshape(plan.slice_shape)
        out = plan.scatter(fn, x, values, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                           mode=m)
        if a.ndim == 0:
            out = lax_reshape(out, ())
        if aval(out).dtype != a.dtype or aval(out).weak_type != a.weak_type:
            out = lax_convert_element_type(out, a.dtype, weak_type=a.weak_type)
        return out

    def set(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
            wrap_negative_indices: bool = True):
        """`x[idx] = values`, functionally."""
        return self._scatter(lax_scatter, values, indices_are_sorted, unique_indices, mode, wrap_negative_indices)

    def add(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
            wrap_negative_indices: bool = True):
        """`x[idx] += values`; repeated indices accumulate."""
        return self._scatter(lax_scatter_add, values, indices_are_sorted, unique_indices, mode, wrap_negative_indices)

    def subtract(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
                 wrap_negative_indices: bool = True):
        """`x[idx] -= values`; repeated indices accumulate."""
        return self._scatter(lax_scatter_add, operators.negative(_as_operand(values)), indices_are_sorted,
                             unique_indices, mode, wrap_negative_indices)

    def multiply(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
                 wrap_negative_indices: bool = True):
        """`x[idx] *= values`; repeated indices accumulate."""
        return self._scatter(lax_scatter_mul, values, indices_are_sorted, unique_indices, mode, wrap_negative_indices)

    mul = multiply

    def divide(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
               wrap_negative_indices: bool = True):
        """`x[idx] /= values` (as JAX: x divided by ones scattered-multiplied by values)."""
        ones = lax_full(aval(self.array).shape, 1, aval(self.array).dtype)
        scale = IndexUpdateRef(ones, self.index).multiply(values, indices_are_sorted=indices_are_sorted,
                                                          unique_indices=unique_indices, mode=mode,
                                                          wrap_negative_indices=wrap_negative_indices)
        return operators.true_divide(self.array, scale)

    def power(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
              wrap_negative_indices: bool = True):
        """`x[idx] **= values` (as JAX: x to the power of ones scattered-multiplied by values)."""
        ones = lax_full(aval(self.array).shape, 1, aval(self.array).dtype)
        expo = IndexUpdateRef(ones, self.index).multiply(values, indices_are_sorted=indices_are_sorted,
                                                         unique_indices=unique_indices, mode=mode,
                                                         wrap_negative_indices=wrap_negative_indices)
        return operators.power(self.array, expo)

    def min(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
            wrap_negative_indices: bool = True):
        """`x[idx] = minimum(x[idx], values)`; repeated indices accumulate."""
        return self._scatter(lax_scatter_min, values, indices_are_sorted, unique_indices, mode, wrap_negative_indices)

    def max(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode=None,
            wrap_negative_indices: bool = True):
        """`x[idx] = maximum(x[idx], values)`; repeated indices accumulate."""
        return self._scatter(lax_scatter_max, values, indices_are_sorted, unique_indices, mode, wrap_negative_indices)


def _as_operand(values):
    if isinstance(values, (list, tuple)):
        return np.asarray(values)
    if dtypes.is_python_scalar(values) or hasattr(values, "aval"):
        return values
    return np.asarray(values)
