"""Transcendental functions of complex numbers (c64 / c128) for the CPU backend: sine, cosine, tan, tanh,
exponential-minus-one, log-plus-one, rsqrt, cbrt, logistic, power and atan2.

Rules have scalar_ops' shape `fn(b, pt, *xs)` and are registered under the "complex" family beside
scalar_complex's. The special values (infinities, NaNs, signed zeros) are C99 Annex G's, as numpy's complex
functions (the interpreter's definition) give them: csinh / ccosh / ctanh follow the FreeBSD msun algorithms
numpy's C library implements, and sin / cos / tan are those of i z (sin z = -i sinh(i z), cos z = cosh(i z),
tan z = -i tanh(i z)). Every case is a `select`, never a branch, so the loops stay vectorizable.

sinh x, cosh x and e^|x| come from one expm1 (glibc's formulas), tan y is sin y / cos y: sin, cos, tan and tanh
cost four or fewer library calls per element. Large arguments: cosh and sinh of |x| beyond the parts' overflow
threshold are exp(|x|/2)^2/2 with the cos/sin factor applied before the second exp(|x|/2), so sinh(800 + 1i)
is finite where exp(800) is not (XLA does the same); tanh beyond |x| = 22 (f64) / 9 (f32) is sign(x) +
4 sin y cos y e^(-2|x|) i.

Where numpy's formula loses precision and the result's definition does not depend on it, the accurate form is
used: log1p's real part is log1p(x (2 + x) + y^2) / 2 while that argument is small (numpy's log(hypot(1 + x, y))
cancels for |z| << 1). expm1 is numpy's expm1(x) cos(y) - 2 sin(y/2)^2 + e^x sin(y) i. rsqrt is 1 / sqrt(z),
and power is exp(y log x) with numpy's special cases (x == 1 or y == 0: 1; x == 0: 0 for a positive real y,
else NaN); atan2(y, x) = -i log((x + i y) / sqrt(x^2 + y^2)) as in XLA's elemental emitter.
"""
from __future__ import annotations

from llvmlite import ir

from .scalar_complex import exp_times, make, parts, UNARY as BASIC_UNARY, BINARY as BASIC_BINARY
from .types import call_libm, call_math

# |x| from which tanh(x + iy)'s real part is sign(x) in the part's precision (FreeBSD's thresholds).
_TANH_SATURATES = {64: 22.0, 32: 9.0}
# |x| from which cosh(x) / sinh(x) are computed as exp(|x|/2)^2 / 2 (where exp(|x|) alone may overflow).
_EXP_SCALED = {64: 700.0, 32: 85.0}


def _c(ty: ir.Type, v: float) -> ir.Constant:
    return ir.Constant(ty, v)


def _bits(ty: ir.Type) -> int:
    return 64 if isinstance(ty, ir.DoubleType) else 32


def _is_nan(b, x):
    return b.fcmp_unordered("uno", x, x)


def _is_finite(b, x):
    return b.fcmp_ordered("<", call_math(b, "fabs", x), _c(x.type, float("inf")))


def _is_zero(b, x):
    return b.fcmp_ordered("==", x, _c(x.type, 0.0))


def _cases(b, default: tuple, *cases: tuple) -> tuple:
    """(re, im) of the first case whose condition holds, else `default`: cases are (condition, (re, im))."""
    re, im = default
    for cond, (r, i) in reversed(cases):
        re, im = b.select(cond, r, re), b.select(cond, i, im)
    return re, im


def _nan_of(b, y):
    return b.fsub(y, y)          # NaN for y = inf or NaN (FreeBSD's y - y)


def _sinh_cosh_exp(b, x) -> tuple:
    """(sinh x, cosh x, e^|x|) from one expm1 (glibc's formulas), for |x| below the saturation threshold:
    t = expm1(|x|), w = t + 1; sinh|x| = (2t - t^2 / w) / 2 below 1, else (t + t / w) / 2; cosh x =
    1 + t^2 / 2w below ln 2 / 2, else (w + 1 / w) / 2."""
    ty = x.type
    ax = call_math(b, "fabs", x)
    t = call_libm(b, "expm1", ax)
    w = b.fadd(t, _c(ty, 1.0))
    t2w = b.fdiv(b.fmul(t, t), w)
    half = _c(ty, 0.5)
    sh = b.select(b.fcmp_ordered("<", ax, _c(ty, 1.0)), b.fmul(half, b.fsub(b.fadd(t, t), t2w)),
                  b.fmul(half, b.fadd(t, b.fdiv(t, w))))
    ch = b.select(b.fcmp_ordered("<", ax, _c(ty, 0.34657359027997264)), b.fadd(_c(ty, 1.0), b.fmul(half, t2w)),
                  b.fmul(half, b.fadd(w, b.fdiv(_c(ty, 1.0), w))))
    return call_math(b, "copysign", sh, x), ch, w


