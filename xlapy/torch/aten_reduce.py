"""ATen's reductions, softmax family and matrix products (rows as in aten_elementwise.py)."""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import nn
from .. import numpy as jnp


def _axes(x, dims):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return None
    return tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)


def _sum(x, dims=None, keepdim=False, dtype=None):
    return jnp.sum(x, axis=_axes(x, dims), keepdims=keepdim, dtype=dtype)


def _mean(x, dims=None, keepdim=False, dtype=None):
    return jnp.mean(x, axis=_axes(x, dims), keepdims=keepdim, dtype=dtype)


def _var(x, dims=None, correction=None, keepdim=False, unbiased=None):
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return jnp.var(x, axis=_axes(x, dims), ddof=correction, keepdims=keepdim)


def _max_dim(fn, arg):
    def rule(x, dim, keepdim=False):
        return fn(x, axis=dim, keepdims=keepdim), arg(x, axis=dim, keepdims=keepdim)
    return rule


def _argx(fn):
    def rule(x, dim=None, keepdim=False):
        if dim is None:
            return fn(jnp.reshape(x, (-1,)))
        return fn(x, axis=dim, keepdims=keepdim)
    return rule


def _softmax(x, dim, half_to_float=False):
    return nn.softmax(x, axis=dim)


def _log_softmax(x, dim, half_to_float=False):
    return nn.log_softmax(x, axis=dim)


def _logsumexp(x, dims, keepdim=False):
    return nn.logsumexp(x, axis=_axes(x, dims), keepdims=keepdim)


def _addmm(bias, a, b, beta=1, alpha=1):
    prod = jnp.matmul(a, b)
    prod = prod if alpha == 1 else jnp.multiply(prod, alpha)
    return jnp.add(bias if beta == 1 else jnp.multiply(bias, beta), prod)


def _baddbmm(bias, a, b, beta=1, alpha=1):
    return _addmm(bias, a, b, beta, alpha)


def _any(x, dims=None, keepdim=False):
    return jnp.any(x, axis=_axes(x, dims), keepdims=keepdim)


def _all(x, dims=None, keepdim=False):
    return jnp.all(x, axis=_axes(x, dims), keepdims=keepdim)


def _cumsum(x, dim, dtype=None):
    x = jnp.asarray(x) if dtype is None else jnp.asarray(x).astype(dtype)
    return lax.cumsum(x, axis=dim % max(x.ndim, 1))


TABLE = {
    "aten.sum.default": _sum,
    "aten.sum.dim_IntList": _sum,
    "aten.mean.default": _mean,
    "aten.mean.dim": _mean,
    "aten.prod.default": lambda x, dtype=None: jnp.prod(x, dtype=dtype),
    "aten.prod.dim_int": lambda x, dim, keepdim=False, dtype=None: jnp.prod(x, axis=dim, keepdims=keepdim,
                                                                           dtype=dtype),
    "aten.var.correction": _var,
    "aten.var.dim": _var,
    "aten.amax.default": lambda x, dims=(), keepdim=False: jnp.max(x, axis=_axes(x, dims), keepdims=keepdim),
    "aten.amin.default": lambda x, dims=(), keepdim=False: jnp.min(x, axis=_axes(x, dims), keepdims=keepdim),
    "aten.max.default": lambda x: jnp.max(x),
    "aten.min.default": lambda x: jnp.min(x),
    "aten.max.dim": _max_dim(jnp.max, jnp.argmax),
    "aten.min.dim": _max_dim(jnp.min, jnp.argmin),
    "aten.argmax.default": _argx(jnp.argmax),
    "aten.argmin.default": _argx(jnp.argmin),
    "aten.any.default": _any,
    "aten.any.dim": _any,
    "aten.any.dims": _any,
    "aten.all.default": _all,
    "aten.all.dim": _all,
    "aten.cumsum.default": _cumsum,
    "aten._softmax.default": _softmax,
    "aten._log_softmax.default": _log_softmax,
    "aten.logsumexp.default": _logsumexp,
    "aten.mm.default": jnp.matmul,
    "aten.bmm.default": jnp.matmul,
    "aten.matmul.default": jnp.matmul,
    "aten.dot.default": jnp.dot,
    "aten.addmm.default": _addmm,
    "aten.baddbmm.default": _baddbmm,
}
