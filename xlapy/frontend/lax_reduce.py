"""lax reductions, windows, sorting, gather and scatter (re-exported by xlapy.lax).

Reducer/comparator computations are traced from Python functions (scalar parameters) or built directly
for the monoids JAX recognizes, so `reduce_sum` prints as JAX's `reduce(x, 0), to_apply=region_0`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..hlo import Computation
from ..hlo.attrs import Window, WindowDim
from . import dtypes
from .lax_dot_conv import padtype_to_pads
from .lax_elementwise import (add, bitwise_and, bitwise_or, eq, ge, gt, le, lt, max as lax_max, min as lax_min, mul,
                              ne, select)
from .lax_operands import canonical_axis, convert, lax_error
from .lax_shapes import broadcast_in_dim, broadcasted_iota, full, full_like, slice as lax_slice
from .pytree import tree_flatten, tree_unflatten
from .lazy import state as lazy_state
from .tracer import ShapedArray, Trace, aval, bind, current_trace, trace_function


# -- reducer computations --------------------------------------------------------------------------

def scalar_computation(fn: Callable, avals: Sequence[ShapedArray], in_tree=None, name: str = "region") -> Computation:
    """Trace `fn` over scalar parameters of `avals` into a computation (no captures); tuple root if several."""
    from .pytree import tree_structure
    in_tree = in_tree or tree_structure(tuple(range(len(avals))))
    trace, outs, _ = trace_function(fn, [ShapedArray((), a.dtype) for a in avals], in_tree, name,
                                    allow_captures=False)
    return trace.finish(outs)


_LAZY_MONOIDS: dict[tuple, Computation] = {}     # (opcode, dtype, name) -> the computation lazy mode records


def monoid_computation(opcode: str, dtype, name: str) -> Computation:
    """region { a = parameter(0); b = parameter(1); ROOT opcode(a, b) } with instructions named `name`.
    Recorded lazily (outside a trace in lazy mode) it is built once per (opcode, dtype, name): a lazy node keys
    its computations by object (lazy/graph.py computation_key) and each cut builds copies of them."""
    if current_trace() is None and lazy_state.enabled():
        key = (opcode, np.dtype(dtype), name)
        comp = _LAZY_MONOIDS.get(key)
        if comp is None:
            comp = _LAZY_MONOIDS[key] = _monoid_computation(opcode, dtype, name)
        return comp
    return _monoid_computation(opcode, dtype, name)


def _monoid_computation(opcode: str, dtype, name: str) -> Computation:
    trace = Trace("region")
    a = trace.new_param(ShapedArray((), np.dtype(dtype)), name)
    b = trace.new_param(ShapedArray((), np.dtype(dtype)), name)
    from ..passes.build import make
    root = trace.add(make(opcode, [a.inst, b.inst], name=name))
    return trace.finish([root])


def reduction_identity(kind: str, dtype) -> Any:
    """The identity of the `kind` monoid ("sum", "prod", "max", "min", "and", "or", "xor") as a `dtype` scalar."""
    dt = np.dtype(dtype)
    if kind in ("sum", "or", "xor"):
        return np.zeros((), dt)
    if kind == "prod":
        return np.ones((), dt)
    if kind == "and":
        return np.array(True) if dt == np.bool_ else np.array(-1).astype(dt)
    if dt == np.bool_:
        return np.array(kind == "min")
    if dtypes.is_inexact(dt):
        return np.array(-np.inf if kind == "max" else np.inf, dt)
    info = np.iinfo(dt)
    return np.array(info.min if kind == "max" else info.max, dt)


_MONOIDS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum", "and": "and", "or": "or",
            "xor": "xor"}


def _axes(operand, axes, name: str) -> tuple[int, ...]:
    nd = aval(operand).ndim
    if axes is None:
        return tuple(range(nd))
    if isinstance(axes, int):
        axes = (axes,)
    return tuple(sorted({canonical_axis(int(a), nd, name) for a in axes}))


def _monoid_reduce(kind: str, operand, axes, name: str):
    a = aval(operand)
    dims = _axes(operand, axes, name)
    reducer = monoid_computation(_MONOIDS[kind], a.dtype, name)
    init = reduction_identity(kind, a.dtype)
    return bind("reduce", [operand, init], {"dimensions": dims, "to_apply": reducer}, name=name,
                weak_type=a.weak_type)


def reduce_sum(operand, axes=None):
    return _monoid_reduce("sum", operand, axes, "reduce_sum")


def reduce_prod(operand, axes=None):
    return _monoid_reduce("prod", operand, axes, "reduce_prod")


def reduce_max(operand, axes=None):
    return _monoid_reduce("max", operand, axes, "reduce_max")


def reduce_min(operand, axes=None):
    return _monoid_reduce("min", operand, axes, "reduce_min")


def reduce_and(operand, axes=None):
    return _monoid_reduce("and", operand, axes, "reduce_and")


def reduce_or(operand, axes=None):
    return _monoid_reduce("or", operand, axes, "reduce_or")


def reduce_xor(operand, axes=None):
    return _monoid_reduce("xor", operand, axes, "reduce_xor")


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):
    """General (variadic) reduce: computation(accumulators, elements) -> accumulators, pytrees like operands."""
    flat_ops, tree = tree_flatten(operands)
    flat_inits, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise lax_error("reduce", f"operands {tree} and init_values {init_tree} have different structures")
    inits = [convert(v, aval(o).dtype) if aval(v).dtype != aval(o).dtype else v
             for v, o in zip(flat_inits, flat_ops)]
    pair_tree = tree_flatten((init_values, init_values))[1]
    reducer_fn = computation
    reducer = scalar_computation(lambda acc, x: reducer_fn(acc, x), [aval(o) for o in flat_ops] * 2, pair_tree)
    dims = tuple(sorted(canonical_axis(int(d), aval(flat_ops[0]).ndim, "reduce") for d in dimensions))
    out = bind("reduce", flat_ops + inits, {"dimensions": dims, "to_apply": reducer}, name="reduce")
    return tree_unflatten(tree, out if isinstance(out, list) else [out])


def _arg_reduce(operand, axis: int, index_dtype, better: Callable, name: str):
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, name)
    index_dtype = dtypes.canonicalize(index_dtype)
    idx = broadcasted_iota(index_dtype, a.shape, axis)
    floating = dtypes.is_inexact(a.dtype)

    def reducer(acc, x):
        (av, ai), (bv, bi) = acc, x
        pick = better(av, bv)
        if floating:
            pick = bitwise_or(pick, ne(av, av))
        value = select(pick, av, bv)
        tie = bitwise_and(eq(av, bv), lt(ai, bi))
        index = select(bitwise_or(pick, tie), ai, bi)
        return value, index
    init = reduction_identity("max" if better is gt else "min", a.dtype)
    comp = scalar_computation(reducer, [a, ShapedArray((), index_dtype)] * 2,
                              tree_flatten(((0, 0), (0, 0)))[1])
    _, index = bind("reduce", [operand, idx, init, np.zeros((), index_dtype)],
                    {"dimensions": (axis,), "to_apply": comp}, name="reduce")
    return index


def argmax(operand, axis: int, index_dtype=np.int32):
    """Index of the maximum along `axis` (first on ties; NaN counts as the maximum), as JAX lowers it."""
    return _arg_reduce(operand, axis, index_dtype, gt, "argmax")


def argmin(operand, axis: int, index_dtype=np.int32):
    return _arg_reduce(operand, axis, index_dtype, lt, "argmin")


# -- windows ---------------------------------------------------------------------------------------

def _window(window_dimensions, window_strides, padding, base_dilation, window_dilation, shape) -> Window:
    n = len(window_dimensions)
    strides = tuple(window_strides) if window_strides else (1,) * n
    base = tuple(base_dilation) if base_dilation else (1,) * n
    wdil = tuple(window_dilation) if window_dilation else (1,) * n
    if isinstance(padding, str):
        in_sp = [(s - 1) * b + 1 if s else 0 for s, b in zip(shape, base)]
        win_sp = [(w - 1) * d + 1 for w, d in zip(window_dimensions, wdil)]
        padding = padtype_to_pads(in_sp, win_sp, strides, padding)
    return Window(tuple(WindowDim(int(window_dimensions[i]), int(strides[i]), int(padding[i][0]), int(padding[i][1]),
                                  int(wdil[i]), int(base[i])) for i in range(n)))


# lax's own binary ops, recognized when passed as reduce_window's computation: (op, monoid kind, op name)
_MONOID_FNS = ((add, "sum", "reduce_window_sum"), (lax_max, "max", "reduce_window_max"),
               (lax_min, "min", "reduce_window_min"), (mul, "prod", "reduce_window"))


def reduce_window(operand, init_value, computation: Callable, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None, padding="VALID", base_dilation=None,
                  window_dilation=None):
    a = aval(operand)
    if len(window_dimensions) != a.ndim:
        raise lax_error("reduce_window", f"window_dimensions {tuple(window_dimensions)} must have one entry per "
                                         f"dimension of {a}")
    win = _window(window_dimensions, window_strides, padding, base_dilation, window_dilation, a.shape)
    monoid = next((m for m in _MONOID_FNS if m[0] is computation), None)
    if monoid is not None:
        _, kind, name = monoid
        comp = monoid_computation(_MONOIDS[kind], a.dtype, name)
    else:
        comp = scalar_computation(computation, [a, a])
        name = "reduce_window"
    if aval(init_value).dtype != a.dtype:
        init_value = convert(init_value, a.dtype)
    return bind("reduce-window", [operand, init_value], {"window": win, "to_apply": comp}, name=name,
                weak_type=a.weak_type)


def _cumulative(kind: str, name: str):
    def op(operand, axis: int = 0, reverse: bool = False):
        a = aval(operand)
        axis = canonical_axis(axis, a.ndim, name)
        n = a.shape[axis]
        if n == 0:          # nothing to accumulate (a window of size 0 is not an HLO window): the empty operand
            return operand
        dims = [1] * a.ndim
        dims[axis] = n
        pads = [(0, 0)] * a.ndim
        pads[axis] = (0, n - 1) if reverse else (n - 1, 0)
        win = _window(dims, None, pads, None, None, a.shape)
        opname = {"sum": "reduce_window_sum", "max": "reduce_window_max", "min": "reduce_window_min",
                  "prod": "reduce_window"}[kind]
        comp = monoid_computation(_MONOIDS[kind], a.dtype, opname if kind != "prod" else "mul")
        init = reduction_identity(kind, a.dtype)
        return bind("reduce-window", [operand, init], {"window": win, "to_apply": comp}, name=opname,
                    weak_type=a.weak_type)
    op.__name__ = name
    op.__doc__ = f"lax.{name}: the running {kind} along `axis` (a reduce-window, as JAX lowers it)."
    return op


cumsum = _cumulative("sum", "cumsum")
cumprod = _cumulative("prod", "cumprod")
cummax = _cumulative("max", "cummax")
cummin = _cumulative("min", "cummin")


# -- sorting ---------------------------------------------------------------------------------------

def _canonical_float(x):
    """-0.0 -> 0.0 and every NaN -> one NaN, so a total-order compare sorts like numpy."""
    zero = np.zeros((), aval(x).dtype)
    x = select(eq(x, zero), full_like(x, 0), x)
    return select(ne(x, x), full_like(x, np.nan), x)


def _key_compare(direction: str):
    def cmp(x, y):
        if dtypes.is_inexact(aval(x).dtype):
            x, y = _canonical_float(x), _canonical_float(y)
            return bind("compare", [x, y], {"direction": direction, "type": "TOTALORDER"}, name="lt_to")
        return bind("compare", [x, y], {"direction": direction}, name=direction.lower())
    return cmp


def _comparator(num_keys: int, avals: Sequence[ShapedArray], direction: str = "LT") -> Computation:
    less = _key_compare(direction)

    def comparator(*params):
        xs, ys = params[0::2], params[1::2]
        p = None
        for x, y in reversed(list(zip(xs[:num_keys], ys[:num_keys]))):
            here = less(x, y)
            p = here if p is None else select(_key_compare("EQ")(x, y), p, here)
        return p
    flat = [a for a in avals for _ in range(2)]
    return scalar_computation(comparator, flat)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort one array, or several (a sequence) by their first `num_keys`, along `dimension`."""
    multiple = isinstance(operand, (tuple, list))
    ops = list(operand) if multiple else [operand]
    a = aval(ops[0])
    dim = canonical_axis(dimension, a.ndim, "sort")
    comp = _comparator(num_keys, [aval(o) for o in ops])
    out = bind("sort", ops, {"dimensions": (dim,), "is_stable": bool(is_stable), "to_apply": comp}, name="sort")
    return tuple(out) if multiple else out


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    return sort((keys, values), dimension, is_stable, 1)


