"""Threading mutable Refs (xlapy/ref.py) through trace boundaries, as JAX discharges them.

A Ref holds its value and the trace that value lives in (`_value`, `_trace`). Used from another trace it raises
RefCrossesTrace (an XlapyError, so where nothing catches it, it is the user's error). The boundaries that thread
Refs catch it: `retrying(attempt, owner)` runs `attempt(refs)` with the list of Refs to thread, and when a Ref
held by `owner` (the trace the boundary is called from) is touched inside, adds it and traces again. The attempt
passes each Ref's value in (jit: a parameter; while_loop / scan: a carry element; cond: a branch operand),
`bound(...)` points the Ref at that value while the inner function runs, and its last value comes out (jit: an
extra output written back after the call; loops and cond: an output set as the Ref's value after the op).
jit, while_loop (so fori_loop), scan (so map), cond and switch thread Refs; grad, vmap and the other
transformations do not (a Ref of an enclosing trace may still be read there: a captured value).
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

from ..errors import XlapyError
from .tracer import thread_traces


class RefCrossesTrace(XlapyError):
    """A Ref used from a trace other than the one holding its value (see the module docstring)."""

    def __init__(self, ref: Any, message: str):
        super().__init__(message)
        self.ref = ref


def may_read_eagerly() -> bool:
    """Whether an eager Ref may be read inside the current traces as its present value (a constant): not inside a
    `main` trace (jit's, or pmap's and shard_map's device program: modules they keep, which must not bake a
    value; jit makes it a parameter instead). grad, vmap and loops at the top level trace again at every call,
    and JAX reads the Ref there too."""
    return all(t.name != "main" for t in thread_traces())


def is_ref(value: Any) -> bool:
    return getattr(type(value), "is_mutable_ref", False) is True


def live_value(ref: Any) -> Any:
    """The Ref's value, checked live (not frozen or freed)."""
    if ref._state != "live":
        raise XlapyError(f"Ref: this Ref was {ref._state}; it cannot be used any more")
    return ref._value


def retrying(attempt: Callable[[list], Any], owner: Any) -> Any:
    """attempt(refs), again with each Ref of `owner` that the previous attempt touched from an inner trace added."""
    refs: list = []
    while True:
        try:
            return attempt(list(refs))
        except RefCrossesTrace as e:
            ref = e.ref
            if ref._trace is not owner or any(ref is r for r in refs):
                raise
            refs.append(ref)


@contextlib.contextmanager
def bound(refs: Sequence[Any], values: Sequence[Any], trace: Any) -> Iterator[None]:
    """Within: each Ref holds its value in `values`, in `trace`; restored after."""
    saved = [(r._value, r._trace) for r in refs]
    for r, v in zip(refs, values):
        r._value, r._trace = v, trace
    try:
        yield
    finally:
        for r, (v, t) in zip(refs, saved):
            r._value, r._trace = v, t


def set_values(refs: Sequence[Any], values: Sequence[Any]) -> None:
    for r, v in zip(refs, values):
        r._value = v


def distinct(refs: Sequence[Any], what: str) -> None:
    """A Ref passed twice would be two values of one cell: refused (JAX refuses aliased mutable arguments)."""
    seen: set[int] = set()
    for r in refs:
        if id(r) in seen:
            raise XlapyError(f"{what}: the same Ref is two of the inputs (passed as two arguments, or passed and "
                             f"also closed over by the function as traced); pass each Ref once")
        seen.add(id(r))
