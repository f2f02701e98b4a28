"""rng-bit-generator, bit-exactly as XLA expands it (xla/service/rng_bit_generator_expander.cc over
xla/hlo/builder/lib/prng.cc): ThreeFry-2x32 (20 rounds) and Philox-4x32 (10 rounds) in numpy uint32.

State layouts (u64 vectors): three-fry is [key, counter]; philox is [key, counter] (the 128-bit counter is
(low=counter, high=key) and only its low word is written back) or [key, counter_low, counter_high].
rng_default means philox, as on XLA:CPU and XLA:GPU. Narrow outputs (8/16-bit) keep the low bits of
32-bit draws; 64-bit outputs join two 32-bit words (low first).
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import UnimplementedError

U32, U64 = np.uint32, np.uint64
_MASK32 = U64(0xFFFFFFFF)


def _lo(x: np.ndarray) -> np.ndarray:
    return (x & _MASK32).astype(U32)


def _hi(x: np.ndarray) -> np.ndarray:
    return (x >> U64(32)).astype(U32)


def _join(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(U64) | (hi.astype(U64) << U64(32))


def _rotl(v: np.ndarray, r: int) -> np.ndarray:
    return (v << U32(r)) | (v >> U32(32 - r))


# -- the two block ciphers -------------------------------------------------------------------------

_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(x0: np.ndarray, x1: np.ndarray, k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011), key injection every 4 rounds."""
    ks = (U32(k0), U32(k1), U32(0x1BD11BDA ^ k0 ^ k1))
    x0 = np.asarray(x0, U32) + ks[0]
    x1 = np.asarray(x1, U32) + ks[1]
    for block in range(5):
        for r in _THREEFRY_ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + U32((int(ks[(block + 2) % 3]) + block + 1) & 0xFFFFFFFF)
    return x0, x1


_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (U64(0xD2511F53), U64(0xCD9E8D57))


def philox4x32(ctr: list[np.ndarray], k0: int, k1: int) -> list[np.ndarray]:
    """Philox-4x32 with 10 rounds; the key is bumped by the Weyl constants after every round."""
    x = [np.asarray(c, U32) for c in ctr]
    key = [k0 & 0xFFFFFFFF, k1 & 0xFFFFFFFF]
    for _ in range(10):
        p0 = x[0].astype(U64) * _PHILOX_M[0]
        p1 = x[2].astype(U64) * _PHILOX_M[1]
        x = [_hi(p1) ^ x[1] ^ U32(key[0]), _lo(p1), _hi(p0) ^ x[3] ^ U32(key[1]), _lo(p0)]
        key = [(key[0] + _PHILOX_W[0]) & 0xFFFFFFFF, (key[1] + _PHILOX_W[1]) & 0xFFFFFFFF]
    return x


# -- three-fry bit generator ------------------------------------------------------------------------

