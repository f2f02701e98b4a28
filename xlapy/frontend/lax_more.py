"""The rest of jax.lax's public API that is built from the other lax families (re-exported by xlapy.lax):
inverse trig/hyperbolic functions, exp2/square/reciprocal/conj, nextafter, mulhi, select_n, the `*_in_dim`
slicing helpers, split/stack/unstack/tile/collapse, cumlogsumexp, associative_scan, batch_matmul, index_take,
scatter_sub/scatter_apply, convolution helpers (conv, conv_with_general_padding, the shape-tuple functions,
conv_general_dilated_patches/local), approx_max_k/approx_min_k (exact), ragged_dot, custom_linear_solve /
custom_root (forward value: the solve), tokens and markers, and the type names (DotAlgorithm, Tolerance ...).

Every function is a composition of lax ops with JAX's semantics; where JAX lowers an op to a CHLO
decomposition (acos, asinh, ...), xlapy uses the same real-valued formulas numpy's family uses.
"""
from __future__ import annotations

import enum
import math
from collections import namedtuple
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import dtypes
from .lax_dot_conv import Precision, conv_general_dilated, dot_general, padtype_to_pads
from .lax_elementwise import (abs as lax_abs, add, atan2, bitcast_convert_type, bitwise_and, bitwise_or, div, eq,
                              cos, exp, expm1, gt, imag, log, log1p, lt, max as lax_max, mul, ne, neg, real,
                              select, sin,
                              shift_right_logical, sign, sqrt, sub, complex as lax_complex)
from .lax_operands import canonical_axis, coerce_same, convert, lax_error
from .lax_reduce import (GatherDimensionNumbers, ScatterDimensionNumbers, _int_indices, _mode, gather,
                         reduce_window, scalar_computation, scatter_add, scatter_attrs, sort, top_k, _clip_scatter_indices)
from .lax_shapes import (broadcast, broadcast_in_dim, concatenate, dynamic_slice, dynamic_update_slice,
                         expand_dims, full, full_like, reshape, rev, slice as lax_slice, squeeze, transpose)
from .tracer import aval, bind

_LN2 = math.log(2.0)


def _arr(x):
    """A lax operand as a value with an aval (Python scalars weak, numpy values as they are)."""
    if hasattr(x, "aval"):
        return x
    from .array import Array
    if dtypes.is_python_scalar(x):
        t = dtypes.python_scalar_type(x)
        return Array(np.asarray(x, t.dtype), weak_type=t.weak)
    return Array(np.asarray(x))


def _c(x, value):
    return full_like(x, value)


def _float_op(name: str, fn: Callable) -> Callable:
    def op(x):
        x = _arr(x)
        if not dtypes.is_inexact(aval(x).dtype):
            raise lax_error(name, f"needs a floating-point or complex operand, got {aval(x)}")
        return fn(x)
    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (lax.{name})."
    return op


# -- elementwise ---------------------------------------------------------------------------------

def _asin(x):
    one = _c(x, 1)
    return mul(_c(x, 2), atan2(x, add(one, sqrt(sub(one, mul(x, x))))))


def _acos(x):
    one = _c(x, 1)
    y = mul(_c(x, 2), atan2(sqrt(sub(one, mul(x, x))), add(one, x)))
    return select(eq(x, _c(x, -1)), _c(x, math.pi), y)


def _atan(x):
    return atan2(x, _c(x, 1))


def _half_exp(x):
    return exp(sub(x, _c(x, _LN2)))


def _is_complex(x) -> bool:
    return np.dtype(aval(x).dtype).kind == "c"


# Complex arguments (z = a + ib) go through real functions of the parts, as C99's csinh/ccosh define them; the
# real formulas below take abs/sign/compare of the argument, which mean something else for complex numbers.
# A zero imaginary part stays exactly that zero (sinh(a) * sin(0) would be inf * 0 = nan for a large a).
def _complex_sinh(z):
    a, b = real(z), imag(z)
    return lax_complex(mul(_sinh(a), cos(b)), select(eq(b, _c(b, 0)), b, mul(_cosh(a), sin(b))))


def _complex_cosh(z):
    a, b = real(z), imag(z)
    return lax_complex(mul(_cosh(a), cos(b)), select(eq(b, _c(b, 0)), mul(b, sign(a)), mul(_sinh(a), sin(b))))


# Near 0 asinh's log formula cancels (1 + z rounds to 1), and the backends have no complex log1p: |z| < 0.1
# takes the odd Taylor series to z^15 instead (relative error below |z|^16 / 17, under float64's epsilon).
_ASINH_SERIES = [(-1) ** n * math.comb(2 * n, n) / (4 ** n * (2 * n + 1)) for n in range(8)]


