"""Dot algebra."""
from __future__ import annotations

from ..build import make
from ..pattern import Op
from ..rewrite import RuleSet, rule

_SWAPPED = {"lhs_contracting_dims": "rhs_contracting_dims", "rhs_contracting_dims": "lhs_contracting_dims"}


@rule(Op("transpose", Op("dot", name="dot")))
def transpose_of_dot(inst, dot):
    # transpose(dot(A, B), {1,0}) => dot(B, A)   (a 2-D dot without batch dims, used only here)
    # The transposed product is the product of the operands swapped: BLAS reads either operand transposed for
    # free, while a transpose of the result is a pass over memory with a whole row of stride per element.
    if (tuple(inst.attrs["dimensions"]) != (1, 0) or dot.shape.rank != 2 or dot.users != [inst]
            or dot.attrs.get("lhs_batch_dims") or dot.attrs.get("rhs_batch_dims")):
        return None
    attrs = {_SWAPPED.get(k, k): v for k, v in dot.attrs.items()}
    if "operand_precision" in attrs:
        attrs["operand_precision"] = tuple(reversed(attrs["operand_precision"]))
    return make("dot", [dot.operands[1], dot.operands[0]], attrs, shape=inst.shape.without_layout())


RULES = RuleSet([transpose_of_dot])
