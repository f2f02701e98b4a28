"""Shape rules of the collectives (XLA's ShapeInference::InferAll*Shape and the verifier's CheckReplicaGroups).

| opcode | result | checks |
|---|---|---|
| all-reduce, all-reduce-start | the operand shapes (a tuple for several) | the reducer |
| all-reduce-done | its operand | |
| all-gather | operand with dim d times the group size | same rank and other dims |
| all-gather-start | (operand(s), all-gather's result(s)) | |
| reduce-scatter | operand with dim d divided by the group size | d divisible |
| all-to-all | the operand (array form: dim d divisible by the group size), the operands as a tuple otherwise | |
| collective-permute | the operand; the in-place form (4 operands): operand 1 | |
| collective-permute-start / -done | (operand, result, u32[], u32[]), combined ((operands), (results)) / element 1 | |
| collective-broadcast | the operand(s) | |
| ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes) | the output | input and output differ only in dim 0; offsets and sizes s32/s64 of one shape |

Replica groups (every collective with them): ids unique across groups, one group size (all-reduce excepted),
and where the module runs more than one replica (partition) the groups cover them all, as XLA's verifier asks
(`replica_count == 1 || ids == replica_count`); use_global_device_ids=true needs a channel_id and groups.
The group size is the first group's, or (with replica_groups={}) the count the mode implies, when the module
header gives it; otherwise the declared shape is trusted for the gathered/scattered dimension.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import HloVerifierError
from . import collectives as cg
from .ir import Instruction
from .shape import Shape
from .shape_inference import array, expect_array, fail, scalar, text, tuple_or_single


def _counts(inst: Instruction) -> tuple[int, int]:
    comp = inst.parent
    module = getattr(comp, "parent", None)
    return cg.module_counts(module) if module is not None else (1, 1)


def check_groups(inst: Instruction) -> int | None:
    """Check inst's replica groups; return the group size where it is known."""
    try:
        groups = cg.parse_groups(inst.attrs.get("replica_groups"))
        mode = cg.group_mode(inst)
    except HloVerifierError as e:
        fail(inst, str(e))
    R, P = _counts(inst)
    shown = inst.attrs.get("replica_groups")
    ids = [i for g in groups for i in g]
    if len(set(ids)) != len(ids):
        fail(inst, f"replica_groups={shown}: an id appears in more than one group")
    if any(i < 0 for i in ids):
        fail(inst, f"replica_groups={shown}: negative id")
    uniform = inst.opcode not in ("all-reduce", "all-reduce-start")
    if uniform and len({len(g) for g in groups}) > 1:
        fail(inst, f"replica_groups={shown}: the groups have different sizes")
    if mode == cg.FLATTENED_ID and not groups:
        fail(inst, "replica groups cannot be empty with use_global_device_ids=true")
    expected = {cg.CROSS_PARTITION: P, cg.FLATTENED_ID: R * P}.get(mode, R)
    what = {cg.CROSS_PARTITION: "partitions", cg.FLATTENED_ID: "devices"}.get(mode, "replicas")
    if groups and expected > 1 and sorted(ids) != list(range(expected)):
        fail(inst, f"replica_groups={shown}: in {mode} mode the groups must hold each of the {expected} "
                   f"{what} once, got ids {sorted(ids)}")
    if groups:
        return len(groups[0])
    return expected if expected > 1 or (R, P) != (1, 1) else None


def _same_types(inst: Instruction, shapes: Sequence[Shape]) -> None:
    for i in range(len(shapes)):
        expect_array(inst, shapes, i)


def _reducer(inst: Instruction, shapes: Sequence[Shape]) -> None:
    comp = inst.attrs.get("to_apply")
    if comp is None:
        fail(inst, "needs a to_apply reducer computation")
    params = comp.parameters
    types = {s.element_type for s in shapes}
    if len(params) != 2 or any(p.shape.is_tuple or p.shape.dims for p in params):
        fail(inst, f"the reducer {comp.name} must take two scalars, takes "
                   f"({', '.join(text(p.shape) for p in params)})")
    if len(types) == 1 and params[0].shape.element_type not in types:
        fail(inst, f"the reducer {comp.name} takes {params[0].shape.element_type}, the operands are {types.pop()}")