def _odd_series(z, coefficients):
    z2 = mul(z, z)
    acc = _c(z, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = add(_c(z, c), mul(z2, acc))
    return mul(z, acc)


def _near_zero(z):
    return lt(lax_abs(z), _c(real(z), 0.1))


def _complex_asinh(z):
    # log(z + sqrt(z^2 + 1)) on the half plane re(z) >= 0, odd symmetry for the other (no cancellation)
    flip = lt(real(z), _c(real(z), 0))
    w = select(flip, neg(z), z)
    r = log(add(w, sqrt(add(mul(w, w), _c(w, 1)))))
    return select(_near_zero(z), _odd_series(z, _ASINH_SERIES), select(flip, neg(r), r))


def _shift(z, c: float):
    """z + c built from the parts: adding a complex constant would turn a -0 imaginary part into +0."""
    return lax_complex(add(real(z), _c(real(z), c)), imag(z))


def _complex_acosh(z):
    return log(add(z, mul(sqrt(_shift(z, 1)), sqrt(_shift(z, -1)))))


def _complex_atanh(z):
    # Kahan's form in real functions of the parts: re = log1p(4a / ((1-a)^2 + b^2)) / 4 (no cancellation near 0
    # or far out), im = atan2(2b, (1-a)(1+a) - b^2) / 2 (a zero b keeps its sign: the side of the branch cut)
    a, b = real(z), imag(z)
    one = _c(a, 1)
    re = mul(_c(a, 0.25), log1p(div(mul(_c(a, 4), a), add(mul(sub(one, a), sub(one, a)), mul(b, b)))))
    im = mul(_c(a, 0.5), atan2(mul(_c(b, 2), b), sub(mul(sub(one, a), add(one, a)), mul(b, b))))
    return lax_complex(re, im)


def _sinh(x):
    if _is_complex(x):
        return _complex_sinh(x)
    small = div(sub(expm1(x), expm1(neg(x))), _c(x, 2))
    a = lax_abs(x)
    large = mul(sign(x), sub(_half_exp(a), _half_exp(neg(a))))
    return select(lt(a, _c(x, 1)), small, large)


def _cosh(x):
    if _is_complex(x):
        return _complex_cosh(x)
    a = lax_abs(x)
    return add(_half_exp(a), _half_exp(neg(a)))


def _big(x):
    return _c(x, math.sqrt(float(dtypes.finfo(aval(x).dtype).max)) / 2)


def _asinh(x):
    if _is_complex(x):
        return _complex_asinh(x)
    a = lax_abs(x)
    one = _c(x, 1)
    a2 = mul(a, a)
    moderate = log1p(add(a, div(a2, add(one, sqrt(add(one, a2))))))
    large = add(log(a), _c(x, _LN2))
    return mul(sign(x), select(gt(a, _big(x)), large, moderate))


def _acosh(x):
    if _is_complex(x):
        return _complex_acosh(x)
    one = _c(x, 1)
    moderate = log(add(x, mul(sqrt(add(x, one)), sqrt(sub(x, one)))))
    large = add(log(x), _c(x, _LN2))
    return select(gt(x, _big(x)), large, moderate)


def _atanh(x):
    if _is_complex(x):
        return _complex_atanh(x)
    one = _c(x, 1)
    return mul(_c(x, 0.5), log1p(div(mul(_c(x, 2), x), sub(one, x))))


asin = _float_op("asin", _asin)
acos = _float_op("acos", _acos)
atan = _float_op("atan", _atan)
sinh = _float_op("sinh", _sinh)
cosh = _float_op("cosh", _cosh)
asinh = _float_op("asinh", _asinh)
acosh = _float_op("acosh", _acosh)
atanh = _float_op("atanh", _atanh)


def exp2(x, *, accuracy=None):
    """2**x, as JAX lowers it: exp(log(2) * x)."""
    x = _arr(x)
    if not dtypes.is_inexact(aval(x).dtype):
        raise lax_error("exp2", f"needs a floating-point operand, got {aval(x)}")
    return exp(mul(x, _c(x, _LN2)))


def square(x):
    x = _arr(x)
    return mul(x, x)


def reciprocal(x):
    x = _arr(x)
    return div(_c(x, 1), x)


def conj(x):
    """The complex conjugate; a real operand becomes complex with zero imaginary part, as in JAX."""
    x = _arr(x)
    a = aval(x)
    if (np.dtype(a.dtype).kind == "c"):
        return lax_complex(real(x), neg(imag(x)))
    cdt = np.complex128 if a.dtype == np.float64 else np.complex64
    return convert(x, cdt)


_UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT_OF = {2: np.int16, 4: np.int32, 8: np.int64}


def nextafter(x1, x2):
    """The next representable float after x1 in the direction of x2 (XLA's NextAfter bit algorithm)."""
    (x1, x2), _ = coerce_same("nextafter", _arr(x1), _arr(x2))
    dt = aval(x1).dtype
    if not dtypes.is_inexact(dt) or (np.dtype(dt).kind == "c"):
        raise lax_error("nextafter", f"needs real floating-point operands, got {aval(x1)}")
    it = _INT_OF[dt.itemsize]
    xi = bitcast_convert_type(x1, it)
    yi = bitcast_convert_type(x2, it)
    sign_bit = it(np.iinfo(it).min)
    magnitude = it(np.iinfo(it).max)
    x_abs = bitwise_and(xi, full_like(xi, magnitude))
    y_abs = bitwise_and(yi, full_like(yi, magnitude))
    x_sign = bitwise_and(xi, full_like(xi, sign_bit))
    y_sign = bitwise_and(yi, full_like(yi, sign_bit))
    smaller = bitwise_or(convert(gt(x_abs, y_abs), np.int8), convert(ne(x_sign, y_sign), np.int8))
    step = select(ne(smaller, full_like(smaller, 0)), full_like(xi, -1), full_like(xi, 1))
    res = add(xi, step)
    x_zero = eq(x_abs, full_like(x_abs, 0))
    res = select(x_zero, bitwise_or(y_sign, full_like(y_sign, 1)), res)
    res = select(eq(x1, x2), yi, res)
    out = bitcast_convert_type(res, dt)
    is_nan = bitwise_or(convert(ne(x1, x1), np.int8), convert(ne(x2, x2), np.int8))
    return select(ne(is_nan, full_like(is_nan, 0)), full_like(out, np.nan), out)


def mulhi(x, y, /):
    """The high N bits of the 2N-bit product of N-bit integers."""
    (x, y), weak = coerce_same("mulhi", _arr(x), _arr(y))
    dt = aval(x).dtype
    if dt.kind not in "iu":
        raise lax_error("mulhi", f"needs integer operands, got {aval(x)}")
    bits = dt.itemsize * 8
    if bits <= 16:          # widen to 32 bits (always available), multiply, shift
        wide = np.dtype(np.int32 if dt.kind == "i" else np.uint32)
        p = mul(convert(x, wide), convert(y, wide))
        from .lax_elementwise import shift_right_arithmetic
        shifted = shift_right_arithmetic(p, full_like(p, bits)) if dt.kind == "i" else \
            shift_right_logical(p, full_like(p, bits))
        return convert(shifted, dt)
    # 32/64 bits: schoolbook product over half-width limbs, in the unsigned type of the same width
    u = np.dtype(_UINT_OF[dt.itemsize])
    half = bits // 2
    xu, yu = bitcast_convert_type(x, u), bitcast_convert_type(y, u)
    mask = full_like(xu, u.type((1 << half) - 1))
    sh = full_like(xu, u.type(half))
    xl, xh = bitwise_and(xu, mask), shift_right_logical(xu, sh)
    yl, yh = bitwise_and(yu, mask), shift_right_logical(yu, sh)
    ll, lh, hl, hh = mul(xl, yl), mul(xl, yh), mul(xh, yl), mul(xh, yh)
    mid = add(add(shift_right_logical(ll, sh), bitwise_and(lh, mask)), bitwise_and(hl, mask))
    hi = add(add(add(hh, shift_right_logical(lh, sh)), shift_right_logical(hl, sh)), shift_right_logical(mid, sh))
    if dt.kind == "i":      # signed: subtract y (x) where x (y) is negative
        zero = full_like(x, 0)
        hi = sub(hi, select(lt(x, zero), yu, full_like(yu, u.type(0))))
        hi = sub(hi, select(lt(y, zero), xu, full_like(xu, u.type(0))))
    return bitcast_convert_type(hi, dt)


def select_n(which, *cases):
    """cases[which] elementwise: `which` is bool (two cases) or int32 (any number); scalar or the cases' shape."""
    if not cases:
        raise lax_error("select_n", "needs at least one case")
    which = _arr(which)
    cases = [_arr(c) for c in cases]
    if len(cases) == 1:
        return cases[0]
    shape = aval(cases[0]).shape
    wa = aval(which)
    if wa.dtype == np.bool_:
        if len(cases) != 2:
            raise lax_error("select_n", f"a boolean `which` selects between 2 cases, got {len(cases)}")
    elif wa.dtype.kind not in "iu":
        raise lax_error("select_n", f"`which` must be bool or integer, got {wa}")
    if wa.shape != shape:
        if wa.ndim:
            raise lax_error("select_n", f"`which` {wa} must be a scalar or have the cases' shape {shape}")
        which = broadcast(which, shape)
    if wa.dtype == np.bool_:
        return select(which, cases[1], cases[0])
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        out = select(eq(which, full_like(which, i)), cases[i], out)
    return out


# -- shapes and slicing --------------------------------------------------------------------------

def slice_in_dim(operand, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0):
    operand = _arr(operand)
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, "slice_in_dim")
    n = a.shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = n if limit_index is None else int(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    starts, limits, strides = [0] * a.ndim, list(a.shape), [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return lax_slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    operand = _arr(operand)
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, "index_in_dim")
    n = a.shape[axis]
    i = int(index)
    if not -n <= i < n:
        raise lax_error("index_in_dim", f"index {i} is out of bounds for axis {axis} of size {n}")
    i = i + n if i < 0 else i
    out = slice_in_dim(operand, i, i + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *, allow_negative_indices=True):
    operand = _arr(operand)
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, "dynamic_slice_in_dim")
    starts = [np.int32(0)] * a.ndim
    starts[axis] = start_index
    sizes = list(a.shape)
    sizes[axis] = int(slice_size)
    return dynamic_slice(operand, starts, sizes)


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *, allow_negative_indices=True):
    operand = _arr(operand)
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, "dynamic_update_slice_in_dim")
    starts = [np.int32(0)] * a.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, _arr(update), starts)


