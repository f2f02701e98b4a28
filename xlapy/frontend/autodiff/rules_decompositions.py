"""Derivative rules of the matrix decompositions: the cholesky and triangular-solve opcodes, and JAX's LAPACK
custom-calls (a sub-table keyed by routine: `CUSTOM_CALL_JVP` / `CUSTOM_CALL_VJP`, which rules_linalg's
"custom-call" rows dispatch to by `custom_call_target`, lapack_<t><routine>_ffi).

The formulas are JAX's (jax/_src/lax/linalg.py JVP rules; the VJPs are their transposes), for real matrices:
  cholesky        L' = L Phi(L^-1 S L^-T), S = the symmetric matrix a's lower triangle gives (the op reads
                  only that triangle, so its derivative sees only it), Phi = strict lower triangle + half the
                  diagonal; VJP: S_bar = L^-T Phi(L^T L_bar) L^-1, folded back onto the lower triangle
  triangular-solve x' = op(T)^-1 (b' - op(T') x) (left; right likewise); VJP: b_bar = op(T)^-T x_bar,
                  a_bar = -(b_bar x^T) on T's triangle (transposed for op = T)
  syevd/heevd     w' = Re diag(V^H S' V), V' = V (F o V^H S' V), F_ij = 1/(w_j - w_i) off the diagonal, S' the
                  Hermitian matrix the op reads from a''s triangle (heevd: complex, the VJP by JAX's convention)
  gesdd           JAX's svd_jvp_rule (reduced, or full for square matrices; mode N computes U and V with a
                  second, reduced gesdd); the VJP is its transpose
  getrf           JAX's lu_jvp_rule: L^-1 P a' U^-1 split into L' and U'; P from the pivots (a counted loop)
  geqrf, orgqr    JAX's qr_jvp_rule for m >= n (reduced, or square), carried through the pair: geqrf's
                  tangent holds R' on and above h's diagonal and the coordinates Qf^T Q' below it (Qf the full
                  orthogonal factor, m x m), which orgqr's rule turns back into Q' (the two rules share this
                  convention; orgqr on any other h is not differentiable)
  geev            JAX's eig_jvp_rule, real or complex: w' = diag(P), P = vr^-1 a' vr = diag(1/c) vl^H a' vr
                  (c_j = vl_j^H vr_j; a second geev computes both eigenvector sets when the op did not); the
                  eigenvectors' (JAX's _eig_vec_jvp) only when lax.linalg.eig had enable_eigvec_derivs=True
                  (recorded in backend_config), else an AutodiffError, as JAX
cholesky (lower), getrf and triangular-solve (op modes TRANSPOSE and ADJOINT) take complex values too (JAX's
convention: the VJP is the plain transpose of the JVP), and so do gesdd (JAX's complex rule: conjugate
transposes, s' = Re diag(U^H t V), the phase term U diag(i Im(dS_ii) / s_i)) and geqrf/ungqr (JAX's complex
correction: the imaginary diagonal of Q^H Q', which geqrf's rule carries in the taus' tangent); their VJPs are
conj(J^H(conj(ct))), J^H the Hermitian adjoint of the JVP.
"""
from __future__ import annotations

import re

import numpy as np

from ...hlo import Instruction, Shape
from ...passes.counted_loop import counted_loop
from .rules_common import AutodiffError, Emitter


# -- matrix helpers over the Emitter ---------------------------------------------------------------------------
def _nb(x: Instruction) -> int:
    return x.shape.rank - 2


def mm(b: Emitter, x: Instruction, y: Instruction) -> Instruction:
    nb = _nb(x)
    bd = tuple(range(nb))
    attrs = {"lhs_contracting_dims": (nb + 1,), "rhs_contracting_dims": (nb,)}
    if nb:
        attrs.update(lhs_batch_dims=bd, rhs_batch_dims=bd)
    return b.emit("dot", [x, y], attrs, element_type=x.shape.element_type)


def T(b: Emitter, x: Instruction) -> Instruction:
    nb = _nb(x)
    return b.transpose(x, list(range(nb)) + [nb + 1, nb])


def _mask(b: Emitter, x: Instruction, direction: str, k: int = 0) -> Instruction:
    """x where col - row `direction` k (LE: lower triangle, GE: upper), zero elsewhere."""
    m, n = x.shape.dims[-2:]
    mat = Shape.array("s32", (m, n))
    rows = b.emit("iota", [], {"iota_dimension": 0}, shape=mat)
    cols = b.emit("iota", [], {"iota_dimension": 1}, shape=mat)
    if k:
        rows = b.add(rows, b.full(mat, k))
    pred = b.compare(cols, rows, direction)
    pred = b.broadcast(pred, [x.shape.rank - 2, x.shape.rank - 1], x.shape)
    return b.select(pred, x, b.zeros(x.shape))


def tril(b, x, k=0):
    return _mask(b, x, "LE", k)


def triu(b, x, k=0):
    return _mask(b, x, "GE", k)


def diag_part(b: Emitter, x: Instruction) -> Instruction:
    """The diagonal of square matrices as [..., n]."""
    return b.reduce_sum(triu(b, tril(b, x)), [x.shape.rank - 1])


def scale_cols(b: Emitter, x: Instruction, v: Instruction) -> Instruction:
    """x[..., i, j] * v[..., j]."""
    return b.mul(x, b.broadcast(v, list(range(_nb(x))) + [x.shape.rank - 1], x.shape))


def scale_rows(b: Emitter, x: Instruction, v: Instruction) -> Instruction:
    return b.mul(x, b.broadcast(v, list(range(_nb(x))) + [x.shape.rank - 2], x.shape))


def embed_diag(b: Emitter, v: Instruction, like: Instruction) -> Instruction:
    """diag(v) shaped like the square matrices `like`."""
    ones = b.full(like.shape, 1)
    return tril(b, triu(b, scale_cols(b, ones, v)))


