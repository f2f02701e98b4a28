"""xlapy.numpy: NumPy's API with JAX's semantics (jax.numpy), so `import xlapy.numpy as xnp` replaces
`import jax.numpy as jnp`.

Every function builds HLO through xlapy.lax, so it works traced under `xlapy.jit` and eagerly on Arrays.
JAX's rules apply: dtype promotion with weakly typed Python scalars, 32-bit defaults unless
`xlapy.config.update("jax_enable_x64", True)`, static shapes and axes, functional updates (`x.at[i].set(v)`),
and functions with data-dependent output shapes (nonzero, unique, where(c), boolean masks) need a static
`size=` under jit (they raise xlapy.ConcretizationError otherwise).

Families: creation.py, elementwise.py, reductions.py, shape_ops.py, products.py (products, einsum),
indexing_ops.py (take, nonzero, unique ...), sorting.py, vectorize.py (over vmap), setops.py (union1d, isin,
unique_all ...), polynomial.py (poly*, roots, convolve, correlate), statistics.py (quantile, nan* reductions,
cov, histograms, bincount), more_math.py (frexp, gcd, windows, interp, gradient ...), more_arrays.py (block,
r_/c_, insert/delete, put, piecewise, ufunc ...); the submodule fft.py is `xlapy.numpy.fft`.
"""
from __future__ import annotations

import math as _math

import ml_dtypes as _ml_dtypes
import numpy as _np

from ..frontend import dtypes as _dtypes
from ..frontend.array import Array
from .creation import (arange, array, asarray, copy, diag, empty, empty_like, eye, full, full_like, identity,
                       linspace, logspace, meshgrid, ndim, ones, ones_like, shape, size, tri, tril, triu, zeros,
                       zeros_like)
from ..dlpack import from_dlpack
from .elementwise import (abs, absolute, acos, acosh, add, allclose, arccos, arccosh, arcsin, arcsinh, arctan,
                          arctan2, arctanh, around, array_equal, asin, asinh, atan, atan2, atanh, bitwise_and,
                          bitwise_invert, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift,
                          bitwise_xor, cbrt, ceil, clip, conj, conjugate, copysign, cos, cosh, deg2rad, degrees,
                          divide, divmod, equal, exp, exp2, expm1, fabs, fix, floor, floor_divide, fmax, fmin, fmod,
                          greater, greater_equal, heaviside, hypot, imag, invert, isclose, isfinite, isinf, isnan,
                          isneginf, isposinf, left_shift, less, less_equal, log, log1p, log2, log10, logaddexp,
                          logical_and, logical_not, logical_or, logical_xor, maximum, minimum, mod, multiply,
                          negative, not_equal, positive, pow, power, rad2deg, radians, real, reciprocal, remainder,
                          right_shift, rint, round, round_, sign, signbit, sin, sinc, sinh, sqrt, square, subtract,
                          tan, tanh, true_divide, trunc, where)
from .indexing_ops import (argwhere, diag_indices, extract, flatnonzero, indices, nonzero, ravel_multi_index,
                           select, take, take_along_axis, tril_indices, triu_indices, unique, unique_values,
                           unravel_index)
from .products import dot, einsum, inner, kron, matmul, outer, tensordot, vdot
from .reductions import (all, amax, amin, any, argmax, argmin, average, count_nonzero, cumprod, cumsum,
                         cumulative_prod, cumulative_sum, max, mean, median, min, nanmax, nanmean, nanmin, nanprod,
                         nansum, prod, ptp, std, sum, var)
from .shape_ops import (append, array_split, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays,
                        broadcast_shapes, broadcast_to, column_stack, concat, concatenate, diagonal, dstack,
                        expand_dims, flip, fliplr, flipud, hsplit, hstack, matrix_transpose, moveaxis, pad,
                        permute_dims, ravel, repeat, reshape, roll, rot90, row_stack, split, squeeze, stack,
                        swapaxes, tile, trace, transpose, vsplit, vstack)
from .sorting import argpartition, argsort, lexsort, partition, searchsorted, sort
from .vectorize import vectorize
from .more_arrays import (ComplexWarning, apply_along_axis, apply_over_axes, array_equiv, array_repr, array_str,
                          block, c_, can_cast, choose, compress, delete, diag_indices_from, diagflat, dsplit,
                          einsum_path, fill_diagonal, frombuffer, fromfile, fromfunction, fromiter, frompyfunc,
                          fromstring, geomspace, get_printoptions, index_exp, insert, isdtype, iterable, ix_, load,
                          mask_indices, mgrid, ogrid, piecewise, place, printoptions, put, put_along_axis, r_,
                          resize, rollaxis, s_, save, savez, set_printoptions, tril_indices_from,
                          triu_indices_from, ufunc, unstack)
