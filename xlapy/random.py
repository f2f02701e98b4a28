"""xlapy.random: jax.random's API over raw threefry keys, bit for bit JAX's default generator.

Keys are JAX's raw (legacy) keys: uint32[2] arrays. `PRNGKey(seed)` and `key(seed)` both return one —
there are no typed key arrays, so `key_data` / `wrap_key_data` are the identity. Every sampler is built
from xlapy.lax ops (see random_threefry.py), so it works eagerly and under jit; outside jit each call runs
as one compiled program.

Bit-exactness (against JAX on CPU): keys, split, fold_in, bits, randint, permutation, choice and bernoulli
are integer (or compare-only) computations and match exactly. uniform matches exactly: XLA:CPU fuses its
`floats * (max - min) + min` into an FMA, which `random_numerics.mul_add` reproduces. normal and
truncated_normal go through erf_inv(u) = p(-log1p(-u*u)) * u with XLA's polynomial; they differ from JAX by
1-3 ulp on ~1% of values, because the backend's log1p (and erf) are not XLA:CPU's approximations.

The other distributions (gamma, beta, poisson, binomial, categorical, ...) are in random_distributions.py,
imported at the end of this module; choice with weights `p` is there too (choice_weighted).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import lax
from .errors import UnimplementedError, XlapyError
from .frontend import dtypes
from .frontend.tracer import concrete_value, user_frame
from .random_numerics import erf_inv, mul_add, next_after
from .random_threefry import (UINT_DTYPES, check_key, seed_array, staged, threefry_fold_in, threefry_random_bits,
                              threefry_seed, threefry_split)

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform", "normal",
           "bernoulli", "randint", "permutation", "choice", "truncated_normal"]


def _error(name: str, message: str) -> XlapyError:
    return XlapyError(f"random.{name}: {message} (at {user_frame()})")


def _shape(name: str, shape: Any) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(int(d) < 0 for d in shape):
        raise _error(name, f"shape {shape} has a negative dimension")
    return tuple(int(d) for d in shape)


def _float_dtype(name: str, dtype) -> np.dtype:
    dt = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    if dt.kind != "f" and dt != dtypes.bfloat16:
        raise _error(name, f"dtype must be a floating point dtype, got {dt}")
    return dt


def _finfo(dtype):
    return dtypes.finfo(dtype)


# -- keys ------------------------------------------------------------------------------------------

def PRNGKey(seed: Any, *, impl: Any = None):
    """A raw threefry key (uint32[2]) from an integer seed: [seed >> 32, seed & 0xFFFFFFFF]."""
    if impl not in (None, "threefry2x32"):
        raise UnimplementedError(f"random.PRNGKey: only the threefry2x32 implementation exists, got {impl!r}")
    return threefry_seed(seed_array(seed))


def key(seed: Any, *, impl: Any = None):
    """Like PRNGKey; xlapy has no typed key arrays, so this returns the same raw uint32[2] key."""
    return PRNGKey(seed, impl=impl)


def key_data(keys: Any):
    """The uint32 data of raw keys (the identity: keys are raw)."""
    return keys


def wrap_key_data(key_bits_array: Any, *, impl: Any = None):
    """The identity on uint32[..., 2] key data (keys are raw)."""
    return key_bits_array


def split(key: Any, num: int | Sequence[int] = 2):
    """`num` new keys (a uint32[*num, 2] array)."""
    return threefry_split(check_key("split", key), shape=_shape("split", num))


def fold_in(key: Any, data: Any):
    """A new key from `key` and a 32-bit integer `data`."""
    key = check_key("fold_in", key)
    if lax.aval(data).shape != ():
        raise _error("fold_in", f"data must be a scalar, got {lax.aval(data)}")
    if hasattr(data, "aval"):
        data = lax.convert_element_type(data, np.uint32)
    elif isinstance(data, int):
        data = np.uint32(data % 2 ** 32)
    else:
        data = np.asarray(data).astype(np.uint32)
    return threefry_fold_in(key, data)


def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None):
    """Uniform random unsigned integers (uint32 by default, uint64 with enable_x64)."""
    dt = np.dtype(np.uint64 if dtypes.config.enable_x64 else np.uint32) if dtype is None \
        else dtypes.canonicalize(dtype)
    if dt.kind != "u":
        raise _error("bits", f"dtype must be an unsigned integer dtype, got {dt}")
    return threefry_random_bits(check_key("bits", key), bit_width=dt.itemsize * 8, shape=_shape("bits", shape))


# -- floating point samplers -----------------------------------------------------------------------

def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0., maxval: Any = 1.):
    """Uniform floats in [minval, maxval)."""
    dt = _float_dtype("uniform", dtype)
    shape = _shape("uniform", shape)
    return _uniform(check_key("uniform", key), minval, maxval, shape=shape, dtype=dt)


def _to_shape(x, shape: tuple[int, ...]):
    """Broadcast minval/maxval to the sample shape (numpy rules, leading dims added)."""
    a = lax.aval(x)
    if a.ndim > len(shape) or np.broadcast_shapes(a.shape, shape) != shape:
        raise _error("uniform", f"minval/maxval of shape {a.shape} do not broadcast to the shape {shape}")
    x = lax.reshape(x, (1,) * (len(shape) - a.ndim) + a.shape)
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape))))


@staged
def _uniform(key, minval, maxval, *, shape: tuple[int, ...], dtype: np.dtype):
    minval = _to_shape(lax.convert_element_type(minval, dtype), shape)
    maxval = _to_shape(lax.convert_element_type(maxval, dtype), shape)
    fi = _finfo(dtype)
    nbits, nmant = fi.bits, fi.nmant
    rng_bits = 8 if nmant < 8 else nbits
    uint = UINT_DTYPES[nbits]
    raw = threefry_random_bits(key, bit_width=rng_bits, shape=shape)
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, uint)
    # random mantissa under the exponent of 1.0 gives a float in [1, 2); shift and scale it
    mant = lax.shift_right_logical(raw, np.asarray(rng_bits - nmant, uint))
    one_bits = np.array(1.0, dtype).view(uint)
    floats = lax.sub(lax.bitcast_convert_type(lax.bitwise_or(mant, one_bits), dtype), np.array(1.0, dtype))
    return lax.max(minval, mul_add(floats, lax.sub(maxval, minval), minval))


def _maximum(x, y):
    from .frontend import operators
    return operators.maximum(x, y)


def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None):
    """Standard normal samples: sqrt(2) * erf_inv(u) for u uniform in (-1, 1)."""
    dt = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    shape = _shape("normal", shape)
    key = check_key("normal", key)
    if dt.kind == "c":
        return _normal_complex(key, shape=shape, dtype=dt)
    return _normal_real(key, shape=shape, dtype=_float_dtype("normal", dt))


@staged
def _normal_real(key, *, shape: tuple[int, ...], dtype: np.dtype):
    lo = np.array(-(1.0 - 2.0 ** -(_finfo(dtype).nmant + 1)), dtype)      # nextafter(-1, 0)
    u = _uniform(key, lo, np.array(1., dtype), shape=shape, dtype=dtype)
    return lax.mul(np.array(np.sqrt(2), dtype), erf_inv(u))


@staged
def _normal_complex(key, *, shape: tuple[int, ...], dtype: np.dtype):
    real = np.dtype(np.array(0, dtype).real.dtype)
    keys = threefry_split(key, shape=(2,))
    re, im = (_normal_real(lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,)), shape=shape, dtype=real)
              for i in (0, 1))
    out = lax.complex(re, im)
    return lax.div(out, lax.full(shape, np.array(np.sqrt(2), dtype)))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None, dtype: Any = None):
    """Normal samples truncated to (lower, upper), by inverting the CDF."""
    dt = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = np.broadcast_shapes(lax.aval(lower).shape, lax.aval(upper).shape)
    return _truncated_normal(check_key("truncated_normal", key), lower, upper,
                             shape=_shape("truncated_normal", shape), dtype=dt)


@staged
def _truncated_normal(key, lower, upper, *, shape: tuple[int, ...], dtype: np.dtype):
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lower / sqrt2)
    b = lax.erf(upper / sqrt2)
    u = _uniform(key, a, b, shape=shape, dtype=dtype)
    out = sqrt2 * erf_inv(u)
    lo = next_after(lax.stop_gradient(lower), up=True)
    hi = next_after(lax.stop_gradient(upper), up=False)
    return _minimum(hi, _maximum(lo, out))


def _minimum(x, y):
    from .frontend import operators
    return operators.minimum(x, y)


def bernoulli(key: Any, p: Any = np.float32(0.5), shape: Sequence[int] | None = None, mode: str = "low"):
    """Booleans that are True with probability p."""
    if mode not in ("low", "high"):
        raise _error("bernoulli", f"mode must be 'high' or 'low', got {mode!r}")
    dt = lax.aval(p).dtype
    if dt.kind != "f" and dt != dtypes.bfloat16:
        raise _error("bernoulli", f"p must have a floating dtype, got {dt}")
    if not hasattr(p, "aval"):
        p = np.asarray(concrete_value(p), dt)
    shape = lax.aval(p).shape if shape is None else _shape("bernoulli", shape)
    return _bernoulli(check_key("bernoulli", key), p, shape=shape, mode=mode)


@staged
def _bernoulli(key, p, *, shape: tuple[int, ...], mode: str):
    dt = lax.aval(p).dtype
    if mode == "high":
        u = _uniform(key, 0., 1., shape=(2,) + shape, dtype=dt)
        u1 = lax.reshape(lax.slice(u, (0,) * (len(shape) + 1), (1,) + shape), shape)
        u2 = lax.reshape(lax.slice(u, (1,) + (0,) * len(shape), (2,) + shape), shape)
        u2 = u2 * np.asarray(2.0 ** -_finfo(dt).nmant, dt)
        return u2 < p - u1
    return _uniform(key, 0., 1., shape=shape, dtype=dt) < p


# -- integer samplers ------------------------------------------------------------------------------

def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None):
    """Uniform integers in [minval, maxval) (JAX's double-width modulus method)."""
    dt = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    if dt.kind not in "iu":
        raise _error("randint", f"dtype must be an integer dtype, got {dt}")
    shape = _shape("randint", shape)
    key = check_key("randint", key)
    minval, maxval = (_int_operand(v) for v in (minval, maxval))
    if dt.itemsize < 4:     # sample in 32 bits to avoid biased results
        info = np.iinfo(dt)
        return lax.convert_element_type(
            _randint(key, _clip_int(minval, np.int32, info.min, info.max),
                     _clip_int(maxval, np.int32, info.min, info.max + 1), shape=shape, dtype=np.dtype(np.int32)), dt)
    return _randint(key, minval, maxval, shape=shape, dtype=dt)


def _int_operand(v):
    """jnp.asarray(v), with floats converted to the default int."""
    a = lax.aval(v)
    if not hasattr(v, "aval"):
        v = concrete_value(v)
    if a.dtype.kind not in "iu":
        v = lax.convert_element_type(v, dtypes.default_int())
    return v


def _clip_int(v, dtype, lo: int, hi: int):
    v = lax.convert_element_type(v, dtype)
    return lax.clamp(np.asarray(lo, dtype), v, np.asarray(hi, dtype))


def _convert_and_clip_integer(v, dtype):
    """Convert an integer array to `dtype`, clipping to its range instead of wrapping."""
    src = lax.aval(v).dtype
    lo = max(np.iinfo(dtype).min, np.iinfo(src).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(src).max)
    clipped = lax.clamp(np.asarray(lo, src), v, np.asarray(hi, src))
    return lax.convert_element_type(clipped, dtype)


@staged
def _randint(key, minval, maxval, *, shape: tuple[int, ...], dtype: np.dtype):
    np.broadcast_shapes(shape, lax.aval(minval).shape, lax.aval(maxval).shape)
    max_in_maxval_dtype = _convert_and_clip_integer(np.asarray(np.iinfo(dtype).max, dtype), lax.aval(maxval).dtype)
    maxval_out_of_range = lax.gt(maxval, max_in_maxval_dtype)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    nbits = dtype.itemsize * 8
    unsigned = UINT_DTYPES[nbits]
    keys = threefry_split(key, shape=(2,))
    k1, k2 = (lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,)) for i in (0, 1))
    higher = threefry_random_bits(k1, bit_width=nbits, shape=shape)
    lower = threefry_random_bits(k2, bit_width=nbits, shape=shape)

    def full(v, dt=unsigned):
        return lax.full(shape, v, dt)

    def bcast(x):
        a = lax.aval(x)
        x = lax.reshape(x, (1,) * (len(shape) - a.ndim) + a.shape)
        return lax.broadcast_in_dim(x, shape, tuple(range(len(shape)))) if lax.aval(x).shape != shape else x
    minval, maxval = bcast(minval), bcast(maxval)
    out_of_range = bcast(maxval_out_of_range)
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    # span = 1 when maxval <= minval, so minval is returned
    span = lax.select(lax.le(maxval, minval), full(1), span)
    span = lax.select(lax.bitwise_and(out_of_range, lax.gt(maxval, minval)), lax.add(span, full(1)), span)
    # (hi * 2**nbits + lo) % span, with 2**nbits % span computed without overflow
    multiplier = lax.rem(full(2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False):
    """A random permutation of range(x) (an int) or of x along `axis` (sort-based shuffle rounds)."""
    key = check_key("permutation", key)
    a = lax.aval(x)
    if a.ndim == 0:
        if a.dtype.kind not in "iu":
            raise _error("permutation", "x must be an integer or at least 1-dimensional")
        n = int(concrete_value(x))
        return _shuffle(key, lax.iota(dtypes.default_int(), n), axis=0)
    axis = axis % a.ndim
    if independent or a.ndim == 1:
        return _shuffle(key, x, axis=axis)
    ind = _shuffle(key, lax.iota(dtypes.default_int(), a.shape[axis]), axis=0)
    return _take(x, ind, axis)


def _take(x, ind, axis: int):
    from .frontend.indexing import getitem
    return getitem(x, (slice(None),) * axis + (ind,))


@staged
def _shuffle(key, x, *, axis: int):
    a = lax.aval(x)
    uint32max = np.iinfo(np.uint32).max
    num_rounds = int(np.ceil(3 * np.log(max(1, a.size)) / np.log(uint32max)))
    for _ in range(num_rounds):
        keys = threefry_split(key, shape=(2,))
        key, subkey = (lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,)) for i in (0, 1))
        sort_keys = threefry_random_bits(subkey, bit_width=32, shape=a.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None, axis: int = 0,
           mode: str | None = None):
    """Samples from range(a) (an int) or from a's entries along `axis`, uniformly or with weights `p`."""
    key = check_key("choice", key)
    shape = _shape("choice", shape)
    av = lax.aval(a)
    if av.ndim == 0:
        n_inputs = int(concrete_value(a))
    else:
        axis = axis % av.ndim
        n_inputs = av.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return lax.full(shape, 0, av.dtype)
    if n_inputs <= 0:
        raise _error("choice", "a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise _error("choice", f"cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) "
                               f"when replace=False")
    if p is not None:
        return choice_weighted(key, a, shape, replace, p, axis, mode)
    if replace:
        ind = randint(key, shape, 0, n_inputs)
        result = ind if av.ndim == 0 else _take(a, ind, axis)
    else:
        perm = permutation(key, n_inputs if av.ndim == 0 else a, axis)
        from .frontend.indexing import getitem
        result = getitem(perm, (slice(None),) * (0 if av.ndim == 0 else axis) + (slice(0, n_draws),))
    out_shape = shape if av.ndim == 0 else av.shape[:axis] + shape + av.shape[axis + 1:]
    return lax.reshape(result, out_shape)


# the distributions built on the samplers above (imported last: they import this module)
from .random_distributions import (ball, beta, binomial, categorical, cauchy, chisquare, choice_weighted,  # noqa: E402
                                   clone, dirichlet, double_sided_maxwell, exponential, f, gamma,
                                   generalized_normal, geometric, gumbel, key_dtype, key_impl, laplace, loggamma,
                                   logistic, lognormal, maxwell, multinomial, multivariate_normal, orthogonal, pareto,
                                   poisson, rademacher, rayleigh, t, triangular, wald, weibull_min)

__all__ += ["ball", "beta", "binomial", "categorical", "cauchy", "chisquare", "clone", "dirichlet",
            "double_sided_maxwell", "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel",
            "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multinomial",
            "multivariate_normal", "orthogonal", "pareto", "poisson", "rademacher", "rayleigh", "t", "triangular",
            "wald", "weibull_min"]
