"""Building blocks of the branch-free math approximations (math_approx.py): an `Emit` that does arithmetic on one
float type -- f32 or f64, scalar or `ir.VectorType` -- with constants splatted to that type, and the exact
constants (ln 2, pi, the bits of 2/pi) derived here with `decimal` rather than typed in.

Only arithmetic (llvm.fmuladd included), comparisons, selects, bitcasts and integer ops are emitted: no calls
and no branches, so a loop holding them is vectorized by LLVM. Nothing relies on fast-math flags; the
round-to-integer trick (x + 1.5*2^m) - 1.5*2^m is only correct because LLVM may not reassociate it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, getcontext, localcontext
from fractions import Fraction

from llvmlite import ir


@dataclass(frozen=True)
class FloatFormat:
    name: str
    bits: int
    mant: int          # stored mantissa bits
    bias: int

    @property
    def scalar(self) -> ir.Type:
        return ir.DoubleType() if self.bits == 64 else ir.FloatType()

    @property
    def int_scalar(self) -> ir.IntType:
        return ir.IntType(self.bits)

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    @property
    def round_magic(self) -> float:
        """x + M - M rounds x to the nearest integer (ties to even) for |x| < 2^(mant-1)."""
        return 1.5 * 2.0 ** self.mant


F32_FORMAT = FloatFormat("f32", 32, 23, 127)
F64_FORMAT = FloatFormat("f64", 64, 52, 1023)


def format_of(ty: ir.Type) -> FloatFormat:
    elem = ty.element if isinstance(ty, ir.VectorType) else ty
    if isinstance(elem, ir.DoubleType):
        return F64_FORMAT
    if isinstance(elem, ir.FloatType):
        return F32_FORMAT
    raise TypeError(f"math_approx: expected a float or double (vector) value, got {ty}")


# -- exact constants -----------------------------------------------------------------------------------
def _atan_inverse(n: int) -> Decimal:
    """atan(1/n) by its Taylor series, at the current decimal precision."""
    x, x2, total, k, sign = Decimal(1) / n, Decimal(n * n), Decimal(0), 1, 1
    term = x
    tiny = Decimal(10) ** -(getcontext().prec + 5)      # far below half an ulp of the sum: adds nothing
    while term > tiny:      # (`while term` would run until the exponent underflows: ~700k terms, seconds)
        total += sign * term / k
        term /= x2
        k += 2
        sign = -sign
    return total


with localcontext() as _ctx:
    _ctx.prec = 120
    PI = 16 * _atan_inverse(5) - 4 * _atan_inverse(239)      # Machin
    LN2 = Decimal(2).ln()
    TWO_OVER_PI = 2 / PI


def split(value: Decimal, keep_bits: int) -> tuple[float, float]:
    """value = hi + lo with hi holding only `keep_bits` significant bits, so n * hi is exact for small n."""
    approx = float(value)
    exponent = math.frexp(approx)[1]
    scale = 2.0 ** (keep_bits - exponent)
    hi = math.floor(approx * scale) / scale
    with localcontext() as ctx:
        ctx.prec = 60
        lo = float(value - Decimal(hi))
    return hi, lo


def two_over_pi_chunks(count: int, width: int = 24) -> list[float]:
    """2/pi = sum_k chunk[k] * 2^(-width*(k+1)), each chunk a `width`-bit integer (as a float)."""
    with localcontext() as ctx:
        ctx.prec = 120
        bits = int(TWO_OVER_PI * (Decimal(2) ** (width * count)))
    mask = (1 << width) - 1
    return [float((bits >> (width * (count - 1 - k))) & mask) for k in range(count)]


def taylor(kind: str, degree: int) -> list[float]:
    """Taylor coefficients (lowest power first) of exp, sin or cos, as exact rationals rounded once."""
    out = []
    for k in range(degree + 1):
        c = Fraction(1, math.factorial(k))
        if kind == "sin":
            c = c * (-1) ** (k // 2) if k % 2 else Fraction(0)
        elif kind == "cos":
            c = c * (-1) ** (k // 2) if k % 2 == 0 else Fraction(0)
        out.append(float(c))
    return out


# -- the emitter -----------------------------------------------------------------------------------------
class Emit:
    """Arithmetic on one float type (scalar or vector) and the integer type of the same width and lane count."""

    def __init__(self, b: ir.IRBuilder, fmt: FloatFormat, lanes: int | None = None):
        self.b, self.fmt, self.lanes = b, fmt, lanes
        self.fty = ir.VectorType(fmt.scalar, lanes) if lanes else fmt.scalar
        self.ity = ir.VectorType(fmt.int_scalar, lanes) if lanes else fmt.int_scalar
        self.bty = ir.VectorType(ir.IntType(1), lanes) if lanes else ir.IntType(1)

    @classmethod
    def of(cls, b: ir.IRBuilder, value: ir.Value) -> "Emit":
        lanes = value.type.count if isinstance(value.type, ir.VectorType) else None
        return cls(b, format_of(value.type), lanes)

    def other(self, fmt: FloatFormat) -> "Emit":
        return Emit(self.b, fmt, self.lanes)

    # constants
    def _splat(self, ty: ir.Type, value) -> ir.Constant:
        return ir.Constant(ty, [value] * self.lanes) if self.lanes else ir.Constant(ty, value)

    def f(self, value: float) -> ir.Constant:
        return self._splat(self.fty, float(value))

    def i(self, value: int) -> ir.Constant:
        bits = self.fmt.bits
        value &= (1 << bits) - 1
        return self._splat(self.ity, value - (1 << bits) if value >> (bits - 1) else value)

    def int_type(self, width: int) -> ir.Type:
        return ir.VectorType(ir.IntType(width), self.lanes) if self.lanes else ir.IntType(width)

    # arithmetic (IEEE, no flags)
    def add(self, x, y):
        return self.b.fadd(x, y)

    def sub(self, x, y):
        return self.b.fsub(x, y)

    def mul(self, x, y):
        return self.b.fmul(x, y)

    def div(self, x, y):
        return self.b.fdiv(x, y)

    def neg(self, x):
        return self.b.fneg(x)

    def muladd(self, x, y, z):
        """x * y + z, fused where the target has a fast FMA (llvm.fmuladd): one rounding instead of two, so
        the polynomial is at least as accurate, and half the instructions."""
        elem = "f64" if self.fmt.bits == 64 else "f32"
        suffix = f"v{self.lanes}{elem}" if self.lanes else elem
        module = self.b.module
        name = f"llvm.fmuladd.{suffix}"
        fn = module.globals.get(name)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(self.fty, [self.fty] * 3), name)
        return self.b.call(fn, [x, y, z])

    def poly(self, x, coeffs) -> ir.Value:
        """sum coeffs[k] * x^k by Horner's rule (coefficients lowest power first), one muladd per step."""
        acc = self.f(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.muladd(acc, x, self.f(c))
        return acc

    # comparisons and selects
    def cmp(self, op: str, x, y):
        """Ordered comparison: false when either side is NaN."""
        return self.b.fcmp_ordered(op, x, y)

    def is_nan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def sel(self, cond, x, y):
        return self.b.select(cond, x, y)

    def clamp_passing_nan(self, x, lo: float, hi: float):
        """x limited to [lo, hi]; NaN passes through (every compare with it is false)."""
        x = self.sel(self.cmp("<", x, self.f(lo)), self.f(lo), x)
        return self.sel(self.cmp(">", x, self.f(hi)), self.f(hi), x)

    def clamp(self, x, lo: float, hi: float):
        """x limited to [lo, hi]; NaN becomes lo, so no NaN reaches integer conversions (callers select NaN back)."""
        x = self.sel(self.cmp(">=", x, self.f(lo)), x, self.f(lo))
        return self.sel(self.cmp("<=", x, self.f(hi)), x, self.f(hi))

    # bits
    def bits(self, x):
        return self.b.bitcast(x, self.ity)

    def from_bits(self, n):
        return self.b.bitcast(n, self.fty)

    def abs(self, x):
        return self.from_bits(self.b.and_(self.bits(x), self.i((1 << (self.fmt.bits - 1)) - 1)))

    def copysign(self, magnitude, sign):
        sign_bit = self.b.and_(self.bits(sign), self.i(1 << (self.fmt.bits - 1)))
        return self.from_bits(self.b.or_(self.bits(self.abs(magnitude)), sign_bit))

    def round_int(self, x) -> tuple[ir.Value, ir.Value]:
        """(nearest integer as a float, the same as an int of the float's width) for |x| < 2^(mant-1)."""
        magic = self.f(self.fmt.round_magic)
        t = self.add(x, magic)
        return self.sub(t, magic), self.b.sub(self.bits(t), self.bits(magic))

    def pow2(self, k):
        """2^k for an int k (the float's width) in the normal exponent range."""
        return self.from_bits(self.b.shl(self.b.add(k, self.i(self.fmt.bias)), self.i(self.fmt.mant)))

    def scale(self, x, n):
        """x * 2^n in two exact steps, so n may reach past either end of the normal exponent range."""
        half = self.b.ashr(n, self.i(1))
        return self.mul(self.mul(x, self.pow2(half)), self.pow2(self.b.sub(n, half)))

    def convert(self, x, fmt: FloatFormat):
        """x converted to the other float format (same lanes)."""
        target = self.other(fmt).fty
        if fmt.bits > self.fmt.bits:
            return self.b.fpext(x, target)
        if fmt.bits < self.fmt.bits:
            return self.b.fptrunc(x, target)
        return x
