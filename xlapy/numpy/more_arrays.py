"""More of jax.numpy's array functions: apply_along_axis / apply_over_axes (over vmap), block, the index
helpers (r_, c_, s_, index_exp, mgrid, ogrid, ix_), choose, compress, delete, insert, diagflat,
diag_indices_from, tril/triu_indices_from, mask_indices, dsplit, fill_diagonal, place, put, put_along_axis,
piecewise, resize, rollaxis, unstack, geomspace, fromfunction / frombuffer / fromstring, array_equiv,
array_repr / array_str, can_cast, isdtype, iterable, einsum_path, ufunc / frompyfunc, load / save / savez,
the print options and ComplexWarning.

JAX's rules: arrays are immutable, so fill_diagonal, place, put and put_along_axis need inplace=False and
return the new array; compress without size= has a data-dependent shape (ConcretizationError under jit);
delete / insert take static positions; fromfile and fromiter are not provided (impure), as in JAX."""
from __future__ import annotations

import builtins
import contextlib
from typing import Any, Callable, Sequence

import numpy as np

from ._util import (Array, arr, arr as _as, aval, axes_of, broadcast_all, canon_axis, concretization_error, dtypes,
                    error, is_traced, lax, to_inexact)

ComplexWarning = np.exceptions.ComplexWarning


def _vmap():
    from ..frontend.transforms import vmap
    return vmap


# -- functional programming -----------------------------------------------------------------------------

