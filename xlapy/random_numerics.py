"""Numerics for the samplers, as XLA:CPU evaluates JAX's programs: a fused multiply-add and erf_inv (XLA's
polynomials; both live in frontend/lax_special_math.py, erf_inv is lax.erf_inv) and nextafter. Over xlapy.lax."""
from __future__ import annotations

import numpy as np

from . import lax
from .frontend.lax_special_math import erf_inv, mul_add

__all__ = ["mul_add", "erf_inv", "next_after"]


def next_after(x, up: bool):
    """nextafter(x, +inf) (up) or nextafter(x, -inf), by stepping the bit pattern."""
    a = lax.aval(x)
    uint = np.dtype(f"uint{a.dtype.itemsize * 8}")
    b = lax.bitcast_convert_type(x, uint)
    one = lax.full(a.shape, 1, uint)
    zero = lax.full(a.shape, 0, a.dtype)
    smallest = lax.bitcast_convert_type(one, a.dtype)
    toward_magnitude = lax.gt(x, zero) if up else lax.lt(x, zero)
    stepped = lax.bitcast_convert_type(lax.select(toward_magnitude, lax.add(b, one), lax.sub(b, one)), a.dtype)
    stepped = lax.select(lax.eq(x, zero), smallest if up else lax.neg(smallest), stepped)
    limit = lax.full(a.shape, np.inf if up else -np.inf, a.dtype)
    keep = lax.bitwise_or(lax.ne(x, x), lax.eq(x, limit))
    return lax.select(keep, x, stepped)
