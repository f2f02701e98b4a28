"""Data-movement algebra: reshape, broadcast, transpose, slice, pad, concatenate, reverse, copy, dynamic-slice."""
from __future__ import annotations

import numpy as np

from ...hlo.attrs import SliceRange
from ..build import make
from ..pattern import Any, Op

A = Any("a")


def same_shape_noop(inst, c):
    # reshape(A) => A, broadcast(A) => A, transpose(A) => A, copy(A) => A ... when the result is A's shape
    a = c["a"]
    if not a.shape.compatible(inst.shape):
        return None
    if inst.opcode == "transpose" and tuple(inst.attrs["dimensions"]) != tuple(range(a.shape.rank)):
        return None
    if inst.opcode == "broadcast" and tuple(inst.attrs.get("dimensions", ())) != tuple(range(a.shape.rank)):
        return None
    if inst.opcode in ("copy", "bitcast") and inst.shape.layout != a.shape.layout and None not in (inst.shape.layout, a.shape.layout):
        return None   # a layout-changing copy is real work
    return a


def reshape_reshape(inst, c):
    # reshape(reshape(A)) => reshape(A)
    return make("reshape", [c["a"]], shape=inst.shape.without_layout())


def broadcast_broadcast(inst, c):
    # broadcast(broadcast(A, d1), d2) => broadcast(A, d2[d1])
    inner = c["inner"]
    outer_dims = inst.attrs.get("dimensions", ())
    dims = tuple(outer_dims[d] for d in inner.attrs.get("dimensions", ()))
    return make("broadcast", [c["a"]], {"dimensions": dims}, shape=inst.shape.without_layout())


def transpose_transpose(inst, c):
    # transpose(transpose(A, p1), p2) => transpose(A, p1[p2])
    p1, p2 = c["inner"].attrs["dimensions"], inst.attrs["dimensions"]
    perm = tuple(p1[i] for i in p2)
    if perm == tuple(range(len(perm))):
        return c["a"]
    return make("transpose", [c["a"]], {"dimensions": perm}, shape=inst.shape.without_layout())


def reshape_of_scalar_broadcast(inst, c):
    # reshape(broadcast(scalar)) => broadcast(scalar);  transpose(broadcast(scalar)) => broadcast(scalar)
    s = c["s"]
    if s.shape.rank != 0:
        return None
    return make("broadcast", [s], {"dimensions": ()}, shape=inst.shape.without_layout())


def slice_full(inst, c):
    # slice(A) covering all of A => A
    a = c["a"]
    ranges = inst.attrs["slice"]
    full = all(r.start == 0 and r.limit == d and r.stride == 1 for r, d in zip(ranges, a.shape.dims))
    return a if full else None


def slice_slice(inst, c):
    # slice(slice(A)) => slice(A) with composed bounds (unit strides)
    outer, inner = inst.attrs["slice"], c["inner"].attrs["slice"]
    if any(r.stride != 1 for r in (*outer, *inner)):
        return None
    ranges = tuple(SliceRange(i.start + o.start, i.start + o.limit, 1) for o, i in zip(outer, inner))
    return make("slice", [c["a"]], {"slice": ranges}, shape=inst.shape.without_layout())


def slice_of_concat(inst, c):
    # slice(concatenate(A, B, ...)) => A when the slice is exactly one operand
    concat = c["cat"]
    dim = concat.attrs["dimensions"][0]
    ranges = inst.attrs["slice"]
    if any(r.stride != 1 for r in ranges):
        return None
    offset = 0
    for op in concat.operands:
        size = op.shape.dims[dim]
        if all((r.start, r.limit) == ((offset, offset + size) if d == dim else (0, op.shape.dims[d]))
               for d, r in enumerate(ranges)):
            return op
        offset += size
    return None


def pad_zero(inst, c):
    # pad(A, v) with no padding => A
    return c["a"] if all(p.low == 0 and p.high == 0 and p.interior == 0 for p in inst.attrs["padding"]) else None


def concat_single(inst, c):
    # concatenate(A) => A
    return inst.operands[0] if len(inst.operands) == 1 else None


def concat_drop_empty(inst, c):
    # concatenate(A, <empty>, B) => concatenate(A, B)
    keep = [o for o in inst.operands if o.shape.numel > 0]
    if len(keep) == len(inst.operands) or not keep:
        return None
    if len(keep) == 1:
        return keep[0]
    return make("concatenate", keep, dict(inst.attrs), shape=inst.shape.without_layout())


def reverse_trivial(inst, c):
    # reverse(A) over only size-1 dimensions (or none) => A
    a = c["a"]
    return a if all(a.shape.dims[d] == 1 for d in inst.attrs.get("dimensions", ())) else None


def reverse_reverse(inst, c):
    # reverse(reverse(A, d), d) => A
    return c["a"] if sorted(inst.attrs["dimensions"]) == sorted(c["inner"].attrs["dimensions"]) else None


def dynamic_slice_constant_starts(inst, c):
    # dynamic-slice(A, c0, c1, ...) => slice(A) when every start is a constant (clamped as at run time)
    a = inst.operands[0]
    starts = inst.operands[1:]
    if not starts or any(s.opcode != "constant" or s.shape.rank != 0 for s in starts):
        return None
    sizes = inst.attrs["dynamic_slice_sizes"]
    ranges = []
    for d, (s, size) in enumerate(zip(starts, sizes)):
        start = int(np.clip(int(s.literal), 0, a.shape.dims[d] - size))
        ranges.append(SliceRange(start, start + size, 1))
    return make("slice", [a], {"slice": tuple(ranges)}, shape=inst.shape.without_layout())


def dus_full(inst, c):
    # dynamic-update-slice(A, U, ...) => U when U covers all of A
    update = inst.operands[1]
    return update if update.shape.compatible(inst.shape) else None


RULES = [
    (Op({"reshape", "broadcast", "transpose", "copy", "bitcast"}, A), same_shape_noop),
    (Op("reshape", Op("reshape", A)), reshape_reshape),
    (Op("broadcast", Op("broadcast", A, name="inner")), broadcast_broadcast),
    (Op("transpose", Op("transpose", A, name="inner")), transpose_transpose),
    (Op({"reshape", "transpose"}, Op("broadcast", Any("s"))), reshape_of_scalar_broadcast),
    (Op("slice", A), slice_full),
    (Op("slice", Op("slice", A, name="inner")), slice_slice),
    (Op("slice", Op("concatenate", name="cat")), slice_of_concat),
    (Op("pad", A, Any()), pad_zero),
    (Op("concatenate"), concat_single),
    (Op("concatenate"), concat_drop_empty),
    (Op("reverse", A), reverse_trivial),
    (Op("reverse", Op("reverse", A, name="inner")), reverse_reverse),
    (Op("dynamic-slice"), dynamic_slice_constant_starts),
    (Op("dynamic-update-slice"), dus_full),
]