def _big_cosh_parts(b, ax, w, f1, f2):
    """(e^ax / 2) f1 and (e^ax / 2) f2 for ax >= 0 (w = e^ax), finite where the products are representable:
    e^(ax / 2) twice once w may overflow."""
    ty = ax.type
    scaled = b.fcmp_ordered(">=", ax, _c(ty, _EXP_SCALED[_bits(ty)]))
    h = call_math(b, "exp", b.fmul(ax, _c(ty, 0.5)))
    half_h = b.fmul(h, _c(ty, 0.5))
    full = b.fmul(w, _c(ty, 0.5))
    p1 = b.select(scaled, b.fmul(b.fmul(half_h, f1), h), b.fmul(full, f1))
    p2 = b.select(scaled, b.fmul(b.fmul(half_h, f2), h), b.fmul(full, f2))
    return p1, p2


def _finite_parts(b, x, cos_y, sin_y, cosh_first: bool) -> tuple:
    """(cosh x cos y, sinh x sin y) when cosh_first, else (sinh x cos y, cosh x sin y), for finite x and y."""
    ty = x.type
    ax = call_math(b, "fabs", x)
    sh, ch, w = _sinh_cosh_exp(b, x)
    small = b.fcmp_ordered("<", ax, _c(ty, _TANH_SATURATES[_bits(ty)]))
    big_c, big_s = _big_cosh_parts(b, ax, w, cos_y, sin_y)        # (e^|x| / 2) cos y, (e^|x| / 2) sin y
    sign_x = call_math(b, "copysign", _c(ty, 1.0), x)
    if cosh_first:
        return (b.select(small, b.fmul(ch, cos_y), big_c), b.select(small, b.fmul(sh, sin_y), b.fmul(big_s, sign_x)))
    return (b.select(small, b.fmul(sh, cos_y), b.fmul(big_c, sign_x)), b.select(small, b.fmul(ch, sin_y), big_s))


def csinh(b, x, y) -> tuple:
    """sinh(x + iy) = sinh x cos y + i cosh x sin y, with C99's special values."""
    ty = x.type
    inf = _c(ty, float("inf"))
    cos_y, sin_y = call_math(b, "cos", y), call_math(b, "sin", y)
    ax = call_math(b, "fabs", x)
    finite = _finite_parts(b, x, cos_y, sin_y, cosh_first=False)
    x_fin, y_fin = _is_finite(b, x), _is_finite(b, y)
    x_inf = b.fcmp_ordered("==", ax, inf)
    y_zero = _is_zero(b, y)
    return _cases(
        b, (_nan_of(b, x), _nan_of(b, x)),                                      # x NaN, y != 0
        (b.and_(b.and_(x_fin, y_fin), y_zero), (finite[0], y)),                 # sinh x + i y (cos 0 = 1)
        (b.and_(x_fin, y_fin), finite),
        (b.and_(_is_zero(b, x), b.not_(y_fin)), (x, _nan_of(b, y))),
        (y_zero, (x, y)),                                                       # x inf or NaN
        (x_fin, (_nan_of(b, y), _nan_of(b, y))),                                # x finite != 0, y inf/NaN
        (b.and_(x_inf, b.not_(y_fin)), (ax, _nan_of(b, y))),                    # glibc's +inf + i NaN
        (x_inf, (b.fmul(x, cos_y), b.fmul(inf, sin_y))))


def ccosh(b, x, y) -> tuple:
    """cosh(x + iy) = cosh x cos y + i sinh x sin y, with C99's special values."""
    ty = x.type
    inf, zero = _c(ty, float("inf")), _c(ty, 0.0)
    cos_y, sin_y = call_math(b, "cos", y), call_math(b, "sin", y)
    ax = call_math(b, "fabs", x)
    finite = _finite_parts(b, x, cos_y, sin_y, cosh_first=True)
    x_fin, y_fin = _is_finite(b, x), _is_finite(b, y)
    x_inf = b.fcmp_ordered("==", ax, inf)
    y_zero = _is_zero(b, y)
    return _cases(
        b, (_nan_of(b, x), _nan_of(b, x)),                                      # x NaN, y != 0
        (b.and_(b.and_(x_fin, y_fin), y_zero), (finite[0], b.fmul(x, y))),     # cosh x + i x y
        (b.and_(x_fin, y_fin), finite),
        (b.and_(_is_zero(b, x), b.not_(y_fin)), (_nan_of(b, y), b.fmul(x, call_math(b, "copysign", zero, y)))),
        (y_zero, (b.fmul(x, x), b.fmul(call_math(b, "copysign", zero, x), y))),  # x inf or NaN
        (x_fin, (_nan_of(b, y), _nan_of(b, y))),                                # x finite != 0, y inf/NaN
        (b.and_(x_inf, b.not_(y_fin)), (b.fmul(x, x), b.fmul(x, _nan_of(b, y)))),
        (x_inf, (b.fmul(inf, cos_y), b.fmul(x, sin_y))))


