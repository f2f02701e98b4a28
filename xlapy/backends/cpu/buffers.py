"""Buffer assignment (simple form): every array value the emitter materializes gets a slice of one scratch
allocation, handed out in emission order; entry parameters are read in place; constants are LLVM globals;
values of the entry root are written straight into the result buffers when that is safe.

Values flow through the emitter as value trees: a BufferRef for an array, a Python tuple for a tuple (tuples
and get-tuple-element are resolved at compile time, so no pointer tables exist at run time), None for a token.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Union

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
    """Hands out 64-byte aligned offsets into the scratch buffer; `size` is what the executable allocates.

    `release(offset)` returns a slice to a free list (kept sorted and coalesced); later requests take the
    best-fitting free slice before growing the scratch block. With `reuse=False` nothing is ever reused
    (the simple assignment, kept for comparisons)."""

    def __init__(self, reuse: bool = True) -> None:
        self.size = 0
        self.count = 0
        self.reuse = reuse
        self.live: dict[int, int] = {}          # offset -> rounded size of every slice handed out and not released
        self._free: list[tuple[int, int]] = []  # (offset, size), sorted by offset, coalesced
        self.on_allocate = None                 # callback(offset, size), set by the buffer assignment

    def allocate(self, nbytes: int) -> int:
        size = -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT
        offset = self._take(size) if self.reuse else None
        if offset is None:
            if self._free and self._free[-1][0] + self._free[-1][1] == self.size:   # grow the free tail
                offset = self._free.pop()[0]
            else:
                offset = self.size
            self.size = offset + size
        self.live[offset] = size
        self.count += 1
        if self.on_allocate is not None:
            self.on_allocate(offset, size)
        return offset

    def _take(self, size: int) -> int | None:
        best = None
        for k, (off, n) in enumerate(self._free):
            if n >= size and (best is None or n < self._free[best][1]):
                best = k
        if best is None:
            return None
        off, n = self._free[best]
        if n == size:
            del self._free[best]
        else:
            self._free[best] = (off + size, n - size)
        return off

    @contextmanager
    def apart(self) -> Iterator[None]:
        """Slices handed out inside overlap none that was free on entry: code emitted inside runs at the same
        time as code emitted before, whose released slices are on the free list (concurrent_loops.py). Slices
        released inside are reused inside; on exit both sets are free."""
        held, self._free = self._free, []
        try:
            yield
        finally:
            for offset, size in held:
                self._insert_free(offset, size)

    def release(self, offset: int) -> None:
        size = self.live.pop(offset)
        if not self.reuse:
            return
        self._insert_free(offset, size)

    def _insert_free(self, offset: int, size: int) -> None:
        free = self._free
        k = 0
        while k < len(free) and free[k][0] < offset:
            k += 1
        free.insert(k, (offset, size))
        if k + 1 < len(free) and offset + size == free[k + 1][0]:        # merge with the next slice
            free[k] = (offset, size + free.pop(k + 1)[1])
        if k > 0 and free[k - 1][0] + free[k - 1][1] == offset:          # and with the previous one
            free[k - 1] = (free[k - 1][0], free[k - 1][1] + free.pop(k)[1])


def leaves(tree: ValueTree) -> list[BufferRef]:
    if isinstance(tree, tuple):
        return [leaf for t in tree for leaf in leaves(t)]
    return [] if tree is None else [tree]


def leaf_count(shape: Shape) -> int:
    return len([s for s in shape.leaves() if not s.is_token])
