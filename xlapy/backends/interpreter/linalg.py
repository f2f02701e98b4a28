"""Interpreter rules for the linear-algebra ops: dot, convolution, fft, the batch norms; cholesky,
triangular-solve and the QR custom-call targets come from decompositions.py, JAX's `lapack_*_ffi` targets from
lapack_targets.py.

Numerics follow XLA's evaluator: operands are converted to the result type before the arithmetic
(integer dots/convolutions wrap around in that type); bf16/f16/f8 results are computed in float32 and
rounded once at the end. Convolution is vectorized (dilate + pad the input, view its windows with
as_strided, then one batched matmul per feature or batch group), so a 224x224 image takes milliseconds.
The batch norms follow xla/service/batchnorm_expander.cc (biased variance as E[x^2] - E[x]^2).
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...errors import ExecutionError
from ...hlo import Instruction
from .decompositions import CUSTOM_CALL_TARGETS as DECOMPOSITION_TARGETS, HANDLERS as DECOMPOSITIONS
from .lapack_targets import CUSTOM_CALL_TARGETS as LAPACK_TARGETS


def compute_dtype(result_dtype: np.dtype) -> np.dtype:
    """The numpy type arithmetic runs in for a given result type (float32 for the narrow floats)."""
    dt = np.dtype(result_dtype)
    if dt.kind == "V" or (dt.kind == "f" and dt.itemsize < 4) or dt.name in ("bfloat16",) \
            or dt.name.startswith("float8") or dt.name.startswith("float4"):
        return np.dtype(np.float32)
    if dt.name in ("int2", "int4"):
        return np.dtype(np.int8)
    if dt.name in ("uint2", "uint4"):
        return np.dtype(np.uint8)
    return dt


def _to_result(value: np.ndarray, inst: Instruction) -> np.ndarray:
    return np.asarray(value).astype(inst.shape.dtype, copy=False)


def _prod(xs) -> int:
    return int(math.prod(xs))


# -- dot ------------------------------------------------------------------------------------------

def _dot(inst: Instruction, args: list, ev) -> np.ndarray:
    """Result dims: batch dims, then lhs free dims, then rhs free dims (each in operand order)."""
    lhs, rhs = args
    a = inst.attrs
    lb, lc = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("lhs_contracting_dims", ()))
    rb, rc = tuple(a.get("rhs_batch_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    for x, y in zip(lb + lc, rb + rc):
        if lhs.shape[x] != rhs.shape[y]:
            raise ExecutionError(f"dot {inst.name}: lhs dim {x} (size {lhs.shape[x]}) does not match rhs dim {y} "
                                 f"(size {rhs.shape[y]}); shapes {lhs.shape} x {rhs.shape}")
    ct = compute_dtype(inst.shape.dtype)
    batch = [lhs.shape[d] for d in lb]
    m, n, k = _prod(lhs.shape[d] for d in lf), _prod(rhs.shape[d] for d in rf), _prod(lhs.shape[d] for d in lc)
    x = lhs.astype(ct, copy=False).transpose(list(lb) + lf + list(lc)).reshape(_prod(batch), m, k)
    y = rhs.astype(ct, copy=False).transpose(list(rb) + list(rc) + rf).reshape(_prod(batch), k, n)
    out = np.matmul(x, y)
    dims = batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf]
    return _to_result(out.reshape(dims), inst)


# -- convolution ----------------------------------------------------------------------------------

def _dilate_and_pad(x: np.ndarray, wdims) -> np.ndarray:
    """x is (N, spatial..., C): insert base-dilation holes, then pad (negative padding crops)."""
    if any(w.base_dilation > 1 for w in wdims):
        shape = [x.shape[0]] + [(s - 1) * w.base_dilation + 1 if s else 0 for s, w in zip(x.shape[1:-1], wdims)]
        dilated = np.zeros(shape + [x.shape[-1]], x.dtype)
        dilated[(slice(None),) + tuple(slice(None, None, w.base_dilation) for w in wdims)] = x
        x = dilated
    pads = [(0, 0)] + [(max(w.padding_low, 0), max(w.padding_high, 0)) for w in wdims] + [(0, 0)]
    if any(p != (0, 0) for p in pads):
        x = np.pad(x, pads)
    crops = [slice(None)] + [slice(max(-w.padding_low, 0), s - max(-w.padding_high, 0))
                             for s, w in zip(x.shape[1:-1], wdims)] + [slice(None)]
    return x[tuple(crops)]


def _windows(x: np.ndarray, kernel_sizes, wdims) -> tuple[np.ndarray, list[int]]:
    """(N, out spatial..., kernel spatial..., C) view of the windows of a padded (N, spatial..., C) input."""
    x = np.ascontiguousarray(x)
    outs = []
    for s, k, w in zip(x.shape[1:-1], kernel_sizes, wdims):
        extent = (k - 1) * w.window_dilation + 1 if k else 0
        outs.append(max((s - extent) // w.stride + 1, 0) if s >= extent else 0)
    st = x.strides
    spatial_st = st[1:-1]
    shape = (x.shape[0], *outs, *kernel_sizes, x.shape[-1])
    strides = (st[0], *(s * w.stride for s, w in zip(spatial_st, wdims)),
               *(s * w.window_dilation for s, w in zip(spatial_st, wdims)), st[-1])
    if 0 in shape:
        return np.zeros(shape, x.dtype), outs
    return as_strided(x, shape, strides, writeable=False), outs


def _convolution(inst: Instruction, args: list, ev) -> np.ndarray:
    lhs, rhs = args
    dn = inst.attrs["dim_labels"]
    if not dn.known:
        raise ExecutionError(f"convolution {inst.name}: dim_labels {dn.text!r} are not executable")
    window = inst.attrs.get("window")
    wdims = window.dims if window is not None else ()
    nsp = len(dn.input_spatial)
    if len(wdims) != nsp:
        raise ExecutionError(f"convolution {inst.name}: window has {len(wdims)} dims, operands have {nsp} spatial")
    fgc = int(inst.attrs.get("feature_group_count", 1))
    bgc = int(inst.attrs.get("batch_group_count", 1))
    ct = compute_dtype(inst.shape.dtype)

    x = lhs.astype(ct, copy=False).transpose((dn.input_batch, *dn.input_spatial, dn.input_feature))
    k = rhs.astype(ct, copy=False).transpose((*dn.kernel_spatial, dn.kernel_input_feature,
                                              dn.kernel_output_feature))
    flips = tuple(i for i, w in enumerate(wdims) if w.window_reversal)
    if flips:
        k = np.flip(k, axis=flips)
    ksizes = list(k.shape[:nsp])
    kf = _prod(ksizes)
    n, c = x.shape[0], x.shape[-1]
    ci, co = k.shape[-2], k.shape[-1]
    win, outs = _windows(_dilate_and_pad(x, wdims), ksizes, wdims)
    p = _prod(outs)

    if bgc > 1:
        nb, ob = n // bgc, co // bgc
        w = win.reshape(bgc, nb * p, kf * c)
        kk = k.reshape(kf, c, bgc, ob).transpose(2, 0, 1, 3).reshape(bgc, kf * c, ob)
        out = np.matmul(w, kk).reshape(bgc, nb, *outs, ob)
        out = np.moveaxis(out, 0, -2).reshape(nb, *outs, co)
    else:
        g = fgc
        cg, og = c // g, co // g
        if cg != ci:
            raise ExecutionError(f"convolution {inst.name}: input features {c} / feature_group_count {g} "
                                 f"!= kernel input features {ci}")
        w = win.reshape(n * p, kf, g, cg)
        kk = k.reshape(kf, cg, g, og)
        if g == 1:
            out = np.matmul(w.reshape(n * p, kf * cg), kk.reshape(kf * cg, og))
        elif cg == 1:  # depthwise: multiply-accumulate over the kernel positions, vectorized over channels
            out = np.zeros((n * p, g, og), ct)
            for i in range(kf):
                out += w[:, i, :, :] * kk[i, 0][None]
        else:
            w = w.transpose(2, 0, 1, 3).reshape(g, n * p, kf * cg)
            kk = kk.transpose(2, 0, 1, 3).reshape(g, kf * cg, og)
            out = np.moveaxis(np.matmul(w, kk), 0, 1)
        out = out.reshape(n, *outs, co)
    order = (dn.output_batch, *dn.output_spatial, dn.output_feature)
    return _to_result(out.transpose(np.argsort(order)), inst)


# -- batch norms ----------------------------------------------------------------------------------

def _feature(v: np.ndarray, rank: int, fi: int, ct) -> np.ndarray:
    """A per-feature vector shaped to broadcast against the operand."""
    shape = [1] * rank
    shape[fi] = v.shape[0]
    return v.astype(ct, copy=False).reshape(shape)


def _bn_setup(inst: Instruction, operand: np.ndarray):
    fi = int(inst.attrs["feature_index"])
    eps = float(inst.attrs.get("epsilon", 0.0))
    ct = compute_dtype(operand.dtype)
    axes = tuple(d for d in range(operand.ndim) if d != fi)
    return fi, ct.type(eps), ct, axes


def _batch_norm_inference(inst: Instruction, args: list, ev) -> np.ndarray:
    x, scale, offset, mean, var = args
    fi, eps, ct, _ = _bn_setup(inst, x)
    true_scale = scale.astype(ct) / np.sqrt(var.astype(ct) + eps)
    true_shift = offset.astype(ct) - mean.astype(ct) * true_scale
    r = x.ndim
    out = x.astype(ct) * _feature(true_scale, r, fi, ct) + _feature(true_shift, r, fi, ct)
    return _to_result(out, inst)


def _batch_norm_training(inst: Instruction, args: list, ev) -> tuple:
    x, scale, offset = args
    fi, eps, ct, axes = _bn_setup(inst, x)
    xc = x.astype(ct)
    count = ct.type(_prod(x.shape[d] for d in axes))
    mean = np.sum(xc, axis=axes) / count
    var = np.sum(xc * xc, axis=axes) / count - mean * mean
    r = x.ndim
    normalized = (xc - _feature(mean, r, fi, ct)) / np.sqrt(_feature(var, r, fi, ct) + eps)
    out = normalized * _feature(scale, r, fi, ct) + _feature(offset, r, fi, ct)
    dt = x.dtype
    return out.astype(dt), mean.astype(dt), var.astype(dt)


def _batch_norm_grad(inst: Instruction, args: list, ev) -> tuple:
    x, scale, mean, var, grad_out = args
    fi, eps, ct, axes = _bn_setup(inst, x)
    r = x.ndim
    count = ct.type(_prod(x.shape[d] for d in axes))
    xc, gy = x.astype(ct), grad_out.astype(ct)
    centered = xc - _feature(mean, r, fi, ct)
    var_eps = var.astype(ct) + eps
    rsqrt = 1 / np.sqrt(var_eps)
    sum_gy_centered = np.sum(gy * centered, axis=axes)
    grad_offset = np.sum(gy, axis=axes)
    grad_scale = sum_gy_centered * rsqrt
    inner = (gy * count - _feature(grad_offset, r, fi, ct)
             - centered * _feature(sum_gy_centered, r, fi, ct) / _feature(var_eps, r, fi, ct))
    grad_x = _feature(scale.astype(ct) * rsqrt / count, r, fi, ct) * inner
    dt = x.dtype
    return grad_x.astype(dt), grad_scale.astype(dt), grad_offset.astype(dt)


def _fft(inst: Instruction, args: list, ev) -> np.ndarray:
    (x,) = args
    lengths = tuple(int(n) for n in inst.attrs.get("fft_length", ()))
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    kind = str(inst.attrs.get("fft_type", "FFT"))
    wide = np.complex128 if inst.shape.dtype == np.complex128 or x.dtype in (np.complex128, np.float64) \
        else np.complex64
    if kind == "FFT":
        out = np.fft.fftn(x, s=lengths, axes=axes)
    elif kind == "IFFT":
        out = np.fft.ifftn(x, s=lengths, axes=axes)
    elif kind == "RFFT":
        out = np.fft.rfftn(x, s=lengths, axes=axes)
    elif kind == "IRFFT":
        out = np.fft.irfftn(x, s=lengths, axes=axes)
    else:
        raise ExecutionError(f"fft {inst.name}: unknown fft_type {kind!r}")
    if np.iscomplexobj(out):
        out = out.astype(wide)
    return _to_result(out, inst)


HANDLERS = {
    **DECOMPOSITIONS,
    "fft": _fft,
    "dot": _dot,
    "convolution": _convolution,
    "batch-norm-inference": _batch_norm_inference,
    "batch-norm-training": _batch_norm_training,
    "batch-norm-grad": _batch_norm_grad,
}

CUSTOM_CALL_TARGETS = {**DECOMPOSITION_TARGETS, **LAPACK_TARGETS}
