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
            for inst in reversed(comp.post_order()):
                if _removable(inst) and id(inst) not in pinned:
                    comp.remove_instruction(inst)
                    changed = True
        if self.remove_dead_computations and module.entry is not None:
            changed |= module.remove_unreachable_computations() > 0
        return changed
