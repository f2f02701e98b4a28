"""Vectorizable approximations of the transcendental functions, as XLA:CPU emits them (its
polynomial_approximations.cc / math_ops.cc): inline range reduction + polynomial, no libm calls, no branches,
so LLVM's loop vectorizer turns a loop of them into SIMD code.

Each emitter takes an `ir.IRBuilder` and f32 or f64 value(s) -- scalars or `ir.VectorType`s of them -- and
returns the result of the same type. Look-up is by table:

    fn = APPROXIMATIONS.get((opcode, element_type_name))     # e.g. ("exponential", "f32")
    value = fn(builder, x)          # unary;  fn(builder, x, y) for "power"

Accuracy (max ulp over the whole range, measured by tests/backends/cpu/test_math_approx.py), special values
(NaN, +-inf, +-0 kept signed) as numpy. Results that should be denormal are computed exactly in IEEE mode and
flushed by the hardware under XLA:CPU's FTZ/DAZ.

How:
  exp      x = n ln2 + r (Cody-Waite, ln2 in two parts), Taylor in r, times 2^n in two exact steps.
  expm1    same reduction; 2^n * expm1(r) + (2^n - 1), tiny x returned as is.
  log      x = 2^k (1+f), 1+f in [sqrt(1/2), sqrt(2)); log(1+f) from s = f/(2+f) (atanh series).
  log1p    Kahan: u = 1+x; log(u) * x / (u-1).
  tanh     t = expm1(2|x|); t / (t+2) with x's sign; for f32 an expm1 without the cases tanh never reaches (|x| <= 10:
           2^n in one step, no tiny-x select), about 40% fewer instructions than the full expm1.
  logistic e = exp(-|x|); 1/(1+e) or e/(1+e).
  rsqrt    1 / sqrt(x) (llvm.sqrt is one vsqrtps/pd instruction, the one intrinsic used).
  cbrt     exponent/3 bit trick, then Halley steps in f64.
  erf      |x| < 1: x P(x^2) (Taylor); else 1 - exp(-x^2) g(x), g a Chebyshev fit of erfc(x) exp(x^2).
  f32 erf, cbrt, pow and sin/cos/tan (math_approx_trig.py) compute in f64 and round once, so they are
  within 1 ulp; pow f32 = exp(y log|x|) in f64 plus IEEE's special cases.
f64 pow and f64 sin/cos/tan are not in the table: the elemental emitter keeps libm for them (f64 pow needs a
double-double log, f64 trig a Payne-Hanek reduction over 1100 bits of 2/pi).
"""
from __future__ import annotations

import functools
import math
import struct
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Callable

import numpy as np
from llvmlite import ir

from .math_approx_core import F64_FORMAT, LN2, Emit, split, taylor

# -- constants per format ------------------------------------------------------------------------------
_LN2_SPLIT = {"f32": split(LN2, 16), "f64": split(LN2, 42)}     # n * hi exact for |n| < 2^8 / 2^11
_LOG2E = 1 / math.log(2)
_EXP_CLAMP = {"f32": (-104.0, 89.0), "f64": (-746.0, 710.0)}    # past these exp is 0 / inf
_EXP_DEGREE = {"f32": 7, "f64": 13}                             # Taylor on |r| <= ln2/2
_EXPM1_CLAMP = {"f32": (-20.0, 89.0), "f64": (-40.0, 710.0)}    # below: expm1 rounds to -1
_TANH_CLAMP = {"f32": 10.0, "f64": 22.0}                        # above: tanh rounds to 1
_LOG_TERMS = {"f32": 5, "f64": 10}                              # atanh series terms z^1 .. z^k


def _bits_of(value: float, fmt) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0] if fmt.bits == 32 else \
        struct.unpack("<Q", struct.pack("<d", value))[0]


def _finish(e: Emit, x, y):
    """NaN in, NaN out (the computation itself may have clamped NaN away)."""
    return e.sel(e.is_nan(x), x, y)


# -- exp family ------------------------------------------------------------------------------------------
def _reduce_ln2(e: Emit, x):
    """x = n ln2 + r, |r| <= ln2/2 (x finite and clamped); returns (r, n as int)."""
    hi, lo = _LN2_SPLIT[e.fmt.name]
    n_f, n = e.round_int(e.mul(x, e.f(_LOG2E)))
    r = e.muladd(n_f, e.f(-lo), e.muladd(n_f, e.f(-hi), x))    # x - n hi (exact) - n lo
    return r, n


def exp(e: Emit, x):
    # NaN flows through the clamp and the arithmetic (the integer n it yields is garbage, the product NaN), so
    # unlike the others exp needs no final NaN select
    lo, hi = _EXP_CLAMP[e.fmt.name]
    r, n = _reduce_ln2(e, e.clamp_passing_nan(x, lo, hi))
    p = e.poly(r, taylor("exp", _EXP_DEGREE[e.fmt.name]))
    return e.scale(p, n)


