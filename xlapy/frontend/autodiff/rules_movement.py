"""Derivative rules of the data-movement ops (and select/clamp/convert, which only route values).

Every op here is linear in its floating-point operands, so its JVP is the op itself applied to the
tangents (`_same_op`), and its VJP is the transposed movement: broadcast <-> reduce-sum, slice <-> pad,
gather <-> scatter-add, dynamic-slice <-> dynamic-update-slice, transpose <-> inverse transpose.
"""
from __future__ import annotations

import numpy as np

from ...hlo import Instruction, Shape
from ...hlo.attrs import PadDim, SliceRange
from .rules_common import AutodiffError, Emitter, is_float, reducer_kind, to_element_type


def _same_op(b: Emitter, inst: Instruction, ts) -> Instruction:
    """inst re-emitted with each float operand replaced by its tangent (zeros where the tangent is zero)."""
    ops = [(t if t is not None else b.zeros(o.shape)) if is_float(o.shape) else o for o, t in zip(inst.operands, ts)]
    return b.add_instruction(inst.clone_with(ops, name=f"{inst.opcode}.jvp"))


def _pad(b: Emitter, x: Instruction, config) -> Instruction:
    zero = b.scalar(0, x.shape.element_type)
    return b.emit("pad", [x, zero], {"padding": tuple(config)})


def _slice(b: Emitter, x: Instruction, ranges) -> Instruction:
    return b.emit("slice", [x], {"slice": tuple(ranges)})


# -- VJP rules -----------------------------------------------------------------------------------------------
def _broadcast_vjp(b, inst, ct):
    x = inst.operands[0]
    dims = list(inst.attrs.get("dimensions", ()))
    summed = b.reduce_sum(ct, [d for d in range(inst.shape.rank) if d not in dims])
    kept = sorted(dims)
    summed = b.transpose(summed, [kept.index(d) for d in dims])
    return [b.reshape(summed, x.shape.dims)]


def _reshape_vjp(b, inst, ct):
    return [b.reshape(ct, inst.operands[0].shape.dims)]


def _transpose_vjp(b, inst, ct):
    perm = inst.attrs["dimensions"]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [b.transpose(ct, inverse)]


def _slice_vjp(b, inst, ct):
    x = inst.operands[0]
    if inst.shape.numel == 0:
        return [b.zeros(x.shape)]
    config = []
    for r, n, size in zip(inst.attrs["slice"], inst.shape.dims, x.shape.dims):
        last = r.start + (n - 1) * r.stride
        config.append(PadDim(r.start, size - last - 1, r.stride - 1))
    return [_pad(b, ct, config)]


def _pad_vjp(b, inst, ct):
    restore = [PadDim(max(-d.low, 0), max(-d.high, 0), 0) for d in inst.attrs["padding"]]
    full = _pad(b, ct, restore) if any(d.low or d.high for d in restore) else ct
    ranges = [SliceRange(max(d.low, 0), n - max(d.high, 0), d.interior + 1)
              for d, n in zip(inst.attrs["padding"], full.shape.dims)]
    ct_x = _slice(b, full, ranges)
    all_dims = range(inst.shape.rank)
    ct_value = b.sub(b.reduce_sum(ct, all_dims), b.reduce_sum(ct_x, all_dims)) if inst.shape.rank else ct
    return [ct_x, ct_value]


def _concatenate_vjp(b, inst, ct):
    d = inst.attrs["dimensions"][0]
    out, start = [], 0
    for o in inst.operands:
        ranges = [SliceRange(0, n) for n in inst.shape.dims]
        ranges[d] = SliceRange(start, start + o.shape.dims[d])
        start += o.shape.dims[d]
        out.append(_slice(b, ct, ranges))
    return out


def _reverse_vjp(b, inst, ct):
    return [b.emit("reverse", [ct], {"dimensions": inst.attrs["dimensions"]})]


def _dynamic_slice_vjp(b, inst, ct):
    x, *idx = inst.operands
    return [b.emit("dynamic-update-slice", [b.zeros(x.shape), ct, *idx])] + [None] * len(idx)


def _dus_vjp(b, inst, ct):
    x, u, *idx = inst.operands
    ct_x = b.emit("dynamic-update-slice", [ct, b.zeros(u.shape), *idx])
    ct_u = b.emit("dynamic-slice", [ct, *idx], {"dynamic_slice_sizes": tuple(u.shape.dims)})
    return [ct_x, ct_u] + [None] * len(idx)


