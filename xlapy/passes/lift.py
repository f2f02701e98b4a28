"""Lifting a scalar computation (a reducer, a scatter combiner) to whole arrays: its parameters become the given
arrays, its scalar constants are broadcast, its elementwise ops run on arrays. Used by the expanders."""
from __future__ import annotations

from typing import Sequence

from ..hlo import Computation, Instruction, Shape
from .build import emit

_STRUCTURAL = ("parameter", "constant", "tuple")


def _liftable(comp: Computation) -> bool:
    for inst in comp.instructions:
        if inst.opcode in _STRUCTURAL:
            if inst.opcode == "constant" and inst.shape.rank != 0:
                return False
            if inst.opcode == "tuple" and not inst.is_root:
                return False
            continue
        if not inst.info.is_elementwise or inst.called_computations():
            return False
    return True


def lift_elementwise(comp: Computation, scalar_comp: Computation, operands: Sequence,
                     dry_run: bool = False) -> list[Instruction] | None:
    """Emit scalar_comp applied elementwise to `operands` (all of one shape) into comp; returns its results
    (one per leaf of the root), or None when scalar_comp is not purely elementwise. dry_run: only check."""
    if not _liftable(scalar_comp) or len(scalar_comp.parameters) != len(operands):
        return None
    if dry_run:
        return []
    dims = operands[0].shape.dims
    values: dict[int, Instruction] = {}
    for inst in scalar_comp.post_order():
        if inst.opcode == "parameter":
            values[id(inst)] = operands[inst.parameter_number]
        elif inst.opcode == "constant":
            c = comp.add_instruction(Instruction("constant", inst.shape.without_layout(), (), {}, "constant",
                                                 literal=inst.literal))
            values[id(inst)] = emit(comp, "broadcast", [c], {"dimensions": ()},
                                    shape=Shape.array(inst.shape.element_type, dims))
        elif inst.opcode == "tuple":
            continue
        else:
            shape = Shape.array(inst.shape.element_type, dims)
            values[id(inst)] = emit(comp, inst.opcode, [values[id(o)] for o in inst.operands], dict(inst.attrs),
                                    shape=shape)
    root = scalar_comp.root
    if root.opcode == "tuple":
        return [values[id(o)] for o in root.operands]
    return [values[id(root)]]