def split_halves(dims: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """XLA's SplitShapeIntoHalves: the first even dim (else the largest) is halved (rounded up)."""
    if not dims:
        return -1, (1,)
    even = [i for i, d in enumerate(dims) if d % 2 == 0]
    split = even[0] if even else max(range(len(dims)), key=lambda i: (dims[i], -i))
    half = list(dims)
    half[split] = -(-dims[split] // 2)
    return split, tuple(half)


def _threefry_bits32(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    split, half = split_halves(dims)
    n = math.prod(half)
    ctr = U64(counter) + np.arange(n, dtype=U64)
    y0, y1 = threefry2x32(_lo(ctr), _hi(ctr), key & 0xFFFFFFFF, key >> 32)
    if split < 0:
        return y0.reshape(()), (counter + n) & 0xFFFFFFFFFFFFFFFF
    y0, y1 = y0.reshape(half), y1.reshape(half)
    # Halves interleave along the split dim: element 2h+k of it comes from y_k at h.
    both = np.stack([y0, y1], axis=split + 1)
    joined = both.reshape(half[:split] + (2 * half[split],) + half[split + 1:])
    out = joined[tuple(slice(0, d) for d in dims)]
    return np.array(out, order="C"), (counter + n) & 0xFFFFFFFFFFFFFFFF


def _threefry_bits64(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    n = math.prod(dims)
    ctr = U64(counter) + np.arange(n, dtype=U64)
    y0, y1 = threefry2x32(_lo(ctr), _hi(ctr), key & 0xFFFFFFFF, key >> 32)
    return _join(y0, y1).reshape(dims), (counter + n) & 0xFFFFFFFFFFFFFFFF


# -- philox bit generator ----------------------------------------------------------------------------

def _philox_blocks(key: int, lo: int, hi: int, blocks: int) -> tuple[list[np.ndarray], int, int]:
    """`blocks` Philox outputs for the 128-bit counters (hi:lo) + 0..blocks-1, and the counter after them."""
    iota = np.arange(blocks, dtype=U64)
    new_lo = U64(lo) + iota
    new_hi = np.where(new_lo < U64(lo), U64((hi + 1) & 0xFFFFFFFFFFFFFFFF), U64(hi))
    ctr = [_lo(new_lo), _hi(new_lo), _lo(new_hi), _hi(new_hi)]
    out = philox4x32(ctr, key & 0xFFFFFFFF, key >> 32)
    end_lo = (lo + blocks) & 0xFFFFFFFFFFFFFFFF
    end_hi = (hi + 1) & 0xFFFFFFFFFFFFFFFF if end_lo < lo else hi
    return out, end_lo, end_hi


def _philox_bits32(key: int, lo: int, hi: int, dims: tuple[int, ...]):
    n = math.prod(dims)
    words, lo2, hi2 = _philox_blocks(key, lo, hi, -(-n // 4))
    flat = np.stack(words, axis=1).reshape(-1)[:n]
    return flat.reshape(dims), lo2, hi2


def _philox_bits64(key: int, lo: int, hi: int, dims: tuple[int, ...]):
    n = math.prod(dims)
    w, lo2, hi2 = _philox_blocks(key, lo, hi, -(-2 * n // 4))
    flat = np.stack([_join(w[0], w[1]), _join(w[2], w[3])], axis=1).reshape(-1)[:n]
    return flat.reshape(dims), lo2, hi2


# -- the op ----------------------------------------------------------------------------------------

def rng_bit_generator(algorithm: str, state: np.ndarray, dims: tuple[int, ...], dtype: np.dtype):
    """(new_state, bits) for `rng-bit-generator(state), algorithm=...` producing `dtype[dims]`."""
    dtype = np.dtype(dtype)
    bits = dtype.itemsize * 8
    if bits not in (8, 16, 32, 64) or dtype.kind == "c" or dtype == np.bool_:
        raise UnimplementedError(f"rng-bit-generator: output type {dtype} is not supported")
    s = [int(v) for v in np.asarray(state, U64).reshape(-1)]
    key = s[0]
    if algorithm == "rng_three_fry":
        if bits == 64:
            raw, counter = _threefry_bits64(key, s[1], dims)
        else:
            raw, counter = _threefry_bits32(key, s[1], dims)
        new_state = [key, counter] + s[2:]
    elif algorithm in ("rng_philox", "rng_default"):
        lo, hi = (s[1], s[2]) if len(s) >= 3 else (s[1], s[0])
        gen = _philox_bits64 if bits == 64 else _philox_bits32
        raw, lo2, hi2 = gen(key, lo, hi, dims)
        new_state = [key, lo2, hi2] + s[3:] if len(s) >= 3 else [key, lo2]
    else:
        raise UnimplementedError(f"rng-bit-generator: unknown algorithm {algorithm!r}")
    unsigned = np.dtype(f"u{bits // 8}")
    out = raw.astype(unsigned).view(dtype)   # narrow types keep the low bits of each 32-bit draw
    return np.asarray(new_state, U64).reshape(np.shape(state)), out
