"""SelectAndScatterExpander: select-and-scatter => a variadic reduce-window that finds each window's selected
position, then a scatter of the source into those positions (XLA's select_and_scatter_expander.cc does the same).

    select-and-scatter(X, S, init), select=sel, scatter=sc =>
        (_, where) = reduce-window((X, linear_index(X)), (anything, -1)), same window, reducer:
                         (v1, i1), (v2, i2) -> i1 valid and (i2 invalid or sel(v1, v2)) ? (v1, i1) : (v2, i2)
        out = scatter(broadcast(init), where, S), to_apply=sc          (on the flattened operand)

Padding positions carry index -1, are never selected, and a window with no real element scatters nowhere.
The reducer keeps the earlier element unless `sel` says otherwise, which is the order XLA specifies.
"""
from __future__ import annotations

import numpy as np

from ..hlo import Computation, Instruction, Module, Shape
from ..hlo.attrs import window_of
from .build import constant, emit, new_computation
from .builder import Builder
from .lift import lift_elementwise
from .pipeline import Pass


def _linear_index(comp: Computation, shape: Shape, et: str) -> Instruction:
    """An array of shape `shape` holding each element's row-major linear index."""
    total = None
    stride = 1
    for d in reversed(range(shape.rank)):
        iota = emit(comp, "iota", [], {"iota_dimension": d}, shape=Shape.array(et, shape.dims))
        if stride != 1:
            s = emit(comp, "broadcast", [constant(comp, stride, et)], {"dimensions": ()},
                     shape=Shape.array(et, shape.dims))
            iota = emit(comp, "multiply", [iota, s])
        total = iota if total is None else emit(comp, "add", [total, iota])
        stride *= shape.dims[d]
    if total is None:   # rank 0
        total = constant(comp, 0, et)
    return total


def _selecting_reducer(module: Module, select: Computation, vt: str, it: str) -> Computation | None:
    b = Builder(new_computation(module, "select_and_scatter_reducer"))
    v1, i1 = b.parameter(0, Shape.scalar(vt), "v1"), b.parameter(1, Shape.scalar(it), "i1")
    v2, i2 = b.parameter(2, Shape.scalar(vt), "v2"), b.parameter(3, Shape.scalar(it), "i2")
    picked = lift_elementwise(b.comp, select, [v1, v2])
    if picked is None:
        module.remove_computation(b.comp)
        return None
    minus_one = b.scalar(-1, it)
    first_valid = b.compare(i1, minus_one, "NE")
    second_invalid = b.compare(i2, minus_one, "EQ")
    take_first = b.emit("and", [first_valid, b.emit("or", [second_invalid, picked[0]])])
    b.comp.root = b.tuple([b.select(take_first, v1, v2), b.select(take_first, i1, i2)])
    return b.comp


def _expand(comp: Computation, inst: Instruction) -> Instruction | None:
    module = comp.parent
    operand, source, init = inst.operands
    vt = operand.shape.element_type
    it = "s32" if operand.shape.numel < 2 ** 31 - 1 else "s64"
    reducer = _selecting_reducer(module, inst.attrs["select"], vt, it)
    if reducer is None:
        return None
    index = _linear_index(comp, operand.shape.without_layout(), it)
    any_value = constant(comp, np.zeros((), operand.shape.dtype), vt)
    no_index = constant(comp, -1, it)
    out_shape = Shape.tuple_of([Shape.array(vt, source.shape.dims), Shape.array(it, source.shape.dims)])
    window = emit(comp, "reduce-window", [operand, index, any_value, no_index],
                  {"window": window_of(inst), "to_apply": reducer}, shape=out_shape)
    where = emit(comp, "get-tuple-element", [window], {"index": 1}, shape=out_shape.tuple_shapes[1])
    n = source.shape.numel
    flat_where = emit(comp, "reshape", [where], shape=Shape.array(it, (n, 1)))
    flat_source = emit(comp, "reshape", [source], shape=Shape.array(source.shape.element_type, (n,)))
    base = emit(comp, "broadcast", [init], {"dimensions": ()}, shape=Shape.array(vt, (operand.shape.numel,)))
    scattered = emit(comp, "scatter", [base, flat_where, flat_source],
                     {"update_window_dims": (), "inserted_window_dims": (0,), "scatter_dims_to_operand_dims": (0,),
                      "index_vector_dim": 1, "to_apply": inst.attrs["scatter"]}, shape=base.shape)
    return emit(comp, "reshape", [scattered], shape=inst.shape.without_layout())


class SelectAndScatterExpander(Pass):
    name = "select-and-scatter-expander"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in list(module.computations):
            for inst in list(comp.instructions):
                if inst.opcode == "select-and-scatter":
                    repl = _expand(comp, inst)
                    if repl is not None:
                        inst.replace_all_uses_with(repl)
                        changed = True
        return changed
