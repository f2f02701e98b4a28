"""Interpreter rules for JAX's Schur and Hessenberg custom-calls (`lapack_<t>gees_ffi`, `lapack_<t>gehrd_ffi`),
defined with numpy; the CPU backend calls LAPACK (backends/cpu/lapack_schur_emitter.py).

| target | operands -> results | backend_config |
|---|---|---|
| gees (real) | a -> (t, vs, wr, wi, sdim, info): a = vs t vs^T, t quasi upper triangular (LAPACK's standardized 2x2 blocks for conjugate pairs: equal diagonal entries, wr +- i wi) | mode V/N, sort N |
| gees (complex) | a -> (t, vs, w, sdim, info): a = vs t vs^H, t upper triangular | mode V/N, sort N |
| gehrd | a -> (a', taus, info): the Hessenberg matrix on and above the first subdiagonal, reflector v_j below it (v_j[j+1] = 1 implied), taus[..., n-1]; H_j = I - tau_j v_j v_j^H, Q = H_0 ... H_{n-2}, Q^H a Q = H | low = 1, high = n (: i32) |

gees: the Schur vectors are an orthonormal basis (QR) of the eigenvectors, ordered as numpy's eig gives the
eigenvalues (real ones as they come, a conjugate pair as the real and imaginary parts of its first vector), so
T's order is not LAPACK's (no Schur form is unique); each 2x2 block is then rotated to LAPACK's standard form.
This needs a diagonalizable matrix: for a defective one (a Jordan block) the eigenvectors are dependent and the
result is inaccurate; where SciPy is installed its `schur` (LAPACK's gees, the CPU backend's answer) is used
instead (NaNs then propagate as LAPACK propagates them; without SciPy a non-finite batch element gives info = 1,
which JAX's lowering turns into NaNs). gehrd lets NaNs propagate (info = 0). sort = S (an eigenvalue
selection) is not supported (JAX does not either).
"""
from __future__ import annotations

import functools
import re

import numpy as np

from ...errors import ExecutionError
from ...hlo import Instruction
from .decompositions import _reflector

@functools.cache
def _scipy_schur():
    """scipy.linalg.schur (LAPACK's own gees, exact for defective matrices too) when scipy is installed, else
    None. Imported on first use: importing scipy.linalg costs ~1 s, which every first compile paid when constant
    folding built the interpreter's handler table."""
    try:
        from scipy.linalg import schur
    except ImportError:                     # pragma: no cover - scipy is optional
        return None
    return schur


def _config_ints(inst: Instruction) -> dict[str, int]:
    text = str(inst.attrs.get("backend_config", "") or "")
    return {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+)\s*:\s*i32", text)}


def _config_chars(inst: Instruction) -> dict[str, str]:
    text = str(inst.attrs.get("backend_config", "") or "")
    return {k: chr(int(v)) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)\s*:\s*ui8", text)}


# -- Schur ----------------------------------------------------------------------------------------------------
def _standardize(t: np.ndarray, q: np.ndarray, k: int) -> None:
    """Rotate rows/columns k, k+1 so that the 2x2 block t[k:k+2, k:k+2] has equal diagonal entries (in place)."""
    a, b, c, d = t[k, k], t[k, k + 1], t[k + 1, k], t[k + 1, k + 1]
    theta = 0.5 * np.arctan2(-(a - d), b + c)
    cs, sn = np.cos(theta), np.sin(theta)
    g = np.array([[cs, -sn], [sn, cs]], t.dtype)
    t[:, k:k + 2] = t[:, k:k + 2] @ g
    t[k:k + 2, :] = g.T @ t[k:k + 2, :]
    q[:, k:k + 2] = q[:, k:k + 2] @ g


def _schur_eig(a: np.ndarray, real: bool) -> tuple[np.ndarray, np.ndarray]:
    """(t, q) from an orthonormal basis of the eigenvectors (see the module docstring)."""
    n = a.shape[-1]
    w, v = np.linalg.eig(a)
    if not real:
        q, _ = np.linalg.qr(v)
        t = q.conj().T @ a @ q
        return np.triu(t), q
    cols, blocks, j = [], [], 0
    while j < n:
        if w[j].imag != 0 and j + 1 < n:
            blocks.append(len(cols))
            cols += [v[:, j].real, v[:, j].imag]
            j += 2
        else:
            cols.append(v[:, j].real)
            j += 1
    q, _ = np.linalg.qr(np.stack(cols, axis=1))
    t = q.T @ a @ q
    for k in blocks:
        _standardize(t, q, k)
    keep = np.triu(np.ones((n, n), bool))
    for k in blocks:
        keep[k + 1, k] = True
    return np.where(keep, t, 0), q