def top_k(operand, k: int):
    """(values, indices) of the k largest entries along the last axis, largest first (via a stable sort)."""
    a = aval(operand)
    if not 0 <= k <= a.shape[-1]:
        raise lax_error("top_k", f"k={k} is out of range for {a}")
    idx = broadcasted_iota(np.int32, a.shape, a.ndim - 1)
    comp = _comparator(1, [a, ShapedArray((), np.dtype(np.int32))], "GT")
    vals, inds = bind("sort", [operand, idx], {"dimensions": (a.ndim - 1,), "is_stable": True, "to_apply": comp},
                      name="top_k")
    start, limit = (0,) * a.ndim, a.shape[:-1] + (k,)
    return lax_slice(vals, start, limit), lax_slice(inds, start, limit)


# -- gather and scatter ----------------------------------------------------------------------------

@dataclass(frozen=True)
class GatherDimensionNumbers:
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScatterDimensionNumbers:
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode:
    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"


def _mode(mode) -> str:
    m = str(getattr(mode, "value", mode) or "").lower()
    return {"": "default", "drop": "fill", "fill_or_drop": "fill"}.get(m, m)


def _int_indices(indices):
    ia = aval(indices)
    if ia.dtype.kind not in "iu":
        raise lax_error("gather/scatter", f"indices must be integers, got {ia}")
    return indices


