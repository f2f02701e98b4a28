"""Shape manipulation: reshape, transpose, concatenate/stack/split, tile/repeat, broadcast, pad, flip, roll,
diagonal. Every size and axis is static (as in JAX); the results are slices, reshapes and concatenates."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ._util import (arr, aval, axes_of, broadcast_all, broadcast_to_shape, canon_axis, dtypes, error, lax,
                    shape_tuple)


def reshape(a, shape=None, order: str = "C", *, newshape=None) -> Any:
    """Reshape (one -1 is inferred); only C order."""
    if order != "C":
        raise error("reshape", f"only order='C' is supported, got {order!r}")
    x = arr(a)
    shape = shape_tuple(shape if shape is not None else newshape)
    n = aval(x).size
    if shape.count(-1) > 1:
        raise error("reshape", f"can only infer one dimension, got {shape}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or n % known:
            raise error("reshape", f"cannot reshape {aval(x)} into shape {shape}")
        shape = tuple(n // known if d == -1 else d for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != n:
        raise error("reshape", f"cannot reshape {aval(x)} ({n} elements) into shape {shape}")
    return lax.reshape(x, shape)


def ravel(a, order: str = "C") -> Any:
    x = arr(a)
    return reshape(x, (aval(x).size,), order)


def transpose(a, axes: Sequence[int] | None = None) -> Any:
    x = arr(a)
    nd = aval(x).ndim
    if axes is None:
        return lax.transpose(x, tuple(reversed(range(nd))))
    perm = tuple(canon_axis(p, nd, "transpose") for p in axes)
    if sorted(perm) != list(range(nd)):
        raise error("transpose", f"axes {tuple(axes)} are not a permutation of the dimensions of {aval(x)}")
    return lax.transpose(x, perm)


def permute_dims(a, axes) -> Any:
    return transpose(a, axes)


def matrix_transpose(x) -> Any:
    x = arr(x)
    nd = aval(x).ndim
    if nd < 2:
        raise error("matrix_transpose", f"needs rank >= 2, got {aval(x)}")
    return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def swapaxes(a, axis1: int, axis2: int) -> Any:
    x = arr(a)
    nd = aval(x).ndim
    perm = list(range(nd))
    i, j = canon_axis(axis1, nd, "swapaxes"), canon_axis(axis2, nd, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(x, perm)


def moveaxis(a, source, destination) -> Any:
    x = arr(a)
    nd = aval(x).ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise error("moveaxis", f"source {src} and destination {dst} must have the same number of axes")
    src = tuple(canon_axis(s, nd, "moveaxis") for s in src)
    dst = tuple(canon_axis(d, nd, "moveaxis") for d in dst)
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(x, perm)


def expand_dims(a, axis) -> Any:
    x = arr(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_nd = aval(x).ndim + len(axes)
    dims = axes_of(axes, out_nd, "expand_dims")
    shape = list(aval(x).shape)
    for d in dims:
        shape.insert(d, 1)
    return lax.reshape(x, shape)


def squeeze(a, axis=None) -> Any:
    x = arr(a)
    av = aval(x)
    if axis is None:
        dims = tuple(i for i, s in enumerate(av.shape) if s == 1)
    else:
        dims = axes_of(axis, av.ndim, "squeeze")
        for d in dims:
            if av.shape[d] != 1:
                raise error("squeeze", f"cannot select axis {d} of {av}: its size is not 1")
    return lax.reshape(x, tuple(s for i, s in enumerate(av.shape) if i not in dims))


def atleast_1d(*arys):
    out = [reshape(x, (1,)) if aval(arr(x)).ndim == 0 else arr(x) for x in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for x in arys:
        x = arr(x)
        nd = aval(x).ndim
        out.append(lax.reshape(x, (1,) * (2 - nd) + aval(x).shape) if nd < 2 else x)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    out = []
    for x in arys:
        x = arr(x)
        s = aval(x).shape
        new = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s)
        out.append(lax.reshape(x, new))
    return out[0] if len(out) == 1 else out


# -- joining and splitting --------------------------------------------------------------------------------

def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype=None) -> Any:
    """Join along an existing axis (axis=None flattens first); dtypes promote like numpy's binary ops."""
    xs = [arr(x) for x in arrays]
    if not xs:
        raise error("concatenate", "needs at least one array")
    if axis is None:
        xs = [ravel(x) for x in xs]
        axis = 0
    xs = [x for x in _promote_all("concatenate", xs)]
    if dtype is not None:
        xs = [lax.convert_element_type(x, dtype) for x in xs]
    nds = {aval(x).ndim for x in xs}
    if len(nds) != 1 or 0 in nds:
        raise error("concatenate", "arrays must have the same rank >= 1, got " + ", ".join(str(aval(x)) for x in xs))
    nd = nds.pop()
    ax = canon_axis(axis, nd, "concatenate")
    ref = aval(xs[0]).shape
    for x in xs[1:]:
        s = aval(x).shape
        if any(s[i] != ref[i] for i in range(nd) if i != ax):
            raise error("concatenate", f"all dimensions except axis {ax} must match, got "
                        + ", ".join(str(aval(x)) for x in xs))
    if len(xs) == 1:
        return xs[0]
    return lax.concatenate(xs, ax)


