"""Element-type helpers shared by the interpreter's elementwise and conversion rules.

Compute forms: floats narrower than f64 are computed in float64 and rounded through f32 to the result type
(for + - * / sqrt fmod exactly "compute in f32 and round"; bf16/f16/f8 get XLA's upcast-compute-round);
c64 is computed in c128; sub-byte integers (s2/s4/u2/u4) in an 8-bit container. Integers wrap.
"""
from __future__ import annotations

import numpy as np

from ...hlo.shape import PrimitiveType, primitive_type, type_name_of_dtype


def ptype_of(x: np.ndarray) -> PrimitiveType:
    return primitive_type(type_name_of_dtype(x.dtype))


# XLA:CPU runs with denormals-are-zero and flush-to-zero (MXCSR DAZ/FTZ): an f32/f64 denormal operand of an
# arithmetic or compare instruction reads as a zero of the same sign, and a denormal result becomes zero.
# bf16/f8 are computed in f32, so the f32 denormal range applies to them (f16 denormals are f32-normal).
# Ops XLA:CPU implements with bit operations (abs, negate, is-finite, total-order compare) see no flushing, nor
# does power, which calls the C library's powf/pow (they test operands bitwise: pow(-x, denormal) is NaN).
FLUSH_DENORMALS = True
NO_FLUSH = frozenset({"abs", "negate", "is-finite", "real", "imag", "power"})


def flush_denormals(pt: PrimitiveType, x: np.ndarray) -> np.ndarray:
    """x (an f64 compute array for element type pt) with f32-or-f64 denormals replaced by signed zeros."""
    if not FLUSH_DENORMALS or pt.kind != "float":
        return x
    tiny = np.finfo(np.float64 if pt.bits == 64 else np.float32).tiny
    return np.where(np.abs(x) < tiny, np.copysign(0.0, x), x)


def compute_form(pt: PrimitiveType, x: np.ndarray, flush: bool = True) -> np.ndarray:
    x = np.asarray(x)
    if pt.kind == "float":
        wide = x.astype(np.float64)
        return flush_denormals(pt, wide) if flush else wide
    if pt.kind == "complex":
        return x.astype(np.complex128)
    if pt.kind in ("int", "uint") and pt.bits < 8:
        return x.astype(np.int8 if pt.kind == "int" else np.uint8)
    return x


def to_type(out, dtype: np.dtype) -> np.ndarray:
    """Round/wrap a computed value to `dtype`. Results computed in f64 reach types narrower than f32
    through f32, as XLA computes them in f32 and rounds (Eigen's half/bfloat16 also convert via float)."""
    out = np.asarray(out)
    dtype = np.dtype(dtype)
    if out.dtype == dtype:
        return out
    if out.dtype == np.float64 and dtype.itemsize < 4 and _is_float_dtype(dtype):
        return out.astype(np.float32).astype(dtype)
    if _is_subbyte_int(dtype) and out.dtype.kind in "iub":
        return out.astype(np.int64).astype(dtype)
    return out.astype(dtype)


def _is_float_dtype(dtype: np.dtype) -> bool:
    try:
        return primitive_type(type_name_of_dtype(dtype)).kind == "float"
    except TypeError:
        return False


def _is_subbyte_int(dtype: np.dtype) -> bool:
    try:
        pt = primitive_type(type_name_of_dtype(dtype))
    except TypeError:
        return False
    return pt.kind in ("int", "uint") and pt.bits < 8


def int_limits(pt: PrimitiveType) -> tuple[int, int]:
    if pt.kind == "int":
        return -(1 << (pt.bits - 1)), (1 << (pt.bits - 1)) - 1
    return 0, (1 << pt.bits) - 1


def unsigned_bits(pt: PrimitiveType, x: np.ndarray) -> np.ndarray:
    """The two's complement bit pattern of integer x as a uint64 array (only the low pt.bits set)."""
    mask = np.uint64((1 << pt.bits) - 1)
    return np.asarray(x).astype(np.int64).astype(np.uint64) & mask if pt.kind == "int" \
        else np.asarray(x).astype(np.uint64) & mask


def signed_value(pt: PrimitiveType, x: np.ndarray) -> np.ndarray:
    """The bit pattern of integer x read as a signed pt.bits-wide integer (int64 array)."""
    u = unsigned_bits(pt, x)
    if pt.bits == 64:
        return u.view(np.int64)
    sign = np.uint64(1 << (pt.bits - 1))
    return (u ^ sign).astype(np.int64) - np.int64(1 << (pt.bits - 1))
