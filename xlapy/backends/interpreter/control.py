"""Control flow and calls: while, conditional, call, map, fusion, custom-call, and the identity-like ops.

Called computations run through `ev.call(comp, args)`. Custom-call targets are looked up in
CUSTOM_CALL_TARGETS (target name -> fn(inst, args, ev)); other files may register targets there.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

from ...errors import ExecutionError
from .evaluator import TOKEN


def _while(inst, args, ev):
    body, cond = inst.attrs["body"], inst.attrs["condition"]
    state = args[0]
    while bool(ev.call(cond, [state])):
        state = ev.call(body, [state])
    return state


def _conditional(inst, args, ev):
    selector = args[0]
    if "branch_computations" in inst.attrs:
        branches = inst.attrs["branch_computations"]
        index = int(np.asarray(selector).reshape(-1)[0])
        if not 0 <= index < len(branches):   # out of range runs the last branch
            index = len(branches) - 1
    else:
        branches = [inst.attrs["true_computation"], inst.attrs["false_computation"]]
        index = 0 if bool(selector) else 1
    if len(args) != len(branches) + 1:
        raise ExecutionError(f"conditional {inst.name}: {len(branches)} branches need {len(branches) + 1} "
                             f"operands, got {len(args)}")
    return ev.call(branches[index], [args[1 + index]])


def _call(inst, args, ev):
    return ev.call(inst.attrs["to_apply"], list(args))


def _fusion(inst, args, ev):
    return ev.call(inst.attrs["calls"], list(args))


def _map(inst, args, ev):
    comp = inst.attrs["to_apply"]
    out = np.empty(inst.shape.dims, dtype=inst.shape.dtype)
    for index in np.ndindex(*inst.shape.dims):
        out[index] = ev.call(comp, [np.asarray(a[index]) for a in args])
    return out


def _scan(inst, args, ev):
    """scan(inputs..., inits...), dimensions={d}, num_carries=c: to_apply(input slices..., carries...) returns
    (output elements..., new carries...); outputs are stacked along d (walked backwards when is_reverse)."""
    comp = inst.attrs["to_apply"]
    n_carry = inst.attrs.get("num_carries", 0)
    inputs, carries = list(args[:len(args) - n_carry]), list(args[len(args) - n_carry:])
    dim = inst.attrs["dimensions"][0]
    length = inputs[0].shape[dim] if inputs else 0
    leaves = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    n_out = len(leaves) - n_carry
    outputs = [np.empty(s.dims, dtype=s.dtype) for s in leaves[:n_out]]
    steps = range(length - 1, -1, -1) if inst.attrs.get("is_reverse") else range(length)
    for k in steps:
        result = ev.call(comp, [np.take(x, k, axis=dim) for x in inputs] + carries)
        result = list(result) if isinstance(result, tuple) else [result]
        for out, value in zip(outputs, result[:n_out]):
            index = [slice(None)] * out.ndim
            index[dim] = k
            out[tuple(index)] = value
        carries = result[n_out:]
    values = outputs + list(carries)
    return tuple(values) if inst.shape.is_tuple else values[0]


# target name -> fn(inst, args, ev). Other op files export their own CUSTOM_CALL_TARGETS table (misc.py has
# TopK); custom_call_targets() merges them on first use, so a target's rule lives beside its op family.
CUSTOM_CALL_TARGETS: dict[str, Callable[[Any, list, Any], Any]] = {}
_TARGET_MODULES = ("misc", "linalg", "reduction", "gather_scatter", "sorting", "prng", "dynamic_shapes",
                   "host_callback")
_ALL_TARGETS: dict[str, Callable[[Any, list, Any], Any]] | None = None


def custom_call_targets() -> dict[str, Callable[[Any, list, Any], Any]]:
    global _ALL_TARGETS
    if _ALL_TARGETS is None:
        table = dict(CUSTOM_CALL_TARGETS)
        for name in _TARGET_MODULES:
            try:
                mod = importlib.import_module(f"{__package__}.{name}")
            except ImportError:
                continue
            for target, fn in getattr(mod, "CUSTOM_CALL_TARGETS", {}).items():
                if target in table and table[target] is not fn:
                    raise AssertionError(f"two interpreter rules for custom-call target {target!r}")
                table[target] = fn
        _ALL_TARGETS = table
    return _ALL_TARGETS


def _custom_call(inst, args, ev):
    target = inst.attrs.get("custom_call_target", "")
    fn = custom_call_targets().get(target)
    if fn is None:
        raise ExecutionError(f"custom-call {inst.name}: target {target!r} is not supported by the interpreter")
    return fn(inst, args, ev)


HANDLERS = {
    "while": _while,
    "conditional": _conditional,
    "call": _call,
    "fusion": _fusion,
    "map": _map,
    "scan": _scan,
    "custom-call": _custom_call,
    "opt-barrier": lambda inst, args, ev: args[0],
    "after-all": lambda inst, args, ev: TOKEN,
    "add-dependency": lambda inst, args, ev: args[0],
}
