"""Host ops: the numpy computations with data-dependent shapes that jit cannot compile (np.unique, np.nonzero
without size=, a boolean mask's indices), run on concrete values outside a trace.

`host_op(fun, *operands, **static)` runs `fun` (numpy arrays in, a numpy array or a tuple of them out, dtypes
already xlapy's) on the operands' values and returns Arrays. It exists so that autojit can replay it: while a
call is recorded (tape.py) the op is written down with its operands' registers, and a warm call runs `fun` again
on the new values, its results' shapes choosing the recorded continuation. `fun` must be a module-level pure
function of its operands and `static` (the same object at every call).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import state


def host_op(fun: Callable, *operands: Any, **static: Any) -> Any:
    """`fun` on the operands' values (reading a pending value cuts the graph): an Array or a tuple of Arrays."""
    g = state.thread_graph_or_none()
    tape = g.tape if g is not None else None
    if tape is not None:
        return tape.host(fun, operands, static)
    from ..array import Array
    res = fun(*[np.asarray(o) for o in operands], **static)
    if isinstance(res, tuple):
        return tuple(Array(v) for v in res)
    return Array(res)


__all__ = ["host_op"]
