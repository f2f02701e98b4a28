"""Shape rules of data-movement ops: broadcast, reshape, transpose, slices, concatenate, pad, gather, scatter."""
from __future__ import annotations

from typing import Sequence

from .ir import Instruction
from .shape import Shape
from .shape_inference import (array, check_signature, computation_attr, expect_array, expect_dims_in_range,
                              expect_same_type, expect_scalar, fail, int_attr, ints_attr, scalar, shapes_text,
                              text, tuple_or_single)


def _declared_array(inst: Instruction) -> Shape:
    out = inst.shape
    if out.is_tuple or not out.ptype.is_array_type:
        fail(inst, f"{inst.opcode} must produce an array, but declares {text(out)}")
    return out


def _broadcast(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s, out = expect_array(inst, shapes, 0), _declared_array(inst)
    dims = ints_attr(inst, "dimensions", ())
    if len(dims) != s.rank:
        fail(inst, f"dimensions={{{','.join(map(str, dims))}}} must map each of the {s.rank} dimensions of "
                   f"operand {text(s)} into the output")
    expect_dims_in_range(inst, "dimensions", dims, out.rank)
    for i, d in enumerate(dims):
        if s.dims[i] != out.dims[d]:
            fail(inst, f"operand dimension {i} (size {s.dims[i]}) of {text(s)} maps to output dimension {d}, "
                       f"but the instruction declares {text(out)}")
    return array(s.element_type, out.dims)


def _reshape(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s, out = expect_array(inst, shapes, 0), _declared_array(inst)
    if s.numel != out.numel:
        fail(inst, f"reshape of {text(s)} ({s.numel} elements) cannot produce the declared {text(out)} "
                   f"({out.numel} elements)")
    return array(s.element_type, out.dims)


def _bitcast(inst: Instruction, shapes: Sequence[Shape]) -> Shape | None:
    s, out = shapes[0], inst.shape
    if s.is_tuple or out.is_tuple or not s.ptype.is_array_type or not out.ptype.is_array_type:
        return None
    if s.numel * s.ptype.bits != out.numel * out.ptype.bits:
        fail(inst, f"bitcast of {text(s)} to the declared {text(out)} changes the size in bits")
    return None


def _transpose(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    perm = ints_attr(inst, "dimensions")
    if sorted(perm) != list(range(s.rank)):
        fail(inst, f"dimensions={{{','.join(map(str, perm))}}} is not a permutation of the {s.rank} "
                   f"dimensions of {text(s)}")
    return array(s.element_type, [s.dims[p] for p in perm])


def _slice(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    ranges = inst.attrs.get("slice", ())
    if len(ranges) != s.rank:
        fail(inst, f"slice has {len(ranges)} ranges but operand {text(s)} has rank {s.rank}")
    dims = []
    for i, r in enumerate(ranges):
        if not (0 <= r.start <= r.limit <= s.dims[i]) or r.stride < 1:
            fail(inst, f"slice range [{r.start}:{r.limit}:{r.stride}] is invalid for dimension {i} "
                       f"(size {s.dims[i]}) of {text(s)}")
        dims.append(-(-(r.limit - r.start) // r.stride))
    return array(s.element_type, dims)


def _start_indices(inst: Instruction, shapes: Sequence[Shape], first: int, rank: int) -> None:
    """Scalar integer start indices, one per dimension, all of one type (or one legacy index vector)."""
    idx = list(range(first, len(shapes)))
    if len(idx) == 1 and shapes[first].rank == 1 and rank != 1:   # legacy form: one s32[rank] vector
        if shapes[first].dims[0] != rank:
            fail(inst, f"start index vector {text(shapes[first])} must have {rank} elements")
        return
    if len(idx) != rank:
        fail(inst, f"needs {rank} start indices for an operand of rank {rank}, got {len(idx)}: "
                   f"{shapes_text(shapes)}")
    for i in idx:
        s = expect_scalar(inst, shapes, i, "a start index")
        if not s.ptype.is_integral:
            fail(inst, f"start index operand {i} has shape {text(s)}; start indices must be integers")
    if idx:
        expect_same_type(inst, shapes, idx)


def _dynamic_slice(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    _start_indices(inst, shapes, 1, s.rank)
    sizes = ints_attr(inst, "dynamic_slice_sizes")
    if len(sizes) != s.rank:
        fail(inst, f"dynamic_slice_sizes has {len(sizes)} entries but operand {text(s)} has rank {s.rank}")
    for i, n in enumerate(sizes):
        if not 0 <= n <= s.dims[i]:
            fail(inst, f"slice size {n} of dimension {i} does not fit operand {text(s)}")
    return array(s.element_type, sizes)


def _dynamic_update_slice(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s, u = expect_array(inst, shapes, 0), expect_array(inst, shapes, 1)
    expect_same_type(inst, shapes, (0, 1))
    if u.rank != s.rank or any(a > b for a, b in zip(u.dims, s.dims)):
        fail(inst, f"update {text(u)} does not fit inside operand {text(s)}")
    _start_indices(inst, shapes, 2, s.rank)
    return array(s.element_type, s.dims)


def _concatenate(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    if not shapes:
        fail(inst, "concatenate needs at least one operand")
    for i in range(len(shapes)):
        expect_array(inst, shapes, i)
    t = expect_same_type(inst, shapes, range(len(shapes)))
    dims, first = ints_attr(inst, "dimensions"), shapes[0]
    if len(dims) != 1 or not 0 <= dims[0] < first.rank:
        fail(inst, f"dimensions={{{','.join(map(str, dims))}}} must be one dimension of {text(first)}")
    d = dims[0]
    total = 0
    for i, s in enumerate(shapes):
        if s.rank != first.rank or any(a != b for k, (a, b) in enumerate(zip(s.dims, first.dims)) if k != d):
            fail(inst, f"operand {i} {text(s)} differs from operand 0 {text(first)} in a dimension other than "
                       f"the concatenated dimension {d}")
        total += s.dims[d]
    return array(t, first.dims[:d] + (total,) + first.dims[d + 1:])


def _pad(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    expect_scalar(inst, shapes, 1, "the padding value")
    expect_same_type(inst, shapes, (0, 1))
    pads = inst.attrs.get("padding", ())
    if len(pads) != s.rank:
        fail(inst, f"padding has {len(pads)} entries but operand {text(s)} has rank {s.rank}")
    dims = []
    for i, (n, p) in enumerate(zip(s.dims, pads)):
        if p.interior < 0:
            fail(inst, f"interior padding {p.interior} of dimension {i} is negative")
        size = n + p.low + p.high + max(n - 1, 0) * p.interior
        if size < 0:
            fail(inst, f"padding makes dimension {i} of {text(s)} negative ({size})")
        dims.append(size)
    return array(s.element_type, dims)


def _reverse(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    expect_dims_in_range(inst, "dimensions", ints_attr(inst, "dimensions", ()), s.rank)
    return array(s.element_type, s.dims)


def _iota(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    out = _declared_array(inst)
    d = int_attr(inst, "iota_dimension")
    if not 0 <= d < out.rank:
        fail(inst, f"iota_dimension={d} is out of range for the declared {text(out)}")
    return array(out.element_type, out.dims)


def _tuple(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    return Shape.tuple_of(shapes)


def _get_tuple_element(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s, i = shapes[0], int_attr(inst, "index")
    if not s.is_tuple or not 0 <= i < len(s.tuple_shapes):
        fail(inst, f"index={i} is out of range for operand shape {text(s)}")
    return s.tuple_shapes[i]


# -- gather and scatter -----------------------------------------------------------------------------
def _index_batch_dims(inst: Instruction, indices: Shape, index_vector_dim: int, vector_size_needed: int) -> list[int]:
    """Sizes of the batch dimensions of the indices (all but index_vector_dim); checks the vector size."""
    if not 0 <= index_vector_dim <= indices.rank:
        fail(inst, f"index_vector_dim={index_vector_dim} is out of range for indices {text(indices)}")
    if not indices.ptype.is_integral:
        fail(inst, f"indices {text(indices)} must have an integral element type")
    vector = 1 if index_vector_dim == indices.rank else indices.dims[index_vector_dim]
    if vector != vector_size_needed:
        fail(inst, f"the index vector of {text(indices)} (dimension {index_vector_dim}) has {vector} elements "
                   f"but {vector_size_needed} operand dimensions are indexed")
    return [n for k, n in enumerate(indices.dims) if k != index_vector_dim]


def _sorted_unique(inst: Instruction, key: str, dims: Sequence[int], rank: int) -> None:
    expect_dims_in_range(inst, key, dims, rank)
    if list(dims) != sorted(dims):
        fail(inst, f"{key}={{{','.join(map(str, dims))}}} must be sorted")


def _gather(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    operand, indices = expect_array(inst, shapes, 0), expect_array(inst, shapes, 1)
    offset_dims = ints_attr(inst, "offset_dims", ())
    collapsed = ints_attr(inst, "collapsed_slice_dims", ())
    batching = ints_attr(inst, "operand_batching_dims", ())
    start_index_map = ints_attr(inst, "start_index_map", ())
    sizes = ints_attr(inst, "slice_sizes")
    batch = _index_batch_dims(inst, indices, int_attr(inst, "index_vector_dim"), len(start_index_map))
    out_rank = len(offset_dims) + len(batch)
    _sorted_unique(inst, "offset_dims", offset_dims, out_rank)
    _sorted_unique(inst, "collapsed_slice_dims", collapsed, operand.rank)
    _sorted_unique(inst, "operand_batching_dims", batching, operand.rank)
    expect_dims_in_range(inst, "start_index_map", start_index_map, operand.rank)
    if len(sizes) != operand.rank:
        fail(inst, f"slice_sizes has {len(sizes)} entries but operand {text(operand)} has rank {operand.rank}")
    for i, n in enumerate(sizes):
        if not 0 <= n <= operand.dims[i]:
            fail(inst, f"slice size {n} of dimension {i} does not fit operand {text(operand)}")
    removed = set(collapsed) | set(batching)
    if len(removed) != len(collapsed) + len(batching) or any(sizes[d] > 1 for d in removed):
        fail(inst, "collapsed_slice_dims and operand_batching_dims must be distinct dimensions of slice size <= 1")
    kept = [sizes[d] for d in range(operand.rank) if d not in removed]
    if len(kept) != len(offset_dims):
        fail(inst, f"offset_dims has {len(offset_dims)} entries but {len(kept)} slice dimensions are not collapsed")
    kept_iter, batch_iter = iter(kept), iter(batch)
    offset = set(offset_dims)
    dims = [next(kept_iter) if i in offset else next(batch_iter) for i in range(out_rank)]
    return array(operand.element_type, dims)


def _scatter(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    if len(shapes) < 3 or len(shapes) % 2 == 0:
        fail(inst, f"scatter takes N operands, indices and N updates, got {len(shapes)} operands")
    n = (len(shapes) - 1) // 2
    operands, indices, updates = shapes[:n], expect_array(inst, shapes, n), shapes[n + 1:]
    for i in range(len(shapes)):
        expect_array(inst, shapes, i)
    operand, update = operands[0], updates[0]
    for k in range(n):
        if operands[k].dims != operand.dims or updates[k].dims != update.dims:
            fail(inst, f"all scatter operands must share dimensions, and all updates: {shapes_text(shapes)}")
        if operands[k].element_type != updates[k].element_type:
            fail(inst, f"update {k} {text(updates[k])} has a different element type from operand {k} "
                       f"{text(operands[k])}")
    window_dims = ints_attr(inst, "update_window_dims", ())
    inserted = ints_attr(inst, "inserted_window_dims", ())
    batching = ints_attr(inst, "input_batching_dims", ())
    to_operand = ints_attr(inst, "scatter_dims_to_operand_dims", ())
    batch = _index_batch_dims(inst, indices, int_attr(inst, "index_vector_dim"), len(to_operand))
    _sorted_unique(inst, "update_window_dims", window_dims, update.rank)
    _sorted_unique(inst, "inserted_window_dims", inserted, operand.rank)
    _sorted_unique(inst, "input_batching_dims", batching, operand.rank)
    expect_dims_in_range(inst, "scatter_dims_to_operand_dims", to_operand, operand.rank)
    if update.rank != len(window_dims) + len(batch):
        fail(inst, f"updates {text(update)} must have rank {len(window_dims) + len(batch)} "
                   f"(update_window_dims plus the batch dimensions of indices {text(indices)})")
    removed = set(inserted) | set(batching)
    window_operand_dims = [d for d in range(operand.rank) if d not in removed]
    if len(window_operand_dims) != len(window_dims):
        fail(inst, f"update_window_dims has {len(window_dims)} entries but operand {text(operand)} has "
                   f"{len(window_operand_dims)} window dimensions")
    for u, o in zip(window_dims, window_operand_dims):
        if update.dims[u] > operand.dims[o]:
            fail(inst, f"update window dimension {u} of {text(update)} exceeds operand dimension {o} of "
                       f"{text(operand)}")
    scatter_dims = [update.dims[k] for k in range(update.rank) if k not in set(window_dims)]
    if scatter_dims != batch:
        fail(inst, f"scatter dimensions {scatter_dims} of updates {text(update)} must equal the batch dimensions "
                   f"{batch} of indices {text(indices)}")
    params = [scalar(s.element_type) for s in operands] + [scalar(s.element_type) for s in updates]
    check_signature(inst, computation_attr(inst, "to_apply"), "update computation", params,
                    tuple_or_single([scalar(s.element_type) for s in operands]))
    return tuple_or_single([array(s.element_type, s.dims) for s in operands])


RULES = {
    "broadcast": _broadcast, "reshape": _reshape, "bitcast": _bitcast, "transpose": _transpose,
    "slice": _slice, "dynamic-slice": _dynamic_slice, "dynamic-update-slice": _dynamic_update_slice,
    "concatenate": _concatenate, "pad": _pad, "reverse": _reverse, "iota": _iota,
    "tuple": _tuple, "get-tuple-element": _get_tuple_element, "gather": _gather, "scatter": _scatter,
}