def solve(b: Emitter, a: Instruction, x: Instruction, *, left: bool, lower: bool, transpose: bool = False,
          unit: bool = False) -> Instruction:
    return b.emit("triangular-solve", [a, x], {"left_side": left, "lower": lower, "unit_diagonal": unit,
                                               "transpose_a": "TRANSPOSE" if transpose else "NO_TRANSPOSE"})


def sym_lower(b, x):
    """tril(x) + tril(x, -1)^T: the symmetric matrix a lower-triangle reader sees."""
    return b.add(tril(b, x), T(b, tril(b, x, -1)))


def sym_lower_adjoint(b, y):
    return b.add(tril(b, y), tril(b, T(b, y), -1))


def sym_upper(b, x):
    return b.add(triu(b, x), T(b, triu(b, x, 1)))


def sym_upper_adjoint(b, y):
    return b.add(triu(b, y), triu(b, T(b, y), 1))


def _parts(b: Emitter, ct, shape: Shape) -> list:
    """A tuple cotangent as a list (None for zero)."""
    if ct is None:
        return [None] * len(shape.tuple_shapes)
    if isinstance(ct, list):
        return ct
    return [b.gte(ct, i) for i in range(len(shape.tuple_shapes))]


def _tuple_tangent(b: Emitter, inst: Instruction, parts: dict) -> Instruction:
    return b.tuple([parts.get(i) if parts.get(i) is not None else b.zeros(s)
                    for i, s in enumerate(inst.shape.tuple_shapes)])


def _config(inst: Instruction) -> dict[str, str]:
    text = str(inst.attrs.get("backend_config", "") or "")
    return {k: chr(int(v)) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)\s*:\s*ui8", text)}


# -- cholesky ---------------------------------------------------------------------------------------------------
def _phi(b, x):
    return b.add(tril(b, x, -1), b.mul(diag_only(b, x), b.full(x.shape, 0.5)))


def diag_only(b, x):
    return tril(b, triu(b, x))


def _cholesky_setup(inst):
    lower = inst.attrs.get("lower") in (True, "true")
    if not lower and inst.shape.ptype.is_complex:
        raise AutodiffError(f"differentiation of an upper (lower=false) complex cholesky is not supported yet "
                            f"(instruction {inst.name}; JAX's lowering is lower=true)")
    return lower


def _cholesky_jvp(b, inst, ts):
    """L' = L Phi(L^-1 S' L^-H) (JAX's rule; S' the Hermitian matrix of t's lower triangle)."""
    (t,) = ts
    lower = _cholesky_setup(inst)
    L = inst if lower else T(b, inst)
    if not lower:
        t = T(b, t)
    s = _herm(b, t, True)
    mode = "ADJOINT" if inst.shape.ptype.is_complex else "TRANSPOSE"
    y = b.emit("triangular-solve", [L, solve(b, L, s, left=True, lower=True)],
               {"left_side": False, "lower": True, "unit_diagonal": False, "transpose_a": mode})
    dl = mm(b, L, _phi(b, y))
    return dl if lower else T(b, dl)


def _cholesky_vjp(b, inst, ct):
    """The JVP's plain transpose: S_bar = L^-T Phi(L^T tril(ct)) conj(L)^-1, folded onto the lower triangle."""
    lower = _cholesky_setup(inst)
    L = inst if lower else T(b, inst)
    g = ct if lower else T(b, ct)
    p = _phi(b, mm(b, T(b, L), tril(b, g)))
    y = solve(b, _cj(b, L), solve(b, L, p, left=True, lower=True, transpose=True), left=False, lower=True)
    a_bar = _herm_adjoint(b, y, True)
    return [a_bar if lower else T(b, a_bar)]


# -- triangular-solve ---------------------------------------------------------------------------------------------
def _tri_parts(inst):
    lower = inst.attrs.get("lower") in (True, "true")
    unit = inst.attrs.get("unit_diagonal") in (True, "true")
    left = inst.attrs.get("left_side") in (True, "true")
    trans = str(inst.attrs.get("transpose_a", "NO_TRANSPOSE")) != "NO_TRANSPOSE"
    return lower, unit, left, trans


def _tri_mask(b, x, lower, unit):
    k = -1 if unit else 0
    return tril(b, x, k) if lower else triu(b, x, -k)


def _op_mode(inst) -> str:
    return str(inst.attrs.get("transpose_a", "NO_TRANSPOSE"))


def _trisolve_jvp(b, inst, ts):
    """x' = op(T)^-1 (b' - op(T') x) (left; right likewise); op(T') is T', T'^T or conj(T'^T) (ADJOINT)."""
    a, _ = inst.operands
    ta, tb = ts
    lower, unit, left, trans = _tri_parts(inst)
    rhs = tb
    if ta is not None:
        dt = _tri_mask(b, ta, lower, unit)
        if trans:
            dt = T(b, dt)
        if _op_mode(inst) == "ADJOINT":
            dt = _cj(b, dt)
        prod = mm(b, dt, inst) if left else mm(b, inst, dt)
        rhs = b.neg(prod) if rhs is None else b.sub(rhs, prod)
    return b.add_instruction(inst.clone_with([a, rhs], name="triangular-solve.jvp"))


def _trisolve_vjp(b, inst, ct):
    """b_bar = op(T)^-T ct (JAX's convention: the plain transpose; for ADJOINT, conj(T^-1 conj(ct))), and
    T_bar = -G, -G^T or -conj(G^T) on T's triangle, G = b_bar x^T (left) or x^T b_bar (right)."""
    a, _ = inst.operands
    lower, unit, left, trans = _tri_parts(inst)
    adjoint = _op_mode(inst) == "ADJOINT" and a.shape.ptype.is_complex
    attrs = {k: inst.attrs[k] for k in ("left_side", "lower", "unit_diagonal") if k in inst.attrs}
    attrs["transpose_a"] = "NO_TRANSPOSE" if trans else "TRANSPOSE"
    if adjoint:
        b_bar = _cj(b, b.emit("triangular-solve", [a, _cj(b, ct)], attrs))
    else:
        b_bar = b.emit("triangular-solve", [a, ct], attrs)
    if left:
        g = mm(b, b_bar, T(b, inst)) if not trans else mm(b, inst, T(b, b_bar))
    else:
        g = mm(b, T(b, inst), b_bar) if not trans else mm(b, T(b, b_bar), inst)
    if adjoint:
        g = _cj(b, g)
    return [_tri_mask(b, b.neg(g), lower, unit), b_bar]


