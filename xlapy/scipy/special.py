"""xlapy.scipy.special: jax.scipy.special over xlapy.lax, with JAX's algorithms (so its results to rounding).

The lax-level functions (lgamma, digamma, zeta, polygamma, igamma/igammac, betainc, erfc, erf_inv, the scaled
Bessel functions) are XLA's expansions, in frontend/lax_special_math.py; this module adds JAX's compositions
over them: gamma and its sign, beta (betaln with scipy's algdiv for large arguments), factorial, comb, poch,
multigammaln, the normal distribution's ndtr / ndtri (Cephes' rational approximations) / log_ndtr (an
asymptotic series in the far left tail), xlogy, xlog1py, entr, rel_entr, kl_div, boxcox(1p), spence (Cephes),
the Bernoulli numbers (Chowla-Hartung), i0 / i1, and logsumexp / softmax / log_softmax from xlapy.nn.
Arguments are promoted as JAX promotes them (integers become the default float). Gradients come from
differentiating the compositions; functions computed in while loops (gammainc, gammaincc, betainc) have none.

Not here (JAX has them): the remaining functions of `MISSING` below.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..errors import XlapyError
from ..frontend.tracer import concrete_value
from ..nn import log_softmax as _nn_log_softmax, logsumexp, softmax as _nn_softmax
from ..numpy._util import aval, promote_inexact

__all__ = ["bernoulli", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma", "entr", "erf", "erfc",
           "erfinv", "expit", "factorial", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1",
           "i1e", "kl_div", "log_ndtr", "log_softmax", "loggamma", "logit", "logsumexp", "multigammaln", "ndtr",
           "ndtri", "poch", "polygamma", "rel_entr", "softmax", "spence", "xlog1py", "xlogy", "zeta"]

# jax.scipy.special names xlapy does not have yet
MISSING = ["bessel_jn", "dawsn", "erfcx", "exp1", "expi", "expn", "fresnel", "hyp1f1", "hyp2f1", "owens_t", "sici",
           "sph_harm_y", "wofz"]


def _error(name: str, message: str) -> XlapyError:
    return XlapyError(f"scipy.special.{name}: {message}")


def _real(name: str, *xs):
    xs = promote_inexact(name, *xs)
    if aval(xs[0]).dtype.kind == "c":
        raise _error(name, "complex inputs are not supported")
    return xs


def _k(x, value):
    """A scalar constant of x's dtype."""
    return np.asarray(value, aval(x).dtype)


# -- gamma family ----------------------------------------------------------------------------------

