"""jax.random's distributions beyond uniform / normal / integers (which are in random.py), with JAX's algorithms
over the same threefry bits, so each draws exactly JAX's values up to the rounding of the backend's
transcendental functions (log, exp, tan, pow: a few ulp).

| distribution | algorithm (as JAX) |
|---|---|
| exponential, cauchy, laplace, logistic, gumbel, pareto, rayleigh, weibull_min, wald, geometric, triangular, lognormal | inverse CDF of one uniform draw (gumbel: modes low and high) |
| gamma, loggamma | Marsaglia-Tsang rejection per element (one split key each, JAX's loops), boosted below a = 1 |
| beta, dirichlet, chisquare, f, t, generalized_normal, ball | from gamma / loggamma draws |
| poisson | Knuth's product of uniforms below lam = 10, Hormann's transformed rejection above |
| binomial | the inversion (geometric sums) below n*p = 10, BTRS above; multinomial by successive binomials |
| categorical, choice(p=...) | Gumbel-max (top_k without replacement); inverse CDF by searchsorted |
| maxwell, double_sided_maxwell, rademacher | norms of normals; signs from bernoulli |
| orthogonal, multivariate_normal | QR of a normal matrix with sign fix; mean + factor @ normal (cholesky / eigh / svd) |

The rejection loops (gamma, poisson, binomial) draw until accepted, so an accepted value depends on where
the comparison against the backend's log/lgamma falls: in rare borderline cases a draw can differ from JAX's.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import lax
from . import numpy as jnp
from .errors import UnimplementedError, XlapyError
from .frontend import dtypes
from .frontend.tracer import concrete_value, user_frame
from .frontend.transforms import vmap
from .random import _error, _float_dtype, _shape, bernoulli, normal, randint, uniform
from .random_threefry import check_key, staged, threefry_random_bits, threefry_split

__all__ = ["ball", "beta", "binomial", "categorical", "cauchy", "chisquare", "clone", "dirichlet",
           "double_sided_maxwell", "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel",
           "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multinomial",
           "multivariate_normal", "orthogonal", "pareto", "poisson", "rademacher", "rayleigh", "t", "triangular",
           "wald", "weibull_min", "choice_weighted"]


# -- helpers ---------------------------------------------------------------------------------------

def _keys(key, n: int = 2):
    ks = threefry_split(key, shape=(n,))
    return [lax.reshape(lax.slice(ks, (i, 0), (i + 1, 2)), (2,)) for i in range(n)]


def _asarray(x):
    return x if hasattr(x, "aval") else jnp.asarray(x)


def _pshape(name: str, shape, *params) -> tuple[int, ...]:
    """_check_broadcast_shapes: the given shape, or the broadcast of the parameters' shapes."""
    shapes = [lax.aval(p).shape for p in params]
    if shape is None:
        return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    shape = _shape(name, shape)
    try:
        if np.broadcast_shapes(shape, *shapes) != shape:
            raise ValueError
    except ValueError:
        raise _error(name, f"shape {shape} is not compatible with the parameters' shapes {shapes}") from None
    return shape


def _int_dtype(name: str, dtype) -> np.dtype:
    dt = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    if dt.kind not in "iu":
        raise _error(name, f"dtype must be an integer dtype, got {dt}")
    return dt


def _bcast(x, shape):
    return jnp.broadcast_to(x, shape)


def _finfo(dt):
    return dtypes.finfo(dt)


# -- keys ------------------------------------------------------------------------------------------

def clone(key):
    """A copy of the key (keys are immutable values here, so the key itself)."""
    return key


def key_impl(keys: Any) -> str:
    """The name of the keys' PRNG implementation: always "threefry2x32"."""
    check_key("key_impl", keys) if lax.aval(keys).ndim == 1 else None
    return "threefry2x32"


def key_dtype(impl: Any = None) -> np.dtype:
    """The dtype of keys: xlapy's keys are raw uint32[2] arrays, so uint32."""
    if impl not in (None, "threefry2x32"):
        raise UnimplementedError(f"random.key_dtype: only the threefry2x32 implementation exists, got {impl!r}")
    return np.dtype(np.uint32)


