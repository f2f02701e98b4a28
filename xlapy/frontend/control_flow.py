"""Structured control flow (re-exported by xlapy.lax): while_loop, fori_loop, cond, switch, scan, map.

Each body is traced into its own computation by `trace_function`; values it closes over from enclosing
traces are captured as extra parameters. A while loop carries those captured values in its tuple (as JAX
does with its consts), a conditional passes each branch its own operand tuple. Bodies are first traced
with flat parameters and then rewritten to take the single tuple parameter HLO wants (`_tuplify`).

Refs (xlapy/ref.py) of the enclosing trace written inside a body or branch are threaded as JAX discharges them
(frontend/ref_threading.py): while_loop and scan carry their values, cond and switch pass them to every branch
and return them, and the Refs hold the op's results after it.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import XlapyError
from ..hlo import Instruction, Shape
from ..passes.build import make
from . import dtypes
from .array import with_weak_type
from .lax_elementwise import add, clamp, lt, ne, sub
from .lax_operands import convert, convert_element_type
from .lax_shapes import dynamic_index_in_dim, dynamic_update_index_in_dim, full
from .pytree import leaf_paths, tree_flatten, tree_map, tree_structure, tree_unflatten
from .ref_threading import bound, live_value, retrying, set_values
from .tracer import Packed, ShapedArray, Trace, aval, bind, current_trace, trace_function, user_frame


def _tuplify(trace: Trace, tuple_shape: Shape, index_of: Sequence[int]) -> None:
    """Replace trace's flat parameters by one tuple parameter; parameter k reads tuple element index_of[k]."""
    comp = trace.comp
    tup = Instruction("parameter", tuple_shape, (), {}, "arg_tuple", parameter_number=0)
    new = [tup] + [make("get-tuple-element", [tup], {"index": j}) for j in index_of]
    for inst in new:
        inst.parent = comp
    comp.instructions[0:0] = new
    for p, gte in zip(trace.params, new[1:]):
        p.inst.replace_all_uses_with(gte)
        comp.remove_instruction(p.inst)
        p.inst = gte


def _check_same(what: str, expected: Sequence[ShapedArray], got: Sequence[ShapedArray], paths: Sequence[str]):
    if len(expected) != len(got):
        raise XlapyError(f"{what}: expected {len(expected)} outputs, got {len(got)} (at {user_frame()})")
    for e, g, p in zip(expected, got, paths):
        if e.shape != g.shape or e.dtype != g.dtype:
            raise XlapyError(f"{what}: output{p} is {g} but must be {e} (at {user_frame()})")


def _unique_values(captures_lists) -> list[Any]:
    seen, out = set(), []
    for caps in captures_lists:
        for value, _ in caps:
            if id(value) not in seen:
                seen.add(id(value))
                out.append(value)
    return out


def _run_bound(refs: list, values: Sequence[Any], fn: Callable, *args) -> tuple[Any, list]:
    """fn(*args) while the Refs hold `values` (tracers of the current trace); (its result, their last values)."""
    with bound(refs, values, current_trace()):
        out = fn(*args)
        return out, [live_value(r) for r in refs]


def _threading_refs(op: Callable) -> Any:
    """op(refs) with no Refs first, then with each Ref of the calling trace that the functions wrote (retrying);
    op returns (its result, the Refs' last values), which the Refs then hold."""
    def attempt(refs: list) -> Any:
        out, finals = op(refs)
        set_values(refs, finals)
        return out
    return retrying(attempt, current_trace())


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """Repeat `val = body_fun(val)` while `cond_fun(val)`; val is a pytree of fixed shapes and dtypes."""
    def op(refs: list) -> tuple[Any, list]:
        if not refs:
            return _while_loop(cond_fun, body_fun, init_val), []
        return _while_loop(lambda state: _read_only(refs, state[1], cond_fun, state[0]),
                           lambda state: _run_bound(refs, state[1], body_fun, state[0]),
                           (init_val, [live_value(r) for r in refs]))
    return _threading_refs(op)


def _read_only(refs: list, values: Sequence[Any], fn: Callable, *args) -> Any:
    """A while loop's condition: it may read the Refs, not write them (JAX's cond_fun has no effects either)."""
    out, finals = _run_bound(refs, values, fn, *args)
    if any(f is not v for f, v in zip(finals, values)):
        raise XlapyError(f"while_loop: cond_fun writes a Ref; write it in body_fun (at {user_frame()})")
    return out


