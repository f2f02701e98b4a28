"""lax's special functions, as XLA expands them: HLO has no opcode for them, so each is the composition of
elementwise ops (and, for the incomplete gamma and beta functions, while loops) that XLA's CHLO decompositions
and JAX's lax/special.py lower it to, with their constants:

| function | algorithm |
|---|---|
| lgamma, digamma | Lanczos (g = 7, 9 terms), reflection below 1/2 |
| zeta (Hurwitz), polygamma | 9 direct terms + a 12-term Euler-Maclaurin tail; polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x) |
| igamma, igammac, igamma_grad_a, random_gamma_grad | series below max(1, a), a continued fraction above (Cephes), in while loops |
| betainc | the continued fraction of DLMF 8.17.22 by Lentz-Thompson-Barnett, in a while loop |
| erfc | Cephes' rational approximations (f32 and f64) |
| erf_inv | XLA's polynomials (f32; f64 in three ranges) |
| bessel_i0e, bessel_i1e | Cephes' Chebyshev series, split at |x| = 8 |

f16 and bf16 are computed in f32 (as XLA upcasts). Binary functions broadcast their operands to one shape.
Gradients come from differentiating these compositions (the loops excepted): close to, not identical with, JAX's
hand-written JVPs.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .control_flow import while_loop
from .lax_elementwise import (abs, add, bitwise_and, bitwise_not, bitwise_or, cos, div, eq, exp, floor, ge, gt,
                              is_finite, le, log, log1p, lt, mul, ne, neg, pow, rem, select, sign, sin, sqrt, sub)
from .lax_operands import convert, hlo_shape
from .lax_reduce import reduce_or
from .lax_shapes import broadcast_in_dim, full
from .tracer import aval, bind
from ..hlo import Shape, type_name_of_dtype

__all__ = ["lgamma", "digamma", "polygamma", "zeta", "igamma", "igammac", "igamma_grad_a", "random_gamma_grad",
           "betainc", "erfc", "erf_inv", "bessel_i0e", "bessel_i1e", "mul_add"]


# -- helpers ---------------------------------------------------------------------------------------

def _c(value, like):
    """A constant of `like`'s shape and dtype."""
    a = aval(like)
    return full(a.shape, value, a.dtype)


def _is_nan(x):
    return ne(x, x)


def _float_operand(name: str, x):
    a = aval(x)
    if not (a.dtype.kind == "f" or a.dtype == dtypes.bfloat16):
        raise TypeError(f"lax.{name} requires a floating point operand, got {a.dtype}")
    return x


def _upcast(fn, *args):
    """fn over f32 for f16/bf16 operands (XLA's materializeWithUpcast), broadcasting the operands to one shape."""
    shapes = [aval(a).shape for a in args]
    shape = np.broadcast_shapes(*shapes)
    args = [a if aval(a).shape == tuple(shape) else
            broadcast_in_dim(a, shape, tuple(range(len(shape) - aval(a).ndim, len(shape)))) for a in args]
    dt = aval(args[0]).dtype
    if dt in (np.dtype(np.float16), dtypes.bfloat16):
        return convert(fn(*(convert(a, np.float32) for a in args)), dt)
    return fn(*args)


def _any(pred):
    return reduce_or(pred, tuple(range(aval(pred).ndim)))


def _poly(x, coeffs):
    """Horner's rule, highest degree first."""
    p = _c(coeffs[0], x)
    for k in coeffs[1:]:
        p = add(mul(p, x), _c(k, x))
    return p


# -- lgamma, digamma -------------------------------------------------------------------------------

_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354, 12.507343278686904814458936853,
            -0.13857109526572011689554707, 9.984369578019570859563e-6, 1.50563273514931155834e-7)


def _lanczos_z(x):
    reflect = lt(x, _c(0.5, x))
    return reflect, select(reflect, neg(x), sub(x, _c(1.0, x)))


def _log_t(z):
    lg = _LANCZOS_G + 0.5
    return add(_c(np.log(lg), z), log1p(div(z, _c(lg, z)))), add(_c(lg, z), z)