# -- syevd / heevd ------------------------------------------------------------------------------------------------
def _pairwise(b: Emitter, w: Instruction, like: Instruction) -> tuple[Instruction, Instruction]:
    """(w_j at [i, j], w_i at [i, j]) shaped like `like`."""
    nb = like.shape.rank - 2
    bd = list(range(nb))
    return b.broadcast(w, bd + [nb + 1], like.shape), b.broadcast(w, bd + [nb], like.shape)


def _safe_reciprocal(b: Emitter, d: Instruction) -> Instruction:
    """1/d where d != 0, 0 where d == 0 (and on the diagonal, where it is zero)."""
    zero = b.zeros(d.shape)
    is_zero = b.compare(d, zero, "EQ")
    safe = b.select(is_zero, b.full(d.shape, 1), d)
    return b.select(is_zero, zero, b.div(b.full(d.shape, 1), safe))


def _eig_f(b, w, like):
    wj, wi = _pairwise(b, w, like)
    return _safe_reciprocal(b, b.sub(wj, wi))


def _cj(b: Emitter, x: Instruction) -> Instruction:
    """conj(x) for complex x, x itself for real."""
    return _conj(b, x) if x.shape.ptype.is_complex else x


def _herm(b: Emitter, t: Instruction, lower: bool) -> Instruction:
    """The Hermitian matrix a reader of t's lower (upper) triangle sees (sym_lower/sym_upper when real)."""
    part = tril(b, t, -1) if lower else triu(b, t, 1)
    return b.add(b.add(part, _cj(b, T(b, part))), diag_only(b, t))


def _herm_adjoint(b: Emitter, y: Instruction, lower: bool) -> Instruction:
    """The transpose of _herm (JAX's convention: no conjugation of the cotangent itself)."""
    other = _cj(b, T(b, y))
    return b.add(tril(b, y), tril(b, other, -1)) if lower else b.add(triu(b, y), triu(b, other, 1))


def _eig_f_as(b, w, like):
    """_eig_f for real eigenvalues w, in like's element type (complex for heevd)."""
    real_shape = Shape.array(w.shape.element_type, like.shape.dims)
    nb = len(like.shape.dims) - 2
    bd = list(range(nb))
    wj, wi = b.broadcast(w, bd + [nb + 1], real_shape), b.broadcast(w, bd + [nb], real_shape)
    return b.convert(_safe_reciprocal(b, b.sub(wj, wi)), like.shape.element_type)


def _syevd_jvp(b, inst, ts):
    """Also heevd: M = V^H S' V, w' = Re diag(M), V' = V (F o M)."""
    (t,) = ts
    lower = _config(inst).get("uplo", "L") == "L"
    v, w = b.gte(inst, 0), b.gte(inst, 1)
    m = mm(b, mm(b, _cj(b, T(b, v)), _herm(b, t, lower)), v)
    dw = diag_part(b, m)
    if dw.shape.ptype.is_complex:
        dw = b.emit("real", [dw])
    dv = mm(b, v, b.mul(_eig_f_as(b, w, m), m))
    return _tuple_tangent(b, inst, {0: dv, 1: dw})


def _syevd_vjp(b, inst, ct):
    """The JVP's transpose: M_bar = F o (V^T V_bar) + diag(w_bar), S_bar = conj(V) M_bar V^T."""
    lower = _config(inst).get("uplo", "L") == "L"
    v_bar, w_bar, _ = _parts(b, ct, inst.shape)
    v, w = b.gte(inst, 0), b.gte(inst, 1)
    inner = None
    if v_bar is not None:
        inner = b.mul(_eig_f_as(b, w, v), mm(b, T(b, v), v_bar))
    if w_bar is not None:
        d = embed_diag(b, b.convert(w_bar, v.shape.element_type), v)
        inner = d if inner is None else b.add(inner, d)
    if inner is None:
        return [None]
    y = mm(b, mm(b, _cj(b, v), inner), T(b, v))
    return [_herm_adjoint(b, y, lower)]


# -- gesdd --------------------------------------------------------------------------------------------------------
def _svd_factors(b: Emitter, inst: Instruction):
    """(s, U [m, k], V [n, k]) of the reduced SVD of the operand (a second gesdd when the op has mode N)."""
    mode = _config(inst).get("mode", "A")
    a = inst.operands[0]
    m, n = a.shape.dims[-2:]
    k = min(m, n)
    if mode == "A" and m != n:
        raise AutodiffError(f"differentiation of a full_matrices SVD of a non-square matrix is not supported "
                            f"(as in JAX; instruction {inst.name})")
    if mode == "N":
        batch = a.shape.dims[:-2]
        et = a.shape.element_type
        rt = inst.shape.tuple_shapes[1].element_type
        shape = Shape.tuple_of([a.shape, Shape.array(rt, batch + (k,)), Shape.array(et, batch + (m, k)),
                                Shape.array(et, batch + (k, n)), inst.shape.tuple_shapes[4]])
        attrs = dict(inst.attrs)
        attrs["backend_config"] = "{mode = 83 : ui8}"
        full = b.emit("custom-call", [a], attrs, shape=shape, name="svd.uv")
        return b.gte(full, 1), b.gte(full, 2), T(b, b.gte(full, 3)), mode
    return b.gte(inst, 1), b.gte(inst, 2), T(b, b.gte(inst, 3)), mode


