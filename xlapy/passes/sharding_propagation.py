"""ShardingPropagation: give every instruction of the entry computation a sharding, from the annotated ones
(parameters, the root, `custom-call(x), custom_call_target="Sharding"` from with_sharding_constraint).

Forward, in post order; an annotated instruction keeps its annotation (the partitioner reshards into it). Then
backward, users first: an elementwise op or broadcast forward left replicated takes the split sharding all its
users want (`_backward`). The forward rules, by opcode (`spmd_sharding.py` has the tile arithmetic):

    elementwise             the operand sharding with the most tiles (same rank)
    broadcast / transpose   the operand's, its dimensions mapped / permuted
    reshape                 a split dimension stays split when it is the major one of its group of equal
                            element counts and the group's major result dimension divides into its tiles
                            ([8,6] split 2 -> [2,4,6] split 2 on dimension 0); the others whole
    reduce                  the operand's on the kept dimensions (the reduced ones become replication)
    dot                     batch and free dimensions from the operand with more tiles (contracting tiles
                            become replication: the partitioner all-reduces them)
    convolution             the input's batch split
    slice / concatenate / pad / reverse   the operand's split, the dimensions they work along whole
    tuple / get-tuple-elt   element-wise
    anything else           replicated

The pass runs only on modules with num_partitions > 1 that carry a sharding somewhere (XLA's
use_spmd_partitioning); the shardings are written as `sharding={...}` attributes, as XLA prints them.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..hlo import Instruction, Module, opinfo
from .pipeline import Pass
from .spmd_sharding import Sharding, ShardingError, sharding_of


# custom-calls that only mark a value (JAX's with_sharding_constraint; Shardy's result marker): the value itself
PASS_THROUGH = frozenset({"Sharding", "xla.sdy.FuncResultSharding"})


def num_partitions(module: Module) -> int:
    return int(module.attrs.get("num_partitions", 1) or 1)


def has_shardings(module: Module) -> bool:
    return module.entry is not None and any("sharding" in i.attrs for i in module.entry.instructions)


def reshape_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """The dimensions of a reshape in groups of equal element counts (src dims, dst dims), in order."""
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        gi, gj, ps, pd = [], [], 1, 1
        while True:
            if ps <= pd and i < len(src) and (ps < pd or not gi or src[i] == 1):
                gi.append(i); ps *= src[i]; i += 1
            elif j < len(dst) and (pd < ps or not gj or dst[j] == 1):
                gj.append(j); pd *= dst[j]; j += 1
            elif i < len(src) and ps == pd and not gi:
                gi.append(i); ps *= src[i]; i += 1
            else:
                break
            if ps == pd and gi and gj and (i >= len(src) or src[i] != 1) and (j >= len(dst) or dst[j] != 1):
                break
        groups.append((gi, gj))
        if not gi and not gj:
            break
    return groups


def reshape_dim_map(src: Sequence[int], dst: Sequence[int], tiles: Sequence[int]) -> dict[int, int]:
    """src dim -> dst dim for each split dimension a reshape keeps split: the major (first non-1) dimension of
    its group of equal element counts, the only split one there, onto the group's major dst dimension when that
    divides into as many tiles (a tile is then the same run of elements on both sides)."""
    out = {}
    for gi, gj in reshape_groups(src, dst):
        split = [d for d in gi if tiles[d] > 1]
        if len(split) != 1:
            continue
        major_src = next((d for d in gi if src[d] != 1), None)
        major_dst = next((d for d in gj if dst[d] != 1), None)
        d = split[0]
        if d == major_src and major_dst is not None and dst[major_dst] % tiles[d] == 0:
            out[d] = major_dst
    return out


def _rank(inst: Instruction) -> int:
    return inst.shape.rank if inst.shape.is_array else 0


def _most_tiled(shardings: list[Sharding], rank: int, n: int) -> Sharding:
    best = None
    for s in shardings:
        if s.is_tuple or s.rank != rank:
            continue
        if best is None or s.num_devices // s.tiles.shape[-1] > best.num_devices // best.tiles.shape[-1]:
            best = s
    return best if best is not None else Sharding.replicated(rank, n)


def dot_dims(inst: Instruction) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """(lhs batch, lhs contracting, lhs free, rhs batch, rhs contracting, rhs free) of a dot."""
    a = inst.attrs
    lb, lc = list(a.get("lhs_batch_dims", ())), list(a.get("lhs_contracting_dims", ()))
    rb, rc = list(a.get("rhs_batch_dims", ())), list(a.get("rhs_contracting_dims", ()))
    lf = [d for d in range(inst.operands[0].shape.rank) if d not in lb + lc]
    rf = [d for d in range(inst.operands[1].shape.rank) if d not in rb + rc]
    return lb, lc, lf, rb, rc, rf


def dot_output_sharding(inst: Instruction, s: Sharding, side: int) -> Sharding:
    """The output sharding of a dot computed from operand `side`'s sharding `s` (contracting tiles folded)."""
    lb, lc, lf, rb, rc, rf = dot_dims(inst)
    batch, free = (lb, lf) if side == 0 else (rb, rf)
    offset = len(lb) if side == 0 else len(lb) + len(lf)
    dim_map = {d: k for k, d in enumerate(batch)}
    dim_map.update({d: offset + k for k, d in enumerate(free)})
    return s.mapped(inst.shape.rank, dim_map)


