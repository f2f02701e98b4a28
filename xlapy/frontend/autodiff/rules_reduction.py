"""Derivative rules of reductions, windowed reductions (pooling, cumulative sums) and sort.

    reduce add            VJP: broadcast ct back                     JVP: reduce the tangent
    reduce max/min        JAX's chooser rule: ties share the cotangent equally (also the value output of
                          JAX's variadic argmax/argmin reduce; its index output has no derivative)
    reduce multiply       d prod / d x_i = prod / x_i (NaN where an x_i is 0: partial)
    reduce-window add     VJP: pad the cotangent (interior = stride-1), then a window sum (JAX's rule)
    reduce-window max/min VJP: select-and-scatter (JAX's MaxPool gradient); JVP: a variadic reduce-window
                          that carries the tangent of the selected element
    select-and-scatter    linear in its source; VJP gathers ct at the selected elements (variadic
                          reduce-window), so max-pool gradients are differentiable again
    topk                  values are x at the returned indices: VJP scatter-adds, JVP gathers
    sort                  sort an iota along to get the permutation; VJP un-sorts ct by sorting it on the
                          permutation; JVP sorts the tangents along as extra operands
"""
from __future__ import annotations

from ...hlo import Computation, Instruction, Module, Shape
from ...hlo.attrs import PadDim, Window, WindowDim
from ...passes.build import new_computation, parameter, shared_computation
from ...passes.builder import Builder
from .rules_common import AutodiffError, Emitter, is_float, reducer_kind


def _single_reduce_kind(inst: Instruction) -> str:
    if len(inst.operands) != 2:
        raise AutodiffError(f"differentiation of variadic {inst.opcode} ({inst.name}) is not supported")
    kind = reducer_kind(inst.attrs["to_apply"])
    if kind not in ("add", "maximum", "minimum", "multiply"):
        raise AutodiffError(f"differentiation of {inst.opcode} with reducer "
                            f"'{inst.attrs['to_apply'].root.opcode}' ({inst.name}) is not supported")
    return kind


def _arg_chooser_kind(inst: Instruction) -> str:
    """'maximum'/'minimum' for JAX's argmax/argmin reduce: (values, indices) -> (max, its index), the
    reducer choosing both by one compare of the values. Any other variadic reduce is not supported."""
    comp = inst.attrs["to_apply"]
    root, params = comp.root, comp.parameters
    ok = (len(inst.operands) == 4 and len(params) == 4 and root.opcode == "tuple"
          and all(o.opcode == "select" for o in root.operands)
          and root.operands[0].operands[1:] == [params[0], params[2]]
          and root.operands[0].operands[0] is root.operands[1].operands[0])
    cmp = root.operands[0].operands[0] if ok else None
    if not ok or cmp.opcode != "compare" or cmp.operands != [params[0], params[2]] or \
            not is_float(inst.operands[0].shape) or is_float(inst.operands[1].shape):
        raise AutodiffError(f"differentiation of variadic {inst.opcode} ({inst.name}) is not supported "
                            f"(only the argmax/argmin form)")
    return "maximum" if cmp.attrs.get("direction") in ("GE", "GT") else "minimum"


def _kept_dims(inst: Instruction) -> list[int]:
    dims = inst.attrs["dimensions"]
    return [d for d in range(inst.operands[0].shape.rank) if d not in dims]


def _back(b: Emitter, inst: Instruction, y: Instruction) -> Instruction:
    """A reduce-shaped value broadcast back to the operand's shape."""
    return b.broadcast(y, _kept_dims(inst), inst.operands[0].shape)


def _chooser_masks(b: Emitter, inst: Instruction, value: Instruction):
    """(indicator of the chosen elements as floats, their count per output element)."""
    x = inst.operands[0]
    ind = b.convert(b.compare(x, _back(b, inst, value), "EQ"), x.shape.element_type)
    return ind, b.reduce_sum(ind, inst.attrs["dimensions"])


def _chooser_vjp(b, inst, value, ct):
    ind, count = _chooser_masks(b, inst, value)
    return b.mul(ind, _back(b, inst, b.div(ct, count)))


def _chooser_jvp(b, inst, value, t):
    ind, count = _chooser_masks(b, inst, value)
    return b.div(b.reduce_sum(b.mul(t, ind), inst.attrs["dimensions"]), count)


