"""Host callbacks: a custom-call that runs a Python function on the host (jax.pure_callback's mechanism).

    custom-call(operands...), custom_call_target="xlapy_host_callback", backend_config="<key>"

The result is always a tuple, one element per result leaf. `key` names a `HostCallback` in `REGISTRY`: the
Python function (numpy arrays in, numpy arrays out) and the result shapes it must return. The interpreter
calls it directly (this module's CUSTOM_CALL_TARGETS); the CPU backend emits a call to one native entry,
`xlapy_host_callback(key, operand pointers, result pointers)`, a ctypes trampoline that wraps the buffers as
numpy arrays and calls `run` (backends/cpu/host_callback_emitter.py). Keys are numbered per process in
registration order, so a module's text names the same callback whenever it is traced the same way.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import ExecutionError
from ...hlo import Shape

TARGET = "xlapy_host_callback"


@dataclass
class HostCallback:
    fn: Callable[..., Sequence[Any]]     # numpy arrays in, one array per result out
    operands: tuple[Shape, ...]
    results: tuple[Shape, ...]
    name: str = "callback"
    vmap_method: str | None = None


REGISTRY: dict[int, HostCallback] = {}
_COUNTER = itertools.count()
_LOCK = threading.Lock()


def register(cb: HostCallback) -> int:
    with _LOCK:
        key = next(_COUNTER)
        REGISTRY[key] = cb
    return key


def key_of(inst) -> int:
    return int(str(inst.attrs.get("backend_config", "")).strip('"'))


def run(key: int, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Call callback `key` on `args`; its results checked against the declared shapes and converted."""
    cb = REGISTRY.get(key)
    if cb is None:
        raise ExecutionError(f"host callback {key} is not registered in this process")
    return run_fn(cb.fn, cb.results, args)


def run_fn(fn: Callable[..., Sequence[Any]], results: Sequence[Shape], args: Sequence[np.ndarray]) -> list[np.ndarray]:
    out = list(fn(*args))
    if len(out) != len(results):
        raise ExecutionError(f"Mismatched number of outputs from callback. Expected: {len(results)}, "
                             f"Actual: {len(out)}")
    values = []
    for i, (value, shape) in enumerate(zip(out, results)):
        arr = np.asarray(value)
        if arr.shape != tuple(shape.dims):
            raise ExecutionError(f"Incorrect output shape for return value #{i}: Expected: {tuple(shape.dims)}, "
                                 f"Actual: {arr.shape}")
        if arr.dtype != shape.dtype:
            raise ExecutionError(f"Incorrect output dtype for return value #{i}: Expected: {shape.dtype}, "
                                 f"Actual: {arr.dtype}")
        values.append(arr if arr.flags.c_contiguous else arr.copy(order="C"))   # (ascontiguousarray makes 0-d 1-d)
    return values


def _interpret(inst, args, ev):
    return tuple(run(key_of(inst), [np.asarray(a) for a in args]))


CUSTOM_CALL_TARGETS = {TARGET: _interpret}

__all__ = ["TARGET", "HostCallback", "REGISTRY", "register", "run", "run_fn", "key_of"]
