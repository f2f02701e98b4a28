"""Batching rules of tuples, calls and control flow, and the per-example fallbacks (random bits, custom-call).

    call, fusion      inlined: the callee is batched on the operands as they are
    while             the carry elements that are batched (in the initial value, or made so by the body: a
                      fixed point) are batched at 0. An unbatched predicate keeps one loop. A batched predicate
                      (as JAX): every carry element is batched, the loop runs while ANY example's predicate
                      holds, and each iteration keeps the new carry only where its own predicate holds
                      (select), so finished examples stop changing
    conditional       an unbatched index: one conditional whose branches are batched alike (a result batched
                      in any branch is batched in all). A batched index (as JAX): every branch runs on the
                      whole batch and a chain of selects picks each example's result (out-of-range indices
                      pick the last branch, as HLO's conditional does)
"""
from __future__ import annotations

from ...hlo import Module, Shape
from .common import Batcher, BatchingError, batched_shape, join, per_example_rule
from . import batch_computation, batch_into


def _tuple(b: Batcher, inst, ops, dims):
    return b.tuple(ops), tuple(dims)


def _get_tuple_element(b: Batcher, inst, ops, dims):
    i = inst.attrs["index"]
    d = dims[0]
    return b.gte(ops[0], i), (d[i] if isinstance(d, tuple) else d)


def _call(b: Batcher, inst, ops, dims):
    """Inlined: the callee's instructions are batched in place; a call marked with a custom derivative rule
    (autodiff/custom_rules.py: custom_jvp, custom_vjp, checkpoint) stays a marked call, its callee and rule
    computations batched with every operand at 0, so a derivative taken after vmap still uses the rule."""
    if inst.opcode == "call":
        from ..autodiff.custom_rules import batch_call
        found = batch_call(b, inst, ops, dims)
        if found is not None:
            return found
    return batch_into(b, inst.called_computations()[0], ops, dims)


def _flat_dims(d, n: int, what: str):
    d = d if isinstance(d, tuple) else (d,) * n
    if any(isinstance(x, tuple) for x in d):
        raise BatchingError(f"batching a {what} whose state holds nested tuples is not supported")
    return d


def _while(b: Batcher, inst, ops, dims):
    init, d = b.canonical(ops[0], dims[0])
    n = len(init.shape.tuple_shapes)
    d = _flat_dims(d, n, "while loop")
    cond, body = inst.attrs["condition"], inst.attrs["body"]
    scratch = Module("batching_fixed_point")
    carry = tuple(d)
    while True:                                  # which carry elements end up batched
        _, out = batch_computation(scratch, body, [carry], b.size, axis_name=b.axis_name)
        new = join(carry, _flat_dims(out, n, "while loop"))
        if new == carry:
            break
        carry = new
    _, pd = batch_computation(scratch, cond, [carry], b.size, axis_name=b.axis_name)
    attrs = dict(inst.attrs)
    if pd is None:
        body_c, _ = batch_computation(b.module, body, [carry], b.size, force=carry, axis_name=b.axis_name)
        cond_c, _ = batch_computation(b.module, cond, [carry], b.size, axis_name=b.axis_name)
        attrs.update(condition=cond_c, body=body_c)
        return b.emit("while", [b.forced(init, d, carry)], attrs), carry
    # a batched predicate: run while any example continues; finished examples keep their carry
    carry = (0,) * n
    init = b.forced(init, d, carry)
    shape = init.shape.without_layout() if not init.shape.is_tuple else init.shape
    from ...passes.build import new_computation
    cond_c = new_computation(b.module, f"{cond.name}.batched_any")
    cb = b.sub(cond_c)
    p = cb.parameter(0, shape, "carry")
    pred, pdim = batch_into(cb, cond, [p], [carry])
    pred = cb.front(pred, pdim)
    cond_c.root = cb.emit("reduce", [pred, cb.scalar(False, "pred")],
                          {"dimensions": (0,), "to_apply": cb.reducer("or", "pred")})
    body_c = new_computation(b.module, f"{body.name}.batched_masked")
    bb = b.sub(body_c)
    p = bb.parameter(0, shape, "carry")
    pred, pdim = batch_into(bb, cond, [p], [carry])
    pred = bb.front(pred, pdim)
    new, nd = batch_into(bb, body, [p], [carry])
    new = bb.forced(new, nd, carry)
    parts = []
    for k in range(n):
        old_k, new_k = bb.gte(p, k), bb.gte(new, k)
        mask = bb.broadcast(pred, [0], Shape.array("pred", old_k.shape.dims))
        parts.append(bb.select(mask, new_k, old_k))
    body_c.root = bb.tuple(parts)
    cond_c.remove_dead()
    body_c.remove_dead()
    attrs.update(condition=cond_c, body=body_c)
    return b.emit("while", [init], attrs), carry