def _reduce_vjp(b, inst, ct):
    if len(inst.operands) != 2:
        _arg_chooser_kind(inst)
        ct_value = ct[0] if isinstance(ct, list) else b.gte(ct, 0)
        if ct_value is None:
            return [None] * len(inst.operands)
        return [_chooser_vjp(b, inst, b.gte(inst, 0), ct_value)] + [None] * 3
    kind = _single_reduce_kind(inst)
    x = inst.operands[0]
    if kind == "add":
        return [_back(b, inst, ct), b.reduce_sum(ct, range(ct.shape.rank))]
    if kind == "multiply":
        return [b.div(_back(b, inst, b.mul(ct, inst)), x), None]
    return [_chooser_vjp(b, inst, inst, ct), None]


def _reduce_jvp(b, inst, ts):
    x = inst.operands[0]
    t = ts[0] if ts[0] is not None else b.zeros(x.shape)
    if len(inst.operands) != 2:
        _arg_chooser_kind(inst)
        value, index = inst.shape.tuple_shapes
        return b.tuple([_chooser_jvp(b, inst, b.gte(inst, 0), t), b.zeros(index)])
    kind = _single_reduce_kind(inst)
    t_init = ts[1]
    dims = inst.attrs["dimensions"]
    if kind == "add":
        out = b.reduce_sum(t, dims)
        return out if t_init is None else b.add(out, b.broadcast(t_init, (), inst.shape))
    if kind == "multiply":
        return b.reduce_sum(b.div(b.mul(t, _back(b, inst, inst)), x), dims)
    return _chooser_jvp(b, inst, inst, t)


# -- windows ----------------------------------------------------------------------------------------------
def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else 1 + d * (n - 1)


def _reduce_window_sum_vjp(b, inst, ct):
    """JAX's _reduce_window_sum_transpose_rule."""
    x = inst.operands[0]
    win: Window = inst.attrs["window"]
    new_dims, config = [], []
    for w, n_in, n_out in zip(win.dims, x.shape.dims, inst.shape.dims):
        lhs_d, rhs_d, out_d = _dilate(n_in, w.base_dilation), _dilate(w.size, w.window_dilation), _dilate(n_out, w.stride)
        before = rhs_d - w.padding_low - 1
        after = lhs_d + rhs_d - 1 - out_d - before
        config.append(PadDim(before, after, w.stride - 1))
        new_dims.append(WindowDim(w.size, w.base_dilation, 0, 0, w.window_dilation, 1))
    zero = b.scalar(0, ct.shape.element_type)
    padded = b.emit("pad", [ct, zero], {"padding": tuple(config)})
    out = b.emit("reduce-window", [padded, zero], {"window": Window(tuple(new_dims)),
                                                    "to_apply": b.reducer("add", ct.shape.element_type)})
    return [out, None]


def _select_comparator(b: Emitter, kind: str, et: str) -> Computation:
    return b.comparator("GE" if kind == "maximum" else "LE", et)


def _reduce_window_vjp(b, inst, ct):
    kind = _single_reduce_kind(inst)
    if kind == "add":
        return _reduce_window_sum_vjp(b, inst, ct)
    if kind == "multiply":
        raise AutodiffError(f"differentiation of reduce-window with a multiply reducer ({inst.name}) is not supported")
    win: Window = inst.attrs["window"]
    if any(w.base_dilation != 1 or w.window_dilation != 1 or w.window_reversal for w in win.dims):
        raise AutodiffError(f"VJP of max/min pooling with dilation ({inst.name}) is not supported (as in JAX)")
    x = inst.operands[0]
    et = x.shape.element_type
    out = b.emit("select-and-scatter", [x, ct, b.scalar(0, et)],
                 {"window": win, "select": _select_comparator(b, kind, et), "scatter": b.reducer("add", et)})
    return [out, None]


def _chooser_pair_computation(b: Emitter, kind: str, et: str, tangent_et: str) -> Computation:
    """((v0, t0), (v1, t1)) -> the pair whose v wins (v0 on ties): carries a tangent along a max/min."""
    def build() -> Computation:
        pb = Builder(new_computation(b.module, f"ad_choose_{kind}_{et}"))
        vs, ts = Shape.scalar(et), Shape.scalar(tangent_et)
        v0, t0, v1, t1 = [pb.parameter(i, s, n) for i, (s, n) in enumerate([(vs, "v0"), (ts, "t0"), (vs, "v1"),
                                                                             (ts, "t1")])]
        keep = pb.emit("compare", [v0, v1], {"direction": "GE" if kind == "maximum" else "LE"}, name="keep")
        v = pb.emit("select", [keep, v0, v1], name="v")
        t = pb.emit("select", [keep, t0, t1], name="t")
        pb.comp.root = pb.emit("tuple", [v, t], name="pair")
        return pb.comp
    return shared_computation(b.module, ("choose", kind, et, tangent_et), build)


