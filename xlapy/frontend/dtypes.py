"""JAX's dtype rules: the type-promotion lattice, weak types, and 32-bit canonicalization.

Python scalars are *weakly typed*: `x + 1.0` keeps x's dtype (a bf16 x stays bf16). Two strongly typed
operands promote to the least upper bound of their dtypes in JAX's lattice

    b1 -> i* -> u8 -> u16 -> u32 -> u64 -> f*          i* -> i8 -> i16 -> i32 -> i64 -> f*
    u8 -> i16, u16 -> i32, u32 -> i64                  f* -> bf16, f16 -> f32 -> f64 -> c128
    f* -> c* -> c64 -> c128,  f32 -> c64

where i*, f*, c* are the weak (Python int/float/complex) types. Unless `config.enable_x64` is set,
64-bit results are canonicalized to 32 bits (int64 -> int32, float64 -> float32, complex128 -> complex64).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np


class Config:
    """Global front-end flags (JAX's names where they exist). The environment sets the start values:

    | flag | start value | what |
    |---|---|---|
    | enable_x64 | JAX_ENABLE_X64=1, else False | 64-bit types stay 64-bit (they change what code traces to) |
    | default_backend | XLAPY_BACKEND, else None | where jit and eager ops compile (a registered backend's name; None: the registry's default, the highest priority: see xlapy.default_backend()) |
    | jit_cache_size | XLAPY_JIT_CACHE_SIZE, else 256 | compiled signatures kept per jitted function, least recently used dropped first |
    | eager_cache_size | XLAPY_EAGER_CACHE_SIZE, else 1024 | compiled eager ops (one per op signature) kept for the process |

    The cache sizes only bound memory (an executable holds machine code and buffers); the other flags are
    `tracing_flags()`, part of every cache key.

    The persistent compilation cache (backends/compilation_cache.py) has JAX's option names; each overrides the
    environment when set (None: the environment decides):

    | flag | environment | what |
    |---|---|---|
    | enable_compilation_cache | XLAPY_CACHE_DIR=off turns it off | compiled modules are kept on disk across processes |
    | compilation_cache_dir | XLAPY_CACHE_DIR, else ~/.cache/xlapy | where |
    | compilation_cache_max_size | XLAPY_CACHE_MAX_BYTES, else 1 GiB | least recently used entries go past it |"""

    CACHE_SIZES = ("jit_cache_size", "eager_cache_size")

    def __init__(self):
        import os
        self.enable_x64 = os.environ.get("JAX_ENABLE_X64", "").lower() in ("1", "true")
        self.default_backend = os.environ.get("XLAPY_BACKEND") or None   # None: the backend registry's default
        self.jit_cache_size = int(os.environ.get("XLAPY_JIT_CACHE_SIZE", "256"))
        self.eager_cache_size = int(os.environ.get("XLAPY_EAGER_CACHE_SIZE", "1024"))

    # the persistent cache's settings live in the backend layer; these forward to them
    enable_compilation_cache = property(lambda self: _cache_settings().enabled,
                                        lambda self, v: setattr(_cache_settings(), "enabled", v))
    compilation_cache_dir = property(lambda self: _cache_settings().directory,
                                     lambda self, v: setattr(_cache_settings(), "directory", v))
    compilation_cache_max_size = property(lambda self: _cache_settings().max_bytes,
                                          lambda self, v: setattr(_cache_settings(), "max_bytes", v))

    def update(self, name: str, value: Any) -> None:
        """`config.update("jax_enable_x64", True)` as in JAX; also accepts the bare attribute name."""
        key = name[len("jax_"):] if name.startswith("jax_") else name
        if not hasattr(self, key):
            raise AttributeError(f"unknown config option {name!r}")
        if key in self.CACHE_SIZES and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"config option {name!r} must be a positive int, got {value!r}")
        if key == "compilation_cache_max_size" and value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or (value < 1 and value != -1)):
            raise ValueError(f"config option {name!r} must be a positive int, -1 (no bound) or None, got {value!r}")
        setattr(self, key, value)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name != "_flags":
            object.__setattr__(self, "_flags", None)       # tracing_flags() is computed again

    def tracing_flags(self) -> tuple:
        """The values of the flags that can change what a function traces to (all but the cache sizes); kept
        until a flag is set (every op's cache key reads it)."""
        flags = self.__dict__.get("_flags")
        if flags is None:
            flags = tuple(v for k, v in vars(self).items() if k not in self.CACHE_SIZES and k != "_flags")
            object.__setattr__(self, "_flags", flags)
        return flags


def _cache_settings():
    from ..backends.compilation_cache import SETTINGS
    return SETTINGS


config = Config()

bool_ = np.dtype(np.bool_)
int32, int64, float32, float64 = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
bfloat16 = np.dtype(ml_dtypes.bfloat16)

_NAMES = {np.dtype(t): n for t, n in [
    (np.bool_, "b1"), (np.uint8, "u8"), (np.uint16, "u16"), (np.uint32, "u32"), (np.uint64, "u64"),
    (np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"), (np.int64, "i64"),
    (ml_dtypes.bfloat16, "bf16"), (np.float16, "f16"), (np.float32, "f32"), (np.float64, "f64"),
    (np.complex64, "c64"), (np.complex128, "c128")]}
_DTYPES = {n: d for d, n in _NAMES.items()}

_EDGES = {
    "b1": ["i*"], "i*": ["u8", "i8"], "u8": ["u16", "i16"], "u16": ["u32", "i32"], "u32": ["u64", "i64"],
    "u64": ["f*"], "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f*": ["bf16", "f16", "c*"], "bf16": ["f32"], "f16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"],
    "c*": ["c64"], "c64": ["c128"], "c128": [],
}


@functools.lru_cache(maxsize=None)
def _upper_bounds(node: str) -> frozenset[str]:
    """Every lattice node reachable from `node` (itself included)."""
    out = {node}
    for nxt in _EDGES[node]:
        out |= _upper_bounds(nxt)
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def _join(a: str, b: str) -> str:
    common = _upper_bounds(a) & _upper_bounds(b)
    # The least upper bound: the common bound that every other common bound is above.
    for c in common:
        if common <= _upper_bounds(c):
            return c
    raise TypeError(f"no common type for {a} and {b}")


def default_int() -> np.dtype:
    return int64 if config.enable_x64 else int32


def default_float() -> np.dtype:
    return float64 if config.enable_x64 else float32


def default_complex() -> np.dtype:
    return complex128 if config.enable_x64 else complex64


_NARROW = {np.dtype(np.int64): int32, np.dtype(np.uint64): np.dtype(np.uint32), float64: float32,
           complex128: complex64}


def canonicalize(dtype) -> np.dtype:
    """The dtype xlapy computes in: 64-bit types become 32-bit unless enable_x64."""
    dt = np.dtype(dtype)
    if not config.enable_x64 and dt in _NARROW:
        return _NARROW[dt]
    return dt


@dataclass(frozen=True)
class DType:
    """A dtype together with its weak-type flag (the type of a Python scalar)."""
    dtype: np.dtype
    weak: bool = False


def _node(dtype: np.dtype, weak: bool) -> str:
    if weak:
        kind = np.dtype(dtype).kind
        return {"b": "b1", "i": "i*", "u": "i*", "f": "f*", "c": "c*"}[kind] if kind != "V" else "f*"
    name = _NAMES.get(np.dtype(dtype))
    if name is None:
        raise TypeError(f"xlapy does not promote dtype {dtype}")
    return name


def _dtype_of_node(node: str) -> DType:
    if node == "i*":
        return DType(default_int(), True)
    if node == "f*":
        return DType(default_float(), True)
    if node == "c*":
        return DType(default_complex(), True)
    return DType(canonicalize(_DTYPES[node]), False)


def promote(*types: DType) -> DType:
    """JAX's result type of a binary/n-ary op over operands of these (dtype, weak) types."""
    if not types:
        raise TypeError("promote needs at least one type")
    if len({(np.dtype(t.dtype), t.weak) for t in types}) == 1:
        return DType(canonicalize(types[0].dtype), types[0].weak)
    node = _node(types[0].dtype, types[0].weak)
    for t in types[1:]:
        node = _join(node, _node(t.dtype, t.weak))
    return _dtype_of_node(node)


def python_scalar_type(value: Any) -> DType:
    """bool -> bool (strong, as in JAX); int/float/complex -> the weak default type."""
    if isinstance(value, (bool, np.bool_)):
        return DType(bool_, False)
    if isinstance(value, int):
        return DType(default_int(), True)
    if isinstance(value, float):
        return DType(default_float(), True)
    if isinstance(value, complex):
        return DType(default_complex(), True)
    raise TypeError(f"{type(value).__name__} is not a Python scalar")


def is_python_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)


def type_of(value: Any) -> DType:
    """The (dtype, weak) type of any operand: a traced or concrete array, a numpy value, a Python scalar."""
    aval = getattr(value, "aval", None)
    if aval is not None:
        return DType(aval.dtype, aval.weak_type)
    if is_python_scalar(value):
        return python_scalar_type(value)
    return DType(canonicalize(np.asarray(value).dtype), False)


def result_type(*values: Any) -> np.dtype:
    """The promoted dtype of these operands (like jnp.result_type)."""
    return promote(*(type_of(v) for v in values)).dtype


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == bfloat16 or np.issubdtype(np.dtype(dtype), np.floating)


def is_inexact(dtype) -> bool:
    return is_float(dtype) or np.dtype(dtype).kind == "c"


def finfo(dtype):
    return ml_dtypes.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else ml_dtypes.iinfo(dtype)
