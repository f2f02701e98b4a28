"""Which backend the front end compiles for: `jit(f, backend=...)` if given, else `default_backend()`.

`default_backend()` (exported as `xlapy.default_backend()`, as in JAX) is `xlapy.config.default_backend` if set
(its start value is $XLAPY_BACKEND), else the backend registry's default: the registered backend of highest
priority (backends/registry.py), the CPU backend unless a plugin outranks it."""
from __future__ import annotations

from ..backends.registry import default_backend as registry_default
from . import dtypes


def default_backend() -> str:
    """The name of the backend jit and eager ops compile for when none is named."""
    return dtypes.config.default_backend or registry_default()


__all__ = ["default_backend", "registry_default"]
