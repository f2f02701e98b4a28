"""Hyperbolic functions and their inverses of complex arguments (lax.sinh/cosh/asinh/acosh/atanh and the numpy
names): C99's values and the side of each branch cut a signed zero picks, as numpy computes them (the signs of
exact-zero results are not compared). cosh once returned a real number and
acosh took the real formula's large-argument branch."""
import numpy as np
import pytest

import xlapy
import xlapy.lax as lax
import xlapy.numpy as xnp

Z = np.array([1000 + 0j, complex(1000, -0.0), -1000 + 0j, 0j, complex(-0.0, 0), 1 + 2j, 0.5 + 1e-8j, -0.5 + 0.25j,
              3 - 4j, 1e-8 + 1e-9j, 0.09 + 0.02j, 0.11 - 0.01j, 1 + 0j, complex(0.3, -0.0), complex(-3, 0),
              complex(-3, -0.0), 1e-30j, complex(0.5, -0.0), -2 - 3j], np.complex64)
NAMES = ["sinh", "cosh", "arcsinh", "arccosh", "arctanh"]


def _agree(got, want):
    got = np.asarray(got)
    close = np.isclose(got, want, rtol=3e-6, atol=0) | (np.isnan(got) & np.isnan(want)) | (got == want)
    assert close.all(), list(zip(Z[~close], got[~close], want[~close]))     # the cuts' sides: +-pi differ


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("name", NAMES)
def test_numpy_complex_hyperbolic(name, backend):
    got = xlapy.jit(getattr(xnp, name), backend=backend)(Z)
    assert np.asarray(got).dtype == np.complex64
    _agree(got, getattr(np, name)(Z).astype(np.complex64))


@pytest.mark.parametrize("name,lax_name", [("sinh", "sinh"), ("cosh", "cosh"), ("arcsinh", "asinh"),
                                           ("arccosh", "acosh"), ("arctanh", "atanh")])
def test_lax_complex_hyperbolic_eager(name, lax_name):
    _agree(getattr(lax, lax_name)(Z), getattr(np, name)(Z).astype(np.complex64))


def test_real_hyperbolics_unchanged():
    x = np.float32([-3, -0.5, -0.0, 0.0, 1e-8, 0.5, 3, 40])
    for name in ["sinh", "cosh", "arcsinh"]:
        np.testing.assert_allclose(np.asarray(getattr(xnp, name)(x)), getattr(np, name)(x), rtol=2e-6)
    np.testing.assert_allclose(np.asarray(xnp.arctanh(np.float32([-0.5, 0, 1e-8, 0.9]))),
                               np.arctanh(np.float32([-0.5, 0, 1e-8, 0.9])), rtol=2e-6)
    np.testing.assert_allclose(np.asarray(xnp.arccosh(np.float32([1, 2, 1e30]))),
                               np.arccosh(np.float32([1, 2, 1e30])), rtol=2e-6)
