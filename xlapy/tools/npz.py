"""Reading and writing argument/result bundles (.npz): keys arg0.., out0.., tuple leaves flattened in order.

numpy cannot store ml_dtypes types (bf16, f8...) natively: such an array is stored as its unsigned-integer bit
pattern under its key, with `KEY__dtype` holding the dtype name. Plain numpy types are stored as they are.
"""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np

from ..errors import XlapyError

_DTYPE_SUFFIX = "__dtype"
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _ml_dtype(name: str) -> np.dtype:
    try:
        return np.dtype(getattr(ml_dtypes, name))
    except (AttributeError, TypeError):
        return np.dtype(name)


def load(path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as f:
            raw = {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise XlapyError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise XlapyError(f"{path}: not a readable .npz file ({e})") from None
    out = {}
    for key, arr in raw.items():
        if key.endswith(_DTYPE_SUFFIX):
            continue
        tag = raw.get(key + _DTYPE_SUFFIX)
        out[key] = arr.view(_ml_dtype(str(tag))) if tag is not None else arr
    return out


def save(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    flat = {}
    for key, arr in arrays.items():
        arr = np.asarray(arr)
        if type(arr.dtype).__module__.startswith("ml_dtypes") or arr.dtype.name in ml_dtypes.__dict__:
            flat[key] = arr.view(_BITS[arr.dtype.itemsize])
            flat[key + _DTYPE_SUFFIX] = np.array(arr.dtype.name)
        else:
            flat[key] = arr
    try:
        with open(path, "wb") as f:         # a file object: numpy would append ".npz" to a name without it
            np.savez(f, **flat)
    except OSError as e:
        raise XlapyError(f"cannot write {path}: {e.strerror or e}") from None


def numbered(arrays: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
    """[prefix0, prefix1, ...] in numeric order; raises if the numbering has gaps."""
    idx = sorted(int(m.group(1)) for k in arrays if (m := re.fullmatch(prefix + r"(\d+)", k)))
    if idx != list(range(len(idx))):
        raise XlapyError(f"keys {prefix}0..{prefix}{len(idx) - 1} must be numbered without gaps; found {idx}")
    return [arrays[f"{prefix}{i}"] for i in idx]


def flatten(value) -> list[np.ndarray]:
    """Tuple results flattened depth-first into a list of arrays."""
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in flatten(v)]
    return [np.asarray(value)]
