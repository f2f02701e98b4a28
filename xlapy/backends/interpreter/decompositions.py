"""Interpreter rules for the matrix decompositions: the cholesky and triangular-solve opcodes, and the QR
custom-call targets that XLA expands itself (QrExpander): Qr and ProductOfElementaryHouseholderReflectors.

These are the definitions the CPU backend is tested against (backends/cpu/linalg_emitter.py, qr_emitter.py).
Batch dimensions lead, the matrices are the two minor dimensions, and each batch element stands alone. bf16
and f16 compute in f32 and round once at the end (linalg.compute_dtype), as XLA computes them after
float-normalization.

| op | definition |
|---|---|
| cholesky(a), lower=true | L with L L^H = A, A the Hermitian matrix a's lower triangle gives; the upper one is not read and is zero in L |
| cholesky(a), lower=false | U = cholesky(a^T, lower)^T, as XLA builds it (a plain transpose): U^H U = A from a's upper triangle |
| triangular-solve(a, b) | x with op(T) x = b (left_side) or x op(T) = b; T is a's lower or upper triangle, op is transpose_a |
| Qr(a) | (h, taus): LAPACK geqrf's compact form, which is XLA's too (below) |
| ProductOfElementaryHouseholderReflectors(h, taus) | Q = H_0 ... H_{k-1} on the first n columns of the identity (orgqr) |

Details, each XLA's:
- cholesky: a matrix whose factorization meets a pivot that is not > 0 (or NaN) is NaN everywhere, as LAPACK's
  potrf decides and JAX returns; XLA's CholeskyExpander agrees except for an exactly zero last pivot, which it
  lets through. A complex diagonal is L[j,j] = p_j / sqrt(real(p_j)), p_j = a[j,j] - sum_k |L[j,k]|^2: an
  imaginary part of a's diagonal shows in L's and nowhere else.
- triangular-solve: transpose_a is NO_TRANSPOSE, TRANSPOSE or ADJOINT; unit_diagonal takes T's diagonal as ones
  without reading it. Substitution row by row, so a zero pivot gives what dividing by zero gives.
- Qr: R on and above h's diagonal, the Householder vectors v_j below it (v_j[j] = 1 implied), taus[...,
  min(m, n)]; H_j = I - tau_j v_j v_j^H and H_{p-1}^H ... H_0^H a = R. The product needs m >= n.

The reflector of column j (XLA's House, LAPACK's xLARFG): alpha = x[j], sigma = |x[j+1:]|^2; when sigma and
imag(alpha) are zero, tau = 0 and beta = alpha; otherwise beta = -sign(real(alpha)) * |(alpha, x[j+1:])| (the
sign of 0 counting as +), tau = (beta - alpha) / beta (real part; the imaginary part is -imag(alpha) / beta) and
v = x / (alpha - beta).
"""
from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ...hlo import Instruction


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    from .linalg import compute_dtype
    return compute_dtype(dtype)


def _flag(inst: Instruction, name: str) -> bool:
    return inst.attrs.get(name) in (True, "true")


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


# -- cholesky ---------------------------------------------------------------------------------------------
def _factor_lower(a: np.ndarray) -> np.ndarray:
    """np.linalg.cholesky (it reads the lower triangle) of each matrix; NaN for the ones that fail."""
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.empty_like(flat)
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            out[i] = np.nan
    return out.reshape(a.shape)


def cholesky(inst: Instruction, args: list, ev) -> np.ndarray:
    (a,) = args
    lower = _flag(inst, "lower")
    m = a.astype(_compute_dtype(a.dtype))
    if not lower:
        m = _swap(m)            # a plain transpose, as XLA's expander does (not the adjoint)
    tri = np.tril(m)
    out = _factor_lower(tri)
    if np.iscomplexobj(out):       # XLA's diagonal: the pivot (imaginary part of a's diagonal kept) / its root
        d = np.diagonal(out, axis1=-2, axis2=-1).real
        with np.errstate(all="ignore"):
            idx = np.arange(out.shape[-1])
            out[..., idx, idx] += 1j * np.diagonal(tri, axis1=-2, axis2=-1).imag / d
    if not lower:
        out = _swap(out)
    return np.ascontiguousarray(out).astype(inst.shape.dtype)