def _while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    leaves, tree = tree_flatten(init_val)
    avals = [aval(v) for v in leaves]
    in_tree = tree_structure((init_val,))
    body, body_outs, body_tree = trace_function(body_fun, avals, in_tree, "region")
    if body_tree != tree:
        raise XlapyError(f"while_loop: body_fun must return the structure of init_val {tree}, got {body_tree} "
                         f"(at {user_frame()})")
    _check_same("while_loop body_fun", avals, [o.aval for o in body_outs], leaf_paths(tree))
    cond, cond_outs, _ = trace_function(cond_fun, avals, in_tree, "region")
    if len(cond_outs) != 1 or cond_outs[0].aval.shape != () or cond_outs[0].aval.dtype != np.bool_:
        got = ", ".join(str(o.aval) for o in cond_outs)
        raise XlapyError(f"while_loop: cond_fun must return a bool scalar, got {got} (at {user_frame()})")
    consts = _unique_values([body.captures, cond.captures])
    n = len(leaves)
    position = {id(v): n + k for k, v in enumerate(consts)}
    shape = Shape.tuple_of([a.hlo_shape for a in avals] + [aval(c).hlo_shape for c in consts])
    # the body passes every const through, so each needs a parameter there
    body_caps = {id(v): p for v, p in body.captures}
    for c in consts:
        if id(c) not in body_caps:
            body_caps[id(c)] = body.new_param(aval(c))
            body.captures.append((c, body_caps[id(c)]))
    body.finish(body_outs + [body_caps[id(c)] for c in consts], tuple_root=True)
    cond.finish(cond_outs)
    for t in (body, cond):
        _tuplify(t, shape, list(range(n)) + [position[id(v)] for v, _ in t.captures])
    outs = bind("while", [Packed(leaves + consts)], {"condition": cond.comp, "body": body.comp}, name="while")
    return tree_unflatten(tree, outs[:n])


def fori_loop(lower, upper, body_fun: Callable, init_val: Any) -> Any:
    """`for i in range(lower, upper): val = body_fun(i, val)`, as a while loop over (i, val)."""
    index_dtype = dtypes.promote(dtypes.type_of(lower), dtypes.type_of(upper)).dtype
    lo = convert(lower, index_dtype) if not hasattr(lower, "aval") else convert_element_type(lower, index_dtype)

    def cond(carry):
        return lt(carry[0], upper)

    def body(carry):
        i, val = carry
        return add(i, np.ones((), index_dtype)), body_fun(i, val)
    return while_loop(cond, body, (lo, init_val))[1]


def _branches(index, branches: Sequence[Callable], operands: tuple) -> Any:
    def op(refs: list) -> tuple[Any, list]:
        if not refs:
            return _traced_branches(index, branches, operands), []
        threaded = [lambda *args, b=b: _run_bound(refs, args[-1], b, *args[:-1]) for b in branches]
        return _traced_branches(index, threaded, tuple(operands) + ([live_value(r) for r in refs],))
    return _threading_refs(op)


def _traced_branches(index, branches: Sequence[Callable], operands: tuple) -> Any:
    leaves, tree = tree_flatten(operands)
    avals = [aval(v) for v in leaves]
    traced = [trace_function(b, avals, tree, "region") for b in branches]
    out_tree = traced[0][2]
    out_avals = [o.aval for o in traced[0][1]]
    for i, (_, outs, t) in enumerate(traced[1:], 1):
        if t != out_tree:
            raise XlapyError(f"cond/switch: branch {i} returns {t} but branch 0 returns {out_tree} "
                             f"(at {user_frame()})")
        _check_same(f"cond/switch branch {i}", out_avals, [o.aval for o in outs], leaf_paths(out_tree))
    comps, branch_operands = [], []
    weak = [all(t[1][k].aval.weak_type for t in traced) for k in range(len(out_avals))]
    for trace, outs, _ in traced:
        trace.finish(outs, tuple_root=len(outs) != 1)
        values = leaves + [v for v, _ in trace.captures]
        if len(values) == 1:
            branch_operands.append(values[0])
        else:
            _tuplify(trace, Shape.tuple_of([p.aval.hlo_shape for p in trace.params]), range(len(values)))
            branch_operands.append(Packed(values))
        comps.append(trace.comp)
    out = bind("conditional", [index] + branch_operands, {"branch_computations": comps}, name="cond")
    outs = out if isinstance(out, list) else [out]
    outs = [with_weak_type(o, w) if w else o for o, w in zip(outs, weak)]
    return tree_unflatten(out_tree, outs)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=None) -> Any:
    """true_fun(*operands) if pred else false_fun(*operands), as an HLO conditional (branch 0 = false)."""
    if operand is not None:
        operands = (operand,)
    pa = aval(pred)
    if pa.shape != ():
        raise XlapyError(f"cond: pred must be a scalar, got {pa} (at {user_frame()})")
    if pa.dtype != np.bool_:
        if pa.dtype.kind not in "iu":
            raise XlapyError(f"cond: pred must be bool or an integer, got {pa} (at {user_frame()})")
        pred = ne(pred, np.zeros((), pa.dtype))
    index = convert_element_type(pred, np.int32)
    return _branches(index, [false_fun, true_fun], operands)