def _lgamma(x):
    reflect, z = _lanczos_z(x)
    a = _c(_LANCZOS_BASE, x)
    for i, k in enumerate(_LANCZOS):
        a = add(a, div(_c(k, x), add(z, _c(i + 1, x))))
    log_t, t = _log_t(z)
    r = mul(sub(add(z, _c(0.5, x)), div(t, log_t)), log_t)
    lg = add(add(_c((np.log(2) + np.log(np.pi)) / 2, x), r), log(a))
    ax = abs(x)
    frac = sub(ax, floor(ax))
    frac = select(lt(_c(0.5, x), frac), sub(_c(1.0, x), frac), frac)
    denom = log(sin(mul(_c(np.pi, x), frac)))
    refl = sub(sub(_c(np.log(np.pi), x), denom), lg)
    refl = select(is_finite(denom), refl, neg(denom))
    lg = select(reflect, refl, lg)
    return select(eq(abs(x), _c(np.inf, x)), _c(np.inf, x), lg)


def lgamma(x):
    """log |Gamma(x)| elementwise."""
    return _upcast(_lgamma, _float_operand("lgamma", x))


def _digamma(x):
    reflect, z = _lanczos_z(x)
    a = _c(_LANCZOS_BASE, x)
    a_prime = _c(0.0, x)
    for i, k in enumerate(_LANCZOS):
        zk = add(z, _c(i + 1, x))
        a_prime = sub(a_prime, div(_c(k, x), mul(zk, zk)))
        a = add(a, div(_c(k, x), zk))
    log_t, t = _log_t(z)
    d = sub(add(log_t, div(a_prime, a)), div(_c(_LANCZOS_G, x), t))
    reduced = add(x, abs(floor(add(x, _c(0.5, x)))))
    pix = mul(_c(np.pi, x), reduced)
    refl = sub(d, div(mul(_c(np.pi, x), cos(pix)), sin(pix)))
    d = select(reflect, refl, d)
    pole = bitwise_and(le(x, _c(0.0, x)), eq(x, floor(x)))
    return select(pole, _c(np.nan, x), d)


def digamma(x):
    """The logarithmic derivative of Gamma, elementwise."""
    return _upcast(_digamma, _float_operand("digamma", x))


# -- zeta, polygamma -------------------------------------------------------------------------------

_ZETA_COEFFS = (-7.1661652561756670113e18, 1.8152105401943546773e17, -4.5979787224074726105e15,
                1.1646782814350067249e14, -2.950130727918164224e12, 7.47242496e10, -1.8924375803183791606e9,
                47900160.0, -1209600.0, 30240.0, -720.0, 12.0)


def _zeta(x, q):
    terms, iters = len(_ZETA_COEFFS), 9
    neg_x = neg(x)
    acc = q
    power_sum = pow(q, neg_x)
    for _ in range(iters):
        acc = add(acc, _c(1.0, q))
        power_sum = add(power_sum, pow(acc, neg_x))
    acc = add(acc, _c(1.0, q))
    q_neg_power = pow(acc, neg_x)
    correction = div(mul(q_neg_power, acc), sub(x, _c(1.0, x)))
    rsq = div(_c(1.0, q), mul(acc, acc))
    horner = _c(0.0, q)
    two_terms_minus_one = 2 * terms - 1
    for i in range(terms - 1):
        factor = mul(add(x, _c(two_terms_minus_one - 1 - 2 * i, x)), add(x, _c(two_terms_minus_one - 2 - 2 * i, x)))
        horner = mul(factor, mul(rsq, add(horner, _c(1.0 / _ZETA_COEFFS[i], q))))
    tail = mul(q_neg_power, add(_c(0.5, q), mul(div(x, acc), add(_c(1.0 / _ZETA_COEFFS[-1], q), horner))))
    accurate = add(add(power_sum, correction), tail)
    tiny = float(dtypes.finfo(aval(q).dtype).smallest_subnormal)
    out = select(lt(abs(q_neg_power), mul(abs(power_sum), _c(tiny, q))), power_sum, accurate)
    nan, inf = _c(np.nan, x), _c(np.inf, x)
    out = select(lt(x, _c(1.0, x)), nan, out)
    q_le_zero = le(q, _c(0.0, q))
    x_is_int = eq(x, floor(x))
    out = select(bitwise_and(q_le_zero, bitwise_not(x_is_int)), nan, out)
    at_pole = bitwise_and(q_le_zero, eq(q, floor(q)))
    x_even = bitwise_and(x_is_int, eq(rem(x, _c(2.0, x)), _c(0.0, x)))
    out = select(at_pole, select(x_even, inf, nan), out)
    return select(eq(x, _c(1.0, x)), inf, out)


def zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q)^-x, elementwise."""
    return _upcast(_zeta, _float_operand("zeta", x), _float_operand("zeta", q))


def _polygamma(n, x):
    sgn = sub(mul(_c(2.0, x), rem(n, _c(2.0, n))), _c(1.0, x))
    n1 = add(n, _c(1.0, n))
    out = mul(mul(sgn, exp(_lgamma(n1))), _zeta(n1, x))
    out = select(eq(n, _c(0.0, n)), _digamma(x), out)
    bad = bitwise_or(ne(n, floor(n)), lt(n, _c(0.0, n)))
    return select(bad, _c(np.nan, x), out)


def polygamma(m, x):
    """The m-th derivative of digamma (m a natural number, as a float array), elementwise."""
    return _upcast(_polygamma, _float_operand("polygamma", m), _float_operand("polygamma", x))


# -- incomplete gamma ------------------------------------------------------------------------------

_VALUE, _DERIVATIVE, _SAMPLE_DERIVATIVE = "value", "derivative", "sample_derivative"


def _igamma_series(ax, x, a, enabled, mode):
    eps = float(dtypes.finfo(aval(x).dtype).eps)

    def body(vals):
        en, r, c, ans, xx, dc_da, dans_da = vals
        r2 = add(r, _c(1.0, r))
        dc_da2 = sub(mul(dc_da, div(xx, r2)), div(mul(c, xx), mul(r2, r2)))
        dans_da2 = add(dans_da, dc_da2)
        c2 = mul(c, div(xx, r2))
        ans2 = add(ans, c2)
        if mode == _VALUE:
            cont = bitwise_and(en, gt(div(c2, ans2), _c(eps, c2)))
        else:
            cont = bitwise_and(en, gt(abs(div(dc_da2, dans_da2)), _c(eps, c2)))
        return (cont, select(en, r2, r), select(en, c2, c), select(en, ans2, ans), xx,
                select(en, dc_da2, dc_da), select(en, dans_da2, dans_da))

    init = (enabled, a, _c(1.0, a), _c(1.0, a), x, _c(0.0, a), _c(0.0, a))
    _, _, _, ans, _, _, dans_da = while_loop(lambda v: _any(v[0]), body, init)
    if mode == _VALUE:
        return div(mul(ans, ax), a)
    dlogax_da = sub(log(x), _digamma(add(a, _c(1.0, a))))
    if mode == _DERIVATIVE:
        return div(mul(ax, add(mul(ans, dlogax_da), dans_da)), a)
    return div(mul(neg(add(dans_da, mul(ans, dlogax_da))), x), a)


def _igammac_continued_fraction(ax, x, a, enabled, mode):
    eps = float(dtypes.finfo(aval(x).dtype).eps)

    def cond(vals):
        return bitwise_and(lt(vals[5], _c(2000.0, vals[5])), _any(vals[0]))

    def body(vals):
        (en, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = vals
        c = add(c, _c(1.0, c))
        y2 = add(y, _c(1.0, y))
        z2 = add(z, _c(2.0, z))
        yc = mul(y2, c)
        pk = sub(mul(pkm1, z2), mul(pkm2, yc))
        qk = sub(mul(qkm1, z2), mul(qkm2, yc))
        nz = ne(qk, _c(0.0, qk))
        r = div(pk, qk)
        t2 = select(nz, abs(div(sub(ans, r), r)), _c(1.0, r))
        ans2 = select(nz, r, ans)
        dpk_da = add(sub(sub(mul(dpkm1_da, z2), pkm1), mul(dpkm2_da, yc)), mul(pkm2, c))
        dqk_da = add(sub(sub(mul(dqkm1_da, z2), qkm1), mul(dqkm2_da, yc)), mul(qkm2, c))
        dans_da2 = select(nz, div(sub(dpk_da, mul(ans2, dqk_da)), qk), dans_da)
        grad_cond = select(nz, abs(sub(dans_da2, dans_da)), _c(1.0, dans_da))
        npkm2, npkm1, nqkm2, nqkm1 = pkm1, pk, qkm1, qk
        ndpkm2, ndqkm2, ndpkm1, ndqkm1 = dpkm1_da, dqkm1_da, dpk_da, dqk_da
        rescale = gt(abs(pk), _c(1.0 / eps, pk))
        e = _c(eps, pk)
        npkm2, npkm1, nqkm2, nqkm1, ndpkm2, ndqkm2, ndpkm1, ndqkm1 = (
            select(rescale, mul(v, e), v) for v in (npkm2, npkm1, nqkm2, nqkm1, ndpkm2, ndqkm2, ndpkm1, ndqkm1))
        if mode == _VALUE:
            cont = bitwise_and(en, gt(t2, _c(eps, t2)))
        else:
            cont = bitwise_and(en, gt(grad_cond, _c(eps, grad_cond)))
        return (cont, select(en, ans2, ans), select(en, t2, t), select(en, y2, y), select(en, z2, z), c,
                select(en, npkm1, pkm1), select(en, nqkm1, qkm1), select(en, npkm2, pkm2), select(en, nqkm2, qkm2),
                select(en, ndpkm2, dpkm2_da), select(en, ndqkm2, dqkm2_da), select(en, ndpkm1, dpkm1_da),
                select(en, ndqkm1, dqkm1_da), select(en, dans_da2, dans_da))

    y = sub(_c(1.0, a), a)
    z = add(add(x, y), _c(1.0, x))
    pkm1 = add(x, _c(1.0, x))
    qkm1 = mul(z, x)
    ans = div(pkm1, qkm1)
    dqkm1_da = neg(x)
    dans_da = div(sub(_c(0.0, x), mul(ans, dqkm1_da)), qkm1)
    init = (enabled, ans, _c(1.0, x), y, z, full((), 0.0, aval(x).dtype), pkm1, qkm1, _c(1.0, x), x,
            _c(0.0, x), _c(0.0, x), _c(0.0, x), dqkm1_da, dans_da)
    vals = while_loop(cond, body, init)
    ans = vals[1]
    if mode == _VALUE:
        return mul(ans, ax)
    dlogax_da = sub(log(x), _digamma(a))
    if mode == _DERIVATIVE:
        return mul(ax, add(mul(ans, dlogax_da), vals[14]))
    return mul(neg(add(vals[14], mul(ans, dlogax_da))), x)


def _ax(a, x):
    ax = sub(sub(mul(a, log(x)), x), _lgamma(a))
    underflow = lt(ax, _c(-np.log(float(dtypes.finfo(aval(x).dtype).max)), ax))
    return exp(ax), underflow


def _igamma(a, x):
    is_nan = bitwise_or(_is_nan(a), _is_nan(x))
    x_inf = eq(x, _c(np.inf, x))
    a_zero, x_zero = eq(a, _c(0.0, a)), eq(x, _c(0.0, x))
    domain = bitwise_or(bitwise_or(lt(x, _c(0.0, x)), lt(a, _c(0.0, a))),
                        bitwise_or(bitwise_and(a_zero, x_zero), is_nan))
    use_c = bitwise_and(ge(x, _c(1.0, x)), gt(x, a))
    ax, underflow = _ax(a, x)
    enabled = bitwise_not(bitwise_or(bitwise_or(x_zero, domain), bitwise_or(underflow, x_inf)))
    out = select(use_c, sub(_c(1.0, a), _igammac_continued_fraction(ax, x, a, bitwise_and(enabled, use_c), _VALUE)),
                 _igamma_series(ax, x, a, bitwise_and(enabled, bitwise_not(use_c)), _VALUE))
    out = select(x_zero, _c(0.0, a), out)
    out = select(x_inf, _c(1.0, a), out)
    return select(domain, _c(np.nan, a), out)


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x), elementwise."""
    return _upcast(_igamma, _float_operand("igamma", a), _float_operand("igamma", x))


