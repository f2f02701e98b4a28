"""Gather as an index remapping generator, so it fuses with its producers and consumers like slice does.

An output index splits into batch coordinates (the dimensions not in offset_dims) and window offsets (the
offset_dims, in order, for the operand dimensions that are neither collapsed nor batching). The batch
coordinates pick an index vector of start_indices; for each operand dimension d the window start is

  - component k of the index vector        when d == start_index_map[k]
  - the batch coordinate of its partner    when d is the i-th operand_batching_dim
  - 0                                      otherwise,

clamped to [0, operand_dim - slice_size] (XLA clamps gather starts; the interpreter's gather_scatter.py).
"""
from __future__ import annotations

from llvmlite import ir

from .irhelpers import I64, i64


def index_to_i64(b: ir.IRBuilder, value: ir.Value, kind: str) -> tuple[ir.Value, bool]:
    """An index value as i64, and whether it must be compared as unsigned (a u64 index)."""
    width = value.type.width
    if width < 64:
        return (b.sext(value, I64) if kind == "int" else b.zext(value, I64)), False
    return value, kind == "uint"


def clamp_start(b: ir.IRBuilder, value: ir.Value, unsigned: bool, hi: int) -> ir.Value:
    """value clamped into [0, hi]."""
    if unsigned:
        return b.select(b.icmp_unsigned(">", value, i64(hi)), i64(hi), value)
    value = b.select(b.icmp_signed("<", value, i64(0)), i64(0), value)
    return b.select(b.icmp_signed(">", value, i64(hi)), i64(hi), value)


def gather(em, inst, gens):
    a = inst.attrs
    operand, indices = inst.operands[0].shape, inst.operands[1].shape
    offset_dims = tuple(a.get("offset_dims", ()))
    collapsed = set(a.get("collapsed_slice_dims", ()))
    operand_batching = tuple(a.get("operand_batching_dims", ()))
    indices_batching = tuple(a.get("start_indices_batching_dims", ()))
    start_index_map = tuple(a.get("start_index_map", ()))
    slice_sizes = tuple(a["slice_sizes"])
    ivd = int(a["index_vector_dim"])
    kind = indices.ptype.kind
    b = em.b
    rank = operand.rank
    window_dims = [d for d in range(rank) if d not in collapsed and d not in operand_batching]
    batch_out_dims = [d for d in range(inst.shape.rank) if d not in offset_dims]

    def gen(index):
        batch = [index[d] for d in batch_out_dims]

        def indices_at(component):
            """The start_indices index of the batch position, with `component` at index_vector_dim."""
            if ivd >= indices.rank:
                return list(batch)
            return list(batch[:ivd]) + [i64(component)] + list(batch[ivd:])

        starts = [i64(0)] * rank
        unsigned = [False] * rank
        for k, d in enumerate(start_index_map):
            starts[d], unsigned[d] = index_to_i64(b, gens[1](indices_at(k)), kind)
        for d, bd in zip(operand_batching, indices_batching):
            starts[d] = batch[bd if bd < ivd else bd - 1]
        full = []
        offsets = dict(zip(window_dims, (index[d] for d in offset_dims)))
        for d in range(rank):
            hi = max(operand.dims[d] - slice_sizes[d], 0)
            s = starts[d] if d in operand_batching else clamp_start(b, starts[d], unsigned[d], hi)
            full.append(b.add(s, offsets[d]) if d in offsets else s)
        return gens[0](full)
    return gen
