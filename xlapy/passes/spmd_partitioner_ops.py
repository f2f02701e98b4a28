"""The SPMD partitioner's rules by opcode: `rule(p, inst, operands, want) -> local instruction` where operands
are (local instruction, sharding) pairs and `want` is inst's sharding. Each rule computes the op on tiles in
some sharding it chooses and reshards the result into `want` (spmd_partitioner.py has the driver)."""
from __future__ import annotations

from typing import Callable

from ..hlo import Instruction, Shape, opinfo
from .sharding_propagation import PASS_THROUGH, touched_dims, dot_dims, dot_output_sharding, replicated_like, reshape_dim_map
from .spmd_partitioner import Partitioner
from .spmd_sharding import Sharding, ShardingError


def _local(shape: Shape, s: Sharding, inst: Instruction) -> Shape:
    return Shape.array(shape.element_type, s.local_dims(shape.dims, f"{inst.name}: "))


def _clone(p: Partitioner, inst: Instruction, operands: list[Instruction], shape: Shape) -> Instruction:
    attrs = {k: v for k, v in inst.attrs.items() if k != "sharding"}
    return p.emit(inst.opcode, operands, attrs, shape=shape)


def _elementwise(p, inst, ops, want):
    xs = [p.reshard(x, s, want if x.shape.rank else s, inst.name) for x, s in ops]
    return _clone(p, inst, xs, _local(inst.shape, want, inst))


def _replicate(p: Partitioner, x: Instruction, s: Sharding, where: str) -> Instruction:
    """The whole value of x (a tuple element by element)."""
    if x.shape.is_tuple:
        parts = [_replicate(p, p.emit("get-tuple-element", [x], {"index": i}, shape=e), s.elements[i], where)
                 for i, e in enumerate(x.shape.tuple_shapes)] if s.is_tuple else None
        if parts is None:
            return x
        if all(q.opcode == "get-tuple-element" and q.operands[0] is x for q in parts):
            return x
        return p.emit("tuple", parts, shape=Shape.tuple_of([q.shape for q in parts]))
    if not x.shape.is_array:
        return x
    return p.reshard(x, s, Sharding.replicated(x.shape.rank, p.n), where)


def _whole(p, inst, ops, want):
    """Operands gathered whole, the op run whole, the result sliced to `want`."""
    xs = [_replicate(p, x, s, inst.name) for x, s in ops]
    y = _clone(p, inst, xs, inst.shape.without_layout() if inst.shape.is_array else inst.shape)
    if not inst.shape.is_array:
        if want != replicated_like(inst.shape, p.n):
            raise ShardingError(f"{inst.name}: a {inst.opcode} with a tuple result can only be replicated")
        return y
    return p.reshard(y, Sharding.replicated(inst.shape.rank, p.n), want, inst.name)


def _broadcast(p, inst, ops, want):
    x, s = ops[0]
    dims = inst.attrs.get("dimensions", ())
    out = s.mapped(inst.shape.rank, {i: d for i, d in enumerate(dims)})
    if _tile_count(want) > _tile_count(out):
        # want split more finely (backward propagation): the operand resharded to want's split of the dimensions
        # it maps to, each device broadcasting its tile at its result tile's shape (no whole value, no collective
        # where the operand was replicated)
        x = p.reshard(x, s, want.mapped(len(dims), {d: i for i, d in enumerate(dims)}), inst.name)
        return _clone(p, inst, [x], _local(inst.shape, want, inst))
    y = _clone(p, inst, [x], _local(inst.shape, out, inst))
    return p.reshard(y, out, want, inst.name)


def _transpose(p, inst, ops, want):
    x, s = ops[0]
    out = s.permuted(inst.attrs["dimensions"])
    y = _clone(p, inst, [x], _local(inst.shape, out, inst))
    return p.reshard(y, out, want, inst.name)


def _reshape(p, inst, ops, want):
    x, s = ops[0]
    kept = reshape_dim_map(inst.operands[0].shape.dims, inst.shape.dims, s.tile_dims)
    split = [d for d, t in enumerate(s.tile_dims) if t > 1]
    if any(d not in kept for d in split):
        for d in split:
            if d not in kept:
                x, s = p.all_gather(x, s, d)
    out = s.mapped(inst.shape.rank, kept)
    y = _clone(p, inst, [x], _local(inst.shape, out, inst))
    return p.reshard(y, out, want, inst.name)


def _reduce(p, inst, ops, want):
    if inst.shape.is_tuple or len(ops) != 2:
        return _whole(p, inst, ops, want)
    (x, s), (init, si) = ops
    init = p.reshard(init, si, Sharding.replicated(0, p.n), inst.name)
    dims = inst.attrs.get("dimensions", ())
    kept = [d for d in range(inst.operands[0].shape.rank) if d not in dims]
    out = s.mapped(inst.shape.rank, {d: k for k, d in enumerate(kept)})
    y = _clone(p, inst, [x, init], _local(inst.shape, out, inst))
    split = [d for d in dims if s.tile_dims[d] > 1]
    if split:       # the tiles' partial results, combined (XLA assumes the init value is the identity)
        y = p.all_reduce(y, s.groups_along(split), inst.attrs["to_apply"])
    return p.reshard(y, out, want, inst.name)


def _tile_count(s: Sharding) -> int:
    return s.num_devices // s.tiles.shape[-1]


