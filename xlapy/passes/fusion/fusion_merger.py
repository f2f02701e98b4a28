"""FusionMerger (XLA name `fusion_merger`): merge a loop fusion into every one of its users, all of them loop
fusions, so that its result is never written to memory. XLA:CPU's InstructionFusion never fuses a fusion;
this pass does, when it is a clear win. A merge is refused (first matching row) when:

    not a loop fusion                     kOutput/kInput/multi-output fusions keep their shape
    it is a scatter                       a scatter fusion (its updates fused) is not computed per element
    its result is needed anyway           it is the computation's root, or has no users
    a user is not a loop fusion           the value must be materialized for that user
    it would duplicate expensive work     several users, and an exp/divide/reduce... inside
    a user reuses its elements            exp inside, and the user broadcasts or gathers the result
    merging would read more than it saves several users re-reading big inputs for a small output
    a merged fusion would be too large    instruction, parameter or reduction caps of InstructionFusion
"""
from __future__ import annotations

from typing import Callable

from ...hlo import Instruction, Module
from ..pipeline import Pass
from . import fusible as F
from .fuse import fuse_into, fused_computation, fused_instructions, is_fusion
from .instruction_fusion import (MAX_FUSED_INSTRUCTIONS, MAX_FUSION_PARAMETERS, MAX_REDUCTIONS_IN_FUSION,
                                 fusible_computations)


def _loop_fusion(inst: Instruction) -> bool:
    return is_fusion(inst) and inst.attrs.get("kind") == "kLoop" and not inst.shape.is_tuple


def _more_traffic(f: Instruction) -> bool:
    """Before: read inputs once, write the result, each of n users reads it. After: each user reads inputs."""
    n = len(f.users)
    inputs = sum(F.byte_size(o) for o in set(f.operands))
    return n > 1 and n * inputs > inputs + (n + 1) * F.byte_size(f)


def _too_large(f: Instruction) -> bool:
    inside = fused_instructions(f)
    reductions = sum(i.opcode == "reduce" for i in inside)
    for user in f.users:
        theirs = fused_instructions(user)
        params = (set(map(id, user.operands)) - {id(f)}) | set(map(id, f.operands))
        if (len(theirs) + len(inside) > MAX_FUSED_INSTRUCTIONS or len(params) > MAX_FUSION_PARAMETERS
                or reductions + sum(i.opcode == "reduce" for i in theirs) > MAX_REDUCTIONS_IN_FUSION + 1):
            return True
    return False


REFUSALS: list[tuple[str, Callable[[Instruction], bool]]] = [
    ("not a loop fusion", lambda f: not _loop_fusion(f)),
    ("it is a scatter", lambda f: fused_computation(f).root.opcode == "scatter"),
    ("its result is needed anyway", lambda f: f.is_root or not f.users),
    ("a user is not a loop fusion", lambda f: not all(_loop_fusion(u) for u in f.users)),
    ("it would duplicate expensive work",
     lambda f: len(f.users) > 1 and F.contains_expensive(fused_computation(f))),
    ("a user reuses its elements",
     lambda f: F.contains_expensive(fused_computation(f))
     and any(F.reuses_operand_elements(u, u.operands.index(f)) for u in f.users)),
    ("merging would read more than it saves", _more_traffic),
    ("a merged fusion would be too large", _too_large),
]


def merge_refusal(f: Instruction) -> str | None:
    for reason, refuses in REFUSALS:
        if refuses(f):
            return reason
    return None


class FusionMerger(Pass):
    name = "fusion_merger"

    def __init__(self):
        self.decisions: list[tuple[str, str]] = []   # (fusion, "merged" or the refusal)

    def run(self, module: Module) -> bool:
        self.decisions = []
        changed = False
        for comp in fusible_computations(module):
            for f in comp.post_order():
                if f.parent is not comp or not is_fusion(f):
                    continue
                reason = merge_refusal(f)
                self.decisions.append((f.name, reason or "merged"))
                if reason is not None:
                    continue
                for user in list(f.users):
                    fuse_into(user, f)
                changed = True
        return changed
