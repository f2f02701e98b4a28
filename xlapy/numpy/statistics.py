"""Statistics: quantile / percentile (numpy's methods linear, lower, higher, midpoint, nearest) and their nan
variants, nanmedian, nanvar / nanstd, nanargmax / nanargmin, nancumsum / nancumprod, nan_to_num, cov, corrcoef,
and the histogram family (histogram_bin_edges, histogram, histogram2d, histogramdd, bincount, digitize).

Quantiles sort along the axis (NaN last) and gather at q * (n - 1), n the count of valid entries for the nan
variants; a slice holding a NaN gives NaN in the plain ones. Histograms place each value with searchsorted
(the last edge belongs to the last bin) and count with a scatter-add, as JAX does; counts have the weights'
dtype (the operand's when there are no weights). bincount's length depends on the data: give `length=` under
jit (ConcretizationError otherwise)."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ._util import (Array, arr, as_bool, aval, axes_of, canon_axis, concretization_error, dtypes, error, is_traced,
                    lax, to_inexact)


def _isnan(x):
    return lax.ne(x, x)


def _move_last(x, axis):
    """x with `axis` moved last (axis None: flattened), and the kept axes' positions."""
    xa = aval(x)
    if axis is None:
        return lax.reshape(x, (xa.size,)), None
    ax = canon_axis(axis, xa.ndim, "quantile")
    perm = [d for d in range(xa.ndim) if d != ax] + [ax]
    return (lax.transpose(x, perm) if ax != xa.ndim - 1 else x), ax


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name: str, a, q, axis, method: str, keepdims: bool, ignore_nan: bool):
    if method not in _METHODS:
        raise error(name, f"method must be one of {', '.join(_METHODS)}, got {method!r}")
    x = to_inexact(arr(a))
    xa = aval(x)
    dt = xa.dtype
    q = arr(q)
    qa = aval(q)
    if qa.ndim > 1:
        raise error(name, f"q must be a scalar or 1-D, got {qa}")
    if not dtypes.is_inexact(qa.dtype) or qa.dtype != dt:
        q = lax.convert_element_type(q, dt)
    if isinstance(axis, (tuple, list)):
        axes = axes_of(axis, xa.ndim, name)
        keep = [d for d in range(xa.ndim) if d not in axes]
        xt = lax.transpose(x, keep + list(axes))
        kshape = tuple(xa.shape[d] for d in keep)
        x2 = lax.reshape(xt, kshape + (int(np.prod([xa.shape[d] for d in axes])),))
        ax = None
    else:
        x2, ax = _move_last(x, axis)
        axes = tuple(range(xa.ndim)) if axis is None else (ax,)
    n = aval(x2).shape[-1]
    if n == 0:
        raise error(name, f"cannot take a quantile of an empty axis of {xa}")
    batch = aval(x2).shape[:-1]
    s = lax.sort(x2, aval(x2).ndim - 1)
    qf = lax.reshape(q, (builtins.max(qa.size, 1),)) if qa.ndim else lax.reshape(q, (1,))
    nq = aval(qf).shape[0]
    nb = len(batch)
    if ignore_nan:
        count = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(_isnan(s)), dt), (nb,))
    else:
        count = lax.full(batch, n, dt)
    cnt = lax.broadcast_in_dim(count, batch + (nq,), tuple(range(nb)))
    qb = lax.broadcast_in_dim(qf, batch + (nq,), (nb,))
    pos = lax.mul(qb, lax.sub(cnt, lax.full_like(cnt, 1)))
    top = lax.full_like(pos, n - 1)
    zero = lax.full_like(pos, 0)
    lo_f = lax.clamp(zero, lax.floor(pos), top)
    hi_f = lax.clamp(zero, lax.ceil(pos), top)
    it = np.int32

    def at(idx_f):
        idx = lax.convert_element_type(idx_f, it)
        from .indexing_ops import take_along_axis
        return take_along_axis(s, idx, axis=nb)
    if method == "lower":
        out = at(lo_f)
    elif method == "higher":
        out = at(hi_f)
    elif method == "nearest":
        out = at(lax.clamp(zero, lax.round(pos, lax.RoundingMethod.TO_NEAREST_EVEN), top))
    else:
        vlo, vhi = at(lo_f), at(hi_f)
        if method == "midpoint":
            out = lax.mul(lax.add(vlo, vhi), lax.full_like(vlo, 0.5))
        else:
            t = lax.sub(pos, lo_f)
            out = lax.add(vlo, lax.mul(t, lax.sub(vhi, vlo)))
    if ignore_nan:
        bad = lax.eq(cnt, lax.full_like(cnt, 0))
    else:
        has = lax.reduce_or(_isnan(s), (nb,))
        bad = lax.broadcast_in_dim(has, batch + (nq,), tuple(range(nb)))
    out = lax.select(bad, lax.full_like(out, np.nan), out)
    # q's axis first, then the kept axes
    out = lax.transpose(out, (nb,) + tuple(range(nb)))
    if keepdims:
        shape = tuple(1 if d in axes else xa.shape[d] for d in range(xa.ndim))
        out = lax.reshape(out, (nq,) + shape)
    return lax.reshape(out, aval(out).shape[1:]) if qa.ndim == 0 else out


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None):
    return _quantile("quantile", a, q, axis, _no_weights(weights, method), keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights=None):
    return _quantile("nanquantile", a, q, axis, _no_weights(weights, method), keepdims, True)


