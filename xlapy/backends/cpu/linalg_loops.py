"""The linear-algebra emitters' own loops: Cholesky and triangular substitution on one row-major matrix, for
the matrices too small to be worth a LAPACK call and for builds without LAPACK (XLAPY_BLAS=none, AOT objects
compiled without BLAS). Their results are the interpreter's (backends/interpreter/decompositions.py), to
rounding; the LAPACK path (linalg_emitter.py) is checked against them.

Elements are the compute type in memory (float, double, or a {float, float} / {double, double} struct), read
and written through a `Field`, so one loop nest serves real and complex types. Indices are i64 values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from .irhelpers import I1, alloca_once, for_range, i64
from .scalar_complex import BINARY as COMPLEX_BINARY
from .types import call_math, ptype, storage_type

Index = Callable[[ir.Value, ir.Value], ir.Value]       # (row, column) -> element offset


@dataclass(frozen=True)
class Field:
    """Scalar arithmetic on one compute type ("f32", "f64", "c64", "c128")."""
    b: ir.IRBuilder
    name: str

    @property
    def complex(self) -> bool:
        return self.name in ("c64", "c128")

    @property
    def elem(self) -> ir.Type:
        return storage_type(self.name)

    @property
    def part(self) -> ir.Type:
        return self.elem.elements[0] if self.complex else self.elem

    def pointer(self, base: ir.Value, offset: ir.Value) -> ir.Value:
        return self.b.gep(self.b.bitcast(base, self.elem.as_pointer()), [offset], inbounds=True)

    def load(self, base: ir.Value, offset: ir.Value) -> ir.Value:
        return self.b.load(self.pointer(base, offset))

    def store(self, base: ir.Value, offset: ir.Value, value: ir.Value) -> None:
        self.b.store(value, self.pointer(base, offset))

    def constant(self, re: float, im: float = 0.0) -> ir.Constant:
        if self.complex:
            return ir.Constant(self.elem, [ir.Constant(self.part, re), ir.Constant(self.part, im)])
        return ir.Constant(self.elem, re)

    def make(self, re: ir.Value, im: ir.Value) -> ir.Value:
        z = ir.Constant(self.elem, ir.Undefined)
        return self.b.insert_value(self.b.insert_value(z, re, 0), im, 1)

    def real(self, x: ir.Value) -> ir.Value:
        return self.b.extract_value(x, 0) if self.complex else x

    def imag(self, x: ir.Value) -> ir.Value:
        return self.b.extract_value(x, 1) if self.complex else ir.Constant(self.part, 0.0)

    def conj(self, x: ir.Value) -> ir.Value:
        return self.make(self.real(x), self.b.fneg(self.imag(x))) if self.complex else x

    def sub(self, x: ir.Value, y: ir.Value) -> ir.Value:
        if self.complex:
            return COMPLEX_BINARY["subtract"](self.b, ptype(self.name), x, y)
        return self.b.fsub(x, y)

    def mul(self, x: ir.Value, y: ir.Value) -> ir.Value:
        if self.complex:
            return COMPLEX_BINARY["multiply"](self.b, ptype(self.name), x, y)
        return self.b.fmul(x, y)

    def div(self, x: ir.Value, y: ir.Value) -> ir.Value:
        if self.complex:
            return COMPLEX_BINARY["divide"](self.b, ptype(self.name), x, y)
        return self.b.fdiv(x, y)

    def div_real(self, x: ir.Value, r: ir.Value) -> ir.Value:
        if self.complex:
            return self.make(self.b.fdiv(self.real(x), r), self.b.fdiv(self.imag(x), r))
        return self.b.fdiv(x, r)

    def abs2(self, x: ir.Value) -> ir.Value:
        re = self.real(x)
        if not self.complex:
            return self.b.fmul(re, re)
        im = self.imag(x)
        return self.b.fadd(self.b.fmul(re, re), self.b.fmul(im, im))


def _accumulate(f: Field, initial: ir.Value) -> ir.AllocaInstr:
    """A stack slot for a running value (mem2reg turns it into a register)."""
    slot = alloca_once(f.b, initial.type)
    f.b.store(initial, slot)
    return slot


def cholesky(f: Field, base: ir.Value, n: int, at: Index) -> ir.Value:
    """Factor the n x n matrix at `base` in place, column by column (Cholesky-Crout): L(i, j) lives at offset
    at(i, j) and holds A's lower triangle on entry; the strict upper triangle of L is zeroed. Returns an i1:
    some pivot was not > 0 (or NaN), so the caller fills the matrix with NaN. The diagonal is XLA's:
    p / sqrt(real(p)) for the pivot p, which keeps an imaginary part of A's diagonal."""
    b = f.b
    failed = _accumulate(f, ir.Constant(I1, 0))
    zero = f.constant(0.0)
    with for_range(b, n, "chol.j") as j:
        pivot = _accumulate(f, f.load(base, at(j, j)))
        with for_range(b, j, "chol.k") as k:
            x = f.load(base, at(j, k))
            p = b.load(pivot)
            b.store(f.make(b.fsub(f.real(p), f.abs2(x)), f.imag(p)) if f.complex else b.fsub(p, f.abs2(x)), pivot)
        p = b.load(pivot)
        positive = b.fcmp_ordered(">", f.real(p), ir.Constant(f.part, 0.0))
        b.store(b.or_(b.load(failed), b.not_(positive)), failed)
        root = call_math(b, "sqrt", f.real(p))
        f.store(base, at(j, j), f.div_real(p, root) if f.complex else root)
        with for_range(b, n, "chol.i", start=b.add(j, i64(1))) as i:
            acc = _accumulate(f, f.load(base, at(i, j)))
            with for_range(b, j, "chol.k2") as k:
                b.store(f.sub(b.load(acc), f.mul(f.load(base, at(i, k)), f.conj(f.load(base, at(j, k))))), acc)
            f.store(base, at(i, j), f.div_real(b.load(acc), root))
        with for_range(b, j, "chol.zero") as i:
            f.store(base, at(i, j), zero)
    return b.load(failed)


