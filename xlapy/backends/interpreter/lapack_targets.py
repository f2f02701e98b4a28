"""Interpreter rules for JAX's CPU linear-algebra custom-calls: the `lapack_<t><routine>_ffi` targets that
`jax.jit(...).lower(...)` emits on the CPU (t = s, d, c, z), defined with numpy.

Operands and results as jaxlib's FFI kernels have them (batch dimensions lead, the matrices are the two minor
dimensions; the layouts JAX asks for are column-major, which the interpreter never sees). `info` is s32[batch]:
0 on success, LAPACK's positive code on failure (JAX's lowering turns a nonzero info into NaNs).

| target (routine) | operands -> results | backend_config |
|---|---|---|
| potrf | a -> (factor, info): the uplo triangle factored, the other one a's | uplo L/U |
| trsm | a, b -> x with op(T) x = b (side L) or x op(T) = b (side R) | side, uplo, trans_x N/T/C, diag N/U |
| geqrf | a -> (h, taus): the compact QR (the `Qr` target's) | |
| orgqr, ungqr | h, taus -> q (`ProductOfElementaryHouseholderReflectors`) | |
| syevd, heevd | a -> (v, w, info): eigenvectors (columns) and ascending eigenvalues of the uplo triangle's matrix | mode V/N, uplo |
| getrf | a -> (lu, ipiv, info): P a = L U, ipiv 1-based row swaps (LAPACK's), info > 0 for an exact zero pivot | |
| gesdd | a -> (a', s, u, vt, info): a = u diag(s) vt, s descending | mode A (full), S (reduced), N (s only) |
| gtsv | dl, d, du, b -> (dl', d', du', x, info): the tridiagonal solve; A[i,i-1] = dl[i], A[i,i+1] = du[i] | |
| geev | a -> (wr, wi, vl, vr, info) real, (w, vl, vr, info) complex: eigenvalues, unit-norm eigenvectors (complex) | compute_left, compute_right V/N |
| gees, gehrd | Schur and Hessenberg decompositions: lapack_schur.py | |

Outputs LAPACK leaves unspecified (a' of gesdd, dl'/d'/du' of gtsv, v under mode N, u/vt under mode N) are
copies of the inputs or zeros here.
"""
from __future__ import annotations

import re

import numpy as np

from ...errors import ExecutionError
from ...hlo import Instruction
from . import decompositions
from .lapack_schur import ROUTINES as _SCHUR_ROUTINES

LETTER_DTYPES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


def config(inst: Instruction) -> dict[str, str]:
    """backend_config `{mode = 86 : ui8, uplo = 76 : ui8}` as {'mode': 'V', 'uplo': 'L'}."""
    text = str(inst.attrs.get("backend_config", "") or "")
    return {k: chr(int(v)) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)\s*:\s*ui8", text)}


def _info(shape, values) -> np.ndarray:
    return np.asarray(values, np.int32).reshape(shape)


# -- potrf --------------------------------------------------------------------------------------------------
def potrf(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    lower = config(inst).get("uplo", "L") == "L"
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    out = flat.copy()
    info = np.zeros(len(flat), np.int32)
    n = a.shape[-1]
    mask = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
    for i, m in enumerate(flat):
        t = np.tril(m) if lower else np.triu(m).conj().T
        try:
            f = np.linalg.cholesky(t + np.tril(t, -1).conj().T)
        except np.linalg.LinAlgError:
            info[i] = 1
            continue
        if not lower:
            f = f.conj().T
        out[i][mask] = f[mask]
    return out.reshape(a.shape), _info(batch, info)


# -- trsm ---------------------------------------------------------------------------------------------------
def trsm(inst: Instruction, args: list, ev) -> np.ndarray:
    a, b = args
    c = config(inst)
    left, lower, unit = c.get("side", "L") == "L", c.get("uplo", "L") == "L", c.get("diag", "N") == "U"
    trans = c.get("trans_x", "N")
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        n = t.shape[-1]
        t = t.copy()
        t[..., np.arange(n), np.arange(n)] = 1
    if trans != "N":
        t = np.swapaxes(t, -1, -2)
        if trans == "C":
            t = t.conj()
    with np.errstate(all="ignore"):
        if left:
            x = np.linalg.solve(t, b) if t.shape[-1] else b.copy()
        else:
            x = np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2) \
                if t.shape[-1] else b.copy()
    return np.asarray(x, b.dtype)


