"""jax.ref: mutable array references (`Ref`, `new_ref`, `empty_ref`, `freeze`, `free_ref`) and `ds`, the
dynamic-slice index (`Slice`) that reads and writes a window at a traced start.

A Ref is a cell holding an array. `ref[idx]` reads (JAX's indexing, plus `Slice`s), `ref[idx] = v` writes
(the value must have exactly the indexed shape and the Ref's dtype, as JAX's `swap` demands), `ref.addupdate(v,
idx)` adds. A write replaces the cell's array by a functional update (`x.at[idx].set(v)`, `dynamic_update_slice`
for `Slice`s), so inside a trace (jit, grad, vmap, a loop body) a Ref created there is a mutable cell whose
reads and writes are ordered by the program text, exactly JAX's semantics, and `freeze(ref)` gives the final
array.

What xlapy's tracing model does not allow, and raises a clear error for (never a silent stale value):
- a Ref created outside a trace (eagerly, or in an enclosing jit) read or written inside it (a jit, a grad,
  a loop body, a cond branch; reading an enclosing trace's Ref is fine, see below): JAX
  threads such a Ref through the jitted computation as an extra input and output; xlapy's jit does not, so
  read `ref[...]` outside and pass the array in, and write the result back after the call;
- a Ref as a jit argument (jit names it as a non-array argument);
- returning a Ref from jit (also an error in JAX).
An enclosing trace's Ref may be read inside a nested one (a captured value, as any outer tracer).
`empty_ref` starts zero-filled (JAX leaves it uninitialized). A Ref used after `freeze` / `free_ref` raises.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import lax
from . import numpy as xnp
from .errors import XlapyError
from .frontend.pytree import register_pytree_node
from .frontend.tracer import Tracer, current_trace

__all__ = ["Ref", "Slice", "ds", "empty_ref", "free_ref", "freeze", "new_ref"]


# -- ds ---------------------------------------------------------------------------------------------
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
    """jax.ds (jax.dslice): `ds(None)` is `:`, `ds(j)` is `:j`, `ds(i, n)` is `i:i+n`, `ds(i, n, s)` is
    `i:i+n:s`, with a start that may be traced. Used to index Refs (`ref[ds(i, 2)]`)."""
    if start is None:
        return slice(None)
    if stride is None:
        stride = 1
    if not isinstance(stride, (int, np.integer)):
        raise ValueError("Non-static stride in `dslice`")
    if size is None:
        start, size = 0, start
    return Slice(start, size, stride)


# -- Ref --------------------------------------------------------------------------------------------
def _expand(idx: Any, ndim: int) -> list[Any]:
    """The index as one entry per dimension (Ellipsis expanded), or None where it is not plain enough to place
    Slices (None entries, boolean masks): then Slices are refused."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    if any(i is None or (hasattr(i, "dtype") and np.dtype(i.dtype) == np.bool_) for i in items):
        return None
    n_ell = sum(1 for i in items if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ell:
        k = items.index(Ellipsis)
        items = items[:k] + [slice(None)] * (ndim - len(items) + 1) + items[k + 1:]
    return items + [slice(None)] * (ndim - len(items))


class Ref:
    """A mutable array reference (jax.Ref); make one with `new_ref`. Not an array: read it with `ref[...]`."""
    __slots__ = ("_value", "_trace", "_state")

    def __init__(self, value: Any):
        self._value = value
        self._trace = current_trace()
        self._state = "live"

    # -- what it is ---------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._value.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        if self._state != "live":
            return f"Ref(<{self._state}>)"
        if isinstance(self._value, Tracer):
            return f"Ref{{{self.dtype}{list(self.shape)}}}"
        return "Ref" + repr(self._value)[len("Array"):]

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    # -- access -------------------------------------------------------------------------------------
    def _check(self, what: str, writing: bool) -> None:
        if self._state != "live":
            raise XlapyError(f"Ref.{what}: this Ref was {self._state}; it cannot be used any more")
        here = current_trace()
        if here is self._trace:
            return
        if self._trace is None or writing:
            where = "outside any trace (eagerly)" if self._trace is None else "in an enclosing trace"
            raise XlapyError(
                f"Ref.{what}: this Ref of {self.dtype}{list(self.shape)} was created {where} and is used inside "
                f"jit / a transformation / a loop body / a cond branch. xlapy does not thread Refs across trace "
                f"boundaries as JAX does: read `ref[...]` outside and pass the array in, and write the result back "
                f"after, or create the Ref inside the traced function")

    def _window(self, idx: Any):
        """(starts, sizes, local index) when idx holds Slices: the window is dynamic_slice(value, starts, sizes)
        and idx reads the window at the local index; None when it holds none."""
        items = _expand(idx, self.ndim) if self.ndim else None
        if items is None or not any(isinstance(i, Slice) for i in items):
            if isinstance(idx, Slice) or (isinstance(idx, tuple) and any(isinstance(i, Slice) for i in idx)):
                raise XlapyError(f"Ref index {idx!r}: a ds() Slice cannot be combined with None or boolean masks")
            return None
        if len(items) > self.ndim:
            raise IndexError(f"too many indices for a Ref of rank {self.ndim}: {idx!r}")
        starts, sizes, local = [], [], []
        for d, item in enumerate(items):
            if isinstance(item, Slice):
                if not item.is_dynamic_start and not 0 <= item.start <= self.shape[d] - item.span():
                    raise ValueError(f"Out of bound slice: start={item.start}, size={item.size}, "
                                     f"stride={item.stride}, dim={self.shape[d]}.")
                starts.append(item.start)
                sizes.append(item.span())
                local.append(slice(0, item.span(), item.stride))
            else:
                starts.append(0)
                sizes.append(self.shape[d])
                local.append(item)
        return starts, sizes, tuple(local)

    def __getitem__(self, idx: Any):
        self._check("get", writing=False)
        window = self._window(idx)
        if window is None:
            return self._value[idx]
        starts, sizes, local = window
        return lax.dynamic_slice(self._value, starts, sizes)[local]

    def _update(self, what: str, idx: Any, value: Any, method: str) -> None:
        self._check(what, writing=True)
        value = xnp.asarray(value)
        expected = self[idx]
        if tuple(value.shape) != tuple(expected.shape):
            raise ValueError(f"Invalid shape for `{what}`. Ref shape: {self.shape}. Expected shape: "
                             f"{tuple(expected.shape)}. Value shape: {tuple(value.shape)}.")
        if np.dtype(value.dtype) != np.dtype(self.dtype):
            raise ValueError(f"Invalid dtype for `{what}`. Ref dtype: {self.dtype}. Value dtype: {value.dtype}.")
        window = self._window(idx)
        if window is None:
            self._value = getattr(self._value.at[idx], method)(value)
            return
        starts, sizes, local = window
        part = lax.dynamic_slice(self._value, starts, sizes)
        self._value = lax.dynamic_update_slice(self._value, getattr(part.at[local], method)(value), starts)

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._update("swap", idx, value, "set")

    def addupdate(self, x: Any, idx: Any = ()) -> None:
        """ref[idx] += x in one step (jax.Ref.addupdate)."""
        self._update("addupdate", idx, x, "add")

    def _retire(self, state: str):
        self._check(state.split()[0], writing=True)
        value, self._value, self._state = self._value, None, state
        return value


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A mutable array reference holding `init_val` (jax.new_ref). memory_space and kind are accepted and have
    no effect on the CPU (xlapy has one memory space; nothing rematerializes a Ref's writes)."""
    del memory_space, kind
    value = init_val if isinstance(init_val, Tracer) else xnp.asarray(init_val)
    return Ref(value)


def empty_ref(ty: Any, memory_space: Any = None) -> Ref:
    """A Ref of `ty`'s shape and dtype (a ShapeDtypeStruct or anything with .shape and .dtype), zero-filled."""
    del memory_space
    try:
        shape, dtype = tuple(ty.shape), ty.dtype
    except AttributeError:
        raise XlapyError(f"empty_ref: expected a type with .shape and .dtype (e.g. ShapeDtypeStruct), got "
                         f"{type(ty).__name__}") from None
    return Ref(lax.full(shape, 0, dtype))


def freeze(ref: Ref):
    """The Ref's final array; the Ref is invalidated (jax.freeze)."""
    if not isinstance(ref, Ref):
        raise XlapyError(f"freeze: expected a Ref, got {type(ref).__name__}")
    return ref._retire("frozen")


def free_ref(ref: Ref) -> None:
    """Invalidate a Ref (jax.free_ref)."""
    if not isinstance(ref, Ref):
        raise XlapyError(f"free_ref: expected a Ref, got {type(ref).__name__}")
    ref._retire("freed")
