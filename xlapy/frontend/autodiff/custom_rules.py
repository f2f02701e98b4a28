"""User-defined derivative rules and rematerialization, seen by the HLO -> HLO autodiff through `call`s.

custom_jvp, custom_vjp and checkpoint (frontend/custom_derivatives.py) trace the user's function into a
computation and emit a plain `call` to it whose `frontend_attributes` carry the marker
`{xlapy_rule="KEY"}`. Backends, the optimizer (the call inliner) and printing see an ordinary call; KEY names a
`CallRule` object in this module's `RULES` registry, which holds the traced rule computations:

| kind         | forward copy (copy_forward)            | JVP rule                           | VJP rule                             |
|--------------|----------------------------------------|------------------------------------|--------------------------------------|
| custom_jvp   | the call is kept                       | the traced jvp computation         | the transpose of the jvp computation |
|              |                                        | (primals, tangents) -> (outs, t)   | in its tangents (its VJP at zero)    |
| custom_vjp   | the call is kept                       | an error, as JAX                   | fwd (primals -> outs, residuals),    |
|              |                                        |                                    | then bwd (residuals, cts -> cts)     |
| checkpoint   | JVP: inlined. VJP: a call returning    | (inlined: none needed)             | -                                    |
|              | (outs, the values the policy saves)    |                                    |                                      |
| remat_fwd    | (that call, made by the row above)     | -                                  | the body copied again from the saved |
|              |                                        |                                    | values and the inputs (recomputing   |
|              |                                        |                                    | the rest, behind an opt-barrier with |
|              |                                        |                                    | prevent_cse) and differentiated      |

Both drivers dispatch through their rule tables as for every opcode: `copy_forward` asks `forward_rule(inst)`
before inlining a call, and the `call` rows of `rules_control.JVP`/`VJP` call `rule.jvp` / `rule.vjp`. Every
computation a rule emits is copied in with copy_forward, so it can be differentiated again (grad of grad
differentiates the user's rule, as JAX does).
"""
from __future__ import annotations

import contextlib
import itertools
import re
import threading
from typing import Any, Callable, Sequence

from ...hlo import Computation, Instruction
from .rules_common import AutodiffError, Emitter, is_float

MARK = "xlapy_rule"
_MARK_RE = re.compile(r'xlapy_rule="([^"]+)"')
RULES: dict[str, "CallRule"] = {}
_COUNTER = itertools.count()
_LOCK = threading.Lock()


class _Scopes(threading.local):
    def __init__(self):
        self.stack: list[list[str]] = []


_SCOPES = _Scopes()


def register(rule: "CallRule") -> dict[str, Any]:
    """Register `rule`; returns the attributes that mark a call as using it."""
    with _LOCK:
        key = f"{rule.kind}{next(_COUNTER)}"
        RULES[key] = rule
    rule.key = key
    if _SCOPES.stack:
        _SCOPES.stack[-1].append(key)
    return {"frontend_attributes": f'{{{MARK}="{key}"}}'}


@contextlib.contextmanager
def transient_rules():
    """Rules this thread registers inside are dropped on exit: an eager grad/jvp/vmap (outside any trace) derives
    and runs its computation inside, and strips the marks (`strip_marks`) before running it, so nothing can
    refer to them afterwards. (Traces keep their rules: a jitted module, or vjp's returned function, may be
    differentiated later.)"""
    mine: list[str] = []
    _SCOPES.stack.append(mine)
    try:
        yield
    finally:
        _SCOPES.stack.pop()
        with _LOCK:
            for key in mine:
                RULES.pop(key, None)


def strip_marks(comp: Computation, seen: set[int] | None = None) -> None:
    """Remove the rule marks from comp and everything it calls, in place (a computation about to run eagerly:
    its text, the eager cache key, is then the same every time)."""
    seen = set() if seen is None else seen
    if id(comp) in seen:
        return
    seen.add(id(comp))
    for inst in comp.instructions:
        fa = inst.attrs.get("frontend_attributes")
        if fa is not None and MARK in str(fa):
            rest = _MARK_RE.sub("", str(fa)).strip("{}, ")
            if rest:
                inst.attrs["frontend_attributes"] = "{" + rest + "}"
            else:
                del inst.attrs["frontend_attributes"]
        for callee in inst.called_computations():
            strip_marks(callee, seen)


def rule_of(inst: Instruction) -> "CallRule | None":
    """The CallRule a `call` is marked with, or None."""
    if inst.opcode != "call":
        return None
    m = _MARK_RE.search(str(inst.attrs.get("frontend_attributes", "")))
    return None if m is None else RULES.get(m.group(1))


def forward_rule(inst: Instruction, reverse: bool) -> "CallRule | None":
    """The rule that copies this call into a derivative computation itself (None: inline it)."""
    rule = rule_of(inst)
    return rule if rule is not None and rule.keeps_call(reverse) else None


