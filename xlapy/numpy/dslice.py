"""jax.ds (jax.dslice): `Slice(start, size, stride)`, a slice whose start may be traced, and indexing with it.

`x[ds(i, n)]` reads n elements from a traced i: the index is split into a window, `dynamic_slice(x, starts,
sizes)` (starts 0 and whole dimensions where the index is not a Slice; a Slice's dimension spans
(size - 1) * stride + 1 elements), and a static index into the window (each Slice becomes `0:span:stride`), so
a Slice combines with any basic or advanced index, as in JAX. dynamic_slice clamps the window into the array,
so a start past the end reads the last `span` elements (JAX's indexing does the same); `x.at[ds(i, n)].set(v)`
(and add, multiply ... get) updates the window and writes it back with dynamic_update_slice, clamped alike.
Ref indexing (xlapy/ref.py) uses the same window, with JAX's bounds check of static starts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import XlapyError
from ..frontend import indexing
from ..frontend.pytree import register_pytree_node
from ._util import aval, lax

__all__ = ["Slice", "ds", "window", "getitem", "IndexUpdateHelper"]


@dataclass(frozen=True)
class Slice:
    """`size` elements from `start` (an int or a traced scalar) every `stride` (static): jax's indexing.Slice."""
    start: Any
    size: int
    stride: int = 1

    def __post_init__(self):
        if not isinstance(self.stride, (int, np.integer)) or self.stride < 1:
            raise ValueError(f"Slice: stride must be a static int >= 1, got {self.stride!r}")
        if not isinstance(self.size, (int, np.integer)) or self.size < 0:
            raise ValueError(f"Slice: size must be a static int >= 0, got {self.size!r}")

    @property
    def is_dynamic_start(self) -> bool:
        return not isinstance(self.start, (int, np.integer))

    @property
    def is_dynamic_size(self) -> bool:
        return False

    @classmethod
    def from_slice(cls, slc: slice, size: int) -> "Slice":
        start, stop, step = slc.indices(size)
        if step < 1:
            raise ValueError(f"slice must have a step >= 1 (found: {step})")
        return cls(start, len(range(start, stop, step)), step)

    def span(self) -> int:
        """How many elements the window covers, stride gaps included."""
        return 0 if self.size == 0 else (self.size - 1) * self.stride + 1


register_pytree_node(
    Slice,
    lambda s: ((s.start,) if s.is_dynamic_start else (), (None if s.is_dynamic_start else s.start, s.size, s.stride)),
    lambda aux, kids: Slice(kids[0] if aux[0] is None else aux[0], aux[1], aux[2]))


def ds(start, size=None, stride: int | None = None):
    """jax.ds: `ds(None)` is `:`, `ds(j)` is `:j`, `ds(i, n)` is `i:i+n`, `ds(i, n, s)` is `i:i+n:s`, with a start
    that may be traced."""
    if start is None:
        return slice(None)
    if stride is None:
        stride = 1
    if not isinstance(stride, (int, np.integer)):
        raise ValueError("Non-static stride in `dslice`")
    if size is None:
        start, size = 0, start
    return Slice(start, size, stride)


def has_slice(idx: Any) -> bool:
    return isinstance(idx, Slice) or (type(idx) is tuple and any(isinstance(i, Slice) for i in idx))


def _expand(idx: Any, ndim: int) -> list[Any]:
    """One index entry per dimension (the Ellipsis expanded); None and boolean masks cannot be placed."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    for i in items:
        if i is None or (hasattr(i, "dtype") and np.dtype(i.dtype) == np.bool_) or \
                (isinstance(i, (list, np.ndarray)) and np.asarray(i).dtype == np.bool_):
            raise XlapyError(f"index {idx!r}: a ds() Slice cannot be combined with None or a boolean mask")
    n_ell = sum(1 for i in items if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ell:
        k = items.index(Ellipsis)
        items = items[:k] + [slice(None)] * (ndim - len(items) + 1) + items[k + 1:]
    if len(items) > ndim:
        raise IndexError(f"too many indices for an array of rank {ndim}: {idx!r}")
    return items + [slice(None)] * (ndim - len(items))


def window(idx: Any, shape: tuple[int, ...], check_bounds: bool = False):
    """(starts, sizes, local index): idx reads dynamic_slice(x, starts, sizes) at the static local index.
    check_bounds: a static start whose window leaves the array is an error (Ref indexing, as JAX's)."""
    items = _expand(idx, len(shape))
    starts, sizes, local = [], [], []
    for d, item in enumerate(items):
        if isinstance(item, Slice):
            span = item.span()
            if span > shape[d]:
                raise IndexError(f"{item} spans {span} elements of a dimension of size {shape[d]}")
            if check_bounds and not item.is_dynamic_start and not 0 <= item.start <= shape[d] - span:
                raise ValueError(f"Out of bound slice: start={item.start}, size={item.size}, "
                                 f"stride={item.stride}, dim={shape[d]}.")
            starts.append(item.start)
            sizes.append(span)
            local.append(slice(0, span, item.stride))
        else:
            starts.append(0)
            sizes.append(shape[d])
            local.append(item)
    return starts, sizes, tuple(local)


def getitem(x, idx):
    """x[idx], ds() Slices included (the array `__getitem__`)."""
    if not has_slice(idx):
        return indexing.getitem(x, idx)
    starts, sizes, local = window(idx, tuple(aval(x).shape))
    return indexing.getitem(lax.dynamic_slice(x, starts, sizes), local)


class _WindowUpdateRef:
    """x.at[idx] for an idx with Slices: each method updates the window and writes it back."""
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, **kwargs):
        starts, sizes, local = window(self.index, tuple(aval(self.array).shape))
        return indexing.IndexUpdateRef(lax.dynamic_slice(self.array, starts, sizes), local).get(**kwargs)

    def __getattr__(self, method: str):
        if method not in ("set", "add", "subtract", "multiply", "divide", "power", "min", "max", "apply"):
            raise AttributeError(method)

        def update(*args, **kwargs):
            starts, sizes, local = window(self.index, tuple(aval(self.array).shape))
            part = lax.dynamic_slice(self.array, starts, sizes)
            new = getattr(indexing.IndexUpdateRef(part, local), method)(*args, **kwargs)
            return lax.dynamic_update_slice(self.array, new, starts)
        return update

    def __repr__(self) -> str:
        return f"IndexUpdateRef({self.array!r}, {self.index!r})"


class IndexUpdateHelper(indexing.IndexUpdateHelper):
    """`x.at[idx]`, ds() Slices included."""
    __slots__ = ()

    def __getitem__(self, index):
        if has_slice(index):
            return _WindowUpdateRef(self.array, index)
        return indexing.IndexUpdateRef(self.array, index)
