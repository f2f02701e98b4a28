"""xlapy.nn: jax.nn's activations, softmax family, logsumexp and one_hot, with JAX's formulas (so the same
HLO ops in the same order) over xlapy.lax. They work eagerly and under jit.

Numerics follow JAX: softplus is logaddexp(x, 0); softmax / log_softmax / logsumexp subtract the
stop_gradient'ed maximum (logsumexp replaces a non-finite maximum by 0, so rows of -inf give -inf, not
NaN); gelu(approximate=False) uses erfc, evaluated with XLA's f32 polynomial (f16/bf16 through f32; for
f64 erfc is 1 - erf). Results agree with JAX to the ulp-level differences of the backend's
exp/log/tanh, not bit for bit.

`xlapy.nn.initializers` (jax.nn.initializers) lives in nn_initializers.py.
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from . import lax
from . import nn_initializers as initializers
from .errors import XlapyError
from .frontend import dtypes, operators as ops
from .frontend.tracer import concrete_value, user_frame

# jax.nn.initializers is a module: `xlapy.nn.initializers` is nn_initializers.py, importable by that name too
# (`import xlapy.nn.initializers`, `from xlapy.nn.initializers import glorot_uniform`).
sys.modules[__name__ + ".initializers"] = initializers

__all__ = ["identity", "relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "swish", "log_sigmoid", "elu",
           "celu", "selu", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish", "mish", "gelu",
           "glu", "softmax", "log_softmax", "logsumexp", "one_hot", "standardize"]


# -- helpers ---------------------------------------------------------------------------------------

def _array(x: Any) -> Any:
    """jnp.asarray: Arrays and tracers as they are; lists, numpy values and Python scalars become arrays."""
    if hasattr(x, "aval"):
        return x
    from .frontend.array import Array
    return Array(concrete_value(x), weak_type=dtypes.is_python_scalar(x))


def _inexact(x: Any) -> Any:
    """promote_args_inexact: integers and bools become the default float."""
    x = _array(x)
    a = lax.aval(x)
    if dtypes.is_inexact(a.dtype):
        return x
    return lax.convert_element_type(x, dtypes.default_float(), weak_type=a.weak_type)


def _where(cond, x, y):
    """jnp.where(cond, x, y) with numpy broadcasting and JAX's promotion of x and y."""
    x, y = ops.promote_broadcast("where", x, y)
    shape = np.broadcast_shapes(lax.aval(cond).shape, lax.aval(x).shape)
    def fit(v):
        a = lax.aval(v)
        return v if a.shape == shape else lax.broadcast_in_dim(v, shape, tuple(range(len(shape) - a.ndim, len(shape))))
    return lax.select(fit(cond), fit(x), fit(y))


def _const(x, value):
    """A scalar of x's dtype."""
    return np.asarray(value, lax.aval(x).dtype)


def _axes(x, axis) -> tuple[int, ...]:
    nd = lax.aval(x).ndim
    if axis is None:
        return tuple(range(nd))
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for a in axis:
        if not -max(nd, 1) <= a < max(nd, 1):
            raise XlapyError(f"nn: axis {a} is out of bounds for an array of rank {nd} (at {user_frame()})")
    return tuple(sorted({int(a) % nd if nd else 0 for a in axis}))


def _keep(out, x, axes):
    shape = tuple(1 if i in axes else s for i, s in enumerate(lax.aval(x).shape))
    return lax.reshape(out, shape)


def _reduce(kind: str, x, axes, keepdims: bool):
    fn = {"max": lax.reduce_max, "sum": lax.reduce_sum}[kind]
    out = fn(x, axes)
    return _keep(out, x, axes) if keepdims else out


def _masked(x, where, fill):
    return x if where is None else _where(where, x, _const(x, fill))


# -- elementwise activations -----------------------------------------------------------------------

def identity(x):
    return _array(x)


def relu(x):
    """max(x, 0)."""
    return ops.maximum(_array(x), 0)


def relu6(x):
    """min(max(x, 0), 6)."""
    return ops.minimum(ops.maximum(_array(x), 0), 6.)


def sigmoid(x):
    return lax.logistic(_array(x))


def _logaddexp(x1, x2):
    """log(exp(x1) + exp(x2)) without overflow (jnp.logaddexp for real floats)."""
    x1, x2 = ops.promote_broadcast("logaddexp", _inexact(x1), _inexact(x2))
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2),
                      lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))


def softplus(x):
    """log(1 + exp(x)), as logaddexp(x, 0)."""
    return _logaddexp(x, 0)


def soft_sign(x):
    x = _array(x)
    return ops.true_divide(x, ops.add(lax.abs(x), 1))


def silu(x):
    """x * sigmoid(x)."""
    x = _array(x)
    return ops.multiply(x, sigmoid(x))


swish = silu


