"""Data-movement algebra: reshape, broadcast, transpose, slice, pad, concatenate, reverse, copy, dynamic-slice."""
from __future__ import annotations

import numpy as np

from ...hlo.attrs import SliceRange
from ..build import make
from ..pattern import Any, Op
from ..rewrite import RuleSet, rule
from .util import A


@rule(Op({"reshape", "broadcast", "transpose", "copy", "bitcast"}, A))
def same_shape_noop(inst, a):
    # reshape(A) => A, broadcast(A) => A, transpose(A) => A, copy(A) => A ... when the result is A's shape
    if a.shape.dims != inst.shape.dims or not a.shape.compatible(inst.shape):   # dims first: the cheap refusal
        return None
    if inst.opcode == "transpose" and tuple(inst.attrs["dimensions"]) != tuple(range(a.shape.rank)):
        return None
    if inst.opcode == "broadcast" and tuple(inst.attrs.get("dimensions", ())) != tuple(range(a.shape.rank)):
        return None
    layouts = (inst.shape.layout, a.shape.layout)
    if inst.opcode in ("copy", "bitcast") and layouts[0] != layouts[1] and None not in layouts:
        return None   # a layout-changing copy is real work
    return a


@rule(Op("reshape", Op("reshape", A)))
def reshape_reshape(inst, a):
    # reshape(reshape(A)) => reshape(A)
    return make("reshape", [a], shape=inst.shape.without_layout())


@rule(Op("broadcast", Op("broadcast", A, name="inner")))
def broadcast_broadcast(inst, a, inner):
    # broadcast(broadcast(A, d1), d2) => broadcast(A, d2[d1])
    outer_dims = inst.attrs.get("dimensions", ())
    dims = tuple(outer_dims[d] for d in inner.attrs.get("dimensions", ()))
    return make("broadcast", [a], {"dimensions": dims}, shape=inst.shape.without_layout())


@rule(Op("transpose", Op("transpose", A, name="inner")))
def transpose_transpose(inst, a, inner):
    # transpose(transpose(A, p1), p2) => transpose(A, p1[p2])
    p1, p2 = inner.attrs["dimensions"], inst.attrs["dimensions"]
    perm = tuple(p1[i] for i in p2)
    if perm == tuple(range(len(perm))):
        return a
    return make("transpose", [a], {"dimensions": perm}, shape=inst.shape.without_layout())


@rule(Op({"reshape", "transpose"}, Op("broadcast", Any("s", pred=lambda s: s.shape.rank == 0))))
def reshape_of_scalar_broadcast(inst, s):
    # reshape(broadcast(S)) => broadcast(S);  transpose(broadcast(S)) => broadcast(S)   (S a scalar)
    return make("broadcast", [s], {"dimensions": ()}, shape=inst.shape.without_layout())


@rule(Op("slice", A))
def slice_full(inst, a):
    # slice(A) covering all of A => A
    ranges = inst.attrs["slice"]
    full = all(r.start == 0 and r.limit == d and r.stride == 1 for r, d in zip(ranges, a.shape.dims))
    return a if full else None


@rule(Op("slice", Op("slice", A, name="inner")))
def slice_slice(inst, a, inner):
    # slice(slice(A)) => slice(A) with composed bounds (unit strides)
    outer_ranges, inner_ranges = inst.attrs["slice"], inner.attrs["slice"]
    if any(r.stride != 1 for r in (*outer_ranges, *inner_ranges)):
        return None
    ranges = tuple(SliceRange(i.start + o.start, i.start + o.limit, 1) for o, i in zip(outer_ranges, inner_ranges))
    return make("slice", [a], {"slice": ranges}, shape=inst.shape.without_layout())


@rule(Op("slice", Op("concatenate", name="cat")))
def slice_of_concat(inst, cat):
    # slice(concatenate(A, B, ...)) => A when the slice is exactly one operand
    dim = cat.attrs["dimensions"][0]
    ranges = inst.attrs["slice"]
    if any(r.stride != 1 for r in ranges):
        return None
    offset = 0
    for op in cat.operands:
        size = op.shape.dims[dim]
        if all((r.start, r.limit) == ((offset, offset + size) if d == dim else (0, op.shape.dims[d]))
               for d, r in enumerate(ranges)):
            return op
        offset += size
    return None


@rule(Op("pad", A, Any()))
def pad_zero(inst, a):
    # pad(A, v) with no padding => A
    return a if all(p.low == 0 and p.high == 0 and p.interior == 0 for p in inst.attrs["padding"]) else None


@rule(Op("concatenate", A))
def concat_single(inst, a):
    # concatenate(A) => A
    return a


@rule(Op("concatenate"))
def concat_drop_empty(inst):
    # concatenate(A, <empty>, B) => concatenate(A, B)
    keep = [o for o in inst.operands if o.shape.numel > 0]
    if len(keep) == len(inst.operands) or not keep:
        return None
    if len(keep) == 1:
        return keep[0]
    return make("concatenate", keep, dict(inst.attrs), shape=inst.shape.without_layout())


@rule(Op("reverse", A))
def reverse_trivial(inst, a):
    # reverse(A) over only size-1 dimensions (or none) => A
    return a if all(a.shape.dims[d] == 1 for d in inst.attrs.get("dimensions", ())) else None


@rule(Op("reverse", Op("reverse", A, name="inner")))
def reverse_reverse(inst, a, inner):
    # reverse(reverse(A, d), d) => A
    return a if sorted(inst.attrs["dimensions"]) == sorted(inner.attrs["dimensions"]) else None


@rule(Op("dynamic-slice"))
def dynamic_slice_constant_starts(inst):
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


@rule(Op("dynamic-update-slice"))
def dus_full(inst):
    # dynamic-update-slice(A, U, ...) => U when U covers all of A
    update = inst.operands[1]
    return update if update.shape.compatible(inst.shape) else None


RULES = RuleSet([
    same_shape_noop, reshape_reshape, broadcast_broadcast, transpose_transpose, reshape_of_scalar_broadcast,
    slice_full, slice_slice, slice_of_concat, pad_zero, concat_single, concat_drop_empty, reverse_trivial,
    reverse_reverse, dynamic_slice_constant_starts, dus_full,
])
