"""DynamicPadder (XLA's pass of that name): runs HLO with dynamic dimensions (`f32[<=8]`, set-dimension-size,
get-dimension-size, dynamic-reshape: what TF emits around top_k, sort, boolean_mask, where) on static shapes.

Every buffer keeps its bound size, the valid elements first and the rest undefined: XLA's padding semantics.
dynamic_dimensions.py tracks each dynamic dimension's size as an s32 instruction; the ops whose results would
read the padding are rewritten so that they do not:

| op | rewrite |
|---|---|
| reduce, reduce-window over a dynamic dimension | each input's padding set to its init: select(iota < size, x, init) |
| dot contracting a dynamic dimension | the padding of that operand replaced by 0 |
| sort along a dynamic dimension | one more operand, iota < size, and a comparator that puts the padding last |
| concatenate along a dynamic dimension | each operand written at the sum of the sizes before it (dynamic-update-slice) |
| scatter with dynamic updates | the indices of padded updates moved out of bounds, so the updates are skipped |
| dynamic-update-slice with a dynamic update | the update's padding replaced by the elements it would overwrite |
| conditional whose branches return dynamic dimensions | each branch returns (value, (sizes...)); the sizes are read back |
| get-dimension-size | the size (a constant where the dimension is static) |
| set-dimension-size | its operand (the data does not move) |
| dynamic-reshape | a reshape, when the valid elements are a prefix in and out (the dynamic dimension is the major one) |

Then no shape keeps a dynamic flag. A dynamic result of the entry comes back at its bound, the valid elements
first; the caller sees its size only where the module returns it. Elementwise ops, reshapes, transposes,
slices and gathers need no rewrite: they read only valid elements for valid results. An op whose dynamic
operand has no rule (a while loop carrying one, a reverse along one, ...) is an UnimplementedError naming it,
and so is a call returning a dynamic result: the pass wants calls inlined first, as the CPU pipeline does.
"""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from ..hlo import Computation, Instruction, Module, Shape
from .builder import Builder
from .build import new_computation, parameter
from .dynamic_dimensions import SizeMath, Sizes, infer, is_dynamic, static, unsupported
from .op_expander import non_fusion_computations
from .pipeline import Pass

_MARKERS = ("set-dimension-size", "get-dimension-size", "dynamic-reshape")


class _Context:
    def __init__(self, comp: Computation):
        self.comp = comp
        self.b = Builder(comp)
        self.sm = SizeMath(self.b)

    def valid(self, dims: tuple[int, ...], sizes: Sizes, which) -> Instruction | None:
        """pred[dims]: true on the valid elements of the dimensions `which` (those of them that are dynamic)."""
        b, pred = self.b, None
        for d in which:
            if sizes[d] is None:
                continue
            iota = b.emit("iota", [], {"iota_dimension": d}, shape=Shape.array("s32", dims))
            bound = b.emit("broadcast", [sizes[d]], {"dimensions": ()}, shape=Shape.array("s32", dims))
            below = b.compare(iota, bound, "LT")
            pred = below if pred is None else b.emit("and", [pred, below])
        return pred

    def mask(self, x: Instruction, sizes: Sizes, which, fill: Instruction) -> Instruction:
        """x with the padding of the dimensions `which` replaced by the scalar `fill`."""
        pred = self.valid(x.shape.dims, sizes, which)
        if pred is None:
            return x
        filler = self.b.emit("broadcast", [fill], {"dimensions": ()}, shape=Shape.array(x.shape.element_type,
                                                                                         x.shape.dims))
        return self.b.select(pred, x, filler)

    def zero(self, element_type: str) -> Instruction:
        return self.b.scalar(0, element_type)


# -- rewrites: fn(ctx, inst, operand sizes) -> a replacement for inst, or None (inst kept, maybe re-wired) ----
def _reduce(ctx: _Context, inst: Instruction, ops: list) -> None:
    n = len(inst.operands) // 2
    dims = inst.attrs["dimensions"] if inst.opcode == "reduce" else range(inst.operands[0].shape.rank)
    for k in range(n):
        inst.replace_operand_with(k, ctx.mask(inst.operands[k], ops[k], dims, inst.operands[n + k]))


