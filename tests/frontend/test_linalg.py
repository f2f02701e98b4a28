"""xlapy.lax.linalg, xlapy.numpy.linalg and xlapy.scipy.linalg against numpy/scipy, on both backends (the
`backend` fixture of conftest.py). Decompositions are checked by their invariants (reconstruction,
orthogonality, triangularity, eigen-equations), which hold whatever signs or phases LAPACK picks; functions of a
matrix (inv, det, norms ...) by value. float32, float64 (x64) and complex64; batched inputs; eager and jit;
bad inputs."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

import xlapy
import xlapy.numpy as xnp
import xlapy.scipy.linalg as xsl
from xlapy import lax

L = lax.linalg
rng = np.random.default_rng(0)
TOL = {np.float32: 2e-4, np.complex64: 2e-4, np.float64: 1e-9, np.complex128: 1e-9}


def rand(shape, dtype=np.float32):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def spd(shape, dtype=np.float32):
    a = rand(shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def close(got, want, dtype=np.float32, scale=1.0):
    tol = TOL[np.dtype(dtype).type] * scale
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def run(fn, jit, *args):
    return (xlapy.jit(fn) if jit else fn)(*args)


DTYPES = [np.float32, np.complex64]
SHAPES = [(3, 3), (4, 3), (3, 5), (2, 4, 3)]


@pytest.fixture(params=[False, True], ids=["eager", "jit"])
def jit(request):
    return request.param


# -- lax.linalg ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype, jit):
    a = spd((2, 4, 4), dtype)
    got = np.asarray(run(L.cholesky, jit, a))
    close(got, np.linalg.cholesky(a), dtype)
    bad = -np.eye(3, dtype=dtype)
    assert np.isnan(np.asarray(run(L.cholesky, jit, bad))).all()


@pytest.mark.parametrize("left,lower,trans,unit", [(True, True, False, False), (True, False, True, False),
                                                   (False, True, True, True), (False, False, False, False)])
def test_triangular_solve(left, lower, trans, unit, jit):
    a = rand((2, 3, 3)) + 3 * np.eye(3, dtype=np.float32)
    b = rand((2, 3, 4) if left else (2, 4, 3))
    got = run(lambda a, b: L.triangular_solve(a, b, left_side=left, lower=lower, transpose_a=trans,
                                              unit_diagonal=unit), jit, a, b)
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - t * np.eye(3) + np.eye(3)
    op = np.swapaxes(t, -1, -2) if trans else t
    want = np.linalg.solve(op, b) if left else np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2),
                                                                            np.swapaxes(b, -1, -2)), -1, -2)
    close(got, want, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_qr(dtype, shape, full, jit):
    a = rand(shape, dtype)
    q, r = (np.asarray(v) for v in run(lambda x: L.qr(x, full_matrices=full), jit, a))
    m, n = shape[-2:]
    k = m if full else min(m, n)
    assert q.shape == shape[:-2] + (m, k) and r.shape == shape[:-2] + (k, n)
    close(q @ r, a, dtype, 5)
    close(H(q) @ q, np.broadcast_to(np.eye(k), shape[:-2] + (k, k)), dtype, 5)
    assert np.all(np.tril(r, -1) == 0)


@pytest.mark.parametrize("dtype", DTYPES + [np.float64])
def test_eigh(dtype, jit, x64):
    a = spd((2, 4, 4), dtype)
    v, w = (np.asarray(t) for t in run(L.eigh, jit, a))
    close(w, np.linalg.eigvalsh(a), dtype, 20)
    close(a @ v, v * w[..., None, :], dtype, 50)
    assert np.all(np.diff(w, axis=-1) >= 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_lu(dtype, shape, jit):
    a = rand(shape, dtype)
    lu, piv, perm = (np.asarray(t) for t in run(L.lu, jit, a))
    m, n = shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    pa = np.take_along_axis(a, perm[..., :, None], axis=-2)
    close(lower @ upper, pa, dtype, 5)
    assert piv.dtype == np.int32 and perm.dtype == np.int32
    flat_a = a.reshape((-1,) + shape[-2:])
    for i, x in enumerate(flat_a):          # scipy's pivots (LAPACK's) agree exactly
        _, spiv = sla.lu_factor(x) if m == n else (None, None)
        if spiv is not None:
            np.testing.assert_array_equal(piv.reshape(-1, k)[i], spiv)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_svd(dtype, shape, full, jit):
    a = rand(shape, dtype)
    u, s, vh = (np.asarray(t) for t in run(lambda x: L.svd(x, full_matrices=full), jit, a))
    m, n = shape[-2:]
    k = min(m, n)
    close(s, np.linalg.svd(a, compute_uv=False), dtype, 5)
    close((u[..., :, :k] * s[..., None, :].astype(u.dtype)) @ vh[..., :k, :], a, dtype, 10)
    assert u.shape[-1] == (m if full else k) and vh.shape[-2] == (n if full else k)
    close(H(u) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2), dtype, 10)
    s_only = np.asarray(run(lambda x: L.svd(x, compute_uv=False), jit, a))
    close(s_only, s, dtype, 5)


def test_tridiagonal_solve(jit):
    n = 5
    dl, d, du = rand((2, n)), rand((2, n)) + 4, rand((2, n))
    dl[:, 0] = 0
    du[:, -1] = 0
    b = rand((2, n, 3))
    got = run(L.tridiagonal_solve, jit, dl, d, du, b)
    mat = np.zeros((2, n, n), np.float32)
    for i in range(2):
        mat[i] = np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1)
    close(got, np.linalg.solve(mat, b), scale=10)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eig(dtype, jit):
    a = rand((2, 4, 4), dtype)
    w, vl, vr = (np.asarray(t) for t in run(L.eig, jit, a))
    close(a @ vr, vr * w[..., None, :], dtype, 50)
    close(H(vl) @ a, w[..., :, None] * H(vl), dtype, 50)
    close(np.linalg.norm(vr, axis=-2), np.ones((2, 4)), dtype, 10)


def test_lu_pivots_to_permutation(jit):
    piv = np.array([[2, 1, 2], [0, 2, 3]], np.int32)
    got = np.asarray(run(lambda p: L.lu_pivots_to_permutation(p, 4), jit, piv))
    np.testing.assert_array_equal(got, [[2, 1, 0, 3], [0, 2, 3, 1]])


# -- numpy.linalg ----------------------------------------------------------------------------------------------
def _sq():
    return rand((3, 3)) + 2 * np.eye(3, dtype=np.float32)


VALUE_CASES = [
    ("inv", lambda: (xnp.linalg.inv, np.linalg.inv, (_sq(),))),
    ("inv batched", lambda: (xnp.linalg.inv, np.linalg.inv, (rand((2, 3, 3)) + 3 * np.eye(3, dtype=np.float32),))),
    ("solve", lambda: (xnp.linalg.solve, np.linalg.solve, (_sq(), rand((3, 2))))),
    ("solve vector", lambda: (xnp.linalg.solve, np.linalg.solve, (_sq(), rand((3,))))),
    ("det", lambda: (xnp.linalg.det, np.linalg.det, (rand((2, 3, 3)),))),
    ("slogdet", lambda: (lambda a: tuple(xnp.linalg.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)),
                         (rand((2, 4, 4)),))),
    ("pinv", lambda: (xnp.linalg.pinv, np.linalg.pinv, (rand((4, 3)),))),
    ("matrix_rank", lambda: (xnp.linalg.matrix_rank, np.linalg.matrix_rank,
                             (np.outer(rand(4), rand(3)).astype(np.float32),))),
    ("cond", lambda: (xnp.linalg.cond, np.linalg.cond, (_sq(),))),
    ("cond fro", lambda: (lambda a: xnp.linalg.cond(a, "fro"), lambda a: np.linalg.cond(a, "fro"), (_sq(),))),
    ("matrix_power", lambda: (lambda a: xnp.linalg.matrix_power(a, 5), lambda a: np.linalg.matrix_power(a, 5),
                              (_sq() / 3,))),
    ("matrix_power -2", lambda: (lambda a: xnp.linalg.matrix_power(a, -2), lambda a: np.linalg.matrix_power(a, -2),
                                 (_sq(),))),
    ("multi_dot", lambda: (lambda a, b, c: xnp.linalg.multi_dot([a, b, c]),
                           lambda a, b, c: np.linalg.multi_dot([a, b, c]), (rand(3), rand((3, 4)), rand((4, 2))))),
    ("tensorinv", lambda: (xnp.linalg.tensorinv, np.linalg.tensorinv, (rand((2, 3, 6)),))),
    ("tensorsolve", lambda: (xnp.linalg.tensorsolve, np.linalg.tensorsolve, (rand((2, 3, 6)), rand((2, 3))))),
    ("eigvalsh", lambda: (xnp.linalg.eigvalsh, np.linalg.eigvalsh, (spd((2, 3, 3)),))),
    ("svdvals", lambda: (xnp.linalg.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), (rand((2, 4, 3)),))),
    ("lstsq", lambda: (lambda a, b: xnp.linalg.lstsq(a, b)[0], lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
                       (rand((5, 3)), rand((5, 2))))),
    ("cross", lambda: (xnp.linalg.cross, np.cross, (rand((2, 3)), rand((2, 3))))),
    ("outer", lambda: (xnp.linalg.outer, np.outer, (rand(3), rand(4)))),
    ("trace", lambda: (xnp.linalg.trace, lambda a: np.trace(a, axis1=-2, axis2=-1), (rand((2, 3, 3)),))),
    ("diagonal", lambda: (xnp.linalg.diagonal, lambda a: np.diagonal(a, axis1=-2, axis2=-1), (rand((2, 3, 4)),))),
    ("vecdot", lambda: (xnp.linalg.vecdot, lambda a, b: np.sum(np.conj(a) * b, -1), (rand((2, 3)), rand((2, 3))))),
    ("matrix_transpose", lambda: (xnp.linalg.matrix_transpose, lambda a: np.swapaxes(a, -1, -2),
                                  (rand((2, 3, 4)),))),
    ("det int", lambda: (xnp.linalg.det, lambda a: np.linalg.det(a).astype(np.float32),
                         (np.array([[2, 1], [1, 3]], np.int32),))),
]


@pytest.mark.parametrize("name,case", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_numpy_linalg_values(name, case, jit):
    ours, theirs, args = case()
    got = run(ours, jit, *args)
    want = theirs(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            close(g, w, scale=10)
    else:
        close(got, want, scale=10)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms(ord):
    a = rand((3, 4))
    close(xnp.linalg.norm(a, ord), np.linalg.norm(a, ord), scale=10)
    close(xnp.linalg.matrix_norm(rand((2, 3, 4)) * 0 + a, ord=ord if ord is not None else "fro"),
          np.linalg.norm(a, ord), scale=10)


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, np.inf, -np.inf, -1])
def test_vector_norms(ord):
    a = rand((3, 4))
    close(xnp.linalg.norm(a, ord, axis=1), np.linalg.norm(a, ord, axis=1), scale=10)
    close(xnp.linalg.vector_norm(a, ord=2 if ord is None else ord), np.linalg.norm(a.ravel(), ord), scale=10)
    close(xnp.linalg.norm(a, axis=0, keepdims=True), np.linalg.norm(a, axis=0, keepdims=True), scale=10)


@pytest.mark.parametrize("mode", ["reduced", "complete", "r", "raw"])
def test_numpy_qr_modes(mode):
    a = rand((4, 3))
    got = xnp.linalg.qr(a, mode=mode)
    want = np.linalg.qr(a, mode=mode)
    if mode == "r":
        close(np.abs(got), np.abs(want), scale=5)
    elif mode == "raw":
        close(np.abs(got[0]), np.abs(want[0]), scale=5)
        close(np.abs(got[1]), np.abs(want[1]), scale=5)
    else:
        q, r = got
        close(np.asarray(q) @ np.asarray(r), a, scale=5)
        assert np.asarray(q).shape == want[0].shape


def test_numpy_decomposition_results():
    a = spd((3, 3))
    res = xnp.linalg.eigh(a)
    close(a @ np.asarray(res.eigenvectors), np.asarray(res.eigenvectors) * np.asarray(res.eigenvalues), scale=20)
    u, s, vh = xnp.linalg.svd(rand((4, 3)), full_matrices=False)
    assert np.asarray(u).shape == (4, 3)
    hs = xnp.linalg.svd(a, hermitian=True)
    close(np.asarray(hs.U) * np.asarray(hs.S) @ np.asarray(hs.Vh), a, scale=20)
    close(xnp.linalg.cholesky(a, upper=True), np.linalg.cholesky(a).T)
    w, v = xnp.linalg.eig(a)
    close(a @ np.asarray(v), np.asarray(v) * np.asarray(w), np.complex64, 50)
    close(np.sort(np.asarray(xnp.linalg.eigvals(a)).real), np.sort(np.linalg.eigvals(a).real), scale=50)


def test_public_names_are_jax_numpy_linalg():
    names = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
             "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm",
             "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve",
             "trace", "vecdot", "vector_norm"]
    assert [n for n in names if not hasattr(xnp.linalg, n)] == []


def test_x64_dtypes(x64):
    a = spd((3, 3), np.float64)
    assert np.asarray(xnp.linalg.inv(a)).dtype == np.float64
    close(xnp.linalg.inv(a), np.linalg.inv(a), np.float64, 10)
    q, r = xnp.linalg.qr(a)
    close(np.asarray(q) @ np.asarray(r), a, np.float64, 10)
    close(xnp.linalg.det(a), np.linalg.det(a), np.float64, 10)


# -- scipy.linalg ----------------------------------------------------------------------------------------------
def test_scipy_linalg(jit):
    a = spd((3, 3))
    b = rand((3, 2))
    g = _sq()
    close(run(xsl.cholesky, jit, a), sla.cholesky(a))
    close(run(lambda a, b: xsl.cho_solve(xsl.cho_factor(a), b), jit, a, b), sla.cho_solve(sla.cho_factor(a), b),
          scale=10)
    for trans in (0, 1, 2):
        for lower in (True, False):
            close(run(lambda g, b: xsl.solve_triangular(g, b, trans=trans, lower=lower), jit, g, b),
                  sla.solve_triangular(g, b, trans=trans, lower=lower), scale=10)
    p, l, u = (np.asarray(t) for t in run(xsl.lu, jit, g))
    sp, sl_, su = sla.lu(g)
    close(p, sp)
    close(l, sl_, scale=5)
    close(u, su, scale=5)
    lf = run(xsl.lu_factor, jit, g)
    for trans in (0, 1):
        close(run(lambda lu, piv, b: xsl.lu_solve((lu, piv), b, trans=trans), jit, lf[0], lf[1], b),
              sla.lu_solve(sla.lu_factor(g), b, trans=trans), scale=10)
    q, r = run(xsl.qr, jit, rand((4, 3)))
    assert np.asarray(q).shape == (4, 4)
    close(run(lambda a: xsl.eigh(a, eigvals_only=True), jit, a), sla.eigh(a, eigvals_only=True), scale=20)
    close(run(lambda a, b: xsl.solve(a, b, assume_a="pos"), jit, a, b), np.linalg.solve(a, b), scale=10)
    close(run(xsl.expm, jit, g), sla.expm(g), scale=50)
    close(run(xsl.expm, jit, 4 * g), sla.expm(4 * g), scale=200)
    close(xsl.block_diag(g, b, 1.0), sla.block_diag(g, b, 1.0))
    close(run(xsl.det, jit, g), np.linalg.det(g), scale=10)


# -- errors ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,match", [
    (lambda: xnp.linalg.inv(np.ones(3, np.float32)), "at least two-dimensional"),
    (lambda: xnp.linalg.det(np.ones((2, 3), np.float32)), "square"),
    (lambda: xnp.linalg.qr(np.ones((2, 3), np.float32), mode="bad"), "mode"),
    (lambda: L.eigh(np.ones((2, 3), np.float32)), "square"),
    (lambda: L.cholesky(np.ones((3, 3), np.int32)), "floating-point"),
    (lambda: L.qr(np.ones((3, 3), np.float16)), "float32, float64"),
    (lambda: L.triangular_solve(np.eye(3, dtype=np.float32), np.ones((4, 2), np.float32), left_side=True),
     "does not match"),
    (lambda: L.tridiagonal_solve(np.ones(3, np.float32), np.ones(4, np.float32), np.ones(3, np.float32),
                                 np.ones((3, 1), np.float32)), "same shape"),
    (lambda: xnp.linalg.outer(np.ones((2, 2)), np.ones(2)), "one-dimensional"),
    (lambda: xnp.linalg.norm(np.ones((2, 2)), "bad"), "Invalid order"),
    (lambda: xnp.linalg.cross(np.ones(2), np.ones(2)), "3-dimensional"),
])
def test_errors(call, match):
    with pytest.raises(xlapy.XlapyError, match=match):
        call()
