"""The threefry2x32 counter-based PRNG as JAX implements it (its default `jax_threefry_partitionable` mode):
seeding, the hash, split, fold_in and random bits, built from xlapy.lax ops so they trace under jit and run
eagerly outside it. A key is JAX's raw key: a uint32[2] array.

`staged(fn)` jits a sampler (its keyword-only parameters static), as JAX jits its own samplers.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from . import lax
from .errors import XlapyError
from .frontend import dtypes
from .frontend.jit import jit
from .frontend.tracer import concrete_value, user_frame

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KS_PARITY = np.uint32(0x1BD11BDA)


# -- staging: one compiled program per sampler call outside jit -----------------------------------

def staged(fn: Callable) -> Callable:
    """jit(fn) with fn's keyword-only parameters static (as JAX jits its samplers): outside any trace a
    sampler runs as one compiled program instead of one executable per lax op; inside one it is inlined."""
    static = [p.name for p in inspect.signature(fn).parameters.values() if p.kind == p.KEYWORD_ONLY]
    return jit(fn, static_argnames=static)


# -- key checks ------------------------------------------------------------------------------------

def check_key(name: str, key: Any) -> Any:
    """A raw threefry key: uint32[2]. Typed key arrays are not modeled; `key()` returns raw keys too."""
    a = lax.aval(key)
    if a.dtype != np.uint32 or a.shape != (2,):
        raise XlapyError(f"random.{name}: expected a PRNG key (uint32[2], from random.PRNGKey / key / split), "
                         f"got {a} (at {user_frame()})")
    if not hasattr(key, "aval"):
        key = np.asarray(concrete_value(key), np.uint32)
    return key


def _u32(value) -> np.ndarray:
    return np.asarray(value, np.uint32)


# -- the hash --------------------------------------------------------------------------------------

def _rotate_left(x, d: int):
    return lax.bitwise_or(lax.shift_left(x, _u32(d)), lax.shift_right_logical(x, _u32(32 - d)))


def threefry2x32(k1, k2, x1, x2) -> tuple[Any, Any]:
    """Threefry-2x32 with 20 rounds of the counter pair (x1, x2) under the key (k1, k2) (scalars)."""
    ks = [k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _KS_PARITY)]
    x = [lax.add(x1, ks[0]), lax.add(x2, ks[1])]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x[0] = lax.add(x[0], x[1])
            x[1] = lax.bitwise_xor(x[0], _rotate_left(x[1], r))
        x[0] = lax.add(x[0], ks[(i + 1) % 3])
        x[1] = lax.add(lax.add(x[1], ks[(i + 2) % 3]), _u32(i + 1))
    return x[0], x[1]


def _key_words(key) -> tuple[Any, Any]:
    return (lax.reshape(lax.slice(key, (0,), (1,)), ()), lax.reshape(lax.slice(key, (1,), (2,)), ()))


def threefry_2x32(key, count):
    """JAX's `threefry_2x32(keypair, count)`: hash a flat uint32 count array split into halves (padded to
    even length) and reassemble it in count's shape."""
    k1, k2 = _key_words(key)
    shape = lax.aval(count).shape
    n = int(np.prod(shape, dtype=np.int64))
    flat = lax.reshape(count, (n,))
    if n % 2:
        flat = lax.concatenate([flat, np.zeros((1,), np.uint32)], 0)
    half = (n + n % 2) // 2
    y1, y2 = threefry2x32(k1, k2, lax.slice(flat, (0,), (half,)), lax.slice(flat, (half,), (2 * half,)))
    out = lax.concatenate([y1, y2], 0)
    if n % 2:
        out = lax.slice(out, (0,), (n,))
    return lax.reshape(out, shape)


def _iota_2x32(shape: Sequence[int]) -> tuple[Any, Any]:
    """(high, low) 32-bit words of a row-major uint64 iota of `shape`."""
    shape = tuple(shape)
    if not shape:
        zero = np.zeros((), np.uint32)
        return zero, zero
    size = int(np.prod(shape, dtype=np.int64))
    if size > 2 ** 32:
        raise XlapyError(f"random: more than 2**32 random values ({shape}) are not supported")
    low = lax.reshape(lax.iota(np.uint32, size), shape) if size else lax.full(shape, 0, np.uint32)
    return lax.full(shape, 0, np.uint32), low


# -- seed, split, fold_in, bits --------------------------------------------------------------------

def seed_array(seed: Any) -> Any:
    """The seed as an integer scalar the way JAX takes it: Python ints become int64 (x64) or wrap to int32."""
    if isinstance(seed, (bool, np.bool_)) or not (isinstance(seed, int) or hasattr(seed, "dtype")):
        raise XlapyError(f"random.PRNGKey: the seed must be an integer scalar, got {seed!r}")
    if isinstance(seed, int):
        return np.asarray(np.int64(seed) if dtypes.config.enable_x64 else np.int64(seed).astype(np.int32))
    a = lax.aval(seed)
    if a.shape != () or a.dtype.kind not in "iu":
        raise XlapyError(f"random.PRNGKey: the seed must be an integer scalar, got {a}")
    return seed


@staged
def threefry_seed(seed):
    """[seed >> 32, seed & 0xFFFFFFFF] as uint32 (the high word is 0 for 32-bit seeds)."""
    a = lax.aval(seed)
    high = lax.shift_right_logical(seed, np.asarray(32, a.dtype))
    if a.dtype.itemsize == 8:
        low = lax.bitwise_and(seed, np.asarray(0xFFFFFFFF, a.dtype))
    else:
        low = seed
    words = [lax.reshape(lax.convert_element_type(w, np.uint32), (1,)) for w in (high, low)]
    return lax.concatenate(words, 0)


@staged
def threefry_split(key, *, shape: tuple[int, ...]):
    k1, k2 = _key_words(key)
    hi, lo = _iota_2x32(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    nd = len(shape)
    return lax.concatenate([lax.expand_dims(b1, (nd,)), lax.expand_dims(b2, (nd,))], nd)


@staged
def threefry_fold_in(key, data):
    return threefry_2x32(key, threefry_seed(data))


@staged
def threefry_random_bits(key, *, bit_width: int, shape: tuple[int, ...]):
    if bit_width not in UINT_DTYPES:
        raise XlapyError(f"random.bits: bit width must be 8, 16, 32 or 64, got {bit_width}")
    k1, k2 = _key_words(key)
    hi, lo = _iota_2x32(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        wide = [lax.convert_element_type(b, dtype) for b in (b1, b2)]
        return lax.bitwise_or(lax.shift_left(wide[0], np.asarray(32, dtype)), wide[1])
    bits = lax.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)