def _elementwise(inst, ops, n):
    return _most_tiled(ops, _rank(inst), n)


def _broadcast(inst, ops, n):
    return ops[0].mapped(inst.shape.rank, {i: d for i, d in enumerate(inst.attrs.get("dimensions", ()))})


def _transpose(inst, ops, n):
    return ops[0].permuted(inst.attrs["dimensions"])


def _reshape(inst, ops, n):
    return ops[0].mapped(inst.shape.rank, reshape_dim_map(inst.operands[0].shape.dims, inst.shape.dims,
                                                          ops[0].tile_dims))


def _reduce(inst, ops, n):
    if inst.shape.is_tuple:
        return _replicated(inst, ops, n)
    dims = inst.attrs.get("dimensions", ())
    kept = [d for d in range(inst.operands[0].shape.rank) if d not in dims]
    return ops[0].mapped(inst.shape.rank, {d: k for k, d in enumerate(kept)})


def _dot(inst, ops, n):
    tiles = [s.num_devices // s.tiles.shape[-1] for s in ops[:2]]
    side = 0 if tiles[0] >= tiles[1] else 1
    return dot_output_sharding(inst, ops[side], side)


def _convolution(inst, ops, n):
    dn = inst.attrs["dim_labels"]
    return ops[0].mapped(inst.shape.rank, {dn.input_batch: dn.output_batch})


def touched_dims(inst: Instruction) -> list[int]:
    """The dimensions a slice / concatenate / pad / reverse works along (they must be whole); [] otherwise."""
    op = inst.opcode
    if op == "slice":
        dims = inst.operands[0].shape.dims
        return [d for d, r in enumerate(inst.attrs["slice"]) if (r.start, r.limit, r.stride) != (0, dims[d], 1)]
    if op == "pad":
        return [d for d, p in enumerate(inst.attrs["padding"]) if (p.low, p.high, p.interior) != (0, 0, 0)]
    if op in ("concatenate", "reverse"):
        return list(inst.attrs.get("dimensions", ()))
    return []


def _along_dims(inst, ops, n):
    """slice / concatenate / pad / reverse: the operand's split, the dimensions they work along whole."""
    best = _most_tiled(ops if inst.opcode == "concatenate" else ops[:1], inst.shape.rank, n)
    return best.fold(touched_dims(inst))


def _gte(inst, ops, n):
    return ops[0].elements[inst.attrs["index"]] if ops[0].is_tuple else _replicated(inst, ops, n)


def _tuple(inst, ops, n):
    return Sharding(ops[0].tiles if ops else None, tuple(ops))


def _replicated(inst, ops, n):
    return replicated_like(inst.shape, n)


def replicated_like(shape, n: int) -> Sharding:
    if shape.is_tuple:
        import numpy as np
        return Sharding(np.zeros(1), tuple(replicated_like(s, n) for s in shape.tuple_shapes))
    return Sharding.replicated(shape.rank if shape.is_array else 0, n)


RULES: dict[str, Callable] = {
    "broadcast": _broadcast, "transpose": _transpose, "reshape": _reshape, "reduce": _reduce, "dot": _dot,
    "convolution": _convolution, "get-tuple-element": _gte, "tuple": _tuple,
    "slice": _along_dims, "concatenate": _along_dims, "pad": _along_dims, "reverse": _along_dims,
    "select": _elementwise, "clamp": _elementwise, "convert": _elementwise, "compare": _elementwise,
    "copy": _elementwise, "bitcast-convert": _elementwise, "reduce-precision": _elementwise,
}


def rule_for(opcode: str) -> Callable:
    rule = RULES.get(opcode)
    if rule is None:
        rule = _elementwise if opinfo(opcode).is_elementwise else _replicated
    return rule


def annotated(inst: Instruction, n: int) -> Sharding | None:
    text = inst.attrs.get("sharding")
    if text is None:
        return None
    try:
        return sharding_of(text, inst.shape, n)
    except ShardingError as e:
        raise ShardingError(f"{inst.name}: {e}") from None


def _wants(user: Instruction, shardings: dict[int, Sharding], rank: int) -> Sharding | None:
    """The sharding `user` wants an operand of this rank in, where it takes the operand in its own sharding (an
    elementwise op, a sharding marker); None where it takes it otherwise."""
    s = shardings[id(user)]
    marker = user.opcode == "custom-call" and user.attrs.get("custom_call_target") in PASS_THROUGH
    if not (marker or rule_for(user.opcode) is _elementwise) or s.is_tuple or s.rank != rank:
        return None
    return s


def _backward(order: list[Instruction], out: dict[int, Sharding], n: int) -> None:
    """XLA's propagation from users, for elementwise ops and broadcasts: an unannotated one that forward left
    replicated takes the split sharding every one of its users wants it in (users first, so a chain takes it
    back to its annotated inputs). It then computes only its tile (its replicated operands sliced, a broadcast
    made at its tile's shape: no collective) instead of the whole value sliced after it."""
    users: dict[int, list[Instruction]] = {}
    for inst in order:
        for o in inst.operands:
            users.setdefault(id(o), []).append(inst)
    for inst in reversed(order):
        s = out[id(inst)]
        if "sharding" in inst.attrs or not inst.shape.is_array or not s.is_replicated or id(inst) not in users or \
                not (inst.opcode == "broadcast" or rule_for(inst.opcode) is _elementwise):
            continue
        wants = [_wants(u, out, inst.shape.rank) for u in users[id(inst)]]
        if wants[0] is not None and not wants[0].is_replicated and all(w == wants[0] for w in wants):
            out[id(inst)] = wants[0]


def propagate(module: Module) -> dict[int, Sharding]:
    """id(instruction) -> its sharding, for every instruction of the entry computation: forward, then backward
    for elementwise ops (`_backward`)."""
    n = num_partitions(module)
    out: dict[int, Sharding] = {}
    order = module.entry.post_order()
    for inst in order:
        given = annotated(inst, n)
        if given is not None:
            out[id(inst)] = given
            continue
        ops = [out[id(o)] for o in inst.operands]
        if inst.opcode == "custom-call" and inst.attrs.get("custom_call_target") in PASS_THROUGH:
            out[id(inst)] = ops[0]
            continue
        try:
            out[id(inst)] = rule_for(inst.opcode)(inst, ops, n)
        except (ShardingError, KeyError, IndexError, ValueError):
            out[id(inst)] = replicated_like(inst.shape, n)
    _backward(order, out, n)
    return out


class ShardingPropagation(Pass):
    name = "sharding-propagation"

    def run(self, module: Module) -> bool:
        if num_partitions(module) <= 1 or not has_shardings(module):
            return False
        shardings = propagate(module)
        changed = False
        for inst in module.entry.instructions:
            if "sharding" not in inst.attrs:
                inst.attrs["sharding"] = shardings[id(inst)].to_text()
                changed = True
        return changed
