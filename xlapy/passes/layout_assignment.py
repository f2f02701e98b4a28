"""LayoutAssignment: every array shape gets a layout; the CPU default is row-major (minor_to_major = n-1..0).

Layouts already present (parsed from text, or the entry_computation_layout) are kept. The interpreter ignores
layouts; the CPU backend reads them to emit loops in memory order.
"""
from __future__ import annotations

from ..hlo import Module, Shape
from .pipeline import Pass


def with_default_layouts(shape: Shape) -> Shape:
    if shape.is_tuple:
        return Shape.tuple_of(with_default_layouts(s) for s in shape.tuple_shapes)
    if not shape.is_array or shape.layout is not None:
        return shape
    return shape.with_layout(shape.default_layout())


class LayoutAssignment(Pass):
    name = "layout-assignment"

    def run(self, module: Module) -> bool:
        changed = False
        for inst in module.instructions():
            new = with_default_layouts(inst.shape)
            if new != inst.shape:
                inst.shape = new
                changed = True
        return changed
