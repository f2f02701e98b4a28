"""Derivative rules of control flow: conditional, while, and the pass-through opt-barrier.

    call         both drivers inline calls while copying the forward program, except a call marked with a
                 custom rule (custom_jvp, custom_vjp, checkpoint: custom_rules.py), which these rows hand to it

    conditional  each branch is differentiated into a new branch computation (forward + backward for
                 VJP, primal + tangent for JVP) and one new conditional selects among them
    while        JVP: the carry becomes (carry, tangent carry) and the body its JVP.
                 VJP: loops with a static trip count <= vjp.MAX_UNROLL are unrolled by the driver before
                 differentiation; longer static loops are copied as a taped loop (loops.py) whose rule
                 emits the reverse loop; any other loop raises (as JAX does for while_loop)
"""
from __future__ import annotations

from ...hlo import Computation, Instruction, Shape
from .rules_common import AutodiffError, Emitter


def _branches(inst: Instruction) -> list[Computation]:
    if "branch_computations" in inst.attrs:
        return list(inst.attrs["branch_computations"])
    return [inst.attrs["true_computation"], inst.attrs["false_computation"]]


def _new_conditional(b: Emitter, inst: Instruction, branches: list[Computation], operands: list[Instruction],
                     shape: Shape) -> Instruction:
    attrs = {k: v for k, v in inst.attrs.items()
             if k not in ("branch_computations", "true_computation", "false_computation")}
    if "branch_computations" in inst.attrs:
        attrs["branch_computations"] = branches
    else:
        attrs["true_computation"], attrs["false_computation"] = branches
    return b.emit("conditional", [inst.operands[0], *operands], attrs, shape=shape)


def _conditional_vjp(b, inst, ct):
    from .vjp import add_parameter, flatten, materialize, new_computation, structure, vjp_into
    out_shape = inst.shape
    leaves = out_shape.leaves()
    ct_leaves = flatten(b, ct, out_shape)
    ops = inst.operands[1:]
    grads_shape = Shape.tuple_of([o.shape.without_layout() for o in ops])
    new_branches, new_ops = [], []
    for j, (branch, op) in enumerate(zip(_branches(inst), ops)):
        comp, bb = new_computation(b.module, f"{branch.name}.vjp")
        p = add_parameter(bb, Shape.tuple_of([op.shape] + leaves), 0, "x_and_ct")
        x = bb.gte(p, 0)
        cts = [bb.gte(p, 1 + k) for k in range(len(leaves))]
        _, grads = vjp_into(bb, branch, [x], structure(out_shape, cts))
        outs = [materialize(bb, grads[0], o.shape) if k == j else bb.zeros(o.shape) for k, o in enumerate(ops)]
        comp.root = bb.tuple(outs)
        comp.remove_dead()
        new_branches.append(comp)
        new_ops.append(b.tuple([op] + ct_leaves))
    result = _new_conditional(b, inst, new_branches, new_ops, grads_shape)
    return [None] + [b.gte(result, k) for k in range(len(ops))]


def _conditional_jvp(b, inst, ts):
    from .jvp import jvp_into
    from .vjp import add_parameter, new_computation
    ops = inst.operands[1:]
    new_branches, new_ops = [], []
    for branch, op, t in zip(_branches(inst), ops, ts[1:]):
        comp, bb = new_computation(b.module, f"{branch.name}.jvp")
        p = add_parameter(bb, Shape.tuple_of([op.shape, op.shape]), 0, "x_and_t")
        out, tout = jvp_into(bb, branch, [bb.gte(p, 0)], [bb.gte(p, 1)])
        comp.root = bb.tuple([out, tout if tout is not None else bb.zeros(out.shape)])
        comp.remove_dead()
        new_branches.append(comp)
        new_ops.append(b.tuple([op, t if t is not None else b.zeros(op.shape)]))
    pair = _new_conditional(b, inst, new_branches, new_ops, Shape.tuple_of([inst.shape, inst.shape]))
    return b.gte(pair, 1)