from .more_math import (angle, bartlett, bitwise_count, blackman, cross, diff, ediff1d, float_power, frexp, gcd,
                        gradient, hamming, hanning, i0, interp, iscomplex, iscomplexobj, isreal, isrealobj, kaiser,
                        lcm, ldexp, logaddexp2, matvec, modf, nextafter, packbits, sort_complex, spacing,
                        trapezoid, unpackbits, unwrap, vecdot, vecmat)
from .polynomial import (convolve, correlate, poly, polyadd, polyder, polydiv, polyfit, polyint, polymul, polysub,
                         polyval, roots, trim_zeros, vander)
from .setops import (intersect1d, isin, setdiff1d, setxor1d, union1d, unique_all, unique_counts, unique_inverse)
from .statistics import (bincount, corrcoef, cov, digitize, histogram, histogram2d, histogram_bin_edges,
                         histogramdd, nan_to_num, nanargmax, nanargmin, nancumprod, nancumsum, nanmedian,
                         nanpercentile, nanquantile, nanstd, nanvar, percentile, quantile)
from . import array_methods
from . import fft
from . import linalg

# -- constants ---------------------------------------------------------------------------------------------
pi = _math.pi
e = _math.e
euler_gamma = 0.5772156649015329
inf = float("inf")
nan = float("nan")
newaxis = None
ndarray = Array


# -- dtypes ------------------------------------------------------------------------------------------------

class _ScalarType:
    """A dtype name usable as a dtype (`np.dtype(xnp.float32)`, `x.astype(xnp.int8)`) and, called, as a
    constructor of arrays of that dtype (`xnp.float32(1.5)` is a 0-d Array), like jnp.float32."""

    def __init__(self, np_type):
        self.dtype = _np.dtype(np_type)
        self.__name__ = self.dtype.name

    def __call__(self, x):
        return array(x, dtype=self.dtype)

    def __eq__(self, other) -> bool:
        try:
            return self.dtype == _np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __repr__(self) -> str:
        return f"xlapy.numpy.{self.__name__}"


bool_ = _ScalarType(_np.bool_)
int8, int16, int32, int64 = (_ScalarType(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint16, uint32, uint64 = (_ScalarType(t) for t in (_np.uint8, _np.uint16, _np.uint32, _np.uint64))
float16, float32, float64 = (_ScalarType(t) for t in (_np.float16, _np.float32, _np.float64))
bfloat16 = _ScalarType(_ml_dtypes.bfloat16)
complex64, complex128 = _ScalarType(_np.complex64), _ScalarType(_np.complex128)
int_, uint, float_, complex_ = int64, uint64, float64, complex128
single, double = float32, float64

dtype = _np.dtype
generic, number, inexact, floating = _np.generic, _np.number, _np.inexact, _np.floating
integer, signedinteger, unsignedinteger = _np.integer, _np.signedinteger, _np.unsignedinteger
complexfloating = _np.complexfloating


def issubdtype(arg1, arg2) -> bool:
    a = arg1.dtype if isinstance(arg1, _ScalarType) else arg1
    b = arg2.dtype if isinstance(arg2, _ScalarType) else arg2
    if _np.dtype(a) == _dtypes.bfloat16:
        return b in (_np.floating, _np.inexact, _np.number, _np.generic) or _np.dtype(b) == _dtypes.bfloat16
    return _np.issubdtype(a, b)


def result_type(*args) -> _np.dtype:
    """The dtype JAX gives the result of combining these operands (Python scalars are weak)."""
    def operand(a):
        if isinstance(a, _ScalarType):
            return _np.zeros((), a.dtype)
        if isinstance(a, (_np.dtype, type, str)):
            return _np.zeros((), _np.dtype(a))
        return a
    return _dtypes.result_type(*(operand(a) for a in args))


def promote_types(a, b) -> _np.dtype:
    return _dtypes.promote(_dtypes.DType(_np.dtype(a)), _dtypes.DType(_np.dtype(b))).dtype


def finfo(dt):
    return _dtypes.finfo(_np.dtype(dt))


def iinfo(dt):
    return _dtypes.iinfo(_np.dtype(dt))


def astype(x, dtype, copy: bool = False):
    from ..lax import convert_element_type
    return convert_element_type(asarray(x), dtype)


def isscalar(element) -> bool:
    return _dtypes.is_python_scalar(element) or _np.isscalar(element) or (
        hasattr(element, "aval") and element.aval.ndim == 0)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "array_methods")]

# Array and Tracer get their operators and methods (x + y, x[i], x.sum() ...) from the functions above.
array_methods.attach()