def expm1(e: Emit, x):
    fmt = e.fmt
    lo, hi = _EXPM1_CLAMP[fmt.name]
    r, n = _reduce_ln2(e, e.clamp(x, lo, hi))
    q = e.poly(r, taylor("exp", _EXP_DEGREE[fmt.name] + 1)[2:])     # (expm1(r) - r) / r^2
    em = e.add(r, e.mul(e.mul(r, r), q))
    big = e.b.icmp_signed(">", n, e.i(fmt.mant))
    two_n = e.pow2(e.sel(big, e.i(0), n))
    moderate = e.add(e.mul(two_n, em), e.sub(two_n, e.f(1.0)))       # exact 2^n - 1 for n <= mant
    large = e.sub(e.scale(e.add(em, e.f(1.0)), n), e.f(1.0))
    y = e.sel(big, large, moderate)
    tiny = e.cmp("<", e.abs(x), e.f(2.0 ** -(fmt.mant + 2)))           # expm1(x) rounds to x; keeps -0
    return _finish(e, x, e.sel(tiny, x, y))


def logistic(e: Emit, x):
    t = exp(e, e.neg(e.abs(x)))
    d = e.add(e.f(1.0), t)
    return e.sel(e.cmp(">=", x, e.f(0.0)), e.div(e.f(1.0), d), e.div(t, d))


def _expm1_no_tiny(e: Emit, x):
    """expm1(x) for 0 <= x <= 2 * _TANH_CLAMP (n = round(x / ln 2) <= 29): 2^n expm1(r) + (2^n - 1), one fused
    step. 2^n - 1 rounds above n = mant, by under an ulp of the result; tiny x needs no case of its own here
    (n = 0, r = x exactly, and the series gives x)."""
    r, n = _reduce_ln2(e, x)
    q = e.poly(r, taylor("exp", _EXP_DEGREE[e.fmt.name] + 1)[2:])     # (expm1(r) - r) / r^2
    two_n = e.pow2(n)
    return e.muladd(two_n, e.muladd(e.mul(r, r), q, r), e.sub(two_n, e.f(1.0)))


def tanh(e: Emit, x):
    a = e.clamp(e.abs(x), 0.0, _TANH_CLAMP[e.fmt.name])
    t = expm1(e, e.add(a, a)) if e.fmt.name != "f32" else _expm1_no_tiny(e, e.add(a, a))
    return _finish(e, x, e.copysign(e.div(t, e.add(t, e.f(2.0))), x))


# -- log family ------------------------------------------------------------------------------------------
def log(e: Emit, x):
    fmt, b = e.fmt, e.b
    sub = e.cmp("<", x, e.f(fmt.min_normal))                  # denormals: scale up first (IEEE mode)
    xs = e.sel(sub, e.mul(x, e.f(2.0 ** (fmt.mant + 2))), x)
    sqrt_half = _bits_of(math.sqrt(0.5), fmt)
    ix = b.add(e.bits(xs), e.i(_bits_of(1.0, fmt) - sqrt_half))
    k = b.sub(b.ashr(ix, e.i(fmt.mant)), e.i(fmt.bias))
    k = b.sub(k, e.sel(sub, e.i(fmt.mant + 2), e.i(0)))
    m = e.from_bits(b.add(b.and_(ix, e.i((1 << fmt.mant) - 1)), e.i(sqrt_half)))   # in [sqrt(1/2), sqrt(2))
    f = e.sub(m, e.f(1.0))
    s = e.div(f, e.add(e.f(2.0), f))
    z = e.mul(s, s)
    series = [float(Fraction(2, 2 * j + 1)) for j in range(1, _LOG_TERMS[fmt.name] + 1)]
    r = e.mul(z, e.poly(z, series))
    hfsq = e.mul(e.f(0.5), e.mul(f, f))
    hi, lo = _LN2_SPLIT[fmt.name]
    kf = b.sitofp(k, e.fty)
    y = e.add(e.mul(kf, e.f(hi)),
              e.sub(f, e.sub(hfsq, e.add(e.mul(s, e.add(hfsq, r)), e.mul(kf, e.f(lo))))))
    y = e.sel(e.cmp("==", x, e.f(math.inf)), x, y)
    y = e.sel(e.cmp("==", x, e.f(0.0)), e.f(-math.inf), y)
    y = e.sel(e.cmp("<", x, e.f(0.0)), e.f(math.nan), y)
    return _finish(e, x, y)