# -- inverse-CDF samplers --------------------------------------------------------------------------

def exponential(key, shape: Sequence[int] = (), dtype=None):
    """Exponential(1) samples: -log1p(-u)."""
    dt = _float_dtype("exponential", dtype)
    return _exponential(check_key("exponential", key), shape=_shape("exponential", shape), dtype=dt)


@staged
def _exponential(key, *, shape, dtype):
    u = uniform(key, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def cauchy(key, shape: Sequence[int] = (), dtype=None):
    """Standard Cauchy samples: tan(pi (u - 1/2)), u in [eps, 1)."""
    dt = _float_dtype("cauchy", dtype)
    return _cauchy(check_key("cauchy", key), shape=_shape("cauchy", shape), dtype=dt)


@staged
def _cauchy(key, *, shape, dtype):
    u = uniform(key, shape, dtype, minval=float(_finfo(dtype).eps), maxval=1.)
    return lax.tan(lax.mul(np.asarray(np.pi, dtype), lax.sub(u, np.asarray(0.5, dtype))))


def laplace(key, shape: Sequence[int] = (), dtype=None):
    """Laplace(0, 1) samples: sign(u) log1p(-|u|), u in (-1, 1)."""
    dt = _float_dtype("laplace", dtype)
    return _laplace(check_key("laplace", key), shape=_shape("laplace", shape), dtype=dt)


@staged
def _laplace(key, *, shape, dtype):
    u = uniform(key, shape, dtype, minval=-1. + float(_finfo(dtype).epsneg), maxval=1.)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape: Sequence[int] = (), dtype=None):
    """Standard logistic samples: log(u) - log1p(-u)."""
    dt = _float_dtype("logistic", dtype)
    return _logistic(check_key("logistic", key), shape=_shape("logistic", shape), dtype=dt)


@staged
def _logistic(key, *, shape, dtype):
    x = uniform(key, shape, dtype, minval=float(_finfo(dtype).tiny), maxval=1.)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def gumbel(key, shape: Sequence[int] = (), dtype=None, mode: str | None = None):
    """Standard Gumbel samples: -log(-log(u)); mode "high" spends two draws per sample for the right tail."""
    dt = _float_dtype("gumbel", dtype)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError("Must provide valid mode for gumbel got: %s" % mode)
    if mode == "highest" and dt == np.float32:
        raise UnimplementedError("random.gumbel: mode='highest' for float32 is not implemented")
    return _gumbel(check_key("gumbel", key), shape=_shape("gumbel", shape), dtype=dt, mode=mode)


@staged
def _gumbel(key, *, shape, dtype, mode):
    info = _finfo(dtype)
    if mode in ("high", "highest"):
        hl = uniform(key, (2,) + shape, dtype)
        high, low = hl[0], hl[1]
        x = jnp.where(high >= 0.5, high, high + np.asarray(2.0 ** -info.nmant, dtype) * low
                      + np.asarray(info.tiny, dtype))
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(uniform(key, shape, dtype, minval=float(info.tiny), maxval=1.)))


def pareto(key, b, shape: Sequence[int] | None = None, dtype=None):
    """Pareto(b) samples: exp(e / b), e exponential."""
    dt = _float_dtype("pareto", dtype)
    b = _asarray(b)
    shape = _pshape("pareto", shape, b)
    return _pareto(check_key("pareto", key), b, shape=shape, dtype=dt)


@staged
def _pareto(key, b, *, shape, dtype):
    b = lax.convert_element_type(b, dtype)
    e = _exponential(key, shape=shape, dtype=dtype)
    return lax.exp(e / b)


def rayleigh(key, scale, shape: Sequence[int] | None = None, dtype=None):
    """Rayleigh(scale) samples: scale sqrt(-2 log u)."""
    dt = _float_dtype("rayleigh", dtype)
    scale = _asarray(scale)
    shape = _pshape("rayleigh", shape, scale)
    return _rayleigh(check_key("rayleigh", key), scale, shape=shape, dtype=dt)


@staged
def _rayleigh(key, scale, *, shape, dtype):
    u = uniform(key, shape, dtype)
    scale = _bcast(scale.astype(dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), lax.full_like(scale, -2))))


