"""Automatic differentiation as HLO -> HLO transformations (DESIGN.md: "one IR").

    vjp_computation(module, comp, wrt) -> Computation    reverse mode
        parameters: comp's parameters (same order and shapes), then ONE COTANGENT PARAMETER PER LEAF of
        comp's result (a non-tuple result: one; a tuple result: its array leaves, depth-first; cotangents
        of integer/bool leaves are accepted and ignored)
        result: tuple(primal result, gradient of parameter wrt[0], gradient of wrt[1], ...)
    jvp_computation(module, comp) -> Computation         forward mode
        parameters: primals (comp's parameters), then one tangent per primal, same shapes (tangents of
        integer/bool parameters are ignored: JAX's float0)
        result: tuple(primal result, tangent of the result)
    grad_module(module, wrt=0, has_value=False) -> Module
        for an entry with a scalar floating-point result: a new module whose entry takes the same
        parameters and returns the gradient (wrt an int) or a tuple of gradients (wrt a list/tuple);
        with has_value, tuple(value, gradient(s)) as jax.value_and_grad.
    computation_module(module, comp) -> Module            a copy of `module` whose entry is `comp`
                                                           (to compile and run a derived computation)

Differentiating with respect to an integer or bool parameter raises AutodiffError (an XlapyError); JAX
returns a float0 zero there. A missing rule raises AutodiffError naming the opcode. Rules live in the
`rules_*.py` tables by op family (each op's JVP and VJP side by side); `vjp.py` and `jvp.py` are the
two drivers. Reverse mode through a `while` loop needs a static trip count N (fori_loop with constant
bounds, scan): N <= MAX_UNROLL is unrolled, a longer loop becomes a taped forward loop plus a reverse
loop (`loops.py`; memory N x the carried state, as JAX's scan); a data-dependent loop raises. The new computations use only ops that have rules themselves, so they can be
differentiated again (grad of grad).
"""
from __future__ import annotations

from typing import Sequence

from ...hlo import Computation, Module
from .jvp import jvp_computation, jvp_into
from .rules_common import AutodiffError, is_real_float
from .vjp import (MAX_UNROLL, add_parameter, check_wrt, materialize, new_computation, vjp_computation,
                  vjp_into)


def computation_module(module: Module, comp: Computation, name: str | None = None) -> Module:
    """A new module holding a copy of `comp` (and what it calls) as its entry computation."""
    old = module.entry
    module.entry = comp
    try:
        out = module.clone()
    finally:
        module.entry = old
    out.attrs.pop("entry_computation_layout", None)
    out.remove_unreachable_computations()
    if name:
        out.name = name
    return out


def grad_module(module: Module, wrt: int | Sequence[int] = 0, has_value: bool = False) -> Module:
    """The gradient of a module whose entry returns a floating-point scalar, as a new module."""
    argnums = [wrt] if isinstance(wrt, int) else list(wrt)
    entry = module.entry
    if entry is None:
        raise AutodiffError(f"module {module.name} has no entry computation")
    shape = entry.root.shape
    if shape.is_tuple or shape.rank != 0 or not is_real_float(shape):
        raise AutodiffError(f"grad requires a scalar floating-point output, but {entry.name} returns {shape}")
    check_wrt(entry, argnums)
    new = module.clone()
    old_entry = new.entry
    comp, b = new_computation(new, f"{old_entry.name}.grad")
    params = [add_parameter(b, p.shape, i, p.name) for i, p in enumerate(old_entry.parameters)]
    root, grads = vjp_into(b, old_entry, params, b.scalar(1.0, shape.element_type))
    gs = [materialize(b, grads[i], params[i].shape) for i in argnums]
    out = gs[0] if isinstance(wrt, int) else b.tuple(gs)
    comp.root = b.tuple([root, out]) if has_value else out
    comp.remove_dead()
    new.entry = comp
    new.attrs.pop("entry_computation_layout", None)
    new.remove_unreachable_computations()
    return new


__all__ = ["AutodiffError", "MAX_UNROLL", "computation_module", "grad_module", "jvp_computation", "jvp_into",
           "vjp_computation", "vjp_into"]
