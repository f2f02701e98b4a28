"""HloCSE: instructions computing the same value from the same operands are merged (XLA's HloCSE).

Two instructions are the same when opcode, shape, operands, attributes (metadata aside) and, for constants,
literals are equal. Side-effecting instructions and parameters are never merged. Walking in post order
makes the merge transitive: once `b` is replaced by `a`, users of both become identical too.
"""
from __future__ import annotations

import numpy as np

from ..hlo import ELIDED, Computation, Module
from .pipeline import Pass

# Attributes that describe where an op came from, not what it computes.
_IGNORED_ATTRS = frozenset({"metadata", "frontend_attributes", "statistics", "origin"})


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


def _literal_key(lit):
    if lit is None or lit is ELIDED:
        return ("literal", id(lit)) if lit is ELIDED else None
    if isinstance(lit, tuple):
        return tuple(_literal_key(x) for x in lit)
    a = np.ascontiguousarray(lit)
    return (a.dtype.str, a.shape, a.tobytes())


def instruction_key(inst, operand_ids=None):
    attrs = tuple([(k, _freeze(v)) for k, v in inst.attrs.items() if k not in _IGNORED_ATTRS])
    ops = tuple(id(o) for o in inst.operands) if operand_ids is None else operand_ids
    return (inst.opcode, inst.shape, ops, attrs, _literal_key(inst.literal))


class HloCSE(Pass):
    name = "cse"

    def __init__(self, only_constants: bool = False):
        self.only_constants = only_constants

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            seen: dict = {}
            for inst in comp.post_order():
                if inst.opcode == "parameter" or inst.has_side_effect or inst.control_predecessors:
                    continue
                if self.only_constants and inst.opcode != "constant":
                    continue
                try:
                    key = instruction_key(inst)
                    hash(key)
                except TypeError:   # an attribute value we cannot compare: leave the instruction alone
                    continue
                first = seen.setdefault(key, inst)
                if first is not inst:
                    inst.replace_all_uses_with(first)
                    if not inst.users and not inst.is_root:
                        comp.remove_instruction(inst)
                    changed = True
        return changed