def _all_batched(shape: Shape):
    if shape.is_tuple:
        return tuple(_all_batched(s) for s in shape.tuple_shapes)
    return 0


def _conditional(b: Batcher, inst, ops, dims):
    attrs = dict(inst.attrs)
    if "branch_computations" in attrs:
        branches = list(attrs["branch_computations"])
        index, idim = ops[0], dims[0]
    else:                                        # pred selector: true is branch 0
        branches = [attrs["true_computation"], attrs["false_computation"]]
        p, idim = ops[0], dims[0]
        index = b.select(p, b.full(Shape.array("s32", p.shape.dims), 0), b.full(Shape.array("s32", p.shape.dims), 1))
    args = [b.canonical(o, d) for o, d in zip(ops[1:], dims[1:])]
    if idim is None:
        scratch = Module("batching_branches")
        out = None
        for br, (_, d) in zip(branches, args):
            _, od = batch_computation(scratch, br, [d], b.size, axis_name=b.axis_name)
            out = od if out is None else join(out, od)
        comps = [batch_computation(b.module, br, [d], b.size, force=join(out, out), axis_name=b.axis_name)[0]
                 for br, (_, d) in zip(branches, args)]
        out = join(out, out)
        new_attrs = {k: v for k, v in attrs.items() if k not in ("true_computation", "false_computation")}
        new_attrs["branch_computations"] = comps
        value = b.emit("conditional", [index] + [a for a, _ in args], new_attrs)
        return value, out
    # a batched index: every branch on the whole batch, then select per example
    idx = b.front(index, idim)
    want = _all_batched(inst.shape)
    results = []
    for br, (a, d) in zip(branches, args):
        v, vd = batch_into(b, br, [a], [d])
        results.append(b.forced(v, vd, want))
    chosen = results[-1]
    for k in range(len(branches) - 2, -1, -1):
        hit = b.compare(idx, b.full(idx.shape, k), "EQ")
        chosen = _select_tree(b, hit, results[k], chosen)
    return chosen, want


def _select_tree(b: Batcher, hit, x, y):
    if x.shape.is_tuple:
        return b.tuple([_select_tree(b, hit, b.gte(x, i), b.gte(y, i)) for i in range(len(x.shape.tuple_shapes))])
    mask = b.broadcast(hit, [0], Shape.array("pred", x.shape.dims))
    return b.select(mask, x, y)


_per_example_custom_call = per_example_rule("an opaque target, which may not accept a batch dimension")


def _host_callback(b: Batcher, inst, ops, dims):
    """pure_callback's custom-call (backends/interpreter/host_callback.py), by its vmap_method as JAX:
    sequential / sequential_unrolled: once per example (the per-example loop); expand_dims / broadcast_all: one
    call of a new callback taking every operand with a leading batch axis (size 1 / the batch size where
    unbatched) and returning results batched at 0; None: NotImplementedError."""
    from ...backends.interpreter import host_callback as hc
    cb = hc.REGISTRY[hc.key_of(inst)]
    method = cb.vmap_method
    if method in ("sequential", "sequential_unrolled"):
        return _per_example_custom_call(b, inst, ops, dims)
    if method not in ("expand_dims", "broadcast_all"):
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of 'sequential', "
            "'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. "
            f"Got vmap_method={method!r}.")
    new_ops = []
    for o, d in zip(ops, dims):
        if d is not None:
            new_ops.append(b.front(o, d))
        elif method == "broadcast_all":
            new_ops.append(b.bcast_batch(o, 0))
        else:
            new_ops.append(b.reshape(o, (1,) + tuple(o.shape.dims)))
    results = tuple(batched_shape(r, 0, b.size) for r in cb.results)
    key = hc.register(hc.HostCallback(cb.fn, tuple(o.shape.without_layout() for o in new_ops), results,
                                      cb.name, method))
    attrs = dict(inst.attrs, backend_config=str(key))
    out = b.emit("custom-call", new_ops, attrs, shape=Shape.tuple_of(list(results)))
    return out, tuple(0 for _ in results)


def _custom_call(b: Batcher, inst, ops, dims):
    from ...backends.interpreter.host_callback import TARGET
    if inst.attrs.get("custom_call_target") == TARGET:
        return _host_callback(b, inst, ops, dims)
    return _per_example_custom_call(b, inst, ops, dims)


_custom_call.__doc__ = _per_example_custom_call.__doc__ + "; pure_callback's target: by its vmap_method"

RULES = {
    "tuple": _tuple, "get-tuple-element": _get_tuple_element,
    "call": _call, "fusion": _call,
    "while": _while, "conditional": _conditional,
    "rng-bit-generator": per_example_rule("each example's state gives its own bits (as JAX's loop over keys)"),
    "rng": per_example_rule("each example draws with its own bounds"),
    "custom-call": _custom_call,
}
