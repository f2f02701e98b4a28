"""ZeroSizedHloElimination: a value with no elements is a constant, whatever computed it.

    X : T[.., 0, ..] => constant({}) : T[.., 0, ..]     (X not a constant, not side-effecting, static shape)

Parameters stay (they are the computation's signature); their uses read the empty constant instead, as in
XLA. Instructions that are control predecessors or successors are left alone. Operands that become dead
are left for DCE.
"""
from __future__ import annotations

import numpy as np

from ..hlo import Instruction, Module
from .build import make
from .op_expander import non_fusion_computations, replace
from .pipeline import Pass


def is_zero_element_array(inst: Instruction) -> bool:
    s = inst.shape
    return s.is_array and s.numel == 0 and not any(s.dynamic)


def empty_constant(inst: Instruction) -> Instruction:
    return make("constant", [], shape=inst.shape, literal=np.zeros(inst.shape.dims, inst.shape.dtype))


def has_control_edges(inst: Instruction) -> bool:
    return bool(inst.control_predecessors) or any(inst in u.control_predecessors for u in inst.parent.instructions)


class ZeroSizedHloElimination(Pass):
    name = "zero_sized_hlo_elimination"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in non_fusion_computations(module):
            for inst in comp.post_order():
                if (inst.parent is not comp or not is_zero_element_array(inst) or inst.opcode == "constant"
                        or inst.has_side_effect or has_control_edges(inst)):
                    continue
                if inst.opcode == "parameter":
                    # uses of an empty parameter => uses of an empty constant (the parameter itself stays)
                    if not inst.users and not inst.is_root:
                        continue
                    const = comp.add_instruction(empty_constant(inst))
                    for user in list(inst.users):
                        user.replace_uses_of(inst, const)
                    if inst.is_root:
                        comp.root = const
                else:
                    # X : T[..0..] => constant({})
                    replace(comp, inst, empty_constant(inst), f"pass {self.name}")
                changed = True
        return changed
