"""Emitting scatter: one loop over the update windows, in place into the operand's buffer where that is safe.

XLA's scatter (operation_semantics.md) combines every element of `updates` into the operand:

    for s in the scatter positions of updates (its dims not in update_window_dims), in row-major order:
        start[d] = index vector of s, component k        d == scatter_dims_to_operand_dims[k]
                   s's coordinate at its batching partner  d == input_batching_dims[i]
                   0                                       otherwise
        skip s unless the whole window fits: 0 <= start[d] <= operand_dim[d] - window_size[d] for every d
        for w in the window (update_window_dims onto the operand dims neither inserted nor batching):
            out[start + w] = to_apply(out[start + w], updates[s, w])        (all n operands at once)

The combiner (`to_apply`, any scalar computation of 2n parameters, a fusion inside it included: TF's optimized
dumps have those) is an internal LLVM function, as sort's comparator is; LLVM inlines it. Updates run in order,
so unique_indices / indices_are_sorted (hints that let XLA reorder them) need nothing here.

Where the result lives:
- in the operand's own buffer, when the buffer assignment lets the scatter overwrite it (the value is dead
  afterwards, not a parameter of the entry, not the result buffer: emitter.may_update_in_place's rule); only
  the windows are written;
- else in a new buffer that first receives a copy of the operand (memcpy when the layouts agree).
A fusion whose root is a scatter (XLA's `wrapped_scatter_computation`) works the same way: its operands and
indices/updates producers are read through the fused generators, and the operand parameter is updated in place
when the fused computation reads it nowhere else.
"""
from __future__ import annotations

import itertools
from typing import Sequence

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Computation, Instruction
from ...hlo.shape import Shape
from . import buffer_assignment
from .buffers import BufferRef, ValueTree, leaves
from .elemental import TABLE, Generator
from .elemental_gather import index_to_i64
from .indexing import linear_index, major_to_minor
from .irhelpers import I1, i64, if_then, loop_nest, mark_ftz
from .loops import emit_loop
from .types import load_element, store_element, value_type

_names = itertools.count()


# -- the combiner ----------------------------------------------------------------------------------------
def _scalar_values(em, comp: Computation, args: Sequence[ir.Value]):
    """comp's root value over the scalar `args`, emitted at em.b; a fusion inside comp is emitted inline."""
    values: dict[int, object] = {}
    for inst in comp.post_order():
        operands = [values[id(o)] for o in inst.operands]
        if inst.opcode == "parameter":
            values[id(inst)] = args[inst.parameter_number]
        elif inst.opcode == "fusion":
            values[id(inst)] = _scalar_values(em, inst.attrs["calls"], operands)
        elif inst.opcode in TABLE:
            gens = [lambda index, v=v: v for v in operands]
            values[id(inst)] = em.elemental.generator(inst, gens)([])
        else:
            raise UnimplementedError(f"cpu backend: scatter combiner {comp.name}: opcode {inst.opcode} "
                                     f"(instruction {inst.name})")
    return values[id(comp.root)]


def combiner_function(em, scatter: Instruction, ptypes: Sequence) -> ir.Function:
    """`to_apply` as an internal function (old_0..old_{n-1}, update_0..update_{n-1}) -> new value (a struct of n
    values when n > 1)."""
    types = [value_type(pt) for pt in ptypes]
    ret = types[0] if len(types) == 1 else ir.LiteralStructType(types)
    fn = ir.Function(em.b.module, ir.FunctionType(ret, types + types), f"scatter.{scatter.name}.{next(_names)}")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    mark_ftz(fn)
    fb = ir.IRBuilder(fn.append_basic_block("entry"))
    saved = em.b, em.elemental.b
    em.b = em.elemental.b = fb          # constants and scalar ops emit into the combiner's body
    try:
        result = _scalar_values(em, scatter.attrs["to_apply"], list(fn.args))
    finally:
        em.b, em.elemental.b = saved
    results = list(result) if isinstance(result, tuple) else [result]
    if len(results) != len(types) or any(r.type != t for r, t in zip(results, types)):
        raise UnimplementedError(f"cpu backend: scatter {scatter.name}: combiner does not return the operand types")
    if len(results) == 1:
        fb.ret(results[0])
    else:
        agg = ir.Constant(ret, ir.Undefined)
        for k, r in enumerate(results):
            agg = fb.insert_value(agg, r, k)
        fb.ret(agg)
    return fn


