"""Multi-indices and memory: logical index (one i64 per dimension) <-> linear offset in a buffer's layout."""
from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from ...hlo.shape import Shape
from .irhelpers import i64


def major_to_minor(shape: Shape) -> list[int]:
    """Dimensions from the most major to the most minor (row-major when the shape has no layout)."""
    if shape.layout is None or len(shape.layout.minor_to_major) != shape.rank:
        return list(range(shape.rank))
    return list(reversed(shape.layout.minor_to_major))


def placed(dims: Sequence[int], ivs: Sequence, rank: int) -> list:
    """The index of rank `rank` whose dimension dims[k] is ivs[k] (entries no dim names stay None): loop
    variables, which run in layout order, put back in logical order."""
    index: list = [None] * rank
    for d, iv in zip(dims, ivs):
        index[d] = iv
    return index


def is_row_major(shape: Shape) -> bool:
    return major_to_minor(shape) == list(range(shape.rank))


def strides(shape: Shape) -> list[int]:
    """Element strides per logical dimension in the physical layout."""
    out = [0] * shape.rank
    step = 1
    for d in reversed(major_to_minor(shape)):
        out[d] = step
        step *= shape.dims[d]
    return out


def linear_index(b: ir.IRBuilder, index: Sequence[ir.Value], shape: Shape) -> ir.Value:
    """The element offset of the logical `index` in a buffer laid out as `shape`."""
    total = None
    for i, s in zip(index, strides(shape)):
        term = i if s == 1 else b.mul(i, i64(s), flags=["nsw", "nuw"])
        total = term if total is None else b.add(total, term, flags=["nsw", "nuw"])
    return total if total is not None else i64(0)


def delinearize(b: ir.IRBuilder, linear: ir.Value, dims: Sequence[int], order: Sequence[int]) -> list[ir.Value]:
    """The logical index of element `linear` of an array of `dims` whose dimensions, major to minor, are
    `order`."""
    index: list[ir.Value | None] = [None] * len(dims)
    rest = linear
    for d in reversed(list(order)):          # minor first
        n = dims[d]
        if d == order[0]:
            index[d] = rest
        elif n == 1:
            index[d] = i64(0)
        else:
            index[d] = b.urem(rest, i64(n))
            rest = b.udiv(rest, i64(n))
    return index  # type: ignore[return-value]


def row_major_linear(b: ir.IRBuilder, index: Sequence[ir.Value], dims: Sequence[int]) -> ir.Value:
    total = None
    step = 1
    for i, n in reversed(list(zip(index, dims))):
        if n != 1:
            term = i if step == 1 else b.mul(i, i64(step), flags=["nsw", "nuw"])
            total = term if total is None else b.add(total, term, flags=["nsw", "nuw"])
        step *= n
    return total if total is not None else i64(0)
