"""xlapy.numpy.fft: jax.numpy.fft (NumPy's numpy.fft API) over lax.fft.

    fft, ifft, rfft, irfft, hfft, ihfft          1-D, along `axis` (default -1), `n` points
    fft2, ifft2, rfft2, irfft2                   2-D, along `axes` (default (-2, -1)), shape `s`
    fftn, ifftn, rfftn, irfftn                   N-D, along `axes` (default: all, or the last len(s)), shape `s`
    fftfreq, rfftfreq                            sample frequencies
    fftshift, ifftshift                          zero frequency to the centre and back

Semantics are JAX's (which match numpy.fft's values): `n` / `s` crop or zero-pad the input along each
transformed axis (for the inverse real transforms, the output length: the input is cropped or padded to
s[-1] // 2 + 1); `norm` is 'backward' (None, the default: 1/N on the inverse), 'ortho' (1/sqrt(N) both ways)
or 'forward' (1/N on the forward transform). The transformed axes are moved to the end, since XLA's fft works
on the trailing 1-3 dimensions; more than three are done in groups (a 4-D transform as two 2-D ones), as JAX
does. dtypes: integer and real input become complex64 (complex128 from float64 with x64 enabled); rfft of a
complex array is an error; the inverse real transforms return the real dtype.

Errors are XlapyErrors that are also the ValueError / TypeError JAX raises for the same mistake.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from ..frontend.lax_fft import FftType, FftTypeError, FftValueError
from ..frontend.tracer import user_frame
from ._util import Array, arr, aval, dtypes, lax
from .shape_ops import moveaxis, roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


def _value_error(message: str) -> FftValueError:
    return FftValueError(f"{message} (at {user_frame()})")


def _arraylike(name: str, a: Any) -> Any:
    """jnp's ensure_arraylike: arrays, numpy values and scalars; a list or tuple is a TypeError."""
    if isinstance(a, (list, tuple)) or not (hasattr(a, "aval") or isinstance(a, (np.ndarray, np.generic))
                                            or dtypes.is_python_scalar(a)):
        raise FftTypeError(f"xlapy.numpy.fft.{name} requires ndarray or scalar arguments, got "
                           f"{type(a).__name__} at position 0. (at {user_frame()})")
    return arr(a)


def _norm_factor(func_name: str, norm: str, lengths: Sequence[int], dtype) -> np.ndarray | None:
    """The factor `norm` multiplies the result by (None for 'backward'), in the result's dtype."""
    if norm in (None, "backward"):
        return None
    real = np.finfo(dtype).dtype
    total = np.prod(np.asarray(lengths, real), dtype=real)
    inverse = func_name.startswith("i")
    if norm == "ortho":
        root = np.sqrt(total)
        f = root if inverse else real.type(1) / root
    else:
        f = total if inverse else real.type(1) / total
    return np.asarray(f, dtype)


def _core_nd(x: Any, kind: FftType, s: Sequence[int]) -> Any:
    """The transform of x's len(s) trailing axes: one lax.fft for up to 3, else groups (JAX's order)."""
    if len(s) <= 3:
        return lax.fft(x, kind, tuple(s))
    n = 2 if len(s) == 4 else 3
    nd = aval(x).ndim
    src = tuple(range(nd - len(s), nd - n))
    dst = tuple(range(nd - len(s) + n, nd))
    if kind in (FftType.RFFT, FftType.FFT):
        x = lax.fft(x, kind, tuple(s)[-n:])
        x = moveaxis(x, src, dst)
        x = _core_nd(x, FftType.FFT, s[:-n])
        return moveaxis(x, dst, src)
    x = moveaxis(x, src, dst)
    x = _core_nd(x, FftType.IFFT, s[:-n])
    x = moveaxis(x, dst, src)
    return lax.fft(x, kind, tuple(s)[-n:])


def _crop_pad(x: Any, dims: Sequence[int]) -> Any:
    """x cropped or zero-padded (at the end) to `dims`."""
    shape = aval(x).shape
    if any(d < s for d, s in zip(dims, shape)):
        x = lax.slice(x, (0,) * len(shape), tuple(min(d, s) for d, s in zip(dims, shape)))
        shape = aval(x).shape
    if any(d > s for d, s in zip(dims, shape)):
        zero = np.zeros((), aval(x).dtype)
        x = lax.pad(x, zero, [(0, d - s, 0) for d, s in zip(dims, shape)])
    return x


