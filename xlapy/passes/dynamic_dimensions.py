"""Dynamic dimension inference (XLA's DynamicDimensionInference): which dimensions of each instruction are
dynamic, and the s32 scalar instruction that holds each one's size at run time. The dynamic_padder pass uses it.

A Sizes value mirrors a shape: for an array, a tuple with one entry per dimension, None when the dimension is
static (its size is its bound) or the s32[] instruction holding its size; for a tuple shape, a tuple of its
elements' Sizes. A rule derives an instruction's Sizes from its operands'; derived sizes (a slice of a dynamic
dimension, a concatenation, a merge of dimensions) append their s32 arithmetic to the computation.

| op | result sizes |
|---|---|
| set-dimension-size | the operand's, `dimensions` set to the size operand (declared static: RemoveDynamicDimension) |
| dynamic-reshape | the size operands of the dimensions the result declares dynamic |
| elementwise ops, convert, select, clamp, map, copy | per dimension, the first operand of full rank with a size |
| broadcast, transpose | the operand's, moved to where the dimensions go |
| reshape | per group of dimensions with equal products (reshape_groups), see below |
| slice | ceil((min(size, limit) - start) / stride), at least 0 |
| concatenate | the sum of the operands' sizes along the dimension; other dimensions from the operands |
| pad (no interior or high padding on a dynamic dimension) | size + low, at least 0 |
| reduce, reduce-window (windows of one, or as wide as their padding) | the kept dimensions' sizes |
| dot | batch, then lhs free, then rhs free dimensions' sizes |
| gather | batch dimensions from the indices, offset dimensions static |
| scatter, dynamic-update-slice, sort, cumulative ops | the operand's |
| dynamic-slice | the operand's where the slice takes the whole dimension, else static |
| tuple, get-tuple-element, opt-barrier | the elements' |
| custom-call SliceToDynamic(data, size...) | the size operands (XLA's marker in modules it has padded already) |
| anything else with a dynamic operand or result | UnimplementedError naming the op (a call: inline it first) |

A reshape keeps the valid elements a prefix of each group of dimensions when the group's dynamic dimension is
its first one of size other than 1, in and out; the size then scales by the ratio of the products of the
group's other dimensions. Any other dynamic dimension of a reshape is unsupported.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from ..errors import UnimplementedError
from ..hlo import Instruction, Shape
from .builder import Builder

Sizes = tuple
Size = Instruction | None          # None: static, the bound


def static(shape: Shape) -> Sizes:
    if shape.is_tuple:
        return tuple(static(s) for s in shape.tuple_shapes)
    return (None,) * (shape.rank if shape.is_array else 0)


def is_dynamic(sizes: Sizes) -> bool:
    return any(is_dynamic(s) if isinstance(s, tuple) else s is not None for s in sizes)


def unsupported(inst: Instruction, why: str = "") -> UnimplementedError:
    return UnimplementedError(f"dynamic_padder: {inst.opcode} {inst.name} on a dynamic dimension is not supported"
                              + (f" ({why})" if why else ""))


class SizeMath:
    """s32 scalar arithmetic on sizes, appended to one computation; a static size is its bound, an int."""

    def __init__(self, builder: Builder):
        self.b = builder

    def value(self, size: Size | int) -> Instruction:
        return size if isinstance(size, Instruction) else self.b.scalar(int(size), "s32")

    def _binary(self, opcode: str, x: Size | int, y: Size | int) -> Instruction:
        return self.b.emit(opcode, [self.value(x), self.value(y)])

    def add(self, x, y):
        return self._binary("add", x, y)

    def sub(self, x, y):
        return self._binary("subtract", x, y)

    def mul(self, x, y):
        return x if isinstance(y, int) and y == 1 else self._binary("multiply", x, y)

    def div(self, x, y):
        return x if isinstance(y, int) and y == 1 else self._binary("divide", x, y)

    def min(self, x, y):
        return self._binary("minimum", x, y)

    def max(self, x, y):
        return self._binary("maximum", x, y)


Rule = Callable[[SizeMath, Instruction, list], Sizes]


# -- rules ----------------------------------------------------------------------------------------------
def _set_dimension_size(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    d = inst.attrs["dimensions"][0]
    out = list(ops[0])
    out[d] = inst.operands[1] if inst.shape.is_dynamic_dim(d) else None
    return tuple(out)


def _dynamic_reshape(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    return tuple(inst.operands[1 + d] if inst.shape.is_dynamic_dim(d) else None for d in range(inst.shape.rank))


def _elementwise(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    rank = inst.shape.rank
    out: list[Size] = [None] * rank
    for o, sizes in zip(inst.operands, ops):
        if o.shape.is_array and o.shape.rank == rank:
            out = [mine if mine is not None else theirs for mine, theirs in zip(out, sizes)]
    return tuple(out)


def _broadcast(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    out: list[Size] = [None] * inst.shape.rank
    for i, d in enumerate(inst.attrs.get("dimensions", ())):
        out[d] = ops[0][i]
    return tuple(out)


def _transpose(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    return tuple(ops[0][p] for p in inst.attrs["dimensions"])


def reshape_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Consecutive groups of source and result dimensions with equal element counts, each as short as it can
    be (XLA's CommonFactors); a dimension of size 1 that has no partner joins the group before it."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        gi, gj, pi, pj = [], [], 1, 1
        if i < len(src):
            gi, pi, i = [i], src[i], i + 1
        if j < len(dst):
            gj, pj, j = [j], dst[j], j + 1
        while pi != pj:
            if pi < pj and i < len(src):
                gi, pi, i = gi + [i], pi * src[i], i + 1
            elif pj < pi and j < len(dst):
                gj, pj, j = gj + [j], pj * dst[j], j + 1
            else:
                break
        while i < len(src) and src[i] == 1 and not (j < len(dst) and dst[j] == 1):
            gi, i = gi + [i], i + 1
        while j < len(dst) and dst[j] == 1 and not (i < len(src) and src[i] == 1):
            gj, j = gj + [j], j + 1
        groups.append((gi, gj))
    return groups


def _leading(dims: list[int], bounds: Sequence[int]) -> int | None:
    """The group's first dimension of size other than 1 (the one whose size may vary and keep a prefix)."""
    return next((d for d in dims if bounds[d] != 1), dims[0] if dims else None)


