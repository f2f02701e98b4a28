"""The rest of jax.nn (re-exported by xlapy.nn): log1mexp, logmeanexp, sparse_plus, sparse_sigmoid,
squareplus, tanh, dot_product_attention (JAX's 'xla' implementation: grouped-query heads, bias, boolean
mask, causal / local-window / sequence-length masking, logits and softmax in f32), scaled_matmul,
scaled_dot_general and get_scaled_dot_general_config.

scaled_dot_general here is dot_general in the preferred type over the unquantized operands (no block-scale
quantization: xlapy has no fp8/fp4 types), so its values are the exact product JAX's quantized one
approximates."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import lax
from .errors import XlapyError
from .frontend import dtypes, operators as ops
from .frontend.tracer import user_frame


def _err(name: str, message: str) -> XlapyError:
    return XlapyError(f"nn.{name}: {message} (at {user_frame()})")


def _xnp():
    from . import numpy as xnp
    return xnp


def _inexact(x):
    from .nn import _inexact as inexact
    return inexact(x)


def _where(cond, x, y):
    from .nn import _where as where
    return where(cond, x, y)


def log1mexp(x):
    """log(1 - exp(-x)), accurate for small and large x (x >= 0)."""
    x = _inexact(x)
    c = np.asarray(math.log(2.0), lax.aval(x).dtype)
    small = lax.log(lax.neg(lax.expm1(lax.neg(x))))
    large = lax.log1p(lax.neg(lax.exp(lax.neg(x))))
    return _where(ops.less(x, c), small, large)


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """log(mean(exp(x))) along axis (only where `where` holds)."""
    from .nn import logsumexp, _axes
    x = _inexact(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    dt = lax.aval(lse).dtype
    if where is None:
        axes = _axes(x, axis)
        n = 1
        for a in axes:
            n *= lax.aval(x).shape[a]
        return lax.sub(lse, lax.full_like(lse, math.log(n) if n else -np.inf))
    n = _xnp().sum(lax.convert_element_type(_xnp().broadcast_to(where, lax.aval(x).shape), dt), axis, keepdims=keepdims)
    return lax.sub(lse, lax.log(n))


def sparse_plus(x):
    """0 for x <= -1, (x + 1)**2 / 4 for -1 < x < 1, x for x >= 1."""
    x = _inexact(x)
    dt = lax.aval(x).dtype
    quad = lax.div(lax.square(lax.add(x, np.asarray(1, dt))), np.asarray(4, dt))
    return _where(ops.less_equal(x, np.asarray(-1, dt)), np.asarray(0, dt),
                  _where(ops.greater_equal(x, np.asarray(1, dt)), x, quad))


def sparse_sigmoid(x):
    """clip((x + 1) / 2, 0, 1)."""
    x = _inexact(x)
    dt = lax.aval(x).dtype
    return lax.mul(np.asarray(0.5, dt), lax.clamp(np.asarray(0, dt), lax.add(x, np.asarray(1, dt)),
                                                  np.asarray(2, dt)))


def squareplus(x, b: Any = 4):
    """(x + sqrt(x**2 + b)) / 2."""
    x = _inexact(x)
    dt = lax.aval(x).dtype
    bb = b if hasattr(b, "aval") else np.asarray(b, dt)
    y = ops.add(x, lax.sqrt(ops.add(lax.square(x), bb)))
    return ops.true_divide(y, np.asarray(2, dt))


def tanh(x, /):
    return lax.tanh(_inexact(x))


# -- attention -----------------------------------------------------------------------------------

def _large_negative(dt):
    m = min(float(dtypes.finfo(dt).max), float(np.finfo(np.float32).max))
    return np.asarray(-0.7 * m, dt)


def _four_d(name: str, t, shape, what: str):
    if t is None:
        return None
    from .nn import _array
    t = _array(t)
    a = lax.aval(t)
    if a.ndim > 4:
        raise _err(name, f"{what} must have at most 4 dimensions, got {a}")
    try:
        out_shape = tuple(np.broadcast_shapes(a.shape, shape))
    except ValueError:
        raise _err(name, f"{what} {a} does not broadcast to the logits' shape {shape}") from None
    if out_shape != shape:
        raise _err(name, f"{what} {a} does not broadcast to the logits' shape {shape}")
    return _xnp().broadcast_to(t, shape)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale: float | None = None,
                          is_causal: bool = False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual: bool = False):
    """softmax(q k^T * scale + bias, masked) v over [B, T, N, H] query and [B, S, K, H] key/value (N a
    multiple of K: grouped-query attention); the batch dimension may be left out."""
    from .nn import _array, softmax, logsumexp
    if implementation not in (None, "xla"):
        raise _err("dot_product_attention", f"implementation {implementation!r} is not available; use None or 'xla'")
    q, k, v = _array(query), _array(key), _array(value)
    squeeze = lax.aval(q).ndim == 3
    if squeeze:
        q, k, v = (lax.expand_dims(t, (0,)) for t in (q, k, v))
    for t, nm in ((q, "query"), (k, "key"), (v, "value")):
        if lax.aval(t).ndim != 4:
            raise _err("dot_product_attention", f"{nm} must be [B, T, N, H] or [T, N, H], got {lax.aval(t)}")
    B, T, N, H = lax.aval(q).shape
    _, S, K, _ = lax.aval(k).shape
    if lax.aval(k).shape != lax.aval(v).shape or lax.aval(k).shape[0] != B or lax.aval(k).shape[3] != H:
        raise _err("dot_product_attention", f"key {lax.aval(k)} and value {lax.aval(v)} must match and agree with "
                                            f"query {lax.aval(q)} in batch and head size")
    if N % K:
        raise _err("dot_product_attention", f"the number of query heads ({N}) must be a multiple of the number "
                                            f"of key/value heads ({K})")
    G = N // K
    if G > 1:
        k = lax.reshape(lax.broadcast_in_dim(k, (B, S, K, G, H), (0, 1, 2, 4)), (B, S, N, H))
        v = lax.reshape(lax.broadcast_in_dim(v, (B, S, K, G, H), (0, 1, 2, 4)), (B, S, N, H))
    if scale is None:
        scale = 1.0 / math.sqrt(H)
    qdt = lax.aval(q).dtype
    logits_dt = np.promote_types(qdt, np.float32) if qdt != dtypes.bfloat16 else np.dtype(np.float32)
    logits = _xnp().einsum("BTNH,BSNH->BNTS", q, k, preferred_element_type=logits_dt)
    logits = lax.mul(logits, np.asarray(scale, logits_dt))
    shape = (B, N, T, S)
    if squeeze and bias is not None and lax.aval(_array(bias)).ndim == 3:
        bias = lax.expand_dims(_array(bias), (0,))
    if squeeze and mask is not None and lax.aval(_array(mask)).ndim == 3:
        mask = lax.expand_dims(_array(mask), (0,))
    b = _four_d("dot_product_attention", bias, shape, "bias")
    if b is not None:
        logits = lax.convert_element_type(ops.add(logits, b), logits_dt)
    combined = None

    def both(m):
        return m if combined is None else lax.bitwise_and(combined, m)
    mk = _four_d("dot_product_attention", mask, shape, "mask")
    if mk is not None:
        if lax.aval(mk).dtype != np.bool_:
            raise _err("dot_product_attention", f"mask must be boolean, got {lax.aval(mk)}")
        combined = both(mk)
    qi = lax.broadcasted_iota(np.int32, shape, 2)
    ki = lax.broadcasted_iota(np.int32, shape, 3)
    if is_causal:
        combined = both(lax.ge(qi, ki))
    if local_window_size is not None:
        left, right = (local_window_size, local_window_size) if isinstance(local_window_size, int) \
            else tuple(local_window_size)
        win = lax.bitwise_and(lax.le(qi, lax.add(ki, lax.full_like(ki, left))),
                              lax.ge(qi, lax.sub(ki, lax.full_like(ki, right))))
        combined = both(win)
    qlen = None
    if query_seq_lengths is not None:
        qlen = lax.convert_element_type(_array(query_seq_lengths), np.int32)
        combined = both(lax.lt(qi, lax.broadcast_in_dim(qlen, shape, (0,))))
    if key_value_seq_lengths is not None:
        kvlen = lax.convert_element_type(_array(key_value_seq_lengths), np.int32)
        combined = both(lax.lt(ki, lax.broadcast_in_dim(kvlen, shape, (0,))))
    if combined is not None:
        logits = lax.select(combined, logits, lax.full_like(logits, _large_negative(logits_dt)))
    logits32 = lax.convert_element_type(logits, np.float32)
    probs = lax.convert_element_type(softmax(logits32, axis=-1), lax.aval(k).dtype)
    encoded = _xnp().einsum("BNTS,BSNH->BTNH", probs, v)
    if qlen is not None:
        keep = lax.lt(lax.broadcasted_iota(np.int32, lax.aval(encoded).shape, 1),
                      lax.broadcast_in_dim(qlen, lax.aval(encoded).shape, (0,)))
        encoded = lax.mul(encoded, lax.convert_element_type(keep, lax.aval(encoded).dtype))
    if squeeze:
        encoded = lax.squeeze(encoded, (0,))
    if return_residual:
        lse = lax.convert_element_type(logsumexp(logits32, axis=-1), lax.aval(k).dtype)   # [B, N, T]
        lse = lax.transpose(lse, (0, 2, 1))
        if squeeze:
            lse = lax.squeeze(lse, (0,))
        return encoded, lse
    return encoded


# -- block-scaled products ------------------------------------------------------------------------

def _expand_scales(x, s, name):
    xa, sa = lax.aval(x), lax.aval(s)
    if sa.ndim != xa.ndim or xa.shape[-1] % sa.shape[-1] or sa.shape[:-1] != xa.shape[:-1]:
        raise _err(name, f"scales {sa} must match {xa} except for a last dimension dividing it")
    blk = xa.shape[-1] // sa.shape[-1]
    s = lax.broadcast_in_dim(s, sa.shape + (blk,), tuple(range(sa.ndim)))
    return lax.reshape(s, xa.shape)


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """(lhs * lhs_scales) @ (rhs * rhs_scales)^T over [B, M, K] and [B, N, K] (scales in blocks of K)."""
    from .nn import _array
    dt = np.dtype(preferred_element_type)
    l, r = (lax.convert_element_type(_array(t), dt) for t in (lhs, rhs))
    ls, rs = (lax.convert_element_type(_array(t), dt) for t in (lhs_scales, rhs_scales))
    if lax.aval(l).ndim != 3 or lax.aval(r).ndim != 3:
        raise _err("scaled_matmul", f"lhs and rhs must be [B, M, K] and [B, N, K], got {lax.aval(l)} and {lax.aval(r)}")
    l = lax.mul(l, _expand_scales(l, ls, "scaled_matmul"))
    r = lax.mul(r, _expand_scales(r, rs, "scaled_matmul"))
    return lax.dot_general(l, r, (((2,), (2,)), ((0,), (0,))))


@dataclass
class BlockScaleConfig:
    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any = None
    infer_only: bool = False


def get_scaled_dot_general_config(mode: str, global_scale=None):
    if mode == "nvfp4":
        return BlockScaleConfig(mode, 16, "float4_e2m1fn", "float8_e4m3fn", global_scale)
    if mode == "mxfp8":
        return BlockScaleConfig(mode, 32, "float8_e4m3fn", "float8_e8m0fnu", global_scale)
    raise _err("get_scaled_dot_general_config", f"mode must be 'nvfp4' or 'mxfp8', got {mode!r}")


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32, configs=None,
                       implementation=None):
    """dot_general in preferred_element_type (the operands are not quantized: see the module docstring)."""
    from .nn import _array
    dt = np.dtype(preferred_element_type)
    return lax.dot_general(lax.convert_element_type(_array(lhs), dt), lax.convert_element_type(_array(rhs), dt),
                           dimension_numbers)


__all__ = ["log1mexp", "logmeanexp", "sparse_plus", "sparse_sigmoid", "squareplus", "tanh", "dot_product_attention",
           "scaled_matmul", "scaled_dot_general", "get_scaled_dot_general_config"]