# Complex singular vectors (JAX's svd_jvp_rule): the real rule with conjugate transposes, s' = Re diag(dS), and
# the phase term U' += U diag(i Im(dS_ii) / s_i) (dS = U^H t V has a real diagonal for real matrices, so the
# term vanishes there). The VJP is conj(J^H(conj(ct))), J^H the Hermitian adjoint of the JVP (JAX's convention).
def _svd_jvp(b, inst, ts):
    (t,) = ts
    cx = inst.operands[0].shape.ptype.is_complex
    s, u, v, mode = _svd_factors(b, inst)
    v = _cj(b, v)                                          # V = vt^H (_svd_factors gives vt^T)
    m, n = inst.operands[0].shape.dims[-2:]
    ds_mat = mm(b, mm(b, H(b, u), t), v)
    ds = diag_part(b, ds_mat)
    if cx:
        ds = b.emit("real", [ds])
    if mode == "N":
        return _tuple_tangent(b, inst, {1: ds})
    et = ds_mat.shape.element_type
    sj, si = _pairwise(b, s, b.zeros(Shape.array(s.shape.element_type, ds_mat.shape.dims)))
    f = b.convert(_safe_reciprocal(b, b.mul(b.add(sj, si), b.sub(sj, si))), et)
    s_c = b.convert(s, et)
    dss = scale_cols(b, ds_mat, s_c)
    sds = scale_rows(b, ds_mat, s_c)
    inner_u = b.mul(f, b.add(dss, H(b, dss)))
    s_inv = b.convert(_safe_reciprocal(b, s), et)
    if cx:                                                 # the phase term, 0.5 (dS - dS^H) / s on the diagonal
        inner_u = b.add(inner_u, scale_cols(b, diag_only(b, _i_imag(b, ds_mat)), s_inv))
    du = mm(b, u, inner_u)
    dv = mm(b, v, b.mul(f, b.add(sds, H(b, sds))))
    if m > n:
        dav = mm(b, t, v)
        du = b.add(du, scale_cols(b, b.sub(dav, mm(b, u, mm(b, H(b, u), dav))), s_inv))
    if n > m:
        dahu = mm(b, H(b, t), u)
        dv = b.add(dv, scale_cols(b, b.sub(dahu, mm(b, v, mm(b, H(b, v), dahu))), s_inv))
    return _tuple_tangent(b, inst, {1: ds, 2: du, 3: H(b, dv)})


def _svd_vjp(b, inst, ct):
    _, s_bar, u_bar, vt_bar, _ = _parts(b, ct, inst.shape)
    s, u, v, mode = _svd_factors(b, inst)
    v = _cj(b, v)                                          # V = vt^H
    m, n = inst.operands[0].shape.dims[-2:]
    if mode == "N":
        u_bar = vt_bar = None
    et = u.shape.element_type
    kk = b.zeros(Shape.array(et, u.shape.dims[:-2] + (u.shape.dims[-1],) * 2))
    # in the conjugate space: U_bar' = conj(u_bar), V_bar' = (conj(vt_bar))^H = vt_bar^T; s_bar is real
    ds_bar = None
    if s_bar is not None:
        ds_bar = embed_diag(b, b.convert(s_bar, et), kk)
    sj, si = _pairwise(b, s, b.zeros(Shape.array(s.shape.element_type, kk.shape.dims)))
    f = b.convert(_safe_reciprocal(b, b.mul(b.add(sj, si), b.sub(sj, si))), et)
    s_c = b.convert(s, et)
    s_inv = b.convert(_safe_reciprocal(b, s), et)
    extra = None
    if u_bar is not None:
        ub = _cj(b, u_bar)
        j1 = mm(b, H(b, u), ub)
        j = b.mul(f, j1)
        term = scale_cols(b, b.add(j, H(b, j)), s_c)
        if et != s.shape.element_type:                     # the phase term's adjoint: i Im(J1_ii) / s_i
            term = b.add(term, scale_cols(b, diag_only(b, _i_imag(b, j1)), s_inv))
        ds_bar = term if ds_bar is None else b.add(ds_bar, term)
        if m > n:
            extra = mm(b, scale_cols(b, b.sub(ub, mm(b, u, mm(b, H(b, u), ub))), s_inv), H(b, v))
    if vt_bar is not None:
        v_bar = T(b, vt_bar)
        kmat = b.mul(f, mm(b, H(b, v), v_bar))
        term = scale_rows(b, b.add(kmat, H(b, kmat)), s_c)
        ds_bar = term if ds_bar is None else b.add(ds_bar, term)
        if n > m:
            proj = b.sub(v_bar, mm(b, v, mm(b, H(b, v), v_bar)))
            e2 = mm(b, u, scale_rows(b, H(b, proj), s_inv))
            extra = e2 if extra is None else b.add(extra, e2)
    out = None if ds_bar is None else mm(b, mm(b, u, ds_bar), H(b, v))
    if extra is not None:
        out = extra if out is None else b.add(out, extra)
    return [None if out is None else _cj(b, out)]


# -- getrf --------------------------------------------------------------------------------------------------------
def _permutation(b: Emitter, pivots1: Instruction, m: int) -> Instruction:
    """perm [..., m] (s32) from LAPACK's 1-based pivots [..., k]: row i of P a is row perm[i] of a."""
    batch = pivots1.shape.dims[:-1]
    nb = len(batch)
    k = pivots1.shape.dims[-1]
    piv = b.sub(pivots1, b.full(pivots1.shape, 1))
    pshape = Shape.array("s32", batch + (m,))
    perm0 = b.emit("iota", [], {"iota_dimension": nb}, shape=pshape)
    if k == 0:
        return perm0

    def body(bc, i, values):
        e = Emitter(bc)
        perm, pv = values
        zero = e.scalar(0, "s32")
        starts = [zero] * nb + [i]
        j = e.reshape(e.emit("dynamic-slice", [pv] + starts, {"dynamic_slice_sizes": batch + (1,)}), batch)
        at_i = e.reshape(e.emit("dynamic-slice", [perm] + starts, {"dynamic_slice_sizes": batch + (1,)}), batch)
        iota = e.emit("iota", [], {"iota_dimension": nb}, shape=pshape)
        is_j = e.compare(iota, e.broadcast(j, list(range(nb)), pshape), "EQ")
        at_j = e.reduce_sum(e.select(is_j, perm, e.zeros(pshape)), [nb])
        is_i = e.compare(iota, e.broadcast(i, [], pshape), "EQ")
        new = e.select(is_i, e.broadcast(at_j, list(range(nb)), pshape),
                       e.select(is_j, e.broadcast(at_i, list(range(nb)), pshape), perm))
        return [new, pv]
    return counted_loop(b.comp, k, [perm0, piv], body, name="lu_perm")[0]


