"""Making instructions and the small computations that passes and transformations share.

This is the function layer of the HLO builder (XLA's HloInstruction::Create* and HloComputation::Builder);
builder.py's `Builder` wraps it in methods that read like the math. Shapes are inferred from the operands
and attributes unless given; `element_type` names the result type where it cannot be inferred (convert,
dot, convolution).

    new = make("add", [a, b])                        # detached: rewrite rules return these
    new = emit(comp, "broadcast", [c], {"dimensions": ()}, shape=inst.shape)    # appended to comp
    add = scalar_reducer(module, "add", "f32")       # the module's one (x, y) -> x + y on f32 scalars
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from ..errors import XlapyError
from ..hlo import Computation, Instruction, Module, Shape, primitive_type, type_name_of_dtype
from ..hlo.shape_inference import infer_shape


class BuildError(XlapyError, ValueError):
    """A new instruction whose shape cannot be inferred (give `shape=`)."""


# -- one instruction ------------------------------------------------------------------------------------
def make(opcode: str, operands: Sequence[Instruction], attrs: dict[str, Any] | None = None,
         shape: Shape | None = None, name: str | None = None, literal: Any = None,
         element_type: str | None = None) -> Instruction:
    """A detached instruction; `shape` defaults to the inferred one."""
    provisional = shape or (Shape.scalar(element_type) if element_type else Shape.token())
    inst = Instruction(opcode, provisional, operands, attrs, name or opcode, literal=literal)
    if shape is None:
        try:
            inferred = infer_shape(inst)
        except XlapyError:
            inst.detach()       # the operands keep no user that was never made
            raise
        if inferred is None:
            inst.detach()
            shapes = ", ".join(str(o.shape) for o in operands)
            raise BuildError(f"cannot infer the shape of a new {opcode}({shapes}); pass shape=")
        inst.shape = inferred
    return inst


def emit(comp: Computation, opcode: str, operands: Sequence[Instruction], attrs: dict[str, Any] | None = None,
         shape: Shape | None = None, name: str | None = None, literal: Any = None,
         element_type: str | None = None) -> Instruction:
    """make() and append the instruction to `comp`."""
    return comp.add_instruction(make(opcode, operands, attrs, shape, name, literal, element_type))


def make_constant(value: Any, element_type: str | None = None) -> Instruction:
    """A detached constant holding `value` (a scalar or an array) as `element_type` (default: value's own)."""
    arr = np.asarray(value)
    if element_type is None:
        element_type = type_name_of_dtype(arr.dtype)
    else:
        arr = arr.astype(primitive_type(element_type).dtype, copy=False)
    return Instruction("constant", Shape.array(element_type, arr.shape), (), {}, "constant", literal=arr)


def constant(comp: Computation, value: Any, element_type: str | None = None) -> Instruction:
    """make_constant() appended to `comp`."""
    return comp.add_instruction(make_constant(value, element_type))


def make_full_like(like: Instruction, value: Any) -> Instruction:
    """A detached `value` everywhere in like's shape and element type: a scalar constant, broadcast unless
    `like` is a scalar (the broadcast's operand is detached too)."""
    c = make_constant(value, like.shape.element_type)
    if like.shape.rank == 0:
        return c
    return make("broadcast", [c], {"dimensions": ()}, shape=like.shape.without_layout())


def parameter(comp: Computation, number: int, shape: Shape, name: str = "param") -> Instruction:
    return comp.add_instruction(Instruction("parameter", shape, (), {}, name, parameter_number=number))


# -- computations -------------------------------------------------------------------------------------------
def new_computation(module: Module, name: str, first: bool = False) -> Computation:
    """An empty computation added to `module` (placed first with `first`: callees before callers)."""
    comp = module.add_computation(Computation(name))
    if first:
        module.computations.insert(0, module.computations.pop())
    return comp


_SHARED: "weakref.WeakKeyDictionary[Module, dict[Hashable, Computation]]" = weakref.WeakKeyDictionary()


def shared_computation(module: Module, key: Hashable, build: Callable[[], Computation]) -> Computation:
    """The computation that `build()` added to `module` for `key`, built once per module (again if a pass
    has removed it since)."""
    cache = _SHARED.setdefault(module, {})
    comp = cache.get(key)
    if comp is None or comp.parent is not module:
        comp = cache[key] = build()
    return comp


def _scalar_binary(module: Module, name: str, opcode: str, element_type: str, attrs: dict) -> Computation:
    comp = new_computation(module, name, first=True)
    s = Shape.scalar(element_type)
    lhs, rhs = parameter(comp, 0, s, "scalar_lhs"), parameter(comp, 1, s, "scalar_rhs")
    comp.root = emit(comp, opcode, [lhs, rhs], attrs)
    return comp


def scalar_reducer(module: Module, opcode: str, element_type: str) -> Computation:
    """(x, y) -> opcode(x, y) on scalars: reducers and scatter combiners. One per module, opcode and type,
    placed first in the module and named like XLA's (`scalar_add_computation`)."""
    return shared_computation(module, ("scalar", opcode, element_type), lambda: _scalar_binary(
        module, f"scalar_{opcode.replace('-', '_')}_computation", opcode, element_type, {}))


def scalar_comparator(module: Module, direction: str, element_type: str) -> Computation:
    """(x, y) -> compare(x, y), direction=`direction` on scalars (select-and-scatter's `select`)."""
    return shared_computation(module, ("scalar", "compare", direction, element_type), lambda: _scalar_binary(
        module, f"scalar_compare_{direction}_computation", "compare", element_type, {"direction": direction}))