def _all_reduce(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    _same_types(inst, shapes)
    check_groups(inst)
    _reducer(inst, shapes)
    return tuple_or_single(list(shapes))


def _dimension(inst: Instruction, s: Shape) -> int:
    dims = inst.attrs.get("dimensions")
    if not dims or len(dims) != 1:
        fail(inst, "needs dimensions={d} (one dimension)")
    d = int(dims[0])
    if not 0 <= d < s.rank:
        fail(inst, f"dimension {d} is out of range for the operand {text(s)}")
    return d


def _declared_leaves(inst: Instruction) -> list[Shape]:
    return list(inst.shape.tuple_shapes) if inst.shape.is_tuple else [inst.shape]


def _gather_shapes(inst: Instruction, shapes: Sequence[Shape]) -> list[Shape]:
    _same_types(inst, shapes)
    n = check_groups(inst)
    out = []
    declared = _declared_leaves(inst)
    if inst.opcode == "all-gather-start" and inst.shape.is_tuple and len(declared) == 2:
        declared = _declared_leaves_of(declared[1])
    for k, s in enumerate(shapes):
        d = _dimension(inst, s)
        size = n
        if size is None:        # replica_groups={} with no header counts: read it off the declared shape
            got = declared[k] if k < len(declared) else s
            size = got.dims[d] // s.dims[d] if s.dims[d] and got.rank == s.rank else 1
        out.append(array(s.element_type, s.dims[:d] + (s.dims[d] * size,) + s.dims[d + 1:]))
    return out


def _declared_leaves_of(shape: Shape) -> list[Shape]:
    return list(shape.tuple_shapes) if shape.is_tuple else [shape]


def _all_gather(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    return tuple_or_single(_gather_shapes(inst, shapes))


def _all_gather_start(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    return Shape.tuple_of([tuple_or_single(list(shapes)), tuple_or_single(_gather_shapes(inst, shapes))])


def _reduce_scatter(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    _same_types(inst, shapes)
    n = check_groups(inst)
    _reducer(inst, shapes)
    declared = _declared_leaves(inst)
    out = []
    for k, s in enumerate(shapes):
        d = _dimension(inst, s)
        size = n
        if size is None:
            got = declared[k] if k < len(declared) else s
            size = s.dims[d] // got.dims[d] if got.rank == s.rank and got.dims[d] else 1
        if s.dims[d] % size:
            fail(inst, f"dimension {d} of {text(s)} does not split into {size} pieces")
        out.append(array(s.element_type, s.dims[:d] + (s.dims[d] // size,) + s.dims[d + 1:]))
    return tuple_or_single(out)


def _all_to_all(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    _same_types(inst, shapes)
    n = check_groups(inst)
    dims = inst.attrs.get("dimensions")
    if dims:
        if len(shapes) != 1:
            fail(inst, f"the array form (dimensions={{d}}) takes one operand, got {len(shapes)}")
        d = _dimension(inst, shapes[0])
        if n is not None and shapes[0].dims[d] % n:
            fail(inst, f"split dimension {d} of {text(shapes[0])} does not split over a group of {n}")
        return shapes[0]
    if n is not None and len(shapes) != n:
        fail(inst, f"the tuple form needs one operand per device of a group ({n}), got {len(shapes)}")
    return Shape.tuple_of(list(shapes))


def _ragged_all_to_all(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    """(input, output, input_offsets, send_sizes, output_offsets, recv_sizes) -> the output's shape."""
    if len(shapes) != 6:
        fail(inst, f"takes (input, output, input_offsets, send_sizes, output_offsets, recv_sizes), got "
                   f"{len(shapes)} operands")
    _same_types(inst, shapes)
    check_groups(inst)
    data, out = shapes[0], shapes[1]
    if data.element_type != out.element_type or data.rank != out.rank or data.dims[1:] != out.dims[1:]:
        fail(inst, f"the input {text(data)} and the output {text(out)} must differ only in dimension 0")
    sizes = {s.dims for s in shapes[2:]}
    if len(sizes) != 1 or any(s.element_type not in ("s32", "s64") for s in shapes[2:]):
        fail(inst, f"the offsets and sizes must be s32 or s64 arrays of one shape, got "
                   f"{', '.join(text(s) for s in shapes[2:])}")
    return out


def _check_pairs(inst: Instruction) -> None:
    try:
        pairs = cg.parse_pairs(inst.attrs.get("source_target_pairs"))
    except HloVerifierError as e:
        fail(inst, str(e))
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    shown = inst.attrs.get("source_target_pairs")
    if not in_place(inst) and (len(set(sources)) != len(sources) or len(set(targets)) != len(targets)):
        fail(inst, f"source_target_pairs={shown}: a source or a target appears twice")
    R, P = _counts(inst)
    limit = P if inst.attrs.get("channel_id") is not None else R
    if limit > 1 and any(not 0 <= i < limit for i in sources + targets):
        fail(inst, f"source_target_pairs={shown}: an id is out of range for {limit} "
                   f"{'partitions' if inst.attrs.get('channel_id') is not None else 'replicas'}")


def in_place(inst: Instruction) -> bool:
    """collective-permute's in-place form: (input, output, input start indices, output start indices)."""
    return len(inst.operands) == 4 and (inst.operands[2].shape.is_tuple or "slice_sizes" in inst.attrs)


def _collective_permute(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    _check_pairs(inst)
    if in_place(inst):
        return shapes[1]
    return tuple_or_single(list(shapes))


def _collective_permute_start(inst: Instruction, shapes: Sequence[Shape]) -> Shape | None:
    _check_pairs(inst)
    if in_place(inst):
        return None
    if len(shapes) > 1:         # combined: ((operands), (results))
        value = Shape.tuple_of(list(shapes))
        return Shape.tuple_of([value, value])
    return Shape.tuple_of([shapes[0], shapes[0], scalar("u32"), scalar("u32")])


def _element_one(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = shapes[0]
    if not s.is_tuple or len(s.tuple_shapes) < 2:
        fail(inst, f"takes the tuple its -start made, got {text(s)}")
    return s.tuple_shapes[1]


def _collective_broadcast(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    _same_types(inst, shapes)
    check_groups(inst)
    return tuple_or_single(list(shapes))


RULES = {
    "all-reduce": _all_reduce, "all-reduce-start": _all_reduce,
    "all-reduce-done": lambda inst, shapes: shapes[0],
    "all-gather": _all_gather, "all-gather-start": _all_gather_start, "all-gather-done": _element_one,
    "reduce-scatter": _reduce_scatter,
    "all-to-all": _all_to_all, "ragged-all-to-all": _ragged_all_to_all,
    "collective-permute": _collective_permute, "collective-permute-start": _collective_permute_start,
    "collective-permute-done": _element_one,
    "collective-broadcast": _collective_broadcast,
}

__all__ = ["RULES", "check_groups", "in_place"]
