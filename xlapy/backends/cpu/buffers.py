"""Buffer assignment (simple form): every array value the emitter materializes gets a slice of one scratch
allocation, handed out in emission order; entry parameters are read in place; constants are LLVM globals;
values of the entry root are written straight into the result buffers when that is safe.

Values flow through the emitter as value trees: a BufferRef for an array, a Python tuple for a tuple (tuples
and get-tuple-element are resolved at compile time, so no pointer tables exist at run time), None for a token.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from llvmlite import ir

from ...hlo.shape import Shape
from .types import storage_type

ALIGNMENT = 64


@dataclass(frozen=True, eq=False)
class BufferRef:
    """An array in memory: an i8* to its first element and the shape (with layout) it holds."""
    pointer: ir.Value
    shape: Shape


ValueTree = Union[BufferRef, tuple, None]


def element_size(shape: Shape) -> int:
    ty = storage_type(shape.ptype)
    if isinstance(ty, ir.LiteralStructType):        # complex: two floats
        return 2 * {ir.FloatType: 4, ir.DoubleType: 8}[type(ty.elements[0])]
    return max(1, ty.width // 8) if isinstance(ty, ir.IntType) else {ir.HalfType: 2, ir.FloatType: 4,
                                                                      ir.DoubleType: 8}[type(ty)]


def byte_size(shape: Shape) -> int:
    return shape.numel * element_size(shape)


class ScratchAllocator:
    """Hands out 64-byte aligned offsets into the scratch buffer; `size` is what the executable allocates."""

    def __init__(self) -> None:
        self.size = 0
        self.count = 0

    def allocate(self, nbytes: int) -> int:
        offset = self.size
        self.size += -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT
        self.count += 1
        return offset


def leaves(tree: ValueTree) -> list[BufferRef]:
    if isinstance(tree, tuple):
        return [leaf for t in tree for leaf in leaves(t)]
    return [] if tree is None else [tree]


def leaf_count(shape: Shape) -> int:
    return len([s for s in shape.leaves() if not s.is_token])
