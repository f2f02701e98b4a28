"""xlapy.numpy.linalg: jax.numpy.linalg over xlapy.lax.linalg (frontend/lax_linalg.py).

Decompositions: cholesky, qr (modes reduced/complete/r/raw), eigh, eigvalsh, eig, eigvals, svd, svdvals.
Solvers and functions of a matrix from LU or SVD, as JAX computes them: inv and solve (LU, then two triangular
solves), det and slogdet (LU's diagonal and the pivots' parity), lstsq, pinv, matrix_rank and cond (SVD),
matrix_power (repeated squaring), tensorinv, tensorsolve, multi_dot. Norms: norm, matrix_norm, vector_norm. The
array-API helpers: matmul, tensordot, vecdot, outer, cross, trace, diagonal, matrix_transpose.

Integer and bool operands are promoted to the default float (float32 unless x64), as jnp.linalg does; batch
dimensions lead. Errors name the function and the user's line.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Sequence

import numpy as np

from ..frontend import lax_linalg as _lin
from ._util import arr, aval, dtypes, error, lax
from .creation import eye
from .elementwise import abs as _abs, conj, log, multiply, sign, sqrt, where
from .products import matmul as _matmul, tensordot as _tensordot
from .reductions import max as _max, min as _min, prod, sum as _sum
from .shape_ops import diagonal as _diagonal, matrix_transpose, moveaxis, reshape, swapaxes
from .sorting import argsort
from .indexing_ops import take_along_axis

__all__ = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace",
           "vecdot", "vector_norm", "EighResult", "EigResult", "QRResult", "SlogdetResult", "SVDResult"]

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _inexact(name: str, *xs) -> list:
    """The operands in their common inexact dtype (integers and bools become the default float)."""
    xs = [arr(x) for x in xs]
    dt = np.dtype(dtypes.result_type(*xs))
    if not (dtypes.is_float(dt) or np.issubdtype(dt, np.complexfloating)):
        dt = dtypes.canonicalize(np.float64)
    return [x if aval(x).dtype == dt else lax.convert_element_type(x, dt) for x in xs]


def _matrices(name: str, x, square: bool = False):
    a = aval(x)
    if a.ndim < 2:
        raise error(f"linalg.{name}", f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if square and a.shape[-1] != a.shape[-2]:
        raise error(f"linalg.{name}", f"last 2 dimensions of the array must be square, got shape {a.shape}")
    return a


def _H(x):
    return conj(swapaxes(x, -1, -2))


# -- decompositions -------------------------------------------------------------------------------------------------
def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    (a,) = _inexact("cholesky", a)
    _matrices("cholesky", a, square=True)
    L = _lin.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


def qr(a, mode: str = "reduced"):
    (a,) = _inexact("qr", a)
    _matrices("qr", a)
    if mode == "raw":
        h, taus = _lin.geqrf(a)
        return matrix_transpose(h), taus
    if mode not in ("reduced", "complete", "r"):
        raise error("linalg.qr", f"Unsupported QR decomposition mode '{mode}'")
    q, r = _lin.qr(a, full_matrices=(mode == "complete"))
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    (a,) = _inexact("eigh", a)
    _matrices("eigh", a, square=True)
    if UPLO not in (None, "L", "U"):
        raise error("linalg.eigh", f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    v, w = _lin.eigh(a, lower=(UPLO != "U"), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a):
    (a,) = _inexact("eig", a)
    _matrices("eig", a, square=True)
    w, v = _lin.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    (a,) = _inexact("eigvals", a)
    _matrices("eigvals", a, square=True)
    return _lin.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False, subset_by_index=None):
    (a,) = _inexact("svd", a)
    _matrices("svd", a)
    if hermitian:
        w, v = eigh(a)
        s = _abs(w)
        order = argsort(-s, axis=-1)
        s = take_along_axis(s, order, axis=-1)
        if not compute_uv:
            return s
        u = take_along_axis(v, order[..., None, :], axis=-1)
        sw = take_along_axis(sign(w), order, axis=-1)
        vh = _H(multiply(u, sw[..., None, :].astype(aval(u).dtype)))
        return SVDResult(u, s, vh)
    out = _lin.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def svdvals(x):
    return svd(x, compute_uv=False)


# -- LU-based: solve, inv, det, slogdet -----------------------------------------------------------------------------
def _lu_solve(lu, perm, b):
    """x with a x = b from a's LU factors (b: [..., n, k])."""
    nb = aval(b).ndim - 2
    if nb:
        x = take_along_axis(b, perm[..., :, None].astype(np.int32), axis=-2)
    else:
        x = b[perm, :]
    x = _lin.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    return _lin.triangular_solve(lu, x, left_side=True, lower=False)


