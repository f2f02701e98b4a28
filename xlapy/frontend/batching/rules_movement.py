"""Batching rules of the data-movement ops: the batch axis goes to dimension 0 and every dimension attribute
shifts by one (broadcast, reshape, transpose, slice, concatenate, pad, reverse, ...).

Indexing with batched indices becomes the batched form of gather/scatter (HLO's operand/indices batching
dims): dynamic-slice with a batched start index is a gather, dynamic-update-slice a scatter (indices clamped
first, as dynamic-update-slice clamps them). gather and scatter themselves batch the same way: a batched
operand alone is an extra offset (window) dimension, batched indices alone an extra index batch dimension,
both a pair of batching dims.
"""
from __future__ import annotations

from ...hlo import Shape
from ...hlo.attrs import PadDim, SliceRange
from ...passes.build import new_computation
from .common import Batcher, batched_dims, shift


def _out(inst, size: int, d: int = 0) -> Shape:
    return Shape.array(inst.shape.element_type, batched_dims(inst.shape.dims, d, size))


def _broadcast(b: Batcher, inst, ops, dims):
    x = b.front(ops[0], dims[0])
    attrs = dict(inst.attrs, dimensions=(0,) + shift(inst.attrs.get("dimensions", ())))
    return b.emit("broadcast", [x], attrs, shape=_out(inst, b.size)), 0


def _reshape(b: Batcher, inst, ops, dims):
    x = b.front(ops[0], dims[0])
    return b.emit("reshape", [x], shape=_out(inst, b.size)), 0


def _transpose(b: Batcher, inst, ops, dims):
    x = b.front(ops[0], dims[0])
    perm = (0,) + shift(inst.attrs["dimensions"])
    return b.emit("transpose", [x], dict(inst.attrs, dimensions=perm)), 0


def _reverse(b: Batcher, inst, ops, dims):
    x = b.front(ops[0], dims[0])
    return b.emit("reverse", [x], dict(inst.attrs, dimensions=shift(inst.attrs.get("dimensions", ())))), 0


def _slice(b: Batcher, inst, ops, dims):
    x = b.front(ops[0], dims[0])
    ranges = (SliceRange(0, b.size, 1),) + tuple(inst.attrs["slice"])
    return b.emit("slice", [x], dict(inst.attrs, slice=ranges)), 0


def _concatenate(b: Batcher, inst, ops, dims):
    xs = [b.front(o, d) for o, d in zip(ops, dims)]
    return b.emit("concatenate", xs, dict(inst.attrs, dimensions=shift(inst.attrs["dimensions"]))), 0


def _pad(b: Batcher, inst, ops, dims):
    """A batched padding value: pad with zeros, then select the value where a padded mask says so."""
    x = b.front(ops[0], dims[0])
    config = (PadDim(0, 0, 0),) + tuple(inst.attrs["padding"])
    if dims[1] is None:
        return b.emit("pad", [x, ops[1]], dict(inst.attrs, padding=config)), 0
    et = x.shape.element_type
    padded = b.emit("pad", [x, b.scalar(0, et)], dict(inst.attrs, padding=config))
    inside = b.full(Shape.array("pred", x.shape.dims), False)
    mask = b.emit("pad", [inside, b.scalar(True, "pred")], {"padding": config})
    value = b.broadcast(ops[1], [0], padded.shape)       # the padding value: [B] along dim 0
    return b.select(mask, value, padded), 0


def _get_dimension_size(b: Batcher, inst, ops, dims):
    """Sizes are static: the same for every example (unbatched)."""
    d = dims[0]
    k = inst.attrs["dimensions"]
    k = k[0] if isinstance(k, (tuple, list)) else k
    attrs = dict(inst.attrs, dimensions=(k + 1 if k >= d else k,))
    return b.emit("get-dimension-size", [ops[0]], attrs), None


# -- dynamic slicing ---------------------------------------------------------------------------------------
def _index_type(indices) -> str:
    types = {i.shape.element_type for i in indices}
    return "s64" if "s64" in types or "u64" in types else "s32"