def _perm_matrix(b: Emitter, perm: Instruction, et: str) -> Instruction:
    """P[..., i, c] = (perm[..., i] == c) as `et`."""
    nb = perm.shape.rank - 1
    m = perm.shape.dims[-1]
    shape = Shape.array("s32", perm.shape.dims + (m,))
    cols = b.emit("iota", [], {"iota_dimension": nb + 1}, shape=shape)
    onehot = b.compare(b.broadcast(perm, list(range(nb + 1)), shape), cols, "EQ")
    return b.convert(onehot, et)


def _lu_factors(b: Emitter, inst: Instruction):
    lu = b.gte(inst, 0)
    m, n = lu.shape.dims[-2:]
    k = min(m, n)
    et = lu.shape.element_type
    batch = lu.shape.dims[:-2]
    nb = len(batch)
    sl = b.emit("slice", [lu], {"slice": _slices(lu.shape.dims[:-1] + (k,))}) if k != n else lu
    l = b.emit("pad", [tril(b, sl, -1), b.scalar(0, et)],
               {"padding": _pad_config(nb + 2, {nb + 1: m - k})}) if m != k else tril(b, sl, -1)
    eye_m = _eye(b, batch, m, et)
    l = b.add(l, eye_m)
    su = b.emit("slice", [lu], {"slice": _slices(batch + (k, n))}) if k != m else lu
    u = triu(b, su)
    if n != k:
        u = b.emit("pad", [u, b.scalar(0, et)], {"padding": _pad_config(nb + 2, {nb: n - k})})
        tail = _eye(b, batch, n, et)
        tail = _mask_rows_from(b, tail, k)
        u = b.add(u, tail)
    return l, u


def _slices(limits):
    from ...hlo.attrs import SliceRange
    return tuple(SliceRange(0, d, 1) for d in limits)


def _pad_config(rank: int, high: dict):
    from ...hlo.attrs import PadDim
    return tuple(PadDim(0, high.get(d, 0), 0) for d in range(rank))


def _eye(b: Emitter, batch: tuple, n: int, et: str) -> Instruction:
    shape = Shape.array("s32", batch + (n, n))
    nb = len(batch)
    r = b.emit("iota", [], {"iota_dimension": nb}, shape=shape)
    c = b.emit("iota", [], {"iota_dimension": nb + 1}, shape=shape)
    return b.convert(b.compare(r, c, "EQ"), et)


def _mask_rows_from(b: Emitter, x: Instruction, k: int) -> Instruction:
    nb = x.shape.rank - 2
    shape = Shape.array("s32", x.shape.dims)
    r = b.emit("iota", [], {"iota_dimension": nb}, shape=shape)
    return b.select(b.compare(r, b.full(shape, k), "GE"), x, b.zeros(x.shape))


def _getrf_jvp(b, inst, ts):
    """Also complex: the rule is complex-linear, and its transpose (below) the plain one (JAX's convention)."""
    (t,) = ts
    l, u = _lu_factors(b, inst)
    m = l.shape.dims[-1]
    p = _perm_matrix(b, _permutation(b, b.gte(inst, 1), m), t.shape.element_type)
    x = mm(b, p, t)
    la = solve(b, l, x, left=True, lower=True, unit=True)
    lau = solve(b, u, la, left=False, lower=False)
    dlu = b.add(mm(b, l, tril(b, lau, -1)), mm(b, triu(b, lau), u))
    return _tuple_tangent(b, inst, {0: dlu})


def _getrf_vjp(b, inst, ct):
    g, _, _ = _parts(b, ct, inst.shape)
    if g is None:
        return [None]
    l, u = _lu_factors(b, inst)
    m = l.shape.dims[-1]
    lau_bar = b.add(tril(b, mm(b, T(b, l), g), -1), triu(b, mm(b, g, T(b, u))))
    la_bar = solve(b, u, lau_bar, left=False, lower=False, transpose=True)
    x_bar = solve(b, l, la_bar, left=True, lower=True, unit=True, transpose=True)
    p = _perm_matrix(b, _permutation(b, b.gte(inst, 1), m), g.shape.element_type)
    return [mm(b, T(b, p), x_bar)]


# -- geqrf / orgqr ---------------------------------------------------------------------------------------------------
def _qr_parts(b: Emitter, h: Instruction, taus: Instruction, target: str, attrs: dict):
    """(Q [m, n], R [n, n], Qf [m, m]) from geqrf's compact form (m >= n)."""
    m, n = h.shape.dims[-2:]
    nb = h.shape.rank - 2
    et = h.shape.element_type
    org = target.replace("geqrf", "ungqr" if h.shape.ptype.is_complex else "orgqr")
    call = {k: v for k, v in attrs.items() if k in ("api_version",)}
    call["custom_call_target"] = org
    q = b.emit("custom-call", [h, taus], call, shape=h.shape, name="qr.q")
    batch = h.shape.dims[:-2]
    if m > n:
        hp = b.emit("pad", [h, b.scalar(0, et)], {"padding": _pad_config(nb + 2, {nb + 1: m - n})})
        qf = b.emit("custom-call", [hp, taus], call, shape=Shape.array(et, batch + (m, m)), name="qr.qf")
        r = triu(b, b.emit("slice", [h], {"slice": _slices(batch + (n, n))}))
    else:
        qf = q
        r = triu(b, h)
    return q, r, qf


def _qr_dims(inst: Instruction, h: Instruction):
    m, n = h.shape.dims[-2:]
    if m < n:
        raise AutodiffError(f"differentiation of QR is implemented only for m >= n (as in JAX); instruction "
                            f"{inst.name} has {h.shape}")
    return m, n