def split(operand, sizes: Sequence[int], axis: int = 0):
    operand = _arr(operand)
    a = aval(operand)
    axis = canonical_axis(axis, a.ndim, "split")
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or builtins_sum(sizes) != a.shape[axis]:
        raise lax_error("split", f"sizes {tuple(sizes)} must be non-negative and add up to {a.shape[axis]} "
                                 f"(axis {axis} of {a})")
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(operand, start, start + s, 1, axis))
        start += s
    return out


def builtins_sum(xs):
    total = 0
    for x in xs:
        total += x
    return total


def stack(operands: Sequence[Any], axis: int = 0):
    ops = [_arr(x) for x in operands]
    if not ops:
        raise lax_error("stack", "needs at least one operand")
    nd = aval(ops[0]).ndim
    axis = canonical_axis(axis, nd + 1, "stack")
    return concatenate([expand_dims(x, (axis,)) for x in ops], axis)


def unstack(x, axis: int = 0):
    x = _arr(x)
    a = aval(x)
    axis = canonical_axis(axis, a.ndim, "unstack")
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(a.shape[axis]))


def tile(operand, reps: Sequence[int]):
    operand = _arr(operand)
    a = aval(operand)
    reps = tuple(int(r) for r in reps)
    if len(reps) != a.ndim:
        raise lax_error("tile", f"reps {reps} must have one entry per dimension of {a}")
    shape = []
    dims = []
    for i, (r, n) in enumerate(zip(reps, a.shape)):
        shape += [r, n]
        dims.append(2 * i + 1)
    b = broadcast_in_dim(operand, tuple(shape), tuple(dims))
    return reshape(b, tuple(r * n for r, n in zip(reps, a.shape)))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    operand = _arr(operand)
    a = aval(operand)
    lo = canonical_axis(start_dimension, a.ndim, "collapse")
    hi = a.ndim if stop_dimension is None else (stop_dimension + a.ndim if stop_dimension < 0 else stop_dimension)
    if not lo <= hi <= a.ndim:
        raise lax_error("collapse", f"bad dimensions [{start_dimension}, {stop_dimension}) for {a}")
    size = 1
    for d in a.shape[lo:hi]:
        size *= d
    return reshape(operand, a.shape[:lo] + (size,) + a.shape[hi:])