def _dot_from_output(p, inst, ops, want):
    """Both operands sliced to the tiles `want` needs (batch and free dimensions): a local dot, no collective."""
    (lhs, sl), (rhs, sr) = ops
    lb, lc, lf, rb, rc, rf = dot_dims(inst)
    out_lhs = {k: d for k, d in enumerate(lb)}
    out_lhs.update({len(lb) + k: d for k, d in enumerate(lf)})
    out_rhs = {k: d for k, d in enumerate(rb)}
    out_rhs.update({len(lb) + len(lf) + k: d for k, d in enumerate(rf)})
    x = p.reshard(lhs, sl, want.mapped(inst.operands[0].shape.rank, out_lhs), inst.name)
    y = p.reshard(rhs, sr, want.mapped(inst.operands[1].shape.rank, out_rhs), inst.name)
    return _clone(p, inst, [x, y], _local(inst.shape, want, inst))


def _dot(p, inst, ops, want):
    (lhs, sl), (rhs, sr) = ops
    if _tile_count(want) > max(_tile_count(sl), _tile_count(sr)):
        return _dot_from_output(p, inst, ops, want)      # XLA's propagation backward from the result
    lb, lc, lf, rb, rc, rf = dot_dims(inst)
    tiles = [s.num_devices // s.tiles.shape[-1] for s in (sl, sr)]
    side = 0 if tiles[0] >= tiles[1] else 1
    lead, s = (lhs, sl) if side == 0 else (rhs, sr)
    batch, contract = (lb, lc) if side == 0 else (rb, rc)
    other_batch, other_contract = (rb, rc) if side == 0 else (lb, lc)
    other_rank = inst.operands[1 - side].shape.rank
    need = s.mapped(other_rank, {**dict(zip(batch, other_batch)), **dict(zip(contract, other_contract))})
    other, so = ops[1 - side]
    other = p.reshard(other, so, need, inst.name)
    out = dot_output_sharding(inst, s, side)
    x, y = (lead, other) if side == 0 else (other, lead)
    z = _clone(p, inst, [x, y], _local(inst.shape, out, inst))
    split = [d for d in contract if s.tile_dims[d] > 1]
    if split:       # a split contracting dimension: partial sums on each tile
        et = inst.shape.element_type
        z = p.all_reduce(z, s.groups_along(split), _add(p, et))
    return p.reshard(z, out, want, inst.name)


def _add(p: Partitioner, et: str):
    from .build import scalar_reducer
    return scalar_reducer(p.comp.parent, "add", et)


def _convolution(p, inst, ops, want):
    (x, sx), (k, sk) = ops
    dn = inst.attrs["dim_labels"]
    if inst.attrs.get("batch_group_count", 1) != 1 or any(t > 1 for d, t in enumerate(sx.tile_dims)
                                                           if d != dn.input_batch):
        return _whole(p, inst, ops, want)
    k = p.reshard(k, sk, Sharding.replicated(k.shape.rank, p.n), inst.name)
    out = sx.mapped(inst.shape.rank, {dn.input_batch: dn.output_batch})
    y = _clone(p, inst, [x, k], _local(inst.shape, out, inst))
    return p.reshard(y, out, want, inst.name)


def _along_dims(p, inst, ops, want):
    """slice / concatenate / pad / reverse on tiles split like `want` but whole along the dimensions they touch."""
    from ..hlo.attrs import SliceRange
    touched = touched_dims(inst)
    here = want.fold(touched)
    xs = [p.reshard(x, s, here if x.shape.rank else s, inst.name) for x, s in ops]
    attrs = {k: v for k, v in inst.attrs.items() if k != "sharding"}
    if inst.opcode == "slice":
        local = here.local_dims(inst.operands[0].shape.dims, f"{inst.name}: ")
        attrs["slice"] = tuple(r if d in touched else SliceRange(0, local[d], 1) for d, r in enumerate(attrs["slice"]))
    y = p.emit(inst.opcode, xs, attrs, shape=_local(inst.shape, here, inst))
    return p.reshard(y, here, want, inst.name)


def _gte(p, inst, ops, want):
    t, s = ops[0]
    i = inst.attrs["index"]
    have = s.elements[i]
    y = p.emit("get-tuple-element", [t], {"index": i}, shape=t.shape.tuple_shapes[i])
    return p.reshard(y, have, want, inst.name) if inst.shape.is_array else y


def _tuple(p, inst, ops, want):
    xs = [p.reshard(x, s, w, inst.name) if x.shape.is_array else x for (x, s), w in zip(ops, want.elements)]
    return p.emit("tuple", xs, shape=Shape.tuple_of([x.shape for x in xs]))


def _sharding_custom_call(p, inst, ops, want):
    if inst.attrs.get("custom_call_target") not in PASS_THROUGH:
        return _whole(p, inst, ops, want)
    x, s = ops[0]
    return p.reshard(x, s, want, inst.name)


def _constant(p, inst, ops, want):
    y = p.comp.add_instruction(Instruction("constant", inst.shape, (), {}, inst.name, literal=inst.literal))
    if not inst.shape.is_array:
        return y
    return p.reshard(y, Sharding.replicated(inst.shape.rank, p.n), want, inst.name)


RULES: dict[str, Callable] = {
    "broadcast": _broadcast, "transpose": _transpose, "reshape": _reshape, "reduce": _reduce, "dot": _dot,
    "convolution": _convolution, "get-tuple-element": _gte, "tuple": _tuple, "custom-call": _sharding_custom_call,
    "slice": _along_dims, "concatenate": _along_dims, "pad": _along_dims, "reverse": _along_dims,
    "constant": _constant,
    "select": _elementwise, "clamp": _elementwise, "convert": _elementwise, "compare": _elementwise,
    "copy": _elementwise, "bitcast-convert": _elementwise, "reduce-precision": _elementwise,
}


def partition_instruction(p: Partitioner, inst: Instruction, ops: list, want: Sharding) -> Instruction:
    rule = RULES.get(inst.opcode)
    if rule is None:
        rule = _elementwise if opinfo(inst.opcode).is_elementwise and inst.shape.is_array else _whole
    return rule(p, inst, ops, want)
