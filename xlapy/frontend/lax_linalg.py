"""lax.linalg: JAX's matrix decompositions (jax.lax.linalg), lowered as JAX lowers them on the CPU.

| function | HLO |
|---|---|
| cholesky(x, symmetrize_input=True) | the `cholesky` opcode (lower=true): NaN for a matrix that is not positive definite |
| triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal) | the `triangular-solve` opcode |
| qr(x, full_matrices=True, pivoting=False) | custom-calls `lapack_?geqrf_ffi` (compact QR) + `lapack_?orgqr_ffi` / `ungqr` (Q) |
| eigh(x, lower, symmetrize_input, sort_eigenvalues) | `lapack_?syevd_ffi` / `heevd` (ascending eigenvalues) |
| lu(x) | `lapack_?getrf_ffi`; the permutation from the pivots by a fori_loop of swaps |
| svd(x, full_matrices, compute_uv) | `lapack_?gesdd_ffi` (mode A, S or N) |
| tridiagonal_solve(dl, d, du, b) | `lapack_?gtsv_ffi` |
| eig(x, compute_left_eigenvectors, compute_right_eigenvectors) | `lapack_?geev_ffi` |
| schur(x, compute_schur_vectors=True) | `lapack_?gees_ffi` (mode V or N, sort N): (t, vs, wr, wi, sdim, info) real, (t, vs, w, sdim, info) complex |
| hessenberg(a) | `lapack_?gehrd_ffi` (`{high = n : i32, low = 1 : i32}`): (a', taus[..., n-1], info) |
| householder_product(a, taus), lu_pivots_to_permutation(pivots, n) | `orgqr` custom-call; a fori_loop |

The custom-calls carry JAX's target names, operands, results and backend_config (`{mode = 86 : ui8, ...}`), so
an HLO module dumped from JAX and one traced here run through the same backend code
(backends/interpreter/lapack_targets.py, backends/cpu/lapack_ffi_emitter.py). A LAPACK `info` != 0 turns that
batch element's results into NaNs, as JAX's lowering does. Batch dimensions lead; the matrices are the two minor
dimensions. The custom-call decompositions take float32, float64, complex64 and complex128 (as JAX's CPU
LAPACK does); cholesky and triangular_solve also f16/bf16 (computed in f32). Gradients are HLO rules
(frontend/autodiff/rules_decompositions.py); schur and hessenberg have none (as in JAX).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import XlapyError
from ..hlo import Shape
from .control_flow import fori_loop
from .lax_dot_conv import dot_general
from .lax_elementwise import complex as make_complex, eq, imag, real, select
from .lax_operands import convert_element_type, hlo_shape
from .lax_reduce import reduce_sum
from .lax_shapes import (broadcast_in_dim, broadcasted_iota, dynamic_slice, dynamic_update_slice, full, pad,
                         reshape, slice as lax_slice, transpose)
from .tracer import aval, bind, user_frame

__all__ = ["cholesky", "triangular_solve", "qr", "eigh", "lu", "svd", "tridiagonal_solve", "eig", "schur",
           "hessenberg", "householder_product", "lu_pivots_to_permutation", "LinalgError"]

LAPACK_DTYPES = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
                 np.dtype(np.complex128): "z"}
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
           np.dtype(np.complex128))


class LinalgError(XlapyError, ValueError):
    """A bad argument to a lax.linalg function: an XlapyError that is also the ValueError JAX raises."""


class LinalgTypeError(XlapyError, TypeError):
    """A wrong dtype for a lax.linalg function (JAX's TypeError)."""


def _error(name: str, message: str) -> LinalgError:
    return LinalgError(f"{name}: {message} (at {user_frame()})")


def _is_complex(x) -> bool:
    return np.issubdtype(aval(x).dtype, np.complexfloating)


def _check(name: str, x, square: bool = False, lapack: bool = True):
    a = aval(x)
    if a.ndim < 2:
        raise _error(name, f"operand must have rank >= 2 (a batch of matrices), got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise _error(name, f"operand must be a batch of square matrices, got shape {a.shape}")
    ok = a.dtype in LAPACK_DTYPES if lapack else (a.dtype in _FLOATS or a.dtype.name == "bfloat16")
    if not ok:
        raise LinalgTypeError(f"{name}: operand must be a floating-point or complex array "
                              f"{'(float32, float64, complex64 or complex128) ' if lapack else ''}"
                              f"got {a.dtype} (at {user_frame()})")
    return a


def _target(routine: str, dtype) -> str:
    letter = LAPACK_DTYPES[np.dtype(dtype)]
    if letter in "cz":
        routine = {"orgqr": "ungqr", "syevd": "heevd"}.get(routine, routine)
    return f"lapack_{letter}{routine}_ffi"


def _config(**chars: str) -> str:
    return "{" + ", ".join(f"{k} = {ord(v)} : ui8" for k, v in sorted(chars.items())) + "}"


def _custom_call(routine: str, dtype, operands: list, results: list[tuple[Any, tuple]], **chars: str) -> list:
    """One JAX LAPACK custom-call; results are (dtype, dims) pairs; returns the list of result values."""
    shape = Shape.tuple_of([hlo_shape(dt, dims) for dt, dims in results]) if len(results) > 1 \
        else hlo_shape(*results[0])
    attrs = {"custom_call_target": _target(routine, dtype), "api_version": "API_VERSION_TYPED_FFI"}
    if chars:
        attrs["backend_config"] = _config(**chars)
    out = bind("custom-call", operands, attrs, shape=shape, name=routine)
    return out if len(results) > 1 else [out]


# -- small helpers ---------------------------------------------------------------------------------------------
def _swap(x):
    nd = aval(x).ndim
    return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def conj(x):
    return make_complex(real(x), bind("negate", [imag(x)])) if _is_complex(x) else x


def adjoint(x):
    """The conjugate transpose of the two minor dimensions."""
    return conj(_swap(x))


def _mask(x, keep: str, k: int = 0):
    """The lower ('tril') or upper ('triu') triangle of x's matrices (offset k), zeros elsewhere."""
    a = aval(x)
    m, n = a.shape[-2:]
    rows = broadcasted_iota(np.int32, (m, n), 0)
    cols = broadcasted_iota(np.int32, (m, n), 1)
    shifted = bind("add", [rows, full((), k, np.int32)]) if k else rows
    pred = bind("compare", [cols, shifted], {"direction": "LE" if keep == "tril" else "GE"})
    pred = broadcast_in_dim(pred, a.shape, (a.ndim - 2, a.ndim - 1))
    return select(pred, x, full(a.shape, 0, a.dtype))


def tril(x, k: int = 0):
    return _mask(x, "tril", k)


def triu(x, k: int = 0):
    return _mask(x, "triu", k)


def _not_ok_to_nan(info, x):
    """x where this batch element's info == 0, NaN elsewhere (JAX's _replace_not_ok_with_nan)."""
    a = aval(x)
    ok = eq(info, full(aval(info).shape, 0, np.int32))
    ok = broadcast_in_dim(ok, a.shape, tuple(range(aval(info).ndim)))
    return select(ok, x, full(a.shape, np.nan, a.dtype))


def _matmul(x, y):
    nb = aval(x).ndim - 2
    b = tuple(range(nb))
    return dot_general(x, y, (((nb + 1,), (nb,)), (b, b)))


def symmetrize(x):
    """(x + x^H) / 2."""
    s = bind("add", [x, adjoint(x)])
    return bind("divide", [s, full(aval(s).shape, 2, aval(s).dtype)])


# -- cholesky and triangular_solve: HLO opcodes -------------------------------------------------------------------
def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor L (L L^H = x) of each matrix; NaN where x is not positive definite."""
    _check("cholesky", x, square=True, lapack=False)
    if symmetrize_input:
        x = symmetrize(x)
    return bind("cholesky", [x], {"lower": True}, name="cholesky")


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """x with op(a) x = b (left_side) or x op(a) = b; op(a) is a, its transpose, or its conjugate transpose."""
    aa = _check("triangular_solve", a, square=True, lapack=False)
    ab = aval(b)
    if ab.dtype != aa.dtype:
        raise LinalgTypeError(f"triangular_solve: a and b must have the same dtype, got {aa.dtype} and {ab.dtype} "
                              f"(at {user_frame()})")
    if ab.ndim != aa.ndim or ab.shape[:-2] != aa.shape[:-2]:
        raise _error("triangular_solve", f"a and b must have equal batch dimensions, got {aa.shape} and {ab.shape}")
    m = aa.shape[-1]
    k = ab.shape[-2] if left_side else ab.shape[-1]
    if k != m:
        raise _error("triangular_solve", f"a of shape {aa.shape} does not match b of shape {ab.shape} "
                                         f"(left_side={left_side})")
    if conjugate_a and not transpose_a:
        a = conj(a)
        conjugate_a = False
    mode = "NO_TRANSPOSE" if not transpose_a else ("ADJOINT" if conjugate_a and _is_complex(a) else "TRANSPOSE")
    return bind("triangular-solve", [a, b], {"left_side": bool(left_side), "lower": bool(lower),
                                            "unit_diagonal": bool(unit_diagonal), "transpose_a": mode},
                name="triangular_solve")


# -- QR -------------------------------------------------------------------------------------------------------------
def geqrf(x):
    """(h, taus): LAPACK's compact QR."""
    a = _check("qr", x)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    return _custom_call("geqrf", a.dtype, [x], [(a.dtype, a.shape), (a.dtype, batch + (min(m, n),))])


def householder_product(a, taus):
    """Q = H_0 ... H_{k-1} from the reflectors below a's diagonal and taus (LAPACK orgqr/ungqr); m >= n >= k."""
    aa = _check("householder_product", a)
    m, n = aa.shape[-2:]
    if m < n or aval(taus).shape[-1] > n or aval(taus).shape[:-1] != aa.shape[:-2]:
        raise _error("householder_product", f"needs a [..., m, n] with m >= n and taus [..., k], k <= n; got "
                                            f"{aa.shape} and {aval(taus).shape}")
    return _custom_call("orgqr", aa.dtype, [a, taus], [(aa.dtype, aa.shape)])[0]


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """(q, r) with x = q r: q has orthonormal columns, r is upper triangular. full_matrices: q is m x m and r
    m x n; otherwise q is m x k and r k x n, k = min(m, n)."""
    if pivoting:
        raise _error("qr", "pivoting=True (geqp3) is not supported")
    a = _check("qr", x)
    m, n = a.shape[-2:]
    nd = a.ndim
    if m == 0 or n == 0:
        k = m if full_matrices else min(m, n)
        eye = broadcast_in_dim(_eye(m, k, a.dtype), a.shape[:-2] + (m, k), (nd - 2, nd - 1))
        return eye, full(a.shape[:-2] + (k, n), 0, a.dtype)
    h, taus = geqrf(x)
    zero = full((), 0, a.dtype)
    if m < n:
        q = householder_product(_minor_slice(h, m, m), taus)
    elif full_matrices:
        padded = pad(h, zero, [(0, 0, 0)] * (nd - 1) + [(0, m - n, 0)])
        q = householder_product(padded, taus)
    else:
        q = householder_product(h, taus)
        h = _minor_slice(h, n, n)
    return q, triu(h)


def _minor_slice(x, rows: int, cols: int):
    a = aval(x)
    return lax_slice(x, (0,) * a.ndim, a.shape[:-2] + (rows, cols))


def _eye(m: int, n: int, dtype):
    return convert_element_type(eq(broadcasted_iota(np.int32, (m, n), 0), broadcasted_iota(np.int32, (m, n), 1)),
                                dtype)


# -- eigh -----------------------------------------------------------------------------------------------------------
def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None):
    """(v, w): eigenvectors (the columns of v) and ascending eigenvalues of each Hermitian matrix, read from its
    lower (or upper) triangle."""
    a = _check("eigh", x, square=True)
    n = a.shape[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise _error("eigh", "subset_by_index is not supported on the CPU (as in JAX)")
    if symmetrize_input:
        x = symmetrize(x)
    rdt = np.finfo(a.dtype).dtype
    batch = a.shape[:-2]
    v, w, info = _custom_call("syevd", a.dtype, [x], [(a.dtype, a.shape), (rdt, batch + (n,)), (np.int32, batch)],
                              mode="V", uplo="L" if lower else "U")
    return _not_ok_to_nan(info, v), _not_ok_to_nan(info, w)


# -- LU -------------------------------------------------------------------------------------------------------------
def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation of range(permutation_size) the row swaps `pivots` (0-based, LAPACK's order) make."""
    p = aval(pivots)
    batch, k = p.shape[:-1], p.shape[-1]
    nb = len(batch)
    perm0 = broadcast_in_dim(broadcasted_iota(np.int32, (permutation_size,), 0), batch + (permutation_size,),
                             (nb,))
    if k == 0:
        return perm0
    zeros = (full((), 0, np.int32),) * nb

    def swap_one(perm, i, j):
        pi = dynamic_slice(perm, zeros + (i,), (1,) * nb + (1,))
        pj = dynamic_slice(perm, zeros + (j,), (1,) * nb + (1,))
        perm = dynamic_update_slice(perm, pj, zeros + (i,))
        return dynamic_update_slice(perm, pi, zeros + (j,))

    if nb == 0:
        def body(i, perm):
            j = reshape(dynamic_slice(pivots, (i,), (1,)), ())
            return swap_one(perm, i, j)
        return fori_loop(0, k, body, perm0)

    # batched: a one-hot exchange over the whole batch per step
    def body(i, perm):
        j = reshape(dynamic_slice(pivots, zeros + (i,), batch + (1,)), batch)        # [batch]
        at_i = reshape(dynamic_slice(perm, zeros + (i,), batch + (1,)), batch)
        iota = broadcasted_iota(np.int32, batch + (permutation_size,), nb)
        jb = broadcast_in_dim(j, batch + (permutation_size,), tuple(range(nb)))
        is_j = eq(iota, jb)
        at_j = reduce_sum(select(is_j, perm, full(aval(perm).shape, 0, np.int32)), (nb,))
        is_i = eq(iota, broadcast_in_dim(i, batch + (permutation_size,), ()))
        bi = broadcast_in_dim(at_i, batch + (permutation_size,), tuple(range(nb)))
        bj = broadcast_in_dim(at_j, batch + (permutation_size,), tuple(range(nb)))
        return select(is_i, bj, select(is_j, bi, perm))
    return fori_loop(0, k, body, perm0)


def lu(x):
    """(lu, pivots, permutation): P x = L U with L unit lower triangular (below lu's diagonal) and U upper
    triangular (on and above it); pivots are 0-based row swaps, permutation the resulting row order."""
    a = _check("lu", x)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if m == 0 or n == 0:
        return x, full(batch + (0,), 0, np.int32), lu_pivots_to_permutation(full(batch + (0,), 0, np.int32), m)
    lu_, pivots, info = _custom_call("getrf", a.dtype, [x], [(a.dtype, a.shape), (np.int32, batch + (k,)),
                                                            (np.int32, batch)])
    pivots = bind("subtract", [pivots, full(batch + (k,), 1, np.int32)])
    ok = bind("compare", [info, full(batch, 0, np.int32)], {"direction": "GE"})
    lu_ = select(broadcast_in_dim(ok, a.shape, tuple(range(len(batch)))), lu_, full(a.shape, np.nan, a.dtype))
    return lu_, pivots, lu_pivots_to_permutation(pivots, m)


# -- SVD ------------------------------------------------------------------------------------------------------------
def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None):
    """s (descending singular values), or (u, s, vh) with x = u diag(s) vh."""
    a = _check("svd", x)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        raise _error("svd", "subset_by_index is not supported on the CPU (as in JAX)")
    rdt = np.finfo(a.dtype).dtype
    uc, vr = (m, n) if full_matrices else (k, k)
    if k == 0:
        s = full(batch + (0,), 0, rdt)
        if not compute_uv:
            return s
        nd = a.ndim
        u = broadcast_in_dim(_eye(m, uc, a.dtype), batch + (m, uc), (nd - 2, nd - 1))
        vh = broadcast_in_dim(_eye(vr, n, a.dtype), batch + (vr, n), (nd - 2, nd - 1))
        return u, s, vh
    mode = "N" if not compute_uv else ("A" if full_matrices else "S")
    _, s, u, vh, info = _custom_call("gesdd", a.dtype, [x], [
        (a.dtype, a.shape), (rdt, batch + (k,)), (a.dtype, batch + (m, uc)), (a.dtype, batch + (vr, n)),
        (np.int32, batch)], mode=mode)
    s = _not_ok_to_nan(info, s)
    if not compute_uv:
        return s
    return _not_ok_to_nan(info, u), s, _not_ok_to_nan(info, vh)


# -- tridiagonal_solve ------------------------------------------------------------------------------------------------
def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """x with A x = b for the tridiagonal A: A[i, i-1] = dl[i] (dl[0] unused), A[i, i] = d[i], A[i, i+1] = du[i]
    (du[-1] unused); dl, d, du are [..., m], b is [..., m, k]."""
    if perturb_singular:
        raise _error("tridiagonal_solve", "perturb_singular=True is not supported")
    ab = aval(b)
    shapes = [aval(v).shape for v in (dl, d, du)]
    if len(set(shapes)) != 1:
        raise LinalgTypeError(f"tridiagonal_solve requires that all diagonal arguments have the same shape, got "
                              f"{shapes} (at {user_frame()})")
    if ab.ndim < 2 or shapes[0] != ab.shape[:-1]:
        raise LinalgTypeError(f"tridiagonal_solve requires that the leading ndim-1 dimensions of b equal the "
                              f"dimensions of the diagonal arguments, got {shapes[0]} and {ab.shape} "
                              f"(at {user_frame()})")
    dts = {aval(v).dtype for v in (dl, d, du, b)}
    if len(dts) != 1 or ab.dtype not in LAPACK_DTYPES:
        raise LinalgTypeError(f"tridiagonal_solve: operands must share one of float32, float64, complex64, "
                              f"complex128; got {sorted(str(t) for t in dts)} (at {user_frame()})")
    batch = ab.shape[:-2]
    out = _custom_call("gtsv", ab.dtype, [dl, d, du, b], [(ab.dtype, s) for s in shapes] + [(ab.dtype, ab.shape),
                                                                                          (np.int32, batch)])
    return _not_ok_to_nan(out[4], out[3])


# -- eig ------------------------------------------------------------------------------------------------------------
def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, use_magma=None, implementation=None):
    """[w, vl?, vr?]: eigenvalues (complex) and left/right eigenvectors (unit norm, largest component real).
    Derivatives: of the eigenvalues; of the eigenvectors only with enable_eigvec_derivs=True (JAX's opt-in: they
    assume distinct eigenvalues; it is recorded in the custom-call's backend_config, which LAPACK ignores)."""
    a = _check("eig", x, square=True)
    n = a.shape[-1]
    batch = a.shape[:-2]
    cdt = np.dtype(np.complex128 if a.dtype in (np.float64, np.complex128) else np.complex64)
    results = [(cdt, batch + (n,))] if _is_complex(x) else [(a.dtype, batch + (n,)), (a.dtype, batch + (n,))]
    results += [(cdt, a.shape), (cdt, a.shape), (np.int32, batch)]
    flags = {"enable_eigvec_derivs": chr(1)} if enable_eigvec_derivs else {}     # for the derivative rules
    outs = _custom_call("geev", a.dtype, [x], results, compute_left="V" if compute_left_eigenvectors else "N",
                        compute_right="V" if compute_right_eigenvectors else "N", **flags)
    *w, vl, vr, info = outs
    w = w[0] if len(w) == 1 else make_complex(w[0], w[1])
    out = [_not_ok_to_nan(info, w)]
    if compute_left_eigenvectors:
        out.append(_not_ok_to_nan(info, vl))
    if compute_right_eigenvectors:
        out.append(_not_ok_to_nan(info, vr))
    return out



# -- schur and hessenberg -----------------------------------------------------------------------------------------
def _call_one(routine: str, x, results: list, config: str):
    shape = Shape.tuple_of([hlo_shape(dt, dims) for dt, dims in results])
    attrs = {"custom_call_target": _target(routine, aval(x).dtype), "api_version": "API_VERSION_TYPED_FFI",
             "backend_config": config}
    return bind("custom-call", [x], attrs, shape=shape, name=routine)


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False, select_callable=None):
    """(t, vs) with x = vs t vs^H (vs unitary; t upper triangular, quasi upper triangular with 2x2 blocks for
    the conjugate pairs of a real x), or t alone."""
    a = _check("schur", x, square=True)
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
    batch = a.shape[:-2]
    ws = [(a.dtype, a.shape[:-1])] * (1 if _is_complex(x) else 2)
    results = [(a.dtype, a.shape), (a.dtype, a.shape)] + ws + [(np.int32, batch), (np.int32, batch)]
    outs = _call_one("gees", x, results, _config(mode="V" if compute_schur_vectors else "N", sort="N"))
    info = outs[-1]
    t = _not_ok_to_nan(info, outs[0])
    return (t, _not_ok_to_nan(info, outs[1])) if compute_schur_vectors else t


def hessenberg(a):
    """(a', taus): the upper Hessenberg matrix on and above a''s first subdiagonal, the Householder reflectors
    below it, their scalar factors taus[..., n-1] (LAPACK gehrd)."""
    av = _check("hessenberg", a, square=True)
    n = av.shape[-1]
    if n == 0:
        raise _error("hessenberg", f"needs a nonempty matrix, got shape {av.shape}")
    batch = av.shape[:-2]
    results = [(av.dtype, av.shape), (av.dtype, batch + (n - 1,)), (np.int32, batch)]
    h, taus, info = _call_one("gehrd", a, results, f"{{high = {n} : i32, low = 1 : i32}}")
    return _not_ok_to_nan(info, h), _not_ok_to_nan(info, taus)