concat = concatenate


def _promote_all(name: str, xs: list[Any]) -> list[Any]:
    """Convert every operand to the common promoted dtype (shapes unchanged)."""
    target = dtypes.result_type(*xs)
    return [x if aval(x).dtype == target else lax.convert_element_type(x, target) for x in xs]


def stack(arrays: Sequence[Any], axis: int = 0, dtype=None) -> Any:
    xs = [arr(x) for x in arrays]
    if not xs:
        raise error("stack", "needs at least one array")
    shapes = {aval(x).shape for x in xs}
    if len(shapes) != 1:
        raise error("stack", "all input arrays must have the same shape, got " + ", ".join(str(aval(x)) for x in xs))
    ax = canon_axis(axis, aval(xs[0]).ndim + 1, "stack")
    return concatenate([expand_dims(x, ax) for x in xs], ax, dtype)


def hstack(tup: Sequence[Any], dtype=None) -> Any:
    xs = atleast_1d(*tup)
    xs = xs if isinstance(xs, list) else [xs]
    return concatenate(xs, 0 if aval(xs[0]).ndim == 1 else 1, dtype)


def vstack(tup: Sequence[Any], dtype=None) -> Any:
    xs = atleast_2d(*tup)
    return concatenate(xs if isinstance(xs, list) else [xs], 0, dtype)


row_stack = vstack


def dstack(tup: Sequence[Any], dtype=None) -> Any:
    xs = atleast_3d(*tup)
    return concatenate(xs if isinstance(xs, list) else [xs], 2, dtype)


def column_stack(tup: Sequence[Any]) -> Any:
    cols = []
    for x in tup:
        x = arr(x)
        cols.append(lax.reshape(x, (aval(x).shape[0], 1)) if aval(x).ndim < 2 else x)
    return concatenate(cols, 1)


def _split(name: str, a, indices_or_sections, axis: int, exact: bool) -> list[Any]:
    x = arr(a)
    av = aval(x)
    ax = canon_axis(axis, av.ndim, name)
    n = av.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise error(name, f"number of sections must be positive, got {k}")
        if exact and n % k:
            raise error(name, f"array split does not result in an equal division: {n} into {k} sections")
        base, extra = divmod(n, k)
        bounds = np.cumsum([0] + [base + (1 if i < extra else 0) for i in range(k)]).tolist()
    else:
        cuts = [int(i) for i in (np.asarray(indices_or_sections) if not isinstance(indices_or_sections, list)
                                  else indices_or_sections)]
        bounds = [0] + [min(max(c if c >= 0 else c + n, 0), n) for c in cuts] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        hi = max(lo, hi)
        start = [0] * av.ndim
        limit = list(av.shape)
        start[ax], limit[ax] = lo, hi
        out.append(lax.slice(x, start, limit))
    return out


def split(ary, indices_or_sections, axis: int = 0) -> list[Any]:
    return _split("split", ary, indices_or_sections, axis, exact=True)


def array_split(ary, indices_or_sections, axis: int = 0) -> list[Any]:
    return _split("array_split", ary, indices_or_sections, axis, exact=False)