def _gather_selected(b: Emitter, kind: str, x: Instruction, t: Instruction, window: Window) -> Instruction:
    """For every window of x: the element of t where x's max (min) is."""
    et = x.shape.element_type
    init_v = b.scalar(float("-inf") if kind == "maximum" else float("inf"), et)
    init_t = b.scalar(0, t.shape.element_type)
    pair = b.emit("reduce-window", [x, t, init_v, init_t],
                  {"window": window, "to_apply": _chooser_pair_computation(b, kind, et, t.shape.element_type)})
    return b.gte(pair, 1)


def _reduce_window_jvp(b, inst, ts):
    kind = _single_reduce_kind(inst)
    x = inst.operands[0]
    t = ts[0] if ts[0] is not None else b.zeros(x.shape)
    if kind == "add":
        return b.add_instruction(inst.clone_with([t, b.scalar(0, t.shape.element_type)], name="reduce-window.jvp"))
    if kind == "multiply":
        raise AutodiffError(f"differentiation of reduce-window with a multiply reducer ({inst.name}) is not supported")
    return _gather_selected(b, kind, x, t, inst.attrs["window"])


def _sas_kind(inst: Instruction) -> str:
    sel = inst.attrs["select"].root
    if reducer_kind(inst.attrs["scatter"]) != "add" or sel.opcode != "compare":
        raise AutodiffError(f"differentiation of select-and-scatter ({inst.name}) needs an add scatter and a "
                            f"compare select")
    return "maximum" if sel.attrs.get("direction") in ("GE", "GT") else "minimum"


def _select_and_scatter_vjp(b, inst, ct):
    kind = _sas_kind(inst)
    x = inst.operands[0]
    return [None, _gather_selected(b, kind, x, ct, inst.attrs["window"]), None]


def _select_and_scatter_jvp(b, inst, ts):
    _sas_kind(inst)
    x, src, init = inst.operands
    t = ts[1] if ts[1] is not None else b.zeros(src.shape)
    return b.add_instruction(inst.clone_with([x, t, b.scalar(0, t.shape.element_type)], name="select-and-scatter.jvp"))


# -- sort ---------------------------------------------------------------------------------------------------
def _extended_comparator(b: Emitter, comp: Computation, extra: list[str]) -> Computation:
    """comp with two more (ignored) parameters per extra operand type."""
    def build() -> Computation:
        new = comp.clone(suffix="ad")
        n = len(comp.parameters)
        for k, et in enumerate(extra):
            for j in range(2):
                parameter(new, n + 2 * k + j, Shape.scalar(et), f"extra{k}_{j}")
        return b.module.add_computation(new)
    return shared_computation(b.module, ("sort-ext", id(comp), tuple(extra)), build)


def _sort_with(b: Emitter, inst: Instruction, extras: list[Instruction]) -> list[Instruction]:
    """inst's sort with `extras` sorted along; returns the sorted extras."""
    comparator = _extended_comparator(b, inst.attrs["to_apply"], [e.shape.element_type for e in extras])
    attrs = dict(inst.attrs)
    attrs["to_apply"] = comparator
    ops = list(inst.operands) + extras
    shape = Shape.tuple_of([o.shape.without_layout() for o in ops])
    sorted_ = b.emit("sort", ops, attrs, shape=shape)
    return [b.gte(sorted_, len(inst.operands) + k) for k in range(len(extras))]


def _unsort(b: Emitter, perm: Instruction, ct: Instruction, dim: int) -> Instruction:
    """ct scattered back through the permutation: sort (perm, ct) by perm."""
    et = ct.shape.element_type
    comparator = shared_computation(b.module, ("unsort", et), lambda: _perm_comparator(b.module, et))
    shape = Shape.tuple_of([perm.shape.without_layout(), ct.shape.without_layout()])
    out = b.emit("sort", [perm, ct], {"dimensions": (dim,), "is_stable": True, "to_apply": comparator}, shape=shape)
    return b.gte(out, 1)


