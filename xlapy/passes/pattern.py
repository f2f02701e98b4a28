"""A pattern matcher over HLO in the style of XLA's `m::Add(m::Op(&a), m::ConstantScalar(0))` and tinygrad's UPat.

    pat = Op("add", Any("a"), ConstantScalar(0))       # commutative ops match either operand order
    caps = pat.match(inst)                              # {'a': <inst>} or None
    print(pat.explain(inst))                            # why it did not match
    Op("multiply", A, A, dtype=FLOATS)                  # element type constraints: a name, a set, a category

Captures bind names to instructions; the same name used twice must bind the same instruction.
`one_user=True` requires the matched instruction to have exactly one user. `dtype` requires the matched
instruction's element type to be one of a set: "f32", {"f16", "bf16"}, or a category (FLOATS, INTS, PRED,
COMPLEX, REAL; categories combine with `|`). Rules put a pattern on a rewrite function: see rewrite.py.
"""
from __future__ import annotations

from math import copysign
from typing import Any as AnyT, Callable, Iterable

import numpy as np

from ..hlo import ELIDED, PRIMITIVE_TYPES, Instruction, type_name_of_dtype


class ElementTypes(frozenset):
    """A set of element type names that a pattern accepts, with the label `explain()` prints."""

    def __new__(cls, names, label: str | None = None):
        self = super().__new__(cls, names)
        unknown = sorted(n for n in self if n not in PRIMITIVE_TYPES)
        if unknown:
            raise ValueError(f"unknown element type(s) {', '.join(unknown)} in a pattern's dtype")
        self.label = label or "/".join(sorted(self))
        return self

    def __or__(self, other) -> "ElementTypes":
        other = element_types(other)
        return ElementTypes(frozenset.__or__(self, other), f"{self.label}|{other.label}")

    def __repr__(self) -> str:
        return self.label


def _of_kind(label: str, *kinds: str) -> ElementTypes:
    return ElementTypes((n for n, t in PRIMITIVE_TYPES.items() if t.kind in kinds), label)


FLOATS = _of_kind("floats", "float")
INTS = _of_kind("ints", "int", "uint")        # signed and unsigned integers, not pred
PRED = ElementTypes({"pred"}, "pred")
COMPLEX = _of_kind("complex", "complex")
REAL = _of_kind("real", "pred", "int", "uint", "float")   # every array type that is not complex


def element_types(spec: "str | Iterable[str] | ElementTypes") -> ElementTypes:
    """A pattern's `dtype=`: one element type name, several, or a category such as FLOATS."""
    if isinstance(spec, ElementTypes):
        return spec
    return ElementTypes({spec} if isinstance(spec, str) else spec)


class Pattern:
    name: str | None = None
    one_user: bool = False
    dtype: ElementTypes | None = None
    operands: tuple["Pattern", ...] = ()

    def match(self, inst: Instruction) -> dict[str, Instruction] | None:
        caps: dict[str, Instruction] = {}
        return caps if self._match(inst, caps, None) else None

    def explain(self, inst: Instruction) -> str:
        why: list[str] = []
        if self._match(inst, {}, why):
            return f"{inst.name} matches {self}"
        reasons = list(dict.fromkeys(why))   # every failed attempt (both orders of a commutative op), deduplicated
        return f"{inst.name} does not match {self}: " + ("; ".join(reasons) if reasons else "no reason recorded")

    def captures(self) -> set[str]:
        """The capture names this pattern binds (a rule's function takes exactly these keyword arguments)."""
        names = {self.name} if self.name is not None else set()
        for p in self.operands:
            names |= p.captures()
        return names

    def _dtype_ok(self, inst: Instruction, why: list | None) -> bool:
        if self.dtype is None:
            return True
        if not inst.shape.is_tuple and inst.shape.element_type in self.dtype:
            return True
        if why is not None:
            has = "is a tuple" if inst.shape.is_tuple else f"has element type {inst.shape.element_type}"
            why.append(f"{inst.name} {has}, pattern {self} wants {self.dtype.label}")
        return False

    def _pred_ok(self, inst: Instruction, why: list | None) -> bool:
        pred = getattr(self, "pred", None)
        if pred is None or pred(inst):
            return True
        if why is not None:
            why.append(f"{inst.name} fails the predicate of {self}")
        return False

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

    def _dtype_repr(self) -> str:
        return "" if self.dtype is None else f"dtype={self.dtype.label}"


def _dtype_of(dtype) -> ElementTypes | None:
    return None if dtype is None else element_types(dtype)


class Any(Pattern):
    """Any instruction; `pred` optionally filters (e.g. lambda i: i.shape.rank == 0), `dtype` constrains its
    element type."""

    def __init__(self, name: str | None = None, pred: Callable[[Instruction], bool] | None = None,
                 one_user: bool = False, dtype=None):
        self.name, self.pred, self.one_user, self.dtype = name, pred, one_user, _dtype_of(dtype)

    def _match(self, inst, caps, why):
        # each check only when the pattern has it (the simplifier tries tens of thousands of these a compile)
        if self.dtype is not None and not self._dtype_ok(inst, why):
            return False
        if self.pred is not None and not self._pred_ok(inst, why):
            return False
        return self._bind(inst, caps, why) if self.one_user or self.name is not None else True

    def __repr__(self):
        return f"Any({', '.join(x for x in (self.name or '', self._dtype_repr()) if x)})"