def _while_jvp(b, inst, ts):
    init = inst.operands[0]
    carry = init.shape
    if carry.is_tuple and not any(s.is_tuple for s in carry.tuple_shapes):
        return _while_jvp_flat(b, inst, ts)
    from .jvp import jvp_into
    from .vjp import add_parameter, copy_forward, new_computation
    pair = Shape.tuple_of([carry, carry])
    body, bb = new_computation(b.module, f"{inst.attrs['body'].name}.jvp")
    p = add_parameter(bb, pair, 0, "carry_and_tangent")
    out, tout = jvp_into(bb, inst.attrs["body"], [bb.gte(p, 0)], [bb.gte(p, 1)])
    body.root = bb.tuple([out, tout if tout is not None else bb.zeros(carry)])
    body.remove_dead()
    cond, cb = new_computation(b.module, f"{inst.attrs['condition'].name}.jvp")
    q = add_parameter(cb, pair, 0, "carry_and_tangent")
    cond.root = copy_forward(cb, inst.attrs["condition"], [cb.gte(q, 0)])
    cond.remove_dead()
    attrs = dict(inst.attrs)
    attrs["body"], attrs["condition"] = body, cond
    t0 = ts[0] if ts[0] is not None else b.zeros(carry)
    loop = b.emit("while", [b.tuple([init, t0])], attrs, shape=pair)
    return b.gte(loop, 1)


def _while_jvp_flat(b, inst, ts):
    """The JVP of a loop whose carry is a flat tuple of n arrays: a loop over the flat tuple (carry..., tangent...)
    of 2n arrays (flat, so vmap can batch it: jacfwd of a loop)."""
    from .jvp import jvp_into
    from .vjp import add_parameter, copy_forward, new_computation
    init = inst.operands[0]
    shapes = list(init.shape.tuple_shapes)
    n = len(shapes)
    flat = Shape.tuple_of(shapes + shapes)

    def halves(bb, p):
        parts = [bb.gte(p, k) for k in range(2 * n)]
        return bb.tuple(parts[:n]), bb.tuple(parts[n:])
    body, bb = new_computation(b.module, f"{inst.attrs['body'].name}.jvp")
    p = add_parameter(bb, flat, 0, "carry_and_tangent")
    primal, tangent = halves(bb, p)
    out, tout = jvp_into(bb, inst.attrs["body"], [primal], [tangent])
    touts = [bb.gte(tout, k) for k in range(n)] if tout is not None else [bb.zeros(s) for s in shapes]
    body.root = bb.tuple([bb.gte(out, k) for k in range(n)] + touts)
    body.remove_dead()
    cond, cb = new_computation(b.module, f"{inst.attrs['condition'].name}.jvp")
    q = add_parameter(cb, flat, 0, "carry_and_tangent")
    cond.root = copy_forward(cb, inst.attrs["condition"], [halves(cb, q)[0]])
    cond.remove_dead()
    attrs = dict(inst.attrs)
    attrs["body"], attrs["condition"] = body, cond
    t0 = ts[0]
    t_parts = [b.gte(t0, k) for k in range(n)] if t0 is not None else [b.zeros(s) for s in shapes]
    loop = b.emit("while", [b.tuple([b.gte(init, k) for k in range(n)] + t_parts)], attrs, shape=flat)
    return b.tuple([b.gte(loop, n + k) for k in range(n)])


def _while_vjp(b, inst, ct):
    from .loops import taped_loop_vjp
    from .vjp import WHILE_MESSAGE
    tape = b.tapes.get(id(inst))
    if tape is None:
        raise AutodiffError(f"{WHILE_MESSAGE} (instruction {inst.name})")
    return taped_loop_vjp(b, inst, tape, ct)


def _call_rule(inst: Instruction):
    from .custom_rules import rule_of
    rule = rule_of(inst)
    if rule is None:
        raise AutodiffError(f"call {inst.name} was not inlined: only calls marked with a custom rule reach the "
                            f"autodiff rules")
    return rule


def _call_vjp(b, inst, ct):
    return _call_rule(inst).vjp(b, inst, ct)


def _call_jvp(b, inst, ts):
    return _call_rule(inst).jvp(b, inst, ts)


VJP = {
    "call": _call_vjp,
    "conditional": _conditional_vjp,
    "while": _while_vjp,
    "opt-barrier": lambda b, inst, ct: [ct],
}

JVP = {
    "call": _call_jvp,
    "conditional": _conditional_jvp,
    "while": _while_jvp,
    "opt-barrier": lambda b, inst, ts: ts[0],
}