def log_sigmoid(x):
    """-softplus(-x)."""
    return ops.negative(softplus(ops.negative(_array(x))))


def elu(x, alpha: Any = 1.0):
    x = _array(x)
    positive = ops.greater(x, 0)
    return _where(positive, x, ops.multiply(alpha, lax.expm1(_where(positive, 0., x))))


def celu(x, alpha: Any = 1.0):
    x = _array(x)
    return ops.add(ops.maximum(x, 0.0), ops.multiply(alpha, lax.expm1(ops.true_divide(ops.minimum(x, 0.0), alpha))))


def selu(x):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return ops.multiply(scale, elu(x, alpha))


def leaky_relu(x, negative_slope: Any = 1e-2):
    x = _array(x)
    return _where(ops.greater_equal(x, 0), x, ops.multiply(negative_slope, x))


def hard_tanh(x):
    x = _array(x)
    return _where(ops.greater(x, 1), 1, _where(ops.less(x, -1), -1, x))


def hard_sigmoid(x):
    return ops.true_divide(relu6(ops.add(_array(x), 3.)), 6.)


def hard_silu(x):
    x = _array(x)
    return ops.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def mish(x):
    x = _array(x)
    return ops.multiply(x, lax.tanh(softplus(x)))


def gelu(x, approximate: bool = True):
    """x * Phi(x); approximate=True uses the tanh form, False the exact erfc form."""
    x = _inexact(x)
    dt = lax.aval(x).dtype
    if approximate:
        sqrt_2_over_pi = np.asarray(np.sqrt(2 / np.pi), dt)
        inner = ops.multiply(sqrt_2_over_pi, ops.add(x, ops.multiply(0.044715, ops.power(x, 3))))
        cdf = ops.multiply(0.5, ops.add(1.0, lax.tanh(inner)))
        return ops.multiply(x, cdf)
    sqrt_half = np.asarray(np.sqrt(0.5), dt)
    return ops.multiply(ops.multiply(0.5, x), erfc(ops.multiply(ops.negative(x), sqrt_half)))


def glu(x, axis: int = -1):
    """First half of `axis` gated by the sigmoid of the second half."""
    x = _array(x)
    a = lax.aval(x)
    axis = _axes(x, axis)[0]
    size = a.shape[axis]
    if size % 2:
        raise XlapyError(f"nn.glu: axis {axis} of {a} must have an even size (at {user_frame()})")
    start, mid, end = [0] * a.ndim, list(a.shape), list(a.shape)
    mid[axis] = size // 2
    upper_start = [0] * a.ndim
    upper_start[axis] = size // 2
    return ops.multiply(lax.slice(x, start, mid), sigmoid(lax.slice(x, upper_start, end)))


# -- erfc (XLA's f32 approximation) ----------------------------------------------------------------

_ERFC_SMALL = (7.85386146e-05, -0.000801019371, 0.00518832775, -0.0268538129, 0.112835854, -0.37612626,
               1.12837911)     # erf(x) = x * P(x^2) for |x| < 1
_ERFC_P = (0.0232682, -0.138703942, 0.368742466, -0.582473278, 0.621000469, -0.494451523, 0.340488,
           -0.274112701, 0.563825965)      # erfc(x) = exp(-x^2) / |x| * P(1/x^2) for 1 <= |x| < 2
_ERFC_R = (-10.477664, 12.9772, -7.49551868, 2.92101908, -1.01526523, 0.42184633, -0.282076746,
           0.564189494)     # ... * R(1/x^2) for |x| >= 2
_MAXLOG_F32 = 88.7228394


def _poly(coeffs, z):
    p = lax.mul(z, np.float32(coeffs[0]))
    for c in coeffs[1:-1]:
        p = lax.mul(lax.add(p, np.float32(c)), z)
    return lax.add(p, np.float32(coeffs[-1]))


def _erfc32(x):
    f32 = np.float32
    abs_x = lax.abs(x)
    z = lax.mul(x, x)
    small = lax.sub(f32(1), lax.mul(x, _poly(_ERFC_SMALL, z)))
    neg_z = lax.neg(z)
    scale = lax.mul(lax.exp(neg_z), lax.div(f32(1), abs_x))
    inv_z = lax.div(f32(1), z)
    poly = lax.select(lax.lt(abs_x, f32(2)), _poly(_ERFC_P, inv_z), _poly(_ERFC_R, inv_z))
    large = lax.select(lax.lt(neg_z, f32(-_MAXLOG_F32)), lax.full_like(x, 0), lax.mul(scale, poly))
    large = lax.select(lax.lt(x, f32(0)), lax.sub(f32(2), large), large)
    return lax.select(lax.lt(abs_x, f32(1)), small, large)