def _rows_pad(b: Emitter, x: Instruction, m: int) -> Instruction:
    nb = x.shape.rank - 2
    extra = m - x.shape.dims[-2]
    if not extra:
        return x
    return b.emit("pad", [x, b.scalar(0, x.shape.element_type)], {"padding": _pad_config(nb + 2, {nb: extra})})


def _rows_slice(b: Emitter, x: Instruction, n: int) -> Instruction:
    if x.shape.dims[-2] == n:
        return x
    return b.emit("slice", [x], {"slice": _slices(x.shape.dims[:-2] + (n, x.shape.dims[-1]))})


# Complex QR (JAX's qr_jvp_rule with its complex correction): Q^H Q' is skew-Hermitian, so besides its strict
# lower triangle it has an imaginary diagonal, i Im diag(Q^H t R^-1). geqrf's tangent carries that diagonal in
# the taus' tangent (which orgqr's rule reads; R = triu(h) reads h's diagonal, so it cannot go there). The VJPs
# are the transposes in JAX's convention: conj(J^H(conj(ct))), J^H the Hermitian adjoint of the JVP.
def _i_imag(b: Emitter, v: Instruction) -> Instruction:
    """i Im(v), elementwise."""
    im = b.emit("imag", [v])
    return b.emit("complex", [b.zeros(im.shape), im])


def H(b: Emitter, x: Instruction) -> Instruction:
    """The conjugate transpose (the transpose of a real matrix)."""
    return _cj(b, T(b, x))


def _geqrf_jvp(b, inst, ts):
    (t,) = ts
    a = inst.operands[0]
    cx = a.shape.ptype.is_complex
    m, n = _qr_dims(inst, a)
    h, taus = b.gte(inst, 0), b.gte(inst, 1)
    q, r, qf = _qr_parts(b, h, taus, str(inst.attrs["custom_call_target"]), inst.attrs)
    dx_rinv = solve(b, r, t, left=False, lower=False)                  # t R^-1
    qt = mm(b, H(b, q), dx_rinv)
    low = tril(b, qt, -1)
    do = b.sub(low, H(b, low))
    if cx:
        do = b.add(do, diag_only(b, _i_imag(b, qt)))
    dq = b.add(mm(b, q, b.sub(do, qt)), dx_rinv)
    dr = mm(b, b.sub(qt, do), r)
    coords = mm(b, H(b, qf), dq)                                       # [m, n]: skew on top, free below
    dh = b.add(_rows_pad(b, triu(b, dr), m), tril(b, coords, -1))
    if not cx:
        return _tuple_tangent(b, inst, {0: dh})
    dtaus = _i_imag(b, diag_part(b, _rows_slice(b, coords, n)))      # the imaginary diagonal of Q^H Q'
    return _tuple_tangent(b, inst, {0: dh, 1: dtaus})


def _geqrf_vjp(b, inst, ct):
    h_bar, taus_bar = _parts(b, ct, inst.shape)[:2]
    if h_bar is None and taus_bar is None:
        return [None]
    a = inst.operands[0]
    cx = a.shape.ptype.is_complex
    m, n = _qr_dims(inst, a)
    h, taus = b.gte(inst, 0), b.gte(inst, 1)
    q, r, qf = _qr_parts(b, h, taus, str(inst.attrs["custom_call_target"]), inst.attrs)
    h_bar = b.zeros(h.shape) if h_bar is None else _cj(b, h_bar)
    r_bar = triu(b, _rows_slice(b, h_bar, n))
    coords_bar = tril(b, h_bar, -1)
    if cx and taus_bar is not None:
        coords_bar = b.add(coords_bar, embed_diag(b, _i_imag(b, _cj(b, taus_bar)), h_bar))
    q_bar = mm(b, qf, coords_bar)                                      # the adjoint of the coordinates
    # the adjoint of JAX's qr_jvp: D = R_bar R^H - Q^H Q_bar; G_bar = triu(D) + tril(D^H, -1) (- i Im diag D)
    dmat = b.sub(mm(b, r_bar, H(b, r)), mm(b, H(b, q), q_bar))
    g_bar = b.add(triu(b, dmat), tril(b, H(b, dmat), -1))
    if cx:
        g_bar = b.sub(g_bar, diag_only(b, _i_imag(b, dmat)))
    z_bar = b.add(mm(b, q, g_bar), q_bar)
    # conj(z_bar R^-H) = conj(z_bar) R^-T
    return [solve(b, r, _cj(b, z_bar), left=False, lower=False, transpose=True)]


def _orgqr_guard(inst: Instruction) -> None:
    h, taus = inst.operands
    if taus.shape.dims[-1] != h.shape.dims[-1]:
        raise AutodiffError(f"differentiation of a full_matrices QR of a tall matrix (Q from {taus.shape.dims[-1]} "
                            f"reflectors padded to {h.shape.dims[-1]} columns) is not supported, as in JAX; "
                            f"instruction {inst.name}")


def _orgqr_jvp(b, inst, ts):
    _orgqr_guard(inst)
    th = ts[0]
    if th is None:
        return None
    h, taus = inst.operands
    m, n = h.shape.dims[-2:]
    qf = _full_q(b, inst, h, taus)
    low = tril(b, th, -1)
    top = _rows_slice(b, low, n)
    skew = b.sub(top, H(b, top))
    if h.shape.ptype.is_complex and ts[1] is not None:                 # geqrf's: the diagonal of Q^H Q'
        skew = b.add(skew, embed_diag(b, _i_imag(b, ts[1]), skew))
    coords = b.add(_rows_pad(b, skew, m), _mask_rows_from(b, low, n)) if m > n else skew
    return mm(b, qf, coords)


