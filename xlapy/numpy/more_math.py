"""More numeric functions of jax.numpy: angle, bitwise_count, float_power, frexp, ldexp, modf, gcd, lcm, i0,
logaddexp2, nextafter, spacing, iscomplex / isreal / iscomplexobj / isrealobj, the window functions (bartlett,
blackman, hamming, hanning, kaiser), interp, gradient, trapezoid, unwrap, diff, ediff1d, cross, matvec,
vecmat, vecdot, sort_complex, packbits, unpackbits. Each is written over xlapy.lax with numpy's definitions
(JAX's where they differ: gradient supports edge_order=1 only, as JAX)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ._util import (Array, arr, aval, axes_of, broadcast_all, canon_axis, dtypes, error, lax, promote,
                    promote_inexact, to_inexact)

_LN2 = math.log(2.0)


def _c(x, v):
    return lax.full_like(x, v)


def angle(z, deg: bool = False):
    """The argument of each complex number (atan2(imag, real)); in degrees if deg."""
    z = arr(z)
    if aval(z).dtype.kind == "c":
        re, im = lax.real(z), lax.imag(z)
    else:
        re = to_inexact(z)
        im = _c(re, 0)
    out = lax.atan2(im, re)
    return lax.mul(out, _c(out, 180 / math.pi)) if deg else out


def bitwise_count(x):
    """The number of 1 bits in |x| (uint8)."""
    x = arr(x)
    dt = aval(x).dtype
    if dt.kind not in "iub":
        raise error("bitwise_count", f"needs an integer or bool operand, got {aval(x)}")
    if dt == np.bool_:
        return lax.convert_element_type(x, np.uint8)
    if dt.kind == "i":
        x = lax.abs(x)
    return lax.convert_element_type(lax.population_count(x), np.uint8)


def float_power(x, y):
    from .elementwise import power
    x, y = promote_inexact("float_power", x, y)
    return power(x, y)


_FLOAT_BITS = {np.dtype(np.float16): (np.int16, 10, 15), np.dtype(np.float32): (np.int32, 23, 127),
               np.dtype(np.float64): (np.int64, 52, 1023)}


def frexp(x):
    """(mantissa, exponent) with x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1 (exponent int32)."""
    x = to_inexact(arr(x))
    dt = aval(x).dtype
    if dt not in _FLOAT_BITS:
        raise error("frexp", f"needs a float16/32/64 operand, got {aval(x)}")
    it, mbits, bias = _FLOAT_BITS[dt]
    it = np.dtype(it)
    ebits_mask = (1 << (dt.itemsize * 8 - 1 - mbits)) - 1
    # subnormals: scale into the normal range first
    sub = lax.lt(lax.abs(x), _c(x, float(dtypes.finfo(dt).tiny)))
    scaled = lax.select(sub, lax.mul(x, _c(x, float(2.0 ** (mbits + 1)))), x)
    bits = lax.bitcast_convert_type(scaled, it)
    efield = lax.bitwise_and(lax.shift_right_logical(bits, lax.full_like(bits, mbits)), lax.full_like(bits, ebits_mask))
    e = lax.sub(efield, lax.full_like(efield, bias - 1))
    e = lax.select(sub, lax.sub(e, lax.full_like(e, mbits + 1)), e)
    keep = lax.bitwise_not(lax.full_like(bits, ebits_mask << mbits))
    mbits_v = lax.bitwise_or(lax.bitwise_and(bits, keep), lax.full_like(bits, (bias - 1) << mbits))
    m = lax.bitcast_convert_type(mbits_v, dt)
    special = lax.bitwise_or(lax.eq(x, _c(x, 0)), lax.bitwise_not(lax.is_finite(x)))
    m = lax.select(special, x, m)
    e = lax.select(special, lax.full_like(e, 0), e)
    return m, lax.convert_element_type(e, np.int32)


def ldexp(x1, x2):
    """x1 * 2**x2 (x2 integer), in two steps so an intermediate power of two does not overflow."""
    x = to_inexact(arr(x1))
    n = arr(x2)
    if aval(n).dtype.kind not in "iub":
        raise error("ldexp", f"the exponent must be an integer array, got {aval(n)}")
    x, n = broadcast_all("ldexp", x, n)
    dt = aval(x).dtype
    nf = lax.convert_element_type(n, dt)
    half = lax.floor(lax.mul(nf, _c(nf, 0.5)))
    rest = lax.sub(nf, half)
    two = lambda k: lax.exp2(k)
    return lax.mul(lax.mul(x, two(half)), two(rest))


def modf(x, /, out=None):
    """(fractional part, integral part), both with x's sign."""
    from .elementwise import trunc
    x = to_inexact(arr(x))
    t = trunc(x)
    frac = lax.sub(x, t)
    inf = lax.eq(lax.abs(x), _c(x, np.inf))
    from .elementwise import copysign
    frac = lax.select(inf, copysign(_c(x, 0), x), frac)
    return frac, t