def fill(f: Field, base: ir.Value, count: int, value: ir.Value) -> None:
    with for_range(f.b, count, "fill") as i:
        f.store(base, i, value)


def zero_triangle(f: Field, base: ir.Value, n: int, at: Index) -> None:
    """Zero L(i, j) for i < j (the strict upper triangle in `at`'s terms)."""
    b = f.b
    zero = f.constant(0.0)
    with for_range(b, n, "tri.j") as j:
        with for_range(b, j, "tri.i") as i:
            f.store(base, at(i, j), zero)


@dataclass(frozen=True)
class Substitution:
    """E x = y for an m x m triangular E, solved in place in x (which holds y on entry) for `columns` right-hand
    sides: E(i, k) is `e(i, k)`, X(i, c) lives at offset x_at(i, c); forward for a lower E, backward for an
    upper one; unit: E's diagonal is taken as ones and not read."""
    m: int
    columns: int
    e: Callable[[ir.Value, ir.Value], ir.Value]
    x_at: Index
    forward: bool
    unit: bool


def substitute(f: Field, x: ir.Value, s: Substitution) -> None:
    b = f.b
    with for_range(b, s.m, "trsm.step") as step:
        i = step if s.forward else b.sub(i64(s.m - 1), step)
        start, stop = (i64(0), i) if s.forward else (b.add(i, i64(1)), i64(s.m))
        with for_range(b, stop, "trsm.k", start=start) as k:
            e = s.e(i, k)
            with for_range(b, s.columns, "trsm.c") as c:
                xi = s.x_at(i, c)
                f.store(x, xi, f.sub(f.load(x, xi), f.mul(e, f.load(x, s.x_at(k, c)))))
        if not s.unit:
            d = s.e(i, i)
            with for_range(b, s.columns, "trsm.d") as c:
                xi = s.x_at(i, c)
                f.store(x, xi, f.div(f.load(x, xi), d))


__all__ = ["Field", "cholesky", "fill", "zero_triangle", "Substitution", "substitute"]