def _full_q(b, inst, h, taus):
    m, n = h.shape.dims[-2:]
    if m == n:
        return inst
    nb = h.shape.rank - 2
    hp = b.emit("pad", [h, b.scalar(0, h.shape.element_type)], {"padding": _pad_config(nb + 2, {nb + 1: m - n})})
    return b.emit("custom-call", [hp, taus], {k: v for k, v in inst.attrs.items()
                                              if k in ("custom_call_target", "api_version")},
                  shape=Shape.array(h.shape.element_type, h.shape.dims[:-1] + (m,)), name="qr.qf")


def _orgqr_vjp(b, inst, ct):
    _orgqr_guard(inst)
    h, taus = inst.operands
    m, n = h.shape.dims[-2:]
    qf = _full_q(b, inst, h, taus)
    p = mm(b, H(b, qf), _cj(b, ct))                                    # [m, n]
    top = _rows_slice(b, p, n)
    top_bar = b.sub(tril(b, top, -1), tril(b, H(b, top), -1))
    h_bar = b.add(_rows_pad(b, top_bar, m), _mask_rows_from(b, p, n)) if m > n else top_bar
    if not h.shape.ptype.is_complex:
        return [h_bar, None]
    return [_cj(b, h_bar), _cj(b, _i_imag(b, diag_part(b, top)))]


def _host_callback(b, inst, _):
    # pure_callback (backends/interpreter/host_callback.py) has no derivative: JAX's error
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking "
                     "gradients.")


# -- geev ------------------------------------------------------------------------------------------------------------
def _geev_vectors(b: Emitter, inst: Instruction):
    """(conj(vl), vr, c, w, complex type): both eigenvector sets of the operand (the op's own results when it
    computed both, else a second geev), c_j = vl_j^H vr_j, and the complex eigenvalues."""
    cfg = _config(inst)
    left, right = cfg.get("compute_left", "N") == "V", cfg.get("compute_right", "V") == "V"
    if (left or right) and cfg.get("enable_eigvec_derivs") != chr(1):
        raise AutodiffError("derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
                            "input that cannot be checked (JAX's rule): pass enable_eigvec_derivs=True to "
                            "lax.linalg.eig to opt in, or differentiate the eigenvalues alone (eigvals); see "
                            f"jax-ml/jax#2748 (instruction {inst.name})")
    a = inst.operands[0]
    n_out = len(inst.shape.tuple_shapes)
    ct = inst.shape.tuple_shapes[n_out - 3].element_type
    full = inst
    if not (left and right):
        attrs = dict(inst.attrs)
        attrs["backend_config"] = "{compute_left = 86 : ui8, compute_right = 86 : ui8}"
        full = b.emit("custom-call", [a], attrs, shape=inst.shape, name="eig.vectors")
    vlc, vr = _conj(b, b.gte(full, n_out - 3)), b.gte(full, n_out - 2)
    w = b.gte(full, 0) if n_out == 4 else b.emit("complex", [b.gte(full, 0), b.gte(full, 1)])
    return vlc, vr, b.reduce_sum(b.mul(vlc, vr), [vr.shape.rank - 2]), w, ct


def _conj(b: Emitter, x: Instruction) -> Instruction:
    return b.emit("complex", [b.emit("real", [x]), b.neg(b.emit("imag", [x]))])


def _reduce(b: Emitter, x: Instruction, dim: int, opcode: str, init) -> Instruction:
    et = x.shape.element_type
    return b.emit("reduce", [x, b.scalar(init, et)], {"dimensions": (dim,), "to_apply": b.reducer(opcode, et)})


def _largest_mask(b: Emitter, v: Instruction) -> Instruction:
    """1 at each column's first largest-magnitude entry (JAX's argmax of |v| over the rows), 0 elsewhere."""
    nb = v.shape.rank - 2
    n = v.shape.dims[-2]
    mag = b.emit("abs", [v])
    top = b.broadcast(_reduce(b, mag, nb, "maximum", float("-inf")), list(range(nb)) + [nb + 1], mag.shape)
    rows = b.emit("iota", [], {"iota_dimension": nb}, shape=Shape.array("s32", v.shape.dims))
    first = b.select(b.compare(mag, top, "EQ"), rows, b.full(rows.shape, n))
    k = b.broadcast(_reduce(b, first, nb, "minimum", n), list(range(nb)) + [nb + 1], rows.shape)
    return b.convert(b.compare(rows, k, "EQ"), v.shape.element_type)


def _eigvec_tangent(b: Emitter, v: Instruction, u: Instruction) -> Instruction:
    """JAX's _eig_vec_jvp ending: dv = U + v diag(c), c_j = -Re(v_j^H U_j) - i Im(U_kj) / Re(v_kj)."""
    nb = v.shape.rank - 2
    mask = _largest_mask(b, v)
    s = b.reduce_sum(b.mul(_conj(b, v), u), [nb])
    t = b.reduce_sum(b.mul(mask, u), [nb])
    r = b.emit("real", [b.reduce_sum(b.mul(mask, v), [nb])])
    c = b.emit("complex", [b.neg(b.emit("real", [s])), b.neg(b.div(b.emit("imag", [t]), r))])
    return b.add(u, scale_cols(b, v, c))


def _eigvec_tangent_t(b: Emitter, v: Instruction, dv_bar: Instruction) -> Instruction:
    """The transpose of _eigvec_tangent in U (JAX's convention): U_bar."""
    nb = v.shape.rank - 2
    mask = _largest_mask(b, v)
    r = b.emit("real", [b.reduce_sum(b.mul(mask, v), [nb])])
    c_bar = b.reduce_sum(b.mul(v, dv_bar), [nb])
    s_bar = b.emit("complex", [b.neg(b.emit("real", [c_bar])), b.zeros(r.shape)])
    t_bar = b.emit("complex", [b.zeros(r.shape), b.neg(b.div(b.emit("imag", [c_bar]), r))])
    return b.add(dv_bar, b.add(scale_cols(b, _conj(b, v), s_bar), scale_cols(b, mask, t_bar)))