def gcd(x1, x2):
    """The greatest common divisor of |x1| and |x2| (Euclid's algorithm in a while loop)."""
    a, b = promote("gcd", x1, x2)
    if aval(a).dtype.kind not in "iu":
        raise error("gcd", f"needs integer operands, got {aval(a)}")
    a, b = lax.abs(a), lax.abs(b)

    def cond(ab):
        return lax.reduce_or(lax.ne(ab[1], _c(ab[1], 0)), None)

    def body(ab):
        x, y = ab
        nz = lax.ne(y, _c(y, 0))
        safe = lax.select(nz, y, _c(y, 1))
        return lax.select(nz, y, x), lax.select(nz, lax.rem(x, safe), y)
    if aval(a).size == 0:
        return a
    return lax.while_loop(cond, body, (a, b))[0]


def lcm(x1, x2):
    a, b = promote("lcm", x1, x2)
    g = gcd(a, b)
    zero = lax.eq(g, _c(g, 0))
    safe = lax.select(zero, _c(g, 1), g)
    return lax.select(zero, _c(g, 0), lax.abs(lax.mul(lax.div(a, safe), b)))


def i0(x):
    """The modified Bessel function of the first kind, order 0: exp(|x|) * i0e(x)."""
    x = to_inexact(arr(x))
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2) without overflow."""
    x1, x2 = promote_inexact("logaddexp2", x1, x2)
    m = lax.max(x1, x2)
    d = lax.sub(x1, x2)
    out = lax.add(m, lax.div(lax.log1p(lax.exp2(lax.neg(lax.abs(d)))), _c(d, _LN2)))
    return lax.select(lax.ne(d, d), lax.add(x1, x2), out)


def nextafter(x, y, /):
    x, y = promote_inexact("nextafter", x, y)
    return lax.nextafter(x, y)


def spacing(x):
    """The distance from x to the next float away from zero (negative for negative x)."""
    x = to_inexact(arr(x))
    from .elementwise import copysign
    toward = copysign(_c(x, np.inf), x)
    return lax.sub(lax.nextafter(x, toward), x)


def iscomplex(x):
    x = arr(x)
    if aval(x).dtype.kind != "c":
        return lax.full(aval(x).shape, False, np.bool_)
    return lax.ne(lax.imag(x), _c(lax.imag(x), 0))


def isreal(x):
    x = arr(x)
    if aval(x).dtype.kind != "c":
        return lax.full(aval(x).shape, True, np.bool_)
    return lax.eq(lax.imag(x), _c(lax.imag(x), 0))


def iscomplexobj(x) -> bool:
    if x is None:
        return False
    dt = aval(x).dtype if hasattr(x, "aval") else np.asarray(x).dtype if not isinstance(x, complex) \
        else np.dtype(np.complex128)
    return np.dtype(dt).kind == "c"


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


# -- windows ------------------------------------------------------------------------------------------

def _window(name: str, M: int, fn):
    M = int(M)
    dt = dtypes.default_float()
    if M < 1:
        return Array(np.zeros(0, dt))
    if M == 1:
        return Array(np.ones(1, dt))
    n = np.arange(M, dtype=np.float64)
    return Array(np.asarray(fn(n, M), dtype=dt))


def bartlett(M: int):
    return _window("bartlett", M, lambda n, M: 1 - np.abs(2 * n / (M - 1) - 1))


def blackman(M: int):
    return _window("blackman", M, lambda n, M: 0.42 - 0.5 * np.cos(2 * np.pi * n / (M - 1))
                   + 0.08 * np.cos(4 * np.pi * n / (M - 1)))


def hamming(M: int):
    return _window("hamming", M, lambda n, M: 0.54 - 0.46 * np.cos(2 * np.pi * n / (M - 1)))


def hanning(M: int):
    return _window("hanning", M, lambda n, M: 0.5 - 0.5 * np.cos(2 * np.pi * n / (M - 1)))


def kaiser(M: int, beta):
    M = int(M)
    dt = dtypes.default_float()
    if M < 1:
        return Array(np.zeros(0, dt))
    if M == 1:
        return Array(np.ones(1, dt))
    b = lax.convert_element_type(arr(beta), dt)
    alpha = (M - 1) / 2.0
    n = np.arange(M, dtype=np.float64)
    r = Array(np.sqrt(1 - ((n - alpha) / alpha) ** 2).astype(dt))
    return lax.div(i0(lax.mul(lax.broadcast(b, (M,)), r)), lax.broadcast(i0(b), (M,)))


# -- interpolation and differences -----------------------------------------------------------------

def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x (xp increasing), numpy's left/right/period."""
    from .indexing_ops import take
    from .sorting import searchsorted, argsort
    from .elementwise import where, remainder
    x, xp = (to_inexact(v) for v in (arr(x), arr(xp)))
    fp = arr(fp)
    if aval(xp).ndim != 1 or aval(fp).ndim != 1 or aval(xp).shape != aval(fp).shape:
        raise error("interp", f"xp and fp must be 1-D of the same length, got {aval(xp)} and {aval(fp)}")
    if aval(xp).shape[0] == 0:
        raise error("interp", "xp and fp cannot be empty")
    fp = to_inexact(fp)
    dt = dtypes.result_type(x, xp, fp) if aval(fp).dtype.kind != "c" else aval(fp).dtype
    x = lax.convert_element_type(x, dt if dt.kind != "c" else aval(x).dtype)
    xp = lax.convert_element_type(xp, aval(x).dtype)
    if period is not None:
        if period == 0:
            raise error("interp", "period must be a non-zero value")
        period = abs(period)
        x = remainder(x, period)
        xp = remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        n = aval(xp).shape[0]
        xp = lax.concatenate([lax.sub(lax.slice(xp, (n - 1,), (n,)), _c(lax.slice(xp, (0,), (1,)), period)), xp,
                              lax.add(lax.slice(xp, (0,), (1,)), _c(lax.slice(xp, (0,), (1,)), period))], 0)
        fp = lax.concatenate([lax.slice(fp, (n - 1,), (n,)), fp, lax.slice(fp, (0,), (1,))], 0)
    n = aval(xp).shape[0]
    if n == 1:
        return lax.broadcast(lax.reshape(fp, ()), aval(x).shape)
    i = lax.clamp(np.int32(1), lax.convert_element_type(searchsorted(xp, x, side="right"), np.int32), np.int32(n - 1))
    im1 = lax.sub(i, lax.full_like(i, 1))
    fi, fm, xi, xm = take(fp, i), take(fp, im1), take(xp, i), take(xp, im1)
    df, dx, delta = lax.sub(fi, fm), lax.sub(xi, xm), lax.sub(x, xm)
    eps = np.spacing(np.finfo(aval(xp).dtype).eps)
    dx0 = lax.le(lax.abs(dx), _c(dx, eps))
    ratio = lax.div(delta, lax.select(dx0, _c(dx, 1), dx))
    if aval(df).dtype.kind == "c":
        ratio = lax.convert_element_type(ratio, aval(df).dtype)
    f = lax.select(dx0, fm, lax.add(fm, lax.mul(ratio, df)))
    if period is None:
        lo = lax.reshape(lax.slice(fp, (0,), (1,)), ()) if left is None else left
        hi = lax.reshape(lax.slice(fp, (n - 1,), (n,)), ()) if right is None else right
        f = where(lax.lt(x, lax.broadcast(lax.reshape(lax.slice(xp, (0,), (1,)), ()), aval(x).shape)), lo, f)
        f = where(lax.gt(x, lax.broadcast(lax.reshape(lax.slice(xp, (n - 1,), (n,)), ()), aval(x).shape)), hi, f)
        f = lax.convert_element_type(f, aval(fm).dtype)
    return f


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The n-th discrete difference along axis (bools: not-equal, as numpy)."""
    from .shape_ops import concatenate, broadcast_to
    x = arr(a)
    xa = aval(x)
    if xa.ndim == 0:
        raise error("diff", "needs an array of at least one dimension")
    ax = canon_axis(axis, xa.ndim, "diff")
    n = int(n)
    if n < 0:
        raise error("diff", f"order must be non-negative, got {n}")
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        e = arr(extra)
        if aval(e).ndim == 0:
            shape = list(xa.shape)
            shape[ax] = 1
            e = broadcast_to(e, tuple(shape))
        parts.append(e)
    x = concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=ax)
    for _ in range(n):
        m = aval(x).shape[ax]
        if m == 0:
            break
        hi = lax.slice_in_dim(x, 1, m, 1, ax)
        lo = lax.slice_in_dim(x, 0, m - 1, 1, ax)
        x = lax.ne(hi, lo) if aval(x).dtype == np.bool_ else lax.sub(hi, lo)
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    x = lax.reshape(arr(ary), (aval(arr(ary)).size,))
    out = diff(x) if aval(x).shape[0] else x
    dt = aval(out).dtype
    pieces = []
    if to_begin is not None:
        b = arr(to_begin)
        pieces.append(lax.convert_element_type(lax.reshape(b, (aval(b).size,)), dt))
    pieces.append(out)
    if to_end is not None:
        e = arr(to_end)
        pieces.append(lax.convert_element_type(lax.reshape(e, (aval(e).size,)), dt))
    return lax.concatenate(pieces, 0) if len(pieces) > 1 else out


def gradient(f, *varargs, axis=None, edge_order=None):
    """numpy.gradient with edge_order 1: central differences inside (spacing a scalar or 1-D coordinates),
    one-sided differences at the ends; one array per axis (a single array for one axis)."""
    if edge_order is not None and edge_order != 1:
        raise error("gradient", "only edge_order=1 is supported (as in JAX)")
    y = to_inexact(arr(f))
    ya = aval(y)
    axes = axes_of(axis, ya.ndim, "gradient")
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0 and not hasattr(varargs[0], "aval"):
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise error("gradient", f"expected 0, 1 or {len(axes)} spacings, got {len(varargs)}")
    outs = []
    for ax, h in zip(axes, spacing):
        n = ya.shape[ax]
        if n < 2:
            raise error("gradient", f"axis {ax} needs at least 2 points (edge_order + 1), got {n}")
        sl = lambda a, b: lax.slice_in_dim(y, a, b, 1, ax)
        h_arr = arr(h)
        if aval(h_arr).ndim == 0:
            hv = lax.convert_element_type(h_arr, ya.dtype)
            hb = lambda s: lax.broadcast(hv, s)
            inner = lax.div(lax.sub(sl(2, n), sl(0, n - 2)), hb(aval(sl(2, n)).shape)) if n > 2 else None
            if inner is not None:
                inner = lax.div(inner, _c(inner, 2))
            first = lax.div(lax.sub(sl(1, 2), sl(0, 1)), hb(aval(sl(0, 1)).shape))
            last = lax.div(lax.sub(sl(n - 1, n), sl(n - 2, n - 1)), hb(aval(sl(0, 1)).shape))
        else:
            xs = lax.convert_element_type(h_arr, ya.dtype)
            if aval(xs).shape != (n,):
                raise error("gradient", f"coordinates for axis {ax} must have shape ({n},), got {aval(xs)}")
            dx = lax.sub(lax.slice(xs, (1,), (n,)), lax.slice(xs, (0,), (n - 1,)))

            def along(v, m):
                return lax.broadcast_in_dim(v, tuple(m if d == ax else s for d, s in enumerate(ya.shape)), (ax,))
            if n > 2:
                dx1, dx2 = lax.slice(dx, (0,), (n - 2,)), lax.slice(dx, (1,), (n - 1,))
                a = lax.neg(lax.div(dx2, lax.mul(dx1, lax.add(dx1, dx2))))
                b = lax.div(lax.sub(dx2, dx1), lax.mul(dx1, dx2))
                c = lax.div(dx1, lax.mul(dx2, lax.add(dx1, dx2)))
                inner = lax.add(lax.add(lax.mul(along(a, n - 2), sl(0, n - 2)), lax.mul(along(b, n - 2), sl(1, n - 1))),
                                lax.mul(along(c, n - 2), sl(2, n)))
            else:
                inner = None
            first = lax.div(lax.sub(sl(1, 2), sl(0, 1)), along(lax.slice(dx, (0,), (1,)), 1))
            last = lax.div(lax.sub(sl(n - 1, n), sl(n - 2, n - 1)), along(lax.slice(dx, (n - 2,), (n - 1,)), 1))
        outs.append(lax.concatenate([p for p in (first, inner, last) if p is not None], ax))
    return outs[0] if len(outs) == 1 else outs


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of y along axis by the trapezoidal rule (sample points x, or spacing dx)."""
    from .elementwise import multiply
    from .reductions import sum as sum_
    y = to_inexact(arr(y))
    ya = aval(y)
    ax = canon_axis(axis, ya.ndim, "trapezoid")
    n = ya.shape[ax]
    if n < 2:
        return sum_(lax.mul(y, _c(y, 0)), axis=ax)
    avg = lax.add(lax.slice_in_dim(y, 1, n, 1, ax), lax.slice_in_dim(y, 0, n - 1, 1, ax))
    avg = lax.mul(avg, lax.full_like(avg, 0.5))
    if x is None:
        return multiply(sum_(avg, axis=ax), dx)
    xv = to_inexact(arr(x))
    if aval(xv).ndim == 1:
        d = diff(xv)
        d = lax.broadcast_in_dim(lax.convert_element_type(d, ya.dtype), aval(avg).shape, (ax,))
    else:
        d = diff(xv, axis=ax)
    return sum_(multiply(avg, d), axis=ax)