def _scatter_attrs_of_gather(b, gather: Instruction) -> dict:
    a = gather.attrs
    return {"update_window_dims": a.get("offset_dims", ()), "inserted_window_dims": a.get("collapsed_slice_dims", ()),
            "scatter_dims_to_operand_dims": a.get("start_index_map", ()),
            "input_batching_dims": a.get("operand_batching_dims", ()),
            "scatter_indices_batching_dims": a.get("start_indices_batching_dims", ()),
            "index_vector_dim": a["index_vector_dim"],
            "indices_are_sorted": a.get("indices_are_sorted", False),
            "to_apply": b.reducer("add", gather.shape.element_type)}


def _gather_vjp(b, inst, ct):
    x, idx = inst.operands
    attrs = {k: v for k, v in _scatter_attrs_of_gather(b, inst).items() if v != ()}
    return [b.emit("scatter", [b.zeros(x.shape), idx, ct], attrs), None]


def _scatter_kind(inst: Instruction) -> str:
    comp = inst.attrs["to_apply"]
    if len(inst.operands) != 3:
        raise AutodiffError(f"differentiation of variadic scatter ({inst.name}) is not supported")
    root = comp.root
    if root.opcode == "parameter" and root.parameter_number == 1:
        return "overwrite"
    kind = reducer_kind(comp)
    if kind != "add":
        raise AutodiffError(f"differentiation of scatter with combiner '{root.opcode}' ({inst.name}) is not "
                            f"supported; only scatter-add and overwriting scatter are")
    return kind


def _gather_of_scatter(b, inst: Instruction, ct: Instruction, bounds: bool = True) -> Instruction:
    """ct at the positions the scatter wrote: the gather with the scatter's dimension numbers."""
    x, idx, upd = inst.operands
    a = inst.attrs
    inserted = set(a.get("inserted_window_dims", ())) | set(a.get("input_batching_dims", ()))
    window = list(a.get("update_window_dims", ()))
    sizes, pos = [], 0
    for i in range(x.shape.rank):
        if i in inserted:
            sizes.append(1)
        else:
            sizes.append(upd.shape.dims[window[pos]])
            pos += 1
    attrs = {"offset_dims": tuple(window), "collapsed_slice_dims": a.get("inserted_window_dims", ()),
             "start_index_map": a.get("scatter_dims_to_operand_dims", ()),
             "operand_batching_dims": a.get("input_batching_dims", ()),
             "start_indices_batching_dims": a.get("scatter_indices_batching_dims", ()),
             "index_vector_dim": a["index_vector_dim"], "slice_sizes": tuple(sizes)}
    gathered = b.emit("gather", [ct, idx], {k: v for k, v in attrs.items() if v != ()})
    if not bounds:
        return gathered
    return _drop_out_of_bounds(b, gathered, idx, a["index_vector_dim"], _scatter_upper(inst), window)


def _scatter_upper(inst: Instruction) -> list[int]:
    """Per component of a scatter's index vector, the largest start whose window fits in the operand."""
    x, _, upd = inst.operands
    a = inst.attrs
    inserted = set(a.get("inserted_window_dims", ())) | set(a.get("input_batching_dims", ()))
    window, sizes, pos = list(a.get("update_window_dims", ())), [], 0
    for i in range(x.shape.rank):
        if i in inserted:
            sizes.append(1)
        else:
            sizes.append(upd.shape.dims[window[pos]])
            pos += 1
    return [x.shape.dims[d] - sizes[d] for d in a.get("scatter_dims_to_operand_dims", ())]


def _static_starts_ok(idx: Instruction, index_vector_dim: int, upper: list[int], unique: bool = False) -> bool:
    """Whether idx is a constant whose start vectors are all in bounds (and distinct, when `unique`)."""
    if idx.opcode != "constant" or idx.literal is None:
        return False
    dims = tuple(idx.shape.dims) + ((1,) if index_vector_dim == idx.shape.rank else ())
    starts = np.moveaxis(np.asarray(idx.literal).reshape(dims), index_vector_dim, -1).reshape(-1, len(upper))
    if not ((starts >= 0) & (starts <= np.asarray(upper, dtype=np.int64))).all():
        return False
    return not unique or len({tuple(s) for s in starts.tolist()}) == len(starts)