def _combine(b: ir.IRBuilder, fn: ir.Function, old: list, new: list) -> list:
    result = b.call(fn, old + new)
    if len(old) == 1:
        return [result]
    return [b.extract_value(result, k) for k in range(len(old))]


# -- the loop --------------------------------------------------------------------------------------------
def _emit_updates(em, scatter: Instruction, outs: Sequence[BufferRef], index_gen: Generator,
                  update_gens: Sequence[Generator]) -> None:
    """Apply every update window of `scatter` to the buffers `outs` (which already hold the operands)."""
    b = em.b
    a = scatter.attrs
    n = len(outs)
    indices = scatter.operands[n].shape
    updates = scatter.operands[n + 1].shape
    operand = outs[0].shape
    rank = operand.rank
    window_dims = [int(d) for d in a.get("update_window_dims", ())]
    inserted = {int(d) for d in a.get("inserted_window_dims", ())}
    batching = [int(d) for d in a.get("input_batching_dims", ())]
    indices_batching = [int(d) for d in a.get("scatter_indices_batching_dims", ())]
    index_map = [int(d) for d in a.get("scatter_dims_to_operand_dims", ())]
    ivd = int(a["index_vector_dim"])
    scatter_dims = [d for d in range(updates.rank) if d not in window_dims]
    window_operand = [d for d in range(rank) if d not in inserted and d not in batching]
    size = [1] * rank
    for d, ud in zip(window_operand, window_dims):
        size[d] = updates.dims[ud]
    if updates.numel == 0 or any(operand.dims[d] < size[d] for d in range(rank)):
        return                                       # no update, or no window fits anywhere
    combine = combiner_function(em, scatter, [o.shape.ptype for o in outs])
    kind = indices.ptype.kind

    with loop_nest(b, [updates.dims[d] for d in scatter_dims], name="scatter") as svs:
        def index_at(component: int) -> list:
            return list(svs) if ivd >= indices.rank else list(svs[:ivd]) + [i64(component)] + list(svs[ivd:])
        starts: list = [i64(0)] * rank
        unsigned = [False] * rank
        for k, d in enumerate(index_map):
            starts[d], unsigned[d] = index_to_i64(b, index_gen(index_at(k)), kind)
        for d, ib in zip(batching, indices_batching):
            starts[d] = svs[ib if ib < ivd else ib - 1]
        fits = ir.Constant(I1, 1)
        for d in range(rank):
            hi = i64(operand.dims[d] - size[d])
            if unsigned[d]:
                ok = b.icmp_unsigned("<=", starts[d], hi)
            else:
                ok = b.and_(b.icmp_signed(">=", starts[d], i64(0)), b.icmp_signed("<=", starts[d], hi))
            fits = b.and_(fits, ok)
        with if_then(b, fits, name="scatter.fits"):
            with loop_nest(b, [updates.dims[d] for d in window_dims], name="window") as wvs:
                target = list(starts)
                for d, w in zip(window_operand, wvs):
                    target[d] = b.add(starts[d], w, flags=["nsw", "nuw"])
                update_index: list = [None] * updates.rank
                for d, v in zip(scatter_dims, svs):
                    update_index[d] = v
                for d, w in zip(window_dims, wvs):
                    update_index[d] = w
                offsets = [linear_index(b, target, out.shape) for out in outs]
                old = [load_element(b, out.pointer, out.shape.ptype, off) for out, off in zip(outs, offsets)]
                new = _combine(b, combine, old, [g(update_index) for g in update_gens])
                for out, off, value in zip(outs, offsets, new):
                    store_element(b, out.pointer, out.shape.ptype, off, value)


