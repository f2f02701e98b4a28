"""AlgebraicSimplifier: rule sets grouped by op family, run by rewrite.apply_rules.

Rule files: logic.py (canonicalization, select, compare, convert), arith.py (identities and annihilators,
IEEE-exact; fast-math rules apart), movement.py (reshape/broadcast/transpose/slice/pad/concat/reverse),
reduce.py (reduce of unit dims and of broadcasts), dot.py (transpose of a dot). Each rule is one rewrite:
`@rule(pattern)` on its function, which carries its `# A + 0 => A` comment.
"""
from __future__ import annotations

from ...hlo import Module
from ..pipeline import Pass
from ..rewrite import apply_rules
from . import arith, dot, dot_gather, logic, movement, reduce

RULES = logic.RULES + arith.RULES + movement.RULES + reduce.RULES + dot.RULES + dot_gather.RULES
FAST_MATH_RULES = RULES + arith.FAST_MATH_RULES


class AlgebraicSimplifier(Pass):
    name = "algsimp"

    def __init__(self, fast_math: bool = False):
        self.rules = FAST_MATH_RULES if fast_math else RULES
        self.trace: list = []       # (rule name, replaced instruction, replacement) per rewrite

    def run(self, module: Module) -> bool:
        return apply_rules(module, self.rules, self.trace)


__all__ = ["AlgebraicSimplifier", "FAST_MATH_RULES", "RULES"]
