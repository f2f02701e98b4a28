"""xlapy.scipy.linalg's Schur-based functions (schur, hessenberg, rsf2csf, sqrtm, funm) and lax.linalg.schur /
hessenberg against JAX 0.10.2 (schur_data/, from tools/gen_schur_data.py), and JAX-lowered modules with the
`lapack_?gees_ffi` / `lapack_?gehrd_ffi` custom-calls on both backends. A Schur form is unique only up to the
order of the eigenvalues and the signs (phases) of the Schur vectors: schur is checked by its invariants and its
eigenvalues; the rest (Hessenberg by the same Householder convention, the principal sqrtm, funm) by value."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy import numpy as xnp
from xlapy.backends.interpreter import lapack_schur
from xlapy.hlo import parser
from xlapy.scipy import linalg
from xlapy.tools import npz

FOLDER = Path(__file__).parent / "schur_data"
DATA = np.load(FOLDER / "jax_schur.npz")
CASES = {c["key"]: c for c in json.loads(str(DATA["__cases__"]))}
MODULES = sorted(p.stem for p in FOLDER.glob("*.hlo"))
ONCE = pytest.mark.backends("cpu", reason="picks its backends itself, or does not depend on one")


@pytest.fixture
def x64():
    old = xlapy.config.enable_x64
    yield lambda on: xlapy.config.update("jax_enable_x64", on)
    xlapy.config.update("jax_enable_x64", old)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _tol(x) -> float:
    return 1e-9 if np.asarray(x).dtype in (np.float64, np.complex128) else 3e-5


def close(got, want, scale=20.0, like=None):
    """Equal within `scale` times the precision of got's and want's dtypes (or of `like`'s, for values computed
    from them in a wider type)."""
    tol = (_tol(like) if like is not None else max(_tol(got), _tol(want))) * scale
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def eigenvalues(t):
    """A (quasi) triangular t's eigenvalues, sorted by real part (rounded, so a conjugate pair whose real parts
    differ in the last bits keeps its order), then imaginary part."""
    w = np.linalg.eigvals(t.astype(np.complex128)).ravel()
    return w[np.lexsort((w.imag, np.round(w.real, 4)))]


def check_schur(a, got, want):
    t, z = (np.asarray(g) for g in got)
    close(z @ t @ H(z), a)
    close(H(z) @ z, np.broadcast_to(np.eye(a.shape[-1]), a.shape))
    assert np.all(np.tril(t, -2) == 0)
    if np.iscomplexobj(t):
        assert np.all(np.tril(t, -1) == 0)
    else:                                # 2x2 blocks: no two consecutive subdiagonal entries
        sub = np.diagonal(t, -1, -2, -1) != 0
        assert not np.any(sub[..., 1:] & sub[..., :-1])
    # in complex128, but only as precise as t: f32 Schur forms differ in the last bits between LAPACK builds
    close(eigenvalues(t), eigenvalues(want[0]), like=t)


def _run(c):
    ins = [DATA[f"{c['key']}.in{k}"] for k in range(c["n_in"])]
    kw = dict(c["kwargs"])
    if c["func"]:
        kw["func"] = getattr(xnp, c["func"])
    fn = getattr(linalg, c["fn"])
    out = xlapy.jit(lambda *a: fn(*a, **kw))(*ins)
    return ins, out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("key", list(CASES))
def test_matches_jax(key, x64):
    c = CASES[key]
    x64(c["x64"])
    ins, outs = _run(c)
    want = [DATA[f"{key}.out{k}"] for k in range(c["n_out"])]
    assert len(outs) == len(want)
    for g, w in zip(outs, want):
        assert np.asarray(g).shape == w.shape and np.asarray(g).dtype == w.dtype, (g, w.shape, w.dtype)
    if c["fn"] == "schur":
        check_schur(ins[0].astype(np.asarray(outs[0]).dtype), outs, want)
        return
    for k, (g, w) in enumerate(zip(outs, want)):
        close(g, w, 1e3 if c["fn"] == "funm" and k == 1 else 20.0)     # funm's error estimate: a bound


@ONCE
@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("name", MODULES)
def test_jax_modules(name, backend):
    module = parser.parse((FOLDER / f"{name}.hlo").read_text())
    data = npz.load(FOLDER / f"{name}.npz")
    (a,), want = npz.numbered(data, "arg"), npz.numbered(data, "out")
    got = [np.asarray(g) for g in npz.flatten(xlapy.compile(module, backend=backend)(a))]
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
    if name.startswith("schur"):
        check_schur(a.astype(got[0].dtype), got, want)
    else:
        for g, w in zip(got, want):
            close(g, w)


@ONCE
def test_lax_schur_backends_agree():
    a = np.random.RandomState(3).randn(2, 5, 5).astype(np.float32)
    f = lambda x: lax.linalg.schur(x) + lax.linalg.hessenberg(x)           # noqa: E731
    cpu, interp = xlapy.jit(f, backend="cpu")(a), xlapy.jit(f, backend="interpreter")(a)
    for g, w in zip(cpu, interp):
        close(g, w)
    t = xlapy.jit(lambda x: lax.linalg.schur(x, compute_schur_vectors=False))(a)
    close(t, cpu[0])


@ONCE
def test_interpreter_schur_without_scipy(monkeypatch):
    monkeypatch.setattr(lapack_schur, "_scipy_schur", lambda: None)
    rs = np.random.RandomState(5)
    for a in (rs.randn(5, 5), rs.randn(4, 4) + 1j * rs.randn(4, 4)):
        got = xlapy.jit(lambda x: lax.linalg.schur(x), backend="interpreter")(a.astype(np.complex64 if
                                                                                    np.iscomplexobj(a) else
                                                                                    np.float32))
        check_schur(a, got, got)


@ONCE
def test_nonfinite_is_nan():
    a = np.ones((3, 3), np.float32)
    a[2, 1] = np.nan                   # LAPACK's gees (as JAX's) gives NaNs everywhere
    for backend in ("interpreter", "cpu"):
        t, z = xlapy.jit(lambda x: lax.linalg.schur(x), backend=backend)(a)
        assert np.isnan(np.asarray(t)).all() and np.isnan(np.asarray(z)).all()


@ONCE
def test_errors():
    a = np.ones((3, 3), np.float32)
    with pytest.raises(ValueError, match="output"):
        linalg.schur(a, output="bad")
    with pytest.raises(ValueError):
        lax.linalg.schur(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError):
        lax.linalg.schur(np.ones((3, 3), np.int32))
    with pytest.raises(ValueError):
        lax.linalg.hessenberg(np.ones(3, np.float32))
    with pytest.raises(NotImplementedError):
        lax.linalg.schur(a, sort_eig_vals=True)
    with pytest.raises(ValueError, match="match"):
        linalg.rsf2csf(a, np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="square"):
        linalg.rsf2csf(np.ones((2, 3), np.float32), a)
    with pytest.raises(NotImplementedError):
        linalg.sqrtm(a, blocksize=2)
    with pytest.raises(ValueError, match="square"):
        linalg.funm(np.ones((2, 3, 3), np.float32), xnp.exp)


@ONCE
def test_small_sizes():
    one = np.array([[4.0]], np.float32)
    h, q = linalg.hessenberg(one, calc_q=True)
    assert np.asarray(q).tolist() == [[1.0]] and np.asarray(h).tolist() == [[4.0]]
    h, q = linalg.hessenberg(np.zeros((0, 0), np.float32), calc_q=True)
    assert np.asarray(h).shape == (0, 0)
    t, z = linalg.rsf2csf(one, np.ones((1, 1), np.float32))
    assert np.asarray(t).dtype == np.complex64
