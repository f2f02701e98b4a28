"""SortSimplifier (XLA's `simplify-sorts`): drop the operands of a multi-operand sort whose sorted outputs
nobody reads and whose values the comparator never looks at.

| rewrite                                                                          | when                      |
|----------------------------------------------------------------------------------|---------------------------|
| gte(sort(k, v, w), 0), gte(.., 2) => gte(sort(k, w), 0), gte(.., 1)              | v unused, comparator ignores params 2, 3 |
| gte(sort(k, v), 0) => sort(k)                                                    | one operand left: the result is an array |

The comparator is rebuilt with the dropped operands' parameter pairs removed and the rest renumbered.
A sort that is a root, or that has a user other than get-tuple-element, is left alone.
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module, Shape
from .build import make
from .control_util import add_computation_before, drop_if_uncalled, orders_others
from .pipeline import Pass


def _read_by_comparator(comparator: Computation) -> set[int]:
    """Sort operand indices whose parameter pair (2i, 2i+1) the comparator reads."""
    read = set()
    for p in comparator.parameters:
        if p.users or p.is_root:
            read.add(p.parameter_number // 2)
    return read


def _used_operands(sort: Instruction) -> set[int] | None:
    if sort.is_root or any(u.opcode != "get-tuple-element" for u in sort.users) or orders_others(sort):
        return None
    used = {u.attrs["index"] for u in sort.users if u.users or u.is_root}
    return used | _read_by_comparator(sort.attrs["to_apply"])


def _narrow_comparator(comparator: Computation, kept: list[int]) -> Computation:
    new = comparator.clone(suffix="")
    position = {old: k for k, old in enumerate(kept)}
    for p in new.parameters:
        i, side = divmod(p.parameter_number, 2)
        if i in position:
            p.parameter_number = 2 * position[i] + side
        else:
            new.remove_instruction(p)     # unread: no users
    return new


def simplify_sort(module: Module, comp: Computation, sort: Instruction) -> bool:
    # sort(k, v, w) with v's output unused and unread by the comparator => sort(k, w)
    if not sort.shape.is_tuple:
        return False
    used = _used_operands(sort)
    if used is None or not used or len(used) == len(sort.operands):
        return False
    kept = sorted(used)
    comparator = sort.attrs["to_apply"]
    shapes = [sort.shape.tuple_shapes[i] for i in kept]
    new_shape = shapes[0] if len(kept) == 1 else Shape.tuple_of(shapes)
    attrs = dict(sort.attrs)
    attrs["to_apply"] = add_computation_before(module, _narrow_comparator(comparator, kept), comparator)
    new_sort = comp.add_instruction(make("sort", [sort.operands[i] for i in kept], attrs, shape=new_shape,
                                         name=sort.name))
    position = {old: k for k, old in enumerate(kept)}
    for user in list(sort.users):
        i = user.attrs["index"]
        if i in position and (user.users or user.is_root):
            if len(kept) == 1:
                user.replace_all_uses_with(new_sort)
            else:
                user.replace_all_uses_with(comp.add_instruction(
                    make("get-tuple-element", [new_sort], {"index": position[i]}, shape=user.shape,
                         name=user.name)))
        comp.remove_instruction(user)
    comp.remove_instruction(sort)
    drop_if_uncalled(module, comparator)
    return True


class SortSimplifier(Pass):
    name = "simplify-sorts"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in list(module.computations):
            for inst in comp.post_order_of("sort"):
                changed |= simplify_sort(module, comp, inst)
        return changed
