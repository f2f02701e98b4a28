"""ScatterExpander: scatter => a while loop that applies one update window per iteration (XLA:CPU expands every
scatter this way: cpu_compiler.cc adds ScatterExpander(kEliminateAllScatters)).

    scatter(operand, indices, updates) => for i in range(num_updates):
        starts  = index vector i mapped onto operand dims (batching dims take i's batch coordinates)
        window  = dynamic-slice(operand, starts)          # the update window's current values
        new     = in_bounds(starts) ? to_apply(window, update_i) : window
        operand = dynamic-update-slice(operand, new, starts)

An out-of-bounds window is skipped (XLA's semantics): it is written back unchanged at the clamped position
where it was read. The combiner is inlined on whole windows when it is elementwise (all JAX combiners are);
other combiners leave the scatter as it is.
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module, Shape
from .build import constant, emit
from .counted_loop import counted_loop, scalar_of
from .lift import lift_elementwise
from .pipeline import Pass


def _canonical_indices(comp: Computation, inst: Instruction) -> tuple[Instruction, list[int]]:
    """indices as [num_updates, K] (K = index vector size + one column per batching dim), and the operand dim
    each column indexes."""
    indices = inst.operands[len(inst.operands) // 2]
    a = inst.attrs
    ivd = a["index_vector_dim"]
    et = indices.shape.element_type
    if ivd == indices.shape.rank:
        indices = emit(comp, "reshape", [indices], shape=Shape.array(et, indices.shape.dims + (1,)))
    rank = indices.shape.rank
    batch = [d for d in range(rank) if d != ivd]
    if ivd != rank - 1:
        perm = tuple(batch + [ivd])
        indices = emit(comp, "transpose", [indices], {"dimensions": perm})
    batch_dims = indices.shape.dims[:-1]
    columns = [indices]
    operand_dims = list(a["scatter_dims_to_operand_dims"])
    for operand_dim, index_dim in zip(a.get("input_batching_dims", ()), a.get("scatter_indices_batching_dims", ())):
        iota = emit(comp, "iota", [], {"iota_dimension": batch.index(index_dim)},
                    shape=Shape.array(et, batch_dims + (1,)))
        columns.append(iota)
        operand_dims.append(operand_dim)
    if len(columns) > 1:
        indices = emit(comp, "concatenate", columns, {"dimensions": (len(batch_dims),)})
    n = 1
    for d in batch_dims:
        n *= d
    flat = emit(comp, "reshape", [indices], shape=Shape.array(et, (n, indices.shape.dims[-1])))
    return flat, operand_dims


def _canonical_updates(comp: Computation, inst: Instruction, update: Instruction, n: int,
                       window: tuple[int, ...]) -> Instruction:
    """updates as [num_updates, *window] where window has the operand's rank."""
    uwd = list(inst.attrs["update_window_dims"])
    scatter_dims = [d for d in range(update.shape.rank) if d not in uwd]
    perm = tuple(scatter_dims + uwd)
    if perm != tuple(range(update.shape.rank)):
        update = emit(comp, "transpose", [update], {"dimensions": perm})
    return emit(comp, "reshape", [update], shape=Shape.array(update.shape.element_type, (n,) + window))


def _window_shape(inst: Instruction, operand: Instruction, update: Instruction) -> tuple[int, ...]:
    a = inst.attrs
    unit = set(a["inserted_window_dims"]) | set(a.get("input_batching_dims", ()))
    sizes = iter(update.shape.dims[d] for d in a["update_window_dims"])
    return tuple(1 if d in unit else next(sizes) for d in range(operand.shape.rank))


def _expand(comp: Computation, inst: Instruction) -> list[Instruction] | None:
    n_ops = len(inst.operands) // 2
    operands, updates = inst.operands[:n_ops], inst.operands[n_ops + 1:]
    combiner = inst.attrs["to_apply"]
    window = _window_shape(inst, operands[0], updates[0])
    probe = Computation("probe")
    if lift_elementwise(probe, combiner, [Shape.array(o.shape.element_type, window) for o in operands * 2],
                        dry_run=True) is None:
        return None
    indices, operand_dims = _canonical_indices(comp, inst)
    n = indices.shape.dims[0]
    ups = [_canonical_updates(comp, inst, u, n, window) for u in updates]
    rank = operands[0].shape.rank

    def body(bc: Computation, i: Instruction, carried: list[Instruction]) -> list[Instruction]:
        ops, idx_all, ups_in = carried[:n_ops], carried[n_ops], carried[n_ops + 1:]
        k = idx_all.shape.dims[1]
        zero32 = constant(bc, 0, "s32")
        row = emit(bc, "dynamic-slice", [idx_all, i, zero32], {"dynamic_slice_sizes": (1, k)})
        row = emit(bc, "reshape", [row], shape=Shape.array(idx_all.shape.element_type, (k,)))
        row = emit(bc, "convert", [row], shape=Shape.array("s64", (k,)))
        zero64 = constant(bc, 0, "s64")
        starts = [zero64] * rank
        for col, d in enumerate(operand_dims):
            starts[d] = scalar_of(bc, row, col)
        fits = None
        for d in range(rank):
            limit = constant(bc, operands[0].shape.dims[d] - window[d], "s64")
            ok = emit(bc, "and", [emit(bc, "compare", [starts[d], zero64], {"direction": "GE"}),
                                  emit(bc, "compare", [starts[d], limit], {"direction": "LE"})])
            fits = ok if fits is None else emit(bc, "and", [fits, ok])
        zeros = [constant(bc, 0, "s32")] * rank
        update_vals = [emit(bc, "reshape", [emit(bc, "dynamic-slice", [u, i] + zeros,
                                                 {"dynamic_slice_sizes": (1,) + window})],
                            shape=Shape.array(u.shape.element_type, window)) for u in ups_in]
        current = [emit(bc, "dynamic-slice", [o] + starts, {"dynamic_slice_sizes": window}) for o in ops]
        combined = lift_elementwise(bc, combiner, current + update_vals)
        fits_b = emit(bc, "broadcast", [fits], {"dimensions": ()}, shape=Shape.array("pred", window))
        new_ops = []
        for o, cur, new in zip(ops, current, combined):
            chosen = emit(bc, "select", [fits_b, new, cur])
            new_ops.append(emit(bc, "dynamic-update-slice", [o, chosen] + starts))
        return new_ops + [idx_all] + ups_in

    results = counted_loop(comp, n, list(operands) + [indices] + ups, body, name="scatter")
    return results[:n_ops]


class ScatterExpander(Pass):
    name = "scatter_expander"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in list(module.computations):
            for inst in list(comp.instructions):
                if inst.opcode != "scatter":
                    continue
                results = _expand(comp, inst)
                if results is None:
                    continue
                if inst.shape.is_tuple:
                    repl = emit(comp, "tuple", results, shape=inst.shape)
                else:
                    repl = results[0]
                inst.replace_all_uses_with(repl)
                changed = True
        return changed
