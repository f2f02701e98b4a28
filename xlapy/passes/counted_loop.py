"""Building `for i in range(n)` as an HLO while loop, for the expanders (scatter, select-and-scatter).

    results = counted_loop(comp, n, [a, b], body)    # body(bc, i, [a', b']) -> [new_a, new_b]

The loop state is the tuple (i: s32[], values...); the condition is i < n; `body` emits into the body
computation `bc` and returns the new values (same shapes). Returns the final values in `comp`.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..hlo import Computation, Instruction, Shape
from .build import constant, emit, new_computation, parameter

Body = Callable[[Computation, Instruction, list[Instruction]], list[Instruction]]


def gte(comp: Computation, tup: Instruction, index: int) -> Instruction:
    return emit(comp, "get-tuple-element", [tup], {"index": index}, shape=tup.shape.tuple_shapes[index])


def scalar_of(comp: Computation, arr: Instruction, index: int) -> Instruction:
    """arr[index] of a rank-1 array, as a scalar."""
    from ..hlo.attrs import SliceRange
    one = emit(comp, "slice", [arr], {"slice": (SliceRange(index, index + 1, 1),)})
    return emit(comp, "reshape", [one], shape=Shape.scalar(arr.shape.element_type))


def counted_loop(comp: Computation, trip_count: int, values: Sequence[Instruction], body: Body,
                 name: str = "loop") -> list[Instruction]:
    module = comp.parent
    state_shape = Shape.tuple_of([Shape.scalar("s32")] + [v.shape for v in values])

    cond = new_computation(module, f"{name}_condition")
    cs = parameter(cond, 0, state_shape, "state")
    ci = gte(cond, cs, 0)
    n = constant(cond, trip_count, "s32")
    cond.root = emit(cond, "compare", [ci, n], {"direction": "LT"})

    bc = new_computation(module, f"{name}_body")
    bs = parameter(bc, 0, state_shape, "state")
    i = gte(bc, bs, 0)
    carried = [gte(bc, bs, k + 1) for k in range(len(values))]
    new_values = body(bc, i, carried)
    one = constant(bc, 1, "s32")
    next_i = emit(bc, "add", [i, one])
    bc.root = emit(bc, "tuple", [next_i] + list(new_values), shape=state_shape)

    zero = constant(comp, 0, "s32")
    init = emit(comp, "tuple", [zero] + list(values), shape=state_shape)
    loop = emit(comp, "while", [init], {"condition": cond, "body": bc}, shape=state_shape)
    return [gte(comp, loop, k + 1) for k in range(len(values))]