def hsplit(ary, indices_or_sections) -> list[Any]:
    return split(ary, indices_or_sections, 0 if aval(arr(ary)).ndim == 1 else 1)


def vsplit(ary, indices_or_sections) -> list[Any]:
    return split(ary, indices_or_sections, 0)


# -- repetition and broadcasting ---------------------------------------------------------------------------

def broadcast_to(array, shape) -> Any:
    x = arr(array)
    shape = shape_tuple(shape)
    av = aval(x)
    try:
        ok = np.broadcast_shapes(av.shape, shape) == shape and av.ndim <= len(shape)
    except ValueError:
        ok = False
    if not ok:
        raise error("broadcast_to", f"cannot broadcast {av} to shape {shape}")
    return broadcast_to_shape(x, shape)


def broadcast_arrays(*args) -> list[Any]:
    return broadcast_all("broadcast_arrays", *args)


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*(shape_tuple(s) for s in shapes)))
    except ValueError:
        raise error("broadcast_shapes", f"shapes {shapes} do not broadcast") from None


def tile(A, reps) -> Any:
    x = arr(A)
    reps = shape_tuple(reps)
    av = aval(x)
    nd = max(av.ndim, len(reps))
    shape = (1,) * (nd - av.ndim) + av.shape
    reps = (1,) * (nd - len(reps)) + reps
    x = lax.reshape(x, shape)
    # broadcast to (r0, s0, r1, s1, ...) then merge each pair
    big = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    x = lax.broadcast_in_dim(x, big, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None) -> Any:
    """Repeat elements; `repeats` is a static int or a static sequence (one count per element)."""
    x = arr(a)
    if axis is None:
        x = ravel(x)
        axis = 0
    av = aval(x)
    ax = canon_axis(axis, av.ndim, "repeat")
    if hasattr(repeats, "aval") and not hasattr(repeats, "_value"):
        raise error("repeat", "repeats must be static under jit (a Python int or sequence)")
    counts = np.asarray(repeats).astype(np.int64)
    n = av.shape[ax]
    if counts.ndim == 0:
        r = int(counts)
        expanded = lax.broadcast_in_dim(x, av.shape[:ax + 1] + (r,) + av.shape[ax + 1:],
                                        tuple(range(ax + 1)) + tuple(range(ax + 2, av.ndim + 1)))
        shape = list(av.shape)
        shape[ax] = n * r
        return lax.reshape(expanded, shape)
    if counts.shape != (n,):
        raise error("repeat", f"repeats of shape {counts.shape} do not match axis {ax} of {av}")
    from .indexing_ops import take
    idx = np.repeat(np.arange(n, dtype=np.int32), counts)
    return take(x, idx, axis=ax)


# -- padding, flipping, rolling ---------------------------------------------------------------------------

def _pad_widths(pad_width, nd: int) -> list[tuple[int, int]]:
    pw = np.asarray(pad_width, dtype=np.int64)
    if pw.ndim == 0:
        pw = np.full((nd, 2), int(pw))
    elif pw.ndim == 1:
        pw = np.broadcast_to(pw if pw.size == 2 else np.repeat(pw, 2), (nd, 2))
    elif pw.shape == (1, 2):
        pw = np.broadcast_to(pw, (nd, 2))
    if pw.shape != (nd, 2):
        raise error("pad", f"pad_width {pad_width!r} does not match an array of rank {nd}")
    if (pw < 0).any():
        raise error("pad", f"pad_width must be non-negative, got {pad_width!r}")
    return [(int(lo), int(hi)) for lo, hi in pw]