def log1p(e: Emit, x):
    u = e.add(e.f(1.0), x)
    lu = log(e, u)
    y = e.mul(lu, e.div(x, e.sub(u, e.f(1.0))))                 # Kahan: corrects for u's rounding
    y = e.sel(e.cmp("==", u, e.f(1.0)), x, y)                   # also keeps -0
    y = e.sel(e.cmp(">", x, e.f(2.0 ** (e.fmt.mant + 2))), lu, y)
    return _finish(e, x, y)


# -- roots -----------------------------------------------------------------------------------------------
def _sqrt(e: Emit, x):
    ty = x.type
    suffix = f"v{ty.count}{'f64' if e.fmt.bits == 64 else 'f32'}" if isinstance(ty, ir.VectorType) \
        else ("f64" if e.fmt.bits == 64 else "f32")
    module = e.b.module
    name = f"llvm.sqrt.{suffix}"
    fn = module.globals.get(name) or ir.Function(module, ir.FunctionType(ty, [ty]), name)
    return e.b.call(fn, [x])


def rsqrt(e: Emit, x):
    """1/sqrt(x); f32 (and f16/bf16, which live in f32) correctly rounded: computed in f64, rounded once. In f32 the
    square root and the division rounded twice: 77% of results correctly rounded, against XLA:CPU's 83%, and its
    error fed every normalized element of a LayerNorm (gnn/train's last of three: 1.15x XLA's rms error)."""
    if e.fmt.bits == 32:
        d = e.other(F64_FORMAT)
        return d.convert(d.div(d.f(1.0), _sqrt(d, e.convert(x, F64_FORMAT))), e.fmt)
    return e.div(e.f(1.0), _sqrt(e, x))


_CBRT_B1 = int((1023 - 1023 / 3 - 0.03306235651) * 2 ** 20)   # high word of 2^(1023 - 1023/3), tuned


def _cbrt64(d: Emit, y, steps: int):
    """cbrt(y) for finite y > 0 in f64 (d is an f64 Emit)."""
    b = d.b
    sub = d.cmp("<", y, d.f(F64_FORMAT.min_normal))             # scale into range, by powers of 2^3
    huge = d.cmp(">", y, d.f(2.0 ** 900))                       # (so 2 t^3 + y cannot overflow)
    ys = d.mul(y, d.sel(sub, d.f(2.0 ** 54), d.sel(huge, d.f(2.0 ** -903), d.f(1.0))))
    i32 = d.int_type(32)
    hi = b.trunc(b.lshr(d.bits(ys), d.i(32)), i32)
    guess_hi = b.add(b.udiv(hi, ir.Constant(i32, [3] * d.lanes) if d.lanes else ir.Constant(i32, 3)),
                     ir.Constant(i32, [_CBRT_B1] * d.lanes) if d.lanes else ir.Constant(i32, _CBRT_B1))
    t = d.from_bits(b.shl(b.zext(guess_hi, d.ity), d.i(32)))
    for _ in range(steps):                                      # Halley: cubic convergence
        t3 = d.mul(d.mul(t, t), t)
        t = d.sub(t, d.mul(t, d.div(d.sub(t3, ys), d.add(d.add(t3, t3), ys))))
    # a last Newton step whose correction (t - y/t^2)/3 loses little to rounding
    t = d.sub(t, d.mul(d.sub(t, d.div(ys, d.mul(t, t))), d.f(1 / 3)))
    return d.mul(t, d.sel(sub, d.f(2.0 ** -18), d.sel(huge, d.f(2.0 ** 301), d.f(1.0))))


def cbrt(e: Emit, x):
    d = e.other(F64_FORMAT)
    a = e.convert(e.abs(x), F64_FORMAT)
    r = e.other(F64_FORMAT).convert(_cbrt64(d, a, 3 if e.fmt.bits == 64 else 2), e.fmt)
    r = e.copysign(r, x)
    special = e.b.or_(e.cmp("==", x, e.f(0.0)), e.cmp("==", e.abs(x), e.f(math.inf)))
    return _finish(e, x, e.sel(special, x, r))


# -- erf -------------------------------------------------------------------------------------------------
def _erfcx_reference(x: float) -> float:
    """erfc(x) exp(x^2), the exponential taken in decimal from the exact x^2."""
    with localcontext() as ctx:
        ctx.prec = 40
        return float(Decimal(math.erfc(x)) * (Decimal(x) * Decimal(x)).exp())


@functools.cache
def _erfcx_fit(lo: float, hi: float, degree: int) -> tuple[float, ...]:
    """Monomial coefficients, in t = (2x - lo - hi)/(hi - lo), of a Chebyshev least-squares fit of erfc(x) e^x^2."""
    n = 8 * degree
    t = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    x = lo + (t + 1) * (hi - lo) / 2
    coeffs = np.polynomial.chebyshev.chebfit(t, [_erfcx_reference(v) for v in x], degree)
    return tuple(float(c) for c in np.polynomial.chebyshev.cheb2poly(coeffs))