def unwrap(p, discont=None, axis: int = -1, period=2 * math.pi):
    """p with jumps larger than discont (default period/2) replaced by their period complement."""
    from .elementwise import remainder, where
    from .reductions import cumsum
    x = to_inexact(arr(p))
    xa = aval(x)
    ax = canon_axis(axis, xa.ndim, "unwrap")
    n = xa.shape[ax]
    if n < 2:
        return x
    dd = diff(x, axis=ax)
    if discont is None:
        discont = period / 2
    high = period / 2
    interval_low = -high
    ddmod = lax.add(remainder(lax.sub(dd, _c(dd, interval_low)), period), _c(dd, interval_low))
    ddmod = where(lax.bitwise_and(lax.eq(ddmod, _c(ddmod, interval_low)), lax.gt(dd, _c(dd, 0))), high, ddmod)
    ph = lax.sub(ddmod, dd)
    ph = where(lax.lt(lax.abs(dd), _c(dd, discont)), 0, ph)
    ph = lax.convert_element_type(ph, xa.dtype)
    corr = cumsum(ph, axis=ax)
    head = lax.slice_in_dim(x, 0, 1, 1, ax)
    return lax.concatenate([head, lax.add(lax.slice_in_dim(x, 1, n, 1, ax), corr)], ax)


