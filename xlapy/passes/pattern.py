"""A pattern matcher over HLO in the style of XLA's `m::Add(m::Op(&a), m::ConstantScalar(0))` and tinygrad's UPat.

    pat = Op("add", Any("a"), ConstantScalar(0))       # commutative ops match either operand order
    caps = pat.match(inst)                              # {'a': <inst>} or None
    print(pat.explain(inst))                            # why it did not match

Captures bind names to instructions; the same name used twice must bind the same instruction.
`one_user=True` requires the matched instruction to have exactly one user. Rules are (pattern, fn) pairs;
fn(inst, caps) returns a replacement Instruction or None when it does not apply (see rewrite.py).
"""
from __future__ import annotations

from typing import Any as AnyT, Callable

import numpy as np

from ..hlo import ELIDED, Instruction


class Pattern:
    name: str | None = None
    one_user: bool = False

    def match(self, inst: Instruction) -> dict[str, Instruction] | None:
        caps: dict[str, Instruction] = {}
        return caps if self._match(inst, caps, None) else None

    def explain(self, inst: Instruction) -> str:
        why: list[str] = []
        if self._match(inst, {}, why):
            return f"{inst.name} matches {self}"
        reasons = list(dict.fromkeys(why))   # every failed attempt (both orders of a commutative op), deduplicated
        return f"{inst.name} does not match {self}: " + ("; ".join(reasons) if reasons else "no reason recorded")

    def _bind(self, inst: Instruction, caps: dict, why: list | None) -> bool:
        if self.one_user and len(inst.users) != 1:
            if why is not None:
                why.append(f"{inst.name} has {len(inst.users)} users, pattern {self} wants one")
            return False
        if self.name is not None:
            bound = caps.get(self.name)
            if bound is not None and bound is not inst:
                if why is not None:
                    why.append(f"capture {self.name!r} already bound to {bound.name}, not {inst.name}")
                return False
            caps[self.name] = inst
        return True

    def _match(self, inst: Instruction, caps: dict, why: list | None) -> bool:
        """Whether inst matches, binding captures; `why` collects failure reasons (None: match() needs none)."""
        raise NotImplementedError


class Any(Pattern):
    """Any instruction; `pred` optionally filters (e.g. lambda i: i.shape.rank == 0)."""

    def __init__(self, name: str | None = None, pred: Callable[[Instruction], bool] | None = None,
                 one_user: bool = False):
        self.name, self.pred, self.one_user = name, pred, one_user

    def _match(self, inst, caps, why):
        if self.pred is not None and not self.pred(inst):
            if why is not None:
                why.append(f"{inst.name} fails the predicate of {self}")
            return False
        return self._bind(inst, caps, why)

    def __repr__(self):
        return f"Any({self.name or ''})"


class Op(Pattern):
    """An instruction with `opcode` (a str or a set of str) whose operands match `operands` (None: any)."""

    def __init__(self, opcode: str | set[str] | None, *operands: Pattern, name: str | None = None,
                 one_user: bool = False, pred: Callable[[Instruction], bool] | None = None):
        self.opcodes = None if opcode is None else ({opcode} if isinstance(opcode, str) else set(opcode))
        self.operands = operands
        self.name, self.one_user, self.pred = name, one_user, pred

    def _match(self, inst, caps, why):
        if self.opcodes is not None and inst.opcode not in self.opcodes:
            if why is not None:
                why.append(f"{inst.name} is {inst.opcode}, not {'/'.join(sorted(self.opcodes))}")
            return False
        if self.pred is not None and not self.pred(inst):
            if why is not None:
                why.append(f"{inst.name} fails the predicate of {self}")
            return False
        if self.operands:
            if len(inst.operands) != len(self.operands):
                if why is not None:
                    why.append(f"{inst.name} has {len(inst.operands)} operands, pattern wants {len(self.operands)}")
                return False
            orders = [inst.operands]
            if len(inst.operands) == 2 and inst.info.is_commutative:
                orders.append(inst.operands[::-1])
            for ops in orders:
                trial = dict(caps)
                if all(p._match(o, trial, why) for p, o in zip(self.operands, ops)):
                    caps.clear()
                    caps.update(trial)
                    break
            else:
                return False
        return self._bind(inst, caps, why)

    def __repr__(self):
        ops = ", ".join(map(repr, self.operands))
        return f"{'/'.join(sorted(self.opcodes)) if self.opcodes else 'Op'}({ops})"


def literal_scalar(inst: Instruction) -> AnyT | None:
    """The single value of a constant that is a scalar, or a broadcast of a scalar constant; else None."""
    while inst.opcode == "broadcast" and inst.operands and inst.operands[0].shape.rank == 0:
        inst = inst.operands[0]
    if inst.opcode != "constant" or inst.literal is None or inst.literal is ELIDED or inst.shape.is_tuple:
        return None
    lit = np.asarray(inst.literal)
    if lit.size == 0:
        return None
    first = lit.reshape(-1)[0]
    if lit.size > 1:
        wide = lit.astype(np.float64) if lit.dtype.kind == "f" or lit.dtype.kind == "V" else lit
        if not np.array_equal(wide, np.full_like(wide, wide.reshape(-1)[0]), equal_nan=wide.dtype.kind == "f"):
            return None
    return first


class ConstantScalar(Pattern):
    """A constant (or broadcast of a scalar constant) all of whose elements equal `value` (None: any value)."""

    def __init__(self, value: AnyT = None, name: str | None = None, one_user: bool = False):
        self.value, self.name, self.one_user = value, name, one_user

    def _match(self, inst, caps, why):
        v = literal_scalar(inst)
        if v is None:
            if why is not None:
                why.append(f"{inst.name} ({inst.opcode}) is not a uniform constant")
            return False
        if self.value is not None:
            try:
                equal = bool(v == self.value) and (np.signbit(v) == np.signbit(self.value)
                                                   if np.asarray(v).dtype.kind == "f" else True)
            except (TypeError, ValueError):
                equal = False
            if not equal:
                if why is not None:
                    why.append(f"{inst.name} holds {v}, not {self.value}")
                return False
        return self._bind(inst, caps, why)

    def __repr__(self):
        return f"ConstantScalar({'' if self.value is None else self.value})"


def Constant(name: str | None = None) -> Pattern:
    return Op("constant", name=name)


Rule = tuple[Pattern, Callable[[Instruction, dict], "Instruction | None"]]