def _dot(ctx: _Context, inst: Instruction, ops: list) -> None:
    for k, side in enumerate(("lhs", "rhs")):
        x = inst.operands[k]
        contracting = inst.attrs.get(f"{side}_contracting_dims", ())
        inst.replace_operand_with(k, ctx.mask(x, ops[k], contracting, ctx.zero(x.shape.element_type)))


def _concatenate(ctx: _Context, inst: Instruction, ops: list) -> Instruction | None:
    c = inst.attrs["dimensions"][0]
    if all(sizes[c] is None for sizes in ops[:-1]):
        return None                  # only the last operand ends early: the others are already in place
    b, sm = ctx.b, ctx.sm
    et = inst.shape.element_type
    out = b.emit("broadcast", [ctx.zero(et)], {"dimensions": ()}, shape=Shape.array(et, inst.shape.dims))
    offset: Instruction | int = 0
    for x, sizes in zip(inst.operands, ops):
        starts = [sm.value(0)] * inst.shape.rank
        starts[c] = sm.value(offset)
        out = b.emit("dynamic-update-slice", [out, x] + starts)
        part = sizes[c] if sizes[c] is not None else x.shape.dims[c]
        offset = part if isinstance(offset, int) and offset == 0 else sm.add(offset, part)
    return out


def _sort(ctx: _Context, inst: Instruction, ops: list) -> Instruction | None:
    d = inst.attrs["dimensions"][0]
    sizes = ops[0]
    if sizes[d] is None:
        return None
    b = ctx.b
    dims = inst.operands[0].shape.dims
    valid = ctx.valid(dims, sizes, [d])
    n = len(inst.operands)
    comparator = _padding_last(ctx.comp.parent, inst.attrs["to_apply"], n)
    leaves = [o.shape for o in inst.operands] + [valid.shape]
    attrs = {**inst.attrs, "to_apply": comparator}
    new = b.emit("sort", list(inst.operands) + [valid], attrs, shape=Shape.tuple_of(leaves))
    if not inst.shape.is_tuple:
        return b.gte(new, 0)
    return b.tuple([b.gte(new, i) for i in range(n)])


def _padding_last(module: Module, old: Computation, n: int) -> Computation:
    """old's comparator with a (valid_lhs, valid_rhs) pred pair appended: valid elements order by old, and every
    valid element comes before every padding element."""
    comp = new_computation(module, f"{old.name}.padding_last", first=True)
    mapping: dict[int, Instruction] = {}
    for p in old.parameters:
        mapping[id(p)] = parameter(comp, p.parameter_number, p.shape, p.name)
    lhs_valid = parameter(comp, 2 * n, Shape.scalar("pred"), "lhs_valid")
    rhs_valid = parameter(comp, 2 * n + 1, Shape.scalar("pred"), "rhs_valid")
    for inst in old.post_order():
        if inst.opcode != "parameter":
            mapping[id(inst)] = comp.add_instruction(inst.clone_with([mapping[id(o)] for o in inst.operands]))
    b = Builder(comp)
    both = b.emit("and", [lhs_valid, rhs_valid])
    only_lhs = b.emit("and", [lhs_valid, b.emit("not", [rhs_valid])])
    comp.root = b.select(both, mapping[id(old.root)], only_lhs)
    return comp


def _scatter(ctx: _Context, inst: Instruction, ops: list) -> None:
    n = (len(inst.operands) - 1) // 2
    indices, updates = inst.operands[n], inst.operands[n + 1]
    window = set(inst.attrs.get("update_window_dims", ()))
    scatter_dims = [d for d in range(updates.shape.rank) if d not in window]
    if any(ops[n + 1 + k][d] is not None for k in range(n) for d in window):
        raise unsupported(inst, "a dynamic update window")
    ivd = int(inst.attrs["index_vector_dim"])
    index_dims = [d for d in range(indices.shape.rank) if d != ivd]
    index_sizes: list = [None] * indices.shape.rank
    for sd, idx_d in zip(scatter_dims, index_dims):
        index_sizes[idx_d] = ops[n + 1][sd]
    pred = ctx.valid(indices.shape.dims, tuple(index_sizes), index_dims)
    if pred is None:
        return
    dt = indices.shape.dtype
    far = min(max(inst.shape.leaves()[0].dims, default=0), int(np.iinfo(dt).max))   # out of bounds: skipped
    filler = ctx.b.emit("broadcast", [ctx.b.scalar(far, indices.shape.element_type)], {"dimensions": ()},
                        shape=Shape.array(indices.shape.element_type, indices.shape.dims))
    inst.replace_operand_with(n, ctx.b.select(pred, indices, filler))


