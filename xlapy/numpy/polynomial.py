"""Polynomials (coefficients highest power first, as numpy): poly, polyadd, polysub, polymul, polydiv, polyder,
polyint, polyval, polyfit, roots; and the 1-D convolutions they rest on (convolve, correlate), vander and
trim_zeros. Algorithms follow JAX: polymul is a full convolution, polydiv a static-length long division
(the remainder keeps u's length), polyfit a column-scaled least-squares solve, roots the eigenvalues of the
companion matrix (leading zeros stripped eagerly; under jit pass strip_zeros=False: roots for stripped
zeros are NaN)."""
from __future__ import annotations

import numpy as np

from ._util import Array, arr, aval, concretization_error, dtypes, error, is_traced, lax, promote, to_inexact


def _promote_nobroadcast(name: str, *xs):
    xs = [arr(x) for x in xs]
    dt = dtypes.result_type(*xs)
    return [x if aval(x).dtype == dt else lax.convert_element_type(x, dt) for x in xs]


def _promote_inexact(name: str, *xs):
    xs = _promote_nobroadcast(name, *xs)
    return _promote_nobroadcast(name, *(to_inexact(x) for x in xs))


def _1d(name: str, x):
    x = arr(x)
    if aval(x).ndim == 0:
        x = lax.reshape(x, (1,))
    if aval(x).ndim != 1:
        raise error(name, f"expects a 1-D array, got {aval(x)}")
    return x


# -- convolutions ------------------------------------------------------------------------------------