def _reshape(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    src, dst = inst.operands[0].shape.dims, inst.shape.dims
    out: list[Size] = [None] * len(dst)
    for gi, gj in reshape_groups(src, dst):
        dynamic = [d for d in gi if ops[0][d] is not None]
        if not dynamic:
            continue
        lead_in, lead_out = _leading(gi, src), _leading(gj, dst)
        if dynamic != [lead_in] or lead_out is None:
            raise unsupported(inst, f"dimension {dynamic[0]} of {inst.operands[0].shape} is not the most major of "
                                    f"the dimensions it merges or splits into")
        rest_in = math.prod(src[d] for d in gi if d != lead_in)
        rest_out = math.prod(dst[d] for d in gj if d != lead_out)
        if rest_in % rest_out == 0:
            out[lead_out] = sm.mul(ops[0][lead_in], rest_in // rest_out)
        elif rest_out % rest_in == 0:
            out[lead_out] = sm.div(ops[0][lead_in], rest_out // rest_in)
        else:
            raise unsupported(inst, "the dynamic size does not scale by a whole ratio")
    return tuple(out)


def slice_size(sm: SizeMath, size: Instruction, start: int, limit: int, stride: int) -> Instruction:
    # ceil((min(size, limit) - start) / stride), at least 0
    valid = sm.sub(sm.min(size, limit), start)
    if stride != 1:
        valid = sm.div(sm.add(valid, stride - 1), stride)
    return sm.max(valid, 0)


def _slice(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    out = []
    for size, r in zip(ops[0], inst.attrs["slice"]):
        out.append(None if size is None else slice_size(sm, size, r.start, r.limit, r.stride))
    return tuple(out)


def _concatenate(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    c = inst.attrs["dimensions"][0]
    out = list(_elementwise(sm, inst, ops))
    if any(sizes[c] is not None for sizes in ops):
        total: Size | int = 0
        for o, sizes in zip(inst.operands, ops):
            part = sizes[c] if sizes[c] is not None else o.shape.dims[c]
            total = part if isinstance(total, int) and total == 0 else sm.add(total, part)
        out[c] = sm.value(total)
    else:
        out[c] = None
    return tuple(out)


def _pad(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    out = []
    for size, p in zip(ops[0], inst.attrs["padding"]):
        if size is None:
            out.append(None)
        elif p.interior or p.high:
            raise unsupported(inst, "high or interior padding of a dynamic dimension")
        else:
            out.append(sm.max(sm.add(size, p.low), 0) if p.low else size)
    return tuple(out)


def _reduce(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    reduced = set(inst.attrs["dimensions"])
    n = len(inst.operands) // 2
    kept = tuple(s for d, s in enumerate(_elementwise(sm, inst.operands[0], ops[:n])) if d not in reduced)
    return tuple(kept for _ in range(n)) if inst.shape.is_tuple else kept


def _reduce_window(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    n = len(inst.operands) // 2
    sizes = _elementwise(sm, inst.operands[0], ops[:n])
    out = []
    for size, w in zip(sizes, inst.attrs["window"].dims):
        if size is None:
            out.append(None)
        elif w.stride == 1 and w.base_dilation == 1 and w.window_dilation == 1 \
                and w.padding_low + w.padding_high == w.size - 1:
            out.append(size)              # one output per input: a cumulative op or a same-size window
        else:
            raise unsupported(inst, "a window that does not keep the dimension's size")
    out = tuple(out)
    return tuple(out for _ in range(n)) if inst.shape.is_tuple else out


def _dot(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    a = inst.attrs
    lb, lc = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("lhs_contracting_dims", ()))
    rb, rc = tuple(a.get("rhs_batch_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    lhs, rhs = ops
    batch = [lhs[x] if lhs[x] is not None else rhs[y] for x, y in zip(lb, rb)]
    lfree = [lhs[d] for d in range(len(lhs)) if d not in lb and d not in lc]
    rfree = [rhs[d] for d in range(len(rhs)) if d not in rb and d not in rc]
    return tuple(batch + lfree + rfree)


def _gather(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    offset = set(inst.attrs.get("offset_dims", ()))
    ivd = int(inst.attrs["index_vector_dim"])
    index_sizes = [s for d, s in enumerate(ops[1]) if d != ivd]
    batch = iter(index_sizes)
    return tuple(None if d in offset else next(batch, None) for d in range(inst.shape.rank))


def _dynamic_slice(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    whole = zip(ops[0], inst.attrs["dynamic_slice_sizes"], inst.operands[0].shape.dims)
    return tuple(size if n == bound else None for size, n, bound in whole)


def _first_operand(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    return ops[0]


def _sort(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    sizes = _elementwise(sm, inst.operands[0], ops)
    return tuple(sizes for _ in inst.operands) if inst.shape.is_tuple else sizes


def _tuple(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    return tuple(ops)


def _get_tuple_element(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    return ops[0][int(inst.attrs["index"])]


def _static_result(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    return static(inst.shape)


_ELEMENTWISE_LIKE = ("convert", "bitcast-convert", "copy", "reduce-precision", "select", "clamp", "map", "compare",
                     "is-finite", "real", "imag", "complex", "stochastic-convert")

RULES: dict[str, Rule] = {
    **{op: _elementwise for op in _ELEMENTWISE_LIKE},
    "set-dimension-size": _set_dimension_size,
    "dynamic-reshape": _dynamic_reshape,
    "get-dimension-size": _static_result,
    "broadcast": _broadcast,
    "transpose": _transpose,
    "reshape": _reshape,
    "slice": _slice,
    "concatenate": _concatenate,
    "pad": _pad,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "dot": _dot,
    "gather": _gather,
    "scatter": _first_operand,
    "dynamic-update-slice": _first_operand,
    "dynamic-slice": _dynamic_slice,
    "sort": _sort,
    "tuple": _tuple,
    "get-tuple-element": _get_tuple_element,
    "opt-barrier": _first_operand,
    "add-dependency": _first_operand,
}


def _custom_call(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    """XLA's markers of an already padded module: SliceToDynamic(data, size...) gives its sizes, PadToStatic
    makes them static again; any other target with a dynamic operand or result is unsupported."""
    target = inst.attrs.get("custom_call_target")
    if target == "SliceToDynamic":
        return tuple(inst.operands[1 + d] if inst.shape.is_dynamic_dim(d) else None for d in range(inst.shape.rank))
    if target == "PadToStatic":
        return static(inst.shape)
    raise unsupported(inst, f"custom-call target {target}")


RULES["custom-call"] = _custom_call
_SOURCES = ("set-dimension-size", "dynamic-reshape", "custom-call")      # may make sizes from static operands


def _declares_dynamic(shape: Shape) -> bool:
    if shape.is_tuple:
        return any(_declares_dynamic(s) for s in shape.tuple_shapes)
    return any(shape.is_dynamic_dim(d) for d in range(shape.rank))


def rule_for(inst: Instruction) -> Rule | None:
    if inst.opcode in RULES:
        return RULES[inst.opcode]
    return _elementwise if inst.info.is_elementwise else None


def infer(sm: SizeMath, inst: Instruction, ops: list) -> Sizes:
    """The Sizes of inst's result from its operands'. An op with no rule may neither read a dynamic operand nor
    declare a dynamic result (a call returning one: the size would come from inside another computation)."""
    dynamic = any(is_dynamic(s) for s in ops)
    rule = rule_for(inst)
    if rule is None:
        if dynamic or _declares_dynamic(inst.shape):
            raise unsupported(inst, "a dynamic result from a called computation: inline calls first (call-inliner)"
                              if inst.called_computations() and not dynamic else "")
        return static(inst.shape)
    if not dynamic and not (inst.opcode in _SOURCES and _declares_dynamic(inst.shape)):
        return static(inst.shape)
    return rule(sm, inst, ops)


__all__ = ["Sizes", "static", "is_dynamic", "unsupported", "SizeMath", "RULES", "infer", "reshape_groups",
           "slice_size"]