def _drop_out_of_bounds(b, gathered: Instruction, idx: Instruction, index_vector_dim: int, upper: list[int],
                        offset_dims: list[int]) -> Instruction:
    """Zero the rows of `gathered` whose start index is out of bounds (0 <= start <= upper, per component): the
    scatter dropped those updates, so they get no cotangent (JAX's gather in mode fill-or-drop). A gather clamps
    its starts instead, so without this a dropped update would read the cotangent of the nearest window."""
    if not upper or _static_starts_ok(idx, index_vector_dim, upper):     # known starts, all in bounds
        return gathered
    et = idx.shape.element_type
    if index_vector_dim == idx.shape.rank:
        bound = b.full(idx.shape, upper[0])
    else:
        bound = b.broadcast(b.constant(np.asarray(upper), et), (index_vector_dim,), idx.shape)
    ok = b.emit("and", [b.compare(idx, b.full(idx.shape, 0), "GE"), b.compare(idx, bound, "LE")])
    if index_vector_dim < idx.shape.rank:
        ok = b.emit("reduce", [ok, b.scalar(True, "pred")],
                    {"dimensions": (index_vector_dim,), "to_apply": b.reducer("and", "pred")})
    batch = [d for d in range(gathered.shape.rank) if d not in set(offset_dims)]
    keep = b.broadcast(ok, batch, gathered.shape)
    return b.select(keep, gathered, b.zeros(gathered.shape))


def _scatter_vjp(b, inst, ct):
    x, idx, upd = inst.operands
    if _scatter_kind(inst) == "add":
        return [ct, None, _gather_of_scatter(b, inst, ct)]
    # overwrite: x's cotangent where nothing was written; an update's where it was the one written
    ct_x = b.add_instruction(inst.clone_with([ct, idx, b.zeros(upd.shape)], name="scatter.vjp"))
    return [ct_x, None, _written_updates(b, inst, _gather_of_scatter(b, inst, ct, bounds=False))]


def _written_updates(b, inst: Instruction, gathered: Instruction) -> Instruction:
    """`gathered` (per update element) where that update is the one the overwriting scatter kept, else 0: JAX's
    scatter JVP trick. Each update gets an id (1, 2, ...), the ids are scattered as the updates were and gathered
    back; an update dropped out of bounds, or overwritten by a duplicate index, does not find its own id."""
    x, idx, upd = inst.operands
    if _static_starts_ok(idx, inst.attrs["index_vector_dim"], _scatter_upper(inst), unique=True):
        return gathered
    window = set(inst.attrs.get("update_window_dims", ()))
    batch = [d for d in range(upd.shape.rank) if d not in window]
    count = int(np.prod([upd.shape.dims[d] for d in batch], dtype=np.int64))
    id_type = "u32" if count + 1 < 2 ** 32 else "u64"
    batch_shape = Shape.array(id_type, [upd.shape.dims[d] for d in batch])
    ids = b.emit("iota", [], {"iota_dimension": 0}, shape=Shape.array(id_type, (count,)))
    ids = b.reshape(b.add(ids, b.full(ids.shape, 1)), batch_shape.dims)
    ids = b.broadcast(ids, batch, Shape.array(id_type, upd.shape.dims))
    scattered = b.add_instruction(inst.clone_with([b.zeros(Shape.array(id_type, x.shape.dims)), idx, ids],
                                                  shape=Shape.array(id_type, x.shape.dims), name="scatter.ids"))
    scattered.attrs["to_apply"] = _overwrite(b, id_type)       # the clone's own attrs dict
    back = _gather_of_scatter(b, inst, scattered, bounds=False)
    return b.select(b.compare(back, ids, "EQ"), gathered, b.zeros(gathered.shape))


def _overwrite(b, element_type: str):
    """(old, new) -> new on scalars of element_type: an overwriting scatter's combiner."""
    from ...passes.build import new_computation, parameter, shared_computation

    def build():
        comp = new_computation(b.module, f"scalar_overwrite_{element_type}", first=True)
        s = Shape.scalar(element_type)
        parameter(comp, 0, s, "old")
        comp.root = parameter(comp, 1, s, "new")
        return comp
    return shared_computation(b.module, ("scatter_overwrite", element_type), build)


def _scatter_jvp(b, inst, ts):
    _scatter_kind(inst)
    return _same_op(b, inst, ts)


def _broadcast_pred(b, p, like):
    if p.shape.rank == 0 and like.shape.rank:
        return b.broadcast(p, (), like.shape)
    return p


def _select_vjp(b, inst, ct):
    p = _broadcast_pred(b, inst.operands[0], ct)
    zero = b.zeros(ct.shape)
    return [None, b.select(p, ct, zero), b.select(p, zero, ct)]


