"""OpExpanderPass: the base of passes that replace one instruction by a graph of simpler ones (XLA's
OpExpanderPass). A subclass says which instructions it handles (`matches`) and builds the replacement
(`expand`, which adds what it needs to `inst.parent` with build.emit and returns the new value, or None to
leave the instruction alone). The driver replaces and deletes the old instruction, so an expansion leaves
no dead original behind, and visits each computation in post order once (no fixed point needed: an
expansion never produces an instruction that it would match again).
"""
from __future__ import annotations

from ..errors import XlapyError
from ..hlo import Computation, Instruction, Module
from .pipeline import Pass


def fusion_computations(module: Module) -> set[int]:
    """ids of the computations called by fusion instructions (passes leave their insides alone)."""
    return {id(c) for inst in module.instructions() if inst.opcode == "fusion"
            for c in inst.called_computations()}


def non_fusion_computations(module: Module) -> list[Computation]:
    fused = fusion_computations(module)
    return [c for c in module.computations if id(c) not in fused]


def replace(comp: Computation, old: Instruction, new: Instruction, what: str) -> None:
    """Replace `old` by `new` everywhere; a new instruction keeps old's layout; `old` is deleted."""
    if not new.shape.compatible(old.shape):
        raise XlapyError(f"{what} turned {old.name} ({old.shape}) into {new.name} of shape {new.shape}")
    if new.parent is None:
        new.shape = old.shape
        comp.add_instruction(new)
    old.replace_all_uses_with(new)
    if not old.users and not old.is_root and not any(old in u.control_predecessors for u in comp.instructions):
        comp.remove_instruction(old)


class OpExpanderPass(Pass):
    name = "op-expander"

    def matches(self, inst: Instruction) -> bool:
        raise NotImplementedError(f"pass {self.name} has no matches()")

    def expand(self, inst: Instruction) -> Instruction | None:
        raise NotImplementedError(f"pass {self.name} has no expand()")

    def run(self, module: Module) -> bool:
        changed = False
        for comp in non_fusion_computations(module):
            for inst in comp.post_order():
                if inst.parent is not comp or not self.matches(inst):
                    continue
                new = self.expand(inst)
                if new is None or new is inst:
                    continue
                replace(comp, inst, new, f"pass {self.name}")
                changed = True
        return changed