def _no_weights(weights, method):
    if weights is not None:
        raise error("quantile", "weights= is not supported")
    return method


def _pct(q):
    q = arr(q)
    return lax.div(to_inexact(q), lax.full_like(to_inexact(q), 100))


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False, *, weights=None, out_sharding=None):
    return _quantile("percentile", a, _pct(q), axis, _no_weights(weights, method), keepdims, False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights=None):
    return _quantile("nanpercentile", a, _pct(q), axis, _no_weights(weights, method), keepdims, True)


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    return _quantile("nanmedian", a, 0.5, axis, "linear", keepdims, True)


def nanvar(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
           mean=None):
    from .reductions import sum as sum_
    x = to_inexact(arr(a))
    if dtype is not None:
        x = lax.convert_element_type(x, dtype)
    valid = lax.bitwise_not(_isnan(x))
    if where is not None:
        valid = lax.bitwise_and(valid, as_bool(where))
    zero = lax.full_like(x, 0)
    xv = lax.select(valid, x, zero)
    n = sum_(lax.convert_element_type(valid, aval(x).dtype), axis, keepdims=True)
    if mean is None:
        mean = lax.div(sum_(xv, axis, keepdims=True), n)
    elif not keepdims and axis is not None:
        from .shape_ops import expand_dims
        mean = expand_dims(arr(mean), axes_of(axis, aval(x).ndim, "nanvar"))
    from .elementwise import subtract
    d = lax.select(valid, subtract(x, mean), zero)
    if aval(x).dtype.kind == "c":
        sq = lax.real(lax.mul(d, lax.conj(d)))
    else:
        sq = lax.mul(d, d)
    ss = sum_(sq, axis, keepdims=keepdims)
    nk = n if keepdims else lax.reshape(n, aval(ss).shape)
    denom = lax.max(lax.sub(lax.convert_element_type(nk, aval(ss).dtype), lax.full_like(ss, ddof)),
                    lax.full_like(ss, 0))
    return lax.div(ss, denom)


def nanstd(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
           mean=None):
    return lax.sqrt(nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean))


def _nanarg(kind: str, a, axis, keepdims: bool):
    from .reductions import all as all_, argmax, argmin
    x = arr(a)
    if not dtypes.is_inexact(aval(x).dtype):
        return (argmax if kind == "max" else argmin)(x, axis, keepdims=keepdims)
    fill = -np.inf if kind == "max" else np.inf
    nan = _isnan(x)
    res = (argmax if kind == "max" else argmin)(lax.select(nan, lax.full_like(x, fill), x), axis,
                                                keepdims=keepdims)
    return lax.select(all_(nan, axis, keepdims=keepdims), lax.full_like(res, -1), res)


def nanargmax(a, axis=None, out=None, keepdims: bool = False):
    """argmax ignoring NaN; -1 where a slice is all NaN (JAX's convention)."""
    return _nanarg("max", a, axis, keepdims)


def nanargmin(a, axis=None, out=None, keepdims: bool = False):
    return _nanarg("min", a, axis, keepdims)


