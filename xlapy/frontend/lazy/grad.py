"""value_and_grad (and grad) outside jit in lazy mode: the function is recorded, not traced, and its derivative
is derived once per recorded structure.

Outside lazy mode, every call of `grad(f)(x)` traces f into HLO, differentiates it and runs the derivative:
the op-by-op training step re-traced and re-differentiated its loss at every step. Here f runs on placeholder
LazyArrays into a graph of its own (an *abstract* PendingGraph: reading a value in it means "trace instead"),
whose structure (lazy/cut.py's key, with the placeholders as the arguments) keys a cache of derived
computations. A hit binds one `call` of the cached derivative in the thread's pending graph: the gradient is
as lazy as any op, and the step's cut holds forward, backward and update together.

What falls back to the traced path (transforms.py, as outside lazy mode): a read of a value inside f (an error
there is raised by the traced path as ever), outputs that are not recorded values, failed checks (a non-scalar
output, integer inputs: the traced path raises them), and functions that call custom_jvp / custom_vjp /
checkpoint, whose rules only apply when traced. That last one is found by watching f's first recording per
function object with sys.setprofile for calls into custom_derivatives.py.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ..array import with_weak_type
from ..autodiff.custom_rules import strip_marks
from ..pytree import tree_flatten, tree_unflatten
from ..tracer import Trace, aval, bind
from . import state
from .graph import LazyArray, Node, new_lazy
from .cut import NeedsTrace, _collect, build_computation

_DERIVED: dict[tuple, Any] = {}         # structure -> (derived computation, output weak flags) or None (traced)
_MAX_DERIVED = 512
_CUSTOM: "weakref.WeakKeyDictionary[Callable, bool]" = weakref.WeakKeyDictionary()   # fun -> calls custom rules
_LOCK = threading.Lock()
STATS = {"derived": 0, "reused": 0, "traced": 0}


def clear_derived() -> None:
    """Forget the derived computations (xlapy.clear_caches)."""
    with _LOCK:
        _DERIVED.clear()


def _custom_rules_file() -> str:
    from .. import custom_derivatives
    return os.path.abspath(custom_derivatives.__file__)


def _record(fun: Callable, args: tuple, kwargs: dict, watch: bool):
    """Run fun on placeholders in a fresh abstract graph: (graph, placeholder nodes, in_tree, leaves, out leaves,
    out_tree, whether a custom rule was called)."""
    leaves, in_tree = tree_flatten(tuple(args))
    g = state.PendingGraph(abstract=True)
    placeholders, nodes = [], []
    for i, v in enumerate(leaves):
        a = aval(v)
        g.seq += 1
        node = Node(("arg", i), None, (), None, None, None, g.seq, g)
        nodes.append(node)
        placeholders.append(new_lazy(node, -1, a))
    custom = [False]
    previous = sys.getprofile()
    if watch:
        target = _custom_rules_file()

        def hook(frame, event, arg):
            if event == "call" and frame.f_code.co_filename == target:
                custom[0] = True
        sys.setprofile(hook)
    try:
        with state.recording_into(g):
            out = fun(*tree_unflatten(in_tree, placeholders), **kwargs)
    finally:
        if watch:
            sys.setprofile(previous)
    out_leaves, out_tree = tree_flatten(out)
    return g, nodes, in_tree, leaves, out_leaves, out_tree, custom[0]


def _structure(arg_nodes: list[Node], out_leaves: list[Any], g: state.PendingGraph):
    """(key, nodes, captured leaves, slots) of the recording, or None if an output is not recorded in it."""
    for o in out_leaves:
        if type(o) is not LazyArray or o._node is None or o._node.graph is not g:
            return None
    nodes = _collect(out_leaves)
    number = {id(n): i for i, n in enumerate(nodes)}
    arg_number = {id(n): i for i, n in enumerate(arg_nodes)}
    captured: list[Any] = []
    captured_number: dict[int, int] = {}
    constants: dict[int, Any] = {}

    def encode(r: Any) -> Any:
        if type(r) is tuple and type(r[0]) is Node:
            if id(r[0]) in arg_number:
                return ("arg", arg_number[id(r[0])])
            return (number[id(r[0])], r[1])
        if np.ndim(r) == 0 and not (type(r) is LazyArray and r._node is not None):
            # scalars are constants, as tracing makes them (a loop's static bounds)
            constants[id(r)] = r
            a = aval(r)
            return ("const", a.dtype.str, a.weak_type, np.asarray(r).tobytes())
        k = captured_number.get(id(r))
        if k is None:
            k = captured_number[id(r)] = len(captured)
            captured.append(r)
        return k
    from ..tracer import Packed
    entries = tuple((n.key, tuple(("packed", tuple(encode(r) for r in ref)) if isinstance(ref, Packed)
                                  else encode(ref) for ref in n.operands))
                    for n in nodes if id(n) not in arg_number)
    slots = [(number[id(o._node)], o._index) for o in out_leaves]
    out_avals = tuple((o.aval.shape, o.aval.dtype, o.aval.weak_type) for o in out_leaves)
    cap_avals = tuple((a.shape, a.dtype, a.weak_type) for a in map(aval, captured))
    return (entries, cap_avals, tuple(slots), out_avals), nodes, captured, slots, constants


def value_and_grad_lazily(what: str, fun: Callable, argnums, has_aux: bool, args: tuple, kwargs: dict) -> Any:
    """value_and_grad's result computed lazily, or NotImplemented: then the caller traces, as outside lazy mode."""
    from .. import transforms as T
    try:
        watch = fun not in _CUSTOM
    except TypeError:           # not weakly referenceable: always traced
        return NotImplemented
    if not watch and _CUSTOM[fun]:
        STATS["traced"] += 1
        return NotImplemented
    try:
        nums = T._normalize_argnums(what, argnums, len(args))
        g, arg_nodes, in_tree, leaves, out_leaves, out_tree, custom = _record(fun, args, kwargs, watch)
    except NeedsTrace:
        STATS["traced"] += 1
        return NotImplemented
    except Exception:           # noqa: BLE001 -- the traced path raises it again, with its own message
        return NotImplemented
    if watch:
        _CUSTOM[fun] = custom
    if custom:
        STATS["traced"] += 1
        return NotImplemented
    found = _structure(arg_nodes, out_leaves, g)
    if found is None:
        return NotImplemented
    body_key, nodes, captured, slots, constants = found
    in_avals = [aval(v) for v in leaves]
    ranges = T._leaf_ranges(in_tree)
    wrt = [i for k in nums for i in ranges[k]]
    value_tree = out_tree.children[0] if has_aux and out_tree.node_type in (tuple, list) and \
        len(out_tree.children) == 2 else out_tree
    first = out_leaves[0].aval if out_leaves else None
    if (has_aux and value_tree is out_tree) or value_tree.node_type is not None or first is None or \
            first.shape != () or not np.issubdtype(first.dtype, np.floating) or \
            any(np.issubdtype(a.dtype, np.complexfloating) for a in in_avals) or \
            not all(np.issubdtype(in_avals[i].dtype, np.floating) for i in wrt):
        return NotImplemented       # the traced path raises the error
    key = (what, tuple(nums), has_aux, in_tree, out_tree, tuple(wrt),
           tuple((a.shape, a.dtype, a.weak_type) for a in in_avals), body_key)
    name = f"{what}_{T._name_of(fun)}"
    with _LOCK:
        derived = _DERIVED.get(key)
    if derived is None:
        derived = _derive(name, nodes, arg_nodes, in_avals, captured, slots, out_leaves, wrt, constants)
        with _LOCK:
            if len(_DERIVED) >= _MAX_DERIVED:
                _DERIVED.pop(next(iter(_DERIVED)))
            _DERIVED[key] = derived
        STATS["derived"] += 1
    else:
        STATS["reused"] += 1
    comp, weak = derived
    outs = bind("call", list(leaves) + list(captured), {"to_apply": comp}, name=name)    # marks stripped once
    outs = outs if isinstance(outs, list) else [outs]
    outs = [with_weak_type(o, w) if w else o for o, w in zip(outs, weak)]
    n = len(out_leaves)
    values, grads = outs[:n], outs[n:]
    per_arg, start = [], 0
    for k in nums:
        m = len(ranges[k])
        per_arg.append(tree_unflatten(in_tree.children[k], grads[start:start + m]))
        start += m
    grad_value = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
    if has_aux:
        return (values[0], tree_unflatten(out_tree.children[1], values[1:])), grad_value
    return values[0], grad_value