def _perm_comparator(module: Module, et: str) -> Computation:
    """(p0, p1, x0, x1) -> p0 < p1: sorts (permutation, values) by the permutation."""
    pb = Builder(new_computation(module, f"ad_unsort_{et}"))
    p = [pb.parameter(i, Shape.scalar(t), f"p{i}") for i, t in enumerate(["s32", "s32", et, et])]
    pb.comp.root = pb.emit("compare", [p[0], p[1]], {"direction": "LT"}, name="lt")
    return pb.comp


def _outputs(b: Emitter, inst: Instruction, ct) -> list:
    if len(inst.operands) == 1:
        return [ct]
    return ct if isinstance(ct, list) else [b.gte(ct, i) for i in range(len(inst.operands))]


def _sort_vjp(b, inst, ct):
    dim = inst.attrs["dimensions"][0]
    x0 = inst.operands[0]
    iota = b.emit("iota", [], {"iota_dimension": dim}, shape=Shape.array("s32", x0.shape.dims))
    (perm,) = _sort_with(b, inst, [iota])
    out = []
    for o, c in zip(inst.operands, _outputs(b, inst, ct)):
        out.append(_unsort(b, perm, c, dim) if c is not None and is_float(o.shape) else None)
    return out


def _sort_jvp(b, inst, ts):
    float_ops = [(k, o) for k, o in enumerate(inst.operands) if is_float(o.shape)]
    extras = [ts[k] if ts[k] is not None else b.zeros(o.shape) for k, o in float_ops]
    sorted_ts = _sort_with(b, inst, extras)
    if len(inst.operands) == 1:
        return sorted_ts[0]
    by_index = {k: t for (k, _), t in zip(float_ops, sorted_ts)}
    return b.tuple([by_index.get(k) or b.zeros(o.shape) for k, o in enumerate(inst.operands)])


# -- top-k: values are x at the returned indices -------------------------------------------------------------
def _topk_flat_indices(b: Emitter, inst: Instruction) -> tuple[Instruction, int]:
    """The selected positions as indices into x flattened: s32[L*k, 1]; and L*n."""
    x = inst.operands[0]
    n, k = x.shape.dims[-1], inst.shape.tuple_shapes[1].dims[-1]
    rows = x.shape.numel // n if n else 0
    idx = b.reshape(b.gte(inst, 1), (rows, k))
    row = b.emit("iota", [], {"iota_dimension": 0}, shape=Shape.array("s32", (rows, k)))
    flat = b.add(b.mul(row, b.full(row.shape, n)), idx)
    return b.reshape(flat, (rows * k, 1)), rows * n


_FLAT_SCATTER = {"update_window_dims": (), "inserted_window_dims": (0,), "scatter_dims_to_operand_dims": (0,),
                 "index_vector_dim": 1}
_FLAT_GATHER = {"offset_dims": (), "collapsed_slice_dims": (0,), "start_index_map": (0,), "index_vector_dim": 1,
                "slice_sizes": (1,)}


def _topk_vjp(b, inst, ct):
    ct_values = ct[0] if isinstance(ct, list) else b.gte(ct, 0)
    if ct_values is None:
        return [None]
    x = inst.operands[0]
    flat_idx, size = _topk_flat_indices(b, inst)
    updates = b.reshape(ct_values, (flat_idx.shape.dims[0],))
    attrs = dict(_FLAT_SCATTER, to_apply=b.reducer("add", x.shape.element_type))
    flat = b.emit("scatter", [b.zeros(Shape.array(x.shape.element_type, (size,))), flat_idx, updates],
                  {k: v for k, v in attrs.items() if v != ()})
    return [b.reshape(flat, x.shape.dims)]


def _topk_jvp(b, inst, ts):
    flat_idx, size = _topk_flat_indices(b, inst)
    t = b.reshape(ts[0], (size,))
    picked = b.emit("gather", [t, flat_idx], {k: v for k, v in _FLAT_GATHER.items() if v != ()})
    values, indices = inst.shape.tuple_shapes
    return b.tuple([b.reshape(picked, values.dims), b.zeros(indices)])


VJP = {
    "topk": _topk_vjp,
    "reduce": _reduce_vjp,
    "reduce-window": _reduce_window_vjp,
    "select-and-scatter": _select_and_scatter_vjp,
    "sort": _sort_vjp,
}

JVP = {
    "topk": _topk_jvp,
    "reduce": _reduce_jvp,
    "reduce-window": _reduce_window_jvp,
    "select-and-scatter": _select_and_scatter_jvp,
    "sort": _sort_jvp,
}