def _conv1d(name: str, a, v, mode: str, flip: bool, precision=None, preferred_element_type=None):
    a, v = _promote_nobroadcast(name, _1d(name, a), _1d(name, v))
    na, nv = aval(a).shape[0], aval(v).shape[0]
    if na == 0 or nv == 0:
        raise error(name, f"inputs cannot be empty, got {aval(a)} and {aval(v)}")
    if mode not in ("full", "same", "valid"):
        raise error(name, f"mode must be 'full', 'same' or 'valid', got {mode!r}")
    exchange = False
    if na < nv:
        a, v, na, nv = v, a, nv, na
        exchange = True
    if not flip and aval(v).dtype.kind == "c":
        v = lax.conj(v)
    if flip:
        v = lax.rev(v, (0,))
    pad = {"valid": (0, 0), "same": (nv // 2, nv - nv // 2 - 1), "full": (nv - 1, nv - 1)}[mode]
    dt = aval(a).dtype
    work = dt if dtypes.is_inexact(dt) else np.dtype(np.float64 if dt.itemsize > 4 else np.float32)
    a_, v_ = (x if aval(x).dtype == work else lax.convert_element_type(x, work) for x in (a, v))
    out = lax.conv_general_dilated(lax.reshape(a_, (1, 1, na)), lax.reshape(v_, (1, 1, nv)), (1,), [pad],
                                   precision=precision)
    out = lax.reshape(out, (aval(out).shape[2],))
    if work != dt:
        out = lax.convert_element_type(lax.round(out, lax.RoundingMethod.TO_NEAREST_EVEN), dt)
    if exchange and not flip:
        out = lax.rev(out, (0,))
        if (np.dtype(dt).kind == "c"):
            out = lax.conj(out)
    if preferred_element_type is not None:
        out = lax.convert_element_type(out, preferred_element_type)
    return out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete 1-D convolution of a and v (numpy's modes 'full', 'same', 'valid')."""
    return _conv1d("convolve", a, v, mode, True, precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The 1-D cross-correlation of a and v (v conjugated), numpy's modes."""
    return _conv1d("correlate", a, v, mode, False, precision, preferred_element_type)


def vander(x, N: int | None = None, increasing: bool = False):
    from .elementwise import power
    x = arr(x)
    if aval(x).ndim != 1:
        raise error("vander", f"x must be 1-D, got {aval(x)}")
    n = aval(x).shape[0] if N is None else int(N)
    if n < 0:
        raise error("vander", f"N must be non-negative, got {n}")
    k = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    xa = aval(x)
    return power(lax.reshape(x, xa.shape + (1,)), Array(k.astype(xa.dtype if xa.dtype.kind in "iuf c"
                                                                  and xa.dtype != np.bool_ else np.int32)))


def trim_zeros(filt, trim: str = "fb", axis=None):
    """filt without its leading ('f') and/or trailing ('b') zeros; the length depends on the data, so this
    needs a concrete array (it raises ConcretizationError under jit)."""
    x = arr(filt)
    if is_traced(x):
        raise concretization_error("trim_zeros", "trim_zeros()")
    v = np.asarray(x)
    if v.ndim != 1:
        raise error("trim_zeros", f"expects a 1-D array, got {aval(x)}")
    nz = np.flatnonzero(v)
    if nz.size == 0:
        return Array(v[:0])
    lo = nz[0] if "f" in trim.lower() else 0
    hi = nz[-1] + 1 if "b" in trim.lower() else v.size
    return Array(v[lo:hi])


# -- polynomials -----------------------------------------------------------------------------------

def polyval(p, x, *, unroll: int = 16):
    """p[0] * x**(n-1) + ... + p[n-1] (Horner); p may be 2-D (columns broadcast against x)."""
    p, x = _promote_nobroadcast("polyval", p, x)
    pa, xa = aval(p), aval(x)
    if pa.ndim == 0:
        raise error("polyval", f"p must have at least one dimension, got {pa}")
    shape = tuple(np.broadcast_shapes(pa.shape[1:], xa.shape))
    from .elementwise import add, multiply
    y = lax.full(shape, 0, xa.dtype)
    for i in range(pa.shape[0]):
        pi = lax.reshape(lax.slice(p, (i,) + (0,) * (pa.ndim - 1), (i + 1,) + pa.shape[1:]), pa.shape[1:])
        y = add(multiply(y, x), pi)
    return y


def polyadd(a1, a2):
    a1, a2 = _promote_nobroadcast("polyadd", _1d("polyadd", a1), _1d("polyadd", a2))
    n1, n2 = aval(a1).shape[0], aval(a2).shape[0]
    if n2 > n1:
        a1, a2, n1, n2 = a2, a1, n2, n1
    a2 = lax.pad(a2, np.zeros((), aval(a2).dtype), [(n1 - n2, 0, 0)])
    return lax.add(a1, a2)


def polysub(a1, a2):
    a1, a2 = _promote_nobroadcast("polysub", _1d("polysub", a1), _1d("polysub", a2))
    return polyadd(a1, lax.neg(a2))


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    a1, a2 = _promote_inexact("polymul", _1d("polymul", a1), _1d("polymul", a2))
    if trim_leading_zeros and (aval(a1).shape[0] > 1 or aval(a2).shape[0] > 1):
        a1, a2 = trim_zeros(a1, "f"), trim_zeros(a2, "f")
    if aval(a1).shape[0] == 0:
        a1 = lax.full((1,), 0, aval(a2).dtype)
    if aval(a2).shape[0] == 0:
        a2 = lax.full((1,), 0, aval(a1).dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """(quotient, remainder) of u / v; the remainder keeps u's length (leading entries ~0) unless
    trim_leading_zeros (eager only)."""
    u, v = _promote_inexact("polydiv", _1d("polydiv", u), _1d("polydiv", v))
    m, n = aval(u).shape[0] - 1, aval(v).shape[0] - 1
    dt = aval(u).dtype
    scale = lax.div(np.ones((), dt), lax.reshape(lax.slice(v, (0,), (1,)), ()))
    q = [lax.full((), 0, dt)] * max(m - n + 1, 1)
    for k in range(0, m - n + 1):
        d = lax.mul(scale, lax.reshape(lax.slice(u, (k,), (k + 1,)), ()))
        q[k] = d
        upd = lax.neg(lax.mul(lax.broadcast(d, (n + 1,)), v))
        upd = lax.pad(upd, np.zeros((), dt), [(k, m - n - k, 0)])
        u = lax.add(u, upd)
    q = lax.concatenate([lax.reshape(t, (1,)) for t in q], 0)
    if trim_leading_zeros:
        if is_traced(u):
            raise concretization_error("polydiv", "polydiv(trim_leading_zeros=True)")
        uv = np.asarray(u)
        tol = np.sqrt(np.finfo(uv.dtype).eps)
        big = np.flatnonzero(np.abs(uv) >= tol)
        u = Array(uv[big[0]:] if big.size else uv[:0])
    return q, u


def polyder(p, m: int = 1):
    p = _promote_inexact("polyder", _1d("polyder", p))[0]
    m = int(m)
    if m < 0:
        raise error("polyder", f"the order of the derivative must be non-negative, got {m}")
    if m == 0:
        return p
    n = aval(p).shape[0]
    dt = aval(p).dtype
    coeff = (np.arange(m, n)[None] - np.arange(m)[:, None]).prod(0)[::-1] if n > m else np.zeros(0)
    return lax.mul(lax.slice(p, (0,), (max(n - m, 0),)), Array(np.asarray(coeff, dt)))


def polyint(p, m: int = 1, k=None):
    m = int(m)
    k = 0 if k is None else k
    p, k = _promote_inexact("polyint", _1d("polyint", p), arr(k))
    if m < 0:
        raise error("polyint", "the order of the integral must be non-negative (see polyder)")
    if aval(k).ndim == 0:
        k = lax.reshape(k, (1,))
    if aval(k).shape == (1,):
        k = lax.broadcast_in_dim(lax.reshape(k, ()), (m,), ())
    if aval(k).shape != (m,):
        raise error("polyint", f"k must be a scalar or a rank-1 array of length 1 or m={m}, got {aval(k)}")
    if m == 0:
        return p
    n = aval(p).shape[0]
    dt = aval(p).dtype
    grid = np.arange(n + m)[None] - np.arange(m)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1]
    return lax.div(lax.concatenate([p, k], 0), Array(np.asarray(coeff, dt)))


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with these roots (or the characteristic polynomial of a
    square matrix)."""
    z = to_inexact(arr(seq_of_zeros))
    za = aval(z)
    if za.ndim == 0:
        z = lax.reshape(z, (1,))
        za = aval(z)
    if za.ndim == 2 and za.shape[0] == za.shape[1] and za.shape[0] != 0:
        from .linalg import eigvals
        z = eigvals(z)
        za = aval(z)
    if za.ndim != 1:
        raise error("poly", f"input must be 1-D or a non-empty square 2-D array, got {za}")
    dt = za.dtype
    if za.shape[0] == 0:
        return lax.full((), 1, dt)
    a = lax.full((1,), 1, dt)
    for i in range(za.shape[0]):
        r = lax.reshape(lax.slice(z, (i,), (i + 1,)), (1,))
        a = convolve(a, lax.concatenate([lax.full((1,), 1, dt), lax.neg(r)], 0), mode="full")
    return a


def _companion_roots(p):
    from .linalg import eigvals
    n = aval(p).shape[0]
    dt = aval(p).dtype
    if n < 2:
        return Array(np.zeros(0, np.complex128 if dt in (np.float64, np.complex128) else np.complex64))
    first = lax.div(lax.neg(lax.slice(p, (1,), (n,))), lax.broadcast(lax.reshape(lax.slice(p, (0,), (1,)), ()),
                                                                     (n - 1,)))
    sub = np.eye(n - 1, k=-1, dtype=dt)[1:] if n > 2 else np.zeros((0, n - 1), dt)
    A = lax.concatenate([lax.reshape(first, (1, n - 1)), Array(sub)], 0)
    return eigvals(A)


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial p (complex), from the companion matrix's eigenvalues."""
    p = to_inexact(arr(p))
    if aval(p).ndim == 0:
        p = lax.reshape(p, (1,))
    if aval(p).ndim != 1:
        raise error("roots", f"input must be a rank-1 array, got {aval(p)}")
    n = aval(p).shape[0]
    if n < 2:
        return _companion_roots(p)
    if strip_zeros:
        if is_traced(p):
            raise concretization_error("roots", "roots() with strip_zeros=True (pass strip_zeros=False under jit)")
        pv = np.asarray(p)
        nz = np.flatnonzero(pv)
        lead = nz[0] if nz.size else n
        return _companion_roots(Array(pv[lead:]))
    # strip_zeros=False: rotate the leading zeros to the end; their roots become NaN
    from .elementwise import where
    from .reductions import all as all_, argmin
    iszero = lax.eq(p, lax.full_like(p, 0))
    lead = lax.select(all_(iszero), lax.full((), n, np.int32),
                      lax.convert_element_type(argmin(lax.convert_element_type(iszero, np.int32)), np.int32))
    p = where(lax.eq(lax.full((n,), lead, np.int32), lax.full((n,), n, np.int32)), lax.full_like(p, 1), p)
    idx = lax.rem(lax.add(lax.iota(np.int32, n), lax.full((n,), lead, np.int32)), lax.full((n,), n, np.int32))
    from .indexing_ops import take
    r = _companion_roots(take(p, idx))
    zero = lax.eq(r, lax.full_like(r, 0))
    _, r = lax.sort_key_val(lax.convert_element_type(zero, np.int32), r)
    m = aval(r).shape[0]
    keep = lax.lt(lax.iota(np.int32, m), lax.sub(lax.full((m,), m, np.int32), lax.full((m,), lead, np.int32)))
    return lax.select(keep, r, lax.full_like(r, complex(np.nan, np.nan)))


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """Least-squares polynomial fit of degree `deg` (coefficients highest power first)."""
    from .linalg import inv, lstsq
    from .elementwise import sqrt
    from .reductions import sum as sum_
    x, y = _promote_inexact("polyfit", x, y)
    deg = int(deg)
    order = deg + 1
    if deg < 0:
        raise error("polyfit", f"expected deg >= 0, got {deg}")
    xa, ya = aval(x), aval(y)
    if xa.ndim != 1 or xa.shape[0] == 0:
        raise error("polyfit", f"expected a non-empty 1-D x, got {xa}")
    if ya.ndim not in (1, 2) or ya.shape[0] != xa.shape[0]:
        raise error("polyfit", f"expected y of shape ({xa.shape[0]},) or ({xa.shape[0]}, K), got {ya}")
    if rcond is None:
        rcond = xa.shape[0] * float(np.finfo(xa.dtype).eps)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = to_inexact(arr(w))
        if aval(w).ndim != 1 or aval(w).shape[0] != ya.shape[0]:
            raise error("polyfit", f"expected 1-D weights of length {ya.shape[0]}, got {aval(w)}")
        w = lax.convert_element_type(w, xa.dtype)
        lhs = lax.mul(lhs, lax.broadcast_in_dim(w, aval(lhs).shape, (0,)))
        rhs = lax.mul(rhs, lax.broadcast_in_dim(w, ya.shape, (0,)))
    scale = sqrt(sum_(lax.mul(lhs, lhs), axis=0))
    lhs = lax.div(lhs, lax.broadcast_in_dim(scale, aval(lhs).shape, (1,)))
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = lax.div(c, lax.broadcast_in_dim(scale, aval(c).shape, (0,)))
    if full:
        return c, resids, rank, s, Array(np.asarray(rcond, xa.dtype))
    if cov:
        from .products import matmul, outer
        vbase = lax.div(inv(matmul(lax.transpose(lhs, (1, 0)), lhs)), outer(scale, scale))
        if cov == "unscaled":
            fac = lax.full((1,), 1, xa.dtype)
        else:
            if xa.shape[0] <= order:
                raise error("polyfit", "the number of data points must exceed order to scale the covariance")
            fac = lax.div(resids, lax.full_like(resids, xa.shape[0] - order))
            if aval(fac).ndim == 0:
                fac = lax.reshape(fac, (1,))
        if ya.ndim == 1:
            return c, lax.mul(vbase, lax.broadcast(lax.reshape(fac, ()), aval(vbase).shape)) \
                if aval(fac).shape == (1,) else lax.mul(vbase, fac)
        v3 = lax.broadcast_in_dim(vbase, aval(vbase).shape + (aval(fac).shape[0],), (0, 1))
        return c, lax.mul(v3, lax.broadcast_in_dim(fac, aval(v3).shape, (2,)))
    return c


__all__ = ["convolve", "correlate", "vander", "trim_zeros", "polyval", "polyadd", "polysub", "polymul", "polydiv",
           "polyder", "polyint", "poly", "roots", "polyfit"]
