"""Interpreter: cholesky, triangular-solve and XLA's QR custom-calls (decompositions.py), as HLO text against
numpy and against the properties XLA's definitions promise. tests/corpus/test_tf_ops_corpus.py checks the same
ops against XLA's own outputs."""
import itertools

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.testing import hlo_module

RNG = np.random.default_rng(0)
TYPES = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}


def run(text: str, *args):
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")(*args)


def _normal(shape, ty):
    x = RNG.standard_normal(shape)
    if ty.startswith("c"):
        x = x + 1j * RNG.standard_normal(shape)
    return x


def _hermitian(n, batch, ty):
    a = _normal(batch + (n, n), ty)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(TYPES[ty])


def _dims(shape) -> str:
    return ",".join(map(str, shape))


# -- cholesky ---------------------------------------------------------------------------------------------
def cholesky(a: np.ndarray, ty: str, lower: bool) -> np.ndarray:
    text = hlo_module(f"ROOT r = {ty}[{_dims(a.shape)}] cholesky(p0), lower={str(lower).lower()}",
                      params=[f"{ty}[{_dims(a.shape)}]"])
    return run(text, a)


@pytest.mark.parametrize("ty, lower", list(itertools.product(TYPES, (True, False))))
def test_cholesky_factors_the_selected_triangle(ty, lower):
    a = _hermitian(5, (2,), ty)
    unread = np.triu_indices(5, 1) if lower else np.tril_indices(5, -1)
    garbage = a.copy()
    garbage[..., unread[0], unread[1]] = 99            # the other triangle is never read
    got = cholesky(garbage, ty, lower)
    assert got.dtype == a.dtype
    tol = 1e-5 if ty in ("f32", "c64") else 1e-12
    if lower:
        np.testing.assert_array_equal(got, np.tril(got))
        np.testing.assert_allclose(got @ np.conj(np.swapaxes(got, -1, -2)), a, rtol=tol, atol=tol * 10)
    else:
        np.testing.assert_array_equal(got, np.triu(got))
        np.testing.assert_allclose(np.conj(np.swapaxes(got, -1, -2)) @ got, a, rtol=tol, atol=tol * 10)


def test_cholesky_failure_is_nan_per_batch_element():
    a = _hermitian(3, (3,), "f32")
    a[1] = [[1, 2, 0], [2, 1, 0], [0, 0, 1]]         # indefinite
    got = cholesky(a, "f32", True)
    assert np.isnan(got[1]).all()                    # the whole matrix, the zero triangle too (XLA's)
    assert not np.isnan(got[[0, 2]]).any()


def test_cholesky_complex_diagonal_is_xlas():
    """XLA divides the pivot by its root, so an imaginary part on a's diagonal shows in the result's."""
    a = np.array([[[4, 0, 0], [1 + 1j, 5 + 3j, 0], [1j, 1, 6]]], np.complex64)
    got = cholesky(a, "c64", True)
    np.testing.assert_allclose(got[0, 1, 1], (4.5 + 3j) / np.sqrt(4.5), rtol=1e-6)
    np.testing.assert_allclose(got[0, 1, 0], 0.5 + 0.5j, rtol=1e-6)


