"""xlapy.nn.initializers: jax.nn.initializers over xlapy.random (exposed as `xlapy.nn.initializers`).

Each factory returns `init(key, shape, dtype=...)`, and zeros / ones are initializers themselves, as in JAX:

    zeros, ones, constant(value)                          filled arrays
    uniform(scale), normal(stddev), truncated_normal(stddev, lower, upper)
    variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis)
        mode 'fan_in' / 'fan_out' / 'fan_avg' / 'fan_geo_avg'; distribution 'truncated_normal' / 'normal' /
        'uniform'; complex dtypes draw from a disk or a truncated complex normal, as JAX does
    glorot_* (= xavier_*), lecun_*, he_* (= kaiming_*): variance_scaling presets, uniform and normal

The formulas and the order of operations are JAX's, and keys are raw threefry keys (xlapy.random.PRNGKey),
so results equal JAX's bit for bit wherever xlapy.random does: zeros, ones, constant and every uniform
initializer (real dtypes) exactly; the normal and truncated-normal ones within a few ulp (xlapy.random.normal's
erf_inv is not XLA:CPU's; see xlapy/random.py).

orthogonal and delta_orthogonal draw a normal matrix and orthogonalize it with xlapy.numpy.linalg.qr, as
jax.random.orthogonal does (Q times the signs of R's diagonal); LAPACK's QR makes them JAX's to rounding.

Errors are XlapyErrors that are also the ValueError JAX raises for the same mistake.
"""
from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

import numpy as np

from . import numpy as xnp
from . import random
from .errors import XlapyError
from .frontend import dtypes
from .frontend.tracer import user_frame

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "ones", "orthogonal",
           "truncated_normal", "uniform", "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]

_MISSING: dict[str, str] = {}


def __getattr__(name: str):
    if name in _MISSING:
        raise AttributeError(f"xlapy.nn.initializers.{name} is not available: {_MISSING[name]}")
    raise AttributeError(f"module 'xlapy.nn.initializers' has no attribute {name!r}")


class InitializerError(XlapyError, ValueError):
    """A bad initializer argument: an XlapyError that is also the ValueError JAX raises."""


def _error(message: str) -> InitializerError:
    return InitializerError(f"{message} (at {user_frame()})")


class Initializer(Protocol):
    """What every initializer is: `init(key, shape, dtype=None) -> Array`."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
        ...


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _dtype(dtype) -> np.dtype:
    if dtype is None:
        return dtypes.default_float()
    if not isinstance(dtype, type) and hasattr(dtype, "dtype"):     # xlapy.numpy.float32 and the like
        dtype = dtype.dtype
    return dtypes.canonicalize(np.dtype(dtype))


def _no_sharding(out_sharding) -> None:
    if out_sharding is not None:
        raise _error("out_sharding is not supported: xlapy runs on one device")


def _scalar(value, dtype):
    """jnp.array(value, dtype): a strongly typed rank-0 Array."""
    return xnp.asarray(value, dtype=dtype)


# -- constants --------------------------------------------------------------------------------------------
def zeros(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None):
    """An initializer that returns zeros (default dtype: the default float)."""
    _no_sharding(out_sharding)
    return xnp.zeros(_shape(shape), _dtype(dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None):
    """An initializer that returns ones (default dtype: the default float)."""
    _no_sharding(out_sharding)
    return xnp.ones(_shape(shape), _dtype(dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    """An initializer that returns arrays filled with `value`."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None):
        _no_sharding(out_sharding)
        return xnp.full(_shape(shape), value, dtype=_dtype(dtype))
    return init


