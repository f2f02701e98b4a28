"""jax.ref: mutable array references (`Ref`, `new_ref`, `empty_ref`, `freeze`, `free_ref`) and `ds`, the
dynamic-slice index (`Slice`) that reads and writes a window at a traced start.

A Ref is a cell holding an array. `ref[idx]` reads (JAX's indexing, plus `Slice`s), `ref[idx] = v` writes
(the value must have exactly the indexed shape and the Ref's dtype, as JAX's `swap` demands), `ref.addupdate(v,
idx)` adds. A write replaces the cell's array by a functional update (`x.at[idx].set(v)`, `dynamic_update_slice`
for `Slice`s), so inside a trace (jit, grad, vmap, a loop body) a Ref created there is a mutable cell whose
reads and writes are ordered by the program text, exactly JAX's semantics, and `freeze(ref)` gives the final
array.

Across trace boundaries a Ref is threaded as JAX discharges it (frontend/ref_threading.py): a Ref argument of a
jitted function is a parameter of the traced module, a Ref it closes over too, and the ones written come back as
extra outputs, written into the Refs after each call (a Ref signature is its own kind of signature:
signature.RefAval); while_loop / fori_loop / scan carry the Refs of the enclosing trace that their bodies write,
cond / switch pass them to every branch and return them. grad, vmap and the other transformations do not thread
Refs: writing a Ref of an enclosing trace there raises (as JAX does for a differentiated value). A Ref may be
read anywhere: an enclosing trace's value is captured, an eager Ref's present value read as a constant outside
jit (grad and vmap trace again at each call), a parameter inside jit.
Passing one Ref as two arguments, or returning a Ref from jit, raises as in JAX.
`empty_ref` starts zero-filled (JAX leaves it uninitialized). A Ref used after `freeze` / `free_ref` raises.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import lax
from . import numpy as xnp
from .errors import XlapyError
from .frontend.ref_threading import RefCrossesTrace, may_read_eagerly
from .frontend.tracer import Tracer, current_trace
from .numpy.dslice import Slice, ds, has_slice, window

__all__ = ["Ref", "Slice", "ds", "empty_ref", "free_ref", "freeze", "new_ref"]      # Slice, ds: numpy/dslice.py


# -- Ref --------------------------------------------------------------------------------------------
class Ref:
    """A mutable array reference (jax.Ref); make one with `new_ref`. Not an array: read it with `ref[...]`."""
    __slots__ = ("_value", "_trace", "_state")
    is_mutable_ref = True       # frontend/ref_threading.is_ref: jit and control flow thread it

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
        if not writing and (self._trace is not None or may_read_eagerly()):
            return          # an enclosing trace's value, read: captured as any outer tracer (an eager one: a constant)
        where = "outside any trace (eagerly)" if self._trace is None else "in an enclosing trace"
        raise RefCrossesTrace(self, (
            f"Ref.{what}: this Ref of {self.dtype}{list(self.shape)} was created {where} and is used inside a "
            f"transformation that does not thread Refs (grad, vmap, checkpoint, ...; jit, while_loop, fori_loop, "
            f"scan, cond and switch do): create the Ref inside the transformed function, or read `ref[...]` "
            f"outside, pass the array in and write the result back after"))

    def _window(self, idx: Any):
        """(starts, sizes, local index) of numpy/dslice.window when idx holds Slices, else None."""
        if not has_slice(idx):
            return None
        return window(idx, self.shape, check_bounds=True)

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
