"""WhileLoopConstantSinking (XLA's `while-loop-constant-sinking`): a loop-state element that starts as a
constant and that the body passes through unchanged is that constant on every iteration; the body and the
condition read a copy of the constant instead of the state, which frees the element for
WhileLoopSimplifier's dead-element removal and lets constant folding and algsimp see the value.

| rewrite                                                                    | when                          |
|----------------------------------------------------------------------------|-------------------------------|
| gte(param, i) in body/condition => constant c                              | init element i is constant c and body root element i is gte(param, i) |

Only computations called by this one while are edited (a shared body may see other inits). The element
itself stays in the state: removing it is the simplifier's job.
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module
from .control_util import call_counts
from .pipeline import Pass
from .while_loop_analysis import known_value


def _invariant_constants(inst: Instruction) -> dict[int, Instruction]:
    """Loop-state index -> the constant instruction it always holds."""
    init, body = inst.operands[0], inst.attrs["body"]
    root, param = body.root, body.parameter(0)
    if init.opcode != "tuple" or root.opcode != "tuple":
        return {}
    out = {}
    for i, op in enumerate(init.operands):
        passed = root.operands[i]
        if (op.opcode == "constant" and not op.shape.is_tuple and known_value(op) is not None
                and passed.opcode == "get-tuple-element" and passed.operands[0] is param
                and passed.attrs["index"] == i):
            out[i] = op
    return out


def _sink(comp: Computation, constants: dict[int, Instruction], keep_root_reads: bool) -> bool:
    changed = False
    param = comp.parameter(0)
    for gte in list(param.users):
        if gte.opcode != "get-tuple-element" or gte.attrs["index"] not in constants:
            continue
        users = [u for u in gte.users if not (keep_root_reads and u is comp.root)]
        if not users and not (gte.is_root and not keep_root_reads):
            continue
        copy = comp.add_instruction(constants[gte.attrs["index"]].clone_with([]))
        for user in users:
            # gte(param, i) => c, where element i is always c
            user.replace_uses_of(gte, copy)
        if gte.is_root and not keep_root_reads:
            comp.root = copy
        changed = True
    return changed


class WhileLoopConstantSinking(Pass):
    name = "while-loop-constant-sinking"

    def run(self, module: Module) -> bool:
        changed = False
        calls = None        # counted once, when the module has a loop: sinking a constant adds no calls
        for comp in list(module.computations):
            for inst in comp.post_order_of("while"):
                body, cond = inst.attrs["body"], inst.attrs["condition"]
                if calls is None:
                    calls = call_counts(module)
                if not inst.shape.is_tuple or calls[id(body)] != 1 or calls[id(cond)] != 1:
                    continue
                constants = _invariant_constants(inst)
                if constants:
                    # the body's root keeps passing element i through; every other read becomes the constant
                    changed |= _sink(body, constants, keep_root_reads=True)
                    changed |= _sink(cond, constants, keep_root_reads=False)
        return changed
