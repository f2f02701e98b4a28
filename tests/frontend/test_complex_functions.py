"""xlapy.numpy's complex transcendentals and predicates, eagerly and under jit, on each backend, against numpy:
sin, cos, tan, tanh, expm1, log1p, lax.rsqrt, power, arctan2-free compositions; isinf / isfinite / isnan of
complex arrays (JAX's: isinf is either part infinite, isfinite both parts finite); isposinf of complex raises."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax

INF, NAN = np.inf, np.nan
Z = np.array([0, -0.0, 1 + 2j, -0.5 - 1.5j, 3 - 0.25j, complex(20, 1), complex(-0.3, 30), complex(INF, 1),
              complex(1, INF), complex(NAN, 0), complex(0, NAN), 1e-9 + 1e-9j])
FUNCS = {"sin": (xnp.sin, np.sin), "cos": (xnp.cos, np.cos), "tan": (xnp.tan, np.tan), "tanh": (xnp.tanh, np.tanh),
         "expm1": (xnp.expm1, np.expm1), "log1p": (xnp.log1p, np.log1p),
         "rsqrt": (lax.rsqrt, lambda z: 1 / np.sqrt(z)), "square": (lambda z: z ** 2, lambda z: z ** 2)}
TOL = {np.complex64: 1e-5, np.complex128: 1e-12}


def _all(z):
    return tuple(f(z) for f, _ in FUNCS.values())


_jitted = xlapy.jit(_all)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_functions_eager_and_jit(dtype, x64):
    z = Z.astype(dtype)
    with np.errstate(all="ignore"):
        wants = [ref(z) for _, ref in FUNCS.values()]
    for mode, outs in (("eager", _all(xnp.asarray(z))), ("jit", _jitted(z))):
        for name, got, want in zip(FUNCS, outs, wants):
            got = np.asarray(got)
            assert got.dtype == dtype, (mode, name)
            finite = np.isfinite(want) & (np.abs(Z) > 1e-6)       # log1p: numpy's loses |z| << 1
            np.testing.assert_allclose(got[finite], want[finite], rtol=TOL[dtype], atol=TOL[dtype],
                                       err_msg=f"{mode} {name}")
            assert np.array_equal(np.isnan(got.real), np.isnan(want.real)), (mode, name, got, want)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_predicates(dtype, x64):
    z = Z.astype(dtype)
    for name in ("isinf", "isfinite", "isnan"):
        want = getattr(np, name)(z)
        assert np.array_equal(np.asarray(getattr(xnp, name)(z)), want), name
        assert np.array_equal(np.asarray(xlapy.jit(getattr(xnp, name))(z)), want), name


def test_isposinf_of_complex_raises():
    with pytest.raises(ValueError, match="isposinf.*complex"):
        xnp.isposinf(xnp.asarray(Z))
    assert np.array_equal(np.asarray(xnp.isneginf(xnp.asarray([1.0, -INF, INF]))), [False, True, False])


def test_complex_maximum_minimum_and_reductions():
    # JAX's values (0.10.2): lexicographic on (real, imag) by selects, NaNs as its selects and reducer give them
    nan = np.nan
    z = xnp.array([1 + 2j, 1 - 1j, 3 + 0j, 3 + 1j, complex(nan, 0), complex(nan, nan)], np.complex64)
    w = xnp.array([1 + 3j, 0 + 5j, 3 + 0j, 3 - 1j, 1 + 1j, 2 + 1j], np.complex64)
    np.testing.assert_array_equal(xnp.maximum(z, w), [1 + 3j, 1 - 1j, 3, 3 + 1j, 1 + 1j, 2 + 1j])
    np.testing.assert_array_equal(xnp.minimum(z, w), [1 + 2j, 5j, 3, 3 - 1j, 1 + 1j, 2 + 1j])
    np.testing.assert_array_equal(xnp.fmax(z, w), [1 + 3j, 1 - 1j, 3, 3 + 1j, 1 + 1j, 2 + 1j])
    assert complex(xnp.max(z[:4])) == 3 + 1j and complex(z[:4].min()) == 1 - 1j
    reduce_max = xlapy.jit(lambda v: xnp.max(v))
    for vals, want in (([1 + 2j, complex(nan, 0)], complex(nan, 0)), ([complex(nan, 0), 1 + 2j], 1 + 2j),
                       ([1 + 2j, 1 + 3j, 9j], 1 + 3j)):
        got = complex(reduce_max(xnp.array(vals, np.complex64)))
        assert (np.isnan(got.real) and np.isnan(want.real)) or got == want, (vals, got)
    np.testing.assert_array_equal(xnp.max(z[:4].reshape(2, 2), axis=1), [1 + 2j, 3 + 1j])
