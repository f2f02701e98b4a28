"""custom_jvp, custom_vjp, checkpoint (remat) and its policies, checkpoint_name: JAX's API over marked calls.

Each decorated function, when called, traces the user's function into a computation and `bind`s a `call` to it
(so it runs eagerly, under jit, and everything but the autodiff sees an ordinary call), marked with a rule of
autodiff/custom_rules.py that holds the traced rule computations:

    custom_jvp   the jvp rule traced on (primals, tangents) -> (primal out, tangent out)
    custom_vjp   fwd traced on the primals -> (out, residuals); bwd on (residuals, cotangents)
    checkpoint   the policy: which values of the body the backward pass reads (the rest it recomputes)

Values the functions close over from enclosing traces become further operands of the call (each traced
computation gets the union of the captures as parameters). A nondiff_argnums argument is bound into the traced
functions as a constant (a traced one is captured): it gets no derivative. Under vmap the call is inlined and
batched like any other (the rules then apply to what vmap produced only when the derivative is taken first:
`vmap(grad(f))`).

Policies are predicates over an HLO Instruction of the (flattened) body: `policy(inst) -> bool`, True to save
it. JAX's take `(primitive, *avals, **params)`; the names in `checkpoint_policies` are the same.
"""
from __future__ import annotations

import functools
import inspect
import threading
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import XlapyError
from ..hlo import Instruction
from .autodiff.custom_rules import Checkpoint, CustomJVP, CustomVJP, register
from .autodiff.vjp import add_parameter, copy_forward
from .pytree import tree_flatten, tree_unflatten
from .tracer import aval, bind, current_trace
from .transforms import _callable, _derive, _elements, _name_of, trace_flat