# -- vector products ----------------------------------------------------------------------------------

def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """The cross product of 2- or 3-vectors along the given axes (2-vectors give the scalar z component)."""
    from .shape_ops import moveaxis
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote("cross", a, b) if aval(arr(a)).shape == aval(arr(b)).shape else (arr(a), arr(b))
    dt = dtypes.result_type(a, b)
    a, b = lax.convert_element_type(a, dt), lax.convert_element_type(b, dt)
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    na, nb = aval(a).shape[-1], aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise error("cross", f"incompatible vector dimensions {na} and {nb} (must be 2 or 3)")

    def comp(v, i):
        return lax.index_in_dim(v, i, aval(v).ndim - 1, keepdims=False)
    a0, a1 = comp(a, 0), comp(a, 1)
    b0, b1 = comp(b, 0), comp(b, 1)
    a2 = comp(a, 2) if na == 3 else None
    b2 = comp(b, 2) if nb == 3 else None
    a0, a1, b0, b1 = broadcast_all("cross", a0, a1, b0, b1)
    shape = aval(a0).shape
    from .elementwise import multiply, subtract
    z = subtract(multiply(a0, b1), multiply(a1, b0))
    if na == 2 and nb == 2:
        return z
    zero = lax.full(shape, 0, dt)
    a2 = zero if a2 is None else a2
    b2 = zero if b2 is None else b2
    cx = subtract(multiply(a1, b2), multiply(a2, b1))
    cy = subtract(multiply(a2, b0), multiply(a0, b2))
    out = lax.stack(broadcast_all("cross", cx, cy, z), aval(broadcast_all("cross", cx, cy, z)[0]).ndim)
    return moveaxis(out, -1, axisc)