def ctanh(b, x, y) -> tuple:
    """tanh(x + iy) by Kahan's formula (t = tan y, s = sinh x): ((1 + t^2) s cosh x + i t) / (1 + (1 + t^2) s^2)."""
    ty = x.type
    one, zero, four = _c(ty, 1.0), _c(ty, 0.0), _c(ty, 4.0)
    ax = call_math(b, "fabs", x)
    sin_y, cos_y = call_math(b, "sin", y), call_math(b, "cos", y)
    t = b.fdiv(sin_y, cos_y)
    beta = b.fadd(one, b.fmul(t, t))
    s, _, w = _sinh_cosh_exp(b, x)
    rho = call_math(b, "sqrt", b.fadd(one, b.fmul(s, s)))
    denom = b.fadd(one, b.fmul(beta, b.fmul(s, s)))
    general = (b.fdiv(b.fmul(b.fmul(beta, rho), s), denom), b.fdiv(t, denom))
    e = b.fdiv(one, w)                                                  # e^-|x|
    saturated = (call_math(b, "copysign", one, x), b.fmul(b.fmul(b.fmul(four, b.fmul(sin_y, cos_y)), e), e))
    x_nan = _is_nan(b, x)
    x_inf = b.fcmp_ordered("==", ax, _c(ty, float("inf")))
    y_inf = b.fcmp_ordered("==", call_math(b, "fabs", y), _c(ty, float("inf")))
    sign_im = b.select(y_inf, y, b.fmul(sin_y, cos_y))
    nan_xy = b.fmul(x, y)
    return _cases(
        b, general,
        (x_nan, (x, b.select(_is_zero(b, y), y, nan_xy))),
        (x_inf, (call_math(b, "copysign", one, x), call_math(b, "copysign", zero, sign_im))),
        (b.and_(_is_zero(b, x), b.not_(_is_finite(b, y))), (x, _nan_of(b, y))),  # C2x's tanh(0 + i inf) = 0 + i NaN
        (b.not_(_is_finite(b, y)), (_nan_of(b, y), _nan_of(b, y))),
        (b.fcmp_ordered(">=", ax, _c(ty, _TANH_SATURATES[_bits(ty)])), saturated))


def _swapped(fn):
    """f(z) = swap(g(swap(z))) where swap(x + iy) = y + ix: sin from sinh, tan from tanh."""
    def rule(b, pt, z):
        x, y = parts(b, z)
        re, im = fn(b, y, x)
        return make(b, im, re)
    return rule


def _cosine(b, pt, z):
    x, y = parts(b, z)
    return make(b, *ccosh(b, b.fneg(y), x))          # cos z = cosh(i z), i z = -y + ix


def _tanh(b, pt, z):
    return make(b, *ctanh(b, *parts(b, z)))


def _expm1(b, pt, z):
    """numpy's expm1(x) cos y - 2 sin(y/2)^2 + i e^x sin y; once e^x may overflow, e^x cos y + i e^x sin y
    scaled as exp's (so e^95 sin(1e-10) is finite in f32); a zero y gives expm1(x) + i y."""
    x, y = parts(b, z)
    ty = x.type
    h = call_math(b, "sin", b.fmul(y, _c(ty, 0.5)))
    cos_y, sin_y = call_math(b, "cos", y), call_math(b, "sin", y)
    re = b.fsub(b.fmul(call_libm(b, "expm1", x), cos_y), b.fmul(_c(ty, 2.0), b.fmul(h, h)))
    big_re, im = exp_times(b, x, cos_y, sin_y)
    re = b.select(b.fcmp_ordered(">=", x, _c(ty, _EXP_SCALED[_bits(ty)])), big_re, re)
    y_zero = _is_zero(b, y)
    return make(b, b.select(y_zero, call_libm(b, "expm1", x), re), b.select(y_zero, y, im))


