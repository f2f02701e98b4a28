"""Batching rules of reductions, windows and sorting: the batch axis goes to dimension 0 of every input, the
reduced / sorted dimensions shift by one, a window gets a size-1 dimension in front. The scalar reducer
and comparator computations are unchanged.

Batched init values (a reduce whose starting value differs per example) have no vectorized form in HLO:
those reductions run once per example (common.per_example), as do the ops that have no vectorized rule at
all (scan, the opaque ones).
"""
from __future__ import annotations

from ...hlo import Shape
from ...hlo.attrs import Window, WindowDim
from .common import Batcher, batched_dims, per_example, per_example_rule, shift


def _results(inst, size: int) -> Shape:
    if inst.shape.is_tuple:
        return Shape.tuple_of([Shape.array(s.element_type, (size,) + tuple(s.dims)) for s in inst.shape.tuple_shapes])
    return Shape.array(inst.shape.element_type, (size,) + tuple(inst.shape.dims))


def _dims_of(inst):
    return (0,) * len(inst.shape.tuple_shapes) if inst.shape.is_tuple else 0


def _reduce(b: Batcher, inst, ops, dims):
    """Inputs batched at 0, reduced dimensions shifted; a batched init value: per example."""
    n = len(ops) // 2
    if any(d is not None for d in dims[n:]):
        return per_example(b, inst, ops, dims)
    xs = [b.front(o, d) for o, d in zip(ops[:n], dims[:n])]
    attrs = dict(inst.attrs, dimensions=shift(inst.attrs.get("dimensions", ())))
    return b.emit("reduce", xs + list(ops[n:]), attrs, shape=_results(inst, b.size)), _dims_of(inst)


def _window(w: Window) -> Window:
    return Window((WindowDim(1),) + tuple(w.dims))


def _reduce_window(b: Batcher, inst, ops, dims):
    """Inputs batched at 0 with a size-1 window dimension in front; a batched init value: per example."""
    n = len(ops) // 2
    if any(d is not None for d in dims[n:]):
        return per_example(b, inst, ops, dims)
    xs = [b.front(o, d) for o, d in zip(ops[:n], dims[:n])]
    attrs = dict(inst.attrs, window=_window(inst.attrs["window"]))
    return b.emit("reduce-window", xs + list(ops[n:]), attrs, shape=_results(inst, b.size)), _dims_of(inst)


def _select_and_scatter(b: Batcher, inst, ops, dims):
    """Operand and source batched at 0, a size-1 window dimension in front; a batched init value: per example."""
    if dims[2] is not None:
        return per_example(b, inst, ops, dims)
    x, src = b.front(ops[0], dims[0]), b.front(ops[1], dims[1])
    attrs = dict(inst.attrs, window=_window(inst.attrs["window"]))
    return b.emit("select-and-scatter", [x, src, ops[2]], attrs, shape=_results(inst, b.size)), 0


def _sort(b: Batcher, inst, ops, dims):
    xs = [b.front(o, d) for o, d in zip(ops, dims)]
    attrs = dict(inst.attrs, dimensions=shift(inst.attrs["dimensions"]))
    return b.emit("sort", xs, attrs, shape=_results(inst, b.size)), _dims_of(inst)


def _topk(b: Batcher, inst, ops, dims):
    """top-k works on the last dimension: batched at 0 it is unchanged."""
    x = b.front(ops[0], dims[0])
    return b.emit("topk", [x], dict(inst.attrs), shape=_results(inst, b.size)), _dims_of(inst)


RULES = {
    "reduce": _reduce, "reduce-window": _reduce_window, "select-and-scatter": _select_and_scatter,
    "sort": _sort, "topk": _topk,
    "scan": per_example_rule("HLO's scan op (the front end lowers lax.scan to while; a parsed module may hold it)"),
}

__all__ = ["RULES", "batched_dims"]
