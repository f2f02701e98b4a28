"""Element type conversions: convert, bitcast-convert, reduce-precision, stochastic-convert.

convert follows XLA: float -> int truncates and saturates, NaN -> 0; x -> pred is x != 0; narrowing float
conversions go through f32 (as XLA's Eigen half/bfloat16 do); f32/f64 denormal sources read as zero.
"""
from __future__ import annotations

import numpy as np

from ...errors import ExecutionError, UnimplementedError
from ...hlo.shape import primitive_type, type_name_of_dtype
from . import element_types
from .element_types import flush_denormals, int_limits, ptype_of, to_type


def convert_array(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """XLA's element conversion: float->int truncates, saturates, NaN -> 0; x -> pred is x != 0."""
    x = np.asarray(x)
    src = ptype_of(x)
    dst = primitive_type(type_name_of_dtype(dtype))
    if src.kind == "float" and element_types.FLUSH_DENORMALS:
        x = to_type(flush_denormals(src, x.astype(np.float64)), x.dtype)
    if dst.kind == "pred":
        return np.asarray(x != 0) if src.kind != "pred" else x.copy()
    if src.kind == "complex" and dst.kind != "complex":
        x, src = x.real, ptype_of(x.real)
    if src.kind == "float" and dst.kind in ("int", "uint"):
        f = x.astype(np.float64)
        lo, hi = int_limits(dst)
        t = np.trunc(f)
        inside = (t > float(lo)) & (t < float(hi)) if dst.bits == 64 else (t >= lo) & (t <= hi)
        container = np.int64 if dst.kind == "int" else np.uint64
        val = np.where(inside, t, 0).astype(container)
        val = np.where(np.isnan(f), container(0),
                       np.where(f >= float(hi), container(hi), np.where(f <= float(lo), container(lo), val)))
        return val.astype(dtype)
    if src.kind == "float" and dst.kind == "float" and src.bits == 64 and dst.bits == 16:
        return x.astype(np.float32).astype(dtype)
    if src.kind in ("int", "uint", "pred") and dst.kind == "float" and dst.bits < 32:
        return x.astype(np.float32).astype(dtype)
    if src.kind in ("int", "uint") and dst.kind in ("int", "uint") and (src.bits < 8 or dst.bits < 8):
        return x.astype(np.int64).astype(dtype)
    return x.astype(dtype)


def _convert(inst, args, ev):
    return convert_array(args[0], inst.shape.dtype)


def _bitcast_convert(inst, args, ev):
    x = np.array(args[0], order="C")   # keeps rank 0 (ascontiguousarray would not)
    out_dtype = inst.shape.dtype
    src, dst = ptype_of(x), inst.shape.ptype
    if src.bits < 8 or dst.bits < 8:
        if src.bits != dst.bits:
            raise UnimplementedError(f"bitcast-convert {inst.name}: {src.name} -> {dst.name} with sub-byte types")
        same = x.astype(np.int64).astype(out_dtype) if src.kind in ("int", "uint") and dst.kind in ("int", "uint") \
            else x.view(out_dtype)
        return same.reshape(inst.shape.dims)
    flat = x.reshape(-1).view(out_dtype) if x.ndim else x.reshape(1).view(out_dtype)
    return flat.reshape(inst.shape.dims)


# -- reduce-precision --------------------------------------------------------------------------------
def reduce_precision_array(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Round x to a float with the given exponent/mantissa widths (RNE; overflow -> inf; denormals -> 0)."""
    x = np.asarray(x)
    wide = np.float64 if x.dtype == np.float64 else np.float32
    v = x.astype(wide)
    uint = np.uint64 if wide == np.float64 else np.uint32
    src_mant = 52 if wide == np.float64 else 23
    src_exp = 11 if wide == np.float64 else 8
    total = 1 + src_exp + src_mant
    b = v.view(uint).astype(np.uint64)
    if mantissa_bits < src_mant:
        last = np.uint64(1 << (src_mant - mantissa_bits))
        bias = (last >> np.uint64(1)) - np.uint64(1) + ((b & last) >> np.uint64(src_mant - mantissa_bits))
        b = ((b + bias) & ~(last - np.uint64(1))) & np.uint64((1 << total) - 1)
    if exponent_bits < src_exp:
        sign_mask = np.uint64(1 << (total - 1))
        exp_mask = np.uint64(((1 << src_exp) - 1) << src_mant)
        exp_bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        x_exp = b & exp_mask
        overflow = x_exp > np.uint64((exp_bias + reduced_bias) << src_mant)
        underflow = x_exp <= np.uint64((exp_bias - reduced_bias) << src_mant)
        signed_zero = b & sign_mask
        b = np.where(overflow, signed_zero | exp_mask, b)
        b = np.where(underflow, signed_zero, b)
    out = b.astype(uint).view(wide)
    nan = np.isnan(v)
    out = np.where(nan, v if mantissa_bits > 0 else np.inf, out)   # as XLA: +inf when no mantissa
    return to_type(out, x.dtype)


def _reduce_precision(inst, args, ev):
    pt = ptype_of(args[0])
    if pt.kind != "float":
        raise ExecutionError(f"reduce-precision is not defined for {pt.name} (instruction {inst.name})")
    return reduce_precision_array(args[0], int(inst.attrs["exponent_bits"]), int(inst.attrs["mantissa_bits"]))


# -- stochastic-convert ------------------------------------------------------------------------------
def _stochastic_convert(inst, args, ev):
    x, rand = args
    dst = inst.shape.ptype
    if ptype_of(x).kind != "float" or dst.kind != "int":
        raise UnimplementedError(f"stochastic-convert {inst.name}: {ptype_of(x).name} -> {dst.name}")
    f = x.astype(np.float64)
    lo, hi = int_limits(dst)
    a = np.abs(f)
    trunc = np.trunc(np.where(np.isfinite(a), np.minimum(a, float(hi)), 0))
    frac = a - trunc
    rbits = ptype_of(rand).bits
    fixed = np.floor(np.ldexp(frac, rbits))
    up = rand.astype(np.float64) < fixed
    mag = trunc + up
    val = np.where(f < 0, -mag, mag)
    val = np.where(f >= hi, hi, np.where(f <= lo, lo, val))
    val = np.where(np.isnan(f), 0, val)
    return to_type(val.astype(np.int64), inst.shape.dtype)


HANDLERS = {
    "convert": _convert,
    "bitcast-convert": _bitcast_convert,
    "reduce-precision": _reduce_precision,
    "stochastic-convert": _stochastic_convert,
}
