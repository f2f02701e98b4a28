"""jax.make_user_context: a value that jit's caches depend on. Changing it makes jitted functions trace, lower and
compile again (JAX puts the value in its jit cache key).

xlapy's jit cache key has no place for user values, so a change of the value a thread sees (entering or leaving
`with ctx(v)` with a different v, or `set_global`) drops the compiled executables (`xlapy.clear_caches()`): the
next call of every jitted function traces again, under the new value. That is JAX's observable behaviour (a
function reading `ctx.value` while tracing sees the current value), at the cost of recompiling functions that
do not read it. As in JAX, the value is per thread (`with`) over a global default; the caches are process-wide,
so threads using different values of one context recompile each other's functions.
"""
from __future__ import annotations

import threading
from typing import Any

from .frontend.jit import clear_caches

__all__ = ["UserConfig", "UserContext", "make_user_context"]

_UNSET = object()


class UserContext:
    """`with config(value):` sets the calling thread's value for the block."""
    __slots__ = ("_config", "_new_value", "_prev_value")

    def __init__(self, config: "UserConfig", new_value: Any):
        self._config = config
        self._new_value = new_value

    def __enter__(self):
        self._prev_value = self._config._swap_local(self._new_value)

    def __exit__(self, exc_type, exc_val, exc_tb):
        self._config._swap_local(self._prev_value)


class UserConfig:
    """A jit-cache-sensitive value: `.value`, `get_global()`, `set_global(v)`, and `config(v)` as a context."""

    def __init__(self, default_value: Any):
        self._global = default_value
        self._local = threading.local()

    @property
    def value(self) -> Any:
        local = getattr(self._local, "value", _UNSET)
        return self._global if local is _UNSET else local

    def get_global(self) -> Any:
        return self._global

    def set_global(self, new_value: Any) -> None:
        before = self.value
        self._global = new_value
        _changed(before, self.value)

    def _swap_local(self, new_value: Any) -> Any:
        before = self.value
        prev = getattr(self._local, "value", _UNSET)
        if new_value is _UNSET:
            self._local.__dict__.pop("value", None)
        else:
            self._local.value = new_value
        _changed(before, self.value)
        return prev

    def __call__(self, new_value: Any) -> UserContext:
        return UserContext(self, new_value)


def _changed(before: Any, after: Any) -> None:
    try:
        same = before is after or bool(before == after)
    except Exception:           # values without a boolean ==, e.g. arrays: compare by identity
        same = before is after
    if not same:
        clear_caches()


def make_user_context(default_value: Any = None) -> UserConfig:
    """A jit-cache-sensitive context (jax.make_user_context): see the module docstring."""
    return UserConfig(default_value)