def _derive(name: str, nodes: list[Node], arg_nodes: list[Node], in_avals: Sequence, captured: list[Any],
            slots: list[tuple], out_leaves: list[Any], wrt: list[int], constants: dict[int, Any]):
    """(the derivative's computation, weak flags of its outputs): f's recording as a computation whose
    parameters are the arguments then the captured leaves, differentiated as transforms.vjp_call does."""
    from .. import transforms as T
    trace = Trace(name)
    args = {id(n): trace.new_param(a, f"Arg_{i}") for i, (n, a) in enumerate(zip(arg_nodes, in_avals))}
    build_computation(trace, nodes, captured, slots, args, constants)
    out_avals = [o.aval for o in out_leaves]
    traced = T.Traced(trace.comp, [None] * len(in_avals), list(in_avals), None, list(captured), out_avals, None)

    def build(b):
        primals = T._primal_params(b, traced)
        cts = [b.scalar(1.0, out_avals[0].hlo_shape.element_type)] + [None] * (len(out_avals) - 1)
        root, grads = T.vjp_into(b, traced.comp, primals, cts)
        return T._elements(b, root) + [T.materialize(b, grads[i], primals[i].shape) for i in wrt]
    comp = T._derive(name, build)
    strip_marks(comp)       # it runs outside a trace (transforms._call strips per call; here once per derivation)
    weak = [a.weak_type for a in out_avals] + [in_avals[i].weak_type for i in wrt]
    return comp, weak


__all__ = ["value_and_grad_lazily", "STATS"]
