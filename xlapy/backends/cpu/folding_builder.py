"""An IRBuilder that does integer arithmetic on constants in Python instead of emitting it.

Index code composes strides, offsets and loop variables, and many of its terms are known when it is emitted:
`mul i64 0, 8` (the outermost index of a single-batch loop), `mul %i, 1`, `add %x, 0`. Each such instruction
cost Python time to build and print and LLVM time to parse and fold, for nothing. `FoldingBuilder` answers
them with a constant or with the operand itself. Only integer scalars are folded (never floating point, where
x + 0.0 is not x for x = -0.0), only where the result is exact (or poison in LLVM's semantics, where any value
is allowed): no division by zero, no shift by the width or more.

The rules are the tables below: `_CONSTANT` computes an op of two constants, `_IDENTITY` says when an op with one
known operand is that other operand, `_ABSORBING` when it is a known constant.

It also reuses an integer instruction it made before in the same basic block from the same operands (and
flags): element generators recompute the same index terms for each operand they read (`mul %row, 65` for the
input and again for the output). Only while it appends at the block's end, so the earlier one dominates the
use; only integer arithmetic and comparisons, pure values whose identity means nothing (never pointers, whose
identity buffer assignment and kernel replay track).
"""
from __future__ import annotations

from llvmlite import ir