def _schur_one(a: np.ndarray, real: bool) -> tuple[np.ndarray, np.ndarray]:
    schur = _scipy_schur()
    if schur is not None:
        return schur(a, output="real" if real else "complex", check_finite=False)
    return _schur_eig(a, real)


def _eigenvalues(t: np.ndarray) -> np.ndarray:
    """LAPACK's wr + i wi of a real quasi-triangular t (a 2x2 block: a +- i sqrt(|b c|))."""
    n = t.shape[-1]
    w = np.diag(t).astype(np.result_type(t.dtype, np.complex64))
    for k in range(n - 1):
        if t[k + 1, k] != 0:
            im = np.sqrt(abs(t[k, k + 1] * t[k + 1, k]))
            w[k], w[k + 1] = w[k].real + 1j * im, w[k + 1].real - 1j * im
    return w


def gees(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    c = _config_chars(inst)
    if c.get("sort", "N") != "N":
        raise ExecutionError(f"custom-call {inst.name}: gees with sorted eigenvalues (sort = {c['sort']}) is not "
                             f"supported")
    real = not np.iscomplexobj(a)
    batch, n = a.shape[:-2], a.shape[-1]
    flat = a.reshape((-1, n, n))
    ts, qs = np.zeros_like(flat), np.zeros_like(flat)
    ws = np.zeros((len(flat), n), np.result_type(a.dtype, np.complex64))
    info = np.zeros(len(flat), np.int32)
    for i, m in enumerate(flat):
        if _scipy_schur() is None and not np.isfinite(m).all():
            info[i] = 1
            continue
        try:
            t, q = _schur_one(m, real)
        except np.linalg.LinAlgError:       # LAPACK's info > 0 (the QR algorithm failed): JAX's NaNs
            info[i] = 1
            continue
        ts[i], qs[i] = t, q
        ws[i] = _eigenvalues(t) if real else np.diag(t)
    if c.get("mode", "V") != "V":
        qs = np.zeros_like(qs)
    out = [ts.reshape(a.shape), qs.reshape(a.shape)]
    if real:
        out += [ws.real.astype(a.dtype).reshape(batch + (n,)), ws.imag.astype(a.dtype).reshape(batch + (n,))]
    else:
        out.append(ws.astype(a.dtype).reshape(batch + (n,)))
    return tuple(out) + (np.zeros(batch, np.int32), info.reshape(batch))


# -- Hessenberg -----------------------------------------------------------------------------------------------
def gehrd(inst: Instruction, args: list, ev) -> tuple:
    (a,) = args
    n = a.shape[-1]
    cfg = _config_ints(inst)
    if (cfg.get("low", 1), cfg.get("high", n)) != (1, n):
        raise ExecutionError(f"custom-call {inst.name}: gehrd only with low = 1 and high = n = {n}, got {cfg}")
    h = a.copy()
    taus = np.zeros(a.shape[:-2] + (max(n - 1, 0),), a.dtype)
    for j in range(n - 1):                             # the last one is trivial for real types, not for complex
        v, tau, beta = _reflector(h[..., :, j], j + 1)
        tc = tau[..., None, None]
        vc, vr = v[..., :, None], v.conj()[..., None, :]
        rest = h[..., :, j + 1:]
        rest -= tc.conj() * vc * (vr @ rest)           # H^H h (column j becomes beta e_{j+1}: stored below)
        h -= tc * (h @ vc) * vr                        # (H^H h) H
        h[..., j + 1, j] = beta
        h[..., j + 2:, j] = v[..., j + 2:]
        taus[..., j] = tau
    return h, taus, np.zeros(a.shape[:-2], np.int32)


ROUTINES = {"gees": gees, "gehrd": gehrd}

__all__ = ["ROUTINES", "gees", "gehrd"]
