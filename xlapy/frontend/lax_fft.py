"""lax.fft: the HLO `fft` op over the 1-3 trailing dimensions, as jax.lax.fft.

    fft(x, fft_type, fft_lengths)

fft_type is a `FftType` or its name ('FFT'/'fft', 'IFFT', 'RFFT', 'IRFFT'). As in JAX, the operand is first
converted: RFFT takes a real operand (integers become the default float; a complex operand is an error), the
other three a complex one (a real or integer operand becomes complex64, or complex128 from float64). Empty
fft_lengths return the converted operand. Shapes follow JAX's abstract evaluation: FFT/IFFT/RFFT operands end
in fft_lengths, an IRFFT operand ends in fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,), and RFFT maps
(..., *fft_lengths) to (..., *fft_lengths[:-1], fft_lengths[-1] // 2 + 1). IFFT and IRFFT scale by 1/N.

Errors are XlapyErrors that are also the ValueError / TypeError JAX raises for the same mistake.
"""
from __future__ import annotations

import enum
import math
from typing import Sequence

import numpy as np

from ..errors import XlapyError
from . import dtypes
from .lax_operands import convert_element_type, hlo_shape
from .lax_shapes import full
from .tracer import aval, bind, user_frame

__all__ = ["FftType", "fft", "FftValueError", "FftTypeError"]


class FftType(enum.IntEnum):
    """Which FFT to perform (jax.lax.FftType)."""
    FFT = 0      # forward complex-to-complex
    IFFT = 1     # inverse complex-to-complex
    RFFT = 2     # forward real-to-complex
    IRFFT = 3    # inverse complex-to-real


class FftValueError(XlapyError, ValueError):
    """A bad fft argument: an XlapyError that is also the ValueError JAX raises."""


class FftTypeError(XlapyError, TypeError):
    """A bad fft argument type: an XlapyError that is also the TypeError JAX raises."""


def _where() -> str:
    return f" (at {user_frame()})"


def fft_type_of(fft_type) -> FftType:
    """FftType from an FftType or its name, as JAX accepts it."""
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        for t in FftType:
            if fft_type in (t.name, t.name.lower()):
                return t
        raise FftValueError(f"lax.fft: Unknown FFT type '{fft_type}'" + _where())
    raise FftTypeError(f"lax.fft: Unknown FFT type value '{fft_type}'" + _where())


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype a value of `dtype` is transformed in (JAX's to_complex_dtype, canonicalized)."""
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.complexfloating):
        return dtypes.canonicalize(dt)
    if dt == np.float64:
        return dtypes.canonicalize(np.complex128)
    if dtypes.is_float(dt):
        return np.dtype(np.complex64)
    return dtypes.default_complex()


def real_dtype(dtype) -> np.dtype:
    """The real dtype of complex `dtype` (complex64 -> float32)."""
    return np.dtype(np.finfo(np.dtype(dtype)).dtype)


def fft(x, fft_type, fft_lengths: Sequence[int]):
    """jax.lax.fft: an FFT of kind `fft_type` over the len(fft_lengths) trailing dimensions of x."""
    kind = fft_type_of(fft_type)
    try:
        lengths = tuple(int(n) for n in fft_lengths)
    except TypeError:
        raise FftTypeError(f"lax.fft: fft_lengths must be a sequence of integers, got {fft_lengths!r}"
                           + _where()) from None
    a = aval(x)
    if kind == FftType.RFFT:
        if np.issubdtype(a.dtype, np.complexfloating):
            raise FftValueError("lax.fft: only real valued inputs supported for rfft" + _where())
        target = a.dtype if dtypes.is_float(a.dtype) else dtypes.default_float()
    else:
        target = complex_dtype(a.dtype)
    x = convert_element_type(x, target)
    if not lengths:
        return x     # XLA's fft has no rank-0 form
    a = aval(x)
    shape, k = tuple(a.shape), len(lengths)
    if k > 3:
        raise FftValueError(f"lax.fft: XLA's fft transforms at most 3 dimensions, got fft_lengths {lengths}"
                            + _where())
    if k > len(shape):
        raise FftValueError(f"lax.fft: FFT input shape {shape} must have at least as many input dimensions as "
                            f"fft_lengths {lengths}." + _where())
    if any(n < 0 for n in lengths):
        raise FftValueError(f"lax.fft: fft_lengths must be non-negative, got {lengths}" + _where())
    head = shape[:len(shape) - k]
    if kind == FftType.RFFT:
        if a.dtype not in (np.float32, np.float64):
            raise FftValueError(f"lax.fft: RFFT input must be float32 or float64, got {a.dtype}" + _where())
        if shape[-k:] != lengths:
            raise FftValueError(f"lax.fft: RFFT input shape {shape} minor dimensions must be equal to fft_lengths "
                                f"{lengths}" + _where())
        out_dims, out_dtype = head + lengths[:-1] + (lengths[-1] // 2 + 1,), complex_dtype(a.dtype)
    elif kind == FftType.IRFFT:
        want = lengths[:-1] + (lengths[-1] // 2 + 1,)
        if shape[-k:] != want:
            raise FftValueError(f"lax.fft: IRFFT input shape {shape} minor dimensions must be equal to "
                                f"{want} for fft_lengths={lengths}" + _where())
        out_dims, out_dtype = head + lengths, real_dtype(a.dtype)
    else:
        if shape[-k:] != lengths:
            raise FftValueError(f"lax.fft: {kind.name} input shape {shape} minor dimensions must be equal to "
                                f"fft_lengths {lengths}" + _where())
        out_dims, out_dtype = shape, a.dtype
    if math.prod(out_dims) == 0 or math.prod(shape) == 0:
        return full(out_dims, 0, out_dtype)
    return bind("fft", [x], {"fft_type": kind.name, "fft_length": lengths}, shape=hlo_shape(out_dtype, out_dims),
                name="fft")