def _stacked_indices(b: Batcher, indices, dims, et: str):
    """The scalar start indices as one [B, n] array (unbatched ones broadcast)."""
    cols = []
    for i, d in zip(indices, dims):
        v = b.convert(i, et)
        v = b.bcast_batch(v, 0) if d is None else v
        cols.append(b.reshape(v, (b.size, 1)))
    return b.emit("concatenate", cols, {"dimensions": (1,)}) if len(cols) > 1 else cols[0]


def _dynamic_slice(b: Batcher, inst, ops, dims):
    """Unbatched indices: one more (zero) start index. Batched ones: a gather with clamped starts."""
    x, xd = ops[0], dims[0]
    sizes = tuple(inst.attrs["dynamic_slice_sizes"])
    idx, idx_dims = ops[1:], dims[1:]
    if all(d is None for d in idx_dims):
        x = b.front(x, xd)
        zero = b.scalar(0, idx[0].shape.element_type) if idx else b.scalar(0, "s32")
        attrs = dict(inst.attrs, dynamic_slice_sizes=(b.size,) + sizes)
        return b.emit("dynamic-slice", [x, zero] + list(idx), attrs), 0
    rank = len(sizes)
    et = _index_type(idx)
    starts = _stacked_indices(b, idx, idx_dims, et)
    if xd is None:
        attrs = {"offset_dims": tuple(range(1, rank + 1)), "collapsed_slice_dims": (),
                 "start_index_map": tuple(range(rank)), "index_vector_dim": 1, "slice_sizes": sizes}
    else:
        x = b.front(x, xd)
        attrs = {"offset_dims": tuple(range(1, rank + 1)), "collapsed_slice_dims": (),
                 "operand_batching_dims": (0,), "start_indices_batching_dims": (0,),
                 "start_index_map": tuple(range(1, rank + 1)), "index_vector_dim": 1, "slice_sizes": (1,) + sizes}
    return b.emit("gather", [x, starts], attrs, shape=_out(inst, b.size)), 0


def _replace_computation(b: Batcher, element_type: str):
    comp = new_computation(b.module, f"scatter_replace_{element_type}", first=True)
    cb = b.sub(comp)
    s = Shape.scalar(element_type)
    cb.parameter(0, s, "old")
    comp.root = cb.parameter(1, s, "new")
    return comp


def _dynamic_update_slice(b: Batcher, inst, ops, dims):
    """Unbatched indices: one more (zero) start index. Batched ones: a scatter of clamped starts."""
    x = b.front(ops[0], dims[0])
    u = b.front(ops[1], dims[1])
    idx, idx_dims = ops[2:], dims[2:]
    if all(d is None for d in idx_dims):
        zero = b.scalar(0, idx[0].shape.element_type) if idx else b.scalar(0, "s32")
        return b.emit("dynamic-update-slice", [x, u, zero] + list(idx), dict(inst.attrs)), 0
    rank = inst.shape.rank
    et = _index_type(idx)
    clamped = []
    for k, (i, d) in enumerate(zip(idx, idx_dims)):
        v = b.convert(i, et)
        hi = inst.operands[0].shape.dims[k] - inst.operands[1].shape.dims[k]
        lo_c, hi_c = b.full(v.shape, 0), b.full(v.shape, hi)
        clamped.append(b.emit("clamp", [lo_c, v, hi_c]))
    starts = _stacked_indices(b, clamped, idx_dims, et)
    attrs = {"update_window_dims": tuple(range(1, rank + 1)), "inserted_window_dims": (),
             "input_batching_dims": (0,), "scatter_indices_batching_dims": (0,),
             "scatter_dims_to_operand_dims": tuple(range(1, rank + 1)), "index_vector_dim": 1,
             "indices_are_sorted": True, "unique_indices": True,
             "to_apply": _replace_computation(b, x.shape.element_type)}
    return b.emit("scatter", [x, starts, u], attrs, shape=x.shape.without_layout()), 0


