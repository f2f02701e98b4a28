"""ReshapeMover (XLA's `reshape-mover`): sink reshapes and transposes below elementwise ops, so that they meet
and cancel (algsimp) or end up once at the end of a chain instead of on every input.

| rewrite                                                   | when                                          |
|-----------------------------------------------------------|-----------------------------------------------|
| op(reshape(a), reshape(b)) => reshape(op(a, b))           | a, b have the same dims                       |
| op(transpose(a, p), transpose(b, p)) => transpose(op(a, b), p) | same permutation, same dims              |
| op(reshape(a), broadcast(s)) => reshape(op(a, broadcast'(s)))  | s a scalar: the broadcast takes a's dims |
| op(reshape(a), c) => reshape(op(a, reshape'(c)))          | c a constant (the inverse transpose for transposes; constant folding finishes it) |

An elementwise op is a candidate when every operand has the op's dims and is either trivially reshapable
(a constant, a broadcast of a scalar) or a reshape/transpose of something that is not, all of the latter
equivalent, at least one present. A reshape/transpose operand is sunk only if all of its users are
candidates too, so that it disappears instead of being duplicated (candidates are pruned until that
holds, as XLA does). Effective scalars (every dim 1) are not worth moving.

After these, transpose_motion.py moves transposes further: through broadcasts of vectors, reshapes that keep
dim groups together, reduces, concatenates, slices, pads and other transposes, a whole region at once (its
table), so that NCHW models' convolution transposes cancel.
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module, Shape
from .build import make
from .pipeline import Pass
from .transpose_motion import move_transposes

# elementwise ops whose operands are plain values (map carries a computation, copy is layout work)
_SKIP = frozenset({"map", "copy"})


def _trivially_reshapable(inst: Instruction) -> bool:
    return inst.opcode == "constant" or (inst.opcode == "broadcast" and inst.operands[0].shape.rank == 0)


def _effective_scalar(shape: Shape) -> bool:
    return all(d == 1 for d in shape.dims)


def _nontrivial_rearrange(inst: Instruction) -> bool:
    return (inst.opcode in ("reshape", "transpose") and not _effective_scalar(inst.shape)
            and not _trivially_reshapable(inst.operands[0]))


def _equivalent(a: Instruction, b: Instruction) -> bool:
    if a.opcode != b.opcode or a.shape.dims != b.shape.dims:
        return False
    if a.opcode == "transpose":
        return tuple(a.attrs["dimensions"]) == tuple(b.attrs["dimensions"])
    return a.operands[0].shape.dims == b.operands[0].shape.dims


def _first_rearrange(inst: Instruction) -> Instruction | None:
    """The first reshape/transpose operand, when `inst` is a reshape-move candidate; None otherwise."""
    if not inst.info.is_elementwise or inst.opcode in _SKIP or not inst.operands or inst.has_side_effect:
        return None
    first = None
    for op in inst.operands:
        if op.shape.dims != inst.shape.dims or not op.shape.is_array:
            return None
        if _trivially_reshapable(op):
            continue
        if not _nontrivial_rearrange(op):
            return None
        if first is None:
            first = op
        elif not _equivalent(first, op):
            return None
    return first


def _inverse(perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _moved_operand(comp: Computation, first: Instruction, op: Instruction) -> Instruction:
    """`op` with the dims of first's input (and its own element type)."""
    new_shape = Shape.array(op.shape.element_type, first.operands[0].shape.dims)
    if op.opcode in ("reshape", "transpose"):
        return op.operands[0]
    if op.opcode == "broadcast":
        # broadcast(s) => broadcast'(s) with the input dims
        return comp.add_instruction(make("broadcast", [op.operands[0]], {"dimensions": ()}, shape=new_shape))
    if first.opcode == "reshape":
        # c => reshape'(c)
        return comp.add_instruction(make("reshape", [op], shape=new_shape))
    # c => transpose(c, inverse(p))
    return comp.add_instruction(make("transpose", [op], {"dimensions": _inverse(first.attrs["dimensions"])},
                                     shape=new_shape))


def _sink(comp: Computation, inst: Instruction, first: Instruction) -> None:
    # op(reshape(a), reshape(b)) => reshape(op(a, b))
    operands = [_moved_operand(comp, first, op) for op in inst.operands]
    new_shape = Shape.array(inst.shape.element_type, first.operands[0].shape.dims)
    new_op = comp.add_instruction(inst.clone_with(operands, shape=new_shape))
    if first.opcode == "reshape":
        moved = make("reshape", [new_op], shape=inst.shape, name=inst.name)
    else:
        moved = make("transpose", [new_op], {"dimensions": tuple(first.attrs["dimensions"])}, shape=inst.shape,
                     name=inst.name)
    comp.replace_instruction(inst, moved)


def move_in(comp: Computation) -> bool:
    candidates: dict[int, Instruction] = {}
    # any order finds the same candidates (the pruning below reaches the one greatest set whatever the order), so
    # the list, not a walk; the sinking below goes in post order
    for inst in comp.instructions:
        if _first_rearrange(inst) is not None:
            candidates[id(inst)] = inst
    removed = True
    while candidates and removed:
        removed = False
        rearranges = {id(op): op for inst in candidates.values() for op in inst.operands
                      if _nontrivial_rearrange(op)}
        for op in rearranges.values():
            if any(id(u) not in candidates for u in op.users) or op.is_root:
                for u in op.users:
                    removed |= candidates.pop(id(u), None) is not None
    if not candidates:
        return False
    for inst in comp.post_order():
        if id(inst) in candidates:
            _sink(comp, inst, _first_rearrange(inst))
    return True


class ReshapeMover(Pass):
    name = "reshape-mover"

    def run(self, module: Module) -> bool:
        changed = False
        fused = {id(i.attrs["calls"]) for i in module.instructions() if i.opcode == "fusion"}
        for comp in list(module.computations):
            if id(comp) not in fused:
                changed |= move_in(comp)
                changed |= move_transposes(comp)
        return changed
