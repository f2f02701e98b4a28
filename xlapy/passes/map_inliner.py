"""MapInliner: a map whose computation is one operation on its parameters becomes that operation.

    map(X, Y), to_apply={ROOT op(p0, p1)} => op(X, Y)
    map(X, Y), to_apply={ROOT p1}         => Y
    map(X), to_apply={ROOT constant(c)}   => broadcast(constant(c))

Only single-op computations are inlined (XLA's profitability rule), and only when the op is elementwise,
so that applying it to the whole arrays means the same as applying it per element. The mapped computation
is left for DCE.
"""
from __future__ import annotations

from ..hlo import Instruction, Module
from .build import make
from .op_expander import replace
from .pipeline import Pass


def inline_map(m: Instruction) -> Instruction | None:
    (f,) = m.called_computations()
    root = f.root
    if root.opcode == "parameter":
        # map(.., Xi, ..), to_apply={ROOT p_i} => Xi
        return m.operands[root.parameter_number]
    if root.opcode == "constant":
        # map(..), to_apply={ROOT constant(c)} => broadcast(constant(c))
        c = m.parent.add_instruction(root.clone_with([], shape=root.shape.without_layout()))
        return make("broadcast", [c], {"dimensions": ()}, shape=m.shape.without_layout())
    if not root.info.is_elementwise or root.has_side_effect or not root.operands:
        return None
    if not all(o.opcode == "parameter" for o in root.operands):
        return None
    # map(X, Y), to_apply={ROOT op(p0, p1)} => op(X, Y)
    return root.clone_with([m.operands[o.parameter_number] for o in root.operands], shape=m.shape.without_layout())


class MapInliner(Pass):
    name = "map-inline"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in list(module.computations):
            for inst in comp.post_order():
                if inst.parent is not comp or inst.opcode != "map":
                    continue
                new = inline_map(inst)
                if new is None:
                    continue
                replace(comp, inst, new, f"pass {self.name}")
                changed = True
        return changed