def _igammac(a, x):
    is_nan = bitwise_or(_is_nan(a), _is_nan(x))
    a_zero, x_zero = eq(a, _c(0.0, a)), eq(x, _c(0.0, x))
    x_inf = eq(x, _c(np.inf, x))
    domain = bitwise_or(bitwise_or(lt(x, _c(0.0, x)), lt(a, _c(0.0, a))),
                        bitwise_or(bitwise_and(a_zero, x_zero), is_nan))
    use_p = bitwise_or(lt(x, _c(1.0, x)), lt(x, a))
    ax, underflow = _ax(a, x)
    enabled = bitwise_not(bitwise_or(bitwise_or(domain, underflow), bitwise_or(x_inf, a_zero)))
    series = _igamma_series(ax, x, a, bitwise_and(enabled, use_p), _VALUE)
    cf = _igammac_continued_fraction(ax, x, a, bitwise_and(enabled, bitwise_not(use_p)), _VALUE)
    out = select(use_p, sub(_c(1.0, a), series), cf)
    out = select(bitwise_or(x_inf, a_zero), _c(0.0, out), out)
    return select(domain, _c(np.nan, a), out)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), elementwise."""
    return _upcast(_igammac, _float_operand("igammac", a), _float_operand("igammac", x))


def _igamma_derivative(a, x, mode):
    is_nan = bitwise_or(_is_nan(a), _is_nan(x))
    x_zero = eq(x, _c(0.0, x))
    domain = bitwise_or(lt(x, _c(0.0, x)), le(a, _c(0.0, a)))
    use_c = bitwise_and(gt(x, _c(1.0, x)), gt(x, a))
    ax, underflow = _ax(a, x)
    enabled = bitwise_not(bitwise_or(bitwise_or(x_zero, domain), bitwise_or(underflow, is_nan)))
    out = select(use_c, neg(_igammac_continued_fraction(ax, x, a, bitwise_and(enabled, use_c), mode)),
                 _igamma_series(ax, x, a, bitwise_and(enabled, bitwise_not(use_c)), mode))
    out = select(x_zero, _c(0.0, out), out)
    return select(bitwise_or(domain, is_nan), _c(np.nan, a), out)


def igamma_grad_a(a, x):
    """d/da of igamma(a, x), elementwise."""
    return _upcast(lambda a, x: _igamma_derivative(a, x, _DERIVATIVE), _float_operand("igamma_grad_a", a),
                   _float_operand("igamma_grad_a", x))


def random_gamma_grad(a, x):
    """The derivative of a Gamma(a, 1) sample x with respect to a (implicit differentiation), elementwise."""
    return _upcast(lambda a, x: _igamma_derivative(a, x, _SAMPLE_DERIVATIVE),
                   _float_operand("random_gamma_grad", a), _float_operand("random_gamma_grad", x))


# -- incomplete beta -------------------------------------------------------------------------------

def _lentz(num_iterations, small, threshold, numerator, denominator, inputs):
    d0 = denominator(0, *inputs)
    h = select(lt(abs(d0), _c(small, d0)), _c(small, d0), d0)

    def cond(vals):
        return bitwise_and(lt(vals[0], full((), num_iterations, np.int32)), vals[1])

    def body(vals):
        it, _, c, d, h = vals
        pn, pd = numerator(it, *inputs), denominator(it, *inputs)
        c = add(pd, div(pn, c))
        c = select(lt(abs(c), _c(small, c)), _c(small, c), c)
        d = add(pd, mul(pn, d))
        d = select(lt(abs(d), _c(small, d)), _c(small, d), d)
        d = div(_c(1.0, d), d)
        delta = mul(c, d)
        h = mul(h, delta)
        unconverged = _any(ge(abs(sub(delta, _c(1.0, delta))), _c(threshold, delta)))
        return (add(it, full((), 1, np.int32)), unconverged, c, d, h)

    init = (full((), 1, np.int32), full((), True, np.bool_), h, _c(0.0, h), h)
    return while_loop(cond, body, init)[4]


def _betainc(a, b, x):
    dt = aval(a).dtype
    shape = aval(a).shape

    def numerator(it, a, b, x):
        itb = broadcast_in_dim(it, shape, ())
        even = eq(rem(itb, full(shape, 2, np.int32)), full(shape, 0, np.int32))
        is_one = eq(itb, full(shape, 1, np.int32))
        m_int = div(sub(itb, full(shape, 1, np.int32)), full(shape, 2, np.int32))
        m_zero = eq(m_int, full(shape, 0, np.int32))
        m = convert(m_int, dt)
        one, two = _c(1.0, a), _c(2.0, a)
        zero_num = div(mul(neg(add(a, b)), x), add(a, one))
        even_num = select(m_zero, zero_num,
                          div(mul(mul(neg(add(a, m)), add(add(a, b), m)), x),
                              mul(add(a, mul(two, m)), add(add(a, mul(two, m)), one))))
        odd_num = div(mul(mul(m, sub(b, m)), x), mul(sub(add(a, mul(two, m)), one), add(a, mul(two, m))))
        return select(is_one, _c(1.0, x), select(even, even_num, odd_num))

    def denominator(it, a, b, x):
        if isinstance(it, int):
            return _c(0.0 if it == 0 else 1.0, x)
        itb = broadcast_in_dim(it, shape, ())
        return select(eq(itb, full(shape, 0, np.int32)), _c(0.0, x), _c(1.0, x))

    zero, one, inf = _c(0.0, a), _c(1.0, a), _c(np.inf, a)
    a_zero = bitwise_or(eq(a, zero), eq(b, inf))
    b_zero = bitwise_or(eq(b, zero), eq(a, inf))
    x_zero, x_one = eq(x, zero), eq(x, one)
    is_nan = bitwise_or(bitwise_or(_is_nan(a), _is_nan(b)), _is_nan(x))
    res_zero = bitwise_or(bitwise_and(b_zero, bitwise_not(x_one)), bitwise_and(a_zero, x_zero))
    res_one = bitwise_or(bitwise_and(a_zero, bitwise_not(x_zero)), bitwise_and(b_zero, x_one))
    res_nan = bitwise_or(bitwise_or(lt(a, zero), lt(b, zero)), bitwise_or(lt(x, zero), gt(x, one)))
    res_nan = bitwise_or(res_nan, bitwise_or(bitwise_and(a_zero, b_zero), is_nan))
    fast = lt(x, div(add(a, one), add(add(a, b), _c(2.0, a))))
    a, b = select(fast, a, b), select(fast, b, a)
    x = select(fast, x, sub(one, x))
    fi = dtypes.finfo(dt)
    cf = _lentz(200 if dt == np.float32 else 600, float(fi.eps) / 2, float(fi.eps) / 2, numerator, denominator,
                [a, b, x])
    very_small = float(fi.tiny) * 2
    lbeta_small_a = sub(_lgamma(b), _lgamma(add(a, b)))
    lbeta = add(_lgamma(a), lbeta_small_a)
    factor = select(lt(a, _c(very_small, a)), exp(sub(mul(log1p(neg(x)), b), lbeta_small_a)),
                    div(exp(sub(add(mul(log(x), a), mul(log1p(neg(x)), b)), lbeta)), a))
    result = mul(cf, factor)
    result = select(fast, result, sub(one, result))
    result = select(res_zero, zero, result)
    result = select(res_one, one, result)
    return select(res_nan, _c(np.nan, a), result)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), elementwise."""
    return _upcast(_betainc, *(_float_operand("betainc", v) for v in (a, b, x)))