def _leaves(b: Emitter, value: Instruction) -> list[Instruction]:
    return [b.gte(value, i) for i in range(len(value.shape.tuple_shapes))]


class CallRule:
    kind = "rule"
    key = ""

    def keeps_call(self, reverse: bool) -> bool:
        return True

    def forward(self, b: Emitter, inst: Instruction, ops: list[Instruction], reverse: bool) -> Instruction:
        return b.add_instruction(inst.clone_with(ops))

    def jvp(self, b: Emitter, inst: Instruction, tangents: list) -> Any:
        raise AutodiffError(f"{self.kind}: no forward-mode rule (instruction {inst.name})")

    def vjp(self, b: Emitter, inst: Instruction, ct: Any) -> list:
        raise AutodiffError(f"{self.kind}: no reverse-mode rule (instruction {inst.name})")

    def batched(self, size: int, axis_name: Any) -> "CallRule | None":
        """This rule for the call batched by vmap (every operand and result batched at 0), or None: vmap
        inlines the call and the rule is lost (see batch_call)."""
        return None


def _batched_all(comp: Computation, size: int, axis_name: Any) -> Computation:
    """comp with every parameter and every result element batched at 0 (a detached computation)."""
    from ...hlo import Module
    from ..batching import batch_computation
    scratch = Module("custom_rule_batching")
    n_out = len(comp.root.shape.tuple_shapes)
    new, _ = batch_computation(scratch, comp, [0] * len(comp.parameters), size, force=(0,) * n_out,
                               axis_name=axis_name)
    return new


def batch_call(b, inst: Instruction, ops: list, dims: list) -> tuple | None:
    """vmap of a call marked with a rule that can be batched: (value, dims) of a new marked call whose callee and
    rule computations are batched with every operand at 0 (unbatched operands broadcast); None otherwise."""
    rule = rule_of(inst)
    if rule is None or not inst.shape.is_tuple:
        return None
    new_rule = rule.batched(b.size, b.axis_name)
    if new_rule is None:
        return None
    callee = inst.called_computations()[0]
    batched_ops = [b.at(o, d, 0) for o, d in zip(ops, dims)]
    body = _batched_all(callee, b.size, b.axis_name)
    out = b.emit("call", batched_ops, {"to_apply": body, **register(new_rule)})
    return out, (0,) * len(inst.shape.tuple_shapes)


class CustomJVP(CallRule):
    """custom_jvp: `jvp_comp` takes (operands..., one tangent per operand) and returns the tuple
    (outputs..., output tangents...)."""
    kind = "custom_jvp"

    def __init__(self, make_jvp: Callable[[], Computation], n_out: int):
        self._make, self._comp, self.n_out = make_jvp, None, n_out

    @property
    def jvp_comp(self) -> Computation:
        """Traced on first use when the rule calls the function itself (then it cannot be traced at the call)."""
        if self._comp is None:
            self._comp = self._make()
        return self._comp

    def _tangents(self, b: Emitter, ops: Sequence[Instruction], tangents: Sequence[Any]) -> list[Instruction]:
        return [t if t is not None else b.zeros(o.shape) for o, t in zip(ops, tangents)]

    def batched(self, size, axis_name):
        return CustomJVP(lambda: _batched_all(self.jvp_comp, size, axis_name), self.n_out)

    def jvp(self, b, inst, tangents):
        from .vjp import copy_forward
        ops = list(inst.operands)
        out = copy_forward(b, self.jvp_comp, ops + self._tangents(b, ops, tangents))
        return b.tuple(_leaves(b, out)[self.n_out:])

    def vjp(self, b, inst, ct):
        # the jvp rule is linear in its tangents: its VJP with respect to them (at zero tangents) is the transpose
        from .vjp import flatten, vjp_into
        ops = list(inst.operands)
        cts = flatten(b, ct, inst.shape)
        zeros = [b.zeros(o.shape) for o in ops]
        _, grads = vjp_into(b, self.jvp_comp, ops + zeros, [None] * self.n_out + cts,
                            only=range(len(ops), 2 * len(ops)))
        return grads[len(ops):]