def solve(a, b):
    a, b = _inexact("solve", a, b)
    aa = _matrices("solve", a, square=True)
    ab = aval(b)
    vector = ab.ndim == 1
    if vector:
        b = b[:, None]
    elif ab.ndim < 2:
        raise error("linalg.solve", f"b must be at least one-dimensional, got {ab.shape}")
    bb = aval(b)
    if bb.shape[-2] != aa.shape[-1]:
        raise error("linalg.solve", f"incompatible shapes a {aa.shape} and b {ab.shape}")
    batch = tuple(np.broadcast_shapes(aa.shape[:-2], bb.shape[:-2]))
    from .shape_ops import broadcast_to
    a = broadcast_to(a, batch + aa.shape[-2:])
    b = broadcast_to(b, batch + bb.shape[-2:])
    lu, _, perm = _lin.lu(a)
    x = _lu_solve(lu, perm, b)
    return x[..., 0] if vector else x


def inv(a):
    (a,) = _inexact("inv", a)
    aa = _matrices("inv", a, square=True)
    from .shape_ops import broadcast_to
    return solve(a, broadcast_to(eye(aa.shape[-1], dtype=aa.dtype), aa.shape))


def _lu_parts(a):
    lu, pivots, _ = _lin.lu(a)
    diag = _diagonal(lu, 0, -2, -1)
    n = aval(a).shape[-1]
    swaps = lax.ne(pivots, lax.broadcast_in_dim(lax.iota(np.int32, n), aval(pivots).shape,
                                                 (aval(pivots).ndim - 1,)))
    parity = _sum(swaps.astype(np.int32), axis=-1)
    return diag, parity


def det(a):
    (a,) = _inexact("det", a)
    _matrices("det", a, square=True)
    diag, parity = _lu_parts(a)
    d = prod(diag, axis=-1)
    flip = where(parity % 2 == 1, -1, 1).astype(aval(d).dtype)
    return multiply(d, flip)