# -- plain distributions ------------------------------------------------------------------------------------
def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Uniform samples in [0, scale)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None):
        _no_sharding(out_sharding)
        dt = _dtype(dtype)
        if not dtypes.is_float(dt):
            raise _error(f"dtype argument to `uniform` must be a float dtype, got {dt}")
        return random.uniform(key, _shape(shape), dt) * _scalar(scale, dt)
    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Normal samples with mean 0 and standard deviation `stddev` (complex dtypes: a complex normal)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None):
        _no_sharding(out_sharding)
        dt = _dtype(dtype)
        return random.normal(key, _shape(shape), dt) * _scalar(stddev, dt)
    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0, upper: Any = 2.0) -> Initializer:
    """Normal samples truncated to (lower, upper), then multiplied by `stddev` (no variance correction)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None):
        _no_sharding(out_sharding)
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), dt) * _scalar(stddev, dt)
    return init


# -- variance scaling ---------------------------------------------------------------------------------------
def _size(shape: tuple[int, ...], axis) -> int:
    if isinstance(axis, (int, np.integer)):
        return shape[axis]
    return math.prod(shape[i] for i in axis)


def _compute_fans(shape: tuple[int, ...], in_axis, out_axis, batch_axis) -> tuple[float, float]:
    """(fan_in, fan_out): the input and output sizes times the receptive field (the other axes)."""
    if isinstance(in_axis, (int, np.integer)) and in_axis == -2 and len(shape) <= 1:
        raise _error(f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with "
                     f"default in_axis. Must be at least 2D or specify in_axis explicitly.")
    try:
        in_size, out_size, batch_size = (_size(shape, a) for a in (in_axis, out_axis, batch_axis))
    except IndexError:
        raise _error(f"in_axis={in_axis}, out_axis={out_axis}, batch_axis={batch_axis} do not fit a weights "
                     f"tensor of shape {shape}") from None
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def _complex_uniform(key, shape, dtype):
    """Uniform on the disk of the complex plane with mean 0 and variance 1."""
    keys = random.split(key)
    real = np.dtype(np.array(0, dtype).real.dtype)
    dtype = np.dtype(np.result_type(real, np.complex64))
    r = xnp.sqrt(2 * random.uniform(keys[0], shape, real)).astype(dtype)
    theta = 2 * np.pi * random.uniform(keys[1], shape, real).astype(dtype)
    return r * xnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
    """A centred complex normal (variance 1 before truncation) with its modulus truncated to `upper`."""
    keys = random.split(key)
    real = np.dtype(np.array(0, dtype).real.dtype)
    dtype = np.dtype(np.result_type(real, np.complex64))
    t = (1 - xnp.exp(_scalar(-(upper ** 2), dtype))) * random.uniform(keys[0], shape, real).astype(dtype)
    r = xnp.sqrt(-xnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(keys[1], shape, real).astype(dtype)
    return r * xnp.exp(1j * theta)


def variance_scaling(scale: Any, mode: str, distribution: str, in_axis: int | Sequence[int] = -2,
                     out_axis: int | Sequence[int] = -1, batch_axis: int | Sequence[int] = (),
                     dtype: Any = None) -> Initializer:
    """Samples with variance scale / n, n the fan of `mode`: 'fan_in', 'fan_out', 'fan_avg' (their mean) or
    'fan_geo_avg' (their geometric mean); `distribution` 'truncated_normal' (at 2 standard deviations, rescaled),
    'normal' or 'uniform'."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None):
        _no_sharding(out_sharding)
        shape = _shape(shape)
        dt = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise _error(f"invalid mode for variance scaling initializer: {mode}")
        variance = _scalar(scale / denominator, dt)
        is_real = dtypes.is_float(dt)
        if distribution == "truncated_normal":
            if is_real:
                # the standard deviation of a standard normal truncated to (-2, 2)
                stddev = xnp.sqrt(variance) / _scalar(.87962566103423978, dt)
                return random.truncated_normal(key, -2, 2, shape, dt) * stddev
            # the standard deviation of a complex standard normal truncated to modulus 2
            stddev = xnp.sqrt(variance) / _scalar(.95311164380491208, dt)
            return _complex_truncated_normal(key, 2, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * xnp.sqrt(variance)
        if distribution == "uniform":
            if is_real:
                return random.uniform(key, shape, dt, -1) * xnp.sqrt(3 * variance)
            return _complex_uniform(key, shape, dt) * xnp.sqrt(variance)
        raise _error(f"invalid distribution for variance scaling initializer: {distribution}")
    return init


def glorot_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                   batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Glorot (Xavier) uniform: variance_scaling(1.0, 'fan_avg', 'uniform')."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis, batch_axis=batch_axis,
                            dtype=dtype)


def glorot_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Glorot (Xavier) normal: variance_scaling(1.0, 'fan_avg', 'truncated_normal')."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """LeCun uniform: variance_scaling(1.0, 'fan_in', 'uniform')."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis, batch_axis=batch_axis,
                            dtype=dtype)


def lecun_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                 batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """LeCun normal: variance_scaling(1.0, 'fan_in', 'truncated_normal')."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
               batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """He (Kaiming) uniform: variance_scaling(2.0, 'fan_in', 'uniform')."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis, batch_axis=batch_axis,
                            dtype=dtype)


def he_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
              batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """He (Kaiming) normal: variance_scaling(2.0, 'fan_in', 'truncated_normal')."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


# -- orthogonal ----------------------------------------------------------------------------------------------------
def _random_orthogonal(key: Any, n: int, m: int, dt: np.dtype):
    """jax.random.orthogonal(key, n, (), dt, m): an n x m matrix with orthonormal rows or columns."""
    z = random.normal(key, (max(n, m), min(n, m)), dt)
    q, r = xnp.linalg.qr(z)
    d = xnp.diagonal(r)
    x = q * xnp.expand_dims(xnp.sign(d), -2)
    return xnp.swapaxes(x, -1, -2) if n < m else x


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Uniformly distributed orthogonal matrices (orthonormal rows or columns, whichever side is smaller),
    the columns along `column_axis`, times `scale`."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None):
        _no_sharding(out_sharding)
        dt = _dtype(dtype)
        shape = _shape(shape)
        if len(shape) < 2:
            raise _error("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return xnp.zeros(shape, dt)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        q = _random_orthogonal(key, n_rows, n_cols, dt)
        q = xnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        q = xnp.moveaxis(q, -1, column_axis)
        return xnp.asarray(scale, dt) * q
    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Delta orthogonal convolution kernels (3-D, 4-D or 5-D): an orthogonal matrix at the spatial centre,
    zeros elsewhere."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None):
        _no_sharding(out_sharding)
        dt = _dtype(dtype)
        shape = _shape(shape)
        if len(shape) not in (3, 4, 5):
            raise _error("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise _error("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return xnp.zeros(shape, dt).at[centre].set(ortho)
    return init