def pad(array, pad_width, mode: str = "constant", constant_values=0) -> Any:
    """Modes 'constant', 'edge', 'reflect', 'symmetric', 'wrap' with static pad widths."""
    x = arr(array)
    av = aval(x)
    widths = _pad_widths(pad_width, av.ndim)
    if mode == "constant":
        cv = np.asarray(constant_values)
        if cv.ndim == 0:
            return lax.pad(x, arr(constant_values, av.dtype) if not hasattr(constant_values, "aval")
                           else constant_values, [(lo, hi, 0) for lo, hi in widths])
        cvals = _pad_widths(cv, av.ndim)
        for d, ((lo, hi), (clo, chi)) in enumerate(zip(widths, cvals)):
            cfg = [(0, 0, 0)] * av.ndim
            cfg[d] = (lo, 0, 0)
            x = lax.pad(x, np.asarray(clo, av.dtype), cfg)
            cfg[d] = (0, hi, 0)
            x = lax.pad(x, np.asarray(chi, av.dtype), cfg)
        return x
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise error("pad", f"unsupported mode {mode!r} (use constant, edge, reflect, symmetric or wrap)")
    for d, (lo, hi) in enumerate(widths):
        if lo == 0 and hi == 0:
            continue
        n = aval(x).shape[d]
        if n == 0:
            raise error("pad", f"cannot pad an empty axis {d} with mode {mode!r}")
        idx = np.array([_pad_source(i, n, mode) for i in range(-lo, n + hi)], np.int32)
        from .indexing_ops import take
        x = take(x, idx, axis=d)
    return x


def _pad_source(i: int, n: int, mode: str) -> int:
    """The source index along an axis of size n for output position i (i in [-lo, n + hi))."""
    if mode == "edge":
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    if mode == "reflect":
        if n == 1:
            return 0
        period = 2 * (n - 1)
        j = i % period
        return j if j < n else period - j
    period = 2 * n       # symmetric
    j = i % period
    return j if j < n else period - 1 - j


def flip(m, axis=None) -> Any:
    x = arr(m)
    dims = axes_of(axis, aval(x).ndim, "flip")
    return lax.rev(x, dims) if dims else x


def fliplr(m) -> Any:
    return flip(m, 1)


def flipud(m) -> Any:
    return flip(m, 0)


def roll(a, shift, axis=None) -> Any:
    """Roll with static shifts (wrapping around); axis None rolls the flattened array."""
    x = arr(a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), aval(x).shape)
    shifts = (shift,) if isinstance(shift, (int, np.integer)) else tuple(shift)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise error("roll", f"shift {shift} and axis {axis} must have the same length")
    for s, ax in zip(shifts, axes):
        if hasattr(s, "aval") and not hasattr(s, "_value"):
            raise error("roll", "a traced shift is not supported; pass a static int")
        d = canon_axis(ax, aval(x).ndim, "roll")
        n = aval(x).shape[d]
        if n == 0:
            continue
        k = int(s) % n
        if k:
            parts = split(x, [n - k], d)
            x = lax.concatenate([parts[1], parts[0]], d)
    return x


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    x = arr(m)
    k %= 4
    a0, a1 = axes
    if k == 1:
        return swapaxes(flip(x, a1), a0, a1)
    if k == 2:
        return flip(x, (a0, a1))
    if k == 3:
        return flip(swapaxes(x, a0, a1), a1)
    return x


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The diagonal `offset` of the (axis1, axis2) planes, as the last axis."""
    x = arr(a)
    av = aval(x)
    i, j = canon_axis(axis1, av.ndim, "diagonal"), canon_axis(axis2, av.ndim, "diagonal")
    if i == j:
        raise error("diagonal", "axis1 and axis2 must differ")
    rest = [d for d in range(av.ndim) if d not in (i, j)]
    x = lax.transpose(x, rest + [i, j])
    n, m = av.shape[i], av.shape[j]
    k = int(offset)
    length = max(0, min(n, m - k) if k >= 0 else min(n + k, m))
    batch = tuple(av.shape[d] for d in rest)
    if length == 0:
        return lax.full(batch + (0,), 0, av.dtype)
    rows = np.arange(length) + max(0, -k)
    cols = np.arange(length) + max(0, k)
    from .indexing_ops import take
    flat = lax.reshape(x, batch + (n * m,))
    return take(flat, (rows * m + cols).astype(np.int32), axis=len(batch))


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None) -> Any:
    from .reductions import sum as _sum
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def append(arr_, values, axis: int | None = None) -> Any:
    if axis is None:
        return concatenate([ravel(arr_), ravel(values)], 0)
    return concatenate([arr_, values], axis)

