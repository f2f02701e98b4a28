"""sin, cos, tan of f32 without calls or branches, correct over the whole f32 range (math_approx.py's table).

Range reduction is Payne-Hanek done in f64: |x| = m 2^E (m a 24-bit integer), and
x 2/pi = sum_k m C_k 2^(E - 24(k+1)) with C_k the 24-bit chunks of 2/pi. Each product m C_k is exact in f64;
chunks whose term is a multiple of 4 (a whole turn) are skipped by selecting, by exponent, the four chunks
that matter (selects, not a table load, so the loop still vectorizes). The terms are reduced mod 4 exactly,
summed with a two-sum, and split into the quadrant n and a fraction f in [-1/2, 1/2]; the angle f pi/2 goes
through Taylor polynomials of sin and cos in f64, and the result is rounded once to f32 (<= 1 ulp).
"""
from __future__ import annotations

import math

from .math_approx_core import F64_FORMAT, PI, Emit, taylor, two_over_pi_chunks

_CHUNKS = two_over_pi_chunks(8)          # k0 <= 4 (E <= 104), four chunks from k0
_MAX_K0 = 4
_SIN = taylor("sin", 11)[1::2]           # odd coefficients: sin(a) = a P(a^2)
_COS = taylor("cos", 12)[0::2]
_PI_OVER_2 = float(PI / 2)


def _reduce(e: Emit, x):
    """(angle in f64 with |angle| <= pi/4 (+tiny), quadrant as i32 & 3) for |x| of an f32 x (finite)."""
    b = e.b
    d = e.other(F64_FORMAT)
    i32 = e.ity
    bits = b.and_(e.bits(x), e.i(0x7FFFFFFF))
    field = b.lshr(bits, e.i(23))
    normal = b.icmp_unsigned("!=", field, e.i(0))
    m = b.or_(b.and_(bits, e.i(0x7FFFFF)), e.sel(normal, e.i(0x800000), e.i(0)))
    E = b.sub(e.sel(normal, field, e.i(1)), e.i(150))             # |x| = m 2^E
    k0 = b.udiv(b.sub(e.sel(b.icmp_signed(">", E, e.i(2)), E, e.i(2)), e.i(2)), e.i(24))
    m64 = b.sitofp(m, d.fty)
    terms = []
    for j in range(4):
        chunk = d.f(_CHUNKS[j])
        for k in range(1, _MAX_K0 + 1):
            chunk = d.sel(b.icmp_unsigned("==", k0, e.i(k)), d.f(_CHUNKS[k + j]), chunk)
        shift = b.sub(E, b.add(b.mul(k0, e.i(24)), e.i(24 * (j + 1))))
        terms.append(d.mul(d.mul(m64, chunk), d.pow2(b.sext(shift, d.ity))))

    def mod4(v):
        whole, _ = d.round_int(d.mul(v, d.f(0.25)))
        return d.sub(v, d.mul(whole, d.f(4.0)))
    s = d.add(mod4(terms[0]), mod4(terms[1]))                    # exact: both on a 2^-46 grid, |s| <= 4
    t = d.add(s, terms[2])
    back = d.sub(t, s)
    err = d.add(d.sub(s, d.sub(t, back)), d.sub(terms[2], back))  # two-sum
    n_f, n = d.round_int(t)
    f = d.add(d.sub(t, n_f), d.add(err, terms[3]))
    quadrant = b.and_(b.trunc(n, i32), e.i(3))
    return d.mul(f, d.f(_PI_OVER_2)), quadrant


def _sin_cos(e: Emit, x):
    """(sin, cos) of the reduced angle in f64 and the quadrant."""
    d = e.other(F64_FORMAT)
    a, q = _reduce(e, e.sel(e.cmp("<", e.abs(x), e.f(math.inf)), x, e.f(0.0)))
    a2 = d.mul(a, a)
    return d.mul(a, d.poly(a2, _SIN)), d.poly(a2, _COS), q


def _pick(e: Emit, q, values):
    """values[q] for q in 0..3 by selects."""
    out = values[0]
    for k in range(1, 4):
        out = e.b.select(e.b.icmp_unsigned("==", q, e.i(k)), values[k], out)
    return out


def _finish(e: Emit, x, r64, odd: bool):
    """Round to f32, give it the sign of x for odd functions, NaN for NaN and +-inf."""
    d = e.other(F64_FORMAT)
    r = d.convert(r64, e.fmt)
    if odd:
        r = e.from_bits(e.b.xor(e.bits(r), e.b.and_(e.bits(x), e.i(0x80000000))))
    return e.sel(e.cmp("<", e.abs(x), e.f(math.inf)), r, e.sub(x, x))


def sin(e: Emit, x):
    s, c, q = _sin_cos(e, e.abs(x))
    d = e.other(F64_FORMAT)
    return _finish(e, x, _pick(e, q, [s, c, d.neg(s), d.neg(c)]), odd=True)


def cos(e: Emit, x):
    s, c, q = _sin_cos(e, e.abs(x))
    d = e.other(F64_FORMAT)
    return _finish(e, x, _pick(e, q, [c, d.neg(s), d.neg(c), s]), odd=False)


def tan(e: Emit, x):
    s, c, q = _sin_cos(e, e.abs(x))
    d = e.other(F64_FORMAT)
    even = e.b.icmp_unsigned("==", e.b.and_(q, e.i(1)), e.i(0))
    return _finish(e, x, e.b.select(even, d.div(s, c), d.neg(d.div(c, s))), odd=True)
