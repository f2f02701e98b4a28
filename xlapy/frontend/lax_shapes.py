"""lax's shape and data-movement ops: broadcasting, reshape, transpose, slicing (static and dynamic),
concatenate, pad, rev, and the arrays made from a shape (iota, full).

These ops move elements without computing on them (index operands and fill values aside, which are converted to
the dtype they need). Shapes are explicit: broadcast_in_dim says where each operand dimension lands, reshape takes
the whole new shape, and dynamic slices take one scalar start index per dimension.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..hlo.attrs import PadDim, SliceRange
from . import dtypes
from .array import with_weak_type
from .lax_operands import canonical_axis, coerce_same_dtype, convert, hlo_shape, lax_error
from .tracer import aval, bind, concrete_value


def broadcast_in_dim(operand, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """operand dimension i becomes output dimension broadcast_dimensions[i] (size equal, or 1 to expand)."""
    a = aval(operand)
    shape, bdims = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
    if len(bdims) != a.ndim or any(not 0 <= d < len(shape) for d in bdims) or list(bdims) != sorted(set(bdims)):
        raise lax_error("broadcast_in_dim", f"broadcast_dimensions {bdims} do not map {a} into shape {shape}")
    for i, d in enumerate(bdims):
        if a.shape[i] not in (1, shape[d]):
            raise lax_error("broadcast_in_dim", f"operand {a} dimension {i} (size {a.shape[i]}) cannot broadcast "
                                                f"to size {shape[d]} of {shape}")
    if a.shape == shape and bdims == tuple(range(len(shape))):
        return operand
    keep = [i for i in range(a.ndim) if a.shape[i] == shape[bdims[i]]]
    if len(keep) != a.ndim:     # HLO broadcast cannot expand size-1 dims: reshape them away first
        operand = reshape(operand, tuple(a.shape[i] for i in keep))
        bdims = tuple(bdims[i] for i in keep)
    return bind("broadcast", [operand], {"dimensions": bdims}, shape=hlo_shape(a.dtype, shape),
                name="broadcast_in_dim", weak_type=a.weak_type)


def broadcast(operand, sizes: Sequence[int]):
    """Prepend dimensions `sizes`."""
    a = aval(operand)
    sizes = tuple(sizes)
    return broadcast_in_dim(operand, sizes + a.shape, tuple(range(len(sizes), len(sizes) + a.ndim)))


def reshape(operand, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None):
    a = aval(operand)
    new_sizes = tuple(int(d) for d in new_sizes)
    if -1 in new_sizes:
        known = int(np.prod([d for d in new_sizes if d != -1]))
        new_sizes = tuple(a.size // known if d == -1 and known else d for d in new_sizes)
    if math.prod(new_sizes) != a.size:
        raise lax_error("reshape", f"cannot reshape {a} ({a.size} elements) to {new_sizes}")
    if dimensions is not None and tuple(dimensions) != tuple(range(a.ndim)):
        operand = transpose(operand, dimensions)
    elif new_sizes == a.shape:
        return operand
    return bind("reshape", [operand], shape=hlo_shape(a.dtype, new_sizes), name="reshape",
                weak_type=a.weak_type)


def transpose(operand, permutation: Sequence[int]):
    a = aval(operand)
    perm = tuple(int(p) for p in permutation)
    if sorted(perm) != list(range(a.ndim)):
        raise lax_error("transpose", f"permutation {perm} is not a permutation of the dimensions of {a}")
    if perm == tuple(range(a.ndim)):
        return operand
    return bind("transpose", [operand], {"dimensions": perm}, name="transpose", weak_type=a.weak_type)


def squeeze(array, dimensions: Sequence[int]):
    a = aval(array)
    dims = {canonical_axis(d, a.ndim, "squeeze") for d in dimensions}
    for d in dims:
        if a.shape[d] != 1:
            raise lax_error("squeeze", f"dimension {d} of {a} has size {a.shape[d]}, not 1")
    return reshape(array, tuple(s for i, s in enumerate(a.shape) if i not in dims))


def expand_dims(array, dimensions: Sequence[int]):
    a = aval(array)
    out_ndim = a.ndim + len(dimensions)
    dims = sorted(canonical_axis(d, out_ndim, "expand_dims") for d in dimensions)
    shape = list(a.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, shape)


def slice(operand, start_indices: Sequence[int], limit_indices: Sequence[int], strides: Sequence[int] | None = None):
    a = aval(operand)
    strides = tuple(strides) if strides is not None else (1,) * a.ndim
    if not len(start_indices) == len(limit_indices) == len(strides) == a.ndim:
        raise lax_error("slice", f"start {tuple(start_indices)}, limit {tuple(limit_indices)} and strides "
                                 f"{strides} must each have one entry per dimension of {a}")
    ranges = tuple(SliceRange(int(s), int(l), int(st)) for s, l, st in zip(start_indices, limit_indices, strides))
    return bind("slice", [operand], {"slice": ranges}, name="slice", weak_type=a.weak_type)


def _index_operands(name: str, indices: Sequence[Any], shape: Sequence[int]) -> list[Any]:
    """The start indices as s32 scalars, one per dimension (see _start_index)."""
    if len(indices) != len(shape):
        raise lax_error(name, f"needs {len(shape)} start indices, got {len(indices)}")
    return [_start_index(name, i, n) for i, n in zip(indices, shape)]


def _start_index(name: str, index: Any, dim: int) -> Any:
    """One start index as an s32 scalar, with JAX's meaning: a negative index counts from the end (index + dim),
    and converting to s32 never wraps (an unsigned or 64-bit index past the dimension is first clamped to it; the
    op then clamps the slice into bounds as XLA does). Static indices are folded."""
    ia = aval(index)
    if ia.shape != ():
        raise lax_error(name, f"start indices must be scalars, got {ia}")
    if ia.dtype.kind not in "iu":
        raise lax_error(name, f"start indices must be integers, got {ia.dtype}")
    if not hasattr(index, "aval"):                  # a Python or numpy integer
        k = int(index)
        k = k + dim if k < 0 else k
        return np.int32(min(max(k, 0), dim))
    dt = ia.dtype
    if dt.kind == "i":
        wide = dt if dt.itemsize >= 4 else dtypes.int32
        if dt != wide or ia.weak_type:
            index = convert(index, wide)
        negative = bind("compare", [index, np.zeros((), wide)], {"direction": "LT"}, name="lt")
        index = bind("select", [negative, bind("add", [index, np.array(dim, wide)], name="add"), index],
                     name="select_n")
        if wide.itemsize > 4:
            index = bind("clamp", [np.zeros((), wide), index, np.array(dim, wide)], name="clamp")
    elif dt.itemsize >= 4:
        index = bind("minimum", [index, np.array(dim, dt)], name="min")
    return index if aval(index).dtype == dtypes.int32 else convert(index, dtypes.int32)


def dynamic_slice(operand, start_indices: Sequence[Any], slice_sizes: Sequence[int]):
    """A slice at runtime start indices: a negative one counts from the end, as in JAX; then they are clamped so
    the slice stays in bounds."""
    a = aval(operand)
    starts = _index_operands("dynamic_slice", list(start_indices), a.shape)
    return bind("dynamic-slice", [operand] + starts, {"dynamic_slice_sizes": tuple(int(s) for s in slice_sizes)},
                name="dynamic_slice", weak_type=a.weak_type)


def dynamic_update_slice(operand, update, start_indices: Sequence[Any]):
    a = aval(operand)
    starts = _index_operands("dynamic_update_slice", list(start_indices), a.shape)
    if aval(update).dtype != a.dtype:
        update = convert(update, a.dtype)
    return bind("dynamic-update-slice", [operand, update] + starts, name="dynamic_update_slice",
                weak_type=a.weak_type)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, "dynamic_index_in_dim")
    starts = [0] * a.ndim
    starts[axis] = index
    sizes = list(a.shape)
    sizes[axis] = 1
    out = dynamic_slice(operand, starts, sizes)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_index_in_dim(operand, update, index, axis: int = 0):
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, "dynamic_update_index_in_dim")
    if aval(update).ndim == a.ndim - 1:
        update = expand_dims(update, (axis,))
    starts = [0] * a.ndim
    starts[axis] = index
    return dynamic_update_slice(operand, update, starts)


def concatenate(operands: Sequence[Any], dimension: int):
    operands = list(operands)
    if not operands:
        raise lax_error("concatenate", "needs at least one operand")
    operands, weak = coerce_same_dtype("concatenate", operands)
    return bind("concatenate", operands, {"dimensions": (int(dimension),)}, name="concatenate", weak_type=weak)


def pad(operand, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    """Pad with (low, high, interior) per dimension; negative low/high crop."""
    a = aval(operand)
    if aval(padding_value).dtype != a.dtype:
        padding_value = convert(padding_value, a.dtype)
    cfg = tuple(PadDim(int(lo), int(hi), int(interior)) for lo, hi, interior in padding_config)
    return bind("pad", [operand, padding_value], {"padding": cfg}, name="pad", weak_type=a.weak_type)


def rev(operand, dimensions: Sequence[int]):
    return bind("reverse", [operand], {"dimensions": tuple(int(d) for d in dimensions)}, name="rev",
                weak_type=aval(operand).weak_type)


def iota(dtype, size: int):
    dtype = dtypes.canonicalize(dtype)
    return bind("iota", [], {"iota_dimension": 0}, shape=hlo_shape(dtype, (int(size),)), name="iota")


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    dtype = dtypes.canonicalize(dtype)
    shape = tuple(int(s) for s in shape)
    return broadcast_in_dim(iota(dtype, shape[dimension]), shape, (dimension,))


def full(shape: Sequence[int], fill_value, dtype=None):
    dtype = dtypes.canonicalize(dtype) if dtype is not None else aval(fill_value).dtype
    weak = dtype is None and aval(fill_value).weak_type
    value = convert(fill_value, dtype) if aval(fill_value).dtype != dtype else fill_value
    if not hasattr(value, "aval"):
        value = np.asarray(concrete_value(value), dtype=dtype)
    out = broadcast(value, tuple(shape)) if tuple(shape) else value
    return out if not weak else with_weak_type(out, True)


def full_like(x, fill_value, dtype=None, shape=None):
    a = aval(x)
    return full(a.shape if shape is None else shape, fill_value, dtype or a.dtype)


def zeros_like_array(x):
    return full_like(x, 0)