def switch(index, branches: Sequence[Callable], *operands, operand=None) -> Any:
    """branches[clamp(index, 0, len-1)](*operands)."""
    if operand is not None:
        operands = (operand,)
    branches = list(branches)
    if not branches:
        raise XlapyError("switch: needs at least one branch")
    ia = aval(index)
    if ia.shape != () or ia.dtype.kind not in "iu":
        raise XlapyError(f"switch: index must be an integer scalar, got {ia} (at {user_frame()})")
    index = convert_element_type(index, np.int32)
    if len(branches) == 1:
        return branches[0](*operands)
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    return _branches(index, branches, operands)


def _abstract_eval(fn: Callable, args: tuple) -> tuple[list[ShapedArray], Any]:
    """Output avals and tree of fn(*args) without recording anything in the enclosing traces."""
    leaves, tree = tree_flatten(args)
    trace = Trace("abstract_eval", current_trace(), abstract=True)
    with trace:
        params = [trace.new_param(aval(v)) for v in leaves]
        out = fn(*tree_unflatten(tree, params))
        out_leaves, out_tree = tree_flatten(out)
        return [trace.lift(v).aval for v in out_leaves], out_tree


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int = 1) -> tuple[Any, Any]:
    """carry, ys = scan(f, init, xs): `carry, y = f(carry, x)` over the leading axis of xs; ys stacked.
    Lowered like JAX: a while loop over (i, carry, ys buffers), slicing xs with dynamic-slice and writing
    ys with dynamic-update-slice."""
    def op(refs: list) -> tuple[Any, list]:
        if not refs:
            return _scan(f, init, xs, length, reverse), []

        def threaded(state, x):
            out, finals = _run_bound(refs, state[1], f, state[0], x)
            if not (isinstance(out, tuple) and len(out) == 2):
                raise XlapyError(f"scan: f must return a pair (carry, y), got {type(out).__name__} "
                                 f"(at {user_frame()})")
            return (out[0], finals), out[1]
        (carry, finals), ys = _scan(threaded, (init, [live_value(r) for r in refs]), xs, length, reverse)
        return (carry, ys), finals
    return _threading_refs(op)


def _scan(f: Callable, init: Any, xs: Any, length: int | None, reverse: bool) -> tuple[Any, Any]:
    x_leaves, x_tree = tree_flatten(xs)
    lengths = {aval(x).shape[0] for x in x_leaves if aval(x).ndim}
    if any(aval(x).ndim == 0 for x in x_leaves):
        raise XlapyError(f"scan: every xs leaf needs a leading axis to scan over (at {user_frame()})")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise XlapyError(f"scan: xs leading axes and length disagree: {sorted(lengths)} (at {user_frame()})")
    n = lengths.pop()
    x_slice = tree_unflatten(x_tree, [ShapedArrayValue(aval(x).shape[1:], aval(x).dtype) for x in x_leaves])
    out_avals, out_tree = _abstract_eval(f, (init, x_slice))
    carry_tree = tree_structure(init)
    if out_tree.num_nodes < 1 or out_tree.node_type is not tuple or len(out_tree.children) != 2:
        raise XlapyError(f"scan: f must return a pair (carry, y), got {out_tree} (at {user_frame()})")
    if out_tree.children[0] != carry_tree:
        raise XlapyError(f"scan: f returns a carry {out_tree.children[0]} unlike init {carry_tree} "
                         f"(at {user_frame()})")
    n_carry = carry_tree.num_leaves
    y_avals, y_tree = out_avals[n_carry:], out_tree.children[1]
    ys_init = [full((n,) + a.shape, np.zeros((), a.dtype)) for a in y_avals]

    def body(state):
        i, carry, ys = state
        idx = sub(np.int32(n - 1), i) if reverse else i
        x = tree_map(lambda arr: dynamic_index_in_dim(arr, idx, 0, keepdims=False), xs)
        new_carry, y = f(carry, x)
        y_leaves = tree_flatten(y)[0]
        ys = [dynamic_update_index_in_dim(buf, yv, idx, 0) for buf, yv in zip(ys, y_leaves)]
        return add(i, np.int32(1)), new_carry, ys

    def cond_fn(state):
        return lt(state[0], np.int32(n))
    _, carry, ys = while_loop(cond_fn, body, (np.int32(0), init, ys_init))
    return carry, tree_unflatten(y_tree, ys)


class ShapedArrayValue:
    """A stand-in argument with only an aval (used to abstract-evaluate scan bodies)."""
    __slots__ = ("aval",)

    def __init__(self, shape, dtype):
        self.aval = ShapedArray(tuple(shape), np.dtype(dtype))


def map(f: Callable, xs: Any) -> Any:
    """[f(x) for x in xs] stacked, as a scan."""
    return scan(lambda c, x: (c, f(x)), None, xs)[1]


__all__ = ["while_loop", "fori_loop", "cond", "switch", "scan", "map"]
