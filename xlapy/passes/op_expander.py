"""OpExpanderPass: the base of passes that replace one instruction by a graph of simpler ones (XLA's
OpExpanderPass). A subclass says which instructions it handles (`matches`) and builds the replacement
(`expand`, which adds what it needs to `inst.parent` with build.emit and returns the new value, or None to
leave the instruction alone). The driver replaces and deletes the old instruction, so an expansion leaves
no dead original behind, and visits each computation in post order once (no fixed point needed: an
expansion never produces an instruction that it would match again). A subclass that names the `opcodes` it can
match is shown only those (Computation.post_order_of: no walk of a computation that holds none).
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


def replace(comp: Computation, old: Instruction, new: Instruction, what: str, control_edges: bool = True) -> None:
    """Replace `old` by `new` everywhere; a new instruction keeps old's layout; `old` is deleted (unless it is a
    control predecessor; control_edges=False: the caller knows the computation has no control edges)."""
    if not new.shape.compatible(old.shape):
        raise XlapyError(f"{what} turned {old.name} ({old.shape}) into {new.name} of shape {new.shape}")
    if new.parent is None:
        new.shape = old.shape
        comp.add_instruction(new)
    old.replace_all_uses_with(new)
    if not old.users and not old.is_root and not (
            control_edges and any(old in u.control_predecessors for u in comp.instructions)):
        comp.remove_instruction(old)


def _any_control_edges(comp: Computation) -> bool:
    return any(i.control_predecessors for i in comp.instructions)


class OpExpanderPass(Pass):
    name = "op-expander"
    opcodes: frozenset[str] | None = None      # the opcodes matches() can accept (None: any)

    def matches(self, inst: Instruction) -> bool:
        raise NotImplementedError(f"pass {self.name} has no matches()")

    def expand(self, inst: Instruction) -> Instruction | None:
        raise NotImplementedError(f"pass {self.name} has no expand()")

    def run(self, module: Module) -> bool:
        changed = False
        for comp in non_fusion_computations(module):
            # expansions add no control edges: a computation without any keeps none (no scan per replacement)
            edges = None
            order = comp.post_order() if self.opcodes is None else comp.post_order_of(self.opcodes)
            for inst in order:
                if inst.parent is not comp or not self.matches(inst):
                    continue
                new = self.expand(inst)
                if new is None or new is inst:
                    continue
                if edges is None:
                    edges = _any_control_edges(comp)
                replace(comp, inst, new, f"pass {self.name}", edges)
                changed = True
        return changed
