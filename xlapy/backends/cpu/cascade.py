"""Pairwise addition of a stream of f64 values in one fixed tree (a binary counter): how an f64 sum combines its
leaf sums, which have no wider type to be added in (blocked_sum.py, column_reduce.py).

    push value number k (k = 0, 1, ...):   v = value
                                           for j in range(trailing_ones(k)):  v = S[j] + v
                                           S[trailing_ones(k)] = v
    total of the first K values:           t = -0.0
                                           for j in range(bit_length(K)):  if bit j of K:  t = S[j] + t

Slot S[j] holds the sum of 2^j consecutive values, so the tree is the one the interpreter builds
(interpreter/summation.py): the values cut into groups of 2^j for the set bits of K, largest first, each group
a perfect tree of neighbours (left + right), and the groups added from the last one back. Its depth is
log2(K), where adding one at a time would chain K adds. -0.0 starts the total: t + -0 is t.

`Cascade` keeps one stream in a 64-slot stack (registers and L1); `ColumnCascade` keeps one stream per column
of a column reduction, slot j of every column in a row of scratch.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from .irhelpers import I1, alloca_once, element_pointer, for_range, i64, intrinsic

WIDE = ir.DoubleType()
_SLOTS = 64                       # enough for 2^64 values


def trailing_ones(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    """How many merges pushing value number k makes."""
    return intrinsic(b, "llvm.cttz.i64", k.type, [b.xor(k, i64(-1)), ir.Constant(I1, 0)])


def _bit(b: ir.IRBuilder, count: ir.Value, j: ir.Value) -> ir.Value:
    return b.trunc(b.and_(b.lshr(count, j), i64(1)), I1)


class Cascade:
    """One stream of f64 values, pushed in order, summed pairwise."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b
        self.slots = alloca_once(b, ir.ArrayType(WIDE, _SLOTS), "cascade")
        self.carry = alloca_once(b, WIDE, "cascade.carry")

    def _slot(self, j: ir.Value) -> ir.Value:
        return self.b.gep(self.slots, [i64(0), j], inbounds=True)

    def push(self, k: ir.Value, value: ir.Value) -> None:
        """Add value number k (counted from 0 in this stream)."""
        b = self.b
        merges = trailing_ones(b, k)
        b.store(value, self.carry)
        with for_range(b, merges, "merge") as j:
            b.store(b.fadd(b.load(self._slot(j)), b.load(self.carry)), self.carry)
        b.store(b.load(self.carry), self._slot(merges))

    def total(self, count: ir.Value) -> ir.Value:
        """The sum of the first `count` values pushed."""
        b = self.b
        levels = b.sub(i64(64), intrinsic(b, "llvm.ctlz.i64", count.type, [count, ir.Constant(I1, 0)]))
        b.store(ir.Constant(WIDE, -0.0), self.carry)
        with for_range(b, levels, "level") as j:
            t = b.load(self.carry)
            b.store(b.select(_bit(b, count, j), b.fadd(b.load(self._slot(j)), t), t), self.carry)
        return b.load(self.carry)


class ColumnCascade:
    """One stream per column: `slots` points to `levels` rows of f64, one element per column (a column's `slot`
    is its offset in a row); `each_column(name, fn)` runs fn(slot) for every column this code handles."""

    def __init__(self, b: ir.IRBuilder, slots: ir.Value, columns: int, each_column: Callable):
        self.b = b
        self.slots = slots
        self.columns = columns
        self.each_column = each_column

    def _at(self, level: ir.Value, slot: ir.Value) -> ir.Value:
        b = self.b
        return element_pointer(b, self.slots, WIDE, b.add(b.mul(level, i64(self.columns)), slot))

    def push(self, k: ir.Value, carry: Callable, set_carry: Callable) -> None:
        """Add value number k of every column: carry(slot) reads it and set_carry(slot, v) keeps a partial sum in
        the same place (the caller's row of f64 carries)."""
        b = self.b
        merges = trailing_ones(b, k)
        with for_range(b, merges, "merge") as j:
            self.each_column("cmerge", lambda slot: set_carry(slot, b.fadd(b.load(self._at(j, slot)), carry(slot))))
        self.each_column("cpush", lambda slot: b.store(carry(slot), self._at(merges, slot)))

    def total(self, count: int, carry: Callable, set_carry: Callable) -> None:
        """The sum of the first `count` values of every column, left in the carries."""
        b = self.b
        self.each_column("ctotal0", lambda slot: set_carry(slot, ir.Constant(WIDE, -0.0)))
        for j in range(count.bit_length()):
            if count >> j & 1:
                self.each_column("ctotal", lambda slot, j=j: set_carry(
                    slot, b.fadd(b.load(self._at(i64(j), slot)), carry(slot))))