def weibull_min(key, scale, concentration, shape: Sequence[int] = (), dtype=None):
    """Weibull samples: scale * (-log1p(-u)) ** (1 / concentration)."""
    dt = _float_dtype("weibull_min", dtype)
    return _weibull_min(check_key("weibull_min", key), _asarray(scale), _asarray(concentration),
                        shape=_shape("weibull_min", shape), dtype=dt)


@staged
def _weibull_min(key, scale, concentration, *, shape, dtype):
    u = uniform(key, shape, dtype, minval=0, maxval=1)
    return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


def wald(key, mean, shape: Sequence[int] | None = None, dtype=None):
    """Wald (inverse Gaussian) samples by Michael, Schucany and Haas's transformation."""
    dt = _float_dtype("wald", dtype)
    mean = _asarray(mean)
    shape = _pshape("wald", shape, mean)
    return _wald(check_key("wald", key), mean, shape=shape, dtype=dt)


@staged
def _wald(key, mean, *, shape, dtype):
    k1, k2 = _keys(key)
    mean = _bcast(mean.astype(dtype), shape)
    v = normal(k1, shape, dtype)
    z = uniform(k2, shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def geometric(key, p, shape: Sequence[int] | None = None, dtype=None):
    """Geometric(p) samples (trials to the first success): floor(log u / log1p(-p)) + 1."""
    dt = _int_dtype("geometric", dtype)
    p = _asarray(p)
    shape = _pshape("geometric", shape, p)
    return _geometric(check_key("geometric", key), p, shape=shape, dtype=dt)


@staged
def _geometric(key, p, *, shape, dtype):
    p = p if dtypes.is_inexact(p.dtype) else p.astype(dtypes.default_float())
    u = uniform(key, shape, p.dtype)
    u = jnp.where(u == 0, np.asarray(1, p.dtype), u)
    log_one_minus_p = _bcast(lax.log1p(-p), shape)
    g = lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1
    return g.astype(dtype)


def triangular(key, left, mode, right, shape: Sequence[int] | None = None, dtype=None):
    """Triangular(left, mode, right) samples by the inverse CDF."""
    dt = _float_dtype("triangular", dtype)
    left, mode, right = (_asarray(v) for v in (left, mode, right))
    shape = _pshape("triangular", shape, left, mode, right)
    return _triangular(check_key("triangular", key), left, mode, right, shape=shape, dtype=dt)


@staged
def _triangular(key, left, mode, right, *, shape, dtype):
    left, right, mode = (_bcast(lax.convert_element_type(v, dtype), shape) for v in (left, right, mode))
    fc = (mode - left) / (right - left)
    u = uniform(key, shape, dtype)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


def lognormal(key, sigma=np.float32(1.0), shape: Sequence[int] | None = None, dtype=None):
    """Log-normal samples: exp(sigma * normal)."""
    dt = _float_dtype("lognormal", dtype)
    sigma = _asarray(sigma)
    shape = _pshape("lognormal", shape, sigma)
    return _lognormal(check_key("lognormal", key), sigma, shape=shape, dtype=dt)


@staged
def _lognormal(key, sigma, *, shape, dtype):
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(normal(key, shape, dtype) * sigma)


def rademacher(key, shape: Sequence[int] = (), dtype=None):
    """Random signs -1 / +1 (from bernoulli(0.5))."""
    dt = _int_dtype("rademacher", dtype)
    return _rademacher(check_key("rademacher", key), shape=_shape("rademacher", shape), dtype=dt)


@staged
def _rademacher(key, *, shape, dtype):
    b = bernoulli(key, np.asarray(0.5, dtypes.default_float()), shape).astype(dtype)
    return (2 * b - 1).astype(dtype)


def maxwell(key, shape: Sequence[int] = (), dtype=None):
    """Maxwell samples: the norm of three standard normals."""
    dt = _float_dtype("maxwell", dtype)
    return _maxwell(check_key("maxwell", key), shape=_shape("maxwell", shape), dtype=dt)


@staged
def _maxwell(key, *, shape, dtype):
    return jnp.linalg.norm(normal(key, shape + (3,), dtype), axis=-1)


def double_sided_maxwell(key, loc, scale, shape: Sequence[int] = (), dtype=None):
    """Double-sided Maxwell samples: a Maxwell draw with a random sign, scaled and shifted."""
    dt = _float_dtype("double_sided_maxwell", dtype)
    loc, scale = _asarray(loc), _asarray(scale)
    params = tuple(np.broadcast_shapes(lax.aval(loc).shape, lax.aval(scale).shape))
    shape = _shape("double_sided_maxwell", shape)
    if not shape:
        shape = params
    shape = shape + params
    return _double_sided_maxwell(check_key("double_sided_maxwell", key), loc, scale, shape=shape, dtype=dt)


@staged
def _double_sided_maxwell(key, loc, scale, *, shape, dtype):
    k1, k2 = _keys(key)
    m = _maxwell(k1, shape=shape, dtype=dtype)
    sign = _rademacher(k2, shape=shape, dtype=dtype)
    return sign * m * scale + loc


# -- gamma and what is built on it -----------------------------------------------------------------

def _gamma_one(key, alpha, log_space: bool):
    """One Marsaglia-Tsang Gamma(alpha) sample (JAX's loop: a normal redrawn until v > 0, then accept/reject)."""
    dtype = lax.aval(alpha).dtype

    def k(v):
        return np.asarray(v, dtype)
    zero, one = k(0), k(1)
    boost = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, k(1. / 3.))
    c = lax.div(k(1. / 3.), lax.sqrt(d))

    def cond(kXVU):
        _, X, V, U = kXVU
        return lax.bitwise_and(lax.ge(U, lax.sub(one, lax.mul(k(0.0331), lax.mul(X, X)))),
                               lax.ge(lax.log(U), lax.add(lax.mul(X, k(0.5)),
                                                          lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

    def body(kXVU):
        def next_kxv(kxv):
            key, subkey = _keys(kxv[0])
            x = normal(subkey, (), dtype)
            return key, x, lax.add(one, lax.mul(x, c))
        key, x_key, u_key = _keys(kXVU[0], 3)
        _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_kxv, (x_key, zero, k(-1)))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = uniform(u_key, (), dtype)
        return key, X, V, U

    key, subkey = _keys(key)
    _, _, V, _ = lax.while_loop(cond, body, (key, zero, one, k(2)))
    if log_space:
        log_samples = lax.neg(_exponential(subkey, shape=(), dtype=dtype))
        log_boost = lax.select(lax.bitwise_or(boost, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(one, uniform(subkey, (), dtype))
    b = lax.select(boost, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), b)


@staged
def _gamma(key, a, *, shape, dtype, log_space):
    a = lax.convert_element_type(a, dtype)
    if lax.aval(a).shape != shape:
        a = _bcast(a, shape)
    n = math.prod(shape)
    if n == 0:
        return lax.full(shape, 0, dtype)
    keys = threefry_split(key, shape=(n,))
    alphas = lax.reshape(a, (n,))
    samples = vmap(lambda kk, aa: _gamma_one(kk, aa, log_space))(keys, alphas)
    return lax.reshape(samples, shape)


def gamma(key, a, shape: Sequence[int] | None = None, dtype=None):
    """Gamma(a, 1) samples (Marsaglia and Tsang's method, per element as JAX)."""
    dt = _float_dtype("gamma", dtype)
    a = _asarray(a)
    shape = lax.aval(a).shape if shape is None else _pshape("gamma", shape, a)
    return _gamma(check_key("gamma", key), a, shape=tuple(shape), dtype=dt, log_space=False)


def loggamma(key, a, shape: Sequence[int] | None = None, dtype=None):
    """log of Gamma(a, 1) samples, computed in log space (accurate for small a)."""
    dt = _float_dtype("loggamma", dtype)
    a = _asarray(a)
    shape = lax.aval(a).shape if shape is None else _pshape("loggamma", shape, a)
    return _gamma(check_key("loggamma", key), a, shape=tuple(shape), dtype=dt, log_space=True)


def beta(key, a, b, shape: Sequence[int] | None = None, dtype=None):
    """Beta(a, b) samples from two log-gamma draws."""
    dt = _float_dtype("beta", dtype)
    a, b = _asarray(a), _asarray(b)
    shape = _pshape("beta", shape, a, b)
    key_a, key_b = _keys(check_key("beta", key))
    a = _bcast(lax.convert_element_type(a, dt), shape)
    b = _bcast(lax.convert_element_type(b, dt), shape)
    log_a = _gamma(key_a, a, shape=shape, dtype=dt, log_space=True)
    log_b = _gamma(key_b, b, shape=shape, dtype=dt, log_space=True)
    log_max = lax.max(log_a, log_b)
    ga, gb = jnp.exp(log_a - log_max), jnp.exp(log_b - log_max)
    return ga / (ga + gb)


def dirichlet(key, alpha, shape: Sequence[int] | None = None, dtype=None):
    """Dirichlet(alpha) samples: the softmax of log-gamma draws."""
    from .nn import softmax
    dt = _float_dtype("dirichlet", dtype)
    alpha = _asarray(alpha)
    ashape = lax.aval(alpha).shape
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    shape = ashape[:-1] if shape is None else _pshape("dirichlet", shape, jnp.zeros(ashape[:-1]))
    alpha = lax.convert_element_type(alpha, dt)
    log_g = _gamma(check_key("dirichlet", key), alpha, shape=tuple(shape) + ashape[-1:], dtype=dt, log_space=True)
    return softmax(log_g, -1)


def chisquare(key, df, shape: Sequence[int] | None = None, dtype=None):
    """Chi-square(df) samples: 2 exp(loggamma(df / 2))."""
    dt = _float_dtype("chisquare", dtype)
    df = _asarray(df)
    shape = _pshape("chisquare", shape, df)
    half = lax.div(lax.convert_element_type(df, dt), np.asarray(2, dt))
    log_g = _gamma(check_key("chisquare", key), half, shape=shape, dtype=dt, log_space=True)
    return lax.mul(jnp.exp(log_g), np.asarray(2, dt))


def f(key, dfnum, dfden, shape: Sequence[int] | None = None, dtype=None):
    """F(dfnum, dfden) samples: a ratio of scaled chi-squares."""
    dt = _float_dtype("f", dtype)
    dfnum, dfden = _asarray(dfnum), _asarray(dfden)
    shape = _pshape("f", shape, dfnum, dfden)
    key_dfd, key_dfn = _keys(check_key("f", key))
    dfden = lax.convert_element_type(dfden, dt)
    dfnum = lax.convert_element_type(dfnum, dt)
    num = lax.div(chisquare(key_dfn, dfnum, shape, dt), dfnum)
    den = lax.div(chisquare(key_dfd, dfden, shape, dt), dfden)
    return lax.div(num, den)


def t(key, df, shape: Sequence[int] | None = None, dtype=None):
    """Student's t(df) samples: normal * sqrt((df / 2) / gamma(df / 2))."""
    dt = _float_dtype("t", dtype)
    df = _asarray(df)
    shape = _pshape("t", shape, df)
    df = lax.convert_element_type(df, dt)
    key_n, key_g = _keys(check_key("t", key))
    n = normal(key_n, shape, dt)
    half_df = lax.div(df, np.asarray(2, dt))
    g = _gamma(key_g, half_df, shape=shape, dtype=dt, log_space=False)
    return n * jnp.sqrt(half_df / g)


def generalized_normal(key, p: float, shape: Sequence[int] = (), dtype=None):
    """Generalized normal samples of power p: a random sign times gamma(1/p) ** (1/p)."""
    dt = _float_dtype("generalized_normal", dtype)
    shape = _shape("generalized_normal", shape)
    k0, k1 = _keys(check_key("generalized_normal", key))
    g = _gamma(k0, _bcast(jnp.asarray(1 / p, dt), shape), shape=shape, dtype=dt, log_space=False)
    r = _rademacher(k1, shape=shape, dtype=dt)
    return r * g ** (1 / p)


def ball(key, d: int, p: float = 2, shape: Sequence[int] = (), dtype=None):
    """Samples uniform in the d-dimensional unit p-norm ball."""
    dt = _float_dtype("ball", dtype)
    shape = _shape("ball", shape)
    d = int(d)
    k1, k2 = _keys(check_key("ball", key))
    g = generalized_normal(k1, p, (*shape, d), dt)
    e = _exponential(k2, shape=shape, dtype=dt)
    return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


# -- discrete samplers with loops ------------------------------------------------------------------

def _poisson_knuth(key, lam, shape, dtype, max_iters):
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _keys(rng)
        k = lax.select(log_prod > -lam, k + np.asarray(1, dtype), k)
        u = uniform(subkey, shape, np.float32)
        return i + 1, k, rng, log_prod + jnp.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return jnp.any(log_prod > -lam) & (i < max_iters)
    init = (jnp.asarray(0, dtype), lax.full(shape, 0, dtype), key, lax.full(shape, 0, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return (k - np.asarray(1, dtype)).astype(dtype)


def _poisson_rejection(key, lam, shape, dtype, max_iters):
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sk0, sk1 = _keys(key, 3)
        u = uniform(sk0, shape, lam.dtype) - 0.5
        v = uniform(sk1, shape, lam.dtype)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        tt = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= tt
        accept = accept1 | (~reject & accept2)
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < max_iters)
    init = (jnp.asarray(0, dtype), lax.full(shape, -1, lam.dtype), lax.full(shape, False, np.bool_), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


def poisson(key, lam, shape: Sequence[int] | None = None, dtype=None):
    """Poisson(lam) samples: Knuth's method below lam = 10, transformed rejection above (both as JAX)."""
    dt = _int_dtype("poisson", dtype)
    lam = _asarray(lam)
    shape = lax.aval(lam).shape if shape is None else _shape("poisson", shape)
    lam = lax.convert_element_type(_bcast(lam, shape), np.float32)
    return _poisson(check_key("poisson", key), lam, shape=tuple(shape), dtype=dt)


@staged
def _poisson(key, lam, *, shape, dtype):
    use_knuth = jnp.isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    lam_rej = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    max_iters = np.iinfo(dtype).max
    result = lax.select(use_knuth, _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection(key, lam_rej, shape, dtype, max_iters))
    return lax.select(lam == 0, jnp.zeros_like(result), result)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_approx_tail(k):
    dt = k.dtype
    vals = jnp.asarray(np.asarray(_STIRLING_TAIL, dt))
    use_tail = k <= 9
    k = lax.clamp(np.asarray(0.0, dt), k, np.asarray(9.0, dt))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    k = jnp.floor(k)
    return lax.select(use_tail, vals[jnp.asarray(k, dtype="int32")], approx)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
    log1mp = jnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        subkey, key = _keys(key)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = uniform(subkey, shape, prob.dtype)
        geom = jnp.ceil(jnp.log(u) / log1mp)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond(carry):
        i, geom_sum = carry[0], carry[2]
        return jnp.any(geom_sum <= count) & (i < max_iters)
    init = (jnp.asarray(0, dtype), lax.full(shape, 0, prob.dtype), lax.full(shape, 0, prob.dtype), key)
    k = lax.while_loop(cond, body, init)[1]
    return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype, max_iters):
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sk0, sk1 = _keys(key, 3)
        u = uniform(sk0, shape, prob.dtype)
        v = uniform(sk1, shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, accepted = carry[0], carry[2]
        return jnp.any(~accepted) & (i < max_iters)
    init = (jnp.asarray(0, dtype), lax.full(shape, -1, prob.dtype), lax.full(shape, False, np.bool_), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


def binomial(key, n, p, shape: Sequence[int] | None = None, dtype=None):
    """Binomial(n, p) samples as floats: inversion below n*min(p, 1-p) = 10, BTRS above (both as JAX)."""
    dt = _float_dtype("binomial", dtype)
    n, p = _asarray(n), _asarray(p)
    shape = _pshape("binomial", shape, n, p)
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.default_float())
    return _binomial(check_key("binomial", key), n, p, shape=shape, dtype=dt)


@staged
def _binomial(key, count, prob, *, shape, dtype):
    count = _bcast(lax.convert_element_type(count, prob.dtype), shape)
    prob = _bcast(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    max_iters = float(_finfo(dtype).max)
    samples = lax.select(use_inversion, _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
                         _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


def multinomial(key, n, p, *, shape: Sequence[int] | None = None, dtype=None, unroll: int | bool = 1):
    """Multinomial counts over the last axis of p, by successive binomials on the remainder (a scan)."""
    key = check_key("multinomial", key)
    n, p = (jnp.asarray(v) for v in (n, p))
    dt = dtypes.result_type(n, p)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float()
    n, p = n.astype(dt), p.astype(dt)
    shape = p.shape if shape is None else _shape("multinomial", shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.broadcast_to(p, shape)
    p = jnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, np.asarray(1, dt), remaining)
    keys = threefry_split(key, shape=(ratios.shape[0],))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = binomial(k, remainder, jnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count
    _, counts = lax.scan(step, n, (ratios, keys))
    out = jnp.moveaxis(counts, 0, -1)
    return out.astype(dt if dtype is None else dtypes.canonicalize(dtype))


# -- categorical, weighted choice, matrices --------------------------------------------------------

def categorical(key, logits, axis: int = -1, shape: Sequence[int] | None = None, replace: bool = True,
                mode: str | None = None):
    """Samples from the categorical distribution of `logits` along `axis` (Gumbel-max)."""
    key = check_key("categorical", key)
    logits = jnp.asarray(logits)
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = batch_shape if shape is None else _pshape("categorical", shape, jnp.zeros(batch_shape))
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= logits.ndim
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % logits.ndim, logits.shape[axis])
        g = gumbel(key, (*prefix, *logits_shape), logits.dtype, mode=mode)
        return jnp.argmax(g + lax.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
    logits = logits + gumbel(key, logits.shape, logits.dtype, mode=mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of categories "
                         f"({logits.shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
    dims = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dims)


def choice_weighted(key, a, shape, replace: bool, p, axis: int, mode):
    """random.choice with weights p (JAX's algorithm: inverse CDF with replacement, Gumbel top-k without)."""
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(concrete_value(a))
    else:
        axis = axis % arr.ndim
        n_inputs = arr.shape[axis]
    p = jnp.asarray(p)
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.default_float())
    if p.shape != (n_inputs,):
        raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                         f"p has shape {p.shape} and a.shape[axis] is {n_inputs}.")
    n_draws = math.prod(shape)
    if replace:
        p_cuml = jnp.cumsum(p)
        r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
        ind = jnp.searchsorted(p_cuml, r).astype(dtypes.default_int())
    else:
        g = gumbel(key, (n_inputs,), dtype=p.dtype, mode=mode) + jnp.log(p)
        ind = lax.top_k(g, n_draws)[1].astype(dtypes.default_int())
    result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    return result.reshape(shape if arr.ndim == 0 else arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


def orthogonal(key, n: int, shape: Sequence[int] = (), dtype=None, m: int | None = None):
    """Samples uniform (Haar) over orthogonal n x m matrices: QR of a normal matrix, signs fixed by diag(R)."""
    dt = _float_dtype("orthogonal", dtype)
    shape = _shape("orthogonal", shape)
    n = int(n)
    m = n if m is None else int(m)
    z = normal(check_key("orthogonal", key), (*shape, max(n, m), min(n, m)), dt)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


def multivariate_normal(key, mean, cov, shape: Sequence[int] | None = None, dtype=None, method: str = "cholesky"):
    """Samples of N(mean, cov): mean + factor @ normal, factor from cholesky, eigh or svd."""
    key = check_key("multivariate_normal", key)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean, cov = jnp.asarray(mean), jnp.asarray(cov)
    dt = dtypes.result_type(mean, cov)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float()
    mean, cov = mean.astype(dt), cov.astype(dt)
    dt = dt if dtype is None else _float_dtype("multivariate_normal", dtype)
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == "
                         f"{cov.shape}.")
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = _pshape("multivariate_normal", shape, jnp.zeros(mean.shape[:-1]), jnp.zeros(cov.shape[:-2]))
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    samples = normal(key, tuple(shape) + mean.shape[-1:], dt)
    return mean + jnp.einsum("...ij,...j->...i", factor, samples)