def gammaln(x):
    """log |Gamma(x)|."""
    (x,) = _real("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x):
    """The sign of Gamma(x): nan at the poles (and for nan), -1 where Gamma is negative, else 1."""
    (x,) = _real("gammasgn", x)
    floor_x = lax.floor(x)
    neg = x < 0
    nan_case = (neg & (x == floor_x)) | jnp.isnan(x)
    minus = (neg & (jnp.remainder(floor_x, 2) != 0)) | ((x == 0) & jnp.signbit(x))
    return jnp.select([nan_case, minus], [_k(x, np.nan), _k(x, -1.0)], _k(x, 1.0))


def loggamma(x):
    """log Gamma(x) for real x > 0 (nan elsewhere; complex inputs are not supported)."""
    (x,) = _real("loggamma", x)
    return jnp.where(x > 0, lax.lgamma(x), _k(x, np.nan))


def gamma(x):
    """Gamma(x) = gammasgn(x) * exp(lgamma(x))."""
    (x,) = _real("gamma", x)
    return gammasgn(x) * lax.exp(lax.lgamma(x))


def _algdiv(a, b):
    """log(Gamma(b) / Gamma(a + b)) for b >= 8 (scipy's cdflib algdiv; assumes a <= b)."""
    c0, c1, c2 = 0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03
    c3, c4, c5 = -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02
    h = a / b
    c = h / (1 + h)
    x = h / (1 + h)
    d = b + (a - 0.5)
    x2 = x * x
    s3 = 1.0 + (x + x2)
    s5 = 1.0 + (x + x2 * s3)
    s7 = 1.0 + (x + x2 * s5)
    s9 = 1.0 + (x + x2 * s7)
    s11 = 1.0 + (x + x2 * s9)
    t = (1.0 / b) ** 2
    w = ((((c5 * s11 * t + c4 * s9) * t + c3 * s7) * t + c2 * s5) * t + c1 * s3) * t + c0
    w = w * (c / b)
    u = d * lax.log1p(a / b)
    v = a * (lax.log(b) - 1.0)
    return jnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
    """log |B(a, b)|; accurate for large arguments (algdiv once max(a, b) >= 8)."""
    a, b = _real("betaln", a, b)
    a, b = jnp.minimum(a, b), jnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _algdiv(a, b)
    return jnp.where(b < 8, small_b, large_b)


def beta(a, b):
    """The beta function B(a, b), with its sign."""
    a, b = _real("beta", a, b)
    return gammasgn(a) * gammasgn(b) * gammasgn(a + b) * lax.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    a, b, x = _real("betainc", a, b, x)
    return lax.betainc(a, b, x)


def digamma(x):
    (x,) = _real("digamma", x)
    return lax.digamma(x)


def polygamma(n, x):
    """The n-th derivative of digamma; n must have an integer dtype."""
    if aval(n).dtype.kind not in "iu":
        raise _error("polygamma", f"argument `n` must be of integer type, got {aval(n).dtype}")
    n, x = _real("polygamma", n, x)
    return lax.polygamma(n, x)


def zeta(x, q=None):
    """The Hurwitz zeta function zeta(x, q) (the Riemann zeta, q=None, is not implemented, as in JAX)."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to compute the Hurwitz "
                                  "Zeta function.")
    x, q = _real("zeta", x, q)
    return lax.zeta(x, q)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = _real("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x)."""
    a, x = _real("gammaincc", a, x)
    return lax.igammac(a, x)


def factorial(n, exact: bool = False):
    """n! = Gamma(n + 1) as floats (0 for n < 0); exact=True is not implemented, as in JAX."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = _real("factorial", n)
    return jnp.where(n < 0, _k(n, 0), lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition: bool = False):
    """The binomial coefficient C(N, k) as floats (0 outside 0 <= k <= N)."""
    N, k = _real("comb", N, k)
    if repetition:
        return jnp.where((k == 0) & (N >= 0), _k(N, 1.0), comb(N + k - 1, k, repetition=False))
    cond = (k <= N) & (N >= 0) & (k >= 0)
    safe_N = jnp.where(cond, N, _k(N, 0.0))
    safe_k = jnp.where(cond, k, _k(k, 0.0))
    result = lax.exp(gammaln(safe_N + 1) - gammaln(safe_k + 1) - gammaln(safe_N + 1 - safe_k))
    return jnp.where(cond, result, _k(result, 0.0))


def poch(z, m):
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z)."""
    z, m = _real("poch", z, m)
    return jnp.where(m == 0., _k(z, 1), gamma(z + m) / gamma(z))


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (a static int)."""
    d = operator.index(concrete_value(d)) if not isinstance(d, int) else d
    a, d_ = _real("multigammaln", a, d)
    constant = 0.25 * d_ * (d_ - 1) * np.log(np.pi)
    b = jnp.arange(d, dtype=aval(d_).dtype) / 2
    res = jnp.sum(gammaln(jnp.expand_dims(a, -1) - jnp.expand_dims(b, tuple(range(aval(a).ndim)))), axis=-1)
    return res + constant


# -- error function and the normal distribution ----------------------------------------------------

def erf(x):
    (x,) = _real("erf", x)
    return lax.erf(x)


def erfc(x):
    (x,) = _real("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    (x,) = _real("erfinv", x)
    return lax.erf_inv(x)


def _f32_or_f64(name: str, x):
    x = jnp.asarray(x)
    if aval(x).dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={aval(x).dtype} is not supported, see docstring for supported types.")
    return x


def _ndtr(x):
    dt = aval(x).dtype
    half_sqrt_2 = _k(x, 0.5 * np.sqrt(2.0))
    w = x * half_sqrt_2
    z = lax.abs(w)
    y = jnp.where(z < half_sqrt_2, _k(x, 1.0) + lax.erf(w),
                  jnp.where(w > _k(x, 0.0), _k(x, 2.0) - lax.erfc(z), lax.erfc(z)))
    return np.asarray(0.5, dt) * y


def ndtr(x):
    """The standard normal CDF, through erf near 0 and erfc in the tails."""
    return _ndtr(_f32_or_f64("ndtr", x))


_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1, 4.40805073893200834700E1,
             1.46849561928858024014E1, 2.18663306850790267539E0, -1.40256079171354495875E-1,
             -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0, 1.33303460815807542389E0,
             2.01485389549179081538E-1, 1.23716634817820021358E-2, 3.01581553508235416007E-4,
             2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)


def _polyval(coeffs, x):
    """Horner's rule over constant coefficients (highest degree first), as jnp.polyval."""
    dt = aval(x).dtype
    y = jnp.zeros_like(x)
    for c in coeffs:
        y = y * x + np.asarray(c, dt)
    return y


def ndtri(p):
    """The inverse of ndtr (Cephes' rational approximations in three ranges)."""
    p = _f32_or_f64("ndtri", p)
    dt = aval(p).dtype

    def k(v):
        return np.asarray(v, dt)
    mcp = jnp.where(p > k(-np.expm1(-2.)), k(1.) - p, p)
    mcp = jnp.where(mcp == k(0.), k(0.5), mcp)
    w = mcp - k(0.5)
    ww = w * w
    x_big = w + w * ww * (_polyval(_NDTRI_P0, ww) / _polyval(_NDTRI_Q0, ww))
    x_big = x_big * -k(np.sqrt(2. * np.pi))
    z = lax.sqrt(k(-2.) * lax.log(mcp))
    first = z - lax.log(z) / z
    inv_z = 1 / z
    x_small = first - _polyval(_NDTRI_P2, inv_z) / _polyval(_NDTRI_Q2, inv_z) / z
    x_other = first - _polyval(_NDTRI_P1, inv_z) / _polyval(_NDTRI_Q1, inv_z) / z
    x = jnp.where(mcp > k(np.exp(-2.)), x_big, jnp.where(z >= k(8.0), x_small, x_other))
    x = jnp.where(p > k(1. - np.exp(-2.)), x, -x)
    return jnp.where(p == k(0.0), k(-np.inf), jnp.where(p == k(1.0), k(np.inf), x))


def _log_ndtr_series(x, series_order: int):
    dt = aval(x).dtype
    if series_order <= 0:
        return np.asarray(1, dt)
    x_2 = x * x
    even_sum = jnp.zeros_like(x)
    odd_sum = jnp.zeros_like(x)
    x_2n = x_2
    for n in range(1, series_order + 1):
        y = np.asarray(np.prod(np.arange(2 * n - 1, 1, -2)), dt) / x_2n
        if n % 2:
            odd_sum = odd_sum + y
        else:
            even_sum = even_sum + y
        x_2n = x_2n * x_2
    return np.asarray(1., dt) + even_sum - odd_sum


def log_ndtr(x, series_order: int = 3):
    """log(ndtr(x)), accurate in both tails: -ndtr(-x) far right, an asymptotic series far left."""
    if not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    x = jnp.asarray(x)
    dt = aval(x).dtype
    if dt == np.float64:
        lower, upper = np.asarray(-20, dt), np.asarray(8, dt)
    elif dt == np.float32:
        lower, upper = np.asarray(-10, dt), np.asarray(5, dt)
    else:
        raise TypeError(f"x.dtype={dt} is not supported.")
    gt_upper = x > upper
    ndtr_res = _ndtr(jnp.where(gt_upper, -x, lax.max(x, lax.full_like(x, lower))))
    xl = lax.min(x, lax.full_like(x, lower))
    log_scale = -np.asarray(0.5, dt) * xl * xl - lax.log(-xl) - np.asarray(0.5 * np.log(2. * np.pi), dt)
    lower_val = log_scale + lax.log(_log_ndtr_series(xl, series_order))
    return jnp.where(gt_upper, -ndtr_res, jnp.where(x > lower, lax.log(ndtr_res), lower_val))


# -- logistic, entropies ---------------------------------------------------------------------------

def logit(x):
    """log(x / (1 - x))."""
    (x,) = _real("logit", x)
    return lax.log(lax.div(x, lax.sub(lax.full_like(x, 1), x)))


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = _real("expit", x)
    return lax.logistic(x)


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is nan)."""
    x, y = _real("xlogy", x, y)
    return jnp.where((x != 0.) | jnp.isnan(y), lax.mul(x, lax.log(y)), jnp.zeros_like(x))


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is nan)."""
    x, y = _real("xlog1py", x, y)
    return jnp.where((x != 0.) | jnp.isnan(y), lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


def entr(x):
    """-x log x for x >= 0, -inf for x < 0."""
    (x,) = _real("entr", x)
    return lax.select(lax.lt(x, lax.full_like(x, 0)), lax.full_like(x, -np.inf), lax.neg(xlogy(x, x)))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p == 0 and q >= 0; inf elsewhere."""
    p, q = _real("rel_entr", p, q)
    zero = _k(p, 0.0)
    both = (p > zero) & (q > zero)
    one_zero = (p == zero) & (q >= zero)
    safe_p = jnp.where(both, p, _k(p, 1))
    safe_q = jnp.where(both, q, _k(q, 1))
    log_val = xlogy(safe_p, safe_p) - xlogy(safe_p, safe_q)
    return jnp.where(both, log_val, jnp.where(one_zero, zero, _k(p, np.inf)))


def kl_div(p, q):
    """rel_entr(p, q) - p + q."""
    p, q = _real("kl_div", p, q)
    return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
    """The Box-Cox transform: (x**lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    x, lmbda = _real("boxcox", x, lmbda)
    is_zero = lmbda == 0
    safe = jnp.where(is_zero, jnp.ones_like(lmbda), lmbda)
    log_x = jnp.log(x)
    return jnp.where(is_zero, log_x, jnp.expm1(safe * log_x) / safe)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x."""
    x, lmbda = _real("boxcox1p", x, lmbda)
    is_zero = lmbda == 0
    safe = jnp.where(is_zero, jnp.ones_like(lmbda), lmbda)
    log1p_x = jnp.log1p(x)
    return jnp.where(is_zero, log1p_x, jnp.expm1(safe * log1p_x) / safe)


def softmax(x, /, *, axis: int | tuple[int, ...] | None = None):
    return _nn_softmax(x, axis=axis)


def log_softmax(x, /, *, axis: int | tuple[int, ...] | None = None):
    return _nn_log_softmax(x, axis=axis)


# -- Bessel functions ------------------------------------------------------------------------------

def i0e(x):
    (x,) = _real("i0e", x)
    return lax.bessel_i0e(x)


def i0(x):
    (x,) = _real("i0", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1e(x):
    (x,) = _real("i1e", x)
    return lax.bessel_i1e(x)


def i1(x):
    (x,) = _real("i1", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


# -- spence, bernoulli -----------------------------------------------------------------------------

_SPENCE_A = (4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
             8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
             3.29771340985225106936E0, 1.00000000000000000126E0)
_SPENCE_B = (6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
             1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
             3.54771340985225096217E0, 9.99999999999999998740E-1)


def spence(x):
    """Spence's function (the dilogarithm Li2(1 - x)), Cephes' rational approximation; nan for x < 0."""
    x = _f32_or_f64("spence", x)
    dt = aval(x).dtype
    gt2 = x > 2.0
    safe = jnp.where((x > 0) & (x != 1.0), x, _k(x, 0.5))
    y = jnp.where(gt2, 1.0 / safe, safe)
    gt15 = y > 1.5
    lt05 = y < 0.5
    flip = gt2 | gt15
    w = jnp.where(gt15, 1.0 / y - 1.0, jnp.where(lt05, -y, y - 1.0))
    poly = -w * _polyval(_SPENCE_A, w) / _polyval(_SPENCE_B, w)
    poly = jnp.where(lt05, np.asarray(np.pi ** 2 / 6.0, dt) - jnp.log(y) * jnp.log(1.0 - y) - poly, poly)
    poly = jnp.where(flip, -0.5 * jnp.log(y) ** 2 - poly, poly)
    return jnp.where(x < 0.0, _k(x, np.nan), jnp.where(x == 1.0, _k(x, 0), jnp.where(x == 0.0, _k(x, np.pi ** 2 / 6),
                                                                                       poly)))


def bernoulli(n: int):
    """The Bernoulli numbers B_0 .. B_n (Chowla and Hartung's formula for the even ones), as floats."""
    n = operator.index(concrete_value(n)) if not isinstance(n, int) else n
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    b3 = jnp.array([1, -1 / 2, 1 / 6])
    if n < 3:
        return b3[:n + 1]
    bn = jnp.zeros(n + 1).at[:3].set(b3)
    m = jnp.arange(4, n + 1, 2, dtype=aval(bn).dtype)
    q1 = (1. / np.pi ** 2) * jnp.cumprod(-(m - 1) * m / 4 / np.pi ** 2)
    k = jnp.arange(2, 50, dtype=aval(bn).dtype)
    q2 = jnp.sum(k[:, None] ** -m[None, :], axis=0)
    return bn.at[4::2].set(q1 * (1 + q2))