def _geev_jvp(b, inst, ts):
    """JAX's eig_jvp_rule: P = vr^-1 a' vr = diag(1/c) vl^H a' vr (distinct eigenvalues), w' = diag(P); with
    enable_eigvec_derivs, vr' = vr (F o P) + vr diag(c) (LAPACK's normalization; _eigvec_tangent), and vl' the
    same on a^H. A real a's results are (wr, wi, ...): their tangents are Re w', Im w'."""
    (t,) = ts
    vlc, vr, c, w, ct = _geev_vectors(b, inst)
    da = b.convert(t, ct)
    p = scale_rows(b, mm(b, mm(b, T(b, vlc), da), vr), b.div(b.full(c.shape, 1), c))
    dw = diag_part(b, p)
    cfg = _config(inst)
    n_out = len(inst.shape.tuple_shapes)
    parts = {0: dw} if n_out == 4 else {0: b.emit("real", [dw]), 1: b.emit("imag", [dw])}
    if cfg.get("compute_right", "V") == "V":
        parts[n_out - 2] = _eigvec_tangent(b, vr, mm(b, vr, b.mul(_eig_f(b, w, p), p)))
    if cfg.get("compute_left", "N") == "V":
        vl = _conj(b, vlc)
        # a^H's right eigenvectors are vl, its left ones vr, its eigenvalues conj(w): P_l = vl^-1 a'^H vl
        pl = scale_rows(b, mm(b, mm(b, _conj(b, T(b, vr)), _conj(b, T(b, da))), vl), b.div(b.full(c.shape, 1),
                                                                                          _conj(b, c)))
        parts[n_out - 3] = _eigvec_tangent(b, vl, mm(b, vl, b.mul(_eig_f(b, _conj(b, w), pl), pl)))
    return _tuple_tangent(b, inst, parts)


def _geev_vjp(b, inst, ct):
    """The JVP's transpose: P_bar = diag(w_bar) + F o (vr^T U_bar) (+ the left vectors' share), a_bar =
    conj(vl) diag(1/c) P_bar vr^T; w_bar = wr_bar - i wi_bar for a real a (whose a_bar is the real part)."""
    parts = _parts(b, ct, inst.shape)
    n_out = len(inst.shape.tuple_shapes)
    real = n_out == 5
    if real:
        wr_bar, wi_bar = parts[:2]
        w_bar = None
        if wr_bar is not None or wi_bar is not None:
            zero = b.zeros(inst.shape.tuple_shapes[0])
            w_bar = _conj(b, b.emit("complex", [wr_bar if wr_bar is not None else zero,
                                                wi_bar if wi_bar is not None else zero]))
    else:
        w_bar = parts[0]
    vl_bar, vr_bar = parts[n_out - 3], parts[n_out - 2]
    if w_bar is None and vl_bar is None and vr_bar is None:
        return [None]
    vlc, vr, c, w, _ = _geev_vectors(b, inst)
    inv_c = b.div(b.full(c.shape, 1), c)
    p_bar = embed_diag(b, w_bar, vr) if w_bar is not None else None
    if vr_bar is not None:
        u_bar = _eigvec_tangent_t(b, vr, vr_bar)
        term = b.mul(_eig_f(b, w, vr), mm(b, T(b, vr), u_bar))
        p_bar = term if p_bar is None else b.add(p_bar, term)
    a_bar = None
    if p_bar is not None:
        a_bar = mm(b, scale_cols(b, vlc, inv_c), mm(b, p_bar, T(b, vr)))
    if vl_bar is not None:
        vl = _conj(b, vlc)
        ul_bar = _eigvec_tangent_t(b, vl, vl_bar)
        pl_bar = b.mul(_eig_f(b, _conj(b, w), vl), mm(b, T(b, vl), ul_bar))
        # P_l = diag(1/conj(c)) vr^H a'^H vl: a'^H's cotangent is conj(vr) diag(1/conj(c)) P_l_bar vl^T, and
        # a''s the conjugate transpose of that
        dh = mm(b, scale_cols(b, _conj(b, vr), _conj(b, inv_c)), mm(b, pl_bar, T(b, vl)))
        term = _conj(b, T(b, dh))
        a_bar = term if a_bar is None else b.add(a_bar, term)
    return [b.emit("real", [a_bar]) if real else a_bar]


# -- the custom-call sub-table ----------------------------------------------------------------------------------------
CUSTOM_CALL_JVP = {"syevd": _syevd_jvp, "gesdd": _svd_jvp, "getrf": _getrf_jvp, "geqrf": _geqrf_jvp,
                   "orgqr": _orgqr_jvp, "geev": _geev_jvp, "xlapy_host_callback": _host_callback}
CUSTOM_CALL_VJP = {"syevd": _syevd_vjp, "gesdd": _svd_vjp, "getrf": _getrf_vjp, "geqrf": _geqrf_vjp,
                   "orgqr": _orgqr_vjp, "geev": _geev_vjp, "xlapy_host_callback": _host_callback}
_COMPLEX_NAMES = {"heevd": "syevd", "ungqr": "orgqr"}


def routine(inst: Instruction) -> str:
    target = str(inst.attrs.get("custom_call_target", ""))
    found = re.fullmatch(r"lapack_[sdcz](\w+)_ffi", target)
    name = found.group(1) if found else target
    return _COMPLEX_NAMES.get(name, name)


def _lookup(table: dict, inst: Instruction, mode: str):
    rule = table.get(routine(inst))
    if rule is None:
        raise AutodiffError(f"{mode}-mode differentiation rule missing for custom-call target "
                            f"'{inst.attrs.get('custom_call_target')}' (instruction {inst.name}: {inst.shape})")
    return rule


def custom_call_jvp(b, inst, ts):
    return _lookup(CUSTOM_CALL_JVP, inst, "forward")(b, inst, ts)


def custom_call_vjp(b, inst, ct):
    return _lookup(CUSTOM_CALL_VJP, inst, "reverse")(b, inst, ct)


JVP = {"cholesky": _cholesky_jvp, "triangular-solve": _trisolve_jvp, "custom-call": custom_call_jvp}
VJP = {"cholesky": _cholesky_vjp, "triangular-solve": _trisolve_vjp, "custom-call": custom_call_vjp}
