"""TransposeFolding: a transpose feeding a dot or a convolution disappears into its dimension numbers.

    dot(transpose(A, p), B)  => dot(A, B) with lhs batch/contracting dims d -> p[d]   (same for the rhs)
    conv(transpose(X, p), W) => conv(X, W) with input labels moved: dim d -> p[d]     (same for the kernel)

A dot's result lists its operand's free (non-batch, non-contracting) dims in operand order, so folding is
only exact when p keeps the free dims in order (`free_dims_in_order`). The default predicate is XLA's
narrower IsRowColumnTransposeDotOperand (batch dims untouched, one contracting dim, one free dim), which
never undoes DotDecomposer's batch-first transposes. Dots with a rank-1 operand are left alone, as in XLA.
A convolution's result does not depend on the order of its operands' dims, so its transposes fold, unless `fold_convolutions=False` (XLA:CPU passes
NeverFoldTranspose so that the transposes ConvCanonicalization inserted stay).
"""
from __future__ import annotations

from typing import Callable

from ..hlo import Instruction, Module
from ..hlo.attrs import ConvDimensionNumbers
from .build import make
from .control_util import has_control_edges
from .op_expander import non_fusion_computations, replace
from .pipeline import Pass

SIDES = (("lhs_batch_dims", "lhs_contracting_dims"), ("rhs_batch_dims", "rhs_contracting_dims"))


def is_non_identity_transpose(inst: Instruction) -> bool:
    return inst.opcode == "transpose" and tuple(inst.attrs["dimensions"]) != tuple(range(inst.shape.rank))


def free_dims_in_order(dot: Instruction, i: int) -> bool:
    """Folding operand i (a transpose) keeps the dot's result: its free dims stay in order."""
    t = dot.operands[i]
    perm = t.attrs["dimensions"]
    used = {d for key in SIDES[i] for d in dot.attrs.get(key, ())}
    free_sources = [perm[d] for d in range(t.shape.rank) if d not in used]
    return free_sources == sorted(free_sources)


def row_column_transpose_operand(dot: Instruction, i: int) -> bool:
    """XLA's IsRowColumnTransposeDotOperand: batch dims fixed by the transpose, one contracting dim, one free."""
    t = dot.operands[i]
    batch, contracting = (tuple(dot.attrs.get(k, ())) for k in SIDES[i])
    perm = t.attrs["dimensions"]
    return (len(batch) == t.shape.rank - 2 and len(contracting) == 1
            and all(perm[d] == d for d in batch))


def fold_into_dot(dot: Instruction, sides: list[int]) -> Instruction:
    # dot(transpose(A, p), B) => dot(A, B) with lhs dims d -> p[d]
    attrs, operands = dict(dot.attrs), list(dot.operands)
    for i in sides:
        perm = operands[i].attrs["dimensions"]
        for key in SIDES[i]:
            if key in attrs:
                attrs[key] = tuple(perm[d] for d in attrs[key])
        operands[i] = operands[i].operands[0]
    return make("dot", operands, attrs, shape=dot.shape, name=dot.name)


def fold_into_convolution(conv: Instruction, sides: list[int]) -> Instruction:
    # conv(transpose(X, p), W) => conv(X, W) with input dims d -> p[d];  likewise for the kernel W
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    inp = (dn.input_batch, dn.input_feature, dn.input_spatial)
    ker = (dn.kernel_input_feature, dn.kernel_output_feature, dn.kernel_spatial)
    operands = list(conv.operands)
    if 0 in sides:
        p = operands[0].attrs["dimensions"]
        inp = (p[inp[0]], p[inp[1]], tuple(p[d] for d in inp[2]))
        operands[0] = operands[0].operands[0]
    if 1 in sides:
        p = operands[1].attrs["dimensions"]
        ker = (p[ker[0]], p[ker[1]], tuple(p[d] for d in ker[2]))
        operands[1] = operands[1].operands[0]
    attrs = dict(conv.attrs)
    attrs["dim_labels"] = ConvDimensionNumbers.from_dims(*inp, *ker, dn.output_batch, dn.output_feature,
                                                         dn.output_spatial)
    return make("convolution", operands, attrs, shape=conv.shape, name=conv.name)


class TransposeFolding(Pass):
    """`dot_can_fold(dot, i)` decides for each transposed dot operand (XLA's row/column test by default);
    `fold_convolutions=False` is XLA:CPU's NeverFoldTranspose, which keeps ConvCanonicalization's work."""
    name = "transpose-folding"

    def __init__(self, dot_can_fold: Callable[[Instruction, int], bool] = row_column_transpose_operand,
                 fold_convolutions: bool = True):
        self.dot_can_fold = dot_can_fold
        self.fold_convolutions = fold_convolutions

    def foldable(self, inst: Instruction) -> list[int]:
        if inst.opcode == "dot" and len(inst.operands) == 2:
            if any(o.shape.rank < 2 for o in inst.operands):
                return []
            return [i for i in (0, 1) if is_non_identity_transpose(inst.operands[i]) and self.dot_can_fold(inst, i)]
        if (inst.opcode == "convolution" and self.fold_convolutions
                and getattr(inst.attrs.get("dim_labels"), "known", False)):
            return [i for i in (0, 1) if inst.operands[i].opcode == "transpose"]
        return []

    def fold_dot(self, dot: Instruction, sides: list[int]) -> tuple[Instruction, list[Instruction]]:
        """The folded dot and the transposes it no longer reads. A folded operand that is itself a foldable
        transpose folds too: DotDecomposer transposes an operand that was already a transpose (gpt2's tied
        embedding: dot(g, transpose(transpose(E)))), and one fold would leave the inner transpose to be copied."""
        transposes = [dot.operands[i] for i in sides]
        new = fold_into_dot(dot, sides)
        while more := self.foldable(new):
            transposes += [new.operands[i] for i in more]
            newer = fold_into_dot(new, more)
            new.detach()        # never inserted: its operands keep no user
            new = newer
        return new, transposes

    def run(self, module: Module) -> bool:
        # Find every opportunity first, then fold (XLA's order: dots, then convolutions).
        found = [(inst, sides) for comp in non_fusion_computations(module) for inst in comp.post_order()
                 if (sides := self.foldable(inst))]
        found.sort(key=lambda pair: pair[0].opcode != "dot")
        # whether each computation has control edges, asked once (a fold adds none): asking per fold scanned the
        # computation each time, quadratic in a module's dots
        edges: dict[int, bool] = {}
        for inst, sides in found:
            comp = inst.parent
            if id(comp) not in edges:
                edges[id(comp)] = has_control_edges(comp)
            if inst.opcode == "dot":
                new, transposes = self.fold_dot(inst, sides)
            else:
                new, transposes = fold_into_convolution(inst, sides), [inst.operands[i] for i in sides]
            replace(comp, inst, new, f"pass {self.name}", edges[id(comp)])
            for t in transposes:
                if t.parent is comp and not t.users and not t.is_root:
                    comp.remove_instruction(t)
        return bool(found)