# f32 (computed in f64): one piece on [1, 4]; f64: [1, 2.5] and [2.5, 6]. (lo, hi, degree)
_ERFC_PIECES = {"f32": [(1.0, 4.0, 14)], "f64": [(1.0, 2.5, 18), (2.5, 6.0, 20)]}
_ERF_TAYLOR_TERMS = {"f32": 13, "f64": 20}                  # x P(x^2) on |x| < 1


def _erf64(d: Emit, a, fmt_name: str):
    """erf(a) for 0 <= a (finite) in f64."""
    u = d.mul(a, a)
    c = 2 / math.sqrt(math.pi)
    small = d.mul(a, d.poly(u, [c * (-1) ** k / (math.factorial(k) * (2 * k + 1))
                                for k in range(_ERF_TAYLOR_TERMS[fmt_name])]))
    pieces = _ERFC_PIECES[fmt_name]
    g = None
    for lo, hi, degree in pieces:
        t = d.mul(d.sub(a, d.f((lo + hi) / 2)), d.f(2 / (hi - lo)))
        value = d.poly(t, _erfcx_fit(lo, hi, degree))
        g = value if g is None else d.sel(d.cmp("<", a, d.f(lo)), g, value)
    large = d.sub(d.f(1.0), d.mul(exp(d, d.neg(u)), g))
    return d.sel(d.cmp("<", a, d.f(1.0)), small, large)


def erf(e: Emit, x):
    d = e.other(F64_FORMAT)
    top = _ERFC_PIECES[e.fmt.name][-1][1]
    a = e.convert(e.clamp(e.abs(x), 0.0, top), F64_FORMAT)
    r = d.convert(_erf64(d, a, e.fmt.name), e.fmt)
    return _finish(e, x, e.copysign(r, x))


# -- pow -------------------------------------------------------------------------------------------------
def pow_(e: Emit, x, y):
    """x^y with C99/numpy special cases; f32 only (computed in f64: exp(y log|x|) is then within 1 ulp)."""
    if e.fmt.bits != 32:
        raise NotImplementedError("math_approx: f64 pow needs a double-double log; use libm")
    b, d = e.b, e.other(F64_FORMAT)
    X, Y = e.convert(x, F64_FORMAT), e.convert(y, F64_FORMAT)
    ax, ay = d.abs(X), d.abs(Y)
    r = exp(d, d.mul(Y, log(d, ax)))
    big = d.cmp(">=", ay, d.f(2.0 ** 52))                       # every such double is an even integer
    y_round, y_int = d.round_int(d.sel(big, d.f(0.0), Y))
    is_int = b.or_(big, d.cmp("==", y_round, Y))
    is_odd = b.and_(b.and_(b.not_(big), is_int), b.trunc(y_int, d.bty))
    x_negative = b.icmp_signed("<", d.bits(X), d.i(0))           # -0 included
    r = d.sel(b.and_(x_negative, is_odd), d.neg(r), r)
    finite_negative = b.and_(d.cmp("<", X, d.f(0.0)), d.cmp(">", X, d.f(-math.inf)))
    r = d.sel(b.and_(finite_negative, b.not_(is_int)), d.f(math.nan), r)
    r = d.sel(b.and_(d.cmp("==", ax, d.f(1.0)), d.cmp("==", ay, d.f(math.inf))), d.f(1.0), r)   # (-1)^inf
    r = d.sel(b.or_(d.cmp("==", X, d.f(1.0)), d.cmp("==", Y, d.f(0.0))), d.f(1.0), r)
    return d.convert(r, e.fmt)


# -- the table -------------------------------------------------------------------------------------------
def _entry(fn: Callable) -> Callable:
    """fn(e, *xs) -> a builder-level emitter fn(builder, *xs)."""
    @functools.wraps(fn)
    def emit(b: ir.IRBuilder, *xs: ir.Value) -> ir.Value:
        return fn(Emit.of(b, xs[0]), *xs)
    return emit


def _build_table() -> dict[tuple[str, str], Callable]:
    from . import math_approx_trig as trig
    both = {"exponential": exp, "exponential-minus-one": expm1, "log": log, "log-plus-one": log1p,
            "tanh": tanh, "logistic": logistic, "rsqrt": rsqrt, "cbrt": cbrt, "erf": erf}
    f32_only = {"power": pow_, "sine": trig.sin, "cosine": trig.cos, "tan": trig.tan}
    table = {(op, ty): _entry(fn) for op, fn in both.items() for ty in ("f32", "f64")}
    table.update({(op, "f32"): _entry(fn) for op, fn in f32_only.items()})
    return table


# (HLO opcode, element type) -> emitter(builder, *operands) -> value; absent pairs keep libm.
APPROXIMATIONS: dict[tuple[str, str], Callable[..., ir.Value]] = _build_table()
