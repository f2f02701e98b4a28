"""CopyInsertion: add the copies that in-place buffer reuse needs (XLA's copy_insertion.cc, its special cases).

- The entry result must not alias a parameter or a constant: such a leaf of the root is copied.
- A while loop updates its state buffer in place: an element of the init tuple that is a parameter or a
  constant, or that is also read elsewhere, is copied before the loop so the loop does not clobber it; unless
  the body passes that element through unchanged (XLA's read-only loop indices): no iteration writes it.
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module
from .build import emit
from .pipeline import Pass

_READ_ONLY = ("parameter", "constant")


def _copy_of(comp: Computation, inst: Instruction) -> Instruction:
    if inst.opcode == "tuple":
        # tuple(a, b) => tuple(copy a, copy b), each leaf by these rules (TensorFlow's loops carry (list, size)
        # pairs: three loops sharing one zero list got three copies of its 12 MB in gru/train)
        return emit(comp, "tuple", [_copy_of(comp, op) for op in inst.operands], shape=inst.shape)
    if inst.opcode == "broadcast" and inst.operands[0].shape.rank == 0:
        # broadcast(s) => a broadcast of its own: writing the value costs less than copying it (and the shared
        # broadcast, a zero init several loops fill, need not be materialized at all)
        return emit(comp, "broadcast", [inst.operands[0]], dict(inst.attrs), shape=inst.shape)
    return emit(comp, "copy", [inst], shape=inst.shape)


def _passed_through(loop: Instruction) -> set[int]:
    """Element numbers k of while `loop`'s state whose body result element k is its parameter's element k."""
    body = loop.attrs["body"]
    root = body.root
    if root.opcode != "tuple":
        return set()
    return {k for k, op in enumerate(root.operands) if op.opcode == "get-tuple-element"
            and int(op.attrs["index"]) == k and op.operands[0] is body.parameters[0]}


def _copy_tuple_leaves(comp: Computation, tup: Instruction, needs_copy) -> Instruction | None:
    """A new tuple whose elements k that satisfy needs_copy(element, k) are copied; None when none is."""
    if not any(needs_copy(op, k) for k, op in enumerate(tup.operands)):
        return None
    elements = [_copy_of(comp, op) if needs_copy(op, k) else op for k, op in enumerate(tup.operands)]
    return emit(comp, "tuple", elements, shape=tup.shape)


class CopyInsertion(Pass):
    name = "copy-insertion"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            for inst in list(comp.instructions):
                if inst.opcode != "while":
                    continue
                init = inst.operands[0]
                if init.opcode == "tuple":
                    kept = _passed_through(inst)
                    new = _copy_tuple_leaves(comp, init, lambda op, k: k not in kept
                                             and (op.opcode in _READ_ONLY or len(op.users) > 1))
                    if new is not None:
                        inst.replace_operand_with(0, new)
                        changed = True
                elif init.opcode in _READ_ONLY or len(init.users) > 1:
                    inst.replace_operand_with(0, _copy_of(comp, init))
                    changed = True
        entry = module.entry
        if entry is not None:
            root = entry.root
            if root.opcode == "tuple":
                new = _copy_tuple_leaves(entry, root, lambda op, k: op.opcode in _READ_ONLY)
                if new is not None:
                    entry.root = new
                    changed = True
            elif root.opcode in _READ_ONLY and not root.shape.is_tuple:
                entry.root = _copy_of(entry, root)
                changed = True
        return changed