def nancumsum(a, axis=None, dtype=None, out=None):
    from .reductions import _nan_to, cumsum
    return cumsum(_nan_to(a, 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    from .reductions import _nan_to, cumprod
    return cumprod(_nan_to(a, 1), axis, dtype)


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +inf -> posinf (default the dtype's max), -inf -> neginf (default its min)."""
    x = arr(x)
    dt = aval(x).dtype
    if not dtypes.is_inexact(dt):
        return x
    if dt.kind == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(dt)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = lax.select(_isnan(x), lax.full_like(x, nan), x)
    out = lax.select(lax.eq(x, lax.full_like(x, np.inf)), lax.full_like(x, posinf), out)
    return lax.select(lax.eq(x, lax.full_like(x, -np.inf)), lax.full_like(x, neginf), out)


# -- covariance ---------------------------------------------------------------------------------------

def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: int | None = None, fweights=None,
        aweights=None, dtype=None):
    """The covariance matrix of the variables (rows if rowvar) of m (and y), numpy's formula with weights."""
    from .products import matmul
    from .shape_ops import atleast_2d
    x = to_inexact(arr(m) if dtype is None else lax.convert_element_type(arr(m), dtype))
    if aval(x).ndim > 2:
        raise error("cov", f"m has more than 2 dimensions: {aval(x)}")
    x = atleast_2d(x)
    if not rowvar and aval(x).shape[0] != 1:
        x = lax.transpose(x, (1, 0))
    if y is not None:
        yy = atleast_2d(to_inexact(arr(y)))
        if not rowvar and aval(yy).shape[0] != 1:
            yy = lax.transpose(yy, (1, 0))
        dt = dtypes.result_type(x, yy)
        x = lax.concatenate([lax.convert_element_type(x, dt), lax.convert_element_type(yy, dt)], 0)
    dt = aval(x).dtype
    nv, nobs = aval(x).shape
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        w = lax.convert_element_type(arr(fweights), dt)
    if aweights is not None:
        aw = lax.convert_element_type(arr(aweights), dt)
        w = aw if w is None else lax.mul(w, aw)
    if w is None:
        w_sum = lax.full((), nobs, dt)
        avg = lax.div(lax.reduce_sum(x, (1,)), lax.full((nv,), nobs, dt))
    else:
        w_sum = lax.reduce_sum(w, (0,))
        avg = lax.div(lax.reduce_sum(lax.mul(x, lax.broadcast_in_dim(w, (nv, nobs), (1,))), (1,)),
                      lax.broadcast(w_sum, (nv,)))
    if w is None:
        fact = lax.sub(w_sum, lax.full((), ddof, dt))
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = lax.sub(w_sum, lax.full((), ddof, dt))
    else:
        aw = lax.convert_element_type(arr(aweights), dt)
        fact = lax.sub(w_sum, lax.div(lax.mul(lax.full((), ddof, dt), lax.reduce_sum(lax.mul(w, aw), (0,))), w_sum))
    fact = lax.max(fact, lax.full((), 0, dt))
    xc = lax.sub(x, lax.broadcast_in_dim(avg, (nv, nobs), (0,)))
    xw = xc if w is None else lax.mul(xc, lax.broadcast_in_dim(w, (nv, nobs), (1,)))
    xt = lax.transpose(xc, (1, 0))
    if dt.kind == "c":
        xt = lax.conj(xt)
    c = lax.div(matmul(xw, xt), lax.broadcast(fact, (nv, nv)))
    return lax.reshape(c, ()) if nv == 1 and (y is None) and aval(arr(m)).ndim < 2 else c


def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
    from .elementwise import clip, sqrt
    c = cov(x, y, rowvar)
    if aval(c).ndim == 0:
        return lax.div(c, c)
    d = lax.reduce_sum(lax.mul(c, lax.convert_element_type(Array(np.eye(aval(c).shape[0], dtype=bool)),
                                                            aval(c).dtype)), (1,))
    sd = sqrt(lax.real(d) if aval(d).dtype.kind == "c" else d)
    n = aval(c).shape[0]
    if aval(sd).dtype != aval(c).dtype:
        sd = lax.convert_element_type(sd, aval(c).dtype)
    c = lax.div(c, lax.broadcast_in_dim(sd, (n, n), (0,)))
    c = lax.div(c, lax.broadcast_in_dim(sd, (n, n), (1,)))
    if aval(c).dtype.kind == "c":
        return c
    return clip(c, -1, 1)


# -- histograms -------------------------------------------------------------------------------------

def _edges(name: str, a, bins, range_, weights=None):
    from .creation import linspace
    x = arr(a)
    if isinstance(bins, str):
        raise error(name, f"string bins ({bins!r}) are not supported; pass a number of bins or the edges")
    if hasattr(bins, "aval") or np.ndim(bins) > 0:
        e = to_inexact(arr(bins))
        if aval(e).ndim != 1:
            raise error(name, f"bins must be an int or a 1-D array of edges, got {aval(e)}")
        return e
    nb = int(bins)
    if nb < 1:
        raise error(name, f"the number of bins must be positive, got {nb}")
    xf = to_inexact(x)
    dt = aval(xf).dtype
    if range_ is None:
        if aval(xf).size == 0:
            lo, hi = lax.full((), 0, dt), lax.full((), 1, dt)
        else:
            lo, hi = lax.reduce_min(xf, None), lax.reduce_max(xf, None)
    else:
        if len(range_) != 2 or range_[0] > range_[1]:
            raise error(name, f"range must be (min, max) with min <= max, got {range_}")
        lo, hi = lax.full((), range_[0], dt), lax.full((), range_[1], dt)
    same = lax.eq(lo, hi)
    lo = lax.select(same, lax.sub(lo, lax.full((), 0.5, dt)), lo)
    hi = lax.select(same, lax.add(hi, lax.full((), 0.5, dt)), hi)
    return linspace(lo, hi, nb + 1, dtype=dt)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    return _edges("histogram_bin_edges", a, bins, range, weights)


def _bin_index(x, edges):
    """searchsorted(edges, x, 'right'), with x == the last edge counted in the last bin."""
    from .sorting import searchsorted
    n = aval(edges).shape[0]
    idx = searchsorted(edges, x, side="right")
    last = lax.broadcast(lax.reshape(lax.slice(edges, (n - 1,), (n,)), ()), aval(x).shape)
    return lax.select(lax.eq(x, last), lax.full_like(idx, n - 1), idx)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """(counts, bin_edges) as numpy.histogram; counts have the weights' dtype (a's without weights)."""
    x = to_inexact(arr(a))
    edges = _edges("histogram", x, bins, range, weights)
    xf = lax.reshape(x, (aval(x).size,))
    dt = aval(edges).dtype
    if aval(xf).dtype != dt:
        xf = lax.convert_element_type(xf, dt)
    if weights is None:
        w = lax.full(aval(xf).shape, 1, dt)
    else:
        w = arr(weights)
        if aval(w).shape != aval(x).shape:
            raise error("histogram", f"weights {aval(w)} must have the shape of a {aval(x)}")
        w = lax.reshape(w, aval(xf).shape)
    idx = _bin_index(xf, edges)
    ne = aval(edges).shape[0]
    counts = _scatter_add(ne, idx, w)
    counts = lax.slice(counts, (1,), (ne,))
    if density:
        widths = lax.sub(lax.slice(edges, (1,), (ne,)), lax.slice(edges, (0,), (ne - 1,)))
        c = to_inexact(counts)
        total = lax.reduce_sum(c, None)
        counts = lax.div(c, lax.mul(lax.broadcast(total, (ne - 1,)), lax.convert_element_type(widths, aval(c).dtype)))
    return counts, edges


def _scatter_add(length: int, idx, w):
    """zeros(length).at[idx].add(w) with out-of-range indices dropped."""
    n = aval(idx).shape[0]
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    return lax.scatter_add(lax.full((length,), 0, aval(w).dtype),
                           lax.reshape(lax.convert_element_type(idx, np.int32), (n, 1)), w, dn)


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """(H, [edges per dimension]) for N points in D dimensions (sample [N, D])."""
    s = to_inexact(arr(sample))
    if aval(s).ndim == 1:
        s = lax.reshape(s, (aval(s).shape[0], 1))
    if aval(s).ndim != 2:
        raise error("histogramdd", f"sample must be [N, D], got {aval(s)}")
    npts, nd = aval(s).shape
    bins_l = list(bins) if isinstance(bins, (list, tuple)) else [bins] * nd
    if len(bins_l) != nd:
        raise error("histogramdd", f"bins must have one entry per dimension ({nd}), got {len(bins_l)}")
    ranges = list(range) if range is not None else [None] * nd
    edges, idxs, sizes = [], [], []
    for d in builtins.range(nd):
        col = lax.reshape(lax.slice(s, (0, d), (npts, d + 1)), (npts,))
        e = _edges("histogramdd", col, bins_l[d], ranges[d])
        if aval(e).dtype != aval(col).dtype:
            e = lax.convert_element_type(e, aval(col).dtype)
        edges.append(e)
        idxs.append(_bin_index(col, e))
        sizes.append(aval(e).shape[0] + 1)
    flat = lax.full((npts,), 0, np.int32)
    for i, n in zip(idxs, sizes):
        flat = lax.add(lax.mul(flat, lax.full((npts,), n, np.int32)), lax.convert_element_type(i, np.int32))
    dt = aval(s).dtype
    # without weights the counts are integers (JAX counts with bincount)
    w = lax.full((npts,), 1, dtypes.default_int()) if weights is None else lax.reshape(arr(weights), (npts,))
    total = int(np.prod(sizes))
    hist = lax.reshape(_scatter_add(total, flat, w), tuple(sizes))
    hist = lax.slice(hist, (1,) * nd, tuple(n - 1 for n in sizes))
    if density:
        hist = to_inexact(hist)
        hd = aval(hist).dtype
        hist = lax.div(hist, lax.broadcast(lax.reduce_sum(hist, None), aval(hist).shape))
        for d, e in enumerate(edges):
            ne = aval(e).shape[0]
            wd = lax.convert_element_type(lax.sub(lax.slice(e, (1,), (ne,)), lax.slice(e, (0,), (ne - 1,))), hd)
            hist = lax.div(hist, lax.broadcast_in_dim(wd, aval(hist).shape, (d,)))
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    x, y = to_inexact(arr(x)), to_inexact(arr(y))
    dt = dtypes.result_type(x, y)
    x, y = lax.convert_element_type(x, dt), lax.convert_element_type(y, dt)
    n = aval(x).shape[0]
    if not isinstance(bins, (list, tuple)) and (hasattr(bins, "aval") or np.ndim(bins) > 0):
        bins = [bins, bins]
    h, (ex, ey) = histogramdd(lax.concatenate([lax.reshape(x, (n, 1)), lax.reshape(y, (n, 1))], 1), bins, range,
                              weights, density)
    return h, ex, ey


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None, out_sharding=None):
    """Counts of each non-negative integer in x (weighted sums with weights); the result's length is
    max(x) + 1 (at least minlength) eagerly, `length` under jit (values past it are dropped)."""
    v = arr(x)
    if aval(v).dtype.kind not in "iub":
        raise error("bincount", f"x must be an integer array, got {aval(v)}")
    if aval(v).ndim != 1:
        raise error("bincount", f"x must be 1-D, got {aval(v)}")
    if length is None:
        if is_traced(v):
            raise concretization_error("bincount", "bincount() without length=")
        vv = np.asarray(v)
        length = builtins.max(int(minlength), int(vv.max()) + 1 if vv.size else 0)
    length = int(length)
    w = lax.full(aval(v).shape, 1, dtypes.default_int()) if weights is None else arr(weights)
    if aval(w).shape != aval(v).shape:
        raise error("bincount", f"weights {aval(w)} must have the shape of x {aval(v)}")
    idx = lax.max(lax.convert_element_type(v, np.int32), lax.full(aval(v).shape, 0, np.int32))
    return _scatter_add(length, idx, w)


def digitize(x, bins, right: bool = False, *, method: str | None = None):
    """The index of the bin of each x (bins increasing or decreasing), numpy's convention."""
    from .sorting import searchsorted
    xv, b = arr(x), arr(bins)
    if aval(b).ndim != 1:
        raise error("digitize", f"bins must be 1-D, got {aval(b)}")
    n = aval(b).shape[0]
    if n == 0:
        return lax.full(aval(xv).shape, 0, dtypes.default_int())
    side = "left" if right else "right"
    inc = searchsorted(b, xv, side=side)
    dec = lax.sub(lax.full_like(inc, n), searchsorted(lax.rev(b, (0,)), xv, side=side))
    first = lax.reshape(lax.slice(b, (0,), (1,)), ())
    last = lax.reshape(lax.slice(b, (n - 1,), (n,)), ())
    return lax.select(lax.broadcast(lax.ge(last, first), aval(inc).shape), inc, dec)


__all__ = ["quantile", "nanquantile", "percentile", "nanpercentile", "nanmedian", "nanvar", "nanstd", "nanargmax",
           "nanargmin", "nancumsum", "nancumprod", "nan_to_num", "cov", "corrcoef", "histogram_bin_edges",
           "histogram", "histogram2d", "histogramdd", "bincount", "digitize"]