def _solve_triangular_safe(inst, args, ev):
    try:
        return trsm(inst, args, ev)
    except np.linalg.LinAlgError:          # a singular triangle: substitution gives what dividing by zero gives
        a, b = args
        c = config(inst)
        attrs = {"left_side": c.get("side", "L") == "L", "lower": c.get("uplo", "L") == "L",
                 "unit_diagonal": c.get("diag", "N") == "U",
                 "transpose_a": {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[c.get("trans_x", "N")]}
        fake = _Shim(inst, attrs)
        return decompositions.triangular_solve(fake, [a, b], ev)


class _Shim:
    """An instruction-like view with other attributes (to reuse the opcode rules)."""

    def __init__(self, inst: Instruction, attrs: dict):
        self.attrs = attrs
        self.shape = inst.shape
        self.name = inst.name
        self.operands = inst.operands


# -- QR -----------------------------------------------------------------------------------------------------
def geqrf(inst: Instruction, args: list, ev) -> tuple:
    return decompositions.qr(inst, args, ev)


def orgqr(inst: Instruction, args: list, ev) -> np.ndarray:
    return decompositions.householder_product(inst, args, ev)


# -- eigh ---------------------------------------------------------------------------------------------------
def syevd(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    c = config(inst)
    lower = c.get("uplo", "L") == "L"
    v_shape, w_shape, _ = inst.shape.tuple_shapes
    t = np.tril(a) if lower else np.swapaxes(np.triu(a), -1, -2).conj()
    h = t + np.swapaxes(np.tril(t, -1), -1, -2).conj()
    n = a.shape[-1]
    if n:
        h[..., np.arange(n), np.arange(n)] = h[..., np.arange(n), np.arange(n)].real
    batch = a.shape[:-2]
    info = np.zeros(batch, np.int32)
    if not np.all(np.isfinite(h)):
        bad = ~np.isfinite(h).reshape(batch + (-1,)).all(-1)
        info = bad.astype(np.int32)
        h = np.where(bad[..., None, None], 0, h)
    if c.get("mode", "V") == "V":
        w, v = np.linalg.eigh(h)
    else:
        w, v = np.linalg.eigvalsh(h), a.copy()
    return v.astype(v_shape.dtype), w.astype(w_shape.dtype), info


# -- LU -----------------------------------------------------------------------------------------------------
def _getrf_one(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """LAPACK getrf (right-looking, partial pivoting: the first entry of largest |re| + |im|)."""
    lu = a.copy()
    m, n = lu.shape
    k = min(m, n)
    piv = np.zeros(k, np.int32)
    info = 0
    for j in range(k):
        col = lu[j:, j]
        mag = np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col)
        p = j + int(np.argmax(mag)) if not np.all(np.isnan(mag)) else j
        piv[j] = p + 1
        if lu[p, j] != 0:
            if p != j:
                lu[[j, p], :] = lu[[p, j], :]
            with np.errstate(all="ignore"):
                lu[j + 1:, j] /= lu[j, j]
        elif info == 0:
            info = j + 1
        if j + 1 < n:
            lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
    return lu, piv, info


def getrf(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    k = min(a.shape[-2:])
    lus, pivs, infos = np.empty_like(flat), np.zeros((len(flat), k), np.int32), np.zeros(len(flat), np.int32)
    for i, m in enumerate(flat):
        lus[i], pivs[i], infos[i] = _getrf_one(m)
    return lus.reshape(a.shape), pivs.reshape(batch + (k,)), _info(batch, infos)


# -- SVD ----------------------------------------------------------------------------------------------------
def gesdd(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    mode = config(inst).get("mode", "A")
    _, s_shape, u_shape, vt_shape, _ = inst.shape.tuple_shapes
    batch = a.shape[:-2]
    info = np.zeros(batch, np.int32)
    finite = np.isfinite(a).reshape(batch + (-1,)).all(-1) if a.size else np.ones(batch, bool)
    clean = np.where(finite[..., None, None], a, 0)
    if mode == "N":
        s = np.linalg.svd(clean, compute_uv=False)
        u, vt = np.zeros(u_shape.dims, u_shape.dtype), np.zeros(vt_shape.dims, vt_shape.dtype)
    else:
        u, s, vt = np.linalg.svd(clean, full_matrices=(mode == "A"))
    info = np.where(finite, 0, 1).astype(np.int32)
    return (a.copy(), s.astype(s_shape.dtype), np.asarray(u, u_shape.dtype), np.asarray(vt, vt_shape.dtype),
            info)


# -- tridiagonal solve --------------------------------------------------------------------------------------
def gtsv(inst: Instruction, args: list, ev) -> tuple:
    dl, d, du, b = args
    n = d.shape[-1]
    mat = np.zeros(d.shape + (n,), b.dtype)
    idx = np.arange(n)
    mat[..., idx, idx] = d
    if n > 1:
        mat[..., idx[1:], idx[:-1]] = dl[..., 1:]
        mat[..., idx[:-1], idx[1:]] = du[..., :-1]
    batch = d.shape[:-1]
    info = np.zeros(batch, np.int32)
    flat_m = mat.reshape((-1, n, n))
    flat_b = b.reshape((-1,) + b.shape[-2:])
    x = np.empty_like(flat_b)
    infos = info.reshape(-1)
    for i in range(len(flat_m)):
        try:
            x[i] = np.linalg.solve(flat_m[i], flat_b[i]) if n else flat_b[i]
        except np.linalg.LinAlgError:
            x[i] = np.nan
            infos[i] = 1
    return dl.copy(), d.copy(), du.copy(), x.reshape(b.shape).astype(b.dtype), infos.reshape(batch)


# -- eig ----------------------------------------------------------------------------------------------------
def _normalize(v: np.ndarray) -> np.ndarray:
    """Columns of unit 2-norm whose largest-magnitude component is real (LAPACK geev's normalization)."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    k = np.argmax(np.abs(v), axis=-2)
    big = np.take_along_axis(v, k[..., None, :], axis=-2)
    phase = np.where(big == 0, 1, np.conj(big) / np.where(big == 0, 1, np.abs(big)))
    return v * phase


def geev(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    c = config(inst)
    shapes = inst.shape.tuple_shapes
    real = len(shapes) == 5
    batch = a.shape[:-2]
    finite = np.isfinite(a).reshape(batch + (-1,)).all(-1) if a.size else np.ones(batch, bool)
    clean = np.where(finite[..., None, None], a, 0)
    w, vr = np.linalg.eig(clean)
    ctype = shapes[-2].dtype
    w = w.astype(np.result_type(w.dtype, np.complex64))
    vl = np.zeros(shapes[-3].dims, ctype)
    if c.get("compute_left", "N") == "V":
        wl, left = np.linalg.eig(np.swapaxes(clean, -1, -2).conj())
        # match left eigenvectors to w: left[:, j] belongs to conj(wl[j]); order them like w
        order = np.argmin(np.abs(w[..., :, None] - wl[..., None, :].conj()), axis=-1)
        vl = _normalize(np.take_along_axis(left, order[..., None, :], axis=-1)).astype(ctype)
    vr = _normalize(vr).astype(ctype) if c.get("compute_right", "V") == "V" else np.zeros(shapes[-2].dims, ctype)
    info = np.where(finite, 0, 1).astype(np.int32)
    if real:
        return (w.real.astype(shapes[0].dtype), w.imag.astype(shapes[1].dtype), vl, vr, info)
    return w.astype(shapes[0].dtype), vl, vr, info


# -- the table ----------------------------------------------------------------------------------------------
ROUTINES = {
    "potrf": potrf, "trsm": _solve_triangular_safe, "geqrf": geqrf, "orgqr": orgqr, "ungqr": orgqr,
    "syevd": syevd, "heevd": syevd, "getrf": getrf, "gesdd": gesdd, "gtsv": gtsv, "geev": geev,
    **_SCHUR_ROUTINES,                                  # gees, gehrd (lapack_schur.py)
}
_REAL_ONLY = {"orgqr", "syevd"}
_COMPLEX_ONLY = {"ungqr", "heevd"}


def _targets() -> dict:
    table = {}
    for routine, fn in ROUTINES.items():
        for letter in "sdcz":
            if routine in _REAL_ONLY and letter in "cz" or routine in _COMPLEX_ONLY and letter in "sd":
                continue
            table[f"lapack_{letter}{routine}_ffi"] = fn
    return table


CUSTOM_CALL_TARGETS = _targets()


def target_name(routine: str, dtype) -> str:
    """JAX's target for `routine` on `dtype` (orgqr/syevd become ungqr/heevd on complex types)."""
    dt = np.dtype(dtype)
    letter = {np.dtype(v): k for k, v in LETTER_DTYPES.items()}.get(dt)
    if letter is None:
        raise ExecutionError(f"no LAPACK routine {routine} for {dt}")
    if letter in "cz":
        routine = {"orgqr": "ungqr", "syevd": "heevd"}.get(routine, routine)
    return f"lapack_{letter}{routine}_ffi"