# -- erfc, erf_inv ---------------------------------------------------------------------------------

def _erfc64(x):
    P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0, 4.86371970985681366614E1,
         1.96520832956077098242E2, 5.26445194995477358631E2, 9.34528527171957607540E2, 1.02755188689515710272E3,
         5.57535335369399327526E2)
    Q = (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2, 9.75708501743205489753E2,
         1.82390916687909736289E3, 2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2)
    R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0, 6.16021097993053585195E0,
         7.40974269950448939160E0, 2.97886665372100240670E0)
    S = (1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
         1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)
    T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3, 7.00332514112805075473E3,
         5.55923013010394962768E4)
    U = (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
         2.26290000613890934246E4, 4.92673942608635921086E4)
    small = lt(abs(x), _c(1.0, x))
    x_in = x
    x = select(small, _c(1.0, x), x)     # the |x| >= 1 branch on safe values (finite gradients near 0)
    z = neg(mul(x, x))
    ez = exp(z)
    ax = abs(x)
    lt8 = select(lt(ax, _c(8.0, x)), div(mul(ez, _poly(ax, P)), _poly(ax, Q)), div(mul(ez, _poly(ax, R)), _poly(ax, S)))
    lt8 = select(lt(z, _c(-7.09782712893383996843E2, x)), _c(0.0, x), lt8)
    ge1 = select(lt(x, _c(0.0, x)), sub(_c(2.0, x), lt8), lt8)
    x2 = mul(x_in, x_in)
    le1 = sub(_c(1.0, x), div(mul(x_in, _poly(x2, T)), _poly(x2, U)))
    return select(small, le1, ge1)


