"""ATen's elementwise ops, comparisons, casts and creation ops over xlapy.numpy and xlapy.lax.

Each row: ATen overload name -> fn(*args, **kwargs) taking the op's schema arguments (tensors as xlapy values,
scalars as Python numbers, dtypes as numpy dtypes). The translator casts every result to the dtype and checks
it against the shape that PyTorch's fake tensors recorded, so a rule may leave promotion to numpy's rules.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import nn
from .. import numpy as jnp


def _alpha(b, alpha):
    return b if alpha == 1 else jnp.multiply(b, alpha)


def _div_mode(a, b, rounding_mode=None):
    if rounding_mode is None:
        return jnp.true_divide(a, b)
    if rounding_mode == "floor":
        return jnp.floor_divide(a, b)
    q = jnp.true_divide(a, b)          # "trunc"
    if jnp.issubdtype(jnp.result_type(a, b), jnp.integer):
        return jnp.trunc(q).astype(jnp.result_type(a, b))
    return jnp.trunc(q)


def _gelu(x, approximate="none"):
    return nn.gelu(x, approximate=approximate == "tanh")


def _clamp(x, min=None, max=None):
    if min is not None:
        x = jnp.maximum(x, min)
    if max is not None:
        x = jnp.minimum(x, max)
    return x


def _nan_max(a, b):
    # torch.maximum propagates NaN from either side (numpy's maximum does too)
    return jnp.maximum(a, b)


def _to_copy(x, dtype=None, **_):
    return x if dtype is None else jnp.asarray(x).astype(dtype)


def _full(size, fill_value, dtype=None, **_):
    return jnp.full(tuple(size), fill_value, dtype=dtype)


def _full_like(x, fill_value, dtype=None, **_):
    return jnp.full(jnp.shape(x), fill_value, dtype=dtype or jnp.asarray(x).dtype)


def _zeros(size, dtype=None, **_):
    return jnp.zeros(tuple(size), dtype=dtype or np.float32)


def _ones(size, dtype=None, **_):
    return jnp.ones(tuple(size), dtype=dtype or np.float32)


def _like(value):
    def fn(x, dtype=None, **_):
        return jnp.full(jnp.shape(x), value, dtype=dtype or jnp.asarray(x).dtype)
    return fn


def _new(value):
    def fn(x, size, dtype=None, **_):
        return jnp.full(tuple(size), value, dtype=dtype or jnp.asarray(x).dtype)
    return fn


def _scalar_tensor(value, dtype=None, **_):
    return jnp.asarray(value, dtype=dtype or np.float32)


def _arange(start, end=None, step=1, dtype=None, **_):
    if end is None:
        start, end = 0, start
    if dtype is None:
        floats = any(isinstance(v, float) for v in (start, end, step))
        dtype = np.float32 if floats else np.int32
    n = max(0, int(np.ceil((end - start) / step)))
    return jnp.asarray(start + step * np.arange(n), dtype=dtype)


def _copy(dst, src, non_blocking=False):
    return jnp.broadcast_to(jnp.asarray(src).astype(jnp.asarray(dst).dtype), jnp.shape(dst))


def _where(cond, a, b):
    return jnp.where(cond, a, b)


def _pow(a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        if b == 2:
            return jnp.multiply(a, a)
        if b == 0.5:
            return jnp.sqrt(a)
        if float(b).is_integer() and abs(b) <= 4:
            return lax.integer_pow(jnp.asarray(a), int(b))
    return jnp.power(a, b)


def _sigmoid(x):
    return lax.logistic(x)


def _rsqrt(x):
    return lax.rsqrt(jnp.asarray(x))


def _hardtanh(x, min_val=-1.0, max_val=1.0):
    return jnp.clip(x, min_val, max_val)


def _fill(x, value):
    return jnp.full(jnp.shape(x), value, dtype=jnp.asarray(x).dtype)


def _masked_fill(x, mask, value):
    return jnp.where(mask, value, x)


def _lerp(a, b, w):
    return jnp.add(a, jnp.multiply(w, jnp.subtract(b, a)))


def _addcmul(x, a, b, value=1):
    return jnp.add(x, _alpha(jnp.multiply(a, b), value))


def _addcdiv(x, a, b, value=1):
    return jnp.add(x, _alpha(jnp.true_divide(a, b), value))


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    neg = jnp.multiply(alpha * scale, jnp.expm1(jnp.multiply(x, input_scale)))
    return jnp.where(jnp.greater(x, 0), jnp.multiply(x, scale), neg)


def _leaky_relu(x, negative_slope=0.01):
    return jnp.where(jnp.greater(x, 0), x, jnp.multiply(x, negative_slope))


def _identity(x, *_, **__):
    return x


TABLE = {
    "aten.add.Tensor": lambda a, b, alpha=1: jnp.add(a, _alpha(b, alpha)),
    "aten.add.Scalar": lambda a, b, alpha=1: jnp.add(a, _alpha(b, alpha)),
    "aten.sub.Tensor": lambda a, b, alpha=1: jnp.subtract(a, _alpha(b, alpha)),
    "aten.sub.Scalar": lambda a, b, alpha=1: jnp.subtract(a, _alpha(b, alpha)),
    "aten.rsub.Scalar": lambda a, b, alpha=1: jnp.subtract(b, _alpha(a, alpha)),
    "aten.rsub.Tensor": lambda a, b, alpha=1: jnp.subtract(b, _alpha(a, alpha)),
    "aten.mul.Tensor": jnp.multiply,
    "aten.mul.Scalar": jnp.multiply,
    "aten.div.Tensor": jnp.true_divide,
    "aten.div.Scalar": jnp.true_divide,
    "aten.div.Tensor_mode": _div_mode,
    "aten.div.Scalar_mode": _div_mode,
    "aten.floor_divide.default": jnp.floor_divide,
    "aten.remainder.Tensor": jnp.remainder,
    "aten.remainder.Scalar": jnp.remainder,
    "aten.fmod.Tensor": jnp.fmod,
    "aten.fmod.Scalar": jnp.fmod,
    "aten.pow.Tensor_Scalar": _pow,
    "aten.pow.Tensor_Tensor": _pow,
    "aten.pow.Scalar": jnp.power,
    "aten.neg.default": jnp.negative,
    "aten.abs.default": jnp.abs,
    "aten.sign.default": jnp.sign,
    "aten.exp.default": jnp.exp,
    "aten.exp2.default": jnp.exp2,
    "aten.expm1.default": jnp.expm1,
    "aten.log.default": jnp.log,
    "aten.log2.default": jnp.log2,
    "aten.log10.default": jnp.log10,
    "aten.log1p.default": jnp.log1p,
    "aten.sqrt.default": jnp.sqrt,
    "aten.rsqrt.default": _rsqrt,
    "aten.reciprocal.default": jnp.reciprocal,
    "aten.sin.default": jnp.sin,
    "aten.cos.default": jnp.cos,
    "aten.tan.default": jnp.tan,
    "aten.tanh.default": jnp.tanh,
    "aten.sinh.default": jnp.sinh,
    "aten.cosh.default": jnp.cosh,
    "aten.asinh.default": jnp.arcsinh,
    "aten.acosh.default": jnp.arccosh,
    "aten.atanh.default": jnp.arctanh,
    "aten.elu.default": _elu,
    "aten.leaky_relu.default": _leaky_relu,
    "aten.asin.default": jnp.arcsin,
    "aten.acos.default": jnp.arccos,
    "aten.atan.default": jnp.arctan,
    "aten.atan2.default": jnp.arctan2,
    "aten.erf.default": lambda x: lax.erf(jnp.asarray(x)),
    "aten.sigmoid.default": _sigmoid,
    "aten.relu.default": lambda x: jnp.maximum(x, 0),
    "aten.gelu.default": _gelu,
    "aten.silu.default": nn.silu,
    "aten.hardtanh.default": _hardtanh,
    "aten.floor.default": jnp.floor,
    "aten.ceil.default": jnp.ceil,
    "aten.round.default": jnp.round,
    "aten.trunc.default": jnp.trunc,
    "aten.clamp.default": _clamp,
    "aten.clamp.Tensor": _clamp,
    "aten.clamp_min.default": lambda x, m: jnp.maximum(x, m),
    "aten.clamp_max.default": lambda x, m: jnp.minimum(x, m),
    "aten.maximum.default": _nan_max,
    "aten.minimum.default": jnp.minimum,
    "aten.where.self": _where,
    "aten.where.ScalarSelf": _where,
    "aten.where.ScalarOther": _where,
    "aten.masked_fill.Scalar": _masked_fill,
    "aten.masked_fill.Tensor": _masked_fill,
    "aten.lerp.Scalar": _lerp,
    "aten.lerp.Tensor": _lerp,
    "aten.addcmul.default": _addcmul,
    "aten.addcdiv.default": _addcdiv,
    "aten.isnan.default": jnp.isnan,
    "aten.isinf.default": jnp.isinf,
    "aten.eq.Tensor": jnp.equal, "aten.eq.Scalar": jnp.equal,
    "aten.ne.Tensor": jnp.not_equal, "aten.ne.Scalar": jnp.not_equal,
    "aten.lt.Tensor": jnp.less, "aten.lt.Scalar": jnp.less,
    "aten.le.Tensor": jnp.less_equal, "aten.le.Scalar": jnp.less_equal,
    "aten.gt.Tensor": jnp.greater, "aten.gt.Scalar": jnp.greater,
    "aten.ge.Tensor": jnp.greater_equal, "aten.ge.Scalar": jnp.greater_equal,
    "aten.logical_and.default": jnp.logical_and,
    "aten.logical_or.default": jnp.logical_or,
    "aten.logical_xor.default": jnp.logical_xor,
    "aten.logical_not.default": jnp.logical_not,
    "aten.bitwise_and.Tensor": jnp.bitwise_and, "aten.bitwise_and.Scalar": jnp.bitwise_and,
    "aten.bitwise_or.Tensor": jnp.bitwise_or, "aten.bitwise_or.Scalar": jnp.bitwise_or,
    "aten.bitwise_xor.Tensor": jnp.bitwise_xor, "aten.bitwise_xor.Scalar": jnp.bitwise_xor,
    "aten.bitwise_not.default": jnp.bitwise_not,
    # casts, copies and creation
    "aten._to_copy.default": _to_copy,
    "aten.clone.default": _identity,
    "aten.alias.default": _identity,
    "aten.lift_fresh_copy.default": _identity,
    "aten.detach.default": _identity,
    "aten.contiguous.default": _identity,
    "aten.copy.default": _copy,
    "aten.fill.Scalar": _fill,
    "aten.full.default": _full,
    "aten.full_like.default": _full_like,
    "aten.zeros.default": _zeros,
    "aten.ones.default": _ones,
    "aten.empty.memory_format": _zeros,
    "aten.empty_permuted.default": lambda size, physical_layout, **kw: _zeros(size, **kw),
    "aten.empty_strided.default": lambda size, stride, **kw: _zeros(size, **kw),
    "aten.zeros_like.default": _like(0),
    "aten.ones_like.default": _like(1),
    "aten.empty_like.default": _like(0),
    "aten.new_zeros.default": _new(0),
    "aten.new_ones.default": _new(1),
    "aten.new_empty.default": _new(0),
    "aten.new_full.default": lambda x, size, value, dtype=None, **_: jnp.full(tuple(size), value,
                                                                             dtype=dtype or jnp.asarray(x).dtype),
    "aten.scalar_tensor.default": _scalar_tensor,
    "aten.arange.default": _arange,
    "aten.arange.start": _arange,
    "aten.arange.start_step": _arange,
}