def _resolve_kwargs(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    if not kwargs:
        return tuple(args)
    try:
        ba = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{_name_of(fun)}: {e}") from None
    ba.apply_defaults()
    if ba.kwargs:
        raise TypeError("keyword arguments could not be resolved to positions")
    return tuple(ba.args)


def _split_nondiff(what: str, args: tuple, nondiff: Sequence[int],
                   label: str = "nondiff_argnums") -> tuple[dict[int, Any], list[Any]]:
    for i in nondiff:
        if not -len(args) <= i < len(args):
            raise XlapyError(f"{what}: {label}={tuple(nondiff)} but the function was called with "
                             f"{len(args)} positional arguments")
    fixed = {i % len(args): args[i] for i in nondiff}
    return fixed, [a for i, a in enumerate(args) if i not in fixed]


def _merge(fixed: dict[int, Any], dyn: Sequence[Any]) -> list[Any]:
    it = iter(dyn)
    return [fixed[i] if i in fixed else next(it) for i in range(len(fixed) + len(dyn))]


def _union_captures(traces: Sequence[Any]) -> tuple[list[Any], list[list[int]]]:
    """The distinct captured values of several traces, and for each trace the index of each of its captures."""
    values: list[Any] = []
    index: dict[int, int] = {}
    positions = []
    for t in traces:
        pos = []
        for v in t.captured:
            if id(v) not in index:
                index[id(v)] = len(values)
                values.append(v)
            pos.append(index[id(v)])
        positions.append(pos)
    return values, positions


# -- custom_jvp ---------------------------------------------------------------------------------------------
class custom_jvp:
    """A function with a user-defined forward-mode derivative (jax.custom_jvp). Reverse mode transposes the rule
    (it must be linear in the tangents)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False
        self._reentry = _Reentry()

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One function per argument, jvp_i(tangent_i, primal_out, *primals) -> its contribution to the output
        tangent (None: the argument contributes nothing)."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for f, t in zip(jvps, tangents):
                if f is None:
                    continue
                c = f(t, out, *primals)
                total = c if total is None else _tree_add(total, c)
            if total is None:
                from .pytree import tree_map
                total = tree_map(lambda o: bind("broadcast", [np.zeros((), aval(o).dtype)],
                                                {"dimensions": []}, shape=aval(o).hlo_shape), out)
            return out, total
        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = _name_of(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        if current_trace() is None:         # nothing can differentiate it: the primal, op by op
            return self.fun(*args, **kwargs)
        args = _resolve_kwargs(self.fun, args, kwargs)
        fixed, dyn = _split_nondiff("custom_jvp", args, self.nondiff_argnums)
        nondiff_vals = [fixed[i] for i in sorted(fixed)]
        prim = trace_flat(lambda *d: self.fun(*_merge(fixed, d)), tuple(dyn), {}, f"custom_jvp_{name}")
        n_in, n_out = len(prim.leaves), len(prim.out_avals)
        t_avals = [aval(x) for x in prim.leaves]

        def rule(*flat):
            primals = tree_unflatten(prim.in_tree, flat[:n_in])
            tangents = tree_unflatten(prim.in_tree, flat[n_in:])
            out = self.jvp(*nondiff_vals, tuple(primals), tuple(tangents))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise XlapyError(f"Custom JVP rule {_name_of(self.jvp)} for function {name} must produce a pair "
                                 f"(list or tuple of length two) representing primal and tangent outputs, but "
                                 f"got {out}.")
            p, t = out
            p_leaves, p_tree = tree_flatten(p)
            if p_tree != prim.out_tree:
                raise XlapyError(f"Custom JVP rule {_name_of(self.jvp)} for function {name} must produce primal "
                                 f"outputs with the same container (pytree) structure as the primal function, "
                                 f"but got {p_tree} and {prim.out_tree} respectively.")
            t_leaves, t_tree = tree_flatten(t)
            if t_tree != p_tree:
                raise XlapyError(f"Custom JVP rule must produce primal and tangent outputs with equal container "
                                 f"(pytree) structures, but got {p_tree} and {t_tree} respectively.")
            for pl, tl, want in zip(p_leaves, t_leaves, prim.out_avals):
                pa, ta = aval(pl), aval(tl)
                if pa.shape != ta.shape:
                    raise XlapyError(f"Custom JVP rule must produce primal and tangent outputs with equal shapes "
                                     f"and dtypes, but got {pa.str_short()} and {ta.str_short()} respectively.")
            return tuple(p_leaves) + tuple(t_leaves)
        rule_args = tuple(prim.leaves) + tuple(np.zeros(a.shape, a.dtype) for a in t_avals)

        def trace_rule():
            with self._reentry:
                return trace_flat(rule, rule_args, {}, f"custom_jvp_{name}_rule")
        lazy = self._reentry.active
        jvp_traced = None if lazy else trace_rule()
        caps, positions = _union_captures([prim] if lazy else [prim, jvp_traced])
        pos_p, pos_r = positions[0], ([] if lazy else positions[1])
        operand_shapes = [p.shape for p in prim.comp.parameters[:n_in]] + [aval(c).hlo_shape for c in caps]

        def build_primal(b):
            params = [add_parameter(b, s, i, f"p{i}") for i, s in enumerate(operand_shapes)]
            ins = params[:n_in] + [params[n_in + k] for k in pos_p]
            return _elements(b, copy_forward(b, prim.comp, ins))

        def make_jvp():
            traced = jvp_traced if jvp_traced is not None else _no_captures(trace_rule(), "custom_jvp", name)
            positions = pos_r if jvp_traced is not None else []

            def build_rule(b):
                params = [add_parameter(b, s, i, f"p{i}") for i, s in enumerate(operand_shapes)]
                tans = [add_parameter(b, s, len(params) + i, f"t{i}") for i, s in enumerate(operand_shapes)]
                ins = params[:n_in] + tans[:n_in] + [params[n_in + k] for k in positions]
                out = _elements(b, copy_forward(b, traced.comp, ins))
                return [_cast(b, o, a.hlo_shape.element_type) for o, a in zip(out, prim.out_avals + prim.out_avals)]
            return _derive(f"custom_jvp_{name}_jvp", build_rule)
        primal = _derive(f"custom_jvp_{name}", build_primal)
        attrs = {"to_apply": primal, **register(CustomJVP(make_jvp, n_out))}
        outs = bind("call", list(prim.leaves) + caps, attrs, name=f"custom_jvp_{name}")
        return _outputs(outs, prim)


class _Reentry(threading.local):
    """Whether the calling thread is tracing this function's rule (then a call of the function inside its own
    rule, JAX's usual `f(x)` in the jvp/fwd rule, defers tracing its rule to first use)."""

    def __init__(self):
        self.depth = 0

    @property
    def active(self) -> bool:
        return self.depth > 0

    def __enter__(self):
        self.depth += 1

    def __exit__(self, *exc):
        self.depth -= 1


def _no_captures(traced, what: str, name: str):
    if traced.captured:
        raise XlapyError(f"{what} function {name}: its rule calls the function itself and closes over traced "
                         f"values ({', '.join(aval(c).str_short() for c in traced.captured)}); pass them as "
                         f"arguments instead")
    return traced


def _cast(b, x: Instruction, element_type: str) -> Instruction:
    return x if x.shape.element_type == element_type else b.convert(x, element_type)


def _outputs(outs, traced) -> Any:
    from .array import with_weak_type
    outs = outs if isinstance(outs, list) else [outs]
    outs = [with_weak_type(o, a.weak_type) if a.weak_type else o for o, a in zip(outs, traced.out_avals)]
    return tree_unflatten(traced.out_tree, outs)


def _tree_add(a, b):
    from .pytree import tree_map
    return tree_map(lambda x, y: x + y, a, b)


# -- custom_vjp ---------------------------------------------------------------------------------------------
class custom_vjp:
    """A function with a user-defined reverse-mode derivative (jax.custom_vjp): `defvjp(fwd, bwd)` with
    fwd(*args) -> (out, residuals) and bwd(*nondiff_args, residuals, out_cotangent) -> a tuple with one
    cotangent per (differentiable) argument (None: zero)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self._reentry = _Reentry()

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = _name_of(self.fun)
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        if current_trace() is None:
            return self.fun(*args, **kwargs)
        args = _resolve_kwargs(self.fun, args, kwargs)
        fixed, dyn = _split_nondiff("custom_vjp", args, self.nondiff_argnums)
        nondiff_vals = [fixed[i] for i in sorted(fixed)]
        prim = trace_flat(lambda *d: self.fun(*_merge(fixed, d)), tuple(dyn), {}, f"custom_vjp_{name}")
        n_in, n_out = len(prim.leaves), len(prim.out_avals)
        res_info: dict[str, Any] = {}

        def fwd(*d):
            out = self.fwd(*_merge(fixed, d))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise XlapyError(f"Custom VJP fwd rule {_name_of(self.fwd)} for function {name} must produce a "
                                 f"pair (list or tuple of length two) where the first element represents the "
                                 f"primal output (equal to the output of the custom_vjp-decorated function {name}) "
                                 f"and the second element represents residuals (i.e. values stored from the "
                                 f"forward pass for use on the backward pass), but instead the fwd rule output's "
                                 f"type was {type(out).__name__}.")
            p, res = out
            p_leaves, p_tree = tree_flatten(p)
            if p_tree != prim.out_tree:
                raise XlapyError(f"Custom VJP fwd rule {_name_of(self.fwd)} for function {name} must produce a "
                                 f"pair (list or tuple of length two) where the first element represents the "
                                 f"primal output (equal in value to the output of the custom_vjp-decorated "
                                 f"function {name}, and in particular of the same container/pytree structure), "
                                 f"but instead the fwd rule output's first element had container/pytree "
                                 f"structure {p_tree} while the custom_vjp-decorated function {name} had output "
                                 f"container/pytree structure {prim.out_tree}.")
            r_leaves, r_tree = tree_flatten(res)
            res_info["tree"] = r_tree
            return tuple(p_leaves) + tuple(r_leaves)
        arg_trees = list(prim.in_tree.children)
        arg_avals = prim.in_avals

        def bwd_of(res_tree, n_res):
            def bwd(*flat):
                res = tree_unflatten(res_tree, flat[:n_res])
                ct = tree_unflatten(prim.out_tree, flat[n_res:])
                g = self.bwd(*nondiff_vals, res, ct)
                return _bwd_leaves(g, arg_trees, arg_avals, prim.in_tree)
            return bwd

        def trace_rules():
            with self._reentry:
                fwd_traced = trace_flat(fwd, tuple(dyn), {}, f"custom_vjp_{name}_fwd")
                res_avals = fwd_traced.out_avals[n_out:]
                bwd_args = tuple(np.zeros(a.shape, a.dtype) for a in list(res_avals) + list(prim.out_avals))
                bwd_traced = trace_flat(bwd_of(res_info["tree"], len(res_avals)), bwd_args, {},
                                        f"custom_vjp_{name}_bwd")
            return fwd_traced, bwd_traced
        lazy = self._reentry.active
        traced_rules = None if lazy else trace_rules()
        caps, positions = _union_captures([prim] if lazy else [prim, *traced_rules])
        operand_shapes = [p.shape for p in prim.comp.parameters[:n_in]] + [aval(c).hlo_shape for c in caps]

        def params_of(b):
            return [add_parameter(b, s, i, f"p{i}") for i, s in enumerate(operand_shapes)]

        def build_primal(b):
            params = params_of(b)
            return _elements(b, copy_forward(b, prim.comp, params[:n_in] + [params[n_in + k] for k in positions[0]]))

        def make_rules():
            if traced_rules is None:
                fwd_traced, bwd_traced = trace_rules()
                _no_captures(fwd_traced, "custom_vjp", name)
                _no_captures(bwd_traced, "custom_vjp", name)
                pos_f, pos_b = [], []
            else:
                (fwd_traced, bwd_traced), pos_f, pos_b = traced_rules, positions[1], positions[2]
            n_res = len(fwd_traced.out_avals) - n_out

            def build_fwd(b):
                # (outputs..., residuals..., the values bwd closes over: residuals too)
                params = params_of(b)
                ins = params[:n_in] + [params[n_in + k] for k in pos_f]
                return _elements(b, copy_forward(b, fwd_traced.comp, ins)) + [params[n_in + k] for k in pos_b]
            bwd_res = list(fwd_traced.out_avals[n_out:]) + [aval(caps[k]) for k in pos_b]

            def build_bwd(b):
                res = [add_parameter(b, a.hlo_shape, i, f"r{i}") for i, a in enumerate(bwd_res)]
                cts = [add_parameter(b, a.hlo_shape, len(res) + i, f"ct{i}") for i, a in enumerate(prim.out_avals)]
                out = _elements(b, copy_forward(b, bwd_traced.comp, res[:n_res] + cts + res[n_res:]))
                return [_cast(b, o, a.hlo_shape.element_type) for o, a in zip(out, arg_avals)]
            return _derive(f"custom_vjp_{name}_fwd", build_fwd), _derive(f"custom_vjp_{name}_bwd", build_bwd)
        primal = _derive(f"custom_vjp_{name}", build_primal)
        rule = CustomVJP(make_rules, n_out, range(n_in))
        outs = bind("call", list(prim.leaves) + caps, {"to_apply": primal, **register(rule)},
                    name=f"custom_vjp_{name}")
        return _outputs(outs, prim)


def _bwd_leaves(g: Any, arg_trees: list, arg_avals: list, in_tree) -> tuple:
    """bwd's output as one cotangent leaf per primal leaf (zeros for None), with JAX's errors."""
    if isinstance(g, list):
        g = tuple(g)
    if not isinstance(g, tuple) or len(g) != len(arg_trees):
        raise XlapyError(
            f"Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args "
            f"tuple of the primal function, and in particular must produce a tuple of length equal to the number "
            f"of arguments to the primal function, but got bwd output structure {tree_flatten(g)[1]} for primal "
            f"input structure {in_tree}.")
    out, start = [], 0
    for k, (gi, tree) in enumerate(zip(g, arg_trees)):
        avals_k = arg_avals[start:start + tree.num_leaves]
        start += tree.num_leaves
        if gi is None:
            out += [np.zeros(a.shape, a.dtype) for a in avals_k]
            continue
        leaves, t = tree_flatten(gi)
        if t != tree:
            raise XlapyError(
                f"Custom VJP bwd rule must produce an output with the same container (pytree) structure as the "
                f"args tuple of the primal function, but at output[{k}] the bwd rule produced structure {t} "
                f"corresponding to an input of structure {tree}.")
        for leaf, a in zip(leaves, avals_k):
            la = aval(leaf)
            if la.shape != a.shape:
                raise XlapyError(
                    f"Custom VJP bwd rule must produce an output with the same shape/dtypes as the args tuple of "
                    f"the primal function, but at output[{k}] the bwd rule produced an output of shape/dtype "
                    f"{la.str_short()} corresponding to an input of shape/dtype {a.str_short()}")
            out.append(leaf)
    return tuple(out)


# -- checkpoint ---------------------------------------------------------------------------------------------
def _meta_name(inst: Instruction) -> str | None:
    meta = str(inst.attrs.get("metadata", ""))
    prefix = 'op_name="checkpoint_name/'
    k = meta.find(prefix)
    if inst.opcode != "copy" or k < 0:
        return None
    return meta[k + len(prefix):].split('"', 1)[0]


def checkpoint_name(x: Any, name: str) -> Any:
    """Name the values of `x` for checkpoint policies (jax.ad_checkpoint.checkpoint_name): the identity."""
    from .pytree import tree_map
    return tree_map(lambda v: bind("copy", [v], {"metadata": f'{{op_name="checkpoint_name/{name}"}}'},
                                   name="checkpoint_name", weak_type=aval(v).weak_type), x)


def everything_saveable(inst: Instruction) -> bool:
    return True


def nothing_saveable(inst: Instruction) -> bool:
    return False


def dots_saveable(inst: Instruction) -> bool:
    return inst.opcode in ("dot", "convolution")


def dots_with_no_batch_dims_saveable(inst: Instruction) -> bool:
    return inst.opcode == "dot" and not inst.attrs.get("lhs_batch_dims")


def save_anything_except_these_names(*names: str) -> Callable[[Instruction], bool]:
    names_ = set(names)
    return lambda inst: _meta_name(inst) not in names_


def save_any_names_but_these(*names: str) -> Callable[[Instruction], bool]:
    names_ = set(names)
    return lambda inst: (n := _meta_name(inst)) is not None and n not in names_


def save_only_these_names(*names: str) -> Callable[[Instruction], bool]:
    names_ = set(names)
    return lambda inst: _meta_name(inst) in names_


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable[[Instruction], bool]:
    return lambda inst: bool(policy_1(inst) or policy_2(inst))


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable[[Instruction], bool]:
    """One device, one memory: "offloading" a value is saving it."""
    return dots_with_no_batch_dims_saveable


def save_and_offload_only_these_names(*, names_which_can_be_saved: Sequence[str] = (),
                                      names_which_can_be_offloaded: Sequence[str] = (), offload_src: str = "device",
                                      offload_dst: str = "pinned_host") -> Callable[[Instruction], bool]:
    """One device, one memory: the offloaded names are saved too."""
    return save_only_these_names(*names_which_can_be_saved, *names_which_can_be_offloaded)


checkpoint_policies = SimpleNamespace(
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
    everything_saveable=everything_saveable, nothing_saveable=nothing_saveable, dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable, dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these, save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies)


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool | Sequence[bool] = True,
               policy: Callable | None = None, static_argnums: int | Sequence[int] = (),
               static_argnames: str | Sequence[str] = (), concrete: Any = None) -> Callable:
    """jax.checkpoint (also `remat`): in reverse mode, only the values `policy` saves (default: none; the inputs
    always) are kept from the forward pass; the backward pass recomputes the others. With prevent_cse the
    recomputation reads its inputs through an opt-barrier, so the optimizer cannot merge it with the forward."""
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums,
                                    static_argnames=static_argnames)
    if not callable(fun):
        raise TypeError(f"checkpoint requires a callable, got {fun!r}")
    if not isinstance(prevent_cse, bool):
        prevent_cse = any(prevent_cse)        # per-argument flags: one barrier over all of them
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    del static_argnames, concrete       # keyword arguments are never traced as operands here
    chosen = nothing_saveable if policy is None else policy
    keep = chosen is not everything_saveable
    name = _name_of(fun)

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        if current_trace() is None:
            return fun(*args, **kwargs)
        fixed, dyn = _split_nondiff("checkpoint", tuple(args), statics, "static_argnums")
        # keyword arguments are closed over (trace_flat): static_argnames values reach fun as they are
        traced = trace_flat(lambda *d, **k: fun(*_merge(fixed, d), **k), tuple(dyn), kwargs, f"checkpoint_{name}")
        rule = Checkpoint(chosen if keep else None, prevent_cse)
        outs = bind("call", traced.operands, {"to_apply": _callable(traced.comp), **register(rule)},
                    name=f"checkpoint_{name}")
        return _outputs(outs, traced)
    return checkpointed


remat = checkpoint

__all__ = ["custom_jvp", "custom_vjp", "checkpoint", "remat", "checkpoint_policies", "checkpoint_name"]