def _clamp_masks(b, inst):
    lo, x, hi = inst.operands
    lo_b = b.broadcast(lo, (), x.shape) if lo.shape.rank < x.shape.rank else lo
    hi_b = b.broadcast(hi, (), x.shape) if hi.shape.rank < x.shape.rank else hi
    both = lambda p, q: b.emit("and", [p, q])
    return (both(b.compare(lo_b, x, "GT"), b.compare(lo_b, hi_b, "LT")),
            both(b.compare(x, lo_b, "GT"), b.compare(x, hi_b, "LT")),
            b.compare(hi_b, x, "LT"))


def _sum_to_shape(b: Emitter, x: Instruction, shape: Shape) -> Instruction:
    """Undo an implicit scalar broadcast: sum `x` down to `shape` (a scalar or x's own shape)."""
    if tuple(x.shape.dims) == tuple(shape.dims):
        return x
    if shape.rank == 0:
        return b.reduce_sum(x, range(x.shape.rank))
    raise AutodiffError(f"autodiff: cannot sum {x.shape} down to {shape}")


def _clamp_vjp(b, inst, ct):
    zero = b.zeros(ct.shape)
    masks = _clamp_masks(b, inst)
    return [_sum_to_shape(b, b.select(m, ct, zero), o.shape) for m, o in zip(masks, inst.operands)]


def _clamp_jvp(b, inst, ts):
    masks = _clamp_masks(b, inst)
    out = None
    for m, t, o in zip(masks, ts, inst.operands):
        if t is None:
            continue
        if t.shape.rank < inst.shape.rank:
            t = b.broadcast(t, (), inst.shape)
        term = b.select(m, t, b.zeros(inst.shape))
        out = term if out is None else b.add(out, term)
    return out


def _convert_vjp(b, inst, ct):
    # real -> complex transposes to the real part of ct (JAX's convert_element_type transpose)
    x = inst.operands[0]
    return [to_element_type(b, ct, x.shape.element_type) if is_float(x.shape) else None]


def _convert_jvp(b, inst, ts):
    return to_element_type(b, ts[0], inst.shape.element_type)


def _as_list(b, ct, n):
    if isinstance(ct, list):
        return ct
    return [b.gte(ct, i) for i in range(n)]


def _tuple_vjp(b, inst, ct):
    return _as_list(b, ct, len(inst.operands))


def _gte_vjp(b, inst, ct):
    n = len(inst.operands[0].shape.tuple_shapes)
    out = [None] * n
    out[inst.attrs["index"]] = ct
    return [out]


def _tuple_jvp(b, inst, ts):
    return b.tuple([t if t is not None else b.zeros(o.shape) for o, t in zip(inst.operands, ts)])


def _gte_jvp(b, inst, ts):
    return b.gte(ts[0], inst.attrs["index"])


def _identity_vjp(b, inst, ct):
    return [ct]


def is_stop_gradient(inst: Instruction) -> bool:
    """lax.stop_gradient's marker: a copy whose metadata names stop_gradient (the op JAX calls a primitive)."""
    return inst.opcode == "copy" and 'op_name="stop_gradient"' in str(inst.attrs.get("metadata", ""))


def _copy_vjp(b, inst, ct):
    # stop_gradient(x) passes no cotangent back; any other copy is the identity
    return [None] if is_stop_gradient(inst) else [ct]


def _copy_jvp(b, inst, ts):
    # stop_gradient(x) has a zero tangent
    return None if is_stop_gradient(inst) else _same_op(b, inst, ts)


VJP = {
    "broadcast": _broadcast_vjp,
    "reshape": _reshape_vjp,
    "bitcast": _reshape_vjp,
    "transpose": _transpose_vjp,
    "slice": _slice_vjp,
    "pad": _pad_vjp,
    "concatenate": _concatenate_vjp,
    "reverse": _reverse_vjp,
    "dynamic-slice": _dynamic_slice_vjp,
    "dynamic-update-slice": _dus_vjp,
    "gather": _gather_vjp,
    "scatter": _scatter_vjp,
    "select": _select_vjp,
    "clamp": _clamp_vjp,
    "convert": _convert_vjp,
    "copy": _copy_vjp,
    "reduce-precision": _identity_vjp,
    "tuple": _tuple_vjp,
    "get-tuple-element": _gte_vjp,
}

JVP = {op: _same_op for op in ("broadcast", "reshape", "bitcast", "transpose", "slice", "pad", "concatenate",
                               "reverse", "dynamic-slice", "dynamic-update-slice", "gather", "select",
                               "reduce-precision")}
JVP.update({
    "copy": _copy_jvp,
    "scatter": _scatter_jvp,
    "clamp": _clamp_jvp,
    "convert": _convert_jvp,
    "tuple": _tuple_jvp,
    "get-tuple-element": _gte_jvp,
})
