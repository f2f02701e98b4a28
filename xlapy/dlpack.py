"""DLPack interchange (jax.dlpack): hand an xlapy Array to another framework without a copy, and take theirs.

    np.from_dlpack(xlapy_array)         torch.from_dlpack(xlapy_array)     # Array.__dlpack__ / __dlpack_device__
    xlapy.dlpack.from_dlpack(obj)       xlapy.numpy.from_dlpack(obj)       # obj: anything with __dlpack__

Arrays live in host memory, so the device is always (kDLCPU, 0). Import shares the producer's buffer when its
dtype is already canonical (JAX does the same; writing to the producer's buffer afterwards is undefined), and
converts (a copy) when x64 is off and the dtype is 64-bit. Element types DLPack cannot describe (bfloat16 and
the float8 types through numpy) and non-CPU producers raise XlapyError naming the problem.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import XlapyError

KDL_CPU = 1


def from_dlpack(external: Any, device=None, copy: bool | None = None):
    """An xlapy Array viewing (or, with copy=True or a 64-bit dtype without x64, copying) `external`."""
    from .frontend.array import Array
    if not hasattr(external, "__dlpack__"):
        raise XlapyError(f"from_dlpack: {type(external).__name__} has no __dlpack__ (not a DLPack producer)")
    if hasattr(external, "__dlpack_device__"):
        kind, index = external.__dlpack_device__()
        if int(kind) != KDL_CPU:
            raise XlapyError(f"from_dlpack: the producer's memory is on DLPack device type {int(kind)} "
                             f"(index {index}); xlapy arrays live in host memory (kDLCPU = 1)")
    try:
        value = np.from_dlpack(external, copy=copy)
    except (BufferError, TypeError, ValueError) as e:
        raise XlapyError(f"from_dlpack: cannot import {type(external).__name__}: {e}") from None
    return Array(value)


def to_dlpack_capsule(array) -> Any:
    """A DLPack capsule of `array` (the legacy jax.dlpack.to_dlpack API; prefer passing the Array itself)."""
    return array.__dlpack__()
