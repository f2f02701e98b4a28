"""grad, value_and_grad, vjp, jvp: JAX's differentiation API over the HLO -> HLO autodiff (frontend/autodiff);
vmap: JAX's vectorizing map over the HLO -> HLO batching (frontend/batching), built the same way (below).

Every transformation works the same three steps:
  1. trace `f` on the abstract values of its flattened arguments into a fresh computation (`trace_function`;
     tracers that f closes over from enclosing traces become extra parameters, `trace.captures`);
  2. derive a new computation from it with the autodiff drivers (`vjp_into` / `jvp_into`), whose result is
     ONE flat tuple: (f's output leaves..., gradient or tangent leaves...);
  3. `bind("call", [arguments..., captured values..., cotangents/tangents...], to_apply=derived)`. Inside a
     trace (jit, or the body of an enclosing grad) that records a call: the optimizer's call inliner inlines
     it, and an enclosing grad differentiates straight through it (the autodiff inlines calls), which is
     how grad of grad gives second derivatives. Outside any trace the call runs eagerly (eager.py).

The derived computation is built in a scratch Module (the rule emitters want one for their helper
reducers) and then copied out, with every computation it calls, as computations that belong to no module,
like everything a trace records.

`lax.stop_gradient` emits `copy` with metadata op_name="stop_gradient". The autodiff treats `copy` as the
identity, so before differentiating, each marked copy is rewritten into the bit-exact round trip
`bitcast-convert(bitcast-convert(x, s<N>), f<N>)`: the integer in the middle carries no derivative in
either mode. Each pair is marked with the same metadata, and turned back into the marked copy in the derived
computation (which the optimizer removes); an enclosing grad cuts it again, so stop_gradient still cuts
the gradient of a gradient.
"""
from __future__ import annotations

import inspect
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import XlapyError
from ..hlo import Computation, Instruction, Module
from .autodiff import jvp_into, vjp_into
from .autodiff.custom_rules import strip_marks, transient_rules
from .autodiff.rules_common import Emitter
from .autodiff.vjp import add_parameter, materialize, new_computation
from .batching import Batcher, BatchingTypeError, BatchingValueError, batch_into
from .batching.common import batched_shape
from ..passes.build import new_computation as new_hlo_computation
from .array import with_weak_type
from .lazy import state as lazy_state
from .pytree import PyTreeDef, leaf_paths, tree_flatten, tree_map, tree_unflatten
from .tracer import ShapedArray, aval, bind, current_trace, trace_function, user_frame


# -- tracing f ------------------------------------------------------------------------------------------
@dataclass
class Traced:
    """f traced on flat arguments: `comp` (root: a flat tuple of output leaves) and what to call it with."""
    comp: Computation
    leaves: list[Any]            # the flattened arguments
    in_avals: list[ShapedArray]
    in_tree: PyTreeDef
    captured: list[Any]          # values of enclosing traces f closes over: extra parameters after the leaves
    out_avals: list[ShapedArray]
    out_tree: PyTreeDef

    @property
    def operands(self) -> list[Any]:
        return list(self.leaves) + list(self.captured)


def _name_of(fun: Callable) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", getattr(fun, "__name__", "fun")).strip("_")
    return name or "fun"


def trace_flat(fun: Callable, args: Sequence[Any], kwargs: dict, name: str) -> Traced:
    leaves, in_tree = tree_flatten(tuple(args))
    avals = [aval(v) for v in leaves]
    trace, outs, out_tree = trace_function(lambda *a: fun(*a, **kwargs), avals, in_tree, name)
    trace.finish(outs, tuple_root=True)
    captured = [value for value, _ in trace.captures]
    return Traced(trace.comp, leaves, avals, in_tree, captured, [o.aval for o in outs], out_tree)


# -- deriving and calling -------------------------------------------------------------------------------
def _detached(comp: Computation, memo: dict[int, Computation] | None = None) -> Computation:
    """A deep copy of comp and everything it calls, belonging to no module (as traced computations are)."""
    memo = {} if memo is None else memo
    if id(comp) in memo:
        return memo[id(comp)]
    new = comp.clone(suffix="")
    memo[id(comp)] = new
    for inst in new.instructions:
        for key, value in inst.attrs.items():
            if isinstance(value, Computation):
                inst.attrs[key] = _detached(value, memo)
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Computation) for v in value):
                inst.attrs[key] = type(value)(_detached(v, memo) for v in value)
    return new


