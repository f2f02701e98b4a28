"""Equal instructions of a fused computation share one generator (value numbering at emission).

Fusion copies a producer into each consumer's fusion, and multi-output fusion then merges fusions that hold the
same copies: unet's GroupNorm statistics fusions computed two equal sums (the same concatenation of upsampled
and skip activations, reduced by two reducer regions of the same structure), each with its own loop nest, so the
kernel and LLVM's work on it were twice what they needed to be. `representatives` maps each instruction to the
first one computing the same value: opcode, shape, attributes (called computations compared by structure), the
literal and the operands' representatives equal. `IrEmitter.fused_generators` gives an instruction its
representative's generator, which emits each element once per index (elemental._memoized): a root repeated in a
multi-output fusion is computed once and stored to both outputs. Side-effecting instructions and parameters
stand for themselves.
"""
from __future__ import annotations

from ...hlo import Computation, Instruction
from ...passes.cse import IGNORED_ATTRS, literal_key

_PLAIN = (int, str, float, bool, type(None))


def representatives(comp: Computation) -> dict[int, Instruction]:
    """id(inst) -> the first instruction of comp (in post order) that computes the same value."""
    seen: dict = {}
    rep: dict[int, Instruction] = {}
    structures: dict[int, object] = {}
    for inst in comp.post_order():
        key = None
        if inst.opcode != "parameter" and not inst.has_side_effect:
            key = _key(inst, tuple(id(rep[id(o)]) for o in inst.operands), structures)
        rep[id(inst)] = inst if key is None else seen.setdefault(key, inst)
    return rep


def _key(inst: Instruction, operands: tuple, structures: dict):
    """The instruction's value key, or None where an attribute cannot be compared."""
    try:
        attrs = tuple((k, _freeze(v, structures)) for k, v in inst.attrs.items() if k not in IGNORED_ATTRS)
        key = (inst.opcode, inst.shape, operands, attrs, literal_key(inst.literal))
        hash(key)
    except TypeError:
        return None
    return key


def _freeze(v, structures: dict):
    if isinstance(v, _PLAIN):
        return v
    if isinstance(v, Computation):
        return _structure(v, structures)
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x, structures) for x in v)
    return v


def _structure(comp: Computation, structures: dict):
    """A computation's structure: each instruction's opcode, shape, attributes, literal and parameter number,
    its operands by position in post order, and the root's position."""
    got = structures.get(id(comp))
    if got is None:
        order = comp.post_order()
        position = {id(inst): k for k, inst in enumerate(order)}
        rows = tuple((inst.opcode, inst.shape, tuple(position[id(o)] for o in inst.operands),
                      tuple((k, _freeze(v, structures)) for k, v in inst.attrs.items() if k not in IGNORED_ATTRS),
                      literal_key(inst.literal), inst.parameter_number if inst.opcode == "parameter" else None)
                     for inst in order)
        got = structures[id(comp)] = ("computation", rows, position[id(comp.root)])
    return got
