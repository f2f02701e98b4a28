"""DotDecomposer: every dot into the canonical form backends implement as a (batched) matrix multiply.

Canonical (XLA's IsCanonical, per operand): batch dims are the leading dims 0..nb-1 in order, exactly one
contracting dim, and at most one non-contracting dim. So lhs [B.., M, K] · rhs [B.., K, N]; XLA also calls
[B.., K, M] and [B.., N, K] canonical (the position of the contracting dim is free); `strict=True` asks for
the exact [B.., M, K] · [B.., K, N] positions. A non-canonical dot becomes

    dot(A, B) => reshape(dot(reshape(transpose(A)), reshape(transpose(B))))

where the transpose puts A's dims in order batch, non-contracting, contracting (B's: batch, contracting,
non-contracting) and the reshape merges the non-contracting dims into one (M or N, omitted when 1) and the
contracting dims into one (K). Identity transposes and no-op reshapes are not emitted (XLA emits them and
lets the simplifier remove them).
"""
from __future__ import annotations

from typing import Sequence

from ..hlo import Instruction, Shape
from .build import emit, make
from .op_expander import OpExpanderPass

DIM_ATTRS = ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims")


def dot_dims(dot: Instruction) -> tuple[tuple[int, ...], ...]:
    """(lhs_batch, lhs_contracting, rhs_batch, rhs_contracting)."""
    return tuple(tuple(dot.attrs.get(k, ())) for k in DIM_ATTRS)


def operand_is_canonical(rank: int, batch: Sequence[int], contracting: Sequence[int],
                         contracting_last: bool | None = None) -> bool:
    """contracting_last: True/False demands the contracting dim be last/right after the batch dims."""
    if len(contracting) != 1 or len(batch) + 2 < rank:
        return False
    if tuple(batch) != tuple(range(len(batch))):
        return False
    if contracting_last is None or rank == len(batch) + 1:
        return True
    return contracting[0] == (rank - 1 if contracting_last else len(batch))


def is_canonical(dot: Instruction, strict: bool = False) -> bool:
    lb, lc, rb, rc = dot_dims(dot)
    lhs, rhs = dot.operands
    return (operand_is_canonical(lhs.shape.rank, lb, lc, True if strict else None)
            and operand_is_canonical(rhs.shape.rank, rb, rc, False if strict else None))


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _permutation(rank: int, batch: Sequence[int], contracting: Sequence[int], contracting_last: bool) -> tuple:
    free = [d for d in range(rank) if d not in batch and d not in contracting]
    groups = [list(free), list(contracting)] if contracting_last else [list(contracting), list(free)]
    return tuple(batch) + tuple(groups[0]) + tuple(groups[1])


def in_place_orientation(rank: int, batch: Sequence[int], contracting: Sequence[int], preferred: bool) -> bool:
    """contracting_last for an operand: `preferred` ([M, K] for the lhs, [K, N] for the rhs), unless only the
    other orientation reads the operand without a transpose. A weight gradient x^T dy contracts x's leading
    dims: [b, t, d] -> [b*t, d] read as K x M is a reshape, where M x K would copy x transposed; the backend's
    GEMM takes either orientation through its transpose flags."""
    identity = tuple(range(rank))
    if (_permutation(rank, batch, contracting, preferred) != identity
            and _permutation(rank, batch, contracting, not preferred) == identity):
        return not preferred
    return preferred


def canonical_operand(x: Instruction, batch: Sequence[int], contracting: Sequence[int],
                      contracting_last: bool) -> Instruction:
    """x transposed to (batch, free, contracting) or (batch, contracting, free), the free and contracting
    groups each merged into one dim (the free one dropped when its size is 1)."""
    dims = x.shape.dims
    free = [d for d in range(len(dims)) if d not in batch and d not in contracting]
    perm = _permutation(len(dims), batch, contracting, contracting_last)
    comp = x.parent
    if perm != tuple(range(len(dims))):
        x = emit(comp, "transpose", [x], {"dimensions": perm})
    free_size, k = _prod(dims[d] for d in free), _prod(dims[d] for d in contracting)
    merged_free = [free_size] if free_size != 1 else []
    shape = [dims[d] for d in batch] + (merged_free + [k] if contracting_last else [k] + merged_free)
    if tuple(shape) != x.shape.dims:
        x = emit(comp, "reshape", [x], shape=Shape.array(x.shape.element_type, shape))
    return x


def canonicalize_dot(dot: Instruction, strict: bool = True) -> Instruction:
    # dot(A, B) => reshape(dot([B.., M, K], [B.., K, N])); not strict: [B.., K, M] / [B.., N, K] where that
    # orientation needs no transpose and the other would
    lb, lc, rb, rc = dot_dims(dot)
    lhs, rhs = dot.operands
    lhs_last, rhs_last = True, False
    if not strict:
        lhs_last = in_place_orientation(lhs.shape.rank, lb, lc, True)
        rhs_last = in_place_orientation(rhs.shape.rank, rb, rc, False)
    new_lhs = canonical_operand(lhs, lb, lc, contracting_last=lhs_last)
    new_rhs = canonical_operand(rhs, rb, rc, contracting_last=rhs_last)
    nb = len(lb)
    lhs_k = new_lhs.shape.rank - 1 if lhs_last else nb
    rhs_k = new_rhs.shape.rank - 1 if rhs_last else nb
    attrs = {k: v for k, v in dot.attrs.items() if k not in DIM_ATTRS}
    dnums = {"lhs_batch_dims": tuple(range(nb)), "lhs_contracting_dims": (lhs_k,),
             "rhs_batch_dims": tuple(range(nb)), "rhs_contracting_dims": (rhs_k,)}
    attrs = {**{k: v for k, v in dnums.items() if v}, **attrs}
    dims = list(new_lhs.shape.dims[:nb])
    dims += [n for d, n in enumerate(new_lhs.shape.dims) if d >= nb and d != lhs_k]
    dims += [n for d, n in enumerate(new_rhs.shape.dims) if d >= nb and d != rhs_k]
    new_dot = emit(dot.parent, "dot", [new_lhs, new_rhs], attrs,
                   shape=Shape.array(dot.shape.element_type, dims), name=dot.name)
    if new_dot.shape.dims == dot.shape.dims:
        return new_dot
    return make("reshape", [new_dot], shape=dot.shape.without_layout())


class DotDecomposer(OpExpanderPass):
    name = "dot_decomposer"
    opcodes = frozenset({"dot"})

    def __init__(self, strict: bool = False):
        self.strict = strict

    def matches(self, inst: Instruction) -> bool:
        return (inst.opcode == "dot" and len(inst.operands) == 2 and not any(o.shape.dynamic for o in inst.operands)
                and not is_canonical(inst, self.strict))

    def expand(self, inst: Instruction) -> Instruction:
        return canonicalize_dot(inst, self.strict)