class Op(Pattern):
    """An instruction with `opcode` (a str or a set of str) whose operands match `operands` (None: any)."""

    def __init__(self, opcode: str | set[str] | None, *operands: Pattern, name: str | None = None,
                 one_user: bool = False, pred: Callable[[Instruction], bool] | None = None, dtype=None):
        self.opcodes = None if opcode is None else ({opcode} if isinstance(opcode, str) else set(opcode))
        self.operands = operands
        self.name, self.one_user, self.pred, self.dtype = name, one_user, pred, _dtype_of(dtype)
        # per operand, the opcodes it can have to match (None: any): an operand order that fails this is skipped
        # before any capture bookkeeping (the simplifier tries thousands of patterns that fail on an opcode)
        heads = tuple(_heads(p) for p in operands)
        self._heads = heads if any(h is not None for h in heads) else None
        # operands that match anything and bind nothing are not walked; operands that bind nothing need no trial
        # copy of the captures (a failed order leaves nothing behind to undo)
        self._free = all(_is_free(p) for p in operands)
        self._binds = any(p.captures() for p in operands)

    def _match(self, inst, caps, why):
        if self.opcodes is not None and inst.opcode not in self.opcodes:
            if why is not None:
                why.append(f"{inst.name} is {inst.opcode}, not {'/'.join(sorted(self.opcodes))}")
            return False
        if self.dtype is not None and not self._dtype_ok(inst, why):
            return False
        if self.pred is not None and not self._pred_ok(inst, why):
            return False
        if self.operands:
            if len(inst.operands) != len(self.operands):
                if why is not None:
                    why.append(f"{inst.name} has {len(inst.operands)} operands, pattern wants {len(self.operands)}")
                return False
            if not (self._free and why is None) and not self._match_operands(inst, caps, why):
                return False
        return self._bind(inst, caps, why) if self.one_user or self.name is not None else True

    def _match_operands(self, inst, caps, why) -> bool:
        operands = inst.operands
        orders = (operands, operands[::-1]) if len(operands) == 2 and inst.info.is_commutative else (operands,)
        heads = self._heads if why is None else None      # explain() records every reason
        for ops in orders:
            if heads is not None and not _heads_ok(heads, ops):
                continue
            trial = caps if not self._binds and why is None else dict(caps)
            for p, o in zip(self.operands, ops):
                if not p._match(o, trial, why):
                    break
            else:
                if trial is not caps:
                    caps.clear()
                    caps.update(trial)
                return True
        return False

    def __repr__(self):
        ops = ", ".join([*map(repr, self.operands), *([self._dtype_repr()] if self.dtype else [])])
        return f"{'/'.join(sorted(self.opcodes)) if self.opcodes else 'Op'}({ops})"


def _heads(p: Pattern) -> frozenset[str] | None:
    """The opcodes an instruction matching `p` can have; None: any."""
    if isinstance(p, Op):
        return None if p.opcodes is None else frozenset(p.opcodes)
    if isinstance(p, ConstantScalar):
        return _SCALAR_HEADS        # literal_scalar looks through broadcasts to a constant
    return None


_SCALAR_HEADS = frozenset({"constant", "broadcast"})


def _is_free(p: Pattern) -> bool:
    """Does `p` match every instruction and bind nothing?"""
    return (type(p) is Any and p.name is None and p.pred is None and not p.one_user and p.dtype is None)


def _heads_ok(heads: tuple, ops) -> bool:
    for allowed, op in zip(heads, ops):
        if allowed is not None and op.opcode not in allowed:
            return False
    return True


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
        flat = wide.reshape(-1)
        nan = wide.dtype.kind == "f"
        # a constant of varied values (weights) differs from its first element at its second or last one,
        # mostly: told without the comparison of the whole array
        ends = flat[[0, 1, -1]]
        if not np.array_equal(ends, np.full_like(ends, flat[0]), equal_nan=nan):
            return None
        if not np.array_equal(wide, np.full_like(wide, flat[0]), equal_nan=nan):
            return None
    return first


def same_value(v: AnyT, x: AnyT) -> bool:
    """v == x for a literal scalar v, with +0.0 and -0.0 told apart in every float type (ml_dtypes' included)."""
    try:
        if not bool(v == x):
            return False
        dt = v.dtype if isinstance(v, np.generic) else np.asarray(v).dtype
        return not _signed_zeros(dt) or (copysign(1.0, float(v)) < 0) == (copysign(1.0, float(x)) < 0)
    except (TypeError, ValueError):
        return False


_SIGNED_ZEROS: dict = {}        # dtype -> is it a float type (same_value is asked ~10^4 times a compile)


def _signed_zeros(dt) -> bool:
    known = _SIGNED_ZEROS.get(dt)
    if known is None:
        known = _SIGNED_ZEROS[dt] = dt.kind == "f" or (dt.kind == "V" and PRIMITIVE_TYPES[type_name_of_dtype(dt)].is_float)
    return known


class ConstantScalar(Pattern):
    """A constant (or broadcast of a scalar constant) all of whose elements equal `value` (None: any value;
    0.0 and -0.0 are different values)."""

    def __init__(self, value: AnyT = None, name: str | None = None, one_user: bool = False, dtype=None):
        self.value, self.name, self.one_user, self.dtype = value, name, one_user, _dtype_of(dtype)

    def _match(self, inst, caps, why):
        v = literal_scalar(inst)
        if v is None:
            if why is not None:
                why.append(f"{inst.name} ({inst.opcode}) is not a uniform constant")
            return False
        if not self._dtype_ok(inst, why):
            return False
        if self.value is not None and not same_value(v, self.value):
            if why is not None:
                why.append(f"{inst.name} holds {v}, not {self.value}")
            return False
        return self._bind(inst, caps, why)

    def __repr__(self):
        args = ["" if self.value is None else str(self.value), self._dtype_repr()]
        return f"ConstantScalar({', '.join(a for a in args if a)})"


def Constant(name: str | None = None) -> Pattern:
    return Op("constant", name=name)