def test_cholesky_bf16_rounds_once():
    a = _hermitian(4, (), "f32").astype(ml_dtypes.bfloat16)
    got = cholesky(a, "bf16", True)
    want = np.linalg.cholesky(a.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


# -- triangular-solve -------------------------------------------------------------------------------------
@pytest.mark.parametrize("ty, left, lower, unit, trans", list(itertools.product(
    TYPES, (True, False), (True, False), (True, False), ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"))))
def test_triangular_solve(ty, left, lower, unit, trans):
    a = (_normal((2, 4, 4), ty) + 4 * np.eye(4)).astype(TYPES[ty])
    b = _normal((2, 4, 3) if left else (2, 3, 4), ty).astype(TYPES[ty])
    text = hlo_module(f"ROOT r = {ty}[{_dims(b.shape)}] triangular-solve(p0, p1), left_side={str(left).lower()}, "
                      f"lower={str(lower).lower()}, unit_diagonal={str(unit).lower()}, transpose_a={trans}",
                      params=[f"{ty}[2,4,4]", f"{ty}[{_dims(b.shape)}]"])
    x = run(text, a, b)
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t[..., np.arange(4), np.arange(4)] = 1
    if trans != "NO_TRANSPOSE":
        t = np.swapaxes(t, -1, -2)
    if trans == "ADJOINT":
        t = np.conj(t)
    tol = 1e-4 if ty in ("f32", "c64") else 1e-11
    np.testing.assert_allclose(t @ x if left else x @ t, b, rtol=tol, atol=tol)


def test_triangular_solve_zero_pivot_divides_by_zero():
    a = np.array([[1, 0], [5, 0]], np.float32)
    b = np.array([[1], [1]], np.float32)
    text = hlo_module("ROOT r = f32[2,1] triangular-solve(p0, p1), left_side=true, lower=true, "
                      "transpose_a=NO_TRANSPOSE", params=["f32[2,2]", "f32[2,1]"])
    np.testing.assert_array_equal(run(text, a, b), [[1], [-np.inf]])


# -- Qr, ProductOfElementaryHouseholderReflectors ---------------------------------------------------------
def qr(a: np.ndarray, ty: str):
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    taus = f"{ty}[{_dims(batch + (min(m, n),))}]"
    text = hlo_module(f'ROOT r = ({ty}[{_dims(a.shape)}], {taus}) custom-call(p0), custom_call_target="Qr"',
                      params=[f"{ty}[{_dims(a.shape)}]"])
    return run(text, a)


def householder_product(h: np.ndarray, taus: np.ndarray, ty: str):
    text = hlo_module(f'ROOT r = {ty}[{_dims(h.shape)}] custom-call(p0, p1), '
                      f'custom_call_target="ProductOfElementaryHouseholderReflectors"',
                      params=[f"{ty}[{_dims(h.shape)}]", f"{ty}[{_dims(taus.shape)}]"])
    return run(text, h, taus)


@pytest.mark.parametrize("ty, mn", list(itertools.product(TYPES, [(5, 3), (4, 4), (6, 1)])))
def test_qr_and_householder_product_rebuild_a(ty, mn):
    a = _normal((2,) + mn, ty).astype(TYPES[ty])
    h, taus = qr(a, ty)
    assert taus.shape == (2, min(mn))
    q = householder_product(h, taus, ty)
    r = np.triu(h)[..., :mn[1], :]
    tol = 1e-4 if ty in ("f32", "c64") else 1e-12
    np.testing.assert_allclose(q @ r, a, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, np.broadcast_to(np.eye(mn[1]), (2,) + (mn[1],) * 2),
                               atol=tol)


def test_qr_is_lapacks_compact_form():
    """R's diagonal has the opposite sign of the column's leading entry (beta = -sign(alpha) |x|), the vectors
    below the diagonal are x / (alpha - beta), and an already-zero column has tau = 0."""
    a = np.array([[3.0, 0.0], [4.0, 0.0], [0.0, 0.0]])
    h, taus = qr(a, "f64")
    np.testing.assert_allclose(h[0, 0], -5.0)
    np.testing.assert_allclose(h[1:, 0], np.array([4.0, 0.0]) / (3.0 + 5.0))
    np.testing.assert_allclose(taus, [(-5.0 - 3.0) / -5.0, 0.0])


def test_qr_wide_matrix():
    a = _normal((3, 5), "f32").astype(np.float32)
    h, taus = qr(a, "f32")
    q = householder_product(np.ascontiguousarray(h[:, :3]), taus, "f32")
    np.testing.assert_allclose(q @ np.triu(h), a, rtol=1e-4, atol=1e-5)
