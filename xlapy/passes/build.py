"""Creating instructions inside passes: the shape is inferred from operands and attributes unless given.

    new = emit(comp, "add", [a, b])                          # f32[...] inferred
    new = emit(comp, "broadcast", [c], {"dimensions": ()}, shape=inst.shape)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..hlo import Computation, Instruction, Shape, type_name_of_dtype
from ..hlo.shape_inference import infer_shape


def make(opcode: str, operands: Sequence[Instruction], attrs: dict[str, Any] | None = None,
         shape: Shape | None = None, name: str | None = None, literal: Any = None) -> Instruction:
    """A detached instruction; `shape` defaults to the inferred one."""
    inst = Instruction(opcode, shape or Shape.token(), operands, attrs, name or opcode, literal=literal)
    if shape is None:
        inferred = infer_shape(inst)
        if inferred is None:
            inst.detach()
            raise ValueError(f"cannot infer the shape of a new {opcode}; pass shape=")
        inst.shape = inferred
    return inst


def emit(comp: Computation, opcode: str, operands: Sequence[Instruction], attrs: dict[str, Any] | None = None,
         shape: Shape | None = None, name: str | None = None, literal: Any = None) -> Instruction:
    """make() and add the instruction to `comp`."""
    return comp.add_instruction(make(opcode, operands, attrs, shape, name, literal))


def constant(comp: Computation, value, element_type: str | None = None) -> Instruction:
    """A constant instruction holding `value` (a scalar or array) of `element_type` (default: value's)."""
    from ..hlo import primitive_type
    arr = np.asarray(value) if element_type is None else np.asarray(value, dtype=primitive_type(element_type).dtype)
    et = element_type or type_name_of_dtype(arr.dtype)
    return comp.add_instruction(Instruction("constant", Shape.array(et, arr.shape), (), {}, "constant", literal=arr))


def scalar_like(comp: Computation, value, like: Instruction) -> Instruction:
    """`value` with the element type of `like`, broadcast to like's shape when like is not a scalar."""
    c = constant(comp, value, like.shape.element_type)
    if like.shape.rank == 0:
        return c
    return emit(comp, "broadcast", [c], {"dimensions": ()}, shape=like.shape.without_layout())
