"""LogisticExpander: logistic(x) => 1 / (1 + exp(-x)), for backends without a logistic kernel.

XLA's expansion, operand order included: divide(one, add(one, exponential(negate(x)))), where `one` is a
scalar 1 of x's element type broadcast to x's shape.
"""
from __future__ import annotations

from ..hlo import Instruction
from .build import make
from .builder import Builder
from .op_expander import OpExpanderPass


def expand_logistic(inst: Instruction) -> Instruction:
    # logistic(X) => 1 / (1 + exp(-X))
    b, x = Builder(inst.parent), inst.operands[0]
    one = b.full_like(x, 1)
    denominator = b.add(one, b.emit("exponential", [b.neg(x)]))
    return make("divide", [one, denominator])


class LogisticExpander(OpExpanderPass):
    name = "logistic-expander"
    opcodes = frozenset({"logistic"})

    def matches(self, inst: Instruction) -> bool:
        return inst.opcode == "logistic"

    def expand(self, inst: Instruction) -> Instruction:
        return expand_logistic(inst)