# -- gather / scatter ----------------------------------------------------------------------------------------
def _gather(b: Batcher, inst, ops, dims):
    x, idx = ops
    xd, idd = dims
    a = dict(inst.attrs)
    offset = tuple(a.get("offset_dims", ()))
    collapsed = tuple(a.get("collapsed_slice_dims", ()))
    obatch = tuple(a.get("operand_batching_dims", ()))
    ibatch = tuple(a.get("start_indices_batching_dims", ()))
    smap = tuple(a.get("start_index_map", ()))
    sizes = tuple(a["slice_sizes"])
    ivd = int(a["index_vector_dim"])
    if idd is None:
        # the batch is one more window dimension of the operand, the first offset dimension of the output
        x = b.front(x, xd)
        a.update(offset_dims=(0,) + shift(offset), collapsed_slice_dims=shift(collapsed),
                 operand_batching_dims=shift(obatch), start_index_map=shift(smap), slice_sizes=(b.size,) + sizes)
    else:
        idx = b.front(idx, idd)
        a.update(offset_dims=shift(offset), index_vector_dim=ivd + 1, start_indices_batching_dims=shift(ibatch))
        if xd is not None:
            x = b.front(x, xd)
            a.update(collapsed_slice_dims=shift(collapsed), start_index_map=shift(smap),
                     operand_batching_dims=(0,) + shift(obatch),
                     start_indices_batching_dims=(0,) + shift(ibatch), slice_sizes=(1,) + sizes)
    for k in ("operand_batching_dims", "start_indices_batching_dims"):
        if not a.get(k):
            a.pop(k, None)
    return b.emit("gather", [x, idx], a, shape=_out(inst, b.size)), 0


def _scatter(b: Batcher, inst, ops, dims):
    """Every operand and update batched at 0 (broadcast where not), the indices too: a pair of batching dims."""
    n = (len(ops) - 1) // 2
    xs = [b.front(o, d) for o, d in zip(ops[:n], dims[:n])]
    idx = b.front(ops[n], dims[n])
    us = [b.front(o, d) for o, d in zip(ops[n + 1:], dims[n + 1:])]
    a = dict(inst.attrs)
    a.update(update_window_dims=shift(a.get("update_window_dims", ())),
             inserted_window_dims=shift(a.get("inserted_window_dims", ())),
             scatter_dims_to_operand_dims=shift(a.get("scatter_dims_to_operand_dims", ())),
             input_batching_dims=(0,) + shift(a.get("input_batching_dims", ())),
             scatter_indices_batching_dims=(0,) + shift(a.get("scatter_indices_batching_dims", ())),
             index_vector_dim=int(a["index_vector_dim"]) + 1, indices_are_sorted=False)
    shapes = [x.shape.without_layout() for x in xs]
    shape = shapes[0] if n == 1 else Shape.tuple_of(shapes)
    out = b.emit("scatter", xs + [idx] + us, a, shape=shape)
    return out, (0 if n == 1 else (0,) * n)


def _pass_through(b: Batcher, inst, ops, dims):
    """The identity on its first operand (opt-barrier, add-dependency): batch dims unchanged."""
    return b.add_instruction(inst.clone_with(ops, shape=_shape_of(ops[0]))), dims[0]


def _shape_of(x):
    return x.shape.without_layout() if not x.shape.is_tuple else x.shape


RULES = {
    "broadcast": _broadcast, "reshape": _reshape, "bitcast": _reshape, "transpose": _transpose,
    "reverse": _reverse, "slice": _slice, "concatenate": _concatenate, "pad": _pad,
    "dynamic-slice": _dynamic_slice, "dynamic-update-slice": _dynamic_update_slice,
    "gather": _gather, "scatter": _scatter, "get-dimension-size": _get_dimension_size,
    "opt-barrier": _pass_through, "add-dependency": _pass_through,
}
