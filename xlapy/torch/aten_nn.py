"""ATen's neural-network ops: convolution, normalization, pooling, and their backward ops.

A backward op is the VJP of the forward rule, taken by xlapy's own autodiff (`frontend.transforms.vjp`) inside
the trace: convolution_backward, max_pool2d_with_indices_backward, avg_pool2d_backward and
_adaptive_avg_pool2d_backward never need a hand-written gradient, and agree with the forward by construction.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..frontend.transforms import vjp
from .errors import TranslationError

_SPATIAL = {1: ("NCH", "OIH"), 2: ("NCHW", "OIHW"), 3: ("NCDHW", "OIDHW")}


def _shape(x):
    return tuple(jnp.shape(x))


def _per_dim(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


# -- convolution ---------------------------------------------------------------------------------------------
def _conv(x, w, stride, padding, dilation, transposed, output_padding, groups):
    n = len(_shape(x)) - 2
    if n not in _SPATIAL:
        raise TranslationError("aten.convolution.default", f"{n} spatial dimensions")
    lhs_spec, rhs_spec = _SPATIAL[n]
    stride, padding, dilation = _per_dim(stride, n), _per_dim(padding, n), _per_dim(dilation, n)
    x, w = jnp.asarray(x), jnp.asarray(w)
    if not transposed:
        return lax.conv_general_dilated(x, w, stride, [(p, p) for p in padding], rhs_dilation=dilation,
                                        dimension_numbers=(lhs_spec, rhs_spec, lhs_spec),
                                        feature_group_count=groups)
    if groups != 1:
        raise TranslationError("aten.convolution.default", "a transposed convolution with groups > 1")
    # the gradient of a convolution: dilate the input by the stride, flip the kernel, swap its in/out channels
    output_padding = _per_dim(output_padding, n)
    k = _shape(w)[2:]
    pads = [(d * (kk - 1) - p, d * (kk - 1) - p + op) for kk, p, d, op in zip(k, padding, dilation, output_padding)]
    w = jnp.flip(jnp.swapaxes(w, 0, 1), tuple(range(2, 2 + n)))
    return lax.conv_general_dilated(x, w, [1] * n, pads, lhs_dilation=stride, rhs_dilation=dilation,
                                    dimension_numbers=(lhs_spec, rhs_spec, lhs_spec))


def _bias_shape(x):
    return (1, -1) + (1,) * (len(_shape(x)) - 2)


def convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    out = _conv(x, w, stride, padding, dilation, transposed, output_padding, groups)
    return out if bias is None else jnp.add(out, jnp.reshape(bias, _bias_shape(out)))


def convolution_backward(grad, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
                         output_mask):
    _, pullback = vjp(lambda a, b: _conv(a, b, stride, padding, dilation, transposed, output_padding, groups),
                      x, w)
    gx, gw = pullback(grad)
    axes = (0,) + tuple(range(2, len(_shape(grad))))
    gb = jnp.sum(grad, axis=axes) if output_mask[2] else None
    return (gx if output_mask[0] else None, gw if output_mask[1] else None, gb)


# -- normalization -------------------------------------------------------------------------------------------
def _channel(v, ndim):
    return jnp.reshape(v, (1, -1) + (1,) * (ndim - 2))


def _bn_apply(x, mean, rstd, w, b):
    n = len(_shape(x))
    out = jnp.multiply(jnp.subtract(x, _channel(mean, n)), _channel(rstd, n))
    if w is not None:
        out = jnp.multiply(out, _channel(w, n))
    if b is not None:
        out = jnp.add(out, _channel(b, n))
    return out


def _bn_stats(x, eps):
    axes = (0,) + tuple(range(2, len(_shape(x))))
    mean = jnp.mean(x, axis=axes)
    var = jnp.mean(jnp.square(jnp.subtract(x, _channel(mean, len(_shape(x))))), axis=axes)
    return mean, var, lax.rsqrt(jnp.add(var, eps))


def batch_norm_functional(x, w, b, running_mean, running_var, training, momentum, eps):
    if not training:
        rstd = lax.rsqrt(jnp.add(running_var, eps))
        return _bn_apply(x, running_mean, rstd, w, b), None, None, running_mean, running_var
    mean, var, rstd = _bn_stats(x, eps)
    shape = _shape(x)
    count = int(np.prod(shape)) // shape[1]
    unbiased = jnp.multiply(var, count / max(count - 1, 1))
    new_mean = jnp.add(jnp.multiply(running_mean, 1 - momentum), jnp.multiply(mean, momentum))
    new_var = jnp.add(jnp.multiply(running_var, 1 - momentum), jnp.multiply(unbiased, momentum))
    return _bn_apply(x, mean, rstd, w, b), mean, rstd, new_mean, new_var


def batch_norm_no_training(x, w, b, running_mean, running_var, momentum, eps):
    return batch_norm_functional(x, w, b, running_mean, running_var, False, momentum, eps)[:3]


def batch_norm_no_stats(x, w, b, training, momentum, eps):
    mean, _, rstd = _bn_stats(x, eps)
    return _bn_apply(x, mean, rstd, w, b), mean, rstd


def native_batch_norm(x, w, b, running_mean, running_var, training, momentum, eps):
    if running_mean is None or running_var is None:
        return batch_norm_no_stats(x, w, b, training, momentum, eps)
    if training:
        raise TranslationError("aten.native_batch_norm.default", "updates running stats in place (not "
                               "functionalized)")
    return batch_norm_functional(x, w, b, running_mean, running_var, False, momentum, eps)[:3]


def native_layer_norm(x, normalized_shape, w, b, eps):
    shape = _shape(x)
    axes = tuple(range(len(shape) - len(normalized_shape), len(shape)))
    mean = jnp.mean(x, axis=axes, keepdims=True)
    centered = jnp.subtract(x, mean)
    rstd = lax.rsqrt(jnp.add(jnp.mean(jnp.square(centered), axis=axes, keepdims=True), eps))
    out = jnp.multiply(centered, rstd)
    if w is not None:
        out = jnp.multiply(out, w)
    if b is not None:
        out = jnp.add(out, b)
    return out, mean, rstd


def _norm_input_grad(g, xhat, rstd, axes):
    """d/dx of a normalization over `axes` (xhat = (x - mean) * rstd), given g = grad * weight:
    rstd * (g - mean(g) - xhat * mean(g * xhat))."""
    mg = jnp.mean(g, axis=axes, keepdims=True)
    mgx = jnp.mean(jnp.multiply(g, xhat), axis=axes, keepdims=True)
    return jnp.multiply(rstd, jnp.subtract(jnp.subtract(g, mg), jnp.multiply(xhat, mgx)))


def native_layer_norm_backward(grad, x, normalized_shape, mean, rstd, w, b, output_mask):
    shape = _shape(x)
    k = len(normalized_shape)
    axes = tuple(range(len(shape) - k, len(shape)))
    lead = tuple(range(len(shape) - k))
    xhat = jnp.multiply(jnp.subtract(x, mean), rstd)
    g = grad if w is None else jnp.multiply(grad, w)
    gx = _norm_input_grad(g, xhat, rstd, axes) if output_mask[0] else None
    gw = jnp.sum(jnp.multiply(grad, xhat), axis=lead) if output_mask[1] and w is not None else None
    gb = jnp.sum(grad, axis=lead) if output_mask[2] and b is not None else None
    return gx, gw, gb


def native_group_norm(x, w, b, n, c, hw, group, eps):
    shape = _shape(x)
    xg = jnp.reshape(x, (n, group, -1))
    mean = jnp.mean(xg, axis=2, keepdims=True)
    rstd = lax.rsqrt(jnp.add(jnp.mean(jnp.square(jnp.subtract(xg, mean)), axis=2, keepdims=True), eps))
    out = jnp.reshape(jnp.multiply(jnp.subtract(xg, mean), rstd), shape)
    if w is not None:
        out = jnp.multiply(out, _channel(w, len(shape)))
    if b is not None:
        out = jnp.add(out, _channel(b, len(shape)))
    return out, jnp.reshape(mean, (n, group)), jnp.reshape(rstd, (n, group))


def native_group_norm_backward(grad, x, mean, rstd, w, n, c, hw, group, output_mask):
    shape = _shape(x)
    mean3, rstd3 = jnp.reshape(mean, (n, group, 1)), jnp.reshape(rstd, (n, group, 1))
    xhat = jnp.reshape(jnp.multiply(jnp.subtract(jnp.reshape(x, (n, group, -1)), mean3), rstd3), shape)
    g = grad if w is None else jnp.multiply(grad, _channel(w, len(shape)))
    gx = None
    if output_mask[0]:
        gx = jnp.reshape(_norm_input_grad(jnp.reshape(g, (n, group, -1)), jnp.reshape(xhat, (n, group, -1)),
                                          rstd3, (2,)), shape)
    axes = (0,) + tuple(range(2, len(shape)))
    gw = jnp.sum(jnp.multiply(grad, xhat), axis=axes) if output_mask[1] and w is not None else None
    gb = jnp.sum(grad, axis=axes) if output_mask[2] else None
    return gx, gw, gb


# -- pooling -------------------------------------------------------------------------------------------------
def _pool_geometry(size, k, s, p, d, ceil_mode):
    """(output size, high-side padding) of one spatial dimension, with PyTorch's ceil_mode rule."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    high = max((out - 1) * s + d * (k - 1) + 1 - size - p, 0)
    return out, high