def _log1p(b, pt, z):
    """log|1 + z| + i atan2(y, 1 + x); the real part as log1p(x (2 + x) + y^2) / 2 while that is small."""
    x, y = parts(b, z)
    ty = x.type
    xp1 = b.fadd(x, _c(ty, 1.0))
    u = b.fadd(b.fmul(x, b.fadd(x, _c(ty, 2.0))), b.fmul(y, y))
    near = b.fcmp_ordered("<", call_math(b, "fabs", u), _c(ty, 0.5))
    re = b.select(near, b.fmul(call_libm(b, "log1p", u), _c(ty, 0.5)),
                  call_math(b, "log", call_libm(b, "hypot", xp1, y)))
    return make(b, re, call_libm(b, "atan2", y, xp1))


def _const(b, z, re: float, im: float = 0.0):
    ty = parts(b, z)[0].type
    return make(b, _c(ty, re), _c(ty, im))


def _rsqrt(b, pt, z):
    return BASIC_BINARY["divide"](b, pt, _const(b, z, 1.0), BASIC_UNARY["sqrt"](b, pt, z))


def _logistic(b, pt, z):
    """1 / (1 + e^-z), as XLA's LogisticExpander writes it."""
    e = BASIC_UNARY["exponential"](b, pt, BASIC_UNARY["negate"](b, pt, z))
    one = _const(b, z, 1.0)
    return BASIC_BINARY["divide"](b, pt, one, BASIC_BINARY["add"](b, pt, one, e))


def _power(b, pt, x, y):
    """x^y = exp(y log x); x == 1 or y == 0: 1; x == 0: 0 for real y > 0, else NaN; +inf^(real y): inf, 0."""
    a, c = parts(b, x)
    d, e = parts(b, y)
    ty = a.type
    w = BASIC_UNARY["exponential"](b, pt, BASIC_BINARY["multiply"](b, pt, y, BASIC_UNARY["log"](b, pt, x)))
    re, im = parts(b, w)
    zero, nan, inf = _c(ty, 0.0), _c(ty, float("nan")), _c(ty, float("inf"))
    y_real = _is_zero(b, e)
    x_zero = b.and_(_is_zero(b, a), _is_zero(b, c))
    y_zero = b.and_(_is_zero(b, d), y_real)
    x_one = b.and_(b.fcmp_ordered("==", a, _c(ty, 1.0)), _is_zero(b, c))
    inf_base = b.and_(b.and_(b.fcmp_ordered("==", a, inf), _is_zero(b, c)), y_real)
    pos = b.fcmp_ordered(">", d, zero)
    re, im = _cases(
        b, (re, im),
        (b.or_(x_one, y_zero), (_c(ty, 1.0), zero)),
        (x_zero, (b.select(b.and_(pos, y_real), zero, nan), b.select(b.and_(pos, y_real), zero, nan))),
        (b.and_(inf_base, pos), (a, c)),
        (b.and_(inf_base, b.fcmp_ordered("<", d, zero)), (zero, zero)))
    return make(b, re, im)


def _cbrt(b, pt, z):
    """exp(log(z) / 3), the log scaled by a real third (a complex (1/3 + 0i) product would make 0 * inf = NaN
    of an infinite log: cbrt(x + inf i) is inf + inf i, where numpy's cpow gives inf + NaN i)."""
    l_re, l_im = parts(b, BASIC_UNARY["log"](b, pt, z))
    third = _c(l_re.type, 1.0 / 3.0)
    return BASIC_UNARY["exponential"](b, pt, make(b, b.fmul(l_re, third), b.fmul(l_im, third)))


def _atan2(b, pt, y, x):
    """-i log((x + i y) / sqrt(x^2 + y^2)) (XLA's and the interpreter's definition)."""
    mul, add = BASIC_BINARY["multiply"], BASIC_BINARY["add"]
    yr, yi = parts(b, y)
    i_y = make(b, b.fneg(yi), yr)
    r = BASIC_UNARY["sqrt"](b, pt, add(b, pt, mul(b, pt, x, x), mul(b, pt, y, y)))
    l_re, l_im = parts(b, BASIC_UNARY["log"](b, pt, BASIC_BINARY["divide"](b, pt, add(b, pt, x, i_y), r)))
    return make(b, l_im, b.fneg(l_re))


UNARY = {"sine": _swapped(csinh), "cosine": _cosine, "tan": _swapped(ctanh), "tanh": _tanh,
         "exponential-minus-one": _expm1, "log-plus-one": _log1p, "rsqrt": _rsqrt, "cbrt": _cbrt,
         "logistic": _logistic}
BINARY = {"power": _power, "atan2": _atan2}