# -- triangular-solve -------------------------------------------------------------------------------------
def _substitute(t: np.ndarray, rhs: np.ndarray, lower: bool, unit: bool) -> np.ndarray:
    """x with t x = rhs, t triangular (lower or upper), rows solved in order; batched."""
    n = t.shape[-1]
    x = np.zeros_like(rhs)
    for i in (range(n) if lower else range(n - 1, -1, -1)):
        done = slice(0, i) if lower else slice(i + 1, n)
        acc = rhs[..., i, :] - (t[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
        x[..., i, :] = acc if unit else acc / t[..., i, i][..., None]
    return x


def triangular_solve(inst: Instruction, args: list, ev) -> np.ndarray:
    a, b = args
    ct = _compute_dtype(inst.shape.dtype)
    lower, unit, left = _flag(inst, "lower"), _flag(inst, "unit_diagonal"), _flag(inst, "left_side")
    transpose = str(inst.attrs.get("transpose_a", "NO_TRANSPOSE"))
    if transpose not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise ExecutionError(f"triangular-solve {inst.name}: unknown transpose_a {transpose!r}")
    t = a.astype(ct)
    t = np.tril(t) if lower else np.triu(t)
    if transpose != "NO_TRANSPOSE":          # op(T) is triangular the other way
        t, lower = _swap(t), not lower
        if transpose == "ADJOINT":
            t = t.conj()
    rhs = b.astype(ct)
    if not left:                             # x op(T) = b  <=>  op(T)^T x^T = b^T
        t, lower, rhs = _swap(t), not lower, _swap(rhs)
    x = _substitute(t, rhs, lower, unit)
    if not left:
        x = _swap(x)
    return np.ascontiguousarray(x).astype(inst.shape.dtype)


# -- QR ---------------------------------------------------------------------------------------------------
def _reflector(x: np.ndarray, j: int):
    """(v, tau, beta) of the Householder reflector that zeroes x[..., j+1:] (x: [..., m]); v[..., j] = 1."""
    alpha = x[..., j]
    tail = x[..., j + 1:]
    sigma = np.sum((tail * tail.conj()).real, axis=-1)
    is_complex = np.iscomplexobj(x)
    trivial = (sigma == 0) & ((alpha.imag == 0) if is_complex else True)
    mu = np.hypot(np.abs(alpha), np.sqrt(sigma))      # |(alpha, x[j+1:])| without overflow
    beta = np.where(alpha.real < 0, mu, -mu)
    beta = np.where(trivial, alpha.real, beta)
    with np.errstate(all="ignore"):
        tau = (beta - alpha.real) / beta
        if is_complex:
            tau = tau + 1j * (-alpha.imag / beta)
        tau = np.where(trivial, 0, tau).astype(x.dtype)
        divisor = np.where(trivial, 1, alpha - beta).astype(x.dtype)
        v = np.zeros_like(x)
        v[..., j] = 1
        v[..., j + 1:] = tail / divisor[..., None]
    return v, tau, beta


def qr(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    ct = _compute_dtype(a.dtype)
    h = a.astype(ct)                             # a fresh copy: updated in place
    m, n = h.shape[-2:]
    taus = np.zeros(h.shape[:-2] + (min(m, n),), ct)
    for j in range(min(m, n)):
        v, tau, beta = _reflector(h[..., :, j], j)
        rest = h[..., :, j + 1:]
        # a[:, j+1:] -= conj(tau) v (v^H a[:, j+1:])
        rest -= tau.conj()[..., None, None] * v[..., :, None] * (v.conj()[..., None, :] @ rest)
        h[..., j, j] = beta
        h[..., j + 1:, j] = v[..., j + 1:]
        taus[..., j] = tau
    out_h, out_taus = inst.shape.tuple_shapes
    return h.astype(out_h.dtype), taus.astype(out_taus.dtype)


def householder_product(inst: Instruction, args: list, ev) -> np.ndarray:
    h, taus = args
    ct = _compute_dtype(h.dtype)
    h, taus = h.astype(ct), taus.astype(ct)
    m, n = h.shape[-2:]
    if m < n:
        raise ExecutionError(f"custom-call {inst.name} ProductOfElementaryHouseholderReflectors: needs m >= n, "
                             f"got {inst.operands[0].shape}")
    q = np.broadcast_to(np.eye(m, n, dtype=ct), h.shape).copy()
    for j in range(taus.shape[-1] - 1, -1, -1):
        v = np.zeros(h.shape[:-1], ct)
        v[..., j] = 1
        v[..., j + 1:] = h[..., j + 1:, j]
        # q = H_j q = q - tau v (v^H q)
        q -= taus[..., j][..., None, None] * v[..., :, None] * (v.conj()[..., None, :] @ q)
    return q.astype(inst.shape.dtype)


HANDLERS = {"cholesky": cholesky, "triangular-solve": triangular_solve}

CUSTOM_CALL_TARGETS = {"Qr": qr, "ProductOfElementaryHouseholderReflectors": householder_product}