def _pool_args(x, kernel, stride, padding, dilation, ceil_mode):
    n = len(kernel)
    stride = list(stride) if stride else list(kernel)
    stride, padding, dilation = _per_dim(stride, n), _per_dim(padding, n), _per_dim(dilation, n)
    spatial = _shape(x)[-n:]
    geo = [_pool_geometry(sz, k, s, p, d, ceil_mode)
           for sz, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    return list(kernel), stride, padding, dilation, geo


def _max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    """(values, flat indices into each H*W plane): a running max over the kernel offsets; the first maximum
    wins, and NaN beats everything, as in PyTorch."""
    kernel, stride, padding, dilation, geo = _pool_args(x, kernel, stride, padding, dilation, ceil_mode)
    if len(kernel) != 2:
        raise TranslationError("aten.max_pool2d_with_indices.default", f"{len(kernel)}-d pooling")
    x = jnp.asarray(x)
    h, w = _shape(x)[-2:]
    lead = len(_shape(x)) - 2
    neg = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    pad_cfg = [(0, 0, 0)] * lead + [(p, p + hi, 0) for p, (_, hi) in zip(padding, geo)]
    xp = lax.pad(x, jnp.asarray(neg, dtype=x.dtype), pad_cfg)
    flat = np.arange(h * w, dtype=np.int32).reshape(h, w)
    ip = np.pad(flat, [(p, p + hi) for p, (_, hi) in zip(padding, geo)])
    (oh, _), (ow, _) = geo
    best, best_i = None, None
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r0, c0 = i * dilation[0], j * dilation[1]
            rows = slice(r0, r0 + (oh - 1) * stride[0] + 1, stride[0])
            cols = slice(c0, c0 + (ow - 1) * stride[1] + 1, stride[1])
            v = xp[(Ellipsis, rows, cols)]
            vi = jnp.asarray(ip[rows, cols])
            if best is None:
                best, best_i = v, jnp.broadcast_to(vi, _shape(v))
                continue
            take = jnp.logical_or(jnp.greater(v, best), jnp.logical_and(jnp.isnan(v), jnp.logical_not(jnp.isnan(best))))
            best = jnp.where(take, v, best)
            best_i = jnp.where(take, vi, best_i)
    return best, best_i


def max_pool2d_with_indices(x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool(x, kernel, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices_backward(grad, x, kernel, stride, padding, dilation, ceil_mode, indices):
    _, pullback = vjp(lambda a: _max_pool(a, kernel, stride, padding, dilation, ceil_mode)[0], x)
    return pullback(grad)[0]


def _avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    kernel, stride, padding, _, geo = _pool_args(x, kernel, stride, padding, 1, ceil_mode)
    n = len(kernel)
    x = jnp.asarray(x)
    lead = len(_shape(x)) - n
    pads = [(0, 0)] * lead + [(p, p + hi) for p, (_, hi) in zip(padding, geo)]
    window = (1,) * lead + tuple(kernel)
    strides = (1,) * lead + tuple(stride)
    total = lax.reduce_window(x, np.asarray(0, x.dtype), lax.add, window, strides, pads)
    if divisor_override:
        return jnp.true_divide(total, divisor_override)
    spatial = _shape(x)[-n:]
    if count_include_pad:       # the window clipped to the padded input (without ceil_mode's extra)
        ones = np.pad(np.ones(spatial, np.float32), [(p, p) for p in padding])
        sub = [(0, hi) for (_, hi) in geo]
    else:
        ones = np.ones(spatial, np.float32)
        sub = [(p, p + hi) for p, (_, hi) in zip(padding, geo)]
    counts = _window_counts(np.pad(ones, sub), kernel, stride)
    return jnp.true_divide(total, counts.astype(x.dtype))


def _window_counts(ones: np.ndarray, kernel, stride) -> np.ndarray:
    from numpy.lib.stride_tricks import sliding_window_view
    view = sliding_window_view(ones, tuple(kernel))
    view = view[tuple(slice(None, None, s) for s in stride)]
    return view.sum(axis=tuple(range(-len(kernel), 0)))


def avg_pool1d(x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, None)


def _adaptive_avg_pool1d(x, output_size):
    (out,) = _per_dim(output_size, 1)
    m = jnp.asarray(_adaptive_matrix(_shape(x)[-1], out).astype(jnp.asarray(x).dtype))
    return jnp.einsum("...w,pw->...p", x, m)


def avg_pool2d(x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return _avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool2d_backward(grad, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    _, pullback = vjp(lambda a: _avg_pool(a, kernel, stride, padding, ceil_mode, count_include_pad,
                                          divisor_override), x)
    return pullback(grad)[0]


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    m = np.zeros((out, size), np.float32)
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def _adaptive_avg_pool2d(x, output_size):
    h, w = _shape(x)[-2:]
    oh, ow = _per_dim(output_size, 2)
    oh, ow = oh or h, ow or w
    x = jnp.asarray(x)
    if (oh, ow) == (1, 1):
        return jnp.mean(x, axis=(-2, -1), keepdims=True)
    mh = jnp.asarray(_adaptive_matrix(h, oh).astype(x.dtype))
    mw = jnp.asarray(_adaptive_matrix(w, ow).astype(x.dtype))
    return jnp.einsum("...hw,oh,pw->...op", x, mh, mw)


def _adaptive_avg_pool2d_backward(grad, x):
    out_size = _shape(grad)[-2:]
    _, pullback = vjp(lambda a: _adaptive_avg_pool2d(a, out_size), x)
    return pullback(grad)[0]


TABLE = {
    "aten.convolution.default": convolution,
    "aten.convolution_backward.default": convolution_backward,
    "aten._native_batch_norm_legit_functional.default": batch_norm_functional,
    "aten._native_batch_norm_legit_no_training.default": batch_norm_no_training,
    "aten._native_batch_norm_legit.no_stats": batch_norm_no_stats,
    "aten.native_batch_norm.default": native_batch_norm,
    "aten.native_layer_norm.default": native_layer_norm,
    "aten.native_layer_norm_backward.default": native_layer_norm_backward,
    "aten.native_group_norm.default": native_group_norm,
    "aten.native_group_norm_backward.default": native_group_norm_backward,
    "aten.avg_pool1d.default": avg_pool1d,
    "aten.adaptive_avg_pool1d.default": _adaptive_avg_pool1d,
    "aten.max_pool2d_with_indices.default": max_pool2d_with_indices,
    "aten.max_pool2d_with_indices_backward.default": max_pool2d_with_indices_backward,
    "aten.avg_pool2d.default": avg_pool2d,
    "aten.avg_pool2d_backward.default": avg_pool2d_backward,
    "aten._adaptive_avg_pool2d.default": _adaptive_avg_pool2d,
    "aten._adaptive_avg_pool2d_backward.default": _adaptive_avg_pool2d_backward,
}