def _callable(comp: Computation) -> Computation:
    """A copy of comp to `bind` a call to: detached from the scratch module it was derived in."""
    return _detached(comp)


def _derive(name: str, build: Callable[[Emitter], list[Instruction]]) -> Computation:
    """A new computation whose root is the tuple of what `build(b)` returns, detached from its scratch module."""
    scratch = Module("autodiff_scratch")
    comp, b = new_computation(scratch, name)
    comp.root = b.tuple(build(b))
    comp.remove_dead()
    return _callable(comp)


def _elements(b: Emitter, value: Instruction) -> list[Instruction]:
    return [b.gte(value, i) for i in range(len(value.shape.tuple_shapes))]


def _call(comp: Computation, operands: Sequence[Any], weak: Sequence[bool], name: str) -> list[Any]:
    if current_trace() is None:
        strip_marks(comp)       # runs eagerly now: custom-rule marks are not needed (and would key the cache)
    outs = bind("call", list(operands), {"to_apply": comp}, name=name)
    outs = outs if isinstance(outs, list) else [outs]
    return [with_weak_type(o, w) if w else o for o, w in zip(outs, weak)]


def _primal_params(b: Emitter, traced: Traced) -> list[Instruction]:
    return [add_parameter(b, p.shape, i, p.name) for i, p in enumerate(traced.comp.parameters)]


ONE = object()       # an output cotangent of 1 (grad's), emitted as a constant


def vjp_call(traced: Traced, wrt: Sequence[int], cts: Sequence[Any], name: str) -> tuple[list[Any], list[Any]]:
    """(f's output leaves, gradients of the argument leaves `wrt`) for output cotangents `cts`: one per output
    leaf, each a value (passed as an operand), ONE, or None (zero)."""
    passed = [k for k, c in enumerate(cts) if c is not None and c is not ONE]

    def build(b: Emitter) -> list[Instruction]:
        primals = _primal_params(b, traced)
        ct_params = {k: add_parameter(b, traced.out_avals[k].hlo_shape, len(primals) + j, f"ct{k}")
                     for j, k in enumerate(passed)}
        ct_list = []
        for k, c in enumerate(cts):
            if c is ONE:
                ct_list.append(b.scalar(1.0, traced.out_avals[k].hlo_shape.element_type))
            else:
                ct_list.append(ct_params.get(k))
        root, grads = vjp_into(b, traced.comp, primals, ct_list)
        return _elements(b, root) + [materialize(b, grads[i], primals[i].shape) for i in wrt]
    derived = _derive(name, build)
    weak = [a.weak_type for a in traced.out_avals] + [traced.in_avals[i].weak_type for i in wrt]
    outs = _call(derived, traced.operands + [cts[k] for k in passed], weak, name)
    n = len(traced.out_avals)
    return outs[:n], outs[n:]


def _is_real_float(a: ShapedArray) -> bool:
    return np.issubdtype(a.dtype, np.floating)


def _reject_complex(what: str, traced: Traced) -> None:
    for path, a in zip(leaf_paths(traced.in_tree), traced.in_avals):
        if np.issubdtype(a.dtype, np.complexfloating):
            raise XlapyError(f"{what}: argument{path} is {a}; differentiation of complex values is not supported "
                             f"(at {user_frame()})")


def _check_float_inputs(what: str, traced: Traced, argnums: Sequence[int], wrt: Sequence[int]) -> None:
    _reject_complex(what, traced)
    for i in wrt:
        a = traced.in_avals[i]
        if not _is_real_float(a):
            path = leaf_paths(traced.in_tree)[i]
            raise XlapyError(
                f"{what} requires floating-point inputs, but argument{path} (argnums={tuple(argnums)}) is {a}; "
                f"gradients are not defined for integer or bool inputs (at {user_frame()})")


def _leaf_ranges(in_tree: PyTreeDef) -> list[range]:
    """The flat leaf indices of each positional argument."""
    ranges, start = [], 0
    for child in in_tree.children:
        ranges.append(range(start, start + child.num_leaves))
        start += child.num_leaves
    return ranges


