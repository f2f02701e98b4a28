"""Forward mode: one small driver over the JVP rule tables.

The forward computation is copied (calls inlined), then its instructions are walked in order: each one
with a nonzero tangent operand asks the rule of its opcode for its output tangent. A rule is
`rule(b, inst, tangents) -> tangent or None`, `tangents` holding one Instruction or None (zero) per
operand. Tangents of tuple-shaped values are HLO tuples.
"""
from __future__ import annotations

from typing import Any, Sequence

from ...hlo import Computation, Instruction, Module
from ...hlo.tables import merge_rule_tables, module_tables
from .rules_common import AutodiffError, Emitter, is_float
from .vjp import add_parameter, copy_forward, new_computation


def _rule_table() -> dict[str, Any]:
    from . import (rules_collective, rules_control, rules_elementwise, rules_linalg, rules_movement,
                   rules_reduction)
    return merge_rule_tables("JVP rules", *module_tables(
        "JVP", rules_elementwise, rules_movement, rules_reduction, rules_linalg, rules_control, rules_collective))


JVP_RULES: dict[str, Any] = {}


def jvp_rules() -> dict[str, Any]:
    if not JVP_RULES:
        JVP_RULES.update(_rule_table())
    return JVP_RULES


def jvp_into(b: Emitter, comp: Computation, primals: Sequence[Instruction],
             tangents: Sequence[Instruction | None]) -> tuple[Instruction, Instruction | None]:
    """Emit comp's forward pass on `primals` with tangents; returns (primal result, its tangent or None)."""
    start = len(b.comp.instructions)
    root = copy_forward(b, comp, primals)
    forward = b.comp.instructions[start:]
    rules = jvp_rules()
    tans: dict[int, Instruction] = {id(p): t for p, t in zip(primals, tangents)
                                    if t is not None and is_float(p.shape)}
    for inst in forward:
        ts = [tans.get(id(o)) for o in inst.operands]
        if all(t is None for t in ts) or not is_float(inst.shape):
            continue
        rule = rules.get(inst.opcode)
        if rule is None:
            raise AutodiffError(f"forward-mode differentiation rule missing for opcode '{inst.opcode}' "
                                f"(instruction {inst.name}: {inst.shape})")
        t = rule(b, inst, ts)
        if t is not None:
            tans[id(inst)] = t
    return root, tans.get(id(root))


def jvp_computation(module: Module, comp: Computation, name: str | None = None) -> Computation:
    """A new computation of `module`: (primals..., tangents...) -> tuple(primal result, result tangent).

    There is one tangent parameter per primal parameter, of the same shape; tangents of integer and
    bool parameters are ignored (JAX's float0). The result tangent of an integer result is zero."""
    new, b = new_computation(module, name or f"{comp.name}.jvp")
    params = comp.parameters
    primals = [add_parameter(b, p.shape, i, p.name) for i, p in enumerate(params)]
    tangents = [add_parameter(b, p.shape, len(params) + i, f"t_{p.name}") for i, p in enumerate(params)]
    root, t = jvp_into(b, comp, primals, tangents)
    new.root = b.tuple([root, t if t is not None else b.zeros(root.shape)])
    new.remove_dead()
    return new