def _dynamic_update_slice(ctx: _Context, inst: Instruction, ops: list) -> None:
    update = inst.operands[1]
    pred = ctx.valid(update.shape.dims, ops[1], range(update.shape.rank))
    if pred is None:
        return
    old = ctx.b.emit("dynamic-slice", [inst.operands[0]] + list(inst.operands[2:]),
                     {"dynamic_slice_sizes": tuple(update.shape.dims)})
    inst.replace_operand_with(1, ctx.b.select(pred, update, old))


def _leaf_sizes(shape: Shape, sizes: Sizes, path: tuple = ()) -> list[tuple[tuple, Shape, Sizes]]:
    """(tuple index path, array shape, its Sizes) of every array leaf."""
    if shape.is_tuple:
        return [leaf for k, s in enumerate(shape.tuple_shapes) for leaf in _leaf_sizes(s, sizes[k], path + (k,))]
    return [(path, shape, sizes)] if shape.is_array else []


def _with_sizes(shape: Shape, found: dict, path: tuple = ()) -> Sizes:
    """Sizes of `shape` whose (path, dim) entries in `found` are dynamic, the rest static."""
    if shape.is_tuple:
        return tuple(_with_sizes(s, found, path + (k,)) for k, s in enumerate(shape.tuple_shapes))
    return tuple(found.get((path, d)) for d in range(shape.rank if shape.is_array else 0))


def _conditional(ctx: _Context, inst: Instruction, branch_sizes: list[Sizes]) -> tuple[Instruction, Sizes] | None:
    """A conditional whose branches return dynamic dimensions: each branch returns (its value, (its sizes...))
    instead, and the sizes are read back after the conditional (XLA passes them the same way)."""
    branches = inst.called_computations()
    dynamic = sorted({(path, d) for sizes in branch_sizes
                      for path, _, leaf in _leaf_sizes(inst.shape, sizes) for d, s in enumerate(leaf) if s is not None})
    if not dynamic:
        return None
    bounds = {(path, d): shape.dims[d] for path, shape, _ in _leaf_sizes(inst.shape, static(inst.shape))
              for d in range(shape.rank)}
    for comp, sizes in zip(branches, branch_sizes):
        b = Builder(comp)
        have = {(path, d): s for path, _, leaf in _leaf_sizes(inst.shape, sizes) for d, s in enumerate(leaf)}
        values = [have[key] if have[key] is not None else b.scalar(bounds[key], "s32") for key in dynamic]
        comp.root = b.tuple([comp.root, b.tuple(values)])
    b = ctx.b
    shape = Shape.tuple_of([inst.shape, Shape.tuple_of([Shape.scalar("s32")] * len(dynamic))])
    new = b.emit("conditional", list(inst.operands), dict(inst.attrs), shape=shape)
    value, size_tuple = b.gte(new, 0), b.gte(new, 1)
    found = {key: b.gte(size_tuple, k) for k, key in enumerate(dynamic)}
    return value, _with_sizes(inst.shape, found)


REWRITES = {
    "reduce": _reduce,
    "reduce-window": _reduce,
    "dot": _dot,
    "concatenate": _concatenate,
    "sort": _sort,
    "scatter": _scatter,
    "dynamic-update-slice": _dynamic_update_slice,
}


# -- the markers, once every size is known ----------------------------------------------------------------
def _prefix_only(sizes: Sizes, dims: tuple[int, ...]) -> bool:
    """Are the valid elements a prefix of the row-major buffer (only the first non-1 dimension dynamic)?"""
    lead = next((d for d, n in enumerate(dims) if n != 1), None)
    return all(s is None or d == lead for d, s in enumerate(sizes))


