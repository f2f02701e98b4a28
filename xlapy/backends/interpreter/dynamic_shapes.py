"""Interpreter rules for the dynamic-shape ops, on xlapy's static shapes (XLA's padding semantics: a buffer keeps
its bound size, the valid elements first).

The interpreter does not track dynamic sizes: the passes' dynamic_padder rewrites a module with dynamic
dimensions into static HLO (reductions, sorts, concatenations and dots made blind to the padding), and that is
the module to interpret. Here the ops run where no size has to be known, and say so where it would:

| op | rule |
|---|---|
| set-dimension-size(x, size), static result | x (XLA's RemoveDynamicDimension; TF wraps top_k's and sort's slices so) |
| set-dimension-size, dynamic result | UnimplementedError: run dynamic_padder first (dynamic-reshape has no rule) |
| get-dimension-size(x) of a static dimension | its size; of a dynamic one: UnimplementedError, as above |
| custom-call SliceToDynamic(data, sizes...) | data: XLA's marker for a dynamic result, already padded |
| custom-call PadToStatic(x) | (x, the bound of each dimension) |
"""
from __future__ import annotations

import numpy as np

from ...errors import UnimplementedError
from ...hlo import Instruction

_HOW = "run the dynamic_padder pass first (xlapy opt --passes dynamic_padder; the CPU pipeline runs it)"


def _needs_padder(inst: Instruction, what: str) -> UnimplementedError:
    return UnimplementedError(f"interpreter: {inst.opcode} {inst.name} {what}; the interpreter runs static shapes: "
                              f"{_HOW}")


def _set_dimension_size(inst: Instruction, args: list, ev) -> np.ndarray:
    d = inst.attrs["dimensions"][0]
    if inst.shape.is_dynamic_dim(d):
        raise _needs_padder(inst, f"makes dimension {d} dynamic")
    return args[0]


def _get_dimension_size(inst: Instruction, args: list, ev) -> np.ndarray:
    x = inst.operands[0].shape
    d = inst.attrs["dimensions"][0]
    if x.is_dynamic_dim(d):
        raise _needs_padder(inst, f"reads the size of dynamic dimension {d} of {x}")
    return np.array(x.dims[d], np.int32)


def _slice_to_dynamic(inst: Instruction, args: list, ev) -> np.ndarray:
    return args[0]


def _pad_to_static(inst: Instruction, args: list, ev) -> tuple:
    x = args[0]
    return (x,) + tuple(np.array(n, np.int32) for n in x.shape)


HANDLERS = {
    "set-dimension-size": _set_dimension_size,
    "get-dimension-size": _get_dimension_size,
}

CUSTOM_CALL_TARGETS = {"SliceToDynamic": _slice_to_dynamic, "PadToStatic": _pad_to_static}
