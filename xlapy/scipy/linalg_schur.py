"""xlapy.scipy.linalg's functions over the Schur decomposition, as JAX 0.10.2 defines them.

| function | computed as |
|---|---|
| schur(a, output='real'/'complex') | lax.linalg.schur (LAPACK gees); 'complex' converts a to complex first |
| hessenberg(a, calc_q=False) | lax.linalg.hessenberg (gehrd); H = triu(a', -1), Q = 1 (+) householder_product(a'[1:, :-1], taus) |
| rsf2csf(T, Z) | Givens rotations on T's 2x2 blocks (JAX's fori_loop over the subdiagonal, eigvals of each block) |
| sqrtm(A) | complex Schur form, then Björck-Hammarling's triangular recurrence (fori_loops), Z sqrt(T) Z^H |
| funm(A, func, disp=True) | real Schur, rsf2csf, func on the diagonal, Parlett's recurrence (Golub-Van Loan 11.1.1); disp=False also returns JAX's error estimate |

sqrtm takes blocksize=1 only and funm a single matrix, as JAX.
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..numpy._util import aval

__all__ = ["schur", "hessenberg", "rsf2csf", "sqrtm", "funm"]

_lin = lax.linalg


def _complex_dtype(dtype) -> np.dtype:
    return np.dtype(np.complex128 if np.dtype(dtype) in (np.float64, np.complex128) else np.complex64)


def schur(a, output: str = "real"):
    """(T, Z) with a = Z T Z^H: T upper triangular ('complex') or quasi upper triangular ('real')."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got output={output!r}.")
    a = jnp.asarray(a)
    if output == "complex":
        a = a.astype(_complex_dtype(a.dtype))
    return _lin.schur(a)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """H (zero below the first subdiagonal), or (H, Q) with a = Q H Q^H."""
    a = jnp.asarray(a)
    n = aval(a).shape[-1]
    if n == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    a_out, taus = _lin.hessenberg(a)
    h = jnp.triu(a_out, -1)
    if not calc_q:
        return h
    batch = aval(a_out).shape[:-2]
    dt = aval(a_out).dtype
    if n == 1:
        return h, jnp.ones(batch + (1, 1), dt)
    q = _lin.householder_product(a_out[..., 1:, :-1], taus)
    top = jnp.concatenate([jnp.ones(batch + (1, 1), dt), jnp.zeros(batch + (1, n - 1), dt)], axis=-1)
    bottom = jnp.concatenate([jnp.zeros(batch + (n - 1, 1), dt), q], axis=-1)
    return h, jnp.concatenate([top, bottom], axis=-2)


def _rsf2csf_2d(T, Z):
    dt = _complex_dtype(jnp.result_type(T, Z))
    T, Z = T.astype(dt), Z.astype(dt)
    eps = float(np.finfo(dt).eps)
    N = aval(T).shape[0]
    if N == 1:
        return T, Z

    def update(m, T, Z):
        mu = jnp.linalg.eigvals(lax.dynamic_slice(T, (m - 1, m - 1), (2, 2))) - T[m, m]
        r = jnp.linalg.norm(jnp.stack([mu[0], T[m, m - 1]])).astype(dt)
        c = mu[0] / r
        s = T[m, m - 1] / r
        G = jnp.stack([jnp.stack([jnp.conj(c), s]), jnp.stack([-s, c])])
        T_rows = lax.dynamic_slice_in_dim(T, m - 1, 2, axis=0)
        col_mask = jnp.arange(N) >= m - 1
        rotated = G @ jnp.where(col_mask, T_rows, 0)
        T = lax.dynamic_update_slice_in_dim(T, jnp.where(~col_mask, T_rows, rotated), m - 1, axis=0)
        T_cols = lax.dynamic_slice_in_dim(T, m - 1, 2, axis=1)
        row_mask = jnp.arange(N)[:, None] < m + 1
        rotated = jnp.where(row_mask, T_cols, 0) @ jnp.conj(G).T
        T = lax.dynamic_update_slice_in_dim(T, jnp.where(~row_mask, T_cols, rotated), m - 1, axis=1)
        Z_cols = lax.dynamic_slice_in_dim(Z, m - 1, 2, axis=1)
        Z = lax.dynamic_update_slice_in_dim(Z, Z_cols @ jnp.conj(G).T, m - 1, axis=1)
        return T, Z

    def body(i, TZ):
        m = N - i
        T, Z = TZ
        big = jnp.abs(T[m, m - 1]) > eps * (jnp.abs(T[m - 1, m - 1]) + jnp.abs(T[m, m]))
        T, Z = lax.cond(big, update, lambda m, T, Z: (T, Z), m, T, Z)
        return T.at[m, m - 1].set(0.0), Z

    return lax.fori_loop(1, N, body, (T, Z))


