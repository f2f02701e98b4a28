"""Derivatives of the eigenvalues of real non-symmetric matrices (the geev custom-call's rules in
frontend/autodiff/rules_decompositions.py) against JAX 0.10.2's (eig_grad_data/, from
tools/gen_eig_grad_data.py): jvp of jnp.linalg.eigvals (matched eigenvalue by eigenvalue: LAPACK builds may order
them differently) and the gradient of a real function of them; eigenvector derivatives with JAX's opt-in
(enable_eigvec_derivs=True; an error without it, as in JAX);
and the complex Hermitian eigh's (heevd) and a complex matrix's eigvals inside a real function."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy import numpy as xnp
from xlapy.frontend.autodiff.rules_common import AutodiffError

DATA = np.load(Path(__file__).parent / "eig_grad_data" / "eig_grads.npz")
KEYS = [str(k) for k in DATA["__keys__"]]


@pytest.fixture
def x64():
    old = xlapy.config.enable_x64
    yield lambda on: xlapy.config.update("jax_enable_x64", on)
    xlapy.config.update("jax_enable_x64", old)


def loss(x):
    w = xnp.linalg.eigvals(x)
    return xnp.sum(xnp.real(w) ** 3 + xnp.imag(w) ** 2 * xnp.real(w))


@pytest.mark.parametrize("key", KEYS)
def test_eigvals_derivatives_match_jax(key, x64):
    a, t = DATA[f"{key}.a"], DATA[f"{key}.t"]
    x64(a.dtype == np.float64)
    tol = 1e-9 if a.dtype == np.float64 else 2e-4
    w, dw = (np.asarray(v) for v in xlapy.jit(lambda x, t: xlapy.jvp(xnp.linalg.eigvals, (x,), (t,)))(a, t))
    want_w, want_dw = DATA[f"{key}.w"], DATA[f"{key}.jvp"]
    assert dw.dtype == want_dw.dtype and dw.shape == want_dw.shape
    order = np.argmin(np.abs(w[..., :, None] - want_w[..., None, :]), axis=-1)      # got j is want order[j]
    np.testing.assert_allclose(w, np.take_along_axis(want_w, order, -1), rtol=tol, atol=tol)
    np.testing.assert_allclose(dw, np.take_along_axis(want_dw, order, -1), rtol=10 * tol, atol=10 * tol)
    g = np.asarray(xlapy.jit(xlapy.grad(loss))(a))
    np.testing.assert_allclose(g, DATA[f"{key}.grad"], rtol=10 * tol, atol=10 * tol)


@pytest.mark.backends("cpu", reason="an error raised while tracing: the backend does not matter")
def test_eigenvector_derivatives_are_an_error():
    a = DATA["f32.a"]
    with pytest.raises(AutodiffError, match="enable_eigvec_derivs"):
        xlapy.jvp(lambda x: xnp.linalg.eig(x)[0], (a,), (a,))


def herm_loss(x, y):
    w, v = xnp.linalg.eigh(xlapy.lax.complex(x, y))
    return xnp.sum(w ** 2) + xnp.sum(xnp.abs(v[..., 0, :]) ** 2 * w)


def ceig_loss(x, y):
    w = xnp.linalg.eigvals(xlapy.lax.complex(x, y))
    return xnp.sum(xnp.real(w) ** 3 + xnp.imag(w) ** 2 * xnp.real(w))


def eigvec_loss(x, y=None):
    if y is not None:
        x = xlapy.lax.complex(x, y)
    w, vl, vr = xlapy.lax.linalg.eig(x, enable_eigvec_derivs=True)
    rows = xnp.arange(vr.shape[-2])[:, None]
    return (xnp.sum(xnp.real(vr) * rows) + xnp.sum(xnp.imag(vl) ** 2) + xnp.sum(xnp.imag(vr))
            + xnp.sum(xnp.real(w) ** 2))


@pytest.mark.parametrize("key", [str(k) for k in DATA["__eigvec__"]])
def test_eigenvector_derivatives_match_jax(key, x64):
    """enable_eigvec_derivs=True: JAX's eigenvector JVP (LAPACK's normalization) and its transpose."""
    a, t = DATA[f"{key}.a"], DATA[f"{key}.t"]
    x64(a.dtype == np.float64)
    tol = 1e-9 if a.dtype == np.float64 else 2e-4
    value, tangent = xlapy.jit(lambda x, t: xlapy.jvp(eigvec_loss, (x,), (t,)))(a, t)
    g = xlapy.jit(xlapy.grad(eigvec_loss))(a)
    for got, name in ((value, "value"), (tangent, "jvp"), (g, "grad")):
        np.testing.assert_allclose(np.asarray(got), DATA[f"{key}.{name}"], rtol=50 * tol, atol=50 * tol,
                                   err_msg=name)


@pytest.mark.parametrize("key", [str(k) for k in DATA["__herm__"]])
def test_complex_eigh_derivatives_match_jax(key, x64):
    """heevd's rules: a real function of the eigenvalues and eigenvector moduli of a complex Hermitian matrix;
    geev's on complex input (ceig_*): a real function of a complex matrix's eigenvalues."""
    x, y, tx, ty = (DATA[f"{key}.{n}"] for n in ("x", "y", "tx", "ty"))
    x64(x.dtype == np.float64)
    tol = 1e-9 if x.dtype == np.float64 else 2e-4
    loss = {"ceig": ceig_loss, "ceigvec": eigvec_loss, "herm": herm_loss}[key.split("_")[0]]
    value, tangent = xlapy.jit(lambda *a: xlapy.jvp(loss, a[:2], a[2:]))(x, y, tx, ty)
    gx, gy = xlapy.jit(xlapy.grad(loss, argnums=(0, 1)))(x, y)
    for got, name in ((value, "value"), (tangent, "jvp"), (gx, "gx"), (gy, "gy")):
        np.testing.assert_allclose(np.asarray(got), DATA[f"{key}.{name}"], rtol=20 * tol, atol=20 * tol,
                                   err_msg=name)