def apply_along_axis(func1d: Callable, axis: int, arr, *args, **kwargs):
    """func1d applied to the 1-D slices along axis (vmapped over the other axes); its output dimensions
    take the place of axis."""
    vmap = _vmap()
    x = _as(arr)
    nd = aval(x).ndim
    axis = canon_axis(axis, nd, "apply_along_axis")
    func = lambda a: func1d(a, *args, **kwargs)
    for i in range(1, nd - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(x)


def apply_over_axes(func: Callable, a, axes):
    x = arr(a)
    for axis in ([axes] if isinstance(axes, (int, np.integer)) else axes):
        b = func(x, axis)
        if aval(b).ndim == aval(x).ndim:
            x = b
        elif aval(b).ndim == aval(x).ndim - 1:
            x = lax.expand_dims(b, (canon_axis(axis, aval(x).ndim, "apply_over_axes"),))
        else:
            raise error("apply_over_axes", "function is not returning an array of the correct shape")
    return x


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[i](x) (or the constant funclist[i]) where condlist[i]; a last extra function or constant
    applies where no condition holds (later conditions win, as in numpy)."""
    from .elementwise import where
    x = arr(x)
    if hasattr(condlist, "aval") or isinstance(condlist, np.ndarray):
        conds = [condlist] if aval(arr(condlist)).ndim == aval(x).ndim and aval(x).ndim > 0 and \
            np.ndim(condlist) == aval(x).ndim else list(condlist)
    elif isinstance(condlist, (bool, np.bool_)):
        conds = [condlist]
    else:
        conds = list(condlist)
    funcs = list(funclist)
    nc, nf = len(conds), len(funcs)
    if nf not in (nc, nc + 1):
        raise error("piecewise", f"with {nc} condition(s), funclist must have {nc} or {nc + 1} entries, got {nf}")
    dt = aval(x).dtype

    def value(f):
        v = f(x, *args, **kw) if callable(f) else f
        return lax.convert_element_type(arr(v), dt) if hasattr(v, "aval") or np.ndim(v) else v
    out = lax.full(aval(x).shape, 0, dt)
    conds_b = [lax.broadcast_in_dim(arr(c), aval(x).shape, tuple(range(aval(x).ndim - aval(arr(c)).ndim,
                                                                       aval(x).ndim)))
               if aval(arr(c)).shape != aval(x).shape else arr(c) for c in conds]
    conds_b = [lax.ne(c, lax.full_like(c, 0)) if aval(c).dtype != np.bool_ else c for c in conds_b]
    if nf == nc + 1:
        none = lax.full(aval(x).shape, True, np.bool_)
        for c in conds_b:
            none = lax.bitwise_and(none, lax.bitwise_not(c))
        out = where(none, value(funcs[-1]), out)
    for c, f in zip(conds_b, funcs):
        out = where(c, value(f), out)
    return lax.convert_element_type(arr(out), dt)


# -- assembling and indexing ------------------------------------------------------------------------------

def block(arrays):
    """Assembles an array from nested lists of blocks (the innermost lists join along the last axis)."""
    from .shape_ops import concatenate

    def depth(a):
        if isinstance(a, list):
            if not a:
                raise error("block", "lists cannot be empty")
            ds = {depth(b) for b in a}
            if len(ds) != 1:
                raise error("block", "list depths are mismatched")
            return 1 + ds.pop()
        if isinstance(a, tuple):
            raise error("block", "arrays is a tuple; only lists can be used to arrange blocks")
        return 0
    d = depth(arrays)

    def leaves(a):
        return [x for b in a for x in leaves(b)] if isinstance(a, list) else [arr(a)]
    nd = builtins.max([d] + [aval(x).ndim for x in leaves(arrays)])

    def rec(a, level):
        if not isinstance(a, list):
            x = arr(a)
            return lax.reshape(x, (1,) * (nd - aval(x).ndim) + aval(x).shape)
        parts = [rec(b, level + 1) for b in a]
        return concatenate(parts, axis=-(d - level))
    return rec(arrays, 0)


class _IndexExpression:
    def __init__(self, maketuple: bool):
        self.maketuple = maketuple

    def __getitem__(self, item):
        if self.maketuple and not isinstance(item, tuple):
            return (item,)
        return item


s_ = _IndexExpression(False)
index_exp = _IndexExpression(True)


class _Grid:
    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __getitem__(self, key):
        out = (np.ogrid if self.sparse else np.mgrid)[key]
        cast = lambda v: Array(np.asarray(v).astype(dtypes.canonicalize(np.asarray(v).dtype)))
        if isinstance(out, (list, tuple)):
            return [cast(v) for v in out] if self.sparse else cast(np.stack(out))
        return cast(out)


mgrid = _Grid(False)
ogrid = _Grid(True)


class _AxisConcat:
    """r_ / c_: slices become ranges (a complex step is a number of points), arrays are joined along an
    axis; a leading string 'axis[,ndmin[,trans1d]]' (or 'r' / 'c') sets how."""

    def __init__(self, axis: int, ndmin: int, trans1d: int):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        from .shape_ops import concatenate
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        matrix = None
        parts = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                if i != 0:
                    raise error("r_", "a directive string must come first")
                if item in ("r", "c"):
                    matrix = item
                    ndmin = 2
                    continue
                vals = [int(v) for v in item.split(",")]
                axis = vals[0]
                if len(vals) > 1:
                    ndmin = vals[1]
                if len(vals) > 2:
                    trans1d = vals[2]
                continue
            if isinstance(item, slice):
                v = np.r_[item]
                x = Array(v.astype(dtypes.canonicalize(v.dtype)))
            else:
                x = arr(item)
            if aval(x).ndim < ndmin:
                nd0 = aval(x).ndim
                shape = (1,) * (ndmin - nd0) + aval(x).shape
                x = lax.reshape(x, shape)
                if trans1d != -1 and nd0 > 0:
                    k = trans1d if trans1d >= 0 else ndmin + trans1d
                    perm = list(range(ndmin - nd0, ndmin))
                    order = list(range(ndmin - nd0))
                    perm_full = order[:k] + perm + order[k:]
                    perm_full = perm_full[:ndmin]
                    x = lax.transpose(x, [perm_full.index(j) for j in range(ndmin)]) \
                        if sorted(perm_full) == list(range(ndmin)) else x
            parts.append(x)
        if not parts:
            return Array(np.zeros(0, dtypes.default_float()))
        parts = [lax.reshape(p, (1,)) if aval(p).ndim == 0 else p for p in parts]
        out = concatenate(parts, axis=axis)
        if matrix == "c":
            out = lax.transpose(out, (1, 0))
        return out

    def __len__(self):
        return 0


r_ = _AxisConcat(0, 1, -1)
c_ = _AxisConcat(-1, 2, 0)


def ix_(*args):
    """An open mesh from 1-D index sequences (booleans become their nonzero indices, eagerly)."""
    out = []
    n = len(args)
    for k, a in enumerate(args):
        x = arr(a)
        if aval(x).ndim != 1:
            raise error("ix_", f"arguments must be 1-D, got {aval(x)}")
        if aval(x).dtype == np.bool_:
            if is_traced(x):
                raise concretization_error("ix_", "ix_() of a boolean mask")
            x = Array(np.nonzero(np.asarray(x))[0].astype(dtypes.default_int()))
        shape = [1] * n
        shape[k] = aval(x).shape[0]
        out.append(lax.reshape(x, tuple(shape)))
    return tuple(out)


def choose(a, choices, out=None, mode: str = "raise"):
    """choices[a] elementwise (all broadcast together); mode 'raise' (checked eagerly), 'wrap' or 'clip'."""
    idx = arr(a)
    if aval(idx).dtype.kind not in "iu":
        raise error("choose", f"the index array must be integer, got {aval(idx)}")
    cs = [arr(c) for c in choices]
    n = len(cs)
    if n == 0:
        raise error("choose", "choices cannot be empty")
    if mode == "raise":
        if not is_traced(idx):
            v = np.asarray(idx)
            if v.size and (v.min() < 0 or v.max() >= n):
                raise error("choose", f"invalid entry in choice array (entries must be in [0, {n}))")
    elif mode == "wrap":
        idx = lax.rem(lax.add(lax.rem(idx, lax.full_like(idx, n)), lax.full_like(idx, n)), lax.full_like(idx, n))
    elif mode == "clip":
        idx = lax.clamp(np.asarray(0, aval(idx).dtype), idx, np.asarray(n - 1, aval(idx).dtype))
    else:
        raise error("choose", f"mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    dt = dtypes.result_type(*cs)
    cs = [lax.convert_element_type(c, dt) for c in cs]
    allb = broadcast_all("choose", idx, *cs)
    idx, cs = allb[0], allb[1:]
    which = lax.convert_element_type(idx, np.int32)
    return lax.select_n(which, *cs)


def compress(condition, a, axis: int | None = None, *, size: int | None = None, fill_value=0, out=None):
    """The slices of a along axis where condition holds (a flattened when axis is None)."""
    from .indexing_ops import nonzero, take
    c = arr(condition)
    x = arr(a)
    if aval(c).ndim != 1:
        raise error("compress", f"condition must be 1-D, got {aval(c)}")
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    ax = canon_axis(axis, aval(x).ndim, "compress")
    n = aval(x).shape[ax]
    m = aval(c).shape[0]
    if m > n:
        c = lax.slice(c, (0,), (n,))
    elif m < n:
        x = lax.slice_in_dim(x, 0, m, 1, ax)
    if size is None:
        if is_traced(c):
            raise concretization_error("compress", "compress()")
        keep = np.flatnonzero(np.asarray(c)).astype(np.int32)
        return take(x, Array(keep), axis=ax)
    idx = nonzero(c, size=int(size), fill_value=aval(x).shape[ax])[0]
    return take(x, idx, axis=ax, mode="fill", fill_value=fill_value)


def _static_positions(name: str, obj, n: int):
    if is_traced(obj):
        raise concretization_error(name, f"{name}() with traced positions")
    if isinstance(obj, slice):
        return obj
    return np.asarray(obj) if not hasattr(obj, "aval") else np.asarray(obj)


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """arr without the entries at obj (an int, slice or static index array) along axis."""
    from .indexing_ops import take
    x = _as(arr)
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    ax = canon_axis(axis, aval(x).ndim, "delete")
    n = aval(x).shape[ax]
    pos = _static_positions("delete", obj, n)
    if not isinstance(pos, slice) and pos.dtype == np.bool_:
        keep = np.flatnonzero(~pos)
    else:
        try:
            keep = np.delete(np.arange(n), pos)
        except IndexError as e:
            raise error("delete", str(e)) from None
    return take(x, Array(keep.astype(np.int32)), axis=ax)


def insert(arr, obj, values, axis: int | None = None):
    """arr with values inserted before the positions obj (int, slice or static index array) along axis."""
    from .indexing_ops import take
    from .shape_ops import broadcast_to, moveaxis
    x = _as(arr)
    if axis is None:
        x = lax.reshape(x, (aval(x).size,))
        axis = 0
    ax = canon_axis(axis, aval(x).ndim, "insert")
    n = aval(x).shape[ax]
    pos = _static_positions("insert", obj, n)
    v = lax.convert_element_type(_as(values), aval(x).dtype)
    nd = aval(x).ndim
    if not isinstance(pos, slice) and pos.ndim == 0:
        if aval(v).ndim < nd:
            v = lax.reshape(v, (1,) * (nd - aval(v).ndim) + aval(v).shape)
        v = moveaxis(v, 0, ax)
        k = aval(v).shape[ax]
    else:
        k = len(np.arange(n + 1)[pos]) if isinstance(pos, slice) else pos.size
    shape = list(aval(x).shape)
    shape[ax] = k
    v = broadcast_to(v, tuple(shape))
    try:
        marks = np.insert(np.arange(n), pos, -1 - np.arange(k))
    except IndexError as e:
        raise error("insert", str(e)) from None
    perm = np.where(marks >= 0, marks, n + (-1 - marks)).astype(np.int32)
    both = lax.concatenate([x, v], ax)
    return take(both, Array(perm), axis=ax)


def diagflat(v, k: int = 0):
    from .creation import diag
    x = arr(v)
    return diag(lax.reshape(x, (aval(x).size,)), k)


def diag_indices_from(arr):
    from .indexing_ops import diag_indices
    x = _as(arr)
    s = aval(x).shape
    if len(s) < 2 or len(set(s)) != 1:
        raise error("diag_indices_from", f"input must be an array with all dimensions equal and at least 2-D, "
                                         f"got {aval(x)}")
    return diag_indices(s[0], len(s))


def _indices_from(name: str, fn, arr, k):
    x = _as(arr)
    if aval(x).ndim != 2:
        raise error(name, f"input array must be 2-D, got {aval(x)}")
    return fn(aval(x).shape[0], k=k, m=aval(x).shape[1])


def tril_indices_from(arr, k: int = 0):
    from .indexing_ops import tril_indices
    return _indices_from("tril_indices_from", tril_indices, arr, k)


def triu_indices_from(arr, k: int = 0):
    from .indexing_ops import triu_indices
    return _indices_from("triu_indices_from", triu_indices, arr, k)


def mask_indices(n: int, mask_func: Callable, k: int = 0, *, size: int | None = None):
    """The (row, col) indices where mask_func(ones((n, n)), k) is nonzero."""
    from .indexing_ops import nonzero
    m = mask_func(Array(np.ones((int(n), int(n)), dtypes.default_int())), k)
    return nonzero(m, size=size)


def dsplit(ary, indices_or_sections):
    from .shape_ops import split
    x = arr(ary)
    if aval(x).ndim < 3:
        raise error("dsplit", f"only works on arrays of 3 or more dimensions, got {aval(x)}")
    return split(x, indices_or_sections, axis=2)


def unstack(x, /, *, axis: int = 0):
    x = arr(x)
    if aval(x).ndim == 0:
        raise error("unstack", "input must be at least 1-D")
    return lax.unstack(x, canon_axis(axis, aval(x).ndim, "unstack"))


def rollaxis(a, axis: int, start: int = 0):
    from .shape_ops import moveaxis
    x = arr(a)
    nd = aval(x).ndim
    axis = canon_axis(axis, nd, "rollaxis")
    if not -nd <= start <= nd:
        raise error("rollaxis", f"start={start} must satisfy {-nd} <= start <= {nd}")
    if start < 0:
        start += nd
    if start > axis:
        start -= 1
    return moveaxis(x, axis, start)


def resize(a, new_shape):
    """a flattened, repeated to fill new_shape and reshaped (numpy.resize)."""
    x = arr(a)
    shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else tuple(int(s) for s in new_shape)
    if any(s < 0 for s in shape):
        raise error("resize", f"all elements of new_shape must be non-negative, got {shape}")
    total = int(np.prod(shape))
    flat = lax.reshape(x, (aval(x).size,))
    n = aval(flat).shape[0]
    if n == 0 or total == 0:
        return lax.full(shape, 0, aval(x).dtype)
    reps = -(-total // n)
    tiled = lax.reshape(lax.broadcast(flat, (reps,)), (reps * n,))
    return lax.reshape(lax.slice(tiled, (0,), (total,)), shape)


# -- functional updates ---------------------------------------------------------------------------------

def _no_inplace(name: str, inplace: bool):
    if inplace:
        raise error(name, "xlapy arrays are immutable: pass inplace=False and use the returned array")


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    _no_inplace("fill_diagonal", inplace)
    x = arr(a)
    xa = aval(x)
    if xa.ndim < 2:
        raise error("fill_diagonal", f"array must be at least 2-d, got {xa}")
    if xa.ndim > 2 and len(set(xa.shape)) != 1:
        raise error("fill_diagonal", f"all dimensions of a >2-d input must be of equal length, got {xa}")
    n = builtins.min(xa.shape)
    flat = lax.reshape(x, (xa.size,))
    if xa.ndim == 2:
        step = xa.shape[1] + 1
        end = xa.size if wrap else xa.shape[1] * xa.shape[1]
        pos = np.arange(0, builtins.min(end, xa.size), step)
    else:
        step = int(np.sum(np.cumprod((1,) + xa.shape[:-1])))
        pos = np.arange(n) * step
    v = lax.convert_element_type(arr(val), xa.dtype)
    vf = lax.reshape(v, (aval(v).size,))
    m = pos.size
    if aval(vf).shape[0] == 0:
        return x
    vals = resize(vf, (m,))
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    out = lax.scatter(flat, Array(pos.astype(np.int32).reshape(m, 1)), vals, dn)
    return lax.reshape(out, xa.shape)


def place(arr, mask, vals, *, inplace: bool = True):
    """arr with the entries where mask holds replaced by vals, in order (vals repeats if shorter)."""
    _no_inplace("place", inplace)
    from .indexing_ops import take
    x = _as(arr)
    xa = aval(x)
    m = lax.reshape(lax.ne(_as(mask), lax.full_like(_as(mask), 0)) if aval(_as(mask)).dtype != np.bool_
                    else _as(mask), (xa.size,))
    v = lax.convert_element_type(_as(vals), xa.dtype)
    vf = lax.reshape(v, (aval(v).size,))
    k = aval(vf).shape[0]
    if k == 0:
        return x
    pos = lax.sub(lax.cumsum(lax.convert_element_type(m, np.int32), 0), lax.full((xa.size,), 1, np.int32))
    pos = lax.rem(lax.max(pos, lax.full_like(pos, 0)), lax.full_like(pos, k))
    picked = take(vf, pos)
    flat = lax.reshape(x, (xa.size,))
    return lax.reshape(lax.select(m, picked, flat), xa.shape)


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """a (flattened positions ind) set to v (repeated to ind's length); mode 'clip' or 'wrap' for positions
    out of bounds, else they are dropped."""
    _no_inplace("put", inplace)
    x = arr(a)
    xa = aval(x)
    i = lax.convert_element_type(lax.reshape(arr(ind), (aval(arr(ind)).size,)), np.int32)
    n = xa.size
    k = aval(i).shape[0]
    vals = resize(lax.convert_element_type(arr(v), xa.dtype), (k,))
    if mode == "clip":
        i = lax.clamp(np.int32(0), i, np.int32(n - 1))
    elif mode == "wrap":
        i = lax.rem(lax.add(lax.rem(i, lax.full_like(i, n)), lax.full_like(i, n)), lax.full_like(i, n))
    elif mode in (None, "fill", "drop"):
        i = lax.select(lax.lt(i, lax.full_like(i, 0)), lax.add(i, lax.full_like(i, n)), i)
    else:
        raise error("put", f"mode must be None, 'fill', 'clip' or 'wrap' ('raise' is not supported), got {mode!r}")
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    out = lax.scatter(lax.reshape(x, (n,)), lax.reshape(i, (k, 1)), vals, dn)
    return lax.reshape(out, xa.shape)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *, mode=None):
    """arr with values written at indices along axis (the functional counterpart of take_along_axis)."""
    _no_inplace("put_along_axis", inplace)
    x = _as(arr)
    idx = _as(indices)
    if axis is None:
        x0 = x
        x = lax.reshape(x, (aval(x).size,))
        idx = lax.reshape(idx, (aval(idx).size,))
        return lax.reshape(put_along_axis(x, idx, values, 0, inplace=False, mode=mode), aval(x0).shape)
    xa = aval(x)
    ax = canon_axis(axis, xa.ndim, "put_along_axis")
    if aval(idx).ndim != xa.ndim:
        raise error("put_along_axis", f"indices {aval(idx)} must have the rank of arr {xa}")
    shape = tuple(np.broadcast_shapes(tuple(1 if d == ax else s for d, s in enumerate(xa.shape)), aval(idx).shape))
    idx = lax.convert_element_type(idx, np.int32)
    idx = lax.broadcast_in_dim(idx, shape, tuple(range(xa.ndim))) if aval(idx).shape != shape else idx
    n = xa.shape[ax]
    idx = lax.select(lax.lt(idx, lax.full_like(idx, 0)), lax.add(idx, lax.full_like(idx, n)), idx)
    cols = []
    for d in range(xa.ndim):
        c = idx if d == ax else lax.broadcasted_iota(np.int32, shape, d)
        cols.append(lax.reshape(c, shape + (1,)))
    full_idx = lax.concatenate(cols, xa.ndim)
    v = lax.convert_element_type(_as(values), xa.dtype)
    v = lax.broadcast_in_dim(v, shape, tuple(range(len(shape) - aval(v).ndim, len(shape)))) \
        if aval(v).shape != shape else v
    dims = tuple(range(xa.ndim))
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=dims,
                                     scatter_dims_to_operand_dims=dims)
    return lax.scatter(x, full_idx, v, dn)


# -- creation ----------------------------------------------------------------------------------------

def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """num numbers spaced evenly on a log scale from start to stop (same sign; the ends are exact)."""
    from .creation import logspace
    from .elementwise import log10, sign, multiply, abs as abs_
    s, e = to_inexact(arr(start)), to_inexact(arr(stop))
    if not is_traced(s, e):
        if np.any(np.asarray(s) == 0) or np.any(np.asarray(e) == 0):
            raise error("geomspace", "geometric sequence cannot include zero")
    sg = sign(s)
    out = logspace(log10(abs_(s)), log10(abs_(e)), num, endpoint=endpoint, base=10.0, dtype=dtype, axis=axis)
    out = multiply(out, sg if aval(arr(sg)).ndim == 0 else lax.expand_dims(sg, (canon_axis(axis, aval(out).ndim,
                                                                                          "geomspace"),)))
    num = int(num)
    if num > 0 and aval(s).ndim == 0 and aval(e).ndim == 0 and aval(out).ndim == 1:
        first = lax.reshape(lax.convert_element_type(s, aval(out).dtype), (1,))
        pieces = [first, lax.slice(out, (1,), (num - 1 if endpoint and num > 1 else num,))]
        if endpoint and num > 1:
            pieces.append(lax.reshape(lax.convert_element_type(e, aval(out).dtype), (1,)))
        out = lax.concatenate(pieces, 0)
    return out


def fromfunction(function: Callable, shape, *, dtype=float, **kwargs):
    """function(*indices) over a grid of the shape's indices (dtype float by default)."""
    from .indexing_ops import indices
    dt = dtypes.canonicalize(np.dtype(dtype))
    grids = indices(tuple(int(s) for s in shape), dtype=dt)
    return function(*[lax.index_in_dim(grids, i, 0, keepdims=False) for i in range(len(shape))], **kwargs)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    v = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
    return Array(v.astype(dtypes.canonicalize(v.dtype)))


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str):
    v = np.fromstring(string, dtype=dtype, count=count, sep=sep)
    return Array(v.astype(dtypes.canonicalize(v.dtype)))


def fromfile(*args, **kwargs):
    raise error("fromfile", "not implemented, because reading a file is impure (unsafe under jit and other "
                            "transformations); use xlapy.numpy.asarray(numpy.fromfile(...)) instead")


def fromiter(*args, **kwargs):
    raise error("fromiter", "not implemented, because consuming an iterator is impure (unsafe under jit and "
                            "other transformations); use xlapy.numpy.asarray(numpy.fromiter(...)) instead")


def load(file, *args, **kwargs):
    """numpy.load, with arrays (not archives) as xlapy Arrays."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype != object:
        return Array(out.astype(dtypes.canonicalize(out.dtype)))
    return out


def save(file, arr, allow_pickle: bool = True):
    np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle: bool = True, **kwds):
    np.savez(file, *(np.asarray(a) for a in args), **{k: np.asarray(v) for k, v in kwds.items()})


# -- predicates and printing -------------------------------------------------------------------------

def array_equiv(a1, a2) -> Any:
    """True when the arrays broadcast together and are equal elementwise."""
    from .elementwise import equal
    from .reductions import all as all_
    x, y = arr(a1), arr(a2)
    try:
        np.broadcast_shapes(aval(x).shape, aval(y).shape)
    except ValueError:
        return Array(np.asarray(False))
    return all_(equal(x, y))


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    return np.array_repr(np.asarray(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions


def can_cast(from_, to, casting: str = "safe") -> bool:
    def as_dtype(d):
        if hasattr(d, "aval"):
            return aval(d).dtype
        if isinstance(d, np.dtype) or (isinstance(d, type) and issubclass(d, np.generic)) or isinstance(d, str):
            return np.dtype(d)
        inner = getattr(d, "dtype", None)
        return np.dtype(inner) if isinstance(inner, np.dtype) else np.dtype(d)
    return bool(np.can_cast(as_dtype(from_), as_dtype(to), casting))


_KINDS = {"bool": lambda d: d == np.bool_,
          "signed integer": lambda d: d.kind == "i",
          "unsigned integer": lambda d: d.kind == "u",
          "integral": lambda d: d.kind in "iu",
          "real floating": lambda d: d.kind == "f" or d == dtypes.bfloat16,
          "complex floating": lambda d: d.kind == "c",
          "numeric": lambda d: d.kind in "iufc" or d == dtypes.bfloat16}


def isdtype(dtype, kind) -> bool:
    """The array API's dtype-kind test ('bool', 'signed integer', 'integral', 'real floating', ...)."""
    d = dtype.dtype if isinstance(getattr(dtype, "dtype", None), np.dtype) else np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise error("isdtype", f"unknown kind {k!r}; expected one of {', '.join(_KINDS)}")
            if _KINDS[k](d):
                return True
        elif d == (k.dtype if isinstance(getattr(k, "dtype", None), np.dtype) else np.dtype(k)):
            return True
    return False


def iterable(y) -> bool:
    return np.iterable(y)


def einsum_path(subscripts, *operands, optimize="greedy"):
    """numpy's contraction path for these operand shapes."""
    shapes = [np.zeros(aval(arr(o)).shape, np.float32) if not isinstance(o, str) else o for o in operands]
    return np.einsum_path(subscripts, *shapes, optimize=optimize)


# -- ufuncs ----------------------------------------------------------------------------------------------

class ufunc:
    """A universal function over a scalar Python function (jax.numpy.ufunc): calls broadcast it elementwise;
    binary ones (nin=2, nout=1) also have reduce, accumulate, outer, at and reduceat."""

    def __init__(self, func: Callable, /, nin: int, nout: int, *, name: str | None = None, nargs=None,
                 identity=None, call=None, reduce=None, accumulate=None, at=None, reduceat=None):
        self._func = func
        self.nin, self.nout = int(nin), int(nout)
        self.nargs = nargs or self.nin
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._call, self._reduce, self._accumulate = call, reduce, accumulate

    def __repr__(self) -> str:
        return f"<xlapy.numpy.ufunc '{self.__name__}'>"

    def __call__(self, *args):
        if len(args) != self.nin:
            raise error(self.__name__, f"takes {self.nin} arguments, got {len(args)}")
        if self._call is not None:
            return self._call(*args)
        from .vectorize import vectorize
        return vectorize(self._func)(*args)

    def _binary(self, what: str):
        if self.nin != 2 or self.nout != 1:
            raise error(self.__name__, f"{what} is only defined for binary ufuncs with one output")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
        self._binary("reduce")
        if self._reduce is not None:
            return self._reduce(a, axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        x = arr(a) if dtype is None else arr(a, dtype)
        axes = axes_of(axis, aval(x).ndim, self.__name__)
        if where is not None:
            raise error(self.__name__, "reduce with where= is not supported")
        xa = aval(x)
        if initial is None:
            if self.identity is None:
                if builtins.any(xa.shape[d] == 0 for d in axes):
                    raise error(self.__name__, "reduction of an empty axis without an identity")
                # fold over the axes one at a time, starting from the first element
                res = x
                for d in sorted(axes, reverse=True):
                    res = self._fold(res, d)
                out_ = res
            else:
                initial = self.identity
        if initial is not None:
            init = np.asarray(initial, xa.dtype)
            fn = lambda u, v: lax.convert_element_type(arr(self._func(u, v)), xa.dtype)
            out_ = lax.reduce(x, init, fn, axes)
        if keepdims:
            out_ = lax.reshape(out_, tuple(1 if d in axes else s for d, s in enumerate(xa.shape)))
        return out_

    def _fold(self, x, d):
        n = aval(x).shape[d]
        acc = lax.index_in_dim(x, 0, d, keepdims=False)
        for i in range(1, n):
            acc = self(acc, lax.index_in_dim(x, i, d, keepdims=False))
        return acc

    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        self._binary("accumulate")
        if self._accumulate is not None:
            return self._accumulate(a, axis, dtype=dtype)
        x = arr(a) if dtype is None else arr(a, dtype)
        ax = canon_axis(axis, aval(x).ndim, self.__name__)
        from ..frontend.control_flow import scan
        from .shape_ops import moveaxis
        xs = moveaxis(x, ax, 0)
        first = lax.index_in_dim(xs, 0, 0, keepdims=False)
        rest = lax.slice_in_dim(xs, 1, aval(xs).shape[0], 1, 0)

        def step(c, v):
            r = lax.convert_element_type(arr(self(c, v)), aval(c).dtype)
            return r, r
        _, ys = scan(step, first, rest)
        out_ = lax.concatenate([lax.expand_dims(first, (0,)), ys], 0)
        return moveaxis(out_, 0, ax)

    def outer(self, A, B, /):
        self._binary("outer")
        a, b = arr(A), arr(B)
        na, nb = aval(a).ndim, aval(b).ndim
        return self(lax.reshape(a, aval(a).shape + (1,) * nb), lax.reshape(b, (1,) * na + aval(b).shape))

    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        _no_inplace(f"{self.__name__}.at", inplace)
        x = arr(a)
        picked = x[indices]
        new = self(picked) if self.nin == 1 else self(picked, b)
        return x.at[indices].set(lax.convert_element_type(arr(new), aval(x).dtype))

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        self._binary("reduceat")
        from .shape_ops import concatenate
        x = arr(a)
        ax = canon_axis(axis, aval(x).ndim, self.__name__)
        if is_traced(indices):
            raise concretization_error(f"{self.__name__}.reduceat", "reduceat() with traced indices")
        idx = [int(i) for i in np.asarray(indices)]
        n = aval(x).shape[ax]
        parts = []
        for j, i in enumerate(idx):
            end = idx[j + 1] if j + 1 < len(idx) else n
            seg = lax.slice_in_dim(x, i, end, 1, ax) if end > i else lax.slice_in_dim(x, i, i + 1, 1, ax)
            parts.append(lax.expand_dims(self._fold(seg, ax), (ax,)))
        return concatenate(parts, axis=ax)


def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity=None) -> ufunc:
    return ufunc(func, nin, nout, identity=identity)


__all__ = ["ComplexWarning", "apply_along_axis", "apply_over_axes", "piecewise", "block", "s_", "index_exp",
           "mgrid", "ogrid", "r_", "c_", "ix_", "choose", "compress", "delete", "insert", "diagflat",
           "diag_indices_from", "tril_indices_from", "triu_indices_from", "mask_indices", "dsplit", "unstack",
           "rollaxis", "resize", "fill_diagonal", "place", "put", "put_along_axis", "geomspace", "fromfunction",
           "frombuffer", "fromstring", "fromfile", "fromiter", "load", "save", "savez", "array_equiv",
           "array_repr", "array_str", "get_printoptions", "set_printoptions", "printoptions", "can_cast",
           "isdtype", "iterable", "einsum_path", "ufunc", "frompyfunc"]