def rsf2csf(T, Z, check_finite: bool = True):
    """The complex Schur form (T', Z') of a real Schur form (T, Z); batch dimensions broadcast."""
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    ts, zs = aval(T).shape, aval(Z).shape
    if len(ts) < 2 or ts[-1] != ts[-2]:
        raise ValueError("Input 'T' must be square.")
    if len(zs) < 2 or zs[-1] != zs[-2]:
        raise ValueError("Input 'Z' must be square.")
    if ts[-1] != zs[-1]:
        raise ValueError(f"Input array shapes must match: Z: {zs} vs. T: {ts}")
    return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


def _sqrtm_triu(T):
    """Björck and Hammarling (1983): the upper triangular square root of an upper triangular T."""
    dt = aval(T).dtype
    diag = jnp.sqrt(jnp.diag(T))
    n = aval(diag).shape[0]
    U = jnp.diag(diag)
    zero = jnp.zeros((), dt)

    def i_loop(l, data):
        j, U = data
        i = j - 1 - l
        s = lax.fori_loop(i + 1, j, lambda k, val: val + U[i, k] * U[k, j], zero)
        value = jnp.where(T[i, j] == s, zero, (T[i, j] - s) / (diag[i] + diag[j]))
        return j, U.at[i, j].set(value)

    def j_loop(j, U):
        _, U = lax.fori_loop(0, j, i_loop, (j, U))
        return U

    return lax.fori_loop(0, n, j_loop, U)


def sqrtm(A, blocksize: int = 1):
    """The principal square root of A (complex), by the complex Schur form."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    T, Z = schur(A, output="complex")
    hi = lax.Precision.HIGHEST
    return jnp.matmul(jnp.matmul(Z, _sqrtm_triu(T), precision=hi), jnp.conj(Z.T), precision=hi)


def _parlett(F, T):
    """Golub and Van Loan's Algorithm 11.1.1: F's strict upper triangle from its diagonal and T."""
    N = aval(T).shape[0]
    minden = jnp.abs(T[0, 0])

    def inner(i, p_F_minden):
        p, F, minden = p_F_minden
        j = i + p
        s = T[i - 1, j - 1] * (F[j - 1, j - 1] - F[i - 1, i - 1])
        ind = (jnp.arange(N) >= i) & (jnp.arange(N) < j - 1)
        val = (jnp.where(ind, T[i - 1], 0) @ jnp.where(ind, F[:, j - 1], 0)
               - jnp.where(ind, F[i - 1], 0) @ jnp.where(ind, T[:, j - 1], 0))
        s = s + val
        den = T[j - 1, j - 1] - T[i - 1, i - 1]
        s = jnp.where(den != 0, s / den, s)
        F = F.at[i - 1, j - 1].set(s)
        return p, F, jnp.minimum(minden, jnp.abs(den))

    def outer(p, F_minden):
        _, F, minden = lax.fori_loop(1, N - p + 1, inner, (p, *F_minden))
        return F, minden

    return lax.fori_loop(1, N, outer, (F, minden))


def funm(A, func, disp: bool = True):
    """func(A) for a function of a matrix's eigenvalues (func maps a vector elementwise), by Parlett's recurrence
    on the complex Schur form; disp=False returns (F, err), JAX's error estimate."""
    A = jnp.asarray(A)
    shape = aval(A).shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError("expected square array_like input")
    T, Z = schur(A)
    T, Z = rsf2csf(T, Z)
    dt = aval(T).dtype
    F = jnp.diag(func(jnp.diag(T))).astype(dt)
    F, minden = _parlett(F, T)
    F = Z @ F @ jnp.conj(Z).T
    if disp:
        return F
    tol = float(np.finfo(np.float32 if dt == np.complex64 else np.float64).eps)
    minden = jnp.where(minden == 0.0, tol, minden)
    inf = jnp.any(jnp.isinf(jnp.real(F)) | jnp.isinf(jnp.imag(F)))
    err = jnp.where(inf, np.inf,
                    jnp.minimum(1, jnp.maximum(tol, (tol / minden) * jnp.linalg.norm(jnp.triu(T, 1), 1))))
    return F, err