def _erfc32(x):
    P = (2.326819970068386E-2, -1.387039388740657E-1, 3.687424674597105E-1, -5.824733027278666E-1,
         6.210004621745983E-1, -4.944515323274145E-1, 3.404879937665872E-1, -2.741127028184656E-1,
         5.638259427386472E-1)
    R = (-1.047766399936249E+1, 1.297719955372516E+1, -7.495518717768503E+0, 2.921019019210786E+0,
         -1.015265279202700E+0, 4.218463358204948E-1, -2.820767439740514E-1, 5.641895067754075E-1)
    T = (7.853861353153693E-5, -8.010193625184903E-4, 5.188327685732524E-3, -2.685381193529856E-2,
         1.128358514861418E-1, -3.761262582423300E-1, 1.128379165726710E+0)
    small = lt(abs(x), _c(1.0, x))
    x_in = x
    x = select(small, _c(1.0, x), x)     # the |x| >= 1 branch on safe values (finite gradients near 0)
    x2 = mul(x, x)
    z = neg(x2)
    ax = abs(x)
    inv_x2 = div(_c(1.0, x), x2)
    e = mul(exp(z), div(_c(1.0, x), ax))
    poly = select(lt(ax, _c(2.0, x)), _poly(inv_x2, P), _poly(inv_x2, R))
    ge1 = mul(e, poly)
    ge1 = select(lt(z, _c(-88.72283905206835, x)), _c(0.0, x), ge1)
    ge1 = select(lt(x, _c(0.0, x)), sub(_c(2.0, x), ge1), ge1)
    x2 = mul(x_in, x_in)
    le1 = sub(_c(1.0, x), mul(x_in, _poly(x2, T)))
    return select(small, le1, ge1)


