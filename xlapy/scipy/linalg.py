"""xlapy.scipy.linalg: jax.scipy.linalg's common functions over xlapy.lax.linalg and xlapy.numpy.linalg.

cholesky (upper by default, as SciPy), cho_factor / cho_solve, solve_triangular, lu (p, l, u), lu_factor /
lu_solve, qr (modes full, economic, r), eigh (standard problem), svd, inv, solve (assume_a 'gen' or 'pos'), det,
expm (scaling and squaring with a degree-13 Padé approximant), block_diag. `overwrite_*` and `check_finite`
are accepted and ignored, as in JAX.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..numpy._util import arr, aval, error

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "inv", "lu", "lu_factor",
           "lu_solve", "qr", "solve", "solve_triangular", "svd"]

_lin = lax.linalg


def _inexact(*xs):
    return jnp.linalg._inexact("scipy.linalg", *xs)


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    (a,) = _inexact(a)
    L = _lin.cholesky(a)
    return L if lower else jnp.conj(jnp.swapaxes(L, -1, -2))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    c, lower = c_and_lower
    c, b = _inexact(c, b)
    vector = aval(b).ndim == 1
    if vector:
        b = b[:, None]
    # A = L L^H: L y = b, L^H x = y (for upper c = U: U^H y = b, U x = y)
    y = _lin.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower, conjugate_a=not lower)
    x = _lin.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower, conjugate_a=lower)
    return x[..., 0] if vector else x


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug=None, check_finite: bool = True):
    a, b = _inexact(a, b)
    mode = {0: "N", 1: "T", 2: "C", "N": "N", "T": "T", "C": "C"}.get(trans)
    if mode is None:
        raise error("scipy.linalg.solve_triangular", f"Invalid 'trans' value {trans!r}")
    vector = aval(b).ndim == aval(a).ndim - 1
    if vector:
        b = b[..., None]
    x = _lin.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=mode != "N",
                              conjugate_a=mode == "C", unit_diagonal=unit_diagonal)
    return x[..., 0] if vector else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    (a,) = _inexact(a)
    lu_, _, perm = _lin.lu(a)
    m, n = aval(a).shape[-2:]
    k = min(m, n)
    dt = aval(a).dtype
    p = (perm[..., None, :] == jnp.arange(m, dtype=np.int32)[:, None]).astype(dt)
    l = jnp.tril(lu_[..., :, :k], -1) + jnp.eye(m, k, dtype=dt)
    u = jnp.triu(lu_[..., :k, :])
    if permute_l:
        return jnp.matmul(p, l), u
    return p, l, u


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    (a,) = _inexact(a)
    lu_, pivots, _ = _lin.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True):
    lu_, piv = lu_and_piv
    lu_, b = _inexact(lu_, b)
    m = aval(lu_).shape[-1]
    perm = _lin.lu_pivots_to_permutation(arr(piv).astype(np.int32), m)
    vector = aval(b).ndim == 1
    if vector:
        b = b[:, None]
    if trans == 0:
        x = b[..., perm, :] if aval(perm).ndim == 1 else jnp.take_along_axis(b, perm[..., :, None], axis=-2)
        x = _lin.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        x = _lin.triangular_solve(lu_, x, left_side=True, lower=False)
    elif trans in (1, 2):
        conj = trans == 2
        x = _lin.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
        x = _lin.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
                                  conjugate_a=conj)
        inv_perm = jnp.argsort(perm, axis=-1).astype(np.int32)
        x = x[..., inv_perm, :] if aval(perm).ndim == 1 else jnp.take_along_axis(x, inv_perm[..., :, None], axis=-2)
    else:
        raise error("scipy.linalg.lu_solve", f"'trans' value must be 0, 1, or 2, got {trans}")
    return x[..., 0] if vector else x


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    (a,) = _inexact(a)
    if pivoting:
        raise error("scipy.linalg.qr", "pivoting=True is not supported")
    if mode not in ("full", "economic", "r"):
        raise error("scipy.linalg.qr", f"Unsupported QR decomposition mode '{mode}'")
    q, r = _lin.qr(a, full_matrices=(mode != "economic"))
    return (r,) if mode == "r" else (q, r)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1, check_finite: bool = True):
    if b is not None:
        raise error("scipy.linalg.eigh", "the generalized eigenvalue problem (b is not None) is not supported")
    if eigvals is not None:
        raise error("scipy.linalg.eigh", "eigvals (a subset) is not supported")
    (a,) = _inexact(a)
    v, w = _lin.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    (a,) = _inexact(a)
    return _lin.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    return jnp.linalg.inv(a)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          check_finite: bool = True, assume_a: str = "gen"):
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise error("scipy.linalg.solve", f"Expected assume_a to be one of 'gen', 'sym', 'her', 'pos'; got {assume_a!r}")
    if assume_a == "pos":
        a, b = _inexact(a, b)
        return cho_solve(cho_factor(a, lower=lower), b)
    return jnp.linalg.solve(a, b)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    return jnp.linalg.det(a)


def block_diag(*arrs):
    if not arrs:
        return jnp.zeros((1, 0))
    arrs = [jnp.atleast_2d(arr(x)) for x in arrs]
    if any(aval(x).ndim != 2 for x in arrs):
        raise error("scipy.linalg.block_diag", "arguments must have dimension <= 2")
    dt = jnp.result_type(*arrs)
    rows = sum(aval(x).shape[0] for x in arrs)
    cols = sum(aval(x).shape[1] for x in arrs)
    out = jnp.zeros((rows, cols), dt)
    r = c = 0
    for x in arrs:
        m, n = aval(x).shape
        out = out.at[r:r + m, c:c + n].set(x.astype(dt))
        r, c = r + m, c + n
    return out


# -- expm ---------------------------------------------------------------------------------------------------------
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """exp(A) by scaling and squaring: A / 2^s has 1-norm <= theta_13, exp of it by the degree-13 Padé
    approximant, then s squarings (s <= max_squarings; NaN beyond, as JAX)."""
    (A,) = _inexact(A)
    a = aval(A)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise error("scipy.linalg.expm", f"expected a square matrix (or a batch), got shape {a.shape}")
    n = a.shape[-1]
    norm1 = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)
    s = jnp.maximum(0, jnp.ceil(jnp.log2(norm1 / _THETA13))).astype(np.int32)
    s = jnp.where(jnp.isfinite(norm1), s, 0).astype(np.int32)
    scale = jnp.exp2(-s.astype(jnp.real(A).dtype)).astype(a.dtype)
    X = A * scale[..., None, None]
    b = _PADE13
    ident = jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), a.shape)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * ident)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * ident
    R = jnp.linalg.solve(V - U, V + U)
    smax = jnp.max(s)

    def square(i, R):
        squared = R @ R
        keep = (i < s)[..., None, None]
        return jnp.where(keep, squared, R)
    R = lax.fori_loop(0, jnp.minimum(smax, max_squarings), square, R)
    bad = (s > max_squarings)[..., None, None] | ~jnp.isfinite(norm1)[..., None, None]
    return jnp.where(bad, jnp.nan, R).astype(a.dtype)
