"""The loop emitter: a generator wrapped in a loop nest over an output shape, storing every element.

Loops run in the layout order of the output (minor-most dimension innermost), so stores are contiguous and
LLVM's loop vectorizer sees unit-stride inner loops.
"""
from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from ...hlo.shape import Shape
from .buffers import BufferRef
from .elemental import Generator
from .indexing import linear_index, major_to_minor
from .irhelpers import loop_nest
from .types import store_element


def emit_loop(b: ir.IRBuilder, shape: Shape, gen: Generator, targets: Sequence[BufferRef]) -> None:
    """for every index of `shape` (layout order): v = gen(index); store v (or its tuple parts) to targets."""
    order = major_to_minor(shape)
    with loop_nest(b, [shape.dims[d] for d in order], name="i") as ivs:
        index: list = [None] * shape.rank
        for d, iv in zip(order, ivs):
            index[d] = iv
        value = gen(index)
        values = value if isinstance(value, tuple) else (value,)
        for target, v in zip(targets, values):
            store_element(b, target.pointer, target.shape.ptype, linear_index(b, index, target.shape), v)