def slogdet(a, *, method: str | None = None):
    (a,) = _inexact("slogdet", a)
    _matrices("slogdet", a, square=True)
    if method not in (None, "lu"):
        raise error("linalg.slogdet", f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`)")
    diag, parity = _lu_parts(a)
    dt = aval(diag).dtype
    is_zero = lax.reduce_or(lax.eq(diag, lax.full_like(diag, 0)), (aval(diag).ndim - 1,))
    if np.issubdtype(dt, np.complexfloating):
        unit = diag / _abs(diag).astype(dt)
        s = prod(unit, axis=-1)
    else:
        s = prod(sign(diag), axis=-1)
    s = multiply(s, where(parity % 2 == 1, -1, 1).astype(dt))
    logdet = _sum(log(_abs(diag)), axis=-1)
    s = where(is_zero, 0, s).astype(dt)
    logdet = where(is_zero, -np.inf, logdet).astype(aval(logdet).dtype)
    return SlogdetResult(s, logdet)


# -- SVD-based -----------------------------------------------------------------------------------------------------
def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    (a,) = _inexact("pinv", a)
    aa = _matrices("pinv", a)
    if rcond is not None:
        rtol = rcond
    m, n = aa.shape[-2:]
    if m == 0 or n == 0:
        return lax.full(aa.shape[:-2] + (n, m), 0, aa.dtype)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    if rtol is None:
        rtol = 10 * max(m, n) * np.finfo(aval(s).dtype).eps
    rtol = arr(rtol)
    cutoff = multiply(rtol[..., None] if aval(rtol).ndim else rtol, s[..., 0:1])
    s = where(s > cutoff, s, np.inf).astype(aval(s).dtype)
    return _matmul(_H(vh), _H(u) / s[..., None].astype(aa.dtype))


def matrix_rank(M, rtol=None, *, tol=None):
    (M,) = _inexact("matrix_rank", M)
    a = aval(M)
    if a.ndim < 2:
        return lax.convert_element_type(lax.reduce_or(lax.ne(M, lax.full_like(M, 0)), tuple(range(a.ndim))),
                                        np.int32)
    s = svd(M, full_matrices=False, compute_uv=False)
    if tol is None:
        if rtol is None:
            rtol = max(a.shape[-2:]) * np.finfo(aval(s).dtype).eps
        tol = multiply(_max(s, axis=-1, keepdims=True), rtol)
    else:
        tol = arr(tol)
        tol = tol[..., None] if aval(tol).ndim else tol
    return _sum((s > tol).astype(np.int32), axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    a, b = _inexact("lstsq", a, b)
    aa, ab = aval(a), aval(b)
    if aa.ndim != 2:
        raise error("linalg.lstsq", f"{aa.ndim}-dimensional array given. Array must be two-dimensional")
    if ab.ndim not in (1, 2):
        raise error("linalg.lstsq", f"{ab.ndim}-dimensional array given. Array must be one or two-dimensional")
    m, n = aa.shape
    if ab.shape[0] != m:
        raise error("linalg.lstsq", f"Leading dimensions of input arrays must match, got {aa.shape} and {ab.shape}")
    vector = ab.ndim == 1
    if vector:
        b = b[:, None]
    dt = aval(a).dtype
    rdt = np.finfo(dt).dtype
    if rcond is None:
        rcond = np.finfo(rdt).eps * max(n, m)
    elif rcond < 0:
        rcond = np.finfo(rdt).eps
    u, s, vt = svd(a, full_matrices=False)
    if min(m, n) == 0:
        x = lax.full((n, aval(b).shape[1]), 0, dt)
        rank = lax.full((), 0, np.int32)
    else:
        mask = s >= multiply(arr(rcond).astype(rdt), s[0])
        rank = _sum(mask.astype(np.int32))
        safe_s = where(mask, s, 1).astype(rdt)
        s_inv = where(mask, 1 / safe_s, 0).astype(dt)[:, None]
        uTb = _matmul(_H(u), b)
        x = _matmul(_H(vt), multiply(s_inv, uTb))
    if numpy_resid and (int(min(m, n)) == 0 or m <= n):
        resid = lax.full((0,), 0, rdt)
    else:
        r = b - _matmul(a, x)
        resid = _sum((r * conj(r)).real if np.issubdtype(dt, np.complexfloating) else r * r, axis=0)
    if vector:
        x = x[:, 0]
        resid = resid if numpy_resid and aval(resid).shape == (0,) else resid
    return x, resid, rank, s


def cond(x, p=None):
    (x,) = _inexact("cond", x)
    _matrices("cond", x)
    if p is None or p in (2, -2):
        s = svd(x, compute_uv=False)
        if p == -2:
            r = s[..., -1] / s[..., 0]
        else:
            r = s[..., 0] / s[..., -1]
    else:
        _matrices("cond", x, square=True)
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    # infinite condition numbers for singular matrices (NaNs from inv) as JAX
    return where(lax.ne(r, r), np.inf, r).astype(aval(r).dtype)


def matrix_power(a, n: int):
    a = arr(a)
    aa = _matrices("matrix_power", a, square=True)
    try:
        n = int(n)
    except TypeError:
        raise error("linalg.matrix_power", f"exponent must be an integer, got {n!r}") from None
    if n == 0:
        from .shape_ops import broadcast_to
        return broadcast_to(eye(aa.shape[-1], dtype=aa.dtype), aa.shape)
    if n < 0:
        a = inv(a)
        n = -n
    result = None
    z = a
    while n:
        if n & 1:
            result = z if result is None else _matmul(result, z)
        n >>= 1
        if n:
            z = _matmul(z, z)
    return result


def multi_dot(arrays: Sequence[Any], *, precision=None):
    arrays = [arr(x) for x in arrays]
    if len(arrays) < 2:
        raise error("linalg.multi_dot", "Expecting at least two arrays")
    if aval(arrays[0]).ndim not in (1, 2) or aval(arrays[-1]).ndim not in (1, 2) \
            or any(aval(x).ndim != 2 for x in arrays[1:-1]):
        raise error("linalg.multi_dot", "the first and last arrays must be 1-D or 2-D, the others 2-D")
    out = arrays[0]
    for x in arrays[1:]:
        out = _matmul(out, x, precision=precision)
    return out


def tensorinv(a, ind: int = 2):
    (a,) = _inexact("tensorinv", a)
    shape = aval(a).shape
    if ind <= 0:
        raise error("linalg.tensorinv", f"ind must be a positive integer, got {ind}")
    out_shape = shape[ind:] + shape[:ind]
    rows = int(np.prod(shape[:ind]))
    cols = int(np.prod(shape[ind:]))
    if rows != cols:
        raise error("linalg.tensorinv", f"a must be square (prod(shape[:ind]) == prod(shape[ind:])), got {shape}")
    return reshape(inv(reshape(a, (rows, cols))), out_shape)


def tensorsolve(a, b, axes=None):
    a, b = _inexact("tensorsolve", a, b)
    if axes is not None:
        nd = aval(a).ndim
        a = moveaxis(a, axes, [nd - len(axes) + i for i in range(len(axes))] if not isinstance(axes, int)
                     else nd - 1)
    ab = aval(b)
    out_shape = aval(a).shape[ab.ndim:]
    rows = int(np.prod(ab.shape))
    cols = int(np.prod(out_shape))
    if rows != cols:
        raise error("linalg.tensorsolve", f"shapes {aval(a).shape} and {ab.shape} do not make a square system")
    return reshape(solve(reshape(a, (rows, cols)), reshape(b, (rows,))), out_shape)


# -- norms ------------------------------------------------------------------------------------------------------------
def _reduce_keep(fn, x, axes, keepdims):
    return fn(x, axis=axes, keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims: bool = False):
    (x,) = _inexact("norm", x)
    nd = aval(x).ndim
    if axis is None:
        if ord is None:
            r = sqrt(_sum(_real_abs2(x), axis=None, keepdims=keepdims))
            return r
        axis = tuple(range(nd))
        if nd not in (1, 2):
            raise error("linalg.norm", f"Improper number of axes for norm: ord={ord!r} needs 1-D or 2-D input")
    elif isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    axis = tuple(int(a) % nd for a in axis)
    if len(axis) == 1:
        return _vector_norm(x, ord if ord is not None else 2, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, "fro" if ord is None else ord, axis, keepdims)
    raise error("linalg.norm", f"Improper number of axes for norm: axis={axis}")


def _real_abs2(x):
    if np.issubdtype(aval(x).dtype, np.complexfloating):
        return lax.real(x) * lax.real(x) + lax.imag(x) * lax.imag(x)
    return x * x


def _vector_norm(x, ord, axis, keepdims):
    ax = _abs(x)
    if ord == 2:
        return sqrt(_sum(_real_abs2(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return _max(ax, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return _min(ax, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _sum((lax.ne(x, lax.full_like(x, 0))).astype(aval(ax).dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _sum(ax, axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise error("linalg.norm", f"Invalid order '{ord}' for vector norm")
    p = arr(ord).astype(aval(ax).dtype)
    return _sum(ax ** p, axis=axis, keepdims=keepdims) ** (1 / p)


def _matrix_norm(x, ord, axis, keepdims):
    r0, c0 = axis
    if ord == "fro":
        return sqrt(_sum(_real_abs2(x), axis=axis, keepdims=keepdims))
    if ord in (1, -1):
        s = _sum(_abs(x), axis=r0, keepdims=True)
        red = _max if ord == 1 else _min
        out = red(s, axis=c0, keepdims=True)
    elif ord in (np.inf, -np.inf):
        s = _sum(_abs(x), axis=c0, keepdims=True)
        red = _max if ord == np.inf else _min
        out = red(s, axis=r0, keepdims=True)
    elif ord in (2, -2, "nuc"):
        y = moveaxis(x, (r0, c0), (-2, -1))
        s = svd(y, compute_uv=False)
        out = s[..., 0] if ord == 2 else (s[..., -1] if ord == -2 else _sum(s, axis=-1))
        if keepdims:
            out = lax.expand_dims(lax.expand_dims(out, (min(r0, c0),)), (max(r0, c0),))
        return out
    else:
        raise error("linalg.norm", f"Invalid order '{ord}' for matrix norm")
    if not keepdims:
        out = reshape(out, tuple(d for i, d in enumerate(aval(out).shape) if i not in axis))
    return out


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    (x,) = _inexact("matrix_norm", x)
    _matrices("matrix_norm", x)
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    (x,) = _inexact("vector_norm", x)
    if axis is None:
        out = _vector_norm(reshape(x, (-1,)), ord, (0,), False)
        if keepdims:
            out = reshape(out, (1,) * aval(x).ndim)
        return out
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return _vector_norm(x, ord, tuple(int(a) % aval(x).ndim for a in axis), keepdims)


# -- array-API helpers ------------------------------------------------------------------------------------------------
def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    return _matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    return _tensordot(x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type)


def outer(x1, x2, /):
    x1, x2 = arr(x1), arr(x2)
    if aval(x1).ndim != 1 or aval(x2).ndim != 1:
        raise error("linalg.outer", f"Input arrays must be one-dimensional, but they are x1.ndim="
                                    f"{aval(x1).ndim} and x2.ndim={aval(x2).ndim}")
    from .products import outer as _outer
    return _outer(x1, x2)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    from .products import vdot  # noqa: F401  (jnp.linalg.vecdot is jnp.vecdot: sum(conj(x1) * x2, axis))
    x1, x2 = arr(x1), arr(x2)
    if aval(x1).shape[axis] != aval(x2).shape[axis]:
        raise error("linalg.vecdot", f"axes must match, got {aval(x1).shape} and {aval(x2).shape} at axis {axis}")
    return _sum(multiply(conj(x1), x2), axis=axis)


def cross(x1, x2, /, *, axis: int = -1):
    x1, x2 = arr(x1), arr(x2)
    if aval(x1).shape[axis] != 3 or aval(x2).shape[axis] != 3:
        raise error("linalg.cross", f"Both input arrays must be 3-dimensional vectors along axis {axis}; got "
                                    f"shapes {aval(x1).shape} and {aval(x2).shape}")
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    c = [a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
         a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]]
    from .shape_ops import stack
    return moveaxis(stack(c, axis=-1), -1, axis)


def trace(x, /, *, offset: int = 0, dtype=None):
    x = arr(x)
    _matrices("trace", x)
    from .shape_ops import trace as _trace
    return _trace(x, offset, -2, -1, dtype=dtype)


def diagonal(x, /, *, offset: int = 0):
    x = arr(x)
    _matrices("diagonal", x)
    return _diagonal(x, offset, -2, -1)
