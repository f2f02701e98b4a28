"""HloCSE: instructions computing the same value from the same operands are merged (XLA's HloCSE).

Two instructions are the same when opcode, shape, operands, attributes (metadata aside) and, for constants,
literals are equal. Side-effecting instructions and parameters are never merged. Walking in post order
makes the merge transitive: once `b` is replaced by `a`, users of both become identical too.
"""
from __future__ import annotations

import numpy as np

from ..hlo import ELIDED, Computation, Module
from .pipeline import Pass

# Attributes that describe where an op came from, not what it computes (also backends/cpu/fused_cse.py's).
IGNORED_ATTRS = frozenset({"metadata", "frontend_attributes", "statistics", "origin"})


_PLAIN = frozenset({int, str, float, bool, type(None)})     # immutable values a key holds as they are


def _freeze(v):
    t = type(v)
    if t in _PLAIN:
        return v
    if t is tuple:                  # dimensions and the like: a tuple of plain values is its own key
        for x in v:
            if type(x) not in _PLAIN:
                return tuple(_freeze(x) for x in v)
        return v
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, Computation):
        return ("computation", id(v))
    if isinstance(v, tuple):
        return tuple(_freeze(x) for x in v)
    return v


def literal_key(lit):
    if lit is None or lit is ELIDED:
        return ("literal", id(lit)) if lit is ELIDED else None
    if isinstance(lit, tuple):
        return tuple(literal_key(x) for x in lit)
    a = np.ascontiguousarray(lit)
    return (a.dtype.str, a.shape, a.tobytes())


def instruction_key(inst, operand_ids=None):
    attrs = tuple([(k, _freeze(v)) for k, v in inst.attrs.items() if k not in IGNORED_ATTRS])
    ops = tuple(id(o) for o in inst.operands) if operand_ids is None else operand_ids
    return (inst.opcode, inst.shape, ops, attrs, literal_key(inst.literal))


class HloCSE(Pass):
    name = "cse"

    def __init__(self, only_constants: bool = False):
        self.only_constants = only_constants

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            # an instruction is first bucketed by opcode and operands, which tells most apart; the full key
            # (shape, attributes, literal) is made only for instructions that share a bucket with an earlier one
            first: dict = {}            # (opcode, operand ids) -> the first instruction seen with them
            seen: dict = {}             # full key -> instruction
            dead = []
            for inst in comp.post_order():
                if inst.opcode == "parameter" or inst.has_side_effect or inst.control_predecessors:
                    continue
                if self.only_constants and inst.opcode != "constant":
                    continue
                bucket = (inst.opcode, tuple(map(id, inst.operands)))
                earlier = first.setdefault(bucket, inst)
                if earlier is inst:
                    continue
                if earlier is not None:         # the bucket's first instruction gets its full key now
                    first[bucket] = None
                    key = _key(earlier)
                    if key is not None:
                        seen.setdefault(key, earlier)
                key = _key(inst)
                if key is None:
                    continue
                other = seen.setdefault(key, inst)
                if other is not inst:
                    inst.replace_all_uses_with(other)
                    if not inst.users and not inst.is_root:
                        dead.append(inst)
                    changed = True
            comp.remove_instructions(dead)
        return changed


def _key(inst):
    """instruction_key, or None for an attribute value we cannot compare (the instruction is left alone)."""
    try:
        key = instruction_key(inst)
        hash(key)
    except TypeError:
        return None
    return key
