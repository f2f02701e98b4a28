"""The backend registry: every backend is a `Backend` record, registered under its name with a priority.

| rule | |
|---|---|
| a backend | `Backend(name, factory, priority, supported_opcodes)`; `factory(module, **options) -> Executable` compiles one Module (import the backend's package inside it, so registering costs nothing) |
| its opcodes | `supported_opcodes`: a set of opcode names, a zero-argument callable returning one (called once, on first use), or None for every opcode; the set holds every opcode the factory accepts, those its own pipeline rewrites away included |
| registering | `register(name, factory, priority, supported_opcodes=None)`; a name taken already is an error unless `replace=True`; `unregister(name)` |
| out of tree | a distribution's entry point in the group `xlapy.backends` whose object is a `Backend` of the entry point's name. The group is read once, on the first lookup (`rediscover()` reads it again); an entry point that fails to load, is no `Backend`, names another backend or a name taken already is skipped with a `BackendPluginWarning` naming it |
| order | `names()`: highest priority first (ties by name); the built-ins are the interpreter (0) and cpu (100) |
| the default | `default_backend()`: `$XLAPY_BACKEND` if set, else the highest priority; resolved on first use and again after any change to the registry |
| lookup | `get(name)`; an unknown name raises `UnknownBackendError` listing the registered ones |

The front end picks `jit(f, backend=...)`, else `xlapy.config.default_backend`, else `default_backend()`
(frontend/backend.py). Soft placement (placement.py) falls back along `names()`.
"""
from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterable

from ..errors import UnknownBackendError, XlapyError

ENTRY_POINT_GROUP = "xlapy.backends"
ENV_VAR = "XLAPY_BACKEND"


class BackendPluginWarning(UserWarning):
    """An entry point in the `xlapy.backends` group that could not be registered; the message names it."""


@dataclass(frozen=True, eq=False)
class Backend:
    """A backend: `factory(module, **options) -> Executable`, its priority (higher wins the default) and the
    opcodes it compiles (`supported_opcodes`: a set, a zero-argument callable returning one, or None for all)."""
    name: str
    factory: Callable[..., Any]
    priority: int = 0
    supported_opcodes: Iterable[str] | Callable[[], Iterable[str]] | None = None

    @cached_property
    def opcodes(self) -> frozenset[str] | None:
        """The supported opcodes as a frozenset (computed once), or None: every opcode."""
        spec = self.supported_opcodes
        if spec is None:
            return None
        return frozenset(spec() if callable(spec) else spec)

    def missing(self, opcodes: Iterable[str]) -> list[str]:
        """Those of `opcodes` this backend does not compile, sorted."""
        have = self.opcodes
        return [] if have is None else sorted(set(opcodes) - have)

    def __repr__(self) -> str:
        return f"<Backend {self.name} priority={self.priority}>"


_LOCK = threading.RLock()
_BACKENDS: dict[str, Backend] = {}
_FROM_ENTRY_POINTS: set[str] = set()      # names registered by discovery (rediscover() drops them)
_discovered = False
_order: tuple[str, ...] | None = None      # names() cache
_default: str | None = None                # default_backend() cache


def _changed() -> None:
    global _order, _default
    _order = _default = None


def register(name: str, factory: Callable[..., Any], priority: int = 0,
             supported_opcodes: Iterable[str] | Callable[[], Iterable[str]] | None = None, *,
             replace: bool = False) -> Backend:
    """Register a backend under `name` (see the module docstring); returns its record."""
    return add(Backend(name, factory, priority, supported_opcodes), replace=replace)


def add(backend: Backend, *, replace: bool = False) -> Backend:
    """Register a `Backend` record; a name taken already is an error unless `replace`."""
    if not isinstance(backend, Backend):
        raise XlapyError(f"expected a Backend record, got {type(backend).__name__}")
    if not isinstance(backend.name, str) or not backend.name:
        raise XlapyError(f"a backend's name must be a non-empty string, got {backend.name!r}")
    if not callable(backend.factory):
        raise XlapyError(f"backend {backend.name!r}: its factory must be callable, got {backend.factory!r}")
    if isinstance(backend.priority, bool) or not isinstance(backend.priority, int):
        raise XlapyError(f"backend {backend.name!r}: its priority must be an int, got {backend.priority!r}")
    with _LOCK:
        if backend.name in _BACKENDS and not replace:
            raise XlapyError(f"a backend named {backend.name!r} is registered already; pass replace=True to "
                             f"replace it")
        _BACKENDS[backend.name] = backend
        _FROM_ENTRY_POINTS.discard(backend.name)
        _changed()
    return backend


