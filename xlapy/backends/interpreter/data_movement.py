"""Ops that move data without computing on it: constants, iota, shape changes, slicing, padding, tuples.

Values are logical (row-major) numpy arrays; only `bitcast` looks at layouts, because it reinterprets the
physical buffer. Dynamic start indices are clamped so the slice stays in bounds (XLA's semantics).
"""
from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ...hlo import ELIDED, elided_constant_error
from .convert import convert_array


def _copy_value(v):
    return tuple(_copy_value(x) for x in v) if isinstance(v, tuple) else (v.copy() if isinstance(v, np.ndarray) else v)


def _constant(inst, args, ev):
    lit = inst.literal
    if lit is ELIDED:
        raise elided_constant_error(inst)
    if lit is None:
        raise ExecutionError(f"constant {inst.name} has no literal")
    if isinstance(lit, tuple):
        return lit
    return np.asarray(lit, dtype=inst.shape.dtype).reshape(inst.shape.dims)


def _iota(inst, args, ev):
    dims = inst.shape.dims
    d = int(inst.attrs["iota_dimension"])
    ramp = np.arange(dims[d], dtype=np.int64).reshape([dims[d] if i == d else 1 for i in range(len(dims))])
    return convert_array(np.broadcast_to(ramp, dims), inst.shape.dtype)


def _broadcast(inst, args, ev):
    x = np.asarray(args[0])
    out_dims = inst.shape.dims
    dims = tuple(inst.attrs.get("dimensions", ()))
    if len(dims) != x.ndim:
        raise ExecutionError(f"broadcast {inst.name}: dimensions={list(dims)} do not match operand rank {x.ndim}")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = x.transpose(order)
    shape = [1] * len(out_dims)
    for i in order:
        shape[dims[i]] = args[0].shape[i]
    return np.broadcast_to(x.reshape(shape), out_dims).copy()


def _reshape(inst, args, ev):
    return np.asarray(args[0]).reshape(inst.shape.dims)


def _physical(shape, x: np.ndarray) -> np.ndarray:
    """The elements of x in memory order of shape's layout."""
    if shape.layout is None or x.ndim == 0:
        return np.ascontiguousarray(x).reshape(-1)
    major_to_minor = list(reversed(shape.layout.minor_to_major))
    return np.ascontiguousarray(x.transpose(major_to_minor)).reshape(-1)


def _from_physical(shape, flat: np.ndarray) -> np.ndarray:
    if shape.layout is None or not shape.dims:
        return flat.reshape(shape.dims)
    major_to_minor = list(reversed(shape.layout.minor_to_major))
    arr = flat.reshape([shape.dims[d] for d in major_to_minor])
    return arr.transpose(np.argsort(major_to_minor))


def _bitcast(inst, args, ev):
    x = np.asarray(args[0])
    flat = _physical(inst.operands[0].shape, x)
    if flat.dtype != inst.shape.dtype:
        flat = flat.view(inst.shape.dtype)
    if flat.size != inst.shape.numel:
        raise ExecutionError(f"bitcast {inst.name}: {inst.operands[0].shape} -> {inst.shape} changes the size")
    return np.array(_from_physical(inst.shape, flat), order="C")


def _transpose(inst, args, ev):
    return np.array(np.transpose(args[0], inst.attrs["dimensions"]), order="C")


def _slice(inst, args, ev):
    ranges = inst.attrs["slice"]
    return args[0][tuple(slice(r.start, r.limit, r.stride) for r in ranges)].copy()


def _start_indices(index_args) -> list[int]:
    """Scalar start operands (or the legacy single rank-1 start vector) as Python ints."""
    if len(index_args) == 1 and np.ndim(index_args[0]) == 1:
        return [int(v) for v in index_args[0]]
    return [int(np.asarray(v).reshape(-1)[0]) for v in index_args]


def _clamped_starts(inst, operand_dims, sizes, index_args) -> list[int]:
    starts = _start_indices(index_args)
    if len(starts) != len(operand_dims):
        raise ExecutionError(f"{inst.opcode} {inst.name}: {len(starts)} start indices for rank {len(operand_dims)}")
    return [min(max(0, s), d - n) for s, d, n in zip(starts, operand_dims, sizes)]


def _dynamic_slice(inst, args, ev):
    x = args[0]
    sizes = tuple(inst.attrs.get("dynamic_slice_sizes", inst.shape.dims))
    starts = _clamped_starts(inst, x.shape, sizes, args[1:])
    return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes))].copy()


def _dynamic_update_slice(inst, args, ev):
    x, update = args[0], args[1]
    starts = _clamped_starts(inst, x.shape, update.shape, args[2:])
    out = x.copy()
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


def _concatenate(inst, args, ev):
    return np.concatenate(args, axis=int(inst.attrs["dimensions"][0]))


def _pad(inst, args, ev):
    x, value = args
    pads = inst.attrs["padding"]
    if len(pads) != x.ndim:
        raise ExecutionError(f"pad {inst.name}: padding has {len(pads)} dimensions, operand rank {x.ndim}")
    # Grow by the interior and the positive edges, place x, then crop the negative edges.
    grown, place, crop = [], [], []
    for n, p in zip(x.shape, pads):
        inner = n + max(n - 1, 0) * p.interior
        lo, hi = max(p.low, 0), max(p.high, 0)
        grown.append(lo + inner + hi)
        place.append(slice(lo, lo + inner, p.interior + 1))
        crop.append(slice(-min(p.low, 0), lo + inner + hi + min(p.high, 0)))
    out = np.full(grown, value, dtype=x.dtype)
    out[tuple(place)] = x
    return np.array(out[tuple(crop)], order="C")


def _reverse(inst, args, ev):
    return np.array(np.flip(args[0], axis=tuple(inst.attrs["dimensions"])), order="C")


HANDLERS = {
    "constant": _constant,
    "iota": _iota,
    "broadcast": _broadcast,
    "reshape": _reshape,
    "bitcast": _bitcast,
    "transpose": _transpose,
    "slice": _slice,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "concatenate": _concatenate,
    "pad": _pad,
    "reverse": _reverse,
    "copy": lambda inst, args, ev: _copy_value(args[0]),
    "tuple": lambda inst, args, ev: tuple(args),
    "get-tuple-element": lambda inst, args, ev: args[0][int(inst.attrs["index"])],
}
