"""torch dtypes <-> numpy dtypes, and which of them cross the boundary (DLPack) to xlapy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

from ..frontend import dtypes as xdtypes

TO_NUMPY = {
    torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64), torch.float16: np.dtype(np.float16),
    torch.bfloat16: np.dtype(ml_dtypes.bfloat16),
    torch.int64: np.dtype(np.int64), torch.int32: np.dtype(np.int32), torch.int16: np.dtype(np.int16),
    torch.int8: np.dtype(np.int8), torch.uint8: np.dtype(np.uint8), torch.bool: np.dtype(np.bool_),
    torch.complex64: np.dtype(np.complex64), torch.complex128: np.dtype(np.complex128),
}

# what DLPack and numpy can carry between torch and xlapy without a copy (numpy has no bfloat16 DLPack code)
BOUNDARY = {t for t in TO_NUMPY if t is not torch.bfloat16}

# dtypes that only survive with x64 on: without it the computation would silently narrow them
WIDE_FLOATS = {torch.float64, torch.complex128}


def to_numpy(dtype: torch.dtype) -> np.dtype | None:
    return TO_NUMPY.get(dtype)


def computed(dtype: torch.dtype) -> np.dtype | None:
    """The dtype xlapy computes a torch dtype in (int64 -> int32 unless x64), None when it has no counterpart."""
    dt = TO_NUMPY.get(dtype)
    return None if dt is None else xdtypes.canonicalize(dt)


def x64() -> bool:
    return bool(xdtypes.config.enable_x64)