def _fill_default(dtype):
    dt = np.dtype(dtype)
    if dtypes.is_inexact(dt):
        return np.array(np.nan, dt)
    if dt == np.bool_:
        return np.array(True)
    info = np.iinfo(dt)
    return np.array(info.min if dt.kind == "i" else info.max, dt)


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int], *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None, fill_value=None):
    """XLA gather; the index vector is the last dimension of start_indices. mode 'clip' (and the default)
    clamps windows into bounds as HLO does; 'fill' returns fill_value for out-of-bounds windows."""
    a, ia = aval(operand), aval(_int_indices(start_indices))
    dn = dimension_numbers
    attrs: dict[str, Any] = {"offset_dims": tuple(dn.offset_dims), "collapsed_slice_dims": tuple(dn.collapsed_slice_dims),
                             "start_index_map": tuple(dn.start_index_map)}
    if dn.operand_batching_dims:
        attrs["operand_batching_dims"] = tuple(dn.operand_batching_dims)
        attrs["start_indices_batching_dims"] = tuple(dn.start_indices_batching_dims)
    attrs["index_vector_dim"] = ia.ndim - 1
    attrs["slice_sizes"] = tuple(int(s) for s in slice_sizes)
    if indices_are_sorted:
        attrs["indices_are_sorted"] = True
    if unique_indices:
        attrs["unique_indices"] = True
    out = bind("gather", [operand, start_indices], attrs, name="gather", weak_type=a.weak_type)
    if _mode(mode) != "fill":
        return out
    # fill: a window is valid when 0 <= start <= dim - slice_size for every indexed operand dim
    limits = np.array([a.shape[d] - slice_sizes[d] for d in dn.start_index_map], dtype=ia.dtype)
    lim = broadcast_in_dim(limits, ia.shape, (ia.ndim - 1,))
    ok = bitwise_and(ge(start_indices, full_like(start_indices, 0)), le(start_indices, lim))
    ok = reduce_and(ok, (ia.ndim - 1,))
    oa = aval(out)
    batch_dims = [d for d in range(oa.ndim) if d not in dn.offset_dims]
    mask = broadcast_in_dim(ok, oa.shape, batch_dims)
    fill = _fill_default(a.dtype) if fill_value is None else np.asarray(fill_value, a.dtype)
    return select(mask, out, full(oa.shape, fill, a.dtype))


