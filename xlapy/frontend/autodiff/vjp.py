"""Reverse mode: one small driver over the VJP rule tables.

The forward computation is first copied into the new computation (calls inlined, `while` loops with a
static trip count <= MAX_UNROLL unrolled, longer static loops replaced by a loop that also saves its
state for the backward pass: loops.py), then the copied instructions are walked in reverse order:
each one that received a cotangent asks the rule of its opcode for its operands' cotangents, which are
summed per operand. A rule is `rule(b, inst, ct) -> [ct or None per operand]`, where `b` is the
Emitter of the computation being built, `inst` a forward instruction of that same computation, and
None means "zero". Cotangents of tuple-shaped values are Python lists (one entry per element, None for
zero), so a get-tuple-element never materialises zeros for the other elements.
"""
from __future__ import annotations

from typing import Any, Sequence

from ...hlo import Computation, Instruction, Module, Shape
from ...hlo.tables import merge_rule_tables, module_tables
from ...passes import build
from .custom_rules import forward_rule
from .loops import emit_taped_loop
from .rules_common import AutodiffError, Emitter, is_float, is_real_float

MAX_UNROLL = 64
WHILE_MESSAGE = ("reverse-mode differentiation of while_loop is not supported; use fori_loop with static "
                 "bounds or scan")


def _rule_table() -> dict[str, Any]:
    from . import (rules_collective, rules_control, rules_elementwise, rules_linalg, rules_movement,
                   rules_reduction)
    return merge_rule_tables("VJP rules", *module_tables(
        "VJP", rules_elementwise, rules_movement, rules_reduction, rules_linalg, rules_control, rules_collective))


VJP_RULES: dict[str, Any] = {}


def vjp_rules() -> dict[str, Any]:
    if not VJP_RULES:
        VJP_RULES.update(_rule_table())
    return VJP_RULES


# -- copying the forward program ---------------------------------------------------------------------
def static_loop(w: Instruction, init: Instruction) -> tuple[int, int, int] | None:
    """(k, start, trip count) of a fori_loop-shaped `while` (carry[k] starts at the constant `start`,
    `carry[k] < limit` with a constant limit, `carry[k] + 1` each iteration), else None. `init` is the
    loop's initial tuple as copied."""
    cond, body = w.attrs["condition"], w.attrs["body"]
    root = cond.root
    if root.opcode != "compare" or root.attrs.get("direction") != "LT":
        return None
    iv, limit = root.operands
    if (iv.opcode != "get-tuple-element" or iv.operands[0].opcode != "parameter" or limit.opcode != "constant"
            or init.opcode != "tuple"):
        return None
    k = iv.attrs["index"]
    start = init.operands[k]
    if start.opcode != "constant" or body.root.opcode != "tuple":
        return None
    step = body.root.operands[k]
    if step.opcode != "add":
        return None
    a, c = step.operands
    if a.opcode == "constant":
        a, c = c, a
    if not (a.opcode == "get-tuple-element" and a.attrs["index"] == k and a.operands[0].opcode == "parameter"
            and c.opcode == "constant" and int(c.literal) == 1):
        return None
    return k, int(start.literal), max(0, int(limit.literal) - int(start.literal))


def static_trip_count(w: Instruction, init: Instruction) -> int | None:
    """The trip count of a fori_loop-shaped `while` (see static_loop), else None."""
    found = static_loop(w, init)
    return None if found is None else found[2]


def copy_forward(b: Emitter, comp: Computation, args: Sequence[Instruction], unroll: bool = False,
                 saved: dict[int, Instruction] | None = None) -> Instruction:
    """Copy `comp` into b's computation reading `args`; returns the copy of its root. `unroll` is set for
    reverse mode (static loops unrolled or taped). A call marked with a custom rule (custom_rules.py) is copied
    by that rule; other calls are inlined. `saved` (rematerialization) maps instructions of `comp` to values
    computed earlier: their users read those, and the copy made for the rule (its "shadow") is aliased to the
    value in `b.aliases`, so the reverse walk passes the value's cotangent through the instruction's rule."""
    mapping: dict[int, Instruction] = {}
    for inst in comp.post_order():
        if inst.opcode == "parameter":
            mapping[id(inst)] = args[inst.parameter_number]
            continue
        ops = [mapping[id(o)] for o in inst.operands]
        if saved is not None and id(inst) in saved:
            shadow = b.add_instruction(inst.clone_with(ops))
            b.aliases[id(shadow)] = saved[id(inst)]
            mapping[id(inst)] = saved[id(inst)]
            continue
        callees = inst.called_computations()
        if inst.opcode == "call" and len(callees) == 1 and not inst.attrs.get("is_composite"):
            rule = forward_rule(inst, unroll)
            if rule is not None:
                mapping[id(inst)] = rule.forward(b, inst, ops, unroll)
            else:
                mapping[id(inst)] = copy_forward(b, callees[0], ops, unroll)
            continue
        if unroll and inst.opcode == "while":
            found = static_loop(inst, ops[0])
            if found is not None and found[2] <= MAX_UNROLL:
                carry = ops[0]
                for _ in range(found[2]):
                    carry = copy_forward(b, inst.attrs["body"], [carry], unroll)
                mapping[id(inst)] = carry
                continue
            if found is not None:
                k, start, n = found
                mapping[id(inst)] = emit_taped_loop(b, inst, ops[0], n, k, start, b.tapes)
                continue
        mapping[id(inst)] = b.add_instruction(inst.clone_with(ops))
    return mapping[id(comp.root)]


