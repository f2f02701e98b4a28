"""Sorting: sort, argsort (stable; descending keeps equal elements in their original order), lexsort,
searchsorted. All lower to HLO sort with a comparator (NaN sorts last, -0.0 equals 0.0, as in numpy)."""
from __future__ import annotations

from typing import Any, Sequence



from ._util import arr, aval, canon_axis, dtypes, error, lax


def _flat_or_axis(x, axis):
    if axis is None:
        return lax.reshape(x, (aval(x).size,)), 0
    return x, canon_axis(axis, aval(x).ndim, "sort")


def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True, descending: bool = False) -> Any:
    if order is not None:
        raise error("sort", "order= (structured arrays) is not supported")
    x, ax = _flat_or_axis(arr(a), axis)
    if aval(x).ndim == 0:
        return x
    out = lax.sort(x, ax, is_stable=True)
    return lax.rev(out, (ax,)) if descending else out


def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True, descending: bool = False) -> Any:
    """Indices that sort `a` along `axis` (int32; a stable sort)."""
    x, ax = _flat_or_axis(arr(a), axis)
    xa = aval(x)
    if xa.ndim == 0:
        return lax.full((), 0, dtypes.default_int())
    if descending:      # sort the reversed array ascending, then reverse and re-map: stable and descending
        x = lax.rev(x, (ax,))
    iota = lax.broadcasted_iota(dtypes.default_int(), xa.shape, ax)
    _, idx = lax.sort((x, iota), ax, is_stable=True, num_keys=1)
    if descending:
        n = xa.shape[ax]
        idx = lax.sub(lax.full(xa.shape, n - 1, dtypes.default_int()), lax.rev(idx, (ax,)))
    return idx


def lexsort(keys: Sequence[Any], axis: int = -1) -> Any:
    """Indices sorting by the last key first, then the others (stable)."""
    ks = [arr(k) for k in keys]
    if not ks:
        raise error("lexsort", "needs at least one key")
    shapes = {aval(k).shape for k in ks}
    if len(shapes) != 1:
        raise error("lexsort", "all keys must have the same shape, got " + ", ".join(str(aval(k)) for k in ks))
    shape = shapes.pop()
    ax = canon_axis(axis, len(shape), "lexsort")
    iota = lax.broadcasted_iota(dtypes.default_int(), shape, ax)
    out = lax.sort(tuple(reversed(ks)) + (iota,), ax, is_stable=True, num_keys=len(ks))
    return out[-1]


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "compare_all") -> Any:
    """Insertion points of `v` into the sorted 1-D `a` (int32): counts of a < v ('left') or a <= v ('right')."""
    from .elementwise import less, less_equal
    from .indexing_ops import take
    x = arr(a)
    if aval(x).ndim != 1:
        raise error("searchsorted", f"a must be 1-D, got {aval(x)}")
    if sorter is not None:
        x = take(x, sorter)
    if side not in ("left", "right"):
        raise error("searchsorted", f"side must be 'left' or 'right', got {side!r}")
    q = arr(v)
    qa = aval(q)
    qb = lax.reshape(q, qa.shape + (1,))
    xb = lax.reshape(x, (1,) * qa.ndim + aval(x).shape)
    hits = (less if side == "left" else less_equal)(xb, qb)
    return lax.reduce_sum(lax.convert_element_type(hits, dtypes.default_int()), (qa.ndim,))


def partition(a, kth: int, axis: int = -1) -> Any:
    """A full sort satisfies partition's contract (the kth element in place, smaller before, larger after)."""
    return sort(a, axis)


def argpartition(a, kth: int, axis: int = -1) -> Any:
    return argsort(a, axis)