def scatter_attrs(dn: ScatterDimensionNumbers, indices_rank: int, to_apply, indices_are_sorted: bool,
                  unique_indices: bool) -> dict[str, Any]:
    """The HLO scatter attributes for JAX's dimension numbers (index vector in the last dim of the indices)."""
    attrs: dict[str, Any] = {"update_window_dims": tuple(dn.update_window_dims),
                             "inserted_window_dims": tuple(dn.inserted_window_dims)}
    if dn.operand_batching_dims:
        attrs["input_batching_dims"] = tuple(dn.operand_batching_dims)
        attrs["scatter_indices_batching_dims"] = tuple(dn.scatter_indices_batching_dims)
    attrs["scatter_dims_to_operand_dims"] = tuple(dn.scatter_dims_to_operand_dims)
    attrs["index_vector_dim"] = indices_rank - 1
    if indices_are_sorted:
        attrs["indices_are_sorted"] = True
    if unique_indices:
        attrs["unique_indices"] = True
    attrs["to_apply"] = to_apply
    return attrs


def _scatter_op(kind: str):
    name = "scatter" if kind == "set" else f"scatter_{kind}"

    def op(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
           indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
        a = aval(operand)
        if aval(updates).dtype != a.dtype:
            updates = convert(updates, a.dtype)
        ia = aval(_int_indices(scatter_indices))
        if _mode(mode) == "clip":
            scatter_indices = _clip_scatter_indices(scatter_indices, a, aval(updates), dimension_numbers)
        if kind == "set":
            trace = Trace("region")
            trace.new_param(ShapedArray((), a.dtype), "scatter")
            b = trace.new_param(ShapedArray((), a.dtype), "scatter")
            comp = trace.finish([b])
        else:
            comp = monoid_computation({"add": "add", "mul": "multiply", "min": "minimum", "max": "maximum"}[kind],
                                      a.dtype, name)
        attrs = scatter_attrs(dimension_numbers, ia.ndim, comp, indices_are_sorted, unique_indices)
        return bind("scatter", [operand, scatter_indices, updates], attrs, name=name, weak_type=a.weak_type)
    op.__name__ = name
    op.__doc__ = (f"lax.{name}: XLA scatter ({kind}); out-of-bounds updates are dropped (mode 'clip' clamps "
                  f"the indices instead).")
    return op


def _clip_scatter_indices(indices, a: ShapedArray, ua: ShapedArray, dn: ScatterDimensionNumbers):
    window_sizes = [ua.shape[d] for d in dn.update_window_dims]
    extent = []
    it = iter(window_sizes)
    for d in range(a.ndim):
        extent.append(1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims else next(it))
    ia = aval(indices)
    upper = np.array([a.shape[d] - extent[d] for d in dn.scatter_dims_to_operand_dims], dtype=ia.dtype)
    hi = broadcast_in_dim(upper, ia.shape, (ia.ndim - 1,))
    return lax_max(lax_min(indices, hi), full_like(indices, 0))


scatter = _scatter_op("set")
scatter_add = _scatter_op("add")
scatter_mul = _scatter_op("mul")
scatter_min = _scatter_op("min")
scatter_max = _scatter_op("max")


__all__ = ["reduce", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
           "reduce_xor", "argmax", "argmin", "reduce_window", "cumsum", "cumprod", "cummax", "cummin", "sort",
           "sort_key_val", "top_k", "gather", "scatter", "scatter_add", "scatter_mul", "scatter_min",
           "scatter_max", "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode",
           "scalar_computation", "monoid_computation"]
