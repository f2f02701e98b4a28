"""tests/corpus/linalg/: modules JAX lowered with its CPU LAPACK custom-calls (tools/gen_linalg_corpus.py), run
with `xlapy.compile(..., backend=...)` on the interpreter and the CPU backend against XLA's outputs. Values are
compared where they are unique (solves, determinants, eigenvalues, singular values, LU with its pivots,
gradients); factors LAPACK may sign differently (Q, eigenvectors, singular vectors) by their invariants."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.hlo import parser
from xlapy.tools import npz

FOLDER = Path(__file__).parent / "linalg"
CASES = sorted(p.stem for p in FOLDER.glob("*.hlo"))


def _tol(x) -> float:
    return 1e-9 if np.asarray(x).dtype in (np.float64, np.complex128) else 2e-4


def close(got, want, scale=20.0):
    tol = max(_tol(got), _tol(want)) * scale
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def check_qr(args, got, want):
    (a,), (q, r) = args, got
    close(q[..., :, :r.shape[-2]] @ r, a)
    close(H(q) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2))
    assert np.all(np.tril(r, -1) == 0)
    close(np.abs(np.diagonal(r, axis1=-2, axis2=-1)), np.abs(np.diagonal(want[1], axis1=-2, axis2=-1)))


def check_eigh(args, got, want):
    (a,), (w, v) = args, got
    close(w, want[0])
    close(a @ v, v * w[..., None, :], 100)


def check_svd(args, got, want):
    (a,), (u, s, vh) = args, got
    close(s, want[1])
    k = s.shape[-1]
    close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, 50)


def check_eig(args, got, want):
    (a,), (w, v) = args, got
    close(np.sort_complex(w), np.sort_complex(want[0]), 50)
    close(a @ v, v * w[..., None, :], 100)


CHECKS = {"qr": check_qr, "eigh": check_eigh, "svd": check_svd, "eig": check_eig}


def _check(name: str):
    kind = name.split("_")[0]
    if name.startswith(("qr_", "eigh_", "svd_", "eig_")):
        return CHECKS[kind]
    return None


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("name", CASES)
def test_linalg_corpus_matches_xla(name, backend):
    module = parser.parse((FOLDER / f"{name}.hlo").read_text())
    data = npz.load(FOLDER / f"{name}.npz")
    args, want = npz.numbered(data, "arg"), npz.numbered(data, "out")
    got = npz.flatten(xlapy.compile(module, backend=backend)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).shape == w.shape and np.asarray(g).dtype == w.dtype
    check = _check(name)
    if check is not None:
        check(args, [np.asarray(g) for g in got], want)
        return
    for g, w in zip(got, want):
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(np.asarray(g), w)
        else:
            close(g, w)


def test_corpus_covers_every_lapack_routine():
    text = "".join((FOLDER / f"{n}.hlo").read_text() for n in CASES)
    for routine in ("potrf", "trsm", "geqrf", "orgqr", "ungqr", "syevd", "heevd", "getrf", "gesdd", "gtsv", "geev"):
        assert f"{routine}_ffi" in text, routine
