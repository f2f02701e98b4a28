"""ConditionalSimplifier (XLA's `simplify-conditional`): a conditional whose taken branch is known at compile
time is replaced by that branch, inlined.

| rewrite                                                               | when                            |
|-----------------------------------------------------------------------|---------------------------------|
| conditional(true, a, b), true_computation=T => T(a)                   | predicate is a constant         |
| conditional(k, a0, .., an), branch_computations={B0..Bn} => Bk(ak)    | index is a constant; k out of range => Bn |
| conditional(i, a), branch_computations={B} => B(a)                    | one branch (every index runs it)|

The untaken branches never run, so their side effects (if any) are not lost; the taken branch's are kept
by inlining. Branch computations nothing calls any longer are removed.
"""
from __future__ import annotations

import numpy as np

from ..hlo import Computation, Instruction, Module
from .control_util import drop_if_uncalled, has_control_edges, inline_computation, orders_others
from .pattern import literal_scalar
from .pipeline import Pass


def _branches(inst: Instruction) -> list[Computation]:
    if "branch_computations" in inst.attrs:
        return list(inst.attrs["branch_computations"])
    return [inst.attrs["true_computation"], inst.attrs["false_computation"]]


def taken_branch(inst: Instruction) -> int | None:
    """The index of the branch that runs, where it is known at compile time."""
    branches = _branches(inst)
    if "branch_computations" in inst.attrs and len(branches) == 1:
        return 0
    selector = inst.operands[0]
    if selector.opcode != "constant" or selector.shape.rank != 0:
        return None
    value = literal_scalar(selector)
    if value is None:
        return None
    if "branch_computations" not in inst.attrs:
        return 0 if bool(value) else 1
    index = int(np.asarray(value))
    return index if 0 <= index < len(branches) else len(branches) - 1


class ConditionalSimplifier(Pass):
    name = "simplify-conditional"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in list(module.computation_post_order()):
            if comp not in module.computations:
                continue
            for inst in comp.post_order_of("conditional"):
                k = taken_branch(inst)
                branches = _branches(inst)
                if (k is None or has_control_edges(branches[k]) or inst.control_predecessors
                        or orders_others(inst)):
                    continue
                # conditional(k, a0, ..., an) => Bk(ak)
                result = inline_computation(comp, branches[k], [inst.operands[1 + k]])
                comp.replace_instruction(inst, result)
                drop_if_uncalled(module, *branches)
                changed = True
        return changed