class CustomVJP(CallRule):
    """custom_vjp: `fwd_comp` takes the operands and returns (outputs..., residuals...); `bwd_comp` takes
    (residuals..., output cotangents...) and returns one cotangent per differentiable operand (`wrt`)."""
    kind = "custom_vjp"

    def __init__(self, make: Callable[[], tuple[Computation, Computation]], n_out: int, wrt: Sequence[int]):
        self._make, self._comps, self.n_out, self.wrt = make, None, n_out, list(wrt)

    @property
    def fwd_comp(self) -> Computation:
        return self._traced()[0]

    @property
    def bwd_comp(self) -> Computation:
        return self._traced()[1]

    def _traced(self) -> tuple[Computation, Computation]:
        if self._comps is None:
            self._comps = self._make()
        return self._comps

    def batched(self, size, axis_name):
        return CustomVJP(lambda: (_batched_all(self.fwd_comp, size, axis_name),
                                  _batched_all(self.bwd_comp, size, axis_name)), self.n_out, self.wrt)

    def jvp(self, b, inst, tangents):
        raise AutodiffError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")

    def vjp(self, b, inst, ct):
        from .vjp import copy_forward, flatten
        ops = list(inst.operands)
        res = _leaves(b, copy_forward(b, self.fwd_comp, ops))[self.n_out:]
        cts = flatten(b, ct, inst.shape)
        grads = _leaves(b, copy_forward(b, self.bwd_comp, res + cts))
        out: list[Any] = [None] * len(ops)
        for i, g in zip(self.wrt, grads):
            out[i] = g
        return out


# -- checkpoint ---------------------------------------------------------------------------------------
class Checkpoint(CallRule):
    """checkpoint / remat: `policy(inst) -> bool` says which instructions of the (flattened) body are saved
    for the backward pass; the others are recomputed there."""
    kind = "checkpoint"

    def __init__(self, policy: Callable[[Instruction], bool] | None, prevent_cse: bool):
        self.policy, self.prevent_cse = policy, prevent_cse

    def keeps_call(self, reverse: bool) -> bool:
        return reverse and self.policy is not None

    def batched(self, size, axis_name):
        return self

    def forward(self, b, inst, ops, reverse):
        from .vjp import add_parameter, copy_forward, new_computation
        body = inst.called_computations()[0]
        flat, fb = new_computation(b.module, f"{body.name}.remat")
        params = [add_parameter(fb, p.shape, i, p.name) for i, p in enumerate(body.parameters)]
        root = copy_forward(fb, body, params)
        outs = _leaves(fb, root) if root.shape.is_tuple else [root]
        flat.root = fb.tuple(outs)
        flat.remove_dead()
        saved = [i for i in flat.instructions
                 if i.opcode != "parameter" and not i.shape.is_tuple and is_float(i.shape) and self.policy(i)
                 and i is not flat.root]
        fwd, wb = new_computation(b.module, f"{body.name}.remat_fwd")
        wparams = [add_parameter(wb, p.shape, i, p.name) for i, p in enumerate(flat.parameters)]
        mapping = {id(p): w for p, w in zip(flat.parameters, wparams)}
        for i in flat.post_order():
            if i.opcode != "parameter":
                mapping[id(i)] = wb.add_instruction(i.clone_with([mapping[id(o)] for o in i.operands]))
        n_out = len(outs)
        fwd.root = wb.tuple(_leaves(wb, mapping[id(flat.root)]) + [mapping[id(s)] for s in saved])
        rule = RematForward(flat, saved, n_out, self.prevent_cse)
        x = b.emit("call", ops, {"to_apply": fwd, **register(rule)})
        results = [b.gte(x, k) for k in range(n_out)]
        return b.tuple(results) if inst.shape.is_tuple else results[0]


class RematForward(CallRule):
    """The forward call a Checkpoint leaves in a VJP: returns (outputs..., saved values...)."""
    kind = "remat_fwd"

    def __init__(self, body: Computation, saved: list[Instruction], n_out: int, prevent_cse: bool):
        self.body, self.saved, self.n_out, self.prevent_cse = body, saved, n_out, prevent_cse

    def keeps_call(self, reverse: bool) -> bool:
        return False      # met again (an enclosing derivative): an ordinary call

    def vjp(self, b, inst, ct):
        from .vjp import vjp_into
        ops = list(inst.operands)
        kept = [b.gte(inst, self.n_out + j) for j in range(len(self.saved))]
        parts = ct if isinstance(ct, list) else [None if ct is None else b.gte(ct, k)
                                                 for k in range(len(inst.shape.tuple_shapes))]
        parts = list(parts[:self.n_out])
        if self.prevent_cse and (ops or kept):
            # the output cotangents pass through the barrier too: the recomputation then depends on them, so it
            # runs when the backward pass reaches this call, not early (which would keep its values alive)
            cts = [c for c in parts if c is not None and not isinstance(c, list)]
            barrier = b.emit("opt-barrier", [b.tuple(ops + kept + cts)])
            out = _leaves(b, barrier)
            ops, kept = out[:len(ops)], out[len(ops):len(ops) + len(kept)]
            it = iter(out[len(ops) + len(kept):])
            parts = [next(it) if c is not None and not isinstance(c, list) else c for c in parts]
        _, grads = vjp_into(b, self.body, ops, parts,
                            saved={id(s): v for s, v in zip(self.saved, kept)})
        return grads


__all__ = ["MARK", "RULES", "CallRule", "CustomJVP", "CustomVJP", "Checkpoint", "RematForward", "register",
           "rule_of", "forward_rule", "batch_call", "transient_rules", "strip_marks"]
