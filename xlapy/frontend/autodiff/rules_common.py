"""What every rule table uses: the error type, the float test, and the Emitter of the computation being built.

Rules never build instruction text: the Emitter is a passes.builder.Builder, so they call
`b.emit(opcode, operands, attrs)` (shape inferred) or its helpers (`b.add`, `b.mul`, `b.zeros(shape)`,
`b.reduce_sum(x, dims)`, ...). Scalar helper computations (the add reducer, comparators) are shared per
module (passes/build.py).
"""
from __future__ import annotations

from typing import Any

from ...errors import XlapyError
from ...hlo import PRIMITIVE_TYPES, Computation, Instruction, Shape
from ...passes.builder import Builder


class AutodiffError(XlapyError):
    """A program that cannot be differentiated as asked (missing rule, integer input, unbounded loop)."""


def is_float(shape: Shape) -> bool:
    """A shape that carries derivatives: a floating-point or complex array, or a tuple with such a leaf.

    Complex values carry derivatives inside a computation (an fft between real values, real/imag/complex),
    with JAX's convention: a VJP is the linear transpose, without conjugation. At the boundary (what may be
    differentiated with respect to, what grad's output may be) only real floats count: `is_real_float`."""
    if shape.is_tuple:
        return any(is_float(s) for s in shape.tuple_shapes)
    return shape.is_array and (shape.ptype.is_float or shape.ptype.is_complex)


def is_real_float(shape: Shape) -> bool:
    """A real floating-point array, or a tuple with such a leaf: what gradients are taken of and with respect to."""
    if shape.is_tuple:
        return any(is_real_float(s) for s in shape.tuple_shapes)
    return shape.is_array and shape.ptype.is_float


def to_element_type(b: Builder, x: Instruction, element_type: str) -> Instruction:
    """`x` converted to `element_type`; complex to real keeps the real part explicitly (JAX's convert)."""
    if x.shape.ptype.is_complex and not PRIMITIVE_TYPES[element_type].is_complex:
        x = b.emit("real", [x])
    return b.convert(x, element_type)


def reducer_kind(comp: Computation) -> str | None:
    """'add' / 'maximum' / 'minimum' / 'multiply' when `comp` is that binary op of its two parameters."""
    root = comp.root
    params = comp.parameters
    if root is None or len(params) != 2 or len(root.operands) != 2:
        return None
    if {id(o) for o in root.operands} != {id(p) for p in params}:
        return None
    return root.opcode if root.opcode in ("add", "maximum", "minimum", "multiply", "or", "and") else None


class Emitter(Builder):
    """The autodiff emitter: the Builder of a derivative computation, which also remembers the forward loops
    it copied as taped loops (`tapes`: id of the loop -> loops.Tape) for the reverse pass's `while` rule, and the
saved values a rematerialized region reads (`aliases`, custom_rules.py)."""

    def __init__(self, comp: Computation):
        super().__init__(comp)
        self.tapes: dict[int, Any] = {}
        self.aliases: dict[int, Instruction] = {}    # rematerialization: id(shadow copy) -> the saved value