def broadcast_to_rank(x, rank: int):
    x = _arr(x)
    nd = aval(x).ndim
    return x if nd == rank else broadcast(x, (1,) * (rank - nd))


def broadcast_like(arr, like_arr):
    x = _arr(arr)
    shape = aval(_arr(like_arr)).shape
    a = aval(x)
    return broadcast_in_dim(x, shape, tuple(range(len(shape) - a.ndim, len(shape))))


def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise lax_error("broadcast_shapes", f"shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast") \
            from None


def empty(shape, dtype, *, out_sharding=None):
    """An array of the shape and dtype (xlapy fills it with zeros)."""
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    return full(shape, 0, dtypes.canonicalize(np.dtype(dtype)))


def dtype(x):
    """The canonical dtype of an array, scalar or dtype-like (jax.lax.dtype: float64 is float32 unless x64)."""
    if hasattr(x, "aval"):
        dt = aval(x).dtype
    elif dtypes.is_python_scalar(x):
        dt = dtypes.python_scalar_type(x).dtype
    elif isinstance(x, (np.ndarray, np.generic)):
        dt = x.dtype
    else:
        dt = np.dtype(getattr(x, "dtype", x))
    return dtypes.canonicalize(dt)


def stage(x, /):
    """The identity that lifts a Python or numpy value to an array (JAX's stage)."""
    return _arr(x)


def shape_as_value(shape):
    return np.asarray(tuple(shape), dtype=np.int32) if len(shape) else full((0,), 0, np.int32)


def index_take(src, idxs, axes: Sequence[int]):
    src = _arr(src)
    a = aval(src)
    axes = tuple(int(ax) for ax in axes)
    idxs = [_arr(i) for i in idxs]
    n = aval(idxs[0]).shape[0] if idxs and aval(idxs[0]).ndim else 1
    cols = []
    for i, ax in zip(idxs, axes):
        i = convert(i, np.int32) if aval(i).dtype != np.int32 else i
        dim = full_like(i, a.shape[ax])
        from .lax_elementwise import rem
        i = rem(add(rem(i, dim), dim), dim)
        cols.append(reshape(i, (aval(i).size, 1)))
    indices = concatenate(cols, 1)
    sizes = [1 if d in axes else s for d, s in enumerate(a.shape)]
    offset = tuple(range(1, a.ndim - len(axes) + 1))
    dn = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=axes, start_index_map=axes)
    return gather(src, indices, dn, tuple(sizes))


# -- reductions and scans -----------------------------------------------------------------------