# -- where the result goes -------------------------------------------------------------------------------
def _may_overwrite(em, inst: Instruction, operand_number: int, source: ValueTree, result: Shape, leaf: int) -> bool:
    """May `inst` write result leaf `leaf` into the buffer of its operand `operand_number` (emitter.
    may_update_in_place's rule for one leaf of a possibly tuple-shaped result)?"""
    aliasing = em.assignment.current
    return (buffer_assignment.IN_PLACE_UPDATES and aliasing is not None and isinstance(source, BufferRef)
            and id(inst) in aliasing.position and (id(inst), leaf) not in em.targets
            and source.shape.dims == result.dims and major_to_minor(source.shape) == major_to_minor(result)
            and aliasing.can_overwrite(inst, operand_number))


def _result_buffers(em, inst: Instruction, sources: Sequence[tuple[int | None, ValueTree, Generator]]) -> list:
    """One buffer per result leaf holding the scatter's operand: the operand's buffer itself where inst may
    overwrite it, else a new buffer (inst's preassigned one, if any) filled with a copy. sources: per leaf, the
    operand number of inst whose buffer holds it (None: computed inside a fusion), that buffer, its generator."""
    shapes = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    in_place = [number is not None and _may_overwrite(em, inst, number, value, shape, k)
                for k, ((number, value, _), shape) in enumerate(zip(sources, shapes))]
    fresh = leaves(em.new_tree(inst.shape, inst)) if not all(in_place) else []
    outs = []
    for k, ((_, value, gen), shape) in enumerate(zip(sources, shapes)):
        if in_place[k]:
            outs.append(BufferRef(value.pointer, shape))
            continue
        out = fresh[k]
        if isinstance(value, BufferRef):
            em.copy_leaf(value, out)
        else:
            emit_loop(em.b, out.shape, gen, [out])
        outs.append(out)
    return outs


def _value(inst: Instruction, outs: list) -> ValueTree:
    return tuple(outs) if inst.shape.is_tuple else outs[0]


def scatter(em, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
    """A top-level scatter (operands: n operand buffers, the indices, n update buffers)."""
    n = (len(inst.operands) - 1) // 2
    for k, op in enumerate(operands):
        if not isinstance(op, BufferRef):
            raise UnimplementedError(f"cpu backend: scatter {inst.name}: operand {k} is not an array")
    outs = _result_buffers(em, inst, [(k, operands[k], None) for k in range(n)])
    _emit_updates(em, inst, outs, em.generator_of(operands[n]), [em.generator_of(u) for u in operands[n + 1:]])
    return _value(inst, outs)


def scatter_fusion(em, fusion: Instruction, operands: list[ValueTree]) -> ValueTree | None:
    """A fusion whose root is a scatter; None when a fused producer is not elemental (the fusion is then
    emitted the generic way, which materializes the producers and calls `scatter`)."""
    comp = fusion.attrs["calls"]
    root = comp.root
    gens: dict[int, Generator] = {}
    for inst in comp.post_order():
        if inst is root:
            continue
        if inst.opcode == "parameter":
            gens[id(inst)] = em.generator_of(operands[inst.parameter_number])
        elif inst.opcode in TABLE:
            gens[id(inst)] = em.elemental.generator(inst, [gens[id(o)] for o in inst.operands])
        else:
            return None
    n = (len(root.operands) - 1) // 2
    sources = []
    for op in root.operands[:n]:
        # the fused computation must read the parameter nowhere else, or an update could change what it reads
        own = op.opcode == "parameter" and op.users == [root] and root.operands.count(op) == 1
        number = op.parameter_number if own else None
        sources.append((number, operands[number] if own else None, gens[id(op)]))
    outs = _result_buffers(em, fusion, sources)
    _emit_updates(em, root, outs, gens[id(root.operands[n])], [gens[id(u)] for u in root.operands[n + 1:]])
    return _value(fusion, outs)