def erfc(x):
    """1 - erf(x), elementwise, accurate in the tails."""
    x = _float_operand("erfc", x)
    if aval(x).dtype == np.float64:
        return _erfc64(x)
    return _upcast(_erfc32, x)


def _convert_raw(x, dtype):
    """convert without canonicalization (f64 intermediates even when enable_x64 is off)."""
    return bind("convert", [x], shape=Shape.array(type_name_of_dtype(np.dtype(dtype)), aval(x).shape),
                name="convert_element_type")


def mul_add(a, b, c):
    """a * b + c as XLA:CPU computes JAX's `x * y + z`: LLVM contracts the f32/f64 multiply-add into one
    fused multiply-add (one rounding); f16/bf16 round after each op. f32 is computed exactly in f64; f64 by
    error-free transformations (Dekker's product, Knuth's sum), which round once except in rare ties."""
    dt = aval(a).dtype
    if dt == np.float32:
        a64, b64, c64 = (_convert_raw(v, np.float64) for v in (a, b, c))
        return _convert_raw(add(mul(a64, b64), c64), np.float32)
    if dt != np.float64:
        return add(mul(a, b), c)

    def split(v):
        t = mul(v, np.float64(134217729.0))         # 2**27 + 1
        hi = sub(t, sub(t, v))
        return hi, sub(v, hi)
    p = mul(a, b)
    (ah, al), (bh, bl) = split(a), split(b)
    e = add(add(add(sub(mul(ah, bh), p), mul(ah, bl)), mul(al, bh)), mul(al, bl))
    s = add(p, c)
    v = sub(s, p)
    t = add(sub(p, sub(s, v)), sub(c, v))
    return add(s, add(t, e))


def erf_inv(x):
    """Inverse error function, XLA's polynomial (f32; f64 in three ranges; f16/bf16 computed in f32)."""
    dt = aval(x).dtype
    if dt == np.float64:
        return _erf_inv64(x)
    if dt == np.float32:
        return _erf_inv32(x)
    return convert(_erf_inv32(convert(x, np.float32)), dt)


_ERF_INV32_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV32_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coeffs, arg, dtype, select_with=None):
    """p = c0; p = c_i + p * arg, with `select_with=(pred, other coeffs)` choosing per element."""
    def coef(i):
        if select_with is None:
            return np.asarray(coeffs[i], dtype)
        pred, other = select_with
        shape = aval(pred).shape
        return select(pred, full(shape, coeffs[i], dtype), full(shape, other[i], dtype))
    p = coef(0)
    for i in range(1, len(coeffs)):
        # XLA:CPU fuses each f32 step into an FMA; f64 keeps two roundings (its FMA emulation costs ~17 ops)
        p = mul_add(p, arg, coef(i)) if dtype == np.float32 else add(coef(i), mul(p, arg))
    return p