def _logaddexp(a, b):
    m = lax_max(a, b)
    d = sub(a, b)
    out = add(m, log1p(exp(neg(lax_abs(d)))))
    return select(ne(d, d), add(a, b), out)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """log(cumsum(exp(x))) along `axis`, without overflow: an associative scan of logaddexp (JAX's lowering
    off TPU), so it differentiates like its parts."""
    operand = _arr(operand)
    a = aval(operand)
    if not dtypes.is_inexact(a.dtype):
        raise lax_error("cumlogsumexp", f"needs a floating-point operand, got {a}")
    axis = canonical_axis(axis, a.ndim, "cumlogsumexp")
    if a.shape[axis] == 0:
        return operand
    return associative_scan(_logaddexp, operand, reverse=reverse, axis=axis)


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of `fn` (associative) over axis `axis` of every leaf of `elems` (a Hillis-Steele scan:
    log2(n) rounds of fn over shifted slices)."""
    from .pytree import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(elems)
    leaves = [_arr(x) for x in leaves]
    if not leaves:
        return elems
    nd = aval(leaves[0]).ndim
    axis = canonical_axis(axis, nd, "associative_scan")
    n = aval(leaves[0]).shape[axis]
    if any(aval(x).shape[axis] != n for x in leaves):
        raise lax_error("associative_scan", "every element must have the same size along `axis`")
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    step = 1
    while step < n:
        hi = [slice_in_dim(x, step, n, 1, axis) for x in leaves]
        lo = [slice_in_dim(x, 0, n - step, 1, axis) for x in leaves]
        a = tree_unflatten(tree, lo) if not reverse else tree_unflatten(tree, hi)
        b = tree_unflatten(tree, hi) if not reverse else tree_unflatten(tree, lo)
        combined, _ = tree_flatten(fn(a, b))
        leaves = [concatenate([slice_in_dim(x, 0, step, 1, axis), _arr(c)], axis) for x, c in zip(leaves, combined)]
        step *= 2
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    return tree_unflatten(tree, leaves)


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The exact top k along `reduction_dimension` (a valid answer for any recall_target)."""
    return _top_k_along(_arr(operand), k, reduction_dimension, largest=True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    return _top_k_along(_arr(operand), k, reduction_dimension, largest=False)


def _top_k_along(x, k, dim, largest):
    a = aval(x)
    dim = canonical_axis(dim, a.ndim, "approx_max_k" if largest else "approx_min_k")
    perm = [d for d in range(a.ndim) if d != dim] + [dim]
    inv = list(np.argsort(perm))
    xt = transpose(x, perm) if dim != a.ndim - 1 else x
    v, i = top_k(xt if largest else neg(xt), int(k))
    if not largest:
        v = neg(v)
    if dim != a.ndim - 1:
        v, i = transpose(v, inv), transpose(i, inv)
    return v, i


# -- contractions ------------------------------------------------------------------------------

def batch_matmul(lhs, rhs, precision=None):
    lhs, rhs = _arr(lhs), _arr(rhs)
    la, ra = aval(lhs), aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim:
        raise lax_error("batch_matmul", f"operands must have equal rank >= 2, got {la} and {ra}")
    if la.shape[-1] != ra.shape[-2]:
        raise lax_error("batch_matmul", f"contracting dimensions differ: {la} @ {ra}")
    batch = tuple(range(la.ndim - 2))
    return dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)), precision=precision)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None, group_offset=None,
               out_sharding=None):
    """lhs [m, k] rows in consecutive groups (group_sizes [g]), each times its rhs [g, k, n] -> [m, n]."""
    lhs, rhs, gs = _arr(lhs), _arr(rhs), _arr(group_sizes)
    la, ra = aval(lhs), aval(rhs)
    if la.ndim != 2 or ra.ndim != 3 or la.shape[1] != ra.shape[1]:
        raise lax_error("ragged_dot", f"needs lhs [m, k] and rhs [g, k, n], got {la} and {ra}")
    m, g = la.shape[0], ra.shape[0]
    gs = convert(gs, np.int32) if aval(gs).dtype != np.int32 else gs
    from .lax_reduce import cumsum
    ends = cumsum(gs, 0)                                                # [g]
    starts = sub(ends, gs)
    row = broadcast_in_dim(np.arange(m, dtype=np.int32), (g, m), (1,))
    member = bitwise_and(convert(lt(row, broadcast_in_dim(ends, (g, m), (0,))), np.int8),
                         convert(_ge(row, broadcast_in_dim(starts, (g, m), (0,))), np.int8))
    # [g, m, n] per-group products, masked and summed over groups
    prod = dot_general(lhs, rhs, (((1,), (1,)), ((), ())), precision=precision,
                       preferred_element_type=preferred_element_type)        # [m, g, n]
    pa = aval(prod)
    mask = convert(transpose(member, (1, 0)), pa.dtype)                      # [m, g]
    masked = mul(prod, broadcast_in_dim(mask, pa.shape, (0, 1)))
    from .lax_reduce import reduce_sum
    return reduce_sum(masked, (1,))