def unregister(name: str) -> None:
    """Remove the backend `name` (an unknown name raises UnknownBackendError)."""
    with _LOCK:
        _discover()
        if name not in _BACKENDS:
            raise _unknown(name)
        del _BACKENDS[name]
        _FROM_ENTRY_POINTS.discard(name)
        _changed()


def get(name: str) -> Backend:
    """The backend registered as `name`."""
    backend = _BACKENDS.get(name) if _discovered else None
    if backend is None:
        with _LOCK:
            _discover()
            backend = _BACKENDS.get(name)
        if backend is None:
            raise _unknown(name)
    return backend


def names() -> tuple[str, ...]:
    """Every registered backend's name, highest priority first (ties by name)."""
    order = _order
    if order is None:
        order = _sorted_names()
    return order


def backends() -> tuple[Backend, ...]:
    """Every registered backend, highest priority first."""
    return tuple(get(n) for n in names())


def default_backend() -> str:
    """The default backend's name: $XLAPY_BACKEND if set, else the highest priority."""
    name = _default
    if name is None:
        name = _resolve_default()
    return name


def rediscover() -> None:
    """Forget the backends entry points registered; the group is read again on the next lookup (and
    $XLAPY_BACKEND with it). For tests and for packages installed while the process runs."""
    global _discovered
    with _LOCK:
        for name in _FROM_ENTRY_POINTS:
            _BACKENDS.pop(name, None)
        _FROM_ENTRY_POINTS.clear()
        _discovered = False
        _changed()


def _sorted_names() -> tuple[str, ...]:
    global _order
    with _LOCK:
        _discover()
        _order = tuple(sorted(_BACKENDS, key=lambda n: (-_BACKENDS[n].priority, n)))
        return _order


def _resolve_default() -> str:
    global _default
    with _LOCK:
        env = os.environ.get(ENV_VAR, "")
        if env:
            get(env)            # an unknown name is an error here, naming the variable below
            name = env
        else:
            order = names()
            if not order:
                raise XlapyError("no backend is registered")
            name = order[0]
        _default = name
        return name


def _unknown(name: str) -> UnknownBackendError:
    where = f" (${ENV_VAR})" if os.environ.get(ENV_VAR) == name else ""
    return UnknownBackendError(f"unknown backend {name!r}{where}; available: "
                               f"{', '.join(_sorted_names()) or 'none'}")


# -- entry points ----------------------------------------------------------------------------------------
def _discover() -> None:
    """Register the backends of the `xlapy.backends` entry points, once (the caller holds _LOCK)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    from importlib.metadata import entry_points
    try:
        found = list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception as e:          # a broken distribution's metadata must not break xlapy
        warnings.warn(f"reading the {ENTRY_POINT_GROUP!r} entry points failed: {type(e).__name__}: {e}",
                      BackendPluginWarning, stacklevel=4)
        return
    seen: set[tuple[str, str]] = set()
    for ep in found:
        if (ep.name, ep.value) in seen:     # the same distribution found twice on sys.path
            continue
        seen.add((ep.name, ep.value))
        problem = _load(ep)
        if problem:
            warnings.warn(f"xlapy backend entry point {ep.name!r} ({ep.value}) skipped: {problem}",
                          BackendPluginWarning, stacklevel=4)
    _changed()


def _load(ep: Any) -> str:
    """Register one entry point's backend; returns what is wrong with it, or ''."""
    try:
        obj = ep.load()
    except Exception as e:
        return f"loading it raised {type(e).__name__}: {e}"
    if not isinstance(obj, Backend):
        return f"its object is a {type(obj).__name__}, not an xlapy.backends.Backend"
    if obj.name != ep.name:
        return f"its Backend is named {obj.name!r}, not {ep.name!r}"
    if obj.name in _BACKENDS:
        return f"a backend named {obj.name!r} is registered already"
    try:
        add(obj)
    except XlapyError as e:
        return str(e)
    _FROM_ENTRY_POINTS.add(obj.name)
    return ""


__all__ = ["Backend", "BackendPluginWarning", "ENTRY_POINT_GROUP", "ENV_VAR", "register", "add", "unregister",
           "get", "names", "backends", "default_backend", "rediscover"]
