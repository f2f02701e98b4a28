"""Gradients of the decompositions and of the functions built on them, both modes, against central finite
differences in float64 (on both backends, through conftest's `backend` fixture): reverse mode (grad) against
the finite-difference gradient, forward mode (jvp) against the finite-difference directional derivative.
Outputs with a sign or phase freedom (eigenvectors, singular vectors) are observed through sign-invariant
functions (|v|), as in JAX's tests."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
import xlapy.scipy.linalg as xsl
from xlapy import lax

L = lax.linalg
rng = np.random.default_rng(1)


def _w(*shape):
    return rng.standard_normal(shape)


A = _w(3, 3)
SPD = A @ A.T + 3 * np.eye(3)
RECT = _w(4, 3)
WIDE = _w(3, 4)
C33, C43, C34, C3 = _w(3, 3), _w(4, 3), _w(3, 4), _w(3)
TRI = A + 3 * np.eye(3)

CASES = [
    ("cholesky", lambda x: xnp.sum(L.cholesky(x) * C33), SPD),
    ("triangular_solve left lower", lambda x: xnp.sum(L.triangular_solve(x, C43.T, left_side=True, lower=True)
                                                      * C34), TRI),
    ("triangular_solve right upper T", lambda x: xnp.sum(L.triangular_solve(x, C43, lower=False, transpose_a=True)
                                                         * C43), TRI),
    ("triangular_solve unit", lambda x: xnp.sum(L.triangular_solve(x, C33, left_side=True, lower=True,
                                                                   unit_diagonal=True) * C33), TRI),
    ("triangular_solve b", lambda x: xnp.sum(L.triangular_solve(TRI, x, left_side=True, lower=True) * C33), C33),
    ("eigh values", lambda x: xnp.sum(L.eigh(x)[1] * C3), SPD),
    ("eigh vectors", lambda x: xnp.sum(xnp.abs(L.eigh(x)[0]) * C33), SPD),
    ("eigh upper", lambda x: xnp.sum(L.eigh(x, lower=False, symmetrize_input=False)[1] * C3), SPD),
    ("svd values", lambda x: xnp.sum(L.svd(x, compute_uv=False) * C3), RECT),
    ("svd tall", lambda x: xnp.sum(xnp.abs(L.svd(x, full_matrices=False)[0]) * C43)
     + xnp.sum(xnp.abs(L.svd(x, full_matrices=False)[2]) * C33), RECT),
    ("svd wide", lambda x: xnp.sum(xnp.abs(L.svd(x, full_matrices=False)[2]) * C34)
     + xnp.sum(L.svd(x, full_matrices=False)[1] * C3), WIDE),
    ("lu square", lambda x: xnp.sum(L.lu(x)[0] * C33), A),
    ("lu tall", lambda x: xnp.sum(L.lu(x)[0] * C43), RECT),
    ("lu wide", lambda x: xnp.sum(L.lu(x)[0] * C34), WIDE),
    ("qr reduced", lambda x: xnp.sum(L.qr(x, full_matrices=False)[0] * C43)
     + xnp.sum(L.qr(x, full_matrices=False)[1] * C33), RECT),
    ("qr square", lambda x: xnp.sum(L.qr(x)[0] * C33) + xnp.sum(L.qr(x)[1] * C33), A),
    ("det", xnp.linalg.det, A),
    ("slogdet", lambda x: xnp.linalg.slogdet(x)[1], A),
    ("inv", lambda x: xnp.sum(xnp.linalg.inv(x) * C33), A),
    ("solve a", lambda x: xnp.sum(xnp.linalg.solve(x, C33) * C33), A),
    ("solve b", lambda x: xnp.sum(xnp.linalg.solve(A, x) * C33), C33),
    ("pinv", lambda x: xnp.sum(xnp.linalg.pinv(x) * C34), RECT),
    ("norm 2", lambda x: xnp.linalg.norm(x, 2), RECT),
    ("cho_solve", lambda x: xnp.sum(xsl.cho_solve(xsl.cho_factor(x), C33) * C33), SPD),
    ("batched eigh", lambda x: xnp.sum(L.eigh(x)[1] * C3), np.stack([SPD, SPD + np.eye(3)])),
]


def _fd(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        out[idx] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return out


@pytest.mark.parametrize("name,f,x", CASES, ids=[c[0] for c in CASES])
def test_grad_and_jvp_match_finite_differences(name, f, x, x64):
    x = np.asarray(x, np.float64)
    fd = _fd(f, x)
    g = np.asarray(xlapy.grad(f)(x))
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    t = rng.standard_normal(x.shape)
    _, jt = xlapy.jvp(f, (x,), (t,))
    np.testing.assert_allclose(float(jt), float(np.sum(fd * t)), rtol=1e-5, atol=1e-6)


def test_grad_under_jit(x64):
    f = lambda x: xnp.sum(xnp.linalg.inv(x) * C33)
    np.testing.assert_allclose(np.asarray(xlapy.jit(xlapy.grad(f))(A)), np.asarray(xlapy.grad(f)(A)), rtol=1e-10)


def test_unsupported_derivatives_say_so():
    with pytest.raises(xlapy.XlapyError, match="full_matrices"):
        xlapy.grad(lambda x: xnp.sum(L.svd(x)[0]))(np.ones((4, 3), np.float32))
    with pytest.raises(xlapy.XlapyError, match="full_matrices QR"):
        xlapy.grad(lambda x: xnp.sum(L.qr(x)[0]))(np.ones((4, 3), np.float32))
    with pytest.raises(xlapy.XlapyError, match="m >= n"):
        xlapy.grad(lambda x: xnp.sum(L.qr(x)[1]))(np.ones((3, 4), np.float32))
    # complex QR and singular vectors have rules: test_linalg_complex_decomp_grads.py