def _conj(x):
    return lax.conj(x) if aval(x).dtype.kind == "c" else x


def matvec(x1, x2, /):
    """x1[..., m, n] @ x2[..., n] -> [..., m] (batch dimensions broadcast)."""
    from .products import matmul
    a, b = arr(x1), arr(x2)
    if aval(a).ndim < 2 or aval(b).ndim < 1:
        raise error("matvec", f"needs x1 of rank >= 2 and x2 of rank >= 1, got {aval(a)} and {aval(b)}")
    out = matmul(a, lax.expand_dims(b, (aval(b).ndim,)))
    return lax.squeeze(out, (aval(out).ndim - 1,))


def vecmat(x1, x2, /):
    """conj(x1)[..., n] @ x2[..., n, m] -> [..., m]."""
    from .products import matmul
    a, b = arr(x1), arr(x2)
    if aval(a).ndim < 1 or aval(b).ndim < 2:
        raise error("vecmat", f"needs x1 of rank >= 1 and x2 of rank >= 2, got {aval(a)} and {aval(b)}")
    out = matmul(lax.expand_dims(_conj(a), (aval(a).ndim - 1,)), b)
    return lax.squeeze(out, (aval(out).ndim - 2,))


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """sum(conj(x1) * x2) along axis, after broadcasting."""
    from .elementwise import multiply
    from .reductions import sum as sum_
    a, b = promote("vecdot", x1, x2)
    out = sum_(multiply(_conj(a), b), axis=canon_axis(axis, aval(a).ndim, "vecdot"))
    return out if preferred_element_type is None else lax.convert_element_type(out, preferred_element_type)


