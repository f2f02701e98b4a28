"""xlapy.scipy.linalg: jax.scipy.linalg's common functions over xlapy.lax.linalg and xlapy.numpy.linalg.

cholesky (upper by default, as SciPy), cho_factor / cho_solve, solve_triangular, lu (p, l, u), lu_factor /
lu_solve, qr (modes full, economic, r), eigh (standard problem), svd, inv, solve (assume_a 'gen' or 'pos'), det,
expm (scaling and squaring with a degree-13 Padé approximant), block_diag; JAX's special matrices (toeplitz,
hankel, circulant, leslie, companion, fiedler, fiedler_companion, convolution_matrix, hilbert, invhilbert, pascal,
invpascal, helmert, hadamard, dft); polar (through the SVD), qr_multiply, expm_frechet (the JVP of expm, as JAX)
eigh_tridiagonal (JAX's Sturm-count bisection) and solve_sylvester (JAX's methods: 'schur', Bartels-Stewart,
and 'eigen'). `overwrite_*` and `check_finite` are accepted and ignored, as
in JAX. schur, hessenberg, rsf2csf, sqrtm and funm (over LAPACK's gees / gehrd) are in linalg_schur.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..numpy._util import arr, aval, error

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion", "convolution_matrix", "det",
           "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet", "fiedler", "fiedler_companion", "hadamard",
           "hankel", "helmert", "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve",
           "pascal", "polar", "qr", "qr_multiply", "solve", "solve_sylvester", "solve_triangular", "svd",
           "toeplitz", "schur", "hessenberg", "rsf2csf", "sqrtm", "funm"]

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


# -- special matrices (JAX's constructions) ------------------------------------------------------------------------
def _promote_inexact(name, *xs):
    from ..numpy._util import promote_inexact
    return promote_inexact(f"scipy.linalg.{name}", *xs)


def toeplitz(c, r=None):
    """A[i, j] = c[i - j] for i >= j, r[j - i] otherwise (r defaults to conj(c)); batched over leading axes."""
    c = jnp.atleast_1d(arr(c))
    r = jnp.conjugate(c) if r is None else jnp.atleast_1d(arr(r))
    return jnp.vectorize(_toeplitz, signature="(m),(n)->(m,n)")(c, r)


def _toeplitz(c, r):
    m, n = aval(c).shape[0], aval(r).shape[0]
    dt = jnp.result_type(c, r)
    if m == 0 or n == 0:
        return jnp.zeros((m, n), dt)
    elems = jnp.concatenate((c[::-1], r[1:])).astype(dt)          # elems[m - 1 - i + j]
    idx = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return elems[idx]


def hankel(c, r=None):
    """H[i, j] = v[i + j] with v = concatenate([c, r[1:]]) (r defaults to zeros)."""
    c = arr(c)
    r = jnp.zeros_like(c) if r is None else arr(r)
    if aval(c).ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if aval(r).ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    return jnp.vectorize(_hankel, signature="(m),(n)->(m,n)")(c, r)


def _hankel(c, r):
    m, n = aval(c).shape[0], aval(r).shape[0]
    dt = jnp.result_type(c, r)
    if m == 0 or n == 0:
        return jnp.zeros((m, n), dt)
    v = jnp.concatenate((c, r[1:])).astype(dt)
    return v[np.arange(m)[:, None] + np.arange(n)[None, :]]


def circulant(c):
    """A[i, j] = c[(i - j) mod n]."""
    def one(c):
        n = aval(c).shape[0]
        return c[(np.arange(n)[:, None] - np.arange(n)[None, :]) % n]
    return jnp.vectorize(one, signature="(n)->(n,n)")(jnp.atleast_1d(arr(c)))


def leslie(f, s):
    """The Leslie matrix: f as its first row, s on the first sub-diagonal."""
    f, s = jnp.atleast_1d(arr(f)), jnp.atleast_1d(arr(s))
    if aval(f).shape[-1] < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape {aval(f).shape}.")
    if aval(s).shape[-1] != aval(f).shape[-1] - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis must be one less than "
                         f"the length of f; got f shape {aval(f).shape} and s shape {aval(s).shape}.")
    dt = jnp.result_type(f, s)

    def one(f, s):
        return jnp.diag(s.astype(dt), k=-1).at[0].set(f.astype(dt))
    return jnp.vectorize(one, signature="(n),(m)->(n,n)")(f, s)


def companion(a):
    """The companion matrix of the polynomial a: first row -a[1:] / a[0], ones on the first sub-diagonal."""
    (a,) = _promote_inexact("companion", a)
    a = jnp.atleast_1d(a)
    if aval(a).shape[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape {aval(a).shape}.")

    def one(a):
        first = -a[1:] / a[0]
        m = aval(a).shape[0] - 1
        return jnp.eye(m, m, k=-1, dtype=aval(first).dtype).at[0].set(first)
    return jnp.vectorize(one, signature="(n)->(m,m)")(a)


def fiedler(a):
    """F[i, j] = |a[i] - a[j]|."""
    a = jnp.atleast_1d(arr(a))
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The pentadiagonal Fiedler companion matrix of the polynomial a."""
    (a,) = _promote_inexact("fiedler_companion", a)
    a = jnp.atleast_1d(a)
    if aval(a).shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero length, but got an array "
                         f"of shape {aval(a).shape}.")

    def one(a):
        n = aval(a).shape[0] - 1
        dt = aval(a).dtype
        if n == 0:
            return jnp.zeros((0, 0), dt)
        a = a / a[0]
        if n == 1:
            return -a[1:].reshape(1, 1)
        i = np.arange(n)[:, None]
        j = np.arange(n)[None, :]
        sup = -a[np.broadcast_to(np.minimum(i + 2, n), (n, n))]
        sub = -a[np.broadcast_to(np.minimum(i + 1, n), (n, n))]
        even, odd = i % 2 == 0, i % 2 == 1
        conds = [(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even, (j == i + 2) & even,
                 (j == i - 1) & even & (i >= 2), (j == i - 2) & odd & (i >= 3)]
        one_, zero = np.asarray(1, dt), np.asarray(0, dt)
        return jnp.select([jnp.asarray(cnd) for cnd in conds], [-a[1], one_, sup, one_, sub, one_], default=zero)
    return jnp.vectorize(one, signature="(n)->(m,m)")(a)


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix A with A @ v == jnp.convolve(a, v, mode) for v of length n."""
    import operator
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    a = arr(a)
    if aval(a).ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = aval(a).shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {aval(a).shape}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    pad = [(0, 0)] * (aval(a).ndim - 1) + [(0, n - 1)]
    az = jnp.pad(a, pad)
    raz = jnp.pad(jnp.flip(a, axis=-1), pad)
    L = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    return toeplitz(az[..., tb:L - te], raz[..., L - n - tb:L - tb])


def _default_float():
    from ..frontend.dtypes import config
    return np.float64 if config.enable_x64 else np.float32


def _default_complex():
    from ..frontend.dtypes import config
    return np.complex128 if config.enable_x64 else np.complex64


def hilbert(n: int):
    """H[i, j] = 1 / (i + j + 1)."""
    a = np.arange(n, dtype=_default_float())[:, None]
    return 1 / (jnp.asarray(a) + jnp.asarray(a.T) + 1)


def _comb(N, k):
    from .special import comb
    return comb(N, k)


def invhilbert(n: int):
    """The inverse of the Hilbert matrix, in closed form through binomial coefficients (as floats)."""
    a = jnp.arange(n, dtype=_default_float())
    i, j = a[:, None], a[None, :]
    s = i + j
    return ((-1.0) ** s * (s + 1.0) * _comb(n + i, n - j - 1) * _comb(n + j, n - i - 1) * _comb(s, i) ** 2)


def _binom(n, k):
    return lax.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


def _kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be one of: ['symmetric', 'lower', 'upper']; got {kind}")
    return kind


def pascal(n: int, kind: str | None = None):
    """The Pascal matrix, its binomial coefficients through lgamma (float32, as JAX: not exact)."""
    kind = _kind(kind)
    a = jnp.arange(n, dtype=np.float32)
    L = _binom(a[:, None], a[None, :])
    if kind == "lower":
        return L
    if kind == "upper":
        return L.T
    return jnp.dot(L, L.T)


def invpascal(n: int, kind: str | None = None):
    """The inverse of the Pascal matrix: (-1)^(i-j) binom(i, j) for the lower one."""
    kind = _kind(kind)
    a = jnp.arange(n, dtype=_default_float())
    i, j = a[:, None], a[None, :]
    L = (-1.0) ** (i - j) * _binom(i, j)
    if kind == "lower":
        return L
    if kind == "upper":
        return L.T
    return jnp.dot(L.T, L)


def helmert(n: int, full: bool = False):
    """The Helmert matrix ((n-1) x n, or n x n with full=True)."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    dt = _default_float()
    i = np.arange(n - 1)[:, None]
    j = np.arange(n)[None, :]
    k = jnp.asarray((i + 1).astype(dt))
    denom = jnp.sqrt(k * (k + 1))
    H = jnp.where(jnp.asarray(j <= i), 1.0 / denom, jnp.where(jnp.asarray(j == i + 1), -k / denom,
                                                               jnp.zeros_like(denom)))
    if full:
        H = jnp.concatenate([jnp.full((1, n), 1.0 / np.sqrt(n), dtype=dt), H], axis=0)
    return H


def hadamard(n: int, dtype=int):
    """The Sylvester-construction Hadamard matrix of order n (a power of 2)."""
    import math
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    H = jnp.ones((1, 1), dtype=dtype)
    for _ in range(int(math.log2(n))):
        H = jnp.block([[H, H], [H, -H]])
    return H


def dft(n: int, scale: str | None = None, *, dtype=None):
    """W[i, j] = exp(-2 pi i ij / n), scaled by 1/sqrt(n) ('sqrtn') or 1/n ('n')."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    if dtype is None:
        dtype = _default_complex()
    elif np.dtype(dtype).kind != "c":
        raise ValueError(f"dtype must be a complex floating-point type; got {np.dtype(dtype)}.")
    a = jnp.arange(n, dtype=dtype)
    w = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        w = w / np.sqrt(n)
    elif scale == "n":
        w = w / n
    return w.astype(dtype)


# -- decompositions over the existing ones --------------------------------------------------------------------------
def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """The polar decomposition a = U P (side 'right') or P U ('left'), through the SVD (JAX's 'svd' method; its
    default 'qdwh' iteration converges to the same factors)."""
    a = arr(a)
    if aval(a).ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    m, n = aval(a).shape[-2:]
    if method == "qdwh" and ((side == "right" and m < n) or (side == "left" and m > n)):
        raise NotImplementedError("method='qdwh' only supports mxn matrices where m < n where side='right' and "
                                  f"m >= n side='left', got {aval(a).shape} with side={side!r}")
    (a,) = _inexact(a)
    u, s, vh = _lin.svd(a, full_matrices=False)
    s = s.astype(aval(u).dtype)
    unitary = u @ vh
    if side == "right":
        posdef = (jnp.conj(jnp.swapaxes(vh, -1, -2)) * s[..., None, :]) @ vh
    else:
        posdef = (u * s[..., None, :]) @ jnp.conj(jnp.swapaxes(u, -1, -2))
    return unitary, posdef


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """Q @ c (mode 'left') or c @ Q ('right') with Q from the QR decomposition of a, and R (economic)."""
    a, c = _inexact(a, c)
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    if pivoting:
        raise error("scipy.linalg.qr_multiply", "pivoting=True is not supported")
    onedim = aval(c).ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = aval(a).shape[-2:]
    k = min(m, n)
    if mode == "left" and aval(c).shape[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape {aval(a).shape} so Q "
                         f"has {k} columns, but c has {aval(c).shape[-2]} rows (expected {k}).")
    if mode == "right" and aval(c).shape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape {aval(a).shape} so Q "
                         f"has {m} rows, but c has {aval(c).shape[-1]} columns (expected {m}).")
    q, r = _lin.qr(a, full_matrices=False)                  # q: (m, k)
    if conjugate:
        q = jnp.conj(q)
    cq = q @ c if mode == "left" else c @ q
    if onedim:
        cq = cq.ravel()
    return cq, jnp.triu(r[..., :k, :])


def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
    """The Fréchet derivative of expm at A in direction E (the JVP of expm, as JAX), and expm(A)."""
    from ..frontend.transforms import jvp as _jvp
    A, E = arr(A), arr(E)
    sa, se = aval(A).shape, aval(E).shape
    if len(sa) < 2 or sa[-2] != sa[-1]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={sa}")
    if len(se) < 2 or se[-2] != se[-1]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={se}")
    if sa != se:
        raise ValueError(f"expected A and E to be the same shape, got A.shape={sa} E.shape={se}")
    (A,) = _inexact(A)
    E = E.astype(aval(A).dtype)
    expA, frechet = _jvp(lambda X: expm(X, upper_triangular=False, max_squarings=16), (A,), (E,))
    return (expA, frechet) if compute_expm else frechet


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a", select_range=None, tol=None,
                     key=None):
    """Eigenvalues (ascending) of the symmetric / Hermitian tridiagonal matrix with diagonal d and off-diagonal
    e, by JAX's bisection on Sturm sequence counts; select 'a' (all) or 'i' (indices select_range[0] ..
    select_range[1]). The eigenvectors (eigvals_only=False) come from eigh of the dense matrix, not JAX's inverse
    iteration, so their signs may differ from JAX's."""
    alpha, beta = arr(d), arr(e)
    if aval(alpha).dtype != aval(beta).dtype:
        raise TypeError(f"diagonal and off-diagonal values must have same dtype, got {aval(alpha).dtype} and "
                        f"{aval(beta).dtype}")
    dt = aval(alpha).dtype
    if dt not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"jax.scipy.linalg.eigh_tridiagonal, got {dt} and {aval(beta).dtype}")
    n = aval(alpha).shape[0]
    if n <= 1:
        return jnp.real(alpha) if eigvals_only else (jnp.real(alpha), jnp.eye(n, dtype=dt))
    d0, e0 = alpha, beta
    if dt.kind == "c":
        alpha = jnp.real(alpha)
        beta_sq = jnp.real(beta * jnp.conj(beta))
        beta_abs = jnp.sqrt(beta_sq)
    else:
        beta_abs = jnp.abs(beta)
        beta_sq = jnp.square(beta)
    rdt = aval(alpha).dtype
    row_sum = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]], axis=0)
    lam_max = jnp.max(alpha + row_sum)
    lam_min = jnp.min(alpha - row_sum)
    t_norm = jnp.maximum(jnp.abs(lam_min), jnp.abs(lam_max))
    finfo = np.finfo(rdt)
    one = np.ones([], rdt)
    safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
    pivmin = safemin * jnp.maximum(one, jnp.max(beta_sq))
    alpha0_pert = jnp.square(finfo.eps * beta_abs[0])
    abs_tol = finfo.eps * t_norm
    if tol is not None:
        abs_tol = jnp.maximum(np.asarray(tol, rdt), abs_tol)
    max_it = finfo.nmant + 1
    if select == "a":
        targets = np.arange(n, dtype=np.int32)
    elif select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError("Got empty index range in select_range.")
        targets = np.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    else:
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
    fudge = 2.1
    slack = np.asarray(n, rdt) * fudge * finfo.eps * t_norm
    shape = targets.shape
    lower = jnp.broadcast_to(lam_min - slack - 2 * fudge * pivmin, shape)
    upper = jnp.broadcast_to(lam_max + slack + fudge * pivmin, shape)
    targets = jnp.asarray(targets)

    def sturm(x):
        q = alpha[0] - x
        count = (q < 0).astype(np.int32)
        q = jnp.where(alpha[0] == x, alpha0_pert, q)

        def step(i, qc):
            q, count = qc
            q = alpha[i] - beta_sq[i - 1] / q - x
            neg = q <= pivmin
            return jnp.where(neg, jnp.minimum(q, -pivmin), q), jnp.where(neg, count + 1, count)
        _, count = lax.fori_loop(1, n, step, (q, count))
        return count

    def cond(s):
        i, lo, _, hi = s
        return (i < max_it) & (abs_tol < jnp.max(hi - lo))

    def body(s):
        i, lo, mid, hi = s
        counts = sturm(mid)
        lo = jnp.where(counts <= targets, mid, lo)
        hi = jnp.where(counts > targets, mid, hi)
        return i + 1, lo, 0.5 * (lo + hi), hi
    _, _, w, _ = lax.while_loop(cond, body, (jnp.asarray(0, np.int32), lower, 0.5 * (lower + upper), upper))
    if eigvals_only:
        return w
    dense = jnp.diag(d0) + jnp.diag(e0, k=-1) + jnp.diag(jnp.conj(e0), k=1)
    v, _ = _lin.eigh(dense, lower=True)
    if select == "i":
        v = v[:, select_range[0]:select_range[1] + 1]
    return w, v


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """X with A X + X B = C; NaN where some eigenvalue pair has |lambda_A + lambda_B| < tol (as JAX).

    Both methods are JAX's: 'eigen' diagonalizes A and B with eig; 'schur' (the default) is Bartels-Stewart:
    complex Schur forms A = U R U^H, B^H = V S V^H, then R Y + Y S^H = U^H C V by a scan over Y's entries from
    the bottom-right corner, X = U Y V^H."""
    A, B, C = _inexact(A, B, C)
    m, n = aval(C).shape[-2:]
    if aval(A).shape[-2:] != (m, m) or aval(B).shape[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {aval(A).shape}\nB: {aval(B).shape}\n"
                         f"C: {aval(C).shape}")
    if method not in ("schur", "eigen"):
        raise ValueError(f'Unrecognized method {method}. The two valid methods are either "schur" or "eigen".')
    real_c = aval(C).dtype.kind != "c"

    def one(A, B, C):
        if method == "eigen":
            RA, UA = jnp.linalg.eig(A)
            RB, UB = jnp.linalg.eig(B)
            F = solve(UA, C.astype(aval(RA).dtype) @ UB)
            Y = F / (RA[:, None] + RB[None, :])
            X = UA[:m, :m] @ Y[:m, :n] @ inv(UB)[:n, :n]
        else:
            R, U = schur(A, output="complex")
            S, V = schur(jnp.conj(B).T, output="complex")
            F = jnp.conj(U).T @ C.astype(aval(R).dtype) @ V
            X = U @ _sylvester_triangular(R, jnp.conj(S).T, F) @ jnp.conj(V).T
        if real_c:
            X = jnp.real(X)
        near = jnp.any(jnp.abs(jnp.linalg.eigvals(A)[:, None] + jnp.linalg.eigvals(B)[None, :]) < tol)
        return jnp.where(near, jnp.full_like(X, np.nan), X)
    return jnp.vectorize(one, signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)


from .linalg_schur import funm, hessenberg, rsf2csf, schur, sqrtm  # noqa: E402,F401


def _sylvester_triangular(R, S, F):
    """Y with R Y + Y S = F for upper triangular R and lower triangular S (JAX's scan from the last entry)."""
    m, n = aval(F).shape
    zero = jnp.zeros((), aval(F).dtype)

    def step(Y_flat, idx):
        i, j = idx // n, idx % n
        Y = Y_flat.reshape((m, n))
        row = jnp.sum(jnp.where(jnp.arange(m) > i, R[i, :] * Y[:, j], zero))
        col = jnp.sum(jnp.where(jnp.arange(n) > j, Y[i, :] * S[:, j], zero))
        val = (F[i, j] - (row + col)) / (R[i, i] + S[j, j])
        return Y_flat.at[i * n + j].set(val), None

    Y_flat, _ = lax.scan(step, jnp.zeros((m * n,), aval(F).dtype), jnp.arange(m * n - 1, -1, -1))
    return Y_flat.reshape((m, n))
