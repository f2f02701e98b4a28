"""LogisticExpander: logistic(x) => 1 / (1 + exp(-x)), for backends without a logistic kernel.

XLA's expansion, operand order included: divide(one, add(one, exponential(negate(x)))), where `one` is a
scalar 1 of x's element type broadcast to x's shape.
"""
from __future__ import annotations

from ..hlo import Instruction
from .build import emit, make, scalar_like
from .op_expander import OpExpanderPass


def expand_logistic(inst: Instruction) -> Instruction:
    # logistic(X) => 1 / (1 + exp(-X))
    comp, x = inst.parent, inst.operands[0]
    one = scalar_like(comp, 1, x)
    denominator = emit(comp, "add", [one, emit(comp, "exponential", [emit(comp, "negate", [x])])])
    return make("divide", [one, denominator])


class LogisticExpander(OpExpanderPass):
    name = "logistic-expander"

    def matches(self, inst: Instruction) -> bool:
        return inst.opcode == "logistic"

    def expand(self, inst: Instruction) -> Instruction:
        return expand_logistic(inst)