# -- cotangent values ----------------------------------------------------------------------------------
def accumulate(b: Emitter, a: Any, c: Any) -> Any:
    if a is None:
        return c
    if c is None:
        return a
    if isinstance(a, list) or isinstance(c, list):
        a = a if isinstance(a, list) else split(b, a)
        c = c if isinstance(c, list) else split(b, c)
        return [accumulate(b, x, y) for x, y in zip(a, c)]
    return b.add(a, c)


def split(b: Emitter, t: Instruction) -> list:
    """A tuple-shaped HLO value as a list of its elements."""
    return [b.gte(t, i) for i in range(len(t.shape.tuple_shapes))]


def materialize(b: Emitter, ct: Any, shape: Shape) -> Instruction:
    """A cotangent as an HLO value of `shape` (zeros for None)."""
    if ct is None:
        return b.zeros(shape)
    if isinstance(ct, list):
        return b.tuple([materialize(b, c, s) for c, s in zip(ct, shape.tuple_shapes)])
    return ct


def structure(shape: Shape, leaves: list) -> Any:
    """Cotangent list structure of `shape` built from its leaves (consumed from the front of `leaves`)."""
    if shape.is_tuple:
        return [structure(s, leaves) for s in shape.tuple_shapes]
    return leaves.pop(0)


def flatten(b: Emitter, ct: Any, shape: Shape) -> list[Instruction]:
    """The leaves of a cotangent, zeros where absent (the inverse of `structure`)."""
    if shape.is_tuple:
        parts = ct if isinstance(ct, list) else ([None] * len(shape.tuple_shapes) if ct is None else split(b, ct))
        return [leaf for c, s in zip(parts, shape.tuple_shapes) for leaf in flatten(b, c, s)]
    return [b.zeros(shape) if ct is None else ct]


# -- the driver -----------------------------------------------------------------------------------------
def vjp_into(b: Emitter, comp: Computation, primals: Sequence[Instruction], ct_out: Any,
             unroll: bool = True, saved: dict[int, Instruction] | None = None,
             only: Sequence[int] | None = None) -> tuple[Instruction, list[Any]]:
    """Emit comp's forward pass on `primals` and its backward pass for the output cotangent `ct_out`.
    `saved`: instructions of comp whose values were computed before (rematerialization; see copy_forward).
    `only`: differentiate with respect to these primals alone: values that do not depend on them get no
    cotangent (a transpose of a function linear in them never differentiates the rest: custom_jvp's rule).

    Returns (the primal result, one cotangent per parameter: an Instruction, a list for tuples, or None)."""
    start = len(b.comp.instructions)
    root = copy_forward(b, comp, primals, unroll, saved)
    forward = b.comp.instructions[start:]
    rules = vjp_rules()
    active: set[int] | None = None
    if only is not None:
        active = {id(primals[i]) for i in only}
        for inst in forward:
            if any(id(o) in active for o in inst.operands):
                active.add(id(inst))
    cts: dict[int, Any] = {id(root): ct_out}
    for inst in reversed(forward):
        ct = cts.pop(id(inst), None)
        alias = b.aliases.get(id(inst))
        if alias is not None:
            ct = accumulate(b, ct, cts.pop(id(alias), None))
        if ct is None or not is_float(inst.shape) or not any(is_float(o.shape) for o in inst.operands):
            continue
        rule = rules.get(inst.opcode)
        if rule is None:
            raise AutodiffError(f"reverse-mode differentiation rule missing for opcode '{inst.opcode}' "
                                f"(instruction {inst.name}: {inst.shape})")
        for operand, c in zip(inst.operands, rule(b, inst, ct)):
            if c is not None and is_float(operand.shape) and (active is None or id(operand) in active):
                cts[id(operand)] = accumulate(b, cts.get(id(operand)), c)
    return root, [cts.get(id(p)) for p in primals]


def check_wrt(comp: Computation, wrt: Sequence[int]) -> None:
    params = comp.parameters
    for i in wrt:
        if not 0 <= i < len(params):
            raise AutodiffError(f"cannot differentiate {comp.name} with respect to parameter {i}: it has "
                                f"{len(params)} parameters")
        if not is_real_float(params[i].shape):
            raise AutodiffError(
                f"cannot differentiate {comp.name} with respect to parameter {i} of type {params[i].shape}: "
                f"gradients are defined only for floating-point inputs (JAX would give a float0 zero)")


def new_computation(module: Module, name: str) -> tuple[Computation, Emitter]:
    comp = build.new_computation(module, name)
    return comp, Emitter(comp)


def add_parameter(b: Emitter, shape: Shape, number: int, name: str) -> Instruction:
    return b.parameter(number, shape, name)


def vjp_computation(module: Module, comp: Computation, wrt: Sequence[int], name: str | None = None) -> Computation:
    """A new computation of `module`: (primal params..., one cotangent param per leaf of comp's result)
    -> tuple(primal result, gradient for each parameter in `wrt`, in wrt order)."""
    check_wrt(comp, wrt)
    new, b = new_computation(module, name or f"{comp.name}.vjp")
    primals = [add_parameter(b, p.shape, i, p.name) for i, p in enumerate(comp.parameters)]
    leaves = comp.root.shape.leaves()
    ct_params = [add_parameter(b, s, len(primals) + k, f"ct{k}") for k, s in enumerate(leaves)]
    root, grads = vjp_into(b, comp, primals, structure(comp.root.shape, list(ct_params)))
    new.root = b.tuple([root] + [materialize(b, grads[i], primals[i].shape) for i in wrt])
    new.remove_dead()
    return new