def erfc(x):
    """1 - erf(x) without cancellation for large x (XLA's f32 algorithm; f16/bf16 via f32; f64 as 1 - erf)."""
    x = _inexact(x)
    dt = lax.aval(x).dtype
    if dt == np.float32:
        return _erfc32(x)
    if dt == np.float64:
        return lax.sub(np.float64(1), lax.erf(x))
    return lax.convert_element_type(_erfc32(lax.convert_element_type(x, np.float32)), dt)


# -- softmax family --------------------------------------------------------------------------------

def softmax(x, axis: int | Sequence[int] | None = -1, where: Any = None):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    x = _inexact(x)
    axes = _axes(x, axis)
    x_max = _reduce("max", _masked(x, where, -np.inf), axes, True)
    unnormalized = lax.exp(ops.subtract(_masked(x, where, -np.inf), lax.stop_gradient(x_max)))
    result = ops.true_divide(unnormalized, _reduce("sum", _masked(unnormalized, where, 0), axes, True))
    return result if where is None else _where(where, result, 0)


def log_softmax(x, axis: int | Sequence[int] | None = -1, where: Any = None):
    """x - max - log(sum(exp(x - max))) along `axis`."""
    x = _inexact(x)
    axes = _axes(x, axis)
    x_safe = _masked(x, where, -np.inf)
    x_max = _reduce("max", x_safe, axes, True)
    shifted = ops.subtract(x_safe, lax.stop_gradient(x_max))
    shifted_logsumexp = lax.log(_reduce("sum", _masked(lax.exp(shifted), where, 0), axes, True))
    result = ops.subtract(shifted, shifted_logsumexp)
    return result if where is None else _where(where, result, -np.inf)


def logsumexp(a, axis: int | Sequence[int] | None = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None):
    """log(sum(b * exp(a))) along `axis`, stable: the (finite) maximum is subtracted first."""
    if where is not None:
        a = _where(where, a, 0)
    if b is not None:
        a, b = ops.promote_broadcast("logsumexp", _inexact(a), _inexact(b))
        a = _where(ops.not_equal(b, 0), a, -np.inf)
    else:
        a = _inexact(a)
    axes = _axes(a, axis)
    amax = _reduce("max", _masked(a, where, -np.inf), axes, keepdims)
    amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
    amax_with_dims = amax if keepdims else _keep(amax, a, axes)
    exp_a = lax.exp(ops.subtract(a, amax_with_dims))
    if b is not None:
        exp_a = lax.mul(exp_a, b)
    sumexp = _reduce("sum", _masked(exp_a, where, 0), axes, keepdims)
    sign = lax.sign(sumexp)
    out = lax.add(lax.log(lax.abs(sumexp)), amax)
    if return_sign:
        return out, sign
    if b is not None:
        out = _where(ops.less(sign, 0), np.asarray(np.nan, lax.aval(out).dtype), out)
    return out


def standardize(x, axis: int | Sequence[int] | None = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None):
    """(x - mean) / sqrt(variance + epsilon), with JAX's "fast" variance E[x^2] - E[x]^2 clipped at 0."""
    if where is not None:
        raise XlapyError("nn.standardize: where= is not supported")
    x = _inexact(x)
    if mean is None:
        mean = ops.mean(x, axis, keepdims=True)
    if variance is None:
        variance = ops.subtract(ops.mean(ops.multiply(x, x), axis, keepdims=True), ops.multiply(mean, mean))
        variance = ops.maximum(variance, 0)
    return ops.multiply(ops.subtract(x, mean), lax.rsqrt(ops.add(variance, epsilon)))


def one_hot(x, num_classes: int, *, dtype: Any = None, axis: int = -1):
    """x[..., None] == arange(num_classes), as `dtype` (default float), the class axis at `axis`."""
    x = _array(x)
    a = lax.aval(x)
    num_classes = int(num_classes)
    out_axis = int(axis) % (a.ndim + 1) if -(a.ndim + 1) <= int(axis) <= a.ndim else None
    if out_axis is None:
        raise XlapyError(f"nn.one_hot: axis {axis} is out of bounds for a result of rank {a.ndim + 1} "
                         f"(at {user_frame()})")
    dtype = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    lhs = lax.expand_dims(x, (out_axis,))
    rhs_shape = [1] * a.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(a.dtype, rhs_shape, out_axis)
    return lax.convert_element_type(ops.equal(lhs, rhs), dtype)


# The rest of jax.nn (attention, log1mexp, logmeanexp, sparse_plus ...) lives in nn_more.py.
from .nn_more import (dot_product_attention, get_scaled_dot_general_config, log1mexp, logmeanexp,  # noqa: E402
                      scaled_dot_general, scaled_matmul, sparse_plus, sparse_sigmoid, squareplus, tanh)

__all__ += ["dot_product_attention", "get_scaled_dot_general_config", "log1mexp", "logmeanexp", "scaled_dot_general",
            "scaled_matmul", "sparse_plus", "sparse_sigmoid", "squareplus", "tanh"]