def _unsigned(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def _signed(value: int, width: int) -> int:
    value = _unsigned(value, width)
    return value - (1 << width) if width > 1 and value >> (width - 1) else value


def _shift_ok(b: int, w: int) -> bool:
    return 0 <= b < w


# op -> (a, b, width) -> result (any int; wrapped to the width afterwards), or None when it is not defined
_CONSTANT = {
    "add": lambda a, b, w: a + b,
    "sub": lambda a, b, w: a - b,
    "mul": lambda a, b, w: a * b,
    "and": lambda a, b, w: a & b,
    "or": lambda a, b, w: a | b,
    "xor": lambda a, b, w: a ^ b,
    "udiv": lambda a, b, w: _unsigned(a, w) // _unsigned(b, w) if _unsigned(b, w) else None,
    "urem": lambda a, b, w: _unsigned(a, w) % _unsigned(b, w) if _unsigned(b, w) else None,
    "shl": lambda a, b, w: a << _unsigned(b, w) if _shift_ok(_unsigned(b, w), w) else None,
    "lshr": lambda a, b, w: _unsigned(a, w) >> _unsigned(b, w) if _shift_ok(_unsigned(b, w), w) else None,
}

# op -> (the constant of the left operand that makes it the right one, the constant of the right operand that
# makes it the left one); -1 stands for all ones
_IDENTITY = {
    "add": (0, 0),      # 0 + x => x, x + 0 => x
    "sub": (None, 0),   # x - 0 => x
    "mul": (1, 1),      # 1 * x => x, x * 1 => x
    "or": (0, 0),
    "xor": (0, 0),
    "and": (-1, -1),    # ~0 & x => x
    "udiv": (None, 1),  # x / 1 => x
    "shl": (None, 0),   # x << 0 => x
    "lshr": (None, 0),
}

# op -> (left constant, right constant, result): an operand equal to that constant makes the result constant
_ABSORBING = {
    "mul": (0, 0, 0),       # 0 * x => 0, x * 0 => 0
    "and": (0, 0, 0),       # 0 & x => 0
    "urem": (None, 1, 0),   # x % 1 => 0
}

_ICMP = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _int_constant(v: ir.Value) -> int | None:
    """The value of an integer scalar constant (signed), or None."""
    if type(v) is ir.Constant and type(v.type) is ir.IntType:
        c = v.constant
        if type(c) is int:
            return _signed(c, v.type.width)
        if type(c) is bool:
            return int(c)
    return None


def _same(c: int | None, pattern: int | None, width: int) -> bool:
    return c is not None and pattern is not None and _unsigned(c, width) == _unsigned(pattern, width)


def fold(op: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value | None:
    """`lhs op rhs` without an instruction (a constant, or one of the operands), or None."""
    ty = lhs.type
    if type(ty) is not ir.IntType or rhs.type != ty:
        return None
    a, b = _int_constant(lhs), _int_constant(rhs)
    if a is None and b is None:
        return None
    w = ty.width
    if a is not None and b is not None:
        r = _CONSTANT[op](a, b, w)
        return None if r is None else ir.Constant(ty, _signed(r, w) if w > 1 else _unsigned(r, w))
    left, right = _IDENTITY.get(op, (None, None))
    if _same(a, left, w):
        return rhs
    if _same(b, right, w):
        return lhs
    absorbing = _ABSORBING.get(op)
    if absorbing is not None and (_same(a, absorbing[0], w) or _same(b, absorbing[1], w)):
        return ir.Constant(ty, absorbing[2])
    return None


def _binary(op: str):
    make = getattr(ir.IRBuilder, _METHOD[op])

    def method(self, lhs, rhs, name="", flags=()):
        if type(lhs) is ir.Constant or type(rhs) is ir.Constant:
            v = fold(op, lhs, rhs)
            if v is not None:
                return v
        key = self._reuse_key(op, lhs, rhs, flags) if type(lhs.type) is ir.IntType else None
        if key is not None:
            hit = self._reuse_table.get(key)
            if hit is not None:
                return hit[-1]
        inst = make(self, lhs, rhs, name, flags)
        if key is not None:
            self._remember(key, lhs, rhs, inst)
        return inst
    method.__name__ = _METHOD[op]
    return method


_METHOD = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor", "udiv": "udiv",
           "urem": "urem", "shl": "shl", "lshr": "lshr"}


def _compare(signed: bool):
    make = ir.IRBuilder.icmp_signed if signed else ir.IRBuilder.icmp_unsigned

    def method(self, cmpop, lhs, rhs, name=""):
        a, b = _int_constant(lhs), _int_constant(rhs)
        # (signed, i1's 1 is -1: not folded)
        if a is not None and b is not None and cmpop in _ICMP and not (signed and lhs.type.width == 1):
            w = lhs.type.width
            a, b = (a, b) if signed else (_unsigned(a, w), _unsigned(b, w))
            return ir.Constant(ir.IntType(1), int(_ICMP[cmpop](a, b)))
        key = self._reuse_key(("icmp s" if signed else "icmp u") + cmpop, lhs, rhs, ()) \
            if type(lhs.type) is ir.IntType else None
        if key is not None:
            hit = self._reuse_table.get(key)
            if hit is not None:
                return hit[-1]
        inst = make(self, cmpop, lhs, rhs, name)
        if key is not None:
            self._remember(key, lhs, rhs, inst)
        return inst
    method.__name__ = make.__name__
    return method


class FoldingBuilder(ir.IRBuilder):
    """ir.IRBuilder with integer constants folded and integer instructions reused within a block (see the module
    doc). Its one piece of state (the reuse table) is made on first use, so an ir.IRBuilder can become one in
    place (`adopt`) and keep its position."""

    add = _binary("add")
    sub = _binary("sub")
    mul = _binary("mul")
    and_ = _binary("and")
    or_ = _binary("or")
    xor = _binary("xor")
    udiv = _binary("udiv")
    urem = _binary("urem")
    shl = _binary("shl")
    lshr = _binary("lshr")
    icmp_signed = _compare(True)
    icmp_unsigned = _compare(False)

    def select(self, cond, lhs, rhs, name="", flags=()):
        c = _int_constant(cond)
        if c is not None and cond.type.width == 1:
            return lhs if c else rhs
        return super().select(cond, lhs, rhs, name, flags)

    @property
    def _reuse_table(self) -> dict:
        """(id(block), op, operand keys, flags) -> (block, lhs, rhs, instruction). An entry holds the objects its
        key names by id, so no other object can take those ids while it exists."""
        table = self.__dict__.get("_xlapy_reuse")
        if table is None:
            table = self.__dict__["_xlapy_reuse"] = {}
        return table

    def _reuse_key(self, op: str, lhs, rhs, flags) -> tuple | None:
        """The reuse table's key for `lhs op rhs` appended here; None when nothing may be reused: not appending
        at the block's end (before its terminator at most), where an instruction made earlier in the block
        might not precede the use."""
        block = self._block
        instructions = block.instructions
        if self._anchor != len(instructions) and not (
                self._anchor == len(instructions) - 1 and instructions[-1] is block.terminator):
            return None
        return (id(block), op, _operand_key(lhs), _operand_key(rhs), tuple(flags) if flags else ())

    def _remember(self, key: tuple, lhs, rhs, inst) -> None:
        self._reuse_table[key] = (self._block, lhs, rhs, inst)


def _operand_key(v: ir.Value):
    """What identifies an operand: an integer constant its width and value, any other value itself (by id)."""
    if type(v) is ir.Constant:
        return (v.type.width, v.constant)
    return id(v)


def adopt(builder: ir.IRBuilder) -> ir.IRBuilder:
    """`builder`, folding from now on: a plain ir.IRBuilder becomes a FoldingBuilder in place (its position and
    its owner's reference are kept); any other class is left as it is."""
    if type(builder) is ir.IRBuilder:
        builder.__class__ = FoldingBuilder
    return builder