def _normalize_argnums(what: str, argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise XlapyError(f"{what}: argnums must name at least one argument")
    for i in nums:
        if not -nargs <= i < nargs:
            raise XlapyError(f"{what}: argnums={argnums} but the function was called with {nargs} positional "
                             f"arguments (at {user_frame()})")
    return tuple(i % nargs for i in nums)


# -- the public API -------------------------------------------------------------------------------------
def _value_and_grad(what: str, fun: Callable, argnums: int | Sequence[int], has_aux: bool) -> Callable:
    """value_and_grad's function; `what` names the API in error messages."""
    def value_and_grad_f(*args, **kwargs):
        if current_trace() is None:
            if lazy_state.enabled():        # lazy mode: recorded, derived once per structure (lazy/grad.py)
                from .lazy.grad import value_and_grad_lazily
                out = value_and_grad_lazily(what, fun, argnums, has_aux, args, kwargs)
                if out is not NotImplemented:
                    return out
            with transient_rules():
                return run(*args, **kwargs)
        return run(*args, **kwargs)

    def run(*args, **kwargs):
        nums = _normalize_argnums(what, argnums, len(args))
        name = f"{what}_{_name_of(fun)}"
        traced = trace_flat(fun, args, kwargs, name)
        ranges = _leaf_ranges(traced.in_tree)
        wrt = [i for k in nums for i in ranges[k]]
        _check_float_inputs(what, traced, nums, wrt)
        out_tree = traced.out_tree
        if has_aux:
            if out_tree.node_type not in (tuple, list) or len(out_tree.children) != 2:
                raise XlapyError(f"{what} with has_aux=True: the function must return a pair (output, aux), "
                                 f"got {out_tree} (at {user_frame()})")
            value_tree = out_tree.children[0]
        else:
            value_tree = out_tree
        is_leaf = value_tree.node_type is None
        out = traced.out_avals[0] if is_leaf else None
        if out is None or out.shape != () or not np.issubdtype(out.dtype, np.floating):
            raise XlapyError(f"{what} requires a real scalar output (floating-point, shape ()), but the function "
                             f"returned {out if is_leaf else value_tree}; use vjp for other outputs "
                             f"(at {user_frame()})")
        cts = [ONE] + [None] * (len(traced.out_avals) - 1)
        outs, grads = vjp_call(traced, wrt, cts, name)
        per_arg, start = [], 0
        for k in nums:
            n = len(ranges[k])
            per_arg.append(tree_unflatten(traced.in_tree.children[k], grads[start:start + n]))
            start += n
        g = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        if has_aux:
            return (outs[0], tree_unflatten(out_tree.children[1], outs[1:])), g
        return outs[0], g
    value_and_grad_f.__name__ = f"{what}_{_name_of(fun)}"
    value_and_grad_f.__wrapped__ = fun
    return value_and_grad_f


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """A function returning (fun(*args), gradient of fun with respect to the arguments `argnums`);
    with has_aux, fun returns (value, aux) and the result is ((value, aux), gradient)."""
    return _value_and_grad("value_and_grad", fun, argnums, has_aux)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a real-scalar-valued fun with respect to the arguments `argnums` (an int: one gradient
    mirroring that argument's pytree; a tuple: a tuple of them). With has_aux, fun returns (value, aux) and
    the result is (gradient, aux)."""
    vg = _value_and_grad("grad", fun, argnums, has_aux)

    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    grad_f.__name__ = f"grad_{_name_of(fun)}"
    grad_f.__wrapped__ = fun
    return grad_f


def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """(fun(*primals), vjp_fn) where vjp_fn(cotangent) returns one cotangent per primal (a tuple). With has_aux,
    fun returns (output, aux) and the result is (output, vjp_fn, aux). Integer primals get integer zeros
    (JAX's float0)."""
    name = f"vjp_{_name_of(fun)}"
    traced = trace_flat(fun, primals, {}, name)
    out_tree, n_out = traced.out_tree, len(traced.out_avals)
    if has_aux:
        if out_tree.node_type not in (tuple, list) or len(out_tree.children) != 2:
            raise XlapyError(f"vjp with has_aux=True: the function must return a pair (output, aux), got "
                             f"{out_tree} (at {user_frame()})")
        value_tree = out_tree.children[0]
    else:
        value_tree = out_tree
    n_value = value_tree.num_leaves
    outs = _call(_callable(traced.comp), traced.operands, [a.weak_type for a in traced.out_avals], name)
    _reject_complex("vjp", traced)
    wrt = [i for i, a in enumerate(traced.in_avals) if _is_real_float(a)]

    def vjp_fn(cotangent):
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != value_tree:
            raise XlapyError(f"vjp_fn: the cotangent has structure {ct_tree} but the output has {value_tree} "
                             f"(at {user_frame()})")
        cts: list[Any] = []
        for path, ct, a in zip(leaf_paths(value_tree), ct_leaves, traced.out_avals[:n_value]):
            c = aval(ct)
            if c.shape != a.shape or (_is_real_float(a) and c.dtype != a.dtype):
                raise XlapyError(f"vjp_fn: the cotangent{path} is {c} but the output{path} is {a} "
                                 f"(at {user_frame()})")
            cts.append(ct if _is_real_float(a) else None)
        cts += [None] * (n_out - n_value)
        _, grads = vjp_call(traced, wrt, cts, f"{name}_bwd")
        flat = [np.zeros(a.shape, a.dtype) for a in traced.in_avals]
        for i, g in zip(wrt, grads):
            flat[i] = g
        return tuple(tree_unflatten(traced.in_tree, flat))
    value = tree_unflatten(value_tree, outs[:n_value])
    if has_aux:
        return value, vjp_fn, tree_unflatten(out_tree.children[1], outs[n_value:])
    return value, vjp_fn


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """(fun(*primals), the directional derivative of fun at primals along tangents): forward mode.
    primals and tangents are tuples (or lists) of the same structure, shapes and dtypes."""
    if current_trace() is None:
        with transient_rules():
            return _jvp(fun, primals, tangents, has_aux)
    return _jvp(fun, primals, tangents, has_aux)


def _jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise XlapyError("jvp: primals and tangents must be tuples or lists, with one entry per positional "
                         f"argument (got {type(primals).__name__} and {type(tangents).__name__})")
    name = f"jvp_{_name_of(fun)}"
    traced = trace_flat(fun, tuple(primals), {}, name)
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if t_tree != traced.in_tree:
        raise XlapyError(f"jvp: primals {traced.in_tree} and tangents {t_tree} have different structures "
                         f"(at {user_frame()})")
    _reject_complex("jvp", traced)
    paths = leaf_paths(traced.in_tree)
    with_tangent = []
    for i, (a, t) in enumerate(zip(traced.in_avals, t_leaves)):
        ta = aval(t)
        if not _is_real_float(a):
            continue
        if ta.shape != a.shape or ta.dtype != a.dtype:
            raise XlapyError(f"jvp: primal{paths[i]} is {a} but its tangent is {ta}; shapes and dtypes must "
                             f"match (at {user_frame()})")
        with_tangent.append(i)

    def build(b: Emitter) -> list[Instruction]:
        primal_params = _primal_params(b, traced)
        tangent = [None] * len(primal_params)
        for j, i in enumerate(with_tangent):
            tangent[i] = add_parameter(b, primal_params[i].shape, len(primal_params) + j, f"t{i}")
        root, t = jvp_into(b, traced.comp, primal_params, tangent)
        outs = _elements(b, root)
        touts = [b.zeros(o.shape) for o in outs] if t is None else _elements(b, t)
        return outs + touts
    derived = _derive(name, build)
    weak = [a.weak_type for a in traced.out_avals] * 2
    outs = _call(derived, traced.operands + [t_leaves[i] for i in with_tangent], weak, name)
    n = len(traced.out_avals)
    primal_out = tree_unflatten(traced.out_tree, outs[:n])
    tangent_out = tree_unflatten(traced.out_tree, outs[n:])
    if has_aux:
        return primal_out[0], tangent_out[0], primal_out[1]
    return primal_out, tangent_out


def stop_gradient(x: Any) -> Any:
    """The identity whose derivative is zero (lax.stop_gradient), on every leaf of the pytree `x`: emits `copy`
    with metadata op_name="stop_gradient", the marker this module's derivatives cut at (the optimizer removes
    the copy)."""
    return tree_map(lambda v: bind("copy", [v], {"metadata": '{op_name="stop_gradient"}'}, name="stop_gradient",
                                   weak_type=aval(v).weak_type), x)




# -- vmap -----------------------------------------------------------------------------------------------
def _is_axis(x: Any) -> bool:
    return x is None or type(x) is int


def _check_axes_spec(what: str, spec: Any, top_tuple: bool) -> None:
    """JAX's TypeErrors for in_axes/out_axes leaves that are not ints or None."""
    if top_tuple and not (spec is None or type(spec) in (int, tuple)):
        raise BatchingTypeError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                                f"positional arguments passed to the function, but got {spec}.")
    leaves, _ = tree_flatten(spec, is_leaf=lambda x: x is None)
    if not all(_is_axis(x) for x in leaves):
        raise BatchingTypeError(f"vmap {what} must be an int, None, or (nested) container with those types as "
                                f"leaves, but got {spec}.")


def _prefix_children(spec: Any) -> tuple[type, Any, list]:
    """(node type, aux, children) of one level of an axes spec, as tree_flatten sees it."""
    _, tree = tree_flatten(spec, is_leaf=lambda x: x is not spec)
    children = [spec[k] for k in sorted(spec)] if isinstance(spec, dict) else list(spec)
    return tree.node_type, tree.aux, children


def _broadcast_prefix(what: str, spec: Any, tree: PyTreeDef) -> list[Any]:
    """The axis of every leaf of `tree`, given `spec`, a tree prefix of it with ints and Nones at its leaves."""
    def go(s: Any, t: PyTreeDef, path: str) -> list[Any]:
        if _is_axis(s):
            return [s] * t.num_leaves
        node_type, aux, children = _prefix_children(s)
        if t.node_type is None or node_type is not t.node_type or aux != t.aux or len(children) != len(t.children):
            raise BatchingValueError(
                f"{what} specification must be a tree prefix of the corresponding value; at {what}{path} the "
                f"specification is {s!r} but the value has structure {t!r}")
        out = []
        for i, (c, ct) in enumerate(zip(children, t.children)):
            key = f"[{t.aux[i]!r}]" if t.node_type is dict else f"[{i}]"
            out.extend(go(c, ct, path + key))
        return out
    return go(spec, tree, "")


def _arg_names(fun: Callable, args: tuple, kwargs: dict) -> list[str] | None:
    try:
        return list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
    except (TypeError, ValueError):
        return None


def _leaf_descriptions(fun: Callable, args: tuple, kwargs: dict, leaves: list, tree: PyTreeDef) -> list[str]:
    """JAX's `argument x['a'] of type f32[3]` per leaf of (args, kwargs)."""
    names = _arg_names(fun, args, kwargs)
    out = []
    args_tree, kwargs_tree = tree.children
    for i, child in enumerate(args_tree.children):
        for path in leaf_paths(child):
            if names is None or i >= len(names):
                out.append(f"args[{i}]{path}")
            else:
                out.append(f"argument {names[i]}{path}")
    out += [f"kwargs{p}" for p in leaf_paths(kwargs_tree)]
    return [f"{d} of type {aval(x).str_short()}" for d, x in zip(out, leaves)]


def _mapped_size(fun, args, kwargs, leaves, tree, axes, axis_size) -> int:
    if not leaves:
        if axis_size is not None:
            return axis_size
        raise BatchingValueError(f"vmap wrapped function must be passed at least one argument containing an array "
                                 f"or axis_size must be specified, got empty *args={args} and **kwargs={kwargs}")
    sizes = [None if a is None else aval(x).shape[a] for x, a in zip(leaves, axes)]
    distinct = sorted({s for s in sizes if s is not None} | ({axis_size} if axis_size is not None else set()))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        raise BatchingValueError("vmap must have at least one non-None value in in_axes or axis_size must be "
                                 "specified")
    described = _leaf_descriptions(fun, args, kwargs, leaves, tree)
    counts = Counter(s for s in sizes if s is not None).most_common()
    msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        msg.append(f"  * the `axis_size` argument was {axis_size};\n")
    for k, (size, count) in enumerate(counts):
        i = sizes.index(size)
        if count == 1:
            msg.append(f"  * one axis had size {size}: axis {axes[i]} of {described[i]};\n")
        else:
            many = "most" if k == 0 else "some"
            msg.append(f"  * {many} axes ({count} of them) had size {size}, e.g. axis {axes[i]} of {described[i]};\n")
    raise BatchingValueError("".join(msg)[:-2])


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None, axis_size: int | None = None,
         spmd_axis_name: Any = None) -> Callable:
    """Vectorizing map (jax.vmap): a function that maps `fun` over an axis of its arguments.

    in_axes: an int, None, or a tuple with one entry per positional argument, each a prefix tree of that
    argument with ints (the mapped axis, negative counting from the end) or None (not mapped) at its leaves;
    keyword arguments are always mapped over axis 0. out_axes: the same for the output (None: the output must
    not depend on the mapped axis). axis_size: the size when no argument is mapped. axis_name names the axis
    for collectives (psum, all_gather, ...: frontend/parallel, batching/rules_collective.py); spmd_axis_name is
    accepted and ignored (one device).

    `fun` is traced once per example shape into HLO, the computation is batched by the rule tables of
    frontend/batching (HLO -> HLO), and called: so vmap works eagerly, under jit, and nests with itself, jit,
    grad and control flow."""
    del spmd_axis_name          # one device: nothing to partition over
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)        # as JAX: a list at the top is the tuple of per-argument specs
    _check_axes_spec("in_axes", in_axes, top_tuple=True)
    _check_axes_spec("out_axes", out_axes, top_tuple=False)
    if axis_size is not None and (type(axis_size) is not int or axis_size < 0):
        raise BatchingValueError(f"vmap axis_size must be a non-negative int, got {axis_size!r}")
    name = f"vmap_{_name_of(fun)}"

    def vmap_f(*args, **kwargs):
        if current_trace() is None:
            with transient_rules():
                return run(*args, **kwargs)
        return run(*args, **kwargs)

    def run(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            msg = ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                   f"arguments passed to the function, but got len(in_axes)={len(in_axes)}, len(args)={len(args)}.")
            if kwargs:
                msg += (f" Note that the function was called with keyword arguments {list(kwargs)}, which the "
                        "entries of a tuple in_axes never correspond to: keyword arguments are always mapped along "
                        "their leading axis (axis 0).")
            raise BatchingValueError(msg)
        leaves, tree = tree_flatten((tuple(args), dict(kwargs)))
        axes = _broadcast_prefix("vmap in_axes", (in_axes, 0), tree)
        canon = []
        for x, a in zip(leaves, axes):
            if a is not None:
                nd = aval(x).ndim
                if not -nd <= a < nd:
                    min_rank = a + 1 if a >= 0 else -a
                    raise BatchingValueError(
                        f"vmap was requested to map its argument along axis {a}, which implies that its rank "
                        f"should be at least {min_rank}, but is only {nd} (its shape is {aval(x).shape})")
                a %= nd
            canon.append(a)
        size = _mapped_size(fun, args, kwargs, leaves, tree, canon, axis_size)
        in_avals = []
        for x, a in zip(leaves, canon):
            av = aval(x)
            in_avals.append(av if a is None else
                            ShapedArray(av.shape[:a] + av.shape[a + 1:], av.dtype, av.weak_type))
        with _vmap_axis(axis_name, size):
            trace, outs, out_tree = trace_function(lambda a, k: fun(*a, **k), in_avals, tree, name)
        trace.finish(outs, tuple_root=True)
        captured = [value for value, _ in trace.captures]
        out_avals = [o.aval for o in outs]
        targets = _broadcast_prefix("vmap out_axes", out_axes, out_tree)
        paths = leaf_paths(out_tree)

        scratch = Module("batching_scratch")
        comp = new_hlo_computation(scratch, name)
        b = Batcher(comp, size, axis_name)
        params = []
        dims: list[Any] = []
        for i, p in enumerate(trace.comp.parameters):
            a = canon[i] if i < len(canon) else None
            params.append(b.parameter(i, batched_shape(p.shape, a, size).without_layout(), p.name))
            dims.append(a)
        root, root_dims = batch_into(b, trace.comp, params, dims)
        results = []
        for k, (t, path, oa) in enumerate(zip(targets, paths, out_avals)):
            v = b.gte(root, k)
            d = root_dims[k] if isinstance(root_dims, tuple) else root_dims
            if t is None:
                if d is not None:
                    if axis_name is not None:
                        raise BatchingValueError(f"vmap has mapped output (axis_name={axis_name}) but out_axes "
                                                 f"is None")
                    raise BatchingValueError(f"at vmap out_axes{path}, got axis spec None but output was batched "
                                             f"on axis {d}")
                results.append(v)
                continue
            nd = oa.ndim + 1
            if not -nd <= t < nd:
                raise BatchingValueError(f"vmap out_axes{path}: axis {t} is out of bounds for an output of rank "
                                         f"{nd} ({oa} with the mapped axis)")
            results.append(b.at(v, d, t % nd))
        comp.root = b.tuple(results)
        comp.remove_dead()
        derived = _callable(comp)
        out = _call(derived, list(leaves) + captured, [a.weak_type for a in out_avals], name)
        return tree_unflatten(out_tree, out)
    vmap_f.__name__ = name
    vmap_f.__wrapped__ = fun
    vmap_f.__doc__ = fun.__doc__
    return vmap_f


def _vmap_axis(axis_name: Any, size: int):
    """The named axis bound while vmap traces its function (collectives over it: frontend/parallel)."""
    from .parallel.axis_env import axis_frames, AxisFrame
    return axis_frames([] if axis_name is None else [AxisFrame(axis_name, size, "vmap")])


__all__ = ["grad", "value_and_grad", "vjp", "jvp", "stop_gradient", "vmap"]
