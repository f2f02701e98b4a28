"""Dot algebra."""
from __future__ import annotations

from ...hlo import Instruction
from ...hlo.cost import dot_multiply_adds
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


def _free_dims(dot: Instruction, side: int) -> list[int]:
    """The dims of operand `side` (0: lhs, 1: rhs) that are neither contracted nor batch dims, in order."""
    prefix = ("lhs", "rhs")[side]
    taken = set(dot.attrs.get(f"{prefix}_contracting_dims", ())) | set(dot.attrs.get(f"{prefix}_batch_dims", ()))
    return [d for d in range(dot.operands[side].shape.rank) if d not in taken]


MIN_PIECE_MNK = 1 << 20   # each piece's product stays a GEMM of a million multiply-adds or more (a few hundred us):
# an LSTM's four gate weights, concatenated to [128, 512] and multiplied by a [16, 128] state every time step, are
# one GEMM of 16x128x512; as four of 16x128x128 the calls cost more than the concatenate saved (lstm/fwd 1.09x).


@rule(Op("dot"))
def dot_of_free_concat(inst):
    # dot(concatenate(A, B) along a free dim, W) => concatenate(dot(A, W), dot(B, W))   (when the concatenate is
    # bigger than the product and only dots read it)
    # A weight gradient x^T . dy of a concatenated input x [edges, 2F] (a graph network's edge MLP) contracts the
    # long dim: each piece's product is small, the concatenated input is not. Every output element is the same sum
    # over the same products; the concatenate of the small outputs replaces the big one's pass over memory.
    for side in (0, 1):
        cat = inst.operands[side]
        if (cat.opcode != "concatenate" or inst.operands[1 - side] is cat
                or cat.shape.array_bytes <= inst.shape.array_bytes or any(u.opcode != "dot" for u in cat.users)):
            continue
        (dim,) = cat.attrs["dimensions"]
        free = _free_dims(inst, side)
        smallest = min(p.shape.dims[dim] for p in cat.operands)
        if dim not in free or dot_multiply_adds(inst) // cat.shape.dims[dim] * smallest < MIN_PIECE_MNK:
            continue
        nb = len(inst.attrs.get("lhs_batch_dims", ()))
        out_dim = nb + (free.index(dim) if side == 0 else len(_free_dims(inst, 0)) + free.index(dim))
        parts = []
        for piece in cat.operands:
            operands = [piece, inst.operands[1]] if side == 0 else [inst.operands[0], piece]
            dims = list(inst.shape.dims)
            dims[out_dim] = piece.shape.dims[dim]
            parts.append(make("dot", operands, dict(inst.attrs), shape=inst.shape.without_layout().with_dims(dims)))
        return make("concatenate", parts, {"dimensions": (out_dim,)}, shape=inst.shape.without_layout())
    return None


RULES = RuleSet([transpose_of_dot, dot_of_free_concat])
