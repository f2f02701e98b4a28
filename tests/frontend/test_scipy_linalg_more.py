"""xlapy.scipy.linalg's special matrices and the decompositions built over the existing ones (polar,
qr_multiply, expm_frechet, eigh_tridiagonal, solve_sylvester) against JAX 0.10.2's outputs
(scipy_linalg_data/jax_scipy_linalg.npz, from tools/gen_scipy_linalg_data.py), in float32 and float64, on both
backends; plus that xlapy has all of JAX's names (the Schur-based ones are tested in test_scipy_linalg_schur.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.scipy import linalg

DATA = np.load(Path(__file__).parent / "scipy_linalg_data" / "jax_scipy_linalg.npz")
CASES = {c["key"]: c for c in json.loads(str(DATA["__cases__"]))}

JAX_NAMES = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion", "convolution_matrix",
             "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet", "fiedler", "fiedler_companion", "funm",
             "hadamard", "hankel", "helmert", "hessenberg", "hilbert", "inv", "invhilbert", "invpascal", "leslie",
             "lu", "lu_factor", "lu_solve", "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve",
             "solve_sylvester", "solve_triangular", "sqrtm", "svd", "toeplitz"]       # dir(jax.scipy.linalg), 0.10.2
NOT_YET: set = set()                 # schur, hessenberg, rsf2csf, sqrtm, funm: test_scipy_linalg_schur.py

SIGN_FREE = {"qr_multiply"}          # Householder signs may differ between LAPACK builds: compare magnitudes


@pytest.fixture
def x64(request):
    old = xlapy.config.enable_x64
    yield lambda on: xlapy.config.update("jax_enable_x64", on)
    xlapy.config.update("jax_enable_x64", old)


def _run(c, jit=False):
    ins = [DATA[f"{c['key']}.in{k}"] for k in range(c["n_in"])]
    kw = dict(c["kwargs"])
    if "select_range" in kw:
        kw["select_range"] = tuple(kw["select_range"])
    fn = getattr(linalg, c["fn"])
    if jit:
        out = xlapy.jit(lambda *a: fn(*a, *c["static"], **kw))(*ins)
    else:
        out = fn(*ins, *c["static"], **kw)
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("key", list(CASES))
def test_matches_jax(key, x64):
    c = CASES[key]
    x64(c["x64"])
    outs = _run(c)
    assert len(outs) == c["n_out"]
    for k, got in enumerate(outs):
        got, want = np.asarray(got), DATA[f"{key}.out{k}"]
        assert got.shape == want.shape, (k, got.shape, want.shape)
        assert got.dtype == want.dtype, (k, got.dtype, want.dtype)
        if c["fn"] in SIGN_FREE and k == 0:
            got, want = np.abs(got), np.abs(want)
        if c["fn"] in SIGN_FREE and k == 1:
            got, want = np.abs(got), np.abs(want)
        tol = 1e-9 if c["x64"] else 2e-5
        if c["fn"] in ("expm_frechet", "polar", "invhilbert", "invpascal", "pascal", "solve_sylvester"):
            tol = 1e-7 if c["x64"] else 2e-4
        if c["fn"] == "pascal":          # float32 lgamma even under x64, as JAX
            tol = 2e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10, err_msg=f"{key} out{k}")


@pytest.mark.parametrize("key", ["toeplitz.f32", "fiedler_companion.f32", "convolution_same.f32", "polar.f32",
                                 "eigh_tridiagonal.f32", "expm_frechet.f32"])
def test_under_jit(key, x64):
    c = CASES[key]
    x64(False)
    for k, got in enumerate(_run(c, jit=True)):
        want = DATA[f"{key}.out{k}"]
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-4)


def test_eigh_tridiagonal_vectors():
    d = np.array([1., 2., 3., 4., -1.], np.float32)
    e = np.array([0.5, 0.3, -0.2, 1.1], np.float32)
    w, v = linalg.eigh_tridiagonal(d, e)
    T = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(T @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-4)
    np.testing.assert_allclose(np.asarray(v).T @ np.asarray(v), np.eye(5), atol=1e-5)


def test_errors():
    with pytest.raises(ValueError):
        linalg.hadamard(6)
    with pytest.raises(ValueError):
        linalg.convolution_matrix(np.ones(3, np.float32), 0)
    with pytest.raises(ValueError):
        linalg.leslie(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError):
        linalg.dft(4, scale="bad")
    with pytest.raises(NotImplementedError):
        linalg.polar(np.ones((2, 3), np.float32))
    with pytest.raises(NotImplementedError):
        linalg.eigh_tridiagonal(np.ones(3, np.float32), np.ones(2, np.float32), select="v")


def test_names_match_jax():
    missing = {n for n in JAX_NAMES if not hasattr(linalg, n)}
    assert missing == NOT_YET


def test_solve_sylvester_singular_is_nan():
    eye = np.eye(2, dtype=np.float32)
    for method in ("schur", "eigen"):
        assert np.isnan(np.asarray(linalg.solve_sylvester(eye, -eye, eye, method=method))).all()
    with pytest.raises(ValueError):
        linalg.solve_sylvester(eye, eye, eye, method="bad")
