"""Batching rules of the collectives the front end emits (frontend/parallel/collectives.py): a collective over
the vmap axis becomes a computation over the batch dimension, which is how vmap(axis_name=...) runs them and how
pmap / shard_map run inside another trace (emulated by vmap). Every such collective is tagged with the names of
its axes (`frontend_attributes={xlapy_axes="i"}`); the driver hands a collective tagged with the vmap axis to
these rules even when its operand is not batched (psum of an unbatched x is size * x).

    all-reduce          over the batch axis: reduce dimension 0 with the same reducer; unbatched result; the
                        other axes it names, if any, stay an all-reduce of that result
    all-gather          batch axis moved to the gathered dimension and merged into it; unbatched result
    reduce-scatter      sum over the batch, then block i of the scattered dimension is example i
    collective-permute  example dst takes the slice of example src (zeros where no pair sends)
    all-to-all          (example, block) swapped: a transpose of the first two dimensions
    partition-id        the example's index: iota

A collective over another (device) axis with a batched operand stays that collective, on the batched value.
"""
from __future__ import annotations

import numpy as np

from ...hlo import Instruction, Shape
from ..parallel.axis_env import retag, tagged_axes
from .common import Batcher, BatchingError, shift


def over_batch_axis(b: Batcher, inst: Instruction) -> bool:
    """Whether `inst` is a collective over b's vmap axis (the driver then calls its rule even if unbatched)."""
    return b.axis_name is not None and str(b.axis_name) in tagged_axes(inst)


def _untagged(b: Batcher, inst: Instruction) -> None:
    """A collective that names no axes (not the front end's): nothing says whether it reduces across the batch."""
    if not tagged_axes(inst):
        raise BatchingError(f"collectives over a vmap axis (axis_name={b.axis_name!r}) are not supported yet: "
                            f"'{inst.opcode}' (instruction {inst.name}) names no axis (the front end's psum, "
                            f"all_gather, ... do)")


def _others(b: Batcher, inst: Instruction) -> tuple[str, ...]:
    return tuple(n for n in tagged_axes(inst) if n != str(b.axis_name))


def _only_mine(b: Batcher, inst: Instruction, what: str) -> None:
    if _others(b, inst):
        raise BatchingError(f"{what} over the vmap axis {b.axis_name!r} together with the axes {_others(b, inst)} "
                            f"({inst.name}) is not supported: name one axis")


def _identity(kind: str, et: str, dtype) -> object:
    if kind == "add" or kind == "or":
        return 0
    if dtype.kind == "f":
        return -np.inf if kind == "maximum" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:
        return kind == "minimum"
    return info.min if kind == "maximum" else info.max


def _all_reduce(b: Batcher, inst, ops, dims):
    _untagged(b, inst)
    x, d = ops[0], dims[0]
    if not over_batch_axis(b, inst):
        return b.emit("all-reduce", [x], inst.attrs, shape=x.shape), d
    comp = inst.attrs["to_apply"]
    kind = comp.root.opcode
    et = inst.shape.element_type
    init = b.scalar(_identity(kind, et, inst.shape.dtype), et)
    y = b.emit("reduce", [b.front(x, d), init], {"dimensions": (0,), "to_apply": comp}, shape=inst.shape)
    others = _others(b, inst)
    if others:
        y = b.emit("all-reduce", [y], retag(inst.attrs, others), shape=inst.shape)
    return y, None


def _all_gather(b: Batcher, inst, ops, dims):
    _untagged(b, inst)
    x, d = ops[0], dims[0]
    a = inst.attrs["dimensions"][0]
    if not over_batch_axis(b, inst):
        x = b.front(x, d)
        shape = Shape.array(inst.shape.element_type, (b.size,) + tuple(inst.shape.dims))
        return b.emit("all-gather", [x], dict(inst.attrs, dimensions=(a + 1,)), shape=shape), 0
    _only_mine(b, inst, "all_gather")
    return b.reshape(b.at(x, d, a), inst.shape.dims), None


def _reduce_scatter(b: Batcher, inst, ops, dims):
    _untagged(b, inst)
    x, d = ops[0], dims[0]
    s = inst.attrs["dimensions"][0]
    if not over_batch_axis(b, inst):
        x = b.front(x, d)
        shape = Shape.array(inst.shape.element_type, (b.size,) + tuple(inst.shape.dims))
        return b.emit("reduce-scatter", [x], dict(inst.attrs, dimensions=(s + 1,)), shape=shape), 0
    _only_mine(b, inst, "psum_scatter")
    comp = inst.attrs["to_apply"]
    et = inst.shape.element_type
    total = b.emit("reduce", [b.front(x, d), b.scalar(0, et)], {"dimensions": (0,), "to_apply": comp},
                   shape=inst.operands[0].shape)
    out = list(inst.shape.dims)
    out.insert(s, b.size)
    return b.reshape(total, out), s


def _collective_permute(b: Batcher, inst, ops, dims):
    _untagged(b, inst)
    x, d = ops[0], dims[0]
    if not over_batch_axis(b, inst):
        return b.emit("collective-permute", [x], inst.attrs, shape=x.shape), d
    _only_mine(b, inst, "ppermute")
    text = inst.attrs["frontend_attributes"]
    pairs = text.split('xlapy_perm="', 1)[1].split('"', 1)[0]
    source = {int(dst): int(src) for src, dst in (p.split(":") for p in pairs.split(";") if p)}
    x = b.front(x, d)
    one = (1,) + tuple(x.shape.dims[1:])
    parts = []
    for i in range(b.size):
        if i in source:
            s = source[i]
            parts.append(b.emit("slice", [x], {"slice": _slice_attr(x, s)},
                                shape=Shape.array(x.shape.element_type, one)))
        else:
            parts.append(b.zeros(Shape.array(x.shape.element_type, one)))
    if len(parts) == 1:
        return parts[0], 0
    return b.emit("concatenate", parts, {"dimensions": (0,)}, shape=x.shape), 0


def _slice_attr(x: Instruction, i: int):
    from ...hlo.attrs import SliceRange
    return (SliceRange(i, i + 1, 1),) + tuple(SliceRange(0, n, 1) for n in x.shape.dims[1:])


def _all_to_all(b: Batcher, inst, ops, dims):
    _untagged(b, inst)
    x, d = ops[0], dims[0]
    if not over_batch_axis(b, inst):
        x = b.at(x, d, 1)
        return b.emit("all-to-all", [x], inst.attrs, shape=x.shape), 1
    _only_mine(b, inst, "all_to_all")
    x = b.front(x, d)
    return b.transpose(x, [1, 0] + list(range(2, x.shape.rank))), 0


def _partition_id(b: Batcher, inst, ops, dims):
    return b.emit("iota", [], {"iota_dimension": 0}, shape=Shape.array("u32", (b.size,))), 0


RULES = {
    "all-reduce": _all_reduce, "all-gather": _all_gather, "reduce-scatter": _reduce_scatter,
    "collective-permute": _collective_permute, "all-to-all": _all_to_all, "partition-id": _partition_id,
}

__all__ = ["RULES", "over_batch_axis", "shift"]
