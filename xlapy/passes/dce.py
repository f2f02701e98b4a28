"""HloDCE: delete instructions whose values nobody uses, and computations nobody calls."""
from __future__ import annotations

from ..hlo import Module
from .pipeline import Pass


def _removable(inst) -> bool:
    return (not inst.users and not inst.is_root and inst.opcode != "parameter" and not inst.has_side_effect)


class HloDCE(Pass):
    name = "dce"

    def __init__(self, remove_dead_computations: bool = True):
        self.remove_dead_computations = remove_dead_computations

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            # Instructions named as control predecessors stay (their ordering edge is a use).
            pinned = {id(p) for i in comp.instructions for p in i.control_predecessors}
            # A worklist from the unused instructions up through the operands they leave unused: the set a sweep
            # in reverse post order removes (each instruction after its users), without walking the graph
            dead = [i for i in comp.instructions if not i.users and _removable(i) and id(i) not in pinned]
            while dead:
                inst = dead.pop()
                operands = list(dict.fromkeys(inst.operands))
                comp.remove_instruction(inst)
                changed = True
                for op in operands:
                    if not op.users and op.parent is comp and _removable(op) and id(op) not in pinned:
                        dead.append(op)
        if self.remove_dead_computations and module.entry is not None:
            changed |= module.remove_unreachable_computations() > 0
        return changed