def _erf_inv_common(x, dtype):
    w = neg(log1p(mul(x, neg(x))))
    at_one = eq(abs(x), np.asarray(1.0, dtype))
    shape = aval(x).shape
    # +-inf at +-1, chosen by a select (x * inf would give a nan gradient where the branch is not taken)
    inf_x = select(gt(x, np.asarray(0, dtype)), full(shape, np.inf, dtype), full(shape, -np.inf, dtype))
    return w, at_one, inf_x


def _erf_inv32(x):
    f32 = np.dtype(np.float32)
    w, at_one, inf_x = _erf_inv_common(x, f32)
    small = lt(w, np.float32(5))
    arg = select(small, sub(w, np.float32(2.5)), sub(sqrt(w), np.float32(3)))
    p = _horner(_ERF_INV32_SMALL, arg, f32, (small, _ERF_INV32_LARGE))
    return select(at_one, inf_x, mul(p, x))


_ERF_INV64_LT_6_25 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
    -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
    -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)
_ERF_INV64_LT_16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06, -4.013867526981545969e-06, 2.9234449089955446044e-06, 1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
    0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)
_ERF_INV64_GE_16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09, -3.7894654401267369937e-09,
    7.6157012080783393804e-09, -1.4960026627149240478e-08, 2.9147953450901080826e-08, -6.7711997758452339498e-08,
    2.2900482228026654717e-07, -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221)


def _erf_inv64(x):
    f64 = np.dtype(np.float64)
    w, at_one, inf_x = _erf_inv_common(x, f64)
    lt_6_25 = lt(w, np.float64(6.25))
    lt_16 = lt(w, np.float64(16))
    root = sqrt(w)
    shape = aval(w).shape
    arg = select(lt_6_25, sub(w, np.float64(3.125)),
                 sub(root, select(lt_16, full(shape, 3.25, f64), full(shape, 5.0, f64))))
    p = select(lt_6_25, _horner(_ERF_INV64_LT_6_25, arg, f64),
               select(lt_16, _horner(_ERF_INV64_LT_16, arg, f64), _horner(_ERF_INV64_GE_16, arg, f64)))
    return select(at_one, inf_x, mul(p, x))


# -- Bessel functions ------------------------------------------------------------------------------

def _chebyshev(x, coeffs):
    b0, b1, b2 = _c(0.0, x), _c(0.0, x), _c(0.0, x)
    for k in coeffs:
        b2, b1 = b1, b0
        b0 = add(sub(mul(x, b1), b2), _c(k, x))
    return mul(sub(b0, b2), _c(0.5, x))


_I0E_A64 = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
            1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
            -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
            9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9)
_I0E_A32 = (-1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
            1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
            -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
            1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
            -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
            1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B64 = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
            3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
            1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
            -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
            7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
            -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10)
_I0E_B32 = (3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
            2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
            8.04490411014108831608E-1)
_I1E_A64 = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
            -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
            3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
            -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9)
_I1E_A32 = (9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
            -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
            4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
            -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
            2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
            -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B64 = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
            -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
            -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
            4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
            -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
            3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10)
_I1E_B32 = (-3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
            -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
            7.78576235018280120474E-1)


def _bessel(x, a, b, odd: bool):
    z = abs(x)
    le8 = _chebyshev(sub(mul(_c(0.5, z), z), _c(2.0, z)), a)
    if odd:
        le8 = mul(z, le8)
    gt8 = div(_chebyshev(sub(div(_c(32.0, z), z), _c(2.0, z)), b), sqrt(z))
    out = select(le(z, _c(8.0, z)), le8, gt8)
    return mul(sign(x), out) if odd else out


def bessel_i0e(x):
    """exp(-|x|) I0(x), elementwise."""
    x = _float_operand("bessel_i0e", x)
    if aval(x).dtype == np.float64:
        return _bessel(x, _I0E_A64 + _I0E_A32, _I0E_B64 + _I0E_B32, False)
    return _upcast(lambda v: _bessel(v, _I0E_A32, _I0E_B32, False), x)


def bessel_i1e(x):
    """exp(-|x|) I1(x), elementwise."""
    x = _float_operand("bessel_i1e", x)
    if aval(x).dtype == np.float64:
        return _bessel(x, _I1E_A64 + _I1E_A32, _I1E_B64 + _I1E_B32, True)
    return _upcast(lambda v: _bessel(v, _I1E_A32, _I1E_B32, True), x)