def _core(func_name: str, kind: FftType, a: Any, s: Sequence[int] | None, axes: Sequence[int] | None,
          norm: str | None) -> Any:
    full_name = f"xlapy.numpy.fft.{func_name}"
    x = _arraylike(func_name, a)
    nd = aval(x).ndim
    if norm not in _NORMS:
        raise _value_error(f'{full_name}: Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    if s is not None:
        try:
            s = tuple(operator.index(k) for k in s)
        except TypeError:
            raise FftTypeError(f"{full_name}: s must be a sequence of integers, got {s!r} "
                               f"(at {user_frame()})") from None
        if any(k <= 0 for k in s):
            raise _value_error(f"{full_name}: Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise _value_error(f"{full_name}: Shape and axes have different lengths.")
    orig_axes = None
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
        if any(a < 0 for a in axes):
            raise _value_error(f"{full_name}: s {s} has more entries than the input has dimensions ({nd})")
    else:
        axes = tuple(operator.index(ax) for ax in axes)
        for ax in axes:
            if not -nd <= ax < nd:
                raise _value_error(f"{full_name}: axis {ax} is out of bounds for an array of dimension {nd}")
        canon = tuple(ax % nd for ax in axes)
        if len(set(canon)) != len(canon):
            raise _value_error(f"{full_name} does not support repeated axes. Got axes {axes}.")
        orig_axes = canon
        axes = tuple(range(nd - len(axes), nd))
        x = moveaxis(x, orig_axes, axes)
    shape = aval(x).shape
    if s is not None:
        in_s = list(shape)
        for ax, k in zip(axes, s):
            in_s[ax] = k
        if kind == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        x = _crop_pad(x, in_s)
    elif kind == FftType.IRFFT:
        s = [shape[ax] for ax in axes[:-1]] + ([max(0, 2 * (shape[axes[-1]] - 1))] if axes else [])
    else:
        s = [shape[ax] for ax in axes]
    out = _core_nd(x, kind, s)
    factor = _norm_factor(func_name, norm, s, aval(out).dtype)
    if factor is not None:
        out = lax.mul(out, Array(factor))
    if orig_axes is not None:
        out = moveaxis(out, axes, orig_axes)
    return out


# -- 1-D ---------------------------------------------------------------------------------------------------
def _axis_1d(func_name: str, axis) -> None:
    if isinstance(axis, (list, tuple)):
        full_name = f"xlapy.numpy.fft.{func_name}"
        raise _value_error(f"{full_name} does not support multiple axes. Please use {full_name}n. "
                           f"Got axis = {axis!r}.")


def _core_1d(func_name: str, kind: FftType, a: Any, n: int | None, axis: int, norm: str | None) -> Any:
    _axis_1d(func_name, axis)
    return _core(func_name, kind, a, None if n is None else [n], None if axis is None else [axis], norm)


def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The 1-D discrete Fourier transform along `axis`, of `n` points (cropped or zero-padded)."""
    return _core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The 1-D inverse discrete Fourier transform along `axis`."""
    return _core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The 1-D transform of a real array: n // 2 + 1 frequencies along `axis`."""
    return _core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of rfft: `n` real points along `axis` (default 2 * (m - 1) for m input frequencies)."""
    return _core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The transform of a signal with a Hermitian-symmetric spectrum: real output of `n` points."""
    _axis_1d("hfft", axis)
    x = _conj(_arraylike("hfft", a))
    nn = (aval(x).shape[axis] - 1) * 2 if n is None else n
    return lax.mul(_core_1d("hfft", FftType.IRFFT, x, n, axis, norm), nn)


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of hfft: n // 2 + 1 complex points along `axis`."""
    _axis_1d("ihfft", axis)
    x = _arraylike("ihfft", a)
    nn = aval(x).shape[axis] if n is None else n
    out = _core_1d("ihfft", FftType.RFFT, x, n, axis, norm)
    return lax.mul(_conj(out), 1 / nn)


def _conj(x: Any) -> Any:
    if aval(x).dtype.kind != "c":
        return x
    return lax.complex(lax.real(x), lax.neg(lax.imag(x)))


# -- 2-D and N-D ------------------------------------------------------------------------------------------
def _core_2d(func_name: str, kind: FftType, a: Any, s, axes, norm) -> Any:
    if len(axes) != 2:
        raise _value_error(f"xlapy.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
    return _core(func_name, kind, a, s, axes, norm)


def fft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return _core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return _core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return _core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return _core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _core("irfftn", FftType.IRFFT, a, s, axes, norm)


# -- frequencies and shifts -----------------------------------------------------------------------------
def _check_freq_args(name: str, n, d) -> None:
    if isinstance(n, (list, tuple)):
        raise _value_error(f"The n argument of xlapy.numpy.fft.{name} only takes an int. Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise _value_error(f"The d argument of xlapy.numpy.fft.{name} only takes a single value. "
                           f"Got d = {list(d)}.")


def _scaled(k: np.ndarray, d, n: int, dtype) -> Any:
    """k / (d * n) in `dtype` (d may be traced)."""
    if hasattr(d, "aval"):
        return lax.div(Array(k), lax.convert_element_type(lax.mul(d, n), dtype))
    return Array(k) / Array(np.asarray(d * n, dtype))


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point fft with sample spacing d: [0, 1, ..., -1] / (d n)."""
    _check_freq_args("fftfreq", n, d)
    out_dtype = dtypes.canonicalize(dtype or dtypes.default_float())
    calc = out_dtype if dtypes.is_inexact(out_dtype) else dtypes.default_float()
    calc = np.dtype(np.finfo(calc).dtype)
    n = operator.index(n)
    i = np.arange(n, dtype=calc)
    k = ((i + n // 2) % n - n // 2).astype(calc)
    out = _scaled(k, d, n, calc)
    return out if aval(out).dtype == out_dtype else lax.convert_element_type(out, out_dtype)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (d n)."""
    _check_freq_args("rfftfreq", n, d)
    dtype = dtypes.canonicalize(dtype or dtypes.default_float())
    n = operator.index(n)
    k = np.arange(0, n // 2 + 1, dtype=dtype)
    if not dtypes.is_inexact(dtype):
        k = k.astype(dtypes.default_float())
        dtype = dtypes.default_float()
    return _scaled(k, d, n, dtype)


def _shift(name: str, x, axes, sign: int) -> Any:
    x = _arraylike(name, x)
    shape = aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
        shift = [sign * (dim // 2) for dim in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = sign * (shape[axes] // 2)
    else:
        shift = [sign * (shape[ax] // 2) for ax in axes]
    if not shape:
        return x
    return roll(x, shift, axes)


def fftshift(x, axes: None | int | Sequence[int] = None):
    """Moves the zero-frequency term to the centre (roll by dim // 2 along `axes`, default all)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes: None | int | Sequence[int] = None):
    """The inverse of fftshift."""
    return _shift("ifftshift", x, axes, -1)