def sort_complex(a):
    """a sorted (by real part, then imaginary part) as a complex array."""
    x = arr(a)
    dt = aval(x).dtype
    if dt.kind != "c":
        cdt = np.complex128 if dt == np.float64 or (dt.kind in "iu" and dt.itemsize == 8) else np.complex64
        x = lax.convert_element_type(to_inexact(x), cdt)
    xa = aval(x)
    if xa.ndim == 0:
        return x
    ax = xa.ndim - 1
    re, im = lax.real(x), lax.imag(x)
    _, _, out = lax.sort((re, im, x), ax, is_stable=True, num_keys=2)
    return out


# -- bits ----------------------------------------------------------------------------------------------

def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """Boolean/integer elements (nonzero = 1) packed eight to a uint8 along axis (zero-padded)."""
    x = arr(a)
    if aval(x).dtype.kind not in "iub":
        raise error("packbits", f"needs an integer or bool array, got {aval(x)}")
    if bitorder not in ("big", "little"):
        raise error("packbits", f"bitorder must be 'big' or 'little', got {bitorder!r}")
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    xa = aval(x)
    ax = canon_axis(axis, xa.ndim, "packbits")
    bits = lax.convert_element_type(lax.ne(x, _c(x, 0)), np.uint8)
    n = xa.shape[ax]
    m = -(-n // 8)
    pad = [(0, 0, 0)] * xa.ndim
    pad[ax] = (0, m * 8 - n, 0)
    bits = lax.pad(bits, np.uint8(0), pad)
    shape = list(aval(bits).shape)
    shape[ax:ax + 1] = [m, 8]
    bits = lax.reshape(bits, tuple(shape))
    w = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else [1, 2, 4, 8, 16, 32, 64, 128], np.uint8)
    weights = lax.broadcast_in_dim(Array(w), tuple(shape), (ax + 1,))
    return lax.reduce_sum(lax.mul(bits, weights), (ax + 1,))


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """The bits of uint8 elements as 0/1 uint8 along axis (count keeps or zero-pads to that many)."""
    x = arr(a)
    if aval(x).dtype != np.uint8:
        raise error("unpackbits", f"needs a uint8 array, got {aval(x)}")
    if bitorder not in ("big", "little"):
        raise error("unpackbits", f"bitorder must be 'big' or 'little', got {bitorder!r}")
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    xa = aval(x)
    ax = canon_axis(axis, xa.ndim, "unpackbits")
    shifts = np.array([7, 6, 5, 4, 3, 2, 1, 0] if bitorder == "big" else list(range(8)), np.uint8)
    shape = xa.shape[:ax + 1] + (8,) + xa.shape[ax + 1:]
    xb = lax.broadcast_in_dim(x, shape, tuple(d if d <= ax else d + 1 for d in range(xa.ndim)))
    sb = lax.broadcast_in_dim(Array(shifts), shape, (ax + 1,))
    bits = lax.bitwise_and(lax.shift_right_logical(xb, sb), lax.full(shape, 1, np.uint8))
    out_shape = list(xa.shape)
    out_shape[ax] *= 8
    out = lax.reshape(bits, tuple(out_shape))
    if count is not None:
        count = int(count)
        n = out_shape[ax]
        if count < 0:
            count = n + count
        if count <= n:
            out = lax.slice_in_dim(out, 0, max(count, 0), 1, ax)
        else:
            pad = [(0, 0, 0)] * xa.ndim
            pad[ax] = (0, count - n, 0)
            out = lax.pad(out, np.uint8(0), pad)
    return out


__all__ = ["angle", "bitwise_count", "float_power", "frexp", "ldexp", "modf", "gcd", "lcm", "i0", "logaddexp2",
           "nextafter", "spacing", "iscomplex", "isreal", "iscomplexobj", "isrealobj", "bartlett", "blackman",
           "hamming", "hanning", "kaiser", "interp", "diff", "ediff1d", "gradient", "trapezoid", "unwrap", "cross",
           "matvec", "vecmat", "vecdot", "sort_complex", "packbits", "unpackbits"]
