"""Numerics for the samplers, as XLA:CPU evaluates JAX's programs: a fused multiply-add, erf_inv (XLA's
polynomials) and nextafter. Written over xlapy.lax; lax itself has no erf_inv, nextafter or fma."""
from __future__ import annotations

import numpy as np

from . import lax
from .frontend.tracer import bind
from .hlo import Shape, type_name_of_dtype

__all__ = ["mul_add", "erf_inv", "next_after"]


def _convert_raw(x, dtype):
    """convert without canonicalization (f64 intermediates even when enable_x64 is off)."""
    return bind("convert", [x], shape=Shape.array(type_name_of_dtype(np.dtype(dtype)), lax.aval(x).shape),
                name="convert_element_type")


def mul_add(a, b, c):
    """a * b + c as XLA:CPU computes JAX's `x * y + z`: LLVM contracts the f32/f64 multiply-add into one
    fused multiply-add (one rounding); f16/bf16 round after each op. f32 is computed exactly in f64; f64 by
    error-free transformations (Dekker's product, Knuth's sum), which round once except in rare ties."""
    dt = lax.aval(a).dtype
    if dt == np.float32:
        a64, b64, c64 = (_convert_raw(v, np.float64) for v in (a, b, c))
        return _convert_raw(lax.add(lax.mul(a64, b64), c64), np.float32)
    if dt != np.float64:
        return lax.add(lax.mul(a, b), c)

    def split(x):
        t = lax.mul(x, np.float64(134217729.0))         # 2**27 + 1
        hi = lax.sub(t, lax.sub(t, x))
        return hi, lax.sub(x, hi)
    p = lax.mul(a, b)
    (ah, al), (bh, bl) = split(a), split(b)
    e = lax.add(lax.add(lax.add(lax.sub(lax.mul(ah, bh), p), lax.mul(ah, bl)), lax.mul(al, bh)), lax.mul(al, bl))
    s = lax.add(p, c)
    v = lax.sub(s, p)
    t = lax.add(lax.sub(p, lax.sub(s, v)), lax.sub(c, v))
    return lax.add(s, lax.add(t, e))


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


def erf_inv(x):
    """Inverse error function, XLA's polynomial (f32; f64 in three ranges; f16/bf16 computed in f32)."""
    dt = lax.aval(x).dtype
    if dt == np.float64:
        return _erf_inv64(x)
    if dt == np.float32:
        return _erf_inv32(x)
    return lax.convert_element_type(_erf_inv32(lax.convert_element_type(x, np.float32)), dt)


_ERF_INV32_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV32_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coeffs, arg, dtype, select_with=None):
    """p = c0; p = c_i + p * arg, with `select_with=(pred, other coeffs)` choosing per element."""
    def coef(i):
        if select_with is None:
            return np.asarray(coeffs[i], dtype)
        pred, other = select_with
        shape = lax.aval(pred).shape
        return lax.select(pred, lax.full(shape, coeffs[i], dtype), lax.full(shape, other[i], dtype))
    p = coef(0)
    for i in range(1, len(coeffs)):
        # XLA:CPU fuses each f32 step into an FMA; f64 keeps two roundings (its FMA emulation costs ~17 ops)
        p = mul_add(p, arg, coef(i)) if dtype == np.float32 else lax.add(coef(i), lax.mul(p, arg))
    return p


def _erf_inv_common(x, dtype):
    w = lax.neg(lax.log1p(lax.mul(x, lax.neg(x))))
    at_one = lax.eq(lax.abs(x), np.asarray(1.0, dtype))
    return w, at_one, lax.mul(x, np.asarray(np.inf, dtype))


def _erf_inv32(x):
    f32 = np.dtype(np.float32)
    w, at_one, inf_x = _erf_inv_common(x, f32)
    small = lax.lt(w, np.float32(5))
    arg = lax.select(small, lax.sub(w, np.float32(2.5)), lax.sub(lax.sqrt(w), np.float32(3)))
    p = _horner(_ERF_INV32_SMALL, arg, f32, (small, _ERF_INV32_LARGE))
    return lax.select(at_one, inf_x, lax.mul(p, x))


_ERF_INV64_LT_6_25 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
    -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
    -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)
_ERF_INV64_LT_16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06, -4.013867526981545969e-06, 2.9234449089955446044e-06, 1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
    0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)
_ERF_INV64_GE_16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09, -3.7894654401267369937e-09,
    7.6157012080783393804e-09, -1.4960026627149240478e-08, 2.9147953450901080826e-08, -6.7711997758452339498e-08,
    2.2900482228026654717e-07, -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221)


def _erf_inv64(x):
    f64 = np.dtype(np.float64)
    w, at_one, inf_x = _erf_inv_common(x, f64)
    lt_6_25 = lax.lt(w, np.float64(6.25))
    lt_16 = lax.lt(w, np.float64(16))
    root = lax.sqrt(w)
    arg = lax.select(lt_6_25, lax.sub(w, np.float64(3.125)),
                     lax.sub(root, lax.select(lt_16, lax.full(lax.aval(w).shape, 3.25, f64),
                                              lax.full(lax.aval(w).shape, 5.0, f64))))
    p = lax.select(lt_6_25, _horner(_ERF_INV64_LT_6_25, arg, f64),
                   lax.select(lt_16, _horner(_ERF_INV64_LT_16, arg, f64), _horner(_ERF_INV64_GE_16, arg, f64)))
    return lax.select(at_one, inf_x, lax.mul(p, x))
