"""What every rule table uses: an Emitter that appends new instructions to the computation being built.

Rules never build instruction text: they call `b.emit(opcode, operands, attrs)` (shape inferred) or the
small arithmetic helpers below (`b.add`, `b.mul`, `b.zeros(shape)`, `b.reduce_sum(x, dims)`, ...).
Scalar helper computations (the add reducer, comparators) are created once per module and element type.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import XlapyError
from ...hlo import Computation, Instruction, Module, Shape, primitive_type
from ...hlo.shape_inference import infer_shape


class AutodiffError(XlapyError):
    """A program that cannot be differentiated as asked (missing rule, integer input, unbounded loop)."""


def is_float(shape: Shape) -> bool:
    """A shape that carries derivatives: a floating-point array, or a tuple with such a leaf."""
    if shape.is_tuple:
        return any(is_float(s) for s in shape.tuple_shapes)
    return shape.is_array and shape.ptype.is_float


def reducer_kind(comp: Computation) -> str | None:
    """'add' / 'maximum' / 'minimum' / 'multiply' when `comp` is that binary op of its two parameters."""
    root = comp.root
    params = comp.parameters
    if root is None or len(params) != 2 or len(root.operands) != 2:
        return None
    if {id(o) for o in root.operands} != {id(p) for p in params}:
        return None
    return root.opcode if root.opcode in ("add", "maximum", "minimum", "multiply", "or", "and") else None


_HELPERS: "weakref.WeakKeyDictionary[Module, dict]" = weakref.WeakKeyDictionary()


class Emitter:
    """Appends instructions to `comp` (which belongs to `module`)."""

    def __init__(self, module: Module, comp: Computation):
        self.module, self.comp = module, comp
        self.tapes: dict[int, Any] = {}   # id of a taped forward loop -> loops.Tape (reverse mode)

    # -- generic -------------------------------------------------------------------------------------
    def emit(self, opcode: str, operands: Sequence[Instruction], attrs: dict[str, Any] | None = None,
             shape: Shape | None = None, element_type: str | None = None, name: str | None = None) -> Instruction:
        """A new instruction; its shape is inferred (give `element_type` for dot/convolution/convert)."""
        provisional = shape or (Shape.array(element_type, ()) if element_type else Shape.token())
        inst = Instruction(opcode, provisional, operands, attrs, name or opcode)
        if shape is None:
            inferred = infer_shape(inst)
            if inferred is None:
                inst.detach()
                raise AutodiffError(f"autodiff: cannot infer the shape of a new {opcode}")
            inst.shape = inferred
        return self.comp.add_instruction(inst)

    def add_inst(self, inst: Instruction) -> Instruction:
        return self.comp.add_instruction(inst)

    # -- constants and zeros -------------------------------------------------------------------------
    def scalar(self, value, element_type: str) -> Instruction:
        arr = np.asarray(value, dtype=primitive_type(element_type).dtype)
        return self.comp.add_instruction(Instruction("constant", Shape.array(element_type, ()), (), {},
                                                     "constant", literal=arr))

    def full(self, value, shape: Shape) -> Instruction:
        c = self.scalar(value, shape.element_type)
        if shape.rank == 0:
            return c
        return self.emit("broadcast", [c], {"dimensions": ()}, shape=shape.without_layout())

    def full_like(self, value, x: Instruction) -> Instruction:
        return self.full(value, x.shape)

    def zeros(self, shape: Shape) -> Instruction:
        """Zeros of any shape (tuples get a tuple of zeros)."""
        if shape.is_tuple:
            return self.tuple([self.zeros(s) for s in shape.tuple_shapes])
        return self.full(0, shape)

    # -- arithmetic (same-shape operands) ------------------------------------------------------------
    def add(self, a, b): return self.emit("add", [a, b])
    def sub(self, a, b): return self.emit("subtract", [a, b])
    def mul(self, a, b): return self.emit("multiply", [a, b])
    def div(self, a, b): return self.emit("divide", [a, b])
    def neg(self, a): return self.emit("negate", [a])
    def select(self, p, a, b): return self.emit("select", [p, a, b])

    def compare(self, a, b, direction: str) -> Instruction:
        return self.emit("compare", [a, b], {"direction": direction})

    def convert(self, x: Instruction, element_type: str) -> Instruction:
        if x.shape.element_type == element_type:
            return x
        return self.emit("convert", [x], shape=Shape.array(element_type, x.shape.dims))

    def tuple(self, elems: Sequence[Instruction]) -> Instruction:
        return self.emit("tuple", list(elems))

    def gte(self, t: Instruction, i: int) -> Instruction:
        if t.opcode == "tuple":   # look through: keeps the graph small and free of dead zeros
            return t.operands[i]
        return self.emit("get-tuple-element", [t], {"index": i})

    # -- shape helpers -------------------------------------------------------------------------------
    def reshape(self, x: Instruction, dims) -> Instruction:
        if tuple(x.shape.dims) == tuple(dims):
            return x
        return self.emit("reshape", [x], shape=Shape.array(x.shape.element_type, dims))

    def broadcast(self, x: Instruction, dims, shape: Shape) -> Instruction:
        """`x` placed into `shape` with x's dimension i at output dimension dims[i]."""
        return self.emit("broadcast", [x], {"dimensions": tuple(dims)},
                         shape=Shape.array(x.shape.element_type, shape.dims))

    def transpose(self, x: Instruction, perm) -> Instruction:
        if list(perm) == list(range(len(perm))):
            return x
        return self.emit("transpose", [x], {"dimensions": tuple(perm)})

    def reduce_sum(self, x: Instruction, dims) -> Instruction:
        dims = tuple(sorted(dims))
        if not dims:
            return x
        zero = self.scalar(0, x.shape.element_type)
        return self.emit("reduce", [x, zero], {"dimensions": dims,
                                               "to_apply": self.binary_computation("add", x.shape.element_type)})

    def sum_to_shape(self, x: Instruction, shape: Shape) -> Instruction:
        """Undo an implicit scalar broadcast: sum `x` down to `shape` (a scalar or x's own shape)."""
        if tuple(x.shape.dims) == tuple(shape.dims):
            return x
        if shape.rank == 0:
            return self.reduce_sum(x, range(x.shape.rank))
        raise AutodiffError(f"autodiff: cannot sum {x.shape} down to {shape}")

    # -- helper computations -------------------------------------------------------------------------
    def helper(self, key: tuple, build: Callable[[], Computation]) -> Computation:
        cache = _HELPERS.setdefault(self.module, {})
        comp = cache.get(key)
        if comp is None or comp.parent is not self.module:
            comp = build()
            self.module.add_computation(comp)
            cache[key] = comp
        return comp

    def binary_computation(self, opcode: str, element_type: str) -> Computation:
        """`(a, b) -> opcode(a, b)` on scalars: reducers and scatter combiners."""
        def build() -> Computation:
            s = Shape.array(element_type, ())
            a = Instruction("parameter", s, (), name="lhs", parameter_number=0)
            b = Instruction("parameter", s, (), name="rhs", parameter_number=1)
            out_shape = Shape.array("pred", ()) if opcode.startswith("compare") else s
            attrs = {"direction": opcode.split("-")[1]} if opcode.startswith("compare") else {}
            root = Instruction(opcode.split("-")[0], out_shape, [a, b], attrs, name=opcode.split("-")[0])
            return Computation(f"ad_{opcode.replace('-', '_')}_{element_type}", [a, b, root], root)
        return self.helper(("binary", opcode, element_type), build)
