"""The HLO builder: appends instructions to one computation, with helpers that read like the math.

    b = Builder(comp)
    two = b.full_like(x, 2.0)                 # a scalar constant of x's type, broadcast to x's shape
    y = b.mul(x, two)                         # shape inferred
    s = b.reduce_sum(y, (0,))                 # to_apply: the module's shared scalar_add_computation

XLA's HloComputation::Builder and XlaBuilder do this job there; here the autodiff rules, the expanders and
the front end's derived computations all build through this one class (build.py holds its function layer:
make/emit for single instructions, and the per-module scalar reducers). Helpers that would only copy
their operand (a reshape to the same dims, an identity transpose, a convert to the same type) return the
operand and emit nothing.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..hlo import Computation, Instruction, Module, Shape
from .build import emit, make_constant, parameter, scalar_comparator, scalar_reducer


class Builder:
    """Appends instructions to `comp` (which belongs to a module when reducers are asked for)."""

    def __init__(self, comp: Computation):
        self.comp = comp

    @property
    def module(self) -> Module | None:
        return self.comp.parent

    # -- instructions ---------------------------------------------------------------------------------
    def emit(self, opcode: str, operands: Sequence[Instruction], attrs: dict[str, Any] | None = None,
             shape: Shape | None = None, element_type: str | None = None, name: str | None = None) -> Instruction:
        """A new instruction; its shape is inferred unless given (give `element_type` for dot/convolution)."""
        return emit(self.comp, opcode, operands, attrs, shape, name, element_type=element_type)

    def add_instruction(self, inst: Instruction) -> Instruction:
        """Append an instruction made elsewhere (e.g. `inst.clone_with(new_operands)`)."""
        return self.comp.add_instruction(inst)

    def parameter(self, number: int, shape: Shape, name: str = "param") -> Instruction:
        return parameter(self.comp, number, shape, name)

    # -- constants ------------------------------------------------------------------------------------
    def constant(self, value: Any, element_type: str | None = None) -> Instruction:
        """A constant holding `value` (a scalar or an array) as `element_type` (default: value's own)."""
        return self.comp.add_instruction(make_constant(value, element_type))

    def scalar(self, value: Any, element_type: str) -> Instruction:
        """A rank-0 constant."""
        return self.constant(value, element_type)

    def full(self, shape: Shape, value: Any) -> Instruction:
        """`value` everywhere in `shape`: a scalar constant, broadcast unless `shape` is a scalar's."""
        c = self.scalar(value, shape.element_type)
        if shape.rank == 0:
            return c
        return self.emit("broadcast", [c], {"dimensions": ()}, shape=shape.without_layout())

    def full_like(self, like: Instruction, value: Any) -> Instruction:
        return self.full(like.shape, value)

    def zeros(self, shape: Shape) -> Instruction:
        """Zeros of any shape (a tuple shape gets a tuple of zeros)."""
        if shape.is_tuple:
            return self.tuple([self.zeros(s) for s in shape.tuple_shapes])
        return self.full(shape, 0)

    # -- elementwise (operands of one shape) ---------------------------------------------------------
    def add(self, a: Instruction, b: Instruction) -> Instruction:
        return self.emit("add", [a, b])

    def sub(self, a: Instruction, b: Instruction) -> Instruction:
        return self.emit("subtract", [a, b])

    def mul(self, a: Instruction, b: Instruction) -> Instruction:
        return self.emit("multiply", [a, b])

    def div(self, a: Instruction, b: Instruction) -> Instruction:
        return self.emit("divide", [a, b])

    def neg(self, a: Instruction) -> Instruction:
        return self.emit("negate", [a])

    def select(self, p: Instruction, a: Instruction, b: Instruction) -> Instruction:
        return self.emit("select", [p, a, b])

    def compare(self, a: Instruction, b: Instruction, direction: str) -> Instruction:
        return self.emit("compare", [a, b], {"direction": direction})

    def convert(self, x: Instruction, element_type: str) -> Instruction:
        if x.shape.element_type == element_type:
            return x
        return self.emit("convert", [x], shape=Shape.array(element_type, x.shape.dims))

    # -- tuples -----------------------------------------------------------------------------------------
    def tuple(self, elems: Iterable[Instruction]) -> Instruction:
        return self.emit("tuple", list(elems))

    def gte(self, t: Instruction, i: int) -> Instruction:
        """Element i of a tuple value; an element of a `tuple` instruction is read directly (no new
        instruction, so no dead zeros for the other elements)."""
        if t.opcode == "tuple":
            return t.operands[i]
        return self.emit("get-tuple-element", [t], {"index": i})

    # -- data movement ----------------------------------------------------------------------------------
    def reshape(self, x: Instruction, dims: Sequence[int]) -> Instruction:
        if tuple(x.shape.dims) == tuple(dims):
            return x
        return self.emit("reshape", [x], shape=Shape.array(x.shape.element_type, dims))

    def broadcast(self, x: Instruction, dims: Sequence[int], shape: Shape) -> Instruction:
        """`x` placed into `shape`'s dims, x's dimension i at output dimension dims[i]; x's element type."""
        return self.emit("broadcast", [x], {"dimensions": tuple(dims)},
                         shape=Shape.array(x.shape.element_type, shape.dims))

    def transpose(self, x: Instruction, perm: Sequence[int]) -> Instruction:
        if list(perm) == list(range(len(perm))):
            return x
        return self.emit("transpose", [x], {"dimensions": tuple(perm)})

    # -- reductions -------------------------------------------------------------------------------------
    def reducer(self, opcode: str, element_type: str) -> Computation:
        """The module's shared (x, y) -> opcode(x, y) computation (build.scalar_reducer)."""
        return scalar_reducer(self.module, opcode, element_type)

    def comparator(self, direction: str, element_type: str) -> Computation:
        """The module's shared (x, y) -> compare(x, y) computation (build.scalar_comparator)."""
        return scalar_comparator(self.module, direction, element_type)

    def reduce_sum(self, x: Instruction, dims: Iterable[int]) -> Instruction:
        """x summed over `dims` (x itself when there are none)."""
        dims = tuple(sorted(dims))
        if not dims:
            return x
        et = x.shape.element_type
        zero = self.scalar(0, et)
        return self.emit("reduce", [x, zero], {"dimensions": dims, "to_apply": self.reducer("add", et)})
