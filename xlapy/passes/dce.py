"""HloDCE: delete instructions whose values nobody uses, and computations nobody calls."""
from __future__ import annotations

from ..hlo import Module
from .pipeline import Pass


def _removable(inst) -> bool:
    return not inst.is_root and inst.opcode != "parameter" and not inst.has_side_effect


class HloDCE(Pass):
    name = "dce"

    def __init__(self, remove_dead_computations: bool = True):
        self.remove_dead_computations = remove_dead_computations

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            # Instructions named as control predecessors stay (their ordering edge is a use).
            pinned = ({id(p) for i in comp.instructions for p in i.control_predecessors}
                      if comp.has_control_edges() else ())
            # A worklist from the unused instructions up through the operands whose users are all dead: the set a
            # sweep in reverse post order removes (each instruction after its users), without walking the graph;
            # then one removal of them all (a removal each searched the list for each one)
            dead: dict[int, object] = {}
            work = [i for i in comp.instructions if not i.users and _removable(i) and id(i) not in pinned]
            while work:
                inst = work.pop()
                if id(inst) in dead:
                    continue
                dead[id(inst)] = inst
                for op in inst.operands:
                    if (id(op) not in dead and op.parent is comp and id(op) not in pinned and _removable(op)
                            and all(id(u) in dead for u in op.users)):
                        work.append(op)
            changed |= comp.remove_instructions(dead.values()) > 0
        if self.remove_dead_computations and module.entry is not None:
            changed |= module.remove_unreachable_computations() > 0
        return changed