def _replace_markers(ctx: _Context, sizes: dict[int, Sizes]) -> None:
    """Every marker's replacement is decided before any is replaced (a get-dimension-size must see the
    set-dimension-size it reads, not the operand that takes its place), then followed through the markers
    replaced before it."""
    replacements = []
    for inst in [i for i in ctx.comp.instructions if i.opcode in _MARKERS]:
        x = inst.operands[0]
        if inst.opcode == "set-dimension-size":
            new = x
        elif inst.opcode == "get-dimension-size":
            d = inst.attrs["dimensions"][0]
            new = sizes.get(id(x), static(x.shape))[d] or ctx.b.scalar(x.shape.dims[d], "s32")
        else:
            if not (_prefix_only(sizes.get(id(x), static(x.shape)), x.shape.dims)
                    and _prefix_only(sizes[id(inst)], inst.shape.dims) and x.shape.numel == inst.shape.numel):
                raise unsupported(inst, "the valid elements are not a prefix of the buffer, in or out")
            new = ctx.b.reshape(x, inst.shape.dims)
        replacements.append((inst, new))
    replaced: dict[int, Instruction] = {}
    for inst, new in replacements:
        while id(new) in replaced:        # a marker reading a marker (two dimensions set one after the other)
            new = replaced[id(new)]
        inst.replace_all_uses_with(new)
        ctx.comp.remove_instruction(inst)
        replaced[id(inst)] = new


def _pad(comp: Computation, root_sizes: dict[int, Sizes]) -> Sizes:
    """Pad one computation (its callees done before, their roots' Sizes in root_sizes); returns its root's."""
    ctx = _Context(comp)
    sizes: dict[int, Sizes] = {}
    for inst in comp.post_order():
        if inst.opcode == "parameter":
            if comp.parent.entry is not comp and is_dynamic(_declared(inst.shape)):
                raise unsupported(inst, f"a dynamic parameter of {comp.name}")
            sizes[id(inst)] = static(inst.shape)
            continue
        ops = [sizes.get(id(o)) or static(o.shape) for o in inst.operands]
        if inst.opcode == "conditional" and not any(is_dynamic(s) for s in ops[1:]):
            done = _conditional(ctx, inst, [root_sizes[id(c)] for c in inst.called_computations()])
            if done is None:             # no branch returns a dynamic dimension
                sizes[id(inst)] = static(inst.shape)
                continue
            new, sizes[id(new)] = done
            inst.replace_all_uses_with(new)
            comp.remove_instruction(inst)
            continue
        sizes[id(inst)] = out = infer(ctx.sm, inst, ops)
        rewrite = REWRITES.get(inst.opcode)
        if rewrite is not None and any(is_dynamic(s) for s in ops):
            new = rewrite(ctx, inst, ops)
            if new is not None:
                inst.replace_all_uses_with(new)
                comp.remove_instruction(inst)
                sizes[id(new)] = out
    result = sizes[id(comp.root)]
    _replace_markers(ctx, sizes)
    return result


def _declared(shape: Shape) -> Sizes:
    """The declared dynamic flags as Sizes-like truth values (for checks only)."""
    if shape.is_tuple:
        return tuple(_declared(s) for s in shape.tuple_shapes)
    return tuple(True if shape.is_dynamic_dim(d) else None for d in range(shape.rank))


def static_shape(shape: Shape) -> Shape:
    if shape.is_tuple:
        return replace(shape, tuple_shapes=tuple(static_shape(s) for s in shape.tuple_shapes))
    return replace(shape, dynamic=()) if shape.dynamic else shape


def _has_dynamic(module: Module) -> bool:
    return any(inst.opcode in _MARKERS or static_shape(inst.shape) != inst.shape for inst in module.instructions())


class DynamicPadder(Pass):
    name = "dynamic_padder"

    def run(self, module: Module) -> bool:
        if not _has_dynamic(module):
            return False
        for inst in module.instructions():
            if any(d < 0 for s in inst.shape.leaves() if s.is_array for d in s.dims):
                raise unsupported(inst, "an unbounded dynamic dimension (?)")
        unfused = {id(c) for c in non_fusion_computations(module)}
        root_sizes: dict[int, Sizes] = {}
        for comp in module.computation_post_order():          # branches before the conditionals that call them
            if id(comp) in unfused:
                root_sizes[id(comp)] = _pad(comp, root_sizes)
        for inst in module.instructions():
            inst.shape = static_shape(inst.shape)
        layout = module.attrs.get("entry_computation_layout")
        if isinstance(layout, str):
            module.attrs["entry_computation_layout"] = re.sub(r"<=(\d+)", r"\1", layout)
        return True


__all__ = ["DynamicPadder", "REWRITES", "static_shape"]