def _ge(x, y):
    from .lax_elementwise import ge
    return ge(x, y)


class RaggedDotDimensionNumbers(NamedTuple):
    dot_dimension_numbers: Any
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """The ragged_dot case of ragged_dot_general (lhs [m, k] ragged in m, rhs [g, k, n] grouped in g)."""
    dn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    if (tuple(lc), tuple(rc), tuple(lb), tuple(rb), tuple(dn.lhs_ragged_dimensions),
            tuple(dn.rhs_group_dimensions)) != ((1,), (1,), (), (), (0,), (0,)):
        raise lax_error("ragged_dot_general", "only the ragged_dot layout (lhs [m, k] ragged in m, rhs [g, k, n]) "
                                              "is supported")
    return ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type)


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None, preferred_element_type=None):
    """dot_general of lhs * lhs_scale and rhs * rhs_scale (scales broadcast along the blocks of the contracting
    dimension)."""
    lhs, rhs = _arr(lhs), _arr(rhs)
    out_dt = np.dtype(preferred_element_type) if preferred_element_type is not None else np.dtype(np.float32)

    def scaled(x, s):
        x = convert(x, out_dt)
        if s is None:
            return x
        s = convert(_arr(s), out_dt)
        xa, sa = aval(x), aval(s)
        if sa.shape != xa.shape:
            reps = [xn // sn for xn, sn in zip(xa.shape, sa.shape)]
            s = reshape(broadcast_in_dim(s, tuple(v for sn, r in zip(sa.shape, reps) for v in (sn, r)),
                                         tuple(range(0, 2 * sa.ndim, 2))), xa.shape)
        return mul(x, s)
    x, y = scaled(lhs, lhs_scale), scaled(rhs, rhs_scale)
    if dimension_numbers is None:
        dimension_numbers = (((aval(x).ndim - 1,), (aval(y).ndim - 1,)), ((0,), (0,)))
    return dot_general(x, y, dimension_numbers)


# -- scatter -----------------------------------------------------------------------------------

def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    updates = _arr(updates)
    return scatter_add(operand, scatter_indices, neg(updates), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """operand with func applied to the elements the scatter addresses (once per addressing index)."""
    operand = _arr(operand)
    a = aval(operand)
    updates = full(tuple(update_shape), 0, a.dtype)
    ia = aval(_int_indices(scatter_indices))
    if _mode(mode) == "clip":
        scatter_indices = _clip_scatter_indices(scatter_indices, a, aval(updates), dimension_numbers)
    from .tracer import ShapedArray
    comp = scalar_computation(lambda x, _u: func(x), [ShapedArray((), a.dtype), ShapedArray((), a.dtype)])
    attrs = scatter_attrs(dimension_numbers, ia.ndim, comp, indices_are_sorted, unique_indices)
    return bind("scatter", [operand, scatter_indices, updates], attrs, name="scatter_apply", weak_type=a.weak_type)


# -- convolutions --------------------------------------------------------------------------------

class ConvDimensionNumbers(NamedTuple):
    """jax.lax.ConvDimensionNumbers: the dimension permutations (batch/feature first, then spatial)."""
    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


ConvGeneralDilatedDimensionNumbers = Any


def conv_general_permutations(dimension_numbers):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_char, rhs_char, out_char = ("N", "C"), ("O", "I"), ("N", "C")
    for i, (a, b) in enumerate(zip((lhs_spec, rhs_spec, out_spec), (lhs_char, rhs_char, out_char))):
        if len(a) != len(set(a)) or any(c not in a for c in b):
            raise lax_error("conv_general_permutations", f"bad dimension spec {a!r}")
    lhs_perm = (lhs_spec.index("N"), lhs_spec.index("C")) + tuple(
        sorted((i for i, c in enumerate(lhs_spec) if c not in "NC"), key=lambda i: rhs_spec.index(lhs_spec[i])))
    rhs_perm = (rhs_spec.index("O"), rhs_spec.index("I")) + tuple(
        sorted((i for i, c in enumerate(rhs_spec) if c not in "OI"), key=lambda i: rhs_spec.index(rhs_spec[i])))
    out_perm = (out_spec.index("N"), out_spec.index("C")) + tuple(
        sorted((i for i, c in enumerate(out_spec) if c not in "NC"), key=lambda i: rhs_spec.index(out_spec[i])))
    return lhs_perm, rhs_perm, out_perm


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    nd = len(lhs_shape)
    if dimension_numbers is None:
        iota = tuple(range(nd))
        return ConvDimensionNumbers(iota, iota, iota)
    if len(dimension_numbers) == 3 and all(isinstance(s, str) for s in dimension_numbers):
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    return ConvDimensionNumbers(*(tuple(s) for s in dimension_numbers))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    lhs_padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    out_space = [max(0, (p - k) // s + 1) for p, k, s in zip(lhs_padded, rhs_shape[2:], strides)]
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + tuple(out_space)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    lp, rp, op = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = tuple(lhs_shape[i] for i in lp)
    rhs_t = tuple(rhs_shape[i] for i in rp)
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding)
    out = [0] * len(out_t)
    for src, dst in enumerate(op):
        out[dst] = out_t[src]
    return tuple(out)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    lp, rp, op = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = tuple(lhs_shape[i] for i in lp)
    rhs_t = tuple(rhs_shape[i] for i in rp)
    if isinstance(padding, str):
        padding = [(0, 0)] * len(window_strides) if padding == "VALID" else \
            [((k - 1) // 2, k // 2) for k in rhs_t[2:]] if padding == "SAME" else None
        if padding is None:
            raise lax_error("conv_transpose_shape_tuple", "padding must be 'SAME', 'VALID' or explicit pairs")
    space = [(d - 1) * s - k + 2 + lo + hi for d, s, k, (lo, hi) in zip(lhs_t[2:], window_strides, rhs_t[2:], padding)]
    out_t = (lhs_t[0], rhs_t[0]) + tuple(space)
    out = [0] * len(out_t)
    for src, dst in enumerate(op):
        out[dst] = out_t[src]
    return tuple(out)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None):
    nd = len(operand_shape)
    base_dilation = base_dilation or (1,) * nd
    window_dilation = window_dilation or (1,) * nd
    shape = [(d - 1) * b + 1 for d, b in zip(operand_shape, base_dilation)]
    window = [(w - 1) * r + 1 for w, r in zip(window_dimensions, window_dilation)]
    if isinstance(padding, str):
        padding = padtype_to_pads(shape, window, window_strides, padding)
    shape = [d + lo + hi for d, (lo, hi) in zip(shape, padding)]
    return tuple(max(0, (d - w) // s + 1) for d, w, s in zip(shape, window, window_strides))


def conv(lhs, rhs, window_strides: Sequence[int], padding: str, precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _spec_strings(dimension_numbers, nd):
    if dimension_numbers is None:
        sp = "".join("HWDXYZ"[i] for i in range(nd - 2)) if nd - 2 <= 6 else None
        return ("NC" + sp, "OI" + sp, "NC" + sp)
    return dimension_numbers


def conv_general_dilated_patches(lhs, filter_shape: Sequence[int], window_strides: Sequence[int], padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a convolution with a `filter_shape` window sees, as output features (C * prod(filter_shape),
    channel-major), by convolving with an identity filter as JAX does."""
    lhs = _arr(lhs)
    la = aval(lhs)
    nd = la.ndim
    dn = conv_dimension_numbers(la.shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    lhs_spec = dn.lhs_spec
    c = la.shape[lhs_spec[1]]
    spatial = tuple(int(f) for f in filter_shape)
    size = int(np.prod(spatial)) if spatial else 1
    eye = np.eye(c * size, dtype=la.dtype).reshape((c * size, c) + spatial)   # OIHW...
    rhs_spec = dn.rhs_spec
    # the identity filter laid out as rhs_spec says (O at rhs_spec[0], I at rhs_spec[1], spatial in order)
    order = [rhs_spec[0], rhs_spec[1]] + list(rhs_spec[2:])
    filt = np.transpose(eye, np.argsort(order)) if order != list(range(nd)) else eye
    return conv_general_dilated(lhs, filt, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, dimension_numbers=dn if dimension_numbers is not None
                                else None, precision=precision, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None,
                               rhs_dilation=None, dimension_numbers=None, precision=None):
    """An unshared convolution: each output position has its own filter. rhs is laid out as JAX's: its in-feature
    dimension holds C * prod(filter_shape) (channel-major) and its spatial dimensions are the output's."""
    lhs, rhs = _arr(lhs), _arr(rhs)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                                           dimension_numbers, precision)
    la = aval(lhs)
    dn = conv_dimension_numbers(la.shape, aval(rhs).shape, dimension_numbers)
    nd = la.ndim
    # move to N, C, spatial... / O, I, spatial...
    p = transpose(patches, dn.out_spec) if tuple(dn.out_spec) != tuple(range(nd)) else patches
    r = transpose(rhs, dn.rhs_spec) if tuple(dn.rhs_spec) != tuple(range(nd)) else rhs
    # out[n, o, s...] = sum_i p[n, i, s...] * r[o, i, s...]
    spatial = tuple(range(2, nd))
    out = dot_general(p, r, (((1,), (1,)), (spatial, spatial)), precision=precision)   # [s..., n, o]
    k = len(spatial)
    out = transpose(out, (k, k + 1) + tuple(range(k)))
    inv = tuple(int(i) for i in np.argsort(dn.out_spec))
    return transpose(out, inv) if inv != tuple(range(nd)) else out


# -- solvers -----------------------------------------------------------------------------------

def custom_linear_solve(matvec: Callable, b, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric=False, has_aux=False):
    """solve(matvec, b): the value of JAX's custom_linear_solve (its derivatives flow through `solve` here)."""
    out = solve(matvec, b)
    return out


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable, has_aux=False):
    """solve(f, initial_guess): the value of JAX's custom_root (derivatives flow through `solve` here)."""
    return solve(f, initial_guess)


# -- tokens, markers, platform ---------------------------------------------------------------------

class Token:
    """A value that orders side effects; xlapy has no ordered effects, so it carries nothing."""

    def __repr__(self) -> str:
        return "Token"


def create_token(_=None):
    return Token()


def after_all(*operands):
    return Token()


def dce_sink(val, *, prevent_mlir_dce: bool = False):
    return None


def with_sharding_constraint(x, shardings):
    """Identity: xlapy runs on one device."""
    return x


def composite(decomposition: Callable, name: str, version: int = 0):
    """A function marked as a named composite; xlapy inlines its decomposition."""
    def wrapped(*args, **kwargs):
        return decomposition(*args, **kwargs)
    wrapped.__name__ = getattr(decomposition, "__name__", name)
    return wrapped


def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
    """Calls the branch for the CPU platform ('cpu'), else `default`."""
    fn = per_platform.get("cpu", default)
    if fn is None:
        raise lax_error("platform_dependent", f"no branch for 'cpu' and no default (branches: {sorted(per_platform)})")
    return fn(*args)


def _hash32(x):
    """The lowbias32 integer hash (uint32 -> uint32)."""
    def xorshift(v, k):
        from .lax_elementwise import bitwise_xor
        return bitwise_xor(v, shift_right_logical(v, full_like(v, np.uint32(k))))
    x = xorshift(x, 16)
    x = mul(x, full_like(x, np.uint32(0x7FEB352D)))
    x = xorshift(x, 15)
    x = mul(x, full_like(x, np.uint32(0x846CA68B)))
    return xorshift(x, 16)


def rng_uniform(a, b, shape):
    """Uniform values in [a, b) of `shape` (XLA's stateful RngUniform; xlapy hashes the element positions,
    so the values are deterministic)."""
    from .lax_shapes import broadcasted_iota
    from .lax_elementwise import rem
    a, b = _arr(a), _arr(b)
    dt = aval(a).dtype
    shape = tuple(int(s) for s in shape)
    pos = broadcasted_iota(np.uint32, (builtins_prod(shape),), 0)
    bits = reshape(_hash32(add(pos, full_like(pos, np.uint32(0x9E3779B9)))), shape)
    lo = broadcast(a, shape) if aval(a).ndim == 0 else a
    span = sub(b, a)
    span = broadcast(span, shape) if aval(span).ndim == 0 else span
    if dtypes.is_inexact(dt):
        mant = shift_right_logical(bits, full_like(bits, np.uint32(9)))
        f = bitcast_convert_type(bitwise_or(mant, full_like(mant, np.uint32(0x3F800000))), np.float32)
        u = convert(sub(f, full_like(f, 1.0)), dt)
        return add(mul(u, span), lo)
    r = convert(rem(bits, convert(span, np.uint32)), dt)
    return add(r, lo)


def builtins_prod(xs):
    total = 1
    for x in xs:
        total *= x
    return total


# -- type names ---------------------------------------------------------------------------------

class AccuracyMode(enum.Enum):
    HIGHEST = 1
    DEFAULT = 2


class Tolerance(NamedTuple):
    """A requested accuracy for a transcendental op (accepted and ignored: xlapy uses one implementation)."""
    atol: float = 0.0
    rtol: float = 0.0
    ulps: int = 0


class RandomAlgorithm(enum.IntEnum):
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2


class DotAlgorithm(NamedTuple):
    """A dot's algorithm (operand and accumulation types); xlapy accepts it and uses its default algorithm."""
    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()


DotDimensionNumbers = tuple
PrecisionLike = Any

__all__ = [
    "AccuracyMode", "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "DotAlgorithm",
    "DotAlgorithmPreset", "DotDimensionNumbers", "PrecisionLike", "RaggedDotDimensionNumbers", "RandomAlgorithm",
    "Token", "Tolerance", "acos", "acosh", "after_all", "approx_max_k", "approx_min_k", "asin", "asinh",
    "associative_scan", "atan", "atanh", "batch_matmul", "broadcast_like", "broadcast_shapes", "broadcast_to_rank",
    "collapse", "composite", "conj", "conv", "conv_dimension_numbers", "conv_general_dilated_local",
    "conv_general_dilated_patches", "conv_general_permutations", "conv_general_shape_tuple", "conv_shape_tuple",
    "conv_transpose_shape_tuple", "conv_with_general_padding", "cosh", "create_token", "cumlogsumexp",
    "custom_linear_solve", "custom_root", "dce_sink", "dtype", "dynamic_slice_in_dim",
    "dynamic_update_slice_in_dim", "empty", "exp2", "index_in_dim", "index_take", "mulhi", "nextafter",
    "platform_dependent", "ragged_dot", "ragged_dot_general", "reciprocal", "reduce_window_shape_tuple",
    "rng_uniform", "scaled_dot", "scatter_apply", "scatter_sub", "select_n", "shape_as_value", "sinh",
    "slice_in_dim", "split", "square", "stack", "stage", "tile", "unstack", "with_sharding_constraint",
]
